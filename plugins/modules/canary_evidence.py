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
options:
  evidence_root:
    description:
      - Absolute path of the directory that holds the gate runs' evidence directories (as for
        M(gpufleet.dra_gate.gate_evidence) O(gpufleet.dra_gate.gate_evidence#module:root)). Not private
        (a link, another owner, writable by group or others) means not cleared.
    type: path
    required: true
  run_id:
    description: The canary gate run's id; letters, digits, C(.), C(_), C(-), at most 128, starting with a letter or digit.
    type: str
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
  action_group:
    description: Action is part of action_group(s), for convenient setting of module_defaults.
    support: full
    membership:
      - gpufleet.dra_gate.controller
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

import datetime
import hashlib
import json
import os
import stat
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_native

from ansible_collections.gpufleet.dra_gate.plugins.module_utils import canary_clearance as cc
from ansible_collections.gpufleet.dra_gate.plugins.module_utils import evidence
from ansible_collections.gpufleet.dra_gate.plugins.module_utils import private_files as pf

#: A record larger than this is not read (records are a few hundred KiB at most).
MAX_RECORD_BYTES = 64 * 1024 * 1024


def rfc3339(epoch):
    stamp = datetime.datetime.fromtimestamp(epoch, datetime.timezone.utc)
    return stamp.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def observe(path):
    """What :func:`evidence.judge_run_dir` needs of a file, measured without following a link, and
    the bytes that were hashed (so the record judged is the record verified)."""
    try:
        info = os.lstat(path)
    except OSError:
        return {"exists": False}, None
    if stat.S_ISLNK(info.st_mode):
        return {"exists": True, "is_link": True, "is_file": False}, None
    if not stat.S_ISREG(info.st_mode):
        return {"exists": True, "is_file": False}, None
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        return {"exists": True, "is_file": True, "error": to_native(exc)}, None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return {"exists": True, "is_file": False}, None
        if info.st_size > MAX_RECORD_BYTES:
            return {"exists": True, "is_file": True, "error": "larger than %d bytes" % MAX_RECORD_BYTES}, None
        chunks = []
        while True:
            block = os.read(fd, 1024 * 1024)
            if not block:
                break
            chunks.append(block)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    return {"exists": True, "is_file": True, "size": len(data), "sha256": hashlib.sha256(data).hexdigest(),
            "mode": stat.S_IMODE(info.st_mode)}, data


def read_evidence(root, run_id, phase):
    """``(reasons, path, entry, record, sha256)`` of the run's newest record of ``phase``."""
    problem = pf.check_private_root(root)
    if problem:
        return ["evidence_root: %s" % problem], None, None, None, None
    run_dir = os.path.join(root, run_id)
    if not os.path.lexists(run_dir):
        return ["%s: no evidence directory for the canary run %s (found nothing, expected its gate run's evidence)"
                % (run_dir, run_id)], None, None, None, None
    if os.path.islink(run_dir) or not os.path.isdir(run_dir):
        return ["%s: the run directory is a link or not a directory; expected a directory" % run_dir], None, None, None, None
    reasons = []
    mode = stat.S_IMODE(os.lstat(run_dir).st_mode)
    if mode & 0o077:
        reasons.append("%s: the run directory has mode %04o; expected 0700" % (run_dir, mode))
    index_path = os.path.join(run_dir, evidence.INDEX_FILE)
    if os.path.islink(index_path):
        return reasons + ["%s: the evidence index is a symbolic link; expected a file" % index_path], None, None, None, None
    text = pf.read_text(index_path)
    if text is None:
        return reasons + ["%s: %s; expected the canary run's evidence index" % (
            index_path, "cannot be read" if os.path.lexists(index_path) else "does not exist")], None, None, None, None
    try:
        index = evidence.load_index(text, run_id)
    except evidence.EvidenceError as exc:
        return reasons + ["%s: %s" % (index_path, exc)], None, None, None, None
    if index.get("run_id") != run_id:
        reasons.append("%s: run_id found %r, expected %r" % (index_path, index.get("run_id"), run_id))
    try:
        names = os.listdir(run_dir)
    except OSError as exc:
        return reasons + ["%s: cannot be listed: %s" % (run_dir, to_native(exc))], None, None, None, None
    entry = cc.newest_entry(index, phase)
    files = set(evidence.record_names(names)) | set(e["file"] for e in index["records"])
    observed, data = {}, {}
    for name in files:
        if os.path.basename(name) != name or name in ("", ".", ".."):
            observed[name] = {"exists": False}
            continue
        observed[name], data[name] = observe(os.path.join(run_dir, name))
        if observed[name].get("error"):
            reasons.append("%s: cannot be read: %s" % (os.path.join(run_dir, name), observed[name]["error"]))
    for bad in evidence.judge_run_dir(index, observed):
        reasons.append("%s: does not verify against the evidence index: %s" % (
            os.path.join(run_dir, bad["file"]), "; ".join(bad["problems"])))
    if entry is None:
        return reasons + ["%s: the evidence index lists no %s record (found %s); expected the canary's %s record" % (
            index_path, phase, ", ".join(sorted(set(e.get("phase") for e in index["records"]))) or "no records",
            phase)], None, None, None, None
    path = os.path.join(run_dir, entry["file"])
    raw = data.get(entry["file"])
    if raw is None:
        return reasons, path, entry, None, None
    sha256 = observed[entry["file"]].get("sha256")
    try:
        record = json.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        return reasons + ["%s: not a JSON record: %s" % (path, exc)], path, entry, None, sha256
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
    started = time.time()
    params = module.params
    timing = dict(started_at=rfc3339(started), finished_at=None, duration_seconds=None)
    root = params["evidence_root"]
    if not root or not os.path.isabs(root):
        module.fail_json(msg="evidence_root: expected an absolute path, got %r" % (root,), **timing)
    try:
        evidence.validate_names(params["run_id"], params["phase"])
        target = cc.validate_target(params["target_version"])
        hops = cc.validate_hops(params["hops"])
    except (evidence.EvidenceError, cc.ClearanceError) as exc:
        module.fail_json(msg=str(exc), **timing)
    if params["release"] is not None and not params["release"].strip():
        module.fail_json(msg="release: expected a Helm release name or nothing, got an empty string", **timing)
    reasons, path, entry, record, sha256 = read_evidence(os.path.normpath(root), params["run_id"], params["phase"])
    result = cc.clearance(reasons, path=path, entry=entry, record=record, sha256=sha256, run_id=params["run_id"],
                          phase=params["phase"], target_version=target, hops=hops, release=params["release"])
    finished = time.time()
    timing.update(finished_at=rfc3339(finished), duration_seconds=round(finished - started, 6))
    module.exit_json(changed=False, **dict(result, **timing))


if __name__ == "__main__":
    main()
