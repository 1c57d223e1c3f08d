# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fault injection: what goes wrong in the lab cluster, from the scenario or at run time.

A fault is a one-key mapping ``{<kind>: {params}}`` (JSON or YAML). Every kind takes ``after``
(seconds before it starts, default 0) and ``seconds`` (how long it lasts; absent = until cleared),
and the request-shaped kinds take ``count`` (how many requests it hits):

==========================  =====================================================================
``api_error``               ``code`` 403 | 429 | 500 | 502 | 503 | 504 (default 500), optional
                            ``path`` (a regular expression searched in the URL path), ``method``
                            (one or a list) and, for 403, ``user`` (the name in the message);
                            429 answers ``Retry-After: 1`` (``retry_after`` seconds)
``eviction``                evictions (POST pods/<name>/eviction): ``delay`` seconds (slow) and/or
                            ``code`` 429 | 500 (failing)
``reboot``                  ``node`` (required): NotReady for ``seconds`` (default 5), then Ready with
                            a new bootID; ``comes_back: false`` = it never returns; a device-plugin
                            node's allocatable ``nvidia.com/gpu`` is 0 while down and for the kubelet's
                            ``device_plugin_register_seconds`` (1) after it is back
``dra_plugin_restart``      ``node`` (absent = every node): its ResourceSlices are withdrawn for
                            ``seconds`` (default 2), then republished by the DRA part; prepared
                            claims stay
``claim_allocation_failure``  ``rate`` 0..1 (default 1): ``lab.fault_rate("claim_allocation")``, drawn
                            on every scheduling attempt; ``per: pod`` (``seed``): drawn once per pod and
                            sticky (``FaultEngine.pod_allocation_fails``)
``claim_leak``              ``lab.fault_active("claim_leak")``: claims are not deallocated
``claim_latency``           ``allocation`` / ``prepare``: seconds or ``{distribution: fixed, seconds}``,
                            ``{distribution: uniform, min, max}``, ``{distribution: lognormal, median,
                            sigma}``; ``seed``. ``FaultEngine.delay(what, key)`` draws once per key
``numa_violation``          ``rate`` (default 1), ``seed``: count >= 2 claims with a matchAttribute
                            numaNode constraint get devices on different NUMA nodes
``device_health_unknown``   ``node`` (required): Node condition GPUDeviceHealthy=Unknown and the
                            taint ``kubelab.gpufleet.io/gpu-health=unknown:NoSchedule``
``device_unhealthy``        ``node`` (required), ``device`` (default: all of the node's), ``health``
                            (``Unhealthy``, default, or ``Unknown``: the driver went silent past the
                            kubelet's 30 s health timeout): ``lab.device_health``; the kubelet reports it
                            in the pods' ``allocatedResourcesStatus``, the driver in the claims'
                            ``status.devices`` (condition Ready), a device-plugin node's allocatable
                            ``nvidia.com/gpu`` leaves its GPUs out (capacity stays); ``Healthy`` again
                            when it ends
``operator_never_ready``    the GPU Operator's CRs stay notReady (OperandNotReady)
==========================  =====================================================================

Run time: ``POST /kubelab/faults`` (one fault or a list; 201 with the stored faults and their ids),
``GET /kubelab/faults``, ``DELETE /kubelab/faults`` (all) or ``/kubelab/faults/<id>``;
``python -m kubelab fault --dir D --add '<json>' | --list | --clear``.

The seeded kinds own a ``random.Random(seed)`` each, so the same seed gives the same draws; what the lab
injected is recorded per claim in ``lab.claim_truth`` (kubelab.controllers.dra, GET /kubelab/claims/truth).
"""

from __future__ import annotations

import itertools
import json
import math
import random
import re
import threading
import time

from kubelab.clone import clone
from kubelab.controllers import Controller
from kubelab.controllers.common import meta, set_condition, spec, status, write_status
from kubelab.errors import ApiError
from kubelab.gpunodes import GPUS_ANNOTATION

KINDS = {
    # kind: {param: type}; "after", "seconds" are common to all
    "api_error": {"code": int, "count": int, "path": str, "method": (str, list), "user": str, "retry_after": int},
    "eviction": {"delay": (int, float), "code": int, "count": int},
    "reboot": {"node": str, "comes_back": bool},
    "dra_plugin_restart": {"node": str},
    "claim_allocation_failure": {"rate": (int, float), "per": str, "seed": int},
    "claim_leak": {},
    "claim_latency": {"allocation": (int, float, dict), "prepare": (int, float, dict), "seed": int},
    "numa_violation": {"rate": (int, float), "seed": int},
    "device_health_unknown": {"node": str},
    "device_unhealthy": {"node": str, "device": str, "health": str},
    "operator_never_ready": {},
}
COMMON = {"after": (int, float), "seconds": (int, float)}
REQUIRED = {"reboot": ("node",), "device_health_unknown": ("node",), "device_unhealthy": ("node",)}
DEFAULT_SECONDS = {"reboot": 5.0, "dra_plugin_restart": 2.0}
ALIASES = {"claim_allocation": "claim_allocation_failure"}
ERROR_CODES = (403, 429, 500, 502, 503, 504)
EVICTION_CODES = (429, 500, 503)
DEFAULT_FAULT_USER = "system:serviceaccount:dra-gate:gate"
HEALTH_CONDITION = "GPUDeviceHealthy"
HEALTH_TAINT = "kubelab.gpufleet.io/gpu-health"
_EVICTION = re.compile(r"/pods/[^/]+/eviction$")


def validate_fault(fault) -> dict:
    """``{kind: {params}}`` checked and normalised; ValueError names the field."""
    if not isinstance(fault, dict) or len(fault) != 1:
        raise ValueError("a fault is a mapping with one key, the kind (%s)" % ", ".join(KINDS))
    kind, params = next(iter(fault.items()))
    if kind not in KINDS:
        raise ValueError("unknown fault kind %r (known: %s)" % (kind, ", ".join(KINDS)))
    params = {} if params is None else params
    if not isinstance(params, dict):
        raise ValueError("%s: must be a mapping of parameters, got %r" % (kind, params))
    allowed = dict(COMMON, **KINDS[kind])
    for key, value in params.items():
        if key not in allowed:
            raise ValueError("%s.%s: unknown parameter (known: %s)" % (kind, key, ", ".join(sorted(allowed))))
        if isinstance(value, bool) and allowed[key] is not bool or not isinstance(value, allowed[key]):
            raise ValueError("%s.%s: wrong type %s (%r)" % (kind, key, type(value).__name__, value))
    for key in REQUIRED.get(kind, ()):
        if not params.get(key):
            raise ValueError("%s.%s: is required" % (kind, key))
    for key in ("after", "seconds", "delay"):
        if key in params and params[key] < 0:
            raise ValueError("%s.%s: must be >= 0, got %r" % (kind, key, params[key]))
    if "count" in params and params["count"] < 1:
        raise ValueError("%s.count: must be >= 1, got %r" % (kind, params["count"]))
    codes = EVICTION_CODES if kind == "eviction" else ERROR_CODES
    if "code" in params and params["code"] not in codes:
        raise ValueError("%s.code: must be one of %s, got %r" % (kind, ", ".join(map(str, codes)), params["code"]))
    if "retry_after" in params and params["retry_after"] < 0:
        raise ValueError("%s.retry_after: must be >= 0, got %r" % (kind, params["retry_after"]))
    if "rate" in params and not 0 <= params["rate"] <= 1:
        raise ValueError("%s.rate: must be between 0 and 1, got %r" % (kind, params["rate"]))
    if "path" in params:
        try:
            re.compile(params["path"])
        except re.error as exc:
            raise ValueError("%s.path: not a regular expression: %s" % (kind, exc)) from exc
    if isinstance(params.get("method"), list) and not all(isinstance(m, str) for m in params["method"]):
        raise ValueError("%s.method: must be a string or a list of strings" % kind)
    if "health" in params and params["health"] not in ("Unhealthy", "Unknown"):
        raise ValueError("%s.health: must be Unhealthy or Unknown, got %r" % (kind, params["health"]))
    if "per" in params and params["per"] not in ("attempt", "pod"):
        raise ValueError("%s.per: must be attempt or pod, got %r" % (kind, params["per"]))
    for key in ("allocation", "prepare"):
        if key in params:
            _check_distribution("%s.%s" % (kind, key), params[key])
    if kind == "claim_latency" and "allocation" not in params and "prepare" not in params:
        raise ValueError("claim_latency: give allocation and/or prepare (seconds or {distribution: ...})")
    if kind == "eviction" and "delay" not in params and "code" not in params:
        raise ValueError("eviction: give delay (slow evictions) and/or code (failing evictions)")
    return {kind: clone(params)}


DISTRIBUTIONS = {"fixed": ("seconds",), "uniform": ("min", "max"), "lognormal": ("median", "sigma")}


def _check_distribution(field: str, value) -> None:
    """A delay: a number of seconds >= 0 or ``{distribution: fixed|uniform|lognormal, ...}``."""
    form = ("a number of seconds or {distribution: fixed, seconds: S} | {distribution: uniform, min: A, max: B} | "
            "{distribution: lognormal, median: M, sigma: S}")
    if isinstance(value, bool):
        raise ValueError("%s: must be %s, got %r" % (field, form, value))
    if isinstance(value, (int, float)):
        if value < 0:
            raise ValueError("%s: must be >= 0, got %r" % (field, value))
        return
    dist = value.get("distribution")
    if dist not in DISTRIBUTIONS:
        raise ValueError("%s.distribution: must be fixed, uniform or lognormal (%s), got %r" % (field, form, dist))
    wanted = DISTRIBUTIONS[dist]
    for key in value:
        if key != "distribution" and key not in wanted:
            raise ValueError("%s.%s: unknown for distribution %s (known: %s)" % (field, key, dist, ", ".join(wanted)))
    for key in wanted:
        number = value.get(key)
        if isinstance(number, bool) or not isinstance(number, (int, float)):
            raise ValueError("%s.%s: is required, a number (%s)" % (field, key, form))
        if number < 0:
            raise ValueError("%s.%s: must be >= 0, got %r" % (field, key, number))
    if dist == "uniform" and value["min"] > value["max"]:
        raise ValueError("%s.min: must be <= max, got %r > %r" % (field, value["min"], value["max"]))
    if dist == "lognormal" and value["median"] <= 0:
        raise ValueError("%s.median: must be > 0, got %r" % (field, value["median"]))


def draw(rng: random.Random, value) -> float:
    """One delay in seconds from a validated ``allocation``/``prepare`` value."""
    if isinstance(value, (int, float)):
        return float(value)
    dist = value["distribution"]
    if dist == "fixed":
        return float(value["seconds"])
    if dist == "uniform":
        return rng.uniform(float(value["min"]), float(value["max"]))
    return rng.lognormvariate(math.log(float(value["median"])), float(value["sigma"]))


class Fault:
    def __init__(self, ident: int, spec_: dict, now: float):
        self.id = ident
        self.kind, self.params = next(iter(spec_.items()))
        self.start = now + float(self.params.get("after", 0))
        seconds = self.params.get("seconds", DEFAULT_SECONDS.get(self.kind))
        if self.kind == "reboot" and self.params.get("comes_back") is False:
            seconds = None
        self.end = math.inf if seconds is None else self.start + float(seconds)
        self.left = self.params.get("count")
        self.hits = 0
        self.rng = random.Random(self.params.get("seed"))  # seeded: a run is reproducible
        self.draws: dict = {}  # (what, key) -> the value drawn once (delay, failure, violation)

    def once(self, what: str, key, make):
        """The value drawn for ``(what, key)``: drawn on first use, then remembered (sticks)."""
        if (what, key) not in self.draws:
            self.draws[(what, key)] = make()
        return self.draws[(what, key)]

    def active(self, now: float) -> bool:
        return self.start <= now < self.end and (self.left is None or self.left > 0)

    def as_dict(self, now: float) -> dict:
        return {"id": self.id, "kind": self.kind, "params": self.params, "active": self.active(now), "hits": self.hits,
                "starts_in": max(0.0, round(self.start - now, 3)),
                "ends_in": None if self.end == math.inf else max(0.0, round(self.end - now, 3))}


class FaultEngine:
    """The lab's faults; ``LabServer`` holds one as ``fault_engine`` and registers ``http_fault``."""

    def __init__(self, lab, faults: list | None = None):
        self.lab = lab
        self.lock = threading.Lock()
        self.faults: list[Fault] = []
        self.ids = itertools.count(1)
        self.boots: dict = {}  # node -> completed reboots (a new bootID each)
        for fault in faults or []:
            self.add(fault)

    # -- management -----------------------------------------------------------------------------

    def add(self, fault) -> list:
        """Add one fault or a list of them (validated); returns their descriptions."""
        items = fault if isinstance(fault, list) else [fault]
        checked = [validate_fault(item) for item in items]
        now = time.monotonic()
        with self.lock:
            added = [Fault(next(self.ids), item, now) for item in checked]
            self.faults.extend(added)
        self.lab_wake()
        return [f.as_dict(now) for f in added]

    def remove(self, ident: int | None = None) -> int:
        """Drop fault ``ident`` (or all); a rebooting node comes back. Returns how many were dropped."""
        with self.lock:
            keep = [f for f in self.faults if ident is not None and f.id != ident]
            gone = [f for f in self.faults if f not in keep]
            self.faults = keep
            for fault in gone:
                if fault.kind == "reboot" and fault.active(time.monotonic()):
                    self.boots[fault.params["node"]] = self.boots.get(fault.params["node"], 0) + 1
        self.lab_wake()
        return len(gone)

    def describe(self) -> list:
        now = time.monotonic()
        with self.lock:
            return [f.as_dict(now) for f in self.faults]

    def lab_wake(self) -> None:
        store = getattr(self.lab, "store", None)
        if store is not None:
            store.wake()

    def active_faults(self, kind: str, node: str | None = None) -> list:
        now = time.monotonic()
        kind = ALIASES.get(kind, kind)
        with self.lock:
            return [f for f in self.faults if f.kind == kind and f.active(now)
                    and (node is None or f.params.get("node") in (None, node))]

    # -- what the lab's parts ask ---------------------------------------------------------------

    def fault_active(self, kind: str, node: str | None = None) -> bool:
        """Is a fault of ``kind`` active (for ``node``, when given: node-less faults apply to every node)?"""
        return bool(self.active_faults(kind, node))

    def fault_rate(self, kind: str) -> float:
        """The failure rate (0..1) of ``kind`` now, e.g. ``fault_rate("claim_allocation")``."""
        faults = [f for f in self.active_faults(kind) if f.params.get("per", "attempt") == "attempt"]
        if not faults:
            return 0.0
        for fault in faults:
            fault.hits += 1
        return max(float(f.params.get("rate", 1.0)) for f in faults)

    def delay(self, what: str, key) -> float:
        """``claim_latency``: the ``what`` (allocation | prepare) delay of ``key`` (a claim or pod), drawn once
        per key from the fault's seeded generator; 0.0 without an active claim_latency fault."""
        total = 0.0
        for fault in self.active_faults("claim_latency"):
            if what in fault.params:
                with self.lock:
                    total = max(total, fault.once(what, key, lambda f=fault: draw(f.rng, f.params[what])))
        return total

    def pod_allocation_fails(self, key) -> bool | None:
        """``claim_allocation_failure`` with ``per: pod``: the decision for pod ``key``, drawn once (seeded) and
        kept; None when no such fault is active (the per-attempt draw of ``fault_rate`` applies)."""
        faults = [f for f in self.active_faults("claim_allocation_failure") if f.params.get("per") == "pod"]
        if not faults:
            return None
        fails = False
        with self.lock:
            for fault in faults:
                rate = float(fault.params.get("rate", 1.0))
                fails = fault.once("fail", key, lambda f=fault, r=rate: f.rng.random() < r) or fails
                fault.hits += 1
        return fails

    def numa_violation(self, key) -> bool:
        """``numa_violation``: whether claim ``key`` gets devices on different NUMA nodes (drawn once, seeded)."""
        violate = False
        with self.lock:
            for fault in self.active_faults_locked("numa_violation"):
                rate = float(fault.params.get("rate", 1.0))
                violate = fault.once("numa", key, lambda f=fault, r=rate: f.rng.random() < r) or violate
        return violate

    def active_faults_locked(self, kind: str) -> list:
        now = time.monotonic()
        return [f for f in self.faults if f.kind == kind and f.active(now)]

    def wake_at(self, monotonic: float) -> None:
        """Notify the store's waiters at ``monotonic`` (a controller that skipped work until then re-runs)."""
        timer = threading.Timer(max(0.0, monotonic - time.monotonic()), self.lab_wake)
        timer.daemon = True
        timer.start()

    def nodes_down(self) -> set:
        """Nodes rebooting now (or lost); the simulated kubelet reports them NotReady."""
        self._count_boots()
        return {f.params["node"] for f in self.active_faults("reboot")}

    def boot_generation(self, node: str) -> int:
        self._count_boots()
        with self.lock:
            return self.boots.get(node, 0)

    def _count_boots(self) -> None:
        now = time.monotonic()
        with self.lock:
            for fault in self.faults:
                if fault.kind == "reboot" and fault.end <= now and not fault.params.get("_counted"):
                    fault.params["_counted"] = True
                    self.boots[fault.params["node"]] = self.boots.get(fault.params["node"], 0) + 1

    def http_fault(self, method: str, path: str):
        """A ``LabServer.faults`` callable: the ApiError to answer with, or None (after any delay)."""
        if path.startswith("/kubelab/"):
            return None
        now = time.monotonic()
        error, delay = None, 0.0
        with self.lock:
            for fault in self.faults:
                if fault.kind not in ("api_error", "eviction") or not fault.active(now):
                    continue
                if fault.kind == "eviction" and not (method == "POST" and _EVICTION.search(path)):
                    continue
                if fault.kind == "api_error" and not _request_matches(fault.params, method, path):
                    continue
                if fault.left is not None:
                    fault.left -= 1
                fault.hits += 1
                delay = max(delay, float(fault.params.get("delay", 0)))
                if error is None and (fault.kind == "api_error" or "code" in fault.params):
                    error = _error(fault.params.get("code", 500), fault.kind, method, path, fault.params)
        if delay:
            time.sleep(delay)
        return error


def _request_matches(params: dict, method: str, path: str) -> bool:
    methods = params.get("method")
    if methods:
        methods = [methods] if isinstance(methods, str) else methods
        if method.upper() not in [m.upper() for m in methods]:
            return False
    return not params.get("path") or re.search(params["path"], path) is not None


_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch"}


def request_attributes(method: str, path: str) -> dict:
    """What kube-apiserver's RequestInfo resolver makes of a request: verb, API group, resource
    (with ``/subresource``), namespace and name; ``resource`` is None for non-resource paths."""
    parts = [p for p in path.split("/") if p]
    info = {"verb": method.lower(), "group": "", "resource": None, "namespace": None, "name": None}
    if parts[:2] == ["api", "v1"]:
        rest = parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 3:
        info["group"], rest = parts[1], parts[3:]
    else:
        rest = []
    if not rest:
        info["verb"] = {"GET": "get", "HEAD": "get"}.get(method, method.lower())
        return info
    if rest[0] == "namespaces" and len(rest) >= 3:
        info["namespace"], rest = rest[1], rest[2:]
    info["resource"] = rest[0] + ("/" + rest[2] if len(rest) > 2 else "")
    info["name"] = rest[1] if len(rest) > 1 else None
    if method in ("GET", "HEAD"):
        info["verb"] = "get" if info["name"] else "list"
    elif method == "DELETE":
        info["verb"] = "delete" if info["name"] else "deletecollection"
    else:
        info["verb"] = _VERBS.get(method, method.lower())
    return info


def forbidden(method: str, path: str, user: str = DEFAULT_FAULT_USER) -> ApiError:
    """The 403 kube-apiserver's authorization filter answers (``responsewriters.Forbidden``)."""
    info = request_attributes(method, path)
    if info["resource"] is None:
        return ApiError(403, "Forbidden", 'forbidden: User "%s" cannot %s path "%s"' % (user, info["verb"], path), {})
    resource = info["resource"]
    subject = resource.split("/")[0] if "/" not in resource else resource
    if info["name"]:
        subject = '%s "%s"' % (subject, info["name"])
    scope = ('in the namespace "%s"' % info["namespace"]) if info["namespace"] else "at the cluster scope"
    message = '%s is forbidden: User "%s" cannot %s resource "%s" in API group "%s" %s' % (
        subject, user, info["verb"], resource, info["group"], scope)
    details = {"group": info["group"], "kind": resource.split("/")[0]}
    if info["name"]:
        details["name"] = info["name"]
    return ApiError(403, "Forbidden", message, details)


def _error(code: int, kind: str, method: str = "GET", path: str = "/", params: dict | None = None) -> ApiError:
    params = params or {}
    if code == 403:
        return forbidden(method, path, params.get("user", DEFAULT_FAULT_USER))
    if code == 429:
        return ApiError(429, "TooManyRequests", "the server has received too many requests and has asked us to try "
                        "again later (kubelab fault %s)" % kind, {"retryAfterSeconds": int(params.get("retry_after", 1))})
    if code == 503:
        return ApiError(503, "ServiceUnavailable", "the server is currently unable to handle the request (kubelab "
                        "fault %s)" % kind, {})
    if code == 504:
        return ApiError(504, "Timeout", "Timeout: request did not complete within the allotted timeout (kubelab "
                        "fault %s)" % kind, {})
    if code == 502:
        return ApiError(502, "BadGateway", "the server responded with the status code 502 (kubelab fault %s)" % kind, {})
    return ApiError(500, "InternalError", "Internal error occurred: kubelab fault %s" % kind, {})


DRA_DRIVER = "gpu.nvidia.com"


def _node_devices(api, registry, node: str) -> list:
    """The devices the node's ResourceSlices of the lab's DRA driver publish; for a node without any (the
    device plugin's, or its DRA plugin restarting) its GPUs ``gpu-<index>`` (``kubelab.gpufleet.io/gpus``)."""
    slices = registry.get("resource.k8s.io", "v1", "resourceslices")
    devices = [] if slices is None else [
        d for s in api.list(slices, None, shared=True)["items"] if spec(s).get("driver") == DRA_DRIVER
        and spec(s).get("nodeName") == node for d in spec(s).get("devices") or []]
    nodes = registry.get("", "v1", "nodes")
    if devices or nodes is None:
        return devices
    item = api.store.get_or_none(nodes, None, node, shared=True) or {}
    try:
        gpus = json.loads((meta(item).get("annotations") or {}).get(GPUS_ANNOTATION) or "[]")
        return [{"name": "gpu-%d" % int(g.get("index", i))} for i, g in enumerate(gpus)]
    except (ValueError, TypeError, AttributeError):
        return []


class FaultController(Controller):
    """Node-side effects: device health Unknown (condition + taint) and DRA plugin restarts (slices withdrawn)."""

    watches = ("Node", "ResourceSlice")
    resync_seconds = 0.25

    def __init__(self, lab):
        super().__init__(lab)
        self.nodes = self.rtype("", "v1", "nodes")
        self.marked: set = set()

    def reconcile(self) -> None:
        engine = getattr(self.lab, "fault_engine", None)
        if engine is None:
            return
        self._device_health(engine)
        for node in self.api.list(self.nodes, None, shared=True)["items"]:
            name = meta(node)["name"]
            unhealthy = engine.fault_active("device_health_unknown", name)
            if unhealthy or name in self.marked:
                self._health(node, unhealthy)
        restarting = engine.active_faults("dra_plugin_restart")
        slices = self.rtype("resource.k8s.io", "v1", "resourceslices")
        if restarting and slices is not None:
            nodes = {f.params.get("node") for f in restarting}
            for item in self.api.list(slices, None, shared=True)["items"]:
                if None in nodes or spec(item).get("nodeName") in nodes:
                    try:
                        self.api.delete(slices, None, meta(item)["name"])
                    except ApiError as exc:
                        if exc.code != 404:
                            raise

    def _device_health(self, engine) -> None:
        """``lab.device_health`` {(driver, pool, device): health} from the active device_unhealthy faults; a
        device that was not healthy and no longer is faulted is Healthy again (so the status shows it)."""
        table = getattr(self.lab, "device_health", None) or {}
        wanted = {}
        for fault in engine.active_faults("device_unhealthy"):
            node, device = fault.params["node"], fault.params.get("device")
            # every device the fault has covered stays covered until it ends: a pass that lists the node's
            # slices in a gap (a slice republished) must not report the device Healthy for a moment
            with engine.lock:
                names = fault.once("devices", node, set)
            names.update([device] if device else [d["name"] for d in _node_devices(self.api, self.registry, node)])
            for name in sorted(names):
                wanted[(DRA_DRIVER, node, name)] = fault.params.get("health", "Unhealthy")
        new = {key: wanted.get(key, "Healthy") for key in set(table) | set(wanted)}
        if new != table or getattr(self.lab, "device_health", None) is None:
            self.lab.device_health = new  # one new table, never changed in place: a reader sees all of it or none
            self.lab.store.wake()  # the kubelet and the driver write the new health now

    def _health(self, node: dict, unhealthy: bool) -> None:
        name = meta(node)["name"]
        taints = [t for t in spec(node).get("taints") or [] if t.get("key") != HEALTH_TAINT]
        if unhealthy:
            taints.append({"key": HEALTH_TAINT, "value": "unknown", "effect": "NoSchedule"})
            self.marked.add(name)
        if taints != (spec(node).get("taints") or []):
            body = clone(node)
            body.setdefault("spec", {})["taints"] = taints
            if not taints:
                body["spec"].pop("taints")
            node, _code = self.api.update(self.nodes, None, name, body, field_manager="kubelab-faults")
        new_status = clone(status(node))
        if unhealthy:
            new_status["conditions"] = set_condition(
                new_status.get("conditions"), HEALTH_CONDITION, "Unknown", "DeviceHealthTimeout",
                "no device health update from the GPU driver within 30s (kubelab fault device_health_unknown)")
        else:
            new_status["conditions"] = set_condition(new_status.get("conditions"), HEALTH_CONDITION, "True",
                                                     "DevicesHealthy", "all GPU devices report healthy")
        write_status(self.api, self.nodes, node, new_status, "kubelab-faults")
        if not unhealthy:
            self.marked.discard(name)
