# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Simulated cluster components. Each acts only through the lab's own API (kubelab.api.Api)."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

from kubelab.errors import ApiError


class Controller:
    """A reconcile loop woken by the store's events (like an informer) and by a resync period.

    Subclasses set ``watches`` (kinds whose events wake it; empty = every event) and implement
    ``reconcile()``, which reads the current state through ``self.api`` and writes through it.
    Conflicts (409) and vanished objects (404) are normal under concurrency: the next pass fixes them.
    """

    watches: tuple = ()
    resync_seconds = 1.0
    # Events that come closer together than this are handled by one pass (a workqueue's batching):
    # a burst of writes costs one reconcile, not one per event.
    batch_seconds = 0.2
    # Threads of ``each`` (a workqueue's workers: kube-controller-manager runs several per controller, the
    # kubelet a worker per pod); 1 = the items one after another in the loop's own thread.
    workers = 1

    def __init__(self, lab):
        self.lab = lab
        self.api = lab.api
        self.store = lab.store
        self.registry = lab.registry
        self.stop_event = threading.Event()
        self.woken = threading.Event()  # set by Store.wake() and by stop(): ends a batching pause
        if hasattr(self.store, "pausers"):
            self.store.pausers.append(self.woken)
        # set by the store when an event of a watched kind is recorded (an informer's handler)
        self.events_seen = self.store.subscribe(self.watches or None) if hasattr(self.store, "subscribe") else None
        self.thread = None
        self._pool = None

    def rtype(self, group: str, version: str, plural: str):
        return self.registry.get(group, version, plural)

    def start(self) -> None:
        self.thread = threading.Thread(target=self._run, name=type(self).__name__, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.stop_event.set()
        self.woken.set()
        if self.events_seen is not None:  # wake the loop now rather than after a resync period
            self.events_seen.set()
        with self.store.changed:
            self.store.changed.notify_all()
        if self.thread is not None:
            self.thread.join(timeout=5)
        if self._pool is not None:
            self._pool.shutdown(wait=True)
        if hasattr(self.store, "unsubscribe"):  # a stopped controller leaves nothing in the store
            if self.events_seen is not None:
                self.store.unsubscribe(self.events_seen)
            self.store.unsubscribe(self.woken)

    def each(self, items, fn) -> list:
        """``fn(item)`` for every item, on ``workers`` threads (never two on one item), all done on return;
        the results in order. 404 and 409 answers are normal under concurrency (None for that item); any
        other error is raised once every item is done."""
        items = list(items)

        def call(item):
            try:
                return fn(item), None
            except ApiError as exc:
                return None, (None if exc.code in (404, 409) else exc)
            except Exception as exc:  # pylint: disable=broad-except
                return None, exc

        if self.workers <= 1 or len(items) <= 1:
            outcomes = [call(item) for item in items]
        else:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix=type(self).__name__)
            outcomes = list(self._pool.map(call, items))
        for _result, error in outcomes:
            if error is not None:
                raise error
        return [result for result, _error in outcomes]

    def _run(self) -> None:
        revision = self.store.revision()
        while not self.stop_event.is_set():
            started = time.monotonic()
            try:
                self.reconcile()
            except ApiError as exc:
                if exc.code not in (404, 409, 410, 422, 429):
                    self.lab.controller_errors.append("%s: %s" % (type(self).__name__, exc.message))
            except Exception as exc:  # pylint: disable=broad-except
                self.lab.controller_errors.append("%s: %r" % (type(self).__name__, exc))
            revision, by_event = self._wait(revision)
            pause = started + self.batch_seconds - time.monotonic()
            if by_event and pause > 0:  # a timer's or a resync's wake-up is served at once
                self._pause(pause)

    def _pause(self, seconds: float) -> None:
        """The batching pause: events coming in meanwhile wait for the next pass; a timer's wake-up
        (``Store.wake``, e.g. a fault's delay running out) or a stop ends it at once."""
        self.woken.wait(seconds)
        self.woken.clear()

    def _wait(self, revision: int) -> int:
        """Until an event of a watched kind (any kind when ``watches`` is empty), the resync period or stop:
        like an informer's handlers, events of other kinds do not wake the loop. Returns the revision seen and
        whether events woke it (not a resync, a stop or a bare notify such as a fault's timer)."""
        due = time.monotonic() + self.resync_seconds
        while not self.stop_event.is_set():
            left = due - time.monotonic()
            if left <= 0:
                return revision, False
            try:
                if self.events_seen is None:
                    events = self.store.wait_for_events(revision, left)
                else:
                    if not self.events_seen.wait(left):
                        return revision, False
                    self.events_seen.clear()  # before the read: an event recorded after it sets it again
                    events = self.store.events_after(revision)
            except ApiError:
                return self.store.revision(), False
            if not events:
                return revision, False
            revision = events[-1][0]
            if not self.watches or any(event[2].kind in self.watches for event in events):
                return revision, True
        return revision, False

    def reconcile(self) -> None:
        raise NotImplementedError
