#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: gate_evidence
short_description: Write a phase's evidence record into a gate run's evidence directory
version_added: 0.1.0
description:
  - Each phase of a gate run (preflight, snapshot, upgrade, canary, drain, rollback, decision)
    writes one JSON record (schema C(gpufleet.dra_gate/evidence-record), versioned) with its inputs,
    tool versions, timestamps and results into C(<root>/<run_id>/), updates the run's C(index.json)
    (file, sha256, verdict per phase) and renders readable Markdown summaries (C(<phase>.md) and
    the run's C(summary.md)).
  - Files are written mode 0600 (they hold cluster state) through a temporary file and a rename,
    so a reader never sees half a record.
  - Runs on the controller; use it with C(delegate_to=localhost).
author:
  - gpufleet maintainers (@gpufleet)
options:
  root:
    description: Directory that holds the gate runs' evidence directories. Created (mode 0700) if missing.
    type: path
    required: true
  run_id:
    description: Identifier of the gate run; letters, digits, C(.), C(_), C(-), at most 128.
    type: str
    required: true
  phase:
    description: The phase that writes this record.
    type: str
    required: true
    choices: [preflight, snapshot, upgrade, canary, drain, rollback, decision]
  record:
    description:
      - The record. Required keys C(inputs), C(results), C(tools) (dicts) and C(started_at);
        optional C(finished_at) (defaults to now) and any further keys (for example C(nodes)).
    type: dict
    required: true
  summary:
    description:
      - Markdown summary of the phase. When omitted, the module renders one for the phases it
        knows (preflight).
    type: str
attributes:
  check_mode:
    support: full
    description: Writes nothing in check mode; reports the path and whether it would change.
  diff_mode:
    support: full
    description: Reports what the written file would change.
notes:
  - In check mode nothing is written; C(path) says where the record would go.
seealso:
  - module: gpufleet.dra_gate.compat_check
"""

EXAMPLES = r"""
- name: Record the preflight evidence
  gpufleet.dra_gate.gate_evidence:
    root: /var/lib/dra-gate/evidence
    run_id: "{{ dra_gate_run_id }}"
    phase: preflight
    record:
      started_at: "{{ started }}"
      inputs: {target: "{{ target }}"}
      tools: {ansible_core: "{{ ansible_version.full }}"}
      results: "{{ check }}"
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
path:
  description: Path of the phase record.
  returned: always
  type: str
  sample: /var/lib/dra-gate/evidence/20261130T080000Z/01-preflight.json
run_dir:
  description: The run's evidence directory.
  returned: always
  type: str
summary_path:
  description: Path of the run's Markdown summary.
  returned: always
  type: str
sha256:
  description: SHA-256 of the record as written (or as it would be written in check mode).
  returned: always
  type: str
"""

import datetime
import hashlib
import json
import os

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_bytes

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.private_files import read_text, write_private
from ansible_collections.gpufleet.dra_gate.plugins.module_utils import evidence

RENDERERS = {"preflight": evidence.render_preflight}


def _summaries(run_dir, index, phase, summary):
    texts = {}
    for entry in index.get("records", []):
        texts[entry["phase"]] = summary if entry["phase"] == phase else read_text(os.path.join(run_dir, entry["phase"] + ".md"))
    return texts


def main():
    module = AnsibleModule(
        argument_spec=dict(
            root=dict(type="path", required=True),
            run_id=dict(type="str", required=True),
            phase=dict(type="str", required=True, choices=list(evidence.PHASES)),
            record=dict(type="dict", required=True),
            summary=dict(type="str"),
        ),
        supports_check_mode=True,
    )
    params = module.params
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    try:
        record = evidence.build_record(params["run_id"], params["phase"], params["record"], now)
    except evidence.EvidenceError as exc:
        module.fail_json(msg=str(exc))
    if os.path.exists(params["root"]) and not os.path.isdir(params["root"]):
        module.fail_json(msg="root: %r exists and is not a directory; expected an evidence directory" % params["root"])

    run_dir = os.path.join(params["root"], params["run_id"])
    path = os.path.join(run_dir, evidence.record_filename(params["phase"]))
    text = evidence.dumps(record)
    sha256 = hashlib.sha256(to_bytes(text)).hexdigest()
    summary = params["summary"]
    if summary is None:
        renderer = RENDERERS.get(params["phase"])
        summary = renderer(record) if renderer else "# %s\n\nSee %s.\n" % (params["phase"], os.path.basename(path))

    before = read_text(path)
    result = dict(changed=before != text, path=path, run_dir=run_dir, sha256=sha256,
                  summary_path=os.path.join(run_dir, "summary.md"))
    if module._diff:
        result["diff"] = dict(before=before or "", after=text, before_header=path, after_header=path)
    if not result["changed"] or module.check_mode:
        module.exit_json(**result)

    try:
        for directory in (params["root"], run_dir):
            if not os.path.isdir(directory):
                os.makedirs(directory, 0o700)
        index_path = os.path.join(run_dir, "index.json")
        index_text = read_text(index_path)
        index = json.loads(index_text) if index_text else {}
        index = evidence.update_index(index, params["run_id"], params["phase"], os.path.basename(path), sha256, now,
                                      (record.get("results") or {}).get("verdict"))
        write_private(path, text, replace=True)
        write_private(os.path.join(run_dir, params["phase"] + ".md"), summary, replace=True)
        write_private(result["summary_path"], evidence.render_run_summary(index, _summaries(run_dir, index, params["phase"], summary)), replace=True)
        write_private(index_path, evidence.dumps(index), replace=True)
    except (IOError, OSError, ValueError) as exc:
        module.fail_json(msg="root: cannot write the evidence under %s: %s" % (run_dir, exc), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
