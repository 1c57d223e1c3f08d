# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""judges/artifacts_verified_role.py: verified, or which refusal (missing, bad, other), on recorded results."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.judges import artifacts_verified_role as av
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.judges.phase_role import JudgeError

SKIPPED_STAT = {"changed": False, "skipped": True, "skip_reason": "Conditional result was False"}


def test_verified():
    assert av.refusal({"verified": True, "checked": 3}, SKIPPED_STAT) == {"verified": True, "refusal": None}


def test_refusal_ladder():
    no_index = {"failed": False, "verified": False, "msg": "index.json does not exist", "index_path": "/r/artifacts/index.json"}
    assert av.refusal(no_index, {"stat": {"exists": False}}) == {"verified": False, "refusal": "missing"}
    # a run directory refused (shared, a link) is not "no snapshot yet"
    assert av.refusal({"verified": False, "msg": "run_dir: /r is a symlink"}, {"stat": {"exists": False}})["refusal"] == "other"
    bad = {"verified": False, "bad": [{"path": "/r/a", "reason": "sha256 differs"}], "msg": "1 entry does not verify"}
    assert av.refusal(bad, {"stat": {"exists": True}})["refusal"] == "bad"
    assert av.refusal({"verified": False, "msg": "etcdutl not found"}, {"stat": {"exists": True}})["refusal"] == "other"
    assert av.refusal({}, None)["refusal"] == "other"
    with pytest.raises(JudgeError, match="index_stat: expected a mapping"):
        av.refusal({}, "nope")
