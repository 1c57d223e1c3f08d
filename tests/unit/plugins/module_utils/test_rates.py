# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""module_utils/evidence/rates.py: the one rounding rule of every rate (docs/evidence.md "Rates")."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

import pytest

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.evidence import rates


# numerator, denominator, failure percent (rounded up), success percent (rounded down)
CASES = [
    (1, 3, 33.34, 33.33),
    (2, 3, 66.67, 66.66),
    (0, 5, 0.0, 0.0),
    (0, 1, 0.0, 0.0),
    (5, 5, 100.0, 100.0),
    (1, 1, 100.0, 100.0),
    (0, 0, None, None),
    (1, 8, 12.5, 12.5),  # exact: no rounding either way
]


@pytest.mark.parametrize("numerator, denominator, up, down", CASES)
def test_both_directions(numerator, denominator, up, down):
    assert rates.failure_rate(numerator, denominator) == {"numerator": numerator, "denominator": denominator, "percent": up}
    assert rates.success_rate(numerator, denominator) == {"numerator": numerator, "denominator": denominator, "percent": down}
    assert rates.rate(numerator, denominator, rates.UP)["percent"] == up
    assert rates.rate(numerator, denominator, rates.DOWN)["percent"] == down


def test_never_flatters_near_the_ends():
    assert rates.success_rate(19999, 20000)["percent"] == 99.99   # not 100.00
    assert rates.failure_rate(19999, 20000)["percent"] == 100.0   # 99.995 up: a failure is never understated
    assert rates.failure_rate(1, 20000)["percent"] == 0.01        # not 0.00: one failure is visible
    assert rates.success_rate(1, 20000)["percent"] == 0.0
    assert rates.failure_rate(1, 3000)["percent"] == 0.04


def test_the_numerator_and_denominator_are_the_authority():
    assert rates.failure_rate(1, 100) != rates.failure_rate(100, 10000)
    assert rates.failure_rate(1, 100)["percent"] == rates.failure_rate(100, 10000)["percent"] == 1.0


def test_places_are_stated_and_default_to_two():
    assert rates.PLACES == 2
    assert rates.percent_of(1, 3, rates.UP, places=3) == 33.334
    assert rates.percent_of(1, 3, rates.DOWN, places=0) == 33.0
    assert rates.percent_of(1, 3, rates.UP, places=0) == 34.0


def test_total_sums_then_rounds_once():
    parts = [{"numerator": 1, "denominator": 3, "percent": 33.34}, None, {"numerator": 0, "denominator": 3, "percent": 0.0}]
    assert rates.total(parts, rates.UP) == {"numerator": 1, "denominator": 6, "percent": 16.67}
    assert rates.total(parts, rates.DOWN) == {"numerator": 1, "denominator": 6, "percent": 16.66}
    assert rates.total([], rates.UP) == {"numerator": 0, "denominator": 0, "percent": None}


@pytest.mark.parametrize("call, message", [
    (lambda: rates.failure_rate(4, 3), "numerator: 4 is more than the denominator 3"),
    (lambda: rates.failure_rate(-1, 3), "numerator: expected a whole number >= 0, got -1"),
    (lambda: rates.failure_rate(1.0, 3), "numerator: expected a whole number >= 0, got 1.0"),
    (lambda: rates.success_rate(True, 3), "numerator: expected a whole number >= 0, got True"),
    (lambda: rates.success_rate(1, None), "denominator: expected a whole number >= 0, got None"),
    (lambda: rates.rate(1, 3, "nearest"), "direction: expected one of up, down, got 'nearest'"),
    (lambda: rates.percent_of(1, 3, rates.UP, places=-1), "places: expected a whole number >= 0"),
    (lambda: rates.total({"numerator": 1}, rates.UP), "rates: expected a list"),
    (lambda: rates.total(["1/3"], rates.UP), "rates[0]: expected a {numerator, denominator} record, got str"),
    (lambda: rates.total([{"numerator": 1}], rates.UP), "rates[0].denominator: expected a whole number >= 0, got None"),
    (lambda: rates.total([{"numerator": 2, "denominator": 1}], rates.UP), "rates[0].numerator: 2 is more than the denominator 1"),
])
def test_bad_input_names_the_field(call, message):
    with pytest.raises(rates.RateError) as exc:
        call()
    assert str(exc.value).startswith(message), str(exc.value)


def test_every_rate_of_the_plugins_uses_this_rule():
    """No other turning of a numerator/denominator into a percent in plugins/ or roles/ (Python or Jinja):
    the rule lives in rates.py only."""
    repo = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..")
    # 100 * a / b (Python, or Jinja with filters between: 100.0 * a | int / b | int), a / b * 100, Fraction(100 * ...
    pattern = re.compile(r"100(\.0)?\s*\*\s*[\w.]+(\s*\|\s*\w+)*\s*/|/\s*[\w.]+\s*\)?\s*\*\s*100\b|Fraction\(100")
    offenders = []
    for folder, _dirs, files in [w for top in ("plugins", "roles") for w in os.walk(os.path.join(repo, top))]:
        for name in files:
            if not name.endswith((".py", ".yml", ".j2")) or name == "rates.py":
                continue
            with open(os.path.join(folder, name)) as handle:
                for number, line in enumerate(handle, 1):
                    if pattern.search(line):
                        offenders.append("%s:%d: %s" % (name, number, line.strip()))
    assert offenders == []
