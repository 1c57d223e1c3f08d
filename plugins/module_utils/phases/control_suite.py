# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The prior workload control suite: pure logic, no I/O, no Ansible.

A suite (``data/control_suite/default.yml``, or the operator's own file; format in
docs/control_suite.md) is a list of GPU workloads - a Pod, a Job or a Deployment, each with a
success condition and a timeout - that must pass before an upgrade (the baseline), after each hop
and at the end of a rollback. This file:

- validates a suite (:func:`validate_suite`): every error is a :class:`SuiteError` whose message
  names the field (``suite.workloads[1].success.kind: expected one of ...``);
- builds the objects to create (:func:`build_object`): the suite's namespace, a per-run name, the
  suite's labels and the run label ``gpufleet.io/control-suite-run=<run_id>`` on the object and on
  its pod template, so every pod the run causes is found (and cleaned up) by that label;
- evaluates a success condition (:func:`evaluate`) from the object and its pods as the API served
  them: ``passed``, ``failed`` (a terminal failure: the pod or Job failed, the Deployment's progress
  deadline passed) or ``pending``, with the reason and the nodes the pods ran on;
- shapes the result records (:func:`record`, :func:`summary`, :func:`rfc3339`).

Reading files, talking to the API and waiting are the module's (plugins/modules/control_suite.py).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import hashlib
import re

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster import objects as kube
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.common import clock

SCHEMA_VERSION = 1
RUN_LABEL = "gpufleet.io/control-suite-run"
WORKLOAD_LABEL = "gpufleet.io/control-suite-workload"
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY = "gpufleet.dra_gate"
# A namespace created by a run carries this annotation (the run id): only that run deletes it.
CREATED_BY_ANNOTATION = "gpufleet.io/control-suite-created-by-run"
DEFAULT_NAMESPACE = "gpufleet-control-suite"
DEFAULT_TIMEOUT = 300
GPU_RESOURCE = "nvidia.com/gpu"

SUCCESS_KINDS = ("pod_succeeded", "pod_ready", "job_complete", "deployment_available")
# The object kind each success condition is evaluated on.
KIND_OF_SUCCESS = {"pod_succeeded": "Pod", "pod_ready": "Pod", "job_complete": "Job",
                   "deployment_available": "Deployment"}
# kind -> (apiVersion, collection path prefix, plural)
RESOURCES = {
    "Pod": ("v1", "/api/v1", "pods"),
    "Job": ("batch/v1", "/apis/batch/v1", "jobs"),
    "Deployment": ("apps/v1", "/apis/apps/v1", "deployments"),
}
WORKLOAD_KEYS = ("name", "manifest", "manifest_file", "success", "timeout_seconds")
SUITE_KEYS = ("schema_version", "namespace", "labels", "workloads", "description")
SUCCESS_KEYS = ("kind", "replicas")
# DNS-1123 label; workload names stay short enough for the per-run suffix and the Job's job-name label.
NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
MAX_WORKLOAD_NAME = 48
LABEL_VALUE_RE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
LABEL_NAME_RE = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
LABEL_PREFIX_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
# Server-set metadata a manifest copied from a live object may carry; a create refuses or ignores it.
DROPPED_METADATA = ("resourceVersion", "uid", "creationTimestamp", "managedFields", "selfLink", "generation",
                    "deletionTimestamp", "deletionGracePeriodSeconds", "ownerReferences", "generateName")

PASSED, FAILED, PENDING, SKIPPED = "passed", "failed", "pending", "skipped"


class SuiteError(ValueError):
    """A suite that cannot run; the message names the field and what was expected."""


def _type_name(value):
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, (int, float)):
        return "a number"
    return "a string" if isinstance(value, str) else type(value).__name__


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def label_key_problem(key):
    """Why ``key`` is not a valid label key (``[prefix/]name``), or None."""
    if not isinstance(key, str) or not key:
        return "expected a non-empty string"
    prefix, sep, name = key.rpartition("/")
    if sep and (not prefix or len(prefix) > 253 or not LABEL_PREFIX_RE.match(prefix)):
        return "the prefix %r is not a DNS-1123 subdomain" % prefix
    if len(name) > 63 or not LABEL_NAME_RE.match(name):
        return "the name %r must be 1-63 letters, digits, '-', '_' or '.', starting and ending alphanumeric" % name
    return None


def label_value_problem(value):
    """Why ``value`` is not a valid label value, or None."""
    if not isinstance(value, str):
        return "expected a string, got %s (quote true, 1, ... in YAML)" % _type_name(value)
    if len(value) > 63 or not LABEL_VALUE_RE.match(value):
        return "%r must be at most 63 letters, digits, '-', '_' or '.', starting and ending alphanumeric" % value
    return None


def check_run_id(run_id):
    """The run id is a label value (``gpufleet.io/control-suite-run``); a message naming it, or None."""
    if not run_id:
        return "run_id: expected a non-empty label value"
    problem = label_value_problem(run_id)
    return "run_id: %s" % problem if problem else None


def _labels(value, where):
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise SuiteError("%s: expected a mapping of label names to string values, got %s" % (where, _type_name(value)))
    for key in sorted(value, key=str):
        problem = label_key_problem(key)
        if problem:
            raise SuiteError("%s: key %r: %s" % (where, key, problem))
        problem = label_value_problem(value[key])
        if problem:
            raise SuiteError("%s.%s: %s" % (where, key, problem))
        if key in (RUN_LABEL, WORKLOAD_LABEL):
            raise SuiteError("%s.%s: reserved: the module sets it on every object of a run" % (where, key))
    return dict(value)


def _unknown(data, allowed, where):
    extra = sorted(str(k) for k in data if k not in allowed)
    if extra:
        raise SuiteError("%s: unknown key(s) %s; expected %s" % (where, ", ".join(extra), ", ".join(allowed)))


def _containers(pod_spec):
    return [c for c in (pod_spec or {}).get("containers") or [] if isinstance(c, dict)]


def gpu_request(pod_spec):
    """The ``nvidia.com/gpu`` count a pod spec asks for (limits, else requests, summed over containers)."""
    total = 0
    for container in _containers(pod_spec):
        resources = container.get("resources") or {}
        value = (resources.get("limits") or {}).get(GPU_RESOURCE)
        if value is None:
            value = (resources.get("requests") or {}).get(GPU_RESOURCE)
        try:
            total += int(str(value)) if value is not None else 0
        except ValueError:
            pass
    return total


def _pod_spec(manifest):
    """The pod spec of a Pod, or the template's of a Job or Deployment."""
    spec = manifest.get("spec") or {}
    if manifest.get("kind") == "Pod":
        return spec
    return ((spec.get("template") or {}).get("spec")) or {}


def validate_manifest(manifest, success, where):
    """Check a workload's object against its success condition; returns the kind."""
    if not isinstance(manifest, dict):
        raise SuiteError("%s: expected a Kubernetes object (a mapping), got %s" % (where, _type_name(manifest)))
    kind = manifest.get("kind")
    if kind not in RESOURCES:
        raise SuiteError("%s.kind: expected one of %s, got %r" % (where, ", ".join(sorted(RESOURCES)), kind))
    api_version = RESOURCES[kind][0]
    if manifest.get("apiVersion") != api_version:
        raise SuiteError("%s.apiVersion: a %s is %s, got %r" % (where, kind, api_version, manifest.get("apiVersion")))
    metadata = manifest.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise SuiteError("%s.metadata: expected a mapping, got %s" % (where, _type_name(metadata)))
    _labels((metadata or {}).get("labels"), where + ".metadata.labels")
    spec = manifest.get("spec")
    if not isinstance(spec, dict):
        raise SuiteError("%s.spec: expected a mapping, got %s" % (where, _type_name(spec)))
    wanted = KIND_OF_SUCCESS[success["kind"]]
    if kind != wanted:
        raise SuiteError("%s.kind: success kind %s is evaluated on a %s, the manifest is a %s" % (
            where, success["kind"], wanted, kind))
    if kind != "Pod":
        template = spec.get("template")
        if not isinstance(template, dict) or not isinstance(template.get("spec"), dict):
            raise SuiteError("%s.spec.template.spec: expected the pod template's spec (a mapping)" % where)
        _labels((template.get("metadata") or {}).get("labels"), where + ".spec.template.metadata.labels")
    pod_spec = _pod_spec(manifest)
    if not _containers(pod_spec):
        inner = "spec" if kind == "Pod" else "spec.template.spec"
        raise SuiteError("%s.%s.containers: expected at least one container" % (where, inner))
    restart = pod_spec.get("restartPolicy") or ("Never" if kind == "Job" else "Always")
    if success["kind"] == "pod_succeeded" and restart == "Always":
        raise SuiteError("%s.spec.restartPolicy: a pod that must succeed needs Never or OnFailure (Always, the "
                         "default, restarts it forever)" % where)
    if kind == "Job" and restart not in ("Never", "OnFailure"):
        raise SuiteError("%s.spec.template.spec.restartPolicy: a Job's pods need Never or OnFailure, got %r" % (
            where, restart))
    if kind == "Deployment":
        selector = spec.get("selector")
        if not isinstance(selector, dict) or not (selector.get("matchLabels") or selector.get("matchExpressions")):
            raise SuiteError("%s.spec.selector: a Deployment needs a selector matching its template's labels" % where)
        replicas = spec.get("replicas", 1)
        if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 1:
            raise SuiteError("%s.spec.replicas: expected an integer of 1 or more, got %r" % (where, replicas))
    return kind


def _success(value, where):
    if not isinstance(value, dict):
        raise SuiteError("%s: expected a mapping with kind (one of %s), got %s" % (
            where, ", ".join(SUCCESS_KINDS), _type_name(value)))
    _unknown(value, SUCCESS_KEYS, where)
    kind = value.get("kind")
    if kind not in SUCCESS_KINDS:
        raise SuiteError("%s.kind: expected one of %s, got %r" % (where, ", ".join(SUCCESS_KINDS), kind))
    result = {"kind": kind}
    if "replicas" in value and value["replicas"] is not None:
        if kind != "deployment_available":
            raise SuiteError("%s.replicas: only for deployment_available, not %s" % (where, kind))
        replicas = value["replicas"]
        if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 1:
            raise SuiteError("%s.replicas: expected an integer of 1 or more, got %r" % (where, replicas))
        result["replicas"] = replicas
    return result


def validate_workload(item, where, load_manifest=None):
    """One workload, normalised: ``{name, kind, manifest, manifest_file, success, timeout_seconds}``.

    ``load_manifest(path, where)`` reads a ``manifest_file`` (the module's; it raises SuiteError)."""
    if not isinstance(item, dict):
        raise SuiteError("%s: expected a mapping with name, manifest or manifest_file, success and timeout_seconds, "
                         "got %s" % (where, _type_name(item)))
    _unknown(item, WORKLOAD_KEYS, where)
    name = item.get("name")
    if not isinstance(name, str) or len(name) > MAX_WORKLOAD_NAME or not NAME_RE.match(name):
        raise SuiteError("%s.name: expected a DNS-1123 label of at most %d characters (lower-case letters, digits, "
                         "'-'), got %r" % (where, MAX_WORKLOAD_NAME, name))
    where = "%s (%s)" % (where, name)
    has_inline, has_file = item.get("manifest") is not None, item.get("manifest_file") is not None
    if has_inline == has_file:
        raise SuiteError("%s: expected exactly one of manifest (an inline object) or manifest_file (a path)" % where)
    if "success" not in item:
        raise SuiteError("%s.success: required (a mapping with kind: one of %s)" % (where, ", ".join(SUCCESS_KINDS)))
    success = _success(item["success"], where + ".success")
    timeout = item.get("timeout_seconds", DEFAULT_TIMEOUT)
    if not _is_number(timeout) or not timeout > 0:
        raise SuiteError("%s.timeout_seconds: expected a positive number of seconds, got %r" % (where, timeout))
    manifest_file = None
    if has_file:
        manifest_file = item["manifest_file"]
        if not isinstance(manifest_file, str) or not manifest_file:
            raise SuiteError("%s.manifest_file: expected a path, got %s" % (where, _type_name(manifest_file)))
        if load_manifest is None:
            raise SuiteError("%s.manifest_file: no file loader given" % where)
        manifest = load_manifest(manifest_file, where + ".manifest_file")
        mwhere = "%s.manifest_file %s" % (where, manifest_file)
    else:
        manifest = item["manifest"]
        mwhere = where + ".manifest"
    kind = validate_manifest(manifest, success, mwhere)
    if success["kind"] == "deployment_available":
        declared = manifest["spec"].get("replicas", 1)
        success.setdefault("replicas", declared)
        if success["replicas"] > declared:
            raise SuiteError("%s.success.replicas: %d available replicas can never be met by a Deployment of %d" % (
                where, success["replicas"], declared))
    return {"name": name, "kind": kind, "manifest": copy.deepcopy(manifest), "manifest_file": manifest_file,
            "success": success, "timeout_seconds": timeout}


def validate_suite(data, load_manifest=None, where="suite"):
    """A suite, normalised: ``{schema_version, namespace, labels, description, workloads}``; SuiteError otherwise."""
    if not isinstance(data, dict):
        raise SuiteError("%s: expected a mapping with schema_version and workloads, got %s" % (where, _type_name(data)))
    _unknown(data, SUITE_KEYS, where)
    version = data.get("schema_version")
    if version != SCHEMA_VERSION or isinstance(version, bool):
        raise SuiteError("%s.schema_version: expected %d, got %r" % (where, SCHEMA_VERSION, version))
    namespace = data.get("namespace", DEFAULT_NAMESPACE)
    if not isinstance(namespace, str) or len(namespace) > 63 or not NAME_RE.match(namespace):
        raise SuiteError("%s.namespace: expected a DNS-1123 label (the namespace the workloads run in), got %r" % (
            where, namespace))
    labels = _labels(data.get("labels"), where + ".labels")
    description = data.get("description")
    if description is not None and not isinstance(description, str):
        raise SuiteError("%s.description: expected a string, got %s" % (where, _type_name(description)))
    workloads = data.get("workloads")
    if not isinstance(workloads, list) or not workloads:
        raise SuiteError("%s.workloads: expected a non-empty list of workloads, got %s" % (where, _type_name(workloads)))
    result, seen = [], {}
    for index, item in enumerate(workloads):
        workload = validate_workload(item, "%s.workloads[%d]" % (where, index), load_manifest)
        if workload["name"] in seen:
            raise SuiteError("%s.workloads[%d].name: %r is also workloads[%d]'s name; names must be unique" % (
                where, index, workload["name"], seen[workload["name"]]))
        seen[workload["name"]] = index
        result.append(workload)
    return {"schema_version": version, "namespace": namespace, "labels": labels, "description": description,
            "workloads": result}


def object_name(workload_name, run_id):
    """The object's name in one run: ``<workload>-<6 hex of the run id>`` (runs never collide on names)."""
    return "%s-%s" % (workload_name, hashlib.sha256(run_id.encode("utf-8")).hexdigest()[:6])


def run_labels(suite, run_id, workload_name):
    labels = dict(suite["labels"])
    labels.update({MANAGED_BY_LABEL: MANAGED_BY, RUN_LABEL: run_id, WORKLOAD_LABEL: workload_name})
    return labels


def selector(run_id, workload_name=None):
    """The label selector of a run's objects (of one workload's when named)."""
    text = "%s=%s" % (RUN_LABEL, run_id)
    if workload_name:
        text += ",%s=%s" % (WORKLOAD_LABEL, workload_name)
    return text


def build_object(suite, workload, run_id):
    """The object to create: the manifest in the suite's namespace under its per-run name, server-set
    metadata and status dropped, the suite's labels and the run labels on it and on its pod template."""
    obj = copy.deepcopy(workload["manifest"])
    obj.pop("status", None)
    metadata = dict(obj.get("metadata") or {})
    for key in DROPPED_METADATA:
        metadata.pop(key, None)
    metadata["name"] = object_name(workload["name"], run_id)
    metadata["namespace"] = suite["namespace"]
    labels = dict(metadata.get("labels") or {})
    labels.update(run_labels(suite, run_id, workload["name"]))
    metadata["labels"] = labels
    obj["metadata"] = metadata
    if workload["kind"] != "Pod":
        template = obj["spec"]["template"]
        tmeta = dict(template.get("metadata") or {})
        tlabels = dict(tmeta.get("labels") or {})
        tlabels.update(run_labels(suite, run_id, workload["name"]))
        tmeta["labels"] = tlabels
        template["metadata"] = tmeta
    return obj


def namespace_object(suite, run_id):
    """The namespace to create when it is missing: the suite's labels, managed-by, and the creating run."""
    labels = dict(suite["labels"])
    labels[MANAGED_BY_LABEL] = MANAGED_BY
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": suite["namespace"], "labels": labels,
                         "annotations": {CREATED_BY_ANNOTATION: run_id}}}


def collection_path(kind, namespace):
    _version, prefix, plural = RESOURCES[kind]
    return "%s/namespaces/%s/%s" % (prefix, namespace, plural)


def object_path(kind, namespace, name):
    return "%s/%s" % (collection_path(kind, namespace), name)


# --- evaluating a success condition -------------------------------------------------------------


def _terminated_reason(pod):
    """``container c: exit code 1 (Error): message`` for the first terminated non-zero container."""
    for item in kube.status(pod).get("containerStatuses") or []:
        terminated = (item.get("state") or {}).get("terminated") or {}
        if terminated and terminated.get("exitCode", 0) != 0:
            text = "container %s: exit code %s" % (item.get("name"), terminated.get("exitCode"))
            if terminated.get("reason"):
                text += " (%s)" % terminated["reason"]
            if terminated.get("message"):
                text += ": %s" % terminated["message"]
            return text
    return None


def describe_pod(pod):
    """One line about where a pod stands: ``pod x is Pending: Unschedulable: 0/9 nodes are available ...``."""
    name = kube.meta(pod).get("name")
    phase = kube.status(pod).get("phase") or "Pending"
    text = "pod %s is %s" % (name, phase)
    if kube.meta(pod).get("deletionTimestamp"):
        text += " (terminating)"
    scheduled = kube.condition(pod, "PodScheduled")
    if scheduled and scheduled.get("status") != "True":
        return "%s: %s: %s" % (text, scheduled.get("reason") or "not scheduled", scheduled.get("message") or "")
    if phase == "Failed":
        detail = _terminated_reason(pod) or kube.status(pod).get("reason") or kube.status(pod).get("message")
        return "%s: %s" % (text, detail) if detail else text
    for item in kube.status(pod).get("containerStatuses") or []:
        waiting = (item.get("state") or {}).get("waiting")
        if waiting:
            return "%s: container %s waiting: %s%s" % (text, item.get("name"), waiting.get("reason") or "",
                                                       (" " + waiting["message"]) if waiting.get("message") else "")
    if phase == "Running" and not kube.condition_true(pod, "Ready"):
        ready = kube.condition(pod, "Ready") or {}
        return "%s, not Ready%s" % (text, (": " + ready["reason"]) if ready.get("reason") else "")
    if spec_node(pod):
        text += " on %s" % spec_node(pod)
    return text


def spec_node(pod):
    return ((pod or {}).get("spec") or {}).get("nodeName")


def pod_nodes(pods):
    """The distinct nodes the pods were bound to, sorted."""
    return sorted({spec_node(p) for p in pods if spec_node(p)})


def _sorted_pods(pods):
    return sorted(pods or [], key=lambda p: (kube.meta(p).get("creationTimestamp") or "", kube.meta(p).get("name") or ""))


def _describe_pods(pods, limit=3):
    if not pods:
        return "no pod yet"
    shown = "; ".join(describe_pod(p) for p in _sorted_pods(pods)[:limit])
    if len(pods) > limit:
        shown += "; and %d more" % (len(pods) - limit)
    return shown


def evaluate(success, obj, pods):
    """Where a workload stands: ``(state, reason, nodes)``.

    ``state`` is PASSED, FAILED (terminal: it cannot pass any more) or PENDING; ``reason`` says why it
    failed or what it waits for; ``nodes`` are the nodes its pods ran on. ``obj`` is the created object
    as last read (for a Pod, the pod itself), ``pods`` the pods with the workload's run labels."""
    kind = success["kind"]
    pods = [p for p in pods or [] if isinstance(p, dict)]
    if obj is None:
        return FAILED, "the object is gone (deleted by someone else)", pod_nodes(pods)
    if kind in ("pod_succeeded", "pod_ready"):
        pods = [obj]
        phase = kube.status(obj).get("phase") or "Pending"
        if kind == "pod_succeeded":
            if phase == "Succeeded":
                return PASSED, None, pod_nodes(pods)
            if phase == "Failed":
                return FAILED, describe_pod(obj), pod_nodes(pods)
            return PENDING, describe_pod(obj), pod_nodes(pods)
        if phase == "Running" and kube.condition_true(obj, "Ready"):
            return PASSED, None, pod_nodes(pods)
        if phase in ("Succeeded", "Failed"):
            return FAILED, describe_pod(obj) + " (it ended before it was Ready)", pod_nodes(pods)
        return PENDING, describe_pod(obj), pod_nodes(pods)
    if kind == "job_complete":
        if kube.condition_true(obj, "Complete"):
            done = [p for p in pods if kube.status(p).get("phase") == "Succeeded"] or pods
            return PASSED, None, pod_nodes(done)
        failed = kube.condition(obj, "Failed")
        if failed and failed.get("status") == "True":
            reason = "job failed: %s: %s" % (failed.get("reason") or "Failed", failed.get("message") or "")
            bad = [p for p in pods if kube.status(p).get("phase") == "Failed"]
            if bad:
                reason += "; " + _describe_pods(bad)
            return FAILED, reason, pod_nodes(pods)
        status = kube.status(obj)
        return PENDING, "job not complete (active %s, succeeded %s, failed %s): %s" % (
            status.get("active", 0), status.get("succeeded", 0), status.get("failed", 0), _describe_pods(pods)), \
            pod_nodes(pods)
    # deployment_available
    want = success.get("replicas") or ((obj.get("spec") or {}).get("replicas", 1))
    status = kube.status(obj)
    available = status.get("availableReplicas") or 0
    generation = kube.meta(obj).get("generation")
    observed = status.get("observedGeneration")
    current = generation is None or (observed is not None and observed >= generation)
    live = [p for p in pods if not kube.meta(p).get("deletionTimestamp")]
    if current and available >= want and kube.condition_true(obj, "Available"):
        ready = [p for p in live if kube.condition_true(p, "Ready")] or live
        return PASSED, None, pod_nodes(ready)
    progressing = kube.condition(obj, "Progressing") or {}
    if progressing.get("status") == "False" and progressing.get("reason") == "ProgressDeadlineExceeded":
        return FAILED, "deployment: ProgressDeadlineExceeded: %s; %s" % (
            progressing.get("message") or "", _describe_pods(live)), pod_nodes(live)
    return PENDING, "deployment has %d of %d available replica(s): %s" % (available, want, _describe_pods(live)), \
        pod_nodes(live)


# --- result records ----------------------------------------------------------------------------


def record(workload, run_id, status, started=None, finished=None, nodes=None, reason=None):
    """The result record of one workload (docs/control_suite.md, "Results").

    ``status`` is PASSED, FAILED or SKIPPED; ``passed`` is True only for PASSED and None for SKIPPED
    (a skipped workload is never reported as passed)."""
    nodes = list(nodes or [])
    duration = None
    if started is not None and finished is not None:
        duration = round(max(finished - started, 0.0), 3)
    return {
        "name": workload["name"],
        "kind": workload["kind"],
        "object": object_name(workload["name"], run_id),
        "success": dict(workload["success"]),
        "timeout_seconds": workload["timeout_seconds"],
        "status": status,
        "passed": True if status == PASSED else (None if status == SKIPPED else False),
        "started_at": clock.rfc3339(started),
        "finished_at": clock.rfc3339(finished),
        "duration_seconds": duration,
        "node": nodes[0] if nodes else None,
        "nodes": nodes,
        "gpus_requested": gpu_request(_pod_spec(workload["manifest"])),
        "reason": None if status == PASSED else reason,
    }


def summary(records, check_mode=False):
    """``(passed, counts)``: ``passed`` is True only when every workload passed, None in check mode
    (nothing ran), else False; ``counts`` has passed, failed, skipped and total."""
    counts = {"passed": 0, "failed": 0, "skipped": 0, "total": len(records)}
    for item in records:
        counts[item["status"]] = counts.get(item["status"], 0) + 1
    if check_mode:
        return None, counts
    return bool(records) and counts["passed"] == len(records), counts


def timeout_reason(workload, last):
    """The reason of a workload that did not pass within its timeout."""
    return "timed out after %g s waiting for %s: %s" % (workload["timeout_seconds"], workload["success"]["kind"],
                                                        last or "no status read")


# The shipped default suite, byte for byte data/control_suite/default.yml (a unit test holds them
# equal): a module runs from an AnsiballZ payload, which carries module_utils but not data/.
DEFAULT_SUITE_FILE = "data/control_suite/default.yml"
DEFAULT_SUITE_YAML = r'''---
# The shipped "prior workload control suite" (format: docs/control_suite.md). It runs before the
# operator upgrade (the baseline), after each hop and at the end of a rollback; a rollback's time
# ends only when it passes. Each workload asks the device plugin for one GPU and runs nvidia-smi,
# so it passes only where a GPU can be allocated to a container and the driver answers in it.
# Point the module's suite_file at your own copy to run your real workloads (manifest_file).
schema_version: 1
description: >-
  One GPU Pod that runs to completion, one GPU Job that completes and one GPU Deployment that
  becomes Available, each requesting nvidia.com/gpu 1 and running nvidia-smi.
namespace: gpufleet-control-suite
labels:
  app.kubernetes.io/part-of: gpufleet-control-suite
workloads:
  - name: gpu-pod
    success:
      kind: pod_succeeded
    timeout_seconds: 300
    manifest:
      apiVersion: v1
      kind: Pod
      metadata:
        name: gpu-pod
      spec:
        restartPolicy: Never
        tolerations:
          - key: nvidia.com/gpu
            operator: Exists
            effect: NoSchedule
        containers:
          - name: cuda
            image: nvcr.io/nvidia/cuda:12.8.1-base-ubuntu24.04
            command: ["nvidia-smi"]
            resources:
              limits:
                nvidia.com/gpu: 1
  - name: gpu-job
    success:
      kind: job_complete
    timeout_seconds: 300
    manifest:
      apiVersion: batch/v1
      kind: Job
      metadata:
        name: gpu-job
      spec:
        backoffLimit: 0
        activeDeadlineSeconds: 600
        template:
          spec:
            restartPolicy: Never
            tolerations:
              - key: nvidia.com/gpu
                operator: Exists
                effect: NoSchedule
            containers:
              - name: cuda
                image: nvcr.io/nvidia/cuda:12.8.1-base-ubuntu24.04
                command: ["nvidia-smi", "-L"]
                resources:
                  limits:
                    nvidia.com/gpu: 1
  - name: gpu-deployment
    success:
      kind: deployment_available
      replicas: 1
    timeout_seconds: 300
    manifest:
      apiVersion: apps/v1
      kind: Deployment
      metadata:
        name: gpu-deployment
      spec:
        replicas: 1
        progressDeadlineSeconds: 600
        selector:
          matchLabels:
            app.kubernetes.io/name: gpu-deployment
        template:
          metadata:
            labels:
              app.kubernetes.io/name: gpu-deployment
          spec:
            tolerations:
              - key: nvidia.com/gpu
                operator: Exists
                effect: NoSchedule
            containers:
              - name: cuda
                image: nvcr.io/nvidia/cuda:12.8.1-base-ubuntu24.04
                command: ["sh", "-c", "nvidia-smi && exec sleep infinity"]
                readinessProbe:
                  exec:
                    command: ["nvidia-smi", "-L"]
                  periodSeconds: 10
                resources:
                  limits:
                    nvidia.com/gpu: 1
'''
