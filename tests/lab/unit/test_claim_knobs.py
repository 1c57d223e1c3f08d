# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lab's DRA claim knobs: claim_latency, claim_allocation_failure per pod, numa_violation, claim_leak
marking, and the ground truth per claim (lab.claim_truth, GET/DELETE /kubelab/claims/truth)."""

from __future__ import annotations

import calendar
import time

import pytest

from kubelab import gpunodes, nodetrees
from kubelab.faults import FaultEngine

from test_dra import Kube, add_node, devices_of, dra_lab, gpu, pod, template, wait_for
from test_faults import http

INJECTED = "cannot allocate all claims: injected claim allocation failure (kubelab fault)"


def ns_of(stamp: str) -> int:
    """RFC 3339 with 9 fraction digits -> nanoseconds since the epoch."""
    whole, fraction = stamp.rstrip("Z").split(".")
    assert len(fraction) == 9, stamp
    return calendar.timegm(time.strptime(whole, "%Y-%m-%dT%H:%M:%S")) * 1_000_000_000 + int(fraction)


def seconds(entry: dict, later: str, earlier: str) -> float:
    return (ns_of(entry[later]) - ns_of(entry[earlier])) / 1e9


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    yield from dra_lab(tmp_path_factory, "knobs")


@pytest.fixture(autouse=True)
def clear_faults(lab):
    yield
    lab.server.fault_engine.remove()


def entry_of(server, ns, claim_name):
    return server.claim_truth[(ns, claim_name)]


def test_fixed_allocation_delay(lab):
    kube = Kube(lab.server, "knob-alloc")
    add_node(kube, "n-alloc", [gpu("n-alloc", 0)])
    kube.create("resourceclaimtemplates", template("one"))
    lab.server.fault_engine.add({"claim_latency": {"allocation": 0.3}})
    kube.create("pods", pod("slow", "n-alloc", template_name="one"))
    wait_for(lambda: kube.running("slow"))
    claim = kube.claim_of("slow")
    entry = entry_of(lab.server, "knob-alloc", claim["metadata"]["name"])
    assert 0.3 <= seconds(entry, "allocated", "created") <= 0.35, entry
    assert entry["kind"] == "template" and entry["pod"] == "slow" and entry["injected"]["allocation_delay"] == 0.3
    assert entry["devices"] == [{"driver": "gpu.nvidia.com", "pool": "n-alloc", "device": "gpu-0"}]
    wait_for(lambda: entry["ready"])
    assert entry["running"] and ns_of(entry["ready"]) >= ns_of(entry["running"]) >= ns_of(entry["allocated"])
    kube.delete("pods", "slow")
    wait_for(lambda: entry["deleted"], what="claim deleted in the truth")
    assert ns_of(entry["deleted"]) >= ns_of(entry["deallocated"])


def test_uniform_seed_reproducible():
    spec = {"claim_latency": {"allocation": {"distribution": "uniform", "min": 0.1, "max": 0.9},
                              "prepare": {"distribution": "lognormal", "median": 0.2, "sigma": 0.5}, "seed": 7}}
    runs = []
    for _run in range(2):
        engine = FaultEngine(object(), [spec])
        runs.append([engine.delay("allocation", ("ns", "c%d" % i)) for i in range(5)]
                    + [engine.delay("prepare", ("pod", "u%d" % i)) for i in range(3)])
    assert runs[0] == runs[1] and len(set(runs[0])) == 8
    assert all(0.1 <= d <= 0.9 for d in runs[0][:5])
    engine = FaultEngine(object(), [spec])
    assert engine.delay("allocation", ("ns", "x")) == engine.delay("allocation", ("ns", "x"))  # drawn once
    assert FaultEngine(object(), []).delay("allocation", ("ns", "x")) == 0.0


def test_prepare_delay_delays_running(lab):
    kube = Kube(lab.server, "knob-prep")
    add_node(kube, "n-prep", [gpu("n-prep", 0)])
    kube.create("resourceclaimtemplates", template("one"))
    lab.server.fault_engine.add({"claim_latency": {"prepare": {"distribution": "fixed", "seconds": 0.5}}})
    kube.create("pods", pod("prep", "n-prep", template_name="one"))
    wait_for(lambda: kube.running("prep"))
    entry = entry_of(lab.server, "knob-prep", kube.claim_of("prep")["metadata"]["name"])
    assert seconds(entry, "running", "allocated") >= 0.5 + 0.05, entry
    assert seconds(entry, "running", "allocated") < 0.8, entry
    assert entry["prepared"] and entry["injected"]["prepare_delay"] == 0.5


def test_per_pod_failure(lab):
    kube = Kube(lab.server, "knob-fail")
    add_node(kube, "n-fail", [gpu("n-fail", i) for i in range(20)])
    kube.create("resourceclaimtemplates", template("one"))
    lab.server.fault_engine.add({"claim_allocation_failure": {"rate": 0.5, "per": "pod", "seed": 3}})
    names = ["p%02d" % i for i in range(20)]
    for name in names:
        kube.create("pods", pod(name, "n-fail", template_name="one"))

    def settled():
        states = {}
        for name in names:
            if kube.running(name):
                states[name] = "running"
            elif kube.unschedulable(name):
                states[name] = "failed"
            else:
                return None
        return states
    states = wait_for(settled, what="every pod running or unschedulable")
    time.sleep(1.2)  # a later scheduling pass does not change the sticky decision
    assert settled() == states
    marked = {e["pod"] for e in lab.server.claim_truth.values()
              if e["namespace"] == "knob-fail" and e["injected"]["allocation_failure"]}
    failed = {n for n, s in states.items() if s == "failed"}
    assert failed == marked and 0 < len(failed) < 20
    for name in failed:
        assert INJECTED in kube.unschedulable(name)


def test_numa_violation(lab):
    kube = Kube(lab.server, "knob-numa")
    add_node(kube, "n-vnuma", [gpu("n-vnuma", i, numa=i % 2) for i in range(6)])
    kube.create("resourceclaimtemplates", template("pair", count=2, constraints=[
        {"requests": ["gpu"], "matchAttribute": "resource.kubernetes.io/numaNode"}]))
    lab.server.fault_engine.add({"numa_violation": {"seed": 1}})
    kube.create("pods", pod("bad", "n-vnuma", template_name="pair"))
    wait_for(lambda: kube.running("bad"))
    claim = kube.claim_of("bad")
    assert devices_of(claim) == ["gpu-0", "gpu-1"]  # numaNode 0 and 1
    assert entry_of(lab.server, "knob-numa", claim["metadata"]["name"])["injected"]["numa_violation"] is True
    lab.server.fault_engine.remove()
    kube.create("pods", pod("good", "n-vnuma", template_name="pair"))
    wait_for(lambda: kube.running("good"))
    claim = kube.claim_of("good")
    assert devices_of(claim) == ["gpu-2", "gpu-4"]  # the constraint holds again: both on numaNode 0
    assert entry_of(lab.server, "knob-numa", claim["metadata"]["name"])["injected"]["numa_violation"] is False


def test_leak_marked(lab):
    kube = Kube(lab.server, "knob-leak")
    add_node(kube, "n-leak", [gpu("n-leak", 0)])
    kube.create("resourceclaimtemplates", template("one"))
    kube.create("pods", pod("leaky", "n-leak", template_name="one"))
    wait_for(lambda: kube.running("leaky"))
    entry = entry_of(lab.server, "knob-leak", kube.claim_of("leaky")["metadata"]["name"])
    lab.server.fault_engine.add({"claim_leak": {}})
    kube.delete("pods", "leaky")
    wait_for(lambda: entry["injected"]["leak"], what="leak marked")
    assert entry["deallocated"] is None
    lab.server.fault_engine.remove()
    wait_for(lambda: entry["deleted"], what="claim cleaned up after the leak")


def test_mig_h100_node(lab, tmp_path):
    root = nodetrees.materialize("mig-h100", str(tmp_path / "mig"))
    entries = gpunodes.gpu_entries(gpunodes.gather(root), "n-mig")
    assert entries and str(entries[0]["mig_mode"]).lower() == "enabled"
    kube = Kube(lab.server, "knob-mig")
    add_node(kube, "n-mig", entries)
    devices = [d["name"] for d in kube.slices("n-mig")[0]["spec"]["devices"]]
    assert devices == ["gpu-0-mig-3g40gb-0", "gpu-0-mig-3g40gb-1"]
    kube.create("resourceclaimtemplates", template("mig", deviceClassName="mig.nvidia.com"))
    kube.create("pods", pod("mig", "n-mig", template_name="mig"))
    wait_for(lambda: kube.running("mig"))
    assert devices_of(kube.claim_of("mig")) == ["gpu-0-mig-3g40gb-0"]


def test_truth_endpoint_and_clear(lab):
    code, body = http(lab.server, "/kubelab/claims/truth")
    assert code == 200 and isinstance(body, list) and body
    keys = [(e["namespace"], e["claim"] or "", e["pod"] or "") for e in body]
    assert keys == sorted(keys)
    assert set(body[0]) >= {"namespace", "claim", "pod", "pod_uid", "kind", "created", "allocated", "prepared",
                            "running", "ready", "deallocated", "deleted", "devices", "injected"}
    code, body = http(lab.server, "/kubelab/claims/truth", "DELETE")
    assert code == 200 and body["removed"] > 0
    assert http(lab.server, "/kubelab/claims/truth") == (200, [])


@pytest.mark.parametrize("fault, field", [
    ({"claim_latency": {"allocation": -1}}, "claim_latency.allocation"),
    ({"claim_latency": {"allocation": {"distribution": "gamma"}}}, "claim_latency.allocation.distribution"),
    ({"claim_latency": {"prepare": {"distribution": "uniform", "min": 1}}}, "claim_latency.prepare.max"),
    ({"claim_latency": {"prepare": {"distribution": "lognormal", "median": 1, "sigma": "x"}}},
     "claim_latency.prepare.sigma"),
    ({"claim_latency": {"allocation": 1, "seed": 1.5}}, "claim_latency.seed"),
    ({"claim_latency": {}}, "claim_latency"),
    ({"claim_allocation_failure": {"per": "node"}}, "claim_allocation_failure.per"),
    ({"numa_violation": {"rate": 3}}, "numa_violation.rate"),
])
def test_bad_knob_input(lab, fault, field):
    code, body = http(lab.server, "/kubelab/faults", "POST", fault)
    assert code in (400, 422) and field in body["message"], body
