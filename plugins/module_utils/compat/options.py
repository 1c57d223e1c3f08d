# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Options of ``compat_check``: the argument spec, :class:`CompatError`, and the normalisation and
validation of ``target``, ``cluster`` (its simple form; the gpu_cluster_facts form is in
:mod:`compat_cluster_facts`), ``nodes``, ``releases`` and the coverage options. Pure logic, no I/O.

Also the small version/field helpers shared by the rule kinds (``compat_*_kinds``) and
:func:`compat.evaluate`.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.inputs import rules as inputs
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.compat.fields import ALLOCATION_MODES
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.judges.verdict import (  # pylint: disable=unused-import
    FAIL_ON,
    NOT_ASSESSED,
    VERDICTS,
)
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.common.versions import parse_version, release_key

CLUSTER = "cluster"
#: Distributions that have no status row on purpose (plain upstream Kubernetes).
UPSTREAM_DISTRIBUTIONS = ("upstream", "kubeadm", "vanilla")
FACTS_SOURCE = "gpu_node facts (plugins/modules/gpu_node_facts.py)"
OPTIONS_SOURCE = "compat_check options"

_CLUSTER_KEYS = ("kubernetes_version", "kubelet_versions", "cluster_policy", "gpu_cluster",
                 "operator_version", "distribution")
_TARGET_KEYS = ("operator_version", "kubernetes_version", "allocation_mode", "passthrough",
                "accept_alpha_passthrough")
_COVERAGE_KEYS = ("expected_hosts", "answered_hosts", "failed_hosts", "inventory_hosts", "host_node_names")

#: The argument spec shared by the action plugin and the module.
ARGUMENT_SPEC = dict(
    nodes=dict(type="dict"),
    cluster=dict(type="dict", options=dict(
        kubernetes_version=dict(type="raw"),
        kubelet_versions=dict(type="dict"),
        cluster_policy=dict(type="raw"),
        gpu_cluster=dict(type="raw"),
        operator_version=dict(type="raw"),
        distribution=dict(type="str"),
        # The gpu_cluster_facts form (compat_cluster_facts.FACTS_KEYS).
        schema_version=dict(type="raw"),
        api_server=dict(type="raw"),
        apis=dict(type="raw"),
        nodes=dict(type="raw"),
        operator=dict(type="raw"),
        device_classes=dict(type="raw"),
        runtime_classes=dict(type="raw"),
        pdbs=dict(type="raw"),
        resource_claims=dict(type="raw"),
        problems=dict(type="raw"),
    )),
    target=dict(type="dict", apply_defaults=True, options=dict(
        # No default here: the matrix's defaults.target_operator_version (data/matrix/common.yml).
        operator_version=dict(type="raw"),
        kubernetes_version=dict(type="raw"),
        allocation_mode=dict(type="str", choices=list(ALLOCATION_MODES), default="device_plugin"),
        passthrough=dict(type="bool", default=False),
        accept_alpha_passthrough=dict(type="bool", default=False),
    )),
    releases=dict(type="list", elements="raw"),
    matrix=dict(type="path"),
    fail_on=dict(type="str", choices=list(FAIL_ON), default="block"),
    # Coverage (gate.coverage_findings): the hosts the phase was asked to cover vs those that answered.
    expected_hosts=dict(type="list", elements="str"),
    answered_hosts=dict(type="list", elements="str"),
    failed_hosts=dict(type="dict"),
    inventory_hosts=dict(type="list", elements="str"),
    host_node_names=dict(type="dict"),
)


class CompatError(ValueError):
    """A bad option: the message names the option and the expected form."""


# ---- option normalisation -----------------------------------------------------------------------

def _type_name(value):
    return type(value).__name__ if value is not None else "null"


def _parse_string_version(value, field):
    """parse_version() of a string; a number (YAML reads 1.30 as 1.3) or another type is a CompatError."""
    if isinstance(value, bool) or not isinstance(value, str):
        raise CompatError(
            "%s: expected a version as a quoted string (YAML reads 1.30 as the number 1.3), got %s %r"
            % (field, _type_name(value), value))
    return parse_version(value)


def _version_option(value, field, required=False):
    """A version given as an option: a string that parses, else CompatError. None stays None."""
    if value is None or value == "":
        if required:
            raise CompatError("%s: required (a version string such as \"1.37.0\")" % field)
        return None
    parsed = _parse_string_version(value, field)
    if parsed is None:
        raise CompatError("%s: %r is not a version string (expected digits and dots such as \"1.37.0\")" % (field, value))
    return parsed


def _fact_version(value, field):
    """A version given as a fact: (Version, None) or (None, why-not text)."""
    if value is None or value == "":
        return None, "%s not given" % field
    parsed = _parse_string_version(value, field)
    if parsed is None:
        return None, "%s %r is not a version string" % (field, value)
    return parsed, None


def _bool_option(value, field, default=False):
    if value is None:
        return default
    if not isinstance(value, bool):
        raise CompatError("%s: expected true or false, got %s %r" % (field, _type_name(value), value))
    return value


def _check_keys(mapping, allowed, field):
    for key in mapping:
        if key not in allowed:
            raise CompatError("%s: unknown key %r (expected one of %s)" % (field, key, ", ".join(allowed)))


def _object_names(objects):
    """metadata.name (or name) of each object, when every object has one; else None."""
    names = []
    for item in objects:
        name = None
        if isinstance(item, dict):
            name = (item.get("metadata") or {}).get("name") if isinstance(item.get("metadata"), dict) else item.get("name")
        if not isinstance(name, str):
            return None
        names.append(name)
    return names


def _presence(value, field):
    """ClusterPolicy/GPUCluster presence and names: (True, False or None (unknown), [names] or None).

    Accepts a bool, the object itself (a dict), a list of objects, or a ``k8s_info`` result
    (a dict with ``resources``).
    """
    if value is None or isinstance(value, bool):
        return value, None
    if isinstance(value, dict):
        if isinstance(value.get("resources"), list):
            return bool(value["resources"]), _object_names(value["resources"])
        return bool(value), _object_names([value]) if value else []
    if isinstance(value, (list, tuple)):
        return bool(value), _object_names(value)
    raise CompatError(
        "%s: expected true/false, the object (a dict), a list of objects or a k8s_info result; got %s %r"
        % (field, _type_name(value), value))


def normalize_target(target, default_operator_version=None):
    """The target with defaults applied and versions parsed. Raises CompatError.

    ``default_operator_version`` is the matrix's ``defaults.target_operator_version``.
    """
    if target is None:
        target = {}
    if not isinstance(target, dict):
        raise CompatError("target: expected a dict with keys %s, got %s" % (", ".join(_TARGET_KEYS), _type_name(target)))
    _check_keys(target, _TARGET_KEYS, "target")
    operator = target.get("operator_version")
    origin = "the setting dra_gate_target_operator_version"
    if operator is None or operator == "":
        operator, origin = default_operator_version, "the matrix's defaults.target_operator_version"
        if operator is None:
            raise CompatError("target.operator_version: not given and the matrix has no "
                              "defaults.target_operator_version (data/matrix/common.yml)")
    _version_option(operator, "target.operator_version")  # a version string at all (quoted, digits and dots)
    # The one version rule (module_utils/inputs/rules.py): a full release, v26.7.0 normalised to 26.7.0; 26.7 names no
    # chart, so hops planned to it would be refused by the upgrade.
    reason = inputs.release(operator)
    if reason:
        raise CompatError("target.operator_version: %r: expected YY.MM.PP such as \"26.7.0\", a full release (%s; %s)"
                          % (operator, reason, origin))
    operator_v = parse_version(inputs.normalise_release(operator))
    mode = target.get("allocation_mode")
    if mode is None:
        mode = "device_plugin"
    if mode not in ALLOCATION_MODES:
        raise CompatError("target.allocation_mode: expected one of %s, got %r" % (", ".join(ALLOCATION_MODES), mode))
    return {
        "operator_version": operator_v,
        "kubernetes_version": _version_option(target.get("kubernetes_version"), "target.kubernetes_version"),
        "allocation_mode": mode,
        "passthrough": _bool_option(target.get("passthrough"), "target.passthrough"),
        "accept_alpha_passthrough": _bool_option(target.get("accept_alpha_passthrough"), "target.accept_alpha_passthrough"),
    }


def normalize_simple_cluster(cluster):
    """The simple form of ``cluster`` with presence flags decided; None when no cluster was given.

    Raises CompatError. :func:`compat_cluster_facts.normalize_cluster` handles both forms.
    """
    if cluster is None:
        return None
    if not isinstance(cluster, dict):
        raise CompatError("cluster: expected a dict with keys %s, got %s" % (", ".join(_CLUSTER_KEYS), _type_name(cluster)))
    _check_keys(cluster, _CLUSTER_KEYS, "cluster")
    kubelets = cluster.get("kubelet_versions")
    if kubelets is None:
        kubelets = {}
    if not isinstance(kubelets, dict):
        raise CompatError("cluster.kubelet_versions: expected a dict host -> version string, got %s" % _type_name(kubelets))
    for host, version in kubelets.items():
        if version is not None and (isinstance(version, bool) or not isinstance(version, str)):
            raise CompatError(
                "cluster.kubelet_versions[%r]: expected a version as a quoted string, got %s %r"
                % (host, _type_name(version), version))
    distribution = cluster.get("distribution")
    if distribution is not None and not isinstance(distribution, str):
        raise CompatError("cluster.distribution: expected a string such as eks or upstream, got %s" % _type_name(distribution))
    for key in ("kubernetes_version", "operator_version"):
        value = cluster.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, str)):
            raise CompatError(
                "cluster.%s: expected a version as a quoted string (YAML reads 1.30 as the number 1.3), got %s %r"
                % (key, _type_name(value), value))
    policy, policy_names = _presence(cluster.get("cluster_policy"), "cluster.cluster_policy")
    gpucluster, gpucluster_names = _presence(cluster.get("gpu_cluster"), "cluster.gpu_cluster")
    return {
        "form": "simple",
        "kubernetes_version": cluster.get("kubernetes_version"),
        "kubelet_versions": dict(kubelets),
        "cluster_policy": policy,
        "cluster_policy_names": policy_names,
        "gpu_cluster": gpucluster,
        "gpu_cluster_names": gpucluster_names,
        "operator_version": cluster.get("operator_version"),
        "operator_version_origin": None,
        "operator_version_problem": None,
        "distribution": distribution.strip().lower() if distribution else None,
        "state": None,
    }


def normalize_nodes(nodes):
    """host -> facts dict (or None for a host without facts). Unwraps ``{"gpu_node": {...}}``."""
    if nodes is None:
        return {}
    if not isinstance(nodes, dict):
        raise CompatError("nodes: expected a dict host -> gpu_node facts, got %s" % _type_name(nodes))
    out = {}
    for host, facts in nodes.items():
        if not isinstance(host, str):
            raise CompatError("nodes: host names must be strings, got %s %r" % (_type_name(host), host))
        if isinstance(facts, dict) and "driver" not in facts and isinstance(facts.get("gpu_node"), dict):
            facts = facts["gpu_node"]
        if facts is not None and not isinstance(facts, dict):
            raise CompatError("nodes[%r]: expected the gpu_node facts dict (or null), got %s" % (host, _type_name(facts)))
        out[host] = facts
    return out


def normalize_releases(releases):
    """An explicit operator release list for hop planning, or None. Raises CompatError."""
    if releases is None:
        return None
    if not isinstance(releases, (list, tuple)):
        raise CompatError("releases: expected a list of operator versions such as [\"26.3.x\", \"26.6.x\", \"26.7.0\"]")
    out = []
    for index, item in enumerate(releases):
        if not isinstance(item, str) or release_key(item) is None:
            raise CompatError(
                "releases[%d]: expected a quoted operator version such as \"26.6.x\" or \"26.7.0\", got %s %r"
                % (index, _type_name(item), item))
        out.append(item)
    return out


def normalize_coverage(coverage):
    """The coverage options (``expected_hosts``, ``answered_hosts``, ``failed_hosts``,
    ``inventory_hosts``, ``host_node_names``) as a dict, or None when none is given. Raises CompatError."""
    if coverage is None:
        return None
    if not isinstance(coverage, dict):
        raise CompatError("coverage: expected a dict with keys %s, got %s" % (", ".join(_COVERAGE_KEYS), _type_name(coverage)))
    _check_keys(coverage, _COVERAGE_KEYS, "coverage")
    out = {}
    for key in ("expected_hosts", "answered_hosts", "inventory_hosts"):
        value = coverage.get(key)
        if value is None:
            continue
        if not isinstance(value, (list, tuple)) or not all(isinstance(h, str) for h in value):
            raise CompatError("%s: expected a list of host names (strings), got %s %r" % (key, _type_name(value), value))
        out[key] = list(value)
    for key, what in (("failed_hosts", "host -> reason"), ("host_node_names", "inventory host -> Kubernetes node name")):
        value = coverage.get(key)
        if value is None:
            continue
        if not isinstance(value, dict) or not all(isinstance(h, str) for h in value):
            raise CompatError("%s: expected a dict %s, got %s %r" % (key, what, _type_name(value), value))
        if key == "host_node_names" and not all(isinstance(v, str) for v in value.values()):
            raise CompatError("host_node_names: node names must be strings, got %r" % (value,))
        out[key] = dict(value)
    return out if out else None


# ---- helpers shared by the rule checks ----------------------------------------------------------

def _source_text(row):
    return "; ".join(row["source"]) if row else OPTIONS_SOURCE


def _fmt(version):
    return version.raw if version is not None else None


def _minor_key(version):
    return (version.major, version.minor)
