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

Reads are served from an in-memory copy of the key space, as kube-apiserver serves lists from its
watch cache and controllers read informer caches: the store loads every key below ``/registry/``
once (one etcd prefix range) and then applies each of its own writes to the copy in the same
critical section that records the event. etcd stays the truth: every write is still a
compare-and-swap on the key's ``mod_revision``; when one fails because something wrote etcd behind
the store's back, the key is re-read from etcd into the cache and the caller gets the conflict
(the next try sees the new state). As kube-apiserver's cacher, the store also watches etcd (from the
revision it loaded): writes made by another client (a second lab server on the same etcd) reach the
cache, and wake the controllers, a moment later; the store's own writes come back on that watch and
are skipped. Keys outside ``/registry/`` (the lab's generated root CA,
``/kubelab/root-ca.crt``) are not API objects and are not cached. ``Store.resync()`` reloads
everything after etcd changed underneath (a snapshot restore).
"""

from __future__ import annotations

import base64
import bisect
import datetime
import http.client
import json
import os
import re
import select
import threading
import time
import urllib.parse
import uuid
from collections import deque


from kubelab.clone import clone
from kubelab.errors import ApiError, already_exists, conflict, not_found

EVENT_LOG_SIZE = 20000
REGISTRY_PREFIX = "/registry/"  # every ResourceType key starts with it (resources.ResourceType.prefix)
_MOD_REVISION = re.compile(rb'"mod_revision":"?([0-9]+)')
# The owners' UIDs in a stored object (canonical JSON: no spaces; a reference holds no list, so no "]")
_OWNER_REFERENCES = re.compile(rb'"ownerReferences":\[([^\]]*)\]')
_UID = re.compile(rb'"uid":"([^"]+)"')
WATCH_READ_TIMEOUT = 10.0  # an idle etcd watch stream is reopened after this long (seconds)
WATCH_GIVE_UP = 60  # consecutive failed reconnects (about a minute) after which the watch thread ends
KEY_STRIPES = 64  # writer locks: writes of one key are serialised, writes of different keys overlap
# A watch stream's events go out before the writers and readers of the store go on, for at most this long
# after the oldest event it has not sent yet (Store.give_way).
GIVE_WAY_SECONDS = 0.005
ORDER_WAIT = 30.0  # longest a returned write waits for an older one to commit (etcd calls end within 20 s)


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _b64(text: str | bytes) -> str:
    if isinstance(text, str):
        text = text.encode("utf-8")
    return base64.b64encode(text).decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.b64decode(text or "")


def _dropped(sock) -> bool:
    """Whether the peer closed an idle keep-alive socket (readable at once: EOF or a stray byte)."""
    try:
        readable, _w, _x = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)


def _prefix_end(prefix: str) -> str:
    raw = bytearray(prefix.encode("utf-8"))
    raw[-1] += 1
    return raw.decode("utf-8")


class Etcd:
    """The few etcd v3 JSON-gateway calls the store needs (works with etcd 3.4 and 3.5).

    One keep-alive ``http.client`` connection per thread, so writers of different keys have their round
    trips in flight at once (``requests`` spent about a millisecond of CPU per call on top of the socket
    work)."""

    def __init__(self, url: str, timeout: float = 10.0):
        self.url = url.rstrip("/")
        parts = urllib.parse.urlsplit(self.url)
        self._https = parts.scheme == "https"
        self._host, self._port = parts.hostname or "127.0.0.1", parts.port
        self._local = threading.local()
        self.timeout = timeout
        self.api = None

    def _connection(self) -> http.client.HTTPConnection:
        conn = getattr(self._local, "conn", None)
        if conn is not None and conn.sock is not None and _dropped(conn.sock):
            conn.close()  # etcd closed it while it was idle (a restart): a new one
        if conn is None:
            cls = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
            conn = self._local.conn = cls(self._host, self._port, timeout=self.timeout)
        return conn

    def _call(self, url_path: str, payload: dict) -> tuple[int, bytes]:
        body = json.dumps(payload).encode("utf-8")
        for attempt in (1, 2):
            conn = self._connection()
            try:
                conn.request("POST", url_path, body, {"Content-Type": "application/json"})
                response = conn.getresponse()
                return response.status, response.read()
            except (http.client.HTTPException, OSError) as exc:
                conn.close()
                self._local.conn = None
                # a keep-alive connection that etcd dropped fails before etcd read the request: once more
                if attempt == 2 or not isinstance(exc, (http.client.RemoteDisconnected, BrokenPipeError,
                                                        ConnectionResetError)):
                    raise ApiError(500, "InternalError", "etcd at %s unreachable: %s" % (self.url, exc)) from exc
        raise AssertionError("unreachable")

    def _post(self, path: str, payload: dict) -> dict:
        if self.api is None:
            self.api = self._detect_api()
        code, data = self._call(self.api + path, payload)
        if code != 200:
            raise ApiError(500, "InternalError", "etcd %s: HTTP %d %s" % (path, code, data[:200].decode("utf-8", "replace")))
        return json.loads(data)

    def stream_connection(self, timeout: float) -> http.client.HTTPConnection:
        """A new connection of its own for a long-lived stream (the watch); ``timeout`` bounds each read."""
        cls = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
        return cls(self._host, self._port, timeout=timeout)

    def _detect_api(self) -> str:
        for api in ("/v3", "/v3beta"):
            code, _data = self._call(api + "/maintenance/status", {})
            if code == 200:
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


def _owner_uids(value: bytes | None) -> frozenset:
    if not value or b'"ownerReferences"' not in value:
        return frozenset()
    found = _OWNER_REFERENCES.search(value)
    return frozenset(uid.decode("utf-8") for uid in _UID.findall(found.group(1))) if found else frozenset()


def _check_every(value: str) -> int:
    """KUBELAB_CHECK_SHARED: "" or "0" no check, "1" or any other word every shared read, N one in N."""
    value = value.strip()
    if value in ("", "0"):
        return 0
    return int(value) if value.isdigit() else 1


class SharedObjectMutated(RuntimeError):
    """A caller of ``Store.list(shared=True)`` changed an object it was handed (a lab bug)."""


def _with_rv(obj: dict, revision: int) -> dict:
    obj.setdefault("metadata", {})["resourceVersion"] = str(revision)
    return obj


def _stored(obj: dict) -> bytes:
    """The canonical stored form: sorted keys, no resourceVersion (etcd's mod_revision is that)."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or "resourceVersion" not in meta:
        return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode("utf-8")
    rv = meta.pop("resourceVersion")
    try:
        return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode("utf-8")
    finally:
        meta["resourceVersion"] = rv


def _same_object(obj: dict, current: dict) -> bool:
    """``obj`` (a write, perhaps with a resourceVersion) equals ``current`` (decoded from storage, without one):
    the same test as comparing their stored forms, without encoding ``current`` again on every real change."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or "resourceVersion" not in meta:
        return obj == current
    rv = meta.pop("resourceVersion")
    try:
        return obj == current
    finally:
        meta["resourceVersion"] = rv


def _deletion_applied(stored: dict, deleter: dict, kind: str) -> dict:
    """``stored`` (decoded under the key's writer lock) with the deletion path's own change from ``deleter``
    (the object it read earlier, marked): ``deletionTimestamp``, ``deletionGracePeriodSeconds`` and a
    Namespace's ``status.phase``; everything else is the stored object's.

    kube-apiserver sets the deletion fields inside GuaranteedUpdate (``BeforeDelete`` again on the latest
    object after a conflict), so a write that lands between the deleter's read and its write is kept. The
    deleter's whole copy written back unconditionally lost it: the garbage collector marking a pod's claim
    deleted (finalizer) while the DRA driver wrote the claim's ``status.devices`` Ready=True (a
    ``device_unhealthy`` fault ending) put the fault's Ready=False back; a graceful pod deletion did the
    same to the kubelet's status (``allocatedResourcesStatus``), a deallocation came back the same way."""
    meta = stored.setdefault("metadata", {})
    marked = deleter.get("metadata") or {}
    if not meta.get("deletionTimestamp"):  # a deletion that got there first keeps its time and grace
        for field in ("deletionTimestamp", "deletionGracePeriodSeconds"):
            if field in marked:
                meta[field] = marked[field]
    if kind == "Namespace" and (deleter.get("status") or {}).get("phase"):
        stored.setdefault("status", {})["phase"] = deleter["status"]["phase"]
    return stored


def _spec_part(obj: dict) -> dict:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status", "kind", "apiVersion")}


class _Stream:
    """A watch stream's delivery marks: ``notified`` events recorded for it, ``sent`` the count it has sent
    out, ``since`` (monotonic) when the oldest of the unsent ones was recorded."""

    __slots__ = ("event", "notified", "sent", "since")

    def __init__(self, event: threading.Event):
        self.event, self.notified, self.sent, self.since = event, 0, 0, 0.0


class Store:
    """Create/read/update/delete/list of objects of any ResourceType, plus the event log.

    Reads come from the cache (see the module docstring): ``_objects`` maps each etcd key to its
    (stored bytes, mod_revision) and ``_keys`` holds the same keys sorted as etcd sorts them (UTF-8
    byte order is code point order), so a list is a bisected prefix range, as the etcd range it
    replaces: it visits the keys of that resource type (and namespace) only. Objects are decoded
    from the stored bytes on every read, so callers get fresh dicts they may change. ``_revision``
    is the newest etcd revision the cache reflects (etcd's revision at load, then each write's).
    Every access to the cache holds ``self.cache_lock``.

    Writes of different keys are pipelined: a writer holds only its key's stripe lock (one of
    ``KEY_STRIPES``) from reading the cached object through the commit, so several compare-and-swap
    round trips to etcd are in flight at once (one at a time, etcd's round trip was the lab's write
    throughput: about 4 ms, 250 writes a second). etcd orders them by revision, and the cache and
    the event log must take them in that order (a watcher that saw revision 105 never gets 104):
    ``_inflight`` maps each write's ticket to its revision once etcd answered (None before), and a
    write commits only when no write that was still in flight when it returned can have a lower
    revision (kube-apiserver needs no such step: its watch cache is fed by etcd's own ordered watch).

    ``watch`` (default on) runs a thread on an etcd watch of ``/registry/`` that applies writes made
    by other etcd clients; ``_own`` holds the revisions of this store's writes until the watch echoes
    them, ``_tombstones`` the revision of recent deletions (so an older event cannot resurrect a key).
    ``close()`` ends the thread; it also ends by itself about a minute after etcd went away.
    """

    def __init__(self, etcd_url: str, watch: bool = True):
        self.etcd = Etcd(etcd_url)
        # ``lock`` serialises the watch's bookkeeping and reloads; the stripes serialise the writers of
        # one key (read the cached current object, compare-and-swap in etcd, commit); ``cache_lock``
        # guards the cache, its revision, the event log and ``_inflight`` and is held only for memory
        # operations, so readers (lists, gets, waits) never queue behind an etcd round trip.
        self.lock = threading.RLock()
        self._stripes = [threading.RLock() for _stripe in range(KEY_STRIPES)]
        self.cache_lock = threading.RLock()
        self.changed = threading.Condition(self.cache_lock)
        self._order = threading.Condition(self.cache_lock)  # for the watch: a write in flight got its answer
        self._settling = 0  # watch threads waiting on ``_order``
        self._order_waiters: dict[int, threading.Condition] = {}  # ticket -> its writer, waiting for older writes
        self._inflight: dict[int, int | None] = {}  # ticket -> etcd revision (None: not answered yet)
        self._ahead: dict[int, set] = {}  # ticket -> the tickets in flight when it was answered
        self._tickets = 0
        self.pausers: list = []  # the controllers' threading.Events that wake() sets (ending a batching pause)
        # Event subscriptions (subscribe()): (kinds or None, threading.Event) set when an event of those
        # kinds is recorded. A waiter wakes on its own Event, not behind every other waiter of ``changed``
        # re-acquiring ``cache_lock`` in turn: a watch stream is woken only by the kinds it serves.
        self._subscribers: list = []
        # The watch streams' delivery marks (subscribe(stream=True)): Event -> _Stream; see give_way().
        self._streams: dict = {}
        self.events: deque = deque(maxlen=EVENT_LOG_SIZE)  # (revision, type, rtype, obj)
        self.listeners: list = []  # callables(event_type, rtype, obj), called after each write
        self._local = threading.local()  # event_ns of the write this thread committed last
        self._objects: dict[str, tuple[bytes, int]] = {}
        # Decoded objects handed out by ``list(shared=True)``: key -> (mod revision, object). An entry is
        # good while the key's cached revision equals its own; writes need not touch it.
        self._decoded: dict[str, tuple[int, dict]] = {}
        # Tests set this (KUBELAB_CHECK_SHARED=N): one shared read in N first checks that no reader changed
        # the object it was handed before (raises SharedObjectMutated naming the object). The check decodes
        # the stored bytes again, as costly as the read it saves: checking every read (N=1) doubles the
        # lab's CPU. A changed object stays changed until its next revision and is read many times a
        # second, so a sample finds it too.
        self.check_shared = _check_every(os.environ.get("KUBELAB_CHECK_SHARED", ""))
        self._shared_reads = 0
        self._keys: list[str] = []
        # The garbage collector's owner index (its dependency graph): owner UID -> keys of the objects whose
        # ownerReferences name it, kept with the cache, so finding an owner's dependents reads no other object.
        self._owned: dict[str, set] = {}
        self._revision = 0
        self._watching = False
        self._own: set[int] = set()
        self._tombstones: dict[str, int] = {}
        self._watched = 0  # the revision the etcd watch has delivered up to
        self._epoch = 0  # bumped by resync(): the watch reopens from the reloaded revision
        self._load()
        self.start_revision = self._revision
        self._watch_stop = threading.Event()
        self._watch_thread = None
        self._watching = watch
        if watch:
            self._watch_thread = threading.Thread(target=self._watch_loop, name="kubelab-etcd-watch", daemon=True)
            self._watch_thread.start()

    # -- cache --------------------------------------------------------------------------------

    def _load(self) -> None:
        """Read every object (one prefix range over ``/registry/``) into the cache."""
        items, revision = self.etcd.range(REGISTRY_PREFIX, prefix=True)
        with self.lock, self.cache_lock:
            self._objects = {key: (value, mod) for key, value, mod in items}
            self._decoded = {}
            self._keys = sorted(self._objects)
            self._owned = {}
            for key, value, _mod in items:
                self._index_owners(key, None, value)
            self._revision = revision
            self._watched = revision
            self._own.clear()
            self._tombstones.clear()
            self._epoch += 1

    def _index_owners(self, key: str, old: bytes | None, new: bytes | None) -> None:
        """(``cache_lock`` held) Move ``key`` in the owner index from ``old``'s owners to ``new``'s."""
        before = _owner_uids(old)
        after = _owner_uids(new)
        if before == after:
            return
        for uid in before - after:
            keys = self._owned.get(uid)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self._owned[uid]
        for uid in after - before:
            self._owned.setdefault(uid, set()).add(key)

    def owned_keys(self, uid: str) -> set:
        """The keys of the cached objects whose ownerReferences name ``uid`` (a snapshot)."""
        with self.cache_lock:
            return set(self._owned.get(uid, ()))

    def _cache_put(self, key: str, value: bytes, mod: int) -> None:
        entry = self._objects.get(key)
        if entry is None:
            bisect.insort(self._keys, key)
        self._index_owners(key, entry[0] if entry else None, value)
        self._objects[key] = (value, mod)
        self._revision = max(self._revision, mod)

    def _cache_delete(self, key: str, revision: int) -> None:
        self._decoded.pop(key, None)
        entry = self._objects.pop(key, None)
        if entry is not None:
            self._index_owners(key, entry[0], None)
            index = bisect.bisect_left(self._keys, key)
            if index < len(self._keys) and self._keys[index] == key:
                del self._keys[index]
        if self._watching and revision > self._watched:
            self._tombstones[key] = max(self._tombstones.get(key, 0), revision)
        self._revision = max(self._revision, revision)

    def _reload_key(self, key: str) -> None:
        """After a failed compare-and-swap: take etcd's current value of ``key`` (or its absence)."""
        items, revision = self.etcd.range(key)
        with self.cache_lock:
            entry = self._objects.get(key)
            known = max(entry[1] if entry else 0, self._tombstones.get(key, 0))  # the watch may be ahead meanwhile
            if items:
                _key, value, mod = items[0]
                if mod >= known:
                    self._cache_put(key, value, mod)
            elif revision > known:
                self._cache_delete(key, revision)

    def _apply_watched(self, events: list, epoch: int) -> bool:
        """Apply one batch of etcd watch events; False when a resync made the stream stale."""
        with self.lock, self.cache_lock:
            if epoch != self._epoch:
                return False
            external = False
            for event in events:
                kv = event.get("kv") or {}
                key = _unb64(kv.get("key", "")).decode("utf-8")
                revision = int(kv.get("mod_revision", 0))
                if revision in self._own:
                    self._own.discard(revision)  # this store's own write: applied when it was made
                else:
                    entry = self._objects.get(key)
                    known = max(entry[1] if entry else 0, self._tombstones.get(key, 0))
                    if revision > known:
                        external = True
                        if event.get("type") == "DELETE":
                            self._cache_delete(key, revision)
                        else:
                            self._cache_put(key, _unb64(kv.get("value", "")), revision)
                self._watched = max(self._watched, revision)
            if self._tombstones:
                self._tombstones = {k: r for k, r in self._tombstones.items() if r > self._watched}
            if external:  # no event for the log (it needs the type); wake the controllers' loops
                self._notify(None)
            return True

    def _mine(self, revision: int) -> None:
        """Note a write of this store, for the watch to skip when it echoes it."""
        if self._watching:
            self._own.add(revision)

    def _watch_loop(self) -> None:
        try:
            self._follow_etcd()
        finally:
            with self.lock, self.cache_lock:
                self._watching = False
                self._own.clear()
                self._tombstones.clear()

    def _follow_etcd(self) -> None:
        """Follow etcd's watch of ``/registry/`` (the JSON gateway's streaming ``/watch``), reconnecting.

        Most of what the stream brings is this store's own writes coming back: a line whose revisions are
        all the store's own is settled from the revisions alone (a regular expression), without decoding
        the objects it carries."""
        failures = 0
        while not self._watch_stop.is_set():
            with self.lock:
                start, epoch = self._watched + 1, self._epoch
            request = {"create_request": {"key": _b64(REGISTRY_PREFIX), "range_end": _b64(_prefix_end(REGISTRY_PREFIX)),
                                          "start_revision": start}}
            conn = None
            try:
                conn = self.etcd.stream_connection(WATCH_READ_TIMEOUT)
                conn.request("POST", (self.etcd.api or "/v3") + "/watch", json.dumps(request).encode("utf-8"),
                             {"Content-Type": "application/json"})
                response = conn.getresponse()
                if response.status != 200:
                    raise ApiError(500, "InternalError", "etcd watch: HTTP %d" % response.status)
                while not self._watch_stop.is_set():
                    line = response.readline()
                    if not line:
                        break  # the stream ended: reopen
                    line = line.strip()
                    if not line:
                        continue
                    failures = 0
                    if self._own_echo(line, epoch) or (self._settle_inflight() and self._own_echo(line, epoch)):
                        continue
                    result = json.loads(line).get("result") or {}
                    if result.get("canceled"):
                        if result.get("compact_revision"):  # too old: relist, as a reflector does
                            self.resync()
                        break
                    if result.get("events") and not self._apply_watched(result["events"], epoch):
                        break
                if self._watch_stop.is_set():
                    return
            except (http.client.HTTPException, OSError, ValueError, ApiError):
                if self._watch_stop.is_set():
                    return
                failures += 1
                if failures >= WATCH_GIVE_UP:
                    return
                self._watch_stop.wait(min(0.1 * failures, 1.0))
            finally:
                if conn is not None:
                    conn.close()

    def _settle_inflight(self) -> bool:
        """Wait until the writes in flight now have their answer from etcd (and so their revision in
        ``_own``): a watch event may arrive before the writer read etcd's answer, and must not be taken
        for another client's write. True when there were any."""
        with self.cache_lock:
            pending = [t for t, r in self._inflight.items() if r is None]
            waited = bool(pending)
            deadline = time.monotonic() + ORDER_WAIT
            self._settling += 1
            try:
                while pending and time.monotonic() < deadline:
                    self._order.wait(deadline - time.monotonic())
                    pending = [t for t in pending if t in self._inflight and self._inflight[t] is None]
            finally:
                self._settling -= 1
            return waited

    def _own_echo(self, line: bytes, epoch: int) -> bool:
        """Settle a watch line that only echoes this store's own writes (True), without decoding it."""
        if b'"canceled"' in line or b'"events"' not in line:
            return False
        revisions = [int(r) for r in _MOD_REVISION.findall(line)]
        if not revisions:
            return False
        with self.lock, self.cache_lock:
            if epoch != self._epoch or any(r not in self._own for r in revisions):
                return False
            self._own.difference_update(revisions)
            self._watched = max(self._watched, *revisions)
            if self._tombstones:
                self._tombstones = {k: r for k, r in self._tombstones.items() if r > self._watched}
            return True

    def close(self) -> None:
        """End the etcd watch thread (within ``WATCH_READ_TIMEOUT``); reads still answer from the cache."""
        self._watch_stop.set()

    def resync(self) -> int:
        """Reload the whole cache from etcd; the new revision.

        For when etcd changed underneath the store (a snapshot restored under a running lab, or
        writes by another client): the cache is replaced by etcd's current state. The event log
        cannot describe that change, so it starts over at the reloaded revision: a watch (or a
        controller loop) from an older revision gets 410 Expired and relists, as clients of
        kube-apiserver do when its watch cache is re-initialised. Restore with a bumped revision
        (``etcdutl snapshot restore --bump-revision --mark-compacted``), as Kubernetes requires:
        resourceVersions that go backwards confuse every client that holds one.
        """
        with self.lock, self.cache_lock:
            self._load()
            self.events.clear()
            self.start_revision = self._revision
            self._notify(None)
            return self._revision

    def _entry(self, key: str) -> tuple[bytes, int] | None:
        with self.cache_lock:
            return self._objects.get(key)

    # -- reads --------------------------------------------------------------------------------

    def get(self, rtype, namespace: str | None, name: str, shared: bool = False) -> dict:
        """One object; ``shared`` as for :meth:`list` (the cache's decoded copy: never modify it)."""
        key = rtype.key(namespace, name)
        entry = self._entry(key)
        if entry is None:
            raise not_found(rtype.group, rtype.plural, name)
        value, mod = entry
        return self._shared(key, value, mod) if shared else _with_rv(json.loads(value), mod)

    def get_or_none(self, rtype, namespace: str | None, name: str, shared: bool = False) -> dict | None:
        try:
            return self.get(rtype, namespace, name, shared=shared)
        except ApiError as exc:
            if exc.code == 404:
                return None
            raise

    def list(self, rtype, namespace: str | None = None, containing: bytes | None = None,
             shared: bool = False) -> tuple[list[dict], int]:
        """Objects of ``rtype`` (in ``namespace``, or all) and the cache's revision they are current at.

        ``containing``: only objects whose stored JSON holds these bytes (a cheap pre-filter before
        decoding, e.g. a UID when looking for an owner's dependents; the caller checks the field).

        ``shared``: the objects are the cache's own decoded copies, shared by every shared reader until
        the object changes (what an informer's lister returns in kube-controller-manager): the caller
        must not modify them (copy first, as controllers do before a write). Decoding is most of a
        controller pass's cost; this makes it once per object revision instead of once per read."""
        self.give_way()
        prefix = rtype.prefix(namespace)
        # A cluster-wide prefix of a namespaced type holds "<ns>/<name>" keys only.
        nested_only = rtype.namespaced and namespace is None
        with self.cache_lock:
            low = bisect.bisect_left(self._keys, prefix)
            high = bisect.bisect_left(self._keys, _prefix_end(prefix), low)
            entries = [(key, self._objects[key]) for key in self._keys[low:high]]
            revision = self._revision
        # The stored bytes never change in place: decoding them needs no lock.
        base = len(rtype.prefix(None))
        wanted = [(key, value, mod) for key, (value, mod) in entries
                  if (not nested_only or key[base:].count("/") == 1) and (containing is None or containing in value)]
        if not shared:
            return [_with_rv(json.loads(value), mod) for key, value, mod in wanted], revision
        return [self._shared(key, value, mod) for key, value, mod in wanted], revision

    def _shared(self, key: str, value: bytes, mod: int) -> dict:
        known = self._decoded.get(key)
        if known is not None and known[0] == mod:
            self._shared_reads += 1  # not atomic: a lost count only moves the sample
            if self.check_shared and not self._shared_reads % self.check_shared and known[1] != _with_rv(json.loads(value), mod):
                self._decoded.pop(key, None)
                raise SharedObjectMutated("a reader modified the shared object %s at revision %d" % (key, mod))
            return known[1]
        obj = _with_rv(json.loads(value), mod)
        # A plain dict assignment (atomic): racing readers at worst decode the same revision twice.
        self._decoded[key] = (mod, obj)
        return obj

    def revision(self) -> int:
        """The newest revision the cache (and so the event log) reflects.

        Controllers wait for events after it; every event recorded later has a higher revision.
        Writes of other etcd clients below ``/registry/`` move it when the watch brings them (they
        have no event in this store's log); the generated root CA key, outside ``/registry/``, moves
        etcd's own revision only: it is no API object and has no event.
        """
        with self.cache_lock:
            return self._revision

    # -- writes -------------------------------------------------------------------------------

    def _stripe(self, key: str):
        return self._stripes[hash(key) % KEY_STRIPES]

    def _write(self, key: str, stored: bytes | None, mod: int, event_type: str, rtype, obj: dict) -> bool:
        """Compare-and-swap ``key`` in etcd (put ``stored``, or delete when None) against ``mod``; on
        success commit it (:meth:`_commit`) and return True; False when etcd had another revision.
        The caller holds the key's stripe; other keys' writes are in flight meanwhile."""
        with self.cache_lock:
            self._tickets += 1
            ticket = self._tickets
            self._inflight[ticket] = None
            epoch = self._epoch
        try:
            if stored is None:
                ok, revision = self.etcd.txn_delete(key, mod)
            else:
                ok, revision = self.etcd.txn_put(key, stored, mod)
            if not ok:
                return False
            with self.cache_lock:
                self._inflight[ticket] = revision
                self._ahead[ticket] = {t for t, r in self._inflight.items() if t != ticket and (r is None or r < revision)}
                if epoch == self._epoch:
                    self._mine(revision)  # before the watch can bring the echo
                self._order_changed(ticket)
            _with_rv(obj, revision)
            self._commit(key, stored, revision, event_type, rtype, obj, ticket, epoch)
            return True
        finally:
            with self.cache_lock:
                if ticket in self._inflight:  # failed, or raised before committing
                    self._retire(ticket)

    def _retire(self, ticket: int) -> None:
        """(``cache_lock`` held) ``ticket`` is committed or failed: the writes behind it may go on."""
        del self._inflight[ticket]
        self._ahead.pop(ticket, None)
        self._order_changed(ticket)

    def _order_changed(self, ticket: int) -> None:
        """(``cache_lock`` held) ``ticket`` got its answer or left: wake only the writers waiting behind it
        (a notify_all on every change woke every waiting writer for each of the others' steps)."""
        for waiter, condition in self._order_waiters.items():
            if ticket in self._ahead.get(waiter, ()):
                condition.notify()
        if self._settling:
            self._order.notify_all()

    def _older_in_flight(self, ticket: int, revision: int) -> list:
        """(``cache_lock`` held) The writes that may still commit a revision below ``revision``."""
        ahead = [t for t in self._ahead.get(ticket, ()) if t in self._inflight]
        return [t for t in ahead if self._inflight[t] is None or self._inflight[t] < revision]

    def _commit(self, key: str, stored: bytes | None, revision: int, event_type: str, rtype, obj: dict,
                ticket: int, epoch: int) -> None:
        """A write made in etcd: into the cache and the event log at once (``cache_lock``) in revision
        order, the waiters woken, then the listeners called (outside ``cache_lock``: they may read; the
        key's stripe is still held, so one key's listeners see its writes in order)."""
        # The event's object is decoded from the stored bytes (C speed, unlike a deep copy); nobody changes
        # an event's object, so it is also the shared decoded object of this revision (Store.list(shared)).
        copied = _with_rv(json.loads(stored), revision) if stored is not None else clone(obj)
        event = (revision, event_type, rtype, copied)
        self._local.event_ns = None
        with self.cache_lock:
            if self._older_in_flight(ticket, revision):
                condition = self._order_waiters[ticket] = threading.Condition(self.cache_lock)
                deadline = time.monotonic() + ORDER_WAIT
                try:
                    while self._older_in_flight(ticket, revision):
                        left = deadline - time.monotonic()
                        if left <= 0:
                            break  # an etcd call that never ended: commit rather than hang (order may break here)
                        condition.wait(left)
                finally:
                    del self._order_waiters[ticket]
            self._retire(ticket)
            if epoch == self._epoch:  # else a resync reloaded the cache (with this write or before it)
                entry = self._objects.get(key)
                if revision > max(entry[1] if entry else 0, self._tombstones.get(key, 0)):  # (not a newer external write)
                    if stored is None:
                        self._cache_delete(key, revision)
                    else:
                        self._cache_put(key, stored, revision)
                        self._decoded[key] = (revision, copied)
                self._local.event_ns = time.time_ns()  # the moment a watcher can see it (event_ns())
                self.events.append(event)
                self._notify(rtype.kind)
        for listener in list(self.listeners):
            listener(event_type, rtype, obj)

    def event_ns(self) -> int | None:
        """For a listener: ``time.time_ns()`` when the event it is called for entered the event log (a watch
        may deliver it before the listener runs); None when that write added no event (a resync). Outside a
        listener call it is the value of this thread's last commit: call it from listeners only."""
        return getattr(self._local, "event_ns", None)

    def create(self, rtype, obj: dict, dry_run: bool = False) -> dict:
        self.give_way()
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
        key = rtype.key(namespace, meta["name"])
        with self._stripe(key):
            if dry_run:
                if key in self._objects:
                    raise already_exists(rtype.group, rtype.plural, meta["name"])
                return _with_rv(obj, self._revision)
            stored = _stored(obj)
            if not self._write(key, stored, 0, "ADDED", rtype, obj):
                self._reload_key(key)  # it exists in etcd: written behind the store's back
                raise already_exists(rtype.group, rtype.plural, meta["name"])
            return _with_rv(json.loads(stored), int(meta["resourceVersion"]))

    def update(self, rtype, obj: dict, expected_rv: str | None = None, dry_run: bool = False,
               bump_generation: bool = True, deleting: bool = False) -> dict:
        """Replace the stored object with ``obj``.

        ``expected_rv`` is the client's resourceVersion precondition (None = unconditional). A
        write that changes nothing is not written: the resourceVersion stays, as in Kubernetes.
        Identity fields are the stored ones; ``deleting`` is the deletion path's write (``Api.delete``:
        ``deletionTimestamp`` and ``deletionGracePeriodSeconds``, a Namespace's ``status.phase``), made to
        the object as stored when the key's writer lock is held, not to the copy the deleter read before
        (:func:`_deletion_applied`). The current object is the cached one; the compare-and-swap on its
        mod_revision catches a cache that etcd has moved past.
        """
        self.give_way()
        meta = obj.setdefault("metadata", {})
        namespace = meta.get("namespace") if rtype.namespaced else None
        name = meta["name"]
        key = rtype.key(namespace, name)
        with self._stripe(key):
            entry = self._entry(key)
            if entry is None:
                raise not_found(rtype.group, rtype.plural, name)
            value, mod = entry
            if expected_rv not in (None, "") and str(expected_rv) != str(mod):
                raise conflict(rtype.group, rtype.plural, name,
                               "the object has been modified; please apply your changes to the latest version and try again")
            current = json.loads(value)
            cur_meta = current.get("metadata", {})
            if deleting:
                obj = _deletion_applied(json.loads(value), obj, rtype.kind)
                meta = obj["metadata"]
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
            stored = _stored(obj)
            if stored == value or _same_object(obj, current):  # (a value another etcd client wrote unsorted)
                return _with_rv(current, mod)
            if dry_run:
                return _with_rv(obj, mod)
            if not self._write(key, stored, mod, "MODIFIED", rtype, obj):
                self._reload_key(key)
                raise conflict(rtype.group, rtype.plural, name, "the object has been modified; please apply your "
                               "changes to the latest version and try again")
            return _with_rv(json.loads(stored), int(meta["resourceVersion"]))

    def delete(self, rtype, namespace: str | None, name: str, expected_rv: str | None = None,
               expected_uid: str | None = None, dry_run: bool = False) -> dict:
        """Remove the object now (graceful deletion and finalizers are the caller's business)."""
        self.give_way()
        key = rtype.key(namespace, name)
        with self._stripe(key):
            entry = self._entry(key)
            if entry is None:
                raise not_found(rtype.group, rtype.plural, name)
            value, mod = entry
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
            if not self._write(key, None, mod, "DELETED", rtype, current):
                self._reload_key(key)
                raise conflict(rtype.group, rtype.plural, name, "the object has been modified")
            return current

    # -- watch --------------------------------------------------------------------------------

    def events_after(self, revision: int) -> list:
        """Events with a revision above ``revision``; ApiError 410 when the log no longer has them."""
        with self.cache_lock:
            oldest = self.events[0][0] if self.events else None
            if revision < self.start_revision or (oldest is not None and len(self.events) == self.events.maxlen
                                                  and revision < oldest - 1):
                raise ApiError(410, "Expired", "too old resource version: %d (%d)"
                               % (revision, oldest if oldest is not None else self.start_revision))
            # Newest first until the first one at or below ``revision``: the log is in revision order, and a
            # waiter is usually a few events behind, so this is O(new events), not O(log size).
            newer = []
            for event in reversed(self.events):
                if event[0] <= revision:
                    break
                newer.append(event)
            newer.reverse()
            return newer

    def wake(self) -> None:
        """Wake every waiter, also controllers in their batching pause (a timer ran out: work is due)."""
        with self.changed:
            for woken in list(self.pausers):
                woken.set()
            self._notify(None)

    def subscribe(self, kinds=None, stream: bool = False) -> threading.Event:
        """An Event set whenever an event of one of ``kinds`` (any kind when None) is recorded, the log
        starts over or :meth:`wake` is called. The waiter clears it, then reads :meth:`events_after`
        (in that order, so that no event is missed). :meth:`unsubscribe` ends it.

        ``stream``: the subscriber is a watch stream that sends the events on: it takes :meth:`stream_mark`
        before each read and calls :meth:`stream_sent` with it once it sent what it read, and until then
        the store's writers and readers give way to it (:meth:`give_way`)."""
        event = threading.Event()
        with self.cache_lock:
            self._subscribers = self._subscribers + [(frozenset(kinds) if kinds else None, event)]
            if stream:
                self._streams = {**self._streams, id(event): _Stream(event)}
        return event

    def unsubscribe(self, event: threading.Event) -> None:
        with self.cache_lock:
            self._subscribers = [entry for entry in self._subscribers if entry[1] is not event]
            self.pausers = [woken for woken in self.pausers if woken is not event]
            self._streams = {key: mark for key, mark in self._streams.items() if mark.event is not event}

    def stream_mark(self, event: threading.Event) -> int:
        """A stream's notification count, taken before it reads the events it will send."""
        mark = self._streams.get(id(event))
        return mark.notified if mark is not None else 0

    def stream_sent(self, event: threading.Event, notified: int) -> None:
        """The stream sent every event recorded before its :meth:`stream_mark` ``notified``."""
        mark = self._streams.get(id(event))
        if mark is not None:
            mark.sent = max(mark.sent, notified)

    def give_way(self) -> None:
        """Wait (at most ``GIVE_WAY_SECONDS`` after the oldest unsent event) until the watch streams sent
        the events recorded for them. In a cluster kube-apiserver's watch fan-out runs on cores of its own,
        beside the controllers, the scheduler and the kubelets; here one interpreter runs them all, and a
        stream's thread, woken by an event, waits for the interpreter behind every busy controller thread
        (measured: up to 17 ms at 1 ms switch interval on 2 cores) - a client then sees the event that much
        later than it happened. Called where a writer or a lister starts, holding no store lock: the busy
        threads let the streams go first. A stream that cannot send (its client does not read) is waited
        for no longer than the bound."""
        streams = self._streams
        if not streams or getattr(self._local, "streaming", False):
            return
        while True:
            now = time.monotonic()
            if not any(mark.sent < mark.notified and now - mark.since < GIVE_WAY_SECONDS for mark in streams.values()):
                return
            time.sleep(0.0001)

    def streaming(self) -> None:
        """Marks the calling thread as a watch stream's: it never gives way (to itself or to other streams)."""
        self._local.streaming = True

    def _notify(self, kind: str | None) -> None:
        """(``cache_lock`` held) Wake the subscribers of ``kind`` (all when None), then ``changed``'s waiters."""
        for kinds, event in self._subscribers:
            if kind is None or kinds is None or kind in kinds:
                event.set()
                mark = self._streams.get(id(event)) if self._streams else None
                if mark is not None:
                    if mark.sent >= mark.notified:
                        mark.since = time.monotonic()
                    mark.notified += 1
        self.changed.notify_all()

    def wait_for_events(self, revision: int, timeout: float) -> list:
        with self.changed:
            events = self.events_after(revision)
            if not events:
                self.changed.wait(timeout)
                events = self.events_after(revision)
            return events
