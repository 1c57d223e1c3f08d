# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Contract: gpufleet.dra_gate.crd_prepare run for real through ansible-playbook against the lab.

A CRD installed by Helm (manager ``helm``, as Helm's client-side create records it) is prepared
with the target chart's changed schema: without force the apply is refused naming ``helm`` and the
field (nothing written, the other CRD not created either); check mode writes nothing but reports
the diff; with force the CRD is updated (``dra-gate`` owns the taken field, the new schema field is
served) and the chart's template CRD that did not exist is created and Established; a rerun writes
nothing (same resourceVersion); the before/after evidence files are 0600.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import stat
import subprocess
import textwrap

import pytest
from kubernetes import config
from kubernetes.client import ApiextensionsV1Api, CustomObjectsApi

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
VENV_BIN = os.path.join(REPO, ".venv", "bin")
COLLECTIONS = os.path.join(REPO, ".cache", "collections")
GROUP = "gpufleet.example.com"
GADGETS = "gadgets." + GROUP
DOMAINS = "computedomains.resource.gpufleet.example.com"
FIELD = '.spec.versions[name="v1"].schema.openAPIV3Schema.properties.spec.description'


def gadget_crd(description, mode=False):
    spec = {"type": "object", "description": description, "properties": {"replicas": {"type": "integer"}}}
    if mode:
        spec["properties"]["mode"] = {"type": "string"}
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": GADGETS, "labels": {"app.kubernetes.io/managed-by": "Helm"}},
        "spec": {"group": GROUP, "scope": "Cluster",
                 "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"},
                 "versions": [{"name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
                               "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                                   "spec": spec,
                                   "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}}}]},
    }


DOMAIN_TEMPLATE = textwrap.dedent("""\
    apiVersion: apiextensions.k8s.io/v1
    kind: CustomResourceDefinition
    metadata:
      name: computedomains.resource.gpufleet.example.com
    spec:
      group: resource.gpufleet.example.com
      scope: Namespaced
      names: {plural: computedomains, singular: computedomain, kind: ComputeDomain, listKind: ComputeDomainList}
      versions:
        - name: v1beta1
          served: true
          storage: true
          subresources: {status: {}}
          schema:
            openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
    """)

PLAYBOOK = textwrap.dedent("""\
    - hosts: localhost
      gather_facts: false
      module_defaults:
        gpufleet.dra_gate.crd_prepare:
          kubeconfig: "{{ lookup('ansible.builtin.env', 'KUBECONFIG') }}"
          chart: "{{ chart }}"
          api_deadline: 30
          establish_timeout: 20
      tasks:
        - name: Without force over helm's fields
          gpufleet.dra_gate.crd_prepare:
            force_conflicts: false
          register: refused
          ignore_errors: true
        - name: Check mode
          gpufleet.dra_gate.crd_prepare: {}
          check_mode: true
          diff: true
          register: checked
        - name: With force (the default)
          gpufleet.dra_gate.crd_prepare:
            evidence_dir: "{{ evidence }}"
            stamp: forced
          diff: true
          register: forced
        - name: Again
          gpufleet.dra_gate.crd_prepare:
            evidence_dir: "{{ evidence }}"
            stamp: again
            force_conflicts: false
          register: again
        - name: Keep the results
          ansible.builtin.copy:
            content: "{{ {'refused': refused, 'checked': checked, 'forced': forced, 'again': again} | to_json }}"
            dest: "{{ out }}"
            mode: "0600"
    """)


@pytest.fixture(scope="module")
def api_client(lab):
    return config.new_client_from_config(config_file=lab.kubeconfig)


def by_name(result):
    return {entry["name"]: entry for entry in result["crds"]}


def test_crd_prepare_takes_over_helm_crds(lab, api_client, tmp_path):
    ext = ApiextensionsV1Api(api_client)
    ext.create_custom_resource_definition(gadget_crd("v26.3"), field_manager="helm")
    installed = ext.read_custom_resource_definition(GADGETS)
    assert [(m.manager, m.operation) for m in installed.metadata.managed_fields] == [("helm", "Update")]
    helm_rv = installed.metadata.resource_version

    chart = tmp_path / "gpu-operator"
    (chart / "crds").mkdir(parents=True)
    (chart / "templates").mkdir()
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: gpu-operator\nversion: 26.7.0\n")
    (chart / "crds" / "gadgets.yaml").write_text(json.dumps(gadget_crd("v26.7", mode=True)))
    (chart / "templates" / "computedomains.yaml").write_text(DOMAIN_TEMPLATE)
    (chart / "templates" / "deployment.yaml").write_text("apiVersion: apps/v1\nkind: Deployment\n"
                                                         "metadata: {name: {{ .Release.Name }}}\n")
    evidence = tmp_path / "evidence"
    out = tmp_path / "results.json"
    playbook = tmp_path / "crd_prepare.yml"
    playbook.write_text(PLAYBOOK)
    env = lab.env()
    env.update(ANSIBLE_LOCALHOST_WARNING="false", ANSIBLE_INVENTORY_UNPARSED_WARNING="false", ANSIBLE_NOCOLOR="1",
               ANSIBLE_COLLECTIONS_PATH=COLLECTIONS, ANSIBLE_PYTHON_INTERPRETER=os.path.join(VENV_BIN, "python"),
               TMPDIR=str(tmp_path))
    extra = json.dumps({"chart": str(chart), "evidence": str(evidence), "out": str(out)})
    proc = subprocess.run([os.path.join(VENV_BIN, "ansible-playbook"), str(playbook), "-e", extra], env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    results = json.loads(out.read_text())

    # without force: refused naming helm and the field; nothing written (the new CRD not created either)
    refused = results["refused"]
    assert refused["failed"] and not refused["changed"]
    assert '"helm": ' + FIELD in refused["msg"] and "nothing was written" in refused["msg"], refused["msg"]
    assert refused["refused"] == [{"name": GADGETS, "conflicts": [
        {"manager": "helm", "subresource": "", "api_version": "apiextensions.k8s.io/v1", "fields": [FIELD]}]}]

    # check mode: the diff of the dry runs, nothing stored
    checked = results["checked"]
    assert checked["changed"] and not checked.get("failed")
    entries = by_name(checked)
    assert (entries[GADGETS]["action"], entries[DOMAINS]["action"]) == ("updated", "created")
    assert entries[GADGETS]["resource_version_before"] == helm_rv        # the refused run wrote nothing
    assert entries[DOMAINS]["resource_version_before"] is None          # ... and created nothing
    assert {"path": FIELD, "change": "changed"} in entries[GADGETS]["diff"]
    assert {"path": FIELD.replace(".description", ".properties.mode"), "change": "added"} in entries[GADGETS]["diff"]
    assert entries[GADGETS]["conflicts"][0]["fields"] == [FIELD]
    assert [d["after_header"] for d in checked["diff"]] == [GADGETS + " (updated)", DOMAINS + " (created)"]
    assert "v26.7" in checked["diff"][0]["after"] and "v26.3" in checked["diff"][0]["before"]
    assert "managedFields" not in checked["diff"][0]["after"]
    assert checked["artifacts"] == [] and checked["evidence_dir"] is None

    # forced: helm's field taken, the template CRD created and Established
    forced = results["forced"]
    assert forced["changed"] and forced["applied"] == [GADGETS, DOMAINS]
    entries = by_name(forced)
    gadgets = entries[GADGETS]
    assert gadgets["action"] == "updated" and gadgets["resource_version_before"] == helm_rv   # check mode wrote nothing
    assert gadgets["conflicts"] == [{"manager": "helm", "subresource": "", "api_version": "apiextensions.k8s.io/v1",
                                     "fields": [FIELD]}]
    assert gadgets["managers_before"] == ["helm (Update)"]
    assert gadgets["managers_after"] == ["dra-gate (Apply)", "helm (Update)"]
    assert gadgets["established"] is True and gadgets["resource_version_after"] != helm_rv
    assert entries[DOMAINS]["action"] == "created" and entries[DOMAINS]["established"] is True
    assert entries[DOMAINS]["diff"] == [{"path": ".", "change": "added"}]
    assert len(forced["diff"]) == 2
    live = ext.read_custom_resource_definition(GADGETS)
    owners = {(m.manager, m.operation): m.fields_v1 for m in live.metadata.managed_fields}
    spec_fields = owners[("dra-gate", "Apply")]["f:spec"]["f:versions"]['k:{"name":"v1"}']["f:schema"][
        "f:openAPIV3Schema"]["f:properties"]["f:spec"]
    assert "f:description" in spec_fields and "f:mode" in spec_fields["f:properties"]
    helm_spec = owners[("helm", "Update")]["f:spec"]["f:versions"]['k:{"name":"v1"}']["f:schema"][
        "f:openAPIV3Schema"]["f:properties"]["f:spec"]
    assert "f:description" not in helm_spec
    assert live.metadata.labels == {"app.kubernetes.io/managed-by": "Helm"}   # Helm's label kept
    schema = live.spec.versions[0].schema.open_apiv3_schema.properties["spec"]
    assert schema.description == "v26.7" and "mode" in schema.properties
    domains = ext.read_custom_resource_definition(DOMAINS)
    assert any(c.type == "Established" and c.status == "True" for c in domains.status.conditions)
    # the new schema field is served
    custom = CustomObjectsApi(api_client)
    custom.create_cluster_custom_object(GROUP, "v1", "gadgets", {
        "apiVersion": GROUP + "/v1", "kind": "Gadget", "metadata": {"name": "g1"}, "spec": {"replicas": 1, "mode": "dra"}})
    assert custom.get_cluster_custom_object(GROUP, "v1", "gadgets", "g1")["spec"] == {"replicas": 1, "mode": "dra"}

    # the rerun: nothing to write (no write at all: the same resourceVersion), no force needed
    again = results["again"]
    assert not again["changed"] and again["applied"] == [] and again["counts"] == {"created": 0, "updated": 0,
                                                                                   "unchanged": 2}
    entries = by_name(again)
    for name in (GADGETS, DOMAINS):
        assert entries[name]["diff"] == [] and entries[name]["conflicts"] == []
        assert entries[name]["resource_version_before"] == entries[name]["resource_version_after"] == \
            by_name(forced)[name]["resource_version_after"]
    assert ext.read_custom_resource_definition(GADGETS).metadata.resource_version == gadgets["resource_version_after"]

    # evidence: a directory per run, before/after per CRD, 0600 files in 0700 directories
    files = sorted(os.path.relpath(a["path"], str(evidence)) for a in forced["artifacts"])
    assert files == ["forced/after/%s.json" % DOMAINS, "forced/after/%s.json" % GADGETS,
                     "forced/before/%s.json" % GADGETS]
    for artifact in forced["artifacts"] + again["artifacts"]:
        assert stat.S_IMODE(os.stat(artifact["path"]).st_mode) == 0o600
        assert stat.S_IMODE(os.stat(os.path.dirname(artifact["path"])).st_mode) == 0o700
        assert subprocess.run(artifact["verify"], shell=True, check=False).returncode == 0
    before = json.loads((evidence / "forced" / "before" / (GADGETS + ".json")).read_text())
    after = json.loads((evidence / "forced" / "after" / (GADGETS + ".json")).read_text())
    assert before["metadata"]["resourceVersion"] == helm_rv and after["metadata"]["resourceVersion"] != helm_rv
    assert sorted(m["manager"] for m in after["metadata"]["managedFields"]) == ["dra-gate", "helm"]
    assert len(again["artifacts"]) == 4
