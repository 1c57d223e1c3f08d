# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Helm write of one operator upgrade hop, and the release rollback (no Ansible in here).

Everything goes through one ``helm_cli.HelmBackend`` (the CLI in production, the library in the
lab), normally wrapped in ``helm_cli.RetryingHelm``. Two steps, so that the module can write its
evidence between them (before anything changes):

- :func:`plan_install` / :func:`plan_upgrade` / :func:`plan_rollback` only read (the history, the newest revision's user
  values, a target revision's user values) and decide: ``unchanged``, ``upgrade``, ``rollback``,
  ``reinstall`` (an upgrade, or an install when the release is gone), ``install`` (a first install).
- :func:`apply_plan` does the one Helm write (never in check mode) and reads back the release; a
  failed write is :class:`ReleaseError` carrying the state read back after it.

The revision a decision starts from is the newest revision of the history (normally the
``deployed`` one). A release is ``unchanged`` only when that revision is ``deployed`` and has the
target's chart version (a leading ``v`` aside) and exactly the target's user values
(``helm_values.same``): a failed or pending newest revision is never "already there".

:func:`chart_metadata` reads a local chart's ``Chart.yaml`` (a directory or a ``.tgz``, in memory,
nothing extracted); a remote reference (``oci://``, ``https://``) is described by ``chart_version``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json
import hashlib
import os
import re
import tarfile

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.phases import helm_values
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.wrappers.helm_cli import HelmCommandError, chart_ref_kind
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.wrappers.helm_library import HelmLibraryCallError

# Key names (case-insensitive, as helm_values matches them) hidden in diffs, results and evidence.
DEFAULT_REDACT = ["password", "passwd", "token", "secret", "apiKey", "api_key", "accessKey", "secretKey",
                  "privateKey", "credentials", "auth", ".dockerconfigjson"]
MAX_CHART_YAML_BYTES = 1024 * 1024
UPGRADED, ROLLED_BACK, INSTALLED = "upgraded", "rolled_back", "installed"
_NOT_FOUND_RE = re.compile(r"release: not found|release not found|not found: release", re.IGNORECASE)


class ReleaseError(Exception):
    """The step cannot be done, or a Helm write failed; ``extra`` goes into the failure result."""

    def __init__(self, msg, **extra):
        Exception.__init__(self, msg)
        self.extra = extra


class ChartError(ValueError):
    """A chart whose metadata cannot be read (the message names the path and what is wrong)."""


def same_version(left, right):
    """Chart versions equal up to a leading ``v`` (``v26.7.0`` is Helm's ``26.7.0``); None equals nothing."""
    if not left or not right:
        return False
    return _bare(left) == _bare(right)


def _bare(version):
    text = str(version)
    return text[1:] if text.startswith("v") else text


# -- the chart ------------------------------------------------------------------------------------


def _parse_chart_yaml(data, where):
    import yaml  # controller-side only (an ansible-core dependency)

    try:
        meta = yaml.safe_load(data.decode("utf-8"))
    except (UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ChartError("%s: Chart.yaml is not YAML: %s" % (where, exc))
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta.get("name"):
        raise ChartError("%s: Chart.yaml has no name" % where)
    version = meta.get("version")
    if not isinstance(version, str) or not version:
        raise ChartError("%s: Chart.yaml has no version (a string)" % where)
    app = meta.get("appVersion")
    return {"name": meta["name"], "version": version, "app_version": None if app is None else str(app)}


def _chart_yaml_of_archive(path):
    try:
        archive = tarfile.open(path, mode="r:*")
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise ChartError("%s: not a chart archive (tar, gzip): %s" % (path, exc))
    top = None
    with archive:
        for member in archive:
            parts = [p for p in member.name.split("/") if p not in ("", ".")]
            if member.name.startswith("/") or ".." in parts or not parts:
                continue
            if top is None:
                top = parts[0]
            if len(parts) == 2 and parts[0] == top and parts[1] == "Chart.yaml" and member.isfile():
                if member.size > MAX_CHART_YAML_BYTES:
                    raise ChartError("%s: %s is %d bytes, too large for a Chart.yaml" % (path, member.name, member.size))
                handle = archive.extractfile(member)
                return handle.read() if handle is not None else b""
    raise ChartError("%s: no <chart>/Chart.yaml in the archive" % path)


def chart_metadata(chart, chart_version=None):
    """``{"name", "version", "app_version", "kind", "reference"}`` of the chart to install.

    A local directory or archive: read from its ``Chart.yaml`` (``chart_version``, when given, must
    name the same version). ``oci://`` and ``https://``: ``chart_version`` is required (the version
    the reference names); the name is the reference's last path element. Anything else is refused.
    """
    text = str(chart or "")
    if not text:
        raise ChartError("chart: a chart reference is required")
    kind = chart_ref_kind(text)
    if kind == "path":
        if os.path.isdir(text):
            path = os.path.join(text, "Chart.yaml")
            if not os.path.isfile(path):
                raise ChartError("chart: %s is a directory without Chart.yaml" % text)
            if os.path.getsize(path) > MAX_CHART_YAML_BYTES:
                raise ChartError("chart: %s is too large for a Chart.yaml" % path)
            with open(path, "rb") as handle:
                meta = _parse_chart_yaml(handle.read(), text)
        elif os.path.isfile(text):
            meta = _parse_chart_yaml(_chart_yaml_of_archive(text), text)
        else:
            raise ChartError("chart: %s is neither a chart directory nor a chart archive (.tgz)" % text)
        if chart_version and not same_version(chart_version, meta["version"]):
            raise ChartError("chart_version: %r, but %s is version %s" % (chart_version, text, meta["version"]))
        meta.update(kind="path", reference=os.path.abspath(text))
        return meta
    if kind == "oci" or text.startswith("https://"):
        if not chart_version:
            raise ChartError("chart_version: required for the remote chart %s (the version it names)" % text)
        name = text.rstrip("/").rsplit("/", 1)[-1]
        if kind == "url":
            name = re.sub(r"-v?\d[0-9A-Za-z.+-]*\.tgz$|\.tgz$", "", name)
        return {"name": name, "version": str(chart_version), "app_version": None, "kind": kind, "reference": text}
    raise ChartError("chart: %r is not an existing chart directory or .tgz archive, nor an oci:// or https:// "
                     "reference" % text)


# -- values ---------------------------------------------------------------------------------------


def load_values_file(path, sha256=None):
    """A JSON or YAML file holding one map (such as the snapshot's ``values.user.json``). With
    ``sha256`` (the artifact index's digest of the file), the bytes read are the bytes checked: a
    different digest is a ValuesError naming the file, the expected and the actual digest."""
    import yaml  # controller-side only

    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except (IOError, OSError) as exc:
        raise helm_values.ValuesError("user_values_file: cannot read %s: %s" % (path, exc.strerror or exc))
    if sha256:
        expected = str(sha256).lower()
        if expected.startswith("sha256:"):
            expected = expected[len("sha256:"):]
        actual = hashlib.sha256(data).hexdigest()
        if actual != expected:
            raise helm_values.ValuesError("user_values_file: %s has sha256 %s, not the recorded %s (changed after it "
                                          "was indexed); nothing was applied" % (path, actual, expected))
    try:
        values = yaml.safe_load(data.decode("utf-8"))
    except (UnicodeDecodeError, yaml.YAMLError) as exc:
        raise helm_values.ValuesError("user_values_file: %s is not JSON or YAML: %s" % (path, exc))
    if values is None:
        return {}
    if not isinstance(values, dict):
        raise helm_values.ValuesError("user_values_file: %s must hold a map of values, got %s"
                                      % (path, type(values).__name__))
    return values


def redacted(values, redact):
    """A copy of ``values`` whose keys named in ``redact`` (case-insensitive) hold only a digest, as in
    the diffs of ``helm_values``."""
    names = set(k.lower() for k in (redact or ()))

    def walk(node):
        if isinstance(node, dict):
            out = {}
            for key, value in node.items():
                if key.lower() in names and value is not None:
                    out[key] = helm_values.values_diff({}, {key: value}, redact=[key])[0]["after"]
                else:
                    out[key] = walk(value)
            return out
        if isinstance(node, list):
            return [walk(item) for item in node]
        return copy.deepcopy(node)
    return walk(values or {})


def to_json(values):
    return json.dumps(values, indent=2, sort_keys=True) + "\n"


# -- reading the release --------------------------------------------------------------------------


def release_not_found(exc):
    return isinstance(exc, (HelmCommandError, HelmLibraryCallError)) and bool(_NOT_FOUND_RE.search(str(exc)))


def read_history(backend, release):
    """The history (oldest first); ``[]`` when Helm says the release does not exist. A forbidden
    read raises (``RetryingHelm`` makes it ``HelmForbidden``): forbidden is not absent."""
    try:
        return backend.history(release)
    except (HelmCommandError, HelmLibraryCallError) as exc:
        if release_not_found(exc):
            return []
        raise


def chart_of(entry):
    if not entry:
        return {"name": None, "version": None, "app_version": None}
    return {"name": entry.get("chart_name"), "version": entry.get("chart_version"), "app_version": entry.get("app_version")}


def is_current(entry, values, target_chart, target_values):
    """Whether ``entry`` (the newest revision) already runs the target: deployed, the same chart
    version, exactly the same user values."""
    return bool(entry) and entry.get("status") == "deployed" and \
        same_version(entry.get("chart_version"), target_chart.get("version")) and helm_values.same(values, target_values)


def _base(release, namespace, history, newest, newest_values):
    return {
        "release": release, "namespace": namespace, "history": history,
        "revision_before": newest["revision"] if newest else None,
        "status_before": newest["status"] if newest else None,
        "chart_before": chart_of(newest), "deployed_values": newest_values,
    }


def plan_upgrade(backend, release, namespace, chart, merged):
    """Decide one upgrade hop: ``unchanged`` or ``upgrade`` (reads only). ``chart`` is
    :func:`chart_metadata`, ``merged`` the ``helm_values.plan`` result."""
    history = read_history(backend, release)
    if not history:
        raise ReleaseError("helm release %s/%s not found: this module upgrades an installed operator, it does not "
                           "install one (check release and namespace; state=installed installs)" % (namespace, release))
    newest = history[-1]
    values = backend.get_values(release, newest["revision"])
    plan = _base(release, namespace, history, newest, values)
    target_chart = {"name": chart["name"], "version": chart["version"], "app_version": chart["app_version"]}
    plan.update(state=UPGRADED, chart=chart, target_chart=target_chart, target_values=merged["values"], merged=merged)
    plan["op"] = "unchanged" if is_current(newest, values, chart, merged["values"]) else "upgrade"
    return plan


def plan_install(backend, release, namespace, chart, merged):
    """Decide a first install: ``install`` when Helm has no such release, else what an upgrade to the
    same chart and values decides (``unchanged`` when the newest revision already runs them, else
    ``upgrade``) - so a rerun after the install changes nothing (reads only)."""
    history = read_history(backend, release)
    if history:
        plan = plan_upgrade(backend, release, namespace, chart, merged)
        plan["state"] = INSTALLED
        return plan
    plan = _base(release, namespace, history, None, {})
    target_chart = {"name": chart["name"], "version": chart["version"], "app_version": chart["app_version"]}
    plan.update(state=INSTALLED, chart=chart, target_chart=target_chart, target_values=merged["values"], merged=merged,
                op="install")
    return plan


def removed_deployment(backend, release, namespace, revision, deployment):
    """The problem when revision ``revision``'s manifest (as Helm stores it) has no Deployment
    ``deployment`` - rolling back to it would delete the operator the newer revision runs - else None."""
    from ansible_collections.gpufleet.dra_gate.plugins.module_utils.wrappers.helm_cli import manifest_objects

    objects = manifest_objects(backend.get_manifest(release, revision))
    for obj in objects:
        meta = obj.get("metadata") or {}
        if obj.get("kind") == "Deployment" and meta.get("name") == deployment and (meta.get("namespace") or namespace) == namespace:
            return None
    return ("rolling back helm release %s/%s to revision %d would remove Deployment %s/%s: that revision's manifest "
            "(%d object(s)) has no such Deployment, so the GPU Operator would be gone; nothing was changed (reinstall "
            "the recorded chart, or repair the release's revision %d first)"
            % (namespace, release, revision, namespace, deployment, len(objects), revision))


def plan_rollback(backend, release, namespace, revision, chart=None, merged=None, keep_deployment=None):
    """Decide a rollback to ``revision``: ``unchanged`` (the newest revision is deployed with the chart
    version and user values of ``revision``), ``rollback`` (``revision`` is in the history) or
    ``reinstall`` (pruned, or the release is gone: the recorded ``chart`` with the recorded values
    ``merged``; an install when the release is gone). Reads only."""
    if isinstance(revision, bool) or not isinstance(revision, int) or revision < 1:
        raise ReleaseError("revision: the revision to roll back to must be an integer >= 1, got %r" % (revision,))
    history = read_history(backend, release)
    newest = history[-1] if history else None
    values = backend.get_values(release, newest["revision"]) if newest else {}
    plan = _base(release, namespace, history, newest, values)
    plan.update(state=ROLLED_BACK, revision=revision, chart=chart, merged=merged)
    entry = next((e for e in history if e["revision"] == revision), None)
    if entry is not None:
        target_values = values if entry is newest else backend.get_values(release, revision)
        target_chart = chart_of(entry)
        op = "unchanged" if is_current(newest, values, target_chart, target_values) else "rollback"
        problem = keep_deployment and op == "rollback" and removed_deployment(
            backend, release, namespace, revision, keep_deployment)
        if problem:
            raise ReleaseError(problem, revision_before=plan["revision_before"], removes=keep_deployment)
    else:
        missing = [name for name, given in (("chart", chart), ("user_values or user_values_file", merged)) if not given]
        where = ("revisions %d-%d" % (history[0]["revision"], newest["revision"])) if history else "the release is gone"
        if missing:
            raise ReleaseError("revision %d of helm release %s/%s is not in the history (%s): reinstalling it needs %s "
                               "(the recorded chart and values.user.json)" % (
                                   revision, namespace, release, where, " and ".join(missing)),
                               revision_before=plan["revision_before"])
        target_values = merged["values"]
        target_chart = {"name": chart["name"], "version": chart["version"], "app_version": chart["app_version"]}
        op = "unchanged" if is_current(newest, values, target_chart, target_values) else \
            ("reinstall" if history else "install")
    plan.update(op=op, target_chart=target_chart, target_values=target_values)
    return plan


# -- the write ------------------------------------------------------------------------------------

ACTIONS = {
    # op: (action when done, action in check mode)
    "unchanged": ("unchanged", "unchanged"),
    "upgrade": ("upgraded", "would_upgrade"),
    "rollback": ("rolled_back", "would_roll_back"),
    "reinstall": ("reinstalled", "would_reinstall"),
    "install": ("reinstalled", "would_reinstall"),
}


# a first install (state installed) is reported as one, not as the reinstall of a rolled-back revision
FIRST_INSTALL = ("installed", "would_install")


def action_of(plan, check_mode):
    pair = FIRST_INSTALL if plan["op"] == "install" and plan.get("state") == INSTALLED else ACTIONS[plan["op"]]
    return pair[1 if check_mode else 0]


def _newest_after(backend, release):
    """(revision, status) of the newest revision after a write; (None, None) when there is none or it
    cannot be read (the failure being reported matters more)."""
    try:
        history = read_history(backend, release)
    except Exception:  # pylint: disable=broad-except  # best effort after a failure already reported
        return None, None
    if not history:
        return None, None
    return history[-1]["revision"], history[-1]["status"]


def apply_plan(backend, plan, wait=True, timeout=600, check_mode=False, description=None):
    """Do the plan's Helm write (nothing in check mode or when unchanged). Returns ``{"revision",
    "status", "summary"}`` after it. A failed write raises :class:`ReleaseError` with
    ``revision_before`` and the newest revision and status read back afterwards (``revision``,
    ``status``)."""
    release, op = plan["release"], plan["op"]
    if check_mode or op == "unchanged":
        return {"revision": plan["revision_before"], "status": plan["status_before"], "summary": None}
    mode = "watcher" if wait else "hookOnly"
    chart = plan.get("chart") or {}
    # Helm takes --version for an oci:// reference only; a local chart is pinned by its path
    version = chart.get("version") if chart.get("kind") == "oci" else None
    try:
        if op == "rollback":
            summary = backend.rollback(release, plan["revision"], wait=mode, timeout=timeout)
        elif op == "install":
            summary = backend.install(release, chart["reference"], values=plan["target_values"], chart_version=version,
                                      wait=mode, timeout=timeout, description=description)
        else:  # upgrade, reinstall over a pruned revision
            summary = backend.upgrade(release, chart["reference"], values=plan["target_values"], chart_version=version,
                                      wait=mode, timeout=timeout, description=description)
    except Exception as exc:  # pylint: disable=broad-except  # every failure is reported with the state read back
        revision, status = _newest_after(backend, release)
        verb = {"rollback": "rollback to revision %s" % plan.get("revision"), "install": "install",
                "reinstall": "upgrade (reinstall of revision %s)" % plan.get("revision"), "upgrade": "upgrade"}[op]
        raise ReleaseError("helm %s of release %s/%s failed: %s; the release was at revision %s and is now at "
                           "revision %s (%s)" % (verb, plan["namespace"], release, exc, plan["revision_before"],
                                                 revision, status or "unknown"),
                           revision_before=plan["revision_before"], revision=revision, status=status,
                           failed_revision=revision if status and status != "deployed" else None, cause=exc)
    return {"revision": summary.get("revision"), "status": summary.get("status"), "summary": summary}


def result_of(plan, applied, check_mode, redact):
    """The module's result fields (without the timing and the helm/artifacts fields)."""
    merged = plan.get("merged")
    target = plan["target_values"]
    deployed = plan["deployed_values"] or {}
    return {
        "changed": plan["op"] != "unchanged",
        "action": action_of(plan, check_mode),
        "release": plan["release"],
        "namespace": plan["namespace"],
        "revision_before": plan["revision_before"],
        "revision": applied["revision"],
        "status": applied["status"],
        "chart_before": plan["chart_before"],
        "chart_after": dict(plan["chart_before"] if plan["op"] == "unchanged" else plan["target_chart"]),
        "values": redacted(target, redact),
        "values_diff": merged["diff"] if merged else [],
        "deployed_values_diff": helm_values.values_diff(deployed, target, redact=redact),
        "diff_text": helm_values.unified_diff(deployed, target, redact=redact,
                                              before_name="values (deployed revision %s)" % plan["revision_before"],
                                              after_name="values (%s)" % ("merged" if plan["state"] in (UPGRADED, INSTALLED)
                                                                          else "revision %s" % plan["revision"])),
    }


def evidence_files(plan, redact):
    """``{file name: text}`` of the evidence: the redacted values the release gets and the diffs."""
    merged = plan.get("merged")
    deployed = plan["deployed_values"] or {}
    target = plan["target_values"]
    head = "# helm release %s/%s: %s from revision %s (chart %s)\n" % (
        plan["namespace"], plan["release"], plan["op"], plan["revision_before"], plan["chart_before"]["version"])
    head += "# target: chart %s %s\n" % (plan["target_chart"]["name"], plan["target_chart"]["version"])
    parts = [head]
    if merged:
        parts.append("\n## captured user values -> merged values\n")
        parts.append(merged["diff_text"] or "(no change)\n")
    parts.append("\n## deployed user values (revision %s) -> the values the release gets\n" % plan["revision_before"])
    parts.append(helm_values.unified_diff(deployed, target, redact=redact) or "(no change)\n")
    return {"values.merged.json": to_json(redacted(target, redact)), "values.diff.txt": "".join(parts)}


def diff_of(plan, redact):
    """Ansible's ``--diff`` shape: the chart version and the user values, before and after."""
    def text(chart, values):
        return "chart: %s %s\nvalues: %s" % (chart.get("name"), chart.get("version"), to_json(redacted(values, redact)))
    return {"before_header": "%s/%s revision %s" % (plan["namespace"], plan["release"], plan["revision_before"]),
            "after_header": "%s/%s %s" % (plan["namespace"], plan["release"], plan["op"]),
            "before": text(plan["chart_before"], plan["deployed_values"] or {}) if plan["revision_before"] else "",
            "after": text(plan["target_chart"], plan["target_values"])}
