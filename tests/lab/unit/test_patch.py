# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""PATCH flavours and managedFields of the lab cluster (kubelab.patch)."""

from __future__ import annotations

import copy
import json

import pytest

from kubelab.errors import ApiError
from kubelab.patch import (
    DEFAULT_MERGE_KEYS,
    GENERIC_INVALID_MESSAGE,
    MERGE_SET,
    PatchApplyError,
    apply_patch,
    check_resource_version,
    field_path_string,
    fields_v1,
    fields_v1_paths,
    json_equal,
    json_merge_patch,
    json_patch,
    manager_from_user_agent,
    manager_identifier,
    merge_patch_object,
    parse_bool_param,
    print_manager,
    strategic_merge_patch,
    update_managed_fields,
    validate_patch_options,
)

T0 = "2026-11-30T08:00:00Z"
T1 = "2026-11-30T09:00:00Z"

# ----------------------------------------------------------------------------------------------
# RFC 7386, appendix A

RFC7386 = [
    ({"a": "b"}, {"a": "c"}, {"a": "c"}),
    ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
    ({"a": "b"}, {"a": None}, {}),
    ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
    ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
    ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
    ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
    ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
    (["a", "b"], ["c", "d"], ["c", "d"]),
    ({"a": "b"}, ["c"], ["c"]),
    ({"a": "foo"}, None, None),
    ({"a": "foo"}, "bar", "bar"),
    ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
    ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
    ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
]


@pytest.mark.parametrize("target, patch, expected", RFC7386)
def test_json_merge_patch_rfc7386(target, patch, expected):
    before = copy.deepcopy(target)
    assert json_merge_patch(target, patch) == expected
    assert target == before


def test_merge_patch_object():
    node = {"kind": "Node", "metadata": {"name": "n", "labels": {"a": "1", "b": "2"}}, "spec": {"unschedulable": True}}
    patched = merge_patch_object(node, {"metadata": {"labels": {"a": None, "c": "3"}}, "spec": {"unschedulable": None}})
    assert patched == {"kind": "Node", "metadata": {"name": "n", "labels": {"b": "2", "c": "3"}}, "spec": {}}
    for bad in (None, [1], "x"):
        with pytest.raises(ApiError) as caught:
            merge_patch_object(node, bad)
        assert (caught.value.code, caught.value.message) == (400, "Invalid JSON Patch")


# ----------------------------------------------------------------------------------------------
# RFC 6902, appendix A

RFC6902 = [
    # A.1 .. A.16, minus A.13 (a JSON parsing matter)
    ({"foo": "bar"}, [{"op": "add", "path": "/baz", "value": "qux"}], {"baz": "qux", "foo": "bar"}),
    ({"foo": ["bar", "baz"]}, [{"op": "add", "path": "/foo/1", "value": "qux"}], {"foo": ["bar", "qux", "baz"]}),
    ({"baz": "qux", "foo": "bar"}, [{"op": "remove", "path": "/baz"}], {"foo": "bar"}),
    ({"foo": ["bar", "qux", "baz"]}, [{"op": "remove", "path": "/foo/1"}], {"foo": ["bar", "baz"]}),
    ({"baz": "qux", "foo": "bar"}, [{"op": "replace", "path": "/baz", "value": "boo"}], {"baz": "boo", "foo": "bar"}),
    ({"foo": {"bar": "baz", "waldo": "fred"}, "qux": {"corge": "grault"}},
     [{"op": "move", "from": "/foo/waldo", "path": "/qux/thud"}],
     {"foo": {"bar": "baz"}, "qux": {"corge": "grault", "thud": "fred"}}),
    ({"foo": ["all", "grass", "cows", "eat"]}, [{"op": "move", "from": "/foo/1", "path": "/foo/3"}],
     {"foo": ["all", "cows", "eat", "grass"]}),
    ({"baz": "qux", "foo": ["a", 2, "c"]},
     [{"op": "test", "path": "/baz", "value": "qux"}, {"op": "test", "path": "/foo/1", "value": 2}],
     {"baz": "qux", "foo": ["a", 2, "c"]}),
    ({"baz": "qux"}, [{"op": "test", "path": "/baz", "value": "bar"}], "testing value /baz failed: test failed"),
    ({"foo": "bar"}, [{"op": "add", "path": "/child", "value": {"grandchild": {}}}],
     {"foo": "bar", "child": {"grandchild": {}}}),
    ({"foo": "bar"}, [{"op": "add", "path": "/baz", "value": "qux", "xyz": 123}], {"foo": "bar", "baz": "qux"}),
    ({"foo": "bar"}, [{"op": "add", "path": "/baz/bat", "value": "qux"}],
     'add operation does not apply: doc is missing path: "/baz/bat": missing value'),
    ({"/": 9, "~1": 10}, [{"op": "test", "path": "/~01", "value": 10}], {"/": 9, "~1": 10}),
    ({"/": 9, "~1": 10}, [{"op": "test", "path": "/~01", "value": "10"}], "testing value /~01 failed: test failed"),
    ({"foo": ["bar"]}, [{"op": "add", "path": "/foo/-", "value": ["abc", "def"]}], {"foo": ["bar", ["abc", "def"]]}),
    # more
    ({"a": {"b": 1}}, [{"op": "copy", "from": "/a", "path": "/c"}], {"a": {"b": 1}, "c": {"b": 1}}),
    ({"a": 1}, [{"op": "replace", "path": "", "value": {"b": 2}}], {"b": 2}),
    ({"a": [1, 2]}, [{"op": "replace", "path": "/a/-", "value": 3}],
     "Unable to access invalid index: -: invalid index referenced"),
    ({"a": [1, 2]}, [{"op": "add", "path": "/a/3", "value": 3}],
     "Unable to access invalid index: 3: invalid index referenced"),
    ({"a": [1, 2]}, [{"op": "remove", "path": "/a/01"}], "Unable to access invalid index: 01: invalid index referenced"),
    ({"a": 1}, [{"op": "replace", "path": "/b", "value": 2}],
     "replace operation does not apply: doc is missing key: /b: missing value"),
    ({"a": 1}, [{"op": "remove", "path": "/b"}], "Unable to remove nonexistent key: b: missing value"),
    ({"a": {"b": 1}}, [{"op": "move", "from": "/a", "path": "/a/c"}],
     "move operation does not apply: cannot move /a into its child /a/c"),
    ({"a": 1}, [{"op": "frobnicate", "path": "/a"}], "Unexpected kind: frobnicate"),
    ({"a": 1}, [{"op": "add", "path": "/b"}], "add operation has no value: missing value"),
    ({"a": True}, [{"op": "test", "path": "/a", "value": 1}], "testing value /a failed: test failed"),
    ({"a": 1}, [{"op": "test", "path": "/a", "value": 1.0}], {"a": 1}),
    ({"a": 1}, [{"op": "test", "path": "/missing", "value": None}], {"a": 1}),
    # all or nothing: the first operation is undone by the failing test
    ({"a": 1}, [{"op": "replace", "path": "/a", "value": 2}, {"op": "test", "path": "/a", "value": 1}],
     "testing value /a failed: test failed"),
]


@pytest.mark.parametrize("target, ops, expected", RFC6902)
def test_json_patch(target, ops, expected):
    before = copy.deepcopy(target)
    if isinstance(expected, str):
        with pytest.raises(PatchApplyError) as caught:
            json_patch(target, ops)
        error = caught.value
        assert error.detail == expected
        # kube-apiserver: NewGenericServerResponse(422, ...) without causes
        assert error.code == 422
        assert error.status() == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                  "message": GENERIC_INVALID_MESSAGE, "reason": "Invalid", "code": 422}
    else:
        assert json_patch(target, ops) == expected
    assert target == before


@pytest.mark.parametrize("ops", [{"op": "add"}, "x", None])
def test_json_patch_not_a_list(ops):
    with pytest.raises(ApiError) as caught:
        json_patch({}, ops)
    assert caught.value.code == 400
    assert caught.value.message.startswith("json: cannot unmarshal ")


def test_json_patch_too_many_operations():
    with pytest.raises(ApiError) as caught:
        json_patch({}, [{"op": "test", "path": "", "value": {}}] * 10001)
    assert caught.value.code == 413


def _live_deployment():
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {
            "name": "web", "namespace": "demo", "uid": "u-1", "resourceVersion": "41", "generation": 1,
            "managedFields": [
                {"manager": "kubectl-client-side-apply", "operation": "Update", "apiVersion": "apps/v1",
                 "time": T0, "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:spec": {"f:replicas": {}}}},
            ],
        },
        "spec": {"replicas": 2},
    }


def test_kubectl_ssa_migration_json_patch():
    """``kubectl apply --server-side`` over a client-side-applied object: the managedFields swap."""
    live = _live_deployment()
    migrated = [{"manager": "kubectl", "operation": "Apply", "apiVersion": "apps/v1", "time": T1,
                 "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:replicas": {}}}}]
    ops = [{"op": "replace", "path": "/metadata/managedFields", "value": migrated},
           {"op": "replace", "path": "/metadata/resourceVersion", "value": "41"}]
    patched = json_patch(live, ops)
    assert patched["metadata"]["managedFields"] == migrated
    check_resource_version(live, patched, "apps", "deployments", "web")
    # the server then records the write: nothing but managedFields changed, so they stay as sent
    recorded = update_managed_fields(patched, "kubectl", "Update", old=live, now=T1)
    assert recorded["metadata"]["managedFields"] == migrated
    assert recorded["spec"] == live["spec"]

    stale = json_patch(live, [ops[0], {"op": "replace", "path": "/metadata/resourceVersion", "value": "40"}])
    with pytest.raises(ApiError) as caught:
        check_resource_version(live, stale, "apps", "deployments", "web")
    assert caught.value.code == 409
    assert caught.value.reason == "Conflict"
    assert caught.value.message == ('Operation cannot be fulfilled on deployments.apps "web": the object has been '
                                    'modified; please apply your changes to the latest version and try again')
    check_resource_version(live, {"metadata": {}}, "apps", "deployments", "web")
    check_resource_version(live, {"metadata": {"resourceVersion": ""}}, "apps", "deployments", "web")


# ----------------------------------------------------------------------------------------------
# strategic merge patch

NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-2", "labels": {"role": "gpu"}},
        "spec": {"podCIDR": "10.244.2.0/24", "taints": [{"key": "a", "effect": "NoSchedule"}]}}


def _container(name, image, **extra):
    item = {"name": name, "image": image, "terminationMessagePath": "/dev/termination-log",
            "imagePullPolicy": "IfNotPresent"}
    item.update(extra)
    return item


DEPLOYMENT = {
    "apiVersion": "apps/v1", "kind": "Deployment",
    "metadata": {"name": "web", "namespace": "demo", "finalizers": ["a.example/x", "b.example/y"],
                 "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "u-o"}],
                 "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"}},
    "spec": {
        "replicas": 2,
        "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {
                "containers": [
                    _container("web", "nginx:1.25", env=[{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                               ports=[{"containerPort": 80, "protocol": "TCP"}],
                               args=["--a", "--b"]),
                    _container("sidecar", "busybox:1"),
                ],
                "volumes": [{"name": "data", "emptyDir": {}}],
                "tolerations": [{"key": "x", "operator": "Exists"}],
            },
        },
    },
    "status": {"conditions": [{"type": "Available", "status": "True"}, {"type": "Progressing", "status": "True"}]},
}


def _containers(obj):
    return obj["spec"]["template"]["spec"]["containers"]


def test_cordon_uncordon():
    cordoned = strategic_merge_patch(NODE, {"spec": {"unschedulable": True}})
    assert cordoned["spec"] == {"podCIDR": "10.244.2.0/24", "taints": NODE["spec"]["taints"], "unschedulable": True}
    uncordoned = strategic_merge_patch(cordoned, {"spec": {"unschedulable": None}})
    assert uncordoned == NODE
    assert "unschedulable" not in NODE["spec"]


def test_kubectl_apply_set_element_order_changes_image_and_adds_container():
    patch = {"metadata": {"annotations": {"kubectl.kubernetes.io/last-applied-configuration": '{"new": true}'}},
             "spec": {"template": {"spec": {
                 "$setElementOrder/containers": [{"name": "web"}, {"name": "log"}, {"name": "sidecar"}],
                 "containers": [{"image": "nginx:1.27", "name": "web"}, {"image": "fluentbit:3", "name": "log"}]}}}}
    patched = strategic_merge_patch(DEPLOYMENT, patch)
    assert [c["name"] for c in _containers(patched)] == ["web", "log", "sidecar"]
    web = _containers(patched)[0]
    assert web["image"] == "nginx:1.27"
    assert web["terminationMessagePath"] == "/dev/termination-log"      # server-side defaults survive
    assert web["env"] == DEPLOYMENT["spec"]["template"]["spec"]["containers"][0]["env"]
    assert _containers(patched)[1] == {"image": "fluentbit:3", "name": "log"}
    assert patched["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] == '{"new": true}'
    assert _containers(DEPLOYMENT)[0]["image"] == "nginx:1.25"          # input untouched


def test_kubectl_apply_deletes_container_and_reorders():
    patch = {"spec": {"template": {"spec": {
        "$setElementOrder/containers": [{"name": "web"}],
        "containers": [{"$patch": "delete", "name": "sidecar"}]}}}}
    patched = strategic_merge_patch(DEPLOYMENT, patch)
    assert [c["name"] for c in _containers(patched)] == ["web"]

    reorder = {"spec": {"template": {"spec": {"$setElementOrder/containers": [{"name": "sidecar"}, {"name": "web"}]}}}}
    assert [c["name"] for c in _containers(strategic_merge_patch(DEPLOYMENT, reorder))] == ["sidecar", "web"]


def test_set_element_order_keeps_server_only_items_in_place():
    target = {"spec": {"containers": [{"name": "a"}, {"name": "injected"}, {"name": "b"}]}}
    patch = {"spec": {"$setElementOrder/containers": [{"name": "c"}, {"name": "a"}, {"name": "b"}],
                      "containers": [{"name": "c", "image": "x"}]}}
    patched = strategic_merge_patch(target, patch)
    assert [c["name"] for c in patched["spec"]["containers"]] == ["c", "a", "injected", "b"]


SMP_CASES = [
    # id, target, patch, expected
    ("env merged by name",
     {"spec": {"containers": [{"name": "w", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]}]}},
     {"spec": {"containers": [{"name": "w", "env": [{"name": "B", "value": "3"}, {"name": "C", "value": "4"}]}]}},
     {"spec": {"containers": [{"name": "w", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "3"}, {"name": "C", "value": "4"}]}]}}),
    ("env item deleted",
     {"spec": {"containers": [{"name": "w", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]}]}},
     {"spec": {"containers": [{"name": "w", "env": [{"$patch": "delete", "name": "A"}]}]}},
     {"spec": {"containers": [{"name": "w", "env": [{"name": "B", "value": "2"}]}]}}),
    ("ports merged by containerPort",
     {"spec": {"containers": [{"name": "w", "ports": [{"containerPort": 80, "name": "http"}]}]}},
     {"spec": {"containers": [{"name": "w", "ports": [{"containerPort": 80, "protocol": "TCP"}, {"containerPort": 443}]}]}},
     {"spec": {"containers": [{"name": "w", "ports": [{"containerPort": 80, "name": "http", "protocol": "TCP"}, {"containerPort": 443}]}]}}),
    ("volumeMounts by mountPath, args atomic",
     {"spec": {"containers": [{"name": "w", "args": ["a", "b"], "volumeMounts": [{"mountPath": "/d", "name": "d"}]}]}},
     {"spec": {"containers": [{"name": "w", "args": ["c"], "volumeMounts": [{"mountPath": "/d", "readOnly": True}]}]}},
     {"spec": {"containers": [{"name": "w", "args": ["c"],
                               "volumeMounts": [{"mountPath": "/d", "name": "d", "readOnly": True}]}]}}),
    ("tolerations replaced atomically",
     {"spec": {"tolerations": [{"key": "a", "operator": "Exists"}]}},
     {"spec": {"tolerations": [{"key": "b", "operator": "Exists"}]}},
     {"spec": {"tolerations": [{"key": "b", "operator": "Exists"}]}}),
    ("node taints replaced atomically (no patchStrategy on NodeSpec.Taints)",
     {"spec": {"taints": [{"key": "a", "effect": "NoSchedule"}, {"key": "b", "effect": "NoExecute"}]}},
     {"spec": {"taints": [{"key": "b", "effect": "NoExecute"}]}},
     {"spec": {"taints": [{"key": "b", "effect": "NoExecute"}]}}),
    ("imagePullSecrets by name",
     {"spec": {"template": {"spec": {"imagePullSecrets": [{"name": "a"}]}}}},
     {"spec": {"template": {"spec": {"imagePullSecrets": [{"name": "b"}]}}}},
     {"spec": {"template": {"spec": {"imagePullSecrets": [{"name": "a"}, {"name": "b"}]}}}}),
    ("cronjob pod template containers by name",
     {"spec": {"jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "a", "image": "1"}]}}}}}},
     {"spec": {"jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "a", "image": "2"}]}}}}}},
     {"spec": {"jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "a", "image": "2"}]}}}}}}),
    ("volumes with $retainKeys (emptyDir -> configMap)",
     {"spec": {"volumes": [{"name": "v", "emptyDir": {}}]}},
     {"spec": {"volumes": [{"$retainKeys": ["configMap", "name"], "configMap": {"name": "cm"}, "name": "v"}]}},
     {"spec": {"volumes": [{"name": "v", "configMap": {"name": "cm"}}]}}),
    ("deployment strategy $retainKeys",
     {"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}},
     {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate", "rollingUpdate": None}}},
     {"spec": {"strategy": {"type": "Recreate"}}}),
    ("status conditions by type",
     {"status": {"conditions": [{"type": "Ready", "status": "False"}, {"type": "Scheduled", "status": "True"}]}},
     {"status": {"conditions": [{"type": "Ready", "status": "True"}]}},
     {"status": {"conditions": [{"type": "Ready", "status": "True"}, {"type": "Scheduled", "status": "True"}]}}),
    ("ownerReferences by uid",
     {"metadata": {"ownerReferences": [{"uid": "1", "name": "a"}]}},
     {"metadata": {"ownerReferences": [{"uid": "1", "controller": True}, {"uid": "2", "name": "b"}]}},
     {"metadata": {"ownerReferences": [{"uid": "1", "name": "a", "controller": True}, {"uid": "2", "name": "b"}]}}),
    ("finalizers merged as a set",
     {"metadata": {"finalizers": ["a", "b"]}},
     {"metadata": {"finalizers": ["b", "c"]}},
     {"metadata": {"finalizers": ["a", "b", "c"]}}),
    ("finalizers: $deleteFromPrimitiveList and $setElementOrder",
     {"metadata": {"finalizers": ["a", "b", "c"]}},
     {"metadata": {"$setElementOrder/finalizers": ["c", "a"], "$deleteFromPrimitiveList/finalizers": ["b"]}},
     {"metadata": {"finalizers": ["c", "a"]}}),
    ("$patch: replace on a map",
     {"metadata": {"labels": {"a": "1", "b": "2"}}},
     {"metadata": {"labels": {"$patch": "replace", "c": "3"}}},
     {"metadata": {"labels": {"c": "3"}}}),
    ("$patch: delete on a map",
     {"spec": {"selector": {"a": "1"}, "type": "ClusterIP"}},
     {"spec": {"selector": {"$patch": "delete"}}},
     {"spec": {"selector": {}, "type": "ClusterIP"}}),
    ("$patch: replace in a keyed list",
     {"spec": {"containers": [{"name": "a", "image": "1"}, {"name": "b", "image": "2"}]}},
     {"spec": {"containers": [{"name": "c", "image": "3"}, {"$patch": "replace"}]}},
     {"spec": {"containers": [{"name": "c", "image": "3"}]}}),
    ("$patch: merge on a map is a plain merge",
     {"data": {"a": "1"}}, {"data": {"$patch": "merge", "b": "2"}}, {"data": {"a": "1", "b": "2"}}),
    ("null deletes a list", {"spec": {"containers": [{"name": "a"}]}}, {"spec": {"containers": None}}, {"spec": {}}),
    ("empty keyed list changes nothing",
     {"spec": {"containers": [{"name": "a"}]}}, {"spec": {"containers": []}}, {"spec": {"containers": [{"name": "a"}]}}),
    ("empty atomic list replaces", {"spec": {"tolerations": [{"key": "a"}]}}, {"spec": {"tolerations": []}},
     {"spec": {"tolerations": []}}),
    ("nulls and directives dropped where nothing was",
     {}, {"metadata": {"labels": {"a": None, "b": "1"}}, "spec": {"containers": [{"name": "a", "env": None}]}},
     {"metadata": {"labels": {"b": "1"}}, "spec": {"containers": [{"name": "a"}]}}),
    ("service ports by port", {"spec": {"ports": [{"port": 80, "targetPort": 8080}]}},
     {"spec": {"ports": [{"port": 80, "name": "http"}]}},
     {"spec": {"ports": [{"port": 80, "targetPort": 8080, "name": "http"}]}}),
    ("type change replaces", {"data": {"a": ["x"]}}, {"data": {"a": {"b": 1}}}, {"data": {"a": {"b": 1}}}),
]


@pytest.mark.parametrize("target, patch, expected", [case[1:] for case in SMP_CASES], ids=[c[0] for c in SMP_CASES])
def test_strategic_merge_patch(target, patch, expected):
    before, patch_before = copy.deepcopy(target), copy.deepcopy(patch)
    assert strategic_merge_patch(target, patch) == expected
    assert (target, patch) == (before, patch_before)


def test_strategic_merge_patch_full_definition_is_a_no_op():
    """kubernetes.core's idempotent second run: PATCH with the whole definition."""
    definition = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "demo"},
                  "data": {"a": "1"}}
    live = copy.deepcopy(definition)
    live["metadata"].update({"uid": "u", "resourceVersion": "7", "creationTimestamp": T0})
    assert strategic_merge_patch(live, definition) == live
    assert strategic_merge_patch(DEPLOYMENT, copy.deepcopy(DEPLOYMENT)) == DEPLOYMENT


def test_strategic_merge_patch_custom_merge_keys():
    table = dict(DEFAULT_MERGE_KEYS)
    table["spec.items"] = "id"
    table["spec.tags"] = MERGE_SET
    target = {"spec": {"items": [{"id": 1, "v": "a"}], "tags": ["x"]}}
    patch = {"spec": {"items": [{"id": 1, "w": "b"}, {"id": 2}], "tags": ["y", "x"]}}
    assert strategic_merge_patch(target, patch, table) == {"spec": {"items": [{"id": 1, "v": "a", "w": "b"}, {"id": 2}],
                                                                    "tags": ["x", "y"]}}
    assert strategic_merge_patch(target, patch, {}) == {"spec": {"items": [{"id": 1, "w": "b"}, {"id": 2}],
                                                                 "tags": ["y", "x"]}}


@pytest.mark.parametrize("patch, code, message", [
    ([{"spec": {}}], 400, "json: cannot unmarshal array into Go value of type map[string]interface {}"),
    ({"spec": {"$patch": "explode"}}, 500, 'unknown patch type: explode in map: {}'),
    ({"spec": {"containers": [{"$patch": "delete", "image": "x"}]}}, 500,
     'map: {"$patch": "delete", "image": "x"} does not contain declared merge key: name'),
    ({"spec": {"containers": [{"image": "x"}]}}, 500, 'map: {"image": "x"} does not contain declared merge key: name'),
    ({"spec": {"containers": [{"$patch": "merge"}]}}, 500, "merging lists cannot yet be specified in the patch"),
    ({"spec": {"strategy": {"$retainKeys": "type"}}}, 400, "invalid patch format of retainKeys"),
    ({"spec": {"$setElementOrder/containers": {"name": "a"}}}, 400, "invalid patch format of setElementOrder list"),
    ({"metadata": {"$deleteFromPrimitiveList/finalizers": "a"}}, 400, "invalid patch format of primitive list"),
    ({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate", "rollingUpdate": {"maxSurge": 1}}}}, 422,
     GENERIC_INVALID_MESSAGE),
])
def test_strategic_merge_patch_errors(patch, code, message):
    with pytest.raises(ApiError) as caught:
        strategic_merge_patch(DEPLOYMENT, patch)
    assert caught.value.code == code
    assert caught.value.message == message


# ----------------------------------------------------------------------------------------------
# server-side apply and managedFields

CONFIGMAP = {"apiVersion": "v1", "kind": "ConfigMap",
             "metadata": {"name": "tiny", "namespace": "demo", "labels": {"app": "tiny", "tier": "web"}},
             "data": {"a": "1", "b": "2"}}


def _entry(obj, manager, operation):
    found = [e for e in obj["metadata"].get("managedFields", []) if (e["manager"], e["operation"]) == (manager, operation)]
    assert len(found) <= 1
    return found[0] if found else None


def test_apply_creates():
    created = apply_patch(None, CONFIGMAP, "helm", force=False, now=T0)
    assert created["data"] == CONFIGMAP["data"]
    assert created["metadata"]["managedFields"] == [{
        "manager": "helm", "operation": "Apply", "apiVersion": "v1", "time": T0, "fieldsType": "FieldsV1",
        "fieldsV1": {"f:data": {"f:a": {}, "f:b": {}}, "f:metadata": {"f:labels": {"f:app": {}, "f:tier": {}}}},
    }]
    assert "managedFields" not in CONFIGMAP["metadata"]


def test_apply_keyed_lists_in_fields_v1():
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "demo"},
                  "spec": {"replicas": 1, "template": {"spec": {"containers": [
                      {"name": "web", "image": "nginx", "ports": [{"containerPort": 80}]}]}}}}
    created = apply_patch(None, deployment, "kubectl", now=T0)
    fields = created["metadata"]["managedFields"][0]["fieldsV1"]
    assert fields == {"f:spec": {"f:replicas": {}, "f:template": {"f:spec": {"f:containers": {
        'k:{"name":"web"}': {".": {}, "f:image": {}, "f:name": {}, "f:ports": {
            'k:{"containerPort":80}': {".": {}, "f:containerPort": {}}}}}}}}}
    assert fields_v1(fields_v1_paths(fields)) == fields


def test_apply_again_is_a_no_op():
    created = apply_patch(None, CONFIGMAP, "helm", now=T0)
    created["metadata"].update({"uid": "u", "resourceVersion": "5"})
    again = apply_patch(created, CONFIGMAP, "helm", force=True, now=T1)
    assert again == created


def test_apply_prunes_what_the_manager_no_longer_applies():
    created = apply_patch(None, CONFIGMAP, "helm", now=T0)
    smaller = copy.deepcopy(CONFIGMAP)
    del smaller["data"]["b"]
    del smaller["metadata"]["labels"]["tier"]
    smaller["data"]["c"] = "3"
    updated = apply_patch(created, smaller, "helm", now=T1)
    assert updated["data"] == {"a": "1", "c": "3"}
    assert updated["metadata"]["labels"] == {"app": "tiny"}
    entry = _entry(updated, "helm", "Apply")
    assert entry["time"] == T1
    assert entry["fieldsV1"] == {"f:data": {"f:a": {}, "f:c": {}}, "f:metadata": {"f:labels": {"f:app": {}}}}


def test_apply_keeps_fields_other_managers_own():
    created = apply_patch(None, CONFIGMAP, "helm", now=T0)
    # someone else (an Update) also sets data.b, to the same value: shared ownership
    shared = update_managed_fields(json_merge_patch(created, {"data": {"b": "2", "d": "4"}}), "kubectl-edit",
                                   old=created, now=T0)
    assert _entry(shared, "kubectl-edit", "Update")["fieldsV1"] == {"f:data": {"f:d": {}}}
    other = copy.deepcopy(shared)
    other["metadata"]["managedFields"].append({"manager": "other", "operation": "Apply", "apiVersion": "v1",
                                               "time": T0, "fieldsType": "FieldsV1",
                                               "fieldsV1": {"f:data": {"f:b": {}}}})
    smaller = copy.deepcopy(CONFIGMAP)
    del smaller["data"]["b"]
    updated = apply_patch(other, smaller, "helm", now=T1)
    assert updated["data"] == {"a": "1", "b": "2", "d": "4"}


def test_apply_prunes_list_items():
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                  "spec": {"template": {"spec": {"containers": [{"name": "a", "image": "1"},
                                                                {"name": "b", "image": "2"}]}}}}
    created = apply_patch(None, deployment, "kubectl", now=T0)
    created["spec"]["template"]["spec"]["containers"][1]["imagePullPolicy"] = "IfNotPresent"   # a default
    one = copy.deepcopy(deployment)
    del one["spec"]["template"]["spec"]["containers"][1]
    updated = apply_patch(created, one, "kubectl", now=T1)
    assert updated["spec"]["template"]["spec"]["containers"] == [{"name": "a", "image": "1"}]


def test_apply_takes_over_changed_fields():
    created = update_managed_fields(copy.deepcopy(CONFIGMAP), "OpenAPI-Generator", old=None, now=T0)
    assert _entry(created, "OpenAPI-Generator", "Update")["fieldsV1"] == {
        "f:data": {"f:a": {}, "f:b": {}}, "f:metadata": {"f:labels": {"f:app": {}, "f:tier": {}}}}
    applied = apply_patch(created, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "tiny"},
                                    "data": {"a": "9"}}, "ansible", force=True, now=T1)
    assert applied["data"] == {"a": "9", "b": "2"}
    assert _entry(applied, "OpenAPI-Generator", "Update")["fieldsV1"] == {
        "f:data": {"f:b": {}}, "f:metadata": {"f:labels": {"f:app": {}, "f:tier": {}}}}
    assert _entry(applied, "ansible", "Apply")["fieldsV1"] == {"f:data": {"f:a": {}}}


def test_apply_reset_fields_and_errors():
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                  "spec": {"replicas": 1}, "status": {"replicas": 5}}
    created = apply_patch(None, deployment, "kubectl", reset_fields=("status",), now=T0)
    assert "status" not in created
    with pytest.raises(ApiError) as caught:
        apply_patch(None, deployment, "")
    assert caught.value.code == 422
    assert caught.value.message == ('PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: '
                                    'is required for apply patch')
    with pytest.raises(ApiError) as caught:
        apply_patch(None, {"metadata": {"managedFields": []}}, "kubectl")
    assert (caught.value.code, caught.value.message) == (400, "metadata.managedFields must be nil")
    with pytest.raises(ApiError) as caught:
        apply_patch(None, ["x"], "kubectl")
    assert caught.value.code == 400


def test_validate_patch_options():
    validate_patch_options("application/strategic-merge-patch+json", None)
    validate_patch_options("application/apply-patch+yaml", "kubectl", force=False)
    with pytest.raises(ApiError) as caught:
        validate_patch_options("application/merge-patch+json", "x", force=True)
    assert caught.value.message == 'PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be specified ' \
                                   'for non-apply patch'


def test_update_managed_fields_records_changes_and_keeps_no_ops():
    created = update_managed_fields(copy.deepcopy(NODE), "kubelet", old=None, now=T0)
    entry = _entry(created, "kubelet", "Update")
    assert entry == {"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "time": T0,
                     "fieldsType": "FieldsV1", "fieldsV1": {
                         "f:metadata": {"f:labels": {"f:role": {}}},
                         "f:spec": {"f:podCIDR": {}, "f:taints": {}}}}
    # kubectl cordon without a fieldManager: the server names it after the User-Agent
    manager = manager_from_user_agent("kubectl/v1.37.1 (linux/amd64) kubernetes/abcdef")
    assert manager == "kubectl"
    cordoned = update_managed_fields(strategic_merge_patch(created, {"spec": {"unschedulable": True}}), manager,
                                     old=created, now=T1)
    assert _entry(cordoned, "kubelet", "Update") == entry
    assert _entry(cordoned, "kubectl", "Update")["fieldsV1"] == {"f:spec": {"f:unschedulable": {}}}
    # the same patch again changes nothing, managedFields included
    again = update_managed_fields(strategic_merge_patch(cordoned, {"spec": {"unschedulable": True}}), manager,
                                  old=cordoned, now="2026-12-01T00:00:00Z")
    assert again == cordoned
    # uncordon removes the field, and with it kubectl's only field: the entry goes
    uncordoned = update_managed_fields(strategic_merge_patch(cordoned, {"spec": {"unschedulable": None}}), manager,
                                       old=cordoned, now=T1)
    assert _entry(uncordoned, "kubectl", "Update") is None
    assert uncordoned["metadata"]["managedFields"] == created["metadata"]["managedFields"]


def test_update_managed_fields_sets_the_object_in_place():
    obj = copy.deepcopy(CONFIGMAP)
    returned = update_managed_fields(obj, "kubectl-create", "Update", None, now=T0)
    assert returned is obj
    assert obj["metadata"]["managedFields"][0]["manager"] == "kubectl-create"
    assert {k: v for k, v in obj.items() if k != "metadata"} == {k: v for k, v in CONFIGMAP.items() if k != "metadata"}


def test_update_managed_fields_reset_and_takeover():
    created = update_managed_fields(copy.deepcopy(CONFIGMAP), "a", old=None, now=T0)
    changed = update_managed_fields(json_merge_patch(created, {"data": {"a": "x"}}), "b", old=created, now=T1)
    assert _entry(changed, "a", "Update")["fieldsV1"] == {"f:data": {"f:b": {}},
                                                          "f:metadata": {"f:labels": {"f:app": {}, "f:tier": {}}}}
    assert _entry(changed, "b", "Update") == {"manager": "b", "operation": "Update", "apiVersion": "v1", "time": T1,
                                              "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:a": {}}}}
    reset = copy.deepcopy(changed)
    reset["metadata"]["managedFields"] = [{}]
    assert "managedFields" not in update_managed_fields(reset, "c", old=changed, now=T1)["metadata"]
    emptied = copy.deepcopy(changed)
    emptied["metadata"]["managedFields"] = []
    assert update_managed_fields(emptied, "c", old=changed, now=T1) == changed


def test_fields_v1_round_trip_and_json_equal():
    tree = {"f:metadata": {"f:finalizers": {'v:"a"': {}}, "f:labels": {".": {}, "f:app": {}}}}
    assert fields_v1_paths(tree) == {("f:metadata", "f:labels"), ("f:metadata", "f:labels", "f:app"),
                                     ("f:metadata", "f:finalizers", 'v:"a"')}
    assert fields_v1(fields_v1_paths(tree)) == tree
    assert json.dumps(fields_v1(fields_v1_paths(tree))) == json.dumps(tree)
    assert json_equal({"a": [1, 2.0]}, {"a": [1.0, 2]})
    assert not json_equal(True, 1)
    assert not json_equal({"a": None}, {})


# ----------------------------------------------------------------------------------------------
# server-side apply conflicts (structured-merge-diff merge.Updater, apiserver internal/conflict.go)

def _helm_deployment():
    """A Deployment Helm created with a plain create (field manager ``helm``, operation Update)."""
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment",
                  "metadata": {"name": "web", "namespace": "demo", "labels": {"app": "web"}},
                  "spec": {"replicas": 2, "template": {"spec": {"containers": [
                      {"name": "nginx", "image": "nginx:1.25"}, {"name": "sidecar", "image": "busybox:1"}]}}}}
    return update_managed_fields(deployment, "helm", old=None, now=T0)


def _apply_config(**spec):
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "demo"},
            "spec": spec}


def _conflict(live, config, manager="dra-gate"):
    with pytest.raises(ApiError) as caught:
        apply_patch(live, config, manager, now=T1)
    return caught.value


def test_apply_conflict_single_update_manager():
    live = _helm_deployment()
    error = _conflict(live, _apply_config(replicas=3))
    assert (error.code, error.reason) == (409, "Conflict")
    assert error.message == 'Apply failed with 1 conflict: conflict with "helm" using apps/v1: .spec.replicas'
    assert error.status()["details"] == {"causes": [{
        "reason": "FieldManagerConflict", "message": 'conflict with "helm" using apps/v1', "field": ".spec.replicas"}]}
    assert live == _helm_deployment()       # nothing changed


def test_apply_same_value_is_shared_ownership():
    live = _helm_deployment()
    shared = apply_patch(live, _apply_config(replicas=2), "dra-gate", now=T1)
    assert shared["spec"] == live["spec"]
    assert _entry(shared, "helm", "Update") == _entry(live, "helm", "Update")
    assert _entry(shared, "dra-gate", "Apply")["fieldsV1"] == {"f:spec": {"f:replicas": {}}}
    # the applier's own fields never conflict with itself
    mine = apply_patch(shared, _apply_config(replicas=2, paused=True), "dra-gate", now=T1)
    again = apply_patch(mine, _apply_config(replicas=2, paused=False), "dra-gate", now=T1)
    assert again["spec"]["paused"] is False
    # ... but a field both own does: the other manager still owns replicas
    error = _conflict(again, _apply_config(replicas=5, paused=False))
    assert error.message == 'Apply failed with 1 conflict: conflict with "helm" using apps/v1: .spec.replicas'


def test_apply_conflict_keyed_list_paths_and_force_takeover():
    live = _helm_deployment()
    config = _apply_config(replicas=4, template={"spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}]}})
    error = _conflict(live, config)
    assert error.message == ('Apply failed with 2 conflicts: conflicts with "helm" using apps/v1:\n'
                             '- .spec.replicas\n'
                             '- .spec.template.spec.containers[name="nginx"].image')
    assert [c["field"] for c in error.details["causes"]] == [
        ".spec.replicas", '.spec.template.spec.containers[name="nginx"].image']
    forced = apply_patch(live, config, "dra-gate", force=True, now=T1)
    assert forced["spec"]["replicas"] == 4
    assert forced["spec"]["template"]["spec"]["containers"] == [
        {"name": "nginx", "image": "nginx:1.27"}, {"name": "sidecar", "image": "busybox:1"}]
    helm = _entry(forced, "helm", "Update")
    assert helm["time"] == T0
    assert helm["fieldsV1"] == {
        "f:metadata": {"f:labels": {"f:app": {}}},      # no "." for maps: no schemas in the lab
        "f:spec": {"f:template": {"f:spec": {"f:containers": {
            'k:{"name":"nginx"}': {".": {}, "f:name": {}},
            'k:{"name":"sidecar"}': {".": {}, "f:image": {}, "f:name": {}}}}}}}
    assert _entry(forced, "dra-gate", "Apply")["fieldsV1"] == {"f:spec": {"f:replicas": {}, "f:template": {"f:spec": {
        "f:containers": {'k:{"name":"nginx"}': {".": {}, "f:image": {}, "f:name": {}}}}}}}
    # the taken fields now belong to dra-gate: applying them again does not conflict
    assert apply_patch(forced, config, "dra-gate", now=T1) == forced


def test_apply_conflicts_with_several_managers_sorted():
    live = _helm_deployment()
    labelled = update_managed_fields(json_merge_patch(live, {"metadata": {"labels": {"tier": "front"}}}),
                                     "kubectl-label", old=live, now=T1)
    applied = apply_patch(labelled, {"apiVersion": "apps/v1", "kind": "Deployment",
                                     "metadata": {"name": "web", "labels": {"owner": "a"}}}, "argo", now=T1)
    config = {"apiVersion": "apps/v1", "kind": "Deployment",
              "metadata": {"name": "web", "labels": {"app": "x", "tier": "back", "owner": "b"}},
              "spec": {"replicas": 9}}
    error = _conflict(applied, config)
    assert error.message == ('Apply failed with 4 conflicts: conflicts with "argo":\n'
                             '- .metadata.labels.owner\n'
                             'conflicts with "helm" using apps/v1:\n'
                             '- .metadata.labels.app\n'
                             '- .spec.replicas\n'
                             'conflicts with "kubectl-label" using apps/v1:\n'
                             '- .metadata.labels.tier')
    assert [(c["message"], c["field"]) for c in error.details["causes"]] == [
        ('conflict with "argo"', ".metadata.labels.owner"),
        ('conflict with "helm" using apps/v1', ".metadata.labels.app"),
        ('conflict with "helm" using apps/v1', ".spec.replicas"),
        ('conflict with "kubectl-label" using apps/v1', ".metadata.labels.tier")]
    forced = apply_patch(applied, config, "dra-gate", force=True, now=T1)
    assert _entry(forced, "argo", "Apply") is None           # emptied: dropped
    assert _entry(forced, "kubectl-label", "Update") is None
    assert forced["metadata"]["labels"] == {"app": "x", "tier": "back", "owner": "b"}


def test_apply_conflict_with_a_subresource_entry_and_own_update_entry():
    live = apply_patch(None, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
                              "data": {"a": "1"}}, "ctl", now=T0)
    live["metadata"]["managedFields"].append({"manager": "ctl", "operation": "Update", "apiVersion": "v1",
                                              "time": T0, "fieldsType": "FieldsV1", "subresource": "status",
                                              "fieldsV1": {"f:data": {"f:b": {}}}})
    live["data"]["b"] = "2"
    error = _conflict(live, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
                             "data": {"a": "1", "b": "3"}}, manager="ctl")
    assert error.message == ('Apply failed with 1 conflict: conflict with "ctl" with subresource "status" '
                             'using v1: .data.b')


def test_apply_conflict_set_items_and_added_fields():
    live = update_managed_fields({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "finalizers": ["a"]},
                                  "spec": {"tolerations": [{"key": "x"}]}}, "kubelet", old=None, now=T0)
    # an atomic list is one leaf; a set item the same on both sides is shared
    error = _conflict(live, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "finalizers": ["a"]},
                             "spec": {"tolerations": [{"key": "y"}]}})
    assert error.message == 'Apply failed with 1 conflict: conflict with "kubelet" using v1: .spec.tolerations'
    removed = copy.deepcopy(live)
    removed["metadata"]["managedFields"][0]["fieldsV1"]["f:metadata"]["f:finalizers"]['v:"b"'] = {}
    error = _conflict(removed, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "finalizers": ["b"]}})
    assert error.message == 'Apply failed with 1 conflict: conflict with "kubelet" using v1: .metadata.finalizers[="b"]'


def test_apply_before_first_apply():
    """A live object without managedFields: its fields belong to ``before-first-apply``."""
    live = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "resourceVersion": "3"},
            "data": {"a": "1", "b": "2"}}
    error = _conflict(live, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "9"}})
    assert error.message == 'Apply failed with 1 conflict: conflict with "before-first-apply" using v1: .data.a'
    forced = apply_patch(live, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
                                "data": {"a": "9"}}, "dra-gate", force=True, now=T1)
    assert _entry(forced, "before-first-apply", "Update") == {
        "manager": "before-first-apply", "operation": "Update", "apiVersion": "v1", "time": T1,
        "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:b": {}}}}


def test_apply_crd_versions_conflict_with_helm():
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "clusterpolicies.nvidia.com"},
           "spec": {"group": "nvidia.com", "scope": "Cluster",
                    "names": {"kind": "ClusterPolicy", "plural": "clusterpolicies"},
                    "versions": [{"name": "v1", "served": True, "storage": True,
                                  "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                                      "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}}}]}}
    live = update_managed_fields(copy.deepcopy(crd), "helm", old=None, now=T0)
    changed = copy.deepcopy(crd)
    changed["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["description"] = "new"
    changed["spec"]["versions"][0]["served"] = False
    error = _conflict(live, changed)
    assert error.message == ('Apply failed with 1 conflict: conflict with "helm" using apiextensions.k8s.io/v1: '
                             '.spec.versions[name="v1"].served')
    # a field helm never set (description) is added without conflict, helm's served is the conflict
    changed["spec"]["versions"][0]["served"] = True
    changed["spec"]["versions"].append({"name": "v2", "served": True, "storage": False})
    shared = apply_patch(live, changed, "dra-gate", now=T1)
    assert [v["name"] for v in shared["spec"]["versions"]] == ["v1", "v2"]
    assert _entry(shared, "helm", "Update") == _entry(live, "helm", "Update")


def test_apply_kubectl_last_applied_conflicts_are_allowed():
    """lastAppliedManager: ``kubectl`` may take fields the client-side annotation still matches."""
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}}
    live = copy.deepcopy(config)
    live["metadata"]["annotations"] = {"kubectl.kubernetes.io/last-applied-configuration": json.dumps(config)}
    live = update_managed_fields(live, "kubectl-client-side-apply", old=None, now=T0)
    changed = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "2"}}
    applied = apply_patch(live, changed, "kubectl", now=T1)
    assert applied["data"] == {"a": "2"}
    assert _entry(applied, "kubectl-client-side-apply", "Update")["fieldsV1"] == {"f:metadata": {"f:annotations": {
        "f:kubectl.kubernetes.io/last-applied-configuration": {}}}}
    # another manager name gets the conflict
    assert _conflict(live, changed, manager="other").message == (
        'Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using v1: .data.a')
    # a value changed since the annotation was written is not allowed
    drifted = update_managed_fields(json_merge_patch(live, {"data": {"a": "5"}}), "kubectl-edit", old=live, now=T0)
    assert _conflict(drifted, changed, manager="kubectl").message == (
        'Apply failed with 1 conflict: conflict with "kubectl-edit" using v1: .data.a')


def test_conflict_message_forms():
    assert print_manager({"manager": "helm", "operation": "Update", "apiVersion": "v1"}) == '"helm" using v1'
    assert print_manager({"manager": "helm", "operation": "Update", "apiVersion": "v1", "time": T0}) == \
        '"helm" using v1 at 2026-11-30T08:00:00Z'
    assert print_manager({"manager": "k", "operation": "Apply", "subresource": "status"}) == \
        '"k" with subresource "status"'
    assert manager_identifier({"manager": "k", "operation": "Apply", "apiVersion": "v1", "time": T0}) == \
        '{"manager":"k","operation":"Apply"}'
    assert field_path_string(("f:spec", "f:ports", 'k:{"port":80,"protocol":"TCP"}', "f:name")) == \
        '.spec.ports[port=80,protocol="TCP"].name'
    assert field_path_string(("f:metadata", "f:finalizers", 'v:"a\\"b"')) == '.metadata.finalizers[="a\\"b"]'
    assert field_path_string(("f:metadata", "f:labels", "f:app.kubernetes.io/name")) == \
        ".metadata.labels.app.kubernetes.io/name"
    assert [parse_bool_param(v) for v in (None, "", "true", "True", "1", "false", "False", "0", True, False)] == [
        False, True, True, True, True, False, False, False, True, False]


def test_apply_status_ownership():
    """The main resource ignores status (reset fields); an apply to ``/status`` meets status owners."""
    live = _helm_deployment()
    live["status"] = {"replicas": 2}
    live["metadata"]["managedFields"].append({
        "manager": "kube-controller-manager", "operation": "Update", "apiVersion": "apps/v1", "time": T0,
        "fieldsType": "FieldsV1", "subresource": "status", "fieldsV1": {"f:status": {"f:replicas": {}}}})
    config = _apply_config(replicas=2)
    config["status"] = {"replicas": 7}
    main = apply_patch(live, config, "dra-gate", reset_fields=("status",), now=T1)
    assert main["status"] == {"replicas": 2}
    assert _entry(main, "dra-gate", "Apply")["fieldsV1"] == {"f:spec": {"f:replicas": {}}}
    config["spec"]["replicas"] = 9          # ignored by a status apply: no conflict with helm
    error = _conflict_status(live, config)
    assert error.message == ('Apply failed with 1 conflict: conflict with "kube-controller-manager" with subresource '
                             '"status" using apps/v1: .status.replicas')
    forced = apply_patch(live, config, "dra-gate", force=True, subresource="status", now=T1)
    assert (forced["spec"]["replicas"], forced["status"]) == (2, {"replicas": 7})
    entry = [e for e in forced["metadata"]["managedFields"] if e["manager"] == "dra-gate"][0]
    assert (entry["subresource"], entry["fieldsV1"]) == ("status", {"f:status": {"f:replicas": {}}})
    assert _entry(forced, "kube-controller-manager", "Update") is None


def _conflict_status(live, config):
    with pytest.raises(ApiError) as caught:
        apply_patch(live, config, "dra-gate", subresource="status", now=T1)
    return caught.value
