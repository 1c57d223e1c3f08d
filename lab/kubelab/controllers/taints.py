# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node NoExecute taint eviction, as kube-controller-manager's taint-eviction controller
(pkg/controller/tainteviction; the device-taint analogue is ``dra.DeviceTaintEvictionController``).

For every pod bound to a node (not terminating, not finished), each pass does what
``processPodOnNode`` does with the node's NoExecute taints:

* no NoExecute taint: any scheduled eviction of the pod is cancelled;
* a taint the pod's tolerations do not tolerate (``v1helper.GetMatchingTolerations``: the first
  matching toleration per taint; ``common.toleration_matches``): the pod is deleted now;
* all tolerated: the eviction is scheduled ``getMinTolerationTime`` after the controller first saw
  the pod under those taints (the smallest ``tolerationSeconds`` of the used tolerations; one of
  0 or less means now; none means never, which cancels). As in the TimedWorkerQueue, a scheduled
  eviction is kept while the pod stays tolerated (a later, shorter toleration does not move it) and
  cancelled when the taints go, the pod goes, or it becomes tolerated for good; a cancelled pending
  eviction gets the Event ``TaintManagerEviction`` "Cancelling deletion of Pod <ns>/<name>".

The count starts when this controller scheduled the eviction, as in kube (not at ``timeAdded``),
so a lab restart restarts the timers, as a kube-controller-manager restart does.

An eviction (``deletePodHandler`` / ``addConditionAndDeletePod``): the Event ``TaintManagerEviction``
"Marking for deletion Pod <ns>/<name>" (source ``taint-eviction-controller``), the pod condition
``DisruptionTarget=True`` reason ``DeletionByTaintManager`` message "Taint manager: deleting due to
NoExecute taint" through the status subresource, then an ordinary graceful delete (no
PodDisruptionBudget, no eviction subresource). A fired eviction is not repeated until it is
cancelled (the queue keeps the fired key).
"""

from __future__ import annotations

import time

from kubelab.clone import clone
from kubelab.controllers import Controller
from kubelab.controllers.common import (CONTROLLER_MANAGER, matching_tolerations, meta, set_condition, spec, status,
                                        terminating, write_status)
from kubelab.errors import ApiError
from kubelab.store import now as timestamp

COMPONENT = "taint-eviction-controller"
REASON = "TaintManagerEviction"
DISRUPTION_REASON = "DeletionByTaintManager"
DISRUPTION_MESSAGE = "Taint manager: deleting due to NoExecute taint"
FOREVER = -1.0


def noexecute_taints(node: dict | None) -> list:
    """``getNoExecuteTaints``: the node's taints with effect NoExecute (none for a missing node)."""
    if not node:
        return []
    return [t for t in spec(node).get("taints") or [] if isinstance(t, dict) and t.get("effect") == "NoExecute"]


def min_toleration_seconds(tolerations: list) -> float:
    """``getMinTolerationTime``: no toleration = 0; any ``tolerationSeconds`` <= 0 = 0; the smallest
    positive one; none carrying ``tolerationSeconds`` = ``FOREVER`` (-1)."""
    if not tolerations:
        return 0.0
    least = FOREVER
    for tol in tolerations:
        seconds = tol.get("tolerationSeconds")
        if seconds is None:
            continue
        try:
            seconds = float(seconds)
        except (TypeError, ValueError):
            continue
        if seconds <= 0:
            return 0.0
        if least == FOREVER or seconds < least:
            least = seconds
    return least


def eviction_delay(taints: list, tolerations: list) -> tuple[float | None, bool]:
    """(seconds until the pod is to go, all taints tolerated); ``None`` seconds: it is not to go."""
    if not taints:
        return None, True
    tolerated, used = matching_tolerations(taints, tolerations)
    if not tolerated:
        return 0.0, False
    least = min_toleration_seconds(used)
    return (None if least < 0 else least), True


def plan(entry: dict | None, delay: float | None, tolerated: bool, moment: float) -> tuple[dict | None, bool]:
    """One ``processPodOnNode`` step for a queue entry ``{"created", "fire", "fired"}``.

    Returns (the new entry or ``None``, whether a pending eviction was cancelled).
    """
    if delay is None:
        return None, bool(entry) and not entry.get("fired")
    if not tolerated:  # untolerated: cancel whatever was scheduled, delete now
        if entry and (entry.get("fired") or entry["fire"] <= moment):
            return entry, False  # fired already, or due now anyway (a retry after a conflict)
        return {"created": moment, "fire": moment, "fired": False}, bool(entry)
    if entry is not None:
        if entry.get("fired") or entry["created"] + delay < moment + delay:
            return entry, False  # the earlier schedule stays (TimedWorkerQueue keeps the key)
        return {"created": entry["created"], "fire": entry["created"] + delay, "fired": False}, True
    return {"created": moment, "fire": moment + delay, "fired": False}, False


def _finished(pod: dict) -> bool:
    return status(pod).get("phase") in ("Succeeded", "Failed")


class TaintEvictionController(Controller):
    """kube-controller-manager's taint-eviction controller for node NoExecute taints."""

    watches = ("Node", "Pod")
    resync_seconds = 1.0

    def __init__(self, lab):
        super().__init__(lab)
        self.pods = self.rtype("", "v1", "pods")
        self.nodes = self.rtype("", "v1", "nodes")
        self.events = self.rtype("", "v1", "events")
        self.queue: dict = {}  # (namespace, name) -> {"uid", "created", "fire", "fired"}
        self.clock = time.monotonic
        self.deletions = 0

    def reconcile(self) -> None:
        nodes = {meta(n)["name"]: n for n in self.api.list(self.nodes, None, shared=True)["items"]}
        tainted = {name: noexecute_taints(n) for name, n in nodes.items() if noexecute_taints(n)}
        if not tainted:
            for key in [k for k, e in self.queue.items() if not e.get("fired")]:
                self._cancel_event(key)
            self.queue.clear()
            self.resync_seconds = 1.0
            return
        moment = self.clock()
        live = set()
        for pod in self.api.list(self.pods, None, shared=True)["items"]:
            key = (meta(pod)["namespace"], meta(pod)["name"])
            node_name = spec(pod).get("nodeName")
            entry = self.queue.get(key)
            if entry is not None and entry.get("uid") != meta(pod).get("uid"):
                entry = None  # the pod of that name was replaced: its predecessor's work went with it
            if not node_name or terminating(pod) or _finished(pod):
                if entry is not None and entry.get("fired"):
                    live.add(key)  # the fired key stays until the pod is gone
                else:
                    self.queue.pop(key, None)  # going anyway: nothing left to do
                continue
            delay, tolerated = eviction_delay(tainted.get(node_name, []), spec(pod).get("tolerations"))
            new, cancelled = plan(entry, delay, tolerated, moment)
            if cancelled and (entry is None or not entry.get("fired")):
                self._cancel_event(key)
            if new is None:
                self.queue.pop(key, None)
                continue
            new["uid"] = meta(pod).get("uid")
            self.queue[key] = new
            live.add(key)
            if not new["fired"] and new["fire"] <= moment:
                self._evict(pod, new)
        for key in [k for k in self.queue if k not in live]:
            entry = self.queue.pop(key)
            if not entry.get("fired"):
                self._cancel_event(key)
        pending = [e["fire"] for e in self.queue.values() if not e.get("fired")]
        self.resync_seconds = max(0.05, min([1.0] + [f - self.clock() for f in pending]))

    def _evict(self, pod: dict, entry: dict) -> None:
        namespace, name = meta(pod)["namespace"], meta(pod)["name"]
        self._event(namespace, name, "Marking for deletion Pod %s/%s" % (namespace, name))
        new_status = clone(status(pod))
        new_status["conditions"] = set_condition(new_status.get("conditions"), "DisruptionTarget", "True",
                                                 DISRUPTION_REASON, DISRUPTION_MESSAGE)
        try:
            write_status(self.api, self.pods, pod, new_status, CONTROLLER_MANAGER)
            self.api.delete(self.pods, namespace, name, {"preconditions": {"uid": meta(pod)["uid"]}})
        except ApiError as exc:
            if exc.code == 404:
                entry["fired"] = True
                return
            if exc.code == 409:
                return  # changed meanwhile: the next pass retries (the entry is still due)
            raise
        entry["fired"] = True
        self.deletions += 1

    def _cancel_event(self, key: tuple) -> None:
        self._event(key[0], key[1], "Cancelling deletion of Pod %s/%s" % key)

    def _event(self, namespace: str, name: str, message: str) -> None:
        """A core/v1 Event as client-go's EventRecorder writes it for ``recorder.Eventf``."""
        stamp = timestamp()
        body = {"apiVersion": "v1", "kind": "Event",
                "metadata": {"name": "%s.%x" % (name, time.time_ns()), "namespace": namespace},
                "involvedObject": {"apiVersion": "v1", "kind": "Pod", "namespace": namespace, "name": name},
                "reason": REASON, "message": message, "type": "Normal", "count": 1,
                "source": {"component": COMPONENT}, "firstTimestamp": stamp, "lastTimestamp": stamp,
                "reportingComponent": COMPONENT, "reportingInstance": ""}
        try:
            self.api.create(self.events, namespace, body, field_manager=CONTROLLER_MANAGER)
        except ApiError:
            pass  # events are best effort, as the broadcaster's
