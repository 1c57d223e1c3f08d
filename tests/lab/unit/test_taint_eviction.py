# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit: the taint-eviction controller's toleration and timing logic, and the Deployment ``scale`` plan."""

from __future__ import annotations

import os
import sys

import pytest

LAB = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))), "lab")
if LAB not in sys.path:
    sys.path.insert(0, LAB)

from kubelab.controllers.common import matching_tolerations, toleration_matches  # noqa: E402
from kubelab.controllers.taints import (FOREVER, eviction_delay, min_toleration_seconds, noexecute_taints,  # noqa: E402
                                        plan)
from kubelab.controllers.workloads import scale_plan  # noqa: E402

TAINT = {"key": "k", "value": "v", "effect": "NoExecute"}


@pytest.mark.parametrize("tol, expected", [
    ({"key": "k", "operator": "Equal", "value": "v", "effect": "NoExecute"}, True),
    ({"key": "k", "value": "v"}, True),                       # operator defaults to Equal, empty effect = all
    ({"key": "k", "operator": "Equal", "value": "w"}, False),
    ({"key": "k", "operator": "Exists"}, True),
    ({"key": "k", "operator": "Exists", "effect": "NoSchedule"}, False),
    ({"operator": "Exists"}, True),                           # empty key + Exists tolerates everything
    ({"operator": "Exists", "effect": "NoExecute"}, True),
    ({"operator": "Exists", "effect": "NoSchedule"}, False),
    ({"key": "other", "operator": "Exists"}, False),
    ({"value": "v"}, False),                                  # empty key needs Exists
])
def test_toleration_matches(tol, expected):
    assert toleration_matches(tol, TAINT) is expected


def test_matching_tolerations_first_match_per_taint():
    taints = [TAINT, {"key": "x", "effect": "NoExecute"}]
    first = {"key": "k", "operator": "Exists", "tolerationSeconds": 5}
    later = {"operator": "Exists"}
    assert matching_tolerations(taints, [first, later]) == (True, [first, later])
    assert matching_tolerations(taints, [first]) == (False, [])
    assert matching_tolerations([], []) == (True, [])
    assert matching_tolerations([TAINT], []) == (False, [])


def test_min_toleration_seconds():
    assert min_toleration_seconds([]) == 0
    assert min_toleration_seconds([{"operator": "Exists"}]) == FOREVER
    assert min_toleration_seconds([{"tolerationSeconds": 30}, {"tolerationSeconds": 2}, {}]) == 2
    assert min_toleration_seconds([{"tolerationSeconds": 30}, {"tolerationSeconds": 0}]) == 0
    assert min_toleration_seconds([{"tolerationSeconds": -5}]) == 0


def test_eviction_delay():
    assert eviction_delay([], []) == (None, True)
    assert eviction_delay([TAINT], []) == (0.0, False)
    assert eviction_delay([TAINT], [{"key": "k", "operator": "Exists"}]) == (None, True)
    assert eviction_delay([TAINT], [{"key": "k", "operator": "Exists", "tolerationSeconds": 2}]) == (2.0, True)
    # The first matching toleration counts, even when a later one would tolerate for good (as kube).
    assert eviction_delay([TAINT], [{"key": "k", "operator": "Exists", "tolerationSeconds": 2},
                                    {"operator": "Exists"}]) == (2.0, True)


def test_noexecute_taints():
    node = {"spec": {"taints": [TAINT, {"key": "a", "effect": "NoSchedule"}]}}
    assert noexecute_taints(node) == [TAINT]
    assert noexecute_taints(None) == []


def test_plan_schedules_keeps_and_cancels():
    entry, cancelled = plan(None, 2.0, True, 100.0)
    assert entry == {"created": 100.0, "fire": 102.0, "fired": False} and not cancelled
    # Still tolerated a second later (even with a shorter toleration now): the first schedule stays.
    kept, cancelled = plan(entry, 0.5, True, 101.0)
    assert kept is entry and not cancelled
    # Tolerated for good or the taint gone: cancelled (a pending one gets the Cancelling event).
    assert plan(entry, None, True, 101.0) == (None, True)
    # Untolerated now: the pending one is cancelled and replaced by an immediate one.
    now_entry, cancelled = plan(entry, 0.0, False, 101.0)
    assert now_entry["fire"] == 101.0 and cancelled
    fired = dict(now_entry, fired=True)
    assert plan(fired, 0.0, False, 102.0) == (fired, False)   # a fired eviction is not repeated
    assert plan(fired, None, True, 103.0) == (None, False)     # and leaves without an event


def _rs(name, replicas, created, available=None):
    return {"metadata": {"name": name, "creationTimestamp": created}, "spec": {"replicas": replicas},
            "status": {"availableReplicas": replicas if available is None else available}}


def test_scale_plan_single_active_and_proportional():
    new = _rs("new", 0, "2026-01-02T00:00:00Z")
    old = _rs("old", 3, "2026-01-01T00:00:00Z")
    assert [(rs["metadata"]["name"], n) for rs, n in scale_plan(new, [old], 5, 2, 3, True)] == [("old", 5)]
    assert scale_plan(new, [old], 3, 1, 3, True) == []
    new = _rs("new", 2, "2026-01-02T00:00:00Z", available=0)
    old = _rs("old", 2, "2026-01-01T00:00:00Z")
    # 4 -> 8 (+25% surge = 10): +6 spread by size, the newer of equal sizes first.
    result = {rs["metadata"]["name"]: n for rs, n in scale_plan(new, [old], 8, 2, 4, True)}
    assert sum(result.values()) == 10 and result["new"] >= result["old"]
    assert {rs["metadata"]["name"]: n for rs, n in scale_plan(new, [old], 0, 0, 4, True)} == {"new": 0, "old": 0}
