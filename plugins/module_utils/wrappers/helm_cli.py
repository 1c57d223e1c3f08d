# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one wrapper around the ``helm`` CLI: argv lists, version-gated flags, and the parsers of
the outputs the collection reads.

- ``helm version --template {{.Version}}`` -> :func:`parse_version` (``v3.21.4`` -> ``(3, 21, 4)``).
- ``helm history R -n NS --max N -o json`` -> :func:`parse_history` (Helm's ``releaseInfo``:
  ``revision``, ``updated``, ``status``, ``chart`` = ``<name>-<version>``, ``app_version``,
  ``description``; newer Helm adds ``rollback_revision`` on rollbacks).
- ``helm get values R -n NS --revision N -o json [--all]`` -> :func:`parse_values`.
- ``helm get manifest R -n NS --revision N`` -> :func:`parse_manifest` (the CLI adds one newline).
- ``helm get notes R -n NS --revision N`` -> :func:`parse_notes` (the CLI prints ``NOTES:`` first).
- ``helm get metadata R -n NS --revision N -o json`` (Helm >= 3.13, all of 4) -> :func:`parse_metadata`.
- :func:`manifest_images`: the container images of a manifest's workloads (PyYAML: controller only).
- :func:`wait_args`: ``--wait`` (Helm 3, a boolean) or ``--wait=<watcher|legacy>`` (Helm 4).

Write operations (argv lists, flags decided by the detected version; see the section "write
operations" below and docs/design.md): :func:`upgrade_argv`, :func:`install_argv`,
:func:`rollback_argv`, :func:`template_argv`, :func:`show_crds_argv`; ``upgrade``/``install -o json``
-> :func:`parse_release` (a release summary: name, namespace, revision, status, chart, app_version,
description). :class:`HelmBackend` is the method set both backends give (:class:`HelmCli` here,
``helm_library.HelmLibrary``); ``helm_library.open_backend`` picks one.

Connection settings go in argv only where they are not secret (``--kubeconfig``,
``--kube-context``, ``--namespace``); the API server, token and CA go through Helm's environment
variables (``HELM_KUBEAPISERVER``, ``HELM_KUBETOKEN``, ``HELM_KUBECAFILE``,
``HELM_KUBEINSECURE_SKIP_TLS_VERIFY``), so a token never appears in a process list or an error.
Sources: helm/helm v4.2.4 ``pkg/cmd/{history,get_values,get_manifest,get_notes,get_metadata}.go``,
v3.21.4 ``cmd/helm/``; DOMAIN.md section 9.

The controller's ``HELM_*`` variables never change what is read (:func:`helm_environment`, the
decision per variable in :data:`HELM_ENV_DECISIONS` and docs/helm-state.md): every one is removed
and a few are pinned, for the CLI and for the library (whose Go runtime copies the environment once,
when it is loaded, so the module cleans it before loading it). Transient API failures that Helm
reports (:func:`transient`) are retried within the module's ``api_deadline``
(:class:`RetryingHelm`); a forbidden read of the release's storage is :class:`HelmForbidden`.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import contextlib
import json
import os
import re
import shutil
import stat
import tempfile

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.evidence.private_files import write_private

GET_METADATA_MIN = (3, 13, 0)  # "Restore `helm get metadata` command" is in the v3.13.0 changelog
DEFAULT_MAX_REVISIONS = 256  # helm history's own default (--max 256)

_VERSION_RE = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)(?:[-+][0-9A-Za-z.+-]*)?$")
# "<chart name>-<chart version>": the version starts at the first "-" followed by a digit or "v<digit>"
_CHART_RE = re.compile(r"^(?P<name>.+?)-(?P<version>v?\d[0-9A-Za-z.+-]*)$")
_WORKLOAD_KINDS = ("Deployment", "DaemonSet", "StatefulSet", "ReplicaSet", "Job", "Pod", "CronJob",
                   "ReplicationController")


class HelmOutputError(ValueError):
    """helm printed something these parsers do not accept (``what`` names the command)."""

    def __init__(self, what, reason):
        ValueError.__init__(self, "%s: %s" % (what, reason))
        self.what = what
        self.reason = reason


class HelmCommandError(Exception):
    """helm exited non-zero: ``argv`` (no secrets in it), ``rc``, ``stderr`` (its last lines)."""

    def __init__(self, argv, rc, stderr):
        lines = [line for line in (stderr or "").strip().splitlines() if line.strip()]
        self.argv = list(argv)
        self.rc = rc
        self.stderr = "\n".join(lines[-5:])
        Exception.__init__(self, "%s exited with %s: %s" % (" ".join(argv), rc, self.stderr or "(no output)"))


# -- versions and flags ---------------------------------------------------------------------------


def parse_version(stdout):
    """``helm version --template {{.Version}}`` (``v4.2.3``, ``v3.21.4+gabc``) -> ``(major, minor, patch)``."""
    text = (stdout or "").strip()
    match = _VERSION_RE.match(text)
    if not match:
        raise HelmOutputError("helm version", "not a Helm version: %r" % text[:80])
    return tuple(int(part) for part in match.groups())


def supports_get_metadata(version):
    return tuple(version) >= GET_METADATA_MIN


def wait_args(version, mode="watcher"):
    """The wait flag of ``install``/``upgrade``/``rollback`` for this Helm.

    Helm 4: ``--wait=watcher|legacy|hookOnly`` (bare ``--wait`` means watcher, omitted means
    hookOnly). Helm 3: ``--wait`` is a boolean, so watcher and legacy both become ``--wait`` and
    hookOnly (no waiting for resources) becomes no flag.
    """
    if mode not in ("watcher", "legacy", "hookOnly"):
        raise ValueError("wait mode must be watcher, legacy or hookOnly, got %r" % (mode,))
    if version[0] >= 4:
        return ["--wait=%s" % mode]
    return [] if mode == "hookOnly" else ["--wait"]


# -- argv -----------------------------------------------------------------------------------------


def connection_args(namespace, kubeconfig=None, context=None):
    """The non-secret connection flags every release command takes."""
    args = []
    if kubeconfig:
        args += ["--kubeconfig", kubeconfig]
    if context:
        args += ["--kube-context", context]
    return args + ["--namespace", namespace]


def connection_env(host=None, api_key=None, ca_cert=None, validate_certs=None, proxy=None):
    """Environment for helm: the API server, token, CA, TLS verification and proxy (never argv)."""
    env = {}
    if host:
        env["HELM_KUBEAPISERVER"] = host
    if api_key:
        env["HELM_KUBETOKEN"] = api_key
    if ca_cert:
        env["HELM_KUBECAFILE"] = ca_cert
    if validate_certs is False:
        env["HELM_KUBEINSECURE_SKIP_TLS_VERIFY"] = "true"
    if proxy:
        env["HTTPS_PROXY"] = env["HTTP_PROXY"] = proxy
    return env


def version_argv(helm):
    return [helm, "version", "--template", "{{.Version}}"]


def history_argv(helm, release, conn, max_revisions=DEFAULT_MAX_REVISIONS):
    return [helm, "history", release] + list(conn) + ["--max", str(max_revisions), "-o", "json"]


def get_values_argv(helm, release, conn, revision, all_values=False):
    return ([helm, "get", "values", release] + list(conn) + ["--revision", str(revision), "-o", "json"]
            + (["--all"] if all_values else []))


def get_manifest_argv(helm, release, conn, revision):
    return [helm, "get", "manifest", release] + list(conn) + ["--revision", str(revision)]


def get_notes_argv(helm, release, conn, revision):
    return [helm, "get", "notes", release] + list(conn) + ["--revision", str(revision)]


def get_metadata_argv(helm, release, conn, revision):
    return [helm, "get", "metadata", release] + list(conn) + ["--revision", str(revision), "-o", "json"]


# -- write operations: upgrade, install, rollback, template, show crds -------------------------------

DEFAULT_WRITE_TIMEOUT = 600  # seconds: helm's --timeout for upgrade/install/rollback (what --wait waits)
COMMAND_GRACE_SECONDS = 60  # the runner kills helm this long after helm's own --timeout (helm ends first)
DEFAULT_HISTORY_MAX = 10  # helm's own default (from HELM_MAX_HISTORY, which is cleared), passed explicitly
DRY_RUN_SERVER_MIN = (3, 13, 0)  # Helm 3's upgrade/install --dry-run became client|server|none in v3.13.0
SERVER_SIDE_CHOICES = ("auto", "true", "false")
DRY_RUN_CHOICES = ("server", "client")
WRITE_METHODS = ("upgrade", "install", "rollback")


class HelmFlagError(ValueError):
    """What was asked cannot be expressed with this Helm's flags (the message names flag and version)."""


def chart_ref_kind(chart):
    """``oci`` (``oci://...``), ``url`` (``https://.../x.tgz``), ``path`` (a local directory or
    archive: absolute, ``./``-relative or existing) or ``repo`` (``repo/chart``, with ``--repo``)."""
    text = str(chart or "")
    if not text:
        raise ValueError("a chart reference is required")
    if text.startswith("oci://"):
        return "oci"
    if text.startswith(("https://", "http://")):
        return "url"
    if os.path.isabs(text) or text.startswith(("./", "../")) or text in (".", "..") or os.path.exists(text):
        return "path"
    return "repo"


def duration(seconds):
    """``600`` -> ``600s`` (Go's time.ParseDuration; Helm 3 and 4 take the same form)."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds <= 0:
        raise ValueError("timeout must be a positive number of seconds, got %r" % (seconds,))
    return "%ds" % max(int(round(seconds)), 1)


def _vtext(version):
    return "%d.%d.%d" % tuple(version)


def apply_args(version, server_side="auto", force_conflicts=False, install=False):
    """How objects are applied. Helm 4: ``--server-side=<auto|true|false>`` always given explicitly
    (upgrade and rollback: ``auto`` keeps the release's previous apply method, so a release Helm 3
    installed stays on client-side apply; install: a boolean, ``auto`` means Helm 4's default
    ``true``), ``--force-conflicts`` only when asked (server-side apply only; never with
    ``--force-replace``, which is never passed). Helm 3 has only client-side apply: ``true`` or
    ``force_conflicts`` is refused."""
    if server_side not in SERVER_SIDE_CHOICES:
        raise ValueError("server_side must be one of %s, got %r" % (", ".join(SERVER_SIDE_CHOICES), server_side))
    if version[0] < 4:
        if server_side == "true" or force_conflicts:
            raise HelmFlagError("Helm %s has no server-side apply (--server-side/--force-conflicts are Helm 4 flags)"
                                % _vtext(version))
        return []
    if force_conflicts and server_side == "false":
        raise HelmFlagError("--force-conflicts applies to server-side apply only; server_side is false")
    value = "true" if (install and server_side == "auto") else server_side
    return ["--server-side=%s" % value] + (["--force-conflicts"] if force_conflicts else [])


def dry_run_args(version, dry_run, command="upgrade"):
    """``--dry-run=server`` (check mode: the API server admits and defaults, nothing is stored) or
    ``--dry-run=client``. Helm 3 before 3.13 has only the boolean (client) ``--dry-run`` on
    upgrade/install, and Helm 3's rollback only a boolean ``--dry-run`` (it simulates without
    calling the API's dry-run): that is what it gets there."""
    if dry_run is None:
        return []
    if dry_run not in DRY_RUN_CHOICES:
        raise ValueError("dry_run must be server, client or None, got %r" % (dry_run,))
    if version[0] >= 4:
        return ["--dry-run=%s" % dry_run]
    if command == "rollback":
        return ["--dry-run"]
    if tuple(version) >= DRY_RUN_SERVER_MIN:
        return ["--dry-run=%s" % dry_run]
    if dry_run == "client":
        return ["--dry-run"]
    raise HelmFlagError("helm %s --dry-run=server needs Helm >= %s (this is %s)" % (
        command, _vtext(DRY_RUN_SERVER_MIN), _vtext(version)))


def _chart_args(chart, chart_version, repo_url):
    kind = chart_ref_kind(chart)
    args = []
    if chart_version and kind in ("repo", "oci"):
        args += ["--version", str(chart_version)]
    if repo_url:
        if kind != "repo":
            raise HelmFlagError("--repo applies to a chart name in a repository, not to a %s reference" % kind)
        args += ["--repo", repo_url]
    return args


def _values_args(values_files):
    args = []
    for path in values_files or ():
        args += ["--values", path]
    return args


def _history_args(history_max):
    if history_max is None:
        return []
    if isinstance(history_max, bool) or not isinstance(history_max, int) or history_max < 0:
        raise ValueError("history_max must be an integer >= 0 (0: no limit), got %r" % (history_max,))
    return ["--history-max", str(history_max)]


def _failure_args(version, rollback_on_failure):
    if not rollback_on_failure:
        return []
    return ["--rollback-on-failure"] if version[0] >= 4 else ["--atomic"]


def upgrade_argv(helm, version, release, chart, conn, values_files=(), chart_version=None, repo_url=None,
                 wait="watcher", timeout=DEFAULT_WRITE_TIMEOUT, dry_run=None, description=None,
                 history_max=DEFAULT_HISTORY_MAX, rollback_on_failure=False, server_side="auto",
                 force_conflicts=False):
    """``helm upgrade`` with the values given explicitly: ``--reset-values`` always (the chart's
    defaults plus exactly ``values_files``; never ``--reuse-values``), ``--version`` for repository
    and OCI references only (a local chart is pinned by its path and digest), the wait flag of this
    Helm (:func:`wait_args`) and ``--timeout`` always (it bounds hooks too), the apply method
    (:func:`apply_args`), ``--atomic``/``--rollback-on-failure`` only when asked (off: the rollback
    is the collection's own), ``--history-max`` explicit, ``-o json`` (the release, parsed by
    :func:`parse_release`)."""
    return ([helm, "upgrade", release, chart] + list(conn) + _values_args(values_files)
            + _chart_args(chart, chart_version, repo_url) + ["--reset-values"]
            + wait_args(version, wait) + ["--timeout", duration(timeout)]
            + apply_args(version, server_side, force_conflicts) + _failure_args(version, rollback_on_failure)
            + _history_args(history_max) + (["--description", description] if description else [])
            + dry_run_args(version, dry_run, "upgrade") + ["-o", "json"])


def install_argv(helm, version, release, chart, conn, values_files=(), chart_version=None, repo_url=None,
                 wait="watcher", timeout=DEFAULT_WRITE_TIMEOUT, dry_run=None, description=None,
                 create_namespace=False, rollback_on_failure=False, server_side="auto", force_conflicts=False):
    """``helm install`` (a rollback whose recorded revision is gone reinstalls the recorded chart
    and values), with the same rules as :func:`upgrade_argv`."""
    return ([helm, "install", release, chart] + list(conn) + _values_args(values_files)
            + _chart_args(chart, chart_version, repo_url)
            + wait_args(version, wait) + ["--timeout", duration(timeout)]
            + apply_args(version, server_side, force_conflicts, install=True)
            + _failure_args(version, rollback_on_failure) + (["--create-namespace"] if create_namespace else [])
            + (["--description", description] if description else [])
            + dry_run_args(version, dry_run, "install") + ["-o", "json"])


def rollback_argv(helm, version, release, revision, conn, wait="watcher", timeout=DEFAULT_WRITE_TIMEOUT, dry_run=None,
                  history_max=DEFAULT_HISTORY_MAX, server_side="auto", force_conflicts=False):
    """``helm rollback RELEASE REVISION`` to a recorded revision (never ``0``, "the previous one")."""
    if isinstance(revision, bool) or not isinstance(revision, int) or revision < 1:
        raise ValueError("revision must be a recorded revision (an integer >= 1), got %r" % (revision,))
    return ([helm, "rollback", release, str(revision)] + list(conn)
            + wait_args(version, wait) + ["--timeout", duration(timeout)]
            + apply_args(version, server_side, force_conflicts) + _history_args(history_max)
            + dry_run_args(version, dry_run, "rollback"))


def template_argv(helm, version, release, chart, conn, values_files=(), chart_version=None, repo_url=None,
                  include_crds=False, is_upgrade=True):
    """``helm template`` (client-side rendering: no cluster is contacted, ``lookup`` finds nothing)."""
    del version  # the same flags in Helm 3 and 4
    return ([helm, "template", release, chart] + list(conn) + _values_args(values_files)
            + _chart_args(chart, chart_version, repo_url)
            + (["--include-crds"] if include_crds else []) + (["--is-upgrade"] if is_upgrade else []))


def show_crds_argv(helm, chart, chart_version=None, repo_url=None):
    """``helm show crds CHART``: the files of the chart's ``crds/`` (and its subcharts')."""
    return [helm, "show", "crds", chart] + _chart_args(chart, chart_version, repo_url)


def release_summary(name, namespace, revision, status, chart_name, chart_version, app_version, description,
                    dry_run=False):
    """The shape every write operation returns, for both backends."""
    return {
        "name": name,
        "namespace": namespace,
        "revision": revision,
        "status": status,
        "chart": "%s-%s" % (chart_name, chart_version) if chart_name else None,
        "chart_name": chart_name,
        "chart_version": chart_version,
        "app_version": app_version,
        "description": description,
        "dry_run": bool(dry_run),
    }


def summary_from_history(entry, name, namespace, dry_run=False):
    """A release summary from a (normalized) history entry: the newest after a rollback."""
    return release_summary(name, namespace, entry.get("revision"), entry.get("status"), entry.get("chart_name"),
                           entry.get("chart_version"), entry.get("app_version"), entry.get("description"),
                           dry_run=dry_run)


def parse_release(stdout, what="helm upgrade", dry_run=False):
    """``helm upgrade|install -o json`` (the stored ``Release``: ``name``, ``namespace``,
    ``version``, ``info.status``/``description``, ``chart.metadata``) -> a release summary. The
    release's ``config`` (values) and ``manifest`` are not kept."""
    data = _json(what, stdout)
    if not isinstance(data, dict) or not isinstance(data.get("version"), int) or not isinstance(data.get("info"), dict):
        raise HelmOutputError(what, "expected a release object with an integer version and info")
    info = data["info"]
    metadata = (data.get("chart") or {}).get("metadata") or {}
    if not info.get("status"):
        raise HelmOutputError(what, "the release has no status")
    return release_summary(data.get("name"), data.get("namespace"), data["version"], info["status"],
                           metadata.get("name"), metadata.get("version"), metadata.get("appVersion"),
                           info.get("description"), dry_run=dry_run)


def _object_key(obj):
    meta = obj.get("metadata") or {}
    return (str(obj.get("kind")), str(meta.get("namespace") or ""), str(meta.get("name") or ""))


def sorted_objects(objects):
    """Objects in one order for both backends (kind, namespace, name): helm template prints them in
    install order, the library by template file."""
    return sorted(objects, key=_object_key)


def parse_rendered(stdout):
    """``helm template`` -> ``{"manifest": text, "objects": [...]}`` (objects sorted)."""
    text = stdout or ""
    return {"manifest": text, "objects": sorted_objects(manifest_objects(text))}


def parse_crds(stdout):
    """``helm show crds`` -> the objects of the chart's ``crds/`` (sorted)."""
    return sorted_objects(manifest_objects(stdout or ""))


def check_values_file(path):
    """A values file the caller wrote must be private (no group or other bits): values hold secrets."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        raise ValueError("values file %s: %s" % (path, exc.strerror))
    if not stat.S_ISREG(mode):
        raise ValueError("values file %s: not a regular file" % path)
    if mode & 0o077:
        raise ValueError("values file %s: mode %04o; values files must be 0600 (they can hold secrets)"
                         % (path, stat.S_IMODE(mode)))
    return path


# -- parsers --------------------------------------------------------------------------------------


def _json(what, stdout):
    try:
        return json.loads(stdout)
    except ValueError as exc:
        raise HelmOutputError(what, "not JSON: %s" % exc)


def split_chart(chart):
    """``gpu-operator-v26.7.0`` -> ``("gpu-operator", "v26.7.0")``; ``foo-0.1.0-beta.1`` -> ``("foo", "0.1.0-beta.1")``.

    Helm prints ``MISSING`` when a release has no chart metadata; that, and anything without a
    version, gives ``(chart, None)``.
    """
    match = _CHART_RE.match(chart or "")
    if not match:
        return chart or None, None
    return match.group("name"), match.group("version")


def normalize_history_entry(entry):
    """One history entry in the collection's form (the CLI's fields plus the chart split)."""
    chart_name, chart_version = split_chart(entry.get("chart"))
    result = {
        "revision": entry.get("revision"),
        "updated": entry.get("updated") or None,
        "status": entry.get("status"),
        "chart": entry.get("chart"),
        "chart_name": chart_name,
        "chart_version": chart_version,
        "app_version": entry.get("app_version"),
        "description": entry.get("description"),
    }
    if entry.get("rollback_revision") is not None:
        result["rollback_revision"] = entry["rollback_revision"]
    return result


def parse_history(stdout):
    """``helm history -o json`` -> entries sorted by revision (Helm prints them oldest first)."""
    data = _json("helm history", stdout)
    if not isinstance(data, list):
        raise HelmOutputError("helm history", "expected a JSON list, got %s" % type(data).__name__)
    entries = []
    for item in data:
        if not isinstance(item, dict) or not isinstance(item.get("revision"), int) or not item.get("status"):
            raise HelmOutputError("helm history", "an entry without an integer revision and a status: %r" % (item,))
        entries.append(normalize_history_entry(item))
    return sorted(entries, key=lambda e: e["revision"])


def parse_values(stdout, what="helm get values"):
    """``helm get values -o json`` -> a dict (Helm prints ``null`` when no values were supplied)."""
    data = _json(what, stdout)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise HelmOutputError(what, "expected a JSON object, got %s" % type(data).__name__)
    return data


def parse_manifest(stdout):
    """``helm get manifest`` prints the stored manifest and a newline (``fmt.Fprintln``)."""
    text = stdout or ""
    return text[:-1] if text.endswith("\n") else text


def parse_notes(stdout):
    """``helm get notes`` prints ``NOTES:\\n<notes>\\n``, or nothing when the chart has no notes."""
    text = stdout or ""
    if not text.strip():
        return ""
    if not text.startswith("NOTES:\n"):
        raise HelmOutputError("helm get notes", "output does not start with 'NOTES:'")
    text = text[len("NOTES:\n"):]
    return text[:-1] if text.endswith("\n") else text


def parse_metadata(stdout):
    """``helm get metadata -o json`` -> a dict with at least ``chart``, ``version``, ``revision``."""
    data = _json("helm get metadata", stdout)
    if not isinstance(data, dict) or not data.get("chart") or "version" not in data:
        raise HelmOutputError("helm get metadata", "expected an object with chart and version")
    return data


# -- manifest -------------------------------------------------------------------------------------


def manifest_objects(manifest):
    """The objects of a rendered manifest (multi-document YAML; empty documents skipped)."""
    import yaml  # controller-side only (an ansible-core dependency)

    try:
        docs = list(yaml.safe_load_all(manifest or ""))
    except yaml.YAMLError as exc:
        raise HelmOutputError("manifest", "not YAML: %s" % exc)
    return [doc for doc in docs if isinstance(doc, dict) and doc.get("kind")]


def _pod_spec(obj):
    kind = obj.get("kind")
    spec = obj.get("spec") or {}
    if kind == "Pod":
        return spec
    if kind == "CronJob":
        spec = ((spec.get("jobTemplate") or {}).get("spec") or {})
    return ((spec.get("template") or {}).get("spec")) or {}


def manifest_images(objects, default_namespace):
    """One entry per container of every workload: kind, name, namespace, container, init, image."""
    images = []
    for obj in objects:
        if obj.get("kind") not in _WORKLOAD_KINDS:
            continue
        meta = obj.get("metadata") or {}
        spec = _pod_spec(obj)
        for init, key in ((True, "initContainers"), (False, "containers")):
            for container in spec.get(key) or []:
                if not isinstance(container, dict) or not container.get("image"):
                    continue
                images.append({
                    "kind": obj["kind"],
                    "name": meta.get("name"),
                    "namespace": meta.get("namespace") or default_namespace,
                    "container": container.get("name"),
                    "init": init,
                    "image": container["image"],
                })
    return images


def image_digest(image_id):
    """``docker-pullable://repo@sha256:abc`` or ``repo@sha256:abc`` -> ``sha256:abc``; None without a digest."""
    if not image_id or "@" not in image_id:
        return None
    digest = image_id.rsplit("@", 1)[1]
    return digest if ":" in digest else None


# -- the controller's HELM_* environment -------------------------------------------------------------

# Every HELM_* variable of the controller's environment is removed before either backend runs (the
# prefix rule also covers variables a later Helm adds); the module's own options decide instead.
# Then HELM_DRIVER, the three homes and HELM_NO_PLUGINS are pinned. Only these are kept, because
# they choose the helm-python-sdk installation, not what Helm reads:
HELM_ENV_KEEP = ("HELM_C_LIB",)
HELM_ENV_DECISIONS = (
    ("HELM_DRIVER", "pinned to secret: the release storage this collection reads (configmap, sql or memory "
                    "would read another history, or none)"),
    ("HELM_DRIVER_SQL_CONNECTION_STRING", "cleared (the sql driver is never used; it is a credential)"),
    ("HELM_NAMESPACE", "cleared: the namespace option decides (--namespace / the library's namespace)"),
    ("HELM_KUBECONTEXT", "cleared: the context option decides (the kubeconfig's current context otherwise)"),
    ("HELM_KUBEAPISERVER", "cleared: the host option decides"),
    ("HELM_KUBETOKEN", "cleared: the api_key option decides"),
    ("HELM_KUBECAFILE", "cleared: the ca_cert option decides"),
    ("HELM_KUBEINSECURE_SKIP_TLS_VERIFY", "cleared: the validate_certs option decides"),
    ("HELM_KUBETLS_SERVER_NAME", "cleared: the kubeconfig decides"),
    ("HELM_KUBEASUSER", "cleared: impersonation would read as another identity"),
    ("HELM_KUBEASGROUPS", "cleared: impersonation would read as other groups"),
    ("HELM_BURST_LIMIT", "cleared: Helm's default client throttling"),
    ("HELM_QPS", "cleared: Helm's default client throttling"),
    ("HELM_MAX_HISTORY", "cleared: only an upgrade prunes history; a capture reads it whole (max_revisions)"),
    ("HELM_CACHE_HOME", "pinned to an empty private directory of the run (no repository cache, no plugins)"),
    ("HELM_CONFIG_HOME", "pinned to an empty private directory of the run (no repositories.yaml, no registry logins)"),
    ("HELM_DATA_HOME", "pinned to an empty private directory of the run (no plugins, no starters)"),
    ("HELM_PLUGINS", "cleared (under the pinned data home: none)"),
    ("HELM_NO_PLUGINS", "pinned to 1: no plugin code runs inside a capture"),
    ("HELM_REGISTRY_CONFIG", "cleared (under the pinned config home): reads use no registry"),
    ("HELM_REPOSITORY_CONFIG", "cleared (under the pinned config home): reads use no repository"),
    ("HELM_REPOSITORY_CACHE", "cleared (under the pinned cache home)"),
    ("HELM_CONTENT_CACHE", "cleared (under the pinned cache home)"),
    ("HELM_DEBUG", "cleared: debug output would mix into the error messages"),
    ("HELM_BIN, HELM_PLUGIN_*, other HELM_*", "cleared"),
)


def helm_environment(environ, home):
    """``environ`` without the controller's HELM_* variables, plus the pinned ones (homes under
    ``home``, a private directory of the run). Returns ``(env, removed)``; ``removed`` lists the
    names taken away (values never shown)."""
    env = dict((k, v) for k, v in environ.items() if not k.startswith("HELM_") or k in HELM_ENV_KEEP)
    removed = sorted(k for k in environ if k.startswith("HELM_") and k not in HELM_ENV_KEEP)
    env.update({
        "HELM_DRIVER": "secret",
        "HELM_CACHE_HOME": os.path.join(home, "cache"),
        "HELM_CONFIG_HOME": os.path.join(home, "config"),
        "HELM_DATA_HOME": os.path.join(home, "data"),
        "HELM_NO_PLUGINS": "1",
    })
    return env, removed


def apply_helm_environment(environ, home):
    """Make ``environ`` (``os.environ`` in the module, before the Helm library is loaded) what
    :func:`helm_environment` says; returns the names removed."""
    env, removed = helm_environment(environ, home)
    for name in removed:
        del environ[name]
    for name, value in env.items():
        if environ.get(name) != value:
            environ[name] = value
    return removed


# -- transient and forbidden failures ---------------------------------------------------------------

# What client-go (inside helm and the library) says for the answers and transport failures that
# the kubernetes client retries too (k8s.io/apimachinery errors.NewGenericServerResponse, net errors).
_TRANSIENT_RE = re.compile("|".join((
    r"the server is currently unable to handle the request",  # 503
    r"Internal error occurred",  # 500 with a Status body
    r"an error on the server .* has prevented the request from succeeding",  # 500 without
    r"the server has received too many requests",  # 429
    r"the server was unable to return a response in the time allotted",  # 504
    r"Timeout: request did not complete within",
    r"the server responded with the status code 50[234]",  # 502 and others
    r"connect: connection refused",
    r"connection reset by peer",
    r"http2: client connection lost",
    r"unexpected EOF",
    r"i/o timeout",
    r"TLS handshake timeout",
    r"etcdserver: (leader changed|request timed out)",
)), re.IGNORECASE)
_FORBIDDEN_RE = re.compile(r"\bis forbidden\b|\bForbidden\b")


# Of those, the failures where the request was refused before any handler ran (the k8s client's
# WRITE_RULE: 429, 503, a connection that could not be made): the only ones a write operation
# (upgrade, install, rollback) is retried on.
_WRITE_TRANSIENT_RE = re.compile("|".join((
    r"the server is currently unable to handle the request",  # 503
    r"the server has received too many requests",  # 429
    r"connect: connection refused",
)), re.IGNORECASE)


def transient(text):
    """Whether a Helm error (stderr of the CLI, the library's message) is a transient API failure."""
    return bool(_TRANSIENT_RE.search(text or "")) and not forbidden(text)


def write_transient(text):
    """Whether a failed upgrade/install/rollback may be run again: refused before any change.
    (Helm's upgrade is declarative, but a revision that failed half-applied is not retried blindly:
    the scripted rollback decides.)"""
    return bool(_WRITE_TRANSIENT_RE.search(text or "")) and not forbidden(text)


def forbidden(text):
    return bool(_FORBIDDEN_RE.search(text or ""))


class HelmForbidden(Exception):
    """Helm could not read the release's storage (its Secrets): RBAC forbids it. Never "absent"."""

    def __init__(self, namespace, release, error):
        Exception.__init__(self, "forbidden: the Helm storage Secrets of release %s/%s cannot be read (%s); a release "
                                 "that cannot be read is not an absent one: grant get and list on secrets in "
                                 "namespace %s" % (namespace, release, error, namespace))
        self.error = error


class HelmWriteForbidden(HelmForbidden):
    """A write operation was refused by RBAC (creating or patching an object of the chart, or the
    release's storage Secret)."""

    def __init__(self, namespace, release, what, error):
        HelmForbidden.__init__(self, namespace, release, error)
        self.args = ("forbidden: helm %s of release %s/%s was refused by RBAC (%s)" % (what, namespace, release, error),)
        self.what = what


class HelmRetriesExhausted(Exception):
    """A transient failure lasted past the deadline."""

    def __init__(self, what, attempts, elapsed, deadline, error, why):
        Exception.__init__(self, "%s failed after %d attempt(s) in %.1f s (api_deadline %g s), %s; last: %s" % (
            what, attempts, elapsed, deadline, why, error))
        self.error = error


class RetryingHelm:
    """A backend (HelmCli or HelmLibrary) whose calls are retried on transient failures within
    ``policy`` (a :class:`~.k8s_client.RetryPolicy`); ``errors`` are the backend's failure types.

    Reads (and render, render_crds) are retried on every :func:`transient` failure; the write
    operations of :data:`WRITE_METHODS` only on :func:`write_transient` ones (refused before any
    change). A forbidden write is :class:`HelmWriteForbidden`."""

    def __init__(self, backend, policy, errors, namespace, release):
        self.backend = backend
        self.policy = policy
        self.errors = tuple(errors)
        self.namespace = namespace
        self.release = release
        self.retries = 0

    def __getattr__(self, name):
        func = getattr(self.backend, name)
        if not callable(func) or name.startswith("_") or name in ("close",):
            return func

        def call(*args, **kwargs):
            return self.call(name, func, *args, **kwargs)
        return call

    def call(self, what, func, *args, **kwargs):
        policy = self.policy
        started = policy.clock()
        attempts = 0
        while True:
            attempts += 1
            try:
                return func(*args, **kwargs)
            except self.errors as exc:  # pylint: disable=catching-non-exception
                text = str(exc)
                write = what in WRITE_METHODS
                if forbidden(text):
                    if write:
                        raise HelmWriteForbidden(self.namespace, self.release, what, text)
                    raise HelmForbidden(self.namespace, self.release, text)
                if not (write_transient(text) if write else transient(text)):
                    raise
                delay, why = policy.wait(attempts, None, started)
                if delay is None:
                    raise HelmRetriesExhausted("helm %s %s/%s" % (what, self.namespace, self.release), attempts,
                                               policy.clock() - started, policy.deadline, text, why)
                self.retries += 1
                policy.sleep(delay)


# -- the one interface ---------------------------------------------------------------------------


class HelmBackend:
    """The method set both backends give, in the same shapes (:class:`HelmCli`,
    ``helm_library.HelmLibrary``); ``helm_library.open_backend`` picks one.

    Reads: ``history``, ``get_values``, ``get_manifest``, ``get_notes``, ``get_metadata``.
    Writes, each returning a release summary (:func:`release_summary`: ``name``, ``namespace``,
    ``revision``, ``status``, ``chart``, ``chart_name``, ``chart_version``, ``app_version``,
    ``description``, ``dry_run``): ``upgrade``, ``install``, ``rollback``. With ``dry_run`` nothing
    is stored: upgrade/install give the release as it would be (Helm's ``pending-*`` status,
    description ``Dry run complete``), rollback the release as it stands. Rendering (nothing
    applied): ``render`` (``{"manifest", "objects"}``) and ``render_crds`` (the objects of the
    chart's ``crds/``), objects sorted by kind, namespace, name.

    ``values`` is a dict (the merged values of ``helm_values.plan``), ``values_files`` files the
    caller wrote 0600, applied before it. Timeouts are seconds; ``wait`` is ``watcher``, ``legacy``
    or ``hookOnly`` (:func:`wait_args`).
    """

    kind = None
    write_methods = WRITE_METHODS

    def version_text(self):
        raise NotImplementedError

    def close(self):
        """Release what the backend holds (the library's handle); the CLI holds nothing."""

    def history(self, release, max_revisions=DEFAULT_MAX_REVISIONS):
        raise NotImplementedError

    def get_values(self, release, revision, all_values=False):
        raise NotImplementedError

    def get_manifest(self, release, revision):
        raise NotImplementedError

    def get_notes(self, release, revision):
        raise NotImplementedError

    def get_metadata(self, release, revision):
        raise NotImplementedError

    def upgrade(self, release, chart, values=None, values_files=(), chart_version=None, repo_url=None, wait="watcher",
                timeout=DEFAULT_WRITE_TIMEOUT, dry_run=None, description=None, history_max=DEFAULT_HISTORY_MAX,
                rollback_on_failure=False, server_side="auto", force_conflicts=False):
        raise NotImplementedError

    def install(self, release, chart, values=None, values_files=(), chart_version=None, repo_url=None, wait="watcher",
                timeout=DEFAULT_WRITE_TIMEOUT, dry_run=None, description=None, create_namespace=False,
                rollback_on_failure=False, server_side="auto", force_conflicts=False):
        raise NotImplementedError

    def rollback(self, release, revision, wait="watcher", timeout=DEFAULT_WRITE_TIMEOUT, dry_run=None,
                 history_max=DEFAULT_HISTORY_MAX, server_side="auto", force_conflicts=False):
        raise NotImplementedError

    def render(self, release, chart, values=None, values_files=(), chart_version=None, repo_url=None,
               include_crds=False, is_upgrade=True):
        raise NotImplementedError

    def render_crds(self, chart, chart_version=None, repo_url=None):
        raise NotImplementedError


# -- the runner -----------------------------------------------------------------------------------


class HelmCli(HelmBackend):
    """Runs helm through ``run(argv, environ_update) -> (rc, stdout, stderr)`` (a
    :class:`~.command_runner.Runner`: a deadline per command, ``CommandTimedOut`` past it).

    ``version`` is read once (:meth:`detect_version`) and gates the flags.
    """

    kind = "cli"

    def __init__(self, run, helm="helm", namespace="default", kubeconfig=None, context=None, env=None, work_dir=None):
        self._run = run
        self.helm = helm
        self.namespace = namespace
        self.conn = connection_args(namespace, kubeconfig, context)
        self.env = dict(env or {})
        self.env.setdefault("LC_ALL", "C")
        self.version = None
        self.work_dir = work_dir

    def _call(self, argv, timeout=None):
        """Run argv; ``timeout`` (seconds) replaces the runner's default deadline (write operations:
        helm's ``--timeout`` plus :data:`COMMAND_GRACE_SECONDS`)."""
        if timeout is None:
            rc, stdout, stderr = self._run(argv, self.env)
        else:
            rc, stdout, stderr = self._run(argv, self.env, timeout=timeout)
        if rc != 0:
            raise HelmCommandError(argv, rc, stderr)
        return stdout

    def _version(self):
        if self.version is None:
            self.detect_version()
        return self.version

    def version_text(self):
        return "v%s" % _vtext(self._version())

    @contextlib.contextmanager
    def _values_files(self, values, values_files):
        """The caller's files (checked private) and ``values`` written to a 0600 file in a new 0700
        directory (under ``work_dir``), removed afterwards."""
        files = [check_values_file(path) for path in values_files or ()]
        if values is None:
            yield files
            return
        if not isinstance(values, dict):
            raise ValueError("values must be a dict, got %s" % type(values).__name__)
        directory = tempfile.mkdtemp(prefix="helm-values-", dir=self.work_dir)
        try:
            path = os.path.join(directory, "values.json")  # JSON is YAML: helm -f reads it as it is
            write_private(path, json.dumps(values, sort_keys=True, indent=1) + "\n")
            yield files + [path]
        finally:
            shutil.rmtree(directory, ignore_errors=True)

    def detect_version(self):
        self.version = parse_version(self._call(version_argv(self.helm)))
        if self.version[0] < 3:
            raise HelmOutputError("helm version", "Helm %d.%d.%d is not supported (Helm 3 or 4 is)" % self.version)
        return self.version

    def history(self, release, max_revisions=DEFAULT_MAX_REVISIONS):
        return parse_history(self._call(history_argv(self.helm, release, self.conn, max_revisions)))

    def get_values(self, release, revision, all_values=False):
        return parse_values(self._call(get_values_argv(self.helm, release, self.conn, revision, all_values)))

    def get_manifest(self, release, revision):
        return parse_manifest(self._call(get_manifest_argv(self.helm, release, self.conn, revision)))

    def get_notes(self, release, revision):
        return parse_notes(self._call(get_notes_argv(self.helm, release, self.conn, revision)))

    def get_metadata(self, release, revision):
        """The chart metadata; None on a Helm without ``helm get metadata`` (< 3.13)."""
        if self.version is None:
            self.detect_version()
        if not supports_get_metadata(self.version):
            return None
        return parse_metadata(self._call(get_metadata_argv(self.helm, release, self.conn, revision)))

    # -- writes and rendering ------------------------------------------------------------------------

    def upgrade(self, release, chart, values=None, values_files=(), chart_version=None, repo_url=None, wait="watcher",
                timeout=DEFAULT_WRITE_TIMEOUT, dry_run=None, description=None, history_max=DEFAULT_HISTORY_MAX,
                rollback_on_failure=False, server_side="auto", force_conflicts=False):
        version = self._version()
        with self._values_files(values, values_files) as files:
            argv = upgrade_argv(self.helm, version, release, chart, self.conn, files, chart_version=chart_version,
                                repo_url=repo_url, wait=wait, timeout=timeout, dry_run=dry_run, description=description,
                                history_max=history_max, rollback_on_failure=rollback_on_failure,
                                server_side=server_side, force_conflicts=force_conflicts)
            stdout = self._call(argv, timeout=timeout + COMMAND_GRACE_SECONDS)
        return parse_release(stdout, "helm upgrade", dry_run=dry_run is not None)

    def install(self, release, chart, values=None, values_files=(), chart_version=None, repo_url=None, wait="watcher",
                timeout=DEFAULT_WRITE_TIMEOUT, dry_run=None, description=None, create_namespace=False,
                rollback_on_failure=False, server_side="auto", force_conflicts=False):
        version = self._version()
        with self._values_files(values, values_files) as files:
            argv = install_argv(self.helm, version, release, chart, self.conn, files, chart_version=chart_version,
                                repo_url=repo_url, wait=wait, timeout=timeout, dry_run=dry_run, description=description,
                                create_namespace=create_namespace, rollback_on_failure=rollback_on_failure,
                                server_side=server_side, force_conflicts=force_conflicts)
            stdout = self._call(argv, timeout=timeout + COMMAND_GRACE_SECONDS)
        return parse_release(stdout, "helm install", dry_run=dry_run is not None)

    def rollback(self, release, revision, wait="watcher", timeout=DEFAULT_WRITE_TIMEOUT, dry_run=None,
                 history_max=DEFAULT_HISTORY_MAX, server_side="auto", force_conflicts=False):
        """``helm rollback`` prints no release: the summary is the newest history entry afterwards
        (with ``dry_run``, the release as it stands)."""
        argv = rollback_argv(self.helm, self._version(), release, revision, self.conn, wait=wait, timeout=timeout,
                             dry_run=dry_run, history_max=history_max, server_side=server_side,
                             force_conflicts=force_conflicts)
        self._call(argv, timeout=timeout + COMMAND_GRACE_SECONDS)
        newest = self.history(release, max_revisions=1)
        if not newest:
            raise HelmOutputError("helm history", "release %s has no history after the rollback" % release)
        return summary_from_history(newest[-1], release, self.namespace, dry_run=dry_run is not None)

    def render(self, release, chart, values=None, values_files=(), chart_version=None, repo_url=None,
               include_crds=False, is_upgrade=True):
        with self._values_files(values, values_files) as files:
            argv = template_argv(self.helm, self._version(), release, chart, self.conn, files,
                                 chart_version=chart_version, repo_url=repo_url, include_crds=include_crds,
                                 is_upgrade=is_upgrade)
            return parse_rendered(self._call(argv))

    def render_crds(self, chart, chart_version=None, repo_url=None):
        return parse_crds(self._call(show_crds_argv(self.helm, chart, chart_version=chart_version, repo_url=repo_url)))
