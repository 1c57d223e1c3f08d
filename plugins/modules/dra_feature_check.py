#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: dra_feature_check
short_description: Check the DRA features a canary uses against their maturity and the gates of every component
version_added: 0.1.0
description:
  - Reports every DRA feature the canary's configuration uses with its maturity (Kubernetes 1.37 data shipped as
    C(data/dra_features/kubernetes-1.37.yml), each row with its sources) and its gate state on each component and
    host that needs it, from the facts of M(gpufleet.dra_gate.k8s_component_facts) (or the inventory shape of a
    managed control plane).
  - An alpha feature without an explicit, unexpired acceptance blocks; an accepted alpha feature is still a
    C(warn) finding, never silently accepted. A beta feature without a named owner warns.
  - A gate enabled on one required component (or host) but not on another blocks, naming both; a gate off on
    every required component blocks. A required component that no host reports, or whose file could not be
    parsed, blocks (a C(.not_assessed) finding) - the state is never assumed. A gate absent from a component's
    flags has the data's default, and the report says C(default).
  - Where sources disagree on a stage, the least mature reading is evaluated (an C(info) finding says so).
  - The NVIDIA DRA driver's gates (C(driver/<Gate>)) are checked against O(driver_feature_gates), and
    conflicting driver gates that are both on block.
  - Runs on the controller (delegate it to C(localhost)); reads only. Rules and data are described in
    docs/feature-gates.md.
author:
  - gpufleet maintainers (@gpufleet)
attributes:
  check_mode:
    description: Reads only; check mode gives the same report.
    support: full
  diff_mode:
    description: Returns no diff; nothing is changed.
    support: none
extends_documentation_fragment:
  - gpufleet.dra_gate.attributes.controller
options:
  features:
    description:
      - The feature names the canary's configuration uses. Kubernetes features by gate name (for example
        C(DRAExtendedResource)); the DRA driver's gates as C(driver/<Gate>) (for example C(driver/PassthroughSupport)).
      - Features a listed one requires (for example C(DRAResourceClaimDeviceStatus) for C(DRADeviceBindingConditions))
        are added.
    type: list
    elements: str
    default: []
  config:
    description:
      - A canary configuration from which the used features are derived and added to O(features) (see
        C(features_for) in docs/feature-gates.md) - keys C(manifests) (Kubernetes objects the canary applies),
        C(driver_feature_gates), C(extended_resource_device_class), C(device_taint_rules), C(numa_alignment),
        C(passthrough) and C(features).
    type: dict
  components:
    description:
      - Host name -> the C(k8s_components) facts of M(gpufleet.dra_gate.k8s_component_facts) (a host's
        C(ansible_facts) is unwrapped), or the inventory shape of a managed control plane
        (component name -> C(version), C(image), C(feature_gates), C(runtime_config), C(settings)).
      - Pass the canary's control-plane hosts and GPU nodes; a null value (a host that gave no facts) is ignored.
    type: dict
    default: {}
  driver_feature_gates:
    description:
      - The DRA driver's feature gates as set (GPUCluster C(spec.draDriver.featureGates)), gate -> bool. A gate not
        listed has the data's default.
    type: dict
    default: {}
  acceptances:
    description:
      - Feature -> C({accepted_by, expires, reason}) with C(expires) a date C(YYYY-MM-DD) (accepted through that
        day). Needed for every alpha feature.
    type: dict
    default: {}
  owners:
    description:
      - Feature -> the name of its owner. Needed for every beta feature.
    type: dict
    default: {}
  today:
    description:
      - The date acceptances are compared with, C(YYYY-MM-DD); defaults to today (UTC). For tests and replays.
    type: str
  maturity_file:
    description:
      - A maturity file of the same format; defaults to the shipped Kubernetes 1.37 data.
    type: path
  fail_on:
    description:
      - The verdict at which the task fails. The report and findings are returned either way.
    type: str
    choices: [block, warn, never]
    default: block
notes:
  - The shipped data describes Kubernetes 1.37; a component that reports another version gives a C(warn) finding.
seealso:
  - module: gpufleet.dra_gate.k8s_component_facts
  - module: gpufleet.dra_gate.compat_check
"""

EXAMPLES = r"""
- name: Read the gates on the control plane and the canary nodes
  gpufleet.dra_gate.k8s_component_facts:

- name: Check the canary's DRA features
  gpufleet.dra_gate.dra_feature_check:
    features: [DRAExtendedResource, driver/PassthroughSupport]
    components: "{{ dict(ansible_play_hosts | zip(ansible_play_hosts | map('extract', hostvars, ['ansible_facts', 'k8s_components']))) }}"
    driver_feature_gates: {PassthroughSupport: true, DeviceMetadata: true}
    acceptances:
      driver/PassthroughSupport: {accepted_by: gpu-platform-team, expires: "2027-03-31", reason: "VM canary, dedicated nodes"}
      driver/DeviceMetadata: {accepted_by: gpu-platform-team, expires: "2027-03-31", reason: "required by passthrough"}
    owners: {DRAConsumableCapacity: alice}
  run_once: true
  delegate_to: localhost
  register: dra_features

- name: A managed control plane given as inventory data
  gpufleet.dra_gate.dra_feature_check:
    config:
      manifests: "{{ canary_manifests }}"
    components: "{{ {'managed-control-plane': dra_gate_control_plane_components} | combine(node_component_facts) }}"
    fail_on: never
  run_once: true
  delegate_to: localhost
"""

RETURN = r"""
features:
  description: One report per feature evaluated, in the order asked (required ones after the first that needs them).
  returned: success
  type: list
  elements: dict
  contains:
    name:
      description: The feature name (C(driver/<Gate>) for a driver gate).
      type: str
      sample: DRAExtendedResource
    kind:
      description: C(kubernetes) or C(driver).
      type: str
    gate:
      description: The feature gate's name; null for a feature without a gate (a standard attribute).
      type: str
    stage:
      description: The stage in the data (C(alpha), C(beta), C(stable)).
      type: str
    stage_evaluated:
      description: The least mature stage of every reading the data records; the rules use this one.
      type: str
    default:
      description: The gate's default in the data.
      type: bool
    components:
      description: The components that need the gate (C(dra-driver) for a driver gate).
      type: list
      elements: str
    owner:
      description: The named owner, or null.
      type: str
    acceptance:
      description: C(accepted_by), C(expires), C(reason) and C(valid) (not expired), or null.
      type: dict
    required_by:
      description: The features that added this one as a requirement.
      type: list
      elements: str
    state:
      description: C(enabled), C(disabled), C(mixed), C(not_assessed) or C(no_gate).
      type: str
    gates:
      description:
        - One entry per component and host - C(component), C(host), C(enabled), C(source) (C(flag), C(config),
          C(inventory), C(driver_feature_gates) or C(default) when the gate was not set) and C(version).
      type: list
      elements: dict
    missing_components:
      description: Required components that no host reported.
      type: list
      elements: str
    notes:
      description: Notes the data records.
      type: list
      elements: str
    conflicts:
      description: Other readings of the feature the data records, each with its source.
      type: list
      elements: dict
    source:
      description: The data's sources of the feature.
      type: str
findings:
  description: Findings in the shape of compat_check's (C(id), C(severity), C(subject), C(observed), C(expected), C(message), C(source)).
  returned: success
  type: list
  elements: dict
  sample: [{"id": "dra_feature.alpha_accepted", "severity": "warn", "subject": "driver/PassthroughSupport",
            "observed": "alpha, accepted by gpu-platform-team until 2027-03-31", "expected": "stable, or beta with an owner",
            "message": "driver/PassthroughSupport is alpha, accepted ...", "source": "../shared/DOMAIN.md ..."}]
counts:
  description: Findings per severity (C(block), C(warn), C(info)) and C(not_assessed).
  returned: success
  type: dict
  sample: {"block": 0, "warn": 2, "info": 0, "not_assessed": 0}
not_assessed:
  description: Every check that could not be assessed (C(id), C(subject), C(severity), C(reason)).
  returned: success
  type: list
  elements: dict
verdict:
  description: C(block), C(warn) or C(pass).
  returned: success
  type: str
  sample: warn
gate:
  description: The gate decision, C(verdict), C(fail_on), C(failed), C(reason).
  returned: success
  type: dict
kubernetes:
  description: The Kubernetes minor version the maturity data describes.
  returned: success
  type: str
  sample: "1.37"
hosts:
  description: The hosts whose facts were evaluated.
  returned: success
  type: list
  elements: str
used_features:
  description: The feature names evaluated as given (O(features) plus those derived from O(config)), sorted.
  returned: success
  type: list
  elements: str
started_at:
  description: When the check started (RFC 3339, UTC).
  returned: always
  type: str
finished_at:
  description: When the check finished (RFC 3339, UTC).
  returned: always
  type: str
duration_seconds:
  description: Seconds the check took.
  returned: always
  type: float
"""


from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.common.module_run import ModuleRun
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.compat import dra_features
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.judges import verdict as gate

ARGUMENT_SPEC = dict(
    features=dict(type="list", elements="str", default=[]),
    config=dict(type="dict"),
    components=dict(type="dict", default={}),
    driver_feature_gates=dict(type="dict", default={}),
    acceptances=dict(type="dict", default={}),
    owners=dict(type="dict", default={}),
    today=dict(type="str"),
    maturity_file=dict(type="path"),
    fail_on=dict(type="str", default="block", choices=["block", "warn", "never"]),
)


def read_maturity(module, path):
    if not path:
        return None
    try:
        with open(path, encoding="utf-8") as handle:
            return dra_features.load_maturity(handle.read())
    except (IOError, OSError) as exc:
        module.fail_json(msg="maturity_file: cannot read %s: %s" % (path, exc.strerror or exc))
    except dra_features.DraFeatureError as exc:
        module.fail_json(msg="%s (%s)" % (exc, path))
    return None


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    run = ModuleRun(module, digits=6)
    params = module.params
    maturity = read_maturity(module, params["maturity_file"])
    try:
        used = sorted(set(params["features"]) | set(dra_features.features_for(params["config"])))
        result = dra_features.evaluate(used, components=params["components"], driver_feature_gates=params["driver_feature_gates"],
                                       acceptances=params["acceptances"], owners=params["owners"], today=params["today"],
                                       maturity=maturity)
    except dra_features.DraFeatureError as exc:
        module.fail_json(msg=str(exc))
    decision = gate.decide(result["verdict"], params["fail_on"], result["findings"])
    result.update(changed=False, used_features=used, gate=decision, msg=decision["reason"])
    run.timed(result)
    if decision["failed"]:
        module.fail_json(**result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
