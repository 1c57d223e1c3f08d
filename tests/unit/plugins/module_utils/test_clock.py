# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one clock: one recorded precision (microseconds), one parser for every older precision."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import re
from decimal import Decimal

import pytest

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.common import clock

RECORDED = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


def test_rfc3339_is_utc_with_microseconds_rounded():
    # what operator_verify, prometheus_query and control_suite asserted of their copies
    assert clock.rfc3339(0) == "1970-01-01T00:00:00.000000Z"
    assert clock.rfc3339(0.5) == "1970-01-01T00:00:00.500000Z"
    assert clock.rfc3339(1796197200.25) == "2026-12-02T07:40:00.250000Z"
    assert clock.rfc3339(1796174403.1234) == "2026-12-02T01:20:03.123400Z"
    assert clock.rfc3339(1796000000.9999996) == "2026-11-30T00:53:21.000000Z"  # rounds up into the next second
    assert clock.rfc3339(1796197200) == "2026-12-02T07:40:00.000000Z"
    assert clock.rfc3339(None) is None


@pytest.mark.parametrize("bad", ["1796197200", True, [1]])
def test_rfc3339_refuses_what_is_not_a_number(bad):
    with pytest.raises(ValueError, match="seconds since the epoch"):
        clock.rfc3339(bad)


def test_utc_now_and_datetimes_have_the_one_form():
    assert RECORDED.match(clock.utc_now())
    assert clock.to_datetime(datetime.datetime(2026, 12, 2, 7, 40, 0, 7, tzinfo=datetime.timezone.utc)) == \
        "2026-12-02T07:40:00.000007Z"
    assert clock.to_datetime(datetime.datetime(2026, 12, 2, 7, 40)) == "2026-12-02T07:40:00.000000Z"  # naive = UTC
    plus_one = datetime.timezone(datetime.timedelta(hours=1))
    assert clock.to_datetime(datetime.datetime(2026, 12, 2, 8, 40, tzinfo=plus_one)) == "2026-12-02T07:40:00.000000Z"
    # the form Ansible's to_datetime and Python's %f read
    assert datetime.datetime.strptime(clock.utc_now(), clock.FORMAT)


@pytest.mark.parametrize("text, epoch", [
    ("2026-12-02T07:40:00Z", 1796197200.0),                   # seconds (Kubernetes metadata, older records)
    ("2026-12-02T07:40:00.250Z", 1796197200.25),              # milliseconds (older control_suite records)
    ("2026-12-02T07:40:00.250000Z", 1796197200.25),           # microseconds (the recorded form)
    ("2026-12-02T07:40:00.250000000Z", 1796197200.25),        # nanoseconds (older drain/claim records, the lab)
    ("2026-12-02T08:40:00.5+01:00", 1796197200.5),            # numeric offset
    ("2026-12-02t07:40:00z", 1796197200.0),
])
def test_parse_reads_every_precision(text, epoch):
    assert clock.parse(text) == pytest.approx(epoch, abs=1e-6)


@pytest.mark.parametrize("bad", ["2026-12-02 07:40:00", "2026-12-02T07:40:00", "yesterday", "2026-13-02T07:40:00Z",
                                 "2026-12-02T07:40:60Z", "2026-12-02T07:40:00.1234567890Z", "2026-12-02T07:40:00+24:00",
                                 5, None, ""])
def test_parse_names_the_field_and_value(bad):
    with pytest.raises(ValueError, match="end: .* is not an RFC 3339 time"):
        clock.parse(bad, "end")
    assert clock.parse_or_none(bad) is None


def test_parse_exact_keeps_nanoseconds():
    assert clock.parse_exact("2026-12-02T07:36:45.000000001Z") - clock.parse_exact("2026-12-02T07:36:45Z") == Decimal("1E-9")
    assert clock.parse_exact("2026-12-02T08:40:00.5+01:00") == Decimal("1796197200.5")


def test_round_trip():
    for epoch in (0.0, 1.000001, 1796197200.123456, 1796000000.999999):
        assert clock.parse(clock.rfc3339(epoch)) == pytest.approx(epoch, abs=5e-7)


def test_seconds_between_any_two_precisions():
    # what operator_rollback's regex patch made possible in Jinja: a seconds stamp against a microseconds stamp
    assert clock.seconds_between("2026-12-02T07:40:00Z", "2026-12-02T07:40:02.500000Z") == 2.5
    assert clock.seconds_between("2026-12-05T12:13:44.930635696Z", "2026-12-05T12:13:48.371220124Z") == \
        pytest.approx(3.440584, abs=1e-6)
    assert clock.seconds_between("2026-12-02T07:40:02Z", "2026-12-02T07:40:00Z") == -2.0
    assert clock.seconds_between(None, "2026-12-02T07:40:00Z") is None
    assert clock.seconds_between("2026-12-02T07:40:00Z", "soon") is None


@pytest.mark.parametrize("text, needle", [
    ("2026-12-02T07:36:45.1234567890Z", "more than 9 fraction digits"),
    ("2026-02-30T07:36:45Z", "not a valid time"),
    ("2026-12-02T07:36:45+24:00", "not a valid UTC offset"),
    (1796197005, "got int"),
])
def test_parse_says_why(text, needle):
    with pytest.raises(ValueError) as info:
        clock.parse_exact(text, "records[2].ready_at")
    assert str(info.value).startswith("records[2].ready_at: ") and needle in str(info.value)


def test_name_stamp():
    epoch = clock.parse("2026-12-02T01:20:03.123456Z")
    assert clock.name_stamp(epoch) == "20261202T012003Z"
    assert clock.name_stamp(epoch, micro=True) == "20261202T012003123456Z"
    assert clock.name_stamp(1796174403) == "20261202T012003Z"
    aware = datetime.datetime(2026, 12, 2, 1, 20, 3, 999999, tzinfo=datetime.timezone.utc)
    assert clock.name_stamp(aware) == "20261202T012003Z"  # truncated, never rounded into the next second
    assert clock.name_stamp(aware.replace(tzinfo=None), micro=True) == "20261202T012003999999Z"
    assert datetime.datetime.strptime(clock.name_stamp(), clock.NAME_FORMAT)
    with pytest.raises(ValueError):
        clock.name_stamp("2026-12-02")
