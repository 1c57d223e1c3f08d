# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""module_utils/inputs/drain_waves.py: one rule per condition of the drain's inputs; the defaults pass, each
mistake names only its setting; the play scope checks only the inputs the play keywords read; and every value the
role's argument spec would refuse is refused by the rules first (so the spec, validated per host, never prints)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest
import yaml

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.inputs import rules as inputs
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.inputs import drain_waves as idw
from ansible_collections.gpufleet.dra_gate.plugins.modules import input_check

ROLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..", "roles", "drain_waves")
GROUPS = {"all": ["gpu-1", "gpu-2", "gpu-3"], "ungrouped": [], "gpu_nodes": ["gpu-1", "gpu-2", "gpu-3"],
          "wave_a": ["gpu-1"], "wave_b": ["gpu-2", "gpu-3"]}


def good(**over):
    values = {
        "drain_waves_evidence_root": "/var/lib/dra-gate/evidence", "drain_waves_run_id": "2026-12-kubelet-137",
        "drain_waves_kubeconfig": "/etc/kubeconfig", "drain_waves_kube_context": "",
        "drain_waves_sizes": [1, "10%", "25%"], "drain_waves_wave_groups": [], "drain_waves_hosts": "gpu_nodes",
        "drain_waves_max_fail_percentage": 0, "drain_waves_timeout": 600, "drain_waves_retry_interval": 5,
        "drain_waves_poll_interval": 0.5, "drain_waves_grace_period": "", "drain_waves_delete_emptydir_data": False,
        "drain_waves_delete_unmanaged": False, "drain_waves_eviction_fallback": "none",
        "drain_waves_fallback_after": 60, "drain_waves_maintenance_tasks": "", "drain_waves_expect_reboot": False,
        "drain_waves_restore_timeout": 900, "drain_waves_reschedule_timeout": 600,
        "drain_waves_max_failed_reschedules": 0}
    values.update(over)
    values["__context__"] = {"groups": GROUPS}
    return values


def failed(values, rules=None):
    return inputs.failures(idw.RULES if rules is None else rules, values)


def test_registered():
    assert input_check.RULES["drain_waves"] is idw.RULES
    assert "drain_waves" in input_check.DOCUMENTATION.split("choices:")[1].split("\n")[0]


def test_the_defaults_pass():
    assert failed(good()) == []
    assert failed(good(drain_waves_wave_groups=["wave_a", "wave_b"], drain_waves_hosts="nosuch")) == []
    assert failed(good(drain_waves_grace_period=30, drain_waves_expect_reboot="yes", drain_waves_timeout="1.5",
                       drain_waves_fallback_after=0, drain_waves_maintenance_tasks=__file__)) == []


@pytest.mark.parametrize("waves, shown", [
    ([0], "entry 0 (0): 0 is not a wave size"), (["0%"], "entry 0 ('0%'): 0% is not a wave size"),
    ([1, -1], "entry 1 (-1): a negative size"), ([1, 2.5], "entry 1 (2.5): 2.5 is not a whole number"),
    (["abc"], "entry 0 ('abc'): it is neither a whole number nor a percentage"), (["150%"], "150% is more than all the nodes"),
    ([], "it is empty"), ("1", "it is a string, not a list")])
def test_a_bad_wave_size_is_named_with_the_expected_form(waves, shown):
    [item] = failed(good(drain_waves_sizes=waves))
    assert item["setting"] == "dra_gate_drain_waves" and shown in item["reason"]
    text = inputs.message("drain_waves", [item])
    assert text.startswith("drain_waves: 1 input wrong, nothing was changed:\n- dra_gate_drain_waves (role variable drain_waves_sizes): ")
    assert 'expected a non-empty list of wave sizes, each a whole number above 0 (nodes in the wave) or a percentage above 0%' in text


def test_wave_groups():
    [item] = failed(good(drain_waves_wave_groups=["wave_a", "nosuch_pool"]))
    assert item["setting"] == "dra_gate_drain_wave_groups"
    assert item["reason"] == "entry 1 ('nosuch_pool') is not an inventory group; the inventory's groups are: gpu_nodes, wave_a, wave_b"
    [item] = failed(good(drain_waves_wave_groups="wave_a"))
    assert item["reason"].startswith("it is a string, not a list")
    [item] = failed(good(drain_waves_wave_groups=["wave_b", "gpu_nodes"]))
    assert item["reason"].startswith("a host is in more than one wave group: gpu-2 (wave_b, gpu_nodes)")
    assert item["expected"] == "groups that share no host (each host in one wave)"


def test_hosts_and_max_fail_percentage():
    [item] = failed(good(drain_waves_hosts="gpu_nodez"))
    assert item["setting"] == "dra_gate_drain_hosts" and "neither an inventory group nor a host" in item["reason"]
    assert failed(good(drain_waves_hosts="gpu_nodes:!gpu-2")) == []
    for bad in (101, -1, "abc", 1.5):
        [item] = failed(good(drain_waves_max_fail_percentage=bad))
        assert item["setting"] == "dra_gate_drain_max_fail_percentage", bad


def test_one_bad_timeout_names_only_that_setting():
    [item] = failed(good(drain_waves_timeout="ten"))
    assert (item["setting"], item["reason"]) == ("dra_gate_drain_timeout", "it is not a number")
    assert inputs.message("drain_waves", [item]) == (
        "drain_waves: 1 input wrong, nothing was changed:\n- dra_gate_drain_timeout (role variable drain_waves_timeout): "
        "it is not a number; got 'ten'; expected seconds above 0, such as 600 or 0.5.")


@pytest.mark.parametrize("field, value, reason", [
    ("drain_waves_run_id", "", "it is empty"), ("drain_waves_evidence_root", "evidence", "it is a relative path"),
    ("drain_waves_kubeconfig", "", "it is empty"), ("drain_waves_retry_interval", 0, "it is not above 0"),
    ("drain_waves_poll_interval", -1, "it is not above 0"), ("drain_waves_restore_timeout", "x", "it is not a number"),
    ("drain_waves_reschedule_timeout", None, "it is not a number"), ("drain_waves_fallback_after", -1, "it is below 0"),
    ("drain_waves_grace_period", "soon", "it is not a whole number"),
    ("drain_waves_eviction_fallback", "force", "it is not one of none|delete"),
    ("drain_waves_expect_reboot", "maybe", "it is not true or false"),
    ("drain_waves_delete_unmanaged", None, "it is not true or false"),
    ("drain_waves_maintenance_tasks", "tasks/reboot.yml", "it is a relative path"),
    ("drain_waves_maintenance_tasks", "/nonexistent/reboot.yml", "there is no such file on the controller"),
    ("drain_waves_maintenance_tasks", None, "it is not a string"),
    ("drain_waves_max_failed_reschedules", 1.5, "it is not a whole number"),
])
def test_each_mistake_names_only_its_setting(field, value, reason):
    assert [(f["field"], f["reason"]) for f in failed(good(**{field: value}))] == [(field, reason)]


def test_the_play_scope_checks_only_the_play_keywords_inputs():
    values = good(drain_waves_kubeconfig="", drain_waves_timeout="x", drain_waves_sizes=[0])
    values["__context__"]["scope"] = "play"
    assert [f["field"] for f in failed(values)] == ["drain_waves_sizes"]
    # keyword inputs only: the other fields may be missing altogether
    play = {name: values[name] for name in ("drain_waves_sizes", "drain_waves_wave_groups", "drain_waves_hosts",
                                            "drain_waves_max_fail_percentage", "__context__")}
    assert [f["field"] for f in failed(play)] == ["drain_waves_sizes"]
    assert {rule.field for rule in idw.PLAY_RULES} == {"drain_waves_sizes", "drain_waves_wave_groups",
                                                       "drain_waves_hosts", "drain_waves_max_fail_percentage"}


def _spec():
    with open(os.path.join(ROLE, "meta", "argument_specs.yml")) as handle:
        options = yaml.safe_load(handle)["argument_specs"]["start"]["options"]
    keep = ("type", "elements", "choices", "required", "default")
    return {name: {key: value for key, value in spec.items() if key in keep} for name, spec in options.items()}


CANDIDATES = ["abc", "", " ", "-1", -1, 0, 1, 1.5, "1.5", True, "yes", "on", "1", None, [], [1], ["x"], {}, {"a": 1},
              "none", "delete", "/abs/path", "rel/path", [0], ["0%"], "150%", "1,2"]


def test_every_option_of_the_argument_spec_has_a_rule():
    assert set(_spec()) == {rule.field for rule in idw.RULES}


@pytest.mark.parametrize("field", sorted(_spec()))
def test_whatever_the_argument_spec_refuses_the_rules_refuse(field):
    """The argument spec runs per host after the check: it must never be the one to refuse a value."""
    validator = ArgumentSpecValidator(_spec())
    base = {name: value for name, value in good().items() if name != "__context__"}
    for value in CANDIDATES:
        params = dict(base, **{field: value})
        if validator.validate(params).error_messages:
            assert [f["field"] for f in failed(good(**{field: value}))].count(field) >= 1, (field, value)
