# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What ``operator_verify`` reads and how it judges it: the GPU Operator in Device Plugin mode.

No Ansible here. Reads go through a *reader* (``get(path)``, ``list(path, label_selector=None)``: a
:class:`~.k8s_client.K8sReader` in the module, a dict of recorded answers in unit tests); everything
else is pure functions on API-shaped dicts.

Reads per poll (``read_operator``): ``/apis/nvidia.com`` discovery (once, repeated while the
ClusterPolicy kind is not served), the ClusterPolicies, and the DaemonSets, Deployments and Pods of
the operator's namespace. The final read (``read_cluster``) adds the nodes, the GPUClusters (when the
kind is served), ResourceSlices, ResourceClaims and DeviceClasses. A 404 on a kind that is not served
means zero objects of it; a 403 or any other error propagates as :class:`~.k8s_client.K8sApiError`.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster import objects as kube
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster import gpu_cluster as gc

DEFAULT_NAMESPACE = "gpu-operator"
GPU_RESOURCE = gc.GPU_RESOURCE
GROUP = "nvidia.com"
DRA = "/apis/resource.k8s.io/v1"
DEVICE_PLUGIN = "devicePlugin"
VALIDATOR = "validator"
DRIVER = "driver"
OPERATOR_DEPLOYMENT = "gpu-operator"
# ClusterPolicy component -> (kind, name) of the workload the GPU Operator creates for it.
WORKLOADS = {
    "devicePlugin": ("DaemonSet", "nvidia-device-plugin-daemonset"),
    "validator": ("DaemonSet", "nvidia-operator-validator"),
    "toolkit": ("DaemonSet", "nvidia-container-toolkit-daemonset"),
    "gfd": ("DaemonSet", "gpu-feature-discovery"),
    "driver": ("DaemonSet", "nvidia-driver-daemonset"),
    "dcgmExporter": ("DaemonSet", "nvidia-dcgm-exporter"),
    "dcgm": ("DaemonSet", "nvidia-dcgm"),
    "migManager": ("DaemonSet", "nvidia-mig-manager"),
    "nodeStatusExporter": ("DaemonSet", "nvidia-node-status-exporter"),
    "sandboxDevicePlugin": ("DaemonSet", "nvidia-sandbox-device-plugin-daemonset"),
    "vgpuManager": ("DaemonSet", "nvidia-vgpu-manager-daemonset"),
    "vgpuDeviceManager": ("DaemonSet", "nvidia-vgpu-device-manager"),
    "vfioManager": ("DaemonSet", "nvidia-vfio-manager"),
    "kataManager": ("DaemonSet", "nvidia-kata-manager"),
    "ccManager": ("DaemonSet", "nvidia-cc-manager"),
}
# Operands that must exist whenever they are enabled (the rest may be absent: a driver preinstalled
# on the host, an exporter the site does not run).
REQUIRED = (DEVICE_PLUGIN, VALIDATOR)
EXPECT_KEYS = ("device_plugin_enabled", "cdi_enabled", "images", "operator_version")


class VerifyError(Exception):
    """Bad input; the message names the field and the expected form."""


# -- input -------------------------------------------------------------------------------------


def check_params(params):
    """Raise VerifyError naming the first bad field; returns the node names (order kept, unique)."""
    nodes = params.get("nodes")
    if not isinstance(nodes, list) or not nodes:
        raise VerifyError("nodes: expected a non-empty list of node names, got %r" % (nodes,))
    names = []
    for index, name in enumerate(nodes):
        if not isinstance(name, str) or not name.strip():
            raise VerifyError("nodes[%d]: expected a node name (non-empty string), got %r" % (index, name))
        if name not in names:
            names.append(name)
    if not str(params.get("gpu_resource") or "").strip():
        raise VerifyError("gpu_resource: expected an extended resource name such as nvidia.com/gpu")
    timeout = params.get("wait_timeout")
    if not isinstance(timeout, (int, float)) or timeout < 0:
        raise VerifyError("wait_timeout: expected seconds >= 0, got %r" % (timeout,))
    interval = params.get("poll_interval")
    if not isinstance(interval, (int, float)) or not 0.05 <= interval <= 600:
        raise VerifyError("poll_interval: expected seconds between 0.05 and 600, got %r" % (interval,))
    check_expect(params.get("expect") or {})
    check_baseline(params.get("baseline"))
    check_recorded(params.get("recorded_operator"))
    deployment = params.get("operator_deployment", OPERATOR_DEPLOYMENT)
    if deployment is not None and (not isinstance(deployment, str) or not deployment.strip()):
        raise VerifyError("operator_deployment: expected the name of the operator's Deployment, got %r" % (deployment,))
    return names


def check_recorded(recorded):
    """``recorded_operator``: None, or ``{container: {"image": ref, "digests": [sha256:<64 hex>, ...]}}``
    (:func:`recorded_operator_images` of the snapshot's images.json)."""
    if recorded is None:
        return
    if not isinstance(recorded, dict) or not recorded:
        raise VerifyError("recorded_operator: expected a non-empty mapping container -> {image, digests} (the "
                          "operator Deployment's containers in the snapshot's images.json), got %r" % (recorded,))
    for container, entry in recorded.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("image"), str) or not entry["image"].strip():
            raise VerifyError("recorded_operator.%s: expected {image: <reference>, digests: [sha256:<64 hex>]}, got %r"
                              % (container, entry))
        digests = entry.get("digests") or []
        if not isinstance(digests, list) or not all(isinstance(d, str) and _valid_digest(d) for d in digests):
            raise VerifyError("recorded_operator.%s.digests: expected a list of sha256:<64 hex>, got %r"
                              % (container, digests))


def recorded_operator_images(images_doc, namespace, deployment=OPERATOR_DEPLOYMENT):
    """``{container: {"image", "digests"}}`` of the operator Deployment in a helm_state ``images.json``
    (its manifest's containers and the digests its pods ran when the snapshot was taken); VerifyError
    when the recorded release has no such Deployment (a rollback to it would remove the operator)."""
    if not isinstance(images_doc, dict) or not isinstance(images_doc.get("manifest_images"), list):
        raise VerifyError("recorded images: expected helm_state's images.json (manifest_images, digests)")
    digests = images_doc.get("digests") if isinstance(images_doc.get("digests"), dict) else {}
    found = {}
    for entry in images_doc["manifest_images"]:
        if not isinstance(entry, dict) or entry.get("init"):
            continue
        if (entry.get("kind"), entry.get("name")) != ("Deployment", deployment):
            continue
        if (entry.get("namespace") or namespace) != namespace:
            continue
        image = entry.get("image")
        found[entry.get("container") or ""] = {"image": image, "digests": sorted(
            d for d in digests.get(image) or [] if isinstance(d, str) and _valid_digest(d))}
    if not found:
        raise VerifyError("the recorded release (revision %s) has no Deployment %s/%s in its manifest: rolling back to "
                          "it would leave the cluster without the GPU Operator"
                          % (images_doc.get("revision"), namespace, deployment))
    return found


def check_expect(expect):
    if not isinstance(expect, dict):
        raise VerifyError("expect: expected a mapping (%s), got %r" % (", ".join(EXPECT_KEYS), expect))
    unknown = sorted(set(expect) - set(EXPECT_KEYS))
    if unknown:
        raise VerifyError("expect.%s: unknown key; expected one of %s" % (unknown[0], ", ".join(EXPECT_KEYS)))
    for key in ("device_plugin_enabled", "cdi_enabled"):
        value = expect.get(key)
        if value is not None and not isinstance(value, bool):
            raise VerifyError("expect.%s: expected true or false, got %r" % (key, value))
    images = expect.get("images") or {}
    if not isinstance(images, dict):
        raise VerifyError("expect.images: expected a mapping component -> image reference "
                          "(e.g. devicePlugin: nvcr.io/nvidia/k8s-device-plugin@sha256:...), got %r" % (images,))
    for component, ref in images.items():
        if not isinstance(ref, str) or not ref.strip() or any(c.isspace() for c in ref):
            raise VerifyError("expect.images.%s: expected an image reference (repository/name:tag or "
                              "repository/name@sha256:<64 hex>), got %r" % (component, ref))
        digest = digest_of(ref)
        if digest is not None and not _valid_digest(digest):
            raise VerifyError("expect.images.%s: the digest of %r is not sha256:<64 hex>" % (component, ref))
    version = expect.get("operator_version")
    if version is not None and (not isinstance(version, str) or not version.strip()):
        raise VerifyError("expect.operator_version: expected a version such as v26.7.0, got %r" % (version,))


def check_baseline(baseline):
    if baseline is None:
        return
    if not isinstance(baseline, dict):
        raise VerifyError("baseline: expected an earlier result of operator_verify (a mapping), got %r" % (baseline,))
    nodes = baseline.get("nodes")
    if nodes is not None:
        if not isinstance(nodes, dict) or not all(isinstance(v, dict) for v in nodes.values()):
            raise VerifyError("baseline.nodes: expected a mapping node name -> {allocatable, ready} "
                              "(the nodes of an earlier operator_verify result)")
    dra = baseline.get("dra_objects")
    if dra is not None and not isinstance(dra, dict):
        raise VerifyError("baseline.dra_objects: expected a mapping (resource_slices, resource_claims, "
                          "device_classes) from an earlier operator_verify result")
    if nodes is None and dra is None:
        raise VerifyError("baseline: expected an earlier operator_verify result with nodes and dra_objects")


def expectations(params):
    expect = dict(params.get("expect") or {})
    if expect.get("device_plugin_enabled") is None:
        expect["device_plugin_enabled"] = True
    expect.setdefault("cdi_enabled", None)
    expect["images"] = dict(expect.get("images") or {})
    expect.setdefault("operator_version", None)
    return expect


# -- images ------------------------------------------------------------------------------------


def _valid_digest(digest):
    algo, _sep, hexpart = digest.partition(":")
    return algo == "sha256" and len(hexpart) == 64 and all(c in "0123456789abcdef" for c in hexpart)


def digest_of(ref):
    """``repo/name@sha256:...`` (also ``docker-pullable://...@sha256:...``) -> ``sha256:...``; else None."""
    if not ref or "@" not in ref:
        return None
    return ref.rsplit("@", 1)[1]


def image_tag(ref):
    """``repo/name:tag`` -> ``tag``; ``""`` for a digest-only reference or no tag."""
    last = (ref or "").split("@", 1)[0].rsplit("/", 1)[-1]
    return last.rsplit(":", 1)[1] if ":" in last else ""


def compose_image(config, component, operator_tag=""):
    """The image the operator runs for a ClusterPolicy component, as it composes it: ``repository/
    image:version`` (``@version`` for a ``sha256:`` version); the image alone when neither repository
    nor version is set (a full reference). The validator's version defaults to the operator's tag (the
    chart defaults it to its appVersion). None when the spec does not determine it (the operator then
    takes its own defaults, not visible here)."""
    repository = str(config.get("repository") or "").strip().rstrip("/")
    image = str(config.get("image") or "").strip()
    version = str(config.get("version") or "").strip()
    if not image:
        return None
    if not repository and not version:
        return image
    if not version and component == VALIDATOR and operator_tag:
        version = operator_tag
    if not version:
        return None
    if repository:
        ref = "%s/%s" % (repository, image)
    elif "/" in image:
        ref = image
    else:
        return None
    return ref + ("@" + version if version.startswith("sha256:") else ":" + version)


def image_matches(actual, expected, component=None):
    """Equal references; the driver's image by tag also matches with the OS suffix the operator
    appends (``.../driver:580.126.16`` ~ ``.../driver:580.126.16-ubuntu24.04``)."""
    if not actual or not expected:
        return False
    if actual == expected:
        return True
    return component == DRIVER and "@" not in expected and actual.startswith(expected + "-")


def _containers(pod_spec):
    return pod_spec.get("containers") or []


def workload_image(workload):
    """The first container's image of a DaemonSet's or Deployment's pod template."""
    containers = _containers(kube.spec(kube.spec(workload).get("template")))
    return containers[0].get("image") if containers else None


def pod_image(pod, container_name=None):
    """(image, imageID) of the pod's container ``container_name`` (else the first)."""
    containers = _containers(kube.spec(pod))
    chosen = None
    for container in containers:
        if container_name and container.get("name") == container_name:
            chosen = container
    if chosen is None and containers:
        chosen = containers[0]
    if chosen is None:
        return None, None
    image_id = None
    for status in kube.status(pod).get("containerStatuses") or []:
        if status.get("name") == chosen.get("name"):
            image_id = status.get("imageID") or None
    return chosen.get("image"), image_id


def pod_runs(pod, expected, component=None, container_name=None):
    """The pod runs ``expected``: the same reference, or for a digest pin an imageID with its digest."""
    image, image_id = pod_image(pod, container_name)
    if image_matches(image, expected, component):
        return True
    pin_digest = digest_of(expected)
    return pin_digest is not None and digest_of(image_id) == pin_digest


# -- objects -----------------------------------------------------------------------------------


def selector_matches(selector, labels):
    """``matchLabels`` of a workload's selector against pod labels (``matchExpressions`` are not read)."""
    wanted = (selector or {}).get("matchLabels") or {}
    return bool(wanted) and all((labels or {}).get(k) == v for k, v in wanted.items())


def workload_pods(workload, pods):
    """The live (not deleting) pods a workload's selector selects, sorted by name."""
    selector = kube.spec(workload).get("selector")
    chosen = [p for p in pods if not kube.meta(p).get("deletionTimestamp")
              and selector_matches(selector, kube.meta(p).get("labels"))]
    return sorted(chosen, key=lambda p: kube.meta(p).get("name") or "")


def pod_ready(pod):
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in kube.status(pod).get("conditions") or [])


def by_name(items):
    return dict((kube.meta(i).get("name"), i) for i in items or [])


def select_policy(policies, name):
    """(the ClusterPolicy, None) or (None, the problem). ``policies`` None: the kind is not served."""
    if policies is None:
        return None, "no ClusterPolicy: the kind clusterpolicies.nvidia.com is not served (GPU Operator CRDs absent)"
    live = sorted((p for p in policies if not kube.meta(p).get("deletionTimestamp")), key=lambda p: kube.meta(p).get("name"))
    names = [kube.meta(p).get("name") for p in live]
    if name:
        for policy in live:
            if kube.meta(policy).get("name") == name:
                return policy, None
        return None, "ClusterPolicy %s not found (present: %s)" % (name, ", ".join(names) or "none")
    if not live:
        return None, "no ClusterPolicy found"
    if len(live) > 1:
        return None, "%d ClusterPolicies (%s): name the one to verify with cluster_policy" % (len(live), ", ".join(names))
    return live[0], None


def policy_state(policy):
    """(state, message): ``status.state`` and the Ready condition's message (else the Error condition's)."""
    state = kube.status(policy).get("state")
    ready = kube.condition(policy, "Ready") or {}
    message = ready.get("message") or ""
    if not message and ready.get("status") != "True":
        message = (kube.condition(policy, "Error") or {}).get("message") or ""
    return state, message


def stale_status(policy):
    """Why the status describes an older spec, or "": a Ready condition's observedGeneration behind."""
    generation = kube.meta(policy).get("generation")
    observed = (kube.condition(policy, "Ready") or {}).get("observedGeneration")
    if isinstance(generation, int) and isinstance(observed, int) and observed < generation:
        return "status is for generation %d, the spec is at generation %d" % (observed, generation)
    return ""


def device_plugin_enabled(policy):
    """``spec.devicePlugin.enabled``; absent counts as true (the chart's and operator's default)."""
    return (kube.spec(policy).get(DEVICE_PLUGIN) or {}).get("enabled", True) is not False


def cdi_enabled(policy):
    """``spec.cdi.enabled`` as the spec holds it (None when absent)."""
    value = (kube.spec(policy).get("cdi") or {}).get("enabled")
    return value if isinstance(value, bool) else None


def components(policy):
    """``[(component, config)]``: the spec's sections that name an image, sorted by component."""
    found = []
    for key, config in kube.spec(policy).items():
        if isinstance(config, dict) and isinstance(config.get("image"), str) and config.get("image").strip():
            found.append((key, config))
    return sorted(found, key=lambda item: item[0])


def rollout_reason(workload):
    """"" when a DaemonSet is rolled out (observedGeneration >= generation, updated == desired ==
    available, desired > 0) or a Deployment's replicas are updated and available; else why not."""
    name, st = kube.meta(workload).get("name"), kube.status(workload)
    generation = kube.meta(workload).get("generation") or 0
    observed = st.get("observedGeneration") or 0
    if observed < generation:
        return "%s: observedGeneration %d < generation %d (the controller has not seen the change)" % (
            name, observed, generation)
    if workload.get("kind") == "Deployment":
        want = kube.spec(workload).get("replicas", 1)
        updated, available = st.get("updatedReplicas") or 0, st.get("availableReplicas") or 0
        if updated != want or available != want:
            return "%s: %d/%d replicas updated, %d available" % (name, updated, want, available)
        return ""
    desired = st.get("desiredNumberScheduled") or 0
    updated, available = st.get("updatedNumberScheduled") or 0, st.get("numberAvailable") or 0
    if desired == 0:
        return "%s: no pods scheduled (desiredNumberScheduled 0: no node selected)" % name
    if not updated == desired == available:
        return "%s: rolling out (desired %d, updated %d, available %d)" % (name, desired, updated, available)
    return ""


# -- reads -------------------------------------------------------------------------------------


def discover(reader, group=GROUP):
    """``{plural: version}`` of the group's served resources, the preferred version first; {} when the
    group is not served."""
    doc = kube.get_or_none(reader, "/apis/%s" % group)
    if doc is None:
        return {}
    versions = [v.get("version") for v in doc.get("versions") or [] if v.get("version")]
    preferred = (doc.get("preferredVersion") or {}).get("version")
    if preferred in versions:
        versions = [preferred] + [v for v in versions if v != preferred]
    plurals = {}
    for version in versions:
        resources = kube.get_or_none(reader, "/apis/%s/%s" % (group, version)) or {}
        for resource in resources.get("resources") or []:
            plural = resource.get("name") or ""
            if plural and "/" not in plural:
                plurals.setdefault(plural, version)
    return plurals


def _custom(reader, plurals, plural):
    version = plurals.get(plural)
    if not version:
        return None
    return kube.list_or_none(reader, "/apis/%s/%s/%s" % (GROUP, version, plural))


def read_operator(reader, namespace, cache):
    """The ClusterPolicies (None: kind not served), DaemonSets, Deployments and Pods of ``namespace``."""
    if not cache.get("plurals", {}).get("clusterpolicies"):
        cache["plurals"] = discover(reader)
    policies = _custom(reader, cache["plurals"], "clusterpolicies")
    if policies is None:
        cache.pop("plurals", None)
    base = "/apis/apps/v1/namespaces/%s" % namespace
    return {"policies": policies,
            "daemonsets": [dict(d, kind="DaemonSet") for d in reader.list(base + "/daemonsets")],
            "deployments": [dict(d, kind="Deployment") for d in reader.list(base + "/deployments")],
            "pods": reader.list("/api/v1/namespaces/%s/pods" % namespace)}


def read_identity(reader, namespace, deployment):
    """The operator's ServiceAccount (None: absent) and the RBAC bindings naming it, each with whether its
    role exists: ``{"service_account": name, "found": obj|None, "bindings": [{kind, name, role, role_found}]}``."""
    template = kube.spec(kube.spec(deployment).get("template"))
    account = template.get("serviceAccountName") or template.get("serviceAccount") or "default"
    found = kube.get_or_none(reader, "/api/v1/namespaces/%s/serviceaccounts/%s" % (namespace, account))
    rbac = "/apis/rbac.authorization.k8s.io/v1"
    bindings = []
    for kind, items in (("ClusterRoleBinding", reader.list(rbac + "/clusterrolebindings")),
                        ("RoleBinding", reader.list(rbac + "/namespaces/%s/rolebindings" % namespace))):
        for binding in items:
            subjects = binding.get("subjects") or []
            if not any(s.get("kind") == "ServiceAccount" and s.get("name") == account
                       and (s.get("namespace") or (namespace if kind == "RoleBinding" else None)) == namespace
                       for s in subjects if isinstance(s, dict)):
                continue
            ref = binding.get("roleRef") or {}
            role_path = (rbac + "/clusterroles/%s" % ref.get("name") if ref.get("kind") == "ClusterRole"
                         else rbac + "/namespaces/%s/roles/%s" % (namespace, ref.get("name")))
            bindings.append({"kind": kind, "name": kube.meta(binding).get("name"),
                             "role": "%s/%s" % (ref.get("kind"), ref.get("name")),
                             "role_found": kube.get_or_none(reader, role_path) is not None})
    return {"service_account": account, "found": found, "bindings": sorted(bindings, key=lambda b: (b["kind"], b["name"]))}


def read_cluster(reader):
    """Nodes, GPUClusters (None: the kind is not served), and the DRA objects (None: not served)."""
    plurals = discover(reader)
    return {"nodes": reader.list("/api/v1/nodes"),
            "gpu_clusters": _custom(reader, plurals, "gpuclusters"),
            "resource_slices": kube.list_or_none(reader, DRA + "/resourceslices"),
            "resource_claims": kube.list_or_none(reader, DRA + "/resourceclaims"),
            "device_classes": kube.list_or_none(reader, DRA + "/deviceclasses")}


# -- judgement ---------------------------------------------------------------------------------


def controller_reason(deployment, namespace, name=OPERATOR_DEPLOYMENT):
    """'' when the operator's own Deployment exists, has rolled out its current template and is
    available; else why not (a GPU fleet whose operator is gone or not running reconciles nothing)."""
    if deployment is None:
        return ("operator: Deployment %s/%s not found (nothing runs the GPU Operator: the ClusterPolicy is not "
                "reconciled)" % (namespace, name))
    st = kube.status(deployment)
    for condition in st.get("conditions") or []:
        if condition.get("type") == "ReplicaFailure" and condition.get("status") == "True":
            return "operator: Deployment %s/%s cannot create its pods: %s (%s)" % (
                namespace, name, condition.get("message") or "no message", condition.get("reason") or "no reason")
    want = kube.spec(deployment).get("replicas", 1)
    if want == 0:
        return "operator: Deployment %s/%s is scaled to 0 replicas" % (namespace, name)
    reason = rollout_reason(dict(deployment, kind="Deployment"))
    if reason:
        return "operator: Deployment %s/%s" % (namespace, reason)
    available = [c for c in st.get("conditions") or [] if c.get("type") == "Available"]
    if available and available[0].get("status") != "True":
        return "operator: Deployment %s/%s is not Available (%s)" % (
            namespace, name, available[0].get("message") or available[0].get("reason") or "no reason")
    return ""


def assess_controller(operator, identity, recorded, name):
    """The operator itself: its Deployment (present, rolled out, available), the recorded images and
    digests it must run, its ServiceAccount and a binding of it to an existing role. ``(summary, problems)``."""
    namespace = operator["namespace"]
    deployment = by_name(operator["deployments"]).get(name)
    problems = []
    reason = controller_reason(deployment, namespace, name)
    if reason:
        problems.append(reason)
    summary = {"deployment": name, "found": deployment is not None, "available": deployment is not None and not reason,
               "images": {}, "pods": [], "service_account": None, "bindings": []}
    if deployment is None:
        return summary, problems
    template = kube.spec(kube.spec(deployment).get("template"))
    images = dict((c.get("name") or "", c.get("image")) for c in _containers(template))
    summary["images"] = images
    pods = workload_pods(deployment, operator["pods"])
    for pod in pods:
        for status in kube.status(pod).get("containerStatuses") or []:
            summary["pods"].append({"pod": kube.meta(pod).get("name"), "container": status.get("name"),
                                    "image": status.get("image"), "digest": digest_of(status.get("imageID"))})
    for container, entry in sorted((recorded or {}).items()):
        if container not in images:
            problems.append("operator: Deployment %s/%s has no container %s (recorded with %s)" % (
                namespace, name, container, entry["image"]))
            continue
        if not image_matches(images[container], entry["image"]):
            problems.append("operator: Deployment %s/%s container %s runs %s, recorded %s" % (
                namespace, name, container, images[container], entry["image"]))
        if entry.get("digests"):
            ran = [p for p in summary["pods"] if p["container"] == container]
            wrong = ["%s: %s" % (p["pod"], p["digest"] or "no digest") for p in ran if p["digest"] not in entry["digests"]]
            if not ran:
                problems.append("operator: no running pod of Deployment %s/%s to check the recorded digest of %s"
                                % (namespace, name, container))
            elif wrong:
                problems.append("operator: Deployment %s/%s container %s does not run the recorded digest %s (%s)" % (
                    namespace, name, container, ", ".join(entry["digests"]), "; ".join(wrong)))
    if identity is not None:
        account = identity["service_account"]
        summary["service_account"] = {"name": account, "found": identity["found"] is not None}
        summary["bindings"] = identity["bindings"]
        if identity["found"] is None:
            problems.append("operator: ServiceAccount %s/%s of Deployment %s not found (its pods cannot be created)"
                            % (namespace, account, name))
        bound = [b for b in identity["bindings"] if b["role_found"]]
        if not bound:
            dangling = ["%s %s -> %s (missing)" % (b["kind"], b["name"], b["role"]) for b in identity["bindings"]]
            problems.append("operator: no RoleBinding or ClusterRoleBinding grants ServiceAccount %s/%s an existing role%s"
                            % (namespace, account, (": " + ", ".join(dangling)) if dangling else ""))
    return summary, problems


def _operator_tag(operator):
    deployment = by_name(operator["deployments"]).get(OPERATOR_DEPLOYMENT)
    image = workload_image(deployment) if deployment else None
    return image, (image_tag(image) if image else "")


def _workload(operator, component):
    kind, name = WORKLOADS.get(component, (None, None))
    if kind is None:
        return None, None, None
    items = operator["daemonsets"] if kind == "DaemonSet" else operator["deployments"]
    return kind, name, by_name(items).get(name)


def settle_reasons(operator, params):
    """Why the operator has not settled yet ([] = settled): the ClusterPolicy's state (and its status
    being for the current spec), the device plugin DaemonSet rolled out, the validator's pods Ready,
    and every found operand's template at the image the spec asks for (the operator has reconciled)."""
    policy, problem = select_policy(operator["policies"], params.get("cluster_policy"))
    if policy is None:
        return [problem]
    reasons = []
    name = params.get("operator_deployment", OPERATOR_DEPLOYMENT)
    if name:
        controller = controller_reason(by_name(operator["deployments"]).get(name), operator.get("namespace"), name)
        if controller:
            reasons.append(controller)
    state, message = policy_state(policy)
    if state != "ready":
        reasons.append("state %s (%s)" % (state or "unset", message or "no message"))
    stale = stale_status(policy)
    if stale:
        reasons.append(stale)
    tag = _operator_tag(operator)[1]
    for component, config in components(policy):
        kind, name, workload = _workload(operator, component)
        if workload is None or (config.get("enabled", True) is False):
            continue
        want = compose_image(config, component, tag)
        actual = workload_image(workload)
        if want and not image_matches(actual, want, component):
            reasons.append("%s %s: the operator has not applied spec.%s yet (template runs %s, the spec asks for %s)"
                           % (kind, name, component, actual, want))
    if device_plugin_enabled(policy):
        workload = _workload(operator, DEVICE_PLUGIN)[2]
        if workload is None:
            reasons.append("DaemonSet %s not found" % WORKLOADS[DEVICE_PLUGIN][1])
        elif rollout_reason(workload):
            reasons.append(rollout_reason(workload))
    validator = _workload(operator, VALIDATOR)[2]
    if validator is None:
        reasons.append("DaemonSet %s not found" % WORKLOADS[VALIDATOR][1])
    else:
        pods = workload_pods(validator, operator["pods"])
        desired = kube.status(validator).get("desiredNumberScheduled") or 0
        waiting = ["%s on %s" % (kube.meta(p).get("name"), kube.spec(p).get("nodeName") or "no node")
                   for p in pods if not pod_ready(p)]
        if waiting:
            reasons.append("%s: pods not Ready: %s" % (WORKLOADS[VALIDATOR][1], ", ".join(waiting)))
        elif desired == 0 or len(pods) < desired:
            reasons.append("%s: %d of %d pods Ready" % (WORKLOADS[VALIDATOR][1], len(pods), desired))
    return reasons


def _node(node, gpu_resource, problems):
    name = kube.meta(node).get("name")
    allocatable = (kube.status(node).get("allocatable") or {}).get(gpu_resource)
    if allocatable is not None:
        try:
            allocatable = kube.quantity_int(allocatable)
        except ValueError as exc:
            problems.append("node %s: allocatable %s: %s" % (name, gpu_resource, exc))
    ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                for c in kube.status(node).get("conditions") or [])
    return {"allocatable": allocatable, "ready": ready}


def assess_nodes(node_items, names, gpu_resource, expect, baseline, problems):
    index = by_name(node_items)
    nodes, unassessed = {}, []
    base_nodes = (baseline or {}).get("nodes")
    for name in names:
        node = index.get(name)
        if node is None:
            problems.append("node %s not found" % name)
            unassessed.append(name)
            continue
        facts = nodes[name] = _node(node, gpu_resource, problems)
        if not facts["ready"]:
            problems.append("node %s is not Ready" % name)
        if expect["device_plugin_enabled"] and not facts["allocatable"]:
            problems.append("node %s: no allocatable %s (%s) with the device plugin enabled" % (
                name, gpu_resource, facts["allocatable"]))
        if base_nodes is not None:
            before = base_nodes.get(name)
            if before is None:
                problems.append("node %s: not in the baseline's nodes, its allocatable %s cannot be compared" % (
                    name, gpu_resource))
            elif before.get("allocatable") != facts["allocatable"]:
                problems.append("node %s: allocatable %s changed: before %s, after %s" % (
                    name, gpu_resource, before.get("allocatable"), facts["allocatable"]))
    return nodes, unassessed


def assess_device_plugin(operator, policy, nodes, expect, problems):
    kind, name, workload = _workload(operator, DEVICE_PLUGIN)
    config = kube.spec(policy).get(DEVICE_PLUGIN) or {}
    expected = expect["images"].get(DEVICE_PLUGIN) or compose_image(config, DEVICE_PLUGIN)
    st = kube.status(workload)
    section = {"name": name, "found": workload is not None, "image": workload_image(workload) if workload else None,
               "expected_image": expected, "desired": st.get("desiredNumberScheduled"),
               "updated": st.get("updatedNumberScheduled"), "available": st.get("numberAvailable"), "pods": {}}
    enabled = policy is not None and device_plugin_enabled(policy)
    if workload is None:
        if enabled:
            problems.append("device plugin %s %s not found in namespace %s" % (kind, name, operator["namespace"]))
        return section
    if policy is not None and not enabled:
        problems.append("device plugin %s %s is present although spec.devicePlugin.enabled is false" % (kind, name))
    if expected and not image_matches(section["image"], expected):
        pods = workload_pods(workload, operator["pods"])
        if not (digest_of(expected) and pods and all(pod_runs(p, expected) for p in pods)):
            problems.append("device plugin %s %s: template image %s, expected %s" % (
                kind, name, section["image"], expected))
    container = (_containers(kube.spec(kube.spec(workload).get("template"))) or [{}])[0].get("name")
    on_node = {}
    for pod in workload_pods(workload, operator["pods"]):
        on_node.setdefault(kube.spec(pod).get("nodeName"), []).append(pod)
    for node in sorted(nodes):
        pods = on_node.get(node) or []
        if not pods:
            section["pods"][node] = None
            if enabled:
                problems.append("device plugin: no %s pod on node %s" % (name, node))
            continue
        section["pods"][node] = pod_image(pods[0], container)[0]
        if len(pods) > 1:
            problems.append("device plugin: %d %s pods on node %s (%s)" % (
                len(pods), name, node, ", ".join(kube.meta(p).get("name") for p in pods)))
        for pod in pods:
            if expected and not pod_runs(pod, expected, container_name=container):
                problems.append("device plugin pod %s on node %s runs %s, expected %s" % (
                    kube.meta(pod).get("name"), node, pod_image(pod, container)[0], expected))
    return section


def assess_operands(operator, policy, expect, problems):
    operands = {}
    tag = _operator_tag(operator)[1]
    pins = expect["images"]
    seen = set()
    for component, config in components(policy) if policy is not None else []:
        seen.add(component)
        kind, name, workload = _workload(operator, component)
        enabled = config.get("enabled", True) is not False
        pin = pins.get(component)
        spec_image = compose_image(config, component, tag)
        expected = pin or spec_image
        actual = workload_image(workload) if workload else None
        entry = {"kind": kind, "name": name, "enabled": enabled, "found": workload is not None, "pin": pin,
                 "spec_image": spec_image, "expected": expected, "actual": actual, "ok": None,
                 "pinned_by_digest": (digest_of(actual) is not None) if actual else None}
        operands[component] = entry
        where = "%s %s" % (kind, name) if kind else "no known workload"
        if not enabled:
            if pin:
                problems.append("operand %s: pinned in expect.images but spec.%s.enabled is false" % (component, component))
            continue
        if workload is None:
            if pin or component in REQUIRED:
                entry["ok"] = False
                problems.append("operand %s: %s not found in namespace %s%s" % (
                    component, where, operator["namespace"], " (pinned %s)" % pin if pin else ""))
            continue
        if expected is None:
            continue
        ok = image_matches(actual, expected, component)
        if not ok and digest_of(pin):
            pods = workload_pods(workload, operator["pods"])
            ok = bool(pods) and all(pod_runs(p, pin, component) for p in pods)
        entry["ok"] = ok
        if not ok:
            source = "pinned in expect.images" if pin else "from ClusterPolicy spec.%s" % component
            problems.append("operand %s (%s): runs %s, expected %s (%s)" % (component, where, actual, expected, source))
    if policy is not None:
        for component in sorted(set(pins) - seen):
            problems.append("expect.images.%s: the ClusterPolicy has no component %s with an image" % (component, component))
    return operands


def dra_objects(cluster):
    slices, claims, classes = cluster["resource_slices"], cluster["resource_claims"], cluster["device_classes"]
    by_driver = {}
    for item in slices or []:
        driver = kube.spec(item).get("driver") or ""
        by_driver[driver] = by_driver.get(driver, 0) + 1
    return {"served": slices is not None,
            "resource_slices": {"total": len(slices or []), "by_driver": by_driver,
                                "names": sorted(kube.meta(s).get("name") for s in slices or [])},
            "resource_claims": len(claims or []),
            "resource_claim_names": sorted("%s/%s" % (kube.meta(c).get("namespace"), kube.meta(c).get("name"))
                                           for c in claims or []),
            "device_classes": sorted(kube.meta(c).get("name") for c in classes or [])}


def new_dra_objects(current, base):
    """What ``current`` holds that the baseline did not: names where the baseline has them, else counts."""
    created = []
    base_slices = base.get("resource_slices") or {}
    if isinstance(base_slices.get("names"), list):
        created += ["resourceslice %s" % n for n in current["resource_slices"]["names"] if n not in base_slices["names"]]
    else:
        before = base_slices.get("by_driver") or {}
        for driver, count in sorted(current["resource_slices"]["by_driver"].items()):
            if count > (before.get(driver) or 0):
                created.append("%d resourceslice(s) of driver %s (baseline %d)" % (count, driver, before.get(driver) or 0))
    if isinstance(base.get("resource_claim_names"), list):
        created += ["resourceclaim %s" % n for n in current["resource_claim_names"] if n not in base["resource_claim_names"]]
    elif current["resource_claims"] > (base.get("resource_claims") or 0):
        created.append("%d resourceclaim(s) (baseline %d)" % (current["resource_claims"], base.get("resource_claims") or 0))
    base_classes = base.get("device_classes") or []
    created += ["deviceclass %s" % n for n in current["device_classes"] if n not in base_classes]
    return created


def assess(operator, cluster, params, names, reasons, waited=None, identity=None):
    """The module's result (less timing and API counters) from the last reads."""
    expect = expectations(params)
    problems = []
    policy, _problem = select_policy(operator["policies"], params.get("cluster_policy"))
    name = kube.meta(policy).get("name") if policy is not None else None
    deployment = params.get("operator_deployment", OPERATOR_DEPLOYMENT)
    controller, controller_problems = ({"deployment": None}, [])
    if deployment:
        controller, controller_problems = assess_controller(operator, identity, params.get("recorded_operator"), deployment)
        problems.extend(controller_problems)
        reasons = [r for r in reasons if not r.startswith("operator: ")]  # named once, by the controller check
    if reasons:
        if policy is None:
            text = reasons[0]
            if params.get("wait"):
                text += " after waiting %g s" % params["wait_timeout"]
        elif params.get("wait"):
            text = "ClusterPolicy %s not ready after %g s: %s" % (name, params["wait_timeout"], "; ".join(reasons))
        else:
            text = "ClusterPolicy %s not ready: %s" % (name, "; ".join(reasons))
        problems.append(text)
    state, message = policy_state(policy) if policy is not None else (None, None)
    operator_image, operator_tag = _operator_tag(operator)
    gpu_clusters = sorted(kube.meta(g).get("name") for g in cluster["gpu_clusters"] or [])
    mode = {"cluster_policy": name, "state": state, "message": message,
            "device_plugin_enabled": device_plugin_enabled(policy) if policy is not None else None,
            "cdi_enabled": cdi_enabled(policy) if policy is not None else None,
            "gpu_clusters": gpu_clusters, "operator_image": operator_image, "operator_version": operator_tag or None}
    if policy is not None:
        if mode["device_plugin_enabled"] != expect["device_plugin_enabled"]:
            problems.append("ClusterPolicy %s: spec.devicePlugin.enabled is %s (absent counts as true), expected %s" % (
                name, str(mode["device_plugin_enabled"]).lower(), str(expect["device_plugin_enabled"]).lower()))
        if expect["cdi_enabled"] is not None and mode["cdi_enabled"] != expect["cdi_enabled"]:
            problems.append("ClusterPolicy %s: spec.cdi.enabled is %s, expected %s" % (
                name, "not set" if mode["cdi_enabled"] is None else str(mode["cdi_enabled"]).lower(),
                str(expect["cdi_enabled"]).lower()))
    if gpu_clusters:
        problems.append("GPUCluster present: %s (the managed DRA path must never coexist with a ClusterPolicy)"
                        % ", ".join(gpu_clusters))
    if expect["operator_version"]:
        want = expect["operator_version"].strip().lstrip("v")
        if not operator_tag:
            problems.append("operator version: Deployment %s/%s not found or its image has no tag (expected %s)" % (
                operator["namespace"], OPERATOR_DEPLOYMENT, expect["operator_version"]))
        elif operator_tag.lstrip("v") != want:
            problems.append("operator version: Deployment %s/%s runs %s, expected %s" % (
                operator["namespace"], OPERATOR_DEPLOYMENT, operator_image, expect["operator_version"]))
    nodes, unassessed = assess_nodes(cluster["nodes"], names, params.get("gpu_resource") or GPU_RESOURCE, expect,
                                     params.get("baseline"), problems)
    device_plugin = assess_device_plugin(operator, policy, nodes, expect, problems)
    operands = assess_operands(operator, policy, expect, problems)
    dra = dra_objects(cluster)
    baseline = params.get("baseline") or {}
    if isinstance(baseline.get("dra_objects"), dict):
        created = new_dra_objects(dra, baseline["dra_objects"])
        if created:
            problems.append("DRA objects created: %s" % ", ".join(created))
    return {"ok": not problems, "problems": problems, "mode": mode, "nodes": nodes, "unassessed": unassessed,
            "operator": controller, "device_plugin": device_plugin, "operands": operands, "dra_objects": dra,
            "wait": {"requested": bool(params.get("wait")), "ready": not reasons and not controller_problems,
                     "waited_seconds": round(waited or 0.0, 3), "timeout": params.get("wait_timeout")}}


def verify(reader, params, clock=time.monotonic, sleep=time.sleep):
    """Read (polling with ``wait`` until settled or ``wait_timeout``), then judge. K8sApiError propagates."""
    names = check_params(params)
    namespace = params.get("namespace") or DEFAULT_NAMESPACE
    started = clock()
    deadline = started + (params["wait_timeout"] if params.get("wait") else 0)
    cache = {}
    while True:
        operator = read_operator(reader, namespace, cache)
        operator["namespace"] = namespace
        reasons = settle_reasons(operator, params)
        remaining = deadline - clock()
        if not reasons or not params.get("wait") or remaining <= 0:
            break
        sleep(min(params["poll_interval"], remaining))
    waited = clock() - started if params.get("wait") else 0.0
    deployment_name = params.get("operator_deployment", OPERATOR_DEPLOYMENT)
    identity = None
    if deployment_name:
        deployment = by_name(operator["deployments"]).get(deployment_name)
        if deployment is not None:
            identity = read_identity(reader, namespace, deployment)
    return assess(operator, read_cluster(reader), params, names, reasons, waited, identity)
