# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""core/v1, networking and rbac defaulting (kubelab.defaults.core) against recorded objects.

Each fixture in tests/lab/fixtures/defaulting/core/ holds a minimal ``input``, the ``expected``
fields a real cluster recorded (or, where no recording was found, that defaults.go proves: the
fixture's ``source`` says which), ``exact`` (top-level parts compared whole), ``absent`` keys and
``allocated`` values whose shape only is checked (cluster IPs, node ports).
"""

from __future__ import annotations

import copy
import glob
import ipaddress
import json
import os

import pytest

from kubelab import defaults, encoding
from kubelab.defaults import core
from kubelab.errors import ApiError
from kubelab.resources import Registry

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures", "defaulting", "core")
REGISTRY = Registry()


def rtype_of(obj: dict):
    rtype = REGISTRY.by_kind(obj["apiVersion"], obj["kind"])
    assert rtype is not None, obj["kind"]
    return rtype


def prepare(obj: dict, existing: list | None = None) -> dict:
    """What the lab does to a created object: the Go round trip, defaulting, then the registry's part."""
    rtype = rtype_of(obj)
    encoding.normalize(rtype, obj)
    defaults.apply(rtype, obj)
    if rtype.kind == "Pod":
        core.service_account_names(obj["spec"])
        obj.setdefault("status", {})["qosClass"] = core.pod_qos(obj)
    elif rtype.kind == "Service":
        core.service_allocate(obj, existing or [])
    return obj


def load(name: str) -> dict:
    with open(os.path.join(FIXTURES, name), encoding="utf-8") as handle:
        return json.load(handle)


def contains(actual, expected, path="") -> None:
    """``expected`` is a deep subset of ``actual`` (lists element by element, same length)."""
    if isinstance(expected, dict):
        assert isinstance(actual, dict), "%s: %r is not an object" % (path, actual)
        for key, value in expected.items():
            assert key in actual, "%s.%s missing in %r" % (path, key, actual)
            contains(actual[key], value, "%s.%s" % (path, key))
    elif isinstance(expected, list):
        assert isinstance(actual, list) and len(actual) == len(expected), "%s: %r != %r" % (path, actual, expected)
        for index, (have, want) in enumerate(zip(actual, expected)):
            contains(have, want, "%s[%d]" % (path, index))
    else:
        assert actual == expected, "%s: %r != %r" % (path, actual, expected)


FIXTURE_NAMES = sorted(os.path.basename(p) for p in glob.glob(os.path.join(FIXTURES, "*.json")))


def test_every_fixture_names_its_source():
    assert len(FIXTURE_NAMES) >= 8
    for name in FIXTURE_NAMES:
        fixture = load(name)
        assert fixture.get("source") and fixture.get("note"), name


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_defaulted_object_matches_the_recording(name):
    fixture = load(name)
    obj = prepare(copy.deepcopy(fixture["input"]))
    expected = fixture["expected"]
    contains(obj, expected)
    for part in fixture.get("exact", []):
        got = {k: v for k, v in obj[part].items() if k not in ("clusterIP", "clusterIPs")} \
            if fixture["kind"] == "Service" and part == "spec" and obj[part].get("clusterIP") != "None" else obj[part]
        assert got == expected[part], "%s: %s differs:\n%s\n%s" % (
            name, part, json.dumps(got, indent=1, sort_keys=True), json.dumps(expected[part], indent=1, sort_keys=True))
    for key in fixture.get("absent", []):
        assert key not in obj
    allocated = fixture.get("allocated") or {}
    if allocated.get("clusterIP"):
        assert obj["spec"]["clusterIPs"] == [obj["spec"]["clusterIP"]]
        assert ipaddress.ip_address(obj["spec"]["clusterIP"]) in ipaddress.ip_network("10.96.0.0/12")
        assert obj["spec"]["clusterIP"] != "10.96.0.1"
    if allocated.get("nodePorts"):
        ports = [p["nodePort"] for p in obj["spec"]["ports"]]
        assert len(set(ports)) == allocated["nodePorts"] and all(30000 <= p <= 32767 for p in ports)


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_defaulting_is_idempotent(name):
    fixture = load(name)
    once = prepare(copy.deepcopy(fixture["input"]))
    twice = copy.deepcopy(once)
    rtype = rtype_of(twice)
    encoding.normalize(rtype, twice)
    defaults.apply(rtype, twice)
    assert twice == once


@pytest.mark.parametrize("image, policy", [
    ("nginx", "Always"), ("nginx:latest", "Always"), ("nginx:1.27", "IfNotPresent"),
    ("registry:5000/team/app", "Always"), ("registry:5000/team/app:v2", "IfNotPresent"),
    ("nginx@sha256:" + "a" * 64, "IfNotPresent"), ("nginx:latest@sha256:" + "a" * 64, "Always"),
])
def test_image_pull_policy_from_tag(image, policy):
    assert core.pull_policy(image) == policy


def test_explicit_values_are_kept():
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
           "spec": {"restartPolicy": "Never", "dnsPolicy": "Default", "terminationGracePeriodSeconds": 0,
                    "enableServiceLinks": False, "schedulerName": "other",
                    "containers": [{"name": "c", "image": "nginx", "imagePullPolicy": "Never",
                                    "resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "2"}}}]}}
    prepare(pod)
    spec = pod["spec"]
    assert (spec["restartPolicy"], spec["dnsPolicy"], spec["terminationGracePeriodSeconds"],
            spec["enableServiceLinks"], spec["schedulerName"]) == ("Never", "Default", 0, False, "other")
    assert spec["containers"][0]["imagePullPolicy"] == "Never"
    assert spec["containers"][0]["resources"]["requests"] == {"cpu": "1"}  # only missing keys come from limits
    assert pod["status"]["qosClass"] == "Burstable"


def test_pod_template_gets_pod_spec_defaults_only():
    template = {"metadata": {"labels": {"app": "x"}},
                "spec": {"hostNetwork": True,
                         "containers": [{"name": "c", "image": "nginx:1", "ports": [{"containerPort": 80}],
                                         "resources": {"limits": {"cpu": "1"}}}]}}
    core.pod_template(template)
    spec = template["spec"]
    assert spec["restartPolicy"] == "Always" and spec["securityContext"] == {}
    assert "enableServiceLinks" not in spec  # SetDefaults_Pod only
    ctr = spec["containers"][0]
    assert "requests" not in ctr["resources"] and "hostPort" not in ctr["ports"][0]
    assert ctr["ports"][0]["protocol"] == "TCP" and ctr["imagePullPolicy"] == "IfNotPresent"


@pytest.mark.parametrize("resources, qos", [
    ([{}], "BestEffort"),
    ([{"requests": {"cpu": "100m"}}], "Burstable"),
    ([{"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "1000m", "memory": "1024Mi"}}], "Guaranteed"),
    ([{"limits": {"cpu": "1", "memory": "1Gi"}}, {}], "Burstable"),
    ([{"limits": {"cpu": "1"}, "requests": {"cpu": "1"}}], "Burstable"),  # memory limit missing
    ([{"requests": {"nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "1"}}], "BestEffort"),  # cpu/memory only
])
def test_pod_qos(resources, qos):
    pod = {"spec": {"containers": [{"name": "c%d" % i, "resources": r} for i, r in enumerate(resources)]}}
    assert core.pod_qos(pod) == qos


def test_service_ip_and_ports_unique_and_checked():
    existing = []
    for index in range(50):
        svc = prepare({"apiVersion": "v1", "kind": "Service",
                       "metadata": {"name": "s%d" % index, "namespace": "default"},
                       "spec": {"type": "NodePort", "ports": [{"port": 80}]}}, existing)
        existing.append(svc)
    assert len({s["spec"]["clusterIP"] for s in existing}) == 50
    assert len({s["spec"]["ports"][0]["nodePort"] for s in existing}) == 50
    taken = existing[0]["spec"]["clusterIP"]
    clash = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "clash", "namespace": "default"},
             "spec": {"clusterIP": taken, "ports": [{"port": 80}]}}
    with pytest.raises(ApiError) as err:
        prepare(clash, existing)
    assert err.value.code == 422 and "provided IP is already allocated" in str(err.value.message)
    outside = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "out", "namespace": "default"},
               "spec": {"clusterIP": "192.168.0.10", "ports": [{"port": 80}]}}
    with pytest.raises(ApiError) as err:
        prepare(outside, existing)
    assert "not in the valid range" in str(err.value.message)
    kubernetes = prepare({"apiVersion": "v1", "kind": "Service",
                          "metadata": {"name": "kubernetes", "namespace": "default"},
                          "spec": {"clusterIP": "10.96.0.1",
                                   "ports": [{"name": "https", "port": 443, "targetPort": 6443}]}})
    assert kubernetes["spec"]["clusterIPs"] == ["10.96.0.1"] and kubernetes["spec"]["ports"][0]["targetPort"] == 6443


def test_service_external_name_and_load_balancer():
    ext = prepare({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "ext", "namespace": "default"},
                   "spec": {"type": "ExternalName", "externalName": "db.example.com"}})
    assert not any(k in ext["spec"] for k in ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy",
                                              "internalTrafficPolicy"))
    lb = prepare({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "lb", "namespace": "default"},
                  "spec": {"type": "LoadBalancer", "externalTrafficPolicy": "Local", "sessionAffinity": "ClientIP",
                           "ports": [{"port": 443}]}})
    spec = lb["spec"]
    assert spec["allocateLoadBalancerNodePorts"] is True and 30000 <= spec["ports"][0]["nodePort"] <= 32767
    assert 30000 <= spec["healthCheckNodePort"] <= 32767 and spec["healthCheckNodePort"] != spec["ports"][0]["nodePort"]
    assert spec["sessionAffinityConfig"] == {"clientIP": {"timeoutSeconds": 10800}}


def test_service_update_keeps_allocated_values():
    old = prepare({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "np", "namespace": "default"},
                   "spec": {"type": "NodePort", "ports": [{"port": 80}]}})
    new = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "np", "namespace": "default"},
           "spec": {"type": "NodePort", "ports": [{"port": 80}]}}
    rtype = rtype_of(new)
    encoding.normalize(rtype, new)
    defaults.apply(rtype, new)
    core.service_keep_allocated(new, old)
    assert new["spec"] == old["spec"]


def test_other_kinds():
    ns = prepare({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team", "labels": {}}, "status": {}})
    assert ns["metadata"]["labels"] == {"kubernetes.io/metadata.name": "team"} and ns["status"] == {"phase": "Active"}
    node = prepare({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}, "spec": {"taints": []},
                    "status": {"capacity": {"cpu": "4"}}})
    assert node["status"]["allocatable"] == {"cpu": "4"} and node["spec"] == {}
    ep = prepare({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "e", "namespace": "default"},
                  "subsets": [{"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 80}]}]})
    assert ep["subsets"][0]["ports"] == [{"port": 80, "protocol": "TCP"}]
    crb = prepare({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                   "metadata": {"name": "c"},
                   "roleRef": {"kind": "ClusterRole", "name": "view", "apiGroup": "rbac.authorization.k8s.io"},
                   "subjects": [{"kind": "Group", "name": "system:authenticated"}]})
    assert crb["subjects"][0]["apiGroup"] == "rbac.authorization.k8s.io"
    netpol = prepare({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                      "metadata": {"name": "deny", "namespace": "default"}, "spec": {"podSelector": {}}})
    assert netpol["spec"] == {"podSelector": {}, "policyTypes": ["Ingress"]}
