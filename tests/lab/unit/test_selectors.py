# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Label and field selectors of the lab cluster (kubelab.selectors)."""

from __future__ import annotations

import pytest

from kubelab.errors import ApiError
from kubelab.selectors import (
    field_value,
    label_selector_causes,
    label_selector_from_object,
    parse_field_selector,
    parse_label_selector,
    supported_fields,
)

WEB = {"app": "web", "tier": "front", "release": "3"}

LABEL_CASES = [
    # selector, labels, matches
    ("", WEB, True),
    ("   ", {}, True),
    (None, {}, True),
    ("app=web", WEB, True),
    ("app==web", WEB, True),
    ("app = web", WEB, True),
    ("app=db", WEB, False),
    ("app!=db", WEB, True),
    ("app!=web", WEB, False),
    ("missing!=x", WEB, True),
    ("app", WEB, True),
    ("missing", WEB, False),
    ("!missing", WEB, True),
    ("!app", WEB, False),
    ("tier in (front, back)", WEB, True),
    ("tier in (back)", WEB, False),
    ("tier in (front,back)", {}, False),
    ("tier notin (back)", WEB, True),
    ("tier notin (front, back)", WEB, False),
    ("tier notin (x)", {}, True),
    ("app=web,tier in (front, back)", WEB, True),
    ("app=web, tier in (front, back), !canary", WEB, True),
    ("app=web,tier in (back)", WEB, False),
    ("name=tiny,owner=helm", {"name": "tiny", "owner": "helm", "status": "deployed"}, True),
    ("name=tiny,owner=helm,status=deployed", {"name": "tiny", "owner": "helm", "status": "superseded"}, False),
    ("app=tiny-web,pod-template-hash=5d8f9c7b6", {"app": "tiny-web", "pod-template-hash": "5d8f9c7b6"}, True),
    ("app.kubernetes.io/name=web", {"app.kubernetes.io/name": "web"}, True),
    ("release>2", WEB, True),
    ("release<3", WEB, False),
    ("release>2", {}, False),
    ("app=", {"app": ""}, True),
    ("app=", WEB, False),
    ("x in (in, notin)", {"x": "notin"}, True),
]


@pytest.mark.parametrize("text, labels, expected", LABEL_CASES)
def test_label_selector_matches(text, labels, expected):
    assert parse_label_selector(text).matches(labels) is expected


@pytest.mark.parametrize("text, canonical", [
    ("tier in (front, back),app=web", "app=web,tier in (back,front)"),
    ("!canary, app", "app,!canary"),
    ("a!=b,c notin (d)", "a!=b,c notin (d)"),
    ("x>1", "x>1"),
])
def test_label_selector_string(text, canonical):
    assert str(parse_label_selector(text)) == canonical


LABEL_ERRORS = [
    ("a b", "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"),
    ("tier in", "unable to parse requirement: found '', expected: '('"),
    ("tier in (a", "unable to parse requirement: found '', expected: ',' or ')'"),
    ("tier in ()", "unable to parse requirement: values: Invalid value: []string{}: for 'in', 'notin' operators, "
                   "values set can't be empty"),
    ("a=b=c", "found '=', expected: ',' or 'end of string'"),
    ("a=b,", "found '', expected: identifier after ','"),
    ("(a)", "found '(', expected: !, identifier, or 'end of string'"),
    ("-a=b", "unable to parse requirement: key: Invalid value: \"-a\": name part must consist of"),
    ("a=-b", "unable to parse requirement: values[0][a]: Invalid value: \"-b\": a valid label must be"),
    ("a>b", "unable to parse requirement: values[0]: Invalid value: \"b\": for 'Gt', 'Lt' operators, "
            "the value must be an integer"),
    ("Example.com/a=b", "unable to parse requirement: key: Invalid value: \"Example.com/a\": prefix part"),
    ("a=" + "x" * 64, "unable to parse requirement: values[0][a]: Invalid value: \"%s\": must be no more than 63 "
                      "characters" % ("x" * 64)),
]


@pytest.mark.parametrize("text, message", LABEL_ERRORS)
def test_label_selector_errors(text, message):
    with pytest.raises(ApiError) as caught:
        parse_label_selector(text)
    assert caught.value.code == 400
    assert caught.value.reason == "BadRequest"
    assert caught.value.message.startswith(message), caught.value.message
    assert caught.value.status()["code"] == 400


OBJECT_CASES = [
    # selector object, labels, matches
    ({}, WEB, True),
    (None, WEB, False),
    ({"matchLabels": {"app": "web"}}, WEB, True),
    ({"matchLabels": {"app": "db"}}, WEB, False),
    ({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["front", "back"]}]}, WEB, True),
    ({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["front"]}]}, WEB, False),
    ({"matchExpressions": [{"key": "tier", "operator": "Exists"}]}, WEB, True),
    ({"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}, WEB, False),
    ({"matchLabels": {"app": "web"},
      "matchExpressions": [{"key": "canary", "operator": "DoesNotExist", "values": []}]}, WEB, True),
]


@pytest.mark.parametrize("selector, labels, expected", OBJECT_CASES)
def test_label_selector_from_object(selector, labels, expected):
    assert label_selector_from_object(selector).matches(labels) is expected
    assert label_selector_causes(selector) == [] or selector is None


def test_label_selector_from_object_string():
    selector = {"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "tier", "operator": "In", "values": ["b", "a"]}]}
    assert str(label_selector_from_object(selector)) == "app=web,tier in (a,b)"


@pytest.mark.parametrize("selector, message", [
    ({"matchExpressions": [{"key": "tier", "operator": "Maybe", "values": ["x"]}]},
     '"Maybe" is not a valid label selector operator'),
    ({"matchExpressions": [{"key": "tier", "operator": "In", "values": []}]},
     "values: Invalid value: []string{}: for 'in', 'notin' operators, values set can't be empty"),
    ({"matchLabels": {"-bad": "x"}}, 'key: Invalid value: "-bad"'),
])
def test_label_selector_from_object_errors(selector, message):
    with pytest.raises(ApiError) as caught:
        label_selector_from_object(selector)
    assert caught.value.code == 400
    assert caught.value.message.startswith(message), caught.value.message
    assert label_selector_causes(selector)


def test_label_selector_causes_fields():
    causes = label_selector_causes({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]},
                                   "spec.selector")
    assert causes == [{"reason": "FieldValueForbidden", "field": "spec.selector.matchExpressions[0].values",
                       "message": "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"}]


POD = {
    "kind": "Pod",
    "apiVersion": "v1",
    "metadata": {"name": "web-1", "namespace": "demo"},
    "spec": {"nodeName": "node-2", "restartPolicy": "Always", "hostNetwork": True},
    "status": {"phase": "Running", "podIP": "10.0.0.7", "podIPs": [{"ip": "10.0.0.7"}]},
}
PENDING = {"kind": "Pod", "metadata": {"name": "web-2", "namespace": "demo"}, "spec": {}, "status": {"phase": "Pending"}}
NODE = {"kind": "Node", "metadata": {"name": "node-2"}, "spec": {"unschedulable": True}}
READY_NODE = {"kind": "Node", "metadata": {"name": "node-3"}, "spec": {}}
EVENT = {"kind": "Event", "metadata": {"name": "web-1.1", "namespace": "demo"}, "type": "Warning", "reason": "BackOff",
         "involvedObject": {"kind": "Pod", "name": "web-1", "namespace": "demo", "uid": "u-1"},
         "source": {"component": "kubelet"}, "reportingComponent": "kubelet"}

FIELD_CASES = [
    # selector, kind, object, matches
    ("", "Pod", POD, True),
    ("metadata.name=web-1", "Pod", POD, True),
    ("metadata.name=web-2", "Pod", POD, False),
    ("metadata.name==web-1", "Pod", POD, True),
    ("metadata.name!=web-1", "Pod", POD, False),
    ("metadata.namespace=demo", "Pod", POD, True),
    ("spec.nodeName=node-2", "Pod", POD, True),
    ("spec.nodeName=node-2,status.phase=Running", "Pod", POD, True),
    ("spec.nodeName=node-2,status.phase=Running", "Pod", PENDING, False),
    ("spec.nodeName=", "Pod", PENDING, True),
    ("spec.nodeName!=", "Pod", POD, True),
    ("status.phase!=Succeeded,status.phase!=Failed", "Pod", PENDING, True),
    ("spec.hostNetwork=true", "Pod", POD, True),
    ("spec.hostNetwork=false", "Pod", PENDING, True),
    ("status.podIP=10.0.0.7", "Pod", POD, True),
    ("spec.restartPolicy=Always", "Pod", POD, True),
    ("spec.unschedulable=true", "Node", NODE, True),
    ("spec.unschedulable=false", "Node", READY_NODE, True),
    ("spec.unschedulable=true", "Node", READY_NODE, False),
    ("metadata.name=node-3", "Node", READY_NODE, True),
    ("type=Warning", "Event", EVENT, True),
    ("involvedObject.kind=Pod,involvedObject.name=web-1", "Event", EVENT, True),
    ("involvedObject.uid=u-2", "Event", EVENT, False),
    ("reason=BackOff,source=kubelet", "Event", EVENT, True),
    ("spec.nodeName=node-2", None, POD, True),
]


@pytest.mark.parametrize("text, kind, obj, expected", FIELD_CASES)
def test_field_selector_matches(text, kind, obj, expected):
    assert parse_field_selector(text, kind).matches(obj) is expected


@pytest.mark.parametrize("text, kind, message", [
    ("spec.foo=1", "Pod", "field label not supported: spec.foo"),
    ("spec.nodeName=node-2", "ConfigMap", "field label not supported: spec.nodeName"),
    ("spec.unschedulable=true", "Pod", "field label not supported: spec.unschedulable"),
    ("status.phase=Running", "Deployment", "field label not supported: status.phase"),
    ("metadata.name", "Pod", "invalid selector: 'metadata.name'; can't understand 'metadata.name'"),
    ("metadata.name=a,spec.nodeName", "Pod", "invalid selector: 'metadata.name=a,spec.nodeName'; "
                                             "can't understand 'spec.nodeName'"),
    ("metadata.name=a=b", "Pod", "invalid field selector: unescaped character in value: ="),
    ("metadata.name=a\\xb", "Pod", "invalid field selector: invalid escape sequence: \\x"),
])
def test_field_selector_errors(text, kind, message):
    with pytest.raises(ApiError) as caught:
        parse_field_selector(text, kind)
    assert caught.value.code == 400
    assert caught.value.reason == "BadRequest"
    assert caught.value.message == message


def test_field_selector_escapes_and_helpers():
    selector = parse_field_selector("metadata.name=a\\,b\\=c", "ConfigMap")
    assert selector.matches({"kind": "ConfigMap", "metadata": {"name": "a,b=c"}})
    assert selector.exact_value("metadata.name") == "a,b=c"
    assert str(selector) == "metadata.name=a\\,b\\=c"
    assert parse_field_selector("spec.nodeName!=x", "Pod").exact_value("spec.nodeName") is None
    assert parse_field_selector(None).empty()
    assert "spec.unschedulable" in supported_fields()
    assert supported_fields("ConfigMap") == ["metadata.name", "metadata.namespace"]
    assert field_value(NODE, "spec.unschedulable") == "true"
