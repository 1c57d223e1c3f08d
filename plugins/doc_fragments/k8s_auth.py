# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    # The connection options of every cluster-side module (K8S_AUTH_ARG_SPEC in
    # plugins/module_utils/k8s_client.py). Set them once for all of them with
    # module_defaults: group/gpufleet.dra_gate.k8s.
    DOCUMENTATION = r"""
options:
  kubeconfig:
    description:
      - Path to a kubeconfig file.
      - When neither this nor O(host) is given, C($KUBECONFIG) (a path list) or C(~/.kube/config) is read,
        and when no such file exists and the module runs in a pod, the pod's service account is used.
      - Can also be set with the E(K8S_AUTH_KUBECONFIG) environment variable.
    type: path
  context:
    description:
      - The kubeconfig context to use; the kubeconfig's current context when not set.
      - Can also be set with the E(K8S_AUTH_CONTEXT) environment variable.
    type: str
  host:
    description:
      - URL of the API server. Overrides the kubeconfig's; without a kubeconfig, the only source.
      - Can also be set with the E(K8S_AUTH_HOST) environment variable.
    type: str
  api_key:
    description:
      - Bearer token for the API server. Overrides the kubeconfig's credentials. Never logged.
      - Can also be set with the E(K8S_AUTH_API_KEY) environment variable.
    type: str
  validate_certs:
    description:
      - Whether to verify the API server's TLS certificate. When not set, the kubeconfig decides.
      - Can also be set with the E(K8S_AUTH_VERIFY_SSL) environment variable.
    type: bool
    aliases: [verify_ssl]
  ca_cert:
    description:
      - Path to the CA certificate that signed the API server's certificate.
      - Can also be set with the E(K8S_AUTH_SSL_CA_CERT) environment variable.
    type: path
    aliases: [ssl_ca_cert]
  client_cert:
    description:
      - Path to a client certificate to authenticate with.
      - Can also be set with the E(K8S_AUTH_CERT_FILE) environment variable.
    type: path
    aliases: [cert_file]
  client_key:
    description:
      - Path to the key of O(client_cert).
      - Can also be set with the E(K8S_AUTH_KEY_FILE) environment variable.
    type: path
    aliases: [key_file]
  proxy:
    description:
      - URL of an HTTP proxy to reach the API server through.
      - Can also be set with the E(K8S_AUTH_PROXY) environment variable.
    type: str
  request_timeout:
    description:
      - Seconds to wait for each API request before the module fails naming the call.
    type: float
    default: 60
requirements:
  - kubernetes (the Python client) on the host that runs the module
notes:
  - Set these options once for every cluster-side module of this collection with
    C(module_defaults) and the action group C(group/gpufleet.dra_gate.k8s).
"""
