"""An RLDS dataset's ``features.json`` (what TFDS's ``FeatureConnector.save_config`` writes), read
into the flat list of leaves the decoder walks.

The file is a tree of feature connectors, each ``{"pythonClassName": ..., <content>: ...}``:

- ``FeaturesDict`` (``featuresDict.features``): nesting; paths join the names with ``/``.
- ``Tensor`` and ``Scalar`` (``tensor``: ``shape.dimensions``, ``dtype``, ``encoding`` of
  ``none``, ``bytes`` or ``zlib``); ``ClassLabel`` (an int64 scalar).
- ``Image`` (``image``: ``shape``, ``dtype`` uint8 or uint16, ``encodingFormat``), and float32
  depth images of one channel, which TFDS writes as PNGs of 4 channels holding each float's
  bytes (``_FloatImageEncoder``: a bitcast, read back the same way).
- ``Text`` (a string).
- ``Dataset`` / ``Sequence`` (``sequence.feature``, ``sequence.length``): RLDS's ``steps``, the
  one sequence an episode has; its leaves are per step.

Anything else (Video, Audio, BoundingBox, Translation, a sequence inside the steps, a dtype TFDS
cannot serialize) is refused by name, so nothing a dataset holds is skipped without a word.
Dimensions of ``-1`` are unknown (``None``); TFDS itself reads at most one unknown dimension of
an unencoded tensor, and more only from ``encoding: bytes|zlib`` tensors (which then carry their
shape in a ``<path>/shape`` field).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from episode_warehouse.errors import CorruptInputError
from episode_warehouse.guards.shapes import checked_shape

STEPS = "steps"
_NUMERIC_DTYPES = frozenset(
    [
        "bool",
        "int8",
        "uint8",
        "int16",
        "uint16",
        "int32",
        "uint32",
        "int64",
        "uint64",
        "float16",
        "float32",
        "float64",
    ]
)
_ENCODINGS = ("none", "bytes", "zlib")
# one feature of one step, as declared: real ones are images of a few MB at most
MAX_STEP_FEATURE_BYTES = 1 << 30
_REFUSED = {
    "Video": "videos",
    "Audio": "audio",
    "BoundingBox": "bounding boxes",
    "Translation": "translations",
    "TranslationVariableLanguages": "translations",
    "OptionalFeature": "optional features",
}
_FIX = "this dataset's features are not read yet; open an issue naming the feature"


@dataclass(frozen=True)
class Leaf:
    """One value of an episode (``in_steps=False``) or of each of its steps.

    ``kind`` is ``tensor``, ``image`` or ``text``; ``dtype`` a numpy name (``string`` for
    string tensors); ``shape`` the declared shape, ``None`` for ``-1``; ``encoding`` the
    tensor's (``none``, ``bytes``, ``zlib``) or the image's declared format (informative only:
    images are told apart by their magic bytes).
    """

    path: str
    kind: str
    dtype: str
    shape: tuple[int | None, ...]
    encoding: str
    in_steps: bool

    @property
    def dynamic(self) -> bool:
        """Whether the tensor's shape is stored beside it (more than one unknown dimension)."""
        return self.kind == "tensor" and self.shape.count(None) > 1


@dataclass(frozen=True)
class RldsFeatures:
    """The leaves of one RLDS dataset: per step, and per episode (``episode_metadata`` ...)."""

    steps: tuple[Leaf, ...]
    episode: tuple[Leaf, ...]

    def step(self, path: str) -> Leaf | None:
        return next((leaf for leaf in self.steps if leaf.path == path), None)


def _part(node: dict, key: str, where: str, subject: str) -> dict:
    """``node[key]`` when it is an object, {} when it is absent or null; refused otherwise."""
    value = node.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise CorruptInputError(
            f"feature {where or '(root)'}: {key!r} is a {type(value).__name__}, not an object",
            subject=subject,
            fix="features.json must be the file TFDS wrote for this dataset version",
        )
    return value


def _class(node: dict, where: str, subject: str) -> str:
    name = node.get("pythonClassName") if isinstance(node, dict) else None
    if not isinstance(name, str) or not name:
        raise CorruptInputError(
            f"feature {where or '(root)'} has no pythonClassName",
            subject=subject,
            fix="features.json must be the file TFDS wrote for this dataset version",
        )
    return name.rsplit(".", 1)[-1]


def _shape(content: dict, where: str, subject: str) -> tuple[int | None, ...]:
    dims = _part(content, "shape", where, subject).get("dimensions", [])
    if not isinstance(dims, list):
        dims = [dims]  # reported below as not a list of integers
    try:
        shape = tuple(int(d) for d in dims)
    except (TypeError, ValueError, OverflowError):
        raise CorruptInputError(
            f"feature {where} has a shape that is not a list of integers: {str(dims)[:80]}",
            subject=subject,
        ) from None
    if any(d < -1 for d in shape):
        raise CorruptInputError(f"feature {where} has a negative dimension", subject=subject)
    checked_shape(  # one step of one feature; the unknown dimensions are bounded per episode
        [max(d, 1) for d in shape],
        dtype="uint8",
        subject=subject,
        what=f"feature {where}",
        max_bytes=MAX_STEP_FEATURE_BYTES,
        fix="features.json must be the file TFDS wrote for this dataset version",
    )
    return tuple(None if d == -1 else d for d in shape)


def _dtype(content: dict, where: str, subject: str, *, allow_string: bool = True) -> str:
    dtype = content.get("dtype")
    if not isinstance(dtype, str):
        dtype = repr(dtype)[:40]
    if dtype == "string" and allow_string:
        return dtype
    if dtype not in _NUMERIC_DTYPES:
        raise CorruptInputError(
            f"feature {where} has dtype {dtype!r}, which is not read (numbers, bool, string)",
            subject=subject,
            fix=_FIX,
        )
    return str(dtype)


def _leaves(node: dict, path: str, in_steps: bool, out: list[Leaf], subject: str) -> None:
    kind = _class(node, path, subject)
    if kind == "FeaturesDict":
        children = _part(node, "featuresDict", path, subject).get("features")
        if not isinstance(children, dict):
            raise CorruptInputError(
                f"feature {path or '(root)'} lists no features", subject=subject
            )
        for name in sorted(children):
            # TFDS joins a leaf's path with '/', and a name may hold one itself (kuka's
            # 'clip_function_input/base_pose_tool_reached'): each part must be a name
            if not isinstance(name, str) or any(p in ("", ".", "..") for p in name.split("/")):
                raise CorruptInputError(f"feature name {name!r} under {path!r}", subject=subject)
            _leaves(children[name], f"{path}/{name}" if path else name, in_steps, out, subject)
    elif kind in ("Tensor", "Scalar"):
        content = _part(node, "tensor", path, subject)
        encoding = str(content.get("encoding") or "none").lower()
        if encoding not in _ENCODINGS:
            raise CorruptInputError(
                f"feature {path} has encoding {encoding!r} (read: {', '.join(_ENCODINGS)})",
                subject=subject,
                fix=_FIX,
            )
        shape, dtype = _shape(content, path, subject), _dtype(content, path, subject)
        unknown = shape.count(None)
        if encoding == "none" and (
            unknown > 1 or (unknown == 1 and (in_steps or shape[0] is not None))
        ):
            raise CorruptInputError(
                f"feature {path} has shape {shape} with unknown dimensions TFDS cannot read "
                "back from an unencoded tensor either",
                subject=subject,
                fix="the dataset was written with a TFDS that allowed it; open an issue",
            )
        out.append(Leaf(path, "tensor", dtype, shape, encoding, in_steps))
    elif kind == "ClassLabel":
        out.append(Leaf(path, "tensor", "int64", (), "none", in_steps))
    elif kind == "Image":
        content = _part(node, "image", path, subject)
        shape = _shape(content, path, subject)
        dtype = _dtype(content, path, subject, allow_string=False)
        fmt = str(content.get("encodingFormat") or "")
        if (
            len(shape) != 3
            or dtype not in ("uint8", "uint16", "float32")
            or shape[2] not in (None, 1, 3, 4)
            or (dtype == "float32" and (shape[2] != 1 or fmt not in ("", "png")))
        ):
            raise CorruptInputError(
                f"image {path} is declared {shape} {dtype}: read are (height, width, 1|3|4) "
                "of uint8, uint16 (depth), or (height, width, 1) float32 PNG (depth, as TFDS "
                "writes it)",
                subject=subject,
                fix=_FIX,
            )
        if not in_steps:
            raise CorruptInputError(
                f"image {path} is per episode; images are read per step", subject=subject, fix=_FIX
            )
        out.append(Leaf(path, "image", dtype, shape, fmt, in_steps))
    elif kind == "Text":
        out.append(Leaf(path, "text", "string", (), "none", in_steps))
    elif kind in ("Dataset", "Sequence"):
        if in_steps or path != STEPS:
            raise CorruptInputError(
                f"feature {path} is a {kind}: only the episode's steps may be a sequence",
                subject=subject,
                fix=_FIX,
            )
        inner = _part(node, "sequence", path, subject).get("feature")
        if not isinstance(inner, dict):
            raise CorruptInputError(f"{STEPS} has no sequence feature", subject=subject)
        if _class(inner, STEPS, subject) != "FeaturesDict":
            raise CorruptInputError(f"{STEPS} is not a dict of step features", subject=subject)
        _leaves(inner, "", True, out, subject)
    else:
        what = _REFUSED.get(kind, f"the feature kind {kind}")
        raise CorruptInputError(
            f"feature {path or '(root)'} holds {what}, which is not read", subject=subject, fix=_FIX
        )


def parse_features(doc: object, subject: str) -> RldsFeatures:
    """The leaves of a parsed ``features.json``.

    Raises:
        CorruptInputError: not an episode dataset (no ``steps`` sequence), or a feature kind,
            dtype, encoding or shape that is not read (named, with its path).
    """
    if not isinstance(doc, dict) or _class(doc, "", subject) != "FeaturesDict":
        raise CorruptInputError("features.json is not a FeaturesDict", subject=subject)
    children = _part(doc, "featuresDict", "", subject).get("features") or {}
    if not isinstance(children, dict):
        raise CorruptInputError("features.json lists no features", subject=subject)
    if STEPS not in children or _class(children[STEPS], STEPS, subject) not in (
        "Dataset",
        "Sequence",
    ):
        raise CorruptInputError(
            f"no '{STEPS}' sequence: this is not an RLDS episode dataset "
            f"(its features are {sorted(children)})",
            subject=subject,
            fix="choose an episode dataset; e.g. mt_opt_sd is a success-detector set of images",
        )
    leaves: list[Leaf] = []
    _leaves(doc, "", False, leaves, subject)
    paths = [leaf.path for leaf in leaves]
    if len(set(paths)) != len(paths):
        twice = sorted({p for p in paths if paths.count(p) > 1})
        raise CorruptInputError(
            f"two features serialize to the same key {twice[0]!r} (a name with '/' beside a "
            "nested one)",
            subject=subject,
            fix="rename one of them at the source",
        )
    steps = tuple(leaf for leaf in leaves if leaf.in_steps)
    if not steps:
        raise CorruptInputError(f"'{STEPS}' declares no features", subject=subject)
    return RldsFeatures(steps, tuple(leaf for leaf in leaves if not leaf.in_steps))


def numpy_dtype(leaf: Leaf) -> np.dtype:
    """The leaf's numpy dtype (little endian, as TFDS's ``tobytes`` wrote it on x86 and ARM)."""
    return np.dtype(leaf.dtype).newbyteorder("<")
