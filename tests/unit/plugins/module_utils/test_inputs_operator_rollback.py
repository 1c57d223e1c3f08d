# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""module_utils/inputs/operator_rollback.py: one rule per condition of the rollback's inputs; the defaults pass,
each mistake names only its setting, and every value the role's argument spec would refuse is refused by the rules
first (the spec is validated per host; the rules run once, on the controller, in the playbook's pre_tasks)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest
import yaml

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.inputs import rules as inputs
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.inputs import operator_rollback as ior
from ansible_collections.gpufleet.dra_gate.plugins.modules import input_check

ROLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..", "roles", "operator_rollback")
KUBECONFIG = os.path.abspath(__file__)  # any existing file on the controller


def good(**over):
    values = {
        "operator_rollback_evidence_root": "/var/lib/dra-gate/evidence", "operator_rollback_run_id": "prod-2612",
        "operator_rollback_kubeconfig": KUBECONFIG, "operator_rollback_kube_context": "",
        "operator_rollback_release": "gpu-operator", "operator_rollback_namespace": "gpu-operator",
        "operator_rollback_deployment": "gpu-operator", "operator_rollback_charts": {},
        "operator_rollback_helm_backend": "auto", "operator_rollback_helm_binary": "",
        "operator_rollback_helm_timeout": 600, "operator_rollback_wait_timeout": 600,
        "operator_rollback_restore": ["crds", "custom_resources", "gpu_nodes"],
        "operator_rollback_hooks": [], "operator_rollback_control_suite_file": "",
        "operator_rollback_control_suite": {}, "operator_rollback_control_suite_timeout": 900,
        "operator_rollback_reason": "manual rollback", "operator_rollback_decision_at": ""}
    values.update(over)
    values["__context__"] = {}
    return values


def failed(values):
    return inputs.failures(ior.RULES, values)


def test_registered():
    assert input_check.RULES["operator_rollback"] is ior.RULES
    documented = yaml.safe_load(input_check.DOCUMENTATION)["options"]["role"]["choices"]
    assert "operator_rollback" in documented
    assert sorted(documented) == sorted(input_check.RULES)


def test_the_defaults_pass():
    assert failed(good()) == []
    assert failed(good(operator_rollback_restore=[], operator_rollback_hooks=[KUBECONFIG],
                       operator_rollback_decision_at="2026-12-02T10:00:00Z", operator_rollback_helm_backend="cli",
                       operator_rollback_helm_timeout="120")) == []
    assert failed(good(operator_rollback_decision_at="2026-12-02T10:00:00.123456Z")) == []


@pytest.mark.parametrize("field, value, reason", [
    ("operator_rollback_evidence_root", "evidence", "it is a relative path"),
    ("operator_rollback_run_id", "", "it is empty"),
    ("operator_rollback_run_id", "../prod", "it has characters other than letters, digits and ._- (or is too long)"),
    ("operator_rollback_kube_context", None, "it is not a string"),
    ("operator_rollback_release", "", "it is empty"),
    ("operator_rollback_namespace", " ", "it is empty"),
    ("operator_rollback_deployment", "", "it is empty"),
    ("operator_rollback_charts", ["26.3.1"], "it is not a mapping"),
    ("operator_rollback_helm_backend", "kubectl", "it is not one of auto|cli|library"),
    ("operator_rollback_helm_binary", None, "it is not a string"),
    ("operator_rollback_helm_timeout", 0, "it is not above 0"),
    ("operator_rollback_helm_timeout", "1.5", "it is not a whole number"),
    ("operator_rollback_wait_timeout", "ten", "it is not a whole number"),
    ("operator_rollback_control_suite_timeout", -1, "it is not a whole number"),
    ("operator_rollback_restore", ["crds", "etcd"], "'etcd' in it is not a restore section"),
    ("operator_rollback_control_suite_file", None, "it is not a string"),
    ("operator_rollback_control_suite", "suite.yml", "it is not a mapping"),
    ("operator_rollback_reason", 42, "it is not a string"),
    ("operator_rollback_decision_at", "yesterday", "it is not an RFC 3339 UTC time"),
    ("operator_rollback_decision_at", "2026-12-02T10:00:00+01:00", "it is not an RFC 3339 UTC time"),
    ("operator_rollback_decision_at", "2026-12-02T10:00:00.1234567Z", "it is not an RFC 3339 UTC time"),
])
def test_each_mistake_names_only_its_setting(field, value, reason):
    assert [(f["field"], f["reason"]) for f in failed(good(**{field: value}))] == [(field, reason)]


def test_the_kubeconfig_empty_or_missing_is_named_once():
    assert [(f["setting"], f["reason"]) for f in failed(good(operator_rollback_kubeconfig=""))] == [
        ("dra_gate_kubeconfig", "it is empty")]
    [item] = failed(good(operator_rollback_kubeconfig="/nonexistent/kubeconfig"))
    assert (item["setting"], item["reason"]) == ("dra_gate_kubeconfig", "there is no such file on the controller")
    assert inputs.message("operator_rollback", [item]) == (
        "operator_rollback: 1 input wrong, nothing was changed:\n- dra_gate_kubeconfig (role variable "
        "operator_rollback_kubeconfig): there is no such file on the controller; got '/nonexistent/kubeconfig'; "
        "expected an existing kubeconfig file on the controller.")


def test_lists_of_the_wrong_form_and_missing_hooks():
    [item] = failed(good(operator_rollback_restore="crds"))
    assert (item["setting"], item["reason"]) == ("dra_gate_rollback_restore", "it is not a list")
    [item] = failed(good(operator_rollback_hooks="/srv/hook.yml"))
    assert (item["setting"], item["reason"]) == ("dra_gate_rollback_hooks", "it is not a list")
    [item] = failed(good(operator_rollback_hooks=[KUBECONFIG, "/nonexistent/a.yml", "/nonexistent/b.yml"]))
    assert item["reason"] == "no such task file on the controller: /nonexistent/a.yml, /nonexistent/b.yml"
    [item] = failed(good(operator_rollback_hooks=[1]))
    assert item["reason"] == "1 in it is not a string"


def test_several_mistakes_are_all_named_in_one_message():
    found = failed(good(operator_rollback_helm_backend="x", operator_rollback_restore=["etcd"],
                        operator_rollback_decision_at="now"))
    text = inputs.message("operator_rollback", found)
    assert text.startswith("operator_rollback: 3 inputs wrong, nothing was changed:\n")
    assert [line.split(" ")[1] for line in text.splitlines()[1:]] == [
        "dra_gate_helm_backend", "dra_gate_rollback_restore", "dra_gate_rollback_decision_at"]


def test_the_module_fails_naming_the_settings(run_module):
    values = {k: v for k, v in good(operator_rollback_helm_backend="kubectl").items() if k != "__context__"}
    result = run_module(input_check, {"role": "operator_rollback", "values": values})
    assert result["failed"] is True and result["checked"] == len(ior.RULES)
    assert [f["setting"] for f in result["failed_inputs"]] == ["dra_gate_helm_backend"]
    ok = run_module(input_check, {"role": "operator_rollback", "values": {k: v for k, v in good().items() if k != "__context__"}})
    assert ok.get("failed") is not True and ok["failed_inputs"] == []


def _spec():
    with open(os.path.join(ROLE, "meta", "argument_specs.yml")) as handle:
        options = yaml.safe_load(handle)["argument_specs"]["main"]["options"]
    keep = ("type", "elements", "choices", "required", "default")
    return {name: {key: value for key, value in spec.items() if key in keep} for name, spec in options.items()}


CANDIDATES = ["abc", "", " ", "-1", -1, 0, 1, 1.5, "1.5", True, "yes", None, [], [1], ["x"], {}, {"a": 1},
              "auto", "library", "/abs/path", "rel/path", ["crds"], ["etcd"], "a=1", "2026-12-02T10:00:00Z"]


def test_every_option_of_the_argument_spec_has_a_rule():
    assert set(_spec()) == {rule.field for rule in ior.RULES}


@pytest.mark.parametrize("field", sorted(_spec()))
def test_whatever_the_argument_spec_refuses_the_rules_refuse(field):
    """The argument spec runs per host after the check: it must never be the one to refuse a value."""
    validator = ArgumentSpecValidator(_spec())
    base = {name: value for name, value in good().items() if name != "__context__"}
    for value in CANDIDATES:
        params = dict(base, **{field: value})
        if validator.validate(params).error_messages:
            assert [f["field"] for f in failed(good(**{field: value}))].count(field) >= 1, (field, value)
