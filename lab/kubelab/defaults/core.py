# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""core/v1 (and networking.k8s.io/v1, rbac.authorization.k8s.io/v1) defaulting.

What ``pkg/apis/core/v1/defaults.go`` (with the ``+default`` markers of ``k8s.io/api/core/v1``
that ``zz_generated.defaults.go`` expands), ``pkg/apis/networking/v1/defaults.go`` and
``pkg/apis/rbac/v1/defaults.go`` set, plus the few v1 conversion and Go encoding effects that
show on every such object (``spec.serviceAccount`` mirrored, ``resources: {}`` on containers,
``divisor: "0"``). Every function changes its argument in place and is idempotent.

Registry behaviour that needs the store (Service cluster IPs and node ports, Pod status) is in
``Api._defaults``; ``service_allocate`` and ``service_keep_allocated`` here do the work.
"""

from __future__ import annotations

import ipaddress
import random

# (group, kind) -> function(obj) defaulting in place
DEFAULTERS: dict = {}

RBAC_GROUP = "rbac.authorization.k8s.io"
SERVICE_CIDR = ipaddress.ip_network("10.96.0.0/12")
KUBERNETES_SERVICE_IP = "10.96.0.1"  # the first address: default/kubernetes
NODE_PORT_RANGE = (30000, 32767)


def _defaulter(group: str, kind: str):
    def register(func):
        DEFAULTERS[(group, kind)] = func
        return func
    return register


def _dicts(value) -> list:
    """The dict items of a list (anything else in it is left for validation)."""
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _dict(parent: dict, key: str):
    value = parent.get(key)
    return value if isinstance(value, dict) else None


# -- containers -----------------------------------------------------------------------------------

def image_tag(image: str) -> str:
    """The tag ``parsers.ParseImageName`` finds: "latest" when there is neither tag nor digest."""
    image = str(image or "")
    if "@" in image:
        image = image.split("@", 1)[0]
        last = image.rsplit("/", 1)[-1]
        return last.split(":", 1)[1] if ":" in last else ""
    last = image.rsplit("/", 1)[-1]
    return last.split(":", 1)[1] if ":" in last else "latest"


def pull_policy(image: str) -> str:
    """``SetDefaults_Container``'s imagePullPolicy: Always for ``:latest`` (or no tag), else IfNotPresent."""
    return "Always" if image_tag(image) == "latest" else "IfNotPresent"


def _field_selector(ref) -> None:
    """``SetDefaults_ObjectFieldSelector``: apiVersion v1."""
    if isinstance(ref, dict) and not ref.get("apiVersion"):
        ref["apiVersion"] = "v1"


def _resource_field(ref) -> None:
    """A ResourceFieldSelector's ``divisor`` is a Quantity struct: Go encodes the zero value as "0"."""
    if isinstance(ref, dict) and ref.get("divisor") in (None, ""):
        ref["divisor"] = "0"


def _http_get(action) -> None:
    """``SetDefaults_HTTPGetAction``: path "/" and scheme HTTP."""
    if isinstance(action, dict):
        if not action.get("path"):
            action["path"] = "/"
        if not action.get("scheme"):
            action["scheme"] = "HTTP"


def _probe(probe) -> None:
    """``SetDefaults_Probe`` (timeouts and thresholds) and its handler's defaults."""
    if not isinstance(probe, dict):
        return
    for key, value in (("timeoutSeconds", 1), ("periodSeconds", 10), ("successThreshold", 1),
                       ("failureThreshold", 3)):
        if not probe.get(key):
            probe[key] = value
    _http_get(probe.get("httpGet"))
    grpc = _dict(probe, "grpc")
    if grpc is not None and grpc.get("service") is None:
        grpc["service"] = ""  # GRPCAction.Service: +default=""


def container(ctr: dict) -> None:
    """``SetDefaults_Container`` and the generated defaults of its ports, env and probes."""
    if not isinstance(ctr, dict):
        return
    if not ctr.get("imagePullPolicy"):
        ctr["imagePullPolicy"] = pull_policy(ctr.get("image", ""))
    if not ctr.get("terminationMessagePath"):
        ctr["terminationMessagePath"] = "/dev/termination-log"
    if not ctr.get("terminationMessagePolicy"):
        ctr["terminationMessagePolicy"] = "File"
    if not isinstance(ctr.get("resources"), dict):
        ctr["resources"] = {}  # ResourceRequirements is a struct: always encoded
    for port in _dicts(ctr.get("ports")):
        if not port.get("protocol"):
            port["protocol"] = "TCP"  # ContainerPort.Protocol: +default="TCP"
    for env in _dicts(ctr.get("env")):
        source = _dict(env, "valueFrom")
        if source is not None:
            _field_selector(source.get("fieldRef"))
            _resource_field(source.get("resourceFieldRef"))
    for key in ("livenessProbe", "readinessProbe", "startupProbe"):
        _probe(ctr.get(key))
    lifecycle = _dict(ctr, "lifecycle")
    if lifecycle is not None:
        for hook in ("postStart", "preStop"):
            handler = _dict(lifecycle, hook)
            if handler is not None:
                _http_get(handler.get("httpGet"))


# -- volumes --------------------------------------------------------------------------------------

VOLUME_SOURCES = (
    "hostPath", "emptyDir", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "secret", "nfs", "iscsi",
    "glusterfs", "persistentVolumeClaim", "rbd", "flexVolume", "cinder", "cephfs", "flocker", "downwardAPI", "fc",
    "azureFile", "configMap", "vsphereVolume", "quobyte", "azureDisk", "photonPersistentDisk", "projected",
    "portworxVolume", "scaleIO", "storageos", "csi", "ephemeral", "image",
)


def _downward_items(items) -> None:
    for item in _dicts(items):
        _field_selector(item.get("fieldRef"))
        _resource_field(item.get("resourceFieldRef"))


def persistent_volume_claim_spec(spec) -> None:
    """``SetDefaults_PersistentVolumeClaimSpec``: volumeMode Filesystem."""
    if isinstance(spec, dict) and not spec.get("volumeMode"):
        spec["volumeMode"] = "Filesystem"


def volume(vol: dict) -> None:
    """``SetDefaults_Volume`` and its sources' defaults (modes 0644 = 420, hostPath type "")."""
    if not isinstance(vol, dict):
        return
    if not any(vol.get(key) is not None for key in VOLUME_SOURCES):
        vol["emptyDir"] = {}
    if isinstance(vol.get("hostPath"), dict) and vol["hostPath"].get("type") is None:
        vol["hostPath"]["type"] = ""  # HostPathUnset
    for key in ("secret", "configMap", "downwardAPI", "projected"):
        source = _dict(vol, key)
        if source is not None and source.get("defaultMode") is None:
            source["defaultMode"] = 420
    if _dict(vol, "downwardAPI") is not None:
        _downward_items(vol["downwardAPI"].get("items"))
    if _dict(vol, "projected") is not None:
        for source in _dicts(vol["projected"].get("sources")):
            if _dict(source, "downwardAPI") is not None:
                _downward_items(source["downwardAPI"].get("items"))
            token = _dict(source, "serviceAccountToken")
            if token is not None and token.get("expirationSeconds") is None:
                token["expirationSeconds"] = 3600
    ephemeral = _dict(vol, "ephemeral")
    if ephemeral is not None and _dict(ephemeral, "volumeClaimTemplate") is not None:
        persistent_volume_claim_spec(ephemeral["volumeClaimTemplate"].get("spec"))
    image = _dict(vol, "image")
    if image is not None and not image.get("pullPolicy"):
        image["pullPolicy"] = pull_policy(image.get("reference", ""))


# -- pods -----------------------------------------------------------------------------------------

def service_account_names(spec: dict) -> None:
    """The v1 conversion of PodSpec: ``serviceAccountName`` from the deprecated ``serviceAccount`` when
    only that is set, and ``serviceAccount`` written back as ``serviceAccountName`` (which wins)."""
    if not spec.get("serviceAccountName") and spec.get("serviceAccount"):
        spec["serviceAccountName"] = spec["serviceAccount"]
    if spec.get("serviceAccountName"):
        spec["serviceAccount"] = spec["serviceAccountName"]
    elif "serviceAccount" in spec:
        del spec["serviceAccount"]


def pod_spec(spec: dict) -> None:
    """``SetDefaults_PodSpec`` and the container/volume defaults below it, in place.

    Shared by Pods and every PodTemplateSpec (``SetObjectDefaults_PodTemplate`` and the workloads'):
    what ``SetDefaults_Pod`` adds on top (requests from limits, enableServiceLinks, host ports) is
    in ``pod``.
    """
    if not isinstance(spec, dict):
        return
    if not spec.get("dnsPolicy"):
        spec["dnsPolicy"] = "ClusterFirst"
    if not spec.get("restartPolicy"):
        spec["restartPolicy"] = "Always"
    if not isinstance(spec.get("securityContext"), dict):
        spec["securityContext"] = {}
    if spec.get("terminationGracePeriodSeconds") is None:
        spec["terminationGracePeriodSeconds"] = 30
    if not spec.get("schedulerName"):
        spec["schedulerName"] = "default-scheduler"
    service_account_names(spec)
    for vol in _dicts(spec.get("volumes")):
        volume(vol)
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for ctr in _dicts(spec.get(key)):
            container(ctr)


def pod_template(template: dict) -> None:
    """A PodTemplateSpec inside a workload (Deployment, Job, ...): its ``spec`` defaulted as a pod's."""
    if isinstance(template, dict) and isinstance(template.get("spec"), dict):
        pod_spec(template["spec"])


def _requests_from_limits(ctr: dict) -> None:
    resources = _dict(ctr, "resources")
    if resources is None or not isinstance(resources.get("limits"), dict):
        return
    requests = resources.get("requests")
    if not isinstance(requests, dict):
        requests = resources["requests"] = {}
    for name, value in resources["limits"].items():
        requests.setdefault(name, value)


@_defaulter("", "Pod")
def pod(obj: dict) -> None:
    """``SetObjectDefaults_Pod``: ``SetDefaults_Pod`` (requests from limits, enableServiceLinks,
    hostNetwork host ports) and then ``SetDefaults_PodSpec`` with everything below it."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        spec = obj["spec"] = {}
    for key in ("containers", "initContainers"):
        for ctr in _dicts(spec.get(key)):
            _requests_from_limits(ctr)
    if spec.get("enableServiceLinks") is None:
        spec["enableServiceLinks"] = True
    if spec.get("hostNetwork") is True:
        for key in ("containers", "initContainers"):
            for ctr in _dicts(spec.get(key)):
                for port in _dicts(ctr.get("ports")):
                    if not port.get("hostPort") and port.get("containerPort"):
                        port["hostPort"] = port["containerPort"]
    pod_spec(spec)


@_defaulter("", "PodTemplate")
def pod_template_object(obj: dict) -> None:
    """``SetObjectDefaults_PodTemplate``."""
    pod_template(obj.get("template"))


def _quantity(value) -> float:
    from kubelab.cel import CelEvalError, parse_quantity  # pylint: disable=import-outside-toplevel
    try:
        return parse_quantity(str(value)).value
    except CelEvalError:
        return 0.0


def pod_qos(obj: dict) -> str:
    """``qos.ComputePodQOS``: Guaranteed, Burstable or BestEffort from the cpu/memory requests and limits
    of the containers and init containers (or of the pod-level ``spec.resources`` when set)."""
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    requests: dict = {}
    limits: dict = {}
    guaranteed = True
    pod_level = spec.get("resources") if isinstance(spec.get("resources"), dict) else None
    if pod_level is not None:  # PodLevelResources: the pod's own requests and limits decide
        groups = [pod_level]
    else:
        groups = [c.get("resources") if isinstance(c.get("resources"), dict) else {}
                  for c in _dicts(spec.get("containers")) + _dicts(spec.get("initContainers"))]
    for resources in groups:
        for name, value in (resources.get("requests") or {}).items():
            amount = _quantity(value)
            if name in ("cpu", "memory") and amount > 0:
                requests[name] = requests.get(name, 0.0) + amount
        found = set()
        for name, value in (resources.get("limits") or {}).items():
            amount = _quantity(value)
            if name in ("cpu", "memory") and amount > 0:
                found.add(name)
                limits[name] = limits.get(name, 0.0) + amount
        if not {"cpu", "memory"} <= found and (pod_level is None or resources.get("limits")):
            guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    if guaranteed and all(name in limits and abs(limits[name] - amount) < 1e-9 for name, amount in requests.items()):
        if len(requests) == len(limits):
            return "Guaranteed"
    return "Burstable"


# -- other core/v1 kinds --------------------------------------------------------------------------

def externally_accessible(spec: dict) -> bool:
    """``service.ExternallyAccessible``: LoadBalancer, NodePort, or ClusterIP with external IPs."""
    kind = spec.get("type")
    return kind in ("LoadBalancer", "NodePort") or (kind == "ClusterIP" and bool(spec.get("externalIPs")))


@_defaulter("", "Service")
def service(obj: dict) -> None:
    """``SetDefaults_Service``: type, session affinity, port protocol and targetPort, traffic policies,
    allocateLoadBalancerNodePorts; IP families and addresses are the registry's (``service_allocate``)."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        spec = obj["spec"] = {}
    if not spec.get("sessionAffinity"):
        spec["sessionAffinity"] = "None"
    if spec["sessionAffinity"] == "None":
        spec.pop("sessionAffinityConfig", None)
    elif spec["sessionAffinity"] == "ClientIP":
        config = spec.get("sessionAffinityConfig")
        client = config.get("clientIP") if isinstance(config, dict) else None
        if not isinstance(client, dict) or client.get("timeoutSeconds") is None:
            spec["sessionAffinityConfig"] = {"clientIP": {"timeoutSeconds": 10800}}
    if not spec.get("type"):
        spec["type"] = "ClusterIP"
    for port in _dicts(spec.get("ports")):
        if not port.get("protocol"):
            port["protocol"] = "TCP"
        if port.get("targetPort") in (None, 0, "") and port.get("port") is not None:
            port["targetPort"] = port["port"]
    if externally_accessible(spec) and not spec.get("externalTrafficPolicy"):
        spec["externalTrafficPolicy"] = "Cluster"
    if spec.get("internalTrafficPolicy") is None and spec["type"] in ("NodePort", "LoadBalancer", "ClusterIP"):
        spec["internalTrafficPolicy"] = "Cluster"
    status = obj.get("status")
    if not isinstance(status, dict):
        status = obj["status"] = {}
    if not isinstance(status.get("loadBalancer"), dict):
        status["loadBalancer"] = {}  # ServiceStatus.LoadBalancer is a struct: always encoded
    if spec["type"] == "LoadBalancer":
        if spec.get("allocateLoadBalancerNodePorts") is None:
            spec["allocateLoadBalancerNodePorts"] = True
        for ingress in _dicts(status["loadBalancer"].get("ingress")):
            if ingress.get("ip") and ingress.get("ipMode") is None:
                ingress["ipMode"] = "VIP"


def _invalid(name: str, path: str, value, message: str):
    from kubelab.errors import ApiError  # pylint: disable=import-outside-toplevel
    detail = "%s: Invalid value: %s: %s" % (path, value, message)
    cause = {"reason": "FieldValueInvalid", "message": "Invalid value: %s: %s" % (value, message), "field": path}
    return ApiError(422, "Invalid", 'Service "%s" is invalid: %s' % (name, detail),
                    {"name": name, "kind": "Service", "causes": [cause]})


def _go_strings(values) -> str:
    return "[]string{%s}" % ", ".join('"%s"' % v for v in values)


def service_allocate(obj: dict, existing: list) -> None:
    """What the Service registry does on create (``allocateCreate``, ``normalizeClusterIPs``):
    ``clusterIPs`` from ``clusterIP``, ``ipFamilyPolicy`` and ``ipFamilies`` (``initIPFamilyFields`` on
    a single-stack IPv4 cluster), a cluster IP from 10.96.0.0/12 and node ports from 30000-32767 not
    used by ``existing`` (the other stored Services). ExternalName services get neither."""
    spec = obj.setdefault("spec", {})
    name = (obj.get("metadata") or {}).get("name", "")
    if spec.get("type") == "ExternalName":
        return
    if spec.get("clusterIP") and not spec.get("clusterIPs"):
        spec["clusterIPs"] = [spec["clusterIP"]]
    elif spec.get("clusterIPs") and not spec.get("clusterIP"):
        spec["clusterIP"] = spec["clusterIPs"][0]
    headless = spec.get("clusterIP") == "None"
    if spec.get("ipFamilyPolicy") is None:
        spec["ipFamilyPolicy"] = "RequireDualStack" if headless and not spec.get("selector") else "SingleStack"
    if not spec.get("ipFamilies"):
        spec["ipFamilies"] = ["IPv4"]
        if headless and not spec.get("selector") and spec["ipFamilyPolicy"] != "SingleStack":
            spec["ipFamilies"].append("IPv6")  # headless and selectorless: both families, even single-stack
    used_ips, used_ports = set(), set()
    for other in existing:
        other_spec = other.get("spec") or {}
        used_ips.update(other_spec.get("clusterIPs") or [other_spec.get("clusterIP")])
        used_ports.update(p.get("nodePort") for p in _dicts(other_spec.get("ports")))
        used_ports.add(other_spec.get("healthCheckNodePort"))
    if not headless:
        wanted = spec.get("clusterIP")
        if wanted:
            try:
                address = ipaddress.ip_address(wanted)
            except ValueError:
                address = None
            if address is None or address not in SERVICE_CIDR:
                raise _invalid(name, "spec.clusterIPs", _go_strings([wanted]),
                               "failed to allocate IP %s: the provided IP (%s) is not in the valid range. The range "
                               "of valid IPs is %s" % (wanted, wanted, SERVICE_CIDR))
            if wanted in used_ips:
                raise _invalid(name, "spec.clusterIPs", _go_strings([wanted]),
                               "failed to allocate IP %s: provided IP is already allocated" % wanted)
        else:
            spec["clusterIP"] = _free_ip(used_ips)
            spec["clusterIPs"] = [spec["clusterIP"]]
    if spec.get("type") in ("NodePort", "LoadBalancer"):
        wants_ports = spec["type"] == "NodePort" or spec.get("allocateLoadBalancerNodePorts") is not False
        for port in _dicts(spec.get("ports")):
            if port.get("nodePort"):
                if port["nodePort"] in used_ports:
                    raise _invalid(name, "spec.ports[%d].nodePort" % spec["ports"].index(port), port["nodePort"],
                                   "provided port is already allocated")
                used_ports.add(port["nodePort"])
            elif wants_ports:
                port["nodePort"] = _free_port(used_ports)
                used_ports.add(port["nodePort"])
        if spec["type"] == "LoadBalancer" and spec.get("externalTrafficPolicy") == "Local" \
                and not spec.get("healthCheckNodePort"):
            spec["healthCheckNodePort"] = _free_port(used_ports)


def _free_ip(used: set) -> str:
    """A random free address of the range, as the bitmap allocator's ``AllocateNext`` (network, broadcast
    and the kubernetes service's first address excluded)."""
    size = SERVICE_CIDR.num_addresses
    for _attempt in range(10000):
        candidate = str(SERVICE_CIDR.network_address + random.randrange(2, size - 1))
        if candidate not in used and candidate != KUBERNETES_SERVICE_IP:
            return candidate
    raise RuntimeError("service IP range exhausted")


def _free_port(used: set) -> int:
    low, high = NODE_PORT_RANGE
    free = [p for p in range(low, high + 1) if p not in used]
    if not free:
        raise RuntimeError("node port range exhausted")
    return random.choice(free)


def service_keep_allocated(obj: dict, old: dict) -> None:
    """``patchAllocatedValues`` on update: a PUT that leaves out ``clusterIP``/``clusterIPs``, node ports
    or ``healthCheckNodePort`` keeps the stored ones (allocation happens on create only)."""
    spec = obj.setdefault("spec", {})
    old_spec = (old or {}).get("spec") or {}
    if spec.get("type") == "ExternalName" or old_spec.get("type") == "ExternalName":
        return
    if not spec.get("clusterIP") and old_spec.get("clusterIP"):
        spec["clusterIP"] = old_spec["clusterIP"]
    if not spec.get("clusterIPs") and old_spec.get("clusterIPs") and spec.get("clusterIP") == old_spec["clusterIPs"][0]:
        spec["clusterIPs"] = list(old_spec["clusterIPs"])
    for key in ("ipFamilies", "ipFamilyPolicy"):
        if spec.get(key) is None and old_spec.get(key) is not None:
            spec[key] = old_spec[key]
    if spec.get("type") in ("NodePort", "LoadBalancer"):
        old_ports = {(p.get("protocol", "TCP"), p.get("port")): p.get("nodePort")
                     for p in _dicts(old_spec.get("ports"))}
        for port in _dicts(spec.get("ports")):
            previous = old_ports.get((port.get("protocol", "TCP"), port.get("port")))
            if not port.get("nodePort") and previous:
                port["nodePort"] = previous
        if not spec.get("healthCheckNodePort") and old_spec.get("healthCheckNodePort") \
                and spec.get("externalTrafficPolicy") == "Local":
            spec["healthCheckNodePort"] = old_spec["healthCheckNodePort"]


@_defaulter("", "Secret")
def secret(obj: dict) -> None:
    """``SetDefaults_Secret``: type Opaque."""
    if not obj.get("type"):
        obj["type"] = "Opaque"


@_defaulter("", "PersistentVolumeClaim")
def persistent_volume_claim(obj: dict) -> None:
    """``SetDefaults_PersistentVolumeClaim`` (status phase Pending) and its spec's volumeMode."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        spec = obj["spec"] = {}
    persistent_volume_claim_spec(spec)
    if not isinstance(spec.get("resources"), dict):
        spec["resources"] = {}  # VolumeResourceRequirements is a struct: always encoded
    status = obj.get("status")
    if not isinstance(status, dict):
        status = obj["status"] = {}
    if not status.get("phase"):
        status["phase"] = "Pending"


@_defaulter("", "Endpoints")
def endpoints(obj: dict) -> None:
    """``SetDefaults_Endpoints``: ports protocol TCP."""
    for subset in _dicts(obj.get("subsets")):
        for port in _dicts(subset.get("ports")):
            if not port.get("protocol"):
                port["protocol"] = "TCP"


@_defaulter("", "Namespace")
def namespace(obj: dict) -> None:
    """``SetDefaults_Namespace`` (the ``kubernetes.io/metadata.name`` label, on every write) and
    ``SetDefaults_NamespaceStatus`` (phase Active)."""
    meta = obj.get("metadata")
    if isinstance(meta, dict) and meta.get("name"):
        labels = meta.get("labels")
        if not isinstance(labels, dict):
            labels = meta["labels"] = {}
        labels["kubernetes.io/metadata.name"] = meta["name"]
    status = obj.get("status")
    if isinstance(status, dict) and not status.get("phase"):
        status["phase"] = "Active"


@_defaulter("", "Node")
def node(obj: dict) -> None:
    """``SetDefaults_NodeStatus``: allocatable copied from capacity when absent."""
    status = obj.get("status")
    if isinstance(status, dict) and status.get("allocatable") is None and isinstance(status.get("capacity"), dict):
        status["allocatable"] = dict(status["capacity"])


# -- networking.k8s.io/v1 and rbac.authorization.k8s.io/v1 ----------------------------------------

@_defaulter("networking.k8s.io", "NetworkPolicy")
def network_policy(obj: dict) -> None:
    """``SetDefaults_NetworkPolicy`` (policyTypes Ingress, plus Egress with egress rules) and
    ``SetDefaults_NetworkPolicyPort`` (protocol TCP)."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        spec = obj["spec"] = {}
    if not spec.get("policyTypes"):
        spec["policyTypes"] = ["Ingress"] + (["Egress"] if spec.get("egress") else [])
    for direction in ("ingress", "egress"):
        for rule in _dicts(spec.get(direction)):
            for port in _dicts(rule.get("ports")):
                if port.get("protocol") is None:
                    port["protocol"] = "TCP"


def _subjects(obj: dict) -> None:
    """``SetDefaults_Subject``: apiGroup rbac.authorization.k8s.io for User and Group ("" for
    ServiceAccount, which the encoding omits)."""
    for subject in _dicts(obj.get("subjects")):
        if not subject.get("apiGroup") and subject.get("kind") in ("User", "Group"):
            subject["apiGroup"] = RBAC_GROUP


@_defaulter(RBAC_GROUP, "RoleBinding")
def role_binding(obj: dict) -> None:
    """``SetDefaults_RoleBinding`` (roleRef apiGroup) and its subjects'."""
    role_ref = obj.get("roleRef")
    if isinstance(role_ref, dict) and not role_ref.get("apiGroup"):
        role_ref["apiGroup"] = RBAC_GROUP
    _subjects(obj)


@_defaulter(RBAC_GROUP, "ClusterRoleBinding")
def cluster_role_binding(obj: dict) -> None:
    """``SetDefaults_ClusterRoleBinding`` (roleRef apiGroup) and its subjects'."""
    role_binding(obj)
