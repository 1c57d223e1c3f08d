# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""module_utils/phases/drain.py on recorded lab objects (tests/fixtures/drain/lab-drain.json, made by record_lab.py):
the drain's pod classes, the 429's PDB message, the claims held on a DRA node, the node snapshot and its
health gaps, the reschedule count and the options' errors."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json
import os

import pytest

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster import objects as kube
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.phases import drain as dr
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster.client import K8sApiError

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "drain", "lab-drain.json")


@pytest.fixture(scope="module")
def rec():
    with open(FIXTURE) as handle:
        return json.load(handle)


def plan(**over):
    base = dict(node="gpu-1", timeout=60, retry_interval=5, poll_interval=0.5, fallback_after=60, grace_period=None,
                eviction_fallback="none", delete_emptydir_data=False, delete_unmanaged=False, wait_for_claims=True)
    base.update(over)
    return dr.validate_drain(base)


def names(refs):
    """Pod names without a ReplicaSet's generated suffix."""
    return sorted(r["name"].rsplit("-", 2)[0] if r["name"].startswith(("web-", "scratch-")) else r["name"] for r in refs)


def test_classify_as_kubectl_drain(rec):
    evict, skipped, blocked = dr.classify(rec["pods_gpu_1"], plan())
    assert names(evict) == ["web", "web"]
    assert [r["reason"] for r in skipped if r["name"] == "static-gpu-1"] == ["mirror pod (the kubelet's static pod): left in place"]
    assert any(r["owner"]["kind"] == "DaemonSet" and r["reason"] == "DaemonSet-managed: ignored" for r in skipped)
    reasons = dict((r["name"].split("-")[0], r["reason"]) for r in blocked)
    assert "set delete_unmanaged" in reasons["bare"] and "emptyDir volume(s) tmp" in reasons["scratch"]
    evict, _skipped, blocked = dr.classify(rec["pods_gpu_1"], plan(delete_unmanaged=True, delete_emptydir_data=True))
    assert blocked == [] and len(evict) == 4
    assert all(e["uid"] and e["namespace"] == "apps" for e in evict)


def test_finished_pods_are_deleted_even_from_a_daemonset(rec):
    pods = copy.deepcopy(rec["pods_gpu_1"])
    agent = next(p for p in pods if (kube.controller_of(p) or {}).get("kind") == "DaemonSet")
    agent["status"]["phase"] = "Succeeded"
    evict, _skipped, _blocked = dr.classify(pods, plan())
    assert [e["finished"] for e in evict if e["uid"] == agent["metadata"]["uid"]] == [True]


def test_the_pdb_refusal_is_the_budgets_own_words(rec):
    refused = rec["eviction_refused"]
    assert refused["status"] == 429
    exc = K8sApiError("POST /api/v1/namespaces/apps/pods/web/eviction", 429, refused["body"]["message"],
                      status_doc=refused["body"])
    assert dr._refusal(exc) == "The disruption budget web needs 2 healthy pods and has 2 currently"  # pylint: disable=protected-access


def test_claims_reserved_on_a_node(rec):
    claims = rec["claims"]
    [held] = dr.claims_reserved_on(claims, "gpu-6")
    claim = next(c for c in claims if c["metadata"]["name"] == held["name"])
    consumer = claim["status"]["reservedFor"][0]
    assert held["reserved_for"] == ["pods/%s" % consumer["name"]]
    assert dr.claims_reserved_on(claims, "gpu-1") == []
    assert dr.claims_reserved_on(claims, "gpu-6", ignore_uids={consumer["uid"]}) == []
    released = copy.deepcopy(claims)
    for item in released:
        item["status"].pop("reservedFor", None)
    assert dr.claims_reserved_on(released, "gpu-6") == []


def test_node_snapshot_and_health_gaps(rec):
    snap = dr.node_snapshot(rec["node_gpu_6"], rec["slices_gpu_6"])
    assert snap["node"] == "gpu-6" and snap["ready"] and snap["allocatable_gpu"] is None
    assert len(snap["slice_devices"]) == 8 and snap["slice_devices"][0].startswith("gpu.nvidia.com/gpu-6/")
    assert dr.health_gaps(snap, snap) == []
    assert dr.health_gaps(snap, snap, new_boot=True) == ["node gpu-6 has not rebooted yet (bootID %s unchanged)" % snap["boot_id"]]
    down = dict(snap, ready=False, slice_devices=snap["slice_devices"][:5])
    gaps = dr.health_gaps(snap, down)
    assert gaps[0] == "node gpu-6 is not Ready" and gaps[1].startswith("ResourceSlice devices not republished: ")
    assert gaps[1].count("gpu.nvidia.com/gpu-6/") == 3
    plugin = dict(snap, allocatable_gpu=8, slice_devices=[])
    assert dr.health_gaps(plugin, dict(plugin, allocatable_gpu=7)) == ["allocatable nvidia.com/gpu is 7, recorded 8"]
    assert dr.health_gaps(plugin, dict(plugin, allocatable_gpu=None)) == ["allocatable nvidia.com/gpu is 0, recorded 8"]


def test_reschedules_from_the_recorded_drain(rec):
    evictions = rec["drain_gpu_6"]["evictions"]
    assert [e["owner"]["kind"] for e in evictions] == ["ReplicaSet"] and evictions[0]["pdb_retries"] == 0
    attempts, failed, not_counted = dr.reschedules(evictions, rec["pods_after"])
    assert (attempts, failed, not_counted) == (1, [], [])
    # the replacement is not there: a failed reschedule naming why
    gone = [p for p in rec["pods_after"] if (kube.controller_of(p) or {}).get("uid") != evictions[0]["owner"]["uid"]]
    attempts, failed = dr.reschedules(evictions, gone)[:2]
    assert attempts == 1 and failed[0]["name"] == evictions[0]["name"]
    assert failed[0]["reason"] == "no replacement pod was created by ReplicaSet %s" % evictions[0]["owner"]["name"]
    # a replacement the scheduler could not place: its own words
    pending = copy.deepcopy(rec["pods_after"])
    for pod in pending:
        if (kube.controller_of(pod) or {}).get("uid") == evictions[0]["owner"]["uid"]:
            pod["status"] = {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                                                 "message": "0/7 nodes are available"}]}
    failed = dr.reschedules(evictions, pending)[1]
    assert failed[0]["reason"] == "Unschedulable: 0/7 nodes are available"
    # the evicted pod itself is no replacement, and unmanaged or finished pods are no attempts
    attempts, failed, not_counted = dr.reschedules(
        evictions + [dict(evictions[0], uid="u2", name="bare", owner=None), dict(evictions[0], uid="u3", finished=True)],
        rec["pods_after"])
    assert attempts == 1 and failed == [] and [n["uid"] for n in not_counted] == ["u2", "u3"]


def test_the_recorded_drain_timed_every_pod(rec):
    [ev] = rec["drain_gpu_6"]["evictions"]
    assert ev["method"] == "eviction" and ev["requested_at"] <= ev["evicted_at"] <= ev["gone_at"] and ev["seconds"] >= 0
    assert dr.parse_stamp(ev["gone_at"]) - dr.parse_stamp(ev["requested_at"]) == pytest.approx(ev["seconds"], abs=1e-5)
    assert dr.parse_stamp("2026-12-03T10:00:00Z") == 1796292000.0 and dr.parse_stamp("yesterday") is None


# ---- the drain's timings, failed or not (issue 27) -----------------------------------------------

class FakeClock(object):
    """A monotonic clock that only moves when the drain sleeps (the tests never sleep)."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += max(seconds, 0.0)


class FakeApi(object):
    """The reader and the drain's no-retry ``once`` reader in one: evictions refused by a PDB (429) while
    ``pdb_open`` is false, pods gone once evicted, claims from ``claims``."""

    api_client = None
    timeout = 5.0

    class policy(object):  # pylint: disable=invalid-name
        deadline = 30.0

    def __init__(self, pods, refusal, pdb_open=False, claims=(), forbid_gets=False):
        self.pods = dict((p["metadata"]["uid"], p) for p in pods)
        self.refusal = refusal
        self.pdb_open = pdb_open
        self.claim_items = list(claims)
        self.forbid_gets = forbid_gets
        self.evicted = set()

    def request(self, method, path, query=None, body=None, content_type=None):
        if method == "POST" and path.endswith("/eviction"):
            if not self.pdb_open:
                raise K8sApiError("POST " + path, 429, self.refusal["message"], status_doc=self.refusal)
            self.evicted.add(path.split("/")[-2])
            return {}
        raise AssertionError("unexpected %s %s" % (method, path))

    def get_or_none(self, path):
        if self.forbid_gets:
            raise K8sApiError("GET " + path, 403, "forbidden")
        name = path.rsplit("/", 1)[-1]
        if name in self.evicted:
            return None
        return next(p for p in self.pods.values() if p["metadata"]["name"] == name)

    def list(self, path, field_selector=None):
        assert path == "/apis/resource.k8s.io/v1/resourceclaims", path
        return self.claim_items


def drain_with(api, **over):
    clock = FakeClock()
    drainer = dr.Drain(api, plan(**over), clock=clock, sleep=clock.sleep)
    drainer.once = api
    return drainer


def web_pods(rec):
    return [p for p in rec["pods_gpu_1"] if p["metadata"]["name"].startswith("web-")]


def test_a_failed_drain_records_how_long_evictions_were_tried(rec):
    """PDB never opens: the drain fails at its deadline, and the record proves it (evict_seconds >= timeout)."""
    api = FakeApi(web_pods(rec), rec["eviction_refused"]["body"])
    drainer = drain_with(api, timeout=60, retry_interval=5, poll_interval=0.5)
    evict, skipped, _blocked = dr.classify(web_pods(rec), drainer.plan)
    with pytest.raises(dr.DrainFailed) as exc:
        drainer.run(evict, skipped)
    record = exc.value.result
    assert record is drainer.record
    timings = record["timings"]
    assert set(timings) == {"cordon_seconds", "evict_seconds", "claims_seconds"}
    assert timings["evict_seconds"] is not None and timings["evict_seconds"] >= 60
    assert timings["evict_seconds"] == pytest.approx(60, abs=0.5)  # the deadline, not the next retry
    assert timings["claims_seconds"] is None  # the claims wait never ran
    assert "still present after 60 s" in str(exc.value) and "PodDisruptionBudget" in str(exc.value)
    assert [e["evicted_at"] for e in record["evictions"]] == [None, None]
    assert all(e["pdb_retries"] == 13 and e["requested_at"] for e in record["evictions"])  # at 0, 5, ..., 60 s


def test_a_drain_records_its_timings_when_it_succeeds(rec):
    api = FakeApi(web_pods(rec), rec["eviction_refused"]["body"], pdb_open=True)
    drainer = drain_with(api, timeout=60)
    evict, skipped, _blocked = dr.classify(web_pods(rec), drainer.plan)
    record = drainer.run(evict, skipped)
    assert record["timings"]["evict_seconds"] == 0 and record["timings"]["claims_seconds"] == 0
    assert all(e["method"] == "eviction" and e["gone_at"] for e in record["evictions"])
    without_claims = drain_with(FakeApi(web_pods(rec), None, pdb_open=True), wait_for_claims=False)
    record = without_claims.run(evict, skipped)
    assert record["timings"]["evict_seconds"] == 0 and record["timings"]["claims_seconds"] is None


def test_a_drain_failed_waiting_for_claims_records_both_steps(rec):
    """The deadline covers evictions and the claims wait together: their seconds add up to it."""
    held = copy.deepcopy([c for c in rec["claims"] if dr.claims_reserved_on([c], "gpu-6")])
    assert held
    api = FakeApi(web_pods(rec), None, pdb_open=True, claims=held)
    drainer = drain_with(api, node="gpu-6", timeout=30)
    evict, skipped, _blocked = dr.classify(web_pods(rec), drainer.plan)
    with pytest.raises(dr.DrainFailed) as exc:
        drainer.run(evict, skipped)
    timings = exc.value.result["timings"]
    assert timings["evict_seconds"] == 0 and timings["claims_seconds"] >= 30
    assert timings["evict_seconds"] + timings["claims_seconds"] >= 30
    assert "ResourceClaim(s) allocated on it are still reserved after 30 s" in str(exc.value)


def test_an_api_error_mid_drain_still_leaves_the_eviction_time(rec):
    api = FakeApi(web_pods(rec), None, pdb_open=True, forbid_gets=True)
    drainer = drain_with(api, timeout=60)
    evict, skipped, _blocked = dr.classify(web_pods(rec), drainer.plan)
    with pytest.raises(K8sApiError):
        drainer.run(evict, skipped)
    assert drainer.record["timings"]["evict_seconds"] == 0
    assert drainer.record["timings"]["claims_seconds"] is None
    assert [e["method"] for e in drainer.record["evictions"]] == ["eviction", "eviction"]


@pytest.mark.parametrize("over, message", [
    ({"node": "GPU_1"}, "node: must be a Kubernetes node name"),
    ({"timeout": 0}, "timeout: must be a positive number of seconds, got 0"),
    ({"retry_interval": True}, "retry_interval: must be a positive number"),
    ({"fallback_after": -1}, "fallback_after: must be a non-negative number"),
    ({"grace_period": -2}, "grace_period: must be a whole number of seconds >= 0"),
    ({"eviction_fallback": "force"}, "eviction_fallback: must be one of none, delete, got 'force'"),
])
def test_bad_options_name_the_field(over, message):
    with pytest.raises(dr.DrainError) as exc:
        plan(**over)
    assert str(exc.value).startswith(message), str(exc.value)
