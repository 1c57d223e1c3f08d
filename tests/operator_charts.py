# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPU Operator-shaped Helm charts for the lab, written at test time.

Helm templates are not YAML and yamllint (sanity) reads every ``.yaml`` in the tree, so no chart file
is checked in: ``write_chart(directory, version)`` writes one and ``chart_archive(directory, version)``
packs it as Helm does (``gpu-operator-v<version>.tgz``, top folder ``gpu-operator/``).

The charts are *modelled on* NVIDIA's ``deployments/gpu-operator`` (DOMAIN.md §1), kept small:

* ``Chart.yaml``: name ``gpu-operator``, version and appVersion ``v<version>`` (NVIDIA's tags), the
  ``node-feature-discovery`` dependency (condition ``nfd.enabled``) vendored under ``charts/`` with
  only its ``crds/nfd-api-crds.yaml``;
* ``values.yaml``: ``operator`` (image, ``upgradeCRD``, ``cleanupCRD``, ``defaultRuntime``),
  ``clusterPolicy.deployCR``, ``daemonsets``, ``validator``, ``driver``, ``toolkit``,
  ``devicePlugin``, ``dcgmExporter``, ``gfd``, ``nfd.enabled``, ``cdi``; 26.7.0 adds
  ``gpuCluster.deployCR: false`` and ``draDriver`` (the DRA path, off by default);
* ``crds/``: the ClusterPolicy (``nvidia.com/v1``) and NVIDIADriver (``nvidia.com/v1alpha1``) CRDs;
  26.7.0's add the fields in ``NEW_CRD_FIELDS`` and the chart also ships the GPUCluster,
  ComputeDomain and ComputeDomainClique CRDs (``crds/``, as the real 26.7.0 chart; Helm creates
  ``crds/`` on install only, and the pre-upgrade hook does not cover the ComputeDomain ones);
* ``templates/``: the operator's ServiceAccount, ClusterRole(Binding) and Deployment ``gpu-operator``
  (image from ``operator.*``, version defaulting to appVersion), the ClusterPolicy ``cluster-policy``
  rendered from the values (operand repository/image/version), the GPUCluster ``gpu-cluster`` when
  ``gpuCluster.deployCR`` (26.7.0), and the ``pre-upgrade`` CRD-upgrade hook (ServiceAccount,
  ClusterRole, ClusterRoleBinding and the Job ``gpu-operator-upgrade-crd``, ``helm.sh/hook``
  annotated, delete policy ``hook-succeeded,before-hook-creation``) when ``operator.upgradeCRD``.

Operand versions are the lab's choice (``RELEASES``), not NVIDIA's published matrix, except where
DOMAIN.md gives them for v26.7.0 (device plugin v0.20.0, toolkit v1.20.0, driver 595.91.07, DRA
driver v0.5.0). The 26.3.1 chart renders the ClusterPolicy that the ``prod-26.3-device-plugin``
scenario holds (device plugin and GFD v0.19.0, toolkit v1.19.0, driver 580.126.16).
"""

from __future__ import annotations

import gzip
import io
import os
import tarfile

import yaml

CHART = "gpu-operator"
# version: operand versions (and the NFD subchart's) the chart's values carry.
RELEASES = {
    "26.3.1": {"devicePlugin": "v0.19.0", "toolkit": "v1.19.0", "driver": "580.126.16",
               "dcgmExporter": "4.4.1-4.6.0-distroless", "nfd": "0.18.2"},
    "26.6.2": {"devicePlugin": "v0.19.2", "toolkit": "v1.19.1", "driver": "580.126.20",
               "dcgmExporter": "4.4.2-4.7.1-distroless", "nfd": "0.18.3"},
    "26.7.0": {"devicePlugin": "v0.20.0", "toolkit": "v1.20.0", "driver": "595.91.07",
               "dcgmExporter": "4.5.0-4.8.0-distroless", "nfd": "0.19.0", "draDriver": "v0.5.0"},
}
VERSIONS = tuple(RELEASES)
# CRD name: dotted spec paths that only the 26.7.0 CRDs' schemas have (lab-invented names, so that a
# test can tell an old CRD from a new one; the real 26.7.0 CRDs differ in ways not recorded here).
NEW_CRD_FIELDS = {
    "clusterpolicies.nvidia.com": ("spec.devicePlugin.labNewIn2607",),
    "nvidiadrivers.nvidia.com": ("spec.labNewIn2607",),
}
# CRDs each chart's crds/ folders hold (the chart's own and the NFD subchart's).
NFD_CRDS = ("nodefeatures.nfd.k8s-sigs.io", "nodefeaturerules.nfd.k8s-sigs.io", "nodefeaturegroups.nfd.k8s-sigs.io")
OPERATOR_CRDS = ("clusterpolicies.nvidia.com", "nvidiadrivers.nvidia.com")
DRA_CRDS = ("gpuclusters.nvidia.com", "computedomains.resource.nvidia.com", "computedomaincliques.resource.nvidia.com")
# CRDs the chart's pre-upgrade hook applies (manage-crds apply): not the ComputeDomain ones.
HOOK_CRDS = {"26.3.1": OPERATOR_CRDS + NFD_CRDS, "26.6.2": OPERATOR_CRDS + NFD_CRDS,
             "26.7.0": OPERATOR_CRDS + ("gpuclusters.nvidia.com",) + NFD_CRDS}


def normalize(version: str) -> str:
    """``v26.7.0`` / ``26.7.0`` -> ``26.7.0``; ``26.6.x`` -> the 26.6 release these charts have."""
    text = str(version).lstrip("v")
    if text == "26.6.x":
        text = "26.6.2"
    if text not in RELEASES:
        raise ValueError("no test chart for GPU Operator %r (have %s)" % (version, ", ".join(VERSIONS)))
    return text


def tag(version: str) -> str:
    """NVIDIA's tag and chart version for ``version``: ``v26.7.0``."""
    return "v" + normalize(version)


def crds(version: str) -> list:
    """CRD names the chart's ``crds/`` folders hold (chart and NFD subchart)."""
    version = normalize(version)
    return list(OPERATOR_CRDS + (DRA_CRDS if version == "26.7.0" else ()) + NFD_CRDS)


def schema_has(crd: dict, dotted: str) -> bool:
    """Whether ``crd``'s (first version's) openAPIV3Schema has the property path ``dotted``."""
    node = ((crd.get("spec") or {}).get("versions") or [{}])[0].get("schema", {}).get("openAPIV3Schema") or {}
    for part in dotted.split("."):
        node = (node.get("properties") or {}).get(part)
        if node is None:
            return False
    return True


def values(version: str) -> dict:
    """The chart's values.yaml as data."""
    version = normalize(version)
    rel = RELEASES[version]
    data = {
        "platform": {"openshift": False},
        "nfd": {"enabled": True},
        "psa": {"enabled": False},
        "cdi": {"enabled": True, "nriPluginEnabled": False},
        "sandboxWorkloads": {"enabled": False},
        "daemonsets": {"labels": {}, "annotations": {}, "priorityClassName": "system-node-critical",
                       "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                       "updateStrategy": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "1"}},
        "clusterPolicy": {"deployCR": True},
        "validator": {"repository": "nvcr.io/nvidia/cloud-native", "image": "gpu-operator-validator",
                      "version": "", "imagePullPolicy": "IfNotPresent"},
        "operator": {"repository": "nvcr.io/nvidia", "image": "gpu-operator", "version": "",
                     "imagePullPolicy": "IfNotPresent", "priorityClassName": "system-node-critical",
                     "defaultRuntime": "containerd", "upgradeCRD": True, "cleanupCRD": False,
                     "resources": {"limits": {"cpu": "500m", "memory": "350Mi"},
                                   "requests": {"cpu": "200m", "memory": "100Mi"}}},
        "driver": {"enabled": True, "nvidiaDriverCRD": {"enabled": False, "deployDefaultCR": True},
                   "repository": "nvcr.io/nvidia", "image": "driver", "version": rel["driver"],
                   "upgradePolicy": {"autoUpgrade": True, "maxParallelUpgrades": 1, "maxUnavailable": "25%"}},
        "toolkit": {"enabled": True, "repository": "nvcr.io/nvidia/k8s", "image": "container-toolkit",
                    "version": rel["toolkit"]},
        "devicePlugin": {"enabled": True, "repository": "nvcr.io/nvidia", "image": "k8s-device-plugin",
                         "version": rel["devicePlugin"]},
        "dcgmExporter": {"enabled": True, "repository": "nvcr.io/nvidia/k8s", "image": "dcgm-exporter",
                         "version": rel["dcgmExporter"]},
        "gfd": {"enabled": True, "repository": "nvcr.io/nvidia", "image": "k8s-device-plugin",
                "version": rel["devicePlugin"]},
        "node-feature-discovery": {"enableNodeFeatureApi": True},
    }
    if version == "26.7.0":
        data["gpuCluster"] = {"deployCR": False}
        data["draDriver"] = {"repository": "nvcr.io/nvidia", "image": "dra-driver-nvidia-gpu",
                             "version": rel["draDriver"], "featureGates": {},
                             "gpus": {"kubeletPlugin": {"healthcheckPort": 51516}},
                             "computeDomains": {"enabled": True, "healthcheckPort": 51515}}
    return data


def _schema(properties: dict) -> dict:
    return {"type": "object", "properties": properties}


def _component(extra: dict | None = None) -> dict:
    props = {"enabled": {"type": "boolean"}, "repository": {"type": "string"}, "image": {"type": "string"},
             "version": {"type": "string"}, "imagePullPolicy": {"type": "string"}}
    props.update(extra or {})
    return {"type": "object", "properties": props, "x-kubernetes-preserve-unknown-fields": True}


def _crd(name: str, group: str, kind: str, version: str, scope: str, spec_props: dict, short=None,
         status_props: dict | None = None) -> dict:
    plural = name.split(".", 1)[0]
    names = {"kind": kind, "listKind": kind + "List", "plural": plural, "singular": kind.lower()}
    if short:
        names["shortNames"] = list(short)
    status = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    if status_props:
        status["properties"] = status_props
    schema = _schema({"apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"},
                      "spec": {"type": "object", "properties": spec_props,
                               "x-kubernetes-preserve-unknown-fields": True},
                      "status": status})
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": name, "annotations": {"controller-gen.kubebuilder.io/version": "v0.18.0"}},
            "spec": {"group": group, "names": names, "scope": scope,
                     "versions": [{"name": version, "served": True, "storage": True,
                                   "subresources": {"status": {}}, "schema": {"openAPIV3Schema": schema}}]}}


STATE = {"state": {"type": "string", "enum": ["ignored", "ready", "notReady", "disabled"]},
         "namespace": {"type": "string"},
         "conditions": {"type": "array", "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}


def chart_crds(version: str) -> dict:
    """file name under crds/ -> CRD object, for the chart itself."""
    new = normalize(version) == "26.7.0"
    lab_field = {"type": "string", "description": "lab: a field only the 26.7.0 CRD has"}
    plugin_extra = {"labNewIn2607": lab_field} if new else {}
    policy = {"operator": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                           "properties": {"defaultRuntime": {"type": "string",
                                                             "enum": ["docker", "crio", "containerd"]}}},
              "daemonsets": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
              "driver": _component(), "toolkit": _component(), "devicePlugin": _component(plugin_extra),
              "dcgmExporter": _component(), "gfd": _component(), "validator": _component(),
              "cdi": {"type": "object", "properties": {"enabled": {"type": "boolean"}}}}
    driver = {"driverType": {"type": "string", "enum": ["gpu", "vgpu", "vgpu-host-manager"]},
              "repository": {"type": "string"}, "image": {"type": "string"}, "version": {"type": "string"},
              "nodeSelector": {"type": "object", "additionalProperties": {"type": "string"}}}
    if new:
        driver["labNewIn2607"] = lab_field
    files = {
        "nvidia.com_clusterpolicies.yaml": _crd("clusterpolicies.nvidia.com", "nvidia.com", "ClusterPolicy", "v1",
                                                "Cluster", policy, status_props=STATE),
        "nvidia.com_nvidiadrivers.yaml": _crd("nvidiadrivers.nvidia.com", "nvidia.com", "NVIDIADriver", "v1alpha1",
                                              "Cluster", driver, short=("nvd", "nvdriver", "nvdrivers"),
                                              status_props=STATE),
    }
    if new:
        files["nvidia.com_gpuclusters.yaml"] = _crd(
            "gpuclusters.nvidia.com", "nvidia.com", "GPUCluster", "v1alpha1", "Cluster",
            {"draDriver": _component(), "validator": _component(), "dcgmExporter": _component()}, short=("gc",),
            status_props=STATE)
        channel = {"type": "object", "properties": {"resourceClaimTemplate": {"type": "object"}}}
        files["resource.nvidia.com_computedomains.yaml"] = _crd(
            "computedomains.resource.nvidia.com", "resource.nvidia.com", "ComputeDomain", "v1beta1", "Namespaced",
            {"numNodes": {"type": "integer", "default": 0}, "channel": channel})
        files["resource.nvidia.com_computedomaincliques.yaml"] = _crd(
            "computedomaincliques.resource.nvidia.com", "resource.nvidia.com", "ComputeDomainClique", "v1beta1",
            "Namespaced", {"daemons": {"type": "array", "items": {"type": "object"}}})
    return files


def nfd_crds() -> list:
    """The NFD subchart's crds/nfd-api-crds.yaml documents."""
    return [_crd("nodefeatures.nfd.k8s-sigs.io", "nfd.k8s-sigs.io", "NodeFeature", "v1alpha1", "Namespaced",
                 {"labels": {"type": "object"}, "features": {"type": "object"}}),
            _crd("nodefeaturerules.nfd.k8s-sigs.io", "nfd.k8s-sigs.io", "NodeFeatureRule", "v1alpha1", "Cluster",
                 {"rules": {"type": "array", "items": {"type": "object"}}}, short=("nfr",)),
            _crd("nodefeaturegroups.nfd.k8s-sigs.io", "nfd.k8s-sigs.io", "NodeFeatureGroup", "v1alpha1",
                 "Namespaced", {"featureGroupRules": {"type": "array", "items": {"type": "object"}}}, short=("nfg",))]


HELPERS = """\
{{/* The operator image; the version defaults to the chart's appVersion. */}}
{{- define "gpu-operator.fullimage" -}}
{{- $version := .Values.operator.version | default .Chart.AppVersion -}}
{{ .Values.operator.repository }}/{{ .Values.operator.image }}:{{ $version }}
{{- end }}

{{- define "gpu-operator.labels" -}}
app.kubernetes.io/name: gpu-operator
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version | replace "+" "_" }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* An operand's repository/image/version block of the ClusterPolicy spec. */}}
{{- define "gpu-operator.operand" -}}
{{- if hasKey . "enabled" -}}
enabled: {{ .enabled }}
{{- end }}
repository: {{ .repository }}
image: {{ .image }}
version: {{ .version | quote }}
imagePullPolicy: {{ .imagePullPolicy | default "IfNotPresent" }}
{{- end }}
"""

RBAC = """\
apiVersion: v1
kind: ServiceAccount
metadata:
  name: gpu-operator
  namespace: {{ .Release.Namespace }}
  labels:
    {{- include "gpu-operator.labels" . | nindent 4 }}
    app.kubernetes.io/component: gpu-operator
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: gpu-operator
  labels:
    {{- include "gpu-operator.labels" . | nindent 4 }}
rules:
  - apiGroups: ["nvidia.com"]
    resources: ["clusterpolicies", "clusterpolicies/status", "nvidiadrivers", "nvidiadrivers/status", "gpuclusters",
                "gpuclusters/status"]
    verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
  - apiGroups: ["apps"]
    resources: ["daemonsets", "deployments"]
    verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
  - apiGroups: [""]
    resources: ["nodes", "pods", "serviceaccounts", "namespaces"]
    verbs: ["get", "list", "watch", "create", "update", "patch"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: gpu-operator
  labels:
    {{- include "gpu-operator.labels" . | nindent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: gpu-operator
subjects:
  - kind: ServiceAccount
    name: gpu-operator
    namespace: {{ .Release.Namespace }}
"""

OPERATOR = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: gpu-operator
  namespace: {{ .Release.Namespace }}
  labels:
    {{- include "gpu-operator.labels" . | nindent 4 }}
    app: gpu-operator
    app.kubernetes.io/component: gpu-operator
spec:
  replicas: 1
  selector:
    matchLabels:
      app: gpu-operator
  template:
    metadata:
      labels:
        app: gpu-operator
        app.kubernetes.io/component: gpu-operator
    spec:
      serviceAccountName: gpu-operator
      priorityClassName: {{ .Values.operator.priorityClassName }}
      tolerations:
        - key: node-role.kubernetes.io/control-plane
          operator: Exists
          effect: NoSchedule
      containers:
        - name: gpu-operator
          image: {{ include "gpu-operator.fullimage" . }}
          imagePullPolicy: {{ .Values.operator.imagePullPolicy }}
          command: ["gpu-operator"]
          args: ["--leader-elect"]
          env:
            - name: OPERATOR_NAMESPACE
              valueFrom:
                fieldRef:
                  fieldPath: metadata.namespace
          resources:
            {{- toYaml .Values.operator.resources | nindent 12 }}
"""

CLUSTER_POLICY = """\
{{- if .Values.clusterPolicy.deployCR }}
apiVersion: nvidia.com/v1
kind: ClusterPolicy
metadata:
  name: cluster-policy
  labels:
    {{- include "gpu-operator.labels" . | nindent 4 }}
    app.kubernetes.io/component: gpu-operator
spec:
  operator:
    defaultRuntime: {{ .Values.operator.defaultRuntime }}
  daemonsets:
    priorityClassName: {{ .Values.daemonsets.priorityClassName }}
    updateStrategy: {{ .Values.daemonsets.updateStrategy }}
    rollingUpdate:
      maxUnavailable: {{ .Values.daemonsets.rollingUpdate.maxUnavailable | quote }}
    tolerations:
      {{- toYaml .Values.daemonsets.tolerations | nindent 6 }}
  validator:
    repository: {{ .Values.validator.repository }}
    image: {{ .Values.validator.image }}
    version: {{ .Values.validator.version | default .Chart.AppVersion | quote }}
    imagePullPolicy: {{ .Values.validator.imagePullPolicy }}
  driver:
    {{- include "gpu-operator.operand" .Values.driver | nindent 4 }}
  toolkit:
    {{- include "gpu-operator.operand" .Values.toolkit | nindent 4 }}
  devicePlugin:
    {{- include "gpu-operator.operand" .Values.devicePlugin | nindent 4 }}
  dcgmExporter:
    {{- include "gpu-operator.operand" .Values.dcgmExporter | nindent 4 }}
  gfd:
    {{- include "gpu-operator.operand" .Values.gfd | nindent 4 }}
  cdi:
    enabled: {{ .Values.cdi.enabled }}
{{- end }}
"""

GPU_CLUSTER = """\
{{- if .Values.gpuCluster.deployCR }}
apiVersion: nvidia.com/v1alpha1
kind: GPUCluster
metadata:
  name: gpu-cluster
  labels:
    {{- include "gpu-operator.labels" . | nindent 4 }}
spec:
  draDriver:
    repository: {{ .Values.draDriver.repository }}
    image: {{ .Values.draDriver.image }}
    version: {{ .Values.draDriver.version | quote }}
    computeDomains:
      enabled: {{ .Values.draDriver.computeDomains.enabled }}
  validator:
    repository: {{ .Values.validator.repository }}
    image: {{ .Values.validator.image }}
    version: {{ .Values.validator.version | default .Chart.AppVersion | quote }}
  dcgmExporter:
    {{- include "gpu-operator.operand" .Values.dcgmExporter | nindent 4 }}
{{- end }}
"""

UPGRADE_CRD = """\
{{- if .Values.operator.upgradeCRD }}
apiVersion: v1
kind: ServiceAccount
metadata:
  name: gpu-operator-upgrade-crd-hook-sa
  namespace: {{ .Release.Namespace }}
  annotations:
    helm.sh/hook: pre-upgrade
    helm.sh/hook-delete-policy: hook-succeeded,before-hook-creation
    helm.sh/hook-weight: "0"
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: gpu-operator-upgrade-crd-hook-role
  annotations:
    helm.sh/hook: pre-upgrade
    helm.sh/hook-delete-policy: hook-succeeded,before-hook-creation
    helm.sh/hook-weight: "0"
rules:
  - apiGroups: ["apiextensions.k8s.io"]
    resources: ["customresourcedefinitions"]
    verbs: ["create", "get", "list", "watch", "patch", "update"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: gpu-operator-upgrade-crd-hook-binding
  annotations:
    helm.sh/hook: pre-upgrade
    helm.sh/hook-delete-policy: hook-succeeded,before-hook-creation
    helm.sh/hook-weight: "0"
subjects:
  - kind: ServiceAccount
    name: gpu-operator-upgrade-crd-hook-sa
    namespace: {{ .Release.Namespace }}
roleRef:
  kind: ClusterRole
  name: gpu-operator-upgrade-crd-hook-role
  apiGroup: rbac.authorization.k8s.io
---
apiVersion: batch/v1
kind: Job
metadata:
  name: gpu-operator-upgrade-crd
  namespace: {{ .Release.Namespace }}
  annotations:
    helm.sh/hook: pre-upgrade
    helm.sh/hook-weight: "1"
    helm.sh/hook-delete-policy: hook-succeeded,before-hook-creation
  labels:
    {{- include "gpu-operator.labels" . | nindent 4 }}
    app.kubernetes.io/component: gpu-operator
spec:
  template:
    metadata:
      name: gpu-operator-upgrade-crd
      labels:
        app.kubernetes.io/component: gpu-operator
    spec:
      serviceAccountName: gpu-operator-upgrade-crd-hook-sa
      tolerations:
        - key: node-role.kubernetes.io/control-plane
          operator: Exists
          effect: NoSchedule
      containers:
        - name: upgrade-crd
          image: {{ include "gpu-operator.fullimage" . }}
          imagePullPolicy: {{ .Values.operator.imagePullPolicy }}
          command: ["/usr/bin/manage-crds"]
          args:
            - apply
{{- range .Files.Lines "hook-crds.txt" }}
{{- if . }}
            - --crd={{ . }}
{{- end }}
{{- end }}
      restartPolicy: OnFailure
{{- end }}
"""


def _dump(data) -> str:
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=False)


def chart_files(version: str) -> dict:
    """relative path -> text of the chart for ``version``."""
    version = normalize(version)
    rel = RELEASES[version]
    chart = {"apiVersion": "v2", "name": CHART, "version": tag(version), "appVersion": tag(version),
             "description": "NVIDIA GPU Operator creates/configures/manages GPUs atop Kubernetes (lab test chart)",
             "kubeVersion": ">= 1.16.0-0", "type": "application", "keywords": ["gpu", "cuda", "compute", "operator"],
             "home": "https://github.com/NVIDIA/gpu-operator",
             "dependencies": [{"name": "node-feature-discovery", "version": rel["nfd"],
                               "repository": "oci://registry.k8s.io/nfd/charts", "condition": "nfd.enabled"}]}
    files = {
        "Chart.yaml": _dump(chart),
        "values.yaml": _dump(values(version)),
        "hook-crds.txt": "".join(name + "\n" for name in HOOK_CRDS[version]),
        "templates/_helpers.tpl": HELPERS,
        "templates/rbac.yaml": RBAC,
        "templates/operator.yaml": OPERATOR,
        "templates/clusterpolicy.yaml": CLUSTER_POLICY,
        "templates/upgrade_crd.yaml": UPGRADE_CRD,
        "charts/node-feature-discovery/Chart.yaml": _dump({
            "apiVersion": "v2", "name": "node-feature-discovery", "version": rel["nfd"], "appVersion": "v" + rel["nfd"],
            "description": "Detects hardware features available on each node (lab test subchart: CRDs only)",
            "type": "application"}),
        "charts/node-feature-discovery/values.yaml": _dump({"enableNodeFeatureApi": True}),
        "charts/node-feature-discovery/crds/nfd-api-crds.yaml": "".join("---\n" + _dump(c) for c in nfd_crds()),
    }
    if version == "26.7.0":
        files["templates/gpucluster.yaml"] = GPU_CLUSTER
    for name, crd in chart_crds(version).items():
        files["crds/" + name] = _dump(crd)
    return files


def write_chart(directory: str, version: str) -> str:
    """Write the chart for ``version`` under ``directory``; returns the chart folder."""
    root = os.path.join(str(directory), tag(version), CHART)
    for name, text in chart_files(version).items():
        path = os.path.join(root, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
    return root


def chart_archive(directory: str, version: str) -> str:
    """A Helm-loadable archive ``<directory>/gpu-operator-v<version>.tgz`` (files under ``gpu-operator/``)."""
    path = os.path.join(str(directory), "%s-%s.tgz" % (CHART, tag(version)))
    stamp = 1787270400  # fixed times, so an archive's sha256 is the same on every run
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=stamp) as zipped, \
            tarfile.open(fileobj=zipped, mode="w") as archive:
        for name, text in sorted(chart_files(version).items()):
            data = text.encode("utf-8")
            info = tarfile.TarInfo("%s/%s" % (CHART, name))
            info.size = len(data)
            info.mode = 0o644
            info.mtime = stamp
            archive.addfile(info, io.BytesIO(data))
    return path


def write_mapping(directory: str) -> dict:
    """All three charts under ``directory`` (26.6.2 as an archive) and the collection's chart mapping for
    them (``dra_gate_operator_charts``: version -> path and sha256, the digest operator_charts checks)."""
    import sys  # pylint: disable=import-outside-toplevel
    collections = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), ".cache", "collections")
    if collections not in sys.path:  # run as a script (molecule): the collection as tests/conftest.py finds it
        sys.path.insert(0, collections)
    from ansible_collections.gpufleet.dra_gate.plugins.module_utils.phases.operator_charts import local_digest  # pylint: disable=import-outside-toplevel
    paths = {"26.3.1": write_chart(directory, "26.3.1"), "26.6.2": chart_archive(directory, "26.6.2"),
             "26.7.0": write_chart(directory, "26.7.0")}
    return {version: {"path": path, "sha256": local_digest(path)[1]} for version, path in paths.items()}


def install(kubeconfig: str, chart: str, release: str = CHART, namespace: str = "gpu-operator") -> bool:
    """Install ``chart`` as ``release`` with the Helm library (Helm's watcher wait) unless the release
    exists; True when it installed."""
    import helm_python  # pylint: disable=import-outside-toplevel
    helm = helm_python.Config(kubeconfig_path=kubeconfig, namespace=namespace, storage_driver="secret")
    try:
        if helm.history(release):
            return False
    except Exception:  # pylint: disable=broad-except  # no release yet: the library raises
        pass
    helm.install(chart, release, namespace=namespace, wait="watcher", timeout=120)
    return True


def upgrade(kubeconfig: str, chart: str, release: str = CHART, namespace: str = "gpu-operator") -> None:
    """``helm upgrade`` ``release`` to ``chart`` with the Helm library (Helm's watcher wait)."""
    import helm_python  # pylint: disable=import-outside-toplevel
    helm = helm_python.Config(kubeconfig_path=kubeconfig, namespace=namespace, storage_driver="secret")
    helm.upgrade(chart, release, namespace=namespace, wait="watcher", timeout=120)


def main(argv=None) -> int:
    """``python tests/operator_charts.py charts DIR`` writes the charts and the mapping ``DIR/charts.json``
    (printed too); ``... install KUBECONFIG CHART`` installs it (prints ``installed`` or ``present``);
    ``... upgrade KUBECONFIG CHART`` upgrades the release to it."""
    import json  # pylint: disable=import-outside-toplevel
    import sys  # pylint: disable=import-outside-toplevel
    args = sys.argv[1:] if argv is None else argv
    if len(args) == 2 and args[0] == "charts":
        mapping = write_mapping(args[1])
        with open(os.path.join(args[1], "charts.json"), "w", encoding="utf-8") as handle:
            json.dump(mapping, handle, indent=2, sort_keys=True)
        print(json.dumps(mapping, sort_keys=True))
        return 0
    if len(args) == 3 and args[0] == "install":
        print("installed" if install(args[1], args[2]) else "present")
        return 0
    if len(args) == 3 and args[0] == "upgrade":
        upgrade(args[1], args[2])
        print("upgraded")
        return 0
    print("usage: operator_charts.py charts DIR | install KUBECONFIG CHART | upgrade KUBECONFIG CHART", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
