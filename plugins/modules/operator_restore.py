#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: operator_restore
short_description: Put the GPU Operator's captured cluster state back (CRDs, custom resources, GPU node labels and taints)
version_added: 0.3.0
description:
  - The rollback's inverse of M(gpufleet.dra_gate.crd_prepare). Helm rolls a release back, not its CRDs,
    nor the labels and taints on the GPU nodes. This module reads the C(cluster_state) capture that the
    snapshot phase indexed under the gate run's directory
    (C(<run_dir>/artifacts/cluster-state/<stamp>/), listed in C(<run_dir>/artifacts/index.json)) and makes
    the cluster equal to it again.
  - Every capture file used is first checked against its index entry (sha256 and size), read without
    following a symbolic link. A missing or unreadable file, a mismatch, a file that is not the expected
    object or an index that does not parse fails the module naming the file, before anything is read from
    or written to the cluster.
  - CRDs (O(restore) C(crds)) - a captured CRD that is absent is created from the capture (without
    resourceVersion, uid, creationTimestamp, generation, managedFields and status); one whose spec, labels
    or annotations differ is replaced (C(PUT)) with the captured spec, labels and annotations under the
    live metadata, so a schema field that only the newer CRD had is gone afterwards; an equal one is not
    written. Created and replaced CRDs are waited for until Established (within O(api_deadline)). CRDs of
    the captured CRDs' API groups and of C(nvidia.com) and C(resource.nvidia.com) (the groups
    M(gpufleet.dra_gate.cluster_state) captures by default) that exist now but were not captured (new in
    the target chart) are reported in RV(extra.crds) and never deleted (deleting a CRD deletes its objects).
  - Custom resources (O(restore) C(custom_resources), of the kinds O(custom_resource_kinds)) - the same,
    created when absent, replaced (live metadata and status kept, captured content, labels and
    annotations back) when different. Objects of those kinds that exist now but were not captured are
    reported in RV(extra.custom_resources) and left alone.
  - GPU nodes (O(restore) C(gpu_nodes)) - one JSON merge patch per node puts back the labels under
    O(label_prefixes) (keys the capture did not have are removed) and, with O(taints), C(spec.taints)
    and C(spec.unschedulable); taints with the C(node.kubernetes.io/) prefix belong to the node-lifecycle
    controllers and are left as they are now (neither removed nor re-added). When the taint list is
    replaced the patch carries the node's resourceVersion as a precondition. A captured node that no
    longer exists is listed in RV(missing_nodes) and fails the module at the end, after the rest is
    restored.
  - Idempotent - nothing is written where the cluster already equals the capture. A write that conflicts
    (HTTP 409) is retried after a fresh read, a few times within O(api_deadline).
  - Forbidden is not absent - a 403 on any read or write fails the module naming the verb and the
    resource; only a 404 means absent. Transient API failures are retried (writes only where they cannot
    have been applied).
author:
  - gpufleet maintainers (@gpufleet)
options:
  run_dir:
    description:
      - The gate run's directory; its artifact index C(artifacts/index.json) is read, and the capture's
        files are those it lists under C(artifacts/cluster-state/<stamp>/).
    type: path
    required: true
  capture:
    description:
      - The capture to restore, by its directory name (the stamp, e.g. C(20261130T080455Z) or
        C(20261130T080455Z-2)).
      - Empty means the newest cluster-state capture in the index (by its recorded capture time, then name).
    type: str
    default: ''
  restore:
    description:
      - What to put back.
    type: list
    elements: str
    choices: [crds, custom_resources, gpu_nodes]
    default: [crds, custom_resources, gpu_nodes]
  custom_resource_kinds:
    description:
      - The kinds of the captured custom resources to restore (and whose uncaptured objects are reported).
    type: list
    elements: str
    default: [ClusterPolicy]
  label_prefixes:
    description:
      - Node label keys with one of these prefixes are set back to the captured values, and such keys that
        the capture did not have are removed. Other labels are left alone.
    type: list
    elements: str
    default: [nvidia.com/, feature.node.kubernetes.io/]
  taints:
    description:
      - Whether C(spec.taints) and C(spec.unschedulable) of the GPU nodes are restored to the captured ones,
        except the C(node.kubernetes.io/) taints (left as they are now).
    type: bool
    default: true
extends_documentation_fragment:
  - gpufleet.dra_gate.k8s_auth
  - gpufleet.dra_gate.attributes.k8s
  - gpufleet.dra_gate.evidence_dir.stamped
attributes:
  check_mode:
    support: full
    description:
      - Reads and plans only; nothing is written to the cluster (resourceVersions unchanged) nor to
        O(evidence_dir). RV(changed) and RV(restored) say what would be written.
  diff_mode:
    support: full
    description:
      - Returns the before and after JSON of each object that is (or, in check mode, would be) written; for
        a node, its labels, taints and cordon.
notes:
  - Needs list/get/create/update on customresourcedefinitions, get/list/create/update on the restored
    custom resources, and get/patch on nodes.
  - A CRD replaced with the captured schema still has the newer CRD's stored versions in
    C(status.storedVersions); the API server refuses the replace when a stored version is not in the
    captured spec (a storage migration is needed first) and the module fails naming the call.
seealso:
  - module: gpufleet.dra_gate.cluster_state
  - module: gpufleet.dra_gate.artifact_index
  - module: gpufleet.dra_gate.crd_prepare
"""

EXAMPLES = r"""
- name: Put the captured CRDs, ClusterPolicy and GPU node labels/taints back (rollback)
  gpufleet.dra_gate.operator_restore:
    run_dir: "/var/lib/dra-gate/evidence/{{ dra_gate_run_id }}"
    kubeconfig: /etc/gpufleet/kubeconfig
    evidence_dir: "/var/lib/dra-gate/evidence/{{ dra_gate_run_id }}/rollback/restore"
  delegate_to: localhost
  run_once: true
  register: restored

- name: Only the CRDs, from a named capture, as a dry run with diffs
  gpufleet.dra_gate.operator_restore:
    run_dir: "/var/lib/dra-gate/evidence/{{ dra_gate_run_id }}"
    capture: 20261130T080455Z
    restore: [crds]
  check_mode: true
  diff: true
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
changed:
  description: Whether anything was written (in check mode, would be).
  returned: always
  type: bool
restored:
  description: What was written (in check mode, would be), per section.
  returned: always
  type: dict
  contains:
    crds:
      description: Names of the CRDs created or replaced.
      type: list
      elements: str
    custom_resources:
      description: The custom resources created or replaced, as C(Kind/name) (C(Kind/namespace/name) when namespaced).
      type: list
      elements: str
    nodes:
      description: Names of the GPU nodes patched.
      type: list
      elements: str
  sample: {"crds": ["clusterpolicies.nvidia.com"], "custom_resources": ["ClusterPolicy/cluster-policy"], "nodes": ["gpu-1"]}
unchanged:
  description: What already equalled the capture and was not written, with the same keys as RV(restored).
  returned: always
  type: dict
extra:
  description: What exists now but the capture does not have; reported, never deleted.
  returned: always
  type: dict
  contains:
    crds:
      description: CRDs of the captured CRDs' groups, C(nvidia.com) and C(resource.nvidia.com) that were not captured
        (e.g. new in the target chart).
      type: list
      elements: str
    custom_resources:
      description: Objects of O(custom_resource_kinds) that were not captured, as C(Kind/name).
      type: list
      elements: str
missing_nodes:
  description: Captured GPU nodes that no longer exist (the module fails naming them, after restoring the rest).
  returned: always
  type: list
  elements: str
capture:
  description: The capture used.
  returned: always
  type: dict
  contains:
    dir:
      description: Its directory.
      type: str
    stamp:
      description: Its directory name.
      type: str
    files:
      description: The capture files read, each checked against the index (sha256 and size).
      type: list
      elements: str
artifacts:
  description: Paths of the evidence files written under O(evidence_dir) (empty without it and in check mode).
  returned: always
  type: list
  elements: str
evidence_dir:
  description: The directory the evidence was written to; null when nothing was written.
  returned: always
  type: str
started_at:
  description: When the module started, RFC 3339 UTC with microseconds.
  returned: always
  type: str
  sample: "2026-12-02T03:40:12.123456Z"
finished_at:
  description: When it finished, RFC 3339 UTC with microseconds.
  returned: always
  type: str
duration_seconds:
  description: Seconds between RV(started_at) and RV(finished_at).
  returned: always
  type: float
api_calls:
  description: Number of HTTP requests made (retries included).
  returned: always
  type: int
api_retries:
  description: How many of those requests were retries of a failed attempt.
  returned: always
  type: int
"""

import os
import stat
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster import objects as kube
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.common import clock
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster import state as cs
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.phases import crd_prepare as cp
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.phases import operator_restore as orr
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster.client import (
    K8sApiError,
    argspec,
    check_params,
    module_api_client,
    reader_from_params,
)
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.evidence.private_files import (
    PrivateFileError,
    ensure_private_dir,
    make_new_dir,
    write_private,
)

MODULE_ARG_SPEC = dict(
    run_dir=dict(type="path", required=True),
    capture=dict(type="str", default=""),
    restore=dict(type="list", elements="str", choices=list(orr.SECTIONS), default=list(orr.SECTIONS)),
    custom_resource_kinds=dict(type="list", elements="str", default=list(orr.DEFAULT_KINDS)),
    label_prefixes=dict(type="list", elements="str", default=list(orr.DEFAULT_LABEL_PREFIXES)),
    taints=dict(type="bool", default=True),
    evidence_dir=dict(type="path"),
)
CONFLICT_ATTEMPTS = 5
POLL_SECONDS = 0.25
RESULT_KEYS = ("crds", "custom_resources", "nodes")


def read_regular(path):
    """The bytes of a regular file, never following a symbolic link."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise IOError("not a regular file")
        chunks = []
        while True:
            chunk = os.read(fd, 1024 * 1024)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
    finally:
        os.close(fd)


def load_capture(params):
    """The verified capture: ``{stamp, dir, files, crds, custom_resources, nodes}`` with ``(entry, object)``
    lists; raises RestoreError naming the file before anything is written."""
    run_dir = os.path.abspath(params["run_dir"])
    if not os.path.isdir(run_dir):
        raise orr.RestoreError("run_dir: %s is not a directory" % run_dir)
    index_path = orr.index_path(run_dir)
    try:
        text = read_regular(index_path).decode("utf-8")
    except (IOError, OSError) as exc:
        raise orr.RestoreError("%s: cannot read the artifact index: %s" % (index_path, getattr(exc, "strerror", None) or exc))
    except UnicodeDecodeError as exc:
        raise orr.RestoreError("%s: the artifact index is not UTF-8: %s" % (index_path, exc))
    index = orr.parse_index(text, index_path)
    stamp, directory, entries = orr.choose_capture(index, run_dir, params["capture"])
    used = orr.entries_for(entries, params["restore"])
    bad, loaded = [], []
    for entry in used:
        try:
            data = read_regular(entry["path"])
        except (IOError, OSError) as exc:
            bad.append("%s: cannot read: %s" % (entry["path"], getattr(exc, "strerror", None) or exc))
            continue
        problems = orr.check_file(entry, data)
        if problems:
            bad.append("%s: %s" % (entry["path"], "; ".join(problems)))
        else:
            loaded.append((entry, data))
    if bad:
        raise orr.RestoreError("%d capture file(s) do not match the index %s, nothing was written: %s" % (
            len(bad), index_path, " | ".join(bad)))
    found = {"stamp": stamp, "dir": directory, "files": [e["path"] for e, _d in loaded],
             "crds": [], "custom_resources": [], "nodes": []}
    for entry, data in loaded:
        obj = orr.load_object(entry, data)
        if entry["kind"] == cs.KIND_CRD:
            found["crds"].append((entry, obj))
        elif entry["kind"] == cs.KIND_NODE:
            found["nodes"].append((entry, obj))
        elif obj.get("kind") in params["custom_resource_kinds"]:
            found["custom_resources"].append((entry, obj))
    return found


class Restorer:
    """The writes of one run, with check mode, evidence, diffs and the 409 retries."""

    def __init__(self, reader, check_mode, evidence_parent, stamp, deadline):
        self.reader = reader
        self.check_mode = check_mode
        self.evidence_parent = evidence_parent
        self.stamp = stamp
        self.deadline = deadline
        self.evidence_dir = None
        self.artifacts = []
        self.diffs = []
        self.restored = dict((k, []) for k in RESULT_KEYS)
        self.unchanged = dict((k, []) for k in RESULT_KEYS)
        self.missing_nodes = []

    def evidence(self, which, section, filename, obj):
        if self.evidence_parent is None or self.check_mode:
            return
        if self.evidence_dir is None:
            self.evidence_dir = make_new_dir(self.evidence_parent, self.stamp)
        directory = os.path.join(self.evidence_dir, which, section)
        ensure_private_dir(directory)
        path = os.path.join(directory, filename)
        write_private(path, orr.dumps(obj), replace=False)
        self.artifacts.append(path)

    def diff(self, section, name, before, after, action):
        self.diffs.append({"before_header": "%s %s (%s)" % (section, name, "absent" if before is None else "live"),
                           "after_header": "%s %s (%s)" % (section, name, action),
                           "before": orr.dumps(before) if before is not None else "", "after": orr.dumps(after)})

    def _retry(self, exc, attempt, started):
        """Whether a failed write is retried after a fresh read (a conflict, with attempts and time left)."""
        return exc.status == 409 and attempt < CONFLICT_ATTEMPTS and time.monotonic() - started < self.deadline

    def put_object(self, section, name, filename, captured, collection, path):
        """Create, replace or leave one CRD or custom resource; returns the action."""
        started = time.monotonic()
        attempt = 0
        while True:
            attempt += 1
            live = kube.get_or_none(self.reader, path)
            planned = orr.plan_object(captured, live)
            action = {"create": "created", "replace": "replaced"}.get(planned["action"], "unchanged")
            if action == "unchanged":
                self.unchanged[section].append(name)
                return action
            if self.check_mode:
                self.restored[section].append(name)
                self.diff(section, name, orr.view(live), orr.view(planned["body"]), "would be " + action)
                return action
            suffix = "" if attempt == 1 else ".attempt%d" % attempt
            if live is not None:
                self.evidence("before", section, filename + suffix + ".json", cs.strip_managed_fields(live))
            try:
                if live is None:
                    after = self.reader.request("POST", collection, body=planned["body"])
                else:
                    after = self.reader.request("PUT", path, body=planned["body"])
            except K8sApiError as exc:
                if self._retry(exc, attempt, started):
                    continue
                raise
            self.evidence("after", section, filename + suffix + ".json", cs.strip_managed_fields(after))
            self.restored[section].append(name)
            self.diff(section, name, orr.view(live), orr.view(after), action)
            return action

    def wait_established(self, name):
        """GET the CRD until it is Established, within the deadline."""
        path = "%s/%s" % (cs.CRD_PATH, name)
        deadline = time.monotonic() + self.deadline
        while True:
            obj = kube.get_or_none(self.reader, path)
            ok, shown = cp.established(obj)
            if ok:
                return
            if time.monotonic() + POLL_SECONDS > deadline:
                raise K8sApiError("GET " + path, None, "CRD %s is not Established %g s after its restore (conditions: %s)"
                                  % (name, self.deadline, ", ".join(shown) or "none"))
            time.sleep(POLL_SECONDS)

    def patch_node(self, captured, prefixes, taints):
        name = captured["metadata"]["name"]
        path = "%s/%s" % (cs.NODE_PATH, name)
        filename = cs.object_filename(captured)
        started = time.monotonic()
        attempt = 0
        while True:
            attempt += 1
            live = kube.get_or_none(self.reader, path)
            if live is None:
                self.missing_nodes.append(name)
                return
            patch, after_state = orr.node_patch(captured, live, prefixes, taints)
            if patch is None:
                self.unchanged["nodes"].append(name)
                return
            if self.check_mode:
                self.restored["nodes"].append(name)
                self.diff("node", name, orr.node_state(live), after_state, "would be patched")
                return
            suffix = "" if attempt == 1 else ".attempt%d" % attempt
            self.evidence("before", "nodes", filename[:-5] + suffix + ".json", cs.node_labels_taints(live))
            try:
                after = self.reader.request("PATCH", path, body=patch, content_type=orr.MERGE_PATCH)
            except K8sApiError as exc:
                if self._retry(exc, attempt, started):
                    continue
                raise
            self.evidence("after", "nodes", filename[:-5] + suffix + ".json", cs.node_labels_taints(after))
            self.restored["nodes"].append(name)
            self.diff("node", name, orr.node_state(live), orr.node_state(after), "patched")
            return


def list_or_empty(reader, path):
    """The items at ``path``; none when the server does not serve it (404: the CRD does not exist)."""
    return kube.list_or_none(reader, path) or []


def restore_crds(restorer, reader, capture, extra):
    live = reader.list(cs.CRD_PATH)
    captured = [obj for _entry, obj in capture["crds"]]
    extra["crds"] = orr.extra_crds(captured, live)
    for obj in sorted(captured, key=lambda o: o["metadata"]["name"]):
        name = obj["metadata"]["name"]
        action = restorer.put_object("crds", name, cs.safe_name(name), obj, cs.CRD_PATH, "%s/%s" % (cs.CRD_PATH, name))
        if action != "unchanged" and not restorer.check_mode:
            restorer.wait_established(name)


def restore_custom_resources(restorer, reader, params, capture, extra):
    names, groups = [], set(cs.DEFAULT_GROUPS)
    groups.update(orr.captured_groups([obj for _entry, obj in capture["crds"]]))
    for entry, obj in capture["custom_resources"]:
        collection, path = orr.custom_resource_paths(entry, obj)
        groups.add(obj["apiVersion"].split("/", 1)[0])
        name = orr.object_name(obj)
        names.append(name)
        restorer.put_object("custom_resources", name, cs.object_filename(obj)[:-5], obj, collection, path)
    live = []
    crds = cs.select_crds(reader.list(cs.CRD_PATH), sorted(groups))
    for _kind, crd in cs.crds_for_kinds(crds, params["custom_resource_kinds"]):
        path = cs.custom_resource_path(crd)
        if path is not None:
            live.extend(list_or_empty(reader, path))
    extra["custom_resources"] = orr.extra_names(names, live)


def validate(module, params):
    bad = check_params(params)
    if bad:
        module.fail_json(msg=bad)
    if not params["restore"]:
        module.fail_json(msg="restore: expected at least one of %s" % ", ".join(orr.SECTIONS))
    for name in ("custom_resource_kinds", "label_prefixes"):
        for position, value in enumerate(params[name]):
            if not isinstance(value, str) or not value.strip():
                module.fail_json(msg="%s[%d]: expected a non-empty string, got %r" % (name, position, value))
    if params["capture"] and not orr.STAMP_RE.match(params["capture"]):
        module.fail_json(msg="capture: %r is not a capture directory name (letters, digits, '.', '_', '-'; "
                         "empty for the newest)" % params["capture"])
    evidence = params["evidence_dir"]
    if evidence and os.path.lexists(evidence) and (os.path.islink(evidence) or not os.path.isdir(evidence)):
        module.fail_json(msg="evidence_dir: %r exists and is not a directory (or is a symbolic link)" % evidence)


def main():
    started = time.time()
    tick = time.monotonic()
    module = AnsibleModule(argument_spec=argspec(MODULE_ARG_SPEC), supports_check_mode=True)
    params = module.params
    state = {"restorer": None, "reader": None, "capture": None}
    extra = {"crds": [], "custom_resources": []}

    def result(**more):
        restorer, reader, capture = state["restorer"], state["reader"], state["capture"]
        out = dict(
            changed=bool(restorer and any(restorer.restored.values())),
            restored=restorer.restored if restorer else dict((k, []) for k in RESULT_KEYS),
            unchanged=restorer.unchanged if restorer else dict((k, []) for k in RESULT_KEYS),
            extra=extra, missing_nodes=restorer.missing_nodes if restorer else [],
            capture=dict((k, capture[k]) for k in ("dir", "stamp", "files")) if capture else
            {"dir": None, "stamp": None, "files": []},
            artifacts=restorer.artifacts if restorer else [],
            evidence_dir=restorer.evidence_dir if restorer else None,
            api_calls=reader.calls if reader else 0, api_retries=reader.retries if reader else 0,
            started_at=clock.rfc3339(started), finished_at=clock.rfc3339(started + time.monotonic() - tick),
            duration_seconds=round(time.monotonic() - tick, 6))
        if restorer and module._diff:  # pylint: disable=protected-access
            out["diff"] = restorer.diffs
        out.update(more)
        return out

    validate(module, params)
    try:
        state["capture"] = load_capture(params)
    except orr.RestoreError as exc:
        module.fail_json(msg=str(exc), **result())
    api_client = module_api_client(module, **result())
    reader = state["reader"] = reader_from_params(api_client, params)
    stamp = clock.name_stamp(started)
    restorer = state["restorer"] = Restorer(reader, module.check_mode, params["evidence_dir"], stamp,
                                            params["api_deadline"])
    capture = state["capture"]

    def written():
        done = ["%s %s" % (k, ", ".join(v)) for k, v in restorer.restored.items() if v]
        verb = "would be restored" if module.check_mode else "restored before the failure"
        return "%s: %s" % (verb, "; ".join(done)) if done else "nothing was written"

    try:
        if "crds" in params["restore"]:
            restore_crds(restorer, reader, capture, extra)
        if "custom_resources" in params["restore"]:
            restore_custom_resources(restorer, reader, params, capture, extra)
        if "gpu_nodes" in params["restore"]:
            for _entry, node in sorted(capture["nodes"], key=lambda item: item[1]["metadata"]["name"]):
                restorer.patch_node(node, params["label_prefixes"], params["taints"])
    except K8sApiError as exc:
        module.fail_json(msg="the API call failed (%s): %s" % (written(), exc), call=exc.call, status=exc.status,
                         forbidden=exc.forbidden, attempts=exc.attempts, **result())
    except (IOError, OSError, PrivateFileError) as exc:
        module.fail_json(msg="evidence_dir: cannot write the evidence (%s): %s" % (written(), exc), **result())
    finally:
        api_client.close()
    out = result()
    counts = ", ".join("%d %s" % (len(v), k) for k, v in out["restored"].items() if v) or "nothing"
    verb = "would restore" if module.check_mode else "restored"
    out["msg"] = "%s %s from capture %s (%d unchanged)" % (verb, counts, capture["stamp"],
                                                           sum(len(v) for v in out["unchanged"].values()))
    if restorer.missing_nodes:
        out["msg"] = "captured GPU node(s) no longer exist: %s; %s" % (", ".join(restorer.missing_nodes), out["msg"])
        module.fail_json(**out)
    module.exit_json(**out)


if __name__ == "__main__":
    main()
