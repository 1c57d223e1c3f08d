# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Units of module_utils/phases/claim_lifecycle.py and claim_disruptions.py: the plan, the objects, the
watch-fed tracker replayed from a recorded run (tests/fixtures/claim_lifecycle/lab-run-events.json:
the events claim_lifecycle's watches received from the lab, with their receipt times), the records
built from it, the watch stream parser and the cleanup."""

from __future__ import absolute_import, division, print_function

import json
import os
import time

import pytest

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.phases import claim_disruptions as cd
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.phases import claim_lifecycle as cl
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.phases import claim_stats
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster.client import K8sApiError, RetryPolicy, watch_events

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "claim_lifecycle", "lab-run-events.json")


def params(**over):
    base = dict(count=10, concurrency=2, kinds=["template"], run_id="r1", namespace="dra-acceptance",
                device_class="gpu.nvidia.com", mig_device_class="mig.nvidia.com", extended_resource_name="nvidia.com/gpu",
                numa_devices=2, image="pause", command=None, node_selector={}, tolerations=[], lifecycle_timeout=30,
                cleanup_timeout=30, timeout=600, hold_seconds=0, delete_grace_seconds=0, progress_every=10, disruptions=[])
    base.update(over)
    return base


# -- the plan ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("over, field", [
    ({"count": 0}, "count:"), ({"count": True}, "count:"), ({"concurrency": 0}, "concurrency:"),
    ({"kinds": []}, "kinds:"), ({"kinds": ["template", "gpu"]}, "kinds[1]:"), ({"run_id": "Bad_Id"}, "run_id:"),
    ({"run_id": "x" * 41}, "run_id:"), ({"lifecycle_timeout": 0}, "lifecycle_timeout:"), ({"hold_seconds": -1}, "hold_seconds:"),
    ({"delete_grace_seconds": -1}, "delete_grace_seconds:"), ({"numa_devices": 1}, "numa_devices:"),
    ({"node_selector": {"a": 1}}, "node_selector.a:"), ({"tolerations": [{"effect": "NoSchedule"}]}, "tolerations[0]:"),
    ({"disruptions": [{"type": "reboot"}]}, "disruptions[0].type:"),
    ({"disruptions": [{"type": "device_taint", "effect": "NoSchedul"}]}, "disruptions[0].effect:"),
    ({"disruptions": [{"type": "device_taint", "effect": "NoExecute", "after": 10}]}, "disruptions[0].after:"),
    ({"disruptions": [{"type": "plugin_restart"}]}, "disruptions[0].node:"),
    ({"disruptions": [{"type": "workload_restart", "pod": 1}]}, "disruptions[0]: unknown key(s) pod"),
])
def test_bad_options_name_the_field(over, field):
    with pytest.raises(cl.PlanError) as err:
        cl.validate_plan(params(**over))
    assert str(err.value).startswith(field), str(err.value)


def test_plan_defaults_and_disruptions():
    plan = cl.validate_plan(params(disruptions=[{"type": "device_taint", "effect": "NoExecute"},
                                                {"type": "plugin_restart", "node": "n1", "after": 2}]))
    taint, restart = plan["disruptions"]
    assert taint["after"] == 3 and taint["lifecycles"] == 10 and taint["prefer_kind"] == "extended"
    assert restart["plugin_namespace"] == "gpu-operator" and restart["recovery_timeout"] == 120.0
    assert plan["command"] == cl.DEFAULT_COMMAND


def test_objects_of_each_kind():
    plan = cl.validate_plan(params(kinds=list(cl.KINDS), numa_devices=4, node_selector={"pool": "canary"},
                                   tolerations=[{"key": "k", "operator": "Exists"}]))
    assert cl.claim_template(plan, "extended") is None
    numa = cl.claim_template(plan, "numa")
    assert numa["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 4
    assert numa["spec"]["spec"]["devices"]["constraints"] == [{"requests": ["gpu"], "matchAttribute": cl.NUMA_ATTRIBUTE}]
    assert numa["spec"]["metadata"]["labels"][cl.RUN_LABEL] == "r1"  # generated claims carry the run label
    mig = cl.claim_template(plan, "mig")
    assert mig["spec"]["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] == "mig.nvidia.com"
    pod = cl.pod_body(plan, "extended", 7)
    assert pod["metadata"]["name"] == "dra-gate-r1-7"
    assert pod["spec"]["containers"][0]["resources"] == {"limits": {"nvidia.com/gpu": "1"}}
    assert pod["spec"]["restartPolicy"] == "Always" and "resourceClaims" not in pod["spec"]
    pod = cl.pod_body(plan, "template", 0)
    assert pod["spec"]["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": "dra-gate-r1-template"}]
    assert pod["spec"]["nodeSelector"] == {"pool": "canary"} and pod["spec"]["tolerations"][0]["key"] == "k"
    assert cl.classes_needed(plan) == {"gpu.nvidia.com": ["template", "numa"], "mig.nvidia.com": ["mig"]}


# -- the tracker, replayed from a recorded run ------------------------------------------------------

class NoReader:
    calls = 0

    def list(self, path, label_selector=None):
        raise AssertionError("no API call expected: %s" % path)


def replay():
    with open(FIXTURE) as handle:
        data = json.load(handle)
    plan = cl.validate_plan(params(kinds=["template", "extended", "numa"], count=6))
    run = cl.LifecycleRun(NoReader(), plan)
    run.slices = data["resourceslices"]
    run.devices = cl.device_index(run.slices)
    lives = {}
    for event in data["events"]:
        obj = event["object"]
        if event["watch"] == "pods" and obj["metadata"]["name"] not in lives:
            kind = obj["metadata"]["labels"][cl.KIND_LABEL]
            life = cl.Lifecycle(int(obj["metadata"]["name"].rsplit("-", 1)[1]), kind, obj["metadata"]["name"])
            life.state = "running"
            life.deadline = float("inf")
            run.tracker.add(life)
            lives[life.pod] = life
            if kind == "extended":
                life.mark("created_at", event["received_at"])
        if event["watch"] == "pods" and event["type"] == "DELETED":
            lives[obj["metadata"]["name"]].state = "deleting"
        handler = run.tracker.on_pod if event["watch"] == "pods" else run.tracker.on_claim
        if event["watch"] == "pods" and event["type"] == "DELETED":
            # the run asks for the deletion between the pod's Ready event and its DELETED event
            life = lives[obj["metadata"]["name"]]
            life.mark("delete_requested_at", life.times["ready_at"])
        handler(event["type"], obj, event["received_at"])
    return data, run, lives


def test_replayed_records_take_each_time_from_its_first_event():
    data, run, lives = replay()
    assert sorted(life.kind for life in lives.values()) == ["extended", "extended", "numa", "numa", "template", "template"]
    for life in lives.values():
        life.devices = None
        life.state = "done"
        rec = run._record(life)  # pylint: disable=protected-access
        claim_events = [e for e in data["events"] if e["watch"] == "resourceclaims" and e["object"]["metadata"]["name"] == rec["claim"]]
        pod_events = [e for e in data["events"] if e["watch"] == "pods" and e["object"]["metadata"]["name"] == life.pod]
        allocated = [e["received_at"] for e in claim_events if (e["object"].get("status") or {}).get("allocation")]

        def is_ready(event):
            conditions = (event["object"].get("status") or {}).get("conditions") or []
            return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
        ready = [e["received_at"] for e in pod_events if is_ready(e)]
        deleted = [e["received_at"] for e in claim_events if e["type"] == "DELETED"]
        assert rec["allocated_at"] == allocated[0] and rec["ready_at"] == ready[0] and rec["deleted_at"] == deleted[0]
        if life.kind == "extended":
            assert rec["created_at"] == pod_events[0]["received_at"]  # the request, not the claim's creation
        else:
            assert rec["created_at"] == claim_events[0]["received_at"]
        assert rec["error_class"] is None and rec["leaked"] is False
        assert rec["devices"] and all(d["uuid"] and d["pci_bus_id"] for d in rec["devices"])
        assert rec["numa_constraint"] is (life.kind == "numa")
    records = [run._record(life) for life in lives.values()]  # pylint: disable=protected-access
    summary = claim_stats.summarize(records)
    assert summary["success_rate"] == {"numerator": 6, "denominator": 6, "percent": 100.0}
    assert summary["numa"]["checked"] == 2 and summary["numa"]["violations"] == 0
    assert summary["cleanup_defects"]["numerator"] == 0 and summary["cleanup_defects"]["denominator"] == 6


def test_a_claim_left_allocated_is_a_leak_and_a_pod_deleted_by_another_is_an_eviction():
    data, run, lives = replay()
    life = sorted(lives.values(), key=lambda x: x.index)[0]
    obs = run.tracker.claim_of(life)
    obs.gone = False
    obs.times.pop("deleted_at")
    obs.times.pop("deallocated_at", None)
    obs.allocation = next(e["object"] for e in data["events"] if e["watch"] == "resourceclaims"
                          and e["object"]["metadata"]["name"] == obs.name and (e["object"].get("status") or {}).get("allocation"))
    rec = run._record(life)  # pylint: disable=protected-access
    assert rec["leaked"] is True and rec["deleted_at"] is None
    assert claim_stats.summarize([rec])["cleanup_defects"]["claims"] == [obs.name]

    evicted = cl.Lifecycle(99, "extended", "dra-gate-r1-99")
    evicted.state = "running"
    run.tracker.add(evicted)
    pod = {"metadata": {"name": "dra-gate-r1-99", "uid": "u99", "deletionTimestamp": "2026-12-02T12:00:01Z"},
           "status": {"conditions": [{"type": "DisruptionTarget", "status": "True", "reason": "DeletionByDeviceTaintManager",
                                      "message": "Device Taint manager: deleting due to NoExecute taint"}]}}
    run.tracker.on_pod("MODIFIED", pod, "2026-12-02T12:00:01.5Z")
    assert evicted.times["evicted_at"] == "2026-12-02T12:00:01.5Z"
    assert evicted.evicted_reason.startswith("DeletionByDeviceTaintManager")


def test_a_spare_claim_of_the_same_pod_is_not_the_lifecycles():
    run = cl.LifecycleRun(NoReader(), cl.validate_plan(params()))
    life = cl.Lifecycle(0, "template", "dra-gate-r1-0")
    life.state = "running"
    run.tracker.add(life)
    owner = [{"kind": "Pod", "name": "dra-gate-r1-0", "uid": "p0", "controller": True}]
    run.tracker.on_pod("ADDED", {"metadata": {"name": "dra-gate-r1-0", "uid": "p0"}}, "2026-12-02T12:00:00Z")
    run.tracker.on_claim("ADDED", {"metadata": {"name": "spare", "uid": "c1", "ownerReferences": owner}}, "2026-12-02T12:00:01Z")
    run.tracker.on_claim("ADDED", {"metadata": {"name": "real", "uid": "c2", "ownerReferences": owner}}, "2026-12-02T12:00:02Z")
    run.tracker.on_pod("MODIFIED", {"metadata": {"name": "dra-gate-r1-0", "uid": "p0"},
                                    "status": {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "real"}]}},
                       "2026-12-02T12:00:03Z")
    run.tracker.on_claim("DELETED", {"metadata": {"name": "spare", "uid": "c1", "ownerReferences": owner}}, "2026-12-02T12:00:04Z")
    assert run.tracker.claim_of(life).name == "real" and not run.tracker.claim_of(life).gone


# -- the watch stream -------------------------------------------------------------------------------

class Stream:
    def __init__(self, chunks, status=200):
        self.chunks, self.status, self.closed = chunks, status, False
        self.data = b'{"kind": "Status", "message": "denied", "code": 403}' if status != 200 else b""

    def stream(self, amt=None, decode_content=True):
        yield from self.chunks

    def release_conn(self):
        self.closed = True


class StreamClient:
    """An ApiClient whose call_api returns a prepared stream (the kubernetes >= 35 signature)."""

    def __init__(self, stream):
        self.response = stream
        self.queries = []

    def param_serialize(self, method, path, query_params=None, header_params=None, auth_settings=None, **_kw):
        self.queries.append(query_params)
        return (method, path)

    def call_api(self, method, path, _request_timeout=None):
        class Response:
            status = self.response.status
            response = self.response
        return Response()


class Reader:
    def __init__(self, client):
        self.api_client, self.timeout, self.calls, self.retries = client, 5.0, 0, 0
        self.policy = RetryPolicy(deadline=1.0, sleep=lambda s: None)


def test_watch_events_split_across_chunks_bookmarks_and_errors():
    lines = [{"type": "ADDED", "object": {"metadata": {"name": "a"}}}, {"type": "BOOKMARK", "object": {"metadata": {}}},
             {"type": "DELETED", "object": {"metadata": {"name": "a"}}}]
    text = "".join(json.dumps(line) + "\n" for line in lines).encode()
    stream = Stream([text[:7], text[7:60], text[60:]])
    client = StreamClient(stream)
    got = list(watch_events(Reader(client), "/api/v1/pods", "42", label_selector="a=b", timeout_seconds=10))
    assert [(kind, obj["metadata"].get("name")) for kind, obj in got] == [("ADDED", "a"), ("BOOKMARK", None), ("DELETED", "a")]
    assert ("resourceVersion", "42") in client.queries[0] and ("labelSelector", "a=b") in client.queries[0]
    assert stream.closed
    expired = Stream([json.dumps({"type": "ERROR", "object": {"code": 410, "message": "too old resource version"}}).encode()])
    with pytest.raises(K8sApiError) as err:
        list(watch_events(Reader(StreamClient(expired)), "/api/v1/pods", "1"))
    assert err.value.status == 410


def test_watch_forbidden_is_an_error_not_an_empty_stream():
    with pytest.raises(K8sApiError) as err:
        list(watch_events(Reader(StreamClient(Stream([], status=403))), "/api/v1/pods", "1"))
    assert err.value.status == 403 and "denied" in str(err.value)


# -- cleanup ------------------------------------------------------------------------------------------

class CleanupReader:
    def __init__(self):
        self.objects = {"pods": [{"metadata": {"name": "dra-gate-r1-0", "labels": {cl.RUN_LABEL: "r1"}}},
                                 {"metadata": {"name": "other", "labels": {cl.RUN_LABEL: "r2"}}}],
                        "resourceclaimtemplates": [{"metadata": {"name": "dra-gate-r1-template", "labels": {cl.RUN_LABEL: "r1"}}}],
                        "resourceclaims": [{"metadata": {"name": "x-extended", "ownerReferences": [
                            {"kind": "Pod", "name": "dra-gate-r1-0", "uid": "u", "controller": True}]}},
                            {"metadata": {"name": "unrelated"}}]}
        self.deleted = []

    def list(self, path, label_selector=None):
        plural = path.rsplit("/", 1)[1]
        items = self.objects[plural]
        if label_selector:
            key, _sep, value = label_selector.partition("=")
            items = [i for i in items if (i["metadata"].get("labels") or {}).get(key) == value]
        return items

    def request(self, method, path, query, body):
        plural, name = path.rsplit("/", 2)[1:]
        self.deleted.append((plural, name))
        self.objects[plural] = [i for i in self.objects[plural] if i["metadata"]["name"] != name]


def test_cleanup_deletes_the_runs_objects_and_the_claims_its_pods_own():
    reader = CleanupReader()
    left, asked = cl.delete_run_objects(reader, "dra-acceptance", "r1", 5)
    assert left == [] and asked == 3
    assert sorted(reader.deleted) == [("pods", "dra-gate-r1-0"), ("resourceclaims", "x-extended"),
                                      ("resourceclaimtemplates", "dra-gate-r1-template")]
    assert [i["metadata"]["name"] for i in reader.objects["pods"]] == ["other"]


def test_disruption_event_for_a_taint_that_never_started():
    taint = {"type": "device_taint", "effect": "NoSchedule", "after": 5}
    run = cl.LifecycleRun(NoReader(), cl.validate_plan(params(disruptions=[taint])))
    events = run.disruptions.finish()
    assert events == [{"type": "device_taint", "index": 0, "started": False,
                       "why": "the run ended before 5 lifecycles were done"}]
    assert cd.KINDS == ("device_taint", "plugin_restart", "workload_restart")


def test_pod_evidence_moves_claim_times_earlier():
    """The pod's watch saw the claim named (it exists) and the pod bound (it is allocated) before the claim's
    own events arrived: the claim's times are the first evidence of either stream."""
    times = {"created_at": "2026-12-02T10:00:00.030000000Z", "allocated_at": "2026-12-02T10:00:00.050000000Z",
             "scheduled_at": "2026-12-02T10:00:00.040000000Z", "ready_at": "2026-12-02T10:00:00.400000000Z"}
    cl._pod_evidence(times, "2026-12-02T10:00:00.020000000Z")  # pylint: disable=protected-access
    assert times["created_at"] == "2026-12-02T10:00:00.020000000Z"
    assert times["allocated_at"] == "2026-12-02T10:00:00.040000000Z"
    in_order = {"created_at": "2026-12-02T10:00:00.010000000Z", "allocated_at": "2026-12-02T10:00:00.020000000Z",
                "scheduled_at": "2026-12-02T10:00:00.030000000Z"}
    before = dict(in_order)
    cl._pod_evidence(in_order, "2026-12-02T10:00:00.015000000Z")  # pylint: disable=protected-access
    assert in_order == before
    bound_first = {"created_at": "2026-12-02T10:00:00.050000000Z", "allocated_at": "2026-12-02T10:00:00.060000000Z",
                   "scheduled_at": "2026-12-02T10:00:00.040000000Z"}
    cl._pod_evidence(bound_first, None)  # pylint: disable=protected-access
    assert bound_first["allocated_at"] == bound_first["created_at"] == "2026-12-02T10:00:00.040000000Z"


def test_call_pool_runs_calls_keeps_problems_and_drops_the_queue_on_close():
    import threading
    pool = cl.CallPool(2)
    done, gate = [], threading.Event()
    pool.submit(done.append, 1)
    forbidden = K8sApiError("DELETE pods/x", 403, "forbidden")

    def fail():
        raise forbidden
    pool.submit(fail)
    deadline = time.monotonic() + 5
    while (not done or not pool.problems) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert done == [1] and pool.problems == [forbidden]
    pool.submit(gate.wait, 5)
    pool.submit(gate.wait, 5)  # both threads busy: what comes next stays queued
    pool.submit(done.append, 2)
    closer = threading.Thread(target=pool.close, kwargs={"timeout": 5})
    closer.start()  # drops what is queued at once, then waits for the calls in flight
    time.sleep(0.05)
    gate.set()
    closer.join(10)
    assert done == [1] and not pool.threads  # the queued call was dropped, the threads ended


def test_progress_file_is_appended_0600_and_followed(tmp_path):
    import threading
    from ansible_collections.gpufleet.dra_gate.plugins.action import claim_lifecycle as action
    from ansible_collections.gpufleet.dra_gate.plugins.module_utils.evidence import private_files
    path = cl.progress_path(str(tmp_path), "run-1")
    assert path == str(tmp_path / "dra-acceptance-run-1.progress")
    private_files.append_private_line(path, "old line before the task")
    shown, stop = [], threading.Event()
    thread = threading.Thread(target=action.follow, args=(path, action.size_of(path), stop, shown.append, 0.01),
                              daemon=True)
    thread.start()
    private_files.append_private_line(path, "claims 100/300 done, 0 failed")
    deadline = time.monotonic() + 5
    while not shown and time.monotonic() < deadline:
        time.sleep(0.01)
    assert shown == ["claims 100/300 done, 0 failed"]  # shown while running; the old line is not
    private_files.append_private_line(path, "claims 300/300 done, 1 failed\n")
    stop.set()
    thread.join(5)
    assert shown == ["claims 100/300 done, 0 failed", "claims 300/300 done, 1 failed"]  # the last one before stopping
    assert os.stat(path).st_mode & 0o777 == 0o600
    link = str(tmp_path / "link.progress")
    os.symlink(path, link)
    with pytest.raises(private_files.PrivateFileError):
        private_files.append_private_line(link, "never through a link")


def test_device_health_changes_are_recorded_from_pods_and_claims():
    tracker = cl.Tracker()
    life = cl.Lifecycle(0, "template", "dra-gate-h-0")
    tracker.add(life)
    claim = {"metadata": {"name": "dra-gate-h-0-gpu-abcde", "uid": "c1",
                          "ownerReferences": [{"kind": "Pod", "name": "dra-gate-h-0", "uid": "p1", "controller": True}]},
             "status": {"devices": [{"driver": "gpu.nvidia.com", "pool": "gpu-1", "device": "gpu-3", "conditions": [
                 {"type": "Ready", "status": "True", "reason": "DeviceHealthy"}]}]}}
    tracker.on_claim("ADDED", claim, "2026-12-02T10:00:00.000000000Z")
    assert tracker.health == []  # healthy from the start: nothing to record
    unhealthy = json.loads(json.dumps(claim))
    unhealthy["status"]["devices"][0]["conditions"][0].update(status="False", reason="DeviceUnhealthy")
    tracker.on_claim("MODIFIED", unhealthy, "2026-12-02T10:00:01.000000000Z")
    tracker.on_claim("MODIFIED", unhealthy, "2026-12-02T10:00:02.000000000Z")  # the same again: no new change
    other = json.loads(json.dumps(unhealthy))  # another run's claim in the namespace (an interrupted one's)
    other["metadata"].update(name="dra-gate-old-7-gpu-zzzzz", uid="c9",
                             ownerReferences=[{"kind": "Pod", "name": "dra-gate-old-7", "uid": "p9", "controller": True}])
    tracker.on_claim("MODIFIED", other, "2026-12-02T10:00:02.500000000Z")
    pod = {"metadata": {"name": "dra-gate-h-0", "uid": "p1"}, "spec": {"nodeName": "gpu-1"}, "status": {
        "phase": "Running", "containerStatuses": [{"name": "workload", "allocatedResourcesStatus": [
            {"name": "claim:gpu", "resources": [{"resourceID": "gpu.nvidia.com/gpu-1/gpu-3", "health": "Unknown"}]}]}]}}
    tracker.on_pod("MODIFIED", pod, "2026-12-02T10:00:03.000000000Z")
    seen = [(o["source"], o["health"], o["at"][17:19]) for o in tracker.health]
    assert seen == [("claim", "Unhealthy", "01"), ("pod", "Unknown", "03")]
    assert tracker.health[0]["status"]["conditions"][0]["reason"] == "DeviceUnhealthy"
    assert tracker.health[1]["claim"] == "dra-gate-h-0-gpu-abcde" or tracker.health[1]["pod"] == "dra-gate-h-0"
    summary = cl.device_health(tracker.health)
    assert summary["devices"] == ["gpu.nvidia.com/gpu-1/gpu-3"] and summary["claims"] == ["dra-gate-h-0-gpu-abcde"]


# -- streamed records, long-lived lifecycles (issue 33) ---------------------------------------------

@pytest.mark.parametrize("value", [-1, True, 1.5, "3"])
def test_long_lived_must_be_a_whole_number(value):
    with pytest.raises(cl.PlanError, match="^long_lived: must be a whole number >= 0"):
        cl.validate_plan(params(long_lived=value))


def test_records_stream_to_a_private_file_with_the_same_counts_as_summarize(tmp_path):
    _data, run, lives = replay()
    records = []
    for life in lives.values():
        life.state = "done"
        records.append(run._record(life))  # pylint: disable=protected-access
    path = str(tmp_path / "records.jsonl")
    sink = claim_stats.RecordSink(path)
    for rec in records:
        sink.add(rec)
    assert not os.path.exists(path)  # named only when published: never half-written
    parts = [p for p in os.listdir(str(tmp_path)) if p.endswith(".part")]
    assert len(parts) == 1 and os.stat(str(tmp_path / parts[0])).st_mode & 0o777 == 0o600
    assert len(sink) == 6 and sink.failures == 0 and sink.records is None  # nothing of a record held
    sink.publish()
    assert os.stat(path).st_mode & 0o777 == 0o600 and not [p for p in os.listdir(str(tmp_path)) if p.endswith(".part")]
    assert claim_stats.read_jsonl(path) == [claim_stats.validate_record(r) for r in records]
    assert sink.result() == claim_stats.summarize(records)
    with pytest.raises(Exception, match="already exists; artifacts are never replaced"):
        claim_stats.RecordSink(path)


def test_a_discarded_sink_leaves_nothing_and_a_bad_record_names_its_index(tmp_path):
    sink = claim_stats.RecordSink(str(tmp_path / "r.jsonl"))
    with pytest.raises(claim_stats.ClaimStatsError, match=r"records\[0\]"):
        sink.add({"claim": "c"})
    sink.discard()
    assert os.listdir(str(tmp_path)) == []


def test_an_ended_lifecycle_leaves_the_tracker_unless_disruptions_need_it():
    _data, run, lives = replay()
    assert run.keep is False and run.records is None
    for life in list(lives.values()):
        life.state = "done"
        run._finish(life)  # pylint: disable=protected-access
    assert run.tracker.by_pod == {} and run.tracker.claims == {} and run.done == 6
    assert run.sink.result()["success_rate"]["numerator"] == 6
    kept = cl.LifecycleRun(NoReader(), cl.validate_plan(params(disruptions=[{"type": "workload_restart", "after": 1}])))
    assert kept.keep is True and kept.records == []
