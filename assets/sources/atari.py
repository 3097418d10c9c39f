"""Atari DQN Replay: checkpoint files -> decoded episodes (TED and catalog come from factories).

Its resource, ``AtariReplaySource``: a gs:// prefix (or a local mirror) in either layout.
"""

import dagster as dg

from assets import versions
from assets.results import built_result, decoded_result
from assets.sources.spec import AtariFormat, SourceAssets, SourceMode, SourceResource
from assets.stage import Check, CheckRun, Stage, StageRun
from episode_warehouse.blobstore import BlobStore, open_blob_store
from episode_warehouse.catalog import run_query
from episode_warehouse.sources.atari.dopamine_files import CheckpointSubset
from episode_warehouse.sources.atari.fingerprints import atari_fingerprints
from episode_warehouse.sources.atari.games import PARTITION_KEYS, parse_partition_key
from episode_warehouse.sources.atari.mirror import LAYOUTS, MODES, mirror_run
from episode_warehouse.sources.atari.stage import decode_atari
from resources.settings import setting

DEFAULT_ATARI_URL = "gs://rl_unplugged/atari_episodes_ordered"


class AtariReplaySource(SourceResource):
    """``ATARI_REPLAY_URL`` (default: the RL Unplugged copy in episode order), its layout
    (``ATARI_FORMAT``: auto, dopamine, rlu), ``ATARI_MODE`` (download, or streaming for RL
    Unplugged), and the checkpoint subset (``ATARI_CHECKPOINTS``: all, first:K, last:K, or
    indices like 0,1,2 / 40-49). Requests are bounded by ``ATARI_TIMEOUT_S`` (60) and retried up
    to ``attempts`` times with exponential backoff; ``STORAGE_EMULATOR_HOST`` points GCS at an
    emulator."""

    url: str | None = None
    checkpoints: str | None = None
    format: AtariFormat | None = None
    mode: SourceMode | None = None

    def store(self) -> BlobStore:
        return open_blob_store(
            setting(self.url, "ATARI_REPLAY_URL", DEFAULT_ATARI_URL),
            self.policy("ATARI_TIMEOUT_S"),
            endpoint=self.endpoint(),
        )

    def subset(self) -> CheckpointSubset:
        return CheckpointSubset(setting(self.checkpoints, "ATARI_CHECKPOINTS", "all"))

    def layout(self) -> str:
        return self.chosen("format", "ATARI_FORMAT", "auto", LAYOUTS)

    def source_mode(self) -> str:
        return self.chosen("mode", "ATARI_MODE", "download", MODES)


def _returns_match(check: CheckRun) -> dg.AssetCheckResult:
    mismatch = 'abs("return" - recorded_return) > 1e-3 * greatest(1, abs(recorded_return))'
    _, rows = run_query(
        check.warehouse.layout().root,
        f"SELECT count(recorded_return), count(*) FILTER (WHERE {mismatch}), "
        f"list(episode) FILTER (WHERE {mismatch}) FROM episodes WHERE source = 'atari' "
        "AND partition = ?",
        [check.key],
    )
    recorded, mismatched, episodes = rows[0]
    return dg.AssetCheckResult(
        passed=mismatched == 0,
        metadata={
            "episodes_with_a_recorded_return": recorded,
            "mismatched": mismatched,
            "mismatched_episodes": dg.MetadataValue.json((episodes or [])[:50]),
        },
    )


RECORDED_RETURNS = Check(
    "returns_match_recorded",
    _returns_match,
    "RL Unplugged episodes: the return summed from the TED's rewards equals the "
    "episode_return the source recorded (Dopamine partitions record none).",
)


atari_runs = dg.StaticPartitionsDefinition(list(PARTITION_KEYS))  # the 300 keys of the dataset


def mirror_files(stage: StageRun) -> dg.MaterializeResult:
    atari_replay = stage.source
    # Idempotent: unchanged files (size, generation, crc32c) are linked, not fetched again.
    game, run = parse_partition_key(stage.key)
    target, common = stage.raw_folder("atari")
    built, report = mirror_run(atari_replay.store(), game, run, target, atari_replay.subset(),
                               layout=atari_replay.layout(), mode=atari_replay.source_mode(),
                               **common)  # fmt: skip
    files, seconds = built.meta.files, max(report.seconds, 1e-9)
    return built_result(
        built,
        target,
        source_url=built.meta.source_url,
        suffixes=dg.MetadataValue.json(built.meta.suffixes),
        checkpoint_subset=built.meta.subset,
        layout=built.meta.layout,
        mode=built.meta.mode,
        files=len(files),
        bytes=sum(f["size"] for f in files.values()),
        downloaded=len(report.downloaded),
        retries=report.stats.retries,
        MB_per_s=round(report.stats.downloaded_bytes / 1e6 / seconds, 1),
        file_versions=dg.MetadataValue.json(files),
    )


def decode_episodes(stage: StageRun) -> dg.MaterializeResult:
    key, layout = stage.key, stage.warehouse.layout()
    # Idempotent: rebuilt only when the mirrored files or this code version changed.
    built = decode_atari(layout, key, workers=stage.settings.decode_processes(),
                         endpoint=stage.source.endpoint(), **stage.decode_args())  # fmt: skip
    own = built.meta.extra  # the Atari decoders' own fields (DecodedRecord.extra)
    details = {"time_limited_episodes": own.get("time_limited_episodes", 0)}
    if own.get("format_source") == "rl_unplugged":
        details["files"] = dg.MetadataValue.json(own["files"])
    else:
        details |= {
            "padding_rows_dropped": own["padding_rows"],
            "lost_rows": own["lost_rows"],
            "gaps": dg.MetadataValue.json(own["gaps"]),
            "suffixes": dg.MetadataValue.json(own["suffixes"]),
        }
    return decoded_result(built, layout.decoded_dir("atari", key), **details)


ASSETS = SourceAssets(
    name="atari",
    partitions=atari_runs,
    files=Stage(
        "atari_replay_files",
        mirror_files,
        "The files of one game/run (RL Unplugged or Dopamine layout) from ATARI_REPLAY_URL.",
        {"gcs", "gzip"},
        versions.ATARI_REPLAY_FILES,
    ),
    episodes=Stage(
        "atari_episodes",
        decode_episodes,
        "Real steps of one game/run in episode order (Dopamine: padding dropped, episodes "
        "stitched across files; RL Unplugged: each record's N-1 transitions).",
        {"numpy"},
        versions.ATARI_EPISODES,
    ),
    resource_key="atari_replay",
    resource=AtariReplaySource(),
    listing=lambda atari_replay: atari_fingerprints(atari_replay.store()),
    sensor_description="Lists ATARI_REPLAY_URL; requests atari_replay_files for each game/run "
    "whose files appeared or changed (generation/crc32c). Automation then rebuilds downstream.",
    row_checks=(RECORDED_RETURNS,),
    pod={"requests": {"cpu": "2", "memory": "6Gi"}, "limits": {"memory": "10Gi"}},
)
