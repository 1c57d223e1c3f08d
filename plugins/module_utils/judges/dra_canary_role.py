# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The dra_canary role's decisions (plugins/filter/dra_canary.py): the tolerations of the canary taints, the
GPUCluster spec, the refusal ladder before anything changes (chart, ownership, passthrough, unanswered hosts;
then the feature gates), the failure ladder of the build (cluster read, release, GPUCluster, containerd, CDI,
DeviceClass, smoke workloads), the smoke workloads, and the record's results (``completed`` among them).
Pure logic; the checks' outcomes come in as the registered task results."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
from collections.abc import Mapping

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.phases import dra_canary
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.judges.phase_role import JudgeError, checked_list, checked_mapping, step_fields

STEP_NAMES = ("chart", "ownership", "passthrough_decision", "operator_release", "gpu_cluster", "cdi", "device_class",
              "workloads")
GPU_CLUSTER_KEYS = ("action", "state", "ready", "problems", "plugin_pods", "generation", "waited_seconds", "started_at",
                    "finished_at", "duration_seconds")
FEATURE_KEYS = ("features", "counts", "not_assessed", "verdict", "used_features", "hosts", "kubernetes", "msg")
CONTAINERD_OK = ("unchanged", "changed", "would change")


def _pick(value, keys):
    value = checked_mapping(value, "result")
    return dict((key, value[key]) for key in keys if key in value)


def tolerations(taints):
    """The tolerations of ``key[=value]:Effect`` taints: {key, operator: Equal, value, effect} each."""
    out = []
    for index, taint in enumerate(checked_list(taints, "taints")):
        try:
            parsed = dra_canary.parse_taint(taint)
        except dra_canary.CanaryError as exc:
            raise JudgeError("taints entry %d: %s" % (index, exc))
        out.append({"key": parsed["key"], "operator": "Equal", "value": parsed["value"], "effect": parsed["effect"]})
    return out


def _merge(base, override):
    out = copy.deepcopy(dict(base))
    for key, value in dict(override).items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = _merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def gpu_cluster_spec(base, feature_gates, tolerations_list, override=None):
    """The GPUCluster spec: ``base``, the driver's feature gates, the daemonsets' tolerations (when there are
    any), then the user's ``override`` (each merged recursively, as Ansible's combine(recursive=true))."""
    spec = _merge(checked_mapping(base, "gpu_cluster_base"), {"draDriver": {"featureGates": checked_mapping(feature_gates, "feature_gates")}})
    tolerations_list = checked_list(tolerations_list, "tolerations")
    if tolerations_list:
        spec = _merge(spec, {"daemonsets": {"tolerations": tolerations_list}})
    return _merge(spec, checked_mapping(override, "gpu_cluster"))


def refusal(chart=None, ownership=None, passthrough=None, failed_hosts=None):
    """Why the build is refused before any change ('' when it is not): the chart, the ownership check, the
    ownership verdict, the passthrough check, the passthrough decision, hosts whose facts were not read."""
    chart, ownership, passthrough = checked_mapping(chart, "chart"), checked_mapping(ownership, "ownership"), checked_mapping(passthrough, "passthrough")
    if chart.get("failed"):
        return str(chart.get("msg"))
    if ownership.get("failed"):
        return "the ownership check failed: %s" % ownership.get("msg")
    if not ownership.get("ok"):
        return "the canary nodes are not DRA-owned and isolated: %s" % ownership.get("msg")
    if passthrough.get("failed"):
        return "the passthrough decision failed: %s" % passthrough.get("msg")
    decision = checked_mapping(passthrough.get("passthrough"), "passthrough.passthrough")
    if decision.get("decision") == "refused":
        return "passthrough refused: %s" % "; ".join(str(r) for r in checked_list(decision.get("reasons"), "reasons"))
    failed_hosts = checked_mapping(failed_hosts, "failed_hosts")
    if failed_hosts:
        return "no facts were read for %s" % ", ".join(failed_hosts)
    return ""


def feature_refusal(features):
    """Why the feature gates refuse the build ('' when they do not): the check failed, or a blocking finding."""
    features = checked_mapping(features, "features")
    if features.get("failed"):
        return "feature gates: %s" % features.get("msg", "failed")
    blocks = [f for f in checked_list(features.get("findings"), "findings") if checked_mapping(f, "finding").get("severity") == "block"]
    if blocks:
        return "feature gates: %s" % "; ".join(str(f.get("message")) for f in blocks)
    return ""


def containerd_failure(results, host, msg):
    """The build's failure when containerd_cdi failed: the hosts whose outcome is not a success (``host`` when
    none is named), and the failure's message."""
    bad = [r.get("host") for r in (checked_mapping(x, "containerd_cdi_result") for x in checked_list(results, "results") if x)
           if r.get("outcome") not in CONTAINERD_OK]
    return "containerd_cdi failed on %s: %s" % (", ".join(str(h) for h in bad) or host, msg or "failed")


def build_failure(cluster=None, release=None, gpu_cluster=None):
    """The build's failure ('' when none): reading the cluster, the operator release, the GPUCluster."""
    for result, what in ((cluster, "reading the cluster failed"), (release, "the operator release failed"),
                         (gpu_cluster, "the GPUCluster failed")):
        result = checked_mapping(result, what)
        if result.get("failed"):
            return "%s: %s" % (what, result.get("msg"))
    return ""


def check_failure(result, name):
    """A check step's failure ('' when it passed or did not run): ``name`` failed, or did not pass (``ok``)."""
    result = checked_mapping(result, name)
    what = {"cdi": ("the CDI check failed", "CDI discovery failed"),
            "workloads": ("the smoke workloads failed", "the smoke workloads did not pass"),
            "device_class": ("the DeviceClass failed", None)}
    if name not in what:
        raise JudgeError("check: expected one of %s, got %r" % (", ".join(sorted(what)), name))
    failed, not_ok = what[name]
    if not result or result.get("skipped"):
        return ""
    if result.get("failed"):
        return "%s: %s" % (failed, result.get("msg"))
    if not_ok and not result.get("ok"):
        return "%s: %s" % (not_ok, result.get("msg"))
    return ""


def smoke_workloads(passthrough, extended_resource, passthrough_nodes):
    """The smoke workloads: the extended-resource pod (on the first container node), a container claim and a
    VFIO pod per VM node when passthrough is enabled."""
    decision = checked_mapping(checked_mapping(passthrough, "passthrough").get("passthrough"), "passthrough.passthrough")
    vm_nodes = checked_list(passthrough_nodes, "passthrough_nodes") if decision.get("decision") == "enabled" else []
    out = []
    if extended_resource:
        container_nodes = checked_list(checked_mapping(decision.get("policy"), "policy").get("container_nodes"), "container_nodes")
        out.append({"name": "extended-gpu", "kind": "extended", "node": container_nodes[0] if container_nodes else None})
    if vm_nodes:
        out.append({"name": "container-claim", "kind": "container"})
    out.extend({"name": "vfio-%s" % node, "kind": "vfio", "node": node} for node in vm_nodes)
    return out


def results(steps, refused="", failure="", check_mode=False, feature_check=True, containerd_cdi=True,
            containerd=None, extended_resource=False, device_class_name=None, hook_path=None):
    """The record's decided results: refused, failure, completed (neither refused nor failed, not check mode), the
    findings of every check, the GPUCluster, DeviceClass, feature-gate and containerd parts, each step's timing.
    ``steps``: the registered results by step name (STEP_NAMES, plus ``features``)."""
    steps = checked_mapping(steps, "steps")
    step = dict((name, checked_mapping(steps.get(name), name)) for name in STEP_NAMES + ("features",))
    findings = []
    for name in ("ownership", "passthrough_decision", "features", "cdi", "device_class", "workloads"):
        findings.extend(checked_list(step[name].get("findings"), "%s.findings" % name))
    device_class = checked_mapping(step["device_class"].get("device_class"), "device_class.device_class")
    return {
        "check_mode": bool(check_mode),
        "refused": refused or None,
        "failure": failure or None,
        "completed": not refused and not failure and not check_mode,
        "findings": findings,
        "gpu_cluster": _pick(step["gpu_cluster"], GPU_CLUSTER_KEYS),
        "device_class": {"requested": bool(extended_resource), "name": device_class_name,
                         "action": device_class.get("action"), "object": device_class.get("object"),
                         "rollback_hook": hook_path},
        "feature_gates": (_pick(step["features"], FEATURE_KEYS) if feature_check
                          else {"skipped": "dra_gate_canary_feature_check is false"}),
        "containerd": ([r for r in checked_list(containerd, "containerd") if r] if containerd_cdi
                       else {"skipped": "dra_gate_canary_containerd_cdi is false"}),
        "steps": dict((name, step_fields(step[name])) for name in STEP_NAMES),
    }
