# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Build the ``gpu_node`` facts of one node from its files and at most one call per binary.

Input: a :class:`~node_tree.NodeTree` (the node's filesystem below a root prefix) and a command
source (live, recorded or none). Output: the documented ``gpu_node`` dict (docs/node-facts.md).
Nothing here raises on bad node data: everything unreadable or unexpected is a ``problems`` entry.
Standard library only: this runs on GPU nodes.

The containerd config (TOML) and the CDI specs (YAML/JSON) are *not* parsed here: :func:`collect`
returns their raw, size-bounded text beside the facts, and the controller parses it with real
parsers (``node_config.complete``, called by the ``gpu_node_facts`` action plugin), so a Python 3.8
node is assessed exactly like a 3.11 one. To know which files to send, the node scans the config
text for ``imports`` and ``cdi_spec_dirs`` string lists (a superset is fine); the controller checks
the parsed values against what was sent and reports anything the node missed.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import fnmatch
import posixpath
import re
import sys

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node import cdi as cdi_mod
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node import containerd as containerd_mod
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node import tree as node_tree
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node import values as node_values
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.wrappers import nvidia_smi
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node.nvidia_driver import (
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
# Bounds of what the node sends to the controller for parsing.
MAX_CONFIG_BYTES = 1024 * 1024  # one containerd config file or CDI spec
MAX_CONFIG_FILES = 256  # containerd drop-ins plus CDI specs
# Textual scan of containerd's TOML for the file names the controller will need (a superset).
_IMPORTS_RE = re.compile(r"^[ \t]*imports[ \t]*=[ \t]*\[(.*?)\]", re.MULTILINE | re.DOTALL)
_SPEC_DIRS_RE = re.compile(r"cdi_spec_dirs[\"' \t]*=[ \t]*\[(.*?)\]", re.DOTALL)
_TOML_STRING_RE = re.compile(r"\"((?:[^\"\\\n]|\\.)*)\"|'([^'\n]*)'")
_BDF_COMPONENT_RE = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")
# Ranges of the sysfs numbers: NUMA node (-1 is "no NUMA"; Linux has at most 1024 nodes) and IOMMU group.
NUMA_NODE_RANGE = (-1, 4095)
IOMMU_GROUP_RANGE = (0, 2 ** 31 - 1)
#: Characters kept of a one-line text fact (kernel release, DMI field, GPU name); longer is a problem.
MAX_TEXT = 256
_KERNEL_RELEASE_RE = re.compile(r"\A[0-9A-Za-z._+~-]{1,64}\Z")


def _value(tree, path, value_error):
    """The value of a ``(value, error)`` conversion; the error is a problem at ``path``."""
    value, error = value_error
    if error:
        tree.problem(path, error)
    return value


def _text(tree, path, text, field, limit=MAX_TEXT):
    """A one-line text fact: None when absent or empty; too long or with control characters: None and a problem."""
    return _value(tree, path, node_values.text_value(text or None, field, limit))


def _hex_id(tree, path, text, digits):
    """A sysfs PCI id (``0x10de``, ``0x030200``) lower case, None when absent; malformed: None and a problem."""
    if not text:
        return None
    return _value(tree, path, node_values.hex_id(text, posixpath.basename(path), digits))


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
    path = "/proc/sys/kernel/osrelease"
    release = tree.read_value(path)
    if release is None and tree.exists(path) is False:
        tree.problem(path, "missing")
    if release and not _KERNEL_RELEASE_RE.match(release):
        tree.problem(path, "osrelease: %s is not a kernel release" % node_values.quote(release))
        release = None
    cmdline = tree.read_value("/proc/cmdline") or ""
    params = {}
    for word in cmdline.split():
        key, _sep, value = word.partition("=")
        if key in _IOMMU_PARAMS:
            params[key] = _text(tree, "/proc/cmdline", value, key, 64) or ""
    return {"release": release or None, "iommu_params": params}


def gather_firmware(tree):
    firmware = {}
    for field in DMI_FIELDS:
        path = "/sys/class/dmi/id/" + field
        firmware[field] = _text(tree, path, tree.read_value(path), field)
    return firmware


def run_command(tree, commands, name, argv, label):
    """``(rc, stdout, stderr)`` of one command, or None when its binary is absent.

    A command that gave no usable result (deadline passed, output over the bound) returns
    ``(None, "", message)`` and is a ``problems`` entry at ``label`` with the runner's message,
    which names the command and the deadline.
    """
    result = commands.run(name, argv)
    if result is None:
        return None
    rc, out, err = result
    if rc is None:
        tree.problem(label, err or "%s gave no result" % label)
    return rc, out if isinstance(out, str) else "", err if isinstance(err, str) else ""


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
        pci_class = _hex_id(tree, dev + "/class", tree.read_value(dev + "/class"), 6)
        if not pci_class or not pci_class.startswith(DISPLAY_CLASS_PREFIX):
            continue
        numa_node = _numa_node(tree, dev)
        group_link = tree.readlink(dev + "/iommu_group")
        driver_link = tree.readlink(dev + "/driver")
        group = None
        if group_link:
            group, error = node_values.parse_int(posixpath.basename(group_link), "iommu_group", *IOMMU_GROUP_RANGE)
            if error:
                tree.problem(dev + "/iommu_group", "link target is not a group number: %s" % node_values.quote(group_link))
        found[normalize_bdf(name) or name] = {
            "device_id": _hex_id(tree, dev + "/device", tree.read_value(dev + "/device"), 4),
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
        path = base + "/" + name + "/information"
        vbios = _text(tree, path, info.get("Video BIOS"), "Video BIOS", 64)
        found[bdf] = {"name": _text(tree, path, info.get("Model"), "Model"),
                      "uuid": _text(tree, path, info.get("GPU UUID"), "GPU UUID"),
                      "vbios_version": vbios.upper() if vbios and vbios not in ("N/A", "??.??.??.??.??") else None}
    return found


def _query_nvidia_smi(tree, commands):
    result = run_command(tree, commands, "nvidia-smi", nvidia_smi.ARGV, "nvidia-smi")
    status = {"status": "not_run", "mode": commands.mode}
    if result is None:
        status["status"] = "missing"
        return status, []
    rc, out, err = result
    if rc is None:
        timed_out = " timed out " in err
        status.update(status="timed_out" if timed_out else "failed", rc=None, error=err[:500])
        return status, []
    if rc != 0:
        status.update(status="failed", rc=rc, error=(err or out or "").strip()[:500])
        tree.problem("nvidia-smi", "exited %s: %s" % (node_values.quote(rc), status["error"]))
        return status, []
    problems = []
    try:
        gpus = nvidia_smi.parse_query_csv(out, problems)
    except nvidia_smi.NvidiaSmiError as exc:
        status.update(status="unparsed", error=str(exc)[:500])
        tree.problem("nvidia-smi", "output not understood: %s" % status["error"])
        return status, []
    for problem in problems[:20]:
        tree.problem("nvidia-smi", problem)
    if len(problems) > 20:
        tree.problem("nvidia-smi", "%d more values not understood" % (len(problems) - 20))
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
            "vbios_version": smi.get("vbios_version") or proc.get("vbios_version"),
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


def _numa_node(tree, dev):
    """The PCI device's NUMA node from sysfs: an int, or None when absent or -1 (no NUMA); a value
    that is not an integer is a problem entry."""
    numa = tree.read_value(dev + "/numa_node")
    if numa is None:
        return None
    numa_node, error = node_values.parse_int(numa, "numa_node", *NUMA_NODE_RANGE)
    if error:
        tree.problem(dev + "/numa_node", error)
        return None
    return None if numa_node < 0 else numa_node


def _pci_attributes(tree, bdf):
    """numa_node, driver, vendor and device of the PCI function ``bdf`` (sysfs), as the GPUs read them."""
    dev = "/sys/bus/pci/devices/" + bdf
    numa_node = _numa_node(tree, dev)
    driver_link = tree.readlink(dev + "/driver")
    return {
        "numa_node": numa_node,
        "driver": posixpath.basename(driver_link) if driver_link else None,
        "vendor_id": _hex_id(tree, dev + "/vendor", tree.read_value(dev + "/vendor"), 4),
        "device_id": _hex_id(tree, dev + "/device", tree.read_value(dev + "/device"), 4),
    }


def _class_devices(tree, base):
    """``(name, pci_bus_id)`` for each entry of a sysfs class directory that sits on a PCI function.

    The class entry is a link into ``/sys/devices/pci.../<bdf>/.../<name>``; the PCI address is the
    last PCI address in that path (a virtio NIC sits below its PCI function). Entries that are no
    link (a constructed tree may hold the ``device`` link instead) fall back to ``<entry>/device``.
    Virtual devices (lo, bridges, veth) have no PCI address and are left out.
    """
    found = []
    for name in tree.listdir(base) or []:
        target = tree.readlink(base + "/" + name)
        if target is None:
            target = tree.readlink(base + "/" + name + "/device")
        if not target:
            continue
        bdfs = [part for part in target.split("/") if _BDF_COMPONENT_RE.match(part)]
        if bdfs:
            found.append((name, bdfs[-1]))
    return found


def gather_network(tree):
    """NICs (``/sys/class/net``) and RDMA devices (``/sys/class/infiniband``) on PCI functions."""
    nics = []
    for name, bdf in _class_devices(tree, "/sys/class/net"):
        nic = {"name": name, "pci_bus_id": bdf}
        nic.update(_pci_attributes(tree, bdf))
        nics.append(nic)
    rdma = []
    for name, bdf in _class_devices(tree, "/sys/class/infiniband"):
        dev = {"name": name, "pci_bus_id": bdf}
        dev.update(_pci_attributes(tree, bdf))
        dev["net_devices"] = [nic["name"] for nic in nics if nic["pci_bus_id"] == bdf]
        rdma.append(dev)
    return {"nics": nics, "rdma_devices": rdma}


def _toml_strings(regex, text):
    """Plain string literals of every ``key = [...]`` array ``regex`` finds in TOML ``text``."""
    values = []
    for match in regex.finditer(text or ""):
        for basic, literal in _TOML_STRING_RE.findall(match.group(1)):
            value = literal if literal else basic
            if value and "\\" not in value and value not in values:
                values.append(value)
    return values


class _RawFiles(object):
    """Size- and count-bounded raw texts the controller parses: ``{path: {"text", "error"}}``."""

    def __init__(self, tree):
        self.tree = tree
        self.files = {}

    def read(self, path):
        if path in self.files:
            return self.files[path]
        if len(self.files) >= MAX_CONFIG_FILES:
            entry = {"text": None, "error": "more than %d config files; not read" % MAX_CONFIG_FILES}
            self.tree.problem(path, entry["error"])
        else:
            before = len(self.tree.problems)
            text = self.tree.read_text(path, max_bytes=MAX_CONFIG_BYTES)
            new = [p["reason"] for p in self.tree.problems[before:] if p["path"] == path]
            if text is None:
                entry = {"text": None, "error": new[0] if new else "missing"}
            elif u"\ufffd" in text:
                entry = {"text": None, "error": "not valid UTF-8"}
            else:
                entry = {"text": text, "error": None}
        self.files[path] = entry
        return entry


def _expand_imports(tree, pattern, config_dir):
    """The node paths an ``imports`` pattern names: relative to the config's directory, cleaned
    (``..`` stops at ``/``) as containerd does; reading them stays inside the tree's root."""
    try:
        pattern = node_tree.node_path(pattern, config_dir)
    except ValueError as exc:
        tree.problem(pattern[:200], "imports: not read: %s" % exc)
        return []
    directory, name = posixpath.split(pattern)
    if not any(ch in name for ch in "*?["):
        return [pattern] if tree.exists(pattern) else []
    return [directory + "/" + entry for entry in tree.listdir(directory) or [] if fnmatch.fnmatch(entry, name)]


def collect_containerd(tree, commands, config_path, raw_files):
    """containerd facts the node can tell (binary, version, config path) and the raw config texts.

    Returns ``(facts, raw)``; ``raw`` is ``{"config_path", "imports": {pattern: [paths]}}`` and the
    texts are in ``raw_files``. The rest of the facts is filled in by ``node_config.complete``.
    """
    facts = {
        "present": False, "version": None, "config_path": None, "config_version": None,
        "cdi_enabled": None, "cdi_enabled_source": None, "cdi_spec_dirs": [], "nvidia_runtime": None,
        "nvidia_runtime_names": [], "default_runtime_name": None, "imports": [], "imported_files": [],
        "config_error": None,
    }
    try:
        # A relative containerd_config is taken from the node's /; the cleaned path is what is reported.
        config_path = node_tree.node_path(config_path)
    except ValueError as exc:
        tree.problem(str(config_path)[:200], "containerd_config not read: %s" % exc)
        config_path = None
    raw = {"config_path": config_path, "present": False, "imports": {}}
    result = run_command(tree, commands, "containerd-version", containerd_mod.CONTAINERD_VERSION_ARGV, "containerd --version")
    if result is not None:
        facts["present"] = True
        rc, out, err = result
        if rc == 0:
            facts["version"] = containerd_mod.parse_containerd_version(out)
            if facts["version"] is None:
                tree.problem("containerd --version", "version not recognised in %r" % (out or "")[:200])
        elif rc is not None:
            tree.problem("containerd --version", "exited %d: %s" % (rc, (err or out or "").strip()[:200]))
    if config_path is None:
        return facts, raw
    main = raw_files.read(config_path)
    if main["text"] is None and main["error"] == "missing":
        del raw_files.files[config_path]
        return facts, raw
    facts["present"] = True
    facts["config_path"] = config_path
    raw["present"] = True
    config_dir = posixpath.dirname(config_path)
    for pattern in _toml_strings(_IMPORTS_RE, main["text"]):
        paths = sorted(_expand_imports(tree, pattern, config_dir))
        raw["imports"][pattern] = paths
        for path in paths:
            raw_files.read(path)
    return facts, raw


def collect_cdi(tree, raw_files):
    """The CDI spec files of the default dirs and of every ``cdi_spec_dirs`` the config text names.

    Returns ``{"dirs": {dir: [spec file names] or None}}``; the texts are in ``raw_files``.
    """
    dirs = list(cdi_mod.DEFAULT_SPEC_DIRS)
    for entry in list(raw_files.files.values()):
        for directory in _toml_strings(_SPEC_DIRS_RE, entry["text"]):
            if directory.startswith("/") and directory not in dirs:
                dirs.append(directory)
    listed = {}
    for directory in dirs:
        names = tree.listdir(directory)
        if names is None:
            listed[directory] = None
            continue
        names = [name for name in names if cdi_mod.is_cdi_spec_filename(name)]
        listed[directory] = names
        for name in names:
            raw_files.read(directory.rstrip("/") + "/" + name)
    return {"dirs": listed}


def gather_kubelet(tree, commands):
    facts = {"present": False, "version": None, "config_paths": []}
    facts["config_paths"] = [p for p in KUBELET_CONFIGS if tree.exists(p)]
    result = run_command(tree, commands, "kubelet-version", KUBELET_ARGV, "kubelet --version")
    if result is not None:
        facts["present"] = True
        rc, out, err = result
        if rc is None:
            return facts
        match = _KUBELET_VERSION_RE.search(out or "") if rc == 0 else None
        if match:
            facts["version"] = match.group(1)
        else:
            tree.problem("kubelet --version", "no version in output (rc %d): %r" % (rc, (out or err or "")[:200]))
    if facts["config_paths"]:
        facts["present"] = True
    return facts


def collect(tree, commands, containerd_config="/etc/containerd/config.toml"):
    """The node's part of the ``gpu_node`` facts and the raw texts the controller parses.

    Returns ``(facts, raw)``. ``facts`` has every documented key; the containerd config fields and
    ``cdi`` are filled in by ``node_config.complete(facts, raw)`` on the controller. ``raw`` is
    ``{"containerd": ..., "cdi": ..., "files": {path: {"text", "error"}}}``. Never raises for bad
    node data.
    """
    raw_files = _RawFiles(tree)
    containerd, raw_containerd = collect_containerd(tree, commands, containerd_config, raw_files)
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
        "network": gather_network(tree),
        "cdi": {"spec_dirs": [], "specs": [], "invalid_count": 0},
        "containerd": containerd,
        "kubelet": gather_kubelet(tree, commands),
        "python": "%d.%d.%d" % sys.version_info[:3],
    }
    raw_cdi = collect_cdi(tree, raw_files)
    facts["problems"] = list(tree.problems)
    return facts, {"containerd": raw_containerd, "cdi": raw_cdi, "files": raw_files.files}
