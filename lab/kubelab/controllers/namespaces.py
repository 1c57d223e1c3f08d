# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The system namespaces controller: ``default``, ``kube-system``, ``kube-public`` and ``kube-node-lease`` exist.

They are created once, synchronously, when the controller starts (before clients can connect to a
server that was just started), and re-created on later passes should one go away, as
kube-apiserver's system namespaces controller does.

And what every namespace has: ServiceAccount ``default`` (``ServiceAccountsController``), ConfigMap
``kube-root-ca.crt`` (``RootCACertPublisher``), plus Service and Endpoints ``default/kubernetes``
(``KubernetesServiceController``).
"""

from __future__ import annotations

import os
import tempfile
import time

from kubelab.clone import clone
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
        present = {o["metadata"]["name"] for o in self.api.list(self.namespaces, None, shared=True)["items"]}
        for name in SYSTEM_NAMESPACES:
            if name in present:
                continue
            try:
                self.api.create(self.namespaces, None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
                                field_manager="kube-apiserver")
            except ApiError as exc:
                if exc.code != 409:
                    raise


# -- what every namespace has -------------------------------------------------------------------

ROOT_CA_CONFIGMAP = "kube-root-ca.crt"
ROOT_CA_DESCRIPTION_ANNOTATION = "kubernetes.io/description"
ROOT_CA_DESCRIPTION = ("Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints "
                       "such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across "
                       "distributions of Kubernetes clusters.")
GENERATED_CA_KEY = "/kubelab/root-ca.crt"  # outside /registry: no API object, kept with the lab's etcd
CONTROLLER_MANAGER = "kube-controller-manager"
KUBERNETES_SERVICE_IP = "10.96.0.1"  # the first address of kubeadm's default --service-cluster-ip-range


def _active(namespace: dict) -> bool:
    meta = namespace.get("metadata") or {}
    return not meta.get("deletionTimestamp") and (namespace.get("status") or {}).get("phase", "Active") == "Active"


class _EventGated(Controller):
    """A loop whose pass runs only when the store's event log shows a change to one of ``kinds``, or every
    ``full_seconds``: a busy lab does not re-read these objects on every pod update."""

    kinds: tuple = ()
    resync_seconds = 1.0
    full_seconds = 5.0

    def __init__(self, lab):
        super().__init__(lab)
        self._seen = -1
        self._last_full = 0.0

    def due(self) -> bool:
        with self.store.cache_lock:  # the event log's lock
            newest = self.store.events[-1][0] if self.store.events else 0
            relevant = False
            for revision, _event_type, rtype, _obj in reversed(self.store.events):
                if revision <= self._seen:
                    break
                if rtype.kind in self.kinds:
                    relevant = True
                    break
        self._seen = newest
        clock = time.monotonic()
        if relevant or clock - self._last_full >= self.full_seconds:
            self._last_full = clock
            return True
        return False


class _NamespacedPublisher(_EventGated):
    """Something every active namespace has: ``sync_namespace(ns)`` per namespace, woken by ``kinds``' events.

    A pass runs when the store's event log shows a change to one of ``kinds`` (or every
    ``full_seconds``), so a busy lab does not list namespaces on every pod update.
    ``publish_namespace(ns)`` runs it synchronously (``LabServer.apply_scenario``, before the
    scenario's objects in that namespace are created).
    """

    kinds: tuple = ("Namespace",)

    def __init__(self, lab):
        super().__init__(lab)
        self.namespaces = self.rtype("", "v1", "namespaces")

    def reconcile(self) -> None:
        if not self.due():
            return
        for namespace in self.api.list(self.namespaces, None, shared=True)["items"]:
            if _active(namespace):
                self._guarded(namespace["metadata"]["name"])

    def publish_namespace(self, namespace: str) -> None:
        ns = self.store.get_or_none(self.namespaces, None, namespace)
        if ns is not None and _active(ns):
            self._guarded(namespace)

    def _guarded(self, namespace: str) -> None:
        try:
            self.sync_namespace(namespace)
        except ApiError as exc:
            # gone or terminating meanwhile (404, 403 NamespaceTerminating), or raced (409): the next pass fixes it
            if exc.code not in (403, 404, 409):
                raise

    def sync_namespace(self, namespace: str) -> None:
        raise NotImplementedError


class ServiceAccountsController(_NamespacedPublisher):
    """kube-controller-manager's serviceaccount-controller: every active namespace has ServiceAccount ``default``.

    As pkg/controller/serviceaccount/serviceaccounts_controller.go: a missing (or deleted) one is
    created (only its name; no token Secret since 1.24); terminating namespaces are skipped.
    """

    kinds = ("Namespace", "ServiceAccount")

    def __init__(self, lab):
        super().__init__(lab)
        self.serviceaccounts = self.rtype("", "v1", "serviceaccounts")

    def sync_namespace(self, namespace: str) -> None:
        if self.store.get_or_none(self.serviceaccounts, namespace, "default") is not None:
            return
        self.api.create(self.serviceaccounts, namespace,
                        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}},
                        field_manager=CONTROLLER_MANAGER)


def _issuer_ca(cert_path: str) -> bytes | None:
    """The CA certificate beside a server certificate (``ca.crt``, as kubelab.tls.generate_tls writes them)."""
    from cryptography import x509  # pylint: disable=import-outside-toplevel
    candidate = os.path.join(os.path.dirname(os.path.abspath(cert_path)), "ca.crt")
    try:
        with open(cert_path, "rb") as handle:
            server = x509.load_pem_x509_certificate(handle.read())
        with open(candidate, "rb") as handle:
            ca_pem = handle.read()
        ca = x509.load_pem_x509_certificate(ca_pem)
    except (OSError, ValueError):
        return None
    return ca_pem if ca.subject == server.issuer else None


def root_ca_pem(lab) -> str:
    """The CA bundle the root-CA publisher publishes: the lab's serving CA when it serves HTTPS.

    ``lab.ca_pem`` when set, else the ``ca.crt`` beside ``lab.tls``'s certificate (when it issued
    it); without TLS, a CA the lab generated once and keeps in etcd (``/kubelab/root-ca.crt``),
    so the bundle is stable across restarts on the same etcd.
    """
    given = getattr(lab, "ca_pem", None)
    if given:
        return given.decode("ascii") if isinstance(given, bytes) else str(given)
    tls = getattr(lab, "tls", None)
    if tls:
        found = _issuer_ca(tls[0])
        if found:
            return found.decode("ascii")
    etcd = lab.store.etcd
    items, _revision = etcd.range(GENERATED_CA_KEY)
    if items:
        return items[0][1].decode("ascii")
    from kubelab.tls import generate_tls  # pylint: disable=import-outside-toplevel
    with tempfile.TemporaryDirectory(prefix="kubelab-ca-") as scratch:
        pem = generate_tls(os.path.join(scratch, "tls"), days=3650, common_name="kubelab-root").ca_pem
    written, _revision = etcd.txn_put(GENERATED_CA_KEY, pem, 0)
    if not written:  # another publisher won the race: use its CA
        items, _revision = etcd.range(GENERATED_CA_KEY)
        pem = items[0][1]
    return pem.decode("ascii")


class RootCACertPublisher(_NamespacedPublisher):
    """kube-controller-manager's root-ca-cert-publisher: ConfigMap ``kube-root-ca.crt`` in every active namespace.

    As pkg/controller/certificates/rootcacertpublisher/publisher.go: created when missing, and its
    ``data`` reset to exactly ``{"ca.crt": <bundle>}`` (and the ``kubernetes.io/description``
    annotation restored) when someone changes it; other fields are left as they are.
    """

    kinds = ("Namespace", "ConfigMap")

    def __init__(self, lab):
        super().__init__(lab)
        self.configmaps = self.rtype("", "v1", "configmaps")
        self._bundle = None

    def bundle(self) -> str:
        if self._bundle is None:
            self._bundle = root_ca_pem(self.lab)
        return self._bundle

    def sync_namespace(self, namespace: str) -> None:
        data = {"ca.crt": self.bundle()}
        current = self.store.get_or_none(self.configmaps, namespace, ROOT_CA_CONFIGMAP)
        if current is None:
            self.api.create(self.configmaps, namespace, {
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": ROOT_CA_CONFIGMAP,
                             "annotations": {ROOT_CA_DESCRIPTION_ANNOTATION: ROOT_CA_DESCRIPTION}},
                "data": data}, field_manager=CONTROLLER_MANAGER)
            return
        annotations = current["metadata"].get("annotations") or {}
        if current.get("data") == data and annotations.get(ROOT_CA_DESCRIPTION_ANNOTATION):
            return
        body = clone(current)
        body["data"] = data
        body["metadata"].setdefault("annotations", {})[ROOT_CA_DESCRIPTION_ANNOTATION] = ROOT_CA_DESCRIPTION
        self.api.update(self.configmaps, namespace, ROOT_CA_CONFIGMAP, body, field_manager=CONTROLLER_MANAGER)


class KubernetesServiceController(_EventGated):
    """kube-apiserver's kubernetes-service controller: Service and Endpoints ``default/kubernetes``.

    As pkg/controlplane/controller/kubernetesservice: the Service (labels ``component: apiserver``,
    ``provider: kubernetes``; ClusterIP ``10.96.0.1``, SingleStack, no selector; port ``https``
    443 -> the server's port) is created when missing and its ports/type reconciled once at start;
    the Endpoints (``endpointslice.kubernetes.io/skip-mirror``) always list the server's address
    and port. Created synchronously when the controller starts, then re-created if removed.
    """

    kinds = ("Service", "Endpoints")

    def __init__(self, lab):
        super().__init__(lab)
        self.services = self.rtype("", "v1", "services")
        self.endpoints = self.rtype("", "v1", "endpoints")
        self._reconciled = False

    def _address(self) -> tuple[str, int]:
        host, port = self.lab.httpd.server_address[:2]
        if host in ("", "0.0.0.0", "::"):
            host = "127.0.0.1"
        return host, int(port)

    def start(self) -> None:
        try:
            self.reconcile()
        except ApiError as exc:
            self.lab.controller_errors.append("%s: %s" % (type(self).__name__, exc.message))
        super().start()

    def reconcile(self) -> None:
        if not self.due():
            return
        try:
            self._service()
            self._endpoints()
        except ApiError as exc:
            if exc.code not in (403, 404, 409):  # default namespace not there yet, or a race
                raise

    def _service(self) -> None:
        port = self._address()[1]
        ports = [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": port}]
        current = self.store.get_or_none(self.services, "default", "kubernetes")
        if current is None:
            self.api.create(self.services, "default", {
                "apiVersion": "v1", "kind": "Service",
                "metadata": {"name": "kubernetes", "labels": {"component": "apiserver", "provider": "kubernetes"}},
                "spec": {"type": "ClusterIP", "clusterIP": KUBERNETES_SERVICE_IP, "clusterIPs": [KUBERNETES_SERVICE_IP],
                         "ipFamilyPolicy": "SingleStack", "sessionAffinity": "None", "ports": ports}},
                field_manager="kube-apiserver")
        elif not self._reconciled:
            spec = current.get("spec") or {}
            if spec.get("ports") != ports or spec.get("type") != "ClusterIP":
                body = clone(current)
                body["spec"]["ports"] = ports
                body["spec"]["type"] = "ClusterIP"
                self.api.update(self.services, "default", "kubernetes", body, field_manager="kube-apiserver")
        self._reconciled = True

    def _endpoints(self) -> None:
        host, port = self._address()
        subsets = [{"addresses": [{"ip": host}], "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}]
        labels = {"endpointslice.kubernetes.io/skip-mirror": "true"}
        current = self.store.get_or_none(self.endpoints, "default", "kubernetes")
        if current is None:
            self.api.create(self.endpoints, "default", {
                "apiVersion": "v1", "kind": "Endpoints",
                "metadata": {"name": "kubernetes", "labels": labels}, "subsets": subsets},
                field_manager="kube-apiserver")
            return
        if current.get("subsets") == subsets and (current["metadata"].get("labels") or {}) == labels:
            return
        body = clone(current)
        body["subsets"] = subsets
        body["metadata"]["labels"] = labels
        self.api.update(self.endpoints, "default", "kubernetes", body, field_manager="kube-apiserver")
