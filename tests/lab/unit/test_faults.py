# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fault injection (kubelab.faults): validation, the /kubelab/faults endpoint, each kind's effect, the CLI."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request

import pytest

from kubelab import cli
from kubelab.faults import HEALTH_CONDITION, HEALTH_TAINT, validate_fault
from kubelab.scenario import ScenarioError, validate_scenario
from kubelab.testing import start_lab, stop_lab
from kubelab import testing


def wait_for(check, timeout: float = 30.0, what: str = "condition"):
    return testing.wait_for(check, timeout, what, interval=0.1)


def http(lab, path: str, method: str = "GET", body=None):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(lab.url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=20) as resp:
            return resp.status, json.loads(resp.read().decode() or "null")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read().decode() or "null")


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    cluster = start_lab(str(tmp_path_factory.mktemp("faults")), "two-backends-one-node")
    yield cluster
    stop_lab(cluster)
    assert not cluster.server.controller_errors, cluster.server.controller_errors[:5]


@pytest.fixture(autouse=True)
def clear_faults(request):
    yield
    if "lab" in request.fixturenames:
        http(request.getfixturevalue("lab"), "/kubelab/faults", "DELETE")


def rtype(lab, group, version, plural):
    return lab.server.registry.get(group, version, plural)


def node(lab, name):
    return lab.server.api.get(rtype(lab, "", "v1", "nodes"), None, name)


def gpus(item, part="allocatable"):
    return item["status"][part]["nvidia.com/gpu"]


def ready(item):
    return {c["type"]: c["status"] for c in item["status"]["conditions"]}["Ready"]


def node_when(lab, name, state):
    """The node when its Ready condition is ``state``, else None (a wait_for check)."""
    item = node(lab, name)
    return item if ready(item) == state else None


@pytest.mark.parametrize("fault, message", [
    ({"nope": {}}, "unknown fault kind 'nope'"),
    ({"reboot": {"seconds": 3}}, "reboot.node: is required"),
    ({"api_error": {"code": 404}}, "api_error.code: must be one of 403, 429, 500, 502, 503, 504"),
    ({"eviction": {"code": 403}}, "eviction.code: must be one of 429, 500, 503"),
    ({"api_error": {"count": 0}}, "api_error.count: must be >= 1"),
    ({"claim_allocation_failure": {"rate": 2}}, "rate: must be between 0 and 1"),
    ({"eviction": {}}, "give delay"),
    ({"reboot": {"node": "a", "bogus": 1}}, "reboot.bogus: unknown parameter"),
    ({"a": {}, "b": {}}, "one key"),
])
def test_validation_names_the_field(fault, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        validate_fault(fault)


def test_scenario_faults_and_new_fields_are_validated():
    with pytest.raises(ScenarioError, match=r"faults\[1\]: reboot.node: is required"):
        validate_scenario({"faults": [{"claim_leak": None}, {"reboot": {}}]})
    with pytest.raises(ScenarioError, match=r"nodes\[0\] \(g\)\.gpu\.tree: unknown node tree 'x'"):
        validate_scenario({"nodes": [{"name": "g", "gpu": {"tree": "x"}}]})
    with pytest.raises(ScenarioError, match=r"nodes\[0\] \(g\)\.gpu\.backend: must be one of"):
        validate_scenario({"nodes": [{"name": "g", "gpu": {"tree": "h200-vm", "backend": "cuda"}}]})
    with pytest.raises(ScenarioError, match=r"nodes\[0\] \(g\)\.kubelet_version: '1\.x' is not a Kubernetes version"):
        validate_scenario({"nodes": [{"name": "g", "kubelet_version": "1.x"}]})
    with pytest.raises(ScenarioError, match=r"nodes\[0\]\.count: must be an integer"):
        validate_scenario({"nodes": [{"name": "g", "count": 0}]})
    with pytest.raises(ScenarioError, match=r"pod_ready_seconds: must be a number"):
        validate_scenario({"pod_ready_seconds": "slow"})
    data = validate_scenario({"nodes": [{"name": "g", "count": 2, "gpu": {"tree": "h200-vm"}, "kubelet_version": "1.33.5"}],
                              "faults": [{"operator_never_ready": {}}], "pod_ready_seconds": 1})
    assert [n["metadata"]["name"] for n in data["nodes"]] == ["g-1", "g-2"]
    assert [(e["node"], e["pool"], e["backend"]) for e in data["gpu_nodes"]] == [("g-1", "g", "device-plugin"),
                                                                                 ("g-2", "g", "device-plugin")]
    assert data["nodes"][1]["status"]["nodeInfo"]["kubeletVersion"] == "v1.33.5"
    assert data["faults"] == [{"operator_never_ready": {}}] and data["pod_ready_seconds"] == 1.0


def test_api_errors_count_path_and_method(lab):
    code, added = http(lab, "/kubelab/faults", "POST",
                       {"api_error": {"code": 429, "count": 2, "path": "^/api/v1/namespaces$", "method": "GET"}})
    assert code == 201 and added["faults"][0]["kind"] == "api_error"
    assert http(lab, "/api/v1/nodes")[0] == 200  # another path
    first = http(lab, "/api/v1/namespaces")
    second = http(lab, "/api/v1/namespaces")
    third = http(lab, "/api/v1/namespaces")
    assert first[0] == second[0] == 429 and first[1]["reason"] == "TooManyRequests"
    assert third[0] == 200
    assert http(lab, "/kubelab/faults")[1]["faults"][0]["hits"] == 2


def test_api_error_403_is_kube_apiservers_forbidden(lab):
    http(lab, "/kubelab/faults", "POST", [{"api_error": {"code": 403, "path": "/secrets$", "count": 1}},
                                          {"api_error": {"code": 403, "path": "^/api/v1/nodes/", "count": 1,
                                                         "user": "alice"}}])
    code, body = http(lab, "/api/v1/namespaces/gpu-operator/secrets")
    assert code == 403 and body["reason"] == "Forbidden" and body["code"] == 403
    assert body["message"] == ('secrets is forbidden: User "system:serviceaccount:dra-gate:gate" cannot list resource '
                               '"secrets" in API group "" in the namespace "gpu-operator"')
    assert body["details"] == {"group": "", "kind": "secrets"}
    code, body = http(lab, "/api/v1/nodes/gpu-1")
    assert body["message"] == ('nodes "gpu-1" is forbidden: User "alice" cannot get resource "nodes" in API group "" '
                               'at the cluster scope')
    assert http(lab, "/api/v1/namespaces/gpu-operator/secrets")[0] == 200  # count 1: gone
    http(lab, "/kubelab/faults", "DELETE")


def test_api_error_429_sends_retry_after(lab):
    http(lab, "/kubelab/faults", "POST", {"api_error": {"code": 429, "count": 1, "retry_after": 2}})
    request = urllib.request.Request(lab.url + "/api/v1/nodes")
    with pytest.raises(urllib.error.HTTPError) as exc:
        urllib.request.urlopen(request, timeout=20)
    assert exc.value.code == 429 and exc.value.headers["Retry-After"] == "2"
    assert json.loads(exc.value.read())["details"]["retryAfterSeconds"] == 2
    http(lab, "/kubelab/faults", "DELETE")


def test_api_error_burst_by_duration_then_clear(lab):
    http(lab, "/kubelab/faults", "POST", [{"api_error": {"code": 500, "seconds": 30}}])
    code, body = http(lab, "/api/v1/pods")
    assert code == 500 and body["reason"] == "InternalError"
    assert http(lab, "/kubelab/faults")[0] == 200  # the admin path is never faulted
    assert http(lab, "/kubelab/faults", "DELETE") == (200, {"removed": 1})
    assert http(lab, "/api/v1/pods")[0] == 200
    assert http(lab, "/kubelab/faults", "POST", {"reboot": {}})[0] == 400


def _pod(lab, name):
    pods = rtype(lab, "", "v1", "pods")
    lab.server.api.create(pods, "default", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                                            "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
    wait_for(lambda: (lab.server.api.get(pods, "default", name).get("status") or {}).get("phase") == "Running",
             30, "pod %s running" % name)


def test_slow_and_failing_evictions(lab):
    _pod(lab, "evict-me")
    http(lab, "/kubelab/faults", "POST", {"eviction": {"code": 500, "count": 1}})
    eviction = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "evict-me", "namespace": "default"}}
    path = "/api/v1/namespaces/default/pods/evict-me/eviction"
    assert http(lab, path, "POST", eviction)[0] == 500
    http(lab, "/kubelab/faults", "POST", {"eviction": {"delay": 1.0}})
    begin = time.monotonic()
    assert http(lab, path, "POST", eviction)[0] == 201
    assert time.monotonic() - begin >= 1.0


def test_run_time_knobs_for_dra_and_operator(lab):
    server = lab.server
    assert server.fault_rate("claim_allocation") == 0.0 and not server.fault_active("claim_leak")
    http(lab, "/kubelab/faults", "POST", [{"claim_allocation_failure": {"rate": 0.25}}, {"claim_leak": {}}])
    assert server.fault_rate("claim_allocation") == 0.25
    assert server.fault_active("claim_leak")
    policies = rtype(lab, "nvidia.com", "v1", "clusterpolicies")

    def state():
        return (server.store.get(policies, None, "cluster-policy").get("status") or {}).get("state")
    wait_for(lambda: state() == "ready", 90, "ClusterPolicy ready")
    http(lab, "/kubelab/faults", "POST", {"operator_never_ready": {}})
    wait_for(lambda: state() == "notReady", 20, "ClusterPolicy notReady")
    reasons = {c["type"]: c["reason"] for c in server.store.get(policies, None, "cluster-policy")["status"]["conditions"]}
    assert reasons["Ready"] == "OperandNotReady"
    http(lab, "/kubelab/faults", "DELETE")
    wait_for(lambda: state() == "ready", 30, "ClusterPolicy ready again")


def test_device_health_unknown_condition_and_taint(lab):
    http(lab, "/kubelab/faults", "POST", {"device_health_unknown": {"node": "gpu-2"}})

    def health():
        item = node(lab, "gpu-2")
        cond = {c["type"]: c for c in item["status"]["conditions"]}.get(HEALTH_CONDITION)
        taints = [t["key"] for t in item["spec"].get("taints") or []]
        return cond, taints
    wait_for(lambda: health()[0] and health()[0]["status"] == "Unknown" and HEALTH_TAINT in health()[1], 10,
             "health Unknown")
    http(lab, "/kubelab/faults", "DELETE")
    wait_for(lambda: health()[0]["status"] == "True" and HEALTH_TAINT not in health()[1], 10, "health back")


def test_dra_plugin_restart_withdraws_slices(lab):
    slices = rtype(lab, "resource.k8s.io", "v1", "resourceslices")
    body = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "gpu-1-test-slice"},
            "spec": {"driver": "test.example.com", "nodeName": "gpu-1",
                     "pool": {"name": "gpu-1", "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": "dev-0"}]}}
    lab.server.api.create(slices, None, body)
    http(lab, "/kubelab/faults", "POST", {"dra_plugin_restart": {"node": "gpu-1", "seconds": 5}})
    assert lab.server.fault_active("dra_plugin_restart", "gpu-1")
    assert not lab.server.fault_active("dra_plugin_restart", "gpu-2")
    wait_for(lambda: lab.server.store.get_or_none(slices, None, "gpu-1-test-slice") is None, 10, "slice withdrawn")


def test_node_that_never_comes_back(lab):
    http(lab, "/kubelab/faults", "POST", {"reboot": {"node": "gpu-2", "comes_back": False, "seconds": 0.5}})
    wait_for(lambda: ready(node(lab, "gpu-2")) == "False", 10, "gpu-2 NotReady")
    time.sleep(1.5)
    assert ready(node(lab, "gpu-2")) == "False" and gpus(node(lab, "gpu-2")) == "0"  # the device plugin never registers
    http(lab, "/kubelab/faults", "DELETE")
    wait_for(lambda: ready(node(lab, "gpu-2")) == "True", 10, "gpu-2 back after the fault is cleared")
    wait_for(lambda: gpus(node(lab, "gpu-2")) == "1", 10, "gpu-2 allocatable back")


def test_device_unhealthy_lowers_device_plugin_allocatable(lab):
    # gpu-1: both backends, 8 GPUs; one unhealthy GPU leaves allocatable 7, capacity 8
    assert gpus(node(lab, "gpu-1"), "capacity") == gpus(node(lab, "gpu-1")) == "8"
    http(lab, "/kubelab/faults", "POST", {"device_unhealthy": {"node": "gpu-1", "device": "gpu-3"}})
    wait_for(lambda: gpus(node(lab, "gpu-1")) == "7", 10, "gpu-1 allocatable 7")
    assert gpus(node(lab, "gpu-1"), "capacity") == "8"
    # gpu-2: device plugin only (no ResourceSlices); without ``device`` all its GPUs (one) are unhealthy
    http(lab, "/kubelab/faults", "POST", {"device_unhealthy": {"node": "gpu-2", "health": "Unknown"}})
    wait_for(lambda: gpus(node(lab, "gpu-2")) == "0", 10, "gpu-2 allocatable 0")
    assert gpus(node(lab, "gpu-2"), "capacity") == "1" and gpus(node(lab, "gpu-1")) == "7"
    http(lab, "/kubelab/faults", "DELETE")
    wait_for(lambda: gpus(node(lab, "gpu-1")) == "8" and gpus(node(lab, "gpu-2")) == "1", 10, "allocatable back")


def test_reboot_zeroes_device_plugin_allocatable_until_the_plugin_registers(lab):
    scenario = lab.server.scenario
    scenario["device_plugin_register_seconds"] = 3.0  # a window the poll below cannot miss
    try:
        before = node(lab, "gpu-1")["status"]["nodeInfo"]["bootID"]
        http(lab, "/kubelab/faults", "POST", {"reboot": {"node": "gpu-1", "seconds": 1.5}})
        down = wait_for(lambda: node_when(lab, "gpu-1", "False"), 10, "gpu-1 NotReady")
        assert gpus(down) == "0" and gpus(down, "capacity") == "8"
        back = wait_for(lambda: node_when(lab, "gpu-1", "True"), 15, "gpu-1 Ready")
        assert back["status"]["nodeInfo"]["bootID"] != before
        assert gpus(back) == "0"  # Ready, the device plugin not registered again yet
        wait_for(lambda: gpus(node(lab, "gpu-1")) == "8", 10, "gpu-1 allocatable back")
        assert ready(node(lab, "gpu-1")) == "True"
    finally:
        scenario.pop("device_plugin_register_seconds", None)


def test_scenario_faults_start_with_the_lab(tmp_path):
    scenario = validate_scenario({"faults": [{"api_error": {"code": 503, "count": 1, "path": "^/api/v1/namespaces$"}}]})
    from kubelab.etcd import EtcdProcess  # pylint: disable=import-outside-toplevel
    from kubelab.server import LabServer  # pylint: disable=import-outside-toplevel
    with EtcdProcess(workdir=str(tmp_path / "etcd")) as etcd:
        server = LabServer(etcd.client_url, scenario=scenario).start()
        try:
            class Handle:
                url = server.url
            assert http(Handle, "/api/v1/namespaces")[0] == 503
            assert http(Handle, "/api/v1/namespaces")[0] == 200
        finally:
            server.stop()


def test_cli_fault_command(lab, tmp_path, capsys):
    (tmp_path / "lab.json").write_text(json.dumps({"state": "running", "server_url": lab.url}))
    assert cli.main(["fault", "--dir", str(tmp_path), "--add", '{"claim_leak": {"seconds": 60}}']) == 0
    added = json.loads(capsys.readouterr().out)["faults"]
    assert added[0]["kind"] == "claim_leak" and lab.server.fault_active("claim_leak")
    assert cli.main(["fault", "--dir", str(tmp_path), "--list"]) == 0
    assert [f["id"] for f in json.loads(capsys.readouterr().out)["faults"]] == [added[0]["id"]]
    assert cli.main(["fault", "--dir", str(tmp_path), "--clear", str(added[0]["id"])]) == 0
    assert json.loads(capsys.readouterr().out) == {"removed": 1}
    assert cli.main(["fault", "--dir", str(tmp_path), "--add", '{"reboot": {}}']) == 1
    assert "reboot.node: is required" in capsys.readouterr().err
