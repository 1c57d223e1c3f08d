# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A kubeconfig for the lab cluster, as kubectl, Helm and the kubernetes client read it."""

from __future__ import annotations

import base64

import yaml

from kubelab.tls import write_private


def kubeconfig_dict(server_url: str, ca_pem: bytes | str | None = None, token: str | None = None,
                    namespace: str = "default", context: str = "kubelab") -> dict:
    """The kubeconfig as a dict: one cluster, one user and one context, all named ``context``."""
    cluster: dict = {"server": server_url}
    if ca_pem:
        if isinstance(ca_pem, str):
            ca_pem = ca_pem.encode()
        cluster["certificate-authority-data"] = base64.b64encode(ca_pem).decode("ascii")
    user: dict = {}
    if token:
        user["token"] = token
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "preferences": {},
        "clusters": [{"name": context, "cluster": cluster}],
        "users": [{"name": context, "user": user}],
        "contexts": [{"name": context, "context": {"cluster": context, "user": context, "namespace": namespace}}],
        "current-context": context,
    }


def write_kubeconfig(path: str, server_url: str, ca_pem: bytes | str | None = None, token: str | None = None,
                     namespace: str = "default", context: str = "kubelab") -> str:
    """Write the kubeconfig (YAML, mode 0600: it may hold a token) to ``path``; returns ``path``.

    ``ca_pem`` is the CA certificate's PEM (bytes or text), stored as ``certificate-authority-data``.
    """
    data = kubeconfig_dict(server_url, ca_pem=ca_pem, token=token, namespace=namespace, context=context)
    return write_private(path, yaml.safe_dump(data, default_flow_style=False, sort_keys=False))
