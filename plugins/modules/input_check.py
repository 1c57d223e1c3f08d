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
  - Runs the input rules of one phase's role (C(plugins/module_utils/inputs_<role>.py)) over the role's
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
    choices: [operator_upgrade]
  values:
    description: The role's variables, as the role sees them (name -> value).
    type: dict
    required: true
  context:
    description: What some rules need besides the variables, for example the inventory's C(groups).
    type: dict
    default: {}
"""

EXAMPLES = r"""
- name: Check the upgrade's inputs
  gpufleet.dra_gate.input_check:
    role: operator_upgrade
    values:
      operator_upgrade_kubeconfig: "{{ operator_upgrade_kubeconfig }}"
      operator_upgrade_upgrade_scope: "{{ operator_upgrade_upgrade_scope }}"
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

from ansible_collections.gpufleet.dra_gate.plugins.module_utils import inputs
from ansible_collections.gpufleet.dra_gate.plugins.module_utils import inputs_operator_upgrade

RULES = {
    "operator_upgrade": inputs_operator_upgrade.RULES,
}


def main():
    module = AnsibleModule(
        argument_spec=dict(
            role=dict(type="str", required=True, choices=sorted(RULES)),
            values=dict(type="dict", required=True),
            context=dict(type="dict", default={}),
        ),
        supports_check_mode=True,
    )
    role = module.params["role"]
    rules = RULES[role]
    values = dict(module.params["values"])
    values.update({"__context__": module.params["context"] or {}})
    failed = inputs.failures(rules, values)
    if failed:
        module.fail_json(msg=inputs.message(role, failed), failed_inputs=failed, checked=len(rules))
    module.exit_json(changed=False, failed_inputs=[], checked=len(rules))


if __name__ == "__main__":
    main()
