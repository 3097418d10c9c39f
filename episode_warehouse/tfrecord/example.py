"""``tf.train.Example`` without TensorFlow: the public message definitions, built with protobuf.

The messages (tensorflow/core/example/example.proto and feature.proto, stable since 2016)::

    message BytesList { repeated bytes value = 1; }
    message FloatList { repeated float value = 1 [packed = true]; }
    message Int64List { repeated int64 value = 1 [packed = true]; }
    message Feature { oneof kind { BytesList bytes_list = 1; FloatList float_list = 2;
                                   Int64List int64_list = 3; } }
    message Features { map<string, Feature> feature = 1; }
    message Example { Features features = 1; }

They are declared here as a descriptor in a private pool (no generated code, no clash with a
TensorFlow that may be installed) and parsed by protobuf's C implementation (upb).
"""

from __future__ import annotations

from functools import cache
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_F = descriptor_pb2.FieldDescriptorProto
_PACKAGE = "episode_warehouse.tf"


def _message(
    name: str, fields: list[tuple[str, int, int, int, str]]
) -> descriptor_pb2.DescriptorProto:
    """(name, number, type, label, type_name) fields."""
    msg = descriptor_pb2.DescriptorProto(name=name)
    for fname, number, ftype, label, type_name in fields:
        field = msg.field.add(name=fname, number=number, type=ftype, label=label)
        if type_name:
            field.type_name = f".{_PACKAGE}.{type_name}"
    return msg


@cache
def message_classes() -> dict[str, Any]:
    """The message classes by name (``Example``, ``Feature``, ...)."""
    rep, opt = _F.LABEL_REPEATED, _F.LABEL_OPTIONAL
    msg = _F.TYPE_MESSAGE
    proto = descriptor_pb2.FileDescriptorProto(
        name="episode_warehouse/tf_example.proto", package=_PACKAGE, syntax="proto3"
    )
    proto.message_type.append(_message("BytesList", [("value", 1, _F.TYPE_BYTES, rep, "")]))
    proto.message_type.append(_message("FloatList", [("value", 1, _F.TYPE_FLOAT, rep, "")]))
    proto.message_type.append(_message("Int64List", [("value", 1, _F.TYPE_INT64, rep, "")]))
    feature = _message(
        "Feature",
        [
            ("bytes_list", 1, msg, opt, "BytesList"),
            ("float_list", 2, msg, opt, "FloatList"),
            ("int64_list", 3, msg, opt, "Int64List"),
        ],
    )
    feature.oneof_decl.add(name="kind")
    for field in feature.field:
        field.oneof_index = 0
    proto.message_type.append(feature)
    features = _message("Features", [("feature", 1, msg, rep, "Features.FeatureEntry")])
    entry = features.nested_type.add(name="FeatureEntry")
    entry.field.add(name="key", number=1, type=_F.TYPE_STRING, label=opt)
    entry.field.add(name="value", number=2, type=msg, label=opt, type_name=f".{_PACKAGE}.Feature")
    entry.options.map_entry = True
    proto.message_type.append(features)
    proto.message_type.append(_message("Example", [("features", 1, msg, opt, "Features")]))
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return {
        name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{_PACKAGE}.{name}"))
        for name in ("Example", "Features", "Feature", "BytesList", "FloatList", "Int64List")
    }


def parse_example(data: bytes):
    """An ``Example`` message from its bytes.

    Raises:
        google.protobuf.message.DecodeError: the bytes are not an Example.
    """
    return message_classes()["Example"].FromString(data)
