# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A graceful deletion (deletionTimestamp set) keeps a status write that lands between the deleter's read
and its write.

kube-apiserver sets deletionTimestamp inside GuaranteedUpdate: on a conflict the deletion is applied again
to the latest object, so a concurrent status write is never lost. The lab's ``Api.delete`` reads the object,
then writes it back with the deletion fields through ``Store.update(deleting=True)``. The race this pins
(the flake of ``test_device_health_is_reflected_in_the_status_and_recorded``): the run deletes its pod, the
garbage collector deletes the pod's claim (a finalizer: deletionTimestamp only) while the DRA driver writes
the claim's ``status.devices`` Ready=True because the device_unhealthy fault just ended; the deletion wrote
its stale copy (Ready=False) over the driver's write, so the module saw Unhealthy, Healthy, Unhealthy.

The interleaving is forced: the deleter's read returns, then the other writer's write is made in full,
then the deleter's write goes on. The lab runs without controllers, so nothing else writes.
"""

from __future__ import annotations

import shutil

import pytest

from kubelab.controllers.common import write_status
from kubelab.testing import start_lab, stop_lab

NS = "deletion-race"
FINALIZER = "kubelab.test/hold"  # nobody removes it: the object stays, terminating, for the assertions


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    work = str(tmp_path_factory.mktemp("deletion-race"))
    cluster = start_lab(work, scenario="minimal", controllers=False)
    api = cluster.server.api
    api.create(cluster.server.registry.get("", "v1", "namespaces"), None, {"metadata": {"name": NS}})
    # no ServiceAccounts controller here: the pod's admission needs the namespace's default account
    api.create(cluster.server.registry.get("", "v1", "serviceaccounts"), NS, {"metadata": {"name": "default"}})
    yield cluster
    stop_lab(cluster)
    shutil.rmtree(work, ignore_errors=True)


def ready(state: str, reason: str) -> dict:
    return {"driver": "gpu.nvidia.com", "pool": "gpu-1", "device": "gpu-0",
            "conditions": [{"type": "Ready", "status": state, "reason": reason, "message": reason,
                            "lastTransitionTime": "2026-01-01T00:00:00Z"}]}


def between_read_and_write(monkeypatch, store, rtype, name, write):
    """Make ``write()`` happen in full just after the next read of ``name`` by the deleter returns."""
    original = store.get
    done = []

    def get(rtype_, namespace, name_, shared=False):
        obj = original(rtype_, namespace, name_, shared=shared)
        if rtype_ is rtype and name_ == name and not done:
            done.append(True)
            write()
        return obj
    monkeypatch.setattr(store, "get", get)
    return done


def claim_health_events(store, rtype, name, since):
    out = []
    for _rev, event_type, kind, obj in store.events_after(since):
        if kind is rtype and obj["metadata"]["name"] == name:
            devices = (obj.get("status") or {}).get("devices") or []
            out.append((event_type, [c["status"] for d in devices for c in d.get("conditions") or []],
                        bool(obj["metadata"].get("deletionTimestamp"))))
    return out


def test_claim_deletion_keeps_the_drivers_health_write(lab, monkeypatch):
    """The garbage collector's deletion of a claim (finalizer: only deletionTimestamp) while the DRA driver
    writes Ready=True: the stored claim is terminating and Ready=True, and the watch saw False, True, True."""
    server = lab.server
    api, store = server.api, server.store
    claims = server.registry.get("resource.k8s.io", "v1", "resourceclaims")
    claim = api.create(claims, NS, {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                                    "metadata": {"name": "held", "namespace": NS, "finalizers": [FINALIZER]},
                                    "spec": {"devices": {"requests": []}}})
    claim = write_status(api, claims, claim, {"devices": [ready("False", "DeviceUnhealthy")]}, "gpu.nvidia.com")
    since = int(claim["metadata"]["resourceVersion"]) - 1

    def driver_reports_healthy():  # the DRA driver's _device_status: the fault ended
        current = store.get(claims, NS, "held")
        write_status(api, claims, current, {"devices": [ready("True", "DeviceHealthy")]}, "gpu.nvidia.com")

    done = between_read_and_write(monkeypatch, store, claims, "held", driver_reports_healthy)
    api.delete(claims, NS, "held", {"propagationPolicy": "Background"})
    assert done, "the forced interleaving did not happen"
    monkeypatch.undo()

    stored = store.get(claims, NS, "held")
    assert stored["metadata"].get("deletionTimestamp"), stored["metadata"]
    assert stored["status"]["devices"] == [ready("True", "DeviceHealthy")], stored["status"]
    assert claim_health_events(store, claims, "held", since) == [
        ("MODIFIED", ["False"], False), ("MODIFIED", ["True"], False), ("MODIFIED", ["True"], True)]


def test_graceful_pod_deletion_keeps_the_kubelets_status_write(lab, monkeypatch):
    """A bound pod deleted with a grace period while the kubelet writes its allocatedResourcesStatus Healthy:
    the terminating pod keeps the kubelet's status."""
    server = lab.server
    api, store = server.api, server.store
    pods = server.registry.get("", "v1", "pods")
    pod = api.create(pods, NS, {"apiVersion": "v1", "kind": "Pod",
                                "metadata": {"name": "holder", "namespace": NS},
                                "spec": {"nodeName": "nowhere", "terminationGracePeriodSeconds": 30,
                                         "containers": [{"name": "main", "image": "busybox"}]}})

    def container_status(health):
        return {"phase": "Running", "containerStatuses": [{
            "name": "main", "image": "busybox", "ready": True, "restartCount": 0,
            "allocatedResourcesStatus": [{"name": "claim:gpu", "resources": [
                {"resourceID": "gpu.nvidia.com/gpu-1/gpu-0", "health": health}]}]}]}
    pod = write_status(api, pods, pod, container_status("Unhealthy"), "kubelet")

    def kubelet_reports_healthy():
        write_status(api, pods, store.get(pods, NS, "holder"), container_status("Healthy"), "kubelet")

    done = between_read_and_write(monkeypatch, store, pods, "holder", kubelet_reports_healthy)
    api.delete(pods, NS, "holder", {})
    assert done, "the forced interleaving did not happen"
    monkeypatch.undo()

    stored = store.get(pods, NS, "holder")
    assert stored["metadata"].get("deletionTimestamp") and stored["metadata"].get("deletionGracePeriodSeconds") == 30
    health = stored["status"]["containerStatuses"][0]["allocatedResourcesStatus"][0]["resources"][0]["health"]
    assert health == "Healthy", stored["status"]
    api.delete(pods, NS, "holder", {"gracePeriodSeconds": 0})  # forced: gone (no kubelet here to finalize it)


def test_namespace_deletion_still_marks_it_terminating(lab):
    """The deletion applied to the stored object keeps the deletion path's own change of a Namespace."""
    server = lab.server
    namespaces = server.registry.get("", "v1", "namespaces")
    server.api.create(namespaces, None, {"metadata": {"name": "going"}})
    deleted, _code = server.api.delete(namespaces, None, "going", {})
    assert deleted["metadata"].get("deletionTimestamp") and deleted["status"]["phase"] == "Terminating"
