# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gate policy (``gpufleet.dra_gate/gate-policy``, version 1): its JSON Schema and its checks.

The schema (:data:`SCHEMA`, published as ``docs/gate-policy.schema.json``; a unit test keeps the two
equal) is checked with the ``jsonschema`` library; :func:`check` then applies what a schema cannot
say and turns the first problem into one error naming the field and the expected form. The gates
and which of them are local (have a threshold) are :data:`GATES` (docs/decision.md).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import re

POLICY_SCHEMA_ID = "gpufleet.dra_gate/gate-policy"
POLICY_SCHEMA_VERSION = 1

#: phase keys a policy may require (docs/decision.md "Phases")
PHASE_KEYS = ("preflight", "snapshot", "upgrade_canary", "upgrade_production", "drain", "dra_canary",
              "dra_acceptance", "rollback")

#: gate id -> (decision, threshold name or None for a universal criterion), in worksheet order
GATES = (
    ("compatibility", "operator_upgrade", None),
    ("snapshot", "operator_upgrade", None),
    ("upgrade_canary", "operator_upgrade", None),
    ("upgrade_production", "operator_upgrade", None),
    ("ownership", "dra_promotion", None),
    ("runtime_cdi", "dra_promotion", None),
    ("claim_success", "dra_promotion", "claim_success_rate_min_percent"),
    ("allocation_latency_p95", "dra_promotion", "allocation_latency_p95_max_seconds"),
    ("cleanup", "dra_promotion", None),
    ("cleanup_defect_rate", "dra_promotion", "cleanup_defect_rate_max_percent"),
    ("numa_placement", "dra_promotion", None),
    ("taint_behaviour", "dra_promotion", None),
    ("restart_recovery", "dra_promotion", "restart_recovery_max_seconds"),
    ("drain_reschedule", "dra_promotion", "failed_reschedules_max"),
    ("rollback_time", "dra_promotion", "rollback_duration_max_seconds"),
)
GATE_IDS = tuple(g[0] for g in GATES)
LOCAL_GATES = tuple(g[0] for g in GATES if g[2])
THRESHOLD_OF = dict((g[0], g[2]) for g in GATES if g[2])

_TEXT = {"type": "string", "minLength": 1, "pattern": r"\S"}
_PERCENT = {"type": "number", "minimum": 0, "maximum": 100}
_SECONDS = {"type": "number", "exclusiveMinimum": 0}
DATE_RE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")

SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://gpufleet.example/dra_gate/gate-policy-1.schema.json",
    "title": "gpufleet.dra_gate gate policy, version 1",
    "description": "Local thresholds, required phases, owners, exceptions, the rollback trigger and the "
                   "promotion approver of a DRA gate decision (docs/decision.md).",
    "type": "object",
    "additionalProperties": False,
    "required": ["schema", "schema_version", "max_evidence_age_days", "required_phases", "thresholds", "owners",
                 "rollback_trigger", "approver"],
    "properties": {
        "schema": {"const": POLICY_SCHEMA_ID, "description": "the string %s" % POLICY_SCHEMA_ID},
        "schema_version": {"const": POLICY_SCHEMA_VERSION, "description": "the integer 1"},
        "max_evidence_age_days": {"type": "integer", "minimum": 1,
                                  "description": "whole days (1 or more): older evidence makes the decision incomplete"},
        "exception_warning_days": {"type": "integer", "minimum": 0,
                                   "description": "whole days (0 or more): an exception expiring sooner is a warning"},
        "required_phases": {"type": "array", "minItems": 1, "uniqueItems": True,
                            "items": {"enum": list(PHASE_KEYS), "description": "a phase key: %s" % ", ".join(PHASE_KEYS)},
                            "description": "a list of phase keys out of %s" % ", ".join(PHASE_KEYS)},
        "thresholds": {
            "type": "object", "additionalProperties": False,
            "description": "local thresholds; one missing makes its gate not measured (the decision incomplete)",
            "properties": {
                "claim_success_rate_min_percent": dict(_PERCENT, description="a percent, 0 to 100"),
                "allocation_latency_p95_max_seconds": dict(_SECONDS, description="seconds, more than 0"),
                "failed_reschedules_max": {"type": "integer", "minimum": 0, "description": "a count, 0 or more"},
                "cleanup_defect_rate_max_percent": dict(_PERCENT, description="a percent, 0 to 100"),
                "rollback_duration_max_seconds": dict(_SECONDS, description="seconds, more than 0 (the RTO)"),
                "restart_recovery_max_seconds": dict(_SECONDS, description="seconds, more than 0"),
            },
        },
        "owners": {"type": "object",
                   "propertyNames": {"enum": list(GATE_IDS), "description": "a gate id: %s" % ", ".join(GATE_IDS)},
                   "additionalProperties": dict(_TEXT, description="a named owner (a person or team)"),
                   "description": "gate id -> named owner; gate ids: %s" % ", ".join(GATE_IDS)},
        "exceptions": {
            "type": "array",
            "description": "accepted exceptions to local thresholds",
            "items": {
                "type": "object", "additionalProperties": False,
                "required": ["gate", "reason", "accepted_by", "expires"],
                "properties": {
                    "gate": {"enum": list(LOCAL_GATES),
                             "description": "a gate with a local threshold: %s" % ", ".join(LOCAL_GATES)},
                    "reason": dict(_TEXT, description="why the exception was accepted"),
                    "accepted_by": dict(_TEXT, description="who accepted it"),
                    "expires": {"type": "string", "pattern": DATE_RE.pattern,
                                "description": "a date, YYYY-MM-DD (the exception holds through that day, UTC)"},
                },
            },
        },
        "rollback_trigger": dict(_TEXT, description="what triggers the rollback, in words"),
        "approver": dict(_TEXT, description="who approves the promotion"),
    },
}


class PolicyError(ValueError):
    """An invalid policy; the message names the field and the expected form."""


def _path(parts):
    text = "policy"
    for part in parts:
        text += "[%d]" % part if isinstance(part, int) else ".%s" % part
    return text


def _expected(schema, error):
    description = (error.schema or {}).get("description") if isinstance(error.schema, dict) else None
    if description:
        return description
    return "the form in docs/gate-policy.schema.json"


def check(policy, validator_class):
    """The checked policy (defaults filled in: ``exception_warning_days`` 7, ``exceptions`` []) or
    :class:`PolicyError`. ``validator_class`` is ``jsonschema.Draft202012Validator`` (passed in, so this
    module imports without the library and the caller reports a missing one)."""
    if not isinstance(policy, dict):
        raise PolicyError("policy: expected a mapping (the gate policy file's top level), got %s"
                          % type(policy).__name__)
    validator = validator_class(SCHEMA)
    errors = sorted(validator.iter_errors(policy), key=lambda e: (list(e.absolute_path), e.validator))
    if errors:
        error = errors[0]
        parts = list(error.absolute_path)
        if error.validator == "required":
            missing = [name for name in error.validator_value if name not in (error.instance or {})]
            field = _path(parts + missing[:1])
            sub = (error.schema.get("properties") or {}).get(missing[0], {}) if missing else {}
            raise PolicyError("%s: missing; expected %s" % (field, sub.get("description") or "a value"))
        if error.validator == "additionalProperties":
            known = sorted((error.schema.get("properties") or {}).keys())
            extra = sorted(set(error.instance) - set(known))
            raise PolicyError("%s: unknown field; expected one of %s" % (_path(parts + extra[:1]), ", ".join(known)))
        if error.validator == "propertyNames":
            raise PolicyError("%s: %s is no gate; expected %s" % (_path(parts), error.instance, _expected(SCHEMA, error)))
        raise PolicyError("%s: %s; expected %s" % (_path(parts), error.message, _expected(SCHEMA, error)))
    checked = dict(policy)
    checked.setdefault("exception_warning_days", 7)
    checked.setdefault("exceptions", [])
    for number, item in enumerate(checked["exceptions"]):
        try:
            datetime.datetime.strptime(item["expires"], "%Y-%m-%d")
        except ValueError:
            raise PolicyError("policy.exceptions[%d].expires: %r is no calendar date; expected YYYY-MM-DD"
                              % (number, item["expires"]))
    return checked
