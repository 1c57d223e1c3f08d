# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    # The attributes every module of a kind shares. Pick the variant by suffix, e.g.
    # extends_documentation_fragment: [gpufleet.dra_gate.attributes.k8s]. A module's own
    # attributes (check_mode, diff_mode, or a platform of its own) override these key by key.
    DOCUMENTATION = r"""
options: {}
"""

    # Cluster-side modules: member of the k8s action group, run where the API server is reachable.
    K8S = r"""
options: {}
attributes:
  platform:
    description: Runs on the controller or a delegate that can reach the API server.
    support: full
    platforms: all
  action_group:
    description: Action is part of action_group(s), for convenient setting of module_defaults.
    support: full
    membership:
      - gpufleet.dra_gate.k8s
"""

    # Controller-side modules that share options through the controller action group.
    CONTROLLER = r"""
options: {}
attributes:
  platform:
    description: Runs on the controller.
    support: full
    platforms: all
  action_group:
    description: Action is part of action_group(s), for convenient setting of module_defaults.
    support: full
    membership:
      - gpufleet.dra_gate.controller
"""

    # Node-side modules: the Python standard library only, on the node itself.
    NODE = r"""
options: {}
attributes:
  platform:
    description: Runs on the node (Linux) with the Python standard library only.
    support: full
    platforms: posix
"""
