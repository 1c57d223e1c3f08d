# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The whole gate's rehearsal (``./dra-gate rehearse``) against its target: at most 10 minutes on 2 cores.

Three lab clusters (tests/gate_lab.py: the upgrade's canary and production with the GPU Operator 26.3.1, the
DRA canary) are started in this process and ``playbooks/site.yml`` runs once per cluster in the gate's order
(tests/tools/devtool/rehearsal.py, STEPS). Reported: the labs' start, every phase's wall time (its evidence
record's started_at to finished_at), every ansible-playbook's (the phases plus what the playbook adds: the
skipped phases' tasks, the input checks, Ansible's start-up), the total against the target, PASS/MISS, and
both decisions. Exit 1 when a playbook failed.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for path in (os.path.join(REPO, "tests", "tools"), os.path.join(REPO, "tests"), os.path.join(REPO, "lab")):
    sys.path.insert(0, path)

from devtool import rehearsal  # noqa: E402  pylint: disable=wrong-import-position
from goals import goal  # noqa: E402  pylint: disable=wrong-import-position


def main():
    root = tempfile.mkdtemp(prefix="bench-rehearsal-")
    os.chmod(root, 0o700)
    outcome = rehearsal.rehearsal(rehearsal.Path(root), print)
    rehearsal.report(outcome, print)
    total = sum(s for w, s in outcome.timings if s is not None and (w.endswith("(ansible-playbook)") or w == "labs"))
    goal("the whole gate's rehearsal (three labs, site.yml), wall", "%.1f s%s" % (
        total, "" if not outcome.rc else ", a playbook failed"), "<= %d s" % rehearsal.TARGET_SECONDS,
        total <= rehearsal.TARGET_SECONDS and not outcome.rc)
    print("(logs and evidence: %s)" % root)
    return outcome.rc


if __name__ == "__main__":
    sys.exit(main())
