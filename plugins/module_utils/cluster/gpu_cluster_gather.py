# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The read plan of ``gpu_cluster_facts``: which API paths are read, once each, for which section.

Reads go through a *reader* (``get(path)``, ``list(path, label_selector=None)``; in the module a
:class:`~.k8s_client.K8sReader`, in unit tests a dict of recorded responses). Cost is one paged list
per kind and never a call per node: two discovery reads (``/version``, ``/apis``), then nodes,
ResourceSlices, DeviceClasses, ResourceClaims, PDBs, RuntimeClasses, the Helm Secrets of one
release, DaemonSets/Deployments/ReplicaSets/Pods per watched namespace, and for the operator's
CRD groups one discovery read per group-version plus one GET per CRD (CRDs are not listed: a
cluster's full CRD list carries every schema of every operator and can weigh megabytes).

Kinds or groups the server does not serve (404) are not errors: the section stays empty and a
``problems`` entry says what is not served. Forbidden is not absent: a 403 (RBAC) on any read of an
included section - the Helm storage Secrets, CRDs, ClusterPolicy/GPUCluster, ResourceClaims, nodes,
everything the gate decides on - propagates as :class:`~.k8s_client.K8sApiError` naming the verb
and the resource, and the module fails; a section the caller does not need is left out with
``include`` instead. Other API errors (after the client's retries) propagate the same way.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster import objects as kube
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster import gpu_cluster as gc
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster.client import K8sApiError

SECTIONS = ("nodes", "operator", "dra", "pdbs", "claims")
OPERATOR_CRD_GROUPS = ("nvidia.com", "resource.nvidia.com", "nfd.k8s-sigs.io")
CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
DRA = "/apis/resource.k8s.io/v1"


class Plan:
    def __init__(self, reader, groups, problems):
        self.reader = reader
        self.groups = groups
        self.problems = problems

    def served(self, group, version):
        return version in self.groups.get(group, [])

    def list(self, what, path, label_selector=None):
        """Items, or [] with a problem for a 404 (not served); a 403 or any other error raises."""
        try:
            return self.reader.list(path, label_selector=label_selector)
        except K8sApiError as exc:
            if kube.not_found(exc):
                self.problems.append(gc.problem(what, "not served (%s answered 404: %s)" % (exc.call, exc.reason)))
                return []
            raise


def operator_crds(plan):
    """CRDs of the operator's groups: discovery names their resources, one GET per CRD."""
    names = []
    for group in OPERATOR_CRD_GROUPS:
        for version in plan.groups.get(group, []):
            doc = kube.get_or_none(plan.reader, "/apis/%s/%s" % (group, version)) or {}
            for resource in doc.get("resources") or []:
                name = "%s.%s" % (resource.get("name"), group)
                if "/" not in resource.get("name", "/") and name not in names:
                    names.append(name)
    crds = {}
    for name in sorted(names):
        crd = kube.get_or_none(plan.reader, "%s/%s" % (CRD_PATH, name))
        if crd is not None:  # None: an aggregated API, not a CRD
            crds[name] = crd
    return crds


def custom_objects(plan, crds, plural, group):
    name = "%s.%s" % (plural, group)
    crd = crds.get(name)
    version = gc.read_version(crd) if crd else None
    if version is None:
        plan.problems.append(gc.problem(name, "not served (no CRD)"))
        return []
    return gc.custom_resources(plan.list(name, "/apis/%s/%s/%s" % (group, version, plural)))


def operator_section(plan, release, namespace, namespaces):
    section = {}
    secrets = plan.list("helm release %s/%s" % (namespace, release), "/api/v1/namespaces/%s/secrets" % namespace,
                        label_selector="owner=helm,name=%s,status!=superseded" % release)
    section["helm_release"] = gc.helm_release(secrets, release, namespace, plan.problems)
    daemonsets, deployments, replicasets, pods = [], [], [], []
    for ns in namespaces:
        daemonsets += plan.list("daemonsets in %s" % ns, "/apis/apps/v1/namespaces/%s/daemonsets" % ns)
        deployments += plan.list("deployments in %s" % ns, "/apis/apps/v1/namespaces/%s/deployments" % ns)
        replicasets += plan.list("replicasets in %s" % ns, "/apis/apps/v1/namespaces/%s/replicasets" % ns)
        pods += plan.list("pods in %s" % ns, "/api/v1/namespaces/%s/pods" % ns)
    section["workloads"] = gc.workloads(daemonsets, deployments, replicasets, pods)
    if "nvidia.com" not in plan.groups:
        plan.problems.append(gc.problem("nvidia.com", "not served: no GPU Operator CRDs (ClusterPolicy, GPUCluster)"))
    crds = operator_crds(plan)
    section["crds"] = [gc.crd_facts(crds[name]) for name in sorted(crds)]
    if "nvidia.com" in plan.groups:
        section["cluster_policies"] = custom_objects(plan, crds, "clusterpolicies", "nvidia.com")
        section["gpu_clusters"] = custom_objects(plan, crds, "gpuclusters", "nvidia.com")
    else:
        section["cluster_policies"], section["gpu_clusters"] = [], []
    return section


def gather(reader, include=SECTIONS, operator_namespace="gpu-operator", operator_release="gpu-operator",
           namespaces=None):
    """The ``gpu_cluster`` facts (schema version 1). Sections not in ``include`` are null."""
    problems = []
    facts = {"schema_version": gc.SCHEMA_VERSION, "included": [s for s in SECTIONS if s in include]}
    facts["api_server"] = gc.api_server(reader.get("/version"))
    facts["apis"] = gc.api_groups(reader.get("/apis"))
    plan = Plan(reader, facts["apis"]["groups"], problems)
    dra_served = facts["apis"]["resource_k8s_io_v1"]
    if not dra_served and ("dra" in include or "claims" in include):
        problems.append(gc.problem("resource.k8s.io/v1", "not served: no ResourceSlices, DeviceClasses or ResourceClaims"))

    slices = None
    facts["device_classes"] = None
    if "dra" in include:
        slices = plan.list("resourceslices", DRA + "/resourceslices") if dra_served else []
        classes = plan.list("deviceclasses", DRA + "/deviceclasses") if dra_served else []
        facts["device_classes"] = gc.device_classes(classes)

    facts["nodes"] = gc.nodes_facts(plan.list("nodes", "/api/v1/nodes"), slices, problems) if "nodes" in include else None

    facts["resource_claims"] = None
    if "claims" in include:
        claims = plan.list("resourceclaims", DRA + "/resourceclaims") if dra_served else []
        facts["resource_claims"] = gc.resource_claims(claims)

    facts["pdbs"] = None
    if "pdbs" in include:
        if plan.served("policy", "v1"):
            facts["pdbs"] = gc.pdbs(plan.list("poddisruptionbudgets", "/apis/policy/v1/poddisruptionbudgets"))
        else:
            problems.append(gc.problem("policy/v1", "not served: no PodDisruptionBudgets"))
            facts["pdbs"] = []

    facts["operator"] = facts["runtime_classes"] = None
    if "operator" in include:
        if plan.served("node.k8s.io", "v1"):
            facts["runtime_classes"] = gc.runtime_classes(plan.list("runtimeclasses", "/apis/node.k8s.io/v1/runtimeclasses"))
        else:
            problems.append(gc.problem("node.k8s.io/v1", "not served: no RuntimeClasses"))
            facts["runtime_classes"] = []
        facts["operator"] = operator_section(plan, operator_release, operator_namespace,
                                             namespaces if namespaces else [operator_namespace])
    facts["problems"] = problems
    return facts
