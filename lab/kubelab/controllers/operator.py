# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The NVIDIA GPU Operator, as far as an upgrade gate sees it (docs: /work/shared/DOMAIN.md §1).

The operator is a process: its Deployment ``gpu-operator`` (the one the Helm release installs). It
reconciles only while that Deployment exists, is not being deleted and has an available replica
(``status.availableReplicas >= 1``), as the real operator's controllers run only in its running pod.
Without it nothing is reconciled: the operands already made stay as they are (DaemonSets keep
running, owned by the CR), changes to the CRs are not acted on and their ``status`` is not written
(it keeps its last state). Once the Deployment is available again, reconciliation resumes (the
``operator_ready_seconds`` wait starts over, as a restarted operator's).

It acts once the CRDs are served and a ``ClusterPolicy`` (``nvidia.com/v1``, ``cluster-policy``) or
a ``GPUCluster`` (``nvidia.com/v1alpha1``, ``gpu-cluster``) exists; both are cluster-scoped. The
operands go to the operator's namespace (that of its Deployment, the chart's ``OPERATOR_NAMESPACE``),
owned by the CR (deleting it garbage-collects them):

* ClusterPolicy: DaemonSets ``nvidia-device-plugin-daemonset``, ``nvidia-operator-validator``,
  ``nvidia-container-toolkit-daemonset``, ``gpu-feature-discovery``;
* GPUCluster: DaemonSets ``nvidia-dra-driver-kubelet-plugin``, ``nvidia-dra-validator``,
  ``nvidia-dcgm-exporter-dra`` and the Deployment ``nvidia-dra-driver-controller``; once ready, the
  DeviceClasses ``gpu.nvidia.com``, ``mig.nvidia.com``, ``vfio.gpu.nvidia.com`` (no
  ``extendedResourceName``, as the operator manages them).

DaemonSets select ``nvidia.com/gpu.present=true`` nodes and tolerate ``nvidia.com/gpu`` plus the
spec's ``daemonsets.tolerations``; the DRA driver's containers get ``FEATURE_GATES`` from
``spec.draDriver.featureGates`` (``A=true,B=false``, only when set). Images come from the CR's spec
(``spec.<component>.{repository,image,version}``, which Helm renders from the chart's values) or the
v26.7.0 defaults; the validator's version, when the spec gives none, is the running operator's (the
tag of the ``gpu-operator`` Deployment's image, as the chart defaults it to its appVersion). The
DaemonSets' update strategy is the spec's ``daemonsets.updateStrategy`` /
``daemonsets.rollingUpdate.maxUnavailable`` (default RollingUpdate, 1). An operand whose component
is ``enabled: false`` is deleted. So a ``helm upgrade`` that changes an operand's image rolls its
DaemonSet, and a rollback rolls it back.

``status``: ``state`` ``ready`` with Ready=True/Reconciled (Error=False) once every operand's pods
are Ready and updated to the current template (and stayed so ``operator_ready_seconds``); else
``notReady`` with Ready=False and Error=True, reason ``OperandNotReady`` (no GPU nodes, pods not
ready, a rollout in progress, fault ``operator_never_ready``) or ``PrerequisiteNotMet`` when both CRs
exist. An image change therefore takes the CR through ``notReady`` (the rollout) back to ``ready``
no earlier than ``operator_ready_seconds`` after the rolled pods are Ready.
"""

from __future__ import annotations

import time

from kubelab.clone import clone
from kubelab.controllers import Controller
from kubelab.controllers.common import (meta, owner_reference, set_condition, spec, stable_hash, status,
                                        terminating)
from kubelab.errors import ApiError

MANAGER = "gpu-operator"
OPERATOR_DEPLOYMENT = "gpu-operator"  # the operator's own Deployment (the chart's templates/operator.yaml)
HASH_ANNOTATION = "kubelab.gpufleet.io/operand-hash"
GPU_NODE_SELECTOR = {"nvidia.com/gpu.present": "true"}
# component: (spec key, default repository, image, version)
IMAGES = {
    "device-plugin": ("devicePlugin", "nvcr.io/nvidia", "k8s-device-plugin", "v0.20.0"),
    "gfd": ("gfd", "nvcr.io/nvidia", "k8s-device-plugin", "v0.20.0"),
    "validator": ("validator", "nvcr.io/nvidia/cloud-native", "gpu-operator-validator", "v26.7.0"),
    "toolkit": ("toolkit", "nvcr.io/nvidia/k8s", "container-toolkit", "v1.20.0"),
    "dra-driver": ("draDriver", "nvcr.io/nvidia", "dra-driver-nvidia-gpu", "v0.5.0"),
    "dcgm-exporter": ("dcgmExporter", "nvcr.io/nvidia/k8s", "dcgm-exporter", "v26.7.0"),
}
CLUSTER_POLICY_OPERANDS = (("DaemonSet", "nvidia-device-plugin-daemonset", "device-plugin"),
                           ("DaemonSet", "nvidia-operator-validator", "validator"),
                           ("DaemonSet", "nvidia-container-toolkit-daemonset", "toolkit"),
                           ("DaemonSet", "gpu-feature-discovery", "gfd"))
GPU_CLUSTER_OPERANDS = (("DaemonSet", "nvidia-dra-driver-kubelet-plugin", "dra-driver"),
                        ("Deployment", "nvidia-dra-driver-controller", "dra-driver"),
                        ("DaemonSet", "nvidia-dra-validator", "validator"),
                        ("DaemonSet", "nvidia-dcgm-exporter-dra", "dcgm-exporter"))
VALIDATOR_INITS = ("driver-validation", "toolkit-validation", "cuda-validation", "plugin-validation")
DEVICE_CLASSES = {"gpu.nvidia.com": "gpu", "mig.nvidia.com": "mig", "vfio.gpu.nvidia.com": "vfio"}


def image(cr: dict, component: str, operator_version: str = "") -> str:
    """The operand image for ``component``: the CR's spec, else the defaults (the validator's version
    then follows ``operator_version``, the running operator's tag, when known)."""
    key, repository, name, version = IMAGES[component]
    if component == "validator" and operator_version:
        version = operator_version
    config = spec(cr).get(key) or {}
    repository = config.get("repository") or repository
    name = config.get("image") or name
    version = str(config.get("version") or version)
    if "/" in name and not config.get("repository"):
        ref = name
    else:
        ref = "%s/%s" % (repository.rstrip("/"), name)
    return ref + ("@" + version if version.startswith("sha256:") else ":" + version)


def enabled(cr: dict, component: str) -> bool:
    return (spec(cr).get(IMAGES[component][0]) or {}).get("enabled", True) is not False


def update_strategy(cr: dict) -> dict:
    """The operand DaemonSets' strategy from ``spec.daemonsets`` (the chart's ``daemonsets`` values)."""
    config = spec(cr).get("daemonsets") or {}
    if config.get("updateStrategy") == "OnDelete":
        return {"type": "OnDelete"}
    unavailable = (config.get("rollingUpdate") or {}).get("maxUnavailable", "1")
    return {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": unavailable}}


def feature_gates_env(cr: dict) -> str:
    """``spec.draDriver.featureGates`` as the chart renders it into ``FEATURE_GATES``: ``A=true,B=false``."""
    gates = (spec(cr).get("draDriver") or {}).get("featureGates") or {}
    if not isinstance(gates, dict):
        return ""
    return ",".join("%s=%s" % (k, "true" if v is True or str(v).lower() == "true" else "false") for k, v in sorted(gates.items()))


def _pod_template(name: str, cr: dict, component: str, gpu_nodes: bool, operator_version: str = "") -> dict:
    container = {"name": name, "image": image(cr, component, operator_version), "imagePullPolicy": "IfNotPresent"}
    tolerations = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    # spec.daemonsets.tolerations (the chart's daemonsets.tolerations): operands reach tainted GPU nodes
    for extra in (spec(cr).get("daemonsets") or {}).get("tolerations") or []:
        if isinstance(extra, dict) and extra not in tolerations:
            tolerations.append(clone(extra))
    if component == "dra-driver" and feature_gates_env(cr):
        container["env"] = [{"name": "FEATURE_GATES", "value": feature_gates_env(cr)}]
    pod_spec = {"containers": [container], "serviceAccountName": name, "priorityClassName": "system-node-critical",
                "tolerations": tolerations}
    if gpu_nodes:
        pod_spec["nodeSelector"] = dict(GPU_NODE_SELECTOR)
    if name == "nvidia-operator-validator":
        pod_spec["initContainers"] = [{"name": init, "image": container["image"]} for init in VALIDATOR_INITS]
    return {"metadata": {"labels": {"app": name, "app.kubernetes.io/part-of": "gpu-operator"}}, "spec": pod_spec}


def operand(kind: str, name: str, component: str, cr: dict, namespace: str, operator_version: str = "") -> dict:
    """The DaemonSet or Deployment ``name`` for ``cr``."""
    template = _pod_template(name, cr, component, kind == "DaemonSet", operator_version)
    body = {"selector": {"matchLabels": {"app": name}}, "template": template}
    if kind == "DaemonSet":
        body["updateStrategy"] = update_strategy(cr)
    else:
        body["replicas"] = 1
    obj = {"apiVersion": "apps/v1", "kind": kind,
           "metadata": {"name": name, "namespace": namespace,
                        "labels": {"app": name, "app.kubernetes.io/managed-by": "gpu-operator"},
                        "annotations": {HASH_ANNOTATION: stable_hash(body)},
                        "ownerReferences": [owner_reference(cr)]},
           "spec": body}
    return obj


def operand_ready(obj: dict) -> tuple[bool, str]:
    """(ready, why not) for an operand DaemonSet or Deployment."""
    st, name = status(obj), meta(obj)["name"]
    if st.get("observedGeneration", 0) < meta(obj).get("generation", 1):
        return False, "%s: not observed yet" % name
    if obj["kind"] == "Deployment":
        want = spec(obj).get("replicas", 1)
        if st.get("readyReplicas", 0) < want or st.get("updatedReplicas", 0) < want:
            return False, "%s: %d/%d replicas ready" % (name, st.get("readyReplicas", 0), want)
        return True, ""
    desired = st.get("desiredNumberScheduled", 0)
    if desired == 0:
        return False, "%s: no GPU nodes (no node labelled nvidia.com/gpu.present=true)" % name
    if st.get("updatedNumberScheduled", 0) < desired:
        return False, "%s: rolling out %s (%d/%d pods updated, %d ready)" % (
            name, _images(obj), st.get("updatedNumberScheduled", 0), desired, st.get("numberReady", 0))
    if st.get("numberReady", 0) < desired:
        return False, "%s: %d/%d pods ready" % (name, st.get("numberReady", 0), desired)
    return True, ""


def _images(obj: dict) -> str:
    containers = ((spec(obj).get("template") or {}).get("spec") or {}).get("containers") or []
    return ", ".join(c.get("image", "") for c in containers)


def image_tag(ref: str) -> str:
    """``repo/name:tag`` -> ``tag`` ("" for a digest or no tag)."""
    last = ref.rsplit("/", 1)[-1]
    return last.rsplit(":", 1)[1] if ":" in last and "@" not in last else ""


def operator_available(deployment: dict) -> bool:
    """Whether the operator's Deployment runs the operator: not being deleted, an available replica."""
    try:
        available = int(status(deployment).get("availableReplicas") or 0)
    except (TypeError, ValueError):
        available = 0
    return not terminating(deployment) and available >= 1


def operator_version(deployment: dict) -> str:
    """The tag of the operator Deployment's image (the chart's appVersion): what the validator defaults to."""
    containers = ((spec(deployment).get("template") or {}).get("spec") or {}).get("containers") or []
    return image_tag(containers[0].get("image", "")) if containers else ""


class GpuOperatorController(Controller):
    watches = ("ClusterPolicy", "GPUCluster", "DaemonSet", "Deployment")
    resync_seconds = 0.5

    def __init__(self, lab):
        super().__init__(lab)
        self.kinds = {"DaemonSet": self.rtype("apps", "v1", "daemonsets"),
                      "Deployment": self.rtype("apps", "v1", "deployments")}
        self.ready_since: dict = {}

    def _crs(self, version: str, plural: str) -> tuple:
        rtype = self.rtype("nvidia.com", version, plural)
        if rtype is None:
            return None, []
        return rtype, self.api.list(rtype, None, shared=True)["items"]

    def reconcile(self) -> None:
        operator = self.running_operator()
        if operator is None:  # no operator process: nothing reconciles, nothing writes status
            self.ready_since.clear()
            return
        namespace, version = meta(operator)["namespace"], operator_version(operator)
        cp_type, policies = self._crs("v1", "clusterpolicies")
        gc_type, clusters = self._crs("v1alpha1", "gpuclusters")
        live = [(cp_type, cr, CLUSTER_POLICY_OPERANDS) for cr in policies if not meta(cr).get("deletionTimestamp")]
        live += [(gc_type, cr, GPU_CLUSTER_OPERANDS) for cr in clusters if not meta(cr).get("deletionTimestamp")]
        if policies and clusters:
            names = "ClusterPolicy %s and GPUCluster %s" % (
                ", ".join(meta(c)["name"] for c in policies), ", ".join(meta(c)["name"] for c in clusters))
            for rtype, cr, _operands in live:
                self._status(rtype, cr, False, "PrerequisiteNotMet",
                             "%s both exist; it is an invalid configuration for both CRs to exist: delete one" % names)
            return
        for rtype, cr, operands in live:
            self._reconcile(rtype, cr, operands, namespace, version)

    def running_operator(self) -> dict | None:
        """The operator's Deployment when its process runs: named ``gpu-operator``, not being deleted, with
        ``status.availableReplicas >= 1``; None otherwise (deleted, scaled to 0, its pod not available)."""
        deployments = self.api.list(self.kinds["Deployment"], None,
                                    field_selector="metadata.name=%s" % OPERATOR_DEPLOYMENT, shared=True)["items"]
        running = [d for d in deployments if operator_available(d)]
        return min(running, key=lambda d: meta(d)["namespace"]) if running else None

    def _reconcile(self, rtype, cr: dict, operands: tuple, namespace: str, version: str = "") -> None:
        problems = []
        for kind, name, component in operands:
            if not enabled(cr, component):
                self._remove(kind, name, cr, namespace)
                continue
            self._service_account(name, cr, namespace)
            current = self._apply(kind, operand(kind, name, component, cr, namespace, version))
            ready, why = operand_ready(current)
            if not ready:
                problems.append(why)
        engine = getattr(self.lab, "fault_engine", None)
        if engine is not None and engine.fault_active("operator_never_ready"):
            problems.insert(0, "kubelab fault operator_never_ready: operands are held not ready")
        uid = meta(cr)["uid"]
        if problems:
            self.ready_since.pop(uid, None)
            self._status(rtype, cr, False, "OperandNotReady", "; ".join(problems), namespace)
            return
        since = self.ready_since.setdefault(uid, time.monotonic())
        if time.monotonic() - since < self._knob("operator_ready_seconds"):
            self._status(rtype, cr, False, "OperandNotReady", "operands are starting", namespace)
            return
        self._status(rtype, cr, True, "Reconciled", "", namespace)
        if cr.get("kind") == "GPUCluster":
            self._device_classes(cr)

    def _service_account(self, name: str, cr: dict, namespace: str) -> None:
        """The operand's ServiceAccount (the operator's state manifests ship one per operand), owned by the CR."""
        rtype = self.rtype("", "v1", "serviceaccounts")
        if self.store.get_or_none(rtype, namespace, name) is not None:
            return
        try:
            self.api.create(rtype, namespace, {"apiVersion": "v1", "kind": "ServiceAccount",
                                               "metadata": {"name": name, "namespace": namespace,
                                                            "labels": {"app": name},
                                                            "ownerReferences": [owner_reference(cr)]}},
                            field_manager=MANAGER)
        except ApiError as exc:
            if exc.code != 409:
                raise

    def _remove(self, kind: str, name: str, cr: dict, namespace: str) -> None:
        """A disabled component's operand goes (only one this CR owns)."""
        current = self.store.get_or_none(self.kinds[kind], namespace, name)
        if current is None or meta(current).get("deletionTimestamp"):
            return
        if not any(ref.get("uid") == meta(cr)["uid"] for ref in meta(current).get("ownerReferences") or []):
            return
        try:
            self.api.delete(self.kinds[kind], namespace, name, {"propagationPolicy": "Background"})
        except ApiError as exc:
            if exc.code != 404:
                raise

    def _knob(self, key: str) -> float:
        try:
            return float(self.lab.scenario.get(key, 0) or 0)
        except (TypeError, ValueError):
            return 0.0

    def _apply(self, kind: str, desired: dict) -> dict:
        rtype = self.kinds[kind]
        name, namespace = desired["metadata"]["name"], desired["metadata"]["namespace"]
        current = self.store.get_or_none(rtype, namespace, name)
        if current is None:
            return self.api.create(rtype, namespace, desired, field_manager=MANAGER)
        want = desired["metadata"]["annotations"][HASH_ANNOTATION]
        if (meta(current).get("annotations") or {}).get(HASH_ANNOTATION) == want:
            return current
        body = clone(current)
        body["spec"] = desired["spec"]
        body["metadata"].setdefault("annotations", {})[HASH_ANNOTATION] = want
        written, _code = self.api.update(rtype, namespace, name, body, field_manager=MANAGER)
        return written

    def _status(self, rtype, cr: dict, ready: bool, reason: str, message: str, namespace: str | None = None) -> None:
        new_status = clone(status(cr))
        new_status["state"] = "ready" if ready else "notReady"
        if namespace:
            new_status["namespace"] = namespace
        conditions = new_status.get("conditions")
        if ready:
            conditions = set_condition(conditions, "Ready", "True", "Reconciled", "%s is ready" % cr.get("kind"))
            conditions = set_condition(conditions, "Error", "False", "Ready", "")
        else:
            conditions = set_condition(conditions, "Ready", "False", reason, message)
            conditions = set_condition(conditions, "Error", "True", reason, message)
        for cond in conditions:
            cond.setdefault("reason", reason if not ready else "Ready")
            cond.setdefault("message", "")
            cond.setdefault("observedGeneration", meta(cr).get("generation", 1))
            cond["observedGeneration"] = meta(cr).get("generation", 1)
        new_status["conditions"] = conditions
        if new_status == status(cr):
            return
        body = clone(cr)
        body["status"] = new_status
        sub = "status" if "status" in rtype.subresources else ""
        try:
            self.api.update(rtype, None, meta(cr)["name"], body, subresource=sub, field_manager=MANAGER)
        except ApiError as exc:
            if exc.code not in (404, 409):
                raise

    def _device_classes(self, cr: dict) -> None:
        rtype = self.rtype("resource.k8s.io", "v1", "deviceclasses")
        if rtype is None:
            return
        for name, kind in DEVICE_CLASSES.items():
            expression = "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == '%s'" % kind
            desired_spec = {"selectors": [{"cel": {"expression": expression}}]}
            current = self.store.get_or_none(rtype, None, name)
            if current is None:
                self.api.create(rtype, None, {
                    "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                    "metadata": {"name": name, "labels": {"app.kubernetes.io/managed-by": "gpu-operator"},
                                 "ownerReferences": [owner_reference(cr)]},
                    "spec": desired_spec}, field_manager=MANAGER)
            elif spec(current) != desired_spec or not meta(current).get("ownerReferences"):
                body = clone(current)
                body["spec"] = desired_spec
                body["metadata"]["ownerReferences"] = [owner_reference(cr)]
                self.api.update(rtype, None, name, body, field_manager=MANAGER)
