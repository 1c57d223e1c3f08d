# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Simulated cluster components. Each acts only through the lab's own API (kubelab.api.Api)."""

from __future__ import annotations

import threading

from kubelab.errors import ApiError


class Controller:
    """A reconcile loop woken by the store's events (like an informer) and by a resync period.

    Subclasses set ``watches`` (kinds whose events wake it; empty = every event) and implement
    ``reconcile()``, which reads the current state through ``self.api`` and writes through it.
    Conflicts (409) and vanished objects (404) are normal under concurrency: the next pass fixes them.
    """

    watches: tuple = ()
    resync_seconds = 1.0

    def __init__(self, lab):
        self.lab = lab
        self.api = lab.api
        self.store = lab.store
        self.registry = lab.registry
        self.stop_event = threading.Event()
        self.thread = None

    def rtype(self, group: str, version: str, plural: str):
        return self.registry.get(group, version, plural)

    def start(self) -> None:
        self.thread = threading.Thread(target=self._run, name=type(self).__name__, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.stop_event.set()
        with self.store.changed:  # wake the loop now rather than after a resync period
            self.store.changed.notify_all()
        if self.thread is not None:
            self.thread.join(timeout=5)

    def _run(self) -> None:
        revision = self.store.revision()
        while not self.stop_event.is_set():
            try:
                self.reconcile()
            except ApiError as exc:
                if exc.code not in (404, 409, 410, 422, 429):
                    self.lab.controller_errors.append("%s: %s" % (type(self).__name__, exc.message))
            except Exception as exc:  # pylint: disable=broad-except
                self.lab.controller_errors.append("%s: %r" % (type(self).__name__, exc))
            try:
                events = self.store.wait_for_events(revision, self.resync_seconds)
            except ApiError:
                revision = self.store.revision()
                continue
            if events:
                revision = events[-1][0]

    def reconcile(self) -> None:
        raise NotImplementedError
