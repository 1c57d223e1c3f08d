# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Objects in a real etcd, as kube-apiserver keeps them, and the watch event log.

Objects are JSON under ``/registry/...`` (resources.ResourceType.key); ``metadata.resourceVersion``
is never stored: it is the key's etcd ``mod_revision`` on every read, and a list's
resourceVersion is the etcd revision of the read. Writes are compare-and-swap transactions on
``mod_revision``, so an etcd snapshot taken from this etcd and restored holds the lab's real state.

All writes of one lab server pass through :class:`Store`, which appends each change to an
in-memory event log (bounded); watches replay from it by revision. A watch from a revision
older than the log answers 410 Expired, as kube-apiserver does when its watch cache is too short.
"""

from __future__ import annotations

import base64
import copy
import datetime
import json
import threading
import uuid
from collections import deque

import requests

from kubelab.errors import ApiError, already_exists, conflict, not_found

EVENT_LOG_SIZE = 20000


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _b64(text: str | bytes) -> str:
    if isinstance(text, str):
        text = text.encode("utf-8")
    return base64.b64encode(text).decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.b64decode(text or "")


def _prefix_end(prefix: str) -> str:
    raw = bytearray(prefix.encode("utf-8"))
    raw[-1] += 1
    return raw.decode("utf-8")


class Etcd:
    """The few etcd v3 JSON-gateway calls the store needs (works with etcd 3.4 and 3.5)."""

    def __init__(self, url: str, timeout: float = 10.0):
        self.url = url.rstrip("/")
        self.session = requests.Session()
        # Never read proxy settings from os.environ on each call (pytest changes it under our threads).
        self.session.trust_env = False
        self.timeout = timeout
        self.api = None

    def _post(self, path: str, payload: dict) -> dict:
        if self.api is None:
            self.api = self._detect_api()
        response = self.session.post(self.url + self.api + path, json=payload, timeout=self.timeout)
        if response.status_code != 200:
            raise ApiError(500, "InternalError", "etcd %s: HTTP %d %s" % (path, response.status_code, response.text[:200]))
        return response.json()

    def _detect_api(self) -> str:
        for api in ("/v3", "/v3beta"):
            try:
                response = self.session.post(self.url + api + "/maintenance/status", json={}, timeout=self.timeout)
            except requests.RequestException as exc:
                raise ApiError(500, "InternalError", "etcd at %s unreachable: %s" % (self.url, exc)) from exc
            if response.status_code == 200:
                return api
        raise ApiError(500, "InternalError", "etcd at %s serves no v3 JSON gateway" % self.url)

    def revision(self) -> int:
        return int(self._post("/kv/range", {"key": _b64("\0"), "count_only": True})["header"]["revision"])

    def range(self, key: str, prefix: bool = False) -> tuple[list[tuple[str, bytes, int]], int]:
        payload = {"key": _b64(key)}
        if prefix:
            payload["range_end"] = _b64(_prefix_end(key))
        result = self._post("/kv/range", payload)
        items = [(_unb64(kv["key"]).decode("utf-8"), _unb64(kv.get("value", "")), int(kv.get("mod_revision", 0)))
                 for kv in result.get("kvs", [])]
        return items, int(result["header"]["revision"])

    def txn_put(self, key: str, value: bytes, mod_revision: int) -> tuple[bool, int]:
        """Put when the key's mod_revision is ``mod_revision`` (0 = absent). (succeeded, revision)."""
        compare = [{"key": _b64(key), "result": "EQUAL", "target": "MOD", "mod_revision": mod_revision}]
        success = [{"request_put": {"key": _b64(key), "value": _b64(value)}}]
        result = self._post("/kv/txn", {"compare": compare, "success": success})
        return bool(result.get("succeeded")), int(result["header"]["revision"])

    def txn_delete(self, key: str, mod_revision: int) -> tuple[bool, int]:
        compare = [{"key": _b64(key), "result": "EQUAL", "target": "MOD", "mod_revision": mod_revision}]
        success = [{"request_delete_range": {"key": _b64(key)}}]
        result = self._post("/kv/txn", {"compare": compare, "success": success})
        return bool(result.get("succeeded")), int(result["header"]["revision"])


def _with_rv(obj: dict, revision: int) -> dict:
    obj.setdefault("metadata", {})["resourceVersion"] = str(revision)
    return obj


def _stored(obj: dict) -> bytes:
    data = copy.deepcopy(obj)
    data.get("metadata", {}).pop("resourceVersion", None)
    return json.dumps(data, sort_keys=True, separators=(",", ":")).encode("utf-8")


def _spec_part(obj: dict) -> dict:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status", "kind", "apiVersion")}


class Store:
    """Create/read/update/delete/list of objects of any ResourceType, plus the event log."""

    def __init__(self, etcd_url: str):
        self.etcd = Etcd(etcd_url)
        self.lock = threading.RLock()
        self.changed = threading.Condition(self.lock)
        self.events: deque = deque(maxlen=EVENT_LOG_SIZE)  # (revision, type, rtype, obj)
        self.start_revision = self.etcd.revision()
        self.listeners: list = []  # callables(event_type, rtype, obj), called after each write

    # -- reads --------------------------------------------------------------------------------

    def get(self, rtype, namespace: str | None, name: str) -> dict:
        items, _rev = self.etcd.range(rtype.key(namespace, name))
        if not items:
            raise not_found(rtype.group, rtype.plural, name)
        _key, value, mod = items[0]
        return _with_rv(json.loads(value), mod)

    def get_or_none(self, rtype, namespace: str | None, name: str) -> dict | None:
        try:
            return self.get(rtype, namespace, name)
        except ApiError as exc:
            if exc.code == 404:
                return None
            raise

    def list(self, rtype, namespace: str | None = None) -> tuple[list[dict], int]:
        items, revision = self.etcd.range(rtype.prefix(namespace), prefix=True)
        objects = []
        for key, value, mod in items:
            # A cluster-wide prefix of a namespaced type holds "<ns>/<name>" keys only.
            if rtype.namespaced and namespace is None and key[len(rtype.prefix(None)):].count("/") != 1:
                continue
            objects.append(_with_rv(json.loads(value), mod))
        return objects, revision

    def revision(self) -> int:
        return self.etcd.revision()

    # -- writes -------------------------------------------------------------------------------

    def _record(self, revision: int, event_type: str, rtype, obj: dict) -> None:
        self.events.append((revision, event_type, rtype, copy.deepcopy(obj)))
        self.changed.notify_all()
        for listener in list(self.listeners):
            listener(event_type, rtype, obj)

    def create(self, rtype, obj: dict, dry_run: bool = False) -> dict:
        meta = obj.setdefault("metadata", {})
        namespace = meta.get("namespace") if rtype.namespaced else None
        if not rtype.namespaced:
            meta.pop("namespace", None)
        meta["uid"] = meta.get("uid") or str(uuid.uuid4())  # Api.create sets it before defaulting
        meta["creationTimestamp"] = now()
        meta["generation"] = 1
        meta.pop("resourceVersion", None)
        meta.pop("deletionTimestamp", None)
        obj["apiVersion"] = rtype.api_version
        obj["kind"] = rtype.kind
        with self.lock:
            key = rtype.key(namespace, meta["name"])
            if dry_run:
                if self.etcd.range(key)[0]:
                    raise already_exists(rtype.group, rtype.plural, meta["name"])
                return _with_rv(obj, self.etcd.revision())
            ok, revision = self.etcd.txn_put(key, _stored(obj), 0)
            if not ok:
                raise already_exists(rtype.group, rtype.plural, meta["name"])
            _with_rv(obj, revision)
            self._record(revision, "ADDED", rtype, obj)
            return copy.deepcopy(obj)

    def update(self, rtype, obj: dict, expected_rv: str | None = None, dry_run: bool = False,
               bump_generation: bool = True, deleting: bool = False) -> dict:
        """Replace the stored object with ``obj``.

        ``expected_rv`` is the client's resourceVersion precondition (None = unconditional). A
        write that changes nothing is not written: the resourceVersion stays, as in Kubernetes.
        Identity fields are the stored ones; ``deleting`` lets the deletion path set
        ``deletionTimestamp`` and ``deletionGracePeriodSeconds``.
        """
        meta = obj.setdefault("metadata", {})
        namespace = meta.get("namespace") if rtype.namespaced else None
        name = meta["name"]
        with self.lock:
            key = rtype.key(namespace, name)
            items, _rev = self.etcd.range(key)
            if not items:
                raise not_found(rtype.group, rtype.plural, name)
            _key, value, mod = items[0]
            if expected_rv not in (None, "") and str(expected_rv) != str(mod):
                raise conflict(rtype.group, rtype.plural, name,
                               "the object has been modified; please apply your changes to the latest version and try again")
            current = json.loads(value)
            cur_meta = current.get("metadata", {})
            # Identity is the server's.
            fields = ("uid", "creationTimestamp", "namespace", "name")
            if not deleting:  # only the deletion path may set these
                fields += ("deletionTimestamp", "deletionGracePeriodSeconds")
            for field in fields:
                if field in cur_meta:
                    meta[field] = cur_meta[field]
                else:
                    meta.pop(field, None)
            meta["generation"] = cur_meta.get("generation", 1)
            if bump_generation and _spec_part(obj) != _spec_part(current):
                meta["generation"] = meta["generation"] + 1
            obj["apiVersion"] = rtype.api_version
            obj["kind"] = rtype.kind
            if _stored(obj) == _stored(current):
                return _with_rv(current, mod)
            if dry_run:
                return _with_rv(obj, mod)
            ok, revision = self.etcd.txn_put(key, _stored(obj), mod)
            if not ok:
                raise conflict(rtype.group, rtype.plural, name, "the object has been modified; please apply your "
                               "changes to the latest version and try again")
            _with_rv(obj, revision)
            self._record(revision, "MODIFIED", rtype, obj)
            return copy.deepcopy(obj)

    def delete(self, rtype, namespace: str | None, name: str, expected_rv: str | None = None,
               expected_uid: str | None = None, dry_run: bool = False) -> dict:
        """Remove the object now (graceful deletion and finalizers are the caller's business)."""
        with self.lock:
            key = rtype.key(namespace, name)
            items, _rev = self.etcd.range(key)
            if not items:
                raise not_found(rtype.group, rtype.plural, name)
            _key, value, mod = items[0]
            current = json.loads(value)
            if expected_rv not in (None, "") and str(expected_rv) != str(mod):
                raise conflict(rtype.group, rtype.plural, name, "the ResourceVersion in the precondition (%s) does not "
                               "match the ResourceVersion in record (%s). The object might have been modified"
                               % (expected_rv, mod))
            if expected_uid and expected_uid != current.get("metadata", {}).get("uid"):
                raise conflict(rtype.group, rtype.plural, name, "the UID in the precondition (%s) does not match the UID "
                               "in record (%s). The object might have been deleted and then recreated"
                               % (expected_uid, current.get("metadata", {}).get("uid")))
            if dry_run:
                return _with_rv(current, mod)
            ok, revision = self.etcd.txn_delete(key, mod)
            if not ok:
                raise conflict(rtype.group, rtype.plural, name, "the object has been modified")
            _with_rv(current, revision)
            self._record(revision, "DELETED", rtype, current)
            return current

    # -- watch --------------------------------------------------------------------------------

    def events_after(self, revision: int) -> list:
        """Events with a revision above ``revision``; ApiError 410 when the log no longer has them."""
        with self.lock:
            oldest = self.events[0][0] if self.events else None
            if revision < self.start_revision or (oldest is not None and len(self.events) == self.events.maxlen
                                                  and revision < oldest - 1):
                raise ApiError(410, "Expired", "too old resource version: %d (%d)"
                               % (revision, oldest if oldest is not None else self.start_revision))
            return [event for event in self.events if event[0] > revision]

    def wait_for_events(self, revision: int, timeout: float) -> list:
        with self.changed:
            events = self.events_after(revision)
            if not events:
                self.changed.wait(timeout)
                events = self.events_after(revision)
            return events
