#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: dra_canary_workloads
short_description: The DRA canary build's writes - the extended-resource DeviceClass and the guarded smoke workloads
version_added: 0.5.0
description:
  - The two steps of the DRA canary build (docs/canary.md) that write to the cluster, chosen by O(step); the
    read-only checks are M(gpufleet.dra_gate.dra_canary_check)'s. Both return C(findings) (id, severity,
    subject, observed, expected, message, source) and C(ok) (no blocking finding); the phase records them
    and its gate decides.
  - C(device_class) - the DeviceClass O(device_class_name) with the C(gpu.nvidia.com) selector and
    C(spec.extendedResourceName) O(extended_resource_name), created or updated (O(device_class_state=present))
    or deleted (C(absent)); a class of that name this collection does not manage is refused.
  - C(workloads) - submits O(workloads) (pods with a C(gpu.nvidia.com) claim, a C(vfio.gpu.nvidia.com)
    claim, or a plain C(nvidia.com/gpu) request served through the extended-resource DeviceClass) in
    waves from the passthrough guard - container and VFIO claims that could share a physical GPU are never
    in flight together (O(guard=serialize)) or refused (C(refuse)) - waits for each pod to run, records
    the allocated devices, deletes it and waits until its claims are released before the next wave.
    Everything created is deleted at the end, also on failure.
author:
  - gpufleet maintainers (@gpufleet)
options:
  step:
    description: Which write runs.
    type: str
    required: true
    choices: [device_class, workloads]
  device_class_name:
    description: Name of the extended-resource DeviceClass (C(device_class)).
    type: str
    default: gpu-extended.nvidia.com
  device_class_state:
    description: C(present) creates or updates it, C(absent) deletes it.
    type: str
    choices: [present, absent]
    default: present
  extended_resource_name:
    description: The extended resource the DeviceClass serves (and the C(extended) workloads request).
    type: str
    default: nvidia.com/gpu
  workloads:
    description:
      - Pods to submit (C(workloads)), each with C(name), C(kind) (C(container), C(extended) or C(vfio)) and
        optional C(node).
    type: list
    elements: dict
    default: []
  guard:
    description: C(serialize) submits conflicting container and VFIO claims in separate waves; C(refuse) refuses them.
    type: str
    choices: [serialize, refuse]
    default: serialize
  namespace:
    description: Namespace of the submitted workloads (created when missing, deleted when this run created it).
    type: str
    default: dra-canary-smoke
  tolerations:
    description: Tolerations of the submitted pods (the canary group's taints).
    type: list
    elements: dict
    default: []
  image:
    description: Image of the submitted pods.
    type: str
    default: nvcr.io/nvidia/cuda:12.9.1-base-ubuntu24.04
  workload_timeout:
    description: Seconds each wave may take to run and each release may take.
    type: float
    default: 120
  run_id:
    description: Label value that marks this run's objects (C(gpufleet.io/dra-canary-run)).
    type: str
    default: dra-canary
extends_documentation_fragment:
  - gpufleet.dra_gate.k8s_auth
  - gpufleet.dra_gate.attributes.k8s
attributes:
  check_mode:
    support: full
    description:
      - C(device_class) sends its write with C(dryRun=All). C(workloads) submits nothing in check mode and
        returns the planned waves.
  diff_mode:
    support: full
    description:
      - C(device_class) returns the DeviceClass before and after.
notes:
  - Needs get/list/create/update/delete on deviceclasses for C(device_class); create/delete on pods,
    resourceclaims and namespaces for C(workloads).
seealso:
  - module: gpufleet.dra_gate.dra_canary_check
  - module: gpufleet.dra_gate.gpu_cluster
"""

EXAMPLES = r"""
- name: The extended-resource DeviceClass
  gpufleet.dra_gate.dra_canary_workloads:
    step: device_class
    device_class_name: gpu-extended.nvidia.com
  delegate_to: localhost
  run_once: true

- name: A plain nvidia.com/gpu pod through DRA, on the first canary node
  gpufleet.dra_gate.dra_canary_workloads:
    step: workloads
    workloads:
      - {name: extended-gpu, kind: extended, node: canary-1}
    tolerations:
      - {key: gpufleet.io/dra-canary, operator: Equal, value: "true", effect: NoSchedule}
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
ok:
  description: Whether no finding blocks.
  returned: always
  type: bool
findings:
  description: The findings (id, severity, subject, observed, expected, message, source).
  returned: always
  type: list
  elements: dict
device_class:
  description: C(device_class) - action (created, updated, unchanged, deleted, absent, would_*), name and the object.
  returned: always
  type: dict
waves:
  description: C(workloads) - the guard's waves (family, workloads) in submission order.
  returned: always
  type: list
  elements: dict
workloads:
  description:
    - C(workloads) - per workload name, kind, node, pod, claim, devices (pool/device), submitted_at,
      running_at, released_at, wave, ok, error.
  returned: always
  type: list
  elements: dict
overlaps:
  description: C(workloads) - pairs of container and VFIO workloads that were in flight together on one node (must be empty).
  returned: always
  type: list
  elements: list
started_at:
  description: When the module started (RFC 3339 UTC).
  returned: always
  type: str
finished_at:
  description: When the module finished (RFC 3339 UTC).
  returned: always
  type: str
duration_seconds:
  description: Run time in seconds.
  returned: always
  type: float
diff:
  description: C(device_class) - before and after of the DeviceClass (with --diff).
  returned: when diff mode is on and step is device_class
  type: dict
"""

import hashlib
import json
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.common.module_run import ModuleRun
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster import objects as kube
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.common import clock
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.phases import dra_canary as dc
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.phases import passthrough as pt
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster.client import (
    K8sApiError,
    argspec,
    check_params,
    module_api_client,
    reader_from_params,
)

RUN_LABEL = "gpufleet.io/dra-canary-run"
CLASSES = "/apis/resource.k8s.io/v1/deviceclasses"
CLAIM_CLASS = {"container": "gpu.nvidia.com", "vfio": "vfio.gpu.nvidia.com"}

MODULE_ARG_SPEC = dict(
    step=dict(type="str", required=True, choices=["device_class", "workloads"]),
    device_class_name=dict(type="str", default="gpu-extended.nvidia.com"),
    device_class_state=dict(type="str", choices=["present", "absent"], default="present"),
    extended_resource_name=dict(type="str", default="nvidia.com/gpu"),
    workloads=dict(type="list", elements="dict", default=[]),
    guard=dict(type="str", choices=list(pt.GUARD_MODES), default="serialize"),
    namespace=dict(type="str", default="dra-canary-smoke"),
    tolerations=dict(type="list", elements="dict", default=[]),
    image=dict(type="str", default="nvcr.io/nvidia/cuda:12.9.1-base-ubuntu24.04"),
    workload_timeout=dict(type="float", default=120),
    run_id=dict(type="str", default="dra-canary"),
)


def check_device_class(reader, params, check_mode, diff):
    name = params["device_class_name"]
    desired = dc.desired_device_class(name, params["extended_resource_name"])
    path = "%s/%s" % (CLASSES, name)
    live = kube.get_or_none(reader, path)
    findings = []
    query = [("fieldManager", dc.MANAGER)] + ([("dryRun", "All")] if check_mode else [])
    ours = live is not None and all(((live.get("metadata") or {}).get("labels") or {}).get(k) == v
                                    for k, v in dc.MANAGED_BY.items())
    if live is not None and not ours:
        raise dc.RefusedError("DeviceClass %s exists and is not managed by gpufleet.dra_gate (labels %s): refused, "
                              "nothing was changed" % (name, json.dumps((live.get("metadata") or {}).get("labels") or {})))
    after = live
    if params["device_class_state"] == "absent":
        if live is None:
            action = "absent"
        else:
            reader.request("DELETE", path, query=query)
            action, after = ("would_delete" if check_mode else "deleted"), None
    elif live is None:
        after = reader.request("POST", CLASSES, query=query, body=desired)
        action = "would_create" if check_mode else "created"
    elif dc.contains(live.get("spec") or {}, desired["spec"]):
        action = "unchanged"
    else:
        body = dict(live, spec=desired["spec"])
        after = reader.request("PUT", path, query=query, body=body)
        action = "would_update" if check_mode else "updated"
    others = [c["metadata"]["name"] for c in reader.list(CLASSES)
              if (c.get("spec") or {}).get("extendedResourceName") == params["extended_resource_name"]
              and c["metadata"]["name"] != name]
    if others and params["device_class_state"] == "present":
        findings.append(dc.finding("dra_canary.extended_resource_shared", "warn", "DeviceClass/%s" % name,
                                   "also named by %s" % ", ".join(others), "one class per extended resource",
                                   "%s is also served by %s: the newest class wins" % (
                                       params["extended_resource_name"], ", ".join(others))))
    out = dict(findings=findings, device_class={"action": action, "name": name, "object": dc.strip_server_fields(after),
                                                "extended_resource_name": params["extended_resource_name"]})
    if diff:
        out["diff"] = {"before": json.dumps(dc.strip_server_fields(live), indent=2, sort_keys=True) + "\n" if live else "",
                       "after": json.dumps(dc.strip_server_fields(after), indent=2, sort_keys=True) + "\n" if after else ""}
    out["changed"] = action not in ("unchanged", "absent")
    return out


def _pod(params, item, claim_name):
    name = _object_name(params, item["name"])
    container = {"name": "main", "image": params["image"], "command": ["sleep", "infinity"]}
    body = {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": params["namespace"], "labels": {RUN_LABEL: _label(params)}},
            "spec": {"restartPolicy": "Always", "terminationGracePeriodSeconds": 1, "containers": [container],
                     "tolerations": params["tolerations"]}}
    if item.get("node"):
        body["spec"]["nodeSelector"] = {"kubernetes.io/hostname": item["node"]}
    if item["kind"] == "extended":
        container["resources"] = {"limits": {params["extended_resource_name"]: "1"}}
    else:
        body["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": claim_name}]
        container["resources"] = {"claims": [{"name": "gpu"}]}
    return body


def _label(params):
    return "r" + hashlib.sha256(params["run_id"].encode("utf-8")).hexdigest()[:12]


def _object_name(params, name):
    return ("%s-%s" % (name, _label(params)[1:7])).lower()


def _claim(params, item):
    request = {"name": "gpu", "exactly": {"deviceClassName": CLAIM_CLASS[pt.family(item["kind"])],
                                          "allocationMode": "ExactCount", "count": 1}}
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": _object_name(params, item["name"]), "namespace": params["namespace"],
                         "labels": {RUN_LABEL: _label(params)}},
            "spec": {"devices": {"requests": [request]}}}


def _devices(claim):
    results = ((((claim or {}).get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or []
    return [{"driver": r.get("driver"), "pool": r.get("pool"), "device": r.get("device")} for r in results]


def _allocated(reader, ns, record):
    """(pod, claim) once the pod runs and its claim (or its extended-resource claim) is allocated, else None."""
    pod = kube.get_or_none(reader, "/api/v1/namespaces/%s/pods/%s" % (ns, record["pod"]))
    if not _pod_running(pod):
        return None
    name = record["claim"]
    if record["kind"] == "extended":
        name = ((pod.get("status") or {}).get("extendedResourceClaimStatus") or {}).get("resourceClaimName")
    if not name:
        return None
    claim = kube.get_or_none(reader, "/apis/resource.k8s.io/v1/namespaces/%s/resourceclaims/%s" % (ns, name))
    return (pod, claim) if _devices(claim) else None


def _pod_running(pod):
    return ((pod or {}).get("status") or {}).get("phase") == "Running"


def _wait(check, timeout, interval=0.5):
    deadline = time.time() + timeout
    while True:
        value = check()
        if value or time.time() >= deadline:
            return value
        time.sleep(interval)


def run_workloads(reader, params, check_mode):
    items = []
    for index, item in enumerate(params["workloads"]):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not item.get("name"):
            raise pt.PassthroughError("workloads[%d]: expected a dict with name (a DNS label), kind and optional node" % index)
        item = dict(item, kind=item.get("kind", "container"))
        pt.family(item["kind"])
        items.append(item)
    waves = pt.plan_waves(items, params["guard"])
    out = dict(findings=[], waves=waves, workloads=[], overlaps=[])
    if check_mode or not items:
        return out
    by_name = dict((i["name"], i) for i in items)
    ns = params["namespace"]
    created_ns = False
    if kube.get_or_none(reader, "/api/v1/namespaces/%s" % ns) is None:
        reader.request("POST", "/api/v1/namespaces", body={"apiVersion": "v1", "kind": "Namespace",
                                                           "metadata": {"name": ns, "labels": {RUN_LABEL: _label(params)}}})
        created_ns = True
    records = []
    try:
        for number, wave in enumerate(waves):
            submitted = []
            for name in wave["workloads"]:
                item = by_name[name]
                record = {"name": name, "kind": item["kind"], "node": item.get("node"), "wave": number + 1,
                          "pod": _object_name(params, name), "claim": None, "devices": [], "ok": False, "error": None}
                claim_name = None
                if item["kind"] != "extended":
                    claim_name = reader.request("POST", "/apis/resource.k8s.io/v1/namespaces/%s/resourceclaims" % ns,
                                                body=_claim(params, item))["metadata"]["name"]
                    record["claim"] = claim_name
                record["submitted_at"] = clock.rfc3339(time.time())
                reader.request("POST", "/api/v1/namespaces/%s/pods" % ns, body=_pod(params, item, claim_name))
                submitted.append(record)
            for record in submitted:
                got = _wait(lambda r=record: _allocated(reader, ns, r), params["workload_timeout"])
                if not got:
                    current = kube.get_or_none(reader, "/api/v1/namespaces/%s/pods/%s" % (ns, record["pod"])) or {}
                    why = next((c.get("message") for c in (current.get("status") or {}).get("conditions") or []
                                if c.get("type") == "PodScheduled" and c.get("status") == "False"), None)
                    record["error"] = "not running on a DRA allocation after %ss (phase %s%s)" % (
                        params["workload_timeout"], (current.get("status") or {}).get("phase"), ": " + why if why else "")
                    continue
                pod, claim = got
                record["running_at"] = clock.rfc3339(time.time())
                record["node"] = (pod.get("spec") or {}).get("nodeName")
                record["claim"] = claim["metadata"]["name"]
                record["devices"] = _devices(claim)
                record["ok"] = True
            for record in submitted:
                reader.request("DELETE", "/api/v1/namespaces/%s/pods/%s" % (ns, record["pod"]))
            for record in submitted:
                claim_path = "/apis/resource.k8s.io/v1/namespaces/%s/resourceclaims/%s" % (ns, record["claim"]) if record["claim"] else None
                gone = _wait(lambda r=record: kube.get_or_none(reader, "/api/v1/namespaces/%s/pods/%s" % (ns, r["pod"])) is None,
                             params["workload_timeout"])
                if claim_path and record["kind"] != "extended":
                    reader.request("DELETE", claim_path)
                released = gone and (claim_path is None or _wait(
                    lambda p=claim_path: kube.get_or_none(reader, p) is None, params["workload_timeout"]))
                record["released_at"] = clock.rfc3339(time.time())
                if not released:
                    record["ok"] = False
                    record["error"] = (record["error"] or "") + " not released within %ss" % params["workload_timeout"]
            records.extend(submitted)
            if any(not r["ok"] for r in submitted):
                break
    finally:
        _cleanup(reader, params, created_ns)
    out["workloads"] = records
    out["overlaps"] = [list(p) for p in pt.overlaps(records)]
    for record in records:
        if not record["ok"]:
            out["findings"].append(dc.finding("dra_canary.workload_failed", "block", "workload %s" % record["name"],
                                              record["error"], "running on a DRA allocation, then released",
                                              "canary workload %s (%s) failed: %s" % (record["name"], record["kind"], record["error"])))
    for left, right in out["overlaps"]:
        out["findings"].append(dc.finding("dra_canary.claims_in_flight_together", "block", "workloads %s + %s" % (left, right),
                                          "in flight together on one node", "serialized",
                                          "container and VFIO claims %s and %s were in flight together" % (left, right)))
    missing = [i["name"] for i in items if i["name"] not in [r["name"] for r in records]]
    for name in missing:
        out["findings"].append(dc.finding("dra_canary.workload_not_run", "block", "workload %s" % name, "not submitted",
                                          "submitted", "canary workload %s was not submitted (an earlier wave failed)" % name))
    return out


def _cleanup(reader, params, created_ns):
    ns, selector = params["namespace"], "%s=%s" % (RUN_LABEL, _label(params))
    for path in ("/api/v1/namespaces/%s/pods" % ns, "/apis/resource.k8s.io/v1/namespaces/%s/resourceclaims" % ns):
        try:
            for item in reader.list(path, label_selector=selector):
                try:
                    reader.request("DELETE", "%s/%s" % (path, item["metadata"]["name"]))
                except K8sApiError as exc:
                    if exc.status != 404:
                        raise
        except K8sApiError as exc:
            if exc.status != 404:
                raise
    if created_ns:
        try:
            reader.request("DELETE", "/api/v1/namespaces/%s" % ns)
        except K8sApiError as exc:
            if exc.status != 404:
                raise


def main():
    module = AnsibleModule(argument_spec=argspec(MODULE_ARG_SPEC), supports_check_mode=True)
    params = module.params
    run = ModuleRun(module)
    bad = check_params(params)
    if bad:
        run.fail(bad)
    if not params["workload_timeout"] > 0:
        run.fail("workload_timeout: must be a positive number of seconds, got %r" % params["workload_timeout"])
    out = dict(findings=[], device_class={}, waves=[], workloads=[], overlaps=[])
    api_client = module_api_client(module)
    reader = reader_from_params(api_client, params)

    def work():
        if params["step"] == "device_class":
            got = check_device_class(reader, params, module.check_mode, module._diff)  # pylint: disable=protected-access
            return got.pop("changed"), got
        got = run_workloads(reader, params, module.check_mode)
        return bool(got["workloads"]), got

    dc.finish_step(module, run, params["step"], out, work, api_client.close)


if __name__ == "__main__":
    main()
