# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: utc_stamp
author: gpufleet maintainers (@gpufleet)
version_added: "0.9.0"
short_description: The current time as every record of this collection stamps it
description:
  - Returns the current UTC time from the collection's one clock (C(module_utils/common/clock.py)) - the stamp
    the modules write, so a role's step times and a module's compare and subtract exactly.
  - Use it instead of Jinja's C(now()) with a format string in a role.
options:
  form:
    description:
      - C(rfc3339) - the recorded stamp, RFC 3339 UTC with microseconds (C(2026-12-02T01:20:03.123456Z)).
      - C(name) - the stamp in a file or directory name, whole seconds, no colons (C(20261202T012003Z)).
    type: str
    default: rfc3339
    choices: [rfc3339, name]
notes:
  - Takes no terms.
"""

EXAMPLES = r"""
- name: Record when the step started
  ansible.builtin.set_fact:
    step_started_at: "{{ lookup('gpufleet.dra_gate.utc_stamp') }}"

- name: A run id from the time
  ansible.builtin.set_fact:
    run_id: "{{ lookup('gpufleet.dra_gate.utc_stamp', form='name') }}"
"""

RETURN = r"""
_raw:
  description: One stamp (a list of one string, as lookups return).
  type: list
  elements: str
"""

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.common import clock


class LookupModule(LookupBase):

    def run(self, terms, variables=None, **kwargs):
        if terms:
            raise AnsibleLookupError("utc_stamp: takes no terms, got %r" % (terms,))
        form = kwargs.pop("form", "rfc3339")
        if kwargs:
            raise AnsibleLookupError("utc_stamp: unknown option(s) %s; the one option is form" % ", ".join(sorted(kwargs)))
        if form not in ("rfc3339", "name"):
            raise AnsibleLookupError("utc_stamp: form: expected rfc3339 or name, got %r" % (form,))
        if form == "name":
            return [clock.name_stamp()]
        return [clock.utc_now()]
