# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The artifacts_verified role's decision (plugins/filter/artifacts_verified.py): whether the run's rollback
artifacts verify, and which refusal it is when not - no index yet (take the snapshot of this run), entries that
no longer verify (a new gate run), or an index that could not be checked. Pure logic."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


from ansible_collections.gpufleet.dra_gate.plugins.module_utils.judges.phase_role import checked_mapping


def refusal(result, index_stat=None):
    """``result``: artifact_index state=verified's result; ``index_stat``: the stat of the index (run when it did not
    verify). -> {verified, refusal: none | missing | bad | other}."""
    result, index_stat = checked_mapping(result, "result"), checked_mapping(index_stat, "index_stat")
    if result.get("verified") in (True, "true", "True", "yes"):
        return {"verified": True, "refusal": None}
    stat = checked_mapping(index_stat.get("stat"), "index_stat.stat")
    if "stat" in index_stat and not stat.get("exists") and not str(result.get("msg") or "").startswith("run_dir:"):
        kind = "missing"
    elif result.get("bad"):
        kind = "bad"
    else:
        kind = "other"
    return {"verified": False, "refusal": kind}
