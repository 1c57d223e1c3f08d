# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The simulated GPU Operator reacts to the chart (kubelab.controllers.operator): operand images follow
the ClusterPolicy spec Helm renders from the test charts' values (tests/operator_charts.py), an image
change rolls the DaemonSet and takes the ClusterPolicy notReady, then ready no earlier than
``operator_ready_seconds`` after the rolled pods are Ready."""

from __future__ import annotations

import copy
import os
import time

import pytest
import yaml

import operator_charts  # tests/ is on pytest's pythonpath (pytest.ini)
from kubelab.controllers import operator as gpu_operator
from kubelab.testing import start_lab, stop_lab, wait_for

NAMESPACE = "gpu-operator"
PLUGIN = "nvidia-device-plugin-daemonset"
READY_SECONDS = 2.0  # the operator-upgrade scenario's operator_ready_seconds


def rendered(version: str, tmp_path) -> dict:
    """kind/name -> object of the chart for ``version`` as Helm renders it for an upgrade."""
    helm_python = pytest.importorskip("helm_python", reason="helm-python-sdk is not installed")
    chart = helm_python.Chart.load(operator_charts.write_chart(str(tmp_path), version))
    out = chart.render(name="gpu-operator", namespace=NAMESPACE, is_upgrade=True)
    objects = {}
    for text in out.values():
        for doc in yaml.safe_load_all(text):
            if doc:
                objects["%s/%s" % (doc["kind"], doc["metadata"]["name"])] = doc
    return objects


def test_image_from_spec_defaults_and_operator_version():
    cr = {"spec": {"devicePlugin": {"repository": "registry.example/nv", "image": "k8s-device-plugin",
                                    "version": "v0.19.2"}}}
    assert gpu_operator.image(cr, "device-plugin") == "registry.example/nv/k8s-device-plugin:v0.19.2"
    assert gpu_operator.image({"spec": {}}, "validator") == "nvcr.io/nvidia/cloud-native/gpu-operator-validator:v26.7.0"
    assert gpu_operator.image({"spec": {}}, "validator", "v26.3.1").endswith("gpu-operator-validator:v26.3.1")
    pinned = {"spec": {"validator": {"version": "v26.6.2"}}}
    assert gpu_operator.image(pinned, "validator", "v26.3.1").endswith(":v26.6.2")
    digest = {"spec": {"toolkit": {"version": "sha256:" + "a" * 64}}}
    assert gpu_operator.image(digest, "toolkit") == "nvcr.io/nvidia/k8s/container-toolkit@sha256:" + "a" * 64
    assert gpu_operator.image_tag("nvcr.io/nvidia/gpu-operator:v26.6.2") == "v26.6.2"
    assert gpu_operator.image_tag("localhost:5000/gpu-operator") == ""
    assert gpu_operator.image_tag("nvcr.io/nvidia/gpu-operator@sha256:" + "b" * 64) == ""


def test_update_strategy_from_daemonsets_spec():
    default = {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "1"}}
    assert gpu_operator.update_strategy({"spec": {}}) == default
    cr = {"spec": {"daemonsets": {"updateStrategy": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "50%"}}}}
    assert gpu_operator.update_strategy(cr)["rollingUpdate"] == {"maxUnavailable": "50%"}
    on_delete = {"spec": {"daemonsets": {"updateStrategy": "OnDelete"}}}
    assert gpu_operator.update_strategy(on_delete) == {"type": "OnDelete"}


@pytest.mark.parametrize("version", operator_charts.VERSIONS)
def test_operands_follow_the_rendered_cluster_policy(version, tmp_path):
    objects = rendered(version, tmp_path)
    rel, vals = operator_charts.RELEASES[version], operator_charts.values(version)
    cr = dict(objects["ClusterPolicy/cluster-policy"], metadata={"name": "cluster-policy", "uid": "u-1"})
    deployment = objects["Deployment/gpu-operator"]
    operator_image = deployment["spec"]["template"]["spec"]["containers"][0]["image"]
    assert operator_image == "nvcr.io/nvidia/gpu-operator:v" + version
    tag = gpu_operator.image_tag(operator_image)
    images = {name: gpu_operator.operand(kind, name, component, cr, NAMESPACE, tag)["spec"]["template"]["spec"]
              ["containers"][0]["image"] for kind, name, component in gpu_operator.CLUSTER_POLICY_OPERANDS}
    assert images == {
        PLUGIN: "nvcr.io/nvidia/k8s-device-plugin:" + rel["devicePlugin"],
        "gpu-feature-discovery": "nvcr.io/nvidia/k8s-device-plugin:" + rel["devicePlugin"],
        "nvidia-container-toolkit-daemonset": "nvcr.io/nvidia/k8s/container-toolkit:" + rel["toolkit"],
        "nvidia-operator-validator": "nvcr.io/nvidia/cloud-native/gpu-operator-validator:v" + version,
    }
    assert vals["devicePlugin"]["enabled"] is True and vals["nfd"]["enabled"] is True
    hook = objects["Job/gpu-operator-upgrade-crd"]
    assert hook["metadata"]["annotations"]["helm.sh/hook"] == "pre-upgrade"
    args = " ".join(hook["spec"]["template"]["spec"]["containers"][0]["args"])
    assert "clusterpolicies.nvidia.com" in args and "computedomains.resource.nvidia.com" not in args
    if version == "26.7.0":
        assert vals["gpuCluster"] == {"deployCR": False}
        assert "GPUCluster/gpu-cluster" not in objects
    else:
        assert "gpuCluster" not in vals and "draDriver" not in vals


def test_chart_crds_and_archive(tmp_path):
    old, new = operator_charts.chart_crds("26.6.2"), operator_charts.chart_crds("26.7.0")
    for crd_name, fields in operator_charts.NEW_CRD_FIELDS.items():
        old_crd = next(c for c in old.values() if c["metadata"]["name"] == crd_name)
        new_crd = next(c for c in new.values() if c["metadata"]["name"] == crd_name)
        for field in fields:
            assert operator_charts.schema_has(new_crd, field) and not operator_charts.schema_has(old_crd, field)
    assert set(operator_charts.crds("26.7.0")) - set(operator_charts.crds("26.3.1")) == set(operator_charts.DRA_CRDS)
    os.makedirs(str(tmp_path / "a"))
    os.makedirs(str(tmp_path / "b"))
    first = operator_charts.chart_archive(str(tmp_path / "a"), "26.6.x")
    second = operator_charts.chart_archive(str(tmp_path / "b"), "v26.6.2")
    assert os.path.basename(first) == "gpu-operator-v26.6.2.tgz"
    with open(first, "rb") as one, open(second, "rb") as two:
        assert one.read() == two.read()  # the same bytes on every run: a pinnable sha256
    with pytest.raises(ValueError, match="no test chart"):
        operator_charts.write_chart(str(tmp_path), "25.10.0")


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    cluster = start_lab(str(tmp_path_factory.mktemp("reaction")), "operator-upgrade")
    yield cluster
    stop_lab(cluster)
    assert not cluster.server.controller_errors, cluster.server.controller_errors[:5]


def _rtype(lab, group, version, plural):
    return lab.server.registry.get(group, version, plural)


def _policy_type(lab):
    return wait_for(lambda: _rtype(lab, "nvidia.com", "v1", "clusterpolicies"), 20, "ClusterPolicy served")


def _state(lab) -> str:
    return (lab.server.store.get(_policy_type(lab), None, "cluster-policy").get("status") or {}).get("state")


def _set_spec(lab, mutate) -> None:
    rtype = _policy_type(lab)
    for attempt in range(5):
        body = copy.deepcopy(lab.server.store.get(rtype, None, "cluster-policy"))
        mutate(body["spec"])
        try:
            lab.server.api.update(rtype, None, "cluster-policy", body, field_manager="test")
            return
        except Exception:  # noqa: BLE001  a Conflict with the operator's status write: read again
            if attempt == 4:
                raise
            time.sleep(0.1)


def _plugin(lab):
    return lab.server.store.get_or_none(_rtype(lab, "apps", "v1", "daemonsets"), NAMESPACE, PLUGIN)


def _rolled(ds) -> bool:
    st = ds.get("status") or {}
    desired = st.get("desiredNumberScheduled", 0)
    return (desired > 0 and st.get("observedGeneration") == ds["metadata"].get("generation")
            and st.get("updatedNumberScheduled") == desired and st.get("numberReady") == desired)


def test_image_change_goes_not_ready_then_ready_after_operator_ready_seconds(lab, tmp_path):
    api = lab.server.api
    crd_type = _rtype(lab, "apiextensions.k8s.io", "v1", "customresourcedefinitions")
    for crd in operator_charts.chart_crds("26.3.1").values():
        api.create(crd_type, None, crd, field_manager="test")
    objects = rendered("26.3.1", tmp_path)
    # the operator itself first (it reconciles only while its Deployment is available), then its CR
    api.create(_rtype(lab, "", "v1", "serviceaccounts"), NAMESPACE, objects["ServiceAccount/gpu-operator"],
               field_manager="helm")
    api.create(_rtype(lab, "apps", "v1", "deployments"), NAMESPACE, objects["Deployment/gpu-operator"],
               field_manager="helm")
    api.create(_policy_type(lab), None, objects["ClusterPolicy/cluster-policy"], field_manager="helm")
    wait_for(lambda: _state(lab) == "ready", 60, "ClusterPolicy ready")
    assert _plugin(lab)["spec"]["template"]["spec"]["containers"][0]["image"].endswith(":v0.19.0")

    _set_spec(lab, lambda s: s["devicePlugin"].update(version="v0.20.0"))
    changed = time.monotonic()
    seen, rolled_at, ready_at = [], None, None
    while time.monotonic() - changed < 60 and ready_at is None:
        state, ds = _state(lab), _plugin(lab)
        if not seen or seen[-1] != state:
            seen.append(state)
        if rolled_at is None and ds["spec"]["template"]["spec"]["containers"][0]["image"].endswith(":v0.20.0") \
                and _rolled(ds):
            rolled_at = time.monotonic()
        if state == "ready" and "notReady" in seen:
            ready_at = time.monotonic()
        time.sleep(0.05)
    assert seen[-2:] == ["notReady", "ready"], seen
    assert rolled_at is not None and ready_at is not None
    # ready only once the rolled pods are Ready, and operator_ready_seconds after that (less polling lag)
    assert ready_at - rolled_at >= READY_SECONDS - 0.5, (ready_at - rolled_at)
    current = lab.server.store.get(_policy_type(lab), None, "cluster-policy")
    conditions = {c["type"]: c for c in current["status"]["conditions"]}
    assert conditions["Ready"]["status"] == "True"
    pods = lab.server.api.list(_rtype(lab, "", "v1", "pods"), NAMESPACE)["items"]
    plugin_pods = [p for p in pods if (p["metadata"].get("labels") or {}).get("app") == PLUGIN]
    assert plugin_pods and all(p["spec"]["containers"][0]["image"].endswith(":v0.20.0") for p in plugin_pods)


def test_rollout_message_names_the_rollout(lab):
    _set_spec(lab, lambda s: s["toolkit"].update(version="v1.20.0"))

    def message():
        st = lab.server.store.get(_policy_type(lab), None, "cluster-policy").get("status") or {}
        ready = {c["type"]: c for c in st.get("conditions") or []}.get("Ready") or {}
        return st.get("state") == "notReady" and "rolling out" in ready.get("message", "") and ready["message"]
    text = wait_for(message, 20, "rollout message")
    assert "nvidia-container-toolkit-daemonset: rolling out nvcr.io/nvidia/k8s/container-toolkit:v1.20.0" in text
    wait_for(lambda: _state(lab) == "ready", 60, "ready after the toolkit rollout")


def test_disabled_operand_is_removed_and_comes_back(lab):
    _set_spec(lab, lambda s: s["devicePlugin"].update(enabled=False))
    wait_for(lambda: _plugin(lab) is None, 20, "device plugin DaemonSet deleted")
    wait_for(lambda: _state(lab) == "ready", 60, "ready without the device plugin")
    _set_spec(lab, lambda s: s["devicePlugin"].update(enabled=True))
    wait_for(lambda: _plugin(lab) is not None and _rolled(_plugin(lab)), 30, "device plugin back")
    wait_for(lambda: _state(lab) == "ready", 60, "ready with the device plugin")


def test_validator_version_follows_the_operator_deployment(lab):
    deployments = _rtype(lab, "apps", "v1", "deployments")
    body = copy.deepcopy(lab.server.store.get(deployments, NAMESPACE, "gpu-operator"))  # the chart's, from above
    body["spec"]["template"]["spec"]["containers"][0]["image"] = "nvcr.io/nvidia/gpu-operator:v26.6.2"
    lab.server.api.update(deployments, NAMESPACE, "gpu-operator", body, field_manager="helm")
    _set_spec(lab, lambda s: s["validator"].pop("version", None))
    daemonsets = _rtype(lab, "apps", "v1", "daemonsets")

    def validator_image():
        ds = lab.server.store.get_or_none(daemonsets, NAMESPACE, "nvidia-operator-validator")
        return ds and ds["spec"]["template"]["spec"]["containers"][0]["image"]
    wait_for(lambda: validator_image() == "nvcr.io/nvidia/cloud-native/gpu-operator-validator:v26.6.2", 20,
             "validator at the operator's version")
    wait_for(lambda: _state(lab) == "ready", 60, "ready after the validator rollout")


def test_operator_available_and_version():
    running = {"metadata": {"name": "gpu-operator", "namespace": NAMESPACE}, "status": {"availableReplicas": 1},
               "spec": {"template": {"spec": {"containers": [{"image": "nvcr.io/nvidia/gpu-operator:v26.3.1"}]}}}}
    assert gpu_operator.operator_available(running)
    assert gpu_operator.operator_version(running) == "v26.3.1"
    assert not gpu_operator.operator_available(dict(running, status={"availableReplicas": 0}))
    assert not gpu_operator.operator_available(dict(running, status={}))  # never available yet
    deleting = dict(running, metadata=dict(running["metadata"], deletionTimestamp="2026-12-01T00:00:00Z"))
    assert not gpu_operator.operator_available(deleting)


def _operator_deployment(lab):
    return lab.server.store.get_or_none(_rtype(lab, "apps", "v1", "deployments"), NAMESPACE, "gpu-operator")


def _unchanged_while_the_operator_is_down(lab, mutate, image_suffix) -> None:
    """Change the ClusterPolicy spec; for 2 s neither the operand DaemonSet nor the status follows."""
    before = lab.server.store.get(_policy_type(lab), None, "cluster-policy")
    plugin_before = _plugin(lab)
    _set_spec(lab, mutate)
    generation = lab.server.store.get(_policy_type(lab), None, "cluster-policy")["metadata"]["generation"]
    assert generation > before["metadata"]["generation"]
    time.sleep(2.0)  # four operator resyncs
    after = lab.server.store.get(_policy_type(lab), None, "cluster-policy")
    assert after["status"] == before["status"], "the ClusterPolicy status was written with no operator running"
    assert {c["observedGeneration"] for c in after["status"]["conditions"]} == {before["metadata"]["generation"]}
    plugin = _plugin(lab)
    assert plugin["metadata"]["resourceVersion"] == plugin_before["metadata"]["resourceVersion"]
    assert not plugin["spec"]["template"]["spec"]["containers"][0]["image"].endswith(image_suffix)
    assert plugin["status"]["numberReady"] == plugin["status"]["desiredNumberScheduled"] > 0  # operands keep running


def _follows(lab, image_suffix) -> None:
    wait_for(lambda: _plugin(lab)["spec"]["template"]["spec"]["containers"][0]["image"].endswith(image_suffix), 30,
             "the device plugin DaemonSet follows the ClusterPolicy")

    def reconciled():
        cr = lab.server.store.get(_policy_type(lab), None, "cluster-policy")
        return cr["status"]["state"] == "ready" and {c["observedGeneration"] for c in cr["status"]["conditions"]} \
            == {cr["metadata"]["generation"]}
    wait_for(reconciled, 60, "the ClusterPolicy status reconciled at its generation")


def test_operator_reconciles_only_while_its_deployment_is_available(lab, tmp_path):
    api, deployments = lab.server.api, _rtype(lab, "apps", "v1", "deployments")
    wait_for(lambda: _state(lab) == "ready", 60, "ready")
    # deleted (as `helm uninstall` or `kubectl delete deployment` would): the operands stay, nothing follows
    api.delete(deployments, NAMESPACE, "gpu-operator", {"propagationPolicy": "Background"})
    wait_for(lambda: _operator_deployment(lab) is None, 20, "the operator's Deployment gone")
    time.sleep(0.6)  # an operator pass that had read the Deployment before it went is over
    _unchanged_while_the_operator_is_down(lab, lambda s: s["devicePlugin"].update(version="v0.20.5"), ":v0.20.5")
    # back (its pod available): the change made meanwhile is acted on
    operator = rendered("26.3.1", tmp_path)["Deployment/gpu-operator"]
    api.create(deployments, NAMESPACE, operator, field_manager="helm")
    _follows(lab, ":v0.20.5")

    # scaled to 0: no operator pod, no reconciling; scaled back: it resumes
    api.patch(deployments, NAMESPACE, "gpu-operator", "application/merge-patch+json", b'{"spec": {"replicas": 0}}')
    wait_for(lambda: (_operator_deployment(lab).get("status") or {}).get("availableReplicas", 0) == 0
             and _operator_deployment(lab)["status"].get("observedGeneration") ==
             _operator_deployment(lab)["metadata"]["generation"], 20, "the operator scaled to 0")
    time.sleep(0.6)
    _unchanged_while_the_operator_is_down(lab, lambda s: s["devicePlugin"].update(version="v0.20.6"), ":v0.20.6")
    api.patch(deployments, NAMESPACE, "gpu-operator", "application/merge-patch+json", b'{"spec": {"replicas": 1}}')
    _follows(lab, ":v0.20.6")
