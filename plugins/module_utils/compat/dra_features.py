# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""DRA feature maturity as data, and the rule that checks the canary's features against it.

Pure logic, no I/O, no Ansible. The data is ``data/dra_features/kubernetes-1.37.yml`` (embedded
below as :data:`DEFAULT_MATURITY_YAML`, kept equal by tests/unit/test_dra_features.py); the facts
are those of ``k8s_component_facts`` per host (or the inventory shape of a managed control plane,
``k8s_components.from_inventory``).

- :func:`features_for` derives the feature names a canary configuration uses.
- :func:`evaluate` reports every feature with its maturity and its gate state on each component
  and host that needs it, and returns findings (``gate.finding`` shape), counts and a verdict:

  * alpha without explicit, unexpired acceptance: ``block``; accepted alpha: still ``warn``;
  * beta without a named owner: ``warn``;
  * a gate enabled on one required component (or host) but not on another: ``block`` naming both;
    off on every one: ``block``;
  * a required component that no host reports (or whose file could not be parsed): ``block``
    (``*.not_assessed``). A gate absent from the flags has the data's default, and the report
    says ``default``.
  * where sources disagree on a stage, the least mature reading is evaluated (``info`` finding).

Feature names: Kubernetes features by their gate name (``DRAExtendedResource``), the NVIDIA DRA
driver's gates as ``driver/<Gate>`` (``driver/PassthroughSupport``; a bare name that only the
driver has is accepted too). See docs/feature-gates.md.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import re

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.judges import verdict as gate_mod
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster import components as kc

SCHEMA = "gpufleet.dra_gate/dra-features/v1"
STAGES = ("alpha", "beta", "stable")
DRIVER_PREFIX = "driver/"
NUMA_ATTRIBUTE = "resource.kubernetes.io/numaNode"
NUMA_FEATURE = "StandardNUMANodeAttribute"
ACCEPTANCE_KEYS = ("accepted_by", "expires", "reason")
_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
#: How many entries a message lists before "and N more".
_SHOWN = 3

DEFAULT_MATURITY_YAML = r'''---
# Kubernetes 1.37 DRA feature maturity and the NVIDIA DRA driver's feature gates, as data.
# Read by plugins/module_utils/compat/dra_features.py (module dra_feature_check); format and rules in
# docs/feature-gates.md. A copy is embedded in dra_features.DEFAULT_MATURITY_YAML (the module
# runs without the collection's data directory); tests/unit/test_dra_features.py keeps them equal.
#
# stage: the stage in Kubernetes 1.37 (alpha|beta|stable); default: the gate's default in 1.37;
# components: the components whose --feature-gates (kubelet: featureGates) must agree, from the
# KEP's "Feature Enablement and Rollback" section or the feature docs (sources.components).
# Where sources disagree, `conflicts` keeps each other reading with its source; the rule then
# evaluates the least mature stage of all readings (fail closed) and says so.
schema: gpufleet.dra_gate/dra-features/v1
kubernetes: "1.37"
read: "2026-12-02"
components: [kube-apiserver, kube-scheduler, kube-controller-manager, kubelet]

features:
  DynamicResourceAllocation:
    gate: DynamicResourceAllocation
    stage: stable
    default: true
    locked: true
    history: "alpha 1.30 (structured parameters), beta 1.32 (off), GA 1.34, locked 1.35"
    components: [kube-apiserver, kube-scheduler, kube-controller-manager, kubelet]
    sources:
      stage: "../shared/DOMAIN.md § 3 Feature gates by stage [KEP keps/sig-node/4381-dra-structured-parameters/kep.yaml]"
      components: "KEP-4381 (keps/sig-node/4381-dra-structured-parameters/README.md) § Feature Enablement and Rollback"

  DRAPrioritizedList:
    gate: DRAPrioritizedList
    stage: stable
    default: true
    history: "alpha 1.33, beta 1.34, GA 1.36"
    components: [kube-apiserver, kube-scheduler, kube-controller-manager]
    sources:
      stage: "../shared/DOMAIN.md § 3 Feature gates by stage [KEP kep.yaml]"
      components: "KEP-4816 (keps/sig-scheduling/4816-dra-prioritized-list/README.md) § Feature Enablement and Rollback"

  DRAAdminAccess:
    gate: DRAAdminAccess
    stage: stable
    default: true
    history: "alpha 1.33, beta 1.34, GA 1.36"
    components: [kube-apiserver, kube-scheduler, kube-controller-manager]
    sources:
      stage: "../shared/DOMAIN.md § 3 Feature gates by stage [KEP kep.yaml]"
      components: "KEP-5018 (keps/sig-auth/5018-dra-adminaccess/README.md) § Feature Enablement and Rollback"

  DRAPartitionableDevices:
    gate: DRAPartitionableDevices
    stage: beta
    default: true
    history: "alpha 1.33, beta 1.36 (on)"
    components: [kube-apiserver, kube-scheduler]
    sources:
      stage: >-
        ../shared/DOMAIN.md § 3 Feature gates by stage [KEP kep.yaml]; default: DOMAIN.md § 3 "Kubernetes' versioned
        feature-gate specs ... DRAPartitionableDevices ... 1.36 Beta Default:true" [kubernetes/kubernetes pkg/features]
      components: >-
        KEP-4815 (keps/sig-scheduling/4815-dra-partitionable-devices/README.md) § Feature Enablement and Rollback;
        kubernetes/website content/en/docs/concepts/resource-management/dynamic-resource-allocation/dra-features.md
        § Partitionable devices ("in the kube-apiserver and kube-scheduler")

  DRADeviceTaints:
    gate: DRADeviceTaints
    stage: stable
    default: true
    history: "alpha 1.33, beta 1.36, GA 1.37"
    components: [kube-apiserver, kube-scheduler, kube-controller-manager]
    sources:
      stage: "../shared/DOMAIN.md § 3 Feature gates by stage [KEP kep.yaml]"
      components: "KEP-5055 (keps/sig-node/5055-dra-device-taints-and-tolerations/README.md) § Feature Enablement and Rollback"
    conflicts:
      - stage: beta
        default: true
        source: >-
          public research note "KEP-5007 (DRA device binding conditions) and CoHDI" (2026-10-02) § 1.1, read from
          kubernetes/kubernetes v1.37.0 pkg/features/kube_features.go: "DRADeviceTaints ... beta, on" in 1.37.0
        note: The KEP's milestone says GA 1.37; the tagged code read by that note still says beta.

  DRADeviceTaintRules:
    gate: DRADeviceTaintRules
    stage: stable
    default: true
    history: "alpha 1.35, beta 1.36 (default off: depends on an off-by-default beta API), GA 1.37"
    components: [kube-apiserver, kube-scheduler, kube-controller-manager]
    sources:
      stage: >-
        ../shared/DOMAIN.md § 3 Feature gates by stage [KEP kep.yaml] and "DRADeviceTaintRules 1.36 Beta Default:false"
        [kubernetes/kubernetes pkg/features versioned specs]
      components: "KEP-5055 (keps/sig-node/5055-dra-device-taints-and-tolerations/README.md) § Feature Enablement and Rollback"
    notes:
      - >-
        DeviceTaintRule is served as v1alpha3/v1beta2 in the 1.36 client libraries, not v1 (DOMAIN.md § 3); a
        rollback to 1.36 turns the gate off by default, so its state belongs in the rollback unit.

  DRAExtendedResource:
    gate: DRAExtendedResource
    stage: stable
    default: true
    history: "alpha 1.34, beta 1.36 (on), GA 1.37"
    components: [kube-apiserver, kube-scheduler, kube-controller-manager, kubelet]
    sources:
      stage: "../shared/DOMAIN.md § 3 Feature gates by stage [KEP kep.yaml]"
      components: >-
        kubernetes/website content/en/docs/concepts/resource-management/dynamic-resource-allocation/dra-features.md@8a1d323
        § Extended resource allocation by DRA ("in the kube-apiserver, kube-scheduler, kube-controller-manager, and
        kubelet"); DOMAIN.md § 3 DeviceClassSpec
    conflicts:
      - components: [kube-apiserver, kube-scheduler, kubelet]
        source: "KEP-5004 (keps/sig-scheduling/5004-dra-extended-resource/README.md) § Feature Enablement and Rollback"
        note: The KEP's PRR lists three components (older revisions two); the docs add kube-controller-manager. The docs' superset is required.
    notes:
      - >-
        The DRA driver's extres test skips when the apiserver lacks DRAExtendedResource=true and fails while the
        node still advertises nvidia.com/gpu (DOMAIN.md § 2 Tests).

  DRAConsumableCapacity:
    gate: DRAConsumableCapacity
    stage: beta
    default: true
    history: "alpha 1.34, beta 1.36 (on), GA 1.38 target"
    components: [kube-apiserver, kube-scheduler, kubelet]
    sources:
      stage: "../shared/DOMAIN.md § 3 Feature gates by stage [KEP kep.yaml] and versioned specs (1.36 Beta Default:true)"
      components: "KEP-5075 (keps/sig-scheduling/5075-dra-consumable-capacity/README.md) § Feature Enablement and Rollback"

  DRADeviceBindingConditions:
    gate: DRADeviceBindingConditions
    stage: beta
    default: true
    history: "alpha 1.34, beta 1.36 (on), GA 1.38 target"
    components: [kube-apiserver, kube-scheduler]
    requires: [DRAResourceClaimDeviceStatus]
    sources:
      stage: >-
        ../shared/DOMAIN.md § 3 Feature gates by stage [KEP kep.yaml]; default from kubernetes/kubernetes pkg/features
        versioned specs ("1.36 Default: true, PreRelease: Beta")
      components: >-
        KEP-5007 (keps/sig-scheduling/5007-device-attach-before-pod-scheduled/README.md) § Feature Enablement and
        Rollback ("kube-scheduler and kube-apiserver")

  DRAResourceClaimDeviceStatus:
    gate: DRAResourceClaimDeviceStatus
    stage: stable
    default: true
    history: "alpha 1.32, beta 1.33, GA 1.37"
    components: [kube-apiserver]
    sources:
      stage: "../shared/DOMAIN.md § 3 Feature gates by stage [KEP kep.yaml]"
      components: "KEP-4817 (keps/sig-node/4817-resource-claim-device-status/README.md) § Feature Enablement and Rollback"
    conflicts:
      - stage: stable
        since: "1.36"
        source: "kubernetes/website content/en/docs/reference/command-line-tools-reference/feature-gates/DRAResourceClaimDeviceStatus.md@07474db"
        note: The feature-gate page says stable since 1.36, the KEP GA in 1.37 (DOMAIN.md names this conflict).
      - stage: beta
        default: true
        source: >-
          public research note "KEP-5007 (DRA device binding conditions) and CoHDI" (2026-10-02) § 1.1, read from
          kubernetes/kubernetes v1.37.0 pkg/features/kube_features.go ("beta, on (since 1.33)")
        note: A third reading; the least mature (beta) is what the rule evaluates.

  DRAListTypeAttributes:
    gate: DRAListTypeAttributes
    stage: alpha
    default: false
    history: "alpha 1.36"
    components: [kube-apiserver, kube-scheduler]
    sources:
      stage: "../shared/DOMAIN.md § 3 Feature gates by stage [KEP kep.yaml]"
      components: >-
        not found in a KEP's PRR section; the list-typed attributes are validated by kube-apiserver and matched by
        the kube-scheduler's allocator (KEP-5491), so both are required here (fail closed)

  DRASchedulerFilterTimeout:
    gate: DRASchedulerFilterTimeout
    stage: beta
    default: true
    history: "beta 1.34"
    components: [kube-scheduler]
    sources:
      stage: "../shared/DOMAIN.md § 3 Feature gates by stage [KEP kep.yaml]"
      components: "a DynamicResources scheduler-plugin setting (DynamicResourcesArgs.filterTimeout): kube-scheduler only"

  ResourceHealthStatus:
    gate: ResourceHealthStatus
    stage: beta
    default: true
    history: "alpha 1.31, beta 1.36 (on)"
    components: [kube-apiserver, kubelet]
    sources:
      stage: "../shared/DOMAIN.md § 3 Feature gates by stage [KEP kep.yaml]"
      components: >-
        kubernetes/website .../dynamic-resource-allocation/dra-observability.md § Device Health Monitoring (the kubelet
        fills Pod status allocatedResourcesStatus; the apiserver serves the field)

  StandardNUMANodeAttribute:
    gate: null
    stage: stable
    default: true
    history: "KEP-6072 standard attribute resource.kubernetes.io/numaNode, stable in 1.37; not in 1.36"
    components: []
    attribute: resource.kubernetes.io/numaNode
    sources:
      stage: "../shared/DOMAIN.md § 3 Standard NUMA attribute [KEP keps/sig-node/6072-dra-standard-numanode/kep.yaml; kubernetes/enhancements#6072]"
      components: "no feature gate: the driver publishes the attribute (NVIDIA driver PR #1165) and claims match on it"
    notes:
      - A list-typed numaNode needs DRAListTypeAttributes (alpha) in Kubernetes and in the driver (DOMAIN.md § 2 Attributes).

driver:
  name: nvidia-dra-driver-gpu
  # Set through the GPUCluster's draDriver.featureGates (rendered as the FEATURE_GATES env var) or the
  # standalone chart's featureGates value.
  source: "../shared/DOMAIN.md § 2 Driver feature gates [DRA pkg/featuregates/featuregates.go; CND dra-intro-install.rst]"
  feature_gates:
    TimeSlicingSettings: {stage: alpha, default: false}
    MPSSupport: {stage: alpha, default: false}
    PassthroughSupport:
      stage: alpha
      default: false
      conflicts_with: [DynamicMIG, NVMLDeviceHealthCheck]
      notes:
        - "VFIO passthrough also needs DeviceMetadata, IOMMU on, nvidia-device-plugin and Xorg off (DOMAIN.md § 2 Passthrough)"
        - "GPU and VFIO entries of one physical GPU can both be allocated (26.7.0); serialize or dedicate nodes"
    DynamicMIG:
      stage: alpha
      default: false
      conflicts_with: [PassthroughSupport, NVMLDeviceHealthCheck, MPSSupport]
    NVMLDeviceHealthCheck:
      stage: alpha
      default: false
      conflicts_with: [DynamicMIG, PassthroughSupport]
    DeviceMetadata:
      stage: alpha
      default: false
      requires: [PassthroughSupport]
    DRAListTypeAttributes:
      stage: alpha
      default: false
      requires_kubernetes: [DRAListTypeAttributes]
    ConsumableShares:
      stage: alpha
      default: false
      # DOMAIN.md § 3 Consumable capacity: the driver's ConsumableShares builds on DRAConsumableCapacity.
      requires_kubernetes: [DRAConsumableCapacity]
    FabricManagerPartitioning: {stage: alpha, default: false}
    HostManagedIMEXDaemon: {stage: alpha, default: false}
    IMEXDaemonsWithDNSNames: {stage: beta, default: true}
    ComputeDomainCliques: {stage: beta, default: true}
    CrashOnNVLinkFabricErrors: {stage: beta, default: true}
'''


class DraFeatureError(ValueError):
    """Bad input or bad maturity data: the message names the field and the expected form."""


# --- the maturity data -------------------------------------------------------------------------

def _check_stage(value, where):
    if value not in STAGES:
        raise DraFeatureError("%s: expected one of %s, got %r" % (where, "|".join(STAGES), value))


def _check_components(value, where):
    if not isinstance(value, list) or not all(c in kc.COMPONENTS for c in value):
        raise DraFeatureError("%s: expected a list of %s, got %r" % (where, ", ".join(kc.COMPONENTS), value))


def validate_maturity(data, where="maturity"):
    """Check the shape of a maturity document; returns it. Raises :class:`DraFeatureError`."""
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise DraFeatureError("%s: expected a mapping with schema: %s" % (where, SCHEMA))
    if not isinstance(data.get("kubernetes"), str):
        raise DraFeatureError("%s.kubernetes: expected a quoted minor version like \"1.37\"" % where)
    features = data.get("features")
    if not isinstance(features, dict) or not features:
        raise DraFeatureError("%s.features: expected a non-empty mapping name -> feature" % where)
    for name, feature in features.items():
        field = "%s.features.%s" % (where, name)
        if not isinstance(feature, dict):
            raise DraFeatureError("%s: expected a mapping" % field)
        _check_stage(feature.get("stage"), field + ".stage")
        if not isinstance(feature.get("default"), bool):
            raise DraFeatureError("%s.default: expected true or false" % field)
        if feature.get("gate") is not None and not isinstance(feature["gate"], str):
            raise DraFeatureError("%s.gate: expected a gate name or null" % field)
        _check_components(feature.get("components"), field + ".components")
        if not feature.get("sources"):
            raise DraFeatureError("%s.sources: every feature names its sources" % field)
        for index, conflict in enumerate(feature.get("conflicts") or []):
            if not isinstance(conflict, dict) or not conflict.get("source"):
                raise DraFeatureError("%s.conflicts[%d]: expected a mapping with a source" % (field, index))
            if "stage" in conflict:
                _check_stage(conflict["stage"], "%s.conflicts[%d].stage" % (field, index))
        for required in feature.get("requires") or []:
            if required not in features:
                raise DraFeatureError("%s.requires: %r is not a feature of this file" % (field, required))
    driver = data.get("driver") or {}
    gates = driver.get("feature_gates") if isinstance(driver, dict) else None
    if not isinstance(gates, dict):
        raise DraFeatureError("%s.driver.feature_gates: expected a mapping gate -> {stage, default}" % where)
    for name, spec in gates.items():
        field = "%s.driver.feature_gates.%s" % (where, name)
        if not isinstance(spec, dict):
            raise DraFeatureError("%s: expected a mapping" % field)
        _check_stage(spec.get("stage"), field + ".stage")
        if not isinstance(spec.get("default"), bool):
            raise DraFeatureError("%s.default: expected true or false" % field)
        for key in ("conflicts_with", "requires"):
            for other in spec.get(key) or []:
                if other not in gates:
                    raise DraFeatureError("%s.%s: %r is not a driver gate of this file" % (field, key, other))
        for other in spec.get("requires_kubernetes") or []:
            if other not in features:
                raise DraFeatureError("%s.requires_kubernetes: %r is not a feature of this file" % (field, other))
    return data


def load_maturity(text=None):
    """The validated maturity document from YAML ``text`` (default: the shipped data)."""
    import yaml  # pylint: disable=import-outside-toplevel  # controller only
    try:
        data = yaml.safe_load(DEFAULT_MATURITY_YAML if text is None else text)
    except yaml.YAMLError as exc:
        raise DraFeatureError("maturity_file: not valid YAML: %s" % str(exc).splitlines()[0])
    return validate_maturity(data, "maturity_file")


# --- the features a canary configuration uses ---------------------------------------------------

def _walk(value):
    """Every mapping nested in ``value`` (depth-first)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            yield item
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def _claim_features(obj, found):
    for item in _walk(obj.get("spec")):
        if item.get("firstAvailable"):
            found.add("DRAPrioritizedList")
        if item.get("adminAccess") is True:
            found.add("DRAAdminAccess")
        if item.get("tolerations") and "deviceClassName" in item:
            found.add("DRADeviceTaints")
        capacity = item.get("capacity")
        if isinstance(capacity, dict) and capacity.get("requests") and "deviceClassName" in item:
            found.add("DRAConsumableCapacity")
        if item.get("matchAttribute") == NUMA_ATTRIBUTE or item.get("distinctAttribute") == NUMA_ATTRIBUTE:
            found.add(NUMA_FEATURE)


def _driver_gates_of(obj):
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    for holder in (spec.get("draDriver"), spec):
        if isinstance(holder, dict) and isinstance(holder.get("featureGates"), dict):
            return holder["featureGates"]
    return {}


def features_for(config):
    """The sorted feature names a canary configuration uses (docs/feature-gates.md § features_for).

    ``config`` keys, all optional: ``manifests`` (Kubernetes objects the canary applies: a
    DeviceClass with ``spec.extendedResourceName`` -> DRAExtendedResource; a DeviceTaintRule ->
    DRADeviceTaintRules and DRADeviceTaints; ResourceClaim(Template)s: ``firstAvailable`` ->
    DRAPrioritizedList, ``adminAccess`` -> DRAAdminAccess, request ``tolerations`` -> DRADeviceTaints,
    ``capacity.requests`` -> DRAConsumableCapacity, a ``matchAttribute``/``distinctAttribute`` of
    ``resource.kubernetes.io/numaNode`` -> StandardNUMANodeAttribute; a GPUCluster's
    ``spec.draDriver.featureGates`` set true -> those ``driver/<Gate>``), ``driver_feature_gates``
    (the same as a mapping), ``extended_resource_device_class`` (bool), ``device_taint_rules``
    (bool or list), ``numa_alignment`` (bool), ``passthrough`` (bool: driver/PassthroughSupport and
    driver/DeviceMetadata) and ``features`` (extra names, kept as given).
    """
    if config is None:
        return []
    if not isinstance(config, dict):
        raise DraFeatureError("config: expected a mapping (manifests, driver_feature_gates, passthrough, ...), got %s"
                              % type(config).__name__)
    found = set()
    manifests = config.get("manifests") or []
    if not isinstance(manifests, list):
        raise DraFeatureError("config.manifests: expected a list of Kubernetes objects")
    driver_gates = {}
    for index, obj in enumerate(manifests):
        if not isinstance(obj, dict) or not isinstance(obj.get("kind"), str):
            raise DraFeatureError("config.manifests[%d]: expected a Kubernetes object with a kind" % index)
        kind = obj["kind"]
        spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
        if kind == "DeviceClass" and spec.get("extendedResourceName"):
            found.add("DRAExtendedResource")
        elif kind == "DeviceTaintRule":
            found.update(("DRADeviceTaintRules", "DRADeviceTaints"))
        elif kind in ("ResourceClaim", "ResourceClaimTemplate"):
            _claim_features(obj, found)
        elif kind == "GPUCluster":
            driver_gates.update(_driver_gates_of(obj))
    extra = config.get("driver_feature_gates") or {}
    if not isinstance(extra, dict):
        raise DraFeatureError("config.driver_feature_gates: expected a mapping gate -> true|false")
    driver_gates.update(extra)
    found.update(DRIVER_PREFIX + name for name, on in driver_gates.items() if on is True)
    if config.get("extended_resource_device_class"):
        found.add("DRAExtendedResource")
    if config.get("device_taint_rules"):
        found.update(("DRADeviceTaintRules", "DRADeviceTaints"))
    if config.get("numa_alignment"):
        found.add(NUMA_FEATURE)
    if config.get("passthrough"):
        found.update((DRIVER_PREFIX + "PassthroughSupport", DRIVER_PREFIX + "DeviceMetadata"))
    names = config.get("features") or []
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise DraFeatureError("config.features: expected a list of feature names")
    found.update(names)
    return sorted(found)


# --- inputs -------------------------------------------------------------------------------------

def _facts_of(value, where):
    """k8s_component_facts facts of one host, from the forms docs/feature-gates.md lists."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise DraFeatureError("%s: expected the k8s_components facts or the inventory shape, got %s" % (where, type(value).__name__))
    if isinstance(value.get("ansible_facts"), dict):
        value = value["ansible_facts"]
    if isinstance(value.get("k8s_components"), dict):
        value = value["k8s_components"]
    if isinstance(value.get("components"), dict):
        for name, component in value["components"].items():
            if name not in kc.COMPONENTS or not isinstance(component, dict):
                raise DraFeatureError("%s.components.%s: unknown component or not a mapping" % (where, name))
            if not isinstance(component.get("feature_gates") or {}, dict):
                raise DraFeatureError("%s.components.%s.feature_gates: expected a mapping" % (where, name))
        return value
    try:
        return kc.from_inventory(value, where)
    except kc.K8sComponentsError as exc:
        raise DraFeatureError(str(exc))


def _parse_date(value, where):
    if isinstance(value, datetime.date):
        return value
    if not isinstance(value, str) or not _DATE_RE.match(value):
        raise DraFeatureError("%s: expected a date YYYY-MM-DD, got %r" % (where, value))
    try:
        return datetime.datetime.strptime(value, "%Y-%m-%d").date()
    except ValueError:
        raise DraFeatureError("%s: %r is not a calendar date" % (where, value))


def _check_acceptances(acceptances):
    if acceptances is None:
        return {}
    if not isinstance(acceptances, dict):
        raise DraFeatureError("acceptances: expected a mapping feature -> {accepted_by, expires, reason}")
    checked = {}
    for name, entry in acceptances.items():
        where = "acceptances.%s" % name
        if not isinstance(entry, dict):
            raise DraFeatureError("%s: expected a mapping {accepted_by, expires: YYYY-MM-DD, reason}" % where)
        unknown = sorted(set(entry) - set(ACCEPTANCE_KEYS))
        if unknown:
            raise DraFeatureError("%s: unknown keys %s; expected %s" % (where, ", ".join(map(str, unknown)), ", ".join(ACCEPTANCE_KEYS)))
        for key in ("accepted_by", "reason"):
            if not isinstance(entry.get(key), str) or not entry[key].strip():
                raise DraFeatureError("%s.%s: expected a non-empty string" % (where, key))
        checked[name] = {"accepted_by": entry["accepted_by"], "reason": entry["reason"],
                         "expires": _parse_date(entry.get("expires"), where + ".expires").isoformat()}
    return checked


def _check_owners(owners):
    if owners is None:
        return {}
    if not isinstance(owners, dict):
        raise DraFeatureError("owners: expected a mapping feature -> owner name")
    for name, owner in owners.items():
        if owner is not None and not isinstance(owner, str):
            raise DraFeatureError("owners.%s: expected a name (string)" % name)
    return dict((k, v.strip()) for k, v in owners.items() if isinstance(v, str) and v.strip())


def _check_driver_gates(value):
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise DraFeatureError("driver_feature_gates: expected a mapping gate -> true|false")
    for name, state in value.items():
        if not isinstance(state, bool):
            raise DraFeatureError("driver_feature_gates.%s: expected true or false, got %r" % (name, state))
    return dict(value)


def _lookup(table, name):
    """The entry for ``name`` in acceptances/owners: the exact name, else the other spelling of a driver gate."""
    if name in table:
        return table[name]
    if name.startswith(DRIVER_PREFIX):
        return table.get(name[len(DRIVER_PREFIX):])
    return None


# --- evaluation ---------------------------------------------------------------------------------

def _names(items):
    items = list(items)
    shown = ", ".join(items[:_SHOWN])
    return shown + (" and %d more" % (len(items) - _SHOWN) if len(items) > _SHOWN else "")


def _source_text(sources):
    if isinstance(sources, dict):
        return "; ".join("%s: %s" % (k, " ".join(str(v).split())) for k, v in sources.items())
    if isinstance(sources, list):
        return "; ".join(" ".join(str(v).split()) for v in sources)
    return " ".join(str(sources).split())


def _least_mature(feature):
    stages = [feature["stage"]] + [c["stage"] for c in feature.get("conflicts") or [] if "stage" in c]
    return min(stages, key=STAGES.index)


def resolve(name, maturity):
    """``(kind, key, entry)`` of a feature name: kind ``kubernetes`` or ``driver``; None when unknown."""
    features = maturity["features"]
    gates = maturity["driver"]["feature_gates"]
    if name.startswith(DRIVER_PREFIX):
        key = name[len(DRIVER_PREFIX):]
        return ("driver", key, gates[key]) if key in gates else None
    if name in features:
        return "kubernetes", name, features[name]
    if name in gates:
        return "driver", name, gates[name]
    return None


def _expand(names, maturity):
    """Canonical names to evaluate: the ones asked for plus what they require; ``{name: required_by}``."""
    order, required_by, unknown = [], {}, []
    queue = [(n, None) for n in names]
    while queue:
        name, parent = queue.pop(0)
        found = resolve(name, maturity)
        if found is None:
            if name not in unknown:
                unknown.append(name)
            continue
        kind, key, entry = found
        canonical = DRIVER_PREFIX + key if kind == "driver" else key
        if canonical not in required_by:
            order.append(canonical)
            required_by[canonical] = []
            for other in entry.get("requires") or []:
                queue.append((DRIVER_PREFIX + other if kind == "driver" else other, canonical))
            for other in entry.get("requires_kubernetes") or []:
                queue.append((other, canonical))
        if parent and parent not in required_by[canonical]:
            required_by[canonical].append(parent)
    return order, required_by, unknown


def _explicit_source(facts, component, name):
    """Where an explicit gate value came from: ``inventory``, ``config`` (kubelet file) or ``flag``."""
    if (facts.get("source") or component.get("source")) == "inventory":
        return "inventory"
    return "config" if name == kc.KUBELET else "flag"


class _Evaluation(object):
    def __init__(self, maturity, hosts, driver_gates, acceptances, owners, today):
        self.maturity = maturity
        self.hosts = hosts
        self.driver_gates = driver_gates
        self.acceptances = acceptances
        self.owners = owners
        self.today = today
        self.findings = []

    def add(self, fid, severity, subject, observed, expected, message, source):
        self.findings.append(gate_mod.finding(fid, severity, subject, observed, expected, message, source))

    def maturity_findings(self, name, entry, report, source):
        stage = report["stage_evaluated"]
        if stage != entry["stage"]:
            self.add("dra_feature.stage_conflict", "info", name, entry["stage"], stage,
                     "%s: the sources disagree on its stage (%s); the least mature reading, %s, is evaluated"
                     % (name, ", ".join(sorted(set([entry["stage"]] + [c["stage"] for c in entry.get("conflicts") or []
                                                                       if "stage" in c]))), stage), source)
        if stage == "alpha":
            acceptance = report["acceptance"]
            if acceptance is None:
                self.add("dra_feature.alpha_not_accepted", "block", name, "alpha, no acceptance",
                         "acceptances.%s {accepted_by, expires, reason}" % name,
                         "%s is alpha and has no explicit acceptance; alpha features stay isolated unless accepted" % name, source)
            elif not acceptance["valid"]:
                self.add("dra_feature.acceptance_expired", "block", name, "expired %s" % acceptance["expires"],
                         "expires on or after %s" % self.today.isoformat(),
                         "%s is alpha and its acceptance by %s expired on %s" % (name, acceptance["accepted_by"], acceptance["expires"]),
                         source)
            else:
                self.add("dra_feature.alpha_accepted", "warn", name, "alpha, accepted by %s until %s" % (
                    acceptance["accepted_by"], acceptance["expires"]), "stable, or beta with an owner",
                    "%s is alpha, accepted by %s until %s (%s); still reported, never silently accepted" % (
                        name, acceptance["accepted_by"], acceptance["expires"], acceptance["reason"]), source)
        elif stage == "beta" and not report["owner"]:
            self.add("dra_feature.beta_without_owner", "warn", name, "beta, no owner", "owners.%s: <name>" % name,
                     "%s is beta and has no named owner (beta features need an owner and a rollback)" % name, source)

    def kubernetes_gates(self, name, entry, report, source):
        gate_name = entry.get("gate")
        if not gate_name:
            report["state"] = "no_gate"
            return
        states = report["gates"]
        for component in entry["components"]:
            reported = False
            for host in sorted(self.hosts):
                facts = self.hosts[host]
                if facts is None:
                    continue
                item = (facts.get("components") or {}).get(component) or {}
                if not item.get("present"):
                    continue
                if item.get("error"):
                    self.add("dra_feature.gate.not_assessed", "block", "%s@%s" % (component, host), item.get("error"),
                             "a readable %s configuration" % component,
                             "%s: the %s configuration of %s (%s) could not be read: %s; its %s gate is not assessed"
                             % (name, component, host, item.get("path"), item["error"], gate_name), source)
                    reported = True
                    continue
                reported = True
                explicit = (item.get("feature_gates") or {}).get(gate_name)
                if explicit is None:
                    enabled, how = entry["default"], "default"
                else:
                    enabled, how = explicit, _explicit_source(facts, item, component)
                states.append({"component": component, "host": host, "enabled": enabled, "source": how,
                               "version": item.get("version")})
                self.version_finding(component, host, item.get("version"))
            if not reported:
                report["missing_components"].append(component)
                self.add("dra_feature.gate.not_assessed", "block", component, None,
                         "%s reported by at least one host" % component,
                         "%s needs the %s gate on %s, but no host reports %s (pass its facts or the inventory shape); "
                         "its state is never assumed" % (name, gate_name, component, component), source)
        self.consistency(name, gate_name, report, source)

    def version_finding(self, component, host, version):
        minor = self.maturity["kubernetes"]
        if version and not (version == minor or version.startswith(minor + ".")):
            if any(f["id"] == "dra_feature.version_mismatch" and f["subject"] == "%s@%s" % (component, host) for f in self.findings):
                return
            self.add("dra_feature.version_mismatch", "warn", "%s@%s" % (component, host), version, minor + ".x",
                     "%s on %s runs %s; the maturity data describes Kubernetes %s" % (component, host, version, minor),
                     "maturity data kubernetes: %s" % minor)

    def consistency(self, name, gate_name, report, source):
        states = report["gates"]
        if not states:
            report["state"] = "not_assessed"
            return
        on = ["%s@%s" % (s["component"], s["host"]) for s in states if s["enabled"]]
        off = ["%s@%s (%s)" % (s["component"], s["host"], s["source"]) for s in states if not s["enabled"]]
        if on and off:
            report["state"] = "mixed"
            self.add("dra_feature.gate_inconsistent", "block", name, "enabled on %s; disabled on %s" % (_names(on), _names(off)),
                     "%s=true on every required component" % gate_name,
                     "%s: gate %s is enabled on %s but not on %s" % (name, gate_name, _names(on), _names(off)), source)
        elif off:
            report["state"] = "disabled"
            self.add("dra_feature.gate_disabled", "block", name, "disabled on %s" % _names(off), "%s=true" % gate_name,
                     "%s is used by the canary but gate %s is off on %s" % (name, gate_name, _names(off)), source)
        else:
            report["state"] = "not_assessed" if report["missing_components"] else "enabled"
        if report["missing_components"] and report["state"] == "enabled":
            report["state"] = "not_assessed"

    def driver_gate(self, name, key, entry, report, source):
        explicit = self.driver_gates.get(key)
        enabled = entry["default"] if explicit is None else explicit
        report["gates"].append({"component": "dra-driver", "host": None, "enabled": enabled,
                                "source": "default" if explicit is None else "driver_feature_gates"})
        report["state"] = "enabled" if enabled else "disabled"
        if not enabled:
            self.add("dra_feature.gate_disabled", "block", name, "%s=false (%s)" % (key, report["gates"][0]["source"]),
                     "%s=true" % key, "%s is used by the canary but the DRA driver's gate %s is off" % (name, key), source)

    def driver_conflicts(self, used):
        gates = self.maturity["driver"]["feature_gates"]
        enabled = set(k for k, v in self.driver_gates.items() if v is True and k in gates)
        enabled.update(k for k, spec in gates.items() if spec["default"] and self.driver_gates.get(k) is None)
        enabled.update(n[len(DRIVER_PREFIX):] for n in used if n.startswith(DRIVER_PREFIX))
        source = _source_text(self.maturity["driver"].get("source") or "maturity data: driver")
        seen = set()
        for key in sorted(enabled):
            for other in gates[key].get("conflicts_with") or []:
                pair = tuple(sorted((key, other)))
                if other in enabled and pair not in seen:
                    seen.add(pair)
                    self.add("dra_feature.driver_conflict", "block", "dra-driver", "%s and %s both enabled" % pair,
                             "at most one of %s, %s" % pair,
                             "the DRA driver's gates %s and %s conflict; enable at most one" % pair, source)
        for key in sorted(self.driver_gates):
            if key not in gates:
                self.add("dra_feature.driver_gate_unknown", "warn", "dra-driver", key, "a gate of the maturity data",
                         "driver_feature_gates names %s, which the maturity data does not know" % key, source)

    def feature(self, name, required_by):
        kind, key, entry = resolve(name, self.maturity)
        source = _source_text(entry.get("sources") or self.maturity["driver"].get("source"))
        acceptance = _lookup(self.acceptances, name)
        if acceptance is not None:
            acceptance = dict(acceptance, valid=acceptance["expires"] >= self.today.isoformat())
        report = {
            "name": name, "kind": kind, "gate": entry.get("gate") if kind == "kubernetes" else key,
            "stage": entry["stage"], "stage_evaluated": _least_mature(entry), "default": entry["default"],
            "components": list(entry.get("components") or []) if kind == "kubernetes" else ["dra-driver"],
            "owner": _lookup(self.owners, name), "acceptance": acceptance, "required_by": required_by,
            "state": None, "gates": [], "missing_components": [], "notes": list(entry.get("notes") or []),
            "conflicts": list(entry.get("conflicts") or []), "source": source,
        }
        self.maturity_findings(name, entry, report, source)
        if kind == "kubernetes":
            self.kubernetes_gates(name, entry, report, source)
        else:
            self.driver_gate(name, key, entry, report, source)
        return report


def evaluate(features, components=None, driver_feature_gates=None, acceptances=None, owners=None, today=None,
             maturity=None):
    """The report of every feature and the findings; see the module docstring and docs/feature-gates.md.

    Returns ``{features, findings, counts, not_assessed, verdict, kubernetes, hosts}``. Raises
    :class:`DraFeatureError` (naming the field) for bad input.
    """
    maturity = load_maturity() if maturity is None else validate_maturity(maturity)
    if features is None:
        features = []
    if not isinstance(features, list) or not all(isinstance(n, str) and n for n in features):
        raise DraFeatureError("features: expected a list of feature names (DRAExtendedResource, driver/PassthroughSupport, ...)")
    if components is None:
        components = {}
    if not isinstance(components, dict):
        raise DraFeatureError("components: expected a mapping host -> k8s_components facts")
    hosts = dict((str(host), _facts_of(value, "components.%s" % host)) for host, value in components.items())
    if today is None:
        today = datetime.datetime.now(datetime.timezone.utc).date()
    else:
        today = _parse_date(today, "today")
    evaluation = _Evaluation(maturity, hosts, _check_driver_gates(driver_feature_gates), _check_acceptances(acceptances),
                             _check_owners(owners), today)
    order, required_by, unknown = _expand(features, maturity)
    for name in unknown:
        evaluation.add("dra_feature.unknown", "block", name, name, "a feature of the Kubernetes %s maturity data" % maturity["kubernetes"],
                       "%s is not in the maturity data; its maturity and gates cannot be assessed" % name,
                       "maturity data kubernetes: %s" % maturity["kubernetes"])
    reports = [evaluation.feature(name, required_by[name]) for name in order]
    if any(n.startswith(DRIVER_PREFIX) for n in order) or evaluation.driver_gates:
        evaluation.driver_conflicts(order)
    if not features:
        evaluation.add("dra_feature.none_listed", "info", "canary", None, "the features the canary uses",
                       "no DRA feature was listed; nothing was checked", "dra_feature_check features")
    findings = evaluation.findings
    assessed = gate_mod.assess(findings)
    return {"features": reports, "findings": findings, "counts": assessed["counts"],
            "not_assessed": assessed["not_assessed"], "verdict": assessed["verdict"],
            "kubernetes": maturity["kubernetes"], "hosts": sorted(h for h, f in hosts.items() if f is not None)}
