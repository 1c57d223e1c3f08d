#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: drain_node
short_description: Cordon, drain (PodDisruptionBudget-respecting evictions, waited for by UID) or uncordon a node
version_added: 0.5.0
description:
  - O(state=drained) cordons O(node), lists its pods and evicts them through the C(policy/v1) Eviction API. A
    429 answer is a PodDisruptionBudget refusal - retried every O(retry_interval) until O(timeout), counted per
    pod (C(pdb_retries)); 5xx answers and transport failures are retried with backoff and counted apart
    (C(api_retries)). Each evicted pod is waited for until it is gone B(by UID) (a StatefulSet's pod comes
    back with the same name). At O(timeout) the module B(fails) naming every pod still present and why.
  - DaemonSet pods are ignored and mirror (static) pods left in place; pods with no controller and pods with
    C(emptyDir) volumes are refused (the drain fails before any eviction, naming them) unless
    O(delete_unmanaged) / O(delete_emptydir_data). Finished pods (Succeeded, Failed) are deleted.
  - DRA-aware - with O(wait_for_claims) the node is not declared drained while ResourceClaims allocated on it
    are still reserved by a consumer (other than the DaemonSet and mirror pods left); they are named.
  - When the drain fails before any pod was evicted, the module uncordons the node if it cordoned it; after an
    eviction the node stays cordoned (the rollout's evidence says why).
  - O(eviction_fallback=delete) deletes a pod whose eviction is still refused after O(fallback_after) seconds
    (bypassing its PodDisruptionBudget); such pods are recorded with C(method=delete-fallback). Never by default.
  - O(state=cordoned) only cordons; O(state=uncordoned) only uncordons (each its own operation).
  - Check mode reports what would be cordoned and evicted, and changes nothing.
author:
  - gpufleet maintainers (@gpufleet)
options:
  node:
    description: The Kubernetes node name.
    type: str
    required: true
  state:
    description: C(drained) (cordon and evict), C(cordoned) or C(uncordoned).
    type: str
    choices: [drained, cordoned, uncordoned]
    default: drained
  timeout:
    description: Seconds for the whole drain (evictions, pods gone, claims released); then it fails.
    type: float
    default: 600
  retry_interval:
    description: Seconds between eviction attempts of a pod its PodDisruptionBudget refused (C(kubectl drain) waits 5 s).
    type: float
    default: 5
  poll_interval:
    description: Seconds between reads while waiting for pods to be gone and claims released.
    type: float
    default: 0.5
  grace_period:
    description: C(gracePeriodSeconds) for the evictions; absent = each pod's own C(terminationGracePeriodSeconds).
    type: int
  delete_emptydir_data:
    description: Evict pods with C(emptyDir) volumes (their data is lost).
    type: bool
    default: false
  delete_unmanaged:
    description: Evict pods that no controller manages (nothing recreates them).
    type: bool
    default: false
  eviction_fallback:
    description: C(delete) - delete a pod whose eviction is still refused after O(fallback_after) seconds, recorded as such.
    type: str
    choices: [none, delete]
    default: none
  fallback_after:
    description: Seconds of refused evictions before O(eviction_fallback=delete) deletes the pod.
    type: float
    default: 60
  wait_for_claims:
    description: Wait until the ResourceClaims allocated on the node are no longer reserved (DRA nodes).
    type: bool
    default: true
extends_documentation_fragment:
  - gpufleet.dra_gate.k8s_auth
  - gpufleet.dra_gate.attributes.k8s
attributes:
  check_mode:
    support: full
    description: Reads the node and its pods and reports C(would_evict); nothing is cordoned or evicted.
  diff_mode:
    support: full
    description: The node's C(spec.unschedulable) and its pods, before and after.
notes:
  - Pods are evicted in one loop (each refused pod retried on its own schedule), not one after another.
  - The drain's pod list is the node's pods at the start (C(fieldSelector spec.nodeName)); a pod scheduled
    there after the cordon is not expected (the cordon keeps new pods off), and is not evicted.
seealso:
  - module: gpufleet.dra_gate.node_rollout
  - name: Safely drain a node
    description: Kubernetes documentation of drains and PodDisruptionBudgets.
    link: https://kubernetes.io/docs/tasks/administer-cluster/safely-drain-node/
"""

EXAMPLES = r"""
- name: Drain the node (PDB refusals retried for up to 10 minutes)
  gpufleet.dra_gate.drain_node:
    kubeconfig: "{{ dra_gate_kubeconfig }}"
    node: "{{ dra_gate_node_name | default(inventory_hostname) }}"
    timeout: 600
  delegate_to: localhost
  register: drained

- name: Uncordon it after the maintenance
  gpufleet.dra_gate.drain_node:
    kubeconfig: "{{ dra_gate_kubeconfig }}"
    node: "{{ dra_gate_node_name | default(inventory_hostname) }}"
    state: uncordoned
  delegate_to: localhost
"""

RETURN = r"""
node:
  description: The node.
  returned: always
  type: str
cordoned:
  description: Whether the node is cordoned when the module ends.
  returned: always
  type: bool
was_cordoned:
  description: Whether the node was cordoned before the module ran.
  returned: when the node was read
  type: bool
evictions:
  description: Every pod evicted (or deleted), with its PodDisruptionBudget and API retries and times.
  returned: state=drained
  type: list
  elements: dict
  contains:
    namespace: {description: The pod's namespace., type: str}
    name: {description: The pod's name., type: str}
    uid: {description: The pod's UID (it is waited for by UID)., type: str}
    owner: {description: "The pod's controller (kind, name, uid), or null.", type: dict}
    method: {description: "C(eviction), C(delete) (a finished pod), C(delete-fallback) or C(already gone).", type: str}
    pdb_retries: {description: Evictions the PodDisruptionBudget refused (429)., type: int}
    api_retries: {description: Attempts retried after a 5xx answer or a transport failure., type: int}
    requested_at: {description: First eviction request (UTC)., type: str}
    evicted_at: {description: Eviction accepted (UTC)., type: str}
    gone_at: {description: The pod (that UID) was seen gone (UTC)., type: str}
    seconds: {description: requested_at to gone_at., type: float}
    last_refusal: {description: The last refusal's message., type: str}
skipped:
  description: Pods left on the node (DaemonSet, mirror), each with its reason.
  returned: state=drained
  type: list
  elements: dict
would_evict:
  description: Check mode - the pods that would be evicted.
  returned: check mode, state=drained
  type: list
  elements: dict
snapshot:
  description:
    - The node before the drain, as M(gpufleet.dra_gate.node_rollout) O(state=recorded) returns it - ready,
      unschedulable, boot_id, allocatable_gpu, slice_devices - for O(state=restored) to compare with.
  returned: state=drained
  type: dict
claims_waited:
  description: ResourceClaims allocated on the node that were waited for until released.
  returned: state=drained
  type: list
  elements: dict
timings:
  description:
    - How long each step was tried, in seconds, also when the drain failed (so its deadline is provable from the
      result) - C(cordon_seconds), C(evict_seconds) (from the first eviction request until every evicted pod was
      gone, or until the drain gave up), C(claims_seconds) (the wait for the node's ResourceClaims). Null for a step
      that did not run (a drain refused before any eviction, check mode, O(wait_for_claims=false)).
    - O(timeout) covers the evictions and the claims wait together - a drain that failed at its deadline has
      C(evict_seconds) + C(claims_seconds) >= O(timeout).
  returned: state=drained
  type: dict
progress:
  description: Progress lines (a pod evicted, a refusal), in order.
  returned: state=drained
  type: list
  elements: str
started_at:
  description: UTC time the module started.
  returned: always
  type: str
finished_at:
  description: UTC time the module finished.
  returned: always
  type: str
"""

import traceback

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.phases import drain as dr
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster.client import K8sApiError, argspec, module_reader

MODULE_ARG_SPEC = dict(
    node=dict(type="str", required=True),
    state=dict(type="str", choices=["drained", "cordoned", "uncordoned"], default="drained"),
    timeout=dict(type="float", default=600.0),
    retry_interval=dict(type="float", default=5.0),
    poll_interval=dict(type="float", default=0.5),
    grace_period=dict(type="int"),
    delete_emptydir_data=dict(type="bool", default=False),
    delete_unmanaged=dict(type="bool", default=False),
    eviction_fallback=dict(type="str", choices=["none", "delete"], default="none"),
    fallback_after=dict(type="float", default=60.0),
    wait_for_claims=dict(type="bool", default=True),
)


def _brief(refs):
    return ["%s/%s" % (r["namespace"], r["name"]) for r in refs]


def main():
    module = AnsibleModule(argument_spec=argspec(MODULE_ARG_SPEC), supports_check_mode=True)
    params = module.params
    out = {"node": params["node"], "cordoned": False, "started_at": dr.utc_now()}

    def finish(failed=False, **extra):
        out.update(extra)
        out["finished_at"] = dr.utc_now()
        if failed:
            module.fail_json(**out)
        module.exit_json(**out)

    try:
        plan = dr.validate_drain(params)
    except dr.DrainError as exc:
        finish(failed=True, msg=str(exc), changed=False)
    reader = module_reader(module)
    progress = []
    drain = dr.Drain(reader, plan, progress=progress.append)
    state = params["state"]
    if state == "drained":  # every drained result, failed or not, says how long each step was tried (null: not run)
        out["timings"] = drain.record["timings"]
    try:
        node = drain.node()
    except K8sApiError as exc:
        finish(failed=True, msg="node %s: %s" % (plan["node"], exc), changed=False)
    was = bool((node.get("spec") or {}).get("unschedulable"))
    out.update(was_cordoned=was, cordoned=was)
    if state == "drained":
        try:  # the node's device health before anything changes (node_rollout state=restored compares with it)
            out["snapshot"] = dr.read_snapshot(reader, node)
        except K8sApiError as exc:
            finish(failed=True, msg="node %s: reading its ResourceSlices: %s; nothing was changed" % (plan["node"], exc),
                   changed=False)
    want_cordoned = state != "uncordoned"
    diff = {"before": {"unschedulable": was}, "after": {"unschedulable": want_cordoned}}

    if state in ("cordoned", "uncordoned"):
        changed = was != want_cordoned
        if changed and not module.check_mode:
            try:
                drain.set_unschedulable(want_cordoned)
            except K8sApiError as exc:
                finish(failed=True, msg="node %s: %s" % (plan["node"], exc), changed=False)
        out["cordoned"] = want_cordoned if (changed and not module.check_mode) else was
        if module._diff:  # pylint: disable=protected-access
            out["diff"] = diff
        done = state if changed else "already " + state
        finish(changed=changed, msg="node %s %s%s" % (plan["node"], done, " (check mode)" if module.check_mode and changed else ""))

    try:
        pods = drain.pods_on_node()
    except K8sApiError as exc:
        finish(failed=True, msg="node %s: listing its pods: %s; nothing was changed" % (plan["node"], exc), changed=False)
    evict, skipped, blocked = dr.classify(pods, plan)
    out.update(skipped=skipped, evictions=[], claims_waited=[], progress=progress)
    if module._diff:  # pylint: disable=protected-access
        diff["before"]["pods"] = sorted(_brief(evict) + _brief(skipped) + _brief(blocked))
        diff["after"]["pods"] = sorted(_brief(skipped) + _brief(blocked))
        out["diff"] = diff
    if blocked:
        finish(failed=True, changed=False, blocked=blocked, msg="node %s cannot be drained: %s; nothing was changed" % (
            plan["node"], "; ".join("%s/%s %s" % (b["namespace"], b["name"], b["reason"]) for b in blocked)))
    if module.check_mode:
        finish(changed=not was or bool(evict), would_evict=evict, msg="check mode: would cordon %s and evict %d pod(s)" % (
            plan["node"], len(evict)))

    cordon_started = drain.clock()
    if not was:
        try:
            drain.set_unschedulable(True)
        except K8sApiError as exc:
            finish(failed=True, msg="node %s: cordon: %s; nothing was changed" % (plan["node"], exc), changed=False)
        drain.cordoned_by_us = True
    out["cordoned"] = True
    drain.record["timings"]["cordon_seconds"] = round(drain.clock() - cordon_started, 6)
    try:
        record = drain.run(evict, skipped)
    except (dr.DrainFailed, K8sApiError, Exception) as exc:  # pylint: disable=broad-except
        record = getattr(exc, "result", None) or drain.record  # its timings: how long each step was tried
        message = str(exc) if isinstance(exc, (dr.DrainFailed, K8sApiError)) else "%s: %s" % (
            type(exc).__name__, traceback.format_exc().splitlines()[-1])
        evicted_any = any(e.get("evicted_at") for e in drain.evictions)
        if drain.cordoned_by_us and not evicted_any:
            try:
                drain.set_unschedulable(False)
                out["cordoned"] = False
                message += "; nothing was evicted, so the node was uncordoned again"
            except K8sApiError as uncordon_exc:
                message += "; uncordoning it again failed too: %s" % uncordon_exc
        else:
            message += "; the node stays cordoned"
        finish(failed=True, changed=drain.cordoned_by_us or evicted_any, msg=message, **record)
    finish(changed=drain.cordoned_by_us or bool(drain.evictions), msg="node %s drained: %d pod(s) evicted, %d left (%s)" % (
        plan["node"], len(drain.evictions), len(skipped), ", ".join(sorted(set(s["reason"] for s in skipped))) or "none"),
        **record)


if __name__ == "__main__":
    main()
