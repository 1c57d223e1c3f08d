# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The JSON Schema of the decision record (``gpufleet.dra_gate/decision-record``, version 1), published as
``docs/decision-record.schema.json`` (a unit test keeps the two equal and validates recorded decisions
against it with the ``jsonschema`` library)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

_STR_OR_NULL = {"type": ["string", "null"]}
_NUM_OR_NULL = {"type": ["number", "null"]}
_INT_OR_NULL = {"type": ["integer", "null"]}
_STAMP = {"type": "string", "pattern": r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?Z$"}

_MEASURED = {"type": "object", "required": ["text", "value", "unit", "numerator", "denominator", "percent"],
             "properties": {"text": {"type": "string"}, "value": _NUM_OR_NULL, "unit": _STR_OR_NULL,
                            "numerator": _INT_OR_NULL, "denominator": _INT_OR_NULL, "percent": _NUM_OR_NULL}}
_GATE = {
    "type": "object",
    "required": ["id", "title", "decision", "kind", "test", "criterion", "measured", "threshold", "status",
                 "reasons", "owner", "exception", "source"],
    "properties": {
        "id": {"type": "string"}, "title": {"type": "string"},
        "decision": {"enum": ["operator_upgrade", "dra_promotion"]},
        "kind": {"enum": ["universal", "local"]}, "test": {"type": "string"}, "criterion": {"type": "string"},
        "measured": _MEASURED,
        "threshold": {"oneOf": [{"type": "null"}, {
            "type": "object", "required": ["name", "value", "comparison"],
            "properties": {"name": {"type": "string"}, "value": _NUM_OR_NULL, "comparison": {"enum": [">=", "<="]}}}]},
        "status": {"enum": ["pass", "fail", "not_measured", "excepted"]},
        "reasons": {"type": "array", "items": {"type": "string"}},
        "owner": _STR_OR_NULL,
        "exception": {"type": ["object", "null"]},
        "source": {"oneOf": [{"type": "null"}, {
            "type": "object", "required": ["phase_key", "run_id", "file", "sha256", "fields"],
            "properties": {"phase_key": {"type": "string"}, "run_id": {"type": "string"}, "file": {"type": "string"},
                           "sha256": _STR_OR_NULL, "fields": {"type": "array", "items": {"type": "string"}}}}]},
    },
}
_PHASE = {"type": "object", "required": ["status", "reason", "run_id", "phase", "attempt", "file", "sha256", "verdict",
                                         "finished_at"],
          "properties": {"status": {"enum": ["present", "missing", "unverified", "skipped", "stale", "incomplete"]},
                         "reason": _STR_OR_NULL, "run_id": _STR_OR_NULL, "phase": {"type": "string"},
                         "attempt": _INT_OR_NULL, "file": _STR_OR_NULL, "sha256": _STR_OR_NULL,
                         "verdict": _STR_OR_NULL, "finished_at": _STR_OR_NULL}}
_DECISION = {"type": "object", "required": ["outcome", "reasons", "gates"],
             "properties": {"reasons": {"type": "array", "items": {"type": "string"}},
                            "gates": {"type": "array", "items": {"type": "string"}}}}

SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://gpufleet.example/dra_gate/decision-record-1.schema.json",
    "title": "gpufleet.dra_gate decision record, version 1",
    "description": "The gate decision (docs/decision.md): inputs hashed, the phases used, every gate, "
                   "the two decisions, and what the seeds ask the test log to keep.",
    "type": "object",
    "required": ["schema", "schema_version", "decided_at", "inputs", "phases", "gates", "exceptions", "findings",
                 "decisions", "decision", "versions", "topology", "claims", "disruptions", "outcomes", "timelines",
                 "compatibility"],
    "properties": {
        "schema": {"const": "gpufleet.dra_gate/decision-record"},
        "schema_version": {"const": 1},
        "decided_at": _STAMP,
        "inputs": {"type": "object", "required": ["sha256", "policy", "runs", "decided_at"],
                   "properties": {"sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
                                  "policy": {"type": "object", "required": ["path", "sha256", "content"]},
                                  "runs": {"type": "array", "minItems": 1, "items": {
                                      "type": "object",
                                      "required": ["evidence_root", "run_id", "index_sha256", "verified", "problems",
                                                   "records"]}}}},
        "phases": {"type": "object", "additionalProperties": _PHASE},
        "gates": {"type": "array", "items": _GATE},
        "exceptions": {"type": "array", "items": {
            "type": "object", "required": ["gate", "reason", "accepted_by", "expires", "status", "days_left"],
            "properties": {"status": {"enum": ["active", "expiring", "expired", "unused"]}}}},
        "findings": {"type": "array", "items": {
            "type": "object", "required": ["id", "severity", "subject", "observed", "expected", "message", "source"],
            "properties": {"severity": {"enum": ["block", "warn", "info"]}}}},
        "decisions": {"type": "object", "required": ["operator_upgrade", "dra_promotion"], "properties": {
            "operator_upgrade": dict(_DECISION, properties=dict(_DECISION["properties"], outcome={
                "enum": ["accept", "reject", "incomplete"]})),
            "dra_promotion": dict(_DECISION, properties=dict(_DECISION["properties"], outcome={
                "enum": ["promote", "do-not-promote", "incomplete"]}))}},
        "decision": {"type": "object", "required": ["owners", "rollback_trigger", "approver", "approval", "exceptions"]},
        "versions": {"type": "object"},
        "topology": {"type": "array"},
        "claims": {"type": "object", "required": ["records"]},
        "disruptions": {"type": "object"},
        "outcomes": {"type": "object", "required": ["claims_attempted", "claims_successful", "error_classes",
                                                    "allocation_latency_seconds", "allocation_latency_samples",
                                                    "failed_reschedules", "reschedule_attempts", "leaked", "evictions",
                                                    "rollback_minutes"]},
        "timelines": {"type": "object", "required": ["drain", "rollback"]},
        "compatibility": {"type": "array"},
    },
}
