"""mt_opt as TFDS publishes it, around the real shard in ``../shared/samples``.

The TensorFlow Datasets authors' mt_opt sample (``rlds/mt_opt_rlds/1.0.0/``, one shard of two
real episodes: a 512x640 JPEG camera and zlib tensors) ships without the ``features.json`` and
``dataset_info.json`` a published RLDS folder has: its features are declared in TFDS's
``robotics/mt_opt`` builder. :func:`write_mt_opt_folder` writes that folder: a copy of the
shard (the samples stay where they are, read-only) beside the builder's ``rlds`` config as
``features.json`` and the ``dataset_info.json`` TFDS would write for it
(``warehouse fixtures FOLDER --kind mt_opt``; then ``OPENX_URL=FOLDER``).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from warehouse_fixtures import rlds_writer as w

NAME, VERSION = "mt_opt_rlds", "1.0.0"
SHARD = "mt_opt_rlds-train.tfrecord-00000-of-00001"

# mt_opt's "rlds" config, as its TFDS builder declares it (features.json is not in the sample)
MT_OPT_RLDS = w.episode_features(
    {
        "action": w.features_dict(
            {
                "close_gripper": w.tensor((), "bool"),
                "open_gripper": w.tensor((), "bool"),
                "target_pose": w.tensor((7,), "float32", "zlib"),
                "terminate": w.tensor((), "bool"),
            }
        ),
        "is_first": w.tensor((), "bool"),
        "is_last": w.tensor((), "bool"),
        "is_terminal": w.tensor((), "bool"),
        "observation": w.features_dict(
            {
                "gripper_closed": w.tensor((), "bool"),
                "height_to_bottom": w.tensor((), "float32"),
                "image": w.image((512, 640, 3), "uint8", ""),
                "state_dense": w.tensor((7,), "float32", "zlib"),
            }
        ),
    },
    episode_id=w.tensor((), "string"),
    skill=w.tensor((), "uint8"),
    task_code=w.tensor((), "string"),
)


def write_mt_opt_folder(samples: Path, out: Path) -> Path:
    """``out/mt_opt_rlds/1.0.0/``: the sample's shard (``samples/rlds/mt_opt_rlds/1.0.0/``)
    with the builder's features.json and the info TFDS would write; the version folder.

    Raises:
        FileNotFoundError: the samples folder does not hold the shard.
    """
    shard = Path(samples) / "rlds" / NAME / VERSION / SHARD
    if not shard.is_file():
        raise FileNotFoundError(f"no mt_opt sample shard at {shard}")
    folder = Path(out) / NAME / VERSION
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(shard, folder / SHARD)
    (folder / "features.json").write_text(json.dumps(MT_OPT_RLDS, indent=2))
    info = {"name": NAME, "version": VERSION,
            "splits": [{"name": "train", "shardLengths": ["2"]}]}  # fmt: skip
    (folder / "dataset_info.json").write_text(json.dumps(info, indent=2))
    return folder
