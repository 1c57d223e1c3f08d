# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one wrapper around the kubernetes Python client, for every cluster-side module.

- :data:`K8S_AUTH_ARG_SPEC`: the shared connection options (documented by the doc fragment
  ``gpufleet.dra_gate.k8s_auth``); a module merges it into its own spec with :func:`argspec`
  (``copy.deepcopy`` + ``update``, as kubernetes.core does).
- :func:`build_api_client`: an ``ApiClient`` from those options (kubeconfig file and context,
  in-cluster service account, or host + token), with the explicit options applied on top.
- :class:`K8sReader`: raw JSON reads (``get``, and ``list`` paged with ``limit``/``continue``),
  without the typed models: the facts are built from the API's JSON as kube-apiserver serves it,
  and decoding thousands of objects into models would cost more than the request.

Errors never escape as tracebacks: a missing library is :class:`K8sLibraryError` (the message says
which library and how to install it), an API or transport failure is :class:`K8sApiError`, whose
message names the call (``GET /api/v1/nodes``), the HTTP status and the server's own message.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json
import os
import traceback

from ansible.module_utils.basic import env_fallback

try:
    from kubernetes.client import ApiClient, Configuration
    from kubernetes.client.rest import ApiException
    from kubernetes.config import ConfigException, incluster_config, kube_config
except ImportError:
    KUBERNETES_IMPORT_ERROR = traceback.format_exc()
    ApiClient = Configuration = None
    ApiException = ConfigException = None
else:
    KUBERNETES_IMPORT_ERROR = None

try:
    from urllib3.exceptions import HTTPError as Urllib3Error
except ImportError:  # the kubernetes client requires urllib3; only the client's absence is reported
    TRANSPORT_ERRORS = (IOError, OSError, ValueError)
else:
    TRANSPORT_ERRORS = (Urllib3Error, IOError, OSError, ValueError)

K8S_AUTH_ARG_SPEC = dict(
    kubeconfig=dict(type="path", fallback=(env_fallback, ["K8S_AUTH_KUBECONFIG"])),
    context=dict(type="str", fallback=(env_fallback, ["K8S_AUTH_CONTEXT"])),
    host=dict(type="str", fallback=(env_fallback, ["K8S_AUTH_HOST"])),
    api_key=dict(type="str", no_log=True, fallback=(env_fallback, ["K8S_AUTH_API_KEY"])),
    validate_certs=dict(type="bool", aliases=["verify_ssl"], fallback=(env_fallback, ["K8S_AUTH_VERIFY_SSL"])),
    ca_cert=dict(type="path", aliases=["ssl_ca_cert"], fallback=(env_fallback, ["K8S_AUTH_SSL_CA_CERT"])),
    client_cert=dict(type="path", aliases=["cert_file"], fallback=(env_fallback, ["K8S_AUTH_CERT_FILE"])),
    client_key=dict(type="path", aliases=["key_file"], no_log=False, fallback=(env_fallback, ["K8S_AUTH_KEY_FILE"])),
    proxy=dict(type="str", fallback=(env_fallback, ["K8S_AUTH_PROXY"])),
    request_timeout=dict(type="float", default=60.0),
)

KUBERNETES_INSTALL_HINT = "pip install kubernetes on the host that runs the module (the controller or the delegate)"


class K8sLibraryError(Exception):
    """The kubernetes Python library is missing; ``library`` names it, ``exception`` is the import traceback."""

    def __init__(self, library, exception):
        Exception.__init__(self, "the Python library %r is required (%s)" % (library, KUBERNETES_INSTALL_HINT))
        self.library = library
        self.exception = exception


class K8sConfigError(Exception):
    """No usable connection configuration (no kubeconfig, bad context, unreadable file)."""


class K8sApiError(Exception):
    """A call failed: ``call`` (``GET /api/v1/nodes``), ``status`` (HTTP code, None for transport errors), ``reason``."""

    def __init__(self, call, status, reason):
        if status is None:
            text = "%s failed: %s" % (call, reason)
        else:
            text = "%s failed with HTTP %s: %s" % (call, status, reason)
        Exception.__init__(self, text)
        self.call = call
        self.status = status
        self.reason = reason


def argspec(extra=None):
    """The shared connection options merged with a module's own (deep copies, as kubernetes.core does)."""
    spec = copy.deepcopy(K8S_AUTH_ARG_SPEC)
    if extra:
        spec.update(copy.deepcopy(extra))
    return spec


def require_kubernetes():
    if KUBERNETES_IMPORT_ERROR is not None:
        raise K8sLibraryError("kubernetes", KUBERNETES_IMPORT_ERROR)


def _default_kubeconfig():
    """The first existing file of ``$KUBECONFIG`` (a path list) or ``~/.kube/config``; None when none exists."""
    value = os.environ.get("KUBECONFIG") or "~/.kube/config"
    for path in value.split(os.pathsep):
        path = os.path.expanduser(path.strip())
        if path and os.path.isfile(path):
            return value
    return None


def build_configuration(params):
    """A kubernetes ``Configuration`` from the shared options (``module.params``).

    Order, as kubectl and kubernetes.core: ``kubeconfig`` (option, else ``$KUBECONFIG``, else
    ``~/.kube/config``) with ``context``; when no kubeconfig exists and the module runs in a pod,
    the in-cluster service account; with only ``host`` given (and a token or client certificate),
    no file at all. ``host``, ``api_key``, ``validate_certs``, ``ca_cert``, ``client_cert``,
    ``client_key`` and ``proxy`` then override what the file said.
    """
    require_kubernetes()
    configuration = Configuration()
    kubeconfig = params.get("kubeconfig")
    context = params.get("context")
    try:
        if kubeconfig:
            if not os.path.isfile(kubeconfig):
                raise K8sConfigError("kubeconfig: %s does not exist or is not a file" % kubeconfig)
            kube_config.load_kube_config(config_file=kubeconfig, context=context,
                                         client_configuration=configuration, persist_config=False)
        elif params.get("host") and not context:
            pass  # everything comes from the options
        else:
            default = _default_kubeconfig()
            if default is not None:
                kube_config.load_kube_config(config_file=default, context=context,
                                             client_configuration=configuration, persist_config=False)
            elif os.environ.get("KUBERNETES_SERVICE_HOST"):
                incluster_config.load_incluster_config(client_configuration=configuration)
            else:
                raise K8sConfigError(
                    "no kubeconfig found (the kubeconfig option, $KUBECONFIG, ~/.kube/config) and not running in a pod; "
                    "set kubeconfig, or host with api_key")
    except ConfigException as exc:
        where = " context %s" % context if context else ""
        raise K8sConfigError("kubeconfig %s%s: %s" % (kubeconfig or "(default)", where, exc))
    except (IOError, OSError, ValueError) as exc:
        raise K8sConfigError("kubeconfig %s: %s" % (kubeconfig or "(default)", exc))
    if params.get("host"):
        configuration.host = params["host"].rstrip("/")
    if params.get("api_key"):
        configuration.api_key = {"authorization": "Bearer " + params["api_key"]}
        configuration.api_key_prefix = {}
    if params.get("validate_certs") is not None:
        configuration.verify_ssl = params["validate_certs"]
    if params.get("ca_cert"):
        configuration.ssl_ca_cert = params["ca_cert"]
    if params.get("client_cert"):
        configuration.cert_file = params["client_cert"]
    if params.get("client_key"):
        configuration.key_file = params["client_key"]
    if params.get("proxy"):
        configuration.proxy = params["proxy"]
    return configuration


def build_api_client(params):
    """An ``ApiClient`` for the shared options; raises K8sLibraryError or K8sConfigError."""
    return ApiClient(build_configuration(params))


def _status_message(body):
    """The message of a kube-apiserver ``Status`` body, else the body's start."""
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    if not body:
        return ""
    try:
        data = json.loads(body)
    except ValueError:
        return body.strip()[:300]
    if isinstance(data, dict) and data.get("message"):
        return "%s (%s)" % (data["message"], data.get("reason") or "")
    return body.strip()[:300]


def _call_name(path, query):
    if not query:
        return "GET %s" % path
    shown = [(k, v) for k, v in query if k != "continue"]
    return "GET %s?%s" % (path, "&".join("%s=%s" % kv for kv in shown)) if shown else "GET %s" % path


class K8sReader:
    """Read-only JSON access through one ApiClient: ``get(path)`` and ``list(path)`` (paged).

    ``calls`` counts the HTTP requests made (the benchmark and the tests check it).
    """

    def __init__(self, api_client, page_size=500, timeout=60.0):
        self.api_client = api_client
        self.page_size = page_size
        self.timeout = timeout
        self.calls = 0

    def _request(self, path, query):
        self.calls += 1
        call = _call_name(path, query)
        headers = {"Accept": "application/json"}
        client = self.api_client
        try:
            if hasattr(client, "param_serialize"):  # kubernetes >= 35 (openapi-generator 7 transport)
                request = client.param_serialize("GET", path, query_params=list(query or []),
                                                 header_params=headers, auth_settings=["BearerToken"])
                response = client.call_api(*request, _request_timeout=self.timeout)
                response.read()
                status, data = response.status, response.data
            else:  # older clients: the legacy call_api signature raises on non-2xx itself
                response = client.call_api(path, "GET", query_params=list(query or []), header_params=headers,
                                           auth_settings=["BearerToken"], _preload_content=False,
                                           _return_http_data_only=True, _request_timeout=self.timeout)
                status, data = response.status, response.data
        except ApiException as exc:
            raise K8sApiError(call, exc.status or None, _status_message(exc.body) or exc.reason)
        except TRANSPORT_ERRORS as exc:  # refused connections, TLS, timeouts
            raise K8sApiError(call, None, "%s: %s" % (type(exc).__name__, exc))
        if not 200 <= status <= 299:
            raise K8sApiError(call, status, _status_message(data))
        try:
            return json.loads(data)
        except ValueError as exc:
            raise K8sApiError(call, status, "the response is not JSON: %s" % exc)

    def get(self, path, query=None):
        """One object or document (``/version``, ``/apis``, a CRD)."""
        return self._request(path, list(query or []))

    def list(self, path, label_selector=None, field_selector=None):
        """Every item of a list, paged with ``limit`` and ``continue``; an expired token restarts once."""
        base = []
        if label_selector:
            base.append(("labelSelector", label_selector))
        if field_selector:
            base.append(("fieldSelector", field_selector))
        restarted = False
        items, token = [], None
        while True:
            query = list(base)
            if self.page_size:
                query.append(("limit", self.page_size))
            if token:
                query.append(("continue", token))
            try:
                page = self._request(path, query)
            except K8sApiError as exc:
                if exc.status == 410 and token and not restarted:
                    restarted, items, token = True, [], None  # the snapshot was compacted: start over
                    continue
                raise
            items.extend(page.get("items") or [])
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return items
