# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""module_utils/inputs/preflight.py: one rule per condition of the preflight's inputs; the defaults pass, each
mistake names only its setting, whatever the role's argument spec would refuse the rules refuse first; and the one
version rule: a target operator version is a full release (v26.7.0 = 26.7.0) - 26.7 is refused by the preflight,
by compat_check and by the upgrade alike (issue 28)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest
import yaml

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.inputs import rules as inputs
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.inputs import operator_upgrade as inputs_operator_upgrade
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.inputs import preflight as ipf
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.compat.options import CompatError, normalize_target
from ansible_collections.gpufleet.dra_gate.plugins.modules import input_check

from setting_names import role_variable

ROLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..", "roles", "preflight")


def good(**over):
    values = {
        "preflight_evidence_root": "/var/lib/dra-gate/evidence", "preflight_run_id": "",
        "preflight_target_operator_version": "26.7.0", "preflight_target_kubernetes_version": "1.37.0",
        "preflight_target_allocation_mode": "device_plugin", "preflight_target_passthrough": False,
        "preflight_accept_alpha_passthrough": False, "preflight_cluster": {}, "preflight_kubeconfig": "",
        "preflight_kube_context": "", "preflight_releases": [], "preflight_matrix": "", "preflight_fail_on": "block",
        "preflight_node_root": "/", "preflight_node_commands": "auto", "preflight_containerd_config": "/etc/containerd/config.toml",
        "preflight_node_timeout": 30}
    values.update(over)
    return values


def failed(values, rules=None):
    return inputs.failures(ipf.RULES if rules is None else rules, values)


def test_registered():
    assert input_check.RULES["preflight"] is ipf.RULES
    assert "preflight" in yaml.safe_load(input_check.DOCUMENTATION)["options"]["role"]["choices"]


def test_the_defaults_pass():
    assert failed(good()) == []
    assert failed(good(preflight_run_id="prod-2612", preflight_target_operator_version="v26.7.0",
                       preflight_target_passthrough="true", preflight_node_timeout="2.5", preflight_target_kubernetes_version="",
                       preflight_cluster={"kubernetes_version": "1.36.4"}, preflight_releases=["26.3", "26.6.x"])) == []


def test_the_defaults_file_passes():
    with open(os.path.join(ROLE, "defaults", "main.yml")) as handle:
        defaults = yaml.safe_load(handle)
    assert sorted(defaults) == sorted(rule.field for rule in ipf.RULES)


@pytest.mark.parametrize("field, value, reason", [
    ("preflight_target_operator_version", "26.7", "it names no single release (major.minor.patch is needed)"),
    ("preflight_target_operator_version", "v26", "it names no single release"),
    ("preflight_target_operator_version", "latest", "it is not a release"),
    ("preflight_target_operator_version", "26.7.0-rc1", "it is not a release"),
    ("preflight_target_operator_version", 26.7, "it is not a string"),
    ("preflight_target_kubernetes_version", 1.3, "it is not a string (quote it"),
    ("preflight_target_kubernetes_version", "one-three-seven", "it is not a Kubernetes version"),
    ("preflight_target_allocation_mode", "banana", "it is not one of device_plugin|dra"),
    ("preflight_target_passthrough", "maybe", "it is not true or false"),
    ("preflight_evidence_root", "relative/dir", "it is a relative path"),
    ("preflight_run_id", "../up", "it has characters other than"),
    ("preflight_cluster", "1.37", "it is not a mapping"),
    ("preflight_releases", "26.3", "it is not a list"),
    ("preflight_fail_on", "sometimes", "it is not one of block|warn|never"),
    ("preflight_node_root", "tree", "it is a relative path"),
    ("preflight_node_commands", "live", "it is not one of auto|run|recorded|none"),
    ("preflight_node_timeout", 0, "it is not above 0"),
    ("preflight_node_timeout", "soon", "it is not a number"),
])
def test_each_mistake_names_only_its_setting(field, value, reason):
    result = failed(good(**{field: value}))
    assert [f["field"] for f in result] == [field], result
    assert result[0]["reason"].startswith(reason), result[0]
    setting = result[0]["setting"]
    assert role_variable("preflight", setting) == field, setting
    assert setting in inputs.message("preflight", result) and field in inputs.message("preflight", result)


def test_a_target_26_7_is_refused_by_the_preflight_the_compat_check_and_the_upgrade_alike():
    pre = failed(good(preflight_target_operator_version="26.7"))
    message = inputs.message("preflight", pre)
    assert ("- dra_gate_target_operator_version (role variable preflight_target_operator_version): it names no single "
            "release (major.minor.patch is needed); got '26.7'; expected a full release such as 26.7.0") in message
    upgrade = [rule for rule in inputs_operator_upgrade.RULES if rule.setting == "dra_gate_target_operator_version"]
    assert len(upgrade) == 1
    up = inputs.failures(upgrade, {upgrade[0].field: "26.7"})
    assert [f["reason"] for f in up] == [pre[0]["reason"]] and up[0]["setting"] == pre[0]["setting"]
    with pytest.raises(CompatError) as info:
        normalize_target({"operator_version": "26.7"}, "26.7.0")
    assert "'26.7': expected YY.MM.PP such as \"26.7.0\", a full release" in str(info.value)
    assert "dra_gate_target_operator_version" in str(info.value)


def test_the_compat_check_normalises_v_and_names_a_bad_matrix_default():
    assert normalize_target({"operator_version": "v26.7.0"}, None)["operator_version"].raw == "26.7.0"
    assert normalize_target({}, "26.7.0")["operator_version"].raw == "26.7.0"
    with pytest.raises(CompatError) as info:
        normalize_target({}, "26.3")
    assert "the matrix's defaults.target_operator_version" in str(info.value)


def _spec():
    with open(os.path.join(ROLE, "meta", "argument_specs.yml")) as handle:
        options = yaml.safe_load(handle)["argument_specs"]["main"]["options"]
    keep = ("type", "elements", "choices", "required", "default")
    return {name: {key: value for key, value in spec.items() if key in keep} for name, spec in options.items()}


CANDIDATES = ["abc", "", " ", "-1", -1, 0, 1, 1.5, "1.5", True, "yes", "on", "1", None, [], [1], ["x"], {}, {"a": 1},
              "/abs/path", "rel/path", "26.7", "1,2", "a=b"]


def test_every_option_of_the_argument_spec_has_a_rule():
    assert set(_spec()) == {rule.field for rule in ipf.RULES}


@pytest.mark.parametrize("field", sorted(_spec()))
def test_whatever_the_argument_spec_refuses_the_rules_refuse(field):
    """The argument spec runs per host after the check: it must never be the one to refuse a value."""
    validator = ArgumentSpecValidator(_spec())
    for value in CANDIDATES:
        if validator.validate(dict(good(), **{field: value})).error_messages:
            assert [f["field"] for f in failed(good(**{field: value}))] == [field], (field, value)
