# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The disruption controller: PodDisruptionBudget status, which ``Api.evict`` enforces.

For each PDB, over the pods of its namespace matching ``spec.selector`` (a null selector matches
nothing, ``{}`` everything, as in policy/v1):

* ``expectedPods``: with an integer ``minAvailable``, the number of matching pods; with
  ``maxUnavailable`` or a percentage, the summed ``spec.replicas`` of the pods' controllers
  (ReplicaSet, StatefulSet, ReplicationController, or any object with a scale; DaemonSet:
  desiredNumberScheduled); pods without a controller count one each;
* ``currentHealthy``: matching pods that are Ready, not terminating, and not in ``disruptedPods``;
* ``desiredHealthy``: ``minAvailable`` (int, or % of expectedPods rounded up), else
  ``expectedPods - maxUnavailable`` (int, or % rounded up), else 0;
* ``disruptionsAllowed = max(0, currentHealthy - desiredHealthy)`` and the condition
  DisruptionAllowed (True SufficientPods / False InsufficientPods);
* ``disruptedPods`` (written by ``Api.evict``) lose an entry when its pod is gone or terminating,
  or after ``lab.scenario["pdb_disrupted_seconds"]`` (5; kube-controller-manager uses 2 minutes).
"""

from __future__ import annotations

import datetime

from kubelab.clone import clone
from kubelab.controllers import Controller
from kubelab.controllers.common import (int_or_percent, meta, pod_ready, selector_matches, set_condition, spec,
                                        status, terminating, write_status)
from kubelab.errors import ApiError

SCALED = {"ReplicaSet": ("apps", "v1", "replicasets"), "StatefulSet": ("apps", "v1", "statefulsets"),
          "ReplicationController": ("", "v1", "replicationcontrollers"), "DaemonSet": ("apps", "v1", "daemonsets")}


def _age(stamp: str) -> float:
    try:
        moment = datetime.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc)
    except (TypeError, ValueError):
        return float("inf")
    return (datetime.datetime.now(datetime.timezone.utc) - moment).total_seconds()


class DisruptionController(Controller):
    watches = ("PodDisruptionBudget", "Pod")

    def __init__(self, lab):
        super().__init__(lab)
        self.pods = self.rtype("", "v1", "pods")
        self.pdbs = self.rtype("policy", "v1", "poddisruptionbudgets")

    def reconcile(self) -> None:
        pdbs = self.api.list(self.pdbs, None, shared=True)["items"]
        if not pdbs:
            return
        pods = self.api.list(self.pods, None, shared=True)["items"]
        for pdb in pdbs:
            namespace = meta(pdb)["namespace"]
            selector = spec(pdb).get("selector")
            matching = [p for p in pods if meta(p).get("namespace") == namespace
                        and selector_matches(selector, meta(p).get("labels"))]
            try:
                self._sync(pdb, matching)
            except ApiError as exc:
                if exc.code not in (404, 409):
                    raise

    def _controller_scale(self, namespace: str, ref: dict) -> int | None:
        target = SCALED.get(ref.get("kind", ""))
        rtype = self.rtype(*target) if target else None
        if rtype is None:
            group, _sep, version = (ref.get("apiVersion") or "").rpartition("/")
            rtype = next((r for r in self.registry.all() if r.group == group and r.version == version
                          and r.kind == ref.get("kind") and "scale" in r.subresources), None)
        if rtype is None:
            return None
        owner = self.api.store.get_or_none(rtype, namespace, ref.get("name", ""))
        if owner is None or meta(owner).get("uid") != ref.get("uid"):
            return None
        if rtype.kind == "DaemonSet":
            return int(status(owner).get("desiredNumberScheduled", 0))
        return int(spec(owner).get("replicas", 1))

    def _expected(self, pdb: dict, pods: list) -> int:
        min_available = spec(pdb).get("minAvailable")
        if min_available is not None and not str(min_available).endswith("%"):
            return len(pods)
        expected, seen = 0, set()
        for pod in pods:
            ref = next((r for r in meta(pod).get("ownerReferences") or [] if r.get("controller")), None)
            if ref is None:
                expected += 1
                continue
            if ref.get("uid") in seen:
                continue
            seen.add(ref.get("uid"))
            scale = self._controller_scale(meta(pod)["namespace"], ref)
            expected += scale if scale is not None else 1
        return expected

    def _sync(self, pdb: dict, pods: list) -> None:
        pdb_spec = spec(pdb)
        live = {meta(p)["name"]: p for p in pods}
        keep_for = float(self.lab.scenario.get("pdb_disrupted_seconds", 5) or 5)
        disrupted = {name: stamp for name, stamp in (status(pdb).get("disruptedPods") or {}).items()
                     if name in live and not terminating(live[name]) and _age(stamp) < keep_for}
        expected = self._expected(pdb, pods)
        healthy = sum(1 for p in pods if pod_ready(p) and not terminating(p) and meta(p)["name"] not in disrupted)
        if pdb_spec.get("minAvailable") is not None:
            desired = int_or_percent(pdb_spec["minAvailable"], expected, True, 0)
        elif pdb_spec.get("maxUnavailable") is not None:
            desired = max(0, expected - int_or_percent(pdb_spec["maxUnavailable"], expected, True, 0))
        else:
            desired = 0
        allowed = max(0, healthy - desired)
        new_status = clone(status(pdb))
        new_status.update(observedGeneration=meta(pdb).get("generation", 1), expectedPods=expected, currentHealthy=healthy,
                          desiredHealthy=desired, disruptionsAllowed=allowed)
        if disrupted:
            new_status["disruptedPods"] = disrupted
        else:
            new_status.pop("disruptedPods", None)
        if allowed > 0:
            new_status["conditions"] = set_condition(new_status.get("conditions"), "DisruptionAllowed", "True",
                                                     "SufficientPods")
        else:
            new_status["conditions"] = set_condition(new_status.get("conditions"), "DisruptionAllowed", "False",
                                                     "InsufficientPods")
        for cond in new_status["conditions"]:
            cond["observedGeneration"] = meta(pdb).get("generation", 1)
            cond.setdefault("message", "")  # metav1.Condition: message is required (may be empty)
        write_status(self.api, self.pdbs, pdb, new_status)
