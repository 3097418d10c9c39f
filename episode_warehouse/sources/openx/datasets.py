"""OpenX dataset ids (the partition keys) and their control frequencies."""

from __future__ import annotations

import re

from episode_warehouse.errors import ConfigError, PartitionKeyError
from episode_warehouse.partition_keys import parse_range

KNOWN_DATASETS: tuple[str, ...] = (
    "fractal20220817_data", "kuka", "bridge", "taco_play", "jaco_play", "berkeley_cable_routing",
    "roboturk", "nyu_door_opening_surprising_effectiveness", "viola", "berkeley_autolab_ur5",
    "toto", "language_table", "columbia_cairlab_pusht_real",
    "stanford_kuka_multimodal_dataset_converted_externally_to_rlds",
    "nyu_rot_dataset_converted_externally_to_rlds",
    "stanford_hydra_dataset_converted_externally_to_rlds",
    "austin_buds_dataset_converted_externally_to_rlds",
    "nyu_franka_play_dataset_converted_externally_to_rlds",
    "maniskill_dataset_converted_externally_to_rlds",
    "furniture_bench_dataset_converted_externally_to_rlds",
    "cmu_franka_exploration_dataset_converted_externally_to_rlds",
    "ucsd_kitchen_dataset_converted_externally_to_rlds",
    "ucsd_pick_and_place_dataset_converted_externally_to_rlds",
    "austin_sailor_dataset_converted_externally_to_rlds",
    "austin_sirius_dataset_converted_externally_to_rlds", "bc_z",
    "usc_cloth_sim_converted_externally_to_rlds",
    "utokyo_pr2_opening_fridge_converted_externally_to_rlds",
    "utokyo_pr2_tabletop_manipulation_converted_externally_to_rlds",
    "utokyo_saytap_converted_externally_to_rlds",
    "utokyo_xarm_pick_and_place_converted_externally_to_rlds",
    "utokyo_xarm_bimanual_converted_externally_to_rlds", "robo_net",
    "berkeley_mvp_converted_externally_to_rlds", "berkeley_rpt_converted_externally_to_rlds",
    "kaist_nonprehensile_converted_externally_to_rlds",
    "stanford_mask_vit_converted_externally_to_rlds", "tokyo_u_lsmo_converted_externally_to_rlds",
    "dlr_sara_pour_converted_externally_to_rlds",
    "dlr_sara_grid_clamp_converted_externally_to_rlds",
    "dlr_edan_shared_control_converted_externally_to_rlds",
    "asu_table_top_converted_externally_to_rlds", "stanford_robocook_converted_externally_to_rlds",
    "eth_agent_affordances", "imperialcollege_sawyer_wrist_cam",
    "iamlab_cmu_pickup_insert_converted_externally_to_rlds", "uiuc_d3field", "utaustin_mutex",
    "berkeley_fanuc_manipulation", "cmu_playing_with_food", "cmu_play_fusion", "cmu_stretch",
    "berkeley_gnm_recon", "berkeley_gnm_cory_hall", "berkeley_gnm_sac_son",
)  # fmt: skip

# Control frequencies (Hz) from the Open X-Embodiment dataset spreadsheet, for LeRobot's fps;
# DROID (not in that sheet) records at 15 Hz (its paper and dataset page). A dataset missing
# here has no known rate: the catalog's fps is NULL and a warning says so, never a guess.
CONTROL_HZ: dict[str, int] = {
    "fractal20220817_data": 3, "kuka": 10, "bridge": 5, "taco_play": 15, "jaco_play": 10,
    "berkeley_cable_routing": 10, "roboturk": 10, "viola": 20, "berkeley_autolab_ur5": 5,
    "toto": 30, "language_table": 10, "cmu_stretch": 10, "bc_z": 10, "droid": 15,
}  # fmt: skip
RATES_SETTING = "OPENX_CONTROL_HZ"  # the user's rates for datasets the table does not know
MAX_HZ = 10_000.0  # a control rate past this is a typo (robots log at 1 kHz at most)
_KEY_RE = re.compile(r"^[a-z0-9_]+$")


def per_dataset(
    text: str | None, setting: str, what: str, example: str, *, whole: bool, maximum: float
) -> dict[str, float]:
    """A ``dataset=value,...`` setting (``OPENX_SHARD_RANGES``, ``OPENX_CONTROL_HZ``) as
    ``{dataset: value}``, each value in (0, ``maximum``] (``whole``: ASCII digits only), each
    dataset named once.

    Raises:
        ConfigError: an entry that is not ``dataset=value`` with a value in range, or a dataset
            named twice, naming ``setting``.
    """
    number = r"[0-9]{1,12}" if whole else r"[0-9]{1,12}(?:\.[0-9]{1,12})?"
    entry = re.compile(rf"^([a-z0-9_]+)=({number})$", re.ASCII)
    values: dict[str, float] = {}
    for part in (text or "").split(","):
        part = part.strip()
        if not part:
            continue
        match = entry.match(part)
        value = float(match.group(2)) if match else 0.0
        if not match or not 0 < value <= maximum:
            shown = part if len(part) <= 60 else part[:57] + "..."
            raise ConfigError(
                f"{setting} entry {shown!r} is not dataset={what} (0 < {what} <= {maximum:g})",
                subject=setting,
                fix=f"write e.g. {setting}={example}",
            )
        if match.group(1) in values:
            raise ConfigError(
                f"{setting} names {match.group(1)} twice", subject=setting,
                fix="give each dataset one value",
            )  # fmt: skip
        values[match.group(1)] = value
    return values


def parse_rate_setting(text: str | None) -> dict[str, float]:
    """``OPENX_CONTROL_HZ`` (``toy_robot=10,other=2.5``): rates the user states for datasets
    (a dataset's published rate where the table has none; it wins over the table).

    Raises:
        ConfigError: an entry that is not ``dataset=Hz`` with Hz > 0.
    """
    return per_dataset(text, RATES_SETTING, "Hz", "my_robot=10", whole=False, maximum=MAX_HZ)


def check_dataset_id(key: str) -> str:
    """Validate an OpenX partition key: a dataset id (lowercase letters, digits and
    underscores), or a shard range of one (``droid@00000-00031``, see ``shard_ranges``).

    Raises:
        PartitionKeyError: the key cannot be a dataset id or a shard range.
    """
    if parse_range(key or "") is not None:
        return key
    if not _KEY_RE.match(key or ""):
        raise PartitionKeyError(
            "not an OpenX dataset id",
            subject=repr(key),
            fix="use a folder name of the mirror, e.g. 'cmu_stretch' (lowercase, digits, _)",
        )
    return key


def did_you_mean(key: str) -> str:
    """``"did you mean X? "`` for the known OXE names closest to ``key`` (or ``""``)."""
    import difflib

    close = difflib.get_close_matches(key, KNOWN_DATASETS, n=3, cutoff=0.6)
    return f"did you mean {' or '.join(repr(c) for c in close)}? " if close else ""
