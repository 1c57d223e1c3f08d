# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""module_utils/inputs/operator_upgrade.py (issue 28): the upgrade's inputs, one rule per condition. The defaults
pass; each mistake names only its setting (production without dra_gate_canary_run_id names that setting alone, a
bad choice of scope names the scope alone); whatever the role's argument spec (validated once per host) would
refuse, the rules refuse first, once; the role passes every ruled variable to the check."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

import pytest
import yaml

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.inputs import rules as inputs
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.inputs import operator_upgrade as iou

from setting_names import role_variable

ROLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..", "roles", "operator_upgrade")
KUBECONFIG = os.path.abspath(__file__)  # any file on the controller


def good(**over):
    values = {
        "operator_upgrade_evidence_root": "/var/lib/dra-gate/evidence", "operator_upgrade_run_id": "prod-2612",
        "operator_upgrade_kubeconfig": KUBECONFIG, "operator_upgrade_kube_context": "",
        "operator_upgrade_release": "gpu-operator", "operator_upgrade_namespace": "gpu-operator",
        "operator_upgrade_deployment": "gpu-operator", "operator_upgrade_target_operator_version": "26.7.0",
        "operator_upgrade_charts": {"v26.7.0": {"path": "/srv/charts/gpu-operator-v26.7.0.tgz", "sha256": "0" * 64}},
        "operator_upgrade_max_hops": 0, "operator_upgrade_scope": "canary",
        "operator_upgrade_canary_evidence_root": "/var/lib/dra-gate/evidence", "operator_upgrade_canary_run_id": "",
        "operator_upgrade_etcdutl": "", "operator_upgrade_etcdctl": "",
        "operator_upgrade_values": {}, "operator_upgrade_redact_values": [], "operator_upgrade_helm_backend": "auto",
        "operator_upgrade_helm_binary": "", "operator_upgrade_helm_timeout": 600, "operator_upgrade_wait_timeout": 600,
        "operator_upgrade_cdi_enabled": None, "operator_upgrade_control_suite_file": "", "operator_upgrade_control_suite": {},
        "operator_upgrade_control_suite_timeout": 900, "operator_upgrade_rollback_on_failure": False,
        "operator_upgrade_crd_timeout": 300}
    values.update(over)
    return values


def failed(values):
    return inputs.failures(iou.RULES, values)


def _spec():
    with open(os.path.join(ROLE, "meta", "argument_specs.yml")) as handle:
        options = yaml.safe_load(handle)["argument_specs"]["main"]["options"]
    keep = ("type", "elements", "choices", "required", "default")
    return {name: {key: value for key, value in spec.items() if key in keep} for name, spec in options.items()}


def test_the_defaults_and_the_forms_extra_vars_give_pass():
    assert failed(good()) == []
    assert failed(good(operator_upgrade_scope="production", operator_upgrade_canary_run_id="canary-2612",
                       operator_upgrade_target_operator_version="v26.7.0", operator_upgrade_max_hops="2",
                       operator_upgrade_helm_timeout="120", operator_upgrade_cdi_enabled="true",
                       operator_upgrade_rollback_on_failure="yes")) == []


def test_a_rule_for_every_default_and_every_option_of_the_argument_spec():
    with open(os.path.join(ROLE, "defaults", "main.yml")) as handle:
        defaults = yaml.safe_load(handle)
    fields = sorted(set(rule.field for rule in iou.RULES))
    assert sorted(defaults) == fields == sorted(_spec()) == sorted(good())
    # the README's setting, read by the role variable of the same name (the old second name is gone)
    assert defaults["operator_upgrade_target_operator_version"] == "{{ dra_gate_target_operator_version | default('26.7.0') }}"
    for name, value in defaults.items():
        assert any(role_variable("operator_upgrade", s) == name for s in re.findall(r"dra_gate_\w+", str(value))), name


def test_whatever_the_argument_spec_refuses_the_rules_refuse_first():
    validator = ArgumentSpecValidator(_spec())
    assert not validator.validate(good()).error_messages
    assert inputs.spec_gaps(iou.RULES, good(), lambda values: bool(validator.validate(values).error_messages)) == []


def test_production_without_the_canary_run_id_names_that_setting_only():
    result = failed(good(operator_upgrade_scope="production"))
    assert [(f["field"], f["setting"]) for f in result] == [("operator_upgrade_canary_run_id", "dra_gate_canary_run_id")]
    assert inputs.message("operator_upgrade", result) == (
        "operator_upgrade: 1 input wrong, nothing was changed:\n"
        "- dra_gate_canary_run_id (role variable operator_upgrade_canary_run_id): a production run "
        "(dra_gate_upgrade_scope=production) needs the canary run that cleared this target; got ''; expected the run id "
        "of the canary run whose upgrade to the same target passed (-e dra_gate_canary_run_id=...).")


def test_a_bad_choice_names_only_that_setting():
    # the canary run id is empty too, but only a production run needs it: the scope is the one mistake
    result = failed(good(operator_upgrade_scope="prod"))
    assert inputs.message("operator_upgrade", result) == (
        "operator_upgrade: 1 input wrong, nothing was changed:\n"
        "- dra_gate_upgrade_scope (role variable operator_upgrade_scope): it is not one of canary|production; "
        "got 'prod'; expected canary or production.")
    result = failed(good(operator_upgrade_helm_backend="helm3"))
    assert [f["setting"] for f in result] == ["dra_gate_helm_backend"] and "auto|cli|library" in result[0]["reason"]


@pytest.mark.parametrize("field, value, reason", [
    ("operator_upgrade_evidence_root", "evidence", "it is a relative path"),
    ("operator_upgrade_run_id", "", "it is empty"),
    ("operator_upgrade_run_id", "prod 2612", "it has characters other than"),
    ("operator_upgrade_kubeconfig", "", "it is empty"),
    ("operator_upgrade_kubeconfig", "/nonexistent/kubeconfig", "there is no such file on the controller"),
    ("operator_upgrade_release", " ", "it is empty"),
    ("operator_upgrade_deployment", "", "it is empty"),
    ("operator_upgrade_target_operator_version", "26.7", "it names no single release"),
    ("operator_upgrade_target_operator_version", "latest", "it is not a release"),
    ("operator_upgrade_charts", {}, "it is empty"),
    ("operator_upgrade_charts", "charts.yml", "it is not a mapping"),
    ("operator_upgrade_max_hops", -1, "it is not a whole number"),
    ("operator_upgrade_canary_evidence_root", "rel", "it is a relative path"),
    ("operator_upgrade_values", [], "it is not a mapping"),
    ("operator_upgrade_redact_values", "password", "it is not a list"),
    ("operator_upgrade_helm_timeout", 0, "it is not above 0"),
    ("operator_upgrade_wait_timeout", "ten", "it is not a whole number"),
    ("operator_upgrade_control_suite_timeout", 1.5, "it is not a whole number"),
    ("operator_upgrade_crd_timeout", None, "it is not a whole number"),
    ("operator_upgrade_cdi_enabled", "maybe", "it is not true, false or null"),
    ("operator_upgrade_control_suite", "suite.yml", "it is not a mapping"),
    ("operator_upgrade_rollback_on_failure", "sometimes", "it is not true or false"),
])
def test_each_mistake_names_only_its_setting(field, value, reason):
    result = failed(good(**{field: value}))
    assert [f["field"] for f in result] == [field], result
    assert result[0]["reason"].startswith(reason), result[0]
    assert role_variable("operator_upgrade", result[0]["setting"]) == field, result[0]
    text = inputs.message("operator_upgrade", result)
    assert text.count("\n- ") == 1 and result[0]["setting"] in text and field in text


def test_a_bad_canary_run_id_in_production_and_several_mistakes_at_once():
    result = failed(good(operator_upgrade_scope="production", operator_upgrade_canary_run_id="../canary"))
    assert [f["setting"] for f in result] == ["dra_gate_canary_run_id"] and "characters other than" in result[0]["reason"]
    result = failed(good(operator_upgrade_kubeconfig="", operator_upgrade_scope="production", operator_upgrade_helm_timeout=-3))
    assert [f["setting"] for f in result] == ["dra_gate_kubeconfig", "dra_gate_canary_run_id", "dra_gate_helm_timeout"]
    assert inputs.message("operator_upgrade", result).startswith("operator_upgrade: 3 inputs wrong, nothing was changed:\n")


def test_the_role_checks_every_variable_once_on_the_controller_first():
    with open(os.path.join(ROLE, "tasks", "inputs.yml")) as handle:
        task = yaml.safe_load(handle)[0]
    call = task["gpufleet.dra_gate.input_check"]
    assert call["role"] == "operator_upgrade" and sorted(call["values"]) == sorted(good())
    assert all(value.replace(" ", "") == "{{%s}}" % name for name, value in call["values"].items())
    assert task["run_once"] is True and task["delegate_to"] == "localhost" and task["check_mode"] is False
    with open(os.path.join(ROLE, "tasks", "main.yml")) as handle:
        first = yaml.safe_load(handle)[0]
    assert first["ansible.builtin.import_tasks"] == "inputs.yml"
    with open(os.path.join(ROLE, "..", "..", "playbooks", "upgrade_operator.yml")) as handle:
        play = yaml.safe_load(handle)[0]
    include = play["pre_tasks"][0]["ansible.builtin.include_role"]
    assert include["name"] == "gpufleet.dra_gate.operator_upgrade" and include["tasks_from"] == "inputs"
    with open(os.path.join(ROLE, "meta", "argument_specs.yml")) as handle:
        assert "inputs" not in yaml.safe_load(handle)["argument_specs"]  # not validated per host
