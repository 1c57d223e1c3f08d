# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one rounding rule for every rate in the evidence (docs/evidence.md, "Rates").

Pure logic, standard library only. A rate is recorded as ``{numerator, denominator, percent}``:

- the **numerator and the denominator are the authority** ("1 of 3" and "100 of 300" stay different);
- ``percent`` is only their display: 100 * numerator / denominator computed exactly (a
  ``Fraction``, no float division) and cut to :data:`PLACES` decimal places **in the direction that
  never flatters**: a failure or defect rate rounds up (:data:`UP`: 1 of 3 failed is 33.34, never
  33.33), a success rate rounds down (:data:`DOWN`: 19,999 of 20,000 is 99.99, never 100.00); an exact
  value stays as it is (0, 100, 25.5);
- ``percent`` is ``None`` when the denominator is 0 (nothing was attempted: no rate, not 0 %).

:func:`failure_rate`, :func:`success_rate` and :func:`total` are what callers use; :func:`rate` is
the rule itself. Bad input raises :class:`RateError` (a ``ValueError``) naming the field.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from decimal import Decimal
from fractions import Fraction

#: Decimal places of every displayed percent.
PLACES = 2
#: Round up (failure, defect rates: never understated) or down (success rates: never overstated).
UP = "up"
DOWN = "down"
DIRECTIONS = (UP, DOWN)


class RateError(ValueError):
    """Bad input to a rate; the message starts with the field (``numerator``, ``rates[2].denominator``)."""


def _count(value, field):
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise RateError("%s: expected a whole number >= 0, got %r" % (field, value))
    return value


def percent_of(numerator, denominator, direction, places=PLACES):
    """100 * numerator / denominator to ``places`` decimals, rounded ``direction`` (:data:`UP` or
    :data:`DOWN`) from the exact fraction; ``None`` when ``denominator`` is 0."""
    if direction not in DIRECTIONS:
        raise RateError("direction: expected one of %s, got %r" % (", ".join(DIRECTIONS), direction))
    if isinstance(places, bool) or not isinstance(places, int) or places < 0:
        raise RateError("places: expected a whole number >= 0, got %r" % (places,))
    numerator = _count(numerator, "numerator")
    denominator = _count(denominator, "denominator")
    if numerator > denominator:
        raise RateError("numerator: %d is more than the denominator %d (a rate counts a part of its attempts)"
                        % (numerator, denominator))
    if not denominator:
        return None
    scaled = Fraction(100 * numerator, denominator) * 10 ** places
    whole = scaled.numerator // scaled.denominator
    if direction == UP and scaled.denominator != 1:
        whole += 1
    return float(Decimal(whole).scaleb(-places))


def rate(numerator, denominator, direction, places=PLACES):
    """``{numerator, denominator, percent}`` with ``percent`` from :func:`percent_of`."""
    return {"numerator": numerator, "denominator": denominator,
            "percent": percent_of(numerator, denominator, direction, places)}


def failure_rate(numerator, denominator):
    """A failure or defect rate (failed reschedules, cleanup defects): ``percent`` rounded up."""
    return rate(numerator, denominator, UP)


def success_rate(numerator, denominator):
    """A success rate (successful claims): ``percent`` rounded down."""
    return rate(numerator, denominator, DOWN)


def total(rates, direction):
    """One rate from several (per node, per wave): numerators and denominators summed, then the rule
    applied once to the sums (never an average of percents). Null entries are skipped."""
    if isinstance(rates, (str, bytes, dict)) or not hasattr(rates, "__iter__"):
        raise RateError("rates: expected a list of {numerator, denominator} records, got %s" % type(rates).__name__)
    numerator = denominator = 0
    for index, item in enumerate(rates):
        if item is None:
            continue
        if not isinstance(item, dict):
            raise RateError("rates[%d]: expected a {numerator, denominator} record, got %s" % (index, type(item).__name__))
        part = _count(item.get("numerator"), "rates[%d].numerator" % index)
        whole = _count(item.get("denominator"), "rates[%d].denominator" % index)
        if part > whole:
            raise RateError("rates[%d].numerator: %d is more than the denominator %d" % (index, part, whole))
        numerator += part
        denominator += whole
    return rate(numerator, denominator, direction)
