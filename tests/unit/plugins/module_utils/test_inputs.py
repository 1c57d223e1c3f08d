# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""module_utils/inputs/rules.py and the input_check module (issue 28): one rule per condition, only the failed ones
reported, each with the setting, the role variable, what was given and what is expected; the shared tests; the
test helper that holds a role's rules to its argument spec; the module's registry, title and field names."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib
import os

import pytest

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.inputs import rules as i
from ansible_collections.gpufleet.dra_gate.plugins.modules import input_check

RULES = [
    i.Rule("r_scope", "dra_gate_upgrade_scope", "canary or production", i.choice("canary", "production")),
    i.Rule("r_canary", "dra_gate_canary_run_id", "the canary run id", i.run_id, when=lambda v: v.get("r_scope") == "production"),
    i.Rule("r_timeout", "dra_gate_helm_timeout", "whole seconds above 0", i.positive_whole_number),
    i.Rule("r_internal", None, "true or false", i.boolean),
]
GOOD = {"r_scope": "canary", "r_canary": "", "r_timeout": 600, "r_internal": True}


def test_only_the_failed_rules_in_rule_order():
    assert i.failures(RULES, GOOD) == []
    failed = i.failures(RULES, dict(GOOD, r_timeout="soon", r_scope="prod"))
    assert [f["field"] for f in failed] == ["r_scope", "r_timeout"]
    assert failed[0] == {"field": "r_scope", "setting": "dra_gate_upgrade_scope", "got": "'prod'", "expected": "canary or production",
                         "reason": "it is not one of canary|production"}


def test_a_rule_applies_only_when_its_condition_holds():
    assert [f["field"] for f in i.failures(RULES, dict(GOOD, r_scope="production"))] == ["r_canary"]
    # a wrong scope names the scope alone, not the rules that depend on it
    assert [f["field"] for f in i.failures(RULES, dict(GOOD, r_scope="prod", r_canary=""))] == ["r_scope"]


def test_a_missing_value_and_a_value_of_an_unexpected_shape():
    failed = i.failures(RULES, {"r_scope": "canary", "r_internal": False})
    assert [(f["field"], f["reason"], f["got"]) for f in failed] == [("r_timeout", "it is not set", "nothing (not set)")]

    def explodes(value, values=None):
        return value["key"]
    failed = i.failures([i.Rule("x", "dra_gate_x", "a mapping with key", explodes)], {"x": 3})
    assert failed[0]["reason"].startswith("it has the wrong form (")


def test_the_message_names_the_setting_the_role_variable_what_was_given_and_what_is_expected():
    text = i.message("role", i.failures(RULES, dict(GOOD, r_timeout=0)))
    assert text == ("role: 1 input wrong, nothing was changed:\n- dra_gate_helm_timeout (role variable r_timeout): it is not above 0; "
                    "got 0; expected whole seconds above 0.")
    text = i.message("role", i.failures(RULES, dict(GOOD, r_timeout=None, r_internal="maybe")))
    assert text.startswith("role: 2 inputs wrong, nothing was changed:\n") and text.count("\n- ") == 2
    assert "- r_internal: it is not true or false; got 'maybe'" in text  # no setting: the variable alone
    assert "got null" in text
    long = i.failures(RULES, dict(GOOD, r_scope="x" * 500))[0]["got"]
    assert long.startswith("'" + "x" * 200 + "...'") and "(500 characters)" in long


@pytest.mark.parametrize("test, good, bad", [
    (i.run_id, ["prod-2612", "a.b_c", "A" * 128], [("", "it is empty"), ("run\n", "it has characters"), ("../x", "it has characters"),
                                                   ("A" * 129, "it has characters"), (5, "it is not a string")]),
    (i.release, ["26.7.0", "v26.7.0"], [("26.7", "it names no single release"), ("26.7.0\nx", "it is not a release"),
                                        (26.7, "it is not a string")]),
    (i.whole_number, [0, "3", 12], [(-1, "it is not a whole number"), ("-1", "it is not a whole number"), (1.5, "it is not a whole"),
                                    (True, "it is not a whole number"), ("x", "it is not a whole number")]),
    (i.positive_whole_number, [1, "600"], [(0, "it is not above 0"), ("-5", "it is not a whole number"), (None, "it is not a whole")]),
    (i.positive_number, [0.5, "2.5", 3], [(0, "it is not above 0"), ("-1", "it is not above 0"), ("soon", "it is not a number")]),
    (i.non_negative_number, [0, "0.5"], [(-1, "it is below 0"), ("x", "it is not a number")]),
    (i.boolean, [True, False, "true", "no"], [("maybe", "it is not true or false"), (None, "it is not true or false"),
                                              (1, "it is not true or false")]),
    (i.boolean_or_null, [True, None, "false", "yes"], [("maybe", "it is not true, false or null"), ("", "it is not true, false")]),
    (i.absolute_path, ["/var/lib/x"], [("rel", "it is a relative path"), ("~/x", "it is a relative path (~ is not expanded"),
                                       ("", "it is empty"), (None, "it is not a path")]),
    (i.string_list, [[], ["a"]], [("a", "it is not a list"), ([1], "1 in it is not a string")]),
    (i.non_empty_mapping, [{"a": 1}], [({}, "it is empty"), ([], "it is not a mapping")]),
    (i.matching(r"^https?://[^,\s]+\Z", "not one URL"), ["https://h:2379", "http://x"],
     [("https://a,https://b", "not one URL"), ("https://a\n", "not one URL"), (True, "it is not a string"), ([], "it is not a string")]),
    (i.subset_of("etcd", "helm"), [[], ["helm", "etcd"]], [("etcd", "it is not a list"), (["etcd", "x"], "'x' in it is not one of etcd|helm")]),
])
def test_the_shared_tests(test, good, bad):
    for value in good:
        assert test(value, {}) is None, value
    for value, reason in bad:
        assert (test(value, {}) or "").startswith(reason), (value, test(value, {}))


def test_file_on_controller(tmp_path):
    path = tmp_path / "kubeconfig"
    path.write_text("{}")
    link = tmp_path / "link"
    link.symlink_to(path)
    assert i.file_on_controller(str(path)) is None and i.file_on_controller(str(link)) is None
    assert i.file_on_controller(str(tmp_path)) == "there is no such file on the controller"
    assert i.file_on_controller(str(tmp_path / "nope")) == "there is no such file on the controller"
    assert i.file_on_controller("") is None and i.file_on_controller(None) is None  # the non-empty rule's to report


def test_spec_gaps_finds_what_the_argument_spec_refuses_and_the_rules_do_not():
    def refuses(values):  # a spec with r_timeout type int only
        return not isinstance(values["r_timeout"], int) and not str(values["r_timeout"]).strip().lstrip("-").isdigit()
    assert i.spec_gaps(RULES, GOOD, refuses) == []
    loose = [r for r in RULES if r.field != "r_timeout"] + [i.Rule("r_timeout", "dra_gate_helm_timeout", "anything", i.string)]
    assert ("r_timeout", "1.5") in i.spec_gaps(loose, GOOD, refuses) and ("r_timeout", 1.5) not in i.spec_gaps(loose, GOOD, refuses)


def test_every_rules_module_is_registered_and_documented():
    directory = os.path.join(os.path.dirname(i.__file__))
    roles = sorted(name[:-3] for name in os.listdir(directory) if name.endswith(".py") and name not in ("__init__.py", "rules.py"))
    assert len(roles) >= 11, roles
    assert sorted(input_check.RULES) == roles
    for role in roles:
        module = importlib.import_module("ansible_collections.gpufleet.dra_gate.plugins.module_utils.inputs." + role)
        assert input_check.RULES[role] is module.RULES
        assert all(isinstance(rule, i.Rule) and (rule.setting is None or rule.setting.startswith("dra_gate_")) for rule in module.RULES)
    import yaml  # pylint: disable=import-outside-toplevel
    assert yaml.safe_load(input_check.DOCUMENTATION)["options"]["role"]["choices"] == roles


def test_the_module_names_only_the_failed_inputs_with_its_title_and_field_names(run_module):
    result = run_module(input_check, {"role": "phase", "title": "upgrade",
                                      "values": {"phase_name": "upgrade", "phase_evidence_root": "/ev", "phase_run_id": "",
                                                 "phase_run_id_required": True, "phase_fail_on": "block",
                                                 "phase_changes_cluster": True,
                                                 "phase_sliceable": False, "phase_job_slice_count": 1,
                                                 "phase_job_slice": "", "phase_job_slice_group": ""},
                                      "fields": {"phase_run_id": "operator_upgrade_run_id"}})
    assert result["failed"] is True and [f["field"] for f in result["failed_inputs"]] == ["operator_upgrade_run_id"]
    assert result["msg"].startswith("upgrade: 1 input wrong, nothing was changed:\n- dra_gate_run_id (role variable "
                                    "operator_upgrade_run_id): it is empty")
    result = run_module(input_check, {"role": "phase", "values": {"phase_name": "snapshot", "phase_evidence_root": "/ev",
                                                                  "phase_run_id": "run-1", "phase_run_id_required": True,
                                                                  "phase_fail_on": "block", "phase_changes_cluster": False,
                                                                  "phase_sliceable": False, "phase_job_slice_count": 1,
                                                                  "phase_job_slice": "", "phase_job_slice_group": ""}})
    assert not result.get("failed") and result["failed_inputs"] == [] and result["checked"] == 12 and result["changed"] is False
