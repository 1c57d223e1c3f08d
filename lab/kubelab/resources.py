# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The resource types the lab serves: built-ins, and custom resources of Established CRDs."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

ALL_VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
CLUSTER_VERBS = ALL_VERBS


@dataclass(frozen=True)
class ResourceType:
    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    singular: str = ""
    short_names: tuple = ()
    subresources: tuple = ()  # "status", "scale"; pods also "eviction"
    categories: tuple = ()
    custom: bool = False
    # etcd prefix below /registry (kube-apiserver's own names: nodes are "minions").
    storage: str = ""

    @property
    def api_version(self) -> str:
        return "%s/%s" % (self.group, self.version) if self.group else self.version

    @property
    def list_kind(self) -> str:
        return self.kind + "List"

    @property
    def gv_path(self) -> str:
        return "/apis/%s/%s" % (self.group, self.version) if self.group else "/api/v1"

    @property
    def has_status(self) -> bool:
        return "status" in self.subresources

    def prefix(self, namespace: str | None = None) -> str:
        base = "/registry/" + (self.storage or (("%s/%s" % (self.group, self.plural)) if self.custom else self.plural))
        if self.namespaced and namespace:
            return "%s/%s/" % (base, namespace)
        return base + "/"

    def key(self, namespace: str | None, name: str) -> str:
        return self.prefix(namespace if self.namespaced else None) + name


def _r(group, version, kind, plural, namespaced, short=(), sub=(), storage="", categories=()):
    return ResourceType(group, version, kind, plural, namespaced, kind.lower(), tuple(short), tuple(sub),
                        tuple(categories), False, storage)


BUILTINS = [
    _r("", "v1", "Namespace", "namespaces", False, ["ns"], ["status", "finalize"]),
    _r("", "v1", "Node", "nodes", False, ["no"], ["status"], storage="minions"),
    _r("", "v1", "Pod", "pods", True, ["po"], ["status", "binding", "eviction", "ephemeralcontainers"], categories=["all"]),
    _r("", "v1", "ConfigMap", "configmaps", True, ["cm"]),
    _r("", "v1", "Secret", "secrets", True),
    _r("", "v1", "Event", "events", True, ["ev"]),
    _r("", "v1", "Service", "services", True, ["svc"], ["status"], storage="services/specs", categories=["all"]),
    _r("", "v1", "ServiceAccount", "serviceaccounts", True, ["sa"]),
    _r("", "v1", "Endpoints", "endpoints", True, ["ep"]),
    _r("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", True, ["pvc"], ["status"]),
    _r("apps", "v1", "Deployment", "deployments", True, ["deploy"], ["status", "scale"], categories=["all"]),
    _r("apps", "v1", "ReplicaSet", "replicasets", True, ["rs"], ["status", "scale"], categories=["all"]),
    _r("apps", "v1", "DaemonSet", "daemonsets", True, ["ds"], ["status"], categories=["all"]),
    _r("apps", "v1", "StatefulSet", "statefulsets", True, ["sts"], ["status", "scale"], categories=["all"]),
    _r("apps", "v1", "ControllerRevision", "controllerrevisions", True),
    _r("batch", "v1", "Job", "jobs", True, [], ["status"], categories=["all"]),
    _r("batch", "v1", "CronJob", "cronjobs", True, ["cj"], ["status"], categories=["all"]),
    _r("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", True, ["pdb"], ["status"]),
    _r("networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies", True, ["netpol"]),
    _r("node.k8s.io", "v1", "RuntimeClass", "runtimeclasses", False),
    _r("rbac.authorization.k8s.io", "v1", "Role", "roles", True),
    _r("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", True),
    _r("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", False),
    _r("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", False),
    _r("coordination.k8s.io", "v1", "Lease", "leases", True),
    _r("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", False, ["crd", "crds"],
       ["status"], storage="apiextensions.k8s.io/customresourcedefinitions"),
    _r("resource.k8s.io", "v1", "DeviceClass", "deviceclasses", False),
    _r("resource.k8s.io", "v1", "ResourceClaim", "resourceclaims", True, [], ["status"]),
    _r("resource.k8s.io", "v1", "ResourceClaimTemplate", "resourceclaimtemplates", True),
    _r("resource.k8s.io", "v1", "ResourceSlice", "resourceslices", False),
    # DRADeviceTaintRules is GA in 1.37 (DOMAIN.md §3): served at resource.k8s.io/v1 with status.
    _r("resource.k8s.io", "v1", "DeviceTaintRule", "devicetaintrules", False, [], ["status"]),
]

# Kinds whose DELETE answers with the object (graceful or finalized), as kube-apiserver does.
RETURN_OBJECT_ON_DELETE = {"Pod", "Namespace", "CustomResourceDefinition"}


@dataclass
class Registry:
    """Resource types by (group, version, plural); custom ones come and go with their CRDs."""

    types: dict = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    generation: int = 0  # bumped on every change (discovery caches key on it)

    def __post_init__(self):
        for rtype in BUILTINS:
            self.types[(rtype.group, rtype.version, rtype.plural)] = rtype

    def get(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self.types.get((group, version, plural))

    def by_kind(self, api_version: str, kind: str) -> ResourceType | None:
        group, _sep, version = api_version.rpartition("/")
        for rtype in list(self.types.values()):
            if rtype.group == group and rtype.version == version and rtype.kind == kind:
                return rtype
        return None

    def all(self) -> list[ResourceType]:
        return sorted(self.types.values(), key=lambda r: (r.group, r.version, r.plural))

    def groups(self) -> dict[str, list[str]]:
        """group -> versions (preferred first)."""
        result: dict[str, list[str]] = {}
        for rtype in self.all():
            versions = result.setdefault(rtype.group, [])
            if rtype.version not in versions:
                versions.append(rtype.version)
        for versions in result.values():
            versions.sort(key=_version_priority)
        return result

    def set_custom(self, crd: dict) -> None:
        """Serve (or stop serving) the custom resources of ``crd`` according to its state."""
        spec = crd.get("spec") or {}
        names = spec.get("names") or {}
        group = spec.get("group", "")
        conditions = (crd.get("status") or {}).get("conditions") or []
        established = any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)
        terminating = bool((crd.get("metadata") or {}).get("deletionTimestamp"))
        with self.lock:
            for key in [k for k, r in self.types.items() if r.custom and r.group == group and r.plural == names.get("plural")]:
                del self.types[key]
            if established and not terminating:
                for version in spec.get("versions") or []:
                    if not version.get("served", True):
                        continue
                    sub = []
                    subresources = version.get("subresources") or {}
                    if "status" in subresources:
                        sub.append("status")
                    if "scale" in subresources:
                        sub.append("scale")
                    rtype = ResourceType(group, version["name"], names.get("kind", ""), names.get("plural", ""),
                                         spec.get("scope", "Namespaced") == "Namespaced",
                                         names.get("singular") or names.get("kind", "").lower(),
                                         tuple(names.get("shortNames") or ()), tuple(sub),
                                         tuple(names.get("categories") or ()), True)
                    self.types[(group, version["name"], rtype.plural)] = rtype
            self.generation += 1

    def remove_custom(self, group: str, plural: str) -> None:
        with self.lock:
            for key in [k for k, r in self.types.items() if r.custom and r.group == group and r.plural == plural]:
                del self.types[key]
            self.generation += 1


def _version_priority(version: str):
    """Kubernetes version priority: GA > beta > alpha, higher numbers first."""
    import re
    match = re.match(r"^v(\d+)(?:(alpha|beta)(\d+))?$", version)
    if not match:
        return (3, 0, 0, version)
    major = int(match.group(1))
    stage = {"alpha": 2, "beta": 1, None: 0}[match.group(2)]
    return (stage, -major, -int(match.group(3) or 0), version)
