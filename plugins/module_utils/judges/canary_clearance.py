# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The canary clearance rule: production only when the canary's evidence for the same target exists,
is complete, passed and verifies.

Pure logic (no I/O, no Ansible). The module ``canary_evidence`` reads the canary run's evidence index
and records, measures the files, and hands what it found to :func:`clearance`. Whether the record
files still match the evidence index is judged by :func:`evidence.judge_run_dir` (the same rule as
``artifact_index state=verified``); the rule format is in docs/evidence.md ("The canary clearance
rule").
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.evidence import records as evidence
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.common import versions

_SHA256_RE = re.compile(r"^(?:sha256:)?([0-9a-fA-F]{64})$")


class ClearanceError(ValueError):
    """Bad input to the clearance (the message names the field and the expected form)."""


def normalize_digest(value):
    """``<64 lower-case hex>`` of a sha256 given as ``<64 hex>`` or ``sha256:<64 hex>``, else None."""
    if not isinstance(value, str):
        return None
    match = _SHA256_RE.match(value.strip())
    return match.group(1).lower() if match else None


def same_release(left, right):
    """Whether two release names are the same release (``v26.7.0`` is ``26.7.0``); names that do not
    parse compare as strings."""
    lkey, rkey = versions.release_key(left), versions.release_key(right)
    if lkey is None or rkey is None:
        return isinstance(left, str) and isinstance(right, str) and left.strip() == right.strip()
    return lkey == rkey


def validate_target(target_version):
    if not isinstance(target_version, str) or versions.release_key(target_version) is None:
        raise ClearanceError("target_version: expected a GPU Operator release such as 26.7.0, got %r" % (target_version,))
    return target_version.strip()


def validate_hops(hops):
    """The production plan's hops as ``[{to, sha256}]`` (sha256 as 64 lower-case hex). A hop as
    operator_charts returns it (``chart.sha256``) is taken as it is; other keys are ignored. Raises
    :class:`ClearanceError` naming ``hops[i].<key>``."""
    if hops is None:
        return []
    if not isinstance(hops, list):
        raise ClearanceError("hops: expected a list of {to, sha256}, got %s" % type(hops).__name__)
    out = []
    for position, hop in enumerate(hops):
        where = "hops[%d]" % position
        if not isinstance(hop, dict):
            raise ClearanceError("%s: expected a dict {to, sha256}, got %s" % (where, type(hop).__name__))
        if not isinstance(hop.get("to"), str) or versions.release_key(hop["to"]) is None:
            raise ClearanceError("%s.to: expected the release the hop goes to, such as 26.7.0, got %r" % (where, hop.get("to")))
        given = hop.get("sha256")
        if given is None and isinstance(hop.get("chart"), dict):
            given = hop["chart"].get("sha256")  # a hop of operator_charts as it is
        digest = normalize_digest(given)
        if digest is None:
            raise ClearanceError("%s.sha256: expected the hop chart's sha256, 64 hex characters (optionally sha256:<64 hex>), "
                                 "got %r" % (where, given))
        out.append({"to": hop["to"].strip(), "sha256": digest})
    return out


def newest_entry(index, phase):
    """The index entry of the phase's newest record (highest attempt; append order breaks ties), or None."""
    def attempt(entry):
        value = entry.get("attempt")
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    best = None
    for entry in (index or {}).get("records", []):
        if isinstance(entry, dict) and entry.get("phase") == phase:
            if best is None or attempt(entry) >= attempt(best):
                best = entry
    return best


def record_summary(path, entry, record, sha256):
    """``{path, attempt, sha256, verdict, finished_at, target_version}`` of the record taken (None where unknown)."""
    record = record if isinstance(record, dict) else {}
    results = record.get("results") if isinstance(record.get("results"), dict) else {}
    entry = entry or {}
    return {"path": path, "attempt": record.get("attempt", entry.get("attempt")),
            "sha256": sha256 if sha256 is not None else entry.get("sha256"),
            "verdict": results.get("verdict", entry.get("verdict")), "finished_at": record.get("finished_at"),
            "target_version": results.get("target_version")}


def _expect(reasons, field, found, expected, ok):
    if not ok:
        reasons.append("%s: found %s, expected %s" % (field, "missing" if found is None else repr(found), expected))


def _hop_reasons(results, hops):
    reasons = []
    canary_hops = [h for h in results.get("hops") or [] if isinstance(h, dict)] if isinstance(results.get("hops"), list) else []
    for position, hop in enumerate(hops):
        matching = [h for h in canary_hops if same_release(h.get("to"), hop["to"])]
        if not matching:
            reasons.append("hops[%d]: the canary made no hop to %s (its hops: %s); not the same target" % (
                position, hop["to"], ", ".join("%s -> %s" % (h.get("from"), h.get("to")) for h in canary_hops) or "none"))
            continue
        found = [normalize_digest((h.get("chart") or {}).get("sha256") if isinstance(h.get("chart"), dict) else None)
                 for h in matching]
        if hop["sha256"] not in found:
            reasons.append("hops[%d]: the chart to %s differs: the canary's has sha256 %s, production's %s; charts not "
                           "matching are not the same target" % (position, hop["to"],
                                                                 ", ".join(str(f) for f in found), hop["sha256"]))
    return reasons


def judge_record(record, entry, run_id, phase, target_version, hops, release=None):
    """Every reason the (verified) record does not clear production; empty = cleared."""
    reasons = []
    if not isinstance(record, dict):
        return ["the record is not a JSON object"]
    _expect(reasons, "schema", record.get("schema"), evidence.SCHEMA, record.get("schema") == evidence.SCHEMA)
    _expect(reasons, "run_id", record.get("run_id"), repr(run_id), record.get("run_id") == run_id)
    _expect(reasons, "phase", record.get("phase"), repr(phase), record.get("phase") == phase)
    if entry is not None and entry.get("attempt") is not None:
        _expect(reasons, "attempt", record.get("attempt"), "%r (the index entry's)" % entry.get("attempt"),
                record.get("attempt") == entry.get("attempt"))
    results = record.get("results")
    if not isinstance(results, dict):
        reasons.append("results: found %s, expected the phase's results (a dict)" % type(results).__name__)
        return reasons
    _expect(reasons, "finished_at", record.get("finished_at"), "the time the record was finished",
            bool(record.get("finished_at")))
    _expect(reasons, "results.scope", results.get("scope"), "'canary'", results.get("scope") == "canary")
    _expect(reasons, "results.completed", results.get("completed"), "true", results.get("completed") is True)
    _expect(reasons, "results.refused", results.get("refused"), "null (not refused)", results.get("refused") is None)
    _expect(reasons, "results.check_mode", results.get("check_mode"), "false (a check run never clears)",
            results.get("check_mode") is False)
    _expect(reasons, "results.verdict", results.get("verdict"), "'pass'", results.get("verdict") == "pass")
    if entry is not None and entry.get("verdict") != results.get("verdict"):
        reasons.append("index verdict: found %r, the record says %r; expected the same" % (
            entry.get("verdict"), results.get("verdict")))
    _expect(reasons, "results.target_version", results.get("target_version"), repr(target_version),
            same_release(results.get("target_version"), target_version))
    if release is not None:
        _expect(reasons, "results.release", results.get("release"), repr(release), results.get("release") == release)
    rollback = results.get("rollback")
    triggered = rollback.get("triggered") if isinstance(rollback, dict) else None
    _expect(reasons, "results.rollback.triggered", triggered, "false (no rollback)", triggered is False)
    reasons.extend(_hop_reasons(results, hops))
    return reasons


def clearance(reasons_so_far, path=None, entry=None, record=None, sha256=None, run_id=None, phase="upgrade",
              target_version=None, hops=(), release=None):
    """``{cleared, reasons, record}``. ``reasons_so_far`` are what the reader already found (a missing run
    directory, index or record, files that do not match the index); the record, when there is one, is
    judged as well, so every reason is listed at once."""
    reasons = list(reasons_so_far)
    if record is not None:
        reasons.extend(judge_record(record, entry, run_id, phase, target_version, list(hops), release))
    elif not reasons:
        reasons.append("no %s record was read" % phase)
    return {"cleared": not reasons, "reasons": reasons, "record": record_summary(path, entry, record, sha256)}
