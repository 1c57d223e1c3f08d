# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""K8sReader's retry policy: which failures are retried, the backoff, Retry-After, the deadline,
the write rule and the 403 message - with a fake clock (nothing sleeps)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import json
import socket

import pytest
from urllib3 import exceptions as u3

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster import client as k8s_client
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster.client import (
    CONNECT,
    RESET,
    TIMEOUT,
    K8sApiError,
    K8sReader,
    RetryPolicy,
    describe_request,
    retry_after_seconds,
    transport_failure,
)


class Clock:
    """A fake monotonic clock; ``sleep`` advances it and records the waits."""

    def __init__(self):
        self.now = 1000.0
        self.sleeps = []

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        assert seconds >= 0
        self.sleeps.append(seconds)
        self.now += seconds


class Response:
    def __init__(self, status, doc=None, headers=None):
        self.status = status
        self.data = json.dumps(doc if doc is not None else {}).encode()
        self.headers = headers or {}

    def read(self):
        return self.data


def status_body(code, reason, message, retry_after=None):
    body = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code, "reason": reason, "message": message}
    if retry_after is not None:
        body["details"] = {"retryAfterSeconds": retry_after}
    return body


class Client:
    """The kubernetes >= 35 ApiClient surface: each answer is a Response or an exception to raise;
    ``cost`` seconds of the fake clock pass per attempt."""

    def __init__(self, answers, clock=None, cost=0.0):
        self.answers, self.clock, self.cost = list(answers), clock, cost
        self.requests, self.timeouts = [], []

    def param_serialize(self, method, resource_path, query_params=None, header_params=None, body=None, auth_settings=None):
        return method, resource_path, header_params, body, None

    def call_api(self, method, url, header_params=None, body=None, post_params=None, _request_timeout=None):
        self.requests.append((method, url))
        self.timeouts.append(_request_timeout)
        if self.clock is not None:
            self.clock.now += self.cost
        answer = self.answers.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return answer


def reader(answers, deadline=30.0, timeout=60.0, cost=0.0, rand=0.5):
    clock = Clock()
    policy = RetryPolicy(deadline=deadline, initial=0.25, maximum=8.0, sleep=clock.sleep, clock=clock,
                         rand=lambda: rand)
    client = Client(answers, clock, cost)
    return K8sReader(client, timeout=timeout, policy=policy), client, clock


OK = Response(200, {"items": [{"metadata": {"name": "n1"}}], "metadata": {}})


def refused():
    cause = ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused")
    exc = u3.NewConnectionError(None, "Failed to establish a new connection: [Errno 111] Connection refused")
    exc.__cause__ = cause
    return exc


def reset():
    return u3.ProtocolError("Connection aborted.", ConnectionResetError(errno.ECONNRESET, "Connection reset by peer"))


@pytest.mark.parametrize("code", [429, 500, 502, 503, 504])
def test_transient_statuses_are_retried_then_succeed(code):
    r, client, clock = reader([Response(code, status_body(code, "X", "transient")), Response(code), OK])
    assert r.list("/api/v1/nodes") == [{"metadata": {"name": "n1"}}]
    assert r.calls == 3 and r.retries == 2
    # exponential backoff with jitter: rand 0.5 -> 3/4 of 0.25, then of 0.5
    assert clock.sleeps == [0.1875, 0.375]


@pytest.mark.parametrize("code", [400, 401, 404, 409, 410, 422])
def test_other_statuses_are_not_retried(code):
    r, client, clock = reader([Response(code, status_body(code, "X", "no"))])
    with pytest.raises(K8sApiError) as exc:
        r.get("/api/v1/namespaces/default/configmaps/x")
    assert exc.value.status == code and exc.value.attempts == 1 and clock.sleeps == []


def test_backoff_is_exponential_bounded_and_jittered():
    policy = RetryPolicy(initial=0.25, maximum=8.0, rand=lambda: 1.0)
    assert [policy.backoff(n) for n in range(1, 9)] == [0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 8.0, 8.0]
    policy = RetryPolicy(initial=0.25, maximum=8.0, rand=lambda: 0.0)
    assert [policy.backoff(n) for n in (1, 6, 10)] == [0.125, 4.0, 4.0]  # never below half the step


def test_retry_after_header_is_honoured():
    throttled = Response(429, status_body(429, "TooManyRequests", "slow down"), headers={"Retry-After": "3"})
    r, client, clock = reader([throttled, OK])
    r.list("/api/v1/nodes")
    assert clock.sleeps == [3.0]


def test_retry_after_from_the_status_body_when_no_header():
    r, client, clock = reader([Response(429, status_body(429, "TooManyRequests", "slow", retry_after=2)), OK])
    r.list("/api/v1/nodes")
    assert clock.sleeps == [2.0]
    assert retry_after_seconds({"Retry-After": "Wed, 21 Oct 2026 07:28:00 GMT"}, b"") is None  # date form: backoff


def test_retry_after_past_the_deadline_fails_at_once():
    throttled = Response(429, status_body(429, "TooManyRequests", "slow down"), headers={"Retry-After": "60"})
    r, client, clock = reader([throttled], deadline=10.0)
    with pytest.raises(K8sApiError) as exc:
        r.list("/api/v1/nodes")
    assert clock.sleeps == []
    text = str(exc.value)
    assert text.startswith("GET /api/v1/nodes?limit=500 failed after 1 attempt(s)")
    assert "api_deadline 10 s" in text and "retry after 60 s, past the deadline" in text and "HTTP 429" in text


def test_the_deadline_bounds_the_request_and_names_it():
    unavailable = Response(503, status_body(503, "ServiceUnavailable", "the server is currently unable to handle the request"))
    r, client, clock = reader([unavailable] * 100, deadline=5.0, cost=0.1)
    with pytest.raises(K8sApiError) as exc:
        r.list("/api/v1/namespaces/gpu-operator/secrets", label_selector="owner=helm")
    elapsed = clock.now - 1000.0
    assert elapsed <= 5.0
    assert exc.value.status == 503 and exc.value.deadline == 5.0 and exc.value.attempts == len(client.requests) > 3
    text = str(exc.value)
    assert text.startswith("GET /api/v1/namespaces/gpu-operator/secrets?labelSelector=owner=helm&limit=500 failed after")
    assert "(api_deadline 5 s)" in text and "last: HTTP 503: the server is currently unable" in text


def test_each_attempt_is_limited_by_what_is_left_of_the_deadline():
    r, client, clock = reader([Response(500), OK], deadline=3.0, timeout=60.0, cost=1.0)
    r.get("/version")
    assert client.timeouts[0] == 3.0 and client.timeouts[1] < 2.0


@pytest.mark.parametrize("make,kind", [(refused, CONNECT), (reset, RESET),
                                       (lambda: u3.ReadTimeoutError(None, "/x", "Read timed out."), TIMEOUT),
                                       (lambda: u3.ConnectTimeoutError("connect timed out"), CONNECT),
                                       (lambda: ConnectionResetError(errno.ECONNRESET, "reset"), RESET),
                                       (lambda: socket.timeout("timed out"), TIMEOUT)])
def test_transport_failures_are_classified_and_reads_retried(make, kind):
    assert transport_failure(make()) == kind
    r, client, clock = reader([make(), OK])
    assert r.list("/api/v1/nodes")
    assert r.retries == 1


def test_tls_and_dns_failures_are_not_retried():
    assert transport_failure(u3.SSLError("certificate verify failed")) is None
    assert transport_failure(u3.NameResolutionError("nohost", None, socket.gaierror(-2, "Name or service not known"))) is None
    r, client, clock = reader([u3.SSLError("certificate verify failed")])
    with pytest.raises(K8sApiError) as exc:
        r.get("/version")
    assert exc.value.status is None and exc.value.attempts == 1 and "SSLError" in str(exc.value)


def test_a_server_that_stays_down_fails_within_the_deadline():
    r, client, clock = reader([refused() for _attempt in range(100)], deadline=4.0, cost=0.05)
    with pytest.raises(K8sApiError) as exc:
        r.get("/version")
    assert clock.now - 1000.0 <= 4.0
    assert "Connection refused" in str(exc.value) and "(api_deadline 4 s)" in str(exc.value)


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE"])
def test_writes_are_retried_only_where_they_cannot_apply_twice(method):
    assert RetryPolicy.retryable(method, 429, None) and RetryPolicy.retryable(method, 503, None)
    assert RetryPolicy.retryable(method, None, CONNECT)
    for status in (500, 502, 504):
        assert not RetryPolicy.retryable(method, status, None)
    assert not RetryPolicy.retryable(method, None, RESET) and not RetryPolicy.retryable(method, None, TIMEOUT)
    # through the reader: a 500 on a write fails after one attempt, a 503 is retried
    r, client, clock = reader([Response(500, status_body(500, "InternalError", "etcdserver: request timed out"))])
    with pytest.raises(K8sApiError) as exc:
        r.request(method, "/api/v1/namespaces/default/configmaps/x", body={"data": {}})
    assert exc.value.attempts == 1
    r, client, clock = reader([Response(503), reset()])
    with pytest.raises(K8sApiError) as exc:
        r.request(method, "/api/v1/namespaces/default/configmaps/x", body={"data": {}})
    assert exc.value.attempts == 2 and exc.value.status is None and "Connection aborted" in str(exc.value)


def test_forbidden_is_never_retried_and_names_verb_and_resource():
    body = status_body(403, "Forbidden", 'secrets is forbidden: User "u" cannot list resource "secrets" in API group "" '
                                         'in the namespace "gpu-operator"')
    r, client, clock = reader([Response(403, body)])
    with pytest.raises(K8sApiError) as exc:
        r.list("/api/v1/namespaces/gpu-operator/secrets", label_selector="owner=helm,name=gpu-operator")
    assert exc.value.forbidden and exc.value.attempts == 1 and clock.sleeps == []
    assert str(exc.value).startswith('forbidden: cannot list secrets in namespace "gpu-operator" '
                                     '(GET /api/v1/namespaces/gpu-operator/secrets?labelSelector=owner=helm,name=gpu-operator')


def test_get_or_none_is_none_on_404_only():
    r, _client, _clock = reader([Response(404, status_body(404, "NotFound", 'gpuclusters.nvidia.com "x" not found'))])
    assert r.get_or_none("/apis/nvidia.com/v1alpha1/gpuclusters/x") is None
    r, _client, _clock = reader([Response(200, {"kind": "GPUCluster"})])
    assert r.get_or_none("/apis/nvidia.com/v1alpha1/gpuclusters/x") == {"kind": "GPUCluster"}
    body = status_body(403, "Forbidden", 'gpuclusters.nvidia.com "x" is forbidden: User "u" cannot get resource')
    r, _client, _clock = reader([Response(403, body)])
    with pytest.raises(K8sApiError) as exc:  # may not be read is never "absent"
        r.get_or_none("/apis/nvidia.com/v1alpha1/gpuclusters/x")
    assert exc.value.forbidden


@pytest.mark.parametrize("call,what", [
    ("GET /api/v1/nodes?limit=500", "list nodes"),
    ("GET /api/v1/nodes/gpu-1", 'get nodes "gpu-1"'),
    ("GET /apis/apiextensions.k8s.io/v1/customresourcedefinitions/clusterpolicies.nvidia.com",
     'get customresourcedefinitions.apiextensions.k8s.io "clusterpolicies.nvidia.com"'),
    ("GET /apis/nvidia.com/v1/clusterpolicies?limit=500", "list clusterpolicies.nvidia.com"),
    ("GET /apis/resource.k8s.io/v1/namespaces/ns/resourceclaims", 'list resourceclaims.resource.k8s.io in namespace "ns"'),
    ("PATCH /api/v1/nodes/gpu-1/status", 'patch nodes/status "gpu-1"'),
    ("DELETE /api/v1/namespaces/a/pods", 'deletecollection pods in namespace "a"'),
    ("POST /api/v1/namespaces/a/pods/p/eviction", 'create pods/eviction "p" in namespace "a"'),
    ("GET /apis/nvidia.com/v1", "get /apis/nvidia.com/v1"),
    ("GET /version", "get /version"),
])
def test_describe_request(call, what):
    assert describe_request(call) == what


def test_retries_are_disabled_in_urllib3_and_options_checked():
    pytest.importorskip("kubernetes")
    config = k8s_client.build_configuration({"host": "https://api.example:6443", "api_key": "t"})
    assert config.retries is False
    assert k8s_client.check_params({"request_timeout": 60.0, "api_deadline": 0}) == \
        "api_deadline: must be a positive number of seconds, got 0"
    assert k8s_client.check_params({"request_timeout": 60.0, "api_deadline": 120.0}) is None
    assert k8s_client.K8S_AUTH_ARG_SPEC["proxy"]["no_log"] is True
    assert k8s_client.K8S_AUTH_ARG_SPEC["api_deadline"] == {"type": "float", "default": 120.0}


# -- the real kubernetes client against real sockets -------------------------------------------------

def _real_reader(url, deadline):
    pytest.importorskip("kubernetes")
    clock = Clock()
    api_client = k8s_client.build_api_client({"host": url, "api_key": "t"})
    policy = RetryPolicy(deadline=deadline, sleep=clock.sleep, clock=clock, rand=lambda: 1.0)
    return K8sReader(api_client, timeout=5.0, policy=policy), api_client, clock


def test_real_client_connection_refused_is_retried_until_the_deadline():
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()  # nothing listens there now
    reader_, api_client, clock = _real_reader("http://127.0.0.1:%d" % port, deadline=2.0)
    try:
        with pytest.raises(K8sApiError) as exc:
            reader_.get("/version")
    finally:
        api_client.close()
    assert exc.value.status is None and exc.value.attempts >= 3 and exc.value.deadline == 2.0
    assert "Connection refused" in str(exc.value) and str(exc.value).startswith("GET /version failed after ")


def test_real_client_connection_reset_then_answer():
    import threading

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    port = server.getsockname()[1]
    body = json.dumps({"major": "1", "minor": "37", "gitVersion": "v1.37.0"}).encode()

    def serve():
        first, _addr = server.accept()  # read the request, then drop the connection: reset
        first.recv(65536)
        first.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        first.close()
        second, _addr = server.accept()
        second.recv(65536)
        second.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
                       b"Connection: close\r\n\r\n%s" % (len(body), body))
        second.close()

    thread = threading.Thread(target=serve)
    thread.daemon = True
    thread.start()
    reader_, api_client, clock = _real_reader("http://127.0.0.1:%d" % port, deadline=10.0)
    try:
        assert reader_.get("/version")["gitVersion"] == "v1.37.0"
    finally:
        api_client.close()
        server.close()
    assert reader_.retries == 1 and clock.sleeps == [0.25]
