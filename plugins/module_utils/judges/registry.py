# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which judge derives a phase's findings from its results: ``JUDGES[phase](results, check_mode)``.

The recorder (``gate_evidence``) looks a phase up here; a phase without a judge has only the findings
its record brings. Phase-specific findings are derived in Python, never in a role's Jinja.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.judges import dra_acceptance
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.judges import dra_canary
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.judges import drain
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.judges import rollback
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.judges import snapshot
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.judges import upgrade


JUDGES = {"snapshot": snapshot.snapshot_findings, "upgrade": upgrade.upgrade_findings, "rollback": rollback.rollback_findings,
          "dra_canary": dra_canary.dra_canary_findings, "dra_acceptance": dra_acceptance.dra_acceptance_findings,
          "drain": drain.drain_findings}
