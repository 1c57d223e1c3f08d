#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: input_check
short_description: Check a phase's inputs, one rule per condition, and name only the failed ones
version_added: 0.9.0
description:
  - Runs the input rules of one phase's role (C(plugins/module_utils/inputs/<role>.py)) over the role's
    variables and fails with one message that lists only the failed conditions - each with the inventory
    setting (C(dra_gate_*)), the role variable, what was given and what is expected.
  - Run it once on the controller (C(run_once), C(delegate_to=localhost)) before the role's argument spec
    validation, so that a mistake is printed once per play, not once per host.
  - Read-only; supports check mode.
author:
  - gpufleet maintainers (@gpufleet)
options:
  role:
    description: The role whose rules apply.
    type: str
    required: true
    choices: [artifacts_verified, containerd_cdi, dra_acceptance, dra_canary, drain_waves, etcd_snapshot,
      operator_rollback, operator_upgrade, phase, preflight, snapshot]
  values:
    description: The role's variables, as the role sees them (name -> value).
    type: dict
    required: true
  context:
    description: What some rules need besides the variables, for example the inventory's C(groups).
    type: dict
    default: {}
  title:
    description:
      - What the error message starts with; empty = O(role). The phase skeleton gives the phase's name, so that a
        user reads which phase refused.
    type: str
    default: ""
  fields:
    description:
      - The variable a user knows for a rule's role variable (rule field -> name), named in the message instead.
        The phase skeleton names the phase role's own variable (C(operator_upgrade_run_id) for C(phase_run_id)).
    type: dict
    default: {}
"""

EXAMPLES = r"""
- name: Check the upgrade's inputs
  gpufleet.dra_gate.input_check:
    role: operator_upgrade
    values:
      operator_upgrade_kubeconfig: "{{ operator_upgrade_kubeconfig }}"
      operator_upgrade_scope: "{{ operator_upgrade_scope }}"
  run_once: true
  delegate_to: localhost
"""

RETURN = r"""
failed_inputs:
  description: The failed conditions (empty when every input is fine).
  returned: always
  type: list
  elements: dict
  contains:
    field: {description: The role variable., type: str}
    setting: {description: The inventory setting that feeds it., type: str}
    got: {description: What was given (shortened)., type: str}
    expected: {description: The expected form., type: str}
    reason: {description: Why it fails., type: str}
checked:
  description: How many rules were checked.
  returned: always
  type: int
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.inputs import rules as inputs
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.inputs import artifacts_verified as inputs_artifacts_verified
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.inputs import containerd_cdi as inputs_containerd_cdi
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.inputs import dra_acceptance as inputs_dra_acceptance
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.inputs import dra_canary as inputs_dra_canary
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.inputs import drain_waves as inputs_drain_waves
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.inputs import etcd_snapshot as inputs_etcd_snapshot
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.inputs import operator_rollback as inputs_operator_rollback
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.inputs import operator_upgrade as inputs_operator_upgrade
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.inputs import phase as inputs_phase
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.inputs import preflight as inputs_preflight
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.inputs import snapshot as inputs_snapshot

RULES = {
    "artifacts_verified": inputs_artifacts_verified.RULES,
    "containerd_cdi": inputs_containerd_cdi.RULES,
    "dra_acceptance": inputs_dra_acceptance.RULES,
    "dra_canary": inputs_dra_canary.RULES,
    "drain_waves": inputs_drain_waves.RULES,
    "etcd_snapshot": inputs_etcd_snapshot.RULES,
    "operator_rollback": inputs_operator_rollback.RULES,
    "operator_upgrade": inputs_operator_upgrade.RULES,
    "phase": inputs_phase.RULES,
    "preflight": inputs_preflight.RULES,
    "snapshot": inputs_snapshot.RULES,
}


def main():
    module = AnsibleModule(
        argument_spec=dict(
            role=dict(type="str", required=True, choices=sorted(RULES)),
            values=dict(type="dict", required=True),
            context=dict(type="dict", default={}),
            title=dict(type="str", default=""),
            fields=dict(type="dict", default={}),
        ),
        supports_check_mode=True,
    )
    role = module.params["role"]
    rules = RULES[role]
    values = dict(module.params["values"])
    values.update({"__context__": module.params["context"] or {}})
    failed = inputs.failures(rules, values)
    names = module.params["fields"] or {}
    for item in failed:
        item["field"] = str(names.get(item["field"]) or item["field"])
    if failed:
        module.fail_json(msg=inputs.message(module.params["title"] or role, failed), failed_inputs=failed, checked=len(rules))
    module.exit_json(changed=False, failed_inputs=[], checked=len(rules))


if __name__ == "__main__":
    main()
