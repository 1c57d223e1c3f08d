# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The input rules of roles/snapshot, roles/etcd_snapshot, roles/artifacts_verified and roles/phase (start), one per
condition (issue 28): the defaults pass; each mistake names only its setting; whatever each role's argument spec
would refuse (once per host), the rules refuse first (once, on the controller); each role checks every ruled variable
first; the phase's check names the phase and the dra_gate_* setting."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest
import yaml

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.inputs import rules as inputs
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.inputs import artifacts_verified as inputs_artifacts_verified
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.inputs import etcd_snapshot as inputs_etcd_snapshot
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.inputs import phase as inputs_phase
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.inputs import snapshot as inputs_snapshot

from setting_names import role_variable

ROLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..", "roles")
GROUPS = {"all": ["gpu-1", "etcd-1"], "ungrouped": [], "gpu_nodes": ["gpu-1"], "etcd": ["etcd-1"], "empty": []}

GOOD = {
    "snapshot": {
        "snapshot_evidence_root": "/var/lib/dra-gate/evidence", "snapshot_run_id": "prod-2612",
        "snapshot_kubeconfig": os.path.abspath(__file__), "snapshot_kube_context": "", "snapshot_operator_release": "gpu-operator",
        "snapshot_operator_namespace": "gpu-operator", "snapshot_helm_backend": "auto", "snapshot_etcd_group": "etcd",
        "snapshot_node_root": "/", "snapshot_node_commands": "auto", "snapshot_containerd_config": "/etc/containerd/config.toml",
        "snapshot_manifests_dir": "/etc/kubernetes/manifests", "snapshot_kubelet_config": "/var/lib/kubelet/config.yaml",
        "snapshot_skip_captures": [], "snapshot_etcdutl": "", "snapshot_etcdctl": "", "snapshot_capture_timeout": 900},
    "etcd_snapshot": {
        "etcd_snapshot_group": "etcd", "etcd_snapshot_endpoint": "https://127.0.0.1:2379", "etcd_snapshot_cacert": "",
        "etcd_snapshot_cert": "", "etcd_snapshot_key": "", "etcd_snapshot_dir": "/var/backups/etcd",
        "etcd_snapshot_prefix": "etcd-snapshot", "etcd_snapshot_retention": 5,
        "etcd_snapshot_max_age": "1h", "etcd_snapshot_etcdctl": "", "etcd_snapshot_etcdutl": "",
        "etcd_snapshot_timeout": 10, "etcd_snapshot_save_timeout": 600, "etcd_snapshot_max_raft_lag": 1000,
        "__context__": {"groups": GROUPS}},
    "artifacts_verified": {
        "artifacts_verified_evidence_root": "/var/lib/dra-gate/evidence", "artifacts_verified_run_id": "prod-2612",
        "artifacts_verified_etcdutl": "", "artifacts_verified_etcdctl": ""},
    "phase": {
        "phase_name": "upgrade", "phase_evidence_root": "/var/lib/dra-gate/evidence", "phase_run_id": "prod-2612",
        "phase_run_id_required": True, "phase_fail_on": "block", "phase_changes_cluster": True,
        "phase_sliceable": False, "phase_job_slice_count": 1, "phase_job_slice": "", "phase_job_slice_group": ""},
}
MODULES = {"snapshot": inputs_snapshot, "etcd_snapshot": inputs_etcd_snapshot, "artifacts_verified": inputs_artifacts_verified,
           "phase": inputs_phase}
ENTRY = {"phase": "start"}


def good(role, **over):
    return dict(GOOD[role], **over)


def failed(role, values):
    return inputs.failures(MODULES[role].RULES, values)


def spec(role):
    with open(os.path.join(ROLES, role, "meta", "argument_specs.yml")) as handle:
        options = yaml.safe_load(handle)["argument_specs"][ENTRY.get(role, "main")]["options"]
    keep = ("type", "elements", "choices", "required", "default")
    return {name: {key: value for key, value in item.items() if key in keep} for name, item in options.items()}


@pytest.mark.parametrize("role", sorted(MODULES))
def test_the_defaults_pass_and_every_option_has_a_rule(role):
    assert failed(role, good(role)) == []
    fields = sorted(set(rule.field for rule in MODULES[role].RULES))
    assert fields == sorted(spec(role)) == sorted(name for name in GOOD[role] if name != "__context__")
    if role != "phase":  # phase_name and the constants have no default: the calling role passes them
        with open(os.path.join(ROLES, role, "defaults", "main.yml")) as handle:
            assert sorted(yaml.safe_load(handle)) == fields


@pytest.mark.parametrize("role", sorted(MODULES))
def test_whatever_the_argument_spec_refuses_the_rules_refuse_first(role):
    validator = ArgumentSpecValidator(spec(role))
    assert inputs.spec_gaps(MODULES[role].RULES, good(role), lambda values: bool(validator.validate(
        {k: v for k, v in values.items() if k != "__context__"}).error_messages)) == []


@pytest.mark.parametrize("role", sorted(MODULES))
def test_the_role_checks_every_ruled_variable_once_on_the_controller(role):
    path = os.path.join(ROLES, role, "tasks", "start.yml" if role == "phase" else "inputs.yml")
    with open(path) as handle:
        task = yaml.safe_load(handle)[0]
    call = task["gpufleet.dra_gate.input_check"]
    assert call["role"] == role and sorted(call["values"]) == sorted(set(rule.field for rule in MODULES[role].RULES))
    assert task["run_once"] is True and task["delegate_to"] == "localhost" and task["check_mode"] is False
    if role != "phase":
        with open(os.path.join(ROLES, role, "tasks", "main.yml")) as handle:
            assert yaml.safe_load(handle)[0]["ansible.builtin.import_tasks"] == "inputs.yml"


@pytest.mark.parametrize("role, field, value, reason", [
    ("snapshot", "snapshot_run_id", "", "it is empty"),
    ("snapshot", "snapshot_kubeconfig", "/nonexistent/kubeconfig", "there is no such file on the controller"),
    ("snapshot", "snapshot_kubeconfig", "", "it is empty"),
    ("snapshot", "snapshot_helm_backend", "helm", "it is not one of auto|cli|library"),
    ("snapshot", "snapshot_node_root", "trees/gpu-1", "it is a relative path"),
    ("snapshot", "snapshot_node_commands", "live", "it is not one of auto|run|recorded|none"),
    ("snapshot", "snapshot_skip_captures", ["etcd", "crds"], "'crds' in it is not one of etcd|helm|cluster_state|node_files"),
    ("snapshot", "snapshot_skip_captures", "etcd", "it is not a list"),
    ("snapshot", "snapshot_capture_timeout", 0, "it is not above 0"),
    ("etcd_snapshot", "etcd_snapshot_group", "etcd_members", "it is not a group of the inventory (its groups: empty, etcd, gpu_nodes)"),
    ("etcd_snapshot", "etcd_snapshot_group", "empty", "the group has no hosts"),
    ("etcd_snapshot", "etcd_snapshot_endpoint", "https://a:2379,https://b:2379", "it is not one http(s) URL"),
    ("etcd_snapshot", "etcd_snapshot_endpoint", "127.0.0.1:2379", "it is not one http(s) URL"),
    ("etcd_snapshot", "etcd_snapshot_dir", "backups", "it is a relative path"),
    ("etcd_snapshot", "etcd_snapshot_prefix", "../x", "it is not a plain file name prefix"),
    ("etcd_snapshot", "etcd_snapshot_retention", -1, "it is not a whole number"),
    ("etcd_snapshot", "etcd_snapshot_max_age", "1 hour", "it is not seconds or N[smhd]"),
    ("etcd_snapshot", "etcd_snapshot_timeout", 0, "it is not above 0"),
    ("etcd_snapshot", "etcd_snapshot_save_timeout", "600s", "it is not a whole number"),
    ("etcd_snapshot", "etcd_snapshot_max_raft_lag", "many", "it is not a whole number"),
    ("artifacts_verified", "artifacts_verified_evidence_root", "evidence", "it is a relative path"),
    ("artifacts_verified", "artifacts_verified_run_id", "", "it is empty"),
    ("phase", "phase_evidence_root", "./evidence", "it is a relative path"),
    ("phase", "phase_run_id", "", "it is empty: this phase joins a gate run"),
    ("phase", "phase_run_id", "a/b", "it has characters other than"),
    ("phase", "phase_fail_on", "sometimes", "it is not one of block|warn|never"),
])
def test_each_mistake_names_only_its_setting(role, field, value, reason):
    result = failed(role, good(role, **{field: value}))
    assert [f["field"] for f in result] == [field], result
    assert result[0]["reason"].startswith(reason), result[0]
    assert role_variable(role, result[0]["setting"]) == field, result[0]


def test_the_etcd_snapshot_accepts_what_the_module_takes():
    assert failed("etcd_snapshot", good("etcd_snapshot", etcd_snapshot_max_age=3600,
                                        etcd_snapshot_retention="0", etcd_snapshot_endpoint="http://10.0.0.5:2379",
                                        etcd_snapshot_timeout="5")) == []


def test_a_phase_that_does_not_need_a_run_id_takes_an_empty_one():
    assert failed("phase", good("phase", phase_name="preflight", phase_run_id="", phase_run_id_required=False)) == []
    assert [f["field"] for f in failed("phase", good("phase", phase_run_id="x y", phase_run_id_required=False))] == ["phase_run_id"]
    assert [f["field"] for f in failed("phase", good("phase", phase_name="deploy"))] == ["phase_name"]


def test_the_phase_check_names_the_phase_the_setting_and_the_phase_roles_variable():
    """roles/phase/tasks/start.yml passes the phase as the title and the phase role's variables as field names."""
    with open(os.path.join(ROLES, "phase", "tasks", "start.yml")) as handle:
        task = yaml.safe_load(handle)[0]
    call = task["gpufleet.dra_gate.input_check"]
    assert call["title"] == "{{ phase_name }}"
    assert call["fields"]["phase_run_id"] == "{{ phase_role_of_name }}_run_id"
    roles = task["vars"]["phase_role_of_name"]
    assert "'upgrade': 'operator_upgrade'" in roles and "'drain': 'drain_waves'" in roles and "'rollback': 'operator_rollback'" in roles
    result = failed("phase", good("phase", phase_run_id=""))
    result[0]["field"] = "operator_upgrade_run_id"  # what the module does with fields
    assert inputs.message("upgrade", result) == (
        "upgrade: 1 input wrong, nothing was changed:\n- dra_gate_run_id (role variable operator_upgrade_run_id): it is empty: this "
        "phase joins a gate run (the preflight's), so its run id must be given; got ''; expected the gate run id (letters, digits, "
        "._-), e.g. -e dra_gate_run_id=prod-2612.")


def test_only_a_sliceable_phase_runs_sliced_and_a_slice_names_itself_and_its_job():
    """AWX job slicing (docs/awx.md, "Sliced runs"): a phase done once per gate refuses a sliced job, naming the
    setting and the job template's field; the preflight takes it, with the slice's and the job's identities."""
    result = failed("phase", good("phase", phase_job_slice_count=3, phase_job_slice="7", phase_job_slice_group="6"))
    assert [(f["field"], f["setting"]) for f in result] == [("phase_job_slice_count", "dra_gate_job_slice_count")]
    assert "runs once per gate over the whole inventory" in result[0]["reason"]
    assert "job_slice_count 1" in result[0]["reason"]
    sliced = good("phase", phase_name="preflight", phase_sliceable=True, phase_job_slice_count="3")
    assert [f["field"] for f in failed("phase", sliced)] == ["phase_job_slice", "phase_job_slice_group"]
    assert failed("phase", dict(sliced, phase_job_slice="412", phase_job_slice_group="411")) == []
    assert [f["field"] for f in failed("phase", dict(sliced, phase_job_slice="a b", phase_job_slice_group="411"))] == [
        "phase_job_slice"]
    assert [f["field"] for f in failed("phase", good("phase", phase_job_slice_count=0))] == ["phase_job_slice_count"]
