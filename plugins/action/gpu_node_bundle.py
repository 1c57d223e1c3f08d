# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for ``gpufleet.dra_gate.gpu_node_bundle``: completes the returned ``gpu_node``
facts on the controller exactly as the ``gpu_node_facts`` action plugin does (containerd and CDI
parsed here, raw texts dropped). The bundle itself is written on the node by the module."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.dra_gate.plugins.action.gpu_node_facts import ActionModule as FactsActionModule


class ActionModule(FactsActionModule):
    FACTS_PATH = ("gpu_node",)
