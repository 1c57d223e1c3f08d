#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: claim_lifecycle
short_description: Run DRA claim lifecycles and measure them from watch events (the record dra-acceptance)
version_added: 0.5.0
description:
  - Runs O(count) claim lifecycles in O(namespace), at most O(concurrency) at a time, cycling through O(kinds)
    - C(template) (a ResourceClaimTemplate for one whole GPU of O(device_class) and a pod using it),
    C(extended) (a pod asking for one O(extended_resource_name), served through the extended-resource
    DeviceClass), C(mig) (one device of O(mig_device_class)), C(numa) (O(numa_devices) GPUs with a
    C(matchAttribute) constraint on C(resource.kubernetes.io/numaNode)).
  - Each lifecycle creates a pod, waits until its claim is allocated and the pod is Ready (or failed, or
    O(lifecycle_timeout) passed), waits O(hold_seconds), deletes the pod and waits until the pod and its claim
    are gone (bounded by O(cleanup_timeout)).
  - Every time comes from a watch event or object field as it was received (RFC 3339, nanoseconds), never from
    a sleep - C(created_at) is when the claim was first seen (for C(extended), when the pod was created),
    C(allocated_at) when C(status.allocation) was first seen, C(scheduled_at) when the pod's node was seen,
    C(ready_at) when its Ready condition was seen true, C(delete_requested_at) just before the delete call,
    C(deallocated_at) when the allocation was seen gone, C(deleted_at) the claim's DELETED event.
  - Results are measured, not judged - success numerator and denominator, nearest-rank p50/p95/p99/max of
    the allocation and start latencies, errors by class, cleanup defects naming the claims, NUMA violations
    (docs/acceptance.md). Thresholds are the gate decision's job.
  - Every object carries the label C(gpufleet.io/dra-acceptance-run=<run_id>) and is deleted at the end, also
    when the run fails, passes O(timeout) or gets SIGINT/SIGTERM/SIGHUP. O(state=absent) deletes what a run
    that was killed outright left behind.
  - The per-claim records are written as JSON Lines (mode 0600, crash-safe, never replaced) in O(evidence_dir).
author:
  - gpufleet maintainers (@gpufleet)
options:
  state:
    description:
      - C(present) runs the lifecycles; C(absent) only deletes the objects of O(run_id) (of every run when
        O(run_id) is not given) in O(namespace) and waits until they are gone.
    type: str
    choices: [present, absent]
    default: present
  run_id:
    description:
      - The run's id (a DNS label of at most 40 characters), in object names, the run label and the records' file
        name. Required with O(state=present).
    type: str
  namespace:
    description: The namespace the lifecycles run in; the run's own (claims in it are watched without a selector).
    type: str
    default: dra-acceptance
  create_namespace:
    description: Create O(namespace) when it does not exist (it is never deleted).
    type: bool
    default: true
  count:
    description: How many lifecycles to run (the churn when O(long_lived) is set).
    type: int
    default: 100
  concurrency:
    description: How many of the O(count) lifecycles run at the same time (beside the long-lived ones).
    type: int
    default: 10
  long_lived:
    description:
      - How many lifecycles to hold for the whole run (the upstream DRA scale test's long-lived pods). They start
        first; the O(count) churn lifecycles start once every one is Ready (or has failed), at most O(concurrency)
        at a time; they are deleted once the churn is over. Their records are in the same file and counts.
    type: int
    default: 0
  kinds:
    description: The lifecycle kinds, used in turn (lifecycle i is of kind C(kinds[i % len(kinds)])).
    type: list
    elements: str
    default: [template]
  device_class:
    description: The DeviceClass of whole GPUs (C(template) and C(numa)).
    type: str
    default: gpu.nvidia.com
  mig_device_class:
    description: The DeviceClass of MIG devices (C(mig)).
    type: str
    default: mig.nvidia.com
  extended_resource_name:
    description: The extended resource the C(extended) kind's pods ask for.
    type: str
    default: nvidia.com/gpu
  numa_devices:
    description: How many GPUs a C(numa) claim asks for on one NUMA node (at least 2).
    type: int
    default: 2
  image:
    description: The workload container's image.
    type: str
    default: registry.k8s.io/pause:3.10
  command:
    description: The workload container's command (argv); it should exit on SIGTERM.
    type: list
    elements: str
  nodes:
    description: The canary's nodes; their devices in the ResourceSlices are returned as RV(gpus) (for the DCGM check).
    type: list
    elements: str
    default: []
  node_selector:
    description: The pods' nodeSelector (the canary pool's label).
    type: dict
    default: {}
  tolerations:
    description: The pods' tolerations (the canary pool's taint).
    type: list
    elements: dict
    default: []
  hold_seconds:
    description: How long a pod stays Ready before its deletion.
    type: float
    default: 0
  delete_grace_seconds:
    description: The pods' terminationGracePeriodSeconds and the grace of their deletion.
    type: int
    default: 30
  lifecycle_timeout:
    description: Seconds a lifecycle may take from the pod's creation to Ready before it counts as failed.
    type: float
    default: 300
  cleanup_timeout:
    description: Seconds the pod and its claim may take to be gone after the deletion; after that the claim is a cleanup defect.
    type: float
    default: 120
  timeout:
    description: Bound of the whole run in seconds; lifecycles not started by then are not started (and not counted).
    type: float
    default: 3600
  disruptions:
    description:
      - Disruptions injected during the run, each once C(after) lifecycles are done (default a third of O(count)).
      - "C({type: device_taint, effect: NoSchedule|NoExecute, node, device, lifecycles: 10, prefer_kind: extended,
        eviction_timeout: 60}) - a DeviceTaintRule on the device of a Ready lifecycle (of C(prefer_kind) when one is Ready)
        for C(lifecycles) further lifecycles; the pods holding it, their evictions (NoExecute) and every allocation of the
        device while it was tainted are recorded. A pod not evicted under NoExecute is reported in C(not_evicted)."
      - "C({type: plugin_restart, node, plugin_namespace: gpu-operator, plugin_label: nvidia-dra-driver-kubelet-plugin,
        recovery_timeout: 120}) - the node's DRA kubelet plugin pod is deleted; recovery (a new Ready plugin pod and the node's
        ResourceSlices published) is timed; the claims prepared on the node at that moment are named."
      - "C({type: workload_restart, pods: 1, recovery_timeout: 120}) - Ready lifecycle pods deleted early; the time until
        each claim is deallocated and gone is recorded, and a claim not freed is listed in C(leaked)."
    type: list
    elements: dict
    default: []
  progress_every:
    description:
      - Add a progress line (claims done / total, failures so far) every this many lifecycles (0 = only at the end).
        Lifecycles that finish together may take the count past a multiple; the line then gives the exact count.
      - Each line is also appended, with its time, to C(<evidence_dir>/dra-acceptance-<run_id>.progress) (0600) as it
        comes; when the module runs on the controller (a C(local) connection), the action plugin prints every new line
        while the task runs.
    type: int
    default: 100
  evidence_dir:
    description: The run's evidence directory; the records go to C(dra-acceptance-<run_id>.jsonl) in it. Required with O(state=present).
    type: path
extends_documentation_fragment:
  - gpufleet.dra_gate.k8s_auth
  - gpufleet.dra_gate.attributes.k8s
attributes:
  check_mode:
    support: full
    description:
      - Reads the namespace, the DeviceClasses and the ResourceSlices, validates everything, creates nothing and
        reports what would run.
  diff_mode:
    support: full
    description:
      - Shows the records file that is (or would be) written and the objects a lifecycle creates.
notes:
  - Needs create, delete, get, list and watch on pods and resourceclaimtemplates and list and watch on
    resourceclaims in O(namespace), list on resourceslices and get on deviceclasses (and create on namespaces
    with O(create_namespace)).
seealso:
  - module: gpufleet.dra_gate.dra_metrics
  - module: gpufleet.dra_gate.dra_canary_check
"""
EXAMPLES = r"""
- name: 500 whole-GPU and extended-resource lifecycles on the canary
  gpufleet.dra_gate.claim_lifecycle:
    kubeconfig: "{{ dra_gate_kubeconfig }}"
    run_id: canary-1
    count: 500
    concurrency: 20
    kinds: [template, extended]
    node_selector: {gpufleet.io/dra-canary: "true"}
    tolerations: [{key: gpufleet.io/dra-canary, operator: Exists, effect: NoSchedule}]
    evidence_dir: "{{ dra_gate_evidence_root }}/canary-1/acceptance"
  delegate_to: localhost
  run_once: true
  register: acceptance

- name: Remove what an interrupted run left
  gpufleet.dra_gate.claim_lifecycle:
    state: absent
    run_id: canary-1
  delegate_to: localhost
  run_once: true
"""
RETURN = r"""
long_lived:
  description: The long-lived lifecycles of the plan (O(long_lived)); C(churn) is O(count).
  returned: when state is present and not in check mode
  type: int
tracked_peak:
  description:
    - The most lifecycles tracked at once. Ended lifecycles leave the tracker and their records are streamed to
      the file, so the run's memory follows this, at most O(long_lived) + O(concurrency), not the number of
      lifecycles (a run with O(disruptions) keeps them all).
  returned: when state is present and not in check mode
  type: int
attempted:
  description: Lifecycles started (records written).
  returned: when state is present and not in check mode
  type: int
successful:
  description: Lifecycles whose claim was allocated and pod Ready with no error.
  returned: when state is present and not in check mode
  type: int
success_rate:
  description: "C({numerator, denominator, percent}): successful of attempted, percent rounded down."
  returned: when state is present and not in check mode
  type: dict
allocation_latency_seconds:
  description: "Claim created to allocation seen: C({method: nearest-rank, count, p50, p95, p99, max})."
  returned: when state is present and not in check mode
  type: dict
start_latency_seconds:
  description: Claim created to pod Ready, in the same shape.
  returned: when state is present and not in check mode
  type: dict
errors:
  description: Error class -> count over the unsuccessful lifecycles.
  returned: when state is present and not in check mode
  type: dict
cleanup_defects:
  description: "C({numerator, denominator, percent, claims, details}): claims left after their expected deletion of the completed lifecycles."
  returned: when state is present and not in check mode
  type: dict
numa:
  description: "C({checked, violations, details, not_checked}) over the C(numa) claims."
  returned: when state is present and not in check mode
  type: dict
records_path:
  description: The JSON Lines file of the per-claim records (0600).
  returned: when state is present and not in check mode
  type: str
interval:
  description: "C({start, end}) of the run (RFC 3339), for the Prometheus queries of dra_metrics."
  returned: when state is present and not in check mode
  type: dict
disruptions:
  description: One event per disruption (docs/acceptance.md) - what was disrupted, when, what was observed, the recovery.
  returned: when state is present and not in check mode
  type: list
  elements: dict
events:
  description:
    - The namespace's Kubernetes Events about the run's pods and claims, read before the cleanup - C(warnings) (the newest
      200, with reason, message, object, count, times and source, e.g. the kubelet's C(FailedPrepareDynamicResources)),
      C(warnings_total) and C(by_reason) (C(<type>/<reason>) -> count). C(error) when they could not be read.
  returned: when state is present and not in check mode
  type: dict
device_health:
  description:
    - Device health as the cluster reported it during the run - C(observations) (every change, as received, from the pods'
      C(allocatedResourcesStatus) (source C(pod), KEP-4680) and the claims' C(status.devices) Ready condition (source
      C(claim)), each with the status object), C(devices) and C(claims) that were ever not C(Healthy).
    - C(Unknown) is what the kubelet reports when the driver gave no health update within its health timeout (30 s).
  returned: when state is present and not in check mode
  type: dict
progress:
  description: The progress lines (claims done / total, failures so far).
  returned: when state is present and not in check mode
  type: list
  elements: str
gpus:
  description: Node of O(nodes) -> the UUIDs of its devices in the ResourceSlices (what dcgm-exporter must cover).
  returned: when state is present and not in check mode
  type: dict
left_behind:
  description: Objects of the run still present after the cleanup (C(kind/name)); empty when everything was removed.
  returned: always
  type: list
  elements: str
deleted:
  description: With O(state=absent), how many objects deletions were asked for.
  returned: when state is absent
  type: int
would_run:
  description: In check mode, the plan (count, concurrency, kinds, the objects of one lifecycle per kind).
  returned: in check mode with state present
  type: dict
"""

import os
import signal

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.phases import claim_lifecycle as cl
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.phases import claim_stats
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.evidence import private_files
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster.client import K8sApiError, argspec, module_reader

MODULE_ARG_SPEC = dict(
    state=dict(type="str", choices=["present", "absent"], default="present"),
    run_id=dict(type="str"),
    namespace=dict(type="str", default="dra-acceptance"),
    create_namespace=dict(type="bool", default=True),
    count=dict(type="int", default=100),
    concurrency=dict(type="int", default=10),
    long_lived=dict(type="int", default=0),
    kinds=dict(type="list", elements="str", default=["template"]),
    device_class=dict(type="str", default="gpu.nvidia.com"),
    mig_device_class=dict(type="str", default="mig.nvidia.com"),
    extended_resource_name=dict(type="str", default="nvidia.com/gpu"),
    numa_devices=dict(type="int", default=2),
    image=dict(type="str", default="registry.k8s.io/pause:3.10"),
    command=dict(type="list", elements="str"),
    nodes=dict(type="list", elements="str", default=[]),
    node_selector=dict(type="dict", default={}),
    tolerations=dict(type="list", elements="dict", default=[]),
    hold_seconds=dict(type="float", default=0),
    delete_grace_seconds=dict(type="int", default=30),
    lifecycle_timeout=dict(type="float", default=300),
    cleanup_timeout=dict(type="float", default=120),
    timeout=dict(type="float", default=3600),
    progress_every=dict(type="int", default=100),
    disruptions=dict(type="list", elements="dict", default=[]),
    evidence_dir=dict(type="path"),
)


def _exists(reader, path):
    return reader.get_or_none(path) is not None


def preflight(reader, plan):
    """Read-only checks before any write: the DRA API, the DeviceClasses the kinds need; the problems."""
    problems = []
    if not _exists(reader, "/apis/resource.k8s.io/v1"):
        return ["resource.k8s.io/v1 is not served: this cluster has no DRA API"]
    for cls, kinds in sorted(cl.classes_needed(plan).items()):
        if not _exists(reader, "/apis/resource.k8s.io/v1/deviceclasses/%s" % cls):
            problems.append("kinds %s need the DeviceClass %s, which does not exist" % (", ".join(sorted(set(kinds))), cls))
    return problems


def main():
    module = AnsibleModule(argument_spec=argspec(MODULE_ARG_SPEC), supports_check_mode=True,
                           required_if=[("state", "present", ("run_id", "evidence_dir"))])
    params = module.params
    if params["state"] == "absent":
        if params["run_id"] is not None and not cl.NAME_RE.match(params["run_id"]):
            module.fail_json(msg="run_id: must be a DNS label, got %r" % params["run_id"])
    else:
        try:
            plan = cl.validate_plan(params)
        except cl.PlanError as exc:
            module.fail_json(msg=str(exc))
        records_path = os.path.join(params["evidence_dir"], "dra-acceptance-%s.jsonl" % plan["run_id"])
        if os.path.exists(records_path):
            module.fail_json(msg="evidence_dir: %s exists already: run_id %s was used; give a new run_id" % (
                records_path, plan["run_id"]))
    reader = module_reader(module)
    ns = params["namespace"]

    if params["state"] == "absent":
        try:
            if module.check_mode or not _exists(reader, "/api/v1/namespaces/%s" % ns):
                module.exit_json(changed=False, left_behind=[], msg="check mode: nothing deleted" if module.check_mode
                                 else "namespace %s does not exist" % ns)
            left, deleted = cl.delete_run_objects(reader, ns, params["run_id"], params["cleanup_timeout"])
        except K8sApiError as exc:
            module.fail_json(msg=str(exc), left_behind=[])
        if left:
            module.fail_json(msg="still present after %.0f s: %s" % (params["cleanup_timeout"], ", ".join(left)),
                             left_behind=left, changed=bool(deleted))
        module.exit_json(changed=bool(deleted), left_behind=[], deleted=deleted)

    try:
        problems = preflight(reader, plan)
        ns_exists = _exists(reader, "/api/v1/namespaces/%s" % ns)
    except K8sApiError as exc:
        module.fail_json(msg="preflight: %s; nothing was created" % exc, left_behind=[])
    if not ns_exists and not params["create_namespace"]:
        problems.append("namespace %s does not exist (create_namespace is false)" % ns)
    if problems:
        module.fail_json(msg="; ".join(problems) + "; nothing was created", problems=problems, left_behind=[])
    example = dict((kind, {"pod": cl.pod_body(plan, kind, 0), "claim_template": cl.claim_template(plan, kind)})
                   for kind in sorted(set(plan["kinds"])))
    diff = {"before": "", "after": "%s: %d per-claim records (JSON Lines, 0600)\n%s" % (
        records_path, plan["count"] + plan["long_lived"], cl.to_json(example))} if module._diff else None  # pylint: disable=protected-access
    if module.check_mode:
        would = {"count": plan["count"], "long_lived": plan["long_lived"], "concurrency": plan["concurrency"], "kinds": plan["kinds"], "namespace": ns,
                 "records_path": records_path, "objects": example}
        out = dict(changed=True, left_behind=[], would_run=would,
                   msg="check mode: would run %d lifecycles (%s) in %s" % (plan["count"], ", ".join(plan["kinds"]), ns))
        if diff:
            out["diff"] = diff
        module.exit_json(**out)

    try:
        private_files.ensure_private_dir(params["evidence_dir"])
    except (private_files.PrivateFileError, OSError) as exc:
        module.fail_json(msg="evidence_dir: %s" % exc, left_behind=[])
    progress_path = cl.progress_path(params["evidence_dir"], plan["run_id"])

    def progress(line):
        # appended as it comes (0600): the action plugin shows each line while the task runs
        try:
            private_files.append_private_line(progress_path, "%s %s" % (cl.utc_now(), line))
        except (private_files.PrivateFileError, OSError):
            pass  # the line stays in the result's progress either way

    try:  # the records are streamed to a private temporary file beside the records' path, named at the end
        sink = claim_stats.RecordSink(records_path)
    except (private_files.PrivateFileError, OSError) as exc:
        module.fail_json(msg="evidence_dir: %s" % exc, left_behind=[])
    run = cl.LifecycleRun(reader, plan, progress=progress, sink=sink)

    def interrupt(signum, _frame):
        run.interrupted = "signal %d" % signum

    total = plan["count"] + plan["long_lived"]
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, interrupt)
    failure = None
    try:
        if not ns_exists:
            try:
                body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
                reader.request("POST", "/api/v1/namespaces", None, body)
            except K8sApiError as exc:
                if exc.status != 409:
                    raise
        run.run()
        run.collect_events()
    except cl.Interrupted as exc:
        failure = "interrupted (%s) after %d of %d lifecycles" % (exc, run.done, total)
    except K8sApiError as exc:
        failure = "%s (after %d of %d lifecycles)" % (exc, run.done, total)
    except Exception as exc:  # pylint: disable=broad-except
        # never a traceback: the run stops, cleans up and reports what it measured
        failure = "unexpected %s: %s (after %d of %d lifecycles)" % (type(exc).__name__, exc, run.done, total)
    finally:
        try:
            left = run.cleanup(plan["cleanup_timeout"])
        except K8sApiError as exc:
            left = ["(cleanup failed: %s)" % exc]
    run.finished_at = run.finished_at or cl.utc_now()
    try:
        sink.publish()
    except (claim_stats.ClaimStatsError, private_files.PrivateFileError, OSError) as exc:
        module.fail_json(msg="cannot write the records to %s: %s" % (records_path, exc), left_behind=left)
    result = cl.summary(run, plan)
    result.update(records_path=records_path, progress=run.progress_lines, left_behind=left, gpus=run.node_gpus(params["nodes"]),
                  started_at=run.started_at, finished_at=run.finished_at)
    if diff:
        result["diff"] = diff
    if failure or left:
        msg = failure or "objects of run %s still present after the cleanup: %s" % (plan["run_id"], ", ".join(left))
        module.fail_json(msg=msg, changed=True, **result)
    module.exit_json(changed=True, **result)


if __name__ == "__main__":
    main()
