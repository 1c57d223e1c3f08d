# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Defaulting of built-in kinds, as kube-apiserver's generated ``SetObjectDefaults_*`` do.

kube-apiserver decodes every create, update, patch result and apply result into the Go type and
runs the group-version's defaulting functions (``pkg/apis/<group>/<version>/defaults.go``) before
admission and validation. ``apply(rtype, obj)`` is that step for the lab: it changes ``obj`` in
place and is idempotent (defaulting a defaulted object changes nothing, so a no-op write stays a
no-op). Custom resources are not defaulted here (their defaults come from the CRD's schema, which
the lab does not evaluate).

The functions live per API group: ``core`` (core/v1, networking.k8s.io/v1, rbac) and
``workloads`` (apps/v1, batch/v1, policy/v1, resource.k8s.io/v1, apiextensions.k8s.io/v1).
"""

from __future__ import annotations

from kubelab.defaults import core, workloads

DEFAULTERS: dict = {}
DEFAULTERS.update(core.DEFAULTERS)
DEFAULTERS.update(workloads.DEFAULTERS)


def apply(rtype, obj: dict) -> dict:
    """Default ``obj`` (of ``rtype``) in place; returns it."""
    if rtype.custom:
        return obj
    defaulter = DEFAULTERS.get((rtype.group, rtype.kind))
    if defaulter is not None:
        defaulter(obj)
    return obj
