#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: gate_report
short_description: Write the reports of a gate decision from its decision record
version_added: 0.9.0
description:
  - Reads the decision record C(decision.json) that M(gpufleet.dra_gate.gate_decision) wrote and writes its
    reports next to it (or into O(dest)) - C(report.html) (one self-contained page with the decisions,
    the acceptance worksheet, the claim-latency CDF, the drain and rollback timelines, the compatibility
    findings, the evidence phases and the inputs; it opens offline and prints), C(summary.md) (the
    decisions with their reasons, the worksheet, the phases) and C(junit.xml) (one test suite per
    decision, one test case per gate).
  - The reports show the record only; nothing is recomputed from the evidence. A picture whose data the
    record does not hold reads C(not measured); a value the record does not hold reads C(not recorded).
  - Files are written mode 0600 (atomically, into a directory created 0700), and only when their bytes
    differ; the same record gives the same bytes.
  - Runs on the controller (C(delegate_to=localhost)). Reference in docs/decision.md ("Reports").
author:
  - gpufleet maintainers (@gpufleet)
extends_documentation_fragment:
  - gpufleet.dra_gate.attributes.controller
requirements:
  - jinja2 (for O(formats=html))
  - matplotlib (for O(formats=html))
options:
  decision:
    description:
      - Path of the decision record (C(decision.json)). Its C(schema) must be
        C(gpufleet.dra_gate/decision-record), else the module fails naming the field.
    type: path
    required: true
  dest:
    description: The directory the reports are written to (created mode 0700); default the record's directory.
    type: path
  formats:
    description: The reports to write.
    type: list
    elements: str
    choices: [html, markdown, junit]
    default: [html, markdown, junit]
attributes:
  check_mode:
    support: full
    description: Renders the reports and says which files would change; writes nothing.
  diff_mode:
    support: partial
    description: The before and after of C(summary.md) (when O(formats) has C(markdown)).
notes:
  - The record's own integrity is M(gpufleet.dra_gate.gate_decision)'s (its C(recompute) state); this module
    trusts the record it is given.
seealso:
  - module: gpufleet.dra_gate.gate_decision
"""

EXAMPLES = r"""
- name: Write the reports of the decision
  gpufleet.dra_gate.gate_report:
    decision: "{{ decision.path }}"
  delegate_to: localhost
  run_once: true
  register: report

- name: Show the worksheet
  ansible.builtin.debug:
    msg: "{{ report.worksheet }}"
  run_once: true

- name: Keep the outcomes for the play recap
  ansible.builtin.set_stats:
    data:
      dra_gate: "{{ report.stats }}"
  run_once: true

- name: Only the JUnit file, for CI, into the CI's results directory
  gpufleet.dra_gate.gate_report:
    decision: /var/lib/dra-gate/evidence/dra-canary-20261206T120000Z/decision.json
    dest: /srv/ci/results
    formats: [junit]
  delegate_to: localhost
"""

RETURN = r"""
paths:
  description: The path of each report (null for a format not asked for); written unless in check mode.
  returned: always
  type: dict
  contains:
    html:
      description: Path of C(report.html).
      type: str
    markdown:
      description: Path of C(summary.md).
      type: str
    junit:
      description: Path of C(junit.xml).
      type: str
  sample: {"html": "/var/lib/dra-gate/evidence/run/report.html", "markdown": "/var/lib/dra-gate/evidence/run/summary.md",
           "junit": "/var/lib/dra-gate/evidence/run/junit.xml"}
changed_files:
  description: The reports whose bytes changed (in check mode, the ones that would change).
  returned: always
  type: list
  elements: str
stats:
  description: The compact data for M(ansible.builtin.set_stats) - both outcomes, each gate's status by id,
    C(decided_at), C(inputs_sha256) and C(decision_record) (the record's path).
  returned: always
  type: dict
  sample: {"operator_upgrade": "accept", "dra_promotion": "promote", "gates": {"claim_success": "pass"},
           "decided_at": "2026-12-07T01:30:00.000000Z", "decision_record": "/var/lib/dra-gate/evidence/run/decision.json"}
worksheet:
  description: One printable line per gate - gate, status, measured, threshold, owner.
  returned: always
  type: list
  elements: str
  sample: ["claim_success  pass  398 successful of 400 attempted (99.5 %)  >= 99.0 (claim_success_rate_min_percent)  GPU platform team"]
msg:
  description: What was written (or, in check mode, would be).
  returned: always
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

import json
import os

from ansible.module_utils.basic import AnsibleModule, missing_required_lib
from ansible.module_utils.common.text.converters import to_native

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.common.module_run import ModuleRun
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.evidence import private_files as pf
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.evidence import report_render as rr

#: The file of each format, in the order written.
FILES = (("html", "report.html"), ("markdown", "summary.md"), ("junit", "junit.xml"))
#: A decision record larger than this is not read.
MAX_RECORD_BYTES = 64 * 1024 * 1024


def read_record(path):
    """The decision record at ``path`` (raises ``rr.ReportError`` naming the path)."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_RECORD_BYTES + 1)
    except (IOError, OSError) as exc:
        raise rr.ReportError("decision: %s cannot be read: %s" % (path, to_native(exc)))
    if len(data) > MAX_RECORD_BYTES:
        raise rr.ReportError("decision: %s is larger than %d bytes" % (path, MAX_RECORD_BYTES))
    try:
        record = json.loads(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise rr.ReportError("decision: %s is not JSON: %s" % (path, exc))
    try:
        rr.check_record(record)
    except rr.ReportError as exc:
        raise rr.ReportError("decision: %s: %s" % (path, exc))
    return record


def current_bytes(path):
    """The bytes of the regular file at ``path`` (not through a link), or None."""
    if os.path.islink(path) or not os.path.isfile(path):
        return None
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except (IOError, OSError):
        return None


def render(record, formats):
    """``{format: bytes}`` of the formats asked for."""
    renderers = {"html": rr.render_html, "markdown": rr.render_markdown, "junit": rr.render_junit}
    return dict((name, renderers[name](record).encode("utf-8")) for name, _file in FILES if name in formats)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            decision=dict(type="path", required=True),
            dest=dict(type="path"),
            formats=dict(type="list", elements="str", choices=["html", "markdown", "junit"],
                         default=["html", "markdown", "junit"]),
        ),
        supports_check_mode=True,
    )
    run = ModuleRun(module, digits=6)
    params = module.params
    formats = params["formats"]
    if "html" in formats:
        if not rr.HAS_JINJA2:
            module.fail_json(msg=missing_required_lib("jinja2"), exception=rr.JINJA2_IMPORT_ERROR, **run.timing())
        if not rr.HAS_MATPLOTLIB:
            module.fail_json(msg=missing_required_lib("matplotlib"), exception=rr.MATPLOTLIB_IMPORT_ERROR,
                             **run.timing())
    decision = os.path.abspath(params["decision"])
    dest = os.path.abspath(params["dest"] or os.path.dirname(decision))
    with run.failing_on(rr.ReportError):
        record = read_record(decision)
        rendered = render(record, formats)
    paths = dict((name, os.path.join(dest, filename) if name in rendered else None) for name, filename in FILES)
    changed_files = [paths[name] for name, _file in FILES
                     if name in rendered and current_bytes(paths[name]) != rendered[name]]
    stats = rr.stats(record)
    stats["decision_record"] = decision
    result = dict(changed=bool(changed_files), paths=paths, changed_files=changed_files, stats=stats,
                  worksheet=rr.worksheet_lines(record))
    if module._diff and "markdown" in rendered:
        before = current_bytes(paths["markdown"])
        result["diff"] = {"before": before.decode("utf-8", "replace") if before is not None else "",
                          "after": rendered["markdown"].decode("utf-8"),
                          "before_header": paths["markdown"], "after_header": paths["markdown"]}
    if module.check_mode:
        result["msg"] = ("check mode: nothing written; would write %s" % ", ".join(changed_files) if changed_files
                         else "check mode: nothing written; every report is up to date")
        run.exit(**result)
    with run.failing_on((pf.PrivateFileError, OSError), prefix="dest: ", **result):
        pf.ensure_private_dir(dest)
        for name, _file in FILES:
            if paths[name] in changed_files:
                pf.write_private(paths[name], rendered[name], replace=True)
    result["msg"] = "wrote %s" % ", ".join(changed_files) if changed_files else "every report is up to date"
    run.exit(**result)


if __name__ == "__main__":
    main()
