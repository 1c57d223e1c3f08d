# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""kubelab: the lab cluster, a Kubernetes API stand-in for tests and rehearsals.

Not part of the shipped collection (galaxy.yml build_ignore) and never imported by plugins/.
Real clients (kubectl, Helm's Go library, kubernetes.core, the kubernetes Python client) talk to it
unmodified; objects live in a real etcd under /registry/..., as kube-apiserver keeps them.
See docs/lab.md.
"""
