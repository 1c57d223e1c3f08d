# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""helm_values: the explicit merge of captured user values and overrides (Helm's coalesce rules:
maps merge, lists and scalars replace, null deletes) and the values diff (structured and text)."""

from __future__ import annotations

import copy
import json
import os

import pytest

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.phases import helm_values
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.phases.helm_values import (
    ValuesError,
    merge_maps,
    merge_values,
    plan,
    unified_diff,
    values_diff,
)

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))),
                        "fixtures", "helm")


def fixture_json(*parts):
    with open(os.path.join(FIXTURES, *parts)) as handle:
        return json.load(handle)


# -- merge ---------------------------------------------------------------------------------------


def test_nested_maps_merge_key_by_key():
    user = {"driver": {"version": "580.95.05", "repository": "nvcr.io/nvidia", "licensing": {"enabled": True}}}
    merged = merge_values(user, {"driver": {"version": "580.126.16", "licensing": {"configMapName": "lic"}}})
    assert merged == {"driver": {"version": "580.126.16", "repository": "nvcr.io/nvidia",
                                 "licensing": {"enabled": True, "configMapName": "lic"}}}


def test_lists_and_scalars_replace():
    user = {"toolkit": {"env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]}, "replicas": 1}
    merged = merge_values(user, {"toolkit": {"env": [{"name": "C", "value": "3"}]}, "replicas": 3})
    assert merged == {"toolkit": {"env": [{"name": "C", "value": "3"}]}, "replicas": 3}
    assert merge_values({"args": ["--a", "--b"]}, {"args": []}) == {"args": []}


def test_null_deletes_the_key_and_nested_nulls_are_dropped():
    user = {"cdi": {"enabled": True, "default": False}, "extra": {"x": 1}}
    merged = merge_values(user, {"cdi": {"default": None}, "extra": None, "absent": None,
                                 "new": {"keep": 1, "drop": None, "deep": {"drop": None}}})
    assert merged == {"cdi": {"enabled": True}, "new": {"keep": 1, "deep": {}}}


def test_a_null_already_in_the_user_values_is_kept():
    # the user deleted a chart default with null: that is part of what the release runs with
    assert merge_values({"nfd": None, "a": 1}, {"a": 2}) == {"nfd": None, "a": 2}


def test_type_changes_take_the_override():
    assert merge_values({"a": {"b": 1}}, {"a": "flat"}) == {"a": "flat"}
    assert merge_values({"a": "flat"}, {"a": {"b": 1}}) == {"a": {"b": 1}}
    assert merge_values({"a": [1]}, {"a": {"b": 1}}) == {"a": {"b": 1}}
    assert merge_values({"a": {"b": 1}}, {"a": [1]}) == {"a": [1]}


def test_several_overrides_apply_in_order_and_inputs_stay_untouched():
    user = {"a": {"b": [1, 2], "c": 1}}
    first, second = {"a": {"c": 2}}, {"a": {"c": 3, "d": {"e": 1}}}
    snapshot = copy.deepcopy((user, first, second))
    merged = merge_values(user, first, second)
    assert merged == {"a": {"b": [1, 2], "c": 3, "d": {"e": 1}}}
    assert (user, first, second) == snapshot
    merged["a"]["b"].append(3)
    merged["a"]["d"]["e"] = 9
    assert (user, first, second) == snapshot


def test_none_inputs_are_empty_and_bad_inputs_refused():
    assert merge_values(None) == {} and merge_values(None, None) == {} and merge_values({"a": 1}, None) == {"a": 1}
    with pytest.raises(ValuesError, match="user values: values must be a map"):
        merge_values([1, 2])
    with pytest.raises(ValuesError, match="override 1: key 1 at a is not a string"):
        merge_values({}, {"a": {1: "x"}})


def test_the_recorded_release_values_merge_like_helm():
    captured = fixture_json("library-4.2.3", "get-values.json")
    merged = merge_values(captured, {"driver": {"version": "595.91.07"}, "devicePlugin": {"version": "v0.20.0"}})
    assert merged["driver"]["version"] == "595.91.07" and merged["devicePlugin"] == {"version": "v0.20.0"}
    assert dict((k, v) for k, v in merged.items() if k not in ("driver", "devicePlugin")) == dict(
        (k, v) for k, v in captured.items() if k not in ("driver", "devicePlugin"))


def test_merge_maps_is_helms_file_merge_and_keeps_nulls():
    assert merge_maps({"a": {"b": 1, "c": 2}, "l": [1]}, {"a": {"b": None}, "l": [2]}) == {"a": {"b": None, "c": 2}, "l": [2]}


# -- diff ----------------------------------------------------------------------------------------


def test_unchanged_values_give_an_empty_diff():
    values = {"driver": {"version": "580.95.05"}, "toolkit": {"env": [{"name": "A"}]}, "enabled": True}
    assert values_diff(values, copy.deepcopy(values)) == []
    assert unified_diff(values, copy.deepcopy(values)) == ""
    assert plan(values, {})["changed"] is False
    same_version = {"driver": {"version": "580.95.05"}}
    assert plan(values, same_version) == {"values": values, "diff": [], "diff_text": "", "changed": False}


def test_diff_of_nested_maps_lists_nulls_and_type_changes():
    before = {"driver": {"version": "580.95.05", "repository": "nvcr.io/nvidia"}, "toolkit": {"env": [{"name": "A"}]},
              "extra": {"x": 1}, "mig": {"strategy": "single"}, "replicas": 1}
    after = merge_values(before, {"driver": {"version": "580.126.16"}, "toolkit": {"env": [{"name": "B"}]},
                                  "extra": None, "mig": "none", "cdi": {"enabled": True}})
    assert values_diff(before, after) == [
        {"path": "cdi", "before": None, "after": {"enabled": True}, "change": "added"},
        {"path": "driver.version", "before": "580.95.05", "after": "580.126.16", "change": "changed"},
        {"path": "extra", "before": {"x": 1}, "after": None, "change": "removed"},
        {"path": "mig", "before": {"strategy": "single"}, "after": "none", "change": "changed"},
        {"path": "toolkit.env", "before": [{"name": "A"}], "after": [{"name": "B"}], "change": "changed"},
    ]


@pytest.mark.parametrize("before, after", [
    (True, 1), (1, "1"), ("true", True), (0, False), (None, 0), ([1], [True]), ({"a": 1}, {"a": True}),
])
def test_yaml_typed_values_differ(before, after):
    assert values_diff({"k": before}, {"k": after}) != []


def test_integer_and_float_of_the_same_value_are_the_same():
    assert values_diff({"k": 1}, {"k": 1.0}) == []


def test_paths_escape_dots_and_round_trip():
    diff = values_diff({"nodeSelector": {"nvidia.com/gpu.present": "true"}}, {"nodeSelector": {"nvidia.com/gpu.present": "false"}})
    assert diff[0]["path"] == "nodeSelector.nvidia\\.com/gpu\\.present"
    assert helm_values.split_path(diff[0]["path"]) == ["nodeSelector", "nvidia.com/gpu.present"]
    assert helm_values.split_path(helm_values.join_path(["a\\b", "c.d", ""])) == ["a\\b", "c.d", ""]


def test_the_diff_does_not_alias_the_inputs():
    before, after = {"a": [1]}, {"a": [2]}
    diff = values_diff(before, after)
    diff[0]["after"].append(3)
    assert after == {"a": [2]}


def test_unified_text_form():
    text = unified_diff({"driver": {"version": "1"}, "keep": True}, {"driver": {"version": "2"}, "keep": True})
    lines = text.splitlines()
    assert lines[0] == "--- values (captured user values)" and lines[1] == "+++ values (merged for the upgrade)"
    assert '-    "version": "1"' in lines and '+    "version": "2"' in lines
    assert text.endswith("\n")


def test_redacted_keys_show_a_digest_that_still_changes():
    before = {"licensing": {"nlsToken": "secret-1"}, "driver": {"version": "1"}}
    after = {"licensing": {"nlsToken": "secret-2"}, "driver": {"version": "2"}}
    diff = values_diff(before, after, redact=["nlstoken"])
    token = [d for d in diff if d["path"] == "licensing.nlsToken"][0]
    assert token["before"].startswith("<redacted sha256:") and token["after"].startswith("<redacted sha256:")
    assert token["before"] != token["after"]
    text = unified_diff(before, after, redact=["nlsToken"])
    assert "secret-1" not in text and "secret-2" not in text and "redacted" in text
    # a redacted map is shown as one digest, whatever is inside
    whole = values_diff({"auth": {"user": "a", "password": "p"}}, {"auth": {"user": "a", "password": "q"}}, redact=["auth"])
    assert [(d["path"], d["change"]) for d in whole] == [("auth.password", "changed")]
    assert whole[0]["before"].startswith("<redacted sha256:") and whole[0]["after"].startswith("<redacted sha256:")


def test_plan_gives_values_diff_and_text():
    result = plan({"driver": {"version": "1"}}, {"driver": {"version": "2"}, "extra": None})
    assert result["values"] == {"driver": {"version": "2"}}
    assert result["diff"] == [{"path": "driver.version", "before": "1", "after": "2", "change": "changed"}]
    assert result["changed"] is True and result["diff_text"].startswith("--- values (captured user values)\n")
