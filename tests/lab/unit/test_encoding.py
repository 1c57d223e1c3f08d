# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""kubelab.encoding (the Go round trip: omitempty, Secret stringData) and its effect through the Api."""

from __future__ import annotations

import base64
import copy
import json

import pytest

from kubelab import encoding
from kubelab.api import Api
from kubelab.errors import ApiError
from kubelab.etcd import EtcdProcess
from kubelab.resources import Registry
from kubelab.store import Store

REGISTRY = Registry()


def rtype(group: str, plural: str):
    return REGISTRY.get(group, "v1", plural)


def test_empty_taints_and_nulls_disappear():
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n", "labels": {}, "annotations": None},
            "spec": {"taints": [], "podCIDR": None},
            "status": {"capacity": {}, "conditions": [], "nodeInfo": {"kubeletVersion": "v1.37.0"}}}
    encoding.normalize(rtype("", "nodes"), node)
    assert node == {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}, "spec": {},
                    "status": {"nodeInfo": {"kubeletVersion": "v1.37.0"}}}


def test_struct_fields_and_non_omitempty_slices_stay():
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "finalizers": []},
           "spec": {"containers": [{"name": "c", "image": "x", "resources": {}, "securityContext": {}, "args": [],
                                    "resources2": None}],
                    "securityContext": {}, "nodeSelector": {}, "tolerations": [],
                    "volumes": [{"name": "v", "emptyDir": {}}],
                    "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": []}}}},
           "status": {}}
    encoding.normalize(rtype("", "pods"), pod)
    assert pod["metadata"] == {"name": "p"}
    spec = pod["spec"]
    assert spec["containers"] == [{"name": "c", "image": "x", "resources": {}, "securityContext": {}}]
    assert spec["securityContext"] == {} and spec["volumes"] == [{"name": "v", "emptyDir": {}}]
    assert "nodeSelector" not in spec and "tolerations" not in spec
    required = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert required == {"nodeSelectorTerms": []}
    assert pod["status"] == {}
    empty = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "q"}, "spec": {"containers": []}}
    encoding.normalize(rtype("", "pods"), empty)
    assert empty["spec"] == {"containers": []}


def test_map_and_struct_selectors():
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {"selector": {}, "ports": []}}
    encoding.normalize(rtype("", "services"), svc)
    assert svc["spec"] == {}
    deploy = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
              "spec": {"selector": {"matchLabels": {}},
                       "template": {"metadata": {"labels": {}, "annotations": {}},
                                    "spec": {"containers": [{"name": "c", "image": "x",
                                                             "resources": {"limits": {}, "requests": {}}}]}}}}
    encoding.normalize(REGISTRY.get("apps", "v1", "deployments"), deploy)
    assert deploy["spec"]["selector"] == {}  # a LabelSelector struct: kept, its empty map goes
    assert deploy["spec"]["template"]["metadata"] == {}
    assert deploy["spec"]["template"]["spec"]["containers"][0]["resources"] == {}
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "r"},
            "rules": [{"apiGroups": [], "resources": ["pods"], "verbs": []}]}
    encoding.normalize(REGISTRY.get("rbac.authorization.k8s.io", "v1", "clusterroles"), role)
    assert role["rules"] == [{"resources": ["pods"], "verbs": []}]
    empty_role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "r"}, "rules": []}
    encoding.normalize(REGISTRY.get("rbac.authorization.k8s.io", "v1", "roles"), empty_role)
    assert empty_role["rules"] == []


def test_opaque_json_is_left_alone():
    fields = {"f:metadata": {"f:labels": {}}, "f:spec": {"f:taints": {}}}
    node = {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "n",
                         "managedFields": [{"manager": "m", "fieldsType": "FieldsV1", "fieldsV1": fields}]}}
    encoding.normalize(rtype("", "nodes"), node)
    assert node["metadata"]["managedFields"][0]["fieldsV1"] == fields
    crd_type = REGISTRY.get("apiextensions.k8s.io", "v1", "customresourcedefinitions")
    schema = {"type": "object", "properties": {}, "default": {}, "x-kubernetes-preserve-unknown-fields": True}
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "x"},
           "spec": {"versions": [{"name": "v1", "schema": {"openAPIV3Schema": copy.deepcopy(schema)}}]},
           "status": {"storedVersions": []}}
    encoding.normalize(crd_type, crd)
    assert crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"] == schema
    assert crd["status"]["storedVersions"] == []  # groups outside the checked ones keep their lists
    revision = {"apiVersion": "apps/v1", "kind": "ControllerRevision", "metadata": {"name": "r"},
                "data": {"spec": {"template": {"spec": {"tolerations": []}}}}, "revision": 1}
    encoding.normalize(REGISTRY.get("apps", "v1", "controllerrevisions"), revision)
    assert revision["data"] == {"spec": {"template": {"spec": {"tolerations": []}}}}


def test_secret_string_data_folded():
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
              "data": {"user": base64.b64encode(b"admin").decode(), "keep": "a2VlcA=="},
              "stringData": {"user": "administrator", "token": "ü-1"}}
    encoding.normalize(rtype("", "secrets"), secret)
    assert "stringData" not in secret
    assert secret["data"] == {"user": base64.b64encode(b"administrator").decode(), "keep": "a2VlcA==",
                              "token": base64.b64encode("ü-1".encode()).decode()}
    only = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "t"}, "stringData": {}, "data": {}}
    encoding.normalize(rtype("", "secrets"), only)
    assert only == {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "t"}}


def test_configmap_values_untouched():
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"empty": "", "list": "[]"}}
    encoding.normalize(rtype("", "configmaps"), cm)
    assert cm["data"] == {"empty": "", "list": "[]"}


# -- through the Api (a real etcd) ------------------------------------------------------------------

@pytest.fixture(scope="module")
def api():
    with EtcdProcess() as proc:
        store = Store(proc.client_url)
        lab_api = Api(store, Registry())
        try:
            lab_api.create(lab_api.ns_type, None,
                           {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}})
        except ApiError as exc:
            assert exc.code == 409
        try:  # the namespace controller's job in a full lab; ServiceAccount admission needs it
            lab_api.create(lab_api.registry.get("", "v1", "serviceaccounts"), "default",
                           {"apiVersion": "v1", "kind": "ServiceAccount",
                            "metadata": {"name": "default", "namespace": "default"}})
        except ApiError as exc:
            assert exc.code == 409
        yield lab_api


def test_node_taints_patched_empty_are_gone(api):
    nodes = api.registry.get("", "v1", "nodes")
    created = api.create(nodes, None, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "enc-1"},
                                       "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]}})
    assert created["spec"]["taints"]
    patched, _code = api.patch(nodes, None, "enc-1", "application/merge-patch+json", b'{"spec":{"taints":[]}}')
    assert "taints" not in patched["spec"]
    assert "taints" not in api.get(nodes, None, "enc-1")["spec"]
    again = api.create(nodes, None, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "enc-2"},
                                     "spec": {"taints": []}})
    assert "taints" not in again.get("spec", {})


def test_noop_patch_of_defaulted_object_keeps_resource_version(api):
    pods = api.pod_type
    created = api.create(pods, "default", {"apiVersion": "v1", "kind": "Pod",
                                           "metadata": {"name": "enc-p", "namespace": "default"},
                                           "spec": {"containers": [{"name": "c", "image": "nginx"}]}})
    ctr = created["spec"]["containers"][0]
    assert ctr["imagePullPolicy"] == "Always" and ctr["terminationMessagePath"] == "/dev/termination-log"
    assert created["status"]["qosClass"] == "BestEffort" and created["spec"]["enableServiceLinks"] is True
    rv = created["metadata"]["resourceVersion"]
    body = json.dumps({"spec": {"containers": [{"name": "c", "image": "nginx"}], "tolerations": []}}).encode()
    patched, _code = api.patch(pods, "default", "enc-p", "application/strategic-merge-patch+json", body)
    assert patched["metadata"]["resourceVersion"] == rv
    applied, _code = api.patch(pods, "default", "enc-p", "application/apply-patch+yaml",
                               b"apiVersion: v1\nkind: Pod\nmetadata: {name: enc-p, namespace: default}\n"
                               b"spec: {containers: [{name: c, image: nginx}]}\n", field_manager="enc")
    replaced, _code = api.update(pods, "default", "enc-p", applied)
    assert replaced["metadata"]["resourceVersion"] == applied["metadata"]["resourceVersion"]


def test_secret_string_data_through_api(api):
    secrets = api.registry.get("", "v1", "secrets")
    created = api.create(secrets, "default", {"apiVersion": "v1", "kind": "Secret",
                                              "metadata": {"name": "enc-s", "namespace": "default"},
                                              "stringData": {"password": "hunter2"}})
    assert created["data"] == {"password": base64.b64encode(b"hunter2").decode()} and created["type"] == "Opaque"
    assert "stringData" not in created and "stringData" not in api.get(secrets, "default", "enc-s")


def test_service_gets_cluster_ip_once(api):
    services = api.registry.get("", "v1", "services")
    created = api.create(services, "default", {"apiVersion": "v1", "kind": "Service",
                                               "metadata": {"name": "enc-svc", "namespace": "default"},
                                               "spec": {"selector": {"app": "x"}, "ports": [{"port": 80}]}})
    ip = created["spec"]["clusterIP"]
    assert created["spec"]["clusterIPs"] == [ip] and created["spec"]["ports"][0]["targetPort"] == 80
    patched, _code = api.patch(services, "default", "enc-svc", "application/merge-patch+json",
                               b'{"metadata":{"labels":{"a":"b"}}}')
    assert patched["spec"]["clusterIP"] == ip
