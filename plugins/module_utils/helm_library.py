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
import sys
import traceback

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.helm_cli import (
    DEFAULT_MAX_REVISIONS,
    normalize_history_entry,
)

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


class HelmLibrary:
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
        try:
            self.config = helm_python.Config(**options)
        except helm_python.HelmError as exc:
            raise HelmLibraryCallError("config", exc)

    def close(self):
        self.config.close()

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
