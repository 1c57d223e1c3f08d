# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Decode ``application/vnd.kubernetes.protobuf`` request bodies into the objects' JSON form.

client-go's typed clients (Helm's Secret storage, kubectl drain's DELETE fallback, kubectl's
``create`` generators) send bodies as the magic ``k8s\\x00`` followed by a ``runtime.Unknown``::

    message Unknown { TypeMeta typeMeta = 1; bytes raw = 2; string contentEncoding = 3; string contentType = 4; }
    message TypeMeta { string apiVersion = 1; string kind = 2; }

``raw`` is the object in the wire format of k8s.io/api's ``generated.proto``. Only the kinds the
real clients send this way are understood (``kubelab.protobuf_types.KINDS``): Secret, ConfigMap,
DeleteOptions, Eviction, and what ``kubectl create`` makes: Namespace, ServiceAccount, Service,
PodDisruptionBudget, Deployment, Job, CronJob, Role, ClusterRole, RoleBinding and
ClusterRoleBinding. The schemas and their field numbers, which are the ``protobuf:"..."`` struct
tags compiled into the clients themselves (Helm 4.2.3's libhelm_c, k8s.io/api and
k8s.io/apimachinery v0.35), are in ``kubelab.protobuf_types``, with the list of decoded PodSpec
fields; fields missing from a schema are skipped.

``decode_body`` returns what the same object looks like when a client sends it as JSON: Go
zero values of ``omitempty`` fields (``""``, ``0``, ``false``, empty maps and lists, the zero Time)
are dropped; pointer fields are kept whenever present, so ``gracePeriodSeconds: 0`` survives;
fields without ``omitempty`` are always there (a nil list as ``null``); structs are never dropped.
Bytes fields come back base64-encoded, IntOrString as its number or string and Quantity as its
string, as in JSON.
"""

from __future__ import annotations

import base64
import datetime
import json

from kubelab.errors import ApiError, bad_request, unsupported_media_type
from kubelab.protobuf_types import (
    ALWAYS, DELETE_OPTIONS, INT_OR_STRING, KEEP, KINDS, OMIT, QUANTITY, RUNTIME_UNKNOWN, TIME)

MAGIC = b"k8s\x00"
MEDIA_TYPE = "application/vnd.kubernetes.protobuf"

# Wire types.
VARINT = 0
FIXED64 = 1
LENGTH = 2
FIXED32 = 5

# Go's zero time.Time, as a Unix time: what a zero metav1.Time would marshal to if not omitted.
_GO_ZERO_TIME = -62135596800


class DecodeError(Exception):
    """Malformed protobuf; ``decode_body`` turns it into a 400 BadRequest."""


# ----------------------------------------------------------------------------------------------
# the wire format


def read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    """The unsigned varint at ``pos`` and the position after it."""
    result = 0
    shift = 0
    while True:
        if pos >= len(buf):
            raise DecodeError("truncated varint")
        byte = buf[pos]
        pos += 1
        if shift == 63 and byte > 1:
            raise DecodeError("varint overflows 64 bits")
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise DecodeError("varint longer than 10 bytes")


def iter_fields(buf: bytes):
    """Yield ``(number, wire_type, value)`` for each field of a message.

    ``value`` is an int for varint and fixed fields (unsigned) and bytes for length-delimited ones.
    """
    pos = 0
    end = len(buf)
    while pos < end:
        key, pos = read_varint(buf, pos)
        number, wire_type = key >> 3, key & 7
        if number == 0:
            raise DecodeError("field number 0 at offset %d" % (pos - 1))
        if wire_type == VARINT:
            value, pos = read_varint(buf, pos)
        elif wire_type == LENGTH:
            length, pos = read_varint(buf, pos)
            if length > end - pos:
                raise DecodeError("field %d: length %d runs past the end of the message" % (number, length))
            value = bytes(buf[pos:pos + length])
            pos += length
        elif wire_type in (FIXED64, FIXED32):
            size = 8 if wire_type == FIXED64 else 4
            if size > end - pos:
                raise DecodeError("field %d: truncated fixed%d" % (number, size * 8))
            value = int.from_bytes(buf[pos:pos + size], "little")
            pos += size
        else:
            raise DecodeError("field %d: unsupported wire type %d" % (number, wire_type))
        yield number, wire_type, value


def _signed64(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _string(value: bytes) -> str:
    # Go's JSON encoder writes invalid UTF-8 as U+FFFD; do the same.
    return value.decode("utf-8", errors="replace")


# ----------------------------------------------------------------------------------------------
# decoding with a schema (the schemas are in kubelab.protobuf_types)

_SCALAR_WIRE = {"string": LENGTH, "bytes": LENGTH, "int": VARINT, "bool": VARINT, "message": LENGTH, "time": LENGTH,
                "fields_v1": LENGTH, "raw": LENGTH, "map_string": LENGTH, "map_bytes": LENGTH, "map_quantity": LENGTH,
                "strings": LENGTH, "messages": LENGTH, "intstr": LENGTH, "quantity": LENGTH, "inline": LENGTH}

# What a field without omitempty reads as when it is not on the wire: Go's zero value in JSON
# (nil slices and maps are null; structs are objects).
_ALWAYS_ZERO = {"string": "", "bytes": "", "int": 0, "bool": False, "time": None, "fields_v1": None,
                "map_string": None, "map_bytes": None, "map_quantity": None, "strings": None, "messages": None,
                "intstr": 0, "quantity": "0"}

# Kinds that are Go structs: omitempty never drops them, so they are always in the JSON form.
_STRUCTS = ("message", "intstr")


def _format_time(value: dict | None) -> str | None:
    """RFC 3339 as metav1.Time writes it (seconds only), or None for the zero time."""
    seconds = (value or {}).get("seconds", 0)
    nanos = (value or {}).get("nanos", 0)
    if (seconds == 0 and nanos == 0) or seconds == _GO_ZERO_TIME:
        return None
    try:
        moment = datetime.datetime.fromtimestamp(seconds, tz=datetime.timezone.utc)
    except (OverflowError, OSError, ValueError) as exc:
        raise DecodeError("timestamp %d out of range" % seconds) from exc
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _map_entry(value: bytes, kind: str) -> tuple[str, object]:
    key, item = "", b""
    for number, wire_type, field in iter_fields(value):
        if number in (1, 2) and wire_type != LENGTH:
            raise DecodeError("map entry field %d: wire type %d, want %d" % (number, wire_type, LENGTH))
        if number == 1:
            key = _string(field)
        elif number == 2:
            item = field
    if kind == "map_bytes":
        return key, base64.b64encode(item).decode("ascii")
    if kind == "map_quantity":
        return key, _quantity(item)
    return key, _string(item)


def _quantity(value: bytes) -> str:
    """resource.Quantity ``{string string = 1}``: its JSON form is the string (``"0"`` when empty)."""
    return decode_message(value, QUANTITY).get("string") or "0"


def _int_or_string(value: bytes) -> int | str:
    """intstr.IntOrString ``{type, intVal, strVal}``: its JSON form is the number or the string."""
    decoded = decode_message(value, INT_OR_STRING)
    kind = decoded.get("type", 0)
    if kind == 0:
        return decoded.get("intVal", 0)
    if kind == 1:
        return decoded.get("strVal", "")
    raise DecodeError("IntOrString of type %d (want 0, an int, or 1, a string)" % kind)


def decode_message(buf: bytes, schema: dict) -> dict:
    """Decode ``buf`` with ``schema`` into its JSON form, zero values of plain fields dropped."""
    out: dict = {}
    for number, wire_type, value in iter_fields(buf):
        if number not in schema:
            continue  # unknown fields are skipped, as protobuf does
        name, kind, _pointer, nested = schema[number]
        if wire_type != _SCALAR_WIRE[kind]:
            raise DecodeError("field %s (%d): wire type %d, want %d" % (name, number, wire_type, _SCALAR_WIRE[kind]))
        if kind == "string":
            out[name] = _string(value)
        elif kind in ("bytes", "raw"):
            out[name] = value
        elif kind == "int":
            out[name] = _signed64(value)
        elif kind == "bool":
            out[name] = value != 0
        elif kind == "message":
            out[name] = _merge(out.get(name), decode_message(value, nested))
        elif kind == "time":
            out[name] = decode_message(value, TIME)
        elif kind == "fields_v1":
            raw = decode_message(value, {1: ("Raw", "raw", False, None)}).get("Raw", b"")
            try:
                out[name] = json.loads(raw) if raw else {}
            except ValueError as exc:
                raise DecodeError("field %s: not JSON: %s" % (name, exc)) from exc
        elif kind in ("map_string", "map_bytes", "map_quantity"):
            key, item = _map_entry(value, kind)
            out.setdefault(name, {})[key] = item
        elif kind == "intstr":
            out[name] = _int_or_string(value)
        elif kind == "quantity":
            out[name] = _quantity(value)
        elif kind == "inline":
            out[name] = _merge(out.get(name), decode_message(value, nested))
        elif kind == "strings":
            out.setdefault(name, []).append(_string(value))
        else:  # messages
            out.setdefault(name, []).append(decode_message(value, nested))
    return _to_json(out, schema)


def _merge(old: dict | None, new: dict) -> dict:
    """Protobuf merges repeated occurrences of a message field."""
    if not old:
        return new
    merged = dict(old)
    merged.update(new)
    return merged


def _to_json(decoded: dict, schema: dict) -> dict:
    """Apply the JSON rules of each field's mode (see kubelab.protobuf_types); format times."""
    out = {}
    for name, kind, mode, nested in schema.values():
        if kind == "inline":
            out.update(decoded.get(name, {}))  # an embedded struct: its fields are the parent's
            continue
        if name not in decoded:
            if kind == "message" and mode is not KEEP:
                out[name] = decode_message(b"", nested)  # an absent struct: its zero value, in JSON
            elif mode is ALWAYS or (kind == "intstr" and mode is not KEEP):
                out[name] = _ALWAYS_ZERO[kind]
            continue
        value = decoded[name]
        if kind == "time":
            value = _format_time(value)
            if value is None and mode is not ALWAYS:
                continue
        elif kind in _STRUCTS or mode is not OMIT:
            pass
        elif value in ("", 0, False, {}, [], b""):
            continue
        out[name] = value
    return out


# ----------------------------------------------------------------------------------------------
# the request body


def _schema_for(api_version: str, kind: str) -> dict | None:
    if kind == "DeleteOptions" and api_version:
        return DELETE_OPTIONS
    return KINDS.get((api_version, kind))


def decode_body(raw: bytes) -> dict:
    """The JSON-equivalent object of a ``application/vnd.kubernetes.protobuf`` request body.

    Raises:
        ApiError: 400 BadRequest when the bytes are not a well-formed ``k8s\\x00`` + Unknown or
            object; 415 UnsupportedMediaType for a kind this decoder does not know.
    """
    data = bytes(raw)
    if not data.startswith(MAGIC):
        raise bad_request("the body of the request is not a Kubernetes protobuf message: it does not start with %r" % MAGIC)
    try:
        envelope = decode_message(data[len(MAGIC):], RUNTIME_UNKNOWN)
        type_meta = envelope.get("typeMeta", {})
        api_version, kind = type_meta.get("apiVersion", ""), type_meta.get("kind", "")
        if not kind:
            raise DecodeError("the runtime.Unknown wrapper carries no kind")
        if envelope.get("contentEncoding"):
            raise ApiError(415, "UnsupportedMediaType", "content encoding %r of the protobuf body is not supported"
                           % envelope["contentEncoding"])
        if envelope.get("contentType", MEDIA_TYPE) != MEDIA_TYPE:
            raise unsupported_media_type("%s wrapping %s for %s %s" % (MEDIA_TYPE, envelope["contentType"], api_version, kind))
        schema = _schema_for(api_version, kind)
        if schema is None:
            raise unsupported_media_type("%s for %s %s, a kind kubelab cannot decode from protobuf (send JSON)"
                                         % (MEDIA_TYPE, api_version or "(no apiVersion)", kind))
        obj = {"kind": kind, "apiVersion": api_version}
        obj.update(decode_message(envelope.get("raw", b""), schema))
        return obj
    except DecodeError as exc:
        raise bad_request("the body of the request could not be decoded as %s: %s" % (MEDIA_TYPE, exc)) from exc
