# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Bad requests get kube-apiserver's status codes and reasons, and leave etcd untouched."""

from __future__ import annotations

import json

import pytest
import requests

CM = "/api/v1/namespaces/default/configmaps"


@pytest.fixture(scope="module")
def base(lab):
    requests.post(lab.url + CM, json={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "anchor"},
                                      "data": {"k": "v"}}, timeout=10).raise_for_status()
    return lab.url


def snapshot(lab) -> dict:
    """Every ConfigMap and Namespace with its resourceVersion (controllers write other kinds)."""
    store, registry = lab.server.store, lab.server.registry
    state = {}
    for plural in ("configmaps", "namespaces"):
        items, _rev = store.list(registry.get("", "v1", plural))
        for obj in items:
            meta = obj["metadata"]
            state[(plural, meta.get("namespace"), meta["name"])] = meta["resourceVersion"]
    return state


def call(method, url, body=None, content_type="application/json", raw=None):
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    return requests.request(method, url, data=data, headers={"Content-Type": content_type}, timeout=10)


@pytest.mark.parametrize("method,path,body,content_type,code,reason", [
    ("POST", CM, b"{not json", "application/json", 400, "BadRequest"),
    ("POST", CM, b"kind: [unclosed", "application/yaml", 400, "BadRequest"),
    ("POST", CM, b"k8s\x00\x0a\x02\x0a", "application/vnd.kubernetes.protobuf", 400, "BadRequest"),
    ("POST", CM, b"\x00\x01", "application/x-unknown", 415, "UnsupportedMediaType"),
    ("POST", CM, {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "x"}}, None, 400, "BadRequest"),
    ("POST", CM, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "Bad_Name"}}, None, 422, "Invalid"),
    ("POST", CM, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "-x"}}, None, 422, "Invalid"),
    ("POST", CM, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}, None, 422, "Invalid"),
    ("POST", CM, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "lbl", "labels": {"a b": "c"}}},
     None, 422, "Invalid"),
    ("POST", CM, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "anchor"}}, None, 409, "AlreadyExists"),
    ("POST", "/api/v1/namespaces/nope/configmaps", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}},
     None, 404, "NotFound"),
    ("POST", "/api/v1/namespaces/default/gadgets", {"kind": "Gadget"}, None, 404, "NotFound"),
    ("POST", "/apis/nothing.example.com/v1/things", {"kind": "Thing"}, None, 404, "NotFound"),
    ("PUT", CM + "/anchor", {"apiVersion": "v1", "kind": "ConfigMap",
                             "metadata": {"name": "anchor", "resourceVersion": "1"}, "data": {"k": "stale"}},
     None, 409, "Conflict"),
    ("PUT", CM + "/anchor", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "other"}}, None, 400,
     "BadRequest"),
    ("PATCH", CM + "/anchor", [{"op": "test", "path": "/data/k", "value": "nope"}], "application/json-patch+json",
     422, "Invalid"),
    ("PATCH", CM + "/anchor", [{"op": "remove", "path": "/data/missing"}], "application/json-patch+json", 422, "Invalid"),
    ("PATCH", CM + "/anchor", [{"op": "frobnicate", "path": "/data"}], "application/json-patch+json", 422, "Invalid"),
    ("PATCH", CM + "/anchor", {"data": {"k": "x"}}, "application/apply-patch+yaml", 422, "Invalid"),
    ("PATCH", CM + "/missing", {"data": {"k": "x"}}, "application/merge-patch+json", 404, "NotFound"),
    ("PATCH", CM + "/anchor", {"metadata": {"name": "renamed"}}, "application/merge-patch+json", 400, "BadRequest"),
    ("GET", CM + "?labelSelector=a%20in%20(", None, None, 400, "BadRequest"),
    ("GET", CM + "?fieldSelector=data.k%3Dv", None, None, 400, "BadRequest"),
    ("DELETE", CM + "/missing", None, None, 404, "NotFound"),
])
def test_bad_request_status_and_store_untouched(lab, base, method, path, body, content_type, code, reason):
    before = snapshot(lab)
    raw = body if isinstance(body, bytes) else None
    response = call(method, base + path, None if raw is not None else body, content_type or "application/json", raw)
    assert response.status_code == code, response.text
    status = response.json()
    assert status["kind"] == "Status" and status["status"] == "Failure"
    assert status["reason"] == reason and status["code"] == code
    assert snapshot(lab) == before, "a refused request changed the store"


def test_stale_delete_precondition(lab, base):
    before = snapshot(lab)
    response = call("DELETE", base + CM + "/anchor", {"preconditions": {"resourceVersion": "1"}})
    assert response.status_code == 409 and response.json()["reason"] == "Conflict"
    assert snapshot(lab) == before


def test_wrong_token_is_refused_over_https(tmp_path):
    """HTTPS with a generated CA and a bearer token: the right token works, a wrong one gets 401."""
    import os
    import subprocess
    from kubelab.testing import VENV_BIN, start_lab, stop_lab
    from kubelab.kubeconfig import write_kubeconfig
    from kubelab.tls import generate_tls
    tls = generate_tls(str(tmp_path / "tls"))
    cluster = start_lab(str(tmp_path), scenario="minimal", tls=tls.server_pair, token="right-token", controllers=False)
    try:
        kubectl = os.path.join(VENV_BIN, "kubectl")
        for token, expect in (("right-token", 0), ("wrong-token", 1)):
            kubeconfig = write_kubeconfig(str(tmp_path / ("kc-" + token)), cluster.url, ca_pem=tls.ca_pem, token=token)
            env = dict(cluster.env(), KUBECONFIG=kubeconfig)
            proc = subprocess.run([kubectl, "get", "nodes", "-o", "name"], env=env, capture_output=True, text=True,
                                  timeout=60, check=False)
            assert proc.returncode == expect, proc.stderr
            if expect:
                assert "Unauthorized" in proc.stderr or "provide credentials" in proc.stderr
            else:
                assert "node/worker-1" in proc.stdout
        assert requests.get(cluster.url + "/api/v1/nodes", verify=tls.ca_cert, timeout=10).status_code == 401
    finally:
        stop_lab(cluster)
