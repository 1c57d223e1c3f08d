# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Version strings as the GPU stack prints them, parsed into comparable values.

Pure logic, standard library only: used on nodes (facts) and on the controller (compat check).

Accepted shapes, all seen in the wild:
  ``1.37.0``, ``v1.37.2``, ``1.34.2+k3s1``, ``v1.33.5-eks-113cf36`` (Kubernetes and distributions),
  ``1.6.20~ds1`` (Debian containerd), ``2.3.0-rc.1``, ``580.159.04`` (driver), ``26.7.0`` (operator),
  ``v0.20.0`` (device plugin).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

_VERSION_RE = re.compile(r"^v?(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:\.(\d+))?(?P<rest>[-+~].*)?$")
_PRE_RE = re.compile(r"^-(alpha|beta|rc|pre)[.-]?(\d*)", re.IGNORECASE)
_PRE_ORDER = {"alpha": 0, "beta": 1, "pre": 1, "rc": 2}


class Version(object):
    """A parsed version: numeric release parts, an optional pre-release and the raw string.

    Comparison uses the numeric parts (missing parts count as 0), then pre-release
    (``2.3.0-rc.1 < 2.3.0``). Distribution suffixes such as ``~ds1`` or ``+k3s1`` are kept in
    ``suffix`` but do not change the order: ``1.6.20~ds1`` is containerd 1.6.20.
    """

    __slots__ = ("raw", "parts", "pre", "suffix")

    def __init__(self, raw, parts, pre=None, suffix=""):
        self.raw = raw
        self.parts = tuple(parts)
        self.pre = pre
        self.suffix = suffix

    def _key(self):
        parts = self.parts + (0,) * (4 - len(self.parts))
        pre = (1, 0, 0) if self.pre is None else (0, _PRE_ORDER[self.pre[0]], self.pre[1])
        return parts + pre

    @property
    def major(self):
        return self.parts[0]

    @property
    def minor(self):
        return self.parts[1] if len(self.parts) > 1 else 0

    @property
    def patch(self):
        return self.parts[2] if len(self.parts) > 2 else 0

    def release(self, count=3):
        """The first ``count`` numeric parts joined with dots (``1.6.20~ds1`` -> ``1.6.20``)."""
        parts = self.parts + (0,) * max(0, count - len(self.parts))
        return ".".join(str(p) for p in parts[:count])

    def __eq__(self, other):
        return isinstance(other, Version) and self._key() == other._key()

    def __ne__(self, other):
        return not self == other

    def __lt__(self, other):
        return self._key() < other._key()

    def __le__(self, other):
        return self._key() <= other._key()

    def __gt__(self, other):
        return self._key() > other._key()

    def __ge__(self, other):
        return self._key() >= other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return "Version(%r)" % self.raw

    def __str__(self):
        return self.raw


def parse_version(text):
    """Parse ``text`` into a :class:`Version`, or return None when it is not a version string."""
    if text is None:
        return None
    if isinstance(text, (int, float)):
        text = str(text)
    if not isinstance(text, str):
        return None
    raw = text.strip()
    match = _VERSION_RE.match(raw)
    if not match:
        return None
    parts = [int(p) for p in match.groups()[:4] if p is not None]
    rest = match.group("rest") or ""
    pre = None
    pre_match = _PRE_RE.match(rest)
    if pre_match:
        pre = (pre_match.group(1).lower(), int(pre_match.group(2) or 0))
    return Version(raw, parts, pre, rest)


def release_key(text):
    """A GPU Operator release name as a comparable :class:`Version`, or None.

    The one release-key function: ``26.3.x`` (also ``.X``, ``.*``) means the 26.3 major, ``v26.7.0``
    and ``26.7.0`` are the same release; a name with fewer than two numeric parts (``26``) or
    anything that does not parse is None. Used to order the known releases and to plan hops.
    """
    if not isinstance(text, str):
        return None
    text = text.strip()
    if text.endswith((".x", ".X", ".*")):
        text = text[:-2]
    parsed = parse_version(text)
    if parsed is None or len(parsed.parts) < 2:
        return None
    return parsed


def version_in_range(version, minimum=None, maximum=None):
    """True when ``minimum <= version <= maximum`` on the parts each bound names.

    A bound given as ``2.3`` covers every ``2.3.x``: comparison stops at the bound's precision.
    Bounds are strings or :class:`Version`; a None bound is open.
    """
    if minimum is not None and compare_prefix(version, minimum) < 0:
        return False
    if maximum is not None and compare_prefix(version, maximum) > 0:
        return False
    return True


def compare_prefix(version, bound):
    """Compare ``version`` with ``bound`` on the number of parts ``bound`` has (-1, 0, 1)."""
    if not isinstance(bound, Version):
        bound = parse_version(bound)
    if not isinstance(version, Version):
        version = parse_version(version)
    if bound is None or version is None:
        raise ValueError("not a version: %r / %r" % (version, bound))
    count = len(bound.parts)
    left = (version.parts + (0,) * count)[:count]
    right = bound.parts
    if left < right:
        return -1
    if left > right:
        return 1
    return 0
