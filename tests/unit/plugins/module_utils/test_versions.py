# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.common.versions import (
    compare_prefix,
    parse_version,
    release_key,
    version_in_range,
)


@pytest.mark.parametrize("text,release", [
    ("1.37.0", "1.37.0"), ("v1.37.2", "1.37.2"), ("1.34.2+k3s1", "1.34.2"), ("v1.33.5-eks-113cf36", "1.33.5"),
    ("1.6.20~ds1", "1.6.20"), ("2.3.0-rc.1", "2.3.0"), ("580.159.04", "580.159.4"), ("26.7", "26.7.0"),
])
def test_parse(text, release):
    assert parse_version(text).release() == release


@pytest.mark.parametrize("text", ["", "abc", "1.x", None, [], "v", "1..2"])
def test_not_versions(text):
    assert parse_version(text) is None


def test_order():
    assert parse_version("2.3.0-rc.1") < parse_version("2.3.0") < parse_version("2.3.1")
    assert parse_version("1.6.20~ds1") == parse_version("1.6.20")
    assert parse_version("1.37") == parse_version("1.37.0")
    assert parse_version("580.159.04") < parse_version("580.173.02")


def test_range_at_bound_precision():
    assert version_in_range(parse_version("2.3.9"), "2.0", "2.3")
    assert not version_in_range(parse_version("2.4.0"), "2.0", "2.3")
    assert not version_in_range(parse_version("1.7.27"), "2.0", "2.3")
    assert compare_prefix("1.34.1", "1.34.2") == -1
    with pytest.raises(ValueError):
        compare_prefix("x", "1.0")


@pytest.mark.parametrize("text, key", [
    ("26.3.x", "26.3"), ("26.3.X", "26.3"), ("26.3.*", "26.3"), ("v26.7.0", "26.7.0"), ("26.7.0", "26.7.0"),
    (" 26.6.x ", "26.6"), ("26.3", "26.3"),
])
def test_release_key(text, key):
    assert release_key(text) == parse_version(key)


@pytest.mark.parametrize("text", ["26", "next", "", None, 26.6, "x.x"])
def test_release_key_refuses(text):
    assert release_key(text) is None


def test_release_key_orders_releases():
    names = ["26.7.0", "26.3.x", "v26.6.2", "25.10.1"]
    assert sorted(names, key=release_key) == ["25.10.1", "26.3.x", "v26.6.2", "26.7.0"]
