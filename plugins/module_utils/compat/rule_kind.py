# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The interface of a compatibility-matrix rule kind: pure logic, no I/O.

A rule kind is everything about one ``rule:`` of a matrix row in one class: how its ``values``
are validated when the matrix loads, how a row is compiled once per evaluation, and how it is
checked against the cluster and against each node. :data:`compat_rules.RULE_KINDS` registers one
instance per rule name; :mod:`compat_matrix` validates through it and :func:`compat.evaluate` runs
it. The evaluator (``ev``) offers the normalised options and the reporting methods (``ev.add``,
``ev.add_once``, ``ev.missing_row``, ``ev.unassessed``, ``ev.parse``).

Every kind's ``check`` and ``check_node`` is called even when the matrix has no row of that kind
(``rows`` empty), so a kind reports its own missing row.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.compat.fields import _no_unknown


class RuleKind(object):
    """One rule kind. Subclasses set :attr:`name` and override what they need."""

    #: The ``rule`` name of the matrix rows this kind evaluates.
    name = None
    #: The ``values`` keys a row may have (checked after :meth:`validate`); None = not checked here.
    value_keys = None

    def validate(self, row, values, where):
        """Check ``values`` (and ``row``) at load time; report through ``where.fail`` (MatrixError)."""

    def validate_row(self, row, values, where):
        self.validate(row, values, where)
        if self.value_keys is not None:
            _no_unknown(values, self.value_keys, where)

    def compile(self, row, ev):
        """The row in the form :meth:`check` reads, built once per evaluation (bounds parsed)."""
        return row

    def prepare(self, ev, rows):
        """After every row is compiled and before any check: set what other checks of this kind read."""

    def check(self, ev, rows):
        """Cluster-wide findings (``ev.add``); ``rows`` are this kind's compiled rows, maybe none."""

    def check_node(self, ev, rows, node, out):
        """Findings for one node (a :class:`compat_node_kinds.NodeView`), appended to ``out`` as
        :func:`node_finding` tuples. Memoised on the node's facts signature, so it must depend on
        ``node`` and the evaluation only."""


def node_finding(fid, severity, observed, expected, message, source):
    """A per-node finding without its subject (the memoised form; the subject is the host)."""
    return (fid, severity, None if observed is None else str(observed), None if expected is None else str(expected),
            message, source)


def first(rows):
    return rows[0] if rows else None
