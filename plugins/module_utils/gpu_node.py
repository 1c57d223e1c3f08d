# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Build the ``gpu_node`` facts of one node from its files and at most one call per binary.

Input: a :class:`~node_tree.NodeTree` (the node's filesystem below a root prefix) and a command
source (live, recorded or none). Output: the documented ``gpu_node`` dict (docs/node-facts.md).
Nothing here raises on bad node data: everything unreadable or unexpected is a ``problems`` entry.
Standard library only: this runs on GPU nodes.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import fnmatch
import posixpath
import re
import sys

from ansible_collections.gpufleet.dra_gate.plugins.module_utils import cdi as cdi_mod
from ansible_collections.gpufleet.dra_gate.plugins.module_utils import containerd as containerd_mod
from ansible_collections.gpufleet.dra_gate.plugins.module_utils import nvidia_smi
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.nvidia_driver import (
    DriverVersionError,
    normalize_bdf,
    parse_driver_version_file,
    parse_gpu_information,
)

SCHEMA_VERSION = 1
NVIDIA_VENDOR = "0x10de"
DISPLAY_CLASS_PREFIX = "0x03"  # 0x0300 VGA, 0x0302 3D controller
DMI_FIELDS = ("bios_vendor", "bios_version", "bios_date", "sys_vendor", "product_name", "board_name")
KUBELET_ARGV = ["kubelet", "--version"]
KUBELET_CONFIGS = ("/var/lib/kubelet/config.yaml", "/etc/kubernetes/kubelet.conf")
BINARY_DIRS = ["/usr/bin", "/usr/local/bin", "/usr/sbin", "/opt/bin"]
_KUBELET_VERSION_RE = re.compile(r"Kubernetes\s+v?(\d+\.\d+\.\d+\S*)")
_IOMMU_PARAMS = ("intel_iommu", "amd_iommu", "iommu", "iommu.passthrough", "iommu.strict")


def _parse_os_release(text):
    result = {}
    for line in (text or "").splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _sep, value = line.partition("=")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        result[key.strip()] = value
    return result


def gather_os(tree):
    text = tree.read_text("/etc/os-release")
    if text is None:
        text = tree.read_text("/usr/lib/os-release")
    if text is None:
        tree.problem("/etc/os-release", "missing (also /usr/lib/os-release)")
    data = _parse_os_release(text)
    return {"id": data.get("ID"), "version_id": data.get("VERSION_ID"), "pretty_name": data.get("PRETTY_NAME")}


def gather_kernel(tree):
    release = tree.read_value("/proc/sys/kernel/osrelease")
    if release is None and tree.exists("/proc/sys/kernel/osrelease") is False:
        tree.problem("/proc/sys/kernel/osrelease", "missing")
    cmdline = tree.read_value("/proc/cmdline") or ""
    params = {}
    for word in cmdline.split():
        key, _sep, value = word.partition("=")
        if key in _IOMMU_PARAMS:
            params[key] = value
    return {"release": release or None, "iommu_params": params}


def gather_firmware(tree):
    firmware = {}
    for field in DMI_FIELDS:
        firmware[field] = tree.read_value("/sys/class/dmi/id/" + field) or None
    return firmware


def gather_driver(tree):
    path = "/proc/driver/nvidia/version"
    text = tree.read_text(path)
    driver = {"loaded": False, "version": None, "flavor": None, "nvrm": None, "gcc": None, "source": None}
    if text is None:
        return driver
    driver["loaded"] = True
    try:
        parsed = parse_driver_version_file(text)
    except DriverVersionError as exc:
        tree.problem(path, "not an NVIDIA driver version file: %s" % exc)
        return driver
    driver.update(parsed)
    driver["source"] = path
    return driver


def _nvidia_pci_functions(tree):
    """NVIDIA display-class PCI functions from sysfs, keyed by normalized address."""
    base = "/sys/bus/pci/devices"
    found = {}
    for name in tree.listdir(base) or []:
        dev = base + "/" + name
        vendor = tree.read_value(dev + "/vendor")
        if vendor is None or vendor.lower() != NVIDIA_VENDOR:
            continue
        pci_class = (tree.read_value(dev + "/class") or "").lower()
        if not pci_class.startswith(DISPLAY_CLASS_PREFIX):
            continue
        numa = tree.read_value(dev + "/numa_node")
        numa_node = None
        if numa is not None:
            try:
                numa_node = int(numa)
            except ValueError:
                tree.problem(dev + "/numa_node", "not an integer: %r" % numa[:40])
            else:
                numa_node = None if numa_node < 0 else numa_node
        group_link = tree.readlink(dev + "/iommu_group")
        driver_link = tree.readlink(dev + "/driver")
        group = None
        if group_link:
            try:
                group = int(posixpath.basename(group_link))
            except ValueError:
                tree.problem(dev + "/iommu_group", "link target is not a group number: %r" % group_link)
        found[normalize_bdf(name) or name] = {
            "device_id": (tree.read_value(dev + "/device") or "").lower() or None,
            "class": pci_class,
            "numa_node": numa_node,
            "iommu_group": group,
            "kernel_driver": posixpath.basename(driver_link) if driver_link else None,
        }
    return found


def _proc_gpus(tree):
    base = "/proc/driver/nvidia/gpus"
    found = {}
    for name in tree.listdir(base) or []:
        info = parse_gpu_information(tree.read_text(base + "/" + name + "/information"))
        bdf = normalize_bdf(info.get("Bus Location") or name)
        if bdf is None:
            tree.problem(base + "/" + name + "/information", "no usable 'Bus Location'")
            continue
        found[bdf] = {"name": info.get("Model"), "uuid": info.get("GPU UUID")}
    return found


def _query_nvidia_smi(tree, commands):
    result = commands.run("nvidia-smi", nvidia_smi.ARGV)
    status = {"status": "not_run", "mode": commands.mode}
    if result is None:
        status["status"] = "missing"
        return status, []
    rc, out, err = result
    if rc != 0:
        status.update(status="failed", rc=rc, error=(err or out or "").strip()[:500])
        tree.problem("nvidia-smi", "exited %d: %s" % (rc, status["error"]))
        return status, []
    try:
        gpus = nvidia_smi.parse_query_csv(out)
    except nvidia_smi.NvidiaSmiError as exc:
        status.update(status="unparsed", error=str(exc))
        tree.problem("nvidia-smi", "output not understood: %s" % exc)
        return status, []
    status["status"] = "ok"
    return status, gpus


def gather_gpus(tree, commands):
    """Join nvidia-smi, sysfs and procfs by normalized PCI address. Returns (gpus, smi_status)."""
    smi_status, smi_gpus = _query_nvidia_smi(tree, commands)
    sysfs = _nvidia_pci_functions(tree)
    procfs = _proc_gpus(tree)
    by_bdf = {}
    for gpu in smi_gpus:
        if gpu["pci_bus_id"]:
            by_bdf[gpu["pci_bus_id"]] = gpu
        else:
            tree.problem("nvidia-smi", "unrecognised PCI address %r" % gpu["pci_bus_id_raw"])
    gpus = []
    for bdf in sorted(set(by_bdf) | set(sysfs) | set(procfs)):
        smi = by_bdf.get(bdf, {})
        pci = sysfs.get(bdf, {})
        proc = procfs.get(bdf, {})
        sources = [name for name, data in (("nvidia-smi", smi), ("sysfs", pci), ("procfs", proc)) if data]
        gpus.append({
            "pci_bus_id": bdf,
            "device_id": pci.get("device_id") or smi.get("device_id"),
            "name": smi.get("name") or proc.get("name"),
            "uuid": smi.get("uuid") or proc.get("uuid"),
            "index": smi.get("index"),
            "numa_node": pci.get("numa_node"),
            "iommu_group": pci.get("iommu_group"),
            "kernel_driver": pci.get("kernel_driver"),
            "mig_mode": smi.get("mig_mode"),
            "memory_mib": smi.get("memory_mib"),
            "sources": sources,
        })
    return gpus, smi_status


def gather_iommu(tree):
    groups = tree.listdir("/sys/kernel/iommu_groups")
    return {
        "enabled": bool(groups),
        "group_count": len(groups or []),
        "iommufd": tree.exists("/dev/iommu"),
    }


def _parse_toml_file(tree, path):
    text = tree.read_text(path)
    if text is None:
        return None, None
    data, error = containerd_mod.load_toml(text)
    if error:
        tree.problem(path, error)
    return data, error


def _expand_imports(tree, pattern, config_dir):
    if not pattern.startswith("/"):
        pattern = posixpath.join(config_dir, pattern)
    directory, name = posixpath.split(pattern)
    if not any(ch in name for ch in "*?["):
        return [pattern] if tree.exists(pattern) else []
    return [directory + "/" + entry for entry in tree.listdir(directory) or [] if fnmatch.fnmatch(entry, name)]


def gather_containerd(tree, commands, config_path):
    facts = {
        "present": False, "version": None, "config_path": None, "config_version": None,
        "cdi_enabled": None, "cdi_enabled_source": None, "cdi_spec_dirs": [], "nvidia_runtime": None,
        "nvidia_runtime_names": [], "default_runtime_name": None, "imports": [], "config_error": None,
    }
    result = commands.run("containerd-version", containerd_mod.CONTAINERD_VERSION_ARGV)
    if result is not None:
        facts["present"] = True
        rc, out, err = result
        if rc == 0:
            facts["version"] = containerd_mod.parse_containerd_version(out)
            if facts["version"] is None:
                tree.problem("containerd --version", "version not recognised in %r" % (out or "")[:200])
        else:
            tree.problem("containerd --version", "exited %d: %s" % (rc, (err or out or "").strip()[:200]))
    config, error = _parse_toml_file(tree, config_path)
    if config is None and error is None:
        return facts
    facts["present"] = True
    facts["config_path"] = config_path
    if error:
        facts["config_error"] = error
        return facts
    imports = config.get("imports") or []
    if not isinstance(imports, list):
        tree.problem(config_path, "'imports' is not a list")
        imports = []
    merged = config
    loaded = []
    for pattern in imports:
        for path in sorted(_expand_imports(tree, str(pattern), posixpath.dirname(config_path))):
            dropin, dropin_error = _parse_toml_file(tree, path)
            if dropin is not None and not dropin_error:
                merged = containerd_mod.merge_configs(merged, dropin, facts["version"])
                loaded.append(path)
    analysis = containerd_mod.analyse_config(merged, facts["version"])
    for key in ("config_version", "cdi_enabled", "cdi_enabled_source", "cdi_spec_dirs",
                "nvidia_runtime", "nvidia_runtime_names", "default_runtime_name"):
        facts[key] = analysis.get(key)
    facts["imports"] = [{"pattern": str(p)} for p in imports]
    facts["imported_files"] = loaded
    return facts


def gather_cdi(tree, containerd_facts):
    dirs = list(cdi_mod.DEFAULT_SPEC_DIRS)
    for directory in containerd_facts.get("cdi_spec_dirs") or []:
        if directory not in dirs:
            dirs.append(directory)
    specs = []
    for directory in dirs:
        for name in tree.listdir(directory) or []:
            if not cdi_mod.is_cdi_spec_filename(name):
                continue
            path = directory.rstrip("/") + "/" + name
            text = tree.read_text(path)
            if text is None:
                specs.append({"path": path, "cdi_version": None, "kind": None, "devices": [],
                              "error": "unreadable", "loaded_by_runtime": False})
                continue
            spec = cdi_mod.parse_cdi_spec(text, path)
            # The CDI library loads only .json and .yaml: a .yml spec is silently ignored by the runtime.
            spec["loaded_by_runtime"] = cdi_mod.is_cdi_spec_filename(name, loaded_by_cdi_only=True)
            specs.append(spec)
    return {"spec_dirs": dirs, "specs": specs, "invalid_count": sum(1 for s in specs if s.get("error"))}


def gather_kubelet(tree, commands):
    facts = {"present": False, "version": None, "config_paths": []}
    facts["config_paths"] = [p for p in KUBELET_CONFIGS if tree.exists(p)]
    result = commands.run("kubelet-version", KUBELET_ARGV)
    if result is not None:
        facts["present"] = True
        rc, out, err = result
        match = _KUBELET_VERSION_RE.search(out or "") if rc == 0 else None
        if match:
            facts["version"] = match.group(1)
        else:
            tree.problem("kubelet --version", "no version in output (rc %d): %r" % (rc, (out or err or "")[:200]))
    if facts["config_paths"]:
        facts["present"] = True
    return facts


def gather(tree, commands, containerd_config="/etc/containerd/config.toml"):
    """All ``gpu_node`` facts. Never raises for bad node data."""
    containerd = gather_containerd(tree, commands, containerd_config)
    gpus, smi_status = gather_gpus(tree, commands)
    facts = {
        "schema_version": SCHEMA_VERSION,
        "root": tree.root,
        "commands": commands.mode,
        "os": gather_os(tree),
        "kernel": gather_kernel(tree),
        "firmware": gather_firmware(tree),
        "driver": gather_driver(tree),
        "gpus": gpus,
        "gpu_count": len(gpus),
        "nvidia_smi": smi_status,
        "iommu": gather_iommu(tree),
        "cdi": gather_cdi(tree, containerd),
        "containerd": containerd,
        "kubelet": gather_kubelet(tree, commands),
        "python": "%d.%d.%d" % sys.version_info[:3],
    }
    facts["problems"] = list(tree.problems)
    return facts
