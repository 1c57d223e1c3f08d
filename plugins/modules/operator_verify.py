#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: operator_verify
short_description: Assert the GPU Operator runs in Device Plugin mode and read its per-node state, with a bounded wait
version_added: 0.3.0
description:
  - Verifies, on evidence read from the cluster, that the NVIDIA GPU Operator runs in Device Plugin mode
    and has settled - before an upgrade (the baseline), after each hop and after a rollback. It never
    changes anything.
  - The mode is asserted, not assumed. The ClusterPolicy's C(spec.devicePlugin.enabled) must equal
    O(expect.device_plugin_enabled); an absent field counts as true, the chart's and the operator's
    default. No GPUCluster may exist (the managed DRA path must never coexist with a ClusterPolicy); a
    GPUCluster kind that is not served at all means none exist, while a 403 on reading them fails the
    module. C(spec.cdi.enabled) is compared with O(expect.cdi_enabled) when that is set.
  - Per node of O(nodes) - its Ready condition and its allocatable O(gpu_resource). A node that is missing
    is a problem and listed in RV(unassessed). With the device plugin expected enabled, a node without
    allocatable GPUs is a problem. With O(baseline), each node's allocatable must equal the baseline's.
  - The device plugin DaemonSet C(nvidia-device-plugin-daemonset) of O(namespace) - its template image
    and the image of its pod on each checked node must be the expected image, C(devicePlugin) of O(expect.images)
    when given, else the image the ClusterPolicy spec asks for (C(repository/image:version), or
    C(@version) for a C(sha256:) version, as the operator composes it).
  - Operands - for every ClusterPolicy component with an image (C(devicePlugin), C(toolkit), C(validator),
    C(gfd), C(dcgmExporter), C(driver), ...), the image of its DaemonSet (found by the operator's naming,
    e.g. C(nvidia-container-toolkit-daemonset)) against the pin in O(expect.images), else the spec's
    image. A pin by digest is compared as the full reference, or met when every pod of the workload
    reports a C(imageID) with the pin's digest. The driver's tag also matches with the OS suffix the
    operator appends. An enabled component whose workload is absent is a problem only for the device
    plugin, the validator and pinned components (a host-installed driver has no driver DaemonSet).
  - DRA objects - ResourceSlices (total and per driver), ResourceClaims (all namespaces) and
    DeviceClasses are counted; with O(baseline), any of them not in the baseline is a problem.
  - With O(wait), the module polls every O(poll_interval) seconds, for at most O(wait_timeout) seconds
    (a monotonic deadline), until the ClusterPolicy's C(status.state) is C(ready) for its current spec,
    every found operand's template runs the image the spec asks for (the operator has reconciled), the
    device plugin DaemonSet is rolled out (C(observedGeneration >= generation), C(updatedNumberScheduled
    == desiredNumberScheduled == numberAvailable)) and the validator's pods are Ready. At the deadline it
    stops and reports why, e.g. C(ClusterPolicy cluster-policy not ready after 600 s) with the state and its message.
    Without O(wait), one read; a not-settled operator is a problem all the same.
  - The operator itself (unless O(operator_deployment) is empty) - its Deployment exists, has rolled out its
    current template and is available (a C(ReplicaFailure) condition, such as pods refused for a missing
    ServiceAccount, is named); its pods' ServiceAccount exists and a RoleBinding or ClusterRoleBinding grants
    it an existing role. With O(recorded_images_file), every container the snapshot recorded runs the
    recorded image and its pods the recorded digest. A ClusterPolicy that looks ready is not enough - an
    operator that is gone reconciles nothing. With O(wait) the Deployment's availability is waited for too.
  - Runs on the controller (or a delegate) with the C(kubernetes) Python client.
author:
  - gpufleet maintainers (@gpufleet)
options:
  namespace:
    description:
      - The GPU Operator's namespace (its operands' DaemonSets and the C(gpu-operator) Deployment).
    type: str
    default: gpu-operator
  cluster_policy:
    description:
      - Name of the ClusterPolicy to verify. Empty - the one ClusterPolicy; none, or more than one, is a
        problem.
    type: str
    default: ''
  nodes:
    description:
      - The GPU nodes checked (names). Must not be empty.
    type: list
    elements: str
    required: true
  gpu_resource:
    description:
      - The device plugin's extended resource read from each node's allocatable.
    type: str
    default: nvidia.com/gpu
  expect:
    description:
      - What the cluster must show.
    type: dict
    default: {}
    suboptions:
      device_plugin_enabled:
        description:
          - The expected C(spec.devicePlugin.enabled) of the ClusterPolicy (absent in the spec counts as true).
        type: bool
        default: true
      cdi_enabled:
        description:
          - The expected C(spec.cdi.enabled); null - not asserted.
        type: bool
      images:
        description:
          - Pinned images, component (the ClusterPolicy spec key, e.g. C(devicePlugin), C(toolkit),
            C(validator)) to image reference, by digest (C(nvcr.io/nvidia/k8s-device-plugin@sha256:<64 hex>))
            or by tag. A pinned component's workload must run exactly it.
        type: dict
        default: {}
      operator_version:
        description:
          - The expected GPU Operator version (C(v26.7.0) or C(26.7.0)), compared with the tag of the
            C(gpu-operator) Deployment's image; null - not asserted.
        type: str
  baseline:
    description:
      - An earlier result of this module (its RV(nodes) and RV(dra_objects) are used). Each node's
        allocatable must equal the baseline's, and no DRA object may exist that the baseline did not have.
    type: dict
  wait:
    description:
      - Poll until the operator has settled (see the description) or O(wait_timeout) passes.
    type: bool
    default: false
  wait_timeout:
    description:
      - Seconds to wait at most with O(wait).
    type: float
    default: 600
  poll_interval:
    description:
      - Seconds between two reads while waiting (between 0.05 and 600).
    type: float
    default: 2
  fail_on_problems:
    description:
      - Fail the task when problems were found. With C(false) the task succeeds with RV(ok) false and the
        RV(problems); a phase registers the result and decides itself. API errors fail the task either way.
    type: bool
    default: false
  operator_deployment:
    description:
      - The name of the GPU Operator's own Deployment in O(namespace), verified as above. Empty - not verified.
    type: str
    default: gpu-operator
  recorded_images_file:
    description:
      - The snapshot's C(images.json) of the release revision the cluster must now run (M(gpufleet.dra_gate.helm_state));
        the containers of O(operator_deployment) it records, with the digests their pods ran, are the images
        the operator must run. A recorded revision whose manifest has no such Deployment fails the module
        (rolling back to it would remove the operator).
    type: path
  recorded_images_sha256:
    description:
      - The artifact index's sha256 of O(recorded_images_file); required with it. The file is read once and
        checked against it before it is used.
    type: str
extends_documentation_fragment:
  - gpufleet.dra_gate.k8s_auth
  - gpufleet.dra_gate.attributes.k8s
attributes:
  check_mode:
    support: full
    description:
      - Read-only; check mode runs the same reads (and the wait) and returns the same result.
  diff_mode:
    support: none
    description:
      - Returns no diff; nothing is changed.
notes:
  - Read-only; always returns C(changed=false). Needs get on C(/apis/nvidia.com) discovery, list on
    clusterpolicies and gpuclusters, nodes, and in O(namespace) daemonsets, deployments and pods, and
    list on resourceslices, resourceclaims and deviceclasses.
  - A 404 on a kind that is not served (the GPUCluster kind before 26.7, C(resource.k8s.io/v1) on an old
    cluster) means none exist; a 403 fails the module naming the request - forbidden is not absent.
  - Pods are matched to a workload by its selector's C(matchLabels).
seealso:
  - module: gpufleet.dra_gate.gpu_cluster_facts
  - module: gpufleet.dra_gate.control_suite
"""

EXAMPLES = r"""
- name: Baseline before the upgrade
  gpufleet.dra_gate.operator_verify:
    kubeconfig: /etc/gpufleet/kubeconfig
    nodes: "{{ groups['gpu_nodes'] }}"
    wait: true
  delegate_to: localhost
  run_once: true
  register: operator_baseline

- name: After the hop to 26.7.0 - same allocatable, pinned device plugin, no DRA object
  gpufleet.dra_gate.operator_verify:
    kubeconfig: /etc/gpufleet/kubeconfig
    nodes: "{{ groups['gpu_nodes'] }}"
    expect:
      cdi_enabled: true
      operator_version: v26.7.0
      images:
        devicePlugin: nvcr.io/nvidia/k8s-device-plugin@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
    baseline: "{{ operator_baseline }}"
    wait: true
    wait_timeout: 900
    fail_on_problems: true
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
ok:
  description: True when no problem was found.
  returned: always
  type: bool
  sample: true
problems:
  description: Every problem found, one sentence each naming the object, what was seen and what was expected.
  returned: always
  type: list
  elements: str
  sample: ["ClusterPolicy cluster-policy not ready after 600 s: state notReady (nvidia-device-plugin-daemonset: 1/2 pods ready)"]
mode:
  description:
    - The operator's mode - C(cluster_policy) (its name, null when none was selected), C(state) and
      C(message) (C(status.state) and the Ready condition's message), C(device_plugin_enabled) (absent
      counts as true), C(cdi_enabled) (C(spec.cdi.enabled), null when absent), C(gpu_clusters) (names of
      the GPUClusters), C(operator_image) and C(operator_version) (of the C(gpu-operator) Deployment).
  returned: always
  type: dict
  sample: {"cluster_policy": "cluster-policy", "state": "ready", "message": "ClusterPolicy is ready",
           "device_plugin_enabled": true, "cdi_enabled": true, "gpu_clusters": [],
           "operator_image": "nvcr.io/nvidia/gpu-operator:v26.7.0", "operator_version": "v26.7.0"}
nodes:
  description: Per checked node found - C(allocatable) (of O(gpu_resource), an integer, null when absent) and C(ready).
  returned: always
  type: dict
  sample: {"gpu-1": {"allocatable": 8, "ready": true}}
unassessed:
  description: Checked nodes that could not be assessed (not found).
  returned: always
  type: list
  elements: str
device_plugin:
  description:
    - The device plugin DaemonSet - C(name), C(found), C(image) (its template's first container),
      C(expected_image), C(desired), C(updated), C(available) (its status) and C(pods) (checked node to
      the image its device plugin pod runs, null when it has none).
  returned: always
  type: dict
  sample: {"name": "nvidia-device-plugin-daemonset", "found": true, "image": "nvcr.io/nvidia/k8s-device-plugin:v0.20.0",
           "expected_image": "nvcr.io/nvidia/k8s-device-plugin:v0.20.0", "desired": 2, "updated": 2, "available": 2,
           "pods": {"gpu-1": "nvcr.io/nvidia/k8s-device-plugin:v0.20.0"}}
operator:
  description:
    - The operator itself - C(deployment), C(found), C(available), C(images) (container -> template image),
      C(pods) (each C(pod), C(container), C(image), C(digest)), C(service_account) (C(name), C(found)) and
      C(bindings) (each C(kind), C(name), C(role), C(role_found)).
  returned: always
  type: dict
operands:
  description:
    - Per ClusterPolicy component with an image - C(kind) and C(name) of its workload (null when the
      operator's naming for it is not known), C(enabled), C(found), C(pin) (from O(expect.images)),
      C(spec_image) (what the spec asks for, null when the spec does not determine it), C(expected) (the
      pin, else the spec's image), C(actual) (the template's image), C(ok) (null when not assessed -
      disabled, absent and not required, or nothing expected) and C(pinned_by_digest) (whether the
      running reference is by digest; null when absent).
  returned: always
  type: dict
  sample: {"toolkit": {"kind": "DaemonSet", "name": "nvidia-container-toolkit-daemonset", "enabled": true, "found": true,
                       "pin": null, "spec_image": "nvcr.io/nvidia/k8s/container-toolkit:v1.20.0",
                       "expected": "nvcr.io/nvidia/k8s/container-toolkit:v1.20.0",
                       "actual": "nvcr.io/nvidia/k8s/container-toolkit:v1.20.0", "ok": true, "pinned_by_digest": false}}
dra_objects:
  description:
    - DRA objects - C(served) (whether C(resource.k8s.io/v1) is), C(resource_slices) (C(total),
      C(by_driver), C(names)), C(resource_claims) (count over all namespaces), C(resource_claim_names)
      (C(namespace/name)) and C(device_classes) (names).
  returned: always
  type: dict
  sample: {"served": true, "resource_slices": {"total": 0, "by_driver": {}, "names": []}, "resource_claims": 0,
           "resource_claim_names": [], "device_classes": []}
wait:
  description: C(requested) (O(wait)), C(ready) (settled at the last read), C(waited_seconds) and C(timeout) (O(wait_timeout)).
  returned: always
  type: dict
  sample: {"requested": true, "ready": true, "waited_seconds": 4.212, "timeout": 600}
started_at:
  description: UTC time (RFC 3339) the module started reading.
  returned: always
  type: str
  sample: "2026-12-02T01:20:03.123456Z"
finished_at:
  description: UTC time (RFC 3339) it finished.
  returned: always
  type: str
duration_seconds:
  description: Seconds from RV(started_at) to RV(finished_at).
  returned: always
  type: float
api_calls:
  description: Number of HTTP requests made (retries included).
  returned: always
  type: int
api_retries:
  description: How many of those requests were retries of a failed attempt.
  returned: always
  type: int
"""

import hashlib
import json

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.common.module_run import ModuleRun
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.phases import operator_verify as ov
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster.client import (
    K8sApiError,
    argspec,
    check_params,
    module_api_client,
    reader_from_params,
)

MODULE_ARG_SPEC = dict(
    namespace=dict(type="str", default=ov.DEFAULT_NAMESPACE),
    cluster_policy=dict(type="str", default=""),
    nodes=dict(type="list", elements="str", required=True),
    gpu_resource=dict(type="str", default=ov.GPU_RESOURCE),
    expect=dict(type="dict", default={}, options=dict(
        device_plugin_enabled=dict(type="bool", default=True),
        cdi_enabled=dict(type="bool"),
        images=dict(type="dict", default={}),
        operator_version=dict(type="str"),
    )),
    baseline=dict(type="dict"),
    wait=dict(type="bool", default=False),
    wait_timeout=dict(type="float", default=600.0),
    poll_interval=dict(type="float", default=2.0),
    fail_on_problems=dict(type="bool", default=False),
    operator_deployment=dict(type="str", default=ov.OPERATOR_DEPLOYMENT),
    recorded_images_file=dict(type="path"),
    recorded_images_sha256=dict(type="str"),
)


def recorded_operator(module, params):
    """The operator Deployment's recorded images and digests from the snapshot's images.json, read once
    and checked against the index's sha256 at this moment (what is compared is what was verified)."""
    path = params["recorded_images_file"]
    if not path:
        return None
    if not params["recorded_images_sha256"]:
        module.fail_json(msg="recorded_images_sha256: required with recorded_images_file (the artifact index's digest "
                             "of that file)")
    try:
        with open(path, "rb") as handle:
            data = handle.read(64 * 1024 * 1024)
    except (IOError, OSError) as exc:
        module.fail_json(msg="recorded_images_file: cannot read %s: %s" % (path, exc.strerror or exc))
    expected = params["recorded_images_sha256"].strip().lower()
    expected = expected[len("sha256:"):] if expected.startswith("sha256:") else expected
    actual = hashlib.sha256(data).hexdigest()
    if actual != expected:
        module.fail_json(msg="recorded_images_file: %s has sha256 %s, not the indexed %s (changed after the snapshot); "
                             "nothing was compared with it" % (path, actual, expected))
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        module.fail_json(msg="recorded_images_file: %s is not helm_state's images.json: %s" % (path, exc))
    try:
        return ov.recorded_operator_images(doc, params["namespace"], params["operator_deployment"])
    except ov.VerifyError as exc:
        # a rollback to a revision without the operator would remove it: a problem the rollback names
        module.fail_json(msg=str(exc), recorded_images_file=path, ok=False, problems=[str(exc)])
    return None


def main():
    module = AnsibleModule(argument_spec=argspec(MODULE_ARG_SPEC), supports_check_mode=True)
    params = module.params
    bad = check_params(params)
    if bad:
        module.fail_json(msg=bad)
    if not str(params["namespace"] or "").strip():
        module.fail_json(msg="namespace: expected the GPU Operator's namespace (a non-empty name)")
    params["recorded_operator"] = recorded_operator(module, params)
    try:
        ov.check_params(params)
    except ov.VerifyError as exc:
        module.fail_json(msg=str(exc))
    run = ModuleRun(module)
    api_client = module_api_client(module)
    reader = reader_from_params(api_client, params)

    def timing():
        return dict(run.timing(), api_calls=reader.calls, api_retries=reader.retries)

    try:
        result = ov.verify(reader, params)
    except K8sApiError as exc:
        module.fail_json(msg="reading the cluster failed: %s" % exc, call=exc.call, status=exc.status,
                         forbidden=exc.forbidden, attempts=exc.attempts, changed=False, **timing())
    finally:
        api_client.close()
    result.update(timing())
    if result["ok"]:
        msg = "GPU Operator in %s mode, settled; %d node(s) checked" % (
            "Device Plugin" if result["mode"]["device_plugin_enabled"] else "non-Device-Plugin", len(result["nodes"]))
    else:
        msg = "%d problem(s): %s" % (len(result["problems"]), "; ".join(result["problems"]))
    if result["problems"] and params["fail_on_problems"]:
        module.fail_json(msg=msg, changed=False, **result)
    module.exit_json(msg=msg, changed=False, **result)


if __name__ == "__main__":
    main()
