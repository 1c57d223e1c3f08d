# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one wrapper around the kubernetes Python client, for every cluster-side module.

- :data:`K8S_AUTH_ARG_SPEC`: the shared connection options (documented by the doc fragment
  ``gpufleet.dra_gate.k8s_auth``); a module merges it into its own spec with :func:`argspec`
  (``copy.deepcopy`` + ``update``, as kubernetes.core does).
- :func:`build_api_client`: an ``ApiClient`` from those options (kubeconfig file and context,
  in-cluster service account, or host + token), with the explicit options applied on top.
- :class:`K8sReader`: raw JSON requests (``get``, ``list`` paged with ``limit``/``continue``, and
  ``request`` for any verb), without the typed models: the facts are built from the API's JSON as
  kube-apiserver serves it, and decoding thousands of objects into models would cost more than the
  request.

Every request survives what real API servers do (:class:`RetryPolicy`): 429, 500, 502, 503 and 504
answers and transport failures (connection refused or reset, timeouts) are retried with bounded
exponential backoff with jitter, ``Retry-After`` (seconds form, header or the Status body's
``retryAfterSeconds``) is honoured but capped by what is left of the request's total deadline
(``api_deadline``), and at the deadline the request fails naming the call, the attempts and the
last status. Writes are retried only where a retry cannot apply them twice (:data:`WRITE_RULE`).

Errors never escape as tracebacks: a missing library is :class:`K8sLibraryError` (the message says
which library and how to install it), an API or transport failure is :class:`K8sApiError`, whose
message names the call (``GET /api/v1/nodes``), the HTTP status and the server's own message. A
403 is a :class:`K8sApiError` with ``forbidden`` set and a message naming the verb and the
resource: it is never retried and never read as "absent" (only a 404 can mean absent, where the
caller asks for that).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json
import os
import random
import re
import socket
import time
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
    from urllib3 import exceptions as urllib3_exceptions
except ImportError:  # the kubernetes client requires urllib3; only the client's absence is reported
    urllib3_exceptions = None
    TRANSPORT_ERRORS = (IOError, OSError, ValueError)
else:
    TRANSPORT_ERRORS = (urllib3_exceptions.HTTPError, IOError, OSError, ValueError)

try:
    from http.client import HTTPException
except ImportError:  # pragma: no cover - Python 2
    HTTPException = IOError
TRANSPORT_ERRORS = TRANSPORT_ERRORS + (HTTPException,)

K8S_AUTH_ARG_SPEC = dict(
    kubeconfig=dict(type="path", fallback=(env_fallback, ["K8S_AUTH_KUBECONFIG"])),
    context=dict(type="str", fallback=(env_fallback, ["K8S_AUTH_CONTEXT"])),
    host=dict(type="str", fallback=(env_fallback, ["K8S_AUTH_HOST"])),
    api_key=dict(type="str", no_log=True, fallback=(env_fallback, ["K8S_AUTH_API_KEY"])),
    validate_certs=dict(type="bool", aliases=["verify_ssl"], fallback=(env_fallback, ["K8S_AUTH_VERIFY_SSL"])),
    ca_cert=dict(type="path", aliases=["ssl_ca_cert"], fallback=(env_fallback, ["K8S_AUTH_SSL_CA_CERT"])),
    client_cert=dict(type="path", aliases=["cert_file"], fallback=(env_fallback, ["K8S_AUTH_CERT_FILE"])),
    client_key=dict(type="path", aliases=["key_file"], no_log=False, fallback=(env_fallback, ["K8S_AUTH_KEY_FILE"])),
    proxy=dict(type="str", no_log=True, fallback=(env_fallback, ["K8S_AUTH_PROXY"])),
    request_timeout=dict(type="float", default=60.0),
    api_deadline=dict(type="float", default=120.0),
)

DEFAULT_API_DEADLINE = 120.0
# Answers that say "try again": throttled, or a server or the proxy in front of it failing now.
RETRY_STATUSES = (429, 500, 502, 503, 504)
# The rule for writes (POST, PUT, PATCH, DELETE): retried only where the first attempt cannot have
# been applied - 429 (rejected by max-in-flight or API priority and fairness before any handler ran)
# and 503 (the server or its aggregator refused the request: unavailable, shutting down) - and when
# the connection could not be made at all (refused, connect timeout: nothing was sent). Never on
# 500, 502 or 504, a reset connection or a read timeout: the write may have been applied, and a
# blind retry could apply it twice.
WRITE_RETRY_STATUSES = (429, 503)
WRITE_RULE = ("writes are retried only on 429 and 503 (refused before any change) and on a connection "
              "that could not be made (nothing sent); never on 500/502/504, a reset or a timeout")
READ_METHODS = ("GET", "HEAD")
# Transport failures: "connect" (nothing was sent: refused, unreachable, connect timeout) is retried
# for every method; "reset" and "timeout" (the request may have reached the server) only for reads.
CONNECT, RESET, TIMEOUT = "connect", "reset", "timeout"

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
    """A call failed: ``call`` (``GET /api/v1/nodes``), ``status`` (the last HTTP code, None for a
    transport error), ``reason``; ``attempts`` (how many were made), ``elapsed`` (seconds),
    ``deadline`` (set when the request stopped at its total deadline), ``forbidden`` (a 403) and
    ``what`` (the verb and resource, ``list secrets in namespace "gpu-operator"``) and ``status_doc``
    (the server's decoded ``Status`` body when it sent one, e.g. a 409's ``details.causes``; else None)."""

    def __init__(self, call, status, reason, attempts=1, elapsed=None, deadline=None, what=None, gave_up=None,
                 status_doc=None):
        self.call = call
        self.status_doc = status_doc
        self.status = status
        self.reason = reason
        self.attempts = attempts
        self.elapsed = elapsed
        self.deadline = deadline
        self.forbidden = status == 403
        self.what = what or describe_request(call)
        if status is None:
            last = "%s" % reason
        else:
            last = "HTTP %s: %s" % (status, reason)
        if self.forbidden:
            text = "forbidden: cannot %s (%s answered HTTP 403: %s); " % (self.what, call, reason)
            if (call or "").startswith(("GET ", "HEAD ")):
                text += "a forbidden read is not an absent object: "
            text += "grant the verb to the module's credentials"
        elif attempts > 1 or deadline is not None:
            text = "%s failed after %d attempt(s) in %.1f s" % (call, attempts, elapsed or 0.0)
            if deadline is not None:
                text += " (api_deadline %g s)" % deadline
            if gave_up:
                text += ", %s" % gave_up
            text += "; last: %s" % last
        elif status is None:
            text = "%s failed: %s" % (call, reason)
        else:
            text = "%s failed with HTTP %s: %s" % (call, status, reason)
        Exception.__init__(self, text)


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
    # urllib3 would retry connection errors three times at once on its own: K8sReader's policy
    # does all the retrying, with backoff and within the deadline.
    configuration.retries = False
    return configuration


def check_params(params):
    """Why the shared timing options are unusable (a message naming the option), or None."""
    for name in ("request_timeout", "api_deadline"):
        value = params.get(name)
        if value is not None and not value > 0:
            return "%s: must be a positive number of seconds, got %r" % (name, value)
    return None


def reader_from_params(api_client, params, page_size=500):
    """A :class:`K8sReader` with the module's ``request_timeout`` and ``api_deadline``."""
    deadline = params.get("api_deadline")
    return K8sReader(api_client, page_size=page_size, timeout=params.get("request_timeout") or 60.0,
                     deadline=DEFAULT_API_DEADLINE if deadline is None else deadline)


def build_api_client(params):
    """An ``ApiClient`` for the shared options; raises K8sLibraryError or K8sConfigError."""
    return ApiClient(build_configuration(params))


def _status_doc(body):
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    if not body:
        return "", None
    try:
        data = json.loads(body)
    except ValueError:
        return body, None
    return body, data if isinstance(data, dict) else None


def _status_message(body):
    """The message of a kube-apiserver ``Status`` body, else the body's start."""
    text, data = _status_doc(body)
    if data is not None and data.get("message"):
        return "%s (%s)" % (data["message"], data.get("reason") or "")
    return text.strip()[:300]


def _call_name(path, query, method="GET"):
    shown = [(k, v) for k, v in (query or []) if k != "continue"]
    if not shown:
        return "%s %s" % (method, path)
    return "%s %s?%s" % (method, path, "&".join("%s=%s" % kv for kv in shown))


_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch"}


def describe_request(call):
    """``GET /api/v1/namespaces/ns/secrets?labelSelector=x`` -> ``list secrets in namespace "ns"``:
    the verb and resource as RBAC names them (discovery paths are named as paths)."""
    method, _sep, rest = (call or "").partition(" ")
    path, _sep, query = rest.partition("?")
    parts = [p for p in path.split("/") if p]
    if parts[:2] == ["api", "v1"]:
        group, parts = "", parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 3:
        group, parts = parts[1], parts[3:]
    else:
        parts = None
    if not parts:
        return "%s %s" % ("get" if method in ("GET", "HEAD") else method.lower(), path or "/")
    namespace = None
    if parts[0] == "namespaces" and len(parts) >= 3:
        namespace, parts = parts[1], parts[2:]
    resource = parts[0] + ("." + group if group else "")
    name = parts[1] if len(parts) > 1 else None
    if len(parts) > 2:
        resource += "/" + parts[2]
    if method in ("GET", "HEAD"):
        verb = "watch" if "watch=true" in query or "watch=1" in query else ("get" if name else "list")
    elif method == "DELETE":
        verb = "delete" if name else "deletecollection"
    else:
        verb = _VERBS.get(method, method.lower())
    text = "%s %s" % (verb, resource)
    if name:
        text += ' "%s"' % name
    if namespace:
        text += ' in namespace "%s"' % namespace
    return text


def _causes(exc):
    """``exc`` and what it wraps (``reason`` of urllib3's errors, ``__cause__``/``__context__``)."""
    seen, todo = [], [exc]
    while todo and len(seen) < 10:
        item = todo.pop(0)
        if item is None or any(item is s for s in seen):
            continue
        seen.append(item)
        todo.extend([getattr(item, "reason", None) if isinstance(getattr(item, "reason", None), BaseException) else None,
                     item.__cause__, item.__context__])
        todo.extend(arg for arg in getattr(item, "args", ()) if isinstance(arg, BaseException))
    return seen


def transport_failure(exc):
    """What kind of transport failure ``exc`` is: CONNECT (nothing sent), RESET or TIMEOUT (the
    request may have reached the server), or None (TLS, DNS, a bad URL: retrying will not help)."""
    causes = _causes(exc)
    if urllib3_exceptions is not None:
        if any(isinstance(c, (urllib3_exceptions.SSLError, urllib3_exceptions.LocationParseError)) for c in causes):
            return None
        if any(isinstance(c, getattr(urllib3_exceptions, "NameResolutionError", ())) for c in causes):
            return None
    if any(isinstance(c, (ConnectionRefusedError,)) for c in causes):
        return CONNECT
    if urllib3_exceptions is not None:
        if any(isinstance(c, urllib3_exceptions.NewConnectionError) for c in causes):
            return CONNECT
        if any(isinstance(c, urllib3_exceptions.ConnectTimeoutError) for c in causes):
            return CONNECT
        if any(isinstance(c, (urllib3_exceptions.ReadTimeoutError,)) for c in causes):
            return TIMEOUT
        if any(isinstance(c, (urllib3_exceptions.ProtocolError, urllib3_exceptions.IncompleteRead)) for c in causes):
            return RESET
    if any(isinstance(c, (ConnectionResetError, ConnectionAbortedError, BrokenPipeError, HTTPException)) for c in causes):
        return RESET
    if any(isinstance(c, socket.timeout) for c in causes):
        return TIMEOUT
    return None


def retry_after_seconds(headers, body):
    """The server's ``Retry-After`` in seconds (the header's delta-seconds form, else the Status
    body's ``details.retryAfterSeconds``); None when it gives none (an HTTP-date is not used)."""
    value = None
    if headers is not None:
        try:
            value = headers.get("Retry-After")
        except AttributeError:
            value = None
    if value is not None:
        text = str(value).strip()
        if re.match(r"^\d+(\.\d+)?$", text):
            return float(text)
    _text, data = _status_doc(body)
    if data is not None:
        seconds = (data.get("details") or {}).get("retryAfterSeconds")
        if isinstance(seconds, (int, float)) and not isinstance(seconds, bool) and seconds >= 0:
            return float(seconds)
    return None


class RetryPolicy:
    """Which failures are retried and how long to wait, within a total deadline per request.

    Backoff: attempt ``n`` waits a random time in ``[d/2, d]`` with ``d = min(maximum, initial * 2**(n-1))``
    (exponential, bounded, with jitter); a ``Retry-After`` replaces it (at least ``initial``). No
    wait reaches past the deadline: when it would, the request fails at once.
    ``sleep``, ``clock`` and ``rand`` are injectable (the unit tests never sleep).
    """

    def __init__(self, deadline=DEFAULT_API_DEADLINE, initial=0.25, maximum=8.0, sleep=None, clock=None, rand=None):
        self.deadline = float(deadline)
        self.initial = float(initial)
        self.maximum = float(maximum)
        self.sleep = sleep or time.sleep
        self.clock = clock or time.monotonic
        self.rand = rand or random.random

    @staticmethod
    def retryable(method, status, failure):
        """Whether a failed attempt may be retried (see :data:`WRITE_RULE` for writes)."""
        read = (method or "GET").upper() in READ_METHODS
        if status is not None:
            return status in (RETRY_STATUSES if read else WRITE_RETRY_STATUSES)
        if failure == CONNECT:
            return True
        return read and failure in (RESET, TIMEOUT)

    def backoff(self, attempt):
        ceiling = min(self.maximum, self.initial * (2 ** max(attempt - 1, 0)))
        return ceiling / 2.0 + self.rand() * ceiling / 2.0

    def wait(self, attempt, retry_after, started):
        """Seconds to wait before the next attempt, or None when that would reach the deadline
        (``why`` in the second item)."""
        delay = self.backoff(attempt) if retry_after is None else max(retry_after, self.initial)
        remaining = started + self.deadline - self.clock()
        if delay >= remaining:
            if retry_after is not None:
                return None, "the server asked to retry after %g s, past the deadline (%.1f s left)" % (
                    retry_after, max(remaining, 0.0))
            return None, "the deadline was reached"
        return delay, None


class K8sReader:
    """JSON access through one ApiClient: ``get(path)``, ``list(path)`` (paged) and ``request``.

    ``calls`` counts the HTTP requests made (retries included: the benchmark and the tests check
    it), ``retries`` the attempts that were retries.
    """

    def __init__(self, api_client, page_size=500, timeout=60.0, deadline=DEFAULT_API_DEADLINE, policy=None):
        self.api_client = api_client
        self.page_size = page_size
        self.timeout = timeout
        self.policy = policy or RetryPolicy(deadline=deadline)
        self.calls = 0
        self.retries = 0

    def _send(self, method, path, query, body, timeout, content_type=None):
        """One attempt: (status, data, headers); transport errors propagate."""
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = content_type or "application/json"
        client = self.api_client
        if hasattr(client, "param_serialize"):  # kubernetes >= 35 (openapi-generator 7 transport)
            extra = {"body": body} if body is not None else {}
            request = client.param_serialize(method, path, query_params=list(query or []), header_params=headers,
                                             auth_settings=["BearerToken"], **extra)
            response = client.call_api(*request, _request_timeout=timeout)
            response.read()
            return response.status, response.data, getattr(response, "headers", None)
        # older clients: the legacy call_api signature raises ApiException on non-2xx itself
        try:
            response = client.call_api(path, method, query_params=list(query or []), header_params=headers,
                                       body=body, auth_settings=["BearerToken"], _preload_content=False,
                                       _return_http_data_only=True, _request_timeout=timeout)
        except ApiException as exc:
            if not exc.status:
                raise
            return exc.status, exc.body, getattr(exc, "headers", None)
        return response.status, response.data, getattr(response, "headers", None)

    def request(self, method, path, query=None, body=None, content_type=None):
        """One request with the retry policy; the decoded JSON of a 2xx answer, else K8sApiError.

        ``content_type`` is the body's media type (default ``application/json``): a patch names its
        flavour, e.g. ``application/apply-patch+yaml`` for server-side apply, with ``body`` a JSON
        string (JSON is YAML; a string body is sent as is by every client version)."""
        method = method.upper()
        call = _call_name(path, query, method)
        policy = self.policy
        started = policy.clock()
        attempts = 0
        while True:
            attempts += 1
            self.calls += 1
            if attempts > 1:
                self.retries += 1
            remaining = started + policy.deadline - policy.clock()
            status, data, headers, failure = None, None, None, None
            try:
                status, data, headers = self._send(method, path, query, body, max(min(self.timeout, remaining), 0.001),
                                                   content_type)
            except ApiException as exc:  # TLS and request-building errors (status 0): not retried
                raise K8sApiError(call, exc.status or None, _status_message(exc.body) or exc.reason, attempts=attempts,
                                  elapsed=policy.clock() - started)
            except TRANSPORT_ERRORS as exc:  # refused connections, resets, timeouts
                failure = transport_failure(exc)
                reason = "%s: %s" % (type(exc).__name__, exc)
            else:
                if 200 <= status <= 299:
                    try:
                        return json.loads(data) if data else {}
                    except ValueError as exc:
                        raise K8sApiError(call, status, "the response is not JSON: %s" % exc, attempts=attempts)
                reason = _status_message(data) or "(no body)"
            doc = _status_doc(data)[1] if status else None
            if not policy.retryable(method, status, failure):
                raise K8sApiError(call, status, reason, attempts=attempts, elapsed=policy.clock() - started,
                                  status_doc=doc)
            delay, why = policy.wait(attempts, retry_after_seconds(headers, data) if status else None, started)
            if delay is None:
                raise K8sApiError(call, status, reason, attempts=attempts, elapsed=policy.clock() - started,
                                  deadline=policy.deadline, gave_up=why, status_doc=doc)
            policy.sleep(delay)

    def get(self, path, query=None):
        """One object or document (``/version``, ``/apis``, a CRD)."""
        return self.request("GET", path, list(query or []))

    def get_or_none(self, path, query=None):
        """``get``, or None when the object (or API) is not there: a 404 only. A 403 stays an error: an
        object that may not be read is never taken for one that is absent."""
        from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster import objects  # it imports this module
        return objects.get_or_none(self, path, query)

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
                page = self.request("GET", path, query)
            except K8sApiError as exc:
                if exc.status == 410 and token and not restarted:
                    restarted, items, token = True, [], None  # the snapshot was compacted: start over
                    continue
                raise
            items.extend(page.get("items") or [])
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return items


def _open_stream(client, path, query, timeout):
    """One streaming GET: (status, urllib3 response); the body is not read."""
    headers = {"Accept": "application/json"}
    if hasattr(client, "param_serialize"):  # kubernetes >= 35: call_api does not read the body
        request = client.param_serialize("GET", path, query_params=list(query or []), header_params=headers,
                                         auth_settings=["BearerToken"])
        response = client.call_api(*request, _request_timeout=timeout)
        return response.status, response.response
    try:
        response = client.call_api(path, "GET", query_params=list(query or []), header_params=headers,
                                   auth_settings=["BearerToken"], _preload_content=False,
                                   _return_http_data_only=True, _request_timeout=timeout)
    except ApiException as exc:
        if not exc.status:
            raise
        return exc.status, exc
    return response.status, response


def _stream_lines(response):
    """The newline-delimited JSON lines of a watch response, as they arrive."""
    pending = b""
    for chunk in response.stream(amt=65536, decode_content=True) if hasattr(response, "stream") else [response.data]:
        pending += chunk
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            if line.strip():
                yield line
    if pending.strip():
        yield pending


def watch_events(reader, path, resource_version, label_selector=None, timeout_seconds=300, stop=None):
    """Yield ``(type, object)`` of one watch of ``path`` from ``resource_version`` as the server sends them.

    ``timeoutSeconds`` bounds the stream on the server side and the read timeout bounds silence, so
    the call always ends: when the stream ends the generator returns and the caller re-lists and
    watches again. Opening the stream follows the reader's retry policy for 429/5xx and connect
    failures; a 403 or any other refusal raises :class:`K8sApiError`; a 410 (the resource version was
    compacted) raises :class:`K8sApiError` with ``status`` 410 so the caller re-lists. An ``ERROR``
    event raises the same way. ``stop`` (a ``threading.Event``) ends the generator between events.
    """
    query = [("watch", "true"), ("resourceVersion", str(resource_version)), ("allowWatchBookmarks", "true"),
             ("timeoutSeconds", int(timeout_seconds))]
    if label_selector:
        query.append(("labelSelector", label_selector))
    call = _call_name(path, query)
    policy = reader.policy
    started = policy.clock()
    attempts = 0
    while True:
        attempts += 1
        reader.calls += 1
        status, response, failure, reason = None, None, None, None
        try:
            status, response = _open_stream(reader.api_client, path, query, (reader.timeout, timeout_seconds + 30))
        except ApiException as exc:
            raise K8sApiError(call, exc.status or None, _status_message(exc.body) or exc.reason, attempts=attempts)
        except TRANSPORT_ERRORS as exc:
            failure = transport_failure(exc)
            reason = "%s: %s" % (type(exc).__name__, exc)
        if status is not None and 200 <= status <= 299:
            break
        data = None
        if status is not None:
            data = getattr(response, "body", None) if isinstance(response, Exception) else response.data
            reason = _status_message(data) or "(no body)"
        if not policy.retryable("GET", status, failure):
            raise K8sApiError(call, status, reason, attempts=attempts, elapsed=policy.clock() - started)
        delay, why = policy.wait(attempts, None, started)
        if delay is None:
            raise K8sApiError(call, status, reason, attempts=attempts, elapsed=policy.clock() - started,
                              deadline=policy.deadline, gave_up=why)
        reader.retries += 1
        policy.sleep(delay)
    try:
        for line in _stream_lines(response):
            if stop is not None and stop.is_set():
                return
            try:
                event = json.loads(line)
            except ValueError as exc:
                raise K8sApiError(call, 200, "a watch event is not JSON: %s" % exc)
            kind, obj = event.get("type"), event.get("object") or {}
            if kind == "ERROR":
                raise K8sApiError(call, obj.get("code") or 500, obj.get("message") or "watch error")
            yield kind, obj
    except TRANSPORT_ERRORS:
        return  # the stream broke: the caller re-lists and watches again
    finally:
        close = getattr(response, "release_conn", None) or getattr(response, "close", None)
        if close is not None:
            close()


def module_api_client(module, **extra):
    """The API client of an AnsibleModule's connection options; a missing library or an unusable
    kubeconfig fails the module naming it, with ``extra`` result fields (nothing has been sent yet)."""
    try:
        return build_api_client(module.params)
    except K8sLibraryError as exc:
        from ansible.module_utils.basic import missing_required_lib  # pylint: disable=import-outside-toplevel
        module.fail_json(msg=missing_required_lib(exc.library), exception=exc.exception, **extra)
    except K8sConfigError as exc:
        module.fail_json(msg="cannot connect to the cluster: %s" % exc, **extra)
    return None  # not reached: fail_json exits


def module_reader(module, page_size=500):
    """The :class:`K8sReader` of an AnsibleModule's connection options; on a bad timing option, a missing
    library or an unusable kubeconfig the module fails naming it (nothing has been sent yet)."""
    bad = check_params(module.params)
    if bad:
        module.fail_json(msg=bad)
    return reader_from_params(module_api_client(module), module.params, page_size=page_size)
