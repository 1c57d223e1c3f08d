# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Contract: the Helm v4 Go library (helm-python-sdk) against the lab: install with a CRD, upgrade,
history, values, rollback, uninstall, with kstatus ``watcher`` waits."""

from __future__ import annotations

import pytest

helm_python = pytest.importorskip("helm_python", reason="helm-python-sdk is not installed")

# The chart is written at test time: Helm templates are not YAML, and yamllint (sanity) reads every
# .yaml file in the tree. A CRD in crds/, a ConfigMap and a Deployment, as the Helm contract needs.
CHART_FILES = {
    "Chart.yaml": """\
apiVersion: v2
name: tiny
description: A chart with a CRD, a ConfigMap and a Deployment, for the lab's Helm contract tests.
type: application
version: 0.1.0
appVersion: "1.0.0"
""",
    "crds/gadgets.example.com.yaml": """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
""",
    "templates/configmap.yaml": """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-settings
data:
  message: {{ .Values.message | quote }}
""",
    "templates/deployment.yaml": """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-web
spec:
  replicas: {{ .Values.replicas }}
  selector:
    matchLabels: {app: {{ .Release.Name }}-web}
  template:
    metadata:
      labels: {app: {{ .Release.Name }}-web}
    spec:
      containers:
        - name: web
          image: {{ .Values.image }}
""",
    "values.yaml": """\
replicas: 2
image: nginx:1.27
message: hello
""",
}


@pytest.fixture(scope="module")
def chart(tmp_path_factory):
    root = tmp_path_factory.mktemp("chart") / "tiny"
    for name, text in CHART_FILES.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return str(root)


@pytest.fixture(scope="module")
def helm(lab):
    return helm_python.Config(kubeconfig_path=lab.kubeconfig, namespace="demo", storage_driver="secret")


def _status(release: dict) -> str:
    """A history entry's status (``helm history -o json`` form, or a release's ``info.status``)."""
    return str(release.get("status") or (release.get("info") or {}).get("status"))


def test_release_lifecycle(lab, helm, chart):
    from kubernetes import client, config
    api = config.new_client_from_config(config_file=lab.kubeconfig)
    core, apps = client.CoreV1Api(api), client.AppsV1Api(api)

    helm.install(chart, "tiny", {"message": "one"}, create_namespace=True, wait="watcher", timeout=120)
    assert core.read_namespaced_config_map("tiny-settings", "demo").data == {"message": "one"}
    dep = apps.read_namespaced_deployment("tiny-web", "demo")
    assert dep.status.available_replicas == 2
    crd = client.ApiextensionsV1Api(api).read_custom_resource_definition("gadgets.example.com")
    assert any(c.type == "Established" for c in crd.status.conditions)

    helm.upgrade(chart, "tiny", {"message": "two", "replicas": 3}, wait="watcher", timeout=120)
    assert core.read_namespaced_config_map("tiny-settings", "demo").data == {"message": "two"}
    assert apps.read_namespaced_deployment("tiny-web", "demo").status.available_replicas == 3

    history = helm.history("tiny")
    statuses = [_status(r) for r in history]
    assert len(history) == 2
    assert statuses == ["superseded", "deployed"], history

    values = helm.get_values("tiny")
    assert "two" in repr(values)

    helm.rollback("tiny", version=1, wait="watcher", timeout=120)
    assert core.read_namespaced_config_map("tiny-settings", "demo").data == {"message": "one"}
    assert len(helm.history("tiny")) == 3

    secrets = core.list_namespaced_secret("demo", label_selector="owner=helm,name=tiny").items
    assert sorted(s.metadata.labels["version"] for s in secrets) == ["1", "2", "3"]

    helm.uninstall("tiny", wait="watcher", timeout=120)
    assert core.list_namespaced_secret("demo", label_selector="owner=helm,name=tiny").items == []
    assert not core.list_namespaced_config_map("demo", field_selector="metadata.name=tiny-settings").items
    # Helm keeps CRDs on uninstall.
    client.ApiextensionsV1Api(api).read_custom_resource_definition("gadgets.example.com")
