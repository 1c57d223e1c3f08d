# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The system namespaces controller: ``default``, ``kube-system``, ``kube-public`` and ``kube-node-lease`` exist.

They are created once, synchronously, when the controller starts (before clients can connect to a
server that was just started), and re-created on later passes should one go away, as
kube-apiserver's system namespaces controller does.
"""

from __future__ import annotations

from kubelab.controllers import Controller
from kubelab.errors import ApiError

SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


class NamespacesController(Controller):
    watches = ("Namespace",)
    resync_seconds = 2.0

    def __init__(self, lab):
        super().__init__(lab)
        self.namespaces = self.rtype("", "v1", "namespaces")

    def start(self) -> None:
        try:
            self.reconcile()
        except ApiError as exc:
            self.lab.controller_errors.append("%s: %s" % (type(self).__name__, exc.message))
        super().start()

    def reconcile(self) -> None:
        present = {o["metadata"]["name"] for o in self.api.list(self.namespaces, None)["items"]}
        for name in SYSTEM_NAMESPACES:
            if name in present:
                continue
            try:
                self.api.create(self.namespaces, None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
                                field_manager="kube-apiserver")
            except ApiError as exc:
                if exc.code != 409:
                    raise
