# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What ``operator_restore`` puts back from a ``cluster_state`` capture: pure logic, no I/O, no Ansible.

A Helm rollback restores the release's templates, not its CRDs, nor the labels and taints that the
operator's operands (NFD, GFD) or an operator's hands left on the GPU nodes. The rollback's inverse of
``crd_prepare`` reads the capture that the snapshot phase indexed (docs/artifacts.md) and plans, per
object, the write that makes the cluster equal to the capture again:

- which capture (the newest in the index, or a named stamp) and which of its files, each checked
  against the index's sha256 and size before anything is written (:func:`choose_capture`,
  :func:`check_file`, :func:`load_object`);
- a CRD or custom resource: created when absent, replaced (PUT: the captured content with the live
  metadata, so its resourceVersion is the precondition, and the captured labels and annotations)
  when it differs, untouched when equal (:func:`plan_object`); objects of the captured API groups
  or kinds that exist now but were not captured are only reported (:func:`extra_names`);
- a GPU node: one JSON merge patch for the labels under the restored prefixes (``null`` removes a key
  the capture did not have) and the taints and cordon, where node-lifecycle taints
  (``node.kubernetes.io/``, owned by controllers) stay as they are now (:func:`node_patch`).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import hashlib
import json
import posixpath
import re

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.common import clock
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.evidence import artifacts as af
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster import state as cs

SECTIONS = ("crds", "custom_resources", "gpu_nodes")
SECTION_KINDS = {"crds": cs.KIND_CRD, "custom_resources": cs.KIND_CUSTOM_RESOURCE, "gpu_nodes": cs.KIND_NODE}
CAPTURE_KINDS = (cs.KIND_CRD, cs.KIND_CUSTOM_RESOURCE, cs.KIND_DEVICE_CLASS, cs.KIND_RUNTIME_CLASS, cs.KIND_NODE)
CAPTURE_DIR = ("artifacts", "cluster-state")
DEFAULT_KINDS = ("ClusterPolicy",)
DEFAULT_LABEL_PREFIXES = ("nvidia.com/", "feature.node.kubernetes.io/")
LIFECYCLE_TAINT_PREFIX = "node.kubernetes.io/"
MERGE_PATCH = "application/merge-patch+json"
# Metadata the server owns: dropped from a create, taken from the live object on a replace.
SERVER_METADATA = ("resourceVersion", "uid", "creationTimestamp", "generation", "managedFields", "selfLink",
                   "deletionTimestamp", "deletionGracePeriodSeconds")
# Top-level keys that are not the object's content (compared and restored: everything else).
NOT_CONTENT = ("apiVersion", "kind", "metadata", "status")
STAMP_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
SUFFIX_RE = re.compile(r"^(.*)-(\d+)$")


class RestoreError(ValueError):
    """The capture cannot be used; the message names the file or the field and the expected form."""


# -- the capture ---------------------------------------------------------------------------------

def capture_root(run_dir):
    """``<run_dir>/artifacts/cluster-state``, normalised."""
    return posixpath.normpath(posixpath.join(run_dir, *CAPTURE_DIR))


def index_path(run_dir):
    return posixpath.normpath(posixpath.join(run_dir, af.INDEX_DIR, af.INDEX_FILE))


def parse_index(text, path):
    """The artifact index parsed from ``text``; RestoreError naming ``path`` when it is not one."""
    if not text or not text.strip():
        raise RestoreError("%s: the artifact index is empty" % path)
    try:
        return af.load_index(text, None)
    except af.ArtifactError as exc:
        raise RestoreError("%s: %s" % (path, exc))


def stamp_of(entry_path, root):
    """``(stamp, relpath)`` of an indexed file under ``root`` (``<root>/<stamp>/<relpath>``), else None."""
    if not isinstance(entry_path, str):
        return None
    path = posixpath.normpath(entry_path)
    prefix = root.rstrip("/") + "/"
    if not path.startswith(prefix):
        return None
    stamp, sep, rel = path[len(prefix):].partition("/")
    if not sep or not rel or not STAMP_RE.match(stamp):
        return None
    return stamp, rel


def captures(index, run_dir):
    """``{stamp: [entries]}`` of the index's cluster-state files under ``run_dir`` (each entry a copy
    with ``relpath`` added)."""
    root = capture_root(run_dir)
    found = {}
    for entry in index.get("artifacts") or []:
        if not isinstance(entry, dict) or entry.get("kind") not in CAPTURE_KINDS:
            continue
        where = stamp_of(entry.get("path"), root)
        if where is None:
            continue
        item = dict(entry, relpath=where[1])
        found.setdefault(where[0], []).append(item)
    return found


def _stamp_order(stamp, entries):
    """Newest last: the capture time the index recorded, then the stamp (``-2`` after the bare one, ``-10`` after ``-9``)."""
    # by time, not by text: older records stamped whole seconds, newer ones microseconds (common/clock.py)
    captured = max([clock.parse_or_none(e.get("captured_at") or e.get("recorded_at")) or 0.0 for e in entries] or [0.0])
    match = SUFFIX_RE.match(stamp)
    base, number = (match.group(1), int(match.group(2))) if match else (stamp, 1)
    return (captured, base, number)


def choose_capture(index, run_dir, capture=""):
    """``(stamp, directory, entries)`` of the wanted capture: ``capture`` when given, else the newest."""
    found = captures(index, run_dir)
    root = capture_root(run_dir)
    if capture:
        if not STAMP_RE.match(capture):
            raise RestoreError("capture: %r is not a capture directory name (letters, digits, '.', '_', '-')" % capture)
        if capture not in found:
            raise RestoreError("capture: the index lists no cluster-state file under %s/%s (captures indexed: %s)" % (
                root, capture, ", ".join(sorted(found)) or "none"))
        stamp = capture
    else:
        if not found:
            raise RestoreError("the index lists no cluster-state capture under %s" % root)
        stamp = sorted(found, key=lambda s: _stamp_order(s, found[s]))[-1]
    entries = sorted(found[stamp], key=lambda e: e["relpath"])
    return stamp, posixpath.join(root, stamp), entries


def entries_for(entries, restore):
    """The capture's files that the sections in ``restore`` read."""
    kinds = set(SECTION_KINDS[s] for s in restore)
    return [e for e in entries if e.get("kind") in kinds]


def check_file(entry, data):
    """Problems of a file's bytes against its index entry (size and sha256; both must be indexed)."""
    problems = []
    size, digest = entry.get("size"), entry.get("sha256")
    if not isinstance(size, int) or isinstance(size, bool) or not isinstance(digest, str) or not digest:
        return ["the index entry has no sha256 and size to check it against"]
    if len(data) != size:
        problems.append("size mismatch: indexed %d bytes, found %d" % (size, len(data)))
    found = hashlib.sha256(data).hexdigest()
    if found != digest.lower():
        problems.append("sha256 mismatch: indexed %s, found %s" % (digest, found))
    return problems


def load_object(entry, data):
    """The captured object of a verified file; RestoreError naming the file when it is not the expected shape."""
    path = entry.get("path")
    try:
        obj = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise RestoreError("%s: not a JSON object: %s" % (path, exc))
    if not isinstance(obj, dict) or not isinstance(obj.get("metadata"), dict) or not obj["metadata"].get("name"):
        raise RestoreError("%s: expected a Kubernetes object with metadata.name" % path)
    kind = entry.get("kind")
    if kind == cs.KIND_CRD and (obj.get("kind") != "CustomResourceDefinition" or not isinstance(obj.get("spec"), dict)):
        raise RestoreError("%s: expected a CustomResourceDefinition with a spec, got kind %r" % (path, obj.get("kind")))
    if kind == cs.KIND_NODE and obj.get("kind") != "Node":
        raise RestoreError("%s: expected the labels and taints of a Node, got kind %r" % (path, obj.get("kind")))
    if kind == cs.KIND_CUSTOM_RESOURCE:
        if not obj.get("kind") or "/" not in str(obj.get("apiVersion") or ""):
            raise RestoreError("%s: expected a custom resource with apiVersion group/version and kind" % path)
        if custom_resource_paths(entry, obj) is None:
            raise RestoreError("%s: the file is not under a <plural>.<group> directory of its apiVersion's group" % path)
    return obj


def custom_resource_paths(entry, obj):
    """``(collection path, object path)`` of a captured custom resource: the plural from its capture
    directory ``<plural>.<group>/``, the version from its apiVersion; None when they disagree."""
    if entry.get("relpath"):
        directory = posixpath.dirname(entry["relpath"])
    else:
        directory = posixpath.basename(posixpath.dirname(entry.get("path") or ""))
    plural, _sep, group = directory.partition(".")
    api_version = str(obj.get("apiVersion") or "")
    if not plural or "/" in directory or group != api_version.split("/", 1)[0]:
        return None
    metadata = obj.get("metadata") or {}
    if metadata.get("namespace"):
        collection = "/apis/%s/namespaces/%s/%s" % (api_version, metadata["namespace"], plural)
    else:
        collection = "/apis/%s/%s" % (api_version, plural)
    return collection, "%s/%s" % (collection, metadata["name"])


def object_name(obj):
    """``Kind/name`` or ``Kind/namespace/name`` of a custom resource."""
    metadata = obj.get("metadata") or {}
    parts = [obj.get("kind") or "?"] + ([metadata["namespace"]] if metadata.get("namespace") else [])
    return "/".join(parts + [metadata.get("name") or "?"])


# -- CRDs and custom resources ---------------------------------------------------------------------

def content(obj):
    """What a restore compares and puts back: every top-level key but apiVersion, kind, metadata and
    status, plus the labels and annotations (absent and empty are the same)."""
    metadata = (obj or {}).get("metadata") or {}
    result = dict((k, v) for k, v in (obj or {}).items() if k not in NOT_CONTENT)
    result["labels"] = metadata.get("labels") or {}
    result["annotations"] = metadata.get("annotations") or {}
    return result


def create_body(captured):
    """The captured object without the server-owned metadata and without status."""
    body = copy.deepcopy(captured)
    body.pop("status", None)
    metadata = body.setdefault("metadata", {})
    for key in SERVER_METADATA:
        metadata.pop(key, None)
    return body


def replace_body(captured, live):
    """The captured content under the live metadata (its resourceVersion: a stale one gets a 409) with
    the captured labels and annotations; the live status is kept (a PUT to the main resource does not
    change it); managedFields are left to the server."""
    body = dict((k, copy.deepcopy(v)) for k, v in captured.items() if k not in ("metadata", "status"))
    metadata = copy.deepcopy(live.get("metadata") or {})
    metadata.pop("managedFields", None)
    for key in ("labels", "annotations"):
        value = (captured.get("metadata") or {}).get(key)
        if value:
            metadata[key] = copy.deepcopy(value)
        else:
            metadata.pop(key, None)
    body["metadata"] = metadata
    if "status" in live:
        body["status"] = copy.deepcopy(live["status"])
    return body


def plan_object(captured, live):
    """``{action, body}``: ``create`` (absent now), ``replace`` (content differs) or ``unchanged``."""
    if live is None:
        return {"action": "create", "body": create_body(captured)}
    if content(captured) == content(live):
        return {"action": "unchanged", "body": None}
    return {"action": "replace", "body": replace_body(captured, live)}


def captured_groups(crds):
    """The API groups of the captured CRDs."""
    return sorted(set((c.get("spec") or {}).get("group") for c in crds if (c.get("spec") or {}).get("group")))


def extra_crds(captured, live_crds, also_groups=cs.DEFAULT_GROUPS):
    """Names of live CRDs that the capture does not have (reported, never deleted), of the captured CRDs'
    groups and of ``also_groups`` (those ``cluster_state`` captures by default: a capture of 26.3 has no
    ``resource.nvidia.com`` CRD, yet the ComputeDomain CRDs 26.7 brings are what a rollback leaves behind)."""
    groups = set(captured_groups(captured)) | set(also_groups or ())
    names = set((c.get("metadata") or {}).get("name") for c in captured)
    return sorted(n for n in ((c.get("metadata") or {}).get("name") for c in live_crds
                              if (c.get("spec") or {}).get("group") in groups) if n and n not in names)


def extra_names(captured_names, live_objects):
    """``Kind/name`` of live objects that the capture does not have."""
    wanted = set(captured_names)
    return sorted(n for n in (object_name(o) for o in live_objects) if n not in wanted)


def view(obj):
    """The restorable part of an object, for diffs: content plus identity, no server bookkeeping."""
    if obj is None:
        return None
    shown = create_body(obj)
    shown.pop("status", None)
    return shown


# -- GPU nodes --------------------------------------------------------------------------------------

def has_prefix(key, prefixes):
    return any(str(key).startswith(p) for p in prefixes)


def label_patch(captured, live, prefixes):
    """``{key: value | None}``: the labels under ``prefixes`` set back to the captured values, and
    those the capture did not have removed (``None``, a merge patch's delete); others untouched."""
    captured, live = captured or {}, live or {}
    patch = {}
    for key, value in captured.items():
        if has_prefix(key, prefixes) and live.get(key) != value:
            patch[key] = value
    for key in live:
        if has_prefix(key, prefixes) and key not in captured:
            patch[key] = None
    return patch


def is_lifecycle(taint):
    return str((taint or {}).get("key") or "").startswith(LIFECYCLE_TAINT_PREFIX)


def taint_key(taint):
    return (taint.get("key") or "", taint.get("value") or "", taint.get("effect") or "")


def desired_taints(captured, live):
    """The captured taints other than the node-lifecycle ones, plus the lifecycle taints the node has now."""
    kept = [copy.deepcopy(t) for t in captured or [] if not is_lifecycle(t)]
    return kept + [copy.deepcopy(t) for t in live or [] if is_lifecycle(t)]


def same_taints(first, second):
    return sorted(taint_key(t) for t in first or []) == sorted(taint_key(t) for t in second or [])


def node_state(node):
    """``{labels, taints, unschedulable}`` of a Node or a captured node file."""
    return {"labels": ((node or {}).get("metadata") or {}).get("labels") or {},
            "taints": ((node or {}).get("spec") or {}).get("taints") or [],
            "unschedulable": bool(((node or {}).get("spec") or {}).get("unschedulable"))}


def node_patch(captured, live, prefixes, taints=True):
    """``(patch, after)``: the JSON merge patch that puts the node back (None when nothing differs) and
    the node's ``node_state`` after it. When the taint list is replaced (a merge patch replaces lists
    whole), the live resourceVersion goes in as a precondition, so a taint added meanwhile is a 409,
    not lost."""
    want, have = node_state(captured), node_state(live)
    after = copy.deepcopy(have)
    patch = {}
    labels = label_patch(want["labels"], have["labels"], prefixes)
    if labels:
        patch["metadata"] = {"labels": labels}
        for key, value in labels.items():
            if value is None:
                after["labels"].pop(key, None)
            else:
                after["labels"][key] = value
    if taints:
        spec = {}
        target = desired_taints(want["taints"], have["taints"])
        if not same_taints(target, have["taints"]):
            spec["taints"] = target or None
            after["taints"] = target
            version = ((live or {}).get("metadata") or {}).get("resourceVersion")
            if version:
                patch.setdefault("metadata", {})["resourceVersion"] = version
        if want["unschedulable"] != have["unschedulable"]:
            spec["unschedulable"] = want["unschedulable"]
            after["unschedulable"] = want["unschedulable"]
        if spec:
            patch["spec"] = spec
    return (patch or None), after


def dumps(obj):
    return json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n"
