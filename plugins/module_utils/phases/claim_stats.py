# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""claim_stats: the exact statistics of DRA claim lifecycles (issue 12, section 1; docs/acceptance.md).

Pure logic, standard library only, no Ansible: the controller module ``claim_lifecycle`` builds one
per-claim record per lifecycle from watch events and object fields and calls this code for the
results of the record ``dra-acceptance``:

- :func:`parse_time` reads RFC 3339 timestamps (seconds up to nanosecond fractions) into exact
  ``Decimal`` seconds since the epoch, so a latency is a difference of exact numbers;
- :func:`record` / :func:`validate_record` check and normalise one per-claim record;
- :func:`quantiles` is the nearest-rank method on the exact samples;
- :func:`summarize` gives ``attempted``, ``successful``, ``success_rate``,
  ``allocation_latency_seconds``, ``start_latency_seconds``, ``errors``, ``cleanup_defects`` and
  ``numa``;
- :func:`write_jsonl` / :func:`read_jsonl` keep the raw records (JSON Lines, 0600, crash-safe,
  through private_files);
- :func:`progress` formats the progress line of a long run.

Bad input raises :class:`ClaimStatsError` (a ``ValueError``) whose message starts with the field,
e.g. ``records[3].allocated_at: expected an RFC 3339 timestamp ...``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import math
import numbers
import re
from decimal import Decimal, ROUND_CEILING, ROUND_FLOOR
from fractions import Fraction

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.common import clock
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.evidence import private_files
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.evidence import rates

QUANTILE_METHOD = "nearest-rank"
DEFAULT_QUANTILES = (0.5, 0.95, 0.99)

TIME_FIELDS = ("created_at", "allocated_at", "scheduled_at", "ready_at", "delete_requested_at",
               "deallocated_at", "deleted_at")
"""The per-claim timestamps, in the order a lifecycle produces them."""

DEVICE_FIELDS = ("driver", "pool", "device", "uuid", "pci_bus_id", "numa_node", "request")
"""Fields of one selected device; ``request`` (the claim's request name from the allocation result)
is optional and groups devices for the NUMA check."""

RECORD_FIELDS = ("claim", "namespace", "pod", "uid", "kind", "node") + TIME_FIELDS + (
    "devices", "error_class", "error", "numa_constraint", "leaked")
"""Every field a normalised record has; any other key is refused (a typo must not pass silently)."""

INCOMPLETE = "incomplete"
"""The error class counted for a record with no error class that still lacks a time a successful
lifecycle has (``created_at``, ``allocated_at``, ``ready_at``): attempted - successful always
equals the sum of ``errors``."""

UNKNOWN_NUMA = "unknown"

_PCI_RE = re.compile(r"^[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")


class ClaimStatsError(ValueError):
    """Bad input; ``field`` names it (``records[3].devices[0].numa_node``), and the message starts with it."""

    def __init__(self, field, message):
        super(ClaimStatsError, self).__init__("%s: %s" % (field, message))
        self.field = field


def parse_time(text, field="timestamp"):
    """Exact seconds since the Unix epoch (a ``Decimal``) of an RFC 3339 timestamp.

    Accepts whole seconds (``2026-12-02T07:36:45Z``, what Kubernetes writes in ``metadata``) and
    fractions of 1 to 9 digits (microseconds in ``managedFields``/conditions, nanoseconds from the
    lab), ``Z`` or a numeric offset (converted to UTC exactly). No float is involved, so nanoseconds
    survive: ``parse_time("...45.000000001Z") - parse_time("...45Z") == Decimal("1E-9")``.
    A leap second (``:60``), more than 9 fraction digits, a date that does not exist, or anything not
    a string raises :class:`ClaimStatsError` naming ``field``."""
    try:
        return clock.parse_exact(text, field)
    except ValueError as exc:
        raise ClaimStatsError(field, str(exc)[len(field) + 2:])


def _string(value, field, required=False):
    if value is None:
        if required:
            raise ClaimStatsError(field, "required (a non-empty string)")
        return None
    if not isinstance(value, str) or not value.strip():
        raise ClaimStatsError(field, "expected a non-empty string, got %r" % (value,))
    return value


def _flag(value, field):
    if value is None:
        return False
    if not isinstance(value, bool):
        raise ClaimStatsError(field, "expected true or false, got %r" % (value,))
    return value


def _numa_node(value, field):
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < -1:
        raise ClaimStatsError(field, "expected a NUMA node number >= 0, -1 or null for unknown, got %r" % (value,))
    return value


def _device(value, field):
    if not isinstance(value, dict):
        raise ClaimStatsError(field, "expected a mapping with %s, got %r" % (", ".join(DEVICE_FIELDS), value))
    unknown = sorted(set(value) - set(DEVICE_FIELDS))
    if unknown:
        raise ClaimStatsError("%s.%s" % (field, unknown[0]), "unknown device field; expected one of %s" % ", ".join(DEVICE_FIELDS))
    device = {
        "driver": _string(value.get("driver"), field + ".driver", required=True),
        "pool": _string(value.get("pool"), field + ".pool", required=True),
        "device": _string(value.get("device"), field + ".device", required=True),
        "uuid": _string(value.get("uuid"), field + ".uuid"),
        "pci_bus_id": _string(value.get("pci_bus_id"), field + ".pci_bus_id"),
        "numa_node": _numa_node(value.get("numa_node"), field + ".numa_node"),
        "request": _string(value.get("request"), field + ".request"),
    }
    if device["pci_bus_id"] is not None and not _PCI_RE.match(device["pci_bus_id"]):
        raise ClaimStatsError(field + ".pci_bus_id", "expected a PCI address like 0000:3b:00.0, got %r" % device["pci_bus_id"])
    return device


def validate_record(rec, where="record"):
    """A normalised copy of one per-claim record (the input is not changed), or :class:`ClaimStatsError`.

    Fields (docs/acceptance.md, "The per-claim record"): ``claim`` (name, required), ``namespace``,
    ``pod``, ``uid``, ``kind`` (required, e.g. ``template``, ``extended-resource``, ``mig``,
    ``numa``), ``node``; the times :data:`TIME_FIELDS` as RFC 3339 strings or null (kept as given:
    the raw record is the evidence); ``devices`` (list of {driver, pool, device, uuid, pci_bus_id,
    numa_node, request}); ``error_class`` (null when the lifecycle did not fail) and ``error``
    (its message); ``numa_constraint`` and ``leaked`` (booleans, default false).

    Consistency: every time is at or after ``created_at``, ``ready_at`` is not before
    ``allocated_at``, ``deleted_at`` not before ``delete_requested_at``; ``deleted_at`` needs
    ``delete_requested_at``, and so does ``leaked`` (a leak is something left after its expected
    deletion); ``error`` needs ``error_class``."""
    if not isinstance(rec, dict):
        raise ClaimStatsError(where, "expected a mapping (one per-claim record), got %s" % type(rec).__name__)
    unknown = sorted(set(rec) - set(RECORD_FIELDS))
    if unknown:
        raise ClaimStatsError("%s.%s" % (where, unknown[0]), "unknown record field; expected one of %s" % ", ".join(RECORD_FIELDS))
    out = {
        "claim": _string(rec.get("claim"), where + ".claim", required=True),
        "namespace": _string(rec.get("namespace"), where + ".namespace"),
        "pod": _string(rec.get("pod"), where + ".pod"),
        "uid": _string(rec.get("uid"), where + ".uid"),
        "kind": _string(rec.get("kind"), where + ".kind", required=True),
        "node": _string(rec.get("node"), where + ".node"),
        "error_class": _string(rec.get("error_class"), where + ".error_class"),
        "error": _string(rec.get("error"), where + ".error"),
        "numa_constraint": _flag(rec.get("numa_constraint"), where + ".numa_constraint"),
        "leaked": _flag(rec.get("leaked"), where + ".leaked"),
    }
    times = {}
    for name in TIME_FIELDS:
        value = rec.get(name)
        out[name] = value
        if value is not None:
            times[name] = parse_time(value, "%s.%s" % (where, name))
    devices = rec.get("devices")
    if devices is None:
        devices = []
    if not isinstance(devices, list):
        raise ClaimStatsError(where + ".devices", "expected a list of devices, got %r" % (devices,))
    out["devices"] = [_device(item, "%s.devices[%d]" % (where, index)) for index, item in enumerate(devices)]
    if out["error"] is not None and out["error_class"] is None:
        raise ClaimStatsError(where + ".error", "an error message needs an error_class")
    created = times.get("created_at")
    if created is not None:
        for name in TIME_FIELDS[1:]:
            if name in times and times[name] < created:
                raise ClaimStatsError("%s.%s" % (where, name), "%s is before created_at %s" % (rec[name], rec["created_at"]))
    elif times:
        first = [name for name in TIME_FIELDS if name in times][0]
        raise ClaimStatsError(where + ".created_at", "required when %s is set" % first)
    _order(rec, times, where, "allocated_at", "ready_at")
    _order(rec, times, where, "delete_requested_at", "deleted_at")
    if "deleted_at" in times and "delete_requested_at" not in times:
        raise ClaimStatsError(where + ".delete_requested_at", "required when deleted_at is set")
    if out["leaked"] and "delete_requested_at" not in times:
        raise ClaimStatsError(where + ".delete_requested_at", "required when leaked is true (a leak is left after its expected deletion)")
    return out


def _order(rec, times, where, before, after):
    if before in times and after in times and times[after] < times[before]:
        raise ClaimStatsError("%s.%s" % (where, after), "%s is before %s %s" % (rec[after], before, rec[before]))


def record(claim, kind, created_at=None, allocated_at=None, scheduled_at=None, ready_at=None,
           delete_requested_at=None, deallocated_at=None, deleted_at=None, devices=None, node=None,
           error_class=None, error=None, numa_constraint=False, leaked=False, namespace=None, pod=None, uid=None):
    """Build and validate one per-claim record (see :func:`validate_record`)."""
    return validate_record({
        "claim": claim, "namespace": namespace, "pod": pod, "uid": uid, "kind": kind, "node": node,
        "created_at": created_at, "allocated_at": allocated_at, "scheduled_at": scheduled_at,
        "ready_at": ready_at, "delete_requested_at": delete_requested_at, "deallocated_at": deallocated_at,
        "deleted_at": deleted_at, "devices": devices, "error_class": error_class, "error": error,
        "numa_constraint": numa_constraint, "leaked": leaked,
    })


def _quantile_key(q):
    text = format(Decimal(repr(q)) * 100, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "p" + text


def nearest_rank(n, q):
    """The 1-based nearest rank ``max(1, ceil(q * n))`` computed exactly (``q`` read from its
    decimal text, so 0.07 * 100 is 7, never 8 from the float 7.000000000000001)."""
    return max(1, int(math.ceil(Fraction(repr(q)) * n)))


def quantiles(samples, qs=DEFAULT_QUANTILES):
    """Quantiles of ``samples`` by the nearest-rank method on the exact samples.

    With the ``n`` samples sorted ascending as ``x[1] <= ... <= x[n]``, the q-quantile is
    ``x[ceil(q * n)]`` (rank at least 1): always one of the samples, never interpolated. So for
    n = 1 every quantile is the sample; for n = 2, p50 is the smaller and p95/p99 the larger; for
    n = 100, p95 is the 95th smallest.

    Returns ``{method: "nearest-rank", count, p50, p95, p99, max}`` (one ``pNN`` per entry of
    ``qs``: 0.999 gives ``p99.9``); the values are the samples themselves (same type). No samples:
    ``count`` 0 and every value null (an absent measurement is never 0)."""
    values = []
    for index, value in enumerate(samples):
        if isinstance(value, bool) or not isinstance(value, (numbers.Real, Decimal)):
            raise ClaimStatsError("samples[%d]" % index, "expected a number, got %r" % (value,))
        if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
            raise ClaimStatsError("samples[%d]" % index, "expected a finite number, got %r" % (value,))
        if isinstance(value, Decimal) and not value.is_finite():
            raise ClaimStatsError("samples[%d]" % index, "expected a finite number, got %r" % (value,))
        values.append(value)
    for q in qs:
        if isinstance(q, bool) or not isinstance(q, (int, float)) or not 0 < q <= 1:
            raise ClaimStatsError("qs", "expected quantiles in (0, 1], got %r" % (q,))
    values.sort()
    count = len(values)
    result = {"method": QUANTILE_METHOD, "count": count}
    for q in qs:
        result[_quantile_key(q)] = values[nearest_rank(count, q) - 1] if count else None
    result["max"] = values[-1] if count else None
    return result


def ratio(numerator, denominator, rounding=ROUND_FLOOR):
    """``{numerator, denominator, percent}`` by the one rounding rule of every rate (:mod:`rates`,
    docs/evidence.md "Rates"): ``percent`` is 100 x numerator / denominator to :data:`rates.PLACES`
    decimals from the exact fraction, rounded down (``ROUND_FLOOR``, a success rate, so it never
    overstates: 19,999 of 20,000 is 99.99, not 100.00) or up (``ROUND_CEILING``, a defect rate, so it
    never understates), null when the denominator is 0."""
    if rounding not in _DIRECTIONS:
        raise ClaimStatsError("rounding", "expected ROUND_FLOOR or ROUND_CEILING, got %r" % (rounding,))
    try:
        return rates.rate(numerator, denominator, _DIRECTIONS[rounding])
    except rates.RateError as exc:
        raise ClaimStatsError("ratio", str(exc))


_DIRECTIONS = {ROUND_FLOOR: rates.DOWN, ROUND_CEILING: rates.UP}


def _seconds(start, end):
    return float(end - start)


def _numa_check(rec):
    """The NUMA findings of one constrained record: one per request whose devices are not all on one
    known NUMA node."""
    groups = {}
    for device in rec["devices"]:
        groups.setdefault(device["request"], []).append(device)
    found = []
    for request in sorted(groups, key=lambda name: (name is not None, name or "")):
        devices = groups[request]
        nodes = [device["numa_node"] for device in devices]
        known = sorted(set(node for node in nodes if node is not None and node >= 0))
        if any(node is None or node < 0 for node in nodes):
            reason = UNKNOWN_NUMA
        elif len(known) > 1:
            reason = "split"
        else:
            continue
        found.append({
            "claim": rec["claim"],
            "namespace": rec["namespace"],
            "request": request,
            "reason": reason,
            "devices": ["%s/%s/%s" % (device["driver"], device["pool"], device["device"]) for device in devices],
            "numa_nodes": [UNKNOWN_NUMA if node is None or node < 0 else node for node in nodes],
        })
    return found


def _cleanup_reasons(rec):
    reasons = []
    if rec["delete_requested_at"] is None:
        return reasons
    if rec["leaked"]:
        reasons.append("leaked")
    if rec["deleted_at"] is None:
        reasons.append("not deleted")
    return reasons


def _latencies(rec):
    """``(allocation, start)`` seconds of a successful normalised record (no ``error_class``, created,
    allocated and Ready), else None."""
    if rec["error_class"] is not None or any(rec[name] is None for name in ("created_at", "allocated_at", "ready_at")):
        return None
    created = parse_time(rec["created_at"])
    return _seconds(created, parse_time(rec["allocated_at"])), _seconds(created, parse_time(rec["ready_at"]))


def allocation_samples(records):
    """The allocation latencies (seconds, ascending) of the successful per-claim records: the samples
    ``summarize`` takes its ``allocation_latency_seconds`` quantiles from (the gate decision's CDF)."""
    found = []
    for index, rec in enumerate(records):
        latencies = _latencies(validate_record(rec, "records[%d]" % index))
        if latencies is not None:
            found.append(latencies[0])
    return sorted(found)


def summarize(records):
    """The results of the record ``dra-acceptance`` from per-claim records (docs/acceptance.md).

    - ``attempted``: records given; ``successful``: records with no ``error_class`` and with
      ``created_at``, ``allocated_at`` and ``ready_at``; ``success_rate`` = successful of attempted
      (:func:`rates.success_rate`: percent rounded down, docs/evidence.md "Rates").
    - ``allocation_latency_seconds`` (allocated_at - created_at) and ``start_latency_seconds``
      (ready_at - created_at): :func:`quantiles` over the successful claims, exact differences
      given as float seconds.
    - ``errors``: {error class: count} of the unsuccessful ones (:data:`INCOMPLETE` for one with no
      class), sorted by class; its counts add up to attempted - successful.
    - ``cleanup_defects``: denominator = completed lifecycles (``delete_requested_at`` set);
      numerator = those with ``leaked`` true or no ``deleted_at``; ``claims`` their names,
      ``details`` [{claim, namespace, reasons}] (:func:`rates.failure_rate`: ``percent`` rounded up).
    - ``numa``: over the claims with ``numa_constraint`` and at least one device, ``checked``,
      ``violations`` (claims with a finding), ``details`` (per request: claim, request, reason
      ``split`` or ``unknown``, devices, numa_nodes); ``not_checked``: constrained claims that got
      no device (nothing placed, nothing passed).
    """
    if isinstance(records, (str, bytes, dict)) or not hasattr(records, "__iter__"):
        raise ClaimStatsError("records", "expected a list of per-claim records, got %s" % type(records).__name__)
    acc = Summary()
    for index, rec in enumerate(records):
        acc.add(rec, "records[%d]" % index)
    return acc.result()


class Summary(object):
    """:func:`summarize` one record at a time (a run's records streamed, never all held): what it keeps is
    the two latency samples of each successful claim, the error counts and the defects and NUMA findings
    themselves, so its memory grows by two floats per lifecycle, not by a record."""

    def __init__(self):
        self.attempted = self.successful = self.completed = 0
        self.failures = 0  # records with an error class or without ready_at (the progress lines' count)
        self.allocation, self.start = [], []
        self.errors = {}
        self.defects = []
        self.numa_checked, self.numa_violating, self.numa_details, self.numa_not_checked = 0, 0, [], []

    def add(self, rec, where="record"):
        """Validate ``rec`` (named ``where`` in an error) and count it; the normalised record."""
        rec = validate_record(rec, where)
        self.attempted += 1
        if rec["error_class"] or rec["ready_at"] is None:
            self.failures += 1
        latencies = _latencies(rec)
        if latencies is not None:
            self.successful += 1
            self.allocation.append(latencies[0])
            self.start.append(latencies[1])
        else:
            error_class = rec["error_class"] or INCOMPLETE
            self.errors[error_class] = self.errors.get(error_class, 0) + 1
        if rec["delete_requested_at"] is not None:
            self.completed += 1
            reasons = _cleanup_reasons(rec)
            if reasons:
                self.defects.append({"claim": rec["claim"], "namespace": rec["namespace"], "reasons": reasons})
        if rec["numa_constraint"]:
            if not rec["devices"]:
                self.numa_not_checked.append(rec["claim"])
            else:
                self.numa_checked += 1
                found = _numa_check(rec)
                if found:
                    self.numa_violating += 1
                    self.numa_details.extend(found)
        return rec

    def result(self):
        cleanup = rates.failure_rate(len(self.defects), self.completed)
        cleanup["claims"] = [item["claim"] for item in self.defects]
        cleanup["details"] = list(self.defects)
        return {
            "attempted": self.attempted,
            "successful": self.successful,
            "success_rate": rates.success_rate(self.successful, self.attempted),
            "allocation_latency_seconds": quantiles(self.allocation),
            "start_latency_seconds": quantiles(self.start),
            "errors": dict(sorted(self.errors.items())),
            "cleanup_defects": cleanup,
            "numa": {"checked": self.numa_checked, "violations": self.numa_violating,
                     "details": list(self.numa_details), "not_checked": list(self.numa_not_checked)},
        }


class RecordSink(object):
    """Per-claim records as a run makes them: each validated, counted (:class:`Summary`) and written at once
    as a JSON line to a private temporary file beside ``path`` (private_files.PrivateStream); ``publish``
    gives the file its name (0600, never replacing one), ``discard`` drops it. Nothing of a record stays in
    memory but what the summary keeps. ``path`` None: the records are kept in ``records`` instead (tests)."""

    def __init__(self, path=None):
        self.summary = Summary()
        self.stream = private_files.PrivateStream(path) if path else None
        self.records = [] if path is None else None

    def __len__(self):
        return self.summary.attempted

    @property
    def failures(self):
        return self.summary.failures

    def add(self, rec):
        rec = self.summary.add(rec, "records[%d]" % self.summary.attempted)
        if self.stream is not None:
            self.stream.write(json.dumps(rec, sort_keys=True, separators=(",", ":")) + "\n")
        else:
            self.records.append(rec)
        return rec

    def result(self):
        return self.summary.result()

    def publish(self):
        if self.stream is not None:
            self.stream.publish()

    def discard(self):
        if self.stream is not None:
            self.stream.discard()


def dumps_jsonl(records):
    """The JSON Lines text of ``records`` (each validated and normalised; keys sorted)."""
    lines = [json.dumps(validate_record(rec, "records[%d]" % index), sort_keys=True, separators=(",", ":"))
             for index, rec in enumerate(records)]
    return "".join(line + "\n" for line in lines)


def write_jsonl(path, records, replace=False):
    """Write the per-claim records to ``path`` as JSON Lines, mode 0600, crash-safe
    (private_files.write_private: the file appears whole or not at all; an existing file is never
    replaced unless ``replace``). Every record is validated before anything is written. Returns
    the number of records written."""
    records = list(records)
    text = dumps_jsonl(records)
    private_files.write_private(path, text, replace=replace)
    return len(records)


def read_jsonl(path):
    """The validated per-claim records of a JSON Lines file (blank lines skipped); a line that is
    not JSON or not a valid record raises :class:`ClaimStatsError` naming ``<path>:<line>``."""
    try:
        with open(path, "rb") as handle:
            data = handle.read().decode("utf-8")
    except (IOError, OSError) as exc:
        raise ClaimStatsError(path, "cannot read the records: %s" % (exc.strerror or exc))
    except UnicodeDecodeError as exc:
        raise ClaimStatsError(path, "not UTF-8: %s" % exc)
    out = []
    for number, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        where = "%s:%d" % (path, number)
        try:
            value = json.loads(line)
        except ValueError as exc:
            raise ClaimStatsError(where, "not JSON: %s" % exc)
        out.append(validate_record(value, where))
    return out


def progress(done, total, failures):
    """The progress line of a long run: ``progress(120, 500, 2)`` -> ``"claims 120/500 done, 2 failed"``."""
    for name, value in (("done", done), ("total", total), ("failures", failures)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ClaimStatsError(name, "expected a whole number >= 0, got %r" % (value,))
    if done > total:
        raise ClaimStatsError("done", "%d is more than total %d" % (done, total))
    if failures > done:
        raise ClaimStatsError("failures", "%d is more than done %d" % (failures, done))
    return "claims %d/%d done, %d failed" % (done, total, failures)
