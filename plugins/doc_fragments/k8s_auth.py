# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    # The connection options of every cluster-side module (K8S_AUTH_ARG_SPEC in
    # plugins/module_utils/cluster/client.py). Set them once for all of them with
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
      - URL of an HTTP proxy to reach the API server through. Never logged (it may carry credentials).
      - Can also be set with the E(K8S_AUTH_PROXY) environment variable.
    type: str
  request_timeout:
    description:
      - Seconds to wait for one attempt of an API request (never more than what is left of O(api_deadline)).
    type: float
    default: 60
  api_deadline:
    description:
      - Total seconds one API request may take, retries included. Answers 429, 500, 502, 503 and 504 and
        transport failures (connection refused or reset, timeouts) are retried with exponential backoff
        (0.25 s doubling up to 8 s, with jitter); a C(Retry-After) (seconds) from the server is honoured
        but never waited past this deadline. At the deadline the module fails naming the request
        (method and path), the number of attempts and the last status.
      - Writes (POST, PUT, PATCH, DELETE) are retried only on 429 and 503 (refused before any change) and
        on a connection that could not be made (nothing sent), never on 500, 502, 504, a reset or a timeout.
      - A 403 (forbidden) is never retried and never read as an absent object; the module fails naming
        the verb and the resource.
    type: float
    default: 120
requirements:
  - kubernetes (the Python client) on the host that runs the module
notes:
  - Set these options once for every cluster-side module of this collection with
    C(module_defaults) and the action group C(group/gpufleet.dra_gate.k8s).
"""
