#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: node_rollout
short_description: Record a node's device health before a maintenance, wait for it to come back, count failed reschedules
version_added: 0.5.0
description:
  - The per-node checks of a drain wave (playbooks/drain_waves.yml, docs/drain.md). Read-only toward the cluster.
  - O(state=recorded) - the node's state before the drain - Ready, C(bootID), allocatable C(nvidia.com/gpu)
    (device-plugin nodes) and the devices of its ResourceSlices (DRA nodes) - as RV(snapshot).
  - O(state=restored) - waits until the node is Ready and its device health is restored against O(expected)
    (a RV(snapshot)) - allocatable C(nvidia.com/gpu) back to the recorded value, every recorded ResourceSlice
    device republished - or fails at O(timeout) naming what is missing (C(device_health_restored=false)).
  - O(state=rescheduled) - waits until every drain-triggered reschedule attempt succeeded - each pod of
    O(evictions) (M(gpufleet.dra_gate.drain_node)'s C(evictions)) whose controller recreates pods has a new pod
    of that controller Running on any node - or O(timeout). A workload not Running again is a failed
    reschedule with its name, namespace, owner and reason (the scheduler's C(Unschedulable) message when it
    gave one); RV(failed_reschedule_rate) keeps numerator (failed) and denominator (attempts). Fails when the
    failed reschedules exceed O(max_failed_reschedules).
  - O(state=totalled) - reads nothing from the cluster - sums O(rates) (the nodes' RV(failed_reschedule_rate)
    records) into one RV(failed_reschedule_rate) for the whole rollout - numerators and denominators summed,
    never an average of percents. O(node) is not needed.
  - Every C(percent) follows the one rounding rule of the collection's rates (docs/evidence.md, "Rates") - 2
    decimal places, rounded up because a failure rate is never understated (1 of 3 is 33.34), null without
    attempts; the numerator and the denominator are the authority.
author:
  - gpufleet maintainers (@gpufleet)
options:
  node:
    description: The Kubernetes node name. Required unless O(state=totalled).
    type: str
  state:
    description: C(recorded), C(restored), C(rescheduled) or C(totalled).
    type: str
    choices: [recorded, restored, rescheduled, totalled]
    default: recorded
  rates:
    description:
      - O(state=totalled) - the nodes' RV(failed_reschedule_rate) records (C(numerator), C(denominator)); null
        entries are skipped.
    type: list
    elements: raw
    default: []
  expected:
    description: O(state=restored) - the RV(snapshot) of O(state=recorded) taken before the drain.
    type: dict
  evictions:
    description: O(state=rescheduled) - the drain's C(evictions).
    type: list
    elements: dict
    default: []
  expect_new_boot:
    description:
      - O(state=restored) - the maintenance reboots the node - also wait for a C(bootID) other than the recorded one (a
        node that has not gone down yet still reads Ready with its devices).
    type: bool
    default: false
  max_failed_reschedules:
    description: O(state=rescheduled) - failed reschedules allowed before the module fails.
    type: int
    default: 0
  timeout:
    description: Seconds to wait (O(state=restored), O(state=rescheduled)).
    type: float
    default: 600
  poll_interval:
    description: Seconds between reads while waiting.
    type: float
    default: 0.5
extends_documentation_fragment:
  - gpufleet.dra_gate.k8s_auth
  - gpufleet.dra_gate.attributes.k8s
attributes:
  check_mode:
    support: full
    description: Only reads; waits the same in check mode.
  diff_mode:
    support: none
    description: Changes nothing.
notes:
  - A replacement pod counts when its controller is the evicted pod's, its UID is another one and it was
    created no earlier than the second of the eviction (Kubernetes stamps creation to the second).
seealso:
  - module: gpufleet.dra_gate.drain_node
"""

EXAMPLES = r"""
- name: Record the node's device health
  gpufleet.dra_gate.node_rollout:
    kubeconfig: "{{ dra_gate_kubeconfig }}"
    node: gpu-01
  delegate_to: localhost
  register: before

- name: Wait until it is back with the same devices
  gpufleet.dra_gate.node_rollout:
    kubeconfig: "{{ dra_gate_kubeconfig }}"
    node: gpu-01
    state: restored
    expected: "{{ before.snapshot }}"
    timeout: 900
  delegate_to: localhost

- name: One failed reschedule rate for the whole rollout (sums, then the one rounding rule)
  gpufleet.dra_gate.node_rollout:
    state: totalled
    rates: "{{ node_records | map(attribute='failed_reschedule_rate') | list }}"
  delegate_to: localhost
  register: total
"""

RETURN = r"""
snapshot:
  description: The node's state now (ready, unschedulable, boot_id, allocatable_gpu, slice_devices).
  returned: state=recorded or state=restored
  type: dict
device_health_restored:
  description: O(state=restored) - whether the node is Ready with the recorded devices.
  returned: state=restored
  type: bool
gaps:
  description: O(state=restored) - what was still missing at the end (empty when restored).
  returned: state=restored
  type: list
  elements: str
failed_reschedules:
  description: Evicted workloads not Running again by the deadline (namespace, name, uid, owner, reason).
  returned: state=rescheduled
  type: list
  elements: dict
failed_reschedule_rate:
  description:
    - numerator (failed reschedules), denominator (drain-triggered reschedule attempts), percent (2 decimal places,
      rounded up, null without attempts; docs/evidence.md "Rates").
    - With O(state=totalled) the sums over O(rates).
  returned: state=rescheduled or state=totalled
  type: dict
not_counted:
  description: Evicted pods that no controller recreates (not reschedule attempts), each with the reason.
  returned: state=rescheduled
  type: list
  elements: dict
seconds:
  description: How long the wait took.
  returned: state=restored or state=rescheduled
  type: float
started_at:
  description: UTC time the module started.
  returned: always
  type: str
finished_at:
  description: UTC time the module finished.
  returned: always
  type: str
"""

import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.phases import drain as dr
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.evidence import rates
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster.client import K8sApiError, argspec, module_reader

MODULE_ARG_SPEC = dict(
    node=dict(type="str"),
    state=dict(type="str", choices=["recorded", "restored", "rescheduled", "totalled"], default="recorded"),
    rates=dict(type="list", elements="raw", default=[]),
    expected=dict(type="dict"),
    evictions=dict(type="list", elements="dict", default=[]),
    max_failed_reschedules=dict(type="int", default=0),
    expect_new_boot=dict(type="bool", default=False),
    timeout=dict(type="float", default=600.0),
    poll_interval=dict(type="float", default=0.5),
)


def snapshot(reader, node):
    return dr.read_snapshot(reader, reader.get("/api/v1/nodes/%s" % node))


def rate(failed, attempts):
    """The failed reschedule rate: a failure rate (docs/evidence.md "Rates": percent rounded up)."""
    return rates.failure_rate(failed, attempts)


def main():
    module = AnsibleModule(argument_spec=argspec(MODULE_ARG_SPEC), supports_check_mode=True,
                           required_if=[("state", "restored", ("expected", "node")), ("state", "recorded", ("node",)),
                                        ("state", "rescheduled", ("node",))])
    params = module.params
    out = {"node": params["node"], "changed": False, "started_at": dr.utc_now()}

    def finish(failed=False, **extra):
        out.update(extra)
        out["finished_at"] = dr.utc_now()
        if failed:
            module.fail_json(**out)
        module.exit_json(**out)

    if params["state"] == "totalled":  # pure: nothing is read from the cluster
        try:
            total = rates.total(params["rates"], rates.UP)
        except rates.RateError as exc:
            finish(failed=True, msg=str(exc))
        finish(failed_reschedule_rate=total, msg="failed reschedules: %d of %d (%s %%)" % (
            total["numerator"], total["denominator"], "-" if total["percent"] is None else total["percent"]))

    try:
        dr.validate_node(params["node"])
        timeout = dr._number(params, "timeout")  # pylint: disable=protected-access
        poll = dr._number(params, "poll_interval")  # pylint: disable=protected-access
        if params["max_failed_reschedules"] < 0:
            raise dr.DrainError("max_failed_reschedules: must be a whole number >= 0, got %r" % params["max_failed_reschedules"])
        expected = params["expected"]
        if params["state"] == "restored" and not (isinstance(expected, dict) and expected.get("node") == params["node"]):
            raise dr.DrainError("expected: must be this node's snapshot from state=recorded (its 'node' is %r, this node is %r)"
                                % ((expected or {}).get("node"), params["node"]))
        for i, ev in enumerate(params["evictions"]):
            if not (isinstance(ev.get("name"), str) and isinstance(ev.get("namespace"), str) and ev.get("uid")):
                raise dr.DrainError("evictions[%d]: expected a drain_node eviction (namespace, name, uid, owner, evicted_at)" % i)
    except dr.DrainError as exc:
        finish(failed=True, msg=str(exc))
    reader = module_reader(module)
    node = params["node"]
    started = time.monotonic()
    deadline = started + timeout
    try:
        if params["state"] == "recorded":
            snap = snapshot(reader, node)
            finish(snapshot=snap, msg="node %s recorded: allocatable %s %s, %d ResourceSlice device(s)" % (
                node, dr.GPU_RESOURCE, snap["allocatable_gpu"], len(snap["slice_devices"])))
        if params["state"] == "restored":
            while True:
                snap = snapshot(reader, node)
                gaps = dr.health_gaps(expected, snap, new_boot=params["expect_new_boot"])
                if not gaps or time.monotonic() >= deadline:
                    break
                time.sleep(max(min(poll, deadline - time.monotonic()), 0.0))
            seconds = round(time.monotonic() - started, 6)
            if gaps:
                finish(failed=True, snapshot=snap, device_health_restored=False, gaps=gaps, seconds=seconds,
                       msg="node %s: device health not restored after %.0f s: %s" % (node, timeout, "; ".join(gaps)))
            finish(snapshot=snap, device_health_restored=True, gaps=[], seconds=seconds,
                   msg="node %s is Ready with its recorded devices after %.1f s" % (node, seconds))
        namespaces = sorted(set(ev["namespace"] for ev in params["evictions"]))
        while True:
            pods = []
            for ns in namespaces:
                pods.extend(reader.list("/api/v1/namespaces/%s/pods" % ns))
            attempts, failed, not_counted = dr.reschedules(params["evictions"], pods)
            if not failed or time.monotonic() >= deadline:
                break
            time.sleep(max(min(poll, deadline - time.monotonic()), 0.0))
    except K8sApiError as exc:
        finish(failed=True, msg="node %s: %s" % (node, exc))
    seconds = round(time.monotonic() - started, 6)
    result = dict(failed_reschedules=failed, failed_reschedule_rate=rate(len(failed), attempts), not_counted=not_counted,
                  seconds=seconds)
    if len(failed) > params["max_failed_reschedules"]:
        finish(failed=True, msg="node %s: %d of %d evicted workload(s) not Running again after %.0f s (allowed %d): %s" % (
            node, len(failed), attempts, timeout, params["max_failed_reschedules"], "; ".join(
                "%s/%s (%s %s): %s" % (f["namespace"], f["name"], (f["owner"] or {}).get("kind"), (f["owner"] or {}).get("name"),
                                       f["reason"]) for f in failed)), **result)
    finish(msg="node %s: %d of %d evicted workload(s) Running again" % (node, attempts - len(failed), attempts), **result)


if __name__ == "__main__":
    main()
