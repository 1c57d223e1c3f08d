# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Deployment controller's progress (kubelab.controllers.workloads, kube's syncRolloutStatus) and the
ServiceAccount admission its ReplicaSets' pods meet.

A rollout whose pod template names a ServiceAccount that is gone cannot create its pods: the new
ReplicaSet stays at 0 pods with a FailedCreate Warning and ReplicaFailure=True, the Deployment copies
ReplicaFailure and, ``progressDeadlineSeconds`` after its last progress, says Progressing=False
ProgressDeadlineExceeded; once the ServiceAccount is back the controller's retry creates the pods and
the rollout completes (NewReplicaSetAvailable, ReplicaFailure gone).
"""

from __future__ import annotations

import datetime

import pytest

from kubelab import testing
from kubelab.controllers import workloads


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    cluster = testing.start_lab(str(tmp_path_factory.mktemp("progress")), "minimal")
    yield cluster
    testing.stop_lab(cluster)
    assert not cluster.server.controller_errors, cluster.server.controller_errors[:5]


def stamp(seconds_ago: float) -> str:
    moment = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(seconds=seconds_ago)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


# -- the helpers, as deploymentutil has them ----------------------------------------------------------

def test_set_deployment_condition_keeps_a_same_status_and_reason():
    old = [{"type": "Progressing", "status": "True", "reason": "NewReplicaSetCreated", "message": 'Created new replica '
            'set "a"', "lastUpdateTime": "2026-01-01T00:00:00Z", "lastTransitionTime": "2026-01-01T00:00:00Z"}]
    # same status and reason: nothing moves, not even the message (SetDeploymentCondition)
    assert workloads.set_deployment_condition(old, "Progressing", "True", "NewReplicaSetCreated", "other") == old
    changed = workloads.set_deployment_condition(old, "Progressing", "True", "NewReplicaSetAvailable", "done")
    assert changed[0]["lastTransitionTime"] == "2026-01-01T00:00:00Z"  # the status stayed True
    assert changed[0]["lastUpdateTime"] != "2026-01-01T00:00:00Z" and changed[0]["reason"] == "NewReplicaSetAvailable"
    failed = workloads.set_deployment_condition(old, "Progressing", "False", "ProgressDeadlineExceeded", "late")
    assert failed[0]["lastTransitionTime"] == failed[0]["lastUpdateTime"] != "2026-01-01T00:00:00Z"
    added = workloads.set_deployment_condition(old, "ReplicaFailure", "True", "FailedCreate", "refused",
                                               stamp="2026-01-02T00:00:00Z")
    assert [c["type"] for c in added] == ["Progressing", "ReplicaFailure"]
    assert added[1]["lastUpdateTime"] == added[1]["lastTransitionTime"] == "2026-01-02T00:00:00Z"


def test_timed_out_counts_from_the_last_update():
    progressing = {"type": "Progressing", "status": "True", "reason": "ReplicaSetUpdated"}
    assert workloads.timed_out(dict(progressing, lastUpdateTime=stamp(10)), 5)
    assert not workloads.timed_out(dict(progressing, lastUpdateTime=stamp(1)), 600)
    assert not workloads.timed_out(dict(progressing, reason="NewReplicaSetAvailable", lastUpdateTime=stamp(900)), 5)
    assert workloads.timed_out(dict(progressing, status="False", reason="ProgressDeadlineExceeded",
                                    lastUpdateTime=stamp(0)), 600)
    assert not workloads.timed_out(None, 5)


def test_replica_failures_prefer_the_new_replica_set():
    failure = {"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate", "message": "new"}
    new = {"status": {"conditions": [failure]}}
    old = {"status": {"conditions": [dict(failure, message="old")]}}
    assert workloads.replica_failures(new, [old])["message"] == "new"
    assert workloads.replica_failures({"status": {}}, [old])["message"] == "old"
    assert workloads.replica_failures({"status": {}}, []) is None


# -- against the lab ----------------------------------------------------------------------------------

def rtype(lab, group, plural):
    return lab.server.registry.get(group, "v1", plural)


def conditions(obj) -> dict:
    return {c["type"]: c for c in (obj.get("status") or {}).get("conditions") or []}


def rolled_out(lab, ns: str, name: str):
    """Namespace ``ns`` with ServiceAccount ``runner`` and Deployment ``name`` (one pod running as ``runner``,
    progressDeadlineSeconds 2), its first rollout complete; returns a reader of its Progressing reason."""
    api = lab.server.api
    api.create(rtype(lab, "", "namespaces"), None, {"metadata": {"name": ns}})
    deployments = rtype(lab, "apps", "deployments")
    api.create(rtype(lab, "", "serviceaccounts"), ns, {"metadata": {"name": "runner"}})
    api.create(deployments, ns, {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
        "spec": {"replicas": 1, "progressDeadlineSeconds": 2, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"serviceAccountName": "runner",
                                       "containers": [{"name": "web", "image": "nginx:1.27"}]}}}})

    def progress_reason():
        return conditions(api.get(deployments, ns, name)).get("Progressing", {}).get("reason")
    testing.wait_for(lambda: progress_reason() == "NewReplicaSetAvailable", 20, "first rollout complete")
    return progress_reason


def test_rollout_without_its_service_account_stalls_then_completes(lab):
    api = lab.server.api
    ns, name = "progress", "runner-web"
    accounts, deployments = rtype(lab, "", "serviceaccounts"), rtype(lab, "apps", "deployments")
    replicasets, pods, events = rtype(lab, "apps", "replicasets"), rtype(lab, "", "pods"), rtype(lab, "", "events")
    progress_reason = rolled_out(lab, ns, name)
    api.delete(accounts, ns, "runner")
    body = api.get(deployments, ns, name)
    body["spec"]["template"]["metadata"]["annotations"] = {"rollout": "2"}
    api.update(deployments, ns, name, body)

    def new_rs():
        items = [rs for rs in api.list(replicasets, ns)["items"]
                 if rs["metadata"]["annotations"].get("deployment.kubernetes.io/revision") == "2"]
        return items[0] if items and "ReplicaFailure" in conditions(items[0]) else None
    rs = testing.wait_for(new_rs, 20, "the new ReplicaSet's ReplicaFailure")
    failure = conditions(rs)["ReplicaFailure"]
    assert failure["status"] == "True" and failure["reason"] == "FailedCreate"
    assert 'error looking up service account progress/runner: serviceaccount "runner" not found' in failure["message"]
    assert rs["spec"]["replicas"] == 1 and rs["status"]["replicas"] == 0
    assert not [p for p in api.list(pods, ns)["items"]
                if p["metadata"]["labels"].get("pod-template-hash") == rs["metadata"]["labels"]["pod-template-hash"]]
    warned = [e for e in api.list(events, ns)["items"] if e["reason"] == "FailedCreate"
              and e["involvedObject"]["name"] == rs["metadata"]["name"]]
    assert warned and warned[0]["type"] == "Warning" and warned[0]["source"] == {"component": "replicaset-controller"}

    testing.wait_for(lambda: progress_reason() == "ProgressDeadlineExceeded", 20, "ProgressDeadlineExceeded")
    dep = api.get(deployments, ns, name)
    conds = conditions(dep)
    assert conds["Progressing"]["status"] == "False"
    assert conds["Progressing"]["message"] == 'ReplicaSet "%s" has timed out progressing.' % rs["metadata"]["name"]
    assert conds["ReplicaFailure"]["status"] == "True" and conds["ReplicaFailure"]["reason"] == "FailedCreate"
    assert conds["Available"]["status"] == "True"  # the old pod still serves
    assert dep["status"]["updatedReplicas"] == 0 and dep["status"]["availableReplicas"] == 1

    api.create(accounts, ns, {"metadata": {"name": "runner"}})  # the controller's next retry creates the pod
    testing.wait_for(lambda: progress_reason() == "NewReplicaSetAvailable", 30, "the rollout completes")
    dep = api.get(deployments, ns, name)
    assert "ReplicaFailure" not in conditions(dep)
    assert dep["status"]["updatedReplicas"] == dep["status"]["availableReplicas"] == dep["status"]["replicas"] == 1
    assert "ReplicaFailure" not in conditions(api.get(replicasets, ns, rs["metadata"]["name"]))


def test_no_progress_deadline_means_no_progressing_condition(lab):
    api = lab.server.api
    deployments = rtype(lab, "apps", "deployments")
    api.create(deployments, "default", {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "no-deadline"},
        "spec": {"replicas": 1, "progressDeadlineSeconds": 2147483647, "selector": {"matchLabels": {"app": "nd"}},
                 "template": {"metadata": {"labels": {"app": "nd"}},
                              "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}}}})
    testing.wait_for(lambda: (api.get(deployments, "default", "no-deadline").get("status") or {}).get("availableReplicas") == 1,
                     20, "available")
    dep = api.get(deployments, "default", "no-deadline")
    assert "Progressing" not in conditions(dep) and conditions(dep)["Available"]["status"] == "True"


def test_a_conflict_after_the_new_replica_set_is_created_keeps_the_rollout_timing(lab, monkeypatch):
    """The pass that creates the new ReplicaSet records NewReplicaSetCreated at once (getNewReplicaSet's
    UpdateStatus): when the rest of that pass meets a conflict (the ReplicaSet controller wrote the new
    ReplicaSet's status before it was scaled), the rollout still times out instead of keeping the previous
    rollout's NewReplicaSetAvailable, which never times out."""
    from kubelab.controllers.workloads import DeploymentController
    from kubelab.errors import ApiError
    api = lab.server.api
    ns, name = "conflict", "web"
    accounts, deployments = rtype(lab, "", "serviceaccounts"), rtype(lab, "apps", "deployments")
    progress_reason = rolled_out(lab, ns, name)

    original, refused = DeploymentController._scale, []

    def conflict_once(self, rs, replicas):
        if rs["metadata"]["annotations"].get("deployment.kubernetes.io/revision") == "2" and not refused:
            refused.append(rs["metadata"]["name"])
            raise ApiError(409, "Conflict", "the object has been modified")
        return original(self, rs, replicas)
    monkeypatch.setattr(DeploymentController, "_scale", conflict_once)
    api.delete(accounts, ns, "runner")  # the new ReplicaSet's pods cannot be created: no progress at all
    body = api.get(deployments, ns, name)
    body["spec"]["template"]["metadata"]["annotations"] = {"rollout": "2"}
    api.update(deployments, ns, name, body)
    testing.wait_for(lambda: progress_reason() == "ProgressDeadlineExceeded", 20, "ProgressDeadlineExceeded")
    assert refused, "the injected conflict never happened"
