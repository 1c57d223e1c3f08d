# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    # The root prefix of every node-side module: each node path is read (and written) under it,
    # so a recorded tree from a real node is a test fixture and a support bundle at once.
    DOCUMENTATION = r"""
options:
  root:
    description:
      - Root prefix under which every node path of this module is read and written.
        C(/) is the live node; a directory stands for a recorded node tree.
    type: path
    default: /
"""
