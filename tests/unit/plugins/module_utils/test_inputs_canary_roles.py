# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""module_utils/inputs/{dra_canary,dra_acceptance,containerd_cdi}.py: one rule per condition of each role's inputs;
the documented defaults (plus the settings a run must give) pass, each mistake names only its setting, and whatever
the role's argument spec would refuse the rules refuse first (the spec is validated per host, after the check)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import functools
import importlib
import os

import pytest
import yaml

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.inputs import rules as inputs
from ansible_collections.gpufleet.dra_gate.plugins.modules import input_check

from setting_names import role_variable

ROLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..", "roles")
NAMES = ("dra_canary", "dra_acceptance", "containerd_cdi")
# what a run gives besides the documented defaults
GIVEN = {
    "dra_canary": {"dra_canary_run_id": "dra-2612", "dra_canary_kubeconfig": "/etc/dra-gate/dra-canary.kubeconfig",
                   "dra_canary_operator_charts": {"26.7.0": {"path": "/charts/gpu-operator-v26.7.0.tgz", "sha256": "0" * 64}}},
    "dra_acceptance": {"dra_acceptance_run_id": "dra-2612", "dra_acceptance_kubeconfig": "/etc/dra-gate/dra-canary.kubeconfig"},
    "containerd_cdi": {},
}


def rules(role):
    return importlib.import_module("ansible_collections.gpufleet.dra_gate.plugins.module_utils.inputs." + role).RULES


def spec(role):
    return copy.deepcopy(_spec(role))


@functools.lru_cache(maxsize=None)
def _spec(role):
    with open(os.path.join(ROLES, role, "meta", "argument_specs.yml")) as handle:
        options = yaml.safe_load(handle)["argument_specs"]["main"]["options"]
    keep = ("type", "elements", "choices", "required", "default")
    return {name: {key: value for key, value in option.items() if key in keep} for name, option in options.items()}


def good(role, **over):
    values = {name: option.get("default") for name, option in spec(role).items()}
    values = {name: "/var/lib/dra-gate/evidence" if value == "$PWD/evidence" else value for name, value in values.items()}
    values.update(GIVEN[role])
    values.update(over)
    return values


@pytest.mark.parametrize("role", NAMES)
def test_registered_and_complete(role):
    assert input_check.RULES[role] is rules(role)
    assert role in yaml.safe_load(input_check.DOCUMENTATION)["options"]["role"]["choices"]
    assert set(spec(role)) == {rule.field for rule in rules(role)}


@pytest.mark.parametrize("role", NAMES)
def test_the_defaults_pass(role):
    assert inputs.failures(rules(role), good(role)) == []


@pytest.mark.parametrize("role, field, value, reason", [
    ("dra_canary", "dra_canary_target_operator_version", "26.7", "it names no single release"),
    ("dra_canary", "dra_canary_target_operator_version", "26.6.2", "it is not a 26.7 release"),
    ("dra_canary", "dra_canary_run_id", "", "it is empty"),
    ("dra_canary", "dra_canary_kubeconfig", "", "it is empty"),
    ("dra_canary", "dra_canary_operator_charts", {}, "it is empty"),
    ("dra_canary", "dra_canary_isolation", "pool", "it is not one of cluster|group"),
    ("dra_canary", "dra_canary_taints", ["gpufleet.io/dra-canary"], "'gpufleet.io/dra-canary' in it is not key[=value]:Effect"),
    ("dra_canary", "dra_canary_feature_gates", {"PassthroughSupport": "yes"}, "the gate PassthroughSupport is not true or false"),
    ("dra_canary", "dra_canary_smoke", "false", "it is not true or false (a YAML boolean"),
    ("dra_canary", "dra_canary_helm_timeout", 0, "it is not above 0"),
    ("dra_canary", "dra_canary_passthrough_guard", "race", "it is not one of serialize|refuse"),
    ("dra_acceptance", "dra_acceptance_namespace", "DRA_Acceptance", "it is not a DNS label"),
    ("dra_acceptance", "dra_acceptance_kinds", ["template", "vfio"], "'vfio' in it is not one of"),
    ("dra_acceptance", "dra_acceptance_kinds", [], "it is empty"),
    ("dra_acceptance", "dra_acceptance_count", "many", "it is not a whole number"),
    ("dra_acceptance", "dra_acceptance_canary_taints", "a=b:NoSchedule", "it is not a list"),
    ("dra_acceptance", "dra_acceptance_timeout", 0, "it is not above 0"),
    ("dra_acceptance", "dra_acceptance_prometheus_url", "prometheus:9090", "it is not an http(s) URL"),
    ("dra_acceptance", "dra_acceptance_disruptions", ["device_taint"], "an item of it is not a mapping"),
    ("containerd_cdi", "containerd_cdi_spec_dirs", ["/etc/cdi", "var/run/cdi"], "'var/run/cdi' in it is not an absolute path"),
    ("containerd_cdi", "containerd_cdi_spec_dirs", [], "it is empty"),
    ("containerd_cdi", "containerd_cdi_config", "config.toml", "it is a relative path"),
    ("containerd_cdi", "containerd_cdi_restart_command", "systemctl restart containerd", "it is not a list"),
    ("containerd_cdi", "containerd_cdi_restart_timeout", "0", "it is not above 0"),
    ("containerd_cdi", "containerd_cdi_run_dir", "relative", "it is a relative path"),
])
def test_each_mistake_names_only_its_setting(role, field, value, reason):
    result = inputs.failures(rules(role), good(role, **{field: value}))
    assert [f["field"] for f in result] == [field], result
    assert result[0]["reason"].startswith(reason), result[0]
    assert role_variable(role, result[0]["setting"]) == field, result[0]


def test_the_canary_pool_is_checked_alike_by_the_build_and_the_acceptance_tests():
    canary = {r.setting: r for r in rules("dra_canary")}
    acceptance = {r.setting: r for r in rules("dra_acceptance")}
    for setting in ("dra_gate_canary_labels", "dra_gate_canary_taints", "dra_gate_kubeconfig", "dra_gate_run_id"):
        assert canary[setting].test is acceptance[setting].test, setting


CANDIDATES = ["abc", "", " ", "-1", -1, 0, 1, 1.5, "1.5", True, "yes", "on", "1", None, [], [1], ["x"], {}, {"a": 1},
              "/abs/path", "rel/path", "26.7", "1,2", "a=b", ["/abs"], [{"kind": "x"}]]


@pytest.mark.parametrize("role", NAMES)
def test_whatever_the_argument_spec_refuses_the_rules_refuse(role):
    validator = ArgumentSpecValidator(spec(role))
    for field in sorted(spec(role)):
        for value in CANDIDATES:
            if validator.validate(good(role, **{field: value})).error_messages:
                assert [f["field"] for f in inputs.failures(rules(role), good(role, **{field: value}))] == [field], (field, value)
