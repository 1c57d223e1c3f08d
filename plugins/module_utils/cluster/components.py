# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kubernetes component facts: feature gates, runtime config and versions of the control plane and kubelet.

Two halves, like ``gpu_node`` / ``node_config``:

- :func:`collect` runs on the node (standard library only, Python 3.8+): it reads, through a
  :class:`node_tree.NodeTree` root prefix, the static pod manifests of kube-apiserver,
  kube-scheduler and kube-controller-manager and the kubelet configuration file, and returns the
  facts skeleton plus the raw, size-bounded texts.
- :func:`complete` runs on the controller (the action plugin): it parses the texts with PyYAML
  ``safe_load`` and fills in ``image``, ``version``, ``feature_gates``, ``runtime_config`` and the
  kubelet's DRA-relevant ``settings``. A malformed file is a ``problems`` entry with its path and
  the component's ``error``; never a traceback. No raw text stays in the facts.

:func:`from_inventory` validates the same facts given as inventory data for a managed control
plane (``dra_gate_control_plane_components``, docs/feature-gates.md). The facts schema is in
docs/feature-gates.md.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import re

SCHEMA_VERSION = 1
CONTROL_PLANE = ("kube-apiserver", "kube-scheduler", "kube-controller-manager")
KUBELET = "kubelet"
COMPONENTS = CONTROL_PLANE + (KUBELET,)
DEFAULT_MANIFESTS_DIR = "/etc/kubernetes/manifests"
DEFAULT_KUBELET_CONFIG = "/var/lib/kubelet/config.yaml"
#: One manifest or kubelet config (kubeadm's are 2-4 KiB).
MAX_FILE_BYTES = 256 * 1024
#: KubeletConfiguration fields that matter to DRA (device assignment, NUMA alignment, the runtime
#: endpoint the DRA kubelet plugins' CDI devices go through, where static pods come from).
KUBELET_DRA_SETTINGS = ("topologyManagerPolicy", "topologyManagerScope", "cpuManagerPolicy",
                        "memoryManagerPolicy", "containerRuntimeEndpoint", "staticPodPath",
                        "failSwapOn", "cgroupDriver")
KUBELET_KIND = "KubeletConfiguration"
KUBELET_API_VERSIONS = ("kubelet.config.k8s.io/v1beta1", "kubelet.config.k8s.io/v1")
INVENTORY_KEYS = ("version", "image", "feature_gates", "runtime_config", "settings", "path")
_VERSION_RE = re.compile(r"^v?(\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.+-]*)?)$")
_GATE_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9]*$")


class K8sComponentsError(ValueError):
    """Bad inventory data for a component: the message names the field and the expected form."""


def empty_component(name, path=None, source="node"):
    """The facts of one component before anything is known (``present`` false)."""
    facts = {"present": False, "path": path, "sha256": None, "image": None, "version": None,
             "feature_gates": {}, "runtime_config": {}, "source": source, "error": None}
    if name == KUBELET:
        facts["settings"] = {}
    return facts


def manifest_path(manifests_dir, component):
    return manifests_dir.rstrip("/") + "/" + component + ".yaml"


# --- node side ----------------------------------------------------------------------------------

def _read_raw(tree, path):
    """``{"text", "error"}`` of one file, or None when it is absent."""
    before = len(tree.problems)
    text = tree.read_text(path, max_bytes=MAX_FILE_BYTES)
    new = [p["reason"] for p in tree.problems[before:] if p["path"] == path]
    if text is None:
        if new:
            return {"text": None, "error": new[0]}
        return None
    if u"\ufffd" in text:
        return {"text": None, "error": "not valid UTF-8"}
    return {"text": text, "error": None}


def collect(tree, manifests_dir=DEFAULT_MANIFESTS_DIR, kubelet_config=DEFAULT_KUBELET_CONFIG):
    """The node's part: ``(facts, raw)``; ``raw`` is ``{"files": {component: {"path", "text", "error"}}}``.

    ``facts["components"]`` has every component of :data:`COMPONENTS`; a file that exists is
    ``present`` with its ``path`` and ``sha256`` (of its bytes as read); the rest is filled in by
    :func:`complete` on the controller. Never raises for bad node data.
    """
    facts = {"schema_version": SCHEMA_VERSION, "root": tree.root, "source": "node", "components": {},
             "problems": []}
    files = {}
    paths = [(name, manifest_path(manifests_dir, name)) for name in CONTROL_PLANE] + [(KUBELET, kubelet_config)]
    for name, path in paths:
        component = empty_component(name, path)
        entry = _read_raw(tree, path)
        if entry is not None:
            component["present"] = True
            if entry["text"] is not None:
                component["sha256"] = hashlib.sha256(entry["text"].encode("utf-8")).hexdigest()
            else:
                component["error"] = entry["error"]
            files[name] = {"path": path, "text": entry["text"], "error": entry["error"]}
        facts["components"][name] = component
    facts["problems"] = list(tree.problems)
    return facts, {"files": files}


# --- controller side ----------------------------------------------------------------------------

def parse_bool(value):
    """``true``/``false`` as Kubernetes' flag parser takes them (strconv.ParseBool), else None."""
    text = str(value).strip()
    if text in ("1", "t", "T", "true", "TRUE", "True"):
        return True
    if text in ("0", "f", "F", "false", "FALSE", "False"):
        return False
    return None


def parse_feature_gates(values, problems, path, where="--feature-gates"):
    """Merge the ``A=true,B=false`` values of several flags, the last one winning per gate."""
    gates = {}
    for value in values:
        for item in str(value).split(","):
            item = item.strip()
            if not item:
                continue
            name, sep, state = item.partition("=")
            name = name.strip()
            parsed = parse_bool(state) if sep else None
            if not _GATE_NAME_RE.match(name) or parsed is None:
                problems.append({"path": path, "reason": "%s: %r is not Name=true|false; ignored" % (where, item)})
                continue
            gates[name] = parsed
    return gates


def parse_runtime_config(values):
    """Merge ``--runtime-config`` values (``group/version=true,api/all=false``); a key alone means ``true``."""
    config = {}
    for value in values:
        for item in str(value).split(","):
            item = item.strip()
            if not item:
                continue
            key, sep, state = item.partition("=")
            config[key.strip()] = state.strip() if sep else "true"
    return config


def flag_values(argv, flag):
    """Every value of ``--flag=value`` or ``--flag value`` in ``argv``, in order."""
    values = []
    prefix = "--" + flag
    index = 0
    while index < len(argv):
        arg = argv[index]
        if arg.startswith(prefix + "="):
            values.append(arg[len(prefix) + 1:])
        elif arg == prefix and index + 1 < len(argv):
            values.append(argv[index + 1])
            index += 1
        index += 1
    return values


def version_from_image(image):
    """``1.37.0`` from ``registry.k8s.io/kube-apiserver:v1.37.0`` (a digest after ``@`` is ignored), else None."""
    if not isinstance(image, str):
        return None
    name = image.split("@", 1)[0]
    last = name.rsplit("/", 1)[-1]
    if ":" not in last:
        return None
    match = _VERSION_RE.match(last.rsplit(":", 1)[1])
    return match.group(1) if match else None


def _describe(exc):
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    return "%s: %s" % (type(exc).__name__, str(exc).splitlines()[0] if str(exc) else "")


def _container(pod, name):
    spec = pod.get("spec")
    if not isinstance(spec, dict) or not isinstance(spec.get("containers"), list) or not spec["containers"]:
        raise ValueError("no spec.containers")
    containers = [c for c in spec["containers"] if isinstance(c, dict)]
    for container in containers:
        if container.get("name") == name:
            return container
    if len(containers) == 1:
        return containers[0]
    raise ValueError("no container named %s" % name)


def _argv(container):
    argv = []
    for key in ("command", "args"):
        value = container.get(key)
        if value is None:
            continue
        if not isinstance(value, list) or not all(isinstance(a, str) for a in value):
            raise ValueError("containers[].%s is not a list of strings" % key)
        argv.extend(value)
    return argv


def complete_manifest(component, name, text, problems):
    """Fill in one control-plane component from its static pod manifest text."""
    import yaml  # pylint: disable=import-outside-toplevel  # controller only
    path = component["path"]
    try:
        pod = yaml.safe_load(text)
        if not isinstance(pod, dict) or pod.get("kind") != "Pod":
            raise ValueError("not a Pod manifest (kind %r)" % (pod.get("kind") if isinstance(pod, dict) else type(pod).__name__))
        container = _container(pod, name)
        argv = _argv(container)
    except Exception as exc:  # pylint: disable=broad-except  # any bad file is this file's problem
        component["error"] = "not parsed: %s" % _describe(exc)
        problems.append({"path": path, "reason": component["error"]})
        return component
    image = container.get("image")
    component["image"] = image if isinstance(image, str) else None
    component["version"] = version_from_image(component["image"])
    if component["image"] and component["version"] is None:
        problems.append({"path": path, "reason": "image %r has no version tag" % component["image"]})
    component["feature_gates"] = parse_feature_gates(flag_values(argv, "feature-gates"), problems, path)
    if name == "kube-apiserver":
        component["runtime_config"] = parse_runtime_config(flag_values(argv, "runtime-config"))
    return component


def complete_kubelet(component, text, problems):
    """Fill in the kubelet from its KubeletConfiguration text (``featureGates`` and DRA settings)."""
    import yaml  # pylint: disable=import-outside-toplevel  # controller only
    path = component["path"]
    try:
        config = yaml.safe_load(text)
        if not isinstance(config, dict):
            raise ValueError("not a mapping")
        if config.get("kind") != KUBELET_KIND:
            raise ValueError("kind is %r, expected %s" % (config.get("kind"), KUBELET_KIND))
        gates = config.get("featureGates")
        if gates is not None and not isinstance(gates, dict):
            raise ValueError("featureGates is not a mapping")
    except Exception as exc:  # pylint: disable=broad-except
        component["error"] = "not parsed: %s" % _describe(exc)
        problems.append({"path": path, "reason": component["error"]})
        return component
    if config.get("apiVersion") not in KUBELET_API_VERSIONS:
        problems.append({"path": path, "reason": "apiVersion %r is not one of %s" % (config.get("apiVersion"), ", ".join(KUBELET_API_VERSIONS))})
    feature_gates = {}
    for gate, value in (gates or {}).items():
        if not isinstance(value, bool) or not _GATE_NAME_RE.match(str(gate)):
            problems.append({"path": path, "reason": "featureGates: %r: %r is not Name: true|false; ignored" % (gate, value)})
            continue
        feature_gates[str(gate)] = value
    component["feature_gates"] = feature_gates
    component["settings"] = dict((key, config[key]) for key in KUBELET_DRA_SETTINGS
                                 if key in config and isinstance(config[key], (str, bool, int)))
    return component


def complete(facts, raw):
    """Fill in ``facts`` (from :func:`collect`) from ``raw``; returns ``facts``. Never raises for bad node data."""
    raw = raw if isinstance(raw, dict) else {}
    files = raw.get("files") if isinstance(raw.get("files"), dict) else {}
    problems = facts.setdefault("problems", [])
    components = facts.get("components") if isinstance(facts.get("components"), dict) else {}
    for name, component in components.items():
        entry = files.get(name)
        if not component.get("present") or not isinstance(entry, dict) or not isinstance(entry.get("text"), str):
            continue
        if name == KUBELET:
            complete_kubelet(component, entry["text"], problems)
        else:
            complete_manifest(component, name, entry["text"], problems)
    return facts


def gather(tree, manifests_dir=DEFAULT_MANIFESTS_DIR, kubelet_config=DEFAULT_KUBELET_CONFIG):
    """The whole pipeline (node read + controller parse) for callers that hold the tree: tests, the lab."""
    facts, raw = collect(tree, manifests_dir, kubelet_config)
    return complete(facts, raw)


# --- inventory (managed control planes) ----------------------------------------------------------

def _check_gates(value, where):
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise K8sComponentsError("%s: expected a mapping GateName: true|false, got %s" % (where, type(value).__name__))
    gates = {}
    for gate, state in value.items():
        if not isinstance(gate, str) or not _GATE_NAME_RE.match(gate):
            raise K8sComponentsError("%s: %r is not a feature gate name (CamelCase letters and digits)" % (where, gate))
        if not isinstance(state, bool):
            raise K8sComponentsError("%s.%s: expected true or false, got %r" % (where, gate, state))
        gates[gate] = state
    return gates


def from_inventory(data, where="dra_gate_control_plane_components"):
    """Facts of the same shape as :func:`complete` from inventory data (a managed control plane).

    ``data`` maps component names (:data:`COMPONENTS`) to ``{version, image, feature_gates,
    runtime_config, settings, path}`` (every key optional). A component listed is ``present``; one
    not listed is absent (not reported). Raises :class:`K8sComponentsError` naming the field.
    """
    if not isinstance(data, dict):
        raise K8sComponentsError("%s: expected a mapping component -> {version, feature_gates, runtime_config}, got %s"
                                 % (where, type(data).__name__))
    facts = {"schema_version": SCHEMA_VERSION, "root": None, "source": "inventory", "components": {}, "problems": []}
    for name in COMPONENTS:
        facts["components"][name] = empty_component(name, source="inventory")
    for name, value in data.items():
        field = "%s.%s" % (where, name)
        if name not in COMPONENTS:
            raise K8sComponentsError("%s: unknown component; expected one of %s" % (field, ", ".join(COMPONENTS)))
        if value is None:
            value = {}
        if not isinstance(value, dict):
            raise K8sComponentsError("%s: expected a mapping with %s" % (field, ", ".join(INVENTORY_KEYS)))
        unknown = sorted(set(value) - set(INVENTORY_KEYS))
        if unknown:
            raise K8sComponentsError("%s: unknown keys %s; expected %s" % (field, ", ".join(map(str, unknown)), ", ".join(INVENTORY_KEYS)))
        component = facts["components"][name]
        component["present"] = True
        version = value.get("version")
        if version is not None:
            if not isinstance(version, str) or not _VERSION_RE.match(version):
                raise K8sComponentsError("%s.version: expected a quoted version like \"1.37.0\", got %r" % (field, version))
            component["version"] = _VERSION_RE.match(version).group(1)
        image = value.get("image")
        if image is not None:
            if not isinstance(image, str):
                raise K8sComponentsError("%s.image: expected a string" % field)
            component["image"] = image
            component["version"] = component["version"] or version_from_image(image)
        for key in ("path",):
            if value.get(key) is not None and not isinstance(value[key], str):
                raise K8sComponentsError("%s.%s: expected a string" % (field, key))
            component[key] = value.get(key)
        component["feature_gates"] = _check_gates(value.get("feature_gates"), field + ".feature_gates")
        runtime = value.get("runtime_config")
        if runtime is not None:
            if name != "kube-apiserver":
                raise K8sComponentsError("%s.runtime_config: only kube-apiserver takes --runtime-config" % field)
            if not isinstance(runtime, dict) or not all(isinstance(k, str) for k in runtime):
                raise K8sComponentsError("%s.runtime_config: expected a mapping group/version -> \"true\"|\"false\"" % field)
            component["runtime_config"] = dict((k, str(v).lower() if isinstance(v, bool) else str(v)) for k, v in runtime.items())
        settings = value.get("settings")
        if settings is not None:
            if name != KUBELET:
                raise K8sComponentsError("%s.settings: only the kubelet has settings" % field)
            if not isinstance(settings, dict):
                raise K8sComponentsError("%s.settings: expected a mapping of KubeletConfiguration fields" % field)
            component["settings"] = dict(settings)
    return facts
