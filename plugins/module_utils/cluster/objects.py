# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kubernetes objects: the one way every module reads them.

- metadata: :func:`meta`, :func:`name`, :func:`namespace`, :func:`uid`, :func:`labels`,
  :func:`annotations`, :func:`spec`, :func:`status` -- None-safe (a missing object, a missing or
  non-mapping field gives ``{}`` or None, never an exception);
- conditions: :func:`condition` (by ``type``), :func:`condition_true`; None-safe, items that are not
  mappings are skipped;
- owners: :func:`controller_of` (the ``controller: true`` reference), :func:`owner_chain` (controller
  after controller, through a lookup);
- reads: :func:`get_or_none` / :func:`list_or_none` -- None on a 404 only (:func:`not_found`); a 403 is
  an error, never an absent object;
- quantities parsed as Kubernetes does (``resource.Quantity``): :func:`quantity` (``2k``, ``500m``,
  ``1Gi``, ``1e3``; binary and decimal SI suffixes; a ``ValueError`` naming the value otherwise),
  :func:`quantity_int` for integer resources;
- the GPU-node rule, :func:`is_gpu_node`: a non-zero ``nvidia.com/gpu`` capacity or allocatable, or the
  GPU Feature Discovery label ``nvidia.com/gpu.present=true``. Nothing else -- no lab label.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
from decimal import Decimal

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster.client import K8sApiError

GPU_RESOURCE = "nvidia.com/gpu"
GPU_PRESENT_LABEL = "nvidia.com/gpu.present"

# resource.Quantity: <signedNumber><suffix>, suffix binarySI | decimalSI | decimalExponent.
_QUANTITY_RE = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$")
_BINARY = {"Ki": 2 ** 10, "Mi": 2 ** 20, "Gi": 2 ** 30, "Ti": 2 ** 40, "Pi": 2 ** 50, "Ei": 2 ** 60}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}


def _mapping(value):
    return value if isinstance(value, dict) else {}


# --- metadata -------------------------------------------------------------------------------------


def meta(obj):
    """``metadata`` of ``obj``; ``{}`` for None, a non-mapping or a missing field."""
    return _mapping(_mapping(obj).get("metadata"))


def spec(obj):
    return _mapping(_mapping(obj).get("spec"))


def status(obj):
    return _mapping(_mapping(obj).get("status"))


def name(obj):
    return meta(obj).get("name")


def namespace(obj):
    return meta(obj).get("namespace")


def uid(obj):
    return meta(obj).get("uid")


def labels(obj):
    return _mapping(meta(obj).get("labels"))


def annotations(obj):
    return _mapping(meta(obj).get("annotations"))


# --- conditions -----------------------------------------------------------------------------------


def condition(obj, kind):
    """The ``status.conditions`` item of ``type`` ``kind``, or None (also for None or malformed lists)."""
    items = status(obj).get("conditions")
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and item.get("type") == kind:
            return item
    return None


def condition_true(obj, kind):
    """Whether the condition ``kind`` has ``status: "True"``."""
    return (condition(obj, kind) or {}).get("status") == "True"


# --- owners ---------------------------------------------------------------------------------------


def controller_of(obj):
    """The controller owner reference (``controller: true``) of ``obj``, or None."""
    refs = meta(obj).get("ownerReferences")
    for ref in refs if isinstance(refs, list) else []:
        if isinstance(ref, dict) and ref.get("controller"):
            return ref
    return None


def owner_name(obj, kind):
    """The name of ``obj``'s owner reference of ``kind`` that controls it (a reference without a
    ``controller`` field counts: older recorded objects omit it), or None."""
    refs = meta(obj).get("ownerReferences")
    for ref in refs if isinstance(refs, list) else []:
        if isinstance(ref, dict) and ref.get("kind") == kind and ref.get("controller", True):
            return ref.get("name")
    return None


def owner_chain(obj, lookup, limit=10):
    """The controller references from ``obj`` upwards (``[ReplicaSet ref, Deployment ref]`` for a pod of a
    Deployment). ``lookup(ref, child)`` returns the owner object (or None where it is gone or not read);
    the chain stops there, at an object without a controller, or after ``limit`` references (a loop)."""
    chain = []
    current = obj
    while len(chain) < limit:
        ref = controller_of(current)
        if ref is None:
            break
        chain.append(ref)
        current = lookup(ref, current)
        if current is None:
            break
    return chain


# --- reads ----------------------------------------------------------------------------------------


def not_found(exc):
    """Whether an API error means "not there": a 404. A 403 never does (a forbidden read is not an
    absent object)."""
    return isinstance(exc, K8sApiError) and exc.status == 404 and not exc.forbidden


def get_or_none(reader, path, query=None):
    """``reader.get(path)``, or None on a 404; every other error (a 403 included) raises."""
    try:
        return reader.get(path, query) if query else reader.get(path)
    except K8sApiError as exc:
        if not_found(exc):
            return None
        raise


def list_or_none(reader, path, **selectors):
    """``reader.list(path, ...)``, or None on a 404 (the kind is not served); a 403 or any other error raises."""
    try:
        return reader.list(path, **selectors)
    except K8sApiError as exc:
        if not_found(exc):
            return None
        raise


# --- quantities -----------------------------------------------------------------------------------


def quantity(value):
    """A Kubernetes resource quantity as an exact ``Decimal``: ``"8"`` -> 8, ``"2k"`` -> 2000,
    ``"500m"`` -> 0.5, ``"1Gi"`` -> 1073741824, ``"1e3"`` -> 1000; an int is taken as it is.
    Anything else (None, a bool, an empty or malformed string, an unknown suffix) raises ``ValueError``
    naming the value."""
    if isinstance(value, bool) or value is None:
        raise ValueError("not a Kubernetes quantity: %r (expected e.g. 8, 2k, 500m, 1Gi)" % (value,))
    if isinstance(value, int):
        return Decimal(value)
    text = value.strip() if isinstance(value, str) else None
    match = _QUANTITY_RE.match(text) if text else None
    if not match:
        raise ValueError("not a Kubernetes quantity: %r (expected e.g. 8, 2k, 500m, 1Gi)" % (value,))
    number = Decimal(match.group(1))  # the pattern admits only decimal numbers
    suffix = match.group(2) or ""
    if suffix in _BINARY:
        return number * _BINARY[suffix]
    if suffix in _DECIMAL:
        return number.scaleb(_DECIMAL[suffix])
    if suffix:
        return number.scaleb(int(suffix[1:]))
    return number


def quantity_int(value):
    """An integer resource quantity (extended resources such as ``nvidia.com/gpu`` are whole, never
    negative): ``"8"`` -> 8, ``"2k"`` -> 2000, ``"1Ki"`` -> 1024. ``ValueError`` naming the value for a
    malformed, fractional or negative quantity."""
    number = quantity(value)
    if number != number.to_integral_value() or number < 0:
        raise ValueError("not an integer quantity: %r (expected a whole, non-negative number such as 8 or 2k)"
                         % (value,))
    return int(number)


# --- the GPU-node rule ----------------------------------------------------------------------------


def gpu_quantity(node, part="allocatable"):
    """``status.<part>["nvidia.com/gpu"]`` as an int; None where it is absent. A malformed value raises
    ``ValueError`` naming it."""
    value = _mapping(status(node).get(part)).get(GPU_RESOURCE)
    return None if value is None else quantity_int(value)


def is_gpu_node(node):
    """A GPU node: a non-zero ``nvidia.com/gpu`` capacity or allocatable (the device plugin serves it), or
    the GPU Feature Discovery label ``nvidia.com/gpu.present=true`` (a DRA node, whose GPUs are devices
    of ResourceSlices, has no such capacity). A malformed quantity does not count as a GPU."""
    if str(labels(node).get(GPU_PRESENT_LABEL, "")).lower() == "true":
        return True
    for part in ("capacity", "allocatable"):
        try:
            if (gpu_quantity(node, part) or 0) > 0:
                return True
        except ValueError:
            continue
    return False
