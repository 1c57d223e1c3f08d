# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""kubelab.protobuf: recorded client-go protobuf bodies decode to their JSON form; bad bodies are 400/415.

The ``*.bin`` fixtures are real bodies recorded from Helm 4.2.3 and kubectl 1.37.1 (see
tests/lab/fixtures/protobuf/README.md). Bodies built with ``_msg`` below are constructed here, not
recorded: they cover field numbers the recordings do not exercise.
"""

from __future__ import annotations

import base64
import gzip
import json
import os
import random

import pytest

from kubelab.errors import ApiError
from kubelab.protobuf import MAGIC, decode_body

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures", "protobuf")
ALL_FIXTURES = sorted(name for name in os.listdir(FIXTURES) if name.endswith(".bin"))


def _fixture(name: str) -> bytes:
    with open(os.path.join(FIXTURES, name), "rb") as handle:
        return handle.read()


# ----------------------------------------------------------------------------------------------
# a minimal encoder, for constructed bodies only


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _field(number: int, value) -> bytes:
    """A field: bool/int as varint, str/bytes as length-delimited."""
    if isinstance(value, (bool, int)):
        return _varint(number << 3) + _varint(int(value))
    data = value.encode() if isinstance(value, str) else value
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def _msg(*fields: tuple) -> bytes:
    return b"".join(_field(number, value) for number, value in fields)


def _map(number: int, mapping: dict) -> list[tuple]:
    return [(number, _msg((1, key), (2, value))) for key, value in mapping.items()]


def _body(api_version: str, kind: str, raw: bytes, *extra: tuple) -> bytes:
    return MAGIC + _msg((1, _msg((1, api_version), (2, kind))), (2, raw), *extra)


def _helm_release(encoded: str) -> dict:
    return json.loads(gzip.decompress(base64.b64decode(encoded)))


# ----------------------------------------------------------------------------------------------
# recorded bodies


def _without_release(obj: dict) -> tuple[dict, str]:
    obj = json.loads(json.dumps(obj))
    return obj, obj["data"].pop("release")


@pytest.mark.parametrize("name, status, stamp", [
    ("helm-secret-post-pending-install.bin", "pending-install", {"createdAt": "1796025512"}),
    ("helm-secret-put-deployed.bin", "deployed", {"modifiedAt": "1796025512"}),
    ("helm-secret-put-uninstalling.bin", "uninstalling", {"modifiedAt": "1796025512"}),
])
def test_helm_release_secret(name, status, stamp):
    obj, release = _without_release(decode_body(_fixture(name)))
    labels = {"name": "tiny", "owner": "helm", "status": status, "version": "1"}
    labels.update(stamp)
    assert obj == {
        "kind": "Secret",
        "apiVersion": "v1",
        "metadata": {"name": "sh.helm.release.v1.tiny.v1", "labels": labels},
        "data": {},
        "type": "helm.sh/release.v1",
    }
    # data values are base64 of the bytes, as in JSON; Helm's bytes are themselves base64 of gzipped JSON.
    stored = base64.b64decode(release, validate=True)
    assert stored.startswith(b"H4sI")
    decoded = _helm_release(stored.decode("ascii"))
    assert (decoded["name"], decoded["namespace"], decoded["version"]) == ("tiny", "demo", 1)
    assert decoded["info"]["status"] == status
    assert decoded["config"] == {"x": 1}


@pytest.mark.parametrize("name, status, stamp", [
    ("helm-configmap-post-pending-install.bin", "pending-install", {"createdAt": "1796025532"}),
    ("helm-configmap-put-deployed.bin", "deployed", {"modifiedAt": "1796025533"}),
])
def test_helm_release_configmap(name, status, stamp):
    obj, release = _without_release(decode_body(_fixture(name)))
    labels = {"name": "tinycm", "owner": "helm", "status": status, "version": "1"}
    labels.update(stamp)
    assert obj == {
        "kind": "ConfigMap",
        "apiVersion": "v1",
        "metadata": {"name": "sh.helm.release.v1.tinycm.v1", "labels": labels},
        "data": {},
    }
    decoded = _helm_release(release)  # a string map: Helm's base64 text as is
    assert (decoded["name"], decoded["namespace"], decoded["info"]["status"]) == ("tinycm", "demo", status)


def test_helm_delete_options_is_empty():
    assert decode_body(_fixture("helm-secret-delete-options.bin")) == {"kind": "DeleteOptions", "apiVersion": "v1"}


def test_kubectl_drain_keeps_zero_grace_period():
    # A pointer field present with 0 means "delete now"; it must not be dropped as a zero value.
    assert decode_body(_fixture("kubectl-drain-pod-delete-options.bin")) == {
        "kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0}


def test_decode_accepts_bytearray_and_memoryview():
    raw = _fixture("helm-secret-delete-options.bin")
    assert decode_body(bytearray(raw)) == decode_body(memoryview(raw)) == decode_body(raw)


# ----------------------------------------------------------------------------------------------
# constructed bodies: fields the recordings do not exercise

ZERO_META = [(2, ""), (3, ""), (4, ""), (5, ""), (6, ""), (7, 0), (8, b"")]


def test_full_object_meta():
    managed = _msg((1, "helm"), (2, "Apply"), (3, "v1"), (4, _msg((1, 1796025512), (2, 5))), (6, "FieldsV1"),
                   (7, _msg((1, b'{"f:data":{".":{}}}'))))
    owner = _msg((5, "apps/v1"), (1, "ReplicaSet"), (3, "web-abc"), (4, "rs-uid"), (6, True), (7, False))
    meta = _msg((1, "web"), (3, "demo"), (5, "uid-1"), (6, "42"), (7, 3), (8, _msg((1, 1796025512), (2, 999))),
                (9, _msg((1, 1796025600))), (10, 0), *_map(11, {"app": "web"}), *_map(12, {"note": ""}), (13, owner),
                (14, "a/b"), (14, "c/d"), (17, managed))
    obj = decode_body(_body("v1", "ConfigMap", _msg((1, meta), *_map(2, {"k": "v"}), *_map(3, {"bin": b"\x00\xff"}), (4, False))))
    assert obj == {
        "kind": "ConfigMap",
        "apiVersion": "v1",
        "metadata": {
            "name": "web",
            "namespace": "demo",
            "uid": "uid-1",
            "resourceVersion": "42",
            "generation": 3,
            "creationTimestamp": "2026-11-30T07:58:32Z",  # seconds only, as metav1.Time keeps it
            "deletionTimestamp": "2026-11-30T08:00:00Z",
            "deletionGracePeriodSeconds": 0,
            "labels": {"app": "web"},
            "annotations": {"note": ""},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-abc", "uid": "rs-uid",
                                 "controller": True, "blockOwnerDeletion": False}],
            "finalizers": ["a/b", "c/d"],
            "managedFields": [{"manager": "helm", "operation": "Apply", "apiVersion": "v1", "time": "2026-11-30T07:58:32Z",
                               "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {".": {}}}}],
        },
        "data": {"k": "v"},
        "binaryData": {"bin": "AP8="},
        "immutable": False,
    }


@pytest.mark.parametrize("timestamp", [b"", _msg((1, 0), (2, 0)), _msg((1, -62135596800))])
def test_zero_times_and_zero_values_are_dropped(timestamp):
    meta = _msg((1, "s"), *ZERO_META[:-1], (8, timestamp), *_map(11, {}))
    obj = decode_body(_body("v1", "Secret", _msg((1, meta), (3, ""))))
    assert obj == {"kind": "Secret", "apiVersion": "v1", "metadata": {"name": "s"}}


def test_secret_string_data_and_immutable():
    raw = _msg((1, _msg((1, "s"))), *_map(2, {"empty": b"", "bin": b"\x01\x02"}), (3, "Opaque"),
               *_map(4, {"plain": "text"}), (5, True))
    assert decode_body(_body("v1", "Secret", raw)) == {
        "kind": "Secret", "apiVersion": "v1", "metadata": {"name": "s"},
        "data": {"empty": "", "bin": "AQI="}, "type": "Opaque", "stringData": {"plain": "text"}, "immutable": True}


def test_secret_without_metadata_still_has_metadata():
    assert decode_body(_body("v1", "Secret", b"")) == {"kind": "Secret", "apiVersion": "v1", "metadata": {}}


def test_delete_options_all_fields():
    raw = _msg((1, 30), (2, _msg((1, "uid-1"), (2, ""))), (3, False), (4, "Foreground"), (5, "All"), (6, True))
    assert decode_body(_body("apps/v1", "DeleteOptions", raw)) == {
        "kind": "DeleteOptions", "apiVersion": "apps/v1", "gracePeriodSeconds": 30,
        "preconditions": {"uid": "uid-1", "resourceVersion": ""}, "orphanDependents": False,
        "propagationPolicy": "Foreground", "dryRun": ["All"], "ignoreStoreReadErrorWithClusterBreakingPotential": True}


def test_negative_int64():
    assert decode_body(_body("v1", "DeleteOptions", _msg((1, -1))))["gracePeriodSeconds"] == -1


def test_eviction():
    raw = _msg((1, _msg((1, "web-1"), (3, "demo"))), (2, b""))
    assert decode_body(_body("policy/v1", "Eviction", raw)) == {
        "kind": "Eviction", "apiVersion": "policy/v1", "metadata": {"name": "web-1", "namespace": "demo"}, "deleteOptions": {}}


def test_unknown_fields_are_skipped():
    raw = _msg((1, _msg((1, "s"), (99, "future"))), (3, "Opaque"), (42, 7)) + _varint(50 << 3 | 5) + b"\x00" * 4
    raw += _varint(51 << 3 | 1) + b"\x00" * 8
    assert decode_body(_body("v1", "Secret", raw)) == {"kind": "Secret", "apiVersion": "v1", "metadata": {"name": "s"}, "type": "Opaque"}


# ----------------------------------------------------------------------------------------------
# errors


def _error(body) -> ApiError:
    with pytest.raises(ApiError) as info:
        decode_body(body)
    return info.value


@pytest.mark.parametrize("body", [
    b"",
    b"k8s",
    b'{"kind":"Secret"}',
    MAGIC + b"\xff" * 11,  # varint longer than 10 bytes
    MAGIC + b"\x0a",  # length missing
    MAGIC + b"\x0a\x05\x0a\x02v1",  # typeMeta runs past the end
    MAGIC + b"\x0b",  # wire type 3 (start group)
    MAGIC + b"\x0f\x00",  # wire type 7
    MAGIC + b"\x00\x00",  # field number 0
    MAGIC + b"\x08\x01",  # typeMeta as a varint
    MAGIC + b"\x0d\x00",  # truncated fixed32
    _body("", "", b""),  # no kind
    _body("v1", "Secret", _msg((1, 5))),  # metadata as a varint
    _body("v1", "Secret", _msg((1, _msg((11, "not-an-entry"))))),  # map entry that is no message
    _body("v1", "Secret", _msg((2, _msg((1, 7))))),  # map key as a varint
    _body("v1", "ConfigMap", _msg((1, _msg((17, _msg((7, _msg((1, b"{not json"))))))))),  # fieldsV1 not JSON
])
def test_malformed_is_400(body):
    error = _error(body)
    assert (error.code, error.reason) == (400, "BadRequest")
    assert error.status()["code"] == 400


@pytest.mark.parametrize("name", ALL_FIXTURES)
def test_truncated_fixtures_never_traceback(name):
    raw = _fixture(name)
    for end in range(len(raw)):
        try:
            result = decode_body(raw[:end])
        except ApiError as error:
            assert error.code == 400, (end, error.message)
        else:
            assert isinstance(result, dict)


def test_truncated_inside_secret_data_is_400():
    raw = _fixture("helm-secret-post-pending-install.bin")
    assert _error(raw[:len(raw) // 2]).code == 400


@pytest.mark.parametrize("name", ALL_FIXTURES)
def test_corrupted_fixtures_never_traceback(name):
    raw = bytearray(_fixture(name))
    rng = random.Random(name)
    for _attempt in range(300):
        body = bytearray(raw)
        for _flip in range(rng.randint(1, 4)):
            body[rng.randrange(len(MAGIC), len(body))] = rng.randrange(256)
        try:
            assert isinstance(decode_body(bytes(body)), dict)
        except ApiError as error:
            assert error.code in (400, 415), error.message


@pytest.mark.parametrize("api_version, kind", [("apps/v1", "Deployment"), ("v1", "Pod"), ("v2", "Secret"), ("", "ConfigMap")])
def test_unknown_kind_is_415(api_version, kind):
    error = _error(_body(api_version, kind, b""))
    assert (error.code, error.reason) == (415, "UnsupportedMediaType")
    assert kind in error.message


def test_content_encoding_is_415():
    assert _error(_body("v1", "Secret", b"", (3, "gzip"))).code == 415
