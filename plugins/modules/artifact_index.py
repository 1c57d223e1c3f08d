#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: artifact_index
short_description: Index a gate run's rollback artifacts and re-check every one of them
version_added: 0.2.0
description:
  - Keeps one index per gate run, C(<run_dir>/artifacts/index.json) (format in docs/artifacts.md), that
    lists every rollback artifact (etcd snapshot, Helm state, cluster state, node files) with its
    sha256, size, kind, source, host, the time it was recorded and the command that verifies it.
  - O(state=present) adds the O(artifacts) that capture modules return
    (M(gpufleet.dra_gate.cluster_state), C(etcd_snapshot), C(helm_state)); it hashes every file, fails
    when a file is missing or differs from the sha256/size its capture reported, and merges by path -
    re-adding an unchanged artifact changes nothing, a different content under an indexed path is
    refused (artifacts are never rewritten). O(skipped) records captures that were not taken, so a
    skipped capture is reported as skipped and never as passed.
  - O(state=verified) re-checks EVERY entry of the index - the file exists, is a regular file, has the
    indexed size and sha256 and is not readable by group or others - and for C(etcd-snapshot) entries
    also runs C(etcdutl snapshot status -w json) (else C(etcdctl)) when one of them is installed and
    compares hash, revision and key count with what the capture recorded. It also checks the run's
    evidence records against the evidence index C(<run_dir>/index.json) - a record file the index
    does not list (a crash between writing the record and updating the index), an indexed record
    that is missing, a symbolic link or has another sha256 is bad. It fails on any mismatch
    or absence, listing each bad entry. Later phases run it first (role
    C(gpufleet.dra_gate.artifacts_verified)) and refuse to change anything when it fails.
  - The index is written mode 0600 through a temporary file, fsync and a rename, under an exclusive lock,
    in a directory of mode 0700. Artifact contents are never returned.
  - The evidence root (the parent of O(run_dir)) must exist and be private (a directory, not a link, owned
    by the running user, not writable by group or others); otherwise the module fails naming the path.
  - Runs on the controller (C(delegate_to=localhost)).
author:
  - gpufleet maintainers (@gpufleet)
extends_documentation_fragment:
  - gpufleet.dra_gate.attributes.controller
options:
  run_dir:
    description:
      - The gate run's evidence directory, C(<evidence_root>/<run_id>); the index is
        C(<run_dir>/artifacts/index.json). Created (mode 0700) by O(state=present) when missing; its
        parent (the evidence root) must exist and be private.
    type: path
    required: true
  state:
    description:
      - C(present) adds O(artifacts) and O(skipped) to the index.
      - C(verified) re-checks every indexed artifact and fails when any is missing or differs. An
        index that does not exist fails too (there is nothing to roll back to).
    type: str
    choices: [present, verified]
    default: present
  artifacts:
    description:
      - Entries to add (O(state=present)), as the capture modules return them.
      - Each needs C(path) (absolute), C(kind) (lower-case token such as C(etcd-snapshot), C(crd),
        C(cdi-spec)) and C(source) (where it came from); C(sha256), C(size), C(verify) (command text),
        C(host) and any further keys are optional and kept.
    type: list
    elements: dict
    default: []
  skipped:
    description:
      - Captures that were not taken (O(state=present)), each with C(kind), C(source) and C(reason).
        Merged by kind and source.
    type: list
    elements: dict
    default: []
  host:
    description:
      - Host recorded for entries that do not name theirs (where the file lives).
    type: str
    default: localhost
  local_hosts:
    description:
      - Host names that mean this machine, besides C(localhost), C(127.0.0.1) and C(::1). An entry on any
        other host cannot be re-checked here and fails O(state=verified).
    type: list
    elements: str
    default: []
  on_conflict:
    description:
      - What O(state=present) does when an indexed path is added again with another sha256, size or kind.
      - C(fail) refuses (the default; an artifact is never rewritten in place), C(replace) re-indexes it.
    type: str
    choices: [fail, replace]
    default: fail
  etcd_status:
    description:
      - Whether O(state=verified) runs the structural check of C(etcd-snapshot) entries.
      - C(auto) runs it when O(etcdutl) or O(etcdctl) is found (and notes that it did not otherwise),
        C(never) skips it.
    type: str
    choices: [auto, never]
    default: auto
  etcdutl:
    description: Path of C(etcdutl) for the structural check; default is the one on C(PATH). Preferred over O(etcdctl).
    type: path
  etcdctl:
    description: Path of C(etcdctl) for the structural check when there is no C(etcdutl); default is the one on C(PATH).
    type: path
  timeout:
    description:
      - Deadline in seconds of each structural check command (C(snapshot status)); at the deadline its process group
        is killed and the entry is bad, the message naming the command and the deadline.
    type: float
    default: 120
attributes:
  check_mode:
    support: full
    description:
      - O(state=present) writes nothing and reports the index it would write; files that do not exist
        yet (captures that did not write in check mode) are listed with the sha256 their capture computed.
      - O(state=verified) only reads, and checks the same in check mode.
  diff_mode:
    support: full
    description: O(state=present) returns the index before and after.
notes:
  - The C(verify) text of an entry is for humans; the module checks files itself and runs only
    C(etcdutl)/C(etcdctl), with an argv list.
seealso:
  - module: gpufleet.dra_gate.cluster_state
  - module: gpufleet.dra_gate.gate_evidence
"""

EXAMPLES = r"""
- name: Index what the captures wrote
  gpufleet.dra_gate.artifact_index:
    run_dir: "/var/lib/dra-gate/evidence/{{ dra_gate_run_id }}"
    state: present
    artifacts: "{{ cluster_capture.artifacts + helm_capture.artifacts + [etcd_snapshot_result.artifact] }}"
    skipped:
      - kind: helm-release
        source: gpu-operator/gpu-operator
        reason: the release does not exist
  delegate_to: localhost
  run_once: true

- name: Refuse to go on unless every artifact of the run still verifies
  gpufleet.dra_gate.artifact_index:
    run_dir: "/var/lib/dra-gate/evidence/{{ dra_gate_run_id }}"
    state: verified
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
index_path:
  description: Path of the index.
  returned: always
  type: str
  sample: /var/lib/dra-gate/evidence/20261130T080000Z/artifacts/index.json
sha256:
  description: SHA-256 of the index as written (or as it would be written in check mode); null when absent.
  returned: always
  type: str
added:
  description: Paths added to the index (O(state=present)).
  returned: always
  type: list
  elements: str
replaced:
  description: Paths re-indexed with other content (O(state=present), O(on_conflict=replace)).
  returned: always
  type: list
  elements: str
summary:
  description: C(artifact_count), C(by_kind) (kind -> count), C(total_bytes) and C(skipped) (kind, source, reason) of the index.
  returned: always
  type: dict
  sample: {"artifact_count": 3, "by_kind": {"crd": 2, "etcd-snapshot": 1}, "total_bytes": 28931, "skipped": []}
summary_markdown:
  description: The same as a short Markdown text (used as the snapshot phase's evidence summary).
  returned: always
  type: str
verified:
  description: True when every entry verified (O(state=verified)); null for O(state=present).
  returned: always
  type: bool
checked:
  description: Number of entries re-checked (O(state=verified)).
  returned: always
  type: int
evidence_checked:
  description: Number of evidence records checked against the evidence index (O(state=verified)).
  returned: when O(state=verified)
  type: int
bad:
  description: The entries that failed (O(state=verified)), each with C(path), C(kind), C(host) and C(problems).
  returned: always
  type: list
  elements: dict
notes:
  description: What was not checked and why (for example no etcdutl/etcdctl for the structural check).
  returned: always
  type: list
  elements: str
"""

import hashlib
import os

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_bytes

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.common import clock
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.wrappers import command_runner
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.evidence import private_files as pf
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.evidence import artifacts as art
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.evidence import records as evidence
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.evidence import run_dir as run_files


def present(module, index, index_path, before, run_id, now):
    params = module.params
    entries, problems = [], []
    try:
        incoming = [art.normalize_entry(e, i, now, params["host"]) for i, e in enumerate(params["artifacts"])]
        skipped = [art.normalize_skipped(s, i, now) for i, s in enumerate(params["skipped"])]
    except art.ArtifactError as exc:
        module.fail_json(msg=str(exc))
    for entry in incoming:
        if not art.is_local(entry["host"], params["local_hosts"]):
            problems.append("%s: on host %s, not on this machine; fetch it to the controller and index the copy"
                            % (entry["path"], entry["host"]))
            continue
        observed = run_files.measure(entry["path"])
        if module.check_mode and not observed.get("exists") and entry.get("sha256") and entry.get("size") is not None:
            entries.append(entry)  # not written in check mode: the capture's own sha256 stands for it
            continue
        if observed.get("error"):
            problems.append("%s: cannot be read: %s" % (entry["path"], observed["error"]))
            continue
        entry, found = art.complete_entry(entry, observed)
        problems.extend("%s: %s" % (entry["path"], p) for p in found)
        entries.append(entry)
    if problems:
        module.fail_json(msg="artifacts: %d entr%s cannot be indexed: %s" % (
            len(problems), "y" if len(problems) == 1 else "ies", "; ".join(problems)), problems=problems)
    try:
        new, added, replaced = art.merge(index, run_id, entries, skipped, now, params["on_conflict"])
    except art.ArtifactError as exc:
        module.fail_json(msg="artifacts: %s" % exc)
    text = art.dumps(new)
    changed = before is None or bool(added or replaced) or new.get("skipped") != index.get("skipped")
    summary = art.summarize(new)
    result = dict(changed=changed, index_path=index_path, added=added, replaced=replaced, summary=summary,
                  summary_markdown=art.render_markdown(summary, None, None, index_path),
                  sha256=hashlib.sha256(to_bytes(text)).hexdigest(), verified=None, checked=0, bad=[], notes=[])
    if module._diff:
        result["diff"] = dict(before=before or "", after=text, before_header=index_path, after_header=index_path)
    if changed and not module.check_mode:
        try:
            directory = os.path.dirname(index_path)
            pf.ensure_private_dir(directory)
            # the run directory's one lock (gate_evidence takes the same), not a file among the artifacts
            with pf.locked(os.path.dirname(directory)):
                if pf.read_text(index_path) != before:
                    module.fail_json(msg="run_dir: %s changed while this run merged into it (another writer); "
                                         "run again" % index_path, **result)
                pf.write_private(index_path, text, replace=True)
        except (pf.PrivateFileError, IOError, OSError) as exc:
            module.fail_json(msg="run_dir: cannot write %s: %s" % (index_path, exc), **result)
    module.exit_json(**result)


def verify_evidence(module, run_dir):
    """The run's evidence records against the evidence index (``<run_dir>/index.json``): a record the
    index does not list (a crash between the record and the index update), an indexed record that is
    missing, a link or differs. Returns ``(bad entries, records checked)``."""
    index_path = os.path.join(run_dir, evidence.INDEX_FILE)
    try:
        names = os.listdir(run_dir)
    except OSError:
        return [], 0
    if os.path.islink(index_path):
        return [{"path": index_path, "kind": "evidence-index", "host": "localhost",
                 "problems": ["the evidence index is a symbolic link (never followed)"]}], 1
    text = pf.read_text(index_path)
    try:
        index = evidence.load_index(text, os.path.basename(run_dir))
    except evidence.EvidenceError as exc:
        return [{"path": index_path, "kind": "evidence-index", "host": "localhost", "problems": [str(exc)]}], 1
    files = set(evidence.record_names(names)) | set(e["file"] for e in index["records"])
    observed = {}
    for name in files:
        if os.path.basename(name) != name or name in ("", ".", ".."):
            observed[name] = {"exists": False}
            continue
        observed[name] = run_files.measure(os.path.join(run_dir, name), follow=False)
    bad = [{"path": os.path.join(run_dir, item["file"]), "kind": "evidence-record", "host": "localhost",
            "problems": item["problems"]} for item in evidence.judge_run_dir(index, observed)]
    return bad, len(files)


def etcd_tool(module):
    """The given etcdutl, else the given etcdctl, else the first of them found on PATH."""
    for name in ("etcdutl", "etcdctl"):
        if module.params[name]:
            if not os.access(module.params[name], os.X_OK):
                module.fail_json(msg="%s: %s is not an executable file" % (name, module.params[name]))
            return module.params[name]
    for name in ("etcdutl", "etcdctl"):
        path = module.get_bin_path(name)
        if path:
            return path
    return None


def verified(module, index, index_path, before):
    params = module.params
    plan = art.verification_plan(index, params["local_hosts"])
    tool = etcd_tool(module) if params["etcd_status"] == "auto" else None
    bad, notes = [], []
    entries = index.get("artifacts") or []
    for item in plan:
        entry = entries[item["position"]]
        if item["problem"]:
            problems = [item["problem"]]
        else:
            observed = run_files.measure(item["path"])
            problems = ["cannot be read: %s" % observed["error"]] if observed.get("error") else art.judge(entry, observed)
            if not problems and "etcd-status" in item["checks"]:
                if tool:
                    status = command_runner.run(art.etcd_status_argv(tool, item["path"]), params["timeout"],
                                                environ_update={"ETCDCTL_API": "3"})
                    if status.timed_out:
                        problems = ["structural check %s" % status.describe()]
                    else:
                        problems = art.judge_etcd_status(entry, status.rc, status.stdout, status.stderr)
                elif params["etcd_status"] == "auto":
                    notes.append("%s: no etcdutl or etcdctl in the PATH; the structural check was not run "
                                 "(sha256 and size were checked)" % item["path"])
        if problems:
            bad.append({"path": item["path"], "kind": item["kind"], "host": item["host"], "problems": problems})
    evidence_bad, evidence_checked = verify_evidence(module, os.path.dirname(os.path.dirname(index_path)))
    bad.extend(evidence_bad)
    summary = art.summarize(index)
    ok = not bad
    result = dict(changed=False, index_path=index_path, added=[], replaced=[], summary=summary,
                  summary_markdown=art.render_markdown(summary, ok, bad, index_path),
                  sha256=hashlib.sha256(to_bytes(before)).hexdigest(), verified=ok, checked=len(plan), bad=bad,
                  notes=notes, evidence_checked=evidence_checked)
    if not ok:
        total = len(plan) + evidence_checked
        module.fail_json(msg="the artifact index %s does not verify: %d of %d entr%s bad: %s" % (
            index_path, len(bad), total, "y" if total == 1 else "ies",
            "; ".join("%s (%s)" % (b["path"], "; ".join(b["problems"])) for b in bad)), **result)
    module.exit_json(**result)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            run_dir=dict(type="path", required=True),
            state=dict(type="str", choices=["present", "verified"], default="present"),
            artifacts=dict(type="list", elements="dict", default=[]),
            skipped=dict(type="list", elements="dict", default=[]),
            host=dict(type="str", default="localhost"),
            local_hosts=dict(type="list", elements="str", default=[]),
            on_conflict=dict(type="str", choices=["fail", "replace"], default="fail"),
            etcd_status=dict(type="str", choices=["auto", "never"], default="auto"),
            etcdutl=dict(type="path"),
            etcdctl=dict(type="path"),
            timeout=dict(type="float", default=120.0),
        ),
        supports_check_mode=True,
    )
    params = module.params
    if not params["timeout"] > 0:
        module.fail_json(msg="timeout: expected a positive number of seconds, got %r" % params["timeout"])
    run_dir = params["run_dir"].rstrip("/") or "/"
    run_id = os.path.basename(run_dir)
    index_path = os.path.join(run_dir, art.INDEX_DIR, art.INDEX_FILE)
    problem = pf.check_private_root(os.path.dirname(run_dir))
    if problem:
        module.fail_json(msg="run_dir: %s" % problem, index_path=index_path, verified=False, bad=[], checked=0)
    if os.path.lexists(run_dir) and (os.path.islink(run_dir) or not os.path.isdir(run_dir)):
        module.fail_json(msg="run_dir: %r is a link or not a directory" % run_dir)
    if os.path.islink(index_path):
        module.fail_json(msg="run_dir: the index %s is a symbolic link; refusing to read or replace it" % index_path)
    before = pf.read_text(index_path)
    if before is None and os.path.exists(index_path):
        module.fail_json(msg="run_dir: the index %s exists but cannot be read" % index_path)
    try:
        index = art.load_index(before, run_id)
    except art.ArtifactError as exc:
        module.fail_json(msg="%s: %s" % (index_path, exc), index_path=index_path)
    now = clock.utc_now()
    if params["state"] == "present":
        present(module, index, index_path, before, run_id, now)
    if before is None:
        module.fail_json(msg="the artifact index %s does not exist: this run has no verified rollback artifacts "
                             "(run playbooks/snapshot.yml first)" % index_path, index_path=index_path, verified=False,
                         bad=[], checked=0)
    verified(module, index, index_path, before)


if __name__ == "__main__":
    main()
