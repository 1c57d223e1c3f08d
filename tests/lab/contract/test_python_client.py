# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Contract: the kubernetes Python client 37 (typed and dynamic) against the lab."""

from __future__ import annotations

import threading

import pytest
from kubernetes import client, config, dynamic, watch
from kubernetes.client.rest import ApiException


@pytest.fixture(scope="module")
def api_client(lab):
    return config.new_client_from_config(config_file=lab.kubeconfig)


def test_version_and_typed_nodes(api_client):
    info = client.VersionApi(api_client).get_code()
    assert (info.major, info.minor) == ("1", "37")
    nodes = client.CoreV1Api(api_client).list_node()
    assert {n.metadata.name for n in nodes.items} == {"cp-1", "worker-1", "worker-2"}
    assert all(n.status.node_info.kubelet_version for n in nodes.items)


def test_crud_status_codes(api_client):
    core = client.CoreV1Api(api_client)
    body = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="pc", labels={"tier": "front"}), data={"a": "1"})
    created = core.create_namespaced_config_map("default", body)
    assert created.metadata.uid and created.metadata.resource_version
    with pytest.raises(ApiException) as exc:
        core.create_namespaced_config_map("default", body)
    assert exc.value.status == 409
    created.data = {"a": "2"}
    replaced = core.replace_namespaced_config_map("pc", "default", created)
    assert int(replaced.metadata.resource_version) > int(created.metadata.resource_version)
    stale = created
    stale.data = {"a": "3"}
    with pytest.raises(ApiException) as exc:
        core.replace_namespaced_config_map("pc", "default", stale)
    assert exc.value.status == 409
    assert "the object has been modified" in exc.value.body
    with pytest.raises(ApiException) as exc:
        core.read_namespaced_config_map("missing", "default")
    assert exc.value.status == 404
    with pytest.raises(ApiException) as exc:
        core.create_namespaced_config_map("nope", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="x")))
    assert exc.value.status == 404
    core.delete_namespaced_config_map("pc", "default")
    with pytest.raises(ApiException) as exc:
        core.read_namespaced_config_map("pc", "default")
    assert exc.value.status == 404


def test_label_and_field_selectors_across_namespaces(api_client):
    core = client.CoreV1Api(api_client)
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name="sel")))
    for ns, name, tier in (("default", "s1", "front"), ("sel", "s2", "back"), ("sel", "s3", "db")):
        core.create_namespaced_config_map(ns, client.V1ConfigMap(
            metadata=client.V1ObjectMeta(name=name, labels={"sel": "yes", "tier": tier})))
    found = core.list_config_map_for_all_namespaces(label_selector="sel=yes,tier in (front, back)")
    assert sorted(i.metadata.name for i in found.items) == ["s1", "s2"]
    found = core.list_config_map_for_all_namespaces(label_selector="sel,tier notin (front)")
    assert sorted(i.metadata.name for i in found.items) == ["s2", "s3"]
    found = core.list_config_map_for_all_namespaces(field_selector="metadata.name=s3")
    assert [(i.metadata.namespace, i.metadata.name) for i in found.items] == [("sel", "s3")]
    with pytest.raises(ApiException) as exc:
        core.list_config_map_for_all_namespaces(field_selector="data.x=1")
    assert exc.value.status == 400


def test_watch_resumes_from_resource_version(api_client):
    core = client.CoreV1Api(api_client)
    start = core.list_namespaced_config_map("default").metadata.resource_version
    core.create_namespaced_config_map("default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="w1")))
    core.create_namespaced_config_map("default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="w2")))
    core.delete_namespaced_config_map("w1", "default")
    seen = []
    stream = watch.Watch()
    for event in stream.stream(core.list_namespaced_config_map, "default", resource_version=start, timeout_seconds=5):
        seen.append((event["type"], event["object"].metadata.name))
        if len(seen) == 3:
            stream.stop()
    assert seen == [("ADDED", "w1"), ("ADDED", "w2"), ("DELETED", "w1")]


def test_watch_sees_live_changes(api_client):
    core = client.CoreV1Api(api_client)
    rv = core.list_namespaced_config_map("default").metadata.resource_version
    seen = []

    def consume():
        stream = watch.Watch()
        for event in stream.stream(core.list_namespaced_config_map, "default", resource_version=rv,
                                   label_selector="live=1", timeout_seconds=10):
            seen.append(event["type"])
            if event["type"] == "DELETED":
                stream.stop()

    thread = threading.Thread(target=consume)
    thread.start()
    core.create_namespaced_config_map("default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="live", labels={"live": "1"})))
    core.patch_namespaced_config_map("live", "default", {"data": {"x": "y"}})
    core.create_namespaced_config_map("default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="other")))
    core.delete_namespaced_config_map("live", "default")
    thread.join(15)
    assert seen == ["ADDED", "MODIFIED", "DELETED"]


def test_expired_resource_version_is_410(lab, api_client, tmp_path):
    """A second API server on the same etcd starts its watch log at the current revision: a watch
    from an older resourceVersion gets the 410 Expired that client-go and this client handle."""
    from kubelab.kubeconfig import write_kubeconfig
    from kubelab.server import LabServer
    core = client.CoreV1Api(api_client)
    old_rv = core.list_namespaced_config_map("default").metadata.resource_version
    core.create_namespaced_config_map("default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="before-restart")))
    second = LabServer(lab.etcd.client_url).start()
    try:
        other = config.new_client_from_config(config_file=write_kubeconfig(str(tmp_path / "kc"), second.url))
        other_core = client.CoreV1Api(other)
        assert other_core.read_namespaced_config_map("before-restart", "default").metadata.name == "before-restart"
        with pytest.raises(ApiException) as exc:
            list(watch.Watch().stream(other_core.list_namespaced_config_map, "default", resource_version=old_rv,
                                      timeout_seconds=2))
        assert exc.value.status == 410
    finally:
        second.stop()


def test_dynamic_client_and_crd(api_client):
    dyn = dynamic.DynamicClient(api_client)
    crds = dyn.resources.get(api_version="apiextensions.k8s.io/v1", kind="CustomResourceDefinition")
    crds.create(body={
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                 "versions": [{"name": "v1", "served": True, "storage": True,
                               "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}})
    dyn.resources.invalidate_cache()
    widgets = dyn.resources.get(api_version="example.com/v1", kind="Widget")
    widgets.create(namespace="default", body={"apiVersion": "example.com/v1", "kind": "Widget",
                                              "metadata": {"name": "w"}, "spec": {"size": 3}})
    assert widgets.get(namespace="default", name="w").spec.size == 3
    crd = crds.get(name="widgets.example.com")
    assert any(c.type == "Established" and c.status == "True" for c in crd.status.conditions)


def test_scale_and_status_subresources(api_client):
    apps = client.AppsV1Api(api_client)
    apps.create_namespaced_deployment("default", {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "scaled"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "scaled"}},
                 "template": {"metadata": {"labels": {"app": "scaled"}},
                              "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}}}})
    scale = apps.read_namespaced_deployment_scale("scaled", "default")
    assert scale.spec.replicas == 1
    apps.patch_namespaced_deployment_scale("scaled", "default", {"spec": {"replicas": 2}})
    assert apps.read_namespaced_deployment("scaled", "default").spec.replicas == 2
    # A write to the main resource does not change status; the status subresource does.
    import time
    deadline = time.monotonic() + 30
    while (getattr(apps.read_namespaced_deployment("scaled", "default").status, "replicas", None) or 0) != 2:
        assert time.monotonic() < deadline, "the deployment controller never reported 2 replicas"
        time.sleep(0.2)
    dep = apps.read_namespaced_deployment("scaled", "default")
    generation = dep.metadata.generation
    apps.patch_namespaced_deployment("scaled", "default", {"status": {"replicas": 99}})
    after = apps.read_namespaced_deployment("scaled", "default")
    assert after.status.replicas == 2 and after.metadata.generation == generation
    # The /status subresource writes status (the controller may overwrite it later) and not spec.
    written = apps.patch_namespaced_deployment_status("scaled", "default",
                                                      {"status": {"observedGeneration": 1000}, "spec": {"replicas": 7}})
    assert written.status.observed_generation == 1000
    assert written.spec.replicas == 2 and written.metadata.generation == generation


def _pod(name, labels, node="worker-1"):
    return client.V1Pod(metadata=client.V1ObjectMeta(name=name, labels=labels),
                        spec=client.V1PodSpec(node_name=node, containers=[client.V1Container(name="c", image="busybox:1.36")]))


def _wait_pdb(policy, name, allowed, timeout=30.0):
    import time
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = policy.read_namespaced_pod_disruption_budget(name, "default").status
        if status is not None and status.disruptions_allowed == allowed and status.current_healthy is not None:
            return status
        time.sleep(0.2)
    raise AssertionError("PDB %s never allowed %d disruptions" % (name, allowed))


def test_eviction_201_429_500(api_client):
    core, policy = client.CoreV1Api(api_client), client.PolicyV1Api(api_client)
    for i in range(2):
        core.create_namespaced_pod("default", _pod("ev-%d" % i, {"ev": "yes"}))
    policy.create_namespaced_pod_disruption_budget("default", client.V1PodDisruptionBudget(
        metadata=client.V1ObjectMeta(name="ev"), spec=client.V1PodDisruptionBudgetSpec(
            min_available=1, selector=client.V1LabelSelector(match_labels={"ev": "yes"}))))
    _wait_pdb(policy, "ev", 1)
    eviction = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "ev-0", "namespace": "default"}}
    core.create_namespaced_pod_eviction("ev-0", "default", eviction)  # 201 (None from the typed client)
    with pytest.raises(ApiException) as exc:
        core.create_namespaced_pod_eviction("ev-1", "default", dict(eviction, metadata={"name": "ev-1", "namespace": "default"}))
    assert exc.value.status == 429 and "disruption budget" in exc.value.body
    policy.create_namespaced_pod_disruption_budget("default", client.V1PodDisruptionBudget(
        metadata=client.V1ObjectMeta(name="ev-second"), spec=client.V1PodDisruptionBudgetSpec(
            max_unavailable=1, selector=client.V1LabelSelector(match_labels={"ev": "yes"}))))
    with pytest.raises(ApiException) as exc:
        core.create_namespaced_pod_eviction("ev-1", "default", dict(eviction, metadata={"name": "ev-1", "namespace": "default"}))
    assert exc.value.status == 500 and "more than one PodDisruptionBudget" in exc.value.body


def test_objects_live_in_etcd_under_registry(lab, api_client):
    """kube-apiserver's layout: /registry/<resource>/<namespace>/<name>, resourceVersion = mod_revision."""
    import json as _json
    from kubelab.etcd import client as etcd_client
    core = client.CoreV1Api(api_client)
    created = core.create_namespaced_config_map("default", client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name="in-etcd"), data={"k": "v"}))
    etcd = etcd_client(lab.etcd.client_url)
    [(value, meta)] = etcd.get("/registry/configmaps/default/in-etcd", metadata=True)
    stored = _json.loads(value)
    assert stored["data"] == {"k": "v"} and stored["metadata"]["uid"] == created.metadata.uid
    assert str(meta["mod_revision"]) == created.metadata.resource_version
    assert etcd.get("/registry/minions/worker-1"), "nodes are kept under /registry/minions as in kube-apiserver"


def test_binding_subresource(api_client):
    """POST pods/{name}/binding (what kube-scheduler sends): nodeName, the binding's annotations and the
    PodScheduled condition in one write; a second binding, a wrong UID or a bad target is refused."""
    core = client.CoreV1Api(api_client)
    pod = client.V1Pod(metadata=client.V1ObjectMeta(name="bind-me"), spec=client.V1PodSpec(
        scheduler_name="my-scheduler", containers=[client.V1Container(name="c", image="busybox:1.36")]))
    created = core.create_namespaced_pod("default", pod)
    assert not created.spec.node_name
    binding = {"apiVersion": "v1", "kind": "Binding",
               "metadata": {"name": "bind-me", "uid": created.metadata.uid, "annotations": {"bound-by": "test"}},
               "target": {"apiVersion": "v1", "kind": "Node", "name": "worker-2"}}
    with pytest.raises(ApiException) as exc:
        core.create_namespaced_pod_binding("bind-me", "default", dict(binding, metadata={"name": "bind-me", "uid": "x"}),
                                           _preload_content=False)
    assert exc.value.status == 409 and "UID in precondition" in exc.value.body
    with pytest.raises(ApiException) as exc:
        core.create_namespaced_pod_binding("bind-me", "default", dict(binding, target={"kind": "Pod", "name": "n"}),
                                           _preload_content=False)
    assert exc.value.status == 422 and "target.kind" in exc.value.body
    core.create_namespaced_pod_binding("bind-me", "default", binding, _preload_content=False)
    bound = core.read_namespaced_pod("bind-me", "default")
    assert bound.spec.node_name == "worker-2" and bound.metadata.annotations == {"bound-by": "test"}
    scheduled = [c for c in bound.status.conditions or [] if c.type == "PodScheduled"]
    assert [(c.status, bool(c.last_transition_time)) for c in scheduled] == [("True", True)]
    assert int(bound.metadata.resource_version) > int(created.metadata.resource_version)
    with pytest.raises(ApiException) as exc:
        core.create_namespaced_pod_binding("bind-me", "default", dict(binding, target={"name": "worker-1"}),
                                           _preload_content=False)
    assert exc.value.status == 409 and "already assigned to node" in exc.value.body
    core.delete_namespaced_pod("bind-me", "default", grace_period_seconds=0)
