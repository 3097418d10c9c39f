"""Cross-check the RLDS reader against TensorFlow Datasets' own, on the same dataset folder.

TensorFlow is not one of the project's dependencies, so this runs in two environments:

    # 1. where tensorflow and tensorflow-datasets are installed (e.g. a separate venv):
    python scripts/tfds_crosscheck.py dump  FOLDER/<dataset>/<version> /tmp/tfds.npz
    # 2. in the project's environment (./warehouse's .venv):
    .venv/bin/python scripts/tfds_crosscheck.py compare FOLDER /tmp/tfds.npz

``dump`` reads every split with ``tfds.builder_from_directory`` (files in order, no interleave),
decodes images twice (TFDS's default decoder, and JPEG with ``dct_method='INTEGER_ACCURATE'``)
and saves every step leaf concatenated over all episodes, plus its frames/s. ``compare`` decodes
the same folder with this project's reader and checks every leaf: equal for numbers, equal to
the accurate decode for images; it prints how far TFDS's default JPEG decode is from it.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def _flatten(tree, prefix=""):
    for key, value in tree.items():
        path = f"{prefix}/{key}" if prefix else key
        if isinstance(value, dict):
            yield from _flatten(value, path)
        else:
            yield path, value


def _image_paths(features_json: dict) -> dict[str, str]:
    """Each step image's path and its declared dtype."""
    steps = features_json["featuresDict"]["features"]["steps"]["sequence"]["feature"]
    out: dict[str, str] = {}

    def walk(node, prefix):
        kind = node["pythonClassName"].rsplit(".", 1)[-1]
        if kind == "FeaturesDict":
            for name, child in node["featuresDict"]["features"].items():
                walk(child, f"{prefix}/{name}" if prefix else name)
        elif kind == "Image":
            out[prefix] = node["image"]["dtype"]

    walk(steps, "")
    return out


def _stacked(steps) -> dict[str, np.ndarray]:
    """A ``steps`` value as tfds.as_numpy gives it (a dict of arrays, or an iterable of step
    dicts) as one (T, ...) array per leaf path."""
    if isinstance(steps, dict):
        return {k: np.asarray(v) for k, v in _flatten(steps)}
    rows = [dict(_flatten(step)) for step in steps]
    return {k: np.stack([np.asarray(r[k]) for r in rows]) for k in rows[0]}


def dump(folder: Path, out: Path) -> None:
    import tensorflow as tf
    import tensorflow_datasets as tfds

    builder = tfds.builder_from_directory(str(folder))
    images = _image_paths(json.loads((folder / "features.json").read_text()))
    skip: dict = {}
    for path in images:
        node = skip.setdefault("steps", {})
        parts = path.split("/")
        for p in parts[:-1]:
            node = node.setdefault(p, {})
        node[parts[-1]] = tfds.decode.SkipDecoding()
    arrays: dict[str, list] = {}
    frames = 0
    started = time.perf_counter()
    config = tfds.ReadConfig(interleave_cycle_length=1)
    for split in sorted(builder.info.splits):  # the reader's order: split by name
        default = builder.as_dataset(split=split, shuffle_files=False, read_config=config)
        raw = builder.as_dataset(
            split=split, shuffle_files=False, read_config=config, decoders=skip
        )
        for ep_default, ep_raw in zip(tfds.as_numpy(default), tfds.as_numpy(raw), strict=True):
            steps = _stacked(ep_default["steps"])
            for path, value in steps.items():
                arrays.setdefault(path, []).append(value)
            raw_steps = _stacked(ep_raw["steps"])
            for path in images:
                encoded = raw_steps[path]
                accurate = []
                for blob in encoded:
                    if blob[:2] == b"\xff\xd8":
                        img = tf.io.decode_jpeg(blob, dct_method="INTEGER_ACCURATE")
                    else:
                        depth = images[path] == "uint16"
                        img = tf.io.decode_png(blob, dtype=tf.uint16 if depth else tf.uint8)
                    accurate.append(img.numpy())
                arrays.setdefault(f"{path}#accurate", []).append(np.stack(accurate))
            frames += len(next(iter(steps.values())))
    seconds = time.perf_counter() - started
    np.savez(out, **{k: np.concatenate(v) for k, v in arrays.items()})
    print(f"tfds: {frames} steps in {seconds:.2f} s ({frames / seconds:.0f} steps/s, two decodes)")


def compare(folder: Path, dump_file: Path) -> int:
    from episode_warehouse.decoded import open_decoded
    from episode_warehouse.paths import WarehouseLayout
    from episode_warehouse.sources.openx.raw import mirror_openx
    from episode_warehouse.sources.openx.stage import decode_openx

    version_dir = folder
    dataset = version_dir.parent.name
    theirs = np.load(dump_file)
    with tempfile.TemporaryDirectory() as tmp:
        layout = WarehouseLayout.local(Path(tmp))
        versions = {dataset: version_dir.name}
        mirror_openx(
            str(version_dir.parent.parent),
            dataset,
            layout.raw_dir("openx", dataset),
            root=layout.root,
            code_version="crosscheck",
            versions=versions,
        )
        started = time.perf_counter()
        decode_openx(layout, dataset, code_version="crosscheck")
        seconds = time.perf_counter() - started
        dec = open_decoded(layout.decoded_dir("openx", dataset))
        ours = {k: dec.array(k)[: dec.rows] for k in dec.arrays}
        texts, tasks = dec.meta.extra.get("texts", {}), dec.meta.tasks
        from episode_warehouse.sources.openx.rlds.decode import INSTRUCTION_PATHS

        for path in INSTRUCTION_PATHS:  # the instruction is the TED's task_index
            if path in theirs.files:
                ours[path] = ours["task_index"]
                break
        print(f"ours: {dec.rows} steps in {seconds:.2f} s ({dec.rows / seconds:.0f} steps/s)")
        failures = 0
        for key in sorted(k for k in theirs.files if "#" not in k):
            if key not in ours:
                print(f"  {key}: not a TED array (an episode boundary)")
                continue
            mine, tf_value = ours[key], theirs[key]
            if tf_value.dtype.kind in "SO":  # text: the TED holds indices into meta.json's lists
                table = texts.get(key, tasks)
                same = [table[i] for i in mine] == [v.decode() for v in tf_value]
                print(f"  {key}: {'equal' if same else 'DIFFERENT'} (text, {len(mine)} steps)")
            elif f"{key}#accurate" in theirs.files:
                accurate = theirs[f"{key}#accurate"].transpose(0, 3, 1, 2)
                same = np.array_equal(mine, accurate)
                levels = np.abs(tf_value.transpose(0, 3, 1, 2).astype(int) - mine).max()
                print(f"  {key}: {'equal' if same else 'DIFFERENT'} to the accurate IDCT; "
                      f"tfds default differs by up to {levels} levels")  # fmt: skip
            else:
                same = np.array_equal(mine, tf_value.reshape(mine.shape).astype(mine.dtype))
                print(f"  {key}: {'equal' if same else 'DIFFERENT'} ({mine.dtype} {mine.shape})")
            failures += not same
    return 1 if failures else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser("dump", help="read FOLDER with tensorflow-datasets into NPZ")
    d.add_argument("folder", type=Path)
    d.add_argument("npz", type=Path)
    c = sub.add_parser("compare", help="decode FOLDER with this project and compare with NPZ")
    c.add_argument("folder", type=Path)
    c.add_argument("npz", type=Path)
    args = parser.parse_args(argv)
    if args.command == "dump":
        dump(args.folder, args.npz)
        return 0
    return compare(args.folder, args.npz)


if __name__ == "__main__":
    sys.exit(main())
