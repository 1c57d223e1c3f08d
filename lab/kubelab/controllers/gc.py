# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The garbage collector's sweep for dangling owner references (the rest of GC is ``Api.collect_dependents``).

``Api`` deletes an owner's dependents when the owner is removed, but a controller may create a
dependent just after that (it listed the owner before it went). Like kube-controller-manager's
garbage collector, this sweep deletes Pods and ReplicaSets all of whose owner references point to
workload objects (ReplicaSet, Deployment, DaemonSet, StatefulSet, Job) that no longer exist.
Dependents are listed before owners, so an owner created after the listing cannot be missed.
"""

from __future__ import annotations

from kubelab.controllers import Controller
from kubelab.controllers.common import meta, terminating
from kubelab.errors import ApiError

OWNER_TYPES = {"ReplicaSet": ("apps", "v1", "replicasets"), "Deployment": ("apps", "v1", "deployments"),
               "DaemonSet": ("apps", "v1", "daemonsets"), "StatefulSet": ("apps", "v1", "statefulsets"),
               "Job": ("batch", "v1", "jobs")}
DEPENDENT_TYPES = (("", "v1", "pods"), ("apps", "v1", "replicasets"))


class GarbageCollector(Controller):
    watches = ("Pod", "ReplicaSet", "Deployment", "DaemonSet", "StatefulSet", "Job")
    resync_seconds = 2.0

    def reconcile(self) -> None:
        dependents = []
        for key in DEPENDENT_TYPES:
            rtype = self.rtype(*key)
            dependents += [(rtype, obj) for obj in self.api.list(rtype, None, shared=True)["items"]
                           if meta(obj).get("ownerReferences") and not terminating(obj)]
        if not dependents:
            return
        alive = set()
        for key in OWNER_TYPES.values():
            alive.update(meta(o).get("uid") for o in self.api.list(self.rtype(*key), None, shared=True)["items"])
        for rtype, obj in dependents:
            refs = meta(obj)["ownerReferences"]
            if all(r.get("kind") in OWNER_TYPES and r.get("uid") not in alive for r in refs):
                try:
                    self.api.delete(rtype, meta(obj).get("namespace"), meta(obj)["name"],
                                    {"propagationPolicy": "Background", "preconditions": {"uid": meta(obj).get("uid")}})
                except ApiError as exc:
                    if exc.code not in (404, 409):
                        raise
