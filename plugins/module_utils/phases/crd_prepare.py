# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""CRD preparation before a ``helm upgrade``: the pure part of the ``crd_prepare`` module.

Helm installs a chart's ``crds/`` only on the first install and never upgrades them, and the GPU
Operator's pre-upgrade hook skips the CRDs shipped as templates (ComputeDomain,
ComputeDomainClique). So the target chart's CRDs are applied server-side before each upgrade.

- :func:`collect_chart`: the CRDs of a chart directory or archive (``.tgz``, read with ``tarfile``
  in memory, nothing extracted): every manifest file under ``crds/`` and every *static* template
  (no ``{{``) under ``templates/`` that holds a CustomResourceDefinition, recursively through the
  subcharts (``charts/<name>/`` directories and ``charts/*.tgz`` archives: NFD's CRDs). A template
  that defines a CRD with template actions cannot be read without rendering: it is reported in
  ``templated`` (file, and the CRD name when it is a literal) and its CRD must come rendered
  (:func:`collect_manifests`, e.g. ``helm template`` output).
- :func:`dedupe`: one CRD per name; the same object from two sources is one, two different objects
  under one name are an error naming both sources (never a silent pick).
- :func:`normalize` / :func:`diff_objects`: a structured diff of two objects without what the
  server populates (``status``, ``metadata.managedFields``, ``resourceVersion``, ``uid``,
  ``generation``, ``creationTimestamp``, ``selfLink``); labels and annotations (Helm's
  ``meta.helm.sh/*`` and ``app.kubernetes.io/managed-by``) are kept. Paths are written as the
  API server names fields in apply conflicts (``.spec.versions[name="v1"].schema...``).
- :func:`parse_conflicts`: the managers and fields of a 409 apply conflict, from the ``Status``'
  ``FieldManagerConflict`` causes (else from its message).

No Ansible imports, no I/O except reading the chart files; PyYAML (an ansible-core dependency) on
the controller.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import fnmatch
import io
import json
import os
import re
import tarfile

CRD_API_VERSION = "apiextensions.k8s.io/v1"
CRD_KIND = "CustomResourceDefinition"
CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
APPLY_PATCH = "application/apply-patch+yaml"
MANIFEST_EXTENSIONS = (".yaml", ".yml", ".json")
# Bounds on what is read from a chart (a chart archive is small; a huge one is a wrong input).
MAX_FILE_BYTES = 16 * 1024 * 1024
MAX_CHART_BYTES = 128 * 1024 * 1024
MAX_SUBCHART_DEPTH = 5
# Fields the API server populates: never part of a desired object, never a difference.
SERVER_METADATA = ("managedFields", "resourceVersion", "uid", "generation", "creationTimestamp", "selfLink")

_TEMPLATED_CRD = re.compile(r"^\s*kind:\s*['\"]?CustomResourceDefinition['\"]?\s*$", re.M)
_DOC_SPLIT = re.compile(r"^---[^\n]*$", re.M)
_LITERAL_NAME = re.compile(r"^metadata:\s*\n(?:[ \t]+.*\n)*?[ \t]+name:\s*['\"]?([a-z0-9][a-z0-9.-]*)['\"]?\s*$", re.M)
_CAUSE_MANAGER = re.compile(r'conflicts? with "(?P<manager>[^"]*)"(?: with subresource "(?P<sub>[^"]*)")?'
                            r' using (?P<api>[^\s:]+)')
_PLAIN_KEY = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$-]*$")


class CrdSourceError(Exception):
    """A chart or manifest could not be read as CRDs (the message names the file)."""


def _yaml():
    import yaml  # controller-side only (an ansible-core dependency)

    return yaml


def _docs(text, where):
    yaml = _yaml()
    try:
        return [doc for doc in yaml.safe_load_all(text) if doc is not None]
    except yaml.YAMLError as exc:
        raise CrdSourceError("%s: not YAML: %s" % (where, exc))


def is_crd(doc):
    return isinstance(doc, dict) and doc.get("kind") == CRD_KIND


def _check_crd(doc, where):
    name = (doc.get("metadata") or {}).get("name")
    if not name or not isinstance(name, str):
        raise CrdSourceError("%s: a CustomResourceDefinition without metadata.name" % where)
    if doc.get("apiVersion") != CRD_API_VERSION:
        raise CrdSourceError("%s: CRD %s has apiVersion %r; only %s is served since Kubernetes 1.22"
                             % (where, name, doc.get("apiVersion"), CRD_API_VERSION))
    if not isinstance(doc.get("spec"), dict) or not (doc["spec"].get("group")):
        raise CrdSourceError("%s: CRD %s has no spec.group" % (where, name))
    return name


def crds_of_text(text, where):
    """``[(where, crd)]`` for the CRDs of a multi-document YAML text; other kinds are skipped."""
    found = []
    for doc in _docs(text, where):
        if isinstance(doc, dict) and doc.get("kind") == "List" and isinstance(doc.get("items"), list):
            items = doc["items"]
        else:
            items = [doc]
        for item in items:
            if is_crd(item):
                _check_crd(item, where)
                found.append((where, item))
    return found


def collect_manifests(text, where="manifests"):
    """The CRDs of an already rendered manifest (``helm template`` output, multi-document YAML)."""
    return crds_of_text(text or "", where)


def _decode(data, where):
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise CrdSourceError("%s: not UTF-8 text" % where)


def _manifest_file(relpath):
    return relpath.lower().endswith(MANIFEST_EXTENSIONS)


def _read_dir(root):
    """``{relpath: bytes}`` of the files of a chart directory that can hold CRDs (and subchart archives)."""
    files, total = {}, 0
    for directory, dirs, names in os.walk(root):
        dirs.sort()
        for name in sorted(names):
            path = os.path.join(directory, name)
            rel = os.path.relpath(path, root).replace(os.sep, "/")
            if not _wanted(rel):
                continue
            try:
                size = os.path.getsize(path)
                if size > MAX_FILE_BYTES:
                    raise CrdSourceError("%s: %d bytes, more than a chart file may hold (%d)" % (path, size, MAX_FILE_BYTES))
                total += size
                if total > MAX_CHART_BYTES:
                    raise CrdSourceError("%s: the chart is larger than %d bytes" % (root, MAX_CHART_BYTES))
                with open(path, "rb") as handle:
                    files[rel] = handle.read()
            except (IOError, OSError) as exc:
                raise CrdSourceError("%s: cannot read: %s" % (path, exc))
    return files


def _wanted(rel):
    top = rel.split("/", 1)[0]
    if rel == "Chart.yaml":
        return True
    if top in ("crds", "templates"):
        return _manifest_file(rel)
    if top == "charts":
        return _manifest_file(rel) or rel.endswith((".tgz", ".tar.gz")) or rel.endswith("/Chart.yaml")
    return False


def _read_archive(fileobj, where):
    """``{relpath: bytes}`` of a chart archive, relative to its top directory (``<chart>/``)."""
    try:
        archive = tarfile.open(fileobj=fileobj, mode="r:*")
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise CrdSourceError("%s: not a chart archive (tar, gzip): %s" % (where, exc))
    files, total, top = {}, 0, None
    with archive:
        for member in archive:
            if not member.isfile():
                continue  # directories, links, devices: a chart's CRDs are regular files
            name = member.name
            parts = [p for p in name.split("/") if p not in ("", ".")]
            if name.startswith("/") or len(parts) < 2 or ".." in parts:
                continue  # never part of a chart (helm refuses such archives)
            if top is None:
                top = parts[0]
            if parts[0] != top:
                continue
            rel = "/".join(parts[1:])
            if not _wanted(rel):
                continue
            if member.size > MAX_FILE_BYTES:
                raise CrdSourceError("%s: %s is %d bytes, more than a chart file may hold" % (where, name, member.size))
            total += member.size
            if total > MAX_CHART_BYTES:
                raise CrdSourceError("%s: the chart is larger than %d bytes" % (where, MAX_CHART_BYTES))
            handle = archive.extractfile(member)
            files[rel] = handle.read() if handle is not None else b""
    if "Chart.yaml" not in files:
        raise CrdSourceError("%s: no <chart>/Chart.yaml in the archive" % where)
    return files


def _literal_name(text):
    match = _LITERAL_NAME.search(text)
    return match.group(1) if match else None


def _scan(files, where, depth, out):
    """Collect from one chart level (``files`` relative to its root); ``where`` names it in sources."""
    if depth > MAX_SUBCHART_DEPTH:
        raise CrdSourceError("%s: subcharts nested deeper than %d" % (where, MAX_SUBCHART_DEPTH))
    subcharts = {}
    for rel in sorted(files, key=lambda r: (r.split("/", 1)[0] != "crds", r)):  # crds/, then templates/
        data = files[rel]
        source = "%s/%s" % (where, rel)
        parts = rel.split("/")
        if parts[0] == "crds" and _manifest_file(rel):
            out["crds"].extend(crds_of_text(_decode(data, source), source))
        elif parts[0] == "templates" and _manifest_file(rel) and not parts[-1].startswith("_"):
            text = _decode(data, source)
            if "{{" in text:
                for chunk in _DOC_SPLIT.split(text):
                    if _TEMPLATED_CRD.search(chunk):
                        out["templated"].append({"path": source, "name": _literal_name(chunk)})
                continue
            out["crds"].extend(crds_of_text(text, source))
        elif parts[0] == "charts" and len(parts) == 2 and rel.endswith((".tgz", ".tar.gz")):
            sub = _read_archive(io.BytesIO(data), source)
            subcharts[_chart_name(sub, parts[1])] = sub
        elif parts[0] == "charts" and len(parts) > 2:
            subcharts.setdefault(parts[1], {})["/".join(parts[2:])] = data
    for name in sorted(subcharts):  # then the subcharts, by name
        if "Chart.yaml" in subcharts[name]:
            _scan(subcharts[name], "%s/charts/%s" % (where, name), depth + 1, out)


def _chart_name(files, fallback):
    yaml = _yaml()
    try:
        meta = yaml.safe_load(files.get("Chart.yaml") or b"") or {}
    except yaml.YAMLError:  # the name only labels the sources
        meta = {}
    name = meta.get("name") if isinstance(meta, dict) else None
    return name if isinstance(name, str) and name else fallback


def collect_chart(path):
    """``{"crds": [(source, crd)], "templated": [{path, name}], "chart": name}`` of a chart
    directory or archive. Sources are ``<chart>/crds/x.yaml``, ``<chart>/charts/<sub>/templates/y.yaml``."""
    if os.path.isdir(path):
        if not os.path.isfile(os.path.join(path, "Chart.yaml")):
            raise CrdSourceError("%s: a chart directory must hold Chart.yaml" % path)
        files = _read_dir(path)
    elif os.path.isfile(path):
        with open(path, "rb") as handle:
            files = _read_archive(handle, path)
    else:
        raise CrdSourceError("%s: no such chart directory or archive" % path)
    name = _chart_name(files, os.path.basename(path.rstrip("/")))
    out = {"crds": [], "templated": [], "chart": name}
    _scan(files, name, 0, out)
    return out


def dedupe(entries):
    """``[{"name", "object", "sources"}]`` in first-seen order, one per CRD name; the same object
    from several sources is kept once (all sources listed); different objects under one name raise."""
    by_name, order = {}, []
    for source, obj in entries:
        name = obj["metadata"]["name"]
        body = desired_body(obj)
        if name not in by_name:
            by_name[name] = {"name": name, "object": body, "sources": [source]}
            order.append(name)
            continue
        known = by_name[name]
        if known["object"] != body:
            raise CrdSourceError("CRD %s is defined differently in %s and %s; give one definition (include/exclude)"
                                 % (name, known["sources"][0], source))
        if source not in known["sources"]:
            known["sources"].append(source)
    return [by_name[name] for name in order]


def _matches(crd, patterns):
    name = crd["name"]
    group = (crd["object"].get("spec") or {}).get("group") or ""
    return any(fnmatch.fnmatchcase(name, p) or fnmatch.fnmatchcase(group, p) for p in patterns)


def select(crds, include=None, exclude=None):
    """The CRDs whose name or group matches one of ``include`` (all when empty) and none of
    ``exclude`` (exact names/groups or shell globs such as ``*.nvidia.com``)."""
    chosen = []
    for crd in crds:
        if include and not _matches(crd, include):
            continue
        if exclude and _matches(crd, exclude):
            continue
        chosen.append(crd)
    return chosen


def desired_body(obj):
    """The apply body: the object without status and server-populated metadata (controller-gen's
    ``creationTimestamp: null`` included)."""
    body = copy.deepcopy(obj)
    body.pop("status", None)
    meta = body.get("metadata")
    if isinstance(meta, dict):
        for key in SERVER_METADATA:
            meta.pop(key, None)
    return body


def normalize(obj):
    """``obj`` without what the server populates; None stays None (an absent object)."""
    if obj is None:
        return None
    return desired_body(obj)


def _key_of(items):
    """The merge key of a list of objects (``name``, else ``type``) when every item has a unique one."""
    if not items or not all(isinstance(i, dict) for i in items):
        return None
    for key in ("name", "type"):
        values = [i.get(key) for i in items]
        if all(isinstance(v, str) for v in values) and len(set(values)) == len(values):
            return key
    return None


def _field(path, key):
    return "%s.%s" % (path, key) if _PLAIN_KEY.match(key) else '%s[%s]' % (path, json.dumps(key))


def _walk_diff(before, after, path, out):
    if isinstance(before, dict) and isinstance(after, dict):
        for key in sorted(set(before) | set(after), key=str):
            sub = _field(path, str(key))
            if key not in before:
                out.append({"path": sub, "change": "added"})
            elif key not in after:
                out.append({"path": sub, "change": "removed"})
            else:
                _walk_diff(before[key], after[key], sub, out)
        return
    if isinstance(before, list) and isinstance(after, list) and before != after:
        key_before, key_after = _key_of(before), _key_of(after)
        key = key_before if key_before == key_after else (key_before or key_after if not (before and after) else None)
        if key:
            old = dict((i[key], i) for i in before)
            new = dict((i[key], i) for i in after)
            for name in list(old) + [n for n in new if n not in old]:
                sub = '%s[%s=%s]' % (path, key, json.dumps(name))
                if name not in new:
                    out.append({"path": sub, "change": "removed"})
                elif name not in old:
                    out.append({"path": sub, "change": "added"})
                else:
                    _walk_diff(old[name], new[name], sub, out)
            if [i[key] for i in before if i[key] in new] != [i[key] for i in after if i[key] in old]:
                out.append({"path": path, "change": "reordered"})
            return
        if len(before) == len(after):
            for index, (one, two) in enumerate(zip(before, after)):
                _walk_diff(one, two, "%s[%d]" % (path, index), out)
            return
    if before != after:
        out.append({"path": path or ".", "change": "changed"})


def diff_objects(before, after):
    """The paths that differ between two objects, server-populated fields ignored:
    ``[{"path": '.spec.versions[name="v1"].schema.openAPIV3Schema.properties.spec.properties.x', "change": "added"}]``
    (``added``, ``removed``, ``changed``, ``reordered``). An absent ``before`` is one ``added`` at ``.``."""
    before, after = normalize(before), normalize(after)
    if before is None and after is None:
        return []
    if before is None:
        return [{"path": ".", "change": "added"}]
    if after is None:
        return [{"path": ".", "change": "removed"}]
    out = []
    _walk_diff(before, after, "", out)
    return out


def ownership(obj):
    """The field ownership of ``obj`` without the timestamps: what an apply changes besides the object."""
    entries = []
    for entry in ((obj or {}).get("metadata") or {}).get("managedFields") or []:
        entries.append(json.dumps({k: v for k, v in entry.items() if k != "time"}, sort_keys=True))
    return sorted(entries)


def managers(obj):
    """``["dra-gate (Apply)", "helm (Update)"]``: who owns fields of ``obj``."""
    seen = []
    for entry in ((obj or {}).get("metadata") or {}).get("managedFields") or []:
        text = "%s (%s%s)" % (entry.get("manager") or "", entry.get("operation") or "",
                              ", %s" % entry["subresource"] if entry.get("subresource") else "")
        if text not in seen:
            seen.append(text)
    return sorted(seen)


def same_state(live, preview):
    """Whether applying would change nothing: the object (server fields aside) and its ownership are
    the same in the live object and in the server's dry-run answer."""
    return normalize(live) == normalize(preview) and ownership(live) == ownership(preview)


def parse_conflicts(status_doc, message=None):
    """The conflicts of a 409 apply answer: ``[{"manager", "subresource", "api_version", "fields": [...]}]``
    grouped by manager in the server's order, from the Status' ``FieldManagerConflict`` causes, else
    from the message (``Apply failed with 1 conflict: conflict with "helm" using v1: .data.mode``)."""
    groups, order = {}, []

    def add(manager, sub, api, field):
        key = (manager, sub or "", api or "")
        if key not in groups:
            groups[key] = {"manager": manager, "subresource": sub or "", "api_version": api or "", "fields": []}
            order.append(key)
        if field and field not in groups[key]["fields"]:
            groups[key]["fields"].append(field)

    doc = status_doc if isinstance(status_doc, dict) else {}
    for cause in ((doc.get("details") or {}).get("causes") or []):
        if not isinstance(cause, dict) or cause.get("reason") != "FieldManagerConflict":
            continue
        match = _CAUSE_MANAGER.search(cause.get("message") or "")
        if match:
            add(match.group("manager"), match.group("sub"), match.group("api"), cause.get("field"))
        else:
            add(cause.get("message") or "", "", "", cause.get("field"))
    if order:
        return [groups[k] for k in order]
    text = message or doc.get("message") or ""
    if text.endswith(" (Conflict)"):  # K8sApiError.reason: the Status message and its reason
        text = text[:-len(" (Conflict)")]
    # single form: '... conflict with "m" using v: <field>'; multi: 'conflicts with "m" using v:\n- <field>\n...'
    pieces = list(_CAUSE_MANAGER.finditer(text))
    for index, match in enumerate(pieces):
        end = pieces[index + 1].start() if index + 1 < len(pieces) else len(text)
        rest = text[match.end():end]
        rest = rest[1:] if rest.startswith(":") else rest
        lines = [line.strip() for line in rest.strip().splitlines()]
        fields = [line[2:].strip() for line in lines if line.startswith("- ")]
        if not fields and lines and lines[0]:
            fields = [lines[0]]
        if not fields:
            add(match.group("manager"), match.group("sub"), match.group("api"), None)
        for field in fields:
            add(match.group("manager"), match.group("sub"), match.group("api"), field)
    return [groups[k] for k in order]


def conflict_text(conflicts):
    """``"helm": .spec.a, .spec.b; "kubectl": .metadata.labels.x`` for a message."""
    parts = []
    for item in conflicts:
        where = " (subresource %s)" % item["subresource"] if item["subresource"] else ""
        parts.append('"%s"%s: %s' % (item["manager"], where, ", ".join(item["fields"]) or "(fields not named)"))
    return "; ".join(parts)


def established(obj):
    """``(established, conditions)``: whether the CRD's ``Established`` condition is True (and
    ``NamesAccepted`` not False), with ``[type=status: reason]`` for a message."""
    conditions = ((obj or {}).get("status") or {}).get("conditions") or []
    state = dict((c.get("type"), c.get("status")) for c in conditions if isinstance(c, dict))
    shown = ["%s=%s%s" % (c.get("type"), c.get("status"), ": %s" % c["reason"] if c.get("reason") else "")
             for c in conditions if isinstance(c, dict)]
    return state.get("Established") == "True" and state.get("NamesAccepted") != "False", shown


def to_yaml(obj):
    """Block YAML of the normalized object, for Ansible's ``--diff`` (empty for an absent one)."""
    if obj is None:
        return ""
    return _yaml().safe_dump(normalize(obj), default_flow_style=False, sort_keys=True, width=1000)


def to_json(obj):
    """The evidence file's text: the object as served, keys sorted."""
    return json.dumps(obj, indent=2, sort_keys=True) + "\n"


def safe_file_name(name):
    """A CRD name as a file name (DNS subdomain: already safe; anything else is replaced)."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)
