# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How a benchmark reports a goal: one printed line (``goal <what>: <measured> (goal <target>)  PASS|MISS``) and,
when ``./dra-gate bench`` runs it (``DRA_GATE_BENCH_RESULTS`` names a JSON Lines file), one JSON line there, so
that the bench command prints every benchmark's goals in one table. Standard library only; not shipped (bench/ is
in galaxy.yml's build_ignore)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import sys

RESULTS_ENV = "DRA_GATE_BENCH_RESULTS"


def bench_name():
    return os.path.splitext(os.path.basename(sys.argv[0]))[0]


def goal(what, measured, target, ok, detail=""):
    """Print and record one goal: ``what`` (e.g. "node facts vs ping, wall"), ``measured`` and ``target`` as text
    (the measured number with its unit, the goal with its comparison), ``ok`` whether it is met; ``detail`` (e.g.
    "7 rounds") is printed and recorded beside it."""
    status = "PASS" if ok else "MISS"
    print("goal %s: %s (goal %s)%s  %s" % (what, measured, target, " [%s]" % detail if detail else "", status))
    path = os.environ.get(RESULTS_ENV)
    if path:
        with open(path, "a") as handle:
            handle.write(json.dumps({"bench": bench_name(), "goal": what, "measured": measured, "target": target,
                                     "status": status, "detail": detail}, sort_keys=True) + "\n")
    return ok


def quick_flag(parser):
    """Add ``--quick`` (a smaller run that finishes in seconds to a minute, the same goals) to an argparse parser."""
    parser.add_argument("--quick", action="store_true", help="a smaller run (./dra-gate bench --quick)")
    return parser
