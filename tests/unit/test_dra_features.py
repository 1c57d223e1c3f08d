# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""dra_features: the maturity data, features_for, and the rules over the component facts."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import os

import pytest
import yaml

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.compat import dra_features as df
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster import components as kc
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node.tree import NodeTree

import node_trees

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA_FILE = os.path.join(REPO, "data", "dra_features", "kubernetes-1.37.yml")
TODAY = "2026-12-02"
ACCEPTED = {"accepted_by": "gpu-platform", "expires": "2027-03-31", "reason": "VM canary on dedicated nodes"}


@pytest.fixture(scope="module")
def canary(tmp_path_factory):
    """Facts of the lab's 1.37 DRA canary: a kubeadm control-plane host and a GPU node."""
    base = tmp_path_factory.mktemp("canary")
    return {"cp-1": kc.gather(NodeTree(node_trees.materialize("control-plane-1.37", base / "cp"))),
            "gpu-1": kc.gather(NodeTree(node_trees.materialize("vfio-passthrough", base / "gpu")))}


def ids(result):
    return [(f["id"], f["severity"], f["subject"]) for f in result["findings"]]


def report_of(result, name):
    return [r for r in result["features"] if r["name"] == name][0]


def test_the_embedded_copy_is_the_data_file():
    with open(DATA_FILE, encoding="utf-8") as handle:
        text = handle.read()
    assert df.DEFAULT_MATURITY_YAML == text, "dra_features.DEFAULT_MATURITY_YAML differs from %s" % DATA_FILE


def test_the_data_is_valid_and_every_row_has_sources():
    data = df.load_maturity()
    assert data["kubernetes"] == "1.37"
    for name, feature in data["features"].items():
        assert feature["sources"].get("stage") and feature["sources"].get("components"), name
        assert feature.get("gate") in (name, None), name
    # the conflicts DOMAIN.md names are kept as recorded notes
    status = data["features"]["DRAResourceClaimDeviceStatus"]
    assert any("07474db" in c["source"] for c in status["conflicts"])
    assert data["features"]["DRAExtendedResource"]["components"] == list(kc.COMPONENTS)
    gates = data["driver"]["feature_gates"]
    assert gates["PassthroughSupport"]["stage"] == "alpha" and gates["PassthroughSupport"]["default"] is False
    assert gates["ComputeDomainCliques"] == {"stage": "beta", "default": True}
    assert "PassthroughSupport" in gates["DeviceMetadata"]["requires"]


def test_consistent_stable_feature_passes_and_says_where_state_came_from(canary):
    result = df.evaluate(["DRAExtendedResource", "DRADeviceTaintRules"], canary, today=TODAY)
    assert result["verdict"] == "pass", ids(result)
    extres = report_of(result, "DRAExtendedResource")
    assert extres["state"] == "enabled" and extres["stage"] == "stable"
    by = dict(("%s@%s" % (g["component"], g["host"]), g["source"]) for g in extres["gates"])
    assert by["kube-apiserver@cp-1"] == "flag" and by["kubelet@gpu-1"] == "config"
    taints = report_of(result, "DRADeviceTaintRules")
    assert {g["source"] for g in taints["gates"]} == {"default"}  # not in any flag: the 1.37 default, said so
    assert taints["state"] == "enabled"


def test_gate_on_one_component_but_not_another_blocks_naming_both(canary):
    facts = copy.deepcopy(canary)
    facts["cp-1"]["components"]["kube-scheduler"]["feature_gates"]["DRAExtendedResource"] = False
    result = df.evaluate(["DRAExtendedResource"], facts, today=TODAY)
    assert result["verdict"] == "block"
    finding = [f for f in result["findings"] if f["id"] == "dra_feature.gate_inconsistent"][0]
    assert "kube-scheduler@cp-1" in finding["message"] and "kube-apiserver@cp-1" in finding["message"]
    assert report_of(result, "DRAExtendedResource")["state"] == "mixed"


def test_gate_off_everywhere_blocks(canary):
    facts = copy.deepcopy(canary)
    for host in facts.values():
        for component in host["components"].values():
            component["feature_gates"]["DRAConsumableCapacity"] = False
    result = df.evaluate(["DRAConsumableCapacity"], facts, owners={"DRAConsumableCapacity": "alice"}, today=TODAY)
    assert ("dra_feature.gate_disabled", "block", "DRAConsumableCapacity") in ids(result)


def test_required_component_not_reported_blocks_fail_closed(canary):
    result = df.evaluate(["DRAExtendedResource"], {"gpu-1": canary["gpu-1"]}, today=TODAY)
    missing = [f for f in result["findings"] if f["id"] == "dra_feature.gate.not_assessed"]
    assert sorted(f["subject"] for f in missing) == ["kube-apiserver", "kube-controller-manager", "kube-scheduler"]
    assert {f["severity"] for f in missing} == {"block"}
    assert result["counts"]["not_assessed"] == 3 and result["verdict"] == "block"
    assert report_of(result, "DRAExtendedResource")["state"] == "not_assessed"


def test_unparsable_component_blocks_for_that_host(canary):
    facts = copy.deepcopy(canary)
    facts["cp-1"]["components"]["kube-scheduler"]["error"] = "not parsed: ParserError"
    result = df.evaluate(["DRAExtendedResource"], facts, today=TODAY)
    assert ("dra_feature.gate.not_assessed", "block", "kube-scheduler@cp-1") in ids(result)


def test_alpha_without_acceptance_blocks_and_accepted_alpha_still_warns(canary):
    gates = {"PassthroughSupport": True, "DeviceMetadata": True}
    blocked = df.evaluate(["driver/PassthroughSupport"], canary, driver_feature_gates=gates, today=TODAY)
    assert ("dra_feature.alpha_not_accepted", "block", "driver/PassthroughSupport") in ids(blocked)
    accepted = df.evaluate(["driver/PassthroughSupport"], canary, driver_feature_gates=gates,
                           acceptances={"driver/PassthroughSupport": ACCEPTED}, today=TODAY)
    assert accepted["verdict"] == "warn"
    assert ids(accepted) == [("dra_feature.alpha_accepted", "warn", "driver/PassthroughSupport")]
    assert report_of(accepted, "driver/PassthroughSupport")["acceptance"]["valid"] is True


def test_expired_acceptance_blocks(canary):
    result = df.evaluate(["driver/PassthroughSupport"], canary, driver_feature_gates={"PassthroughSupport": True},
                         acceptances={"PassthroughSupport": dict(ACCEPTED, expires="2026-12-01")}, today=TODAY)
    assert ("dra_feature.acceptance_expired", "block", "driver/PassthroughSupport") in ids(result)


def test_driver_gate_used_but_off_blocks_and_requirements_are_added(canary):
    result = df.evaluate(["driver/DeviceMetadata"], canary, acceptances={"driver/DeviceMetadata": ACCEPTED}, today=TODAY)
    names = [r["name"] for r in result["features"]]
    assert names == ["driver/DeviceMetadata", "driver/PassthroughSupport"]
    assert report_of(result, "driver/PassthroughSupport")["required_by"] == ["driver/DeviceMetadata"]
    assert ("dra_feature.alpha_not_accepted", "block", "driver/PassthroughSupport") in ids(result)
    assert ("dra_feature.gate_disabled", "block", "driver/DeviceMetadata") in ids(result)  # default off, not set


def test_conflicting_driver_gates_block(canary):
    result = df.evaluate(["driver/PassthroughSupport"], canary, driver_feature_gates={"PassthroughSupport": True, "NVMLDeviceHealthCheck": True},
                         acceptances={"driver/PassthroughSupport": ACCEPTED}, today=TODAY)
    assert ("dra_feature.driver_conflict", "block", "dra-driver") in ids(result)


def test_beta_without_owner_warns_with_owner_passes(canary):
    warned = df.evaluate(["DRAConsumableCapacity"], canary, today=TODAY)
    assert ids(warned) == [("dra_feature.beta_without_owner", "warn", "DRAConsumableCapacity")]
    owned = df.evaluate(["DRAConsumableCapacity"], canary, owners={"DRAConsumableCapacity": "alice"}, today=TODAY)
    assert owned["verdict"] == "pass" and report_of(owned, "DRAConsumableCapacity")["owner"] == "alice"


def test_conflicting_sources_evaluate_the_least_mature_stage(canary):
    result = df.evaluate(["DRAResourceClaimDeviceStatus"], canary, today=TODAY)
    report = report_of(result, "DRAResourceClaimDeviceStatus")
    assert report["stage"] == "stable" and report["stage_evaluated"] == "beta"
    assert ("dra_feature.stage_conflict", "info", "DRAResourceClaimDeviceStatus") in ids(result)
    assert ("dra_feature.beta_without_owner", "warn", "DRAResourceClaimDeviceStatus") in ids(result)


def test_unknown_feature_blocks_and_a_version_mismatch_warns(canary):
    facts = copy.deepcopy(canary)
    facts["cp-1"]["components"]["kube-apiserver"]["version"] = "1.36.4"
    result = df.evaluate(["DRAExtendedResource", "DRAMadeUp"], facts, today=TODAY)
    assert ("dra_feature.unknown", "block", "DRAMadeUp") in ids(result)
    assert ("dra_feature.version_mismatch", "warn", "kube-apiserver@cp-1") in ids(result)


def test_managed_control_plane_as_inventory_data(canary):
    gates = {"DRAExtendedResource": True}
    inventory = {"kube-apiserver": {"version": "1.37.0", "feature_gates": gates},
                 "kube-scheduler": {"version": "1.37.0", "feature_gates": gates},
                 "kube-controller-manager": {"version": "1.37.0"}}
    result = df.evaluate(["DRAExtendedResource"], {"managed": inventory, "gpu-1": {"ansible_facts": {"k8s_components": canary["gpu-1"]}}},
                         today=TODAY)
    assert result["verdict"] == "pass", ids(result)
    sources = dict((g["component"], g["source"]) for g in report_of(result, "DRAExtendedResource")["gates"])
    assert sources == {"kube-apiserver": "inventory", "kube-scheduler": "inventory", "kube-controller-manager": "default",
                       "kubelet": "config"}


def test_features_for_a_canary_configuration():
    config = {
        "manifests": [
            {"kind": "DeviceClass", "metadata": {"name": "gpu-legacy"}, "spec": {"extendedResourceName": "nvidia.com/gpu"}},
            {"kind": "DeviceClass", "metadata": {"name": "gpu.nvidia.com"}, "spec": {"selectors": []}},
            {"kind": "DeviceTaintRule", "spec": {"deviceSelector": {"driver": "gpu.nvidia.com"}}},
            {"kind": "ResourceClaimTemplate", "spec": {"spec": {"devices": {
                "requests": [{"name": "gpus", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 2}}],
                "constraints": [{"requests": ["gpus"], "matchAttribute": "resource.kubernetes.io/numaNode"}]}}}},
            {"kind": "GPUCluster", "metadata": {"name": "gpu-cluster"},
             "spec": {"draDriver": {"featureGates": {"ConsumableShares": True, "MPSSupport": False}}}},
        ],
        "passthrough": True,
    }
    assert df.features_for(config) == [
        "DRADeviceTaintRules", "DRADeviceTaints", "DRAExtendedResource", "StandardNUMANodeAttribute",
        "driver/ConsumableShares", "driver/DeviceMetadata", "driver/PassthroughSupport"]
    assert df.features_for({"manifests": [{"kind": "ResourceClaim", "spec": {"devices": {"requests": [
        {"name": "a", "firstAvailable": [{"name": "x", "deviceClassName": "c"}]}]}}}]}) == ["DRAPrioritizedList"]
    assert df.features_for(None) == []


def test_no_gate_feature_is_reported_without_gate_checks(canary):
    result = df.evaluate(["StandardNUMANodeAttribute"], {}, today=TODAY)
    assert result["verdict"] == "pass" and report_of(result, "StandardNUMANodeAttribute")["state"] == "no_gate"


@pytest.mark.parametrize("kwargs, field", [
    ({"features": "DRAExtendedResource"}, "features:"),
    ({"components": []}, "components:"),
    ({"components": {"h": {"kube-apiserver": {"feature_gates": {"X": 1}}}}}, "components.h.kube-apiserver.feature_gates.X"),
    ({"acceptances": {"X": {"accepted_by": "a", "reason": "r", "expires": "31.03.2027"}}}, "acceptances.X.expires"),
    ({"acceptances": {"X": {"accepted_by": "", "reason": "r", "expires": "2027-03-31"}}}, "acceptances.X.accepted_by"),
    ({"acceptances": {"X": {"accepted_by": "a", "reason": "r", "expires": "2027-02-30"}}}, "not a calendar date"),
    ({"owners": {"X": 3}}, "owners.X"),
    ({"driver_feature_gates": {"PassthroughSupport": "true"}}, "driver_feature_gates.PassthroughSupport"),
    ({"today": "tomorrow"}, "today:"),
])
def test_bad_input_names_the_field(kwargs, field):
    args = {"features": ["DRAExtendedResource"]}
    args.update(kwargs)
    with pytest.raises(df.DraFeatureError) as err:
        df.evaluate(**args)
    assert field in str(err.value)


def test_bad_maturity_data_names_the_field():
    data = yaml.safe_load(df.DEFAULT_MATURITY_YAML)
    data["features"]["DRAExtendedResource"]["stage"] = "ga"
    with pytest.raises(df.DraFeatureError) as err:
        df.validate_maturity(data)
    assert "features.DRAExtendedResource.stage" in str(err.value)
    with pytest.raises(df.DraFeatureError):
        df.load_maturity("schema: other\n")
