# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""crd_prepare: CRDs collected from a chart tree and archive (subcharts, templated templates),
dedupe and selection, the diff without server-populated fields, 409 conflict parsing; and the two
k8s_client additions it needs (a request's content type, the Status body on K8sApiError)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import io
import json
import os
import tarfile
import textwrap

import pytest

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.phases import crd_prepare as cp
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster.client import K8sApiError, K8sReader, RetryPolicy


def crd_yaml(plural, group, kind, description="v1", extra=""):
    return textwrap.dedent("""\
        apiVersion: apiextensions.k8s.io/v1
        kind: CustomResourceDefinition
        metadata:
          name: {plural}.{group}
          annotations: {{controller-gen.kubebuilder.io/version: v0.16.1}}
          creationTimestamp: null
        spec:
          group: {group}
          scope: Cluster
          names: {{plural: {plural}, singular: {singular}, kind: {kind}, listKind: {kind}List}}
          versions:
            - name: v1
              served: true
              storage: true
              schema:
                openAPIV3Schema:
                  type: object
                  description: {description}
        {extra}""").format(plural=plural, group=group, kind=kind, singular=kind.lower(), description=description,
                           extra=extra)


TEMPLATED = textwrap.dedent("""\
    {{- if .Values.computeDomains.enabled }}
    apiVersion: apiextensions.k8s.io/v1
    kind: CustomResourceDefinition
    metadata:
      name: computedomains.resource.nvidia.com
      labels:
        {{- include "gpu-operator.labels" . | nindent 4 }}
    spec:
      group: resource.nvidia.com
    ---
    apiVersion: apiextensions.k8s.io/v1
    kind: CustomResourceDefinition
    metadata:
      name: {{ .Values.cliqueCrdName }}
    spec:
      group: resource.nvidia.com
    {{- end }}
    """)

DEPLOYMENT = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: gpu-operator}\nspec: {}\n"


def chart_files(nested_tgz=True):
    """An operator-shaped chart: crds/, a static CRD template, a templated one, a partial, NFD as a
    subchart directory and a second subchart as a nested archive."""
    files = {
        "Chart.yaml": "apiVersion: v2\nname: gpu-operator\nversion: 26.7.0\n",
        "values.yaml": "computeDomains: {enabled: true}\n",
        "crds/nvidia.com_clusterpolicies.yaml": crd_yaml("clusterpolicies", "nvidia.com", "ClusterPolicy"),
        "crds/nvidia.com_nvidiadrivers.yaml": crd_yaml("nvidiadrivers", "nvidia.com", "NVIDIADriver"),
        "crds/README.md": "not a manifest\n",
        "templates/gpuclusters-crd.yaml": crd_yaml("gpuclusters", "nvidia.com", "GPUCluster"),
        "templates/computedomain-crds.yaml": TEMPLATED,
        "templates/operator.yaml": DEPLOYMENT,
        "templates/_helpers.tpl": "{{- define \"x\" }}kind: CustomResourceDefinition{{ end }}\n",
        "charts/node-feature-discovery/Chart.yaml": "apiVersion: v2\nname: node-feature-discovery\nversion: 0.18.0\n",
        "charts/node-feature-discovery/crds/nfd-api-crds.yaml": (
            crd_yaml("nodefeatures", "nfd.k8s-sigs.io", "NodeFeature") + "---\n"
            + crd_yaml("nodefeaturerules", "nfd.k8s-sigs.io", "NodeFeatureRule")),
    }
    if nested_tgz:
        files["charts/extra-0.1.0.tgz"] = tgz({
            "Chart.yaml": "apiVersion: v2\nname: extra\nversion: 0.1.0\n",
            "crds/widgets.yaml": crd_yaml("widgets", "extra.example.com", "Widget"),
        }, "extra")
    return files


def tgz(files, top):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as archive:
        for rel, data in sorted(files.items()):
            data = data if isinstance(data, bytes) else data.encode()
            info = tarfile.TarInfo("%s/%s" % (top, rel))
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def write_tree(root, files):
    for rel, data in files.items():
        path = os.path.join(str(root), rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as handle:
            handle.write(data if isinstance(data, bytes) else data.encode())


EXPECTED = [
    ("gpu-operator/crds/nvidia.com_clusterpolicies.yaml", "clusterpolicies.nvidia.com"),
    ("gpu-operator/crds/nvidia.com_nvidiadrivers.yaml", "nvidiadrivers.nvidia.com"),
    ("gpu-operator/templates/gpuclusters-crd.yaml", "gpuclusters.nvidia.com"),
    ("gpu-operator/charts/extra/crds/widgets.yaml", "widgets.extra.example.com"),
    ("gpu-operator/charts/node-feature-discovery/crds/nfd-api-crds.yaml", "nodefeatures.nfd.k8s-sigs.io"),
    ("gpu-operator/charts/node-feature-discovery/crds/nfd-api-crds.yaml", "nodefeaturerules.nfd.k8s-sigs.io"),
]
EXPECTED_TEMPLATED = [
    {"path": "gpu-operator/templates/computedomain-crds.yaml", "name": "computedomains.resource.nvidia.com"},
    {"path": "gpu-operator/templates/computedomain-crds.yaml", "name": None},
]


def found(out):
    return [(source, crd["metadata"]["name"]) for source, crd in out["crds"]]


def test_collect_from_a_chart_tree(tmp_path):
    write_tree(tmp_path / "gpu-operator", chart_files())
    out = cp.collect_chart(str(tmp_path / "gpu-operator"))
    assert out["chart"] == "gpu-operator"
    assert found(out) == EXPECTED
    assert out["templated"] == EXPECTED_TEMPLATED


def test_collect_from_a_chart_archive_with_subcharts(tmp_path):
    path = tmp_path / "gpu-operator-v26.7.0.tgz"
    path.write_bytes(tgz(chart_files(), "gpu-operator"))
    out = cp.collect_chart(str(path))
    assert found(out) == EXPECTED
    assert out["templated"] == EXPECTED_TEMPLATED


def test_archive_members_outside_the_chart_are_ignored(tmp_path):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as archive:
        for name, text in (("c/Chart.yaml", "name: c\n"), ("c/crds/a.yaml", crd_yaml("as", "x.io", "A")),
                           ("c/../evil/crds/b.yaml", crd_yaml("bs", "x.io", "B")),
                           ("other/crds/c.yaml", crd_yaml("cs", "x.io", "C"))):
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
        link = tarfile.TarInfo("c/crds/link.yaml")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        archive.addfile(link)
    path = tmp_path / "c.tgz"
    path.write_bytes(buf.getvalue())
    assert [name for _s, name in found(cp.collect_chart(str(path)))] == ["as.x.io"]


@pytest.mark.parametrize("case, files, message", [
    ("not yaml", {"crds/a.yaml": "kind: [unclosed\n"}, "c/crds/a.yaml: not YAML"),
    ("v1beta1", {"crds/a.yaml": crd_yaml("as", "x.io", "A").replace("/v1\n", "/v1beta1\n", 1)},
     "c/crds/a.yaml: CRD as.x.io has apiVersion 'apiextensions.k8s.io/v1beta1'"),
    ("no name", {"crds/a.yaml": "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n"},
     "a CustomResourceDefinition without metadata.name"),
])
def test_bad_chart_files_are_named(tmp_path, case, files, message):
    files = dict(files, **{"Chart.yaml": "name: c\n"})
    write_tree(tmp_path / "c", files)
    with pytest.raises(cp.CrdSourceError) as caught:
        cp.collect_chart(str(tmp_path / "c"))
    assert message in str(caught.value), case


def test_missing_or_wrong_chart_paths(tmp_path):
    with pytest.raises(cp.CrdSourceError, match="no such chart"):
        cp.collect_chart(str(tmp_path / "absent"))
    with pytest.raises(cp.CrdSourceError, match="must hold Chart.yaml"):
        cp.collect_chart(str(tmp_path))
    (tmp_path / "x.tgz").write_bytes(b"not an archive")
    with pytest.raises(cp.CrdSourceError, match="not a chart archive"):
        cp.collect_chart(str(tmp_path / "x.tgz"))


def test_manifests_dedupe_and_select():
    rendered = "---\n" + crd_yaml("clusterpolicies", "nvidia.com", "ClusterPolicy") + "---\n" + DEPLOYMENT + "---\n" + \
        crd_yaml("computedomains", "resource.nvidia.com", "ComputeDomain") + "---\n# empty\n"
    entries = [("chart/crds/cp.yaml", cp.crds_of_text(crd_yaml("clusterpolicies", "nvidia.com", "ClusterPolicy"), "x")[0][1])]
    entries += cp.collect_manifests(rendered)
    crds = cp.dedupe(entries)
    assert [(c["name"], c["sources"]) for c in crds] == [
        ("clusterpolicies.nvidia.com", ["chart/crds/cp.yaml", "manifests"]),
        ("computedomains.resource.nvidia.com", ["manifests"])]
    # the apply body has no server-populated fields (controller-gen's creationTimestamp: null)
    assert "creationTimestamp" not in crds[0]["object"]["metadata"]
    assert crds[0]["object"]["metadata"]["annotations"] == {"controller-gen.kubebuilder.io/version": "v0.16.1"}
    assert [c["name"] for c in cp.select(crds, ["resource.nvidia.com"], [])] == ["computedomains.resource.nvidia.com"]
    assert [c["name"] for c in cp.select(crds, [], ["*.nvidia.com"])] == []
    assert [c["name"] for c in cp.select(crds, ["clusterpolicies.nvidia.com"], [])] == ["clusterpolicies.nvidia.com"]
    other = cp.crds_of_text(crd_yaml("clusterpolicies", "nvidia.com", "ClusterPolicy", description="v2"), "o")[0][1]
    differing = entries + [("other.yaml", other)]
    with pytest.raises(cp.CrdSourceError, match="clusterpolicies.nvidia.com is defined differently in "
                                                "chart/crds/cp.yaml and other.yaml"):
        cp.dedupe(differing)


def served(obj):
    """``obj`` as an API server returns it: server fields, defaults, status, Helm's labels."""
    live = copy.deepcopy(obj)
    live["metadata"].update(uid="u-1", resourceVersion="41", generation=3, creationTimestamp="2026-01-01T00:00:00Z",
                            managedFields=[{"manager": "helm", "operation": "Update", "apiVersion": "apiextensions.k8s.io/v1",
                                            "time": "2026-01-01T00:00:00Z", "fieldsType": "FieldsV1",
                                            "fieldsV1": {"f:spec": {}}}])
    live["status"] = {"conditions": [{"type": "Established", "status": "True", "reason": "InitialNamesAccepted"}],
                      "storedVersions": ["v1"]}
    return live


def test_diff_ignores_server_fields_and_names_paths_as_the_server_does():
    desired = cp.crds_of_text(crd_yaml("widgets", "x.io", "Widget"), "w")[0][1]
    live = served(desired)
    assert cp.diff_objects(live, desired) == []
    changed = copy.deepcopy(desired)
    version = changed["spec"]["versions"][0]
    version["schema"]["openAPIV3Schema"]["description"] = "v2"
    version["schema"]["openAPIV3Schema"]["properties"] = {"spec": {"type": "object"}}
    changed["spec"]["versions"].append({"name": "v2", "served": True, "storage": False})
    changed["metadata"]["annotations"]["meta.helm.sh/release-name"] = "gpu-operator"
    del changed["spec"]["scope"]
    assert cp.diff_objects(live, changed) == [
        {"path": '.metadata.annotations["meta.helm.sh/release-name"]', "change": "added"},
        {"path": ".spec.scope", "change": "removed"},
        {"path": '.spec.versions[name="v1"].schema.openAPIV3Schema.description', "change": "changed"},
        {"path": '.spec.versions[name="v1"].schema.openAPIV3Schema.properties', "change": "added"},
        {"path": '.spec.versions[name="v2"]', "change": "added"},
    ]
    assert cp.diff_objects(None, desired) == [{"path": ".", "change": "added"}]
    assert cp.diff_objects({"a": [1, 2]}, {"a": [1, 2, 3]}) == [{"path": ".a", "change": "changed"}]
    assert cp.diff_objects({"a": [{"name": "x"}, {"name": "y"}]}, {"a": [{"name": "y"}, {"name": "x"}]}) == [
        {"path": ".a", "change": "reordered"}]


def test_same_state_needs_the_same_object_and_ownership():
    desired = cp.crds_of_text(crd_yaml("widgets", "x.io", "Widget"), "w")[0][1]
    live = served(desired)
    preview = copy.deepcopy(live)
    preview["metadata"]["managedFields"][0]["time"] = "2026-02-02T00:00:00Z"   # a new time only
    preview["status"]["conditions"][0]["lastTransitionTime"] = "2026-02-02T00:00:00Z"
    assert cp.same_state(live, preview)
    preview["metadata"]["managedFields"].append({"manager": "dra-gate", "operation": "Apply", "fieldsV1": {}})
    assert not cp.same_state(live, preview)     # the apply would add an owner: a write
    assert cp.managers(preview) == ["dra-gate (Apply)", "helm (Update)"]
    other = served(desired)
    other["spec"]["scope"] = "Namespaced"
    assert not cp.same_state(live, other)


FIELD = '.spec.versions[name="v1"].schema.openAPIV3Schema.properties.spec.description'


def test_parse_conflicts_from_status_causes():
    status = {"kind": "Status", "code": 409, "reason": "Conflict",
              "message": "Apply failed with 3 conflicts: ...",
              "details": {"causes": [
                  {"reason": "FieldManagerConflict", "message": 'conflict with "helm" using apiextensions.k8s.io/v1',
                   "field": FIELD},
                  {"reason": "FieldManagerConflict", "message": 'conflict with "helm" using apiextensions.k8s.io/v1',
                   "field": ".spec.scope"},
                  {"reason": "FieldManagerConflict",
                   "message": 'conflict with "kube-controller" with subresource "status" using apiextensions.k8s.io/v1',
                   "field": ".status.x"},
                  {"reason": "FieldValueInvalid", "message": "unrelated", "field": ".spec"}]}}
    conflicts = cp.parse_conflicts(status)
    assert conflicts == [
        {"manager": "helm", "subresource": "", "api_version": "apiextensions.k8s.io/v1", "fields": [FIELD, ".spec.scope"]},
        {"manager": "kube-controller", "subresource": "status", "api_version": "apiextensions.k8s.io/v1",
         "fields": [".status.x"]}]
    assert cp.conflict_text(conflicts) == ('"helm": %s, .spec.scope; "kube-controller" (subresource status): .status.x'
                                           % FIELD)


def test_parse_conflicts_from_the_message_when_no_causes():
    single = 'Apply failed with 1 conflict: conflict with "helm" using apiextensions.k8s.io/v1: ' + FIELD
    assert cp.parse_conflicts(None, single + " (Conflict)") == [
        {"manager": "helm", "subresource": "", "api_version": "apiextensions.k8s.io/v1", "fields": [FIELD]}]
    assert cp.parse_conflicts({"message": single})[0]["fields"] == [FIELD]
    multi = ('Apply failed with 2 conflicts: conflicts with "helm" using v1:\n- .data.mode\n- .data.level\n'
             'conflicts with "kubectl-label" using v1:\n- .metadata.labels.tier')
    assert cp.parse_conflicts({"message": multi}) == [
        {"manager": "helm", "subresource": "", "api_version": "v1", "fields": [".data.mode", ".data.level"]},
        {"manager": "kubectl-label", "subresource": "", "api_version": "v1", "fields": [".metadata.labels.tier"]}]
    assert cp.parse_conflicts({"message": "something else"}) == []


def test_established_and_yaml():
    desired = cp.crds_of_text(crd_yaml("widgets", "x.io", "Widget"), "w")[0][1]
    live = served(desired)
    assert cp.established(live) == (True, ["Established=True: InitialNamesAccepted"])
    assert cp.established(desired) == (False, [])
    live["status"]["conditions"].append({"type": "NamesAccepted", "status": "False", "reason": "NameConflict"})
    assert cp.established(live)[0] is False
    text = cp.to_yaml(live)
    assert "managedFields" not in text and "status" not in text and "resourceVersion" not in text
    assert cp.to_yaml(None) == ""
    assert cp.safe_file_name("a.b/c d") == "a.b_c_d"


# -- the k8s_client additions: content type and the Status body -------------------------------------------------

class Answer:
    def __init__(self, status, doc):
        self.status, self.data, self.headers = status, json.dumps(doc).encode(), {}

    def read(self):
        return self.data


class Client:
    def __init__(self, answers):
        self.answers, self.sent = list(answers), []

    def param_serialize(self, method, resource_path, query_params=None, header_params=None, body=None, auth_settings=None):
        return method, resource_path, header_params, body, None

    def call_api(self, method, url, header_params=None, body=None, post_params=None, _request_timeout=None):
        self.sent.append((method, url, dict(header_params), body))
        return self.answers.pop(0)


def test_request_sends_the_content_type_and_keeps_the_status_body():
    conflict = {"kind": "Status", "code": 409, "reason": "Conflict", "message": "Apply failed with 1 conflict: x",
                "details": {"causes": [{"reason": "FieldManagerConflict", "message": 'conflict with "helm" using v1',
                                        "field": ".data.mode"}]}}
    client = Client([Answer(200, {"kind": "ConfigMap"}), Answer(409, conflict), Answer(200, {})])
    reader = K8sReader(client, policy=RetryPolicy(sleep=lambda s: None))
    body = json.dumps({"kind": "ConfigMap"})
    assert reader.request("PATCH", "/api/v1/x", [("fieldManager", "m")], body=body, content_type=cp.APPLY_PATCH) == \
        {"kind": "ConfigMap"}
    with pytest.raises(K8sApiError) as caught:
        reader.request("PATCH", "/api/v1/x", body=body, content_type=cp.APPLY_PATCH)
    assert caught.value.status == 409 and caught.value.status_doc == conflict
    assert cp.parse_conflicts(caught.value.status_doc, caught.value.reason)[0]["fields"] == [".data.mode"]
    reader.request("PUT", "/api/v1/x", body={"a": 1})
    assert [s[2].get("Content-Type") for s in client.sent] == [cp.APPLY_PATCH, cp.APPLY_PATCH, "application/json"]
    assert client.sent[0][3] == body


# -- the module's plan (dry runs first) with a fake API: force=false writes nothing ------------------------------

class FakeApi:
    """CRD reads and applies: ``live`` by name; an apply of a name in ``owned`` without force is a 409."""

    def __init__(self, live, owned):
        self.live, self.owned, self.calls = live, owned, []

    def get(self, path, query=None):
        name = path.rsplit("/", 1)[1]
        if name not in self.live:
            raise K8sApiError("GET " + path, 404, "not found")
        return copy.deepcopy(self.live[name])

    def request(self, method, path, query=None, body=None, content_type=None):
        self.calls.append((method, path, list(query or []), content_type))
        name = path.rsplit("/", 1)[1]
        query = dict(query or [])
        if name in self.owned and query.get("force") != "true":
            raise K8sApiError("PATCH " + path, 409, "Apply failed with 1 conflict", status_doc={"details": {"causes": [
                {"reason": "FieldManagerConflict", "message": 'conflict with "helm" using apiextensions.k8s.io/v1',
                 "field": ".spec.scope"}]}})
        obj = served(json.loads(body))
        obj["metadata"]["managedFields"].append({"manager": query["fieldManager"], "operation": "Apply"})
        return obj


def module_params(**extra):
    params = dict(chart=None, manifests=None, include=[], exclude=[], field_manager="dra-gate", force_conflicts=True,
                  templated_crds="fail", establish_timeout=5.0)
    params.update(extra)
    return params


def test_module_plan_refuses_every_conflict_before_any_write():
    from ansible_collections.gpufleet.dra_gate.plugins.modules import crd_prepare as module

    text = crd_yaml("widgets", "x.io", "Widget") + "---\n" + crd_yaml("gizmos", "x.io", "Gizmo")
    crds, templated = module.gather(module_params(manifests=text))
    assert [c["name"] for c in crds] == ["widgets.x.io", "gizmos.x.io"] and templated == []
    api = FakeApi({"widgets.x.io": served(crds[0]["object"])}, owned={"widgets.x.io"})
    with pytest.raises(module.Refused) as caught:
        module.plan(api, module_params(force_conflicts=False), crds)
    assert 'widgets.x.io: "helm": .spec.scope' in str(caught.value)
    assert all(("dryRun", "All") in call[2] for call in api.calls)        # dry runs only
    assert all(call[3] == cp.APPLY_PATCH for call in api.calls)
    planned = module.plan(api, module_params(), crds)
    assert [(p["crd"]["name"], p["action"]) for p in planned] == [("widgets.x.io", "updated"), ("gizmos.x.io", "created")]
    assert planned[0]["conflicts"][0]["manager"] == "helm"
    assert all(("dryRun", "All") in call[2] for call in api.calls)


def test_module_gather_reports_templated_crds(tmp_path):
    from ansible_collections.gpufleet.dra_gate.plugins.modules import crd_prepare as module

    write_tree(tmp_path / "gpu-operator", chart_files(nested_tgz=False))
    rendered = crd_yaml("computedomains", "resource.nvidia.com", "ComputeDomain")
    crds, templated = module.gather(module_params(chart=str(tmp_path / "gpu-operator"), manifests=rendered))
    assert "computedomains.resource.nvidia.com" in [c["name"] for c in crds]
    assert [(t["name"], t["rendered"]) for t in templated] == [("computedomains.resource.nvidia.com", True), (None, None)]
    crds, templated = module.gather(module_params(chart=str(tmp_path / "gpu-operator"), exclude=["nfd.k8s-sigs.io"]))
    assert [c["name"] for c in crds] == ["clusterpolicies.nvidia.com", "nvidiadrivers.nvidia.com", "gpuclusters.nvidia.com"]
    assert [t["rendered"] for t in templated] == [False, None]
    crds, templated = module.gather(module_params(chart=str(tmp_path / "gpu-operator"), exclude=["resource.nvidia.com"]))
    assert [(t["name"], t["rendered"]) for t in templated] == [(None, None)]     # a templated name is never filtered
    with pytest.raises(cp.CrdSourceError, match="no CustomResourceDefinition found in manifests"):
        module.gather(module_params(manifests=DEPLOYMENT))
