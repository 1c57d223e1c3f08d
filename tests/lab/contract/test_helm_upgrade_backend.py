# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Contract: the one Helm write interface (helm_library.open_backend -> HelmLibrary, since no helm
binary exists here) against the lab: install a small chart, upgrade it with values merged explicitly
(helm_values.plan: the diff recorded), a dry-run=server upgrade and rollback that change nothing
(resourceVersions and the release's storage Secrets unchanged), a rollback to revision 1, and the
chart's CRDs and manifest rendered the same way the release applies them.

The chart is written at test time (Helm templates are not YAML; yamllint reads every .yaml file).
Its ConfigMap holds ``toJson .Values``: the values Helm computed from the chart's defaults and the
values the backend passed, so what Helm made of the explicit merge is checked, not assumed.
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("helm_python", reason="helm-python-sdk is not installed")

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.wrappers import helm_library
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.wrappers.helm_cli import (  # noqa: E402
    RetryingHelm,
    release_summary,
)
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.phases.helm_values import plan  # noqa: E402
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster.client import RetryPolicy  # noqa: E402

RELEASE, NAMESPACE = "widget", "upgrade-demo"
SUMMARY_KEYS = sorted(release_summary(None, None, None, None, None, None, None, None))

CHART_FILES = {
    "Chart.yaml": """\
apiVersion: v2
name: widget
description: A chart with nested values, a CRD, a ConfigMap and a Deployment, for the upgrade backend contract.
type: application
version: 1.2.0
appVersion: "1.2.0"
""",
    "crds/widgets.example.com.yaml": """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
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
  name: {{ .Release.Name }}-values
data:
  values.json: {{ toJson .Values | quote }}
""",
    "templates/deployment.yaml": """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-operator
spec:
  replicas: {{ .Values.replicas }}
  selector:
    matchLabels: {app: {{ .Release.Name }}-operator}
  template:
    metadata:
      labels: {app: {{ .Release.Name }}-operator}
    spec:
      containers:
        - name: operator
          image: "{{ .Values.driver.repository }}/driver:{{ .Values.driver.version }}"
""",
    "values.yaml": """\
replicas: 1
driver:
  repository: nvcr.io/nvidia
  version: "580.95.05"
toolkit:
  env: []
devicePlugin:
  enabled: true
""",
}

# What the release was installed with (the "captured user values") and the operator's overrides.
USER_VALUES = {"driver": {"version": "580.105.08"}, "toolkit": {"env": [{"name": "A", "value": "1"}]},
               "extra": {"note": "drop me"}}
OVERRIDES = {"driver": {"version": "580.126.16"}, "toolkit": {"env": [{"name": "B", "value": "2"}]}, "extra": None,
             "devicePlugin": {"args": ["--fail-on-init-error=false"]}, "replicas": 2}


@pytest.fixture(scope="module")
def chart(tmp_path_factory):
    root = tmp_path_factory.mktemp("chart") / "widget"
    for name, text in CHART_FILES.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return str(root)


@pytest.fixture(scope="module")
def backend(lab):
    kind, opened = helm_library.open_backend(NAMESPACE, kubeconfig=lab.kubeconfig, which=lambda name: None)
    assert kind == "library" and opened.kind == "library"
    yield RetryingHelm(opened, RetryPolicy(deadline=30), (helm_library.HelmLibraryCallError,), NAMESPACE, RELEASE)
    opened.close()


@pytest.fixture(scope="module")
def kube(lab):
    from kubernetes import client, config
    api = config.new_client_from_config(config_file=lab.kubeconfig)
    return client.CoreV1Api(api), client.AppsV1Api(api), client.ApiextensionsV1Api(api)


def _state(kube):
    """resourceVersions of the release's objects and its storage Secrets (what a dry run must not change)."""
    core, apps, ext = kube
    secrets = core.list_namespaced_secret(NAMESPACE, label_selector="owner=helm,name=%s" % RELEASE).items
    return {
        "configmap": core.read_namespaced_config_map(RELEASE + "-values", NAMESPACE).metadata.resource_version,
        "deployment": apps.read_namespaced_deployment(RELEASE + "-operator", NAMESPACE).metadata.resource_version,
        "crd": ext.read_custom_resource_definition("widgets.example.com").metadata.resource_version,
        "secrets": sorted((s.metadata.name, s.metadata.resource_version) for s in secrets),
    }


def _computed(kube):
    core = kube[0]
    return json.loads(core.read_namespaced_config_map(RELEASE + "-values", NAMESPACE).data["values.json"])


def test_install_upgrade_dry_run_and_rollback(backend, chart, kube):
    installed = backend.install(RELEASE, chart, USER_VALUES, create_namespace=True, timeout=120,
                                description="lab install")
    assert sorted(installed) == SUMMARY_KEYS
    assert (installed["revision"], installed["status"], installed["chart"], installed["app_version"],
            installed["description"], installed["dry_run"]) == (1, "deployed", "widget-1.2.0", "1.2.0", "lab install", False)

    captured = backend.get_values(RELEASE, 1)
    assert captured == USER_VALUES
    upgrade = plan(captured, OVERRIDES)
    assert upgrade["values"] == {"driver": {"version": "580.126.16"}, "toolkit": {"env": [{"name": "B", "value": "2"}]},
                                 "devicePlugin": {"args": ["--fail-on-init-error=false"]}, "replicas": 2}
    assert upgrade["diff"] == [
        {"path": "devicePlugin", "before": None, "after": {"args": ["--fail-on-init-error=false"]}, "change": "added"},
        {"path": "driver.version", "before": "580.105.08", "after": "580.126.16", "change": "changed"},
        {"path": "extra", "before": {"note": "drop me"}, "after": None, "change": "removed"},
        {"path": "replicas", "before": None, "after": 2, "change": "added"},
        {"path": "toolkit.env", "before": [{"name": "A", "value": "1"}], "after": [{"name": "B", "value": "2"}],
         "change": "changed"},
    ]
    assert '-    "version": "580.105.08"' in upgrade["diff_text"] and '+    "version": "580.126.16"' in upgrade["diff_text"]

    # check mode: a server-side dry run stores nothing and changes no object
    before = _state(kube)
    dry = backend.upgrade(RELEASE, chart, upgrade["values"], dry_run="server", timeout=120)
    assert sorted(dry) == SUMMARY_KEYS
    assert (dry["revision"], dry["status"], dry["description"], dry["dry_run"]) == (
        2, "pending-upgrade", "Dry run complete", True)
    assert _state(kube) == before
    assert [e["revision"] for e in backend.history(RELEASE)] == [1]

    upgraded = backend.upgrade(RELEASE, chart, upgrade["values"], timeout=120, description="hop 26.7")
    assert (upgraded["revision"], upgraded["status"], upgraded["description"], upgraded["dry_run"]) == (
        2, "deployed", "hop 26.7", False)
    # no silent reuse: the release's user values are exactly the merged ones ...
    assert backend.get_values(RELEASE, 2) == upgrade["values"]
    # ... and Helm coalesced them over the chart's defaults: maps merged, lists replaced, null dropped
    assert _computed(kube) == {"replicas": 2, "driver": {"repository": "nvcr.io/nvidia", "version": "580.126.16"},
                               "toolkit": {"env": [{"name": "B", "value": "2"}]},
                               "devicePlugin": {"enabled": True, "args": ["--fail-on-init-error=false"]}}
    core, apps, _ext = kube
    deployment = apps.read_namespaced_deployment(RELEASE + "-operator", NAMESPACE)
    assert deployment.spec.replicas == 2
    assert deployment.spec.template.spec.containers[0].image == "nvcr.io/nvidia/driver:580.126.16"

    # the same for a rollback: a dry run changes nothing
    before = _state(kube)
    dry_back = backend.rollback(RELEASE, 1, dry_run="server", timeout=120)
    assert (dry_back["revision"], dry_back["status"], dry_back["dry_run"]) == (2, "deployed", True)
    assert _state(kube) == before

    rolled = backend.rollback(RELEASE, 1, timeout=120)
    assert sorted(rolled) == SUMMARY_KEYS
    assert (rolled["revision"], rolled["status"], rolled["description"], rolled["chart"]) == (
        3, "deployed", "Rollback to 1", "widget-1.2.0")
    assert backend.get_values(RELEASE, 3) == USER_VALUES
    assert _computed(kube)["driver"] == {"repository": "nvcr.io/nvidia", "version": "580.105.08"}
    assert _computed(kube)["extra"] == {"note": "drop me"}
    assert apps.read_namespaced_deployment(RELEASE + "-operator", NAMESPACE).spec.replicas == 1
    assert [(e["revision"], e["status"]) for e in backend.history(RELEASE)] == [
        (1, "superseded"), (2, "superseded"), (3, "deployed")]
    assert backend.retries == 0
    assert core.list_namespaced_secret(NAMESPACE, label_selector="owner=helm,name=%s" % RELEASE).items


def test_render_and_crds_match_what_the_release_applied(backend, chart, kube):
    crds = backend.render_crds(chart)
    assert [(o["kind"], o["metadata"]["name"]) for o in crds] == [("CustomResourceDefinition", "widgets.example.com")]
    live = kube[2].read_custom_resource_definition("widgets.example.com")
    assert live.spec.group == crds[0]["spec"]["group"] and live.spec.names.kind == crds[0]["spec"]["names"]["kind"]

    rendered = backend.render(RELEASE, chart, USER_VALUES, include_crds=True)
    assert [(o["kind"], o["metadata"]["name"]) for o in rendered["objects"]] == [
        ("ConfigMap", "widget-values"), ("CustomResourceDefinition", "widgets.example.com"),
        ("Deployment", "widget-operator")]
    assert rendered["manifest"].startswith("---\n# Source: widget/crds/widgets.example.com.yaml\n")
    config_map = [o for o in rendered["objects"] if o["kind"] == "ConfigMap"][0]
    assert json.loads(config_map["data"]["values.json"]) == _computed(kube)  # revision 3 = rendered from USER_VALUES
    stored = backend.get_manifest(RELEASE, 3)
    assert "# Source: widget/templates/deployment.yaml" in stored and "580.105.08" in stored
