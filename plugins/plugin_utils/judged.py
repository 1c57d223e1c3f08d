# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one wrapper every filter plugin puts around a judge (plugins/module_utils/judges): a judge's
JudgeError (bad input, the message names the field and the expected form) becomes the filter error
Ansible reports, prefixed with the filter's name; any other exception is a bug and stays a traceback."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.judges.findings import JudgeError


def judged(prefix, function, *args, **kwargs):
    """``function(*args, **kwargs)``; a JudgeError raised as AnsibleFilterError(prefix + message)."""
    try:
        return function(*args, **kwargs)
    except JudgeError as exc:
        raise AnsibleFilterError(prefix + str(exc)) from exc
