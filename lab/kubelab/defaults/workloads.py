# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""apps/v1, batch/v1, policy/v1, resource.k8s.io/v1 and apiextensions.k8s.io/v1 defaulting."""

from __future__ import annotations

# (group, kind) -> function(obj) defaulting in place
DEFAULTERS: dict = {}
