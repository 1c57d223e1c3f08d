# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    # The identifier of a gate run, shared by the modules that record or read a run's evidence.
    DOCUMENTATION = r"""
options:
  run_id:
    description:
      - Identifier of the gate run; letters, digits, C(.), C(_), C(-), at most 128, starting with a
        letter or digit.
    type: str
    required: true
"""
