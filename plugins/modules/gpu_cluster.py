#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: gpu_cluster
short_description: Apply the GPU Operator's GPUCluster gpu-cluster from data values and wait until it is ready
version_added: 0.4.0
description:
  - Applies the singleton GPUCluster C(gpu-cluster) (C(nvidia.com/v1alpha1), the GPU Operator 26.7 DRA path)
    with server-side apply from O(spec) - the DRA driver's values and feature gates as data - and
    waits, bounded by O(wait_timeout), until its C(status.state) is C(ready) for the current generation
    and a Ready C(nvidia-dra-driver-kubelet-plugin) pod runs on every node of O(nodes).
  - An object whose spec already holds every field of O(spec) is not written (C(unchanged)).
  - A kind that is not served (the operator's 26.7 chart is not installed) fails, except in check mode,
    where the object would be created once the chart is there.
  - Runs on the controller (or a delegate) with the C(kubernetes) Python client; a 403 fails naming the call.
author:
  - gpufleet maintainers (@gpufleet)
options:
  spec:
    description:
      - The GPUCluster's spec (C(draDriver) with C(featureGates), C(validator), C(dcgmExporter), C(daemonsets)...).
      - C(draDriver.featureGates) must map gate names to booleans.
    type: dict
    required: true
  nodes:
    description: Nodes that must each run a Ready DRA kubelet plugin pod before the wait ends.
    type: list
    elements: str
    default: []
  namespace:
    description: The operator's namespace, where the operands run.
    type: str
    default: gpu-operator
  wait:
    description: Whether to wait for C(ready) and the kubelet plugin pods. Never in check mode.
    type: bool
    default: true
  wait_timeout:
    description: Bound of the wait in seconds; when it passes the module fails naming what is not ready.
    type: float
    default: 300
  poll_interval:
    description: Seconds between two reads while waiting.
    type: float
    default: 1
  field_manager:
    description: The server-side apply field manager.
    type: str
    default: gpufleet-dra-gate
extends_documentation_fragment:
  - gpufleet.dra_gate.k8s_auth
  - gpufleet.dra_gate.attributes.k8s
attributes:
  check_mode:
    support: full
    description:
      - The apply is sent with C(dryRun=All); nothing is written and nothing is waited for.
  diff_mode:
    support: full
    description:
      - Returns the GPUCluster before and after (without server-populated fields).
notes:
  - Needs get and patch on gpuclusters.nvidia.com and list on pods in O(namespace).
seealso:
  - module: gpufleet.dra_gate.dra_canary_check
"""

EXAMPLES = r"""
- name: Apply gpu-cluster and wait for it and the kubelet plugins
  gpufleet.dra_gate.gpu_cluster:
    kubeconfig: "{{ dra_gate_kubeconfig }}"
    spec:
      draDriver:
        repository: nvcr.io/nvidia
        image: dra-driver-nvidia-gpu
        version: v0.5.0
        featureGates: {}
    nodes: [canary-1, canary-2]
    wait_timeout: 300
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
action:
  description: C(created), C(updated), C(unchanged), or in check mode C(would_create), C(would_update).
  returned: always
  type: str
  sample: created
state:
  description: The GPUCluster's C(status.state) at the end (null when it has none yet).
  returned: always
  type: str
  sample: ready
ready:
  description: Whether it is ready for its generation and every node of O(nodes) runs a Ready kubelet plugin pod.
  returned: always
  type: bool
problems:
  description: What is not ready (the Ready condition's reason and message, nodes without a plugin pod).
  returned: always
  type: list
  elements: str
plugin_pods:
  description: Node -> name of its Ready kubelet plugin pod, for O(nodes).
  returned: always
  type: dict
gpu_cluster:
  description: The object after the apply (without server-populated fields); null in check mode without the kind.
  returned: always
  type: dict
generation:
  description: The object's metadata.generation after the apply.
  returned: always
  type: int
waited_seconds:
  description: How long the wait took.
  returned: always
  type: float
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
  description: Before and after YAML of the GPUCluster (with --diff).
  returned: when diff mode is on
  type: dict
"""

import json
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.common.module_run import ModuleRun
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.phases import dra_canary as dc
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster.client import (
    K8sApiError,
    argspec,
    check_params,
    module_api_client,
    reader_from_params,
)

PATH = "/apis/nvidia.com/v1alpha1/gpuclusters/" + dc.GPU_CLUSTER_NAME
APPLY = "application/apply-patch+yaml"

MODULE_ARG_SPEC = dict(
    spec=dict(type="dict", required=True),
    nodes=dict(type="list", elements="str", default=[]),
    namespace=dict(type="str", default="gpu-operator"),
    wait=dict(type="bool", default=True),
    wait_timeout=dict(type="float", default=300),
    poll_interval=dict(type="float", default=1),
    field_manager=dict(type="str", default="gpufleet-dra-gate"),
)


def _yaml(obj):
    return json.dumps(obj, indent=2, sort_keys=True) + "\n" if obj else ""


def read(reader):
    return reader.get_or_none(PATH)


def served(reader):
    return reader.get_or_none("/apis/nvidia.com/v1alpha1") is not None


def status_of(reader, namespace, nodes):
    obj = read(reader)
    problems = []
    state, why = dc.gpu_cluster_state(obj)
    conditions = ((obj or {}).get("status") or {}).get("conditions") or []
    ready_cond = next((c for c in conditions if c.get("type") == "Ready"), {})
    generation = ((obj or {}).get("metadata") or {}).get("generation")
    if obj is None:
        problems.append("GPUCluster %s is gone" % dc.GPU_CLUSTER_NAME)
    elif state != "ready" or ready_cond.get("observedGeneration", generation) != generation:
        problems.append("GPUCluster %s is %s (generation %s, observed %s): %s" % (
            dc.GPU_CLUSTER_NAME, state, generation, ready_cond.get("observedGeneration"), why))
    pods = reader.list("/api/v1/namespaces/%s/pods" % namespace, label_selector="app=nvidia-dra-driver-kubelet-plugin")
    missing = dc.plugin_pods_ready(pods, nodes)
    problems.extend("node %s: %s" % (n, p) for n, p in sorted(missing.items()))
    plugin = dict(((p.get("spec") or {}).get("nodeName"), p["metadata"]["name"]) for p in pods
                  if (p.get("spec") or {}).get("nodeName") in nodes and (p.get("spec") or {}).get("nodeName") not in missing)
    return obj, state, problems, plugin


def main():
    module = AnsibleModule(argument_spec=argspec(MODULE_ARG_SPEC), supports_check_mode=True)
    params = module.params
    run = ModuleRun(module)
    bad = check_params(params)
    if bad:
        module.fail_json(msg=bad)
    for name in ("wait_timeout", "poll_interval"):
        if not params[name] > 0:
            module.fail_json(msg="%s: must be a positive number of seconds, got %r" % (name, params[name]))
    if not params["field_manager"]:
        module.fail_json(msg="field_manager: must not be empty")
    try:
        desired = dc.desired_gpu_cluster(params["spec"])
    except dc.CanaryError as exc:
        module.fail_json(msg=str(exc))
    api_client = module_api_client(module)
    reader = reader_from_params(api_client, params)

    def timed(**out):
        return run.timed(out)

    result = dict(action=None, state=None, ready=False, problems=[], plugin_pods={}, gpu_cluster=None, generation=None,
                  waited_seconds=0.0)
    try:
        if not served(reader):
            if not module.check_mode:
                module.fail_json(msg="the GPUCluster kind (nvidia.com/v1alpha1 gpuclusters) is not served: install the GPU "
                                     "Operator 26.7 chart first; nothing was applied", **timed(**result))
            result.update(action="would_create", problems=["the GPUCluster kind is not served yet (the chart is not installed)"])
            if module._diff:  # pylint: disable=protected-access
                result["diff"] = {"before": "", "after": _yaml(desired)}
            module.exit_json(changed=True, msg="would create GPUCluster %s once the chart serves the kind" % dc.GPU_CLUSTER_NAME,
                             **timed(**result))
        live = read(reader)
        same = live is not None and dc.contains(live.get("spec") or {}, desired["spec"]) and dc.contains(
            (live.get("metadata") or {}).get("labels") or {}, desired["metadata"]["labels"])
        after = live
        if same:
            result["action"] = "unchanged"
        else:
            query = [("fieldManager", params["field_manager"]), ("force", "true")]
            if module.check_mode:
                query.append(("dryRun", "All"))
            after = reader.request("PATCH", PATH, query=query, body=json.dumps(desired), content_type=APPLY)
            verb = "updated" if live is not None else "created"
            result["action"] = ("would_" + verb[:-1]) if module.check_mode else verb
        result["gpu_cluster"] = dc.strip_server_fields(after)
        result["generation"] = ((after or {}).get("metadata") or {}).get("generation")
        if module._diff:  # pylint: disable=protected-access
            result["diff"] = {"before": _yaml(dc.strip_server_fields(live)), "after": _yaml(dc.strip_server_fields(after))}
        changed = result["action"] != "unchanged"
        if module.check_mode:
            result["state"] = dc.gpu_cluster_state(live)[0]
            module.exit_json(changed=changed, msg="%s GPUCluster %s (check mode: nothing written, nothing waited for)" % (
                result["action"], dc.GPU_CLUSTER_NAME), **timed(**result))
        wait_started = time.time()
        while True:
            obj, state, problems, plugin = status_of(reader, params["namespace"], params["nodes"])
            result.update(state=state, problems=problems, plugin_pods=plugin)
            if not problems or not params["wait"] or time.time() - wait_started >= params["wait_timeout"]:
                break
            time.sleep(params["poll_interval"])
        result["waited_seconds"] = round(time.time() - wait_started, 3)
        result["ready"] = not problems
        if obj is not None:
            result["generation"] = (obj.get("metadata") or {}).get("generation")
        if problems and params["wait"]:
            module.fail_json(msg="GPUCluster %s %s but is not ready after %ss: %s" % (
                dc.GPU_CLUSTER_NAME, result["action"], params["wait_timeout"], "; ".join(problems)), changed=changed,
                **timed(**result))
    except K8sApiError as exc:
        module.fail_json(msg="the API call failed (%s): %s" % (
            "GPUCluster %s" % result["action"] if result["action"] else "nothing was applied", exc),
            call=exc.call, status=exc.status, forbidden=exc.forbidden, **timed(**result))
    finally:
        api_client.close()
    module.exit_json(changed=changed, msg="GPUCluster %s %s, %s" % (
        dc.GPU_CLUSTER_NAME, result["action"], "ready" if result["ready"] else "not ready: " + "; ".join(result["problems"])),
        **timed(**result))


if __name__ == "__main__":
    main()
