# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""judges/dra_canary_role.py on recorded canary builds: tolerations (parse_taint), the GPUCluster spec, the refusal
ladder (chart -> ownership -> passthrough -> unanswered hosts; feature gates), the failure ladder (cluster read ->
release -> GPUCluster; containerd; CDI, DeviceClass, workloads), the smoke workloads and the record's results
(completed only when neither refused nor failed and not in check mode)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.judges import dra_canary_role as dc
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.judges.phase_role import JudgeError

CHART_OK = {"changed": False, "chart": {"source": "/c.tgz", "sha256": "ab", "version": "26.7.0"}}
OWN_OK = {"changed": False, "ok": True, "findings": [], "cluster_policies": []}
PASS_OFF = {"changed": False, "passthrough": {"decision": "not_requested", "reasons": [], "policy": {"container_nodes": ["n1", "n2"]}},
            "findings": []}


def test_tolerations():
    assert dc.tolerations(["gpufleet.io/canary=true:NoSchedule", "dedicated:NoExecute"]) == [
        {"key": "gpufleet.io/canary", "operator": "Equal", "value": "true", "effect": "NoSchedule"},
        {"key": "dedicated", "operator": "Equal", "value": "", "effect": "NoExecute"}]
    assert dc.tolerations([]) == [] and dc.tolerations(None) == []
    with pytest.raises(JudgeError, match="taints entry 1: taint 'x:Sometimes': the effect must be"):
        dc.tolerations(["a:NoSchedule", "x:Sometimes"])


def test_gpu_cluster_spec():
    base = {"draDriver": {"version": "26.7.0", "featureGates": {"A": True}}, "daemonsets": {"labels": {"x": "1"}}}
    tol = [{"key": "k", "operator": "Equal", "value": "", "effect": "NoSchedule"}]
    spec = dc.gpu_cluster_spec(base, {"B": False}, tol, {"draDriver": {"featureGates": {"A": False}}})
    assert spec == {"draDriver": {"version": "26.7.0", "featureGates": {"A": False, "B": False}},
                    "daemonsets": {"labels": {"x": "1"}, "tolerations": tol}}
    assert "tolerations" not in dc.gpu_cluster_spec(base, {}, [], {})["daemonsets"]
    assert base["draDriver"]["featureGates"] == {"A": True}  # the base is not changed


def test_refusal_ladder():
    assert dc.refusal(CHART_OK, OWN_OK, PASS_OFF, {}) == ""
    assert dc.refusal({"failed": True, "msg": "chart sha256 differs"}, {"failed": True, "msg": "x"}, PASS_OFF) == "chart sha256 differs"
    assert dc.refusal(CHART_OK, {"failed": True, "msg": "403"}, PASS_OFF) == "the ownership check failed: 403"
    assert dc.refusal(CHART_OK, {"ok": False, "msg": "ClusterPolicy cluster-policy exists"}, PASS_OFF) == (
        "the canary nodes are not DRA-owned and isolated: ClusterPolicy cluster-policy exists")
    assert dc.refusal(CHART_OK, OWN_OK, {"failed": True, "msg": "no node facts"}) == "the passthrough decision failed: no node facts"
    refused = {"passthrough": {"decision": "refused", "reasons": ["alpha not accepted", "IOMMU off on n2"]}}
    assert dc.refusal(CHART_OK, OWN_OK, refused) == "passthrough refused: alpha not accepted; IOMMU off on n2"
    assert dc.refusal(CHART_OK, OWN_OK, PASS_OFF, {"n2": "unreachable: x", "n3": "failed: y"}) == "no facts were read for n2, n3"


def test_feature_refusal():
    assert dc.feature_refusal({"findings": [{"severity": "warn", "message": "beta without owner"}]}) == ""
    blocks = {"findings": [{"severity": "block", "message": "DRAPassthrough alpha"}, {"severity": "info", "message": "i"},
                           {"severity": "block", "message": "gate off on kubelet n2"}]}
    assert dc.feature_refusal(blocks) == "feature gates: DRAPassthrough alpha; gate off on kubelet n2"
    assert dc.feature_refusal({"failed": True, "msg": "no kubelet config"}) == "feature gates: no kubelet config"
    assert dc.feature_refusal({"failed": True}) == "feature gates: failed"
    assert dc.feature_refusal(None) == ""


def test_build_failure_ladder():
    assert dc.build_failure({"changed": False}, {"changed": True}, {"changed": True, "ready": True}) == ""
    assert dc.build_failure({"failed": True, "msg": "401"}, {"skipped": True}, {"skipped": True}) == "reading the cluster failed: 401"
    assert dc.build_failure({}, {"failed": True, "msg": "helm timed out"}, {"skipped": True}) == "the operator release failed: helm timed out"
    assert dc.build_failure({}, {}, {"failed": True, "msg": "not ready"}) == "the GPUCluster failed: not ready"


def test_containerd_failure():
    results = [{"host": "n1", "outcome": "changed"}, None, {"host": "n2", "outcome": "reverted"}, {"host": "n3", "outcome": "failed"}]
    assert dc.containerd_failure(results, "n1", "restart failed") == "containerd_cdi failed on n2, n3: restart failed"
    assert dc.containerd_failure([None], "n1", None) == "containerd_cdi failed on n1: failed"


def test_check_failure_ladder():
    assert dc.check_failure({"ok": True, "findings": []}, "cdi") == ""
    assert dc.check_failure({"failed": True, "msg": "boom"}, "cdi") == "the CDI check failed: boom"
    assert dc.check_failure({"ok": False, "msg": "n2: no CDI spec"}, "cdi") == "CDI discovery failed: n2: no CDI spec"
    assert dc.check_failure({"skipped": True}, "workloads") == ""
    assert dc.check_failure({"ok": False, "msg": "vfio pod Pending"}, "workloads") == "the smoke workloads did not pass: vfio pod Pending"
    assert dc.check_failure({"failed": True, "msg": "x"}, "workloads") == "the smoke workloads failed: x"
    assert dc.check_failure({"changed": True, "device_class": {"action": "created"}}, "device_class") == ""
    assert dc.check_failure({"failed": True, "msg": "forbidden"}, "device_class") == "the DeviceClass failed: forbidden"
    assert dc.check_failure(None, "device_class") == ""
    with pytest.raises(JudgeError, match="check: expected one of"):
        dc.check_failure({}, "chart")


def test_smoke_workloads():
    assert dc.smoke_workloads(PASS_OFF, True, ["vm-1"]) == [{"name": "extended-gpu", "kind": "extended", "node": "n1"}]
    enabled = {"passthrough": {"decision": "enabled", "policy": {"container_nodes": []}}}
    assert dc.smoke_workloads(enabled, True, ["vm-1", "vm-2"]) == [
        {"name": "extended-gpu", "kind": "extended", "node": None}, {"name": "container-claim", "kind": "container"},
        {"name": "vfio-vm-1", "kind": "vfio", "node": "vm-1"}, {"name": "vfio-vm-2", "kind": "vfio", "node": "vm-2"}]
    assert dc.smoke_workloads(enabled, False, []) == []


STEPS = {"chart": CHART_OK, "ownership": dict(OWN_OK, findings=[{"id": "o"}]), "passthrough_decision": PASS_OFF,
         "operator_release": {"changed": True, "started_at": "s", "finished_at": "f", "duration_seconds": 2.0, "action": "install"},
         "gpu_cluster": {"changed": True, "ready": True, "state": "ready", "problems": [], "invocation": {}},
         "cdi": {"ok": True, "findings": [{"id": "c"}]}, "device_class": {"changed": True, "device_class": {"action": "created", "object": {}}},
         "workloads": {"ok": True, "findings": []}, "features": {"verdict": "pass", "findings": [{"id": "f"}], "counts": {}, "other": 1}}


def test_results_completed():
    out = dc.results(STEPS, refused="", failure="", check_mode=False, feature_check=True, containerd_cdi=True,
                     containerd=[None, {"host": "n1", "outcome": "changed"}], extended_resource=True, device_class_name="gpu-ext",
                     hook_path="/r/hook.yml")
    assert out["completed"] is True and out["refused"] is None and out["failure"] is None
    assert [f["id"] for f in out["findings"]] == ["o", "f", "c"]
    assert out["gpu_cluster"] == {"ready": True, "state": "ready", "problems": []}
    assert out["device_class"] == {"requested": True, "name": "gpu-ext", "action": "created", "object": {}, "rollback_hook": "/r/hook.yml"}
    assert out["feature_gates"] == {"verdict": "pass", "counts": {}}
    assert out["containerd"] == [{"host": "n1", "outcome": "changed"}]
    assert out["steps"]["operator_release"] == {"started_at": "s", "finished_at": "f", "duration_seconds": 2.0}
    assert out["steps"]["workloads"] == {} and set(out["steps"]) == set(dc.STEP_NAMES)


def test_results_refused_failed_check_mode():
    refused = dc.results({"chart": {"failed": True, "msg": "bad chart"}}, refused="bad chart", feature_check=False, containerd_cdi=False)
    assert refused["completed"] is False and refused["refused"] == "bad chart" and refused["failure"] is None
    assert refused["feature_gates"] == {"skipped": "dra_gate_canary_feature_check is false"}
    assert refused["containerd"] == {"skipped": "dra_gate_canary_containerd_cdi is false"}
    assert refused["steps"]["chart"] == {"failed": True, "msg": "bad chart"} and refused["gpu_cluster"] == {}
    failed = dc.results(STEPS, failure="the GPUCluster failed: x")
    assert failed["completed"] is False and failed["failure"] == "the GPUCluster failed: x"
    checked = dc.results(STEPS, check_mode=True)
    assert checked["completed"] is False and checked["check_mode"] is True and checked["refused"] is None
