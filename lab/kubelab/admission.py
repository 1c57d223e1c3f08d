# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The admission plugins the phases meet, after defaulting and before validation.

``mutate(api, rtype, obj, operation, old)`` runs the mutating plugins and ``validate(...)`` the
validating ones; both raise ``ApiError`` (kube's Status) to refuse the request. ``operation`` is
``CREATE`` or ``UPDATE`` as in ``admission.Attributes``; ``old`` is the stored object on UPDATE.
"""

from __future__ import annotations


def mutate(api, rtype, obj: dict, operation: str, old: dict | None = None) -> None:
    """Mutating admission (ServiceAccount, DefaultTolerationSeconds, ...), in place."""


def validate(api, rtype, obj: dict, operation: str, old: dict | None = None) -> None:
    """Validating admission: raises ApiError when a plugin refuses the object."""
