# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""kubelab.helmstore: scenario Helm releases carry the manifests their charts rendered.

A release revision with an empty manifest is a release that rendered nothing: ``helm rollback`` to it
deletes every object the current revision has (the operator's Deployment among them). So each
seeded revision carries its manifest, stored as Helm stores it, and the deployed revision's objects
are what the scenario's cluster holds. The prod-26.3 release's 26.3.1 manifest is the lab's 26.3.1
chart (tests/operator_charts.py) as the Helm library renders it, plus the real chart's Role/RoleBinding.
"""

from __future__ import annotations

import base64
import gzip
import json
import os

import pytest
import yaml

import operator_charts  # tests/ is on pytest's pythonpath (pytest.ini)
from kubelab import helmstore
from kubelab.scenario import ScenarioError, load_scenario, validate_scenario

SCENARIOS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))),
                         "lab", "scenarios")
HOOK = "helm.sh/hook"


def release_of(secret: dict) -> dict:
    """A storage Secret's release JSON (base64 of base64 of gzip, as Helm's secret driver)."""
    return json.loads(gzip.decompress(base64.b64decode(base64.b64decode(secret["data"]["release"]))))


def manifest_objects(text: str) -> dict:
    return {"%s/%s" % (doc["kind"], doc["metadata"]["name"]): doc for doc in yaml.safe_load_all(text) if doc}


def seeded(scenario: dict) -> dict:
    """revision number -> release JSON of the scenario's Helm storage Secrets."""
    return {int(s["metadata"]["labels"]["version"]): release_of(s) for s in scenario["objects"]
            if s["kind"] == "Secret" and s.get("type") == "helm.sh/release.v1"}


def obj(kind, name, api="v1", **extra):
    return dict({"apiVersion": api, "kind": kind, "metadata": {"name": name}}, **extra)


def test_manifest_text_is_helms_shape_and_order():
    manifest = {"templates/clusterpolicy.yaml": [obj("ClusterPolicy", "cluster-policy", "nvidia.com/v1")],
                "templates/operator.yaml": [obj("Deployment", "gpu-operator", "apps/v1")],
                "templates/rbac.yaml": [obj("ServiceAccount", "gpu-operator"),
                                        obj("ClusterRoleBinding", "b", "rbac.authorization.k8s.io/v1"),
                                        obj("ClusterRole", "a", "rbac.authorization.k8s.io/v1")],
                "templates/extra.yaml": [obj("Gadget", "g", "example.com/v1")]}
    text = helmstore.manifest_text("gpu-operator", manifest)
    assert text.startswith("---\n# Source: gpu-operator/templates/rbac.yaml\napiVersion: v1\nkind: ServiceAccount\n")
    kinds = [doc["kind"] for doc in yaml.safe_load_all(text) if doc]
    # InstallOrder: ServiceAccount, ClusterRole, ClusterRoleBinding, Deployment; unknown kinds last, by kind
    assert kinds == ["ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Deployment", "ClusterPolicy", "Gadget"]
    sources = [line for line in text.splitlines() if line.startswith("# Source: ")]
    assert sources[-2:] == ["# Source: gpu-operator/templates/clusterpolicy.yaml",
                            "# Source: gpu-operator/templates/extra.yaml"]
    assert helmstore.manifest_text("gpu-operator", None) == ""
    shared = {"app": "x"}  # YAML aliases in a scenario share objects: written out, never as anchors
    twice = obj("ConfigMap", "c", data=shared, metadata={"name": "c", "labels": shared})
    assert "&id" not in helmstore.manifest_text("c", {"templates/c.yaml": [twice]})


def test_release_objects_are_the_deployed_revision_with_helms_ownership():
    entry = {"name": "op", "namespace": "ops", "chart": "op", "revisions": [
        {"chart_version": "1", "status": "superseded", "manifest": {"templates/a.yaml": [obj("ConfigMap", "old")]}},
        {"chart_version": "2", "status": "deployed", "manifest": {"templates/a.yaml": [
            obj("ConfigMap", "new", metadata={"name": "new", "namespace": "ops", "annotations": {"k": "v"}})]}},
        {"chart_version": "3", "status": "failed", "manifest": {"templates/a.yaml": [obj("ConfigMap", "failed")]}}]}
    (applied,) = helmstore.release_objects(entry)
    assert applied["metadata"]["name"] == "new"
    assert applied["metadata"]["annotations"] == {"k": "v", "meta.helm.sh/release-name": "op",
                                                  "meta.helm.sh/release-namespace": "ops"}
    # the manifest stays as rendered
    assert entry["revisions"][1]["manifest"]["templates/a.yaml"][0]["metadata"]["annotations"] == {"k": "v"}
    assert helmstore.release_objects(dict(entry, revisions=entry["revisions"][:1])) == []


def test_scenario_release_manifests_are_stored_and_applied():
    data = validate_scenario({"objects": [
        obj("ConfigMap", "kept", metadata={"name": "kept", "namespace": "ops"}, data={"from": "objects"})],
        "helm_releases": [{"name": "op", "namespace": "ops", "chart": "op", "revisions": [
            {"chart_version": "v1", "status": "deployed", "manifest": {"templates/cm.yaml": [
                obj("ConfigMap", "kept", metadata={"name": "kept", "namespace": "ops"}, data={"from": "release"}),
                obj("ConfigMap", "made", metadata={"name": "made", "namespace": "ops"})]}}]}]})
    by_name = {o["metadata"]["name"]: o for o in data["objects"]}
    assert by_name["kept"]["data"] == {"from": "objects"}  # what objects say wins (drift from the release)
    assert by_name["made"]["metadata"]["annotations"]["meta.helm.sh/release-name"] == "op"
    (release,) = seeded(data).values()
    assert set(manifest_objects(release["manifest"])) == {"ConfigMap/kept", "ConfigMap/made"}
    assert [o["kind"] for o in data["objects"]] == ["ConfigMap", "ConfigMap", "Secret"]  # applied before storage


@pytest.mark.parametrize("manifest, message", [
    (["x"], r"helm_releases\[0\]\.revisions\[0\]\.manifest: must be a mapping of template path"),
    ({"templates/a.yaml": {"kind": "ConfigMap"}}, r"manifest\[templates/a\.yaml\]: must be a list of objects"),
    ({"templates/a.yaml": [{"kind": "ConfigMap", "metadata": {"name": "a"}}]},
     r"manifest\[templates/a\.yaml\]\[0\]\.apiVersion: is required"),
    ({"templates/a.yaml": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}]},
     r"manifest\[templates/a\.yaml\]\[0\]\.metadata\.name: is required"),
])
def test_bad_manifest_names_the_field(manifest, message):
    with pytest.raises(ScenarioError, match=message):
        validate_scenario({"helm_releases": [{"name": "op", "namespace": "ops", "chart": "op", "revisions": [
            {"chart_version": "v1", "manifest": manifest}]}]})


def shipped_releases():
    for name in sorted(n for n in os.listdir(SCENARIOS) if n.endswith(".yml")):
        with open(os.path.join(SCENARIOS, name), encoding="utf-8") as handle:
            data = yaml.safe_load(handle) or {}
        for entry in data.get("helm_releases") or []:
            yield name, entry


def test_every_seeded_release_revision_keeps_the_operator():
    """No shipped scenario seeds a revision whose rollback would delete the operator's Deployment or
    ServiceAccount (an empty or partial manifest)."""
    checked = 0
    for name, entry in shipped_releases():
        scenario = load_scenario(os.path.join(SCENARIOS, name))
        releases = seeded(scenario)
        assert len(releases) == len(entry["revisions"]), name
        for number, release in releases.items():
            objects = manifest_objects(release["manifest"])
            assert {"ServiceAccount/gpu-operator", "Deployment/gpu-operator"} <= set(objects), (name, number)
            deployment = objects["Deployment/gpu-operator"]
            image = deployment["spec"]["template"]["spec"]["containers"][0]["image"]
            app_version = release["chart"]["metadata"]["appVersion"]
            assert image == "nvcr.io/nvidia/gpu-operator:%s" % app_version, (name, number)
            checked += 1
        # the cluster holds the deployed revision's objects, with Helm's ownership metadata
        deployed = max(n for n, r in releases.items() if r["info"]["status"] == "deployed")
        live = {"%s/%s" % (o["kind"], o["metadata"]["name"]): o for o in scenario["objects"]}
        for key, rendered in manifest_objects(releases[deployed]["manifest"]).items():
            applied = json.loads(json.dumps(live[key]))
            annotations = applied["metadata"].pop("annotations")
            assert annotations == {"meta.helm.sh/release-name": entry["name"],
                                   "meta.helm.sh/release-namespace": entry["namespace"]}, key
            assert applied == rendered, key
    assert checked >= 2  # prod-26.3-device-plugin: 26.3.0 and 26.3.1


def test_prod_26_3_1_manifest_is_the_lab_chart_as_helm_renders_it(tmp_path):
    helm_python = pytest.importorskip("helm_python", reason="helm-python-sdk is not installed")
    chart = helm_python.Chart.load(operator_charts.write_chart(str(tmp_path), "26.3.1"))
    rendered = {}
    for text in chart.render(name="gpu-operator", namespace="gpu-operator").values():
        for doc in yaml.safe_load_all(text):
            if doc and HOOK not in (doc["metadata"].get("annotations") or {}):
                rendered["%s/%s" % (doc["kind"], doc["metadata"]["name"])] = doc
    scenario = load_scenario(os.path.join(SCENARIOS, "prod-26.3-device-plugin.yml"))
    releases = seeded(scenario)
    assert [(r["chart"]["metadata"]["version"], r["info"]["status"]) for _n, r in sorted(releases.items())] == \
        [("v26.3.0", "superseded"), ("v26.3.1", "deployed")]
    stored = manifest_objects(releases[2]["manifest"])
    # the chart's objects, as rendered; the real chart's namespaced RBAC besides
    assert set(stored) - set(rendered) == {"Role/gpu-operator", "RoleBinding/gpu-operator"}
    for key, doc in rendered.items():
        assert stored[key] == doc, key
    assert stored["RoleBinding/gpu-operator"]["subjects"] == rendered["ClusterRoleBinding/gpu-operator"]["subjects"]
    # 26.3.0: the same chart at its own version (operator image, validator, labels)
    older = manifest_objects(releases[1]["manifest"])
    assert set(older) == set(stored)
    assert older["ClusterPolicy/cluster-policy"]["spec"]["validator"]["version"] == "v26.3.0"
    assert older["ServiceAccount/gpu-operator"]["metadata"]["labels"]["helm.sh/chart"] == "gpu-operator-v26.3.0"
    assert {k: v for k, v in older["ClusterPolicy/cluster-policy"]["spec"].items() if k != "validator"} == \
        {k: v for k, v in stored["ClusterPolicy/cluster-policy"]["spec"].items() if k != "validator"}
