# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Helm library backend (``helm-python-sdk``: the Helm v4 Go library, imported as ``helm_python``).

It gives what :class:`~.helm_cli.HelmCli` gives, in the same shapes, so the module does not care
which one ran:

- :meth:`HelmLibrary.history`: the entries of ``helm history -o json`` (normalized by
  :func:`~.helm_cli.normalize_history_entry`). The library's ``history()`` returns release summaries
  without ``description``; the description and the exact ``last_deployed`` of each revision come
  from ``get_all(revision=N)`` (``info``), as the CLI takes them from the stored release.
- :meth:`get_values` (user-supplied or, with ``all_values``, computed), :meth:`get_manifest`,
  :meth:`get_notes` (``status(revision=N)``), :meth:`get_metadata` (the ``helm get metadata -o json``
  object).

Write operations and rendering, in the shapes of the CLI's (``helm_cli.HelmBackend``):
:meth:`HelmLibrary.upgrade` / :meth:`install` (``Config.upgrade``/``install`` with the values dict,
``reset_values=True``, never ``reuse_values``; ``wait``, ``timeout``, ``dry_run="server"``),
:meth:`rollback` (``Config.rollback(version=N)``), :meth:`render` (``Chart.render``: offline, as
``helm template``), :meth:`render_crds` (``Chart.crds``, or ``helm_python.show(..., "crds")`` for a
remote reference). The library's release summary has no description: it is read from
``get_all(revision)`` (a dry run is not stored; its description is Helm's ``Dry run complete`` or the
one given, as the CLI prints it). What the Python binding cannot express is refused, not dropped:
``server_side`` other than ``auto`` and ``force_conflicts`` (the binding has no such arguments;
the library applies Helm 4's default, the release's previous method). Its rollback has no
``max_history`` argument either: the library's rollback prunes no history (safe: revisions are only
kept longer).

:func:`open_backend` is the factory for the one interface: the CLI when a ``helm`` binary is
configured or found on ``PATH``, the library otherwise.

Errors are :class:`HelmLibraryCallError` naming the call; the library's absence is
:func:`import_error`.

The library is imported only by :func:`load`, never when this file is imported: importing
``helm_python`` loads the Go library, whose runtime copies the process environment once, at that
moment. The module first removes the controller's ``HELM_*`` variables
(:func:`~.helm_cli.apply_helm_environment`), then loads the library, so they cannot change what it
reads (HELM_KUBECONTEXT, HELM_KUBEAPISERVER, HELM_KUBETOKEN, HELM_KUBEASUSER, ...).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib.util
import os
import shutil
import sys
import traceback

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.wrappers.helm_cli import (
    DEFAULT_HISTORY_MAX,
    DEFAULT_MAX_REVISIONS,
    DEFAULT_WRITE_TIMEOUT,
    DRY_RUN_CHOICES,
    SERVER_SIDE_CHOICES,
    HelmBackend,
    HelmCli,
    chart_ref_kind,
    check_values_file,
    connection_env,
    duration,
    manifest_objects,
    normalize_history_entry,
    release_summary,
    sorted_objects,
    summary_from_history,
    wait_args,
)
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.phases.helm_values import merge_maps

helm_python = None
_IMPORT_ERROR = None


def installed():
    """Whether helm-python-sdk can be imported (checked without loading the Go library)."""
    if helm_python is not None or "helm_python" in sys.modules:
        return True
    try:
        return importlib.util.find_spec("helm_python") is not None
    except (ImportError, ValueError):
        return False


def load():
    """Import ``helm_python`` (loading the Go library); returns the import traceback, or None."""
    global helm_python, _IMPORT_ERROR  # pylint: disable=global-statement
    if helm_python is None and _IMPORT_ERROR is None:
        try:
            import helm_python as module  # pylint: disable=import-outside-toplevel
        except Exception:  # pylint: disable=broad-except  # ImportError, or the native library failing to load
            _IMPORT_ERROR = traceback.format_exc()
        else:
            helm_python = module
    return _IMPORT_ERROR


def import_error():
    return _IMPORT_ERROR


class HelmLibraryCallError(Exception):
    """A library call failed: ``call`` (``history gpu-operator``), ``reason`` (the library's message)."""

    def __init__(self, call, reason):
        Exception.__init__(self, "helm library %s failed: %s" % (call, reason))
        self.call = call
        self.reason = reason


def available():
    return helm_python is not None or (installed() and load() is None)


def library_version():
    """The Helm Go library's version (``v4.2.3``), or None."""
    if helm_python is None:
        return None
    try:
        return helm_python.helm_sdk_version()
    except Exception:  # pylint: disable=broad-except  # a version string is informational only
        return None


class HelmLibrary(HelmBackend):
    """One ``helm_python.Config`` for a namespace, from the shared k8s options.

    ``client_cert``/``client_key`` have no library option: put them in the kubeconfig
    (:func:`unsupported_options` names them so the module can refuse clearly).
    """

    def __init__(self, namespace, kubeconfig=None, context=None, host=None, api_key=None, ca_cert=None,
                 validate_certs=None):
        if helm_python is None and load() is not None:
            raise HelmLibraryCallError("import", "helm-python-sdk is not installed or cannot be loaded")
        options = dict(namespace=namespace, storage_driver="secret")
        if kubeconfig:
            options["kubeconfig_path"] = kubeconfig
        if context:
            options["kube_context"] = context
        if host:
            options["kube_apiserver"] = host
        if api_key:
            options["kube_token"] = api_key
        if ca_cert:
            options["kube_ca_file"] = ca_cert
        if validate_certs is False:
            options["kube_insecure_skip_tls_verify"] = True
        self._statuses = {}
        self.namespace = namespace
        try:
            self.config = helm_python.Config(**options)
        except helm_python.HelmError as exc:
            raise HelmLibraryCallError("config", exc)

    kind = "library"

    def close(self):
        self.config.close()

    def version_text(self):
        return library_version()

    def _call(self, what, func, *args, **kwargs):
        try:
            return func(*args, **kwargs)
        except helm_python.HelmError as exc:
            raise HelmLibraryCallError(what, exc)

    def history(self, release, max_revisions=DEFAULT_MAX_REVISIONS):
        summaries = self._call("history %s" % release, self.config.history, release, max_revisions=max_revisions)
        entries = []
        for summary in summaries:
            revision = summary.get("revision")
            info = (self._call("get all %s --revision %s" % (release, revision), self.config.get_all,
                               release, revision=revision) or {}).get("info") or {}
            chart = "%s-%s" % (summary.get("chart_name"), summary.get("chart_version"))
            entries.append(normalize_history_entry({
                "revision": revision,
                "updated": info.get("last_deployed") or summary.get("deployed_at"),
                "status": summary.get("status"),
                "chart": chart,
                "app_version": summary.get("app_version"),
                "description": info.get("description"),
            }))
        return sorted(entries, key=lambda e: e["revision"])

    def get_values(self, release, revision, all_values=False):
        values = self._call("get values %s --revision %s%s" % (release, revision, " --all" if all_values else ""),
                            self.config.get_values, release, all_values=all_values, revision=revision)
        return values or {}

    def _status(self, release, revision):
        key = (release, revision)
        if key not in self._statuses:
            self._statuses[key] = self._call("status %s --revision %s" % (release, revision), self.config.status,
                                             release, revision=revision) or {}
        return self._statuses[key]

    def get_manifest(self, release, revision):
        return self._status(release, revision).get("manifest") or ""

    def get_notes(self, release, revision):
        return self._status(release, revision).get("notes") or ""

    def get_metadata(self, release, revision):
        return self._call("get metadata %s --revision %s" % (release, revision), self.config.get_metadata,
                          release, revision=revision)

    # -- writes and rendering ------------------------------------------------------------------------

    @staticmethod
    def _check_write(wait, timeout, dry_run, server_side, force_conflicts):
        wait_args((4, 0, 0), wait)  # the same choices as the CLI (ValueError otherwise)
        duration(timeout)
        if dry_run is not None and dry_run not in DRY_RUN_CHOICES:
            raise ValueError("dry_run must be server, client or None, got %r" % (dry_run,))
        if server_side not in SERVER_SIDE_CHOICES:
            raise ValueError("server_side must be one of %s, got %r" % (", ".join(SERVER_SIDE_CHOICES), server_side))
        if server_side != "auto" or force_conflicts:
            raise HelmLibraryCallError("options", "server_side=%s/force_conflicts=%s cannot be passed through "
                                                  "helm-python-sdk (no such arguments); use the helm CLI backend"
                                       % (server_side, force_conflicts))

    @staticmethod
    def _values(values, values_files):
        """The caller's files (checked private, parsed as Helm parses -f) and then ``values``, merged
        as ``helm -f`` merges files."""
        merged = {}
        for path in values_files or ():
            with open(check_values_file(path)) as handle:
                text = handle.read()
            try:
                merged = merge_maps(merged, helm_python.values_from_yaml(text) or {})
            except helm_python.HelmError as exc:
                raise HelmLibraryCallError("values %s" % path, exc)
        if values is not None:
            if not isinstance(values, dict):
                raise ValueError("values must be a dict, got %s" % type(values).__name__)
            merged = merge_maps(merged, values)
        return merged if (values is not None or values_files) else None

    @staticmethod
    def _chart(chart, chart_version, repo_url):
        """(chart argument, chart_version, chart_repo_url) for Config.upgrade/install."""
        kind = chart_ref_kind(chart)
        if kind == "path":
            return os.path.abspath(chart), None, None
        if repo_url and kind != "repo":
            raise ValueError("repo_url applies to a chart name in a repository, not to a %s reference" % kind)
        return chart, (chart_version if kind in ("repo", "oci") else None), repo_url

    def _summary(self, release, result, dry_run, description):
        result = result or {}
        revision = result.get("revision")
        if dry_run is not None:
            text = description or "Dry run complete"  # what Helm sets on a dry-run release (action/upgrade.go)
        else:
            info = (self._call("get all %s --revision %s" % (release, revision), self.config.get_all, release,
                               revision=revision) or {}).get("info") or {}
            text = info.get("description")
        return release_summary(result.get("name") or release, result.get("namespace") or self.namespace, revision,
                               result.get("status"), result.get("chart_name"), result.get("chart_version"),
                               result.get("app_version"), text, dry_run=dry_run is not None)

    def upgrade(self, release, chart, values=None, values_files=(), chart_version=None, repo_url=None, wait="watcher",
                timeout=DEFAULT_WRITE_TIMEOUT, dry_run=None, description=None, history_max=DEFAULT_HISTORY_MAX,
                rollback_on_failure=False, server_side="auto", force_conflicts=False):
        self._check_write(wait, timeout, dry_run, server_side, force_conflicts)
        ref, version, repo = self._chart(chart, chart_version, repo_url)
        self._statuses.clear()
        result = self._call("upgrade %s" % release, self.config.upgrade, ref, release, self._values(values, values_files),
                            timeout=int(timeout), wait=wait, dry_run=dry_run, max_history=history_max,
                            reset_values=True, reuse_values=False, rollback_on_failure=bool(rollback_on_failure),
                            description=description, chart_version=version, chart_repo_url=repo)
        return self._summary(release, result, dry_run, description)

    def install(self, release, chart, values=None, values_files=(), chart_version=None, repo_url=None, wait="watcher",
                timeout=DEFAULT_WRITE_TIMEOUT, dry_run=None, description=None, create_namespace=False,
                rollback_on_failure=False, server_side="auto", force_conflicts=False):
        self._check_write(wait, timeout, dry_run, server_side, force_conflicts)
        ref, version, repo = self._chart(chart, chart_version, repo_url)
        self._statuses.clear()
        result = self._call("install %s" % release, self.config.install, ref, release, self._values(values, values_files),
                            timeout=int(timeout), wait=wait, dry_run=dry_run, create_namespace=bool(create_namespace),
                            rollback_on_failure=bool(rollback_on_failure), description=description,
                            chart_version=version, chart_repo_url=repo)
        return self._summary(release, result, dry_run, description)

    def rollback(self, release, revision, wait="watcher", timeout=DEFAULT_WRITE_TIMEOUT, dry_run=None,
                 history_max=DEFAULT_HISTORY_MAX, server_side="auto", force_conflicts=False):
        """``Config.rollback(version=revision)``; the summary is the newest history entry afterwards
        (``history_max`` cannot be passed: the library's rollback prunes nothing)."""
        del history_max
        if isinstance(revision, bool) or not isinstance(revision, int) or revision < 1:
            raise ValueError("revision must be a recorded revision (an integer >= 1), got %r" % (revision,))
        self._check_write(wait, timeout, dry_run, server_side, force_conflicts)
        self._statuses.clear()
        self._call("rollback %s %s" % (release, revision), self.config.rollback, release, version=revision,
                   timeout=int(timeout), wait=wait, dry_run=dry_run)
        newest = self.history(release, max_revisions=1)
        if not newest:
            raise HelmLibraryCallError("history %s" % release, "no history after the rollback")
        return summary_from_history(newest[-1], release, self.namespace, dry_run=dry_run is not None)

    def _load_chart(self, chart):
        if chart_ref_kind(chart) != "path":
            raise HelmLibraryCallError("render %s" % chart, "the library backend renders local charts only (a path to a "
                                       "directory or .tgz); fetch the pinned chart first")
        return self._call("load chart %s" % chart, helm_python.Chart.load, chart)

    def render(self, release, chart, values=None, values_files=(), chart_version=None, repo_url=None,
               include_crds=False, is_upgrade=True):
        """``Chart.render`` (offline, as ``helm template``): ``{"manifest", "objects"}``; the manifest
        in ``helm template``'s form (``---`` and ``# Source:`` per template, NOTES.txt left out)."""
        del chart_version, repo_url  # a local chart is pinned by its path
        loaded = self._load_chart(chart)
        try:
            rendered = self._call("render %s" % chart, loaded.render, self._values(values, values_files), name=release,
                                  namespace=self.namespace, is_upgrade=bool(is_upgrade), is_install=not is_upgrade)
            crds = self._call("crds %s" % chart, _chart_crds, loaded) if include_crds else []
        finally:
            loaded.close()
        parts = ["---\n# Source: %s\n%s" % (crd.get("filename") or crd.get("name"), crd.get("data") or "") for crd in crds]
        for name in sorted(rendered or {}):
            text = rendered[name] or ""
            if name.endswith("NOTES.txt") or not text.strip():
                continue
            parts.append("---\n# Source: %s\n%s" % (name, text))
        manifest = "\n".join(part.rstrip("\n") for part in parts) + ("\n" if parts else "")
        return {"manifest": manifest, "objects": sorted_objects(manifest_objects(manifest))}

    def render_crds(self, chart, chart_version=None, repo_url=None):
        """The objects of the chart's ``crds/`` (``Chart.crds`` of a local chart, ``show crds`` otherwise)."""
        if chart_ref_kind(chart) != "path":
            text = self._call("show crds %s" % chart, helm_python.show, chart, output_format="crds",
                              version=chart_version, repo_url=repo_url)
            return sorted_objects(manifest_objects(text))
        loaded = self._load_chart(chart)
        try:
            crds = self._call("crds %s" % chart, _chart_crds, loaded)
        finally:
            loaded.close()
        objects = []
        for crd in crds or []:
            objects.extend(manifest_objects(crd.get("data") or ""))
        return sorted_objects(objects)


def _chart_crds(loaded):
    return loaded.crds


# -- the factory ------------------------------------------------------------------------------------------


def find_helm(helm_binary=None, which=shutil.which):
    """The helm executable to use, or None: ``helm_binary`` when it is a path (it must be
    executable) or a name found on ``PATH``; without one, ``helm`` on ``PATH``."""
    name = helm_binary or "helm"
    if os.sep in name:
        return name if os.path.isfile(name) and os.access(name, os.X_OK) else None
    return which(name)


def open_backend(namespace, backend="auto", helm_binary=None, run=None, kubeconfig=None, context=None, host=None,
                 api_key=None, ca_cert=None, validate_certs=None, proxy=None, work_dir=None, which=shutil.which):
    """``(kind, backend)`` for the one interface (``helm_cli.HelmBackend``).

    ``auto``: the CLI when a helm binary is configured (``helm_binary``) or found on ``PATH`` (what
    production runs), the library otherwise (the lab, where no helm binary exists). ``cli`` and
    ``library`` force one; a configured binary that does not exist is an error, not a fallback.
    ``run`` is the CLI's runner (``command_runner.Runner(timeout)``: the deadline of the reads; each
    write gets helm's --timeout plus a grace). The CLI's version is detected here (its flags depend
    on it). Connection secrets go to helm's environment, never argv (``helm_cli.connection_env``).
    """
    if backend not in ("auto", "cli", "library"):
        raise ValueError("backend must be auto, cli or library, got %r" % (backend,))
    helm = find_helm(helm_binary, which) if backend in ("auto", "cli") else None
    if backend == "cli" or (backend == "auto" and (helm or helm_binary)):
        if not helm:
            raise HelmLibraryCallError("open", "helm binary %r not found (configured, or on PATH)" % (helm_binary or "helm"))
        if run is None:
            raise ValueError("the CLI backend needs a runner (command_runner.Runner)")
        env = connection_env(host=host, api_key=api_key, ca_cert=ca_cert, validate_certs=validate_certs, proxy=proxy)
        cli = HelmCli(run, helm=helm, namespace=namespace, kubeconfig=kubeconfig, context=context, env=env,
                      work_dir=work_dir)
        cli.detect_version()
        return "cli", cli
    if proxy:
        raise HelmLibraryCallError("open", "a proxy cannot be passed to the library backend (use HTTPS_PROXY)")
    return "library", HelmLibrary(namespace, kubeconfig=kubeconfig, context=context, host=host, api_key=api_key,
                                  ca_cert=ca_cert, validate_certs=validate_certs)
