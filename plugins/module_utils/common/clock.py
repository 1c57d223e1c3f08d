# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One clock: every stamp this collection records, one parser, durations in Python.

Every recorded stamp is RFC 3339 UTC with microseconds, ``2026-12-02T01:20:03.123456Z``
(:data:`FORMAT`, what :func:`rfc3339` and :func:`utc_now` write). Microseconds are the finest a
``float`` epoch holds exactly for today's dates, and the precision Ansible's ``to_datetime`` and
Python's ``%f`` read.

:func:`parse` reads the stamps older records and Kubernetes hold: whole seconds (``...:03Z``),
milliseconds, microseconds and nanoseconds (fractions of 1 to 9 digits), ``Z`` or a numeric offset;
:func:`parse_exact` gives the same as a ``Decimal`` where nanoseconds must survive (claim statistics).
:func:`seconds_between` is the one duration between two stamps; nothing subtracts stamps by regex.

Standard library only: node-side modules import it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import re
import time
from decimal import Decimal

FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"
NAME_FORMAT = "%Y%m%dT%H%M%SZ"
FORM = "RFC 3339, e.g. 2026-12-02T01:20:03.123456Z"
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
_RE = re.compile(r"^(\d{4})-(\d\d)-(\d\d)[Tt](\d\d):(\d\d):(\d\d)(?:\.(\d+))?([Zz]|[+-]\d\d:\d\d)$")


def rfc3339(epoch):
    """``epoch`` (seconds since the Unix epoch, int or float) as the recorded stamp, rounded to the
    nearest microsecond: ``2026-12-02T01:20:03.123456Z``. None for None."""
    if epoch is None:
        return None
    if isinstance(epoch, bool) or not isinstance(epoch, (int, float)):
        raise ValueError("a time must be seconds since the epoch (a number), got %r" % (epoch,))
    micros = int(round(epoch * 1000000)) if isinstance(epoch, float) else epoch * 1000000
    return from_micros(micros)


def from_micros(micros):
    """Microseconds since the epoch (an int) as the recorded stamp."""
    seconds, fraction = divmod(int(micros), 1000000)
    whole = _EPOCH + datetime.timedelta(seconds=seconds)
    return whole.strftime("%Y-%m-%dT%H:%M:%S") + ".%06dZ" % fraction


def utc_now():
    """The current wall-clock time as the recorded stamp (truncated to the microsecond)."""
    return from_micros(time.time_ns() // 1000)


def _micros_of(when):
    """Microseconds since the epoch of a ``datetime`` (a naive one is taken as UTC), exactly."""
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.timezone.utc)
    delta = when - _EPOCH
    return (delta.days * 86400 + delta.seconds) * 1000000 + delta.microseconds


def to_datetime(when):
    """An aware ``datetime`` as the recorded stamp (a naive one is taken as UTC)."""
    return from_micros(_micros_of(when))


def name_stamp(when=None, micro=False):
    """The stamp in a file or directory name (no ``:``), UTC: ``20261202T012003Z`` (:data:`NAME_FORMAT`,
    whole seconds, truncated), or ``20261202T012003123456Z`` with ``micro``. ``when``: seconds since the
    epoch, an aware ``datetime`` (a naive one is taken as UTC), or None for now."""
    if when is None:
        micros = time.time_ns() // 1000
    elif isinstance(when, datetime.datetime):
        micros = _micros_of(when)
    elif isinstance(when, bool) or not isinstance(when, (int, float)):
        raise ValueError("a time must be seconds since the epoch or a datetime, got %r" % (when,))
    else:
        micros = int(round(when * 1000000)) if isinstance(when, float) else int(when) * 1000000
    seconds, fraction = divmod(micros, 1000000)
    whole = (_EPOCH + datetime.timedelta(seconds=seconds)).strftime("%Y%m%dT%H%M%S")
    return whole + ("%06dZ" % fraction if micro else "Z")


def _parts(text, field):
    """(whole seconds since the epoch, fraction digits or None) of an RFC 3339 stamp."""
    if not isinstance(text, str):
        raise ValueError("%s: %r is not an RFC 3339 time (expected %s, got %s)" % (field, text, FORM, type(text).__name__))
    match = _RE.match(text)
    if not match:
        raise ValueError("%s: %r is not an RFC 3339 time (expected %s)" % (field, text, FORM))
    year, month, day, hour, minute, second = (int(g) for g in match.groups()[:6])
    fraction, zone = match.group(7), match.group(8)
    if fraction is not None and len(fraction) > 9:
        raise ValueError("%s: %r is not an RFC 3339 time we read (more than 9 fraction digits; nanoseconds are the "
                         "finest kept)" % (field, text))
    try:
        whole = datetime.datetime(year, month, day, hour, minute, second, tzinfo=datetime.timezone.utc)
    except ValueError as exc:
        raise ValueError("%s: %r is not an RFC 3339 time (not a valid time: %s)" % (field, text, exc))
    offset = 0
    if zone not in ("Z", "z"):
        hours, minutes = int(zone[1:3]), int(zone[4:6])
        if hours > 23 or minutes > 59:
            raise ValueError("%s: %r is not an RFC 3339 time (not a valid UTC offset %s)" % (field, text, zone))
        offset = (hours * 3600 + minutes * 60) * (1 if zone[0] == "+" else -1)
    delta = whole - _EPOCH
    return delta.days * 86400 + delta.seconds - offset, fraction


def parse(text, field="time"):
    """Seconds since the epoch (float) of an RFC 3339 stamp: whole seconds or a fraction of 1 to 9
    digits, ``Z`` or a numeric offset. Anything else (not a string, another form, a date that does not
    exist, a leap second) raises ``ValueError`` naming ``field`` and the value."""
    seconds, fraction = _parts(text, field)
    return seconds + (int(fraction) / 10 ** len(fraction) if fraction else 0.0)


def parse_exact(text, field="time"):
    """:func:`parse` as an exact ``Decimal`` (nanosecond fractions survive; no float involved)."""
    seconds, fraction = _parts(text, field)
    return Decimal(seconds) + (Decimal(int(fraction)).scaleb(-len(fraction)) if fraction else Decimal(0))


def parse_or_none(text):
    """:func:`parse`, or None where ``text`` is missing or not a stamp (for optional record fields)."""
    try:
        return parse(text)
    except ValueError:
        return None


def seconds_between(start, end):
    """``end - start`` in seconds (a float, microsecond-exact for recorded stamps) of two stamps in any
    form :func:`parse` reads; None when either is missing or not a stamp."""
    first, last = parse_or_none(start), parse_or_none(end)
    if first is None or last is None:
        return None
    return round(last - first, 6)
