# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""kubelab.protobuf: recorded client-go protobuf bodies decode to their JSON form; bad bodies are 400/415.

The ``*.bin`` fixtures are real bodies recorded from Helm 4.2.3 and kubectl 1.37.1 (see
tests/lab/fixtures/protobuf/README.md); the ``*.dry-run.json`` ones are kubectl's own JSON form of
the same ``kubectl create`` objects (``--dry-run=client -o json``). Bodies built with ``_msg`` below
are constructed here, not recorded: they cover field numbers the recordings do not exercise.
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
# recorded bodies: kubectl create's generators

RBAC = "rbac.authorization.k8s.io/v1"
TEMPLATE_STATUS = {"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0}


def _deployment(name: str, replicas: int, containers: list) -> dict:
    labels = {"app": name}
    return {
        "kind": "Deployment", "apiVersion": "apps/v1", "metadata": {"name": name, "labels": labels},
        "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels}, "spec": {"containers": containers}}, "strategy": {}},
        "status": {},
    }


def _service(name: str, spec: dict) -> dict:
    spec = dict(spec, selector={"app": name})
    return {"kind": "Service", "apiVersion": "v1", "metadata": {"name": name, "labels": {"app": name}}, "spec": spec,
            "status": {"loadBalancer": {}}}


KUBECTL_CREATE = {
    # kubectl create namespace demo
    "kubectl-create-namespace": {"kind": "Namespace", "apiVersion": "v1", "metadata": {"name": "demo"}, "spec": {}, "status": {}},
    # kubectl create poddisruptionbudget web --selector=app=web --min-available=4
    "kubectl-create-pdb-min-available": {
        "kind": "PodDisruptionBudget", "apiVersion": "policy/v1", "metadata": {"name": "web"},
        "spec": {"minAvailable": 4, "selector": {"matchLabels": {"app": "web"}}}, "status": TEMPLATE_STATUS},
    # kubectl -n demo create poddisruptionbudget web-pct --selector='app=web,tier in (fe,be),!canary' --max-unavailable=50%
    "kubectl-create-pdb-max-unavailable": {
        "kind": "PodDisruptionBudget", "apiVersion": "policy/v1", "metadata": {"name": "web-pct", "namespace": "demo"},
        "spec": {"selector": {"matchLabels": {"app": "web"},
                              "matchExpressions": [{"key": "canary", "operator": "DoesNotExist"},
                                                   {"key": "tier", "operator": "In", "values": ["be", "fe"]}]},
                 "maxUnavailable": "50%"},
        "status": TEMPLATE_STATUS},
    # kubectl create serviceaccount builder
    "kubectl-create-serviceaccount": {"kind": "ServiceAccount", "apiVersion": "v1", "metadata": {"name": "builder"}},
    # kubectl create service clusterip web --tcp=80:8080 --tcp=443:https
    "kubectl-create-service-clusterip": _service("web", {
        "ports": [{"name": "80-8080", "protocol": "TCP", "port": 80, "targetPort": 8080},
                  {"name": "443-https", "protocol": "TCP", "port": 443, "targetPort": "https"}],
        "type": "ClusterIP"}),
    # kubectl create service clusterip headless --clusterip=None
    "kubectl-create-service-headless": _service("headless", {"clusterIP": "None", "type": "ClusterIP"}),
    # kubectl create service nodeport web-np --tcp=80:8080 --node-port=30080
    "kubectl-create-service-nodeport": _service("web-np", {
        "ports": [{"name": "80-8080", "protocol": "TCP", "port": 80, "targetPort": 8080, "nodePort": 30080}],
        "type": "NodePort"}),
    # kubectl create service loadbalancer web-lb --tcp=5678:8080
    "kubectl-create-service-loadbalancer": _service("web-lb", {
        "ports": [{"name": "5678-8080", "protocol": "TCP", "port": 5678, "targetPort": 8080}], "type": "LoadBalancer"}),
    # kubectl create service externalname ext --external-name=db.example.com
    "kubectl-create-service-externalname": _service("ext", {"type": "ExternalName", "externalName": "db.example.com"}),
    # kubectl create deployment web --image=nginx:1.27 --replicas=3 --port=80
    "kubectl-create-deployment": _deployment("web", 3, [
        {"name": "nginx", "image": "nginx:1.27", "ports": [{"containerPort": 80}], "resources": {}}]),
    # kubectl create deployment multi --image=busybox --image=nginx
    "kubectl-create-deployment-multi": _deployment("multi", 1, [
        {"name": "busybox", "image": "busybox", "resources": {}}, {"name": "nginx", "image": "nginx", "resources": {}}]),
    # kubectl create deployment sleeper --image=busybox -- sleep 3600
    "kubectl-create-deployment-command": _deployment("sleeper", 1, [
        {"name": "busybox", "image": "busybox", "command": ["sleep", "3600"], "resources": {}}]),
    # kubectl create job pi --image=perl:5.34 -- perl -Mbignum=bpi -wle 'print bpi(20)'
    "kubectl-create-job": {
        "kind": "Job", "apiVersion": "batch/v1", "metadata": {"name": "pi"},
        "spec": {"template": {"metadata": {}, "spec": {
            "containers": [{"name": "pi", "image": "perl:5.34", "command": ["perl", "-Mbignum=bpi", "-wle", "print bpi(20)"],
                            "resources": {}}],
            "restartPolicy": "Never"}}},
        "status": {}},
    # kubectl create cronjob nightly --image=busybox --schedule='*/5 * * * *' --restart=OnFailure -- date
    "kubectl-create-cronjob": {
        "kind": "CronJob", "apiVersion": "batch/v1", "metadata": {"name": "nightly"},
        "spec": {"schedule": "*/5 * * * *", "jobTemplate": {"metadata": {"name": "nightly"}, "spec": {"template": {
            "metadata": {}, "spec": {"containers": [{"name": "nightly", "image": "busybox", "command": ["date"], "resources": {}}],
                                     "restartPolicy": "OnFailure"}}}}},
        "status": {}},
    # kubectl create role pod-reader --verb=get,list,watch --resource=pods,deployments.apps --resource-name=web
    "kubectl-create-role": {
        "kind": "Role", "apiVersion": RBAC, "metadata": {"name": "pod-reader"},
        "rules": [{"verbs": ["get", "list", "watch"], "apiGroups": [""], "resources": ["pods"], "resourceNames": ["web"]},
                  {"verbs": ["get", "list", "watch"], "apiGroups": ["apps"], "resources": ["deployments"],
                   "resourceNames": ["web"]}]},
    # kubectl create clusterrole logs --verb=get --non-resource-url=/logs,/logs/*
    "kubectl-create-clusterrole-nonresource": {
        "kind": "ClusterRole", "apiVersion": RBAC, "metadata": {"name": "logs"},
        "rules": [{"verbs": ["get"], "nonResourceURLs": ["/logs", "/logs/*"]}]},
    # kubectl create clusterrole agg --aggregation-rule=rbac.example.com/aggregate-to-view=true
    "kubectl-create-clusterrole-aggregation": {
        "kind": "ClusterRole", "apiVersion": RBAC, "metadata": {"name": "agg"},
        "rules": None,  # `json:"rules"` without omitempty: Go writes the nil list as null
        "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"rbac.example.com/aggregate-to-view": "true"}}]}},
    # kubectl create rolebinding rb --role=pod-reader --user=alice --group=devs --serviceaccount=default:builder
    "kubectl-create-rolebinding": {
        "kind": "RoleBinding", "apiVersion": RBAC, "metadata": {"name": "rb"},
        "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"},
                     {"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "devs"},
                     {"kind": "ServiceAccount", "name": "builder", "namespace": "default"}],
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pod-reader"}},
    # kubectl create clusterrolebinding crb --clusterrole=logs --user=bob --serviceaccount=demo:builder
    "kubectl-create-clusterrolebinding": {
        "kind": "ClusterRoleBinding", "apiVersion": RBAC, "metadata": {"name": "crb"},
        "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "bob"},
                     {"kind": "ServiceAccount", "name": "builder", "namespace": "demo"}],
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "logs"}},
}


def test_every_kubectl_create_fixture_is_asserted():
    recorded = {name[:-len(".bin")] for name in ALL_FIXTURES if name.startswith("kubectl-create-")}
    assert recorded == set(KUBECTL_CREATE)


@pytest.mark.parametrize("name", sorted(KUBECTL_CREATE))
def test_kubectl_create(name):
    assert decode_body(_fixture(name + ".bin")) == KUBECTL_CREATE[name]


@pytest.mark.parametrize("name", sorted(KUBECTL_CREATE))
def test_kubectl_create_equals_kubectls_json(name):
    # What kubectl itself writes for the same object as JSON (--dry-run=client -o json).
    with open(os.path.join(FIXTURES, name + ".dry-run.json"), encoding="utf-8") as handle:
        assert KUBECTL_CREATE[name] == json.load(handle)


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


def _container(*fields: tuple) -> bytes:
    """A Container with gogo's empty non-pointer fields first (a later occurrence of a scalar wins)."""
    return _msg((5, ""), (8, b""), (13, ""), (14, ""), (16, False), (17, False), (18, False), (20, ""), *fields)


def _quantity(text: str) -> bytes:
    return _msg((1, text))


def test_pod_spec_fields():
    env = [(7, _msg((1, "PLAIN"), (2, "v"))), (7, _msg((1, "EMPTY"), (2, ""))),
           (7, _msg((1, "FROM_CM"), (3, _msg((3, _msg((1, _msg((1, "cm"))), (2, "k"), (3, True))))))),
           (7, _msg((1, "FROM_SECRET"), (3, _msg((4, _msg((1, b""), (2, "k"))))))),
           (7, _msg((1, "POD"), (3, _msg((1, _msg((1, "v1"), (2, "metadata.name"))))))),
           (7, _msg((1, "MEM"), (3, _msg((2, _msg((2, "limits.memory"), (3, _quantity("1Mi")))))))),
           ]
    resources = _msg(*_map(1, {"cpu": _quantity("500m"), "nvidia.com/gpu": _quantity("1")}), (2, _msg((1, "memory"), (2, _quantity("")))),
                     (3, _msg((1, "gpu"), (2, ""))))
    container = _container((1, "app"), (2, "img:1"), (3, "run"), (4, "--x"), (4, ""), (6, _msg((1, "http"), (3, 8080), (4, "TCP"))),
                           *env, (8, resources), (14, "IfNotPresent"), (24, "Always"))
    toleration = _msg((1, "nvidia.com/gpu"), (2, "Exists"), (3, ""), (4, "NoSchedule"), (5, 0))
    spec = _msg((2, container), (3, "Always"), (4, 0), (6, "ClusterFirst"), *_map(7, {"gpu": "true"}), (8, "runner"), (9, ""),
                (11, False), (15, _msg((1, "regcred"))), (19, "default-scheduler"), (20, _container((1, "init"), (2, "busybox"))),
                (22, toleration), (24, ""), (99, "skipped"))
    template = _msg((1, _msg((11, _msg((1, "app"), (2, "x"))))), (2, spec))
    rolling = _msg((1, _msg((1, 1), (3, "25%"))), (2, _msg((2, 0))))
    strategy = _msg((1, "RollingUpdate"), (2, rolling))
    deployment = _msg((1, _msg((1, "x"))), (2, _msg((1, 2), (3, template), (4, strategy), (6, 0), (9, 600))))
    obj = decode_body(_body("apps/v1", "Deployment", deployment))
    assert obj["spec"] == {
        "replicas": 2,
        "template": {"metadata": {"labels": {"app": "x"}}, "spec": {
            "initContainers": [{"name": "init", "image": "busybox", "resources": {}}],
            "containers": [{
                "name": "app", "image": "img:1", "command": ["run"], "args": ["--x", ""],
                "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
                "env": [{"name": "PLAIN", "value": "v"}, {"name": "EMPTY"},
                        {"name": "FROM_CM", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "k", "optional": True}}},
                        {"name": "FROM_SECRET", "valueFrom": {"secretKeyRef": {"key": "k"}}},
                        {"name": "POD", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}},
                        {"name": "MEM", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}}}],
                "resources": {"limits": {"cpu": "500m", "nvidia.com/gpu": "1"}, "requests": {"memory": "0"},
                              "claims": [{"name": "gpu"}]},
                "imagePullPolicy": "IfNotPresent", "restartPolicy": "Always"}],
            "restartPolicy": "Always", "terminationGracePeriodSeconds": 0, "dnsPolicy": "ClusterFirst",
            "nodeSelector": {"gpu": "true"}, "serviceAccountName": "runner", "imagePullSecrets": [{"name": "regcred"}],
            "schedulerName": "default-scheduler",
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 0}]}},
        "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": 0}},
        "revisionHistoryLimit": 0,
        "progressDeadlineSeconds": 600,
    }


def test_pod_spec_without_containers_has_null_containers():
    # `json:"containers"` has no omitempty: Go writes a nil list as null.
    obj = decode_body(_body("batch/v1", "Job", _msg((2, _msg((6, _msg((2, _msg((3, "Never"))))))))))
    assert obj["spec"] == {"template": {"metadata": {}, "spec": {"containers": None, "restartPolicy": "Never"}}}


def test_job_counts():
    raw = _msg((1, _msg((1, "j"))), (2, _msg((1, 4), (2, 8), (7, 0), (10, False), (9, "Indexed"))), (3, _msg((4, 0), (9, 0))))
    assert decode_body(_body("batch/v1", "Job", raw)) == {
        "kind": "Job", "apiVersion": "batch/v1", "metadata": {"name": "j"},
        "spec": {"parallelism": 4, "completions": 8, "backoffLimit": 0, "template": {"metadata": {}, "spec": {"containers": None}},
                 "completionMode": "Indexed", "suspend": False},
        "status": {"ready": 0}}


def test_pdb_policy_and_absent_counters():
    raw = _msg((1, _msg((1, "p"))), (2, _msg((1, _msg((1, 0), (2, 0), (3, ""))), (4, "AlwaysAllow"))))
    assert decode_body(_body("policy/v1", "PodDisruptionBudget", raw)) == {
        "kind": "PodDisruptionBudget", "apiVersion": "policy/v1", "metadata": {"name": "p"},
        "spec": {"minAvailable": 0, "unhealthyPodEvictionPolicy": "AlwaysAllow"},
        "status": {"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0}}


def test_service_account_and_namespace_fields():
    raw = _msg((1, _msg((1, "sa"))), (2, _msg((3, "token"), (2, ""))), (3, _msg((1, "regcred"))), (4, False))
    assert decode_body(_body("v1", "ServiceAccount", raw)) == {
        "kind": "ServiceAccount", "apiVersion": "v1", "metadata": {"name": "sa"}, "secrets": [{"name": "token"}],
        "imagePullSecrets": [{"name": "regcred"}], "automountServiceAccountToken": False}
    raw = _msg((1, _msg((1, "ns"))), (2, _msg((1, "kubernetes"))), (3, _msg((1, "Active"))))
    assert decode_body(_body("v1", "Namespace", raw)) == {
        "kind": "Namespace", "apiVersion": "v1", "metadata": {"name": "ns"}, "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"}}


def test_service_port_without_target_port_is_zero():
    raw = _msg((1, _msg((1, "s"))), (2, _msg((1, _msg((3, 53), (2, "UDP"))), (3, ""), (4, "ClusterIP"), (20, False))))
    assert decode_body(_body("v1", "Service", raw))["spec"] == {
        "ports": [{"protocol": "UDP", "port": 53, "targetPort": 0}], "type": "ClusterIP", "allocateLoadBalancerNodePorts": False}


def test_rbac_empty_role_and_binding():
    assert decode_body(_body("rbac.authorization.k8s.io/v1", "Role", _msg((1, _msg((1, "r"))), (2, b"")))) == {
        "kind": "Role", "apiVersion": "rbac.authorization.k8s.io/v1", "metadata": {"name": "r"}, "rules": [{"verbs": None}]}
    assert decode_body(_body("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", b"")) == {
        "kind": "ClusterRoleBinding", "apiVersion": "rbac.authorization.k8s.io/v1", "metadata": {},
        "roleRef": {"apiGroup": "", "kind": "", "name": ""}}


def test_cron_job_fields():
    raw = _msg((2, _msg((1, "@daily"), (8, "Etc/UTC"), (2, 30), (3, "Forbid"), (4, True), (6, 0), (7, 1))),
               (3, _msg((4, _msg((1, 1796025512))), (5, b""))))
    assert decode_body(_body("batch/v1", "CronJob", raw)) == {
        "kind": "CronJob", "apiVersion": "batch/v1", "metadata": {},
        "spec": {"schedule": "@daily", "timeZone": "Etc/UTC", "startingDeadlineSeconds": 30, "concurrencyPolicy": "Forbid",
                 "suspend": True, "jobTemplate": {"metadata": {}, "spec": {"template": {"metadata": {}, "spec": {"containers": None}}}},
                 "successfulJobsHistoryLimit": 0, "failedJobsHistoryLimit": 1},
        "status": {"lastScheduleTime": "2026-11-30T07:58:32Z"}}


# ----------------------------------------------------------------------------------------------
# errors


def _error(body) -> ApiError:
    with pytest.raises(ApiError) as info:
        decode_body(body)
    return info.value


BAD_QUANTITY_CONTAINER = _msg((8, _msg((1, _msg((1, "cpu"), (2, 5))))))


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
    _body("policy/v1", "PodDisruptionBudget", _msg((2, _msg((1, _msg((1, 2))))))),  # IntOrString of type 2
    _body("v1", "Service", _msg((2, _msg((1, _msg((4, 8080))))))),  # targetPort as a varint
    _body("apps/v1", "Deployment", _msg((2, _msg((3, _msg((2, _msg((2, BAD_QUANTITY_CONTAINER))))))))),  # Quantity as a varint
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


@pytest.mark.parametrize("api_version, kind", [("apps/v1", "StatefulSet"), ("v1", "Pod"), ("v2", "Secret"), ("", "ConfigMap"),
                                               ("extensions/v1beta1", "Deployment"), ("batch/v1beta1", "CronJob")])
def test_unknown_kind_is_415(api_version, kind):
    error = _error(_body(api_version, kind, b""))
    assert (error.code, error.reason) == (415, "UnsupportedMediaType")
    assert kind in error.message


def test_content_encoding_is_415():
    assert _error(_body("v1", "Secret", b"", (3, "gzip"))).code == 415
