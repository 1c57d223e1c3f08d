#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: gate_decision
short_description: The gate decision from the evidence of one or more gate runs and a gate policy
version_added: "0.1.0"
description:
  - Reads the evidence of each given gate run (the upgrade's canary run, the production run, the DRA canary run),
    verifies each run's evidence index first (the rule of C(artifact_index state=verified)); a run that does not
    verify is not read at all, and the phases it held are C(unverified).
  - Checks the gate policy against its JSON Schema (docs/gate-policy.schema.json) with the C(jsonschema) library;
    an invalid policy fails naming the field and the expected form, and nothing is written.
  - Evaluates every gate of docs/decision.md with its measured value, numerator and denominator, threshold,
    owner and the record it came from; applies only unexpired exceptions; decides decision 1
    (C(operator_upgrade)) and decision 2 (C(dra_promotion)).
  - Writes C(decision.json) (mode 0600) into O(dest). The same evidence, policy and O(decided_at) give a
    byte-identical record; O(recompute) recomputes an existing record and reports every difference.
  - Runs on the controller. The logic is in module_utils/judges/decision.py.
author:
  - gpufleet maintainers (@gpufleet)
extends_documentation_fragment:
  - gpufleet.dra_gate.attributes.controller
attributes:
  check_mode:
    support: full
    description: Decides and returns the record; writes nothing.
  diff_mode:
    support: full
    description: The decision record before (an existing one at O(dest)) and after.
options:
  policy:
    description:
      - The gate policy file (YAML or JSON). Required unless O(recompute) is given (then the recorded policy
        path is read again).
    type: path
  runs:
    description:
      - The gate runs whose evidence is decided on. Required unless O(recompute) is given.
    type: list
    elements: dict
    suboptions:
      evidence_root:
        description: The evidence root of the run (absolute path, private).
        type: path
        required: true
      run_id:
        description: The run id.
        type: str
        required: true
  dest:
    description:
      - The directory C(decision.json) is written to (created 0700). Required unless O(recompute) is given.
      - An existing C(decision.json) with the same bytes is kept (C(changed=false)); one with other bytes is
        never replaced (the module fails).
    type: path
  decided_at:
    description:
      - The decision time (RFC 3339 UTC); evidence age and exception expiry are measured against it.
      - Default now. With O(recompute), the recorded time.
    type: str
  recompute:
    description:
      - The path of an existing C(decision.json). Its inputs (policy path, runs, decision time) are read again and
        the decision recomputed; C(identical) and C(differences) say whether it is the same record. Nothing is
        written.
    type: path
  fail_on_difference:
    description: With O(recompute), fail when the recomputed record differs.
    type: bool
    default: true
requirements:
  - jsonschema (controller)
  - PyYAML (controller)
seealso:
  - module: gpufleet.dra_gate.gate_report
"""

EXAMPLES = r"""
- name: Decide on the canary, production and DRA canary runs
  gpufleet.dra_gate.gate_decision:
    policy: inventories/gate_policy.yml
    runs:
      - {evidence_root: /var/lib/dra-gate/evidence, run_id: canary-2612}
      - {evidence_root: /var/lib/dra-gate/evidence, run_id: prod-2612}
      - {evidence_root: /var/lib/dra-gate/evidence, run_id: dra-2612}
    dest: /var/lib/dra-gate/evidence/decisions/2612
  register: decision

- name: Recompute it later (fails on any difference)
  gpufleet.dra_gate.gate_decision:
    recompute: /var/lib/dra-gate/evidence/decisions/2612/decision.json
"""

RETURN = r"""
path:
  description: The decision record written (or that would be written; with O(recompute), the one recomputed).
  returned: always
  type: str
decisions:
  description: C(operator_upgrade) {outcome accept|reject|incomplete, reasons, gates} and C(dra_promotion)
    {outcome promote|do-not-promote|incomplete, reasons, gates}.
  returned: always
  type: dict
record:
  description: The decision record (docs/decision.md, docs/decision-record.schema.json).
  returned: always
  type: dict
identical:
  description: With O(recompute), whether the recomputed record is byte-identical to the recorded one.
  returned: when recompute is given
  type: bool
differences:
  description: With O(recompute), the JSON paths that differ (C(gates[3].status), ...), at most 100.
  returned: when recompute is given
  type: list
  elements: str
started_at:
  description: When the module started (RFC 3339 UTC).
  returned: always
  type: str
finished_at:
  description: When the module finished (RFC 3339 UTC).
  returned: always
  type: str
duration_seconds:
  description: C(finished_at) minus C(started_at) in seconds.
  returned: always
  type: float
"""

import datetime
import hashlib
import json
import os
import traceback

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.common import clock
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.common.module_run import ModuleRun
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.evidence import private_files as pf
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.evidence import records as evidence
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.evidence import run_dir
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.judges import gate_policy as gp
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.judges import decision as dj
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.phases import claim_stats

try:
    import jsonschema
    HAS_JSONSCHEMA, JSONSCHEMA_ERROR = True, None
except ImportError:
    HAS_JSONSCHEMA, JSONSCHEMA_ERROR = False, traceback.format_exc()

try:
    import yaml
    HAS_YAML, YAML_ERROR = True, None
except ImportError:
    HAS_YAML, YAML_ERROR = False, traceback.format_exc()

RECORD_FILE = "decision.json"
MAX_POLICY_BYTES = 1024 * 1024


def plain(value):
    """YAML's dates and times as the strings they were written as (JSON has none)."""
    if isinstance(value, dict):
        return dict((str(k), plain(v)) for k, v in value.items())
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, datetime.datetime):
        return clock.to_datetime(value)
    if isinstance(value, datetime.date):
        return value.isoformat()
    return value


def read_policy(path):
    """``(policy, {path, sha256})`` of the policy file; raises ``gp.PolicyError`` naming the problem."""
    seen, raw = run_dir.observe(path, MAX_POLICY_BYTES)
    if raw is None:
        raise gp.PolicyError("policy: %s %s; expected a readable gate policy file (YAML or JSON)" % (
            path, seen.get("error") or ("is a symbolic link" if seen.get("is_link") else "does not exist"
                                        if not seen.get("exists") else "is not a regular file")))
    try:
        data = yaml.safe_load(raw.decode("utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise gp.PolicyError("policy: %s does not parse as YAML or JSON: %s" % (path, exc))
    checked = gp.check(plain(data), jsonschema.Draft202012Validator)
    return checked, {"path": path, "sha256": seen["sha256"]}


def read_runs(runs):
    out = []
    for number, item in enumerate(runs):
        root, run_id = item.get("evidence_root"), item.get("run_id")
        if not isinstance(root, str) or not os.path.isabs(root):
            raise ValueError("runs[%d].evidence_root: expected an absolute path, got %r" % (number, root))
        try:
            evidence.validate_names(run_id, "decision")
        except evidence.EvidenceError as exc:
            raise ValueError("runs[%d].run_id: %s" % (number, exc))
        root = os.path.normpath(root)
        run = run_dir.read_run(root, run_id, what="the run")
        if run["index"] is not None:
            bad, _checked = run_dir.verify_artifacts(run["run_dir"])
            run["reasons"].extend(bad)
        records = {}
        for entry in (run["index"] or {}).get("records", []):
            record, error = run_dir.load_record(run, entry["file"])
            if error and run["data"].get(entry["file"]) is not None:
                run["reasons"].append(error)
            records[entry["file"]] = (record, (run["observed"].get(entry["file"]) or {}).get("sha256"))
        out.append({"evidence_root": root, "run_id": run_id, "reasons": run["reasons"],
                    "index_sha256": run["index_sha256"], "entries": (run["index"] or {}).get("records", []),
                    "records": records, "run_dir": run["run_dir"]})
    return out


def read_claims(runs, chosen):
    """The acceptance run's per-claim JSON Lines: ``{path, sha256, lines, samples, error}`` or None."""
    item = chosen.get("dra_acceptance")
    if not item:
        return None
    path = (((item["record"] or {}).get("results") or {}).get("lifecycles") or {}).get("records_path")
    if not path:
        return None
    run = [r for r in runs if r["run_id"] == item["run_id"]][0]
    # the record names the file where the run directory was when it was written; evidence copied or moved
    # elsewhere (an archive, a support case) keeps its layout: the same file below this run directory
    marker = os.sep + item["run_id"] + os.sep
    if marker in path:
        path = os.path.join(run["run_dir"], path.rsplit(marker, 1)[1])
    real_run = os.path.realpath(run["run_dir"])
    if not os.path.realpath(path).startswith(real_run + os.sep):
        return {"path": path, "sha256": None, "lines": None, "samples": [],
                "error": "%s: outside the run directory %s: not read" % (path, run["run_dir"])}
    seen, raw = run_dir.observe(path)
    if raw is None:
        return {"path": path, "sha256": None, "lines": None, "samples": [],
                "error": "%s: cannot be read (%s)" % (path, seen.get("error") or "missing or not a file")}
    try:
        records = [json.loads(line) for line in raw.decode("utf-8").splitlines() if line.strip()]
        samples = claim_stats.allocation_samples(records)
    except (ValueError, UnicodeDecodeError, claim_stats.ClaimStatsError) as exc:
        return {"path": path, "sha256": seen["sha256"], "lines": None, "samples": [],
                "error": "%s: not the per-claim records: %s" % (path, exc)}
    return {"path": path, "sha256": seen["sha256"], "lines": len(records), "samples": samples, "error": None}


def differences(old, new, path="", out=None):
    out = [] if out is None else out
    if len(out) >= 100:
        return out
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(set(old) | set(new)):
            differences(old.get(key), new.get(key), "%s.%s" % (path, key) if path else key, out)
    elif isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for number, (a, b) in enumerate(zip(old, new)):
            differences(a, b, "%s[%d]" % (path, number), out)
    elif old != new:
        out.append(path or "(the record)")
    return out


def compute(policy_path, runs_in, decided_at):
    policy, source = read_policy(policy_path)
    runs = read_runs(runs_in)
    _phases, chosen, _per_run = dj.select(runs, policy, decided_at)
    claims = read_claims(runs, chosen)
    return dj.decide(policy, runs, decided_at, policy_source=source, claims=claims)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            policy=dict(type="path"),
            runs=dict(type="list", elements="dict", options=dict(
                evidence_root=dict(type="path", required=True), run_id=dict(type="str", required=True))),
            dest=dict(type="path"),
            decided_at=dict(type="str"),
            recompute=dict(type="path"),
            fail_on_difference=dict(type="bool", default=True),
        ),
        required_one_of=[("policy", "recompute")],
        required_together=[("policy", "runs", "dest")],
        mutually_exclusive=[("recompute", "policy"), ("recompute", "runs"), ("recompute", "decided_at")],
        supports_check_mode=True,
    )
    run = ModuleRun(module, digits=6)
    if not HAS_JSONSCHEMA:
        module.fail_json(msg=missing_required_lib("jsonschema"), exception=JSONSCHEMA_ERROR)
    if not HAS_YAML:
        module.fail_json(msg=missing_required_lib("PyYAML"), exception=YAML_ERROR)
    params = module.params
    errors = (gp.PolicyError, dj.DecisionError, ValueError, pf.PrivateFileError, OSError)
    if params["recompute"]:
        path = params["recompute"]
        seen, raw = run_dir.observe(path)
        if raw is None:
            run.fail("recompute: %s cannot be read; expected an existing decision.json" % path)
        try:
            old = json.loads(raw.decode("utf-8"))
        except (ValueError, UnicodeDecodeError) as exc:
            run.fail("recompute: %s is not JSON: %s" % (path, exc))
        if not isinstance(old, dict) or old.get("schema") != dj.RECORD_SCHEMA:
            run.fail("recompute: %s: schema is %r; expected %s" % (path, (old or {}).get("schema") if isinstance(
                old, dict) else None, dj.RECORD_SCHEMA))
        inputs = old.get("inputs") or {}
        with run.failing_on(errors, "recompute: "):
            record = compute(((inputs.get("policy") or {}).get("path")),
                             [{"evidence_root": r.get("evidence_root"), "run_id": r.get("run_id")}
                              for r in inputs.get("runs") or []], old.get("decided_at"))
        same = dj.dumps(record).encode("utf-8") == raw
        diff = [] if same else differences(old, record)
        result = dict(changed=False, path=path, record=record, decisions=record["decisions"], identical=same,
                      differences=diff)
        if not same and params["fail_on_difference"]:
            run.fail("recompute: the recomputed decision differs from %s at %s" % (path, ", ".join(diff[:10])),
                     **result)
        run.exit(**result)
    decided_at = params["decided_at"] or clock.utc_now()
    if clock.parse_or_none(decided_at) is None:
        run.fail("decided_at: expected %s, got %r" % (clock.FORM, decided_at))
    if not params["runs"]:
        run.fail("runs: expected at least one {evidence_root, run_id}")
    with run.failing_on(errors):
        record = compute(params["policy"], params["runs"], decided_at)
    text = dj.dumps(record)
    dest = params["dest"]
    path = os.path.join(dest, RECORD_FILE)
    before = None
    if os.path.lexists(path):
        seen, raw = run_dir.observe(path)
        before = raw.decode("utf-8", "replace") if raw is not None else ""
    changed = before != text
    result = dict(changed=changed, path=path, record=record, decisions=record["decisions"],
                  sha256=hashlib.sha256(text.encode("utf-8")).hexdigest())
    if module._diff:
        result["diff"] = {"before": "" if before is None else before, "after": text,
                          "before_header": path, "after_header": path}
    if changed and before is not None:
        run.fail("dest: %s exists with another decision; a decision record is never replaced (choose a new dest, "
                 "or recompute it)" % path, **result)
    if changed and not module.check_mode:
        with run.failing_on(errors, "dest: "):
            pf.ensure_private_dir(dest)
            pf.write_private(path, text)
    run.exit(**result)


if __name__ == "__main__":
    main()
