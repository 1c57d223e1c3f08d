# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gate policy: its JSON Schema (checked with the jsonschema library, the published copy equal to the
code's), the example policy valid, and every invalid policy a clear error naming the field."""

from __future__ import annotations

import copy
import json
import os

import jsonschema
import pytest
import yaml

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.evidence import decision_schema
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.judges import gate_policy as gp

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
EXAMPLE = os.path.join(REPO, "inventories", "gate_policy.example.yml")


def example():
    with open(EXAMPLE, encoding="utf-8") as handle:
        return yaml.safe_load(handle)


@pytest.mark.parametrize("name, schema", [("gate-policy.schema.json", gp.SCHEMA),
                                          ("decision-record.schema.json", decision_schema.SCHEMA)])
def test_the_published_schemas_are_the_code_s_and_valid(name, schema):
    with open(os.path.join(REPO, "docs", name), encoding="utf-8") as handle:
        assert json.load(handle) == json.loads(json.dumps(schema)), "regenerate docs/%s from the code" % name
    jsonschema.Draft202012Validator.check_schema(schema)


def test_the_example_policy_is_valid_and_names_every_gate_s_owner():
    policy = gp.check(example(), jsonschema.Draft202012Validator)
    assert set(policy["owners"]) == set(gp.GATE_IDS)
    assert set(policy["thresholds"]) == set(gp.THRESHOLD_OF.values())
    assert policy["exceptions"] == [] and policy["exception_warning_days"] == 7


def _set(path, value):
    def change(policy):
        target = policy
        for part in path[:-1]:
            target = target[part]
        if value is KeyError:
            del target[path[-1]]
        else:
            target[path[-1]] = value
    return change


@pytest.mark.parametrize("change, message", [
    (_set(["thresholds", "claim_success_rate_min_percent"], "high"),
     "policy.thresholds.claim_success_rate_min_percent: 'high' is not of type 'number'; expected a percent, 0 to 100"),
    (_set(["thresholds", "claim_success_rate_min_percent"], 120), "expected a percent, 0 to 100"),
    (_set(["thresholds", "rollback_duration_max_seconds"], 0), "policy.thresholds.rollback_duration_max_seconds: "),
    (_set(["thresholds", "p99_max"], 1), "policy.thresholds.p99_max: unknown field; expected one of "),
    (_set(["approver"], KeyError), "policy.approver: missing; expected who approves the promotion"),
    (_set(["approver"], "  "), "policy.approver: "),
    (_set(["schema_version"], 2), "policy.schema_version: "),
    (_set(["max_evidence_age_days"], 0), "policy.max_evidence_age_days: 0 is less than the minimum of 1"),
    (_set(["required_phases"], ["preflight", "warp"]), "policy.required_phases[1]: 'warp' is not one of"),
    (_set(["owners", "nosuch"], "x"), "policy.owners: 'nosuch' is not one of"),
    (_set(["exceptions"], [{"gate": "cleanup", "reason": "r", "accepted_by": "a", "expires": "2027-01-01"}]),
     "policy.exceptions[0].gate: 'cleanup' is not one of"),
    (_set(["exceptions"], [{"gate": "claim_success", "reason": "r", "accepted_by": "a", "expires": "2027-02-30"}]),
     "policy.exceptions[0].expires: '2027-02-30' is no calendar date; expected YYYY-MM-DD"),
    (_set(["exceptions"], [{"gate": "claim_success", "reason": "r", "accepted_by": "a"}]),
     "policy.exceptions[0].expires: missing; expected a date, YYYY-MM-DD"),
])
def test_an_invalid_policy_names_the_field_and_the_expected_form(change, message):
    policy = example()
    change(policy)
    with pytest.raises(gp.PolicyError) as caught:
        gp.check(policy, jsonschema.Draft202012Validator)
    assert message in str(caught.value)


def test_the_policy_must_be_a_mapping():
    with pytest.raises(gp.PolicyError, match="policy: expected a mapping"):
        gp.check(["thresholds"], jsonschema.Draft202012Validator)


def test_an_exception_may_cover_a_local_threshold_only():
    assert set(gp.LOCAL_GATES) == set(gp.THRESHOLD_OF)
    policy = copy.deepcopy(example())
    for gate in ("numa_placement", "ownership", "taint_behaviour", "cleanup"):
        policy["exceptions"] = [{"gate": gate, "reason": "r", "accepted_by": "a", "expires": "2027-01-01"}]
        with pytest.raises(gp.PolicyError, match="expected a gate with a local threshold"):
            gp.check(policy, jsonschema.Draft202012Validator)
