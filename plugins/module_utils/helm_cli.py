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

import json
import os
import re

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


def transient(text):
    """Whether a Helm error (stderr of the CLI, the library's message) is a transient API failure."""
    return bool(_TRANSIENT_RE.search(text or "")) and not forbidden(text)


def forbidden(text):
    return bool(_FORBIDDEN_RE.search(text or ""))


class HelmForbidden(Exception):
    """Helm could not read the release's storage (its Secrets): RBAC forbids it. Never "absent"."""

    def __init__(self, namespace, release, error):
        Exception.__init__(self, "forbidden: the Helm storage Secrets of release %s/%s cannot be read (%s); a release "
                                 "that cannot be read is not an absent one: grant get and list on secrets in "
                                 "namespace %s" % (namespace, release, error, namespace))
        self.error = error


class HelmRetriesExhausted(Exception):
    """A transient failure lasted past the deadline."""

    def __init__(self, what, attempts, elapsed, deadline, error, why):
        Exception.__init__(self, "%s failed after %d attempt(s) in %.1f s (api_deadline %g s), %s; last: %s" % (
            what, attempts, elapsed, deadline, why, error))
        self.error = error


class RetryingHelm:
    """A backend (HelmCli or HelmLibrary) whose calls are retried on transient failures within
    ``policy`` (a :class:`~.k8s_client.RetryPolicy`); ``errors`` are the backend's failure types."""

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
                if forbidden(text):
                    raise HelmForbidden(self.namespace, self.release, text)
                if not transient(text):
                    raise
                delay, why = policy.wait(attempts, None, started)
                if delay is None:
                    raise HelmRetriesExhausted("helm %s %s/%s" % (what, self.namespace, self.release), attempts,
                                               policy.clock() - started, policy.deadline, text, why)
                self.retries += 1
                policy.sleep(delay)


# -- the runner -----------------------------------------------------------------------------------


class HelmCli:
    """Runs helm through ``run(argv, environ_update) -> (rc, stdout, stderr)`` (a
    :class:`~.command_runner.Runner`: a deadline per command, ``CommandTimedOut`` past it).

    ``version`` is read once (:meth:`detect_version`) and gates the flags.
    """

    def __init__(self, run, helm="helm", namespace="default", kubeconfig=None, context=None, env=None):
        self._run = run
        self.helm = helm
        self.conn = connection_args(namespace, kubeconfig, context)
        self.env = dict(env or {})
        self.env.setdefault("LC_ALL", "C")
        self.version = None

    def _call(self, argv):
        rc, stdout, stderr = self._run(argv, self.env)
        if rc != 0:
            raise HelmCommandError(argv, rc, stderr)
        return stdout

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
