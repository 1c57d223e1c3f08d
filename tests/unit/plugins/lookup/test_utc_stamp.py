# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The utc_stamp lookup: the roles' step times come from the modules' one clock (issue 30)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import time

import pytest
from ansible.errors import AnsibleError

from ansible_collections.gpufleet.dra_gate.plugins.lookup.utc_stamp import LookupModule
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.common import clock


@pytest.fixture
def lookup():
    return LookupModule()


def test_rfc3339_with_microseconds_by_default(lookup):
    before = time.time()
    [stamp] = lookup.run([], variables={})
    after = time.time()
    assert len(stamp) == len("2026-12-02T01:20:03.123456Z") and stamp.endswith("Z")
    assert before - 1e-6 <= clock.parse(stamp) <= after


def test_name_form(lookup):
    [stamp] = lookup.run([], variables={}, form="name")
    assert datetime.datetime.strptime(stamp, clock.NAME_FORMAT)


def test_terms_and_bad_form_are_errors(lookup):
    with pytest.raises(AnsibleError, match="takes no terms"):
        lookup.run(["x"], variables={})
    with pytest.raises(AnsibleError, match="form"):
        lookup.run([], variables={}, form="epoch")
    with pytest.raises(AnsibleError, match="unknown option"):
        lookup.run([], variables={}, fmt="%Y")
