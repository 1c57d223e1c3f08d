# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""kubelab.admission (ServiceAccount, Priority, DefaultTolerationSeconds) and what every namespace has.

Against a real etcd: one lab with controllers for the module, plus a controller-less API on the
same etcd where a test needs the ``default`` ServiceAccount to stay missing.
"""

from __future__ import annotations

import json
import re
import time

import pytest

from kubelab import testing
from kubelab.admission import TOKEN_MOUNT_PATH
from kubelab.controllers.namespaces import ROOT_CA_DESCRIPTION, root_ca_pem
from kubelab.errors import ApiError
from kubelab.server import LabServer
from kubelab.tls import generate_tls


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    cluster = testing.start_lab(str(tmp_path_factory.mktemp("admission")), "minimal")
    yield cluster
    testing.stop_lab(cluster)
    assert not cluster.server.controller_errors, cluster.server.controller_errors[:5]


def t(lab, plural):
    for rtype in lab.server.registry.all():
        if rtype.plural == plural:
            return rtype
    raise KeyError(plural)


def namespace(lab, name):
    api = lab.server.api
    api.create(t(lab, "namespaces"), None, {"metadata": {"name": name}})
    testing.wait_for(lambda: api.store.get_or_none(t(lab, "serviceaccounts"), name, "default"), 10, "default SA")
    return name


def pod(name, **spec):
    body = {"containers": [{"name": "c", "image": "busybox"}]}
    body.update(spec)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name} if name else {}, "spec": body}


def create_pod(lab, ns, body):
    return lab.server.api.create(t(lab, "pods"), ns, body)


def token_volumes(obj):
    return [v for v in obj["spec"].get("volumes") or [] if v["name"].startswith("kube-api-access-")]


# -- ServiceAccount admission --------------------------------------------------------------------

def test_pod_gets_default_sa_token_volume_priority_and_tolerations(lab):
    ns = namespace(lab, "adm-basic")
    created = create_pod(lab, ns, pod("p", initContainers=[{"name": "i", "image": "busybox"}]))
    spec = created["spec"]
    assert spec["serviceAccountName"] == spec["serviceAccount"] == "default"
    (volume,) = token_volumes(created)
    assert re.match(r"^kube-api-access-[bcdfghjklmnpqrstvwxz2456789]{5}$", volume["name"])
    assert volume["projected"] == {"defaultMode": 420, "sources": [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace",
                                    "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}
    for container in spec["containers"] + spec["initContainers"]:
        assert container["volumeMounts"] == [{"name": volume["name"], "readOnly": True, "mountPath": TOKEN_MOUNT_PATH}]
    assert spec["priority"] == 0 and spec["preemptionPolicy"] == "PreemptLowerPriority"
    assert spec["tolerations"] == [
        {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
        {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}]
    # what was stored is what was answered
    assert lab.server.api.get(t(lab, "pods"), ns, "p")["spec"] == spec


def test_missing_service_account_is_forbidden_and_nothing_is_stored(lab):
    ns = namespace(lab, "adm-missing")
    with pytest.raises(ApiError) as info:
        create_pod(lab, ns, pod("p", serviceAccountName="runner"))
    assert info.value.code == 403 and info.value.reason == "Forbidden"
    assert info.value.message == ('pods "p" is forbidden: error looking up service account adm-missing/runner: '
                                  'serviceaccount "runner" not found')
    assert info.value.details == {"name": "p", "kind": "pods"}
    assert lab.server.api.store.get_or_none(t(lab, "pods"), ns, "p") is None
    lab.server.api.create(t(lab, "serviceaccounts"), ns,
                          {"metadata": {"name": "runner"}, "imagePullSecrets": [{"name": "regcred"}]})
    created = create_pod(lab, ns, pod("p", serviceAccountName="runner"))
    assert created["spec"]["serviceAccount"] == "runner"
    assert created["spec"]["imagePullSecrets"] == [{"name": "regcred"}]
    # the deprecated serviceAccount names it when serviceAccountName is empty
    assert create_pod(lab, ns, pod("old", serviceAccount="runner"))["spec"]["serviceAccountName"] == "runner"
    # the pod's own pull secrets win over the SA's
    created = create_pod(lab, ns, pod("q", serviceAccountName="runner", imagePullSecrets=[{"name": "mine"}]))
    assert created["spec"]["imagePullSecrets"] == [{"name": "mine"}]


def test_default_service_account_lookup_is_retried_then_forbidden(lab, tmp_path):
    # A server without controllers on its own etcd: nobody creates the default SA (on the lab's etcd the
    # lab's ServiceAccounts controller could win the race within the lookup's retries).
    from kubelab.etcd import EtcdProcess  # pylint: disable=import-outside-toplevel
    etcd = EtcdProcess(workdir=str(tmp_path / "etcd")).start()
    bare = LabServer(etcd.client_url)
    try:
        bare.api.create(bare.registry.get("", "v1", "namespaces"), None, {"metadata": {"name": "adm-bare"}})
        started = time.monotonic()
        with pytest.raises(ApiError) as info:
            bare.api.create(bare.registry.get("", "v1", "pods"), "adm-bare", pod("p"))
        elapsed = time.monotonic() - started
    finally:
        bare.httpd.server_close()
        bare.store.close()
        etcd.stop()
    assert info.value.code == 403
    assert info.value.message == ('pods "p" is forbidden: error looking up service account adm-bare/default: '
                                  'serviceaccount "default" not found')
    assert 0.9 <= elapsed <= 4.0
    # with the controllers, the namespace gets its SA and the same pod is admitted
    namespace(lab, "adm-bare")
    testing.wait_for(lambda: lab.server.api.store.get_or_none(t(lab, "serviceaccounts"), "adm-bare", "default"), 10)
    assert create_pod(lab, "adm-bare", pod("p"))["spec"]["serviceAccountName"] == "default"


def test_generate_name_pods_are_named_in_the_error(lab):
    body = pod(None, serviceAccountName="absent")
    body["metadata"]["generateName"] = "gen-"
    with pytest.raises(ApiError) as info:
        create_pod(lab, "default", body)
    assert info.value.code == 403
    assert re.match(r'^pods "gen-[a-z0-9]*" is forbidden: error looking up service account default/absent',
                    info.value.message)


@pytest.mark.parametrize("pod_value,sa_value,mounted", [
    (None, None, True), (False, None, False), (None, False, False), (True, False, True), (False, True, False)])
def test_automount_pod_then_service_account(lab, pod_value, sa_value, mounted):
    ns = "adm-automount"
    if lab.server.api.store.get_or_none(t(lab, "namespaces"), None, ns) is None:
        namespace(lab, ns)
    name = "sa-%s" % str(sa_value).lower()
    if lab.server.api.store.get_or_none(t(lab, "serviceaccounts"), ns, name) is None:
        body = {"metadata": {"name": name}}
        if sa_value is not None:
            body["automountServiceAccountToken"] = sa_value
        lab.server.api.create(t(lab, "serviceaccounts"), ns, body)
    spec = {"serviceAccountName": name}
    if pod_value is not None:
        spec["automountServiceAccountToken"] = pod_value
    created = create_pod(lab, ns, pod("p-%s-%s" % (str(pod_value).lower(), str(sa_value).lower()), **spec))
    assert bool(token_volumes(created)) is mounted
    assert bool(created["spec"]["containers"][0].get("volumeMounts")) is mounted


def test_existing_mount_and_token_volume_are_kept(lab):
    own = {"name": "own", "mountPath": TOKEN_MOUNT_PATH}
    created = create_pod(lab, "default", pod("mounts", containers=[
        {"name": "a", "image": "x", "volumeMounts": [own]}, {"name": "b", "image": "x"}],
        volumes=[{"name": "own", "emptyDir": {}}]))
    containers = {c["name"]: c for c in created["spec"]["containers"]}
    assert containers["a"]["volumeMounts"] == [own]
    (volume,) = token_volumes(created)
    assert containers["b"]["volumeMounts"] == [{"name": volume["name"], "readOnly": True,
                                                "mountPath": TOKEN_MOUNT_PATH}]
    given = {"name": "kube-api-access-abcde", "emptyDir": {}}
    created = create_pod(lab, "default", pod("reuse", volumes=[given]))
    assert token_volumes(created) == [given]
    assert created["spec"]["containers"][0]["volumeMounts"][0]["name"] == "kube-api-access-abcde"
    # every container already mounts something there: no volume is added
    created = create_pod(lab, "default", pod("none", containers=[{"name": "a", "image": "x", "volumeMounts": [own]}],
                                             volumes=[{"name": "own", "emptyDir": {}}]))
    assert token_volumes(created) == []


def test_mirror_pods(lab):
    mirror = {"kubernetes.io/config.mirror": "hash"}
    body = pod("static-a", nodeName="worker-1")
    body["metadata"]["annotations"] = mirror
    created = create_pod(lab, "default", body)
    assert "serviceAccountName" not in created["spec"] and token_volumes(created) == []
    assert created["spec"]["priority"] == 0  # Priority and DefaultTolerationSeconds still apply
    for spec, why in (({"serviceAccountName": "default"}, "a mirror pod may not reference service accounts"),
                      ({"volumes": [{"name": "s", "secret": {"secretName": "x"}}]},
                       "a mirror pod may not reference secrets")):
        body = pod("static-b", **spec)
        body["metadata"]["annotations"] = mirror
        with pytest.raises(ApiError) as info:
            create_pod(lab, "default", body)
        assert info.value.code == 403 and info.value.message == 'pods "static-b" is forbidden: ' + why


def test_pod_updates_are_not_remounted(lab):
    created = create_pod(lab, "default", pod("upd", automountServiceAccountToken=False))
    body = json.loads(json.dumps(created))
    body["metadata"]["labels"] = {"x": "y"}
    for field in ("priority", "preemptionPolicy"):
        body["spec"].pop(field)
    updated, _code = lab.server.api.update(t(lab, "pods"), "default", "upd", body)
    assert token_volumes(updated) == []
    assert updated["spec"]["priority"] == 0 and updated["spec"]["preemptionPolicy"] == "PreemptLowerPriority"


# -- DefaultTolerationSeconds and Priority --------------------------------------------------------

@pytest.mark.parametrize("given,added", [
    ([], ["node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"]),
    ([{"operator": "Exists"}], []),
    ([{"key": "node.kubernetes.io/not-ready", "operator": "Exists"}], ["node.kubernetes.io/unreachable"]),
    ([{"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 5}],
     ["node.kubernetes.io/not-ready"]),
    ([{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoSchedule"}],
     ["node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"]),
])
def test_default_toleration_seconds(lab, request, given, added):
    name = "tol-" + re.sub(r"[^a-z0-9]+", "-", request.node.callspec.id.lower()).strip("-")[-40:]
    created = create_pod(lab, "default", pod(name.rstrip("-"), tolerations=given))
    tolerations = created["spec"]["tolerations"]
    assert tolerations[:len(given)] == given
    assert [(x["key"], x["effect"], x["tolerationSeconds"]) for x in tolerations[len(given):]] == \
        [(key, "NoExecute", 300) for key in added]


def test_priority_classes(lab):
    created = create_pod(lab, "default", pod("crit", priorityClassName="system-node-critical"))
    assert created["spec"]["priority"] == 2000001000 and created["spec"]["preemptionPolicy"] == "PreemptLowerPriority"
    created = create_pod(lab, "default", pod("crit2", priorityClassName="system-cluster-critical", priority=2000000000))
    assert created["spec"]["priority"] == 2000000000
    with pytest.raises(ApiError) as info:
        create_pod(lab, "default", pod("high", priorityClassName="high"))
    assert info.value.code == 403
    assert info.value.message == 'pods "high" is forbidden: no PriorityClass with name high was found'
    with pytest.raises(ApiError) as info:
        create_pod(lab, "default", pod("prio", priority=7))
    assert info.value.code == 403 and info.value.message == (
        'pods "prio" is forbidden: the integer value of priority (7) must not be provided in pod spec; priority '
        "admission controller computed 0 from the given PriorityClass name")


def test_pod_without_name_is_invalid(lab):
    with pytest.raises(ApiError) as info:
        create_pod(lab, "default", pod(None))
    assert info.value.code == 422
    assert info.value.message == 'Pod "" is invalid: metadata.name: Required value: name or generateName is required'
    assert info.value.details["causes"] == [{"reason": "FieldValueRequired", "field": "metadata.name",
                                             "message": "Required value: name or generateName is required"}]


# -- what every namespace has ----------------------------------------------------------------------

def test_every_namespace_has_default_sa_and_root_ca(lab):
    api = lab.server.api
    for ns in ("default", "kube-system", "kube-public", "kube-node-lease"):
        assert api.get(t(lab, "serviceaccounts"), ns, "default")
        cm = api.get(t(lab, "configmaps"), ns, "kube-root-ca.crt")
        assert cm["data"] == {"ca.crt": root_ca_pem(lab.server)}
        assert cm["metadata"]["annotations"] == {"kubernetes.io/description": ROOT_CA_DESCRIPTION}
        assert cm["data"]["ca.crt"].startswith("-----BEGIN CERTIFICATE-----")
    ns = namespace(lab, "adm-publish")
    testing.wait_for(lambda: api.store.get_or_none(t(lab, "configmaps"), ns, "kube-root-ca.crt"), 10, "root CA")
    # deleted: re-created; changed: repaired (other keys go, the annotation comes back, labels stay)
    api.delete(t(lab, "serviceaccounts"), ns, "default")
    testing.wait_for(lambda: api.store.get_or_none(t(lab, "serviceaccounts"), ns, "default"), 10, "SA re-created")
    cm = api.get(t(lab, "configmaps"), ns, "kube-root-ca.crt")
    cm["data"] = {"ca.crt": "tampered", "extra": "x"}
    cm["metadata"]["annotations"] = {}
    cm["metadata"]["labels"] = {"keep": "me"}
    api.update(t(lab, "configmaps"), ns, "kube-root-ca.crt", cm)

    def repaired_root_ca():
        current = api.get(t(lab, "configmaps"), ns, "kube-root-ca.crt")
        return current if current["data"] == {"ca.crt": root_ca_pem(lab.server)} else None

    repaired = testing.wait_for(repaired_root_ca, 10, "root CA repaired")
    assert repaired["metadata"]["annotations"]["kubernetes.io/description"] == ROOT_CA_DESCRIPTION
    assert repaired["metadata"]["labels"] == {"keep": "me"}
    api.delete(t(lab, "configmaps"), ns, "kube-root-ca.crt")
    testing.wait_for(lambda: api.store.get_or_none(t(lab, "configmaps"), ns, "kube-root-ca.crt"), 10, "re-created")


def test_root_ca_is_generated_once_or_the_serving_ca(lab, tmp_path):
    first = root_ca_pem(lab.server)
    again = LabServer(lab.etcd.client_url)  # a restart on the same etcd publishes the same CA
    try:
        assert root_ca_pem(again) == first
        files = generate_tls(str(tmp_path / "tls"))
        again.tls = files.server_pair
        assert root_ca_pem(again) == files.ca_pem.decode()
        again.ca_pem = b"given"
        assert root_ca_pem(again) == "given"
    finally:
        again.httpd.server_close()


def test_kubernetes_service_and_endpoints(lab):
    api = lab.server.api
    port = lab.server.httpd.server_address[1]
    svc = api.get(t(lab, "services"), "default", "kubernetes")
    assert svc["metadata"]["labels"] == {"component": "apiserver", "provider": "kubernetes"}
    assert svc["spec"]["clusterIP"] == "10.96.0.1" and svc["spec"]["type"] == "ClusterIP"
    assert svc["spec"]["ports"] == [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": port}]
    assert "selector" not in svc["spec"]
    ep = api.get(t(lab, "endpoints"), "default", "kubernetes")
    assert ep["subsets"] == [{"addresses": [{"ip": "127.0.0.1"}], "ports": [{"name": "https", "port": port,
                                                                             "protocol": "TCP"}]}]
    api.delete(t(lab, "endpoints"), "default", "kubernetes")
    testing.wait_for(lambda: api.store.get_or_none(t(lab, "endpoints"), "default", "kubernetes"), 15, "endpoints back")


def test_scenario_pods_pass_admission_before_controllers_start(tmp_path):
    from kubelab.controllers.all import install
    from kubelab.etcd import EtcdProcess
    with EtcdProcess(workdir=str(tmp_path / "etcd")) as etcd:
        scenario = {"namespaces": ["apps"], "objects": [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "late"}},
            dict(pod("in-apps"), metadata={"name": "in-apps", "namespace": "apps"}),
            dict(pod("in-late"), metadata={"name": "in-late", "namespace": "late"})]}
        server = LabServer(etcd.client_url, scenario=scenario)
        install(server)
        server.apply_scenario()  # what start() does first, before any controller runs
        try:
            for ns, name in (("apps", "in-apps"), ("late", "in-late")):
                created = server.api.get(server.registry.get("", "v1", "pods"), ns, name)
                assert token_volumes(created)
                assert server.api.get(server.registry.get("", "v1", "configmaps"), ns, "kube-root-ca.crt")
        finally:
            server.httpd.server_close()


# -- controllers meet refusals -------------------------------------------------------------------

def _events(lab, ns, kind, name):
    return [e for e in lab.server.api.list(t(lab, "events"), ns)["items"] if e["reason"] == "FailedCreate"
            and e["involvedObject"]["kind"] == kind and e["involvedObject"]["name"] == name]


def _template(sa, labels):
    return {"metadata": {"labels": labels},
            "spec": {"serviceAccountName": sa, "containers": [{"name": "c", "image": "busybox"}]}}


def test_replicaset_failed_create_condition_event_and_recovery(lab):
    api = lab.server.api
    ns = namespace(lab, "adm-rs")
    api.create(t(lab, "replicasets"), ns, {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web"},
                                           "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                                                    "template": _template("gone", {"app": "web"})}})
    events = testing.wait_for(lambda: _events(lab, ns, "ReplicaSet", "web"), 15, "FailedCreate event")
    assert events[0]["type"] == "Warning" and events[0]["source"] == {"component": "replicaset-controller"}
    assert re.match(r'^Error creating: pods "web-[a-z0-9-]*" is forbidden: error looking up service account '
                    r'adm-rs/gone: serviceaccount "gone" not found$', events[0]["message"])

    def replica_failure(present):
        current = api.get(t(lab, "replicasets"), ns, "web")
        failing = any(c["type"] == "ReplicaFailure" for c in current.get("status", {}).get("conditions", []))
        return current if failing == present else None

    rs = testing.wait_for(lambda: replica_failure(True), 15, "ReplicaFailure")
    (cond,) = [c for c in rs["status"]["conditions"] if c["type"] == "ReplicaFailure"]
    assert cond["status"] == "True" and cond["reason"] == "FailedCreate" and "is forbidden" in cond["message"]
    assert cond["lastTransitionTime"]
    api.create(t(lab, "serviceaccounts"), ns, {"metadata": {"name": "gone"}})
    testing.wait_for(lambda: len(api.list(t(lab, "pods"), ns, "app=web")["items"]) == 2, 20, "pods created")
    rs = testing.wait_for(lambda: replica_failure(False), 15, "ReplicaFailure removed")
    for item in api.list(t(lab, "pods"), ns, "app=web")["items"]:
        assert item["metadata"]["generateName"] == "web-" and item["metadata"]["name"].startswith("web-")
    assert lab.server.controller_errors == []


def test_job_statefulset_daemonset_refusals_are_events(lab):
    api = lab.server.api
    ns = namespace(lab, "adm-sets")
    api.create(t(lab, "jobs"), ns, {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "once"},
                                    "spec": {"template": dict(_template("nobody", {"app": "once"}),
                                                              spec=dict(_template("nobody", {})["spec"],
                                                                        restartPolicy="Never"))}})
    api.create(t(lab, "statefulsets"), ns, {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
                                            "spec": {"replicas": 1, "serviceName": "db",
                                                     "selector": {"matchLabels": {"app": "db"}},
                                                     "template": _template("nobody", {"app": "db"})}})
    api.create(t(lab, "daemonsets"), ns, {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent"},
                                          "spec": {"selector": {"matchLabels": {"app": "agent"}},
                                                   "template": _template("nobody", {"app": "agent"})}})
    job_event = testing.wait_for(lambda: _events(lab, ns, "Job", "once"), 15, "Job FailedCreate")[0]
    assert job_event["source"] == {"component": "job-controller"}
    assert job_event["message"].startswith('Error creating: pods "once-')
    sts_event = testing.wait_for(lambda: _events(lab, ns, "StatefulSet", "db"), 15, "StatefulSet FailedCreate")[0]
    assert sts_event["message"] == ('create Pod db-0 in StatefulSet db failed error: pods "db-0" is forbidden: error '
                                    'looking up service account adm-sets/nobody: serviceaccount "nobody" not found')
    # the retries (backed off) repeat the same Event: count and lastTimestamp move, no new Event
    testing.wait_for(lambda: (_events(lab, ns, "StatefulSet", "db") or [{}])[0].get("count", 0) >= 3, 20,
                     "the repeated refusal counted on the same Event")
    assert len(_events(lab, ns, "StatefulSet", "db")) == 1
    ds_event = testing.wait_for(lambda: _events(lab, ns, "DaemonSet", "agent"), 15, "DaemonSet FailedCreate")[0]
    assert ds_event["source"] == {"component": "daemonset-controller"}
    api.create(t(lab, "serviceaccounts"), ns, {"metadata": {"name": "nobody"}})
    for selector in ("app=once", "app=db", "app=agent"):
        testing.wait_for(lambda: api.list(t(lab, "pods"), ns, selector)["items"], 20, "pods for " + selector)
    assert lab.server.controller_errors == []
