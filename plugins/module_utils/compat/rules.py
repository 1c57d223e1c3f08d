# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The table of compatibility-matrix rule kinds: ``rule`` name -> :class:`compat_rule_kind.RuleKind`.

The one registry: :mod:`compat_matrix` validates each row's ``values`` through it and
:func:`compat.evaluate` compiles and checks through it, in this order (the order of the findings).
docs/compat-matrix.md describes each kind.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.compat import cluster_kinds as cluster
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.compat import node_kinds as node
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.compat import state_kinds as state
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.compat.rule_kind import RuleKind

#: Evaluation order: ``prepare`` of every kind, then ``check`` in this order, then ``check_node`` per node.
_ORDER = (
    cluster.NoData(), cluster.Lifecycle(), node.VersionRange(), node.KubeletSkew(), node.ContainerdCri(),
    node.DriverBranch(), node.DriverPointRelease(), cluster.Components(), cluster.ExclusiveResources(),
    cluster.DraFloor(), cluster.Passthrough(), cluster.PassthroughAccepted(), cluster.DistributionStatus(),
    state.ApiServed(), state.SingleBackend(), state.DraPoolBackend(), state.ExtendedResourceBridge(), state.CrState(),
    state.StuckClaims(), cluster.UpgradeHops(),
)

RULE_KINDS = dict((kind.name, kind) for kind in _ORDER)
ORDERED_KINDS = _ORDER
#: The kinds with a per-node check, in evaluation order.
NODE_KINDS = tuple(kind for kind in _ORDER if type(kind).check_node is not RuleKind.check_node)
