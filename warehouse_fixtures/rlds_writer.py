"""Write RLDS dataset folders (what TFDS's builders publish) from the format, without TensorFlow.

A folder ``<dataset>/<version>/`` holds ``features.json`` (the feature tree, as TFDS's
``FeatureConnector.save_config`` writes it), ``dataset_info.json`` (splits, shard lengths, the
file-path template) and the shards: TFRecord files of one ``tf.train.Example`` per episode.

Serialization, as TFDS's ``example_serializer`` and feature connectors define it (written from
that definition, not from this project's reader):
- nested dicts are flattened with ``/``; the steps' leaves are ``steps/<path>``, each holding
  all T steps concatenated, row-major;
- bool and every integer dtype go to ``int64_list`` (uint64 bit-cast), every float dtype to
  ``float_list`` (float32), strings and text to ``bytes_list``;
- ``encoding="bytes"`` tensors are one bytes value per step: ``ndarray.tobytes()`` (little
  endian); ``"zlib"`` compresses those bytes; tensors with more than one unknown dimension are
  ``<path>/value`` plus ``<path>/shape`` (int64, the shape of each step);
- images are one encoded PNG or JPEG per step (Pillow), grey images ``(H, W, 1)``, depth
  ``uint16`` PNG.

The wire format itself (Example protobuf, TFRecord framing) comes from ``rlu_writer``.
"""

from __future__ import annotations

import gzip
import io
import json
import zlib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np
from PIL import Image

from warehouse_fixtures.rlu_writer import (
    bytes_feature,
    example,
    float_feature,
    frame_record,
    int64_feature,
)

_PKG = "tensorflow_datasets.core.features"
TEMPLATE = "{DATASET}-{SPLIT}.{FILEFORMAT}-{SHARD_X_OF_Y}"


# -- features.json nodes ------------------------------------------------------------------------


def _shape(shape) -> dict:
    return {"dimensions": [str(-1 if d is None else d) for d in shape]} if shape else {}


def tensor(shape=(), dtype="float32", encoding="none", *, scalar=False) -> dict:
    name = "scalar.Scalar" if scalar else "tensor_feature.Tensor"
    return {
        "pythonClassName": f"{_PKG}.{name}",
        "tensor": {"shape": _shape(shape), "dtype": dtype, "encoding": encoding},
    }


def image(shape, dtype="uint8", fmt="png") -> dict:
    content = {"shape": _shape(shape), "dtype": dtype}
    if fmt:
        content["encodingFormat"] = fmt
    return {"pythonClassName": f"{_PKG}.image_feature.Image", "image": content}


def text() -> dict:
    return {"pythonClassName": f"{_PKG}.text_feature.Text", "text": {}}


def class_label(num_classes: int) -> dict:
    return {
        "pythonClassName": f"{_PKG}.class_label_feature.ClassLabel",
        "classLabel": {"numClasses": str(num_classes)},
    }


def features_dict(children: dict) -> dict:
    return {
        "pythonClassName": f"{_PKG}.features_dict.FeaturesDict",
        "featuresDict": {"features": children},
    }


def dataset(step_features: dict) -> dict:
    return {
        "pythonClassName": f"{_PKG}.dataset_feature.Dataset",
        "sequence": {"feature": features_dict(step_features), "length": "-1"},
    }


def episode_features(steps: dict, **episode: dict) -> dict:
    """The root FeaturesDict of an RLDS dataset: ``steps`` plus episode-level features."""
    return features_dict({"steps": dataset(steps), **episode})


# -- serialization ------------------------------------------------------------------------------


def _kind(node: dict) -> str:
    return node["pythonClassName"].rsplit(".", 1)[-1]


def _dims(node: dict) -> list:
    content = node.get("tensor") or node.get("image") or {}
    return [int(d) for d in (content.get("shape") or {}).get("dimensions", [])]


def encode_image(pixels: np.ndarray, fmt: str) -> bytes:
    """(H, W, C) pixels as PNG (8 or 16 bits) or JPEG (quality 90). A float32 ``(H, W, 1)``
    image is written as TFDS's ``_FloatImageEncoder`` writes it: each float's four bytes
    (little-endian, the byte order of the machines TFDS runs on) as the four channels of an
    8-bit RGBA PNG."""
    if pixels.dtype == np.float32:
        if pixels.shape[-1] != 1:
            raise ValueError("TFDS writes float32 images of one channel only")
        pixels = np.ascontiguousarray(pixels.astype("<f4")).view(np.uint8)  # (H, W, 4)
    arr = pixels[..., 0] if pixels.shape[-1] == 1 else pixels
    buf = io.BytesIO()
    if fmt == "jpeg":
        Image.fromarray(arr).save(buf, format="JPEG", quality=90)
    else:
        Image.fromarray(arr).save(buf, format="PNG")
    return buf.getvalue()


def _number_feature(values: np.ndarray, dtype: str) -> bytes:
    if dtype.startswith("float"):
        return float_feature(values.astype(np.float32).ravel())
    if dtype == "uint64":
        return int64_feature(values.astype(np.uint64).view(np.int64).ravel())
    return int64_feature(values.astype(np.int64).ravel())


def _leaf_features(node: dict, key: str, values: list, out: dict[str, bytes]) -> None:
    """Serialize one leaf's values (one per step, or one) into ``out``."""
    kind = _kind(node)
    if kind == "Image":
        fmt = node["image"].get("encodingFormat") or "png"
        out[key] = bytes_feature([encode_image(np.asarray(v), fmt) for v in values])
    elif kind == "Text" or (kind in ("Tensor", "Scalar") and node["tensor"]["dtype"] == "string"):
        out[key] = bytes_feature([v.encode() if isinstance(v, str) else bytes(v) for v in values])
    elif kind == "ClassLabel":
        out[key] = int64_feature(values)
    else:
        spec = node["tensor"]
        dtype, encoding = spec["dtype"], spec.get("encoding", "none")
        arrays = [np.asarray(v, dtype=dtype) for v in values]
        if encoding == "none":
            flat = np.concatenate([a.ravel() for a in arrays]) if arrays else np.zeros(0, dtype)
            out[key] = _number_feature(flat, dtype)
            return
        raw = [a.astype(a.dtype.newbyteorder("<")).tobytes() for a in arrays]
        if encoding == "zlib":
            raw = [zlib.compress(r) for r in raw]
        if _dims(node).count(-1) > 1:
            out[f"{key}/value"] = bytes_feature(raw)
            out[f"{key}/shape"] = int64_feature([d for a in arrays for d in a.shape])
        else:
            out[key] = bytes_feature(raw)


def _walk(node: dict, prefix: str, values: list, out: dict[str, bytes]) -> None:
    """``values``: one value per step (a list of T) or a one-element list for episode leaves."""
    if _kind(node) == "FeaturesDict":
        for name, child in node["featuresDict"]["features"].items():
            _walk(child, f"{prefix}/{name}" if prefix else name, [v[name] for v in values], out)
    else:
        _leaf_features(node, prefix, values, out)


def serialize_episode(features: dict, episode: dict) -> bytes:
    """One episode (``{"steps": [step dict, ...], <episode leaves>}``) as Example bytes."""
    out: dict[str, bytes] = {}
    for name, child in features["featuresDict"]["features"].items():
        if _kind(child) == "Dataset":
            _walk(child["sequence"]["feature"], "steps", episode["steps"], out)
        else:
            _walk(child, name, [episode[name]], out)
    return example(out)


def shard_name(template: str, name: str, split: str, index: int, total: int) -> str:
    """The file name of shard ``index`` of ``total`` (TFDS's file-path template filled in)."""
    return (
        template.replace("{DATASET}", name)
        .replace("{SPLIT}", split)
        .replace("{FILEFORMAT}", "tfrecord")
        .replace("{SHARD_X_OF_Y}", f"{index:05d}-of-{total:05d}")
        .replace("{SHARD_INDEX}", f"{index:05d}")
        .replace("{NUM_SHARDS}", f"{total:05d}")
    )


def write_shard(path: Path, features: dict, episodes: Iterable[dict], *, gzipped=False) -> int:
    """One TFRecord shard of ``episodes`` at ``path``; returns how many it holds."""
    records = [frame_record(serialize_episode(features, e)) for e in episodes]
    data = b"".join(records)
    Path(path).write_bytes(gzip.compress(data) if gzipped else data)
    return len(records)


def write_metadata(
    folder: Path,
    name: str,
    version: str,
    features: dict,
    shard_lengths: Mapping[str, Sequence[int]],
    *,
    template: str = TEMPLATE,
) -> None:
    """``features.json`` and ``dataset_info.json`` (each split's shard lengths, in order)."""
    (folder / "features.json").write_text(json.dumps(features, indent=2))
    info_splits = [
        {
            "name": split,
            "filepathTemplate": template,
            "shardLengths": [str(n) for n in lengths],
            "numBytes": "0",
        }
        for split, lengths in shard_lengths.items()
    ]
    info = {"name": name, "version": version, "fileFormat": "tfrecord", "splits": info_splits}
    (folder / "dataset_info.json").write_text(json.dumps(info, indent=2))


def write_dataset(
    root: Path,
    name: str,
    version: str,
    features: dict,
    splits: Mapping[str, Sequence[Iterable[dict]]],
    *,
    template: str = TEMPLATE,
    gzipped: bool = False,
) -> Path:
    """Write ``root/name/version/``: features.json, dataset_info.json and the shards of each
    split (``splits[split]`` is a sequence of shards, each an iterable of episodes: a shard
    may be a generator, so a large dataset is written holding one episode at a time). Returns
    the folder."""
    folder = Path(root) / name / version
    folder.mkdir(parents=True, exist_ok=True)
    lengths: dict[str, list[int]] = {}
    for split, shards in splits.items():
        lengths[split] = [
            write_shard(
                folder / shard_name(template, name, split, index, len(shards)),
                features,
                episodes,
                gzipped=gzipped,
            )
            for index, episodes in enumerate(shards)
        ]
    write_metadata(folder, name, version, features, lengths, template=template)
    return folder
