#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: canary_evidence
short_description: Decide whether production may follow a canary, from the canary's evidence
version_added: 0.3.0
description:
  - Production only when the canary's evidence for the same target exists, is complete, passed and verifies.
  - Reads the canary gate run's evidence index C(<evidence_root>/<run_id>/index.json), takes the newest
    record of O(phase) (highest attempt) and checks every record of the run against the index - the
    file exists, is a regular file (not a link), has the indexed sha256 and mode 0600, and no record is
    missing from the index - with the same rule as M(gpufleet.dra_gate.artifact_index) O(gpufleet.dra_gate.artifact_index#module:state=verified).
  - Clears only when, in that record, C(results.scope) is C(canary), C(results.completed) is true,
    C(results.refused) is null, C(results.check_mode) is false, the verdict is C(pass) (in the record and
    in the index), C(results.target_version) is O(target_version), C(results.rollback.triggered) is false,
    C(results.release) is O(release) when given, and each of O(hops) matches a canary hop to the same
    release by its chart's sha256.
  - A missing evidence root, run directory, index or record is not a failure of the module - it is not
    cleared, with the reason. Bad input (a relative path, a run id of the wrong form, a hop without a
    sha256) fails the module naming the option.
  - Read-only; runs on the controller (C(delegate_to=localhost)). Rule in docs/evidence.md.
author:
  - gpufleet maintainers (@gpufleet)
extends_documentation_fragment:
  - gpufleet.dra_gate.attributes.controller
  - gpufleet.dra_gate.run_id
options:
  evidence_root:
    description:
      - Absolute path of the directory that holds the gate runs' evidence directories (as for
        M(gpufleet.dra_gate.gate_evidence) O(gpufleet.dra_gate.gate_evidence#module:root)). Not private
        (a link, another owner, writable by group or others) means not cleared.
    type: path
    required: true
  phase:
    description: The phase whose newest record is judged.
    type: str
    choices: [preflight, snapshot, upgrade, dra_canary, dra_acceptance, canary, drain, rollback, decision]
    default: upgrade
  target_version:
    description: The GPU Operator release production goes to (C(v26.7.0) and C(26.7.0) are the same).
    type: str
    required: true
  hops:
    description:
      - The production plan's hops, each C(to) (the release) and C(sha256) (its chart's sha256, as the
        plan of M(gpufleet.dra_gate.operator_charts) gives it; C(sha256:<64 hex>) accepted). Each must match
        the C(chart.sha256) of a canary hop to the same release, else it is not the same target.
      - A hop as M(gpufleet.dra_gate.operator_charts) returns it (C(chart.sha256)) is taken as it is; other keys
        (C(from), C(kind)) are ignored (production may start from another release than the canary).
    type: list
    elements: dict
    default: []
  release:
    description: The Helm release name; when given it must be the canary record's C(results.release).
    type: str
attributes:
  check_mode:
    support: full
    description: Only reads; the same answer in check mode.
  diff_mode:
    support: none
    description: Changes nothing, so there is no diff.
  platform:
    description: Target OS/families that can be operated against.
    support: full
    platforms: posix
notes:
  - The sha256 proves that a record is the one the index lists; both live in the canary's evidence
    directory, so the evidence root must stay private.
seealso:
  - module: gpufleet.dra_gate.gate_evidence
  - module: gpufleet.dra_gate.artifact_index
  - module: gpufleet.dra_gate.operator_charts
"""

EXAMPLES = r"""
- name: Is the canary's evidence for this target there, complete, passed and verified?
  gpufleet.dra_gate.canary_evidence:
    evidence_root: /var/lib/dra-gate/evidence
    run_id: "{{ dra_gate_canary_run_id }}"
    target_version: "{{ dra_gate_target_operator_version }}"
    release: gpu-operator
    hops: "{{ production_charts.hops }}"
  delegate_to: localhost
  run_once: true
  register: canary

- name: Refuse production without a cleared canary
  ansible.builtin.fail:
    msg: "the canary does not clear production: {{ canary.reasons | join('; ') }}"
  when: not canary.cleared
  run_once: true
"""

RETURN = r"""
cleared:
  description: True only when the canary's evidence clears production (RV(reasons) empty).
  returned: always
  type: bool
reasons:
  description: Every reason it is not cleared, each naming what was found and what was expected.
  returned: always
  type: list
  elements: str
  sample: ["results.verdict: found 'warn', expected 'pass'"]
record:
  description: The record judged (null values where there was none).
  returned: always
  type: dict
  contains:
    path:
      description: Path of the record file.
      type: str
    attempt:
      description: Its attempt number.
      type: int
    sha256:
      description: SHA-256 of the file as read.
      type: str
    verdict:
      description: The verdict the record carries.
      type: str
    finished_at:
      description: When the record was finished (UTC).
      type: str
    target_version:
      description: The target release the canary upgraded to.
      type: str
started_at:
  description: UTC time (RFC 3339) the module started.
  returned: always
  type: str
finished_at:
  description: UTC time (RFC 3339) the module finished.
  returned: always
  type: str
duration_seconds:
  description: C(finished_at) minus C(started_at) in seconds.
  returned: always
  type: float
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.common.module_run import ModuleRun
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.judges import canary_clearance as cc
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.evidence import records as evidence
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.evidence import run_dir


def read_evidence(root, run_id, phase):
    """``(reasons, path, entry, record, sha256)`` of the run's newest record of ``phase``."""
    run = run_dir.read_run(root, run_id, what="the canary run")
    reasons, index = list(run["reasons"]), run["index"]
    if index is None:
        return reasons, None, None, None, None
    index_path = os.path.join(run["run_dir"], evidence.INDEX_FILE)
    entry = cc.newest_entry(index, phase)
    if entry is None:
        return reasons + ["%s: the evidence index lists no %s record (found %s); expected the canary's %s record" % (
            index_path, phase, ", ".join(sorted(set(e.get("phase") for e in index["records"]))) or "no records",
            phase)], None, None, None, None
    path = os.path.join(run["run_dir"], entry["file"])
    if run["data"].get(entry["file"]) is None:
        return reasons, path, entry, None, None
    sha256 = run["observed"][entry["file"]].get("sha256")
    record, error = run_dir.load_record(run, entry["file"])
    if error:
        return reasons + [error], path, entry, None, sha256
    return reasons, path, entry, record, sha256


def main():
    module = AnsibleModule(
        argument_spec=dict(
            evidence_root=dict(type="path", required=True),
            run_id=dict(type="str", required=True),
            phase=dict(type="str", choices=list(evidence.PHASES), default="upgrade"),
            target_version=dict(type="str", required=True),
            hops=dict(type="list", elements="dict", default=[]),
            release=dict(type="str"),
        ),
        supports_check_mode=True,
    )
    run = ModuleRun(module, digits=6)
    params = module.params
    root = params["evidence_root"]
    if not root or not os.path.isabs(root):
        run.fail("evidence_root: expected an absolute path, got %r" % (root,))
    try:
        evidence.validate_names(params["run_id"], params["phase"])
        target = cc.validate_target(params["target_version"])
        hops = cc.validate_hops(params["hops"])
    except (evidence.EvidenceError, cc.ClearanceError) as exc:
        run.fail(str(exc))
    if params["release"] is not None and not params["release"].strip():
        run.fail("release: expected a Helm release name or nothing, got an empty string")
    reasons, path, entry, record, sha256 = read_evidence(os.path.normpath(root), params["run_id"], params["phase"])
    result = cc.clearance(reasons, path=path, entry=entry, record=record, sha256=sha256, run_id=params["run_id"],
                          phase=params["phase"], target_version=target, hops=hops, release=params["release"])
    run.exit(changed=False, **result)


if __name__ == "__main__":
    main()
