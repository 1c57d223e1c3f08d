#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: control_suite
short_description: Run the prior workload control suite (GPU Pods, Jobs, Deployments) and record per workload pass or fail
version_added: 0.3.0
description:
  - Runs the "prior workload control suite" - GPU workloads, each with a success condition and a timeout -
    and records, per workload, whether it passed, when it started and finished and the node its pod ran
    on. It runs before the operator upgrade (the baseline), after each hop and at the end of a rollback,
    whose time ends only when the suite passes. Format of a suite in docs/control_suite.md.
  - The suite is data - O(suite_file) (YAML), O(suite) (inline), or, when neither is given, the shipped
    default C(data/control_suite/default.yml) - a GPU Pod that runs to completion, a GPU Job that
    completes and a GPU Deployment that becomes Available, each requesting C(nvidia.com/gpu) 1 and
    running C(nvidia-smi).
  - Each workload's object is created in the suite's namespace (created when missing, with the suite's
    labels) under a per-run name C(<workload>-<6 hex of the run id>), labelled, on the object and on its
    pod template, C(gpufleet.io/control-suite-run=<run_id>) and C(gpufleet.io/control-suite-workload=<name>).
  - Waiting is bounded - the module polls each workload every O(poll_interval) seconds until its success
    condition holds, it fails for good (a failed pod or Job, a Deployment past its progress deadline) or
    its C(timeout_seconds) pass; then it is failed with the reason (for example the scheduler's
    C(0/9 nodes are available) message of a pod that cannot be scheduled).
  - Everything the run created is deleted afterwards, also when a workload failed or timed out and when
    the module is interrupted - every Deployment, ReplicaSet, Job and Pod with the run label (found by the
    label, so an object whose create answered an error but was applied is found too), then the namespace
    when this run created it; the module waits, up to O(cleanup_timeout), until none is left and reports
    what remained. O(cleanup=false) keeps them for inspection.
  - Forbidden is not absent - a 403 on any call fails the module naming the verb and the resource (after
    the cleanup). A create refused as invalid (400, 409, 422) fails that workload with the server's
    message. Transient API failures are retried within O(api_deadline); writes only where a retry cannot
    apply them twice.
  - Runs on the controller (or a delegate) with the C(kubernetes) Python client.
author:
  - gpufleet maintainers (@gpufleet)
options:
  suite_file:
    description:
      - Path of a suite file (YAML, C(schema_version) 1). A workload's relative C(manifest_file) is read
        relative to this file's directory.
      - Mutually exclusive with O(suite). When neither is given, the shipped default suite runs.
    type: path
  suite:
    description:
      - The suite inline, in the same form as a suite file. A C(manifest_file) in it must be an absolute path.
      - Mutually exclusive with O(suite_file).
    type: dict
  run_id:
    description:
      - The run's id, the value of the label C(gpufleet.io/control-suite-run) on every object it creates
        (at most 63 letters, digits, C(-), C(_) or C(.), starting and ending with a letter or digit).
      - By default C(cs-<UTC time>-<4 hex>). A phase passes its own (run, phase, hop), so the evidence and
        the cluster's objects name the same run.
    type: str
  namespace:
    description:
      - Run the workloads in this namespace instead of the suite's C(namespace).
    type: str
  serial:
    description:
      - Run the workloads one after the other (each one's timeout from its own start) instead of all at once.
    type: bool
    default: false
  poll_interval:
    description:
      - Seconds between two reads of a workload's state (between 0.05 and 60).
    type: float
    default: 0.5
  cleanup:
    description:
      - Delete what the run created when it ends (also on failure and timeout). C(false) keeps it for
        inspection; delete it later by the run label.
    type: bool
    default: true
  cleanup_timeout:
    description:
      - Seconds to wait for the deleted objects, their pods and a namespace the run created to be gone.
    type: float
    default: 120
  fail_on_failure:
    description:
      - Fail the task when a workload did not pass. With C(false) the task succeeds and RV(passed) says it;
        a phase registers the result and decides in its own judge. API errors (a 403, a request past its
        deadline) fail the task either way.
    type: bool
    default: true
extends_documentation_fragment:
  - gpufleet.dra_gate.k8s_auth
  - gpufleet.dra_gate.attributes.k8s
attributes:
  check_mode:
    support: full
    description:
      - Creates nothing - validates the suite, reads whether the namespace exists and returns the plan
        (RV(plan), the objects that would be created) with every workload C(skipped) and RV(passed) null;
        a skipped workload is never reported as passed.
  diff_mode:
    support: none
    description:
      - Returns no diff; RV(plan) lists the objects the run creates.
notes:
  - Needs, in the suite's namespace, create/get/list/delete on pods, jobs and deployments, list/delete on
    replicasets, and get/create/delete on namespaces (delete only for a namespace the run created).
  - The time a workload finished is when the module observed its condition, so it is at most
    O(poll_interval) late.
seealso:
  - module: gpufleet.dra_gate.gate_evidence
"""

EXAMPLES = r"""
- name: Run the shipped control suite (baseline before the upgrade)
  gpufleet.dra_gate.control_suite:
    kubeconfig: /etc/gpufleet/kubeconfig
    run_id: "{{ dra_gate_run_id }}-baseline"
    fail_on_failure: false
  delegate_to: localhost
  run_once: true
  register: control_suite

- name: Run the site's own workloads, one after the other
  gpufleet.dra_gate.control_suite:
    suite_file: /etc/gpufleet/control-suite.yml
    serial: true
  delegate_to: localhost
  run_once: true

- name: Show what would run
  gpufleet.dra_gate.control_suite:
    suite:
      schema_version: 1
      namespace: gpu-smoke
      workloads:
        - name: train-smoke
          manifest_file: /etc/gpufleet/workloads/train-smoke-job.yml
          success: {kind: job_complete}
          timeout_seconds: 600
  check_mode: true
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
passed:
  description: True when every workload passed, false when one did not; null in check mode (nothing ran).
  returned: always
  type: bool
  sample: true
counts:
  description: How many workloads C(passed), C(failed) and were C(skipped) (check mode), and the C(total).
  returned: always
  type: dict
  sample: {"passed": 3, "failed": 0, "skipped": 0, "total": 3}
workloads:
  description: One record per workload, in suite order.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: The workload's name in the suite.
      type: str
    kind:
      description: C(Pod), C(Job) or C(Deployment).
      type: str
    object:
      description: The created object's name, C(<name>-<6 hex of the run id>).
      type: str
    success:
      description: The success condition, C(kind) and, for C(deployment_available), C(replicas).
      type: dict
    timeout_seconds:
      description: The workload's timeout.
      type: float
    status:
      description: C(passed), C(failed) or C(skipped) (check mode).
      type: str
    passed:
      description: True when it passed, false when it failed, null when skipped.
      type: bool
    started_at:
      description: UTC time (RFC 3339) just before its create; null when skipped.
      type: str
    finished_at:
      description: UTC time (RFC 3339) its condition was observed to hold, or it failed or timed out; null when skipped.
      type: str
    duration_seconds:
      description: C(finished_at) minus C(started_at) in seconds; null when skipped.
      type: float
    node:
      description: The node its pod ran on (the first of RV(workloads[].nodes)); null when no pod was scheduled.
      type: str
    nodes:
      description: Every node its pods ran on, sorted.
      type: list
      elements: str
    gpus_requested:
      description: The C(nvidia.com/gpu) count its pod spec requests.
      type: int
    reason:
      description: Why it failed (or was skipped); null when it passed.
      type: str
run_id:
  description: The run's id (the value of the run label).
  returned: always
  type: str
  sample: cs-20261202T012003Z-1a2b
namespace:
  description: The namespace the workloads ran (or would run) in.
  returned: always
  type: str
  sample: gpufleet-control-suite
run_label:
  description: The label selector of everything the run created.
  returned: always
  type: str
  sample: gpufleet.io/control-suite-run=cs-20261202T012003Z-1a2b
suite_source:
  description: The suite file read, C(inline), or C(default) (the shipped suite).
  returned: always
  type: str
started_at:
  description: UTC time (RFC 3339) the run started.
  returned: always
  type: str
finished_at:
  description: UTC time (RFC 3339) the run ended, cleanup included.
  returned: always
  type: str
duration_seconds:
  description: Seconds from RV(started_at) to RV(finished_at).
  returned: always
  type: float
namespace_created:
  description: Whether this run created the namespace (in check mode, whether it would).
  returned: always
  type: bool
cleanup:
  description:
    - What the cleanup did. C(performed) (false in check mode and with O(cleanup=false)), C(deleted) (the
      objects deleted, C(kind/name)), C(remaining) (objects with the run label still there when
      O(cleanup_timeout) ran out), C(namespace_deleted), C(complete) (nothing left) and C(errors).
  returned: always
  type: dict
plan:
  description: The objects the run creates (or, in check mode, would create), with their labels.
  returned: always
  type: list
  elements: dict
api_calls:
  description: Number of HTTP requests made (retries included).
  returned: always
  type: int
api_retries:
  description: How many of those requests were retries of a failed attempt.
  returned: always
  type: int
"""

import os
import signal
import time
import uuid

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster import objects as kube
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.common import clock
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.phases import control_suite as cs
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster.client import (
    K8sApiError,
    argspec,
    check_params,
    module_api_client,
    reader_from_params,
)

try:
    import yaml
except ImportError:  # pragma: no cover - PyYAML ships with ansible-core
    yaml = None

MODULE_ARG_SPEC = dict(
    suite_file=dict(type="path"),
    suite=dict(type="dict"),
    run_id=dict(type="str"),
    namespace=dict(type="str"),
    serial=dict(type="bool", default=False),
    poll_interval=dict(type="float", default=0.5),
    cleanup=dict(type="bool", default=True),
    cleanup_timeout=dict(type="float", default=120.0),
    fail_on_failure=dict(type="bool", default=True),
)
# Create answers that are the workload's own problem (a bad manifest, a name taken): that workload fails.
WORKLOAD_ERRORS = (400, 409, 422)
# Cleanup order: owners first, so their controllers do not re-create what is deleted after them.
CLEANUP_KINDS = (
    ("Deployment", "/apis/apps/v1", "deployments"),
    ("ReplicaSet", "/apis/apps/v1", "replicasets"),
    ("Job", "/apis/batch/v1", "jobs"),
    ("Pod", "/api/v1", "pods"),
)
# A Job's pods are orphaned by a plain delete (batch/v1's default); Background lets the GC remove them.
DELETE_BODY = {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background"}
SA_WAIT_SECONDS = 30.0


class Interrupted(Exception):
    """SIGTERM or SIGINT: the run stops and still cleans up."""


def _interrupt(signum, frame):
    raise Interrupted("interrupted by signal %d" % signum)


def load_yaml_file(path, where):
    if yaml is None:
        raise cs.SuiteError("%s: PyYAML is required to read %s" % (where, path))
    try:
        with open(path) as handle:
            docs = [d for d in yaml.safe_load_all(handle) if d is not None]
    except (IOError, OSError) as exc:
        raise cs.SuiteError("%s: cannot read %s: %s" % (where, path, exc))
    except yaml.YAMLError as exc:
        raise cs.SuiteError("%s: %s is not valid YAML: %s" % (where, path, exc))
    if len(docs) != 1:
        raise cs.SuiteError("%s: %s must hold exactly one YAML document (one object), found %d" % (where, path, len(docs)))
    return docs[0]


def load_suite(params):
    """(normalised suite, source); SuiteError naming the field."""
    if params["suite_file"]:
        path = params["suite_file"]
        data = load_yaml_file(path, "suite_file")
        base, source = os.path.dirname(os.path.abspath(path)), path
    elif params["suite"] is not None:
        data, base, source = params["suite"], None, "inline"
    else:
        data, base, source = yaml.safe_load(cs.DEFAULT_SUITE_YAML), None, "default"

    def load_manifest(name, where):
        if not os.path.isabs(name):
            if base is None:
                raise cs.SuiteError("%s: %r must be an absolute path in an inline suite" % (where, name))
            name = os.path.join(base, name)
        return load_yaml_file(name, where)

    suite = cs.validate_suite(data, load_manifest=load_manifest)
    if params["namespace"]:
        namespace = params["namespace"]
        if len(namespace) > 63 or not cs.NAME_RE.match(namespace):
            raise cs.SuiteError("namespace: expected a DNS-1123 label, got %r" % namespace)
        suite["namespace"] = namespace
    return suite, source


def default_run_id():
    stamp = clock.name_stamp()
    return "cs-%s-%s" % (stamp, uuid.uuid4().hex[:4])


class Runner:
    """One run: namespace, creates, bounded polling, cleanup. Every call goes through K8sReader."""

    def __init__(self, reader, suite, run_id, params, clock=None, sleep=None, now=None):
        self.reader = reader
        self.suite = suite
        self.namespace = suite["namespace"]
        self.run_id = run_id
        self.params = params
        self.clock = clock or time.monotonic
        self.sleep = sleep or time.sleep
        self.now = now or time.time
        self.namespace_created = False
        self.created = []  # (kind, name)
        self.records = [None] * len(suite["workloads"])
        self.active = {}  # index -> the workload being waited for

    # --- namespace -------------------------------------------------------------------------------

    def _wait_gone(self, path, deadline):
        while self.clock() < deadline:
            if kube.get_or_none(self.reader, path) is None:
                return True
            self.sleep(min(self.params["poll_interval"], max(deadline - self.clock(), 0.01)))
        return kube.get_or_none(self.reader, path) is None

    def ensure_namespace(self):
        path = "/api/v1/namespaces/%s" % self.namespace
        current = kube.get_or_none(self.reader, path)
        if current is not None and (current.get("metadata") or {}).get("deletionTimestamp"):
            # a namespace being deleted (an earlier run's) refuses creates: wait for it to go first
            if not self._wait_gone(path, self.clock() + self.params["cleanup_timeout"]):
                raise K8sApiError("GET " + path, 409, "namespace %s is still terminating after %g s" % (
                    self.namespace, self.params["cleanup_timeout"]))
            current = None
        if current is None:
            try:
                self.reader.request("POST", "/api/v1/namespaces", body=cs.namespace_object(self.suite, self.run_id))
                self.namespace_created = True
            except K8sApiError as exc:
                if exc.status != 409:  # 409: created meanwhile by someone else, which is fine
                    raise
            self._wait_default_service_account()

    def _wait_default_service_account(self):
        """Pods of a new namespace are refused until its ``default`` ServiceAccount exists (admission)."""
        path = "/api/v1/namespaces/%s/serviceaccounts/default" % self.namespace
        deadline = self.clock() + SA_WAIT_SECONDS
        while kube.get_or_none(self.reader, path) is None and self.clock() < deadline:
            self.sleep(min(0.1, self.params["poll_interval"]))

    # --- workloads -------------------------------------------------------------------------------

    def create(self, index):
        workload = self.suite["workloads"][index]
        obj = cs.build_object(self.suite, workload, self.run_id)
        started = self.now()
        try:
            self.reader.request("POST", cs.collection_path(workload["kind"], self.namespace), body=obj)
        except K8sApiError as exc:
            if exc.status in WORKLOAD_ERRORS:
                self.records[index] = cs.record(workload, self.run_id, cs.FAILED, started, self.now(),
                                                reason="create refused: %s" % exc)
                return None
            raise
        self.created.append((workload["kind"], obj["metadata"]["name"]))
        item = {"index": index, "workload": workload, "name": obj["metadata"]["name"], "started": started,
                "deadline": self.clock() + workload["timeout_seconds"], "last": None, "nodes": []}
        self.active[index] = item
        return item

    def observe(self, item):
        workload = item["workload"]
        obj = kube.get_or_none(self.reader, cs.object_path(workload["kind"], self.namespace, item["name"]))
        pods = []
        if workload["kind"] != "Pod":
            pods = self.reader.list(cs.collection_path("Pod", self.namespace),
                                    label_selector=cs.selector(self.run_id, workload["name"]))
        return cs.evaluate(workload["success"], obj, pods)

    def wait(self, active):
        """Poll until every active workload passed, failed or reached its deadline (each bounded)."""
        while active:
            for item in list(active):
                state, reason, nodes = self.observe(item)
                item["nodes"] = nodes or item["nodes"]
                if state == cs.PENDING and self.clock() >= item["deadline"]:
                    state, reason = cs.FAILED, cs.timeout_reason(item["workload"], reason)
                if state == cs.PENDING:
                    item["last"] = reason
                    continue
                self.records[item["index"]] = cs.record(item["workload"], self.run_id, state, item["started"],
                                                        self.now(), nodes=item["nodes"], reason=reason)
                active.remove(item)
                self.active.pop(item["index"], None)
            if active:
                nearest = min(i["deadline"] for i in active) - self.clock()
                self.sleep(min(self.params["poll_interval"], max(nearest, 0.01)))

    def run(self):
        self.ensure_namespace()
        indexes = list(range(len(self.suite["workloads"])))
        batches = [[i] for i in indexes] if self.params["serial"] else [indexes]
        for batch in batches:
            active = [item for item in (self.create(i) for i in batch) if item is not None]
            self.wait(active)

    def unfinished(self, reason):
        """Records for workloads that never got one (the run stopped early): failed, with ``reason``."""
        for index, workload in enumerate(self.suite["workloads"]):
            if self.records[index] is None:
                item = self.active.get(index) or {}
                why = "%s (it was waiting: %s)" % (reason, item["last"]) if item.get("last") else reason
                self.records[index] = cs.record(workload, self.run_id, cs.FAILED, item.get("started"), self.now(),
                                                nodes=item.get("nodes"), reason=why)

    # --- cleanup ---------------------------------------------------------------------------------

    def _labelled(self):
        """Every Deployment, ReplicaSet, Job and Pod of the namespace with the run label."""
        found = []
        for kind, prefix, plural in CLEANUP_KINDS:
            path = "%s/namespaces/%s/%s" % (prefix, self.namespace, plural)
            for obj in self.reader.list(path, label_selector=cs.selector(self.run_id)):
                metadata = obj.get("metadata") or {}
                found.append({"kind": kind, "name": metadata.get("name"),
                              "path": "%s/%s" % (path, metadata.get("name")),
                              "terminating": bool(metadata.get("deletionTimestamp")),
                              "owners": [(o.get("kind"), o.get("name")) for o in metadata.get("ownerReferences") or []
                                         if o.get("controller")]})
        return found

    def _delete(self, path):
        try:
            self.reader.request("DELETE", path, body=DELETE_BODY)
            return True
        except K8sApiError as exc:
            if kube.not_found(exc):
                return False
            raise

    def _delete_unowned(self, found, deleted):
        """Delete each object of ``found`` not being deleted whose controller is not (or no longer) there:
        the Deployments and Jobs, bare Pods, and whatever the garbage collector has not removed yet. An
        owned ReplicaSet or Pod is left to the garbage collector (its controller would re-create it)."""
        present = set((x["kind"], x["name"]) for x in found)
        for item in found:
            if item["terminating"] or any(owner in present for owner in item["owners"]):
                continue
            if self._delete(item["path"]):
                deleted.append("%s/%s" % (item["kind"], item["name"]))

    def clean(self):
        """Delete what the run created (found by the run label) and wait, bounded, until it is gone;
        then the namespace when this run created it."""
        result = {"performed": True, "deleted": [], "remaining": [], "namespace_deleted": False, "complete": False,
                  "errors": []}
        deadline = self.clock() + self.params["cleanup_timeout"]
        # every cleanup request, retries included, ends by the cleanup's own deadline
        policy, api_deadline = self.reader.policy, self.reader.policy.deadline
        left = None
        try:
            policy.deadline = max(min(api_deadline, deadline - self.clock()), 1.0)
            left = self._labelled()
            while left:
                self._delete_unowned(left, result["deleted"])
                if self.clock() >= deadline:
                    break
                self.sleep(min(self.params["poll_interval"], max(deadline - self.clock(), 0.01)))
                policy.deadline = max(min(api_deadline, deadline - self.clock()), 1.0)
                left = self._labelled()
            result["remaining"] = ["%s/%s" % (x["kind"], x["name"]) for x in left]
            if self.namespace_created and not left:
                path = "/api/v1/namespaces/%s" % self.namespace
                if self._delete(path):
                    result["deleted"].append("Namespace/%s" % self.namespace)
                result["namespace_deleted"] = self._wait_gone(path, deadline)
                if not result["namespace_deleted"]:
                    result["remaining"].append("Namespace/%s" % self.namespace)
            result["complete"] = not result["remaining"]
        except K8sApiError as exc:
            result["errors"].append(str(exc))
            result["forbidden"] = exc.forbidden
        except Interrupted as exc:
            result["errors"].append("cleanup %s" % exc)
        finally:
            policy.deadline = api_deadline
        if result["errors"] and not result["remaining"]:
            result["remaining"] = (["%s/%s" % (x["kind"], x["name"]) for x in left] if left is not None
                                   else ["%s/%s" % c for c in self.created])
        return result


def plan_objects(suite, run_id):
    return [cs.build_object(suite, w, run_id) for w in suite["workloads"]]


def main():
    module = AnsibleModule(argument_spec=argspec(MODULE_ARG_SPEC), supports_check_mode=True,
                           mutually_exclusive=[("suite", "suite_file")])
    params = module.params
    bad = check_params(params)
    if bad:
        module.fail_json(msg=bad)
    if not 0.05 <= params["poll_interval"] <= 60:
        module.fail_json(msg="poll_interval: expected seconds between 0.05 and 60, got %r" % params["poll_interval"])
    if not params["cleanup_timeout"] > 0:
        module.fail_json(msg="cleanup_timeout: expected a positive number of seconds, got %r" % params["cleanup_timeout"])
    if yaml is None:
        module.fail_json(msg=missing_required_lib("PyYAML"))
    run_id = params["run_id"] or default_run_id()
    problem = cs.check_run_id(run_id)
    if problem:
        module.fail_json(msg=problem)
    try:
        suite, source = load_suite(params)
    except cs.SuiteError as exc:
        module.fail_json(msg=str(exc))
    started = time.time()
    plan = plan_objects(suite, run_id)
    api_client = module_api_client(module)
    reader = reader_from_params(api_client, params)
    runner = Runner(reader, suite, run_id, params)
    common = dict(run_id=run_id, namespace=suite["namespace"], run_label=cs.selector(run_id), suite_source=source,
                  plan=plan)

    def finish(**extra):
        finished = time.time()
        extra.update(common, started_at=clock.rfc3339(started), finished_at=clock.rfc3339(finished),
                     duration_seconds=round(finished - started, 3), api_calls=reader.calls, api_retries=reader.retries)
        return extra

    if module.check_mode:
        try:
            exists = kube.get_or_none(runner.reader, "/api/v1/namespaces/%s" % suite["namespace"])
        except K8sApiError as exc:
            api_client.close()
            module.fail_json(msg="reading the cluster failed: %s" % exc, forbidden=exc.forbidden, **finish())
        api_client.close()
        records = [cs.record(w, run_id, cs.SKIPPED, reason="check mode: not run") for w in suite["workloads"]]
        passed, counts = cs.summary(records, check_mode=True)
        module.exit_json(changed=True, passed=passed, counts=counts, workloads=records, namespace_created=exists is None,
                         cleanup={"performed": False, "deleted": [], "remaining": [], "namespace_deleted": False,
                                  "complete": True, "errors": []},
                         msg="check mode: would run %d workload(s) in namespace %s" % (len(records), suite["namespace"]),
                         **finish())

    error = None
    previous = {}
    for signum in (signal.SIGTERM, signal.SIGINT):
        previous[signum] = signal.signal(signum, _interrupt)
    try:
        try:
            runner.run()
        except K8sApiError as exc:
            error = exc
            runner.unfinished("the run stopped: %s" % exc)
        except Interrupted as exc:
            error = exc
            runner.unfinished("the run stopped: %s" % exc)
        if params["cleanup"]:
            cleanup = runner.clean()
        else:
            cleanup = {"performed": False, "deleted": [], "remaining": ["%s/%s" % c for c in runner.created],
                       "namespace_deleted": False, "complete": False, "errors": []}
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        api_client.close()
    records = runner.records
    passed, counts = cs.summary(records)
    changed = bool(runner.created or runner.namespace_created)
    result = finish(changed=changed, passed=passed, counts=counts, workloads=records,
                    namespace_created=runner.namespace_created, cleanup=cleanup)
    if error is not None:
        extra = {}
        if isinstance(error, K8sApiError):
            extra = dict(call=error.call, status=error.status, forbidden=error.forbidden, attempts=error.attempts)
        module.fail_json(msg="control suite run %s stopped: %s" % (run_id, error), **dict(result, **extra))
    if cleanup["errors"]:
        module.fail_json(msg="control suite run %s: cleanup failed: %s" % (run_id, "; ".join(cleanup["errors"])),
                         **result)
    failed = [r for r in records if r["status"] != cs.PASSED]
    msg = "control suite run %s: %d of %d workload(s) passed" % (run_id, counts["passed"], counts["total"])
    if failed:
        msg += "; failed: " + "; ".join("%s (%s)" % (r["name"], r["reason"]) for r in failed)
    if not cleanup["complete"] and params["cleanup"]:
        module.warn("cleanup incomplete after %g s, left: %s" % (params["cleanup_timeout"], ", ".join(cleanup["remaining"])))
    if failed and params["fail_on_failure"]:
        module.fail_json(msg=msg, **result)
    module.exit_json(msg=msg, **result)


if __name__ == "__main__":
    main()
