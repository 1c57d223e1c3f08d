#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: gate_evidence
short_description: Append a phase's evidence record to a gate run and decide the phase's gate
version_added: 0.1.0
description:
  - Each phase of a gate run (preflight, snapshot, upgrade, canary, drain, rollback, decision)
    writes, per attempt, one JSON record (schema C(gpufleet.dra_gate/evidence-record), versioned)
    with its inputs, tool versions, timestamps and results into C(<root>/<run_id>/<phase>-<attempt>.json),
    appends it to the run's C(index.json) (file, sha256, verdict per attempt) and renders readable
    Markdown (C(<phase>-<attempt>.md) and the run's C(summary.md)).
  - Append-only. Every call records a new attempt of the phase; no record is ever replaced, so a
    failed attempt stays next to the one that passed. The attempt number is one more than the
    highest of the phase in the index or on disk, so a record left behind by a crash is never reused.
    The index is updated under an exclusive lock (C(<run_dir>/.lock)).
  - Decides the gate in Python - the verdict is the worst of C(record.results.verdict) and the verdict of
    the findings (C(record.results.findings), the phase's own findings derived from its results, and the
    coverage findings of O(expected_hosts)) - and returns it with C(gate.failed), so no role recomputes it.
  - The evidence root must exist and be private (a directory, not a link, owned by the running user,
    not writable by group or others); anything else is refused with the path named. The run directory
    is created mode 0700 under it. Files are mode 0600, written through C(mkstemp), fsync and a link
    (records) or an atomic rename (index, summary).
  - Runs on the controller; use it with C(delegate_to=localhost).
author:
  - gpufleet maintainers (@gpufleet)
extends_documentation_fragment:
  - gpufleet.dra_gate.attributes.controller
  - gpufleet.dra_gate.run_id
options:
  root:
    description: Directory that holds the gate runs' evidence directories. Must exist and be private.
    type: path
    required: true
  phase:
    description: The phase that writes this record.
    type: str
    required: true
    choices: [preflight, snapshot, upgrade, dra_canary, dra_acceptance, canary, drain, rollback, decision]
  state:
    description:
      - C(recorded) writes the record (O(record) required).
      - C(prepared) only checks the root and the run id and creates the run directory (mode 0700); a phase
        does this before it reads anything, so bad evidence settings fail first. Returns the attempt the
        next record would get.
    type: str
    choices: [prepared, recorded]
    default: recorded
  record:
    description:
      - The record. Required keys C(inputs), C(results), C(tools) (dicts) and C(started_at);
        optional C(finished_at) (defaults to now) and any further keys (for example C(nodes)).
      - C(results.verdict) and C(results.findings) are optional; the module writes the decided verdict,
        the merged findings and their counts into C(results).
    type: dict
  summary:
    description:
      - Markdown summary of the phase. When omitted, the module renders one for the phases it
        knows (preflight, upgrade, rollback, drain; docs/evidence.md) and a heading with the verdict for the others.
    type: str
  fail_on:
    description: Verdict from which the gate fails (C(gate.failed)); C(never) records only.
    type: str
    choices: [block, warn, never]
    default: block
  expected_hosts:
    description:
      - The hosts the phase was asked to cover (C(ansible_play_hosts_all)). Each of them that is not in
        O(answered_hosts) or is in O(failed_hosts) is a blocking finding naming the host.
      - Empty skips the coverage check.
    type: list
    elements: str
    default: []
  answered_hosts:
    description: The hosts that answered the phase (C(ansible_play_hosts), less the failed ones).
    type: list
    elements: str
    default: []
  failed_hosts:
    description: Host -> why it did not answer (unreachable, failed), as the phase registered it.
    type: dict
    default: {}
attributes:
  check_mode:
    support: full
    description: Writes nothing in check mode; reports the path the record would get and the gate.
  diff_mode:
    support: full
    description: Reports the record that would be written.
notes:
  - In check mode nothing is written; C(path) says where the record would go.
  - A record file that the index does not list is left alone and reported in C(warnings); the artifact
    verification (M(gpufleet.dra_gate.artifact_index) O(state=verified)) fails on it.
seealso:
  - module: gpufleet.dra_gate.compat_check
  - module: gpufleet.dra_gate.artifact_index
"""

EXAMPLES = r"""
- name: Record the preflight evidence and decide the gate
  gpufleet.dra_gate.gate_evidence:
    root: /var/lib/dra-gate/evidence
    run_id: "{{ dra_gate_run_id }}"
    phase: preflight
    fail_on: block
    expected_hosts: "{{ ansible_play_hosts_all }}"
    answered_hosts: "{{ ansible_play_hosts }}"
    record:
      started_at: "{{ started }}"
      inputs: {target: "{{ target }}"}
      tools: {ansible_core: "{{ ansible_version.full }}"}
      results: "{{ check }}"
  delegate_to: localhost
  run_once: true
  register: evidence

- name: Gate
  ansible.builtin.fail:
    msg: "{{ evidence.gate.reason }}; summary {{ evidence.summary_path }}"
  when: evidence.gate.failed
  run_once: true
"""

RETURN = r"""
path:
  description: Path of the phase record (this attempt's).
  returned: always
  type: str
  sample: /var/lib/dra-gate/evidence/20261130T080000Z/preflight-1.json
attempt:
  description: The attempt number of this record (1 for the phase's first record in the run).
  returned: always
  type: int
run_dir:
  description: The run's evidence directory.
  returned: always
  type: str
summary_path:
  description: Path of the run's Markdown summary.
  returned: always
  type: str
sha256:
  description: SHA-256 of the record as written (or as it would be written in check mode); null for O(state=prepared).
  returned: always
  type: str
verdict:
  description: The decided verdict (C(pass), C(warn), C(block)); null for O(state=prepared).
  returned: always
  type: str
gate:
  description: C(verdict), C(fail_on), C(failed) (whether the gate fails the play) and C(reason).
  returned: always
  type: dict
  sample: {"verdict": "block", "fail_on": "block", "failed": true, "reason": "1 blocking finding: ..."}
findings:
  description: The findings the verdict was decided on (as written to C(results.findings)).
  returned: always
  type: list
  elements: dict
"""

import hashlib
import os
import stat

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_bytes, to_native

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.common import clock
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.evidence import private_files as pf
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.evidence import records as evidence
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.judges import verdict as gate
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.judges import registry as judges
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.evidence import summaries

RENDERERS = {"preflight": evidence.render_preflight, "upgrade": summaries.render_upgrade,
             "rollback": summaries.render_rollback, "drain": summaries.render_drain}


def _read_index(module, run_dir, result):
    path = os.path.join(run_dir, evidence.INDEX_FILE)
    if os.path.islink(path):
        module.fail_json(msg="%s: the evidence index is a symbolic link; refusing to read or replace it" % path, **result)
    text = pf.read_text(path)
    if text is None and os.path.lexists(path):
        module.fail_json(msg="%s: the evidence index exists but cannot be read" % path, **result)
    try:
        return evidence.load_index(text, os.path.basename(run_dir))
    except evidence.EvidenceError as exc:
        module.fail_json(msg="%s: %s" % (path, exc), **result)


def _names(run_dir):
    try:
        return os.listdir(run_dir)
    except OSError:
        return []


def _summaries(run_dir, index, current_file, summary):
    texts = {}
    for entry in index.get("records", []):
        name = entry.get("summary_file") or (os.path.splitext(entry["file"])[0] + ".md")
        path = os.path.join(run_dir, name)
        texts[entry["file"]] = summary if entry["file"] == current_file else (
            None if os.path.islink(path) else pf.read_text(path))
    return texts


def _unindexed(run_dir, index):
    listed = set(e.get("file") for e in index.get("records", []))
    return [n for n in evidence.record_names(_names(run_dir)) if n not in listed]


def _decide(module, params, record):
    """The findings, verdict and gate of the record (in place: results.findings/verdict/counts)."""
    results = record["results"]
    findings = list(results.get("findings") or [])
    derived = []
    judge = judges.JUDGES.get(params["phase"])
    if judge:
        derived += judge(results, check_mode=module.check_mode)
    if params["expected_hosts"]:
        derived += gate.coverage_findings(params["expected_hosts"], params["answered_hosts"],
                                          failed_hosts=params["failed_hosts"])
    merged = evidence.merge_findings(findings, derived)
    try:
        verdict = gate.verdict_of(merged)
        given = results.get("verdict")
        if given is not None:
            if given not in gate.VERDICTS:
                raise gate.GateError("record.results.verdict: %r is not one of %s" % (given, ", ".join(gate.VERDICTS)))
            verdict = max((verdict, given), key=gate.VERDICTS.index)
        decision = gate.decide(verdict, params["fail_on"], merged)
    except gate.GateError as exc:
        module.fail_json(msg=str(exc))
    results["findings"] = merged
    if isinstance(results.get("counts"), dict):
        counts = dict(results["counts"])
        for key, value in gate.counts_of(merged[len(findings):]).items():
            counts[key] = counts.get(key, 0) + value
        results["counts"] = counts
    else:
        results["counts"] = gate.counts_of(merged)
    results["verdict"] = verdict
    results["gate"] = decision
    return merged, decision


def main():
    module = AnsibleModule(
        argument_spec=dict(
            root=dict(type="path", required=True),
            run_id=dict(type="str", required=True),
            phase=dict(type="str", required=True, choices=list(evidence.PHASES)),
            state=dict(type="str", choices=["prepared", "recorded"], default="recorded"),
            record=dict(type="dict"),
            summary=dict(type="str"),
            fail_on=dict(type="str", choices=list(gate.FAIL_ON), default="block"),
            expected_hosts=dict(type="list", elements="str", default=[]),
            answered_hosts=dict(type="list", elements="str", default=[]),
            failed_hosts=dict(type="dict", default={}),
        ),
        required_if=[("state", "recorded", ("record",))],
        supports_check_mode=True,
    )
    params = module.params
    now = clock.utc_now()
    try:
        evidence.validate_names(params["run_id"], params["phase"])
        if params["state"] == "recorded":
            evidence.validate(params["run_id"], params["phase"], params["record"])
    except evidence.EvidenceError as exc:
        module.fail_json(msg=str(exc))
    root = params["root"]
    problem = pf.check_private_root(root)
    if problem:
        module.fail_json(msg="root: %s" % problem)
    run_dir = os.path.join(root, params["run_id"])
    result = dict(changed=False, run_dir=run_dir, summary_path=os.path.join(run_dir, evidence.SUMMARY_FILE),
                  path=None, attempt=None, sha256=None, verdict=None, gate={}, findings=[])
    if os.path.lexists(run_dir) and (os.path.islink(run_dir) or not os.path.isdir(run_dir)):
        module.fail_json(msg="root: the run directory %s is a link or not a directory" % run_dir, **result)
    if os.path.isdir(run_dir):
        mode = stat.S_IMODE(os.lstat(run_dir).st_mode)
        if mode & 0o077:
            module.fail_json(msg="root: the run directory %s has mode %04o; expected 0700 (it holds cluster state)"
                             % (run_dir, mode), **result)

    if params["state"] == "prepared":
        index = _read_index(module, run_dir, result)
        result["attempt"] = evidence.next_attempt(params["phase"], index, _names(run_dir))
        result["path"] = os.path.join(run_dir, evidence.record_filename(params["phase"], result["attempt"]))
        if not os.path.isdir(run_dir):
            result["changed"] = True
            if not module.check_mode:
                try:
                    pf.ensure_private_dir(run_dir)
                except pf.PrivateFileError as exc:
                    module.fail_json(msg="root: %s" % exc, **result)
        module.exit_json(**result)

    record_in = dict(params["record"])
    record_in["results"] = dict(record_in["results"])
    findings, decision = _decide(module, params, record_in)
    result.update(findings=findings, gate=decision, verdict=decision["verdict"], changed=True)

    def render(attempt):
        record = evidence.build_record(params["run_id"], params["phase"], record_in, now, attempt)
        text = evidence.dumps(record)
        summary = params["summary"]
        if summary is None:
            renderer = RENDERERS.get(params["phase"])
            summary = renderer(record) if renderer else "# %s (attempt %d): verdict %s\n" % (
                params["phase"], attempt, decision["verdict"].upper())
        return text, summary

    if module.check_mode:
        index = _read_index(module, run_dir, result) if os.path.isdir(run_dir) else evidence.load_index(None, params["run_id"])
        attempt = evidence.next_attempt(params["phase"], index, _names(run_dir))
        text, _summary = render(attempt)
        result.update(attempt=attempt, path=os.path.join(run_dir, evidence.record_filename(params["phase"], attempt)),
                      sha256=hashlib.sha256(to_bytes(text)).hexdigest())
        if module._diff:
            result["diff"] = dict(before="", after=text, before_header=result["path"], after_header=result["path"])
        module.exit_json(**result)

    warnings = []
    try:
        pf.ensure_private_dir(run_dir)
        with pf.locked(run_dir):
            index = _read_index(module, run_dir, result)
            orphans = _unindexed(run_dir, index)
            if orphans:
                warnings.append(
                    "%s: evidence record(s) %s are not in the index (an earlier attempt crashed between its record "
                    "and the index?); left as they are, the artifact verification reports them"
                    % (run_dir, ", ".join(orphans)))
            attempt = evidence.next_attempt(params["phase"], index, _names(run_dir))
            name = evidence.record_filename(params["phase"], attempt)
            path = os.path.join(run_dir, name)
            text, summary = render(attempt)
            sha256 = hashlib.sha256(to_bytes(text)).hexdigest()
            result.update(attempt=attempt, path=path, sha256=sha256)
            if module._diff:
                result["diff"] = dict(before="", after=text, before_header=path, after_header=path)
            pf.write_private(path, text)
            summary_name = evidence.summary_filename(params["phase"], attempt)
            pf.write_private(os.path.join(run_dir, summary_name), summary)
            index = evidence.append_index(index, params["run_id"], {
                "phase": params["phase"], "attempt": attempt, "file": name, "sha256": sha256, "written_at": now,
                "verdict": decision["verdict"], "gate_failed": decision["failed"], "summary_file": summary_name})
            pf.write_private(os.path.join(run_dir, evidence.INDEX_FILE), evidence.dumps(index), replace=True)
            pf.write_private(result["summary_path"], evidence.render_run_summary(
                index, _summaries(run_dir, index, name, summary)), replace=True)
    except (pf.PrivateFileError, evidence.EvidenceError, IOError, OSError) as exc:
        module.fail_json(msg="root: cannot write the evidence under %s: %s" % (run_dir, to_native(exc)), **result)
    for warning in warnings:
        module.warn(warning)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
