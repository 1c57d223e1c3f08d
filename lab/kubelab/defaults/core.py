# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""core/v1 (and networking.k8s.io/v1, rbac.authorization.k8s.io/v1) defaulting."""

from __future__ import annotations

# (group, kind) -> function(obj) defaulting in place
DEFAULTERS: dict = {}


def pod_spec(spec: dict) -> None:
    """``SetDefaults_PodSpec`` and the container/volume defaults below it, in place."""


def pod_template(template: dict) -> None:
    """A PodTemplateSpec inside a workload (Deployment, Job, ...): its ``spec`` defaulted as a pod's."""
    if isinstance(template, dict) and isinstance(template.get("spec"), dict):
        pod_spec(template["spec"])
