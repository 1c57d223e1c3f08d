# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The simulated kubelets' DRA metrics, in the Prometheus text format (0.0.4).

``GET /kubelab/metrics/nodes/<node>`` is one kubelet's ``/metrics``; ``GET /kubelab/metrics`` has
every node's series with a ``node`` label (one scrape target for Prometheus). Exposed (kubelet
names, stability ALPHA; DOMAIN.md §3):

* ``dra_operations_duration_seconds`` histogram (``operation_name`` PrepareResources |
  UnprepareResources, ``is_error``), the default buckets; counters only grow;
* ``dra_resource_claims_in_use`` gauge (``driver_name``, and ``<any>`` for all drivers).

``GET /kubelab/metrics`` also carries the simulated dcgm-exporter's per-GPU series (DCGM exporter's
metric names and labels ``gpu``, ``UUID``, ``pci_bus_id``, ``device``, ``modelName``, ``Hostname``;
no ``node`` label, as dcgm-exporter has none): the simple, honest form - one set per GPU of every
node whose ``kubelab.gpufleet.io/gpus`` annotation lists GPUs, whether or not a dcgm-exporter pod
runs there. Gauges (:data:`DCGM_GAUGES`) are constant; the counter
``DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION`` grows with the lab's monotonic clock (power x seconds, mJ),
so ``rate()`` over it is defined. ``KubeletMetrics.dcgm_missing`` (a set of ``(uuid, metric)``, or
``(uuid, None)`` for all of a GPU's metrics) leaves series out, for tests of a missing metric.

Fed from ``lab.claim_timings[(namespace, name)]`` (filled by the DRA part: monotonic seconds under
``created``, ``allocated``, ``prepare_started``, ``prepared``, ``pod_started``, ``deallocated``, ``deleted``;
optional ``node``, ``unprepare_started``, ``unprepared``, ``pod_stopped``, ``prepare_error``) and from the
ResourceClaims' allocation and ``reservedFor``. PrepareResources observes ``prepared - prepare_started``
(the kubelet's NodePrepareResources call, with any injected ``claim_latency`` prepare delay; ``allocated``
when no start was marked)
(``is_error`` when ``prepare_error`` is set); UnprepareResources observes ``(unprepared or
deallocated) - (unprepare_started or pod_stopped)`` (0 when no start is known). Each claim is
observed once per operation; its node is ``node`` from the timings, else the allocation's node
selector or device pool, else the node of the pod it is reserved for.
"""

from __future__ import annotations

import json
import threading
import time

from kubelab.controllers import Controller

BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
OPERATIONS = ("PrepareResources", "UnprepareResources")
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
HELP_DURATION = ("[ALPHA] Latency histogram in seconds for the duration of handling all ResourceClaims referenced by "
                 "a pod when the pod is being prepared or unprepared.")
HELP_IN_USE = ("[ALPHA] The number of ResourceClaims that are currently in use on the node, by driver name "
               "(driver_name label value) and across all drivers (special value <any> for driver_name).")
UNKNOWN_NODE = "unknown"
GPUS_ANNOTATION = "kubelab.gpufleet.io/gpus"
# dcgm-exporter's names (default-counters.csv); value per GPU: a constant gauge of an idle GPU
DCGM_GAUGES = (
    ("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", 0),
    ("DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).", 0),
    ("DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).", 34),
    ("DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", 72.5),
)
DCGM_ENERGY = ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "Total energy consumption since boot (in mJ).")


class Histogram:
    def __init__(self):
        self.counts = [0] * len(BUCKETS)
        self.total = 0
        self.sum = 0.0

    def observe(self, value: float) -> None:
        for i, bound in enumerate(BUCKETS):
            if value <= bound:
                self.counts[i] += 1
        self.total += 1
        self.sum += value


def _num(value):
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _label_set(labels: dict) -> str:
    return "{%s}" % ",".join('%s="%s"' % (k, str(v).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n"))
                             for k, v in labels.items())


def _fmt(value: float) -> str:
    return repr(float(value)) if value != int(value) else str(int(value))


def _index(gpu: dict) -> int:
    return gpu["index"] if isinstance(gpu.get("index"), int) and not isinstance(gpu.get("index"), bool) else 0


def _dcgm_bus_id(bus_id) -> str:
    """dcgm-exporter's form of a PCI address: an 8-hex-digit domain, upper case (``00000000:19:00.0``)."""
    text = str(bus_id or "")
    domain, sep, rest = text.partition(":")
    if sep and rest.count(":") == 1 and len(domain) <= 8:
        return (domain.rjust(8, "0") + ":" + rest).upper()
    return text.upper()


def claim_node(claim: dict, pods: dict) -> str | None:
    """The node a ResourceClaim's devices are on, from its allocation or its reserving pod."""
    st = claim.get("status") or {}
    allocation = st.get("allocation") or {}
    for term in ((allocation.get("nodeSelector") or {}).get("nodeSelectorTerms") or []):
        for field in term.get("matchFields") or []:
            if field.get("key") == "metadata.name" and field.get("values"):
                return field["values"][0]
    for result in ((allocation.get("devices") or {}).get("results") or []):
        if result.get("pool"):
            return result["pool"]
    namespace = (claim.get("metadata") or {}).get("namespace")
    for ref in st.get("reservedFor") or []:
        node = pods.get((namespace, ref.get("name")))
        if node:
            return node
    return None


class KubeletMetrics:
    """Every simulated kubelet's DRA metrics; ``collect()`` folds in new timings, ``render()`` writes text."""

    def __init__(self, lab):
        self.lab = lab
        self.lock = threading.Lock()
        self.histograms: dict = {}   # node -> {(operation, is_error): Histogram}
        self.in_use: dict = {}       # node -> {driver: count}
        self.seen: set = set()       # (namespace, name, created, operation)
        self.done: set = set()       # (namespace, name, created): both operations observed, nothing left to do
        self.claim_nodes: dict = {}  # (namespace, name) -> node, remembered while claims exist
        self.dcgm_missing: set = set()  # (uuid, metric or None): dcgm series left out (tests)
        self.started = time.monotonic()

    def _types(self):
        registry = self.lab.registry
        return registry.get("resource.k8s.io", "v1", "resourceclaims"), registry.get("", "v1", "pods")

    def collect(self) -> None:
        claims_type, pods_type = self._types()
        claims = self.lab.store.list(claims_type, shared=True)[0] if claims_type is not None else []
        pods = {((p.get("metadata") or {}).get("namespace"), (p.get("metadata") or {}).get("name")):
                (p.get("spec") or {}).get("nodeName") for p in self.lab.store.list(pods_type, shared=True)[0]} if claims else {}
        in_use: dict = {}
        live = set()
        for claim in claims:
            key = (claim["metadata"].get("namespace"), claim["metadata"]["name"])
            live.add(key)
            node = claim_node(claim, pods)
            if node:
                self.claim_nodes[key] = node
            st = claim.get("status") or {}
            if node and st.get("allocation") and st.get("reservedFor"):
                drivers = {r.get("driver") for r in ((st["allocation"].get("devices") or {}).get("results") or [])
                           if r.get("driver")}
                counts = in_use.setdefault(node, {})
                counts["<any>"] = counts.get("<any>", 0) + 1
                for driver in drivers:
                    counts[driver] = counts.get(driver, 0) + 1
        timings = dict(getattr(self.lab, "claim_timings", None) or {})
        with self.lock:
            self.in_use = in_use
            for key, times in timings.items():
                if isinstance(times, dict) and isinstance(key, tuple) and len(key) == 2 \
                        and (key[0], key[1], times.get("created")) not in self.done:
                    self._observe(key, times, key in live)
            for key in [k for k in self.claim_nodes if k not in live and k not in timings]:
                del self.claim_nodes[key]

    def _observe(self, key: tuple, times: dict, live: bool) -> None:
        node = times.get("node") if isinstance(times.get("node"), str) else self.claim_nodes.get(key)
        if not node:
            if live:
                return  # not placed yet: look again at the next collection
            node = UNKNOWN_NODE
        created = times.get("created")
        allocated, prepared = _num(times.get("allocated")), _num(times.get("prepared"))
        started = _num(times.get("prepare_started"))  # when the kubelet called NodePrepareResources
        started = allocated if started is None else started
        if started is not None and prepared is not None:
            self._once(key, created, node, "PrepareResources", prepared - started, bool(times.get("prepare_error")))
        end = _num(times.get("unprepared"))
        if end is None:
            end = _num(times.get("deallocated"))
        if end is not None:
            start = _num(times.get("unprepare_started"))
            start = _num(times.get("pod_stopped")) if start is None else start
            self._once(key, created, node, "UnprepareResources", 0.0 if start is None else end - start, False)
            self.done.add((key[0], key[1], created))  # unprepared: the prepare timing (if any) came before

    def _once(self, key: tuple, created, node: str, operation: str, value: float, error: bool) -> None:
        mark = (key[0], key[1], created, operation)
        if mark in self.seen:
            return
        self.seen.add(mark)
        series = self.histograms.setdefault(node, {})
        series.setdefault((operation, "true" if error else "false"), Histogram()).observe(max(0.0, value))

    def nodes(self) -> list:
        names = [n["metadata"]["name"] for n in self.lab.store.list(self.lab.registry.get("", "v1", "nodes"), shared=True)[0]]
        with self.lock:
            extra = sorted((set(self.histograms) | set(self.in_use)) - set(names))
        return sorted(names) + extra

    def render(self, node: str | None = None) -> str:
        """The exposition of ``node`` (its kubelet's /metrics), or of every node with a ``node`` label."""
        self.collect()
        nodes = [node] if node is not None else self.nodes()
        lines = ["# HELP dra_operations_duration_seconds " + HELP_DURATION,
                 "# TYPE dra_operations_duration_seconds histogram"]
        with self.lock:
            for name in nodes:
                extra = {} if node is not None else {"node": name}
                series = dict(self.histograms.get(name) or {})
                for operation in OPERATIONS:
                    series.setdefault((operation, "false"), Histogram())
                for (operation, error), hist in sorted(series.items()):
                    labels = dict(extra, is_error=error, operation_name=operation)
                    for bound, count in zip(BUCKETS, hist.counts):
                        lines.append("dra_operations_duration_seconds_bucket%s %d"
                                     % (_label_set(dict(labels, le=_fmt(bound))), count))
                    inf = _label_set(dict(labels, le="+Inf"))
                    lines.append("dra_operations_duration_seconds_bucket%s %d" % (inf, hist.total))
                    lines.append("dra_operations_duration_seconds_sum%s %s" % (_label_set(labels), repr(hist.sum)))
                    lines.append("dra_operations_duration_seconds_count%s %d" % (_label_set(labels), hist.total))
            lines += ["# HELP dra_resource_claims_in_use " + HELP_IN_USE, "# TYPE dra_resource_claims_in_use gauge"]
            for name in nodes:
                extra = {} if node is not None else {"node": name}
                counts = dict(self.in_use.get(name) or {})
                counts.setdefault("<any>", 0)
                for driver, count in sorted(counts.items()):
                    lines.append("dra_resource_claims_in_use%s %d" % (_label_set(dict(extra, driver_name=driver)), count))
        if node is None:
            lines += self.render_dcgm()
        return "\n".join(lines) + "\n"

    def dcgm_gpus(self) -> list:
        """``[(node, gpu entry)]`` for every GPU listed in a node's ``kubelab.gpufleet.io/gpus`` annotation."""
        found = []
        for item in self.lab.store.list(self.lab.registry.get("", "v1", "nodes"), shared=True)[0]:
            raw = ((item.get("metadata") or {}).get("annotations") or {}).get(GPUS_ANNOTATION)
            try:
                gpus = json.loads(raw) if raw else []
            except ValueError:
                gpus = []
            for gpu in gpus if isinstance(gpus, list) else []:
                if isinstance(gpu, dict) and gpu.get("uuid"):
                    found.append((item["metadata"]["name"], gpu))
        return sorted(found, key=lambda pair: (pair[0], _index(pair[1])))

    def render_dcgm(self) -> list:
        """The simulated dcgm-exporter's lines (one exporter per GPU node, all in one exposition)."""
        gpus = self.dcgm_gpus()
        with self.lock:
            missing = set(self.dcgm_missing)
        elapsed = time.monotonic() - self.started
        lines = []
        for metric, help_text, value in DCGM_GAUGES + ((DCGM_ENERGY[0], DCGM_ENERGY[1], None),):
            lines += ["# HELP %s %s" % (metric, help_text),
                      "# TYPE %s %s" % (metric, "gauge" if value is not None else "counter")]
            for name, gpu in gpus:
                if (gpu["uuid"], metric) in missing or (gpu["uuid"], None) in missing:
                    continue
                index = _index(gpu)
                labels = {"gpu": str(index), "UUID": gpu["uuid"], "pci_bus_id": _dcgm_bus_id(gpu.get("pci_bus_id")),
                          "device": "nvidia%d" % index, "modelName": gpu.get("name") or "", "Hostname": name}
                number = value if value is not None else int(1000 + 72500 * elapsed)  # mJ at 72.5 W
                lines.append("%s%s %s" % (metric, _label_set(labels), _fmt(number)))
        return lines


class MetricsController(Controller):
    """Collects often, so that a claim's node is known even if it is deleted between two scrapes."""

    watches = ("ResourceClaim",)
    resync_seconds = 1.0

    def reconcile(self) -> None:
        metrics = getattr(self.lab, "metrics", None)
        if metrics is not None:
            metrics.collect()


def parse_text(text: str) -> dict:
    """A small parser of the text format for tests: ``{(name, ((label, value), ...)): float}``."""
    samples = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        head, _sep, value = line.rpartition(" ")
        name, _brace, rest = head.partition("{")
        labels = []
        rest = rest.rstrip("}")
        while rest:
            key, _eq, rest = rest.partition('="')
            chars, i = [], 0
            while rest[i] != '"':
                if rest[i] == "\\":
                    i += 1
                    chars.append({"n": "\n"}.get(rest[i], rest[i]))
                else:
                    chars.append(rest[i])
                i += 1
            labels.append((key.lstrip(","), "".join(chars)))
            rest = rest[i + 1:]
        samples[(name, tuple(sorted(labels)))] = float(value)
    return samples
