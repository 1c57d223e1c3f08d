# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Recorded and constructed GPU node trees (root prefixes for ``gpu_node`` facts).

``h200_tree(dest)`` unpacks the bundle recorded on the real H200 machine. ``build_tree(dest, spec)``
writes a constructed tree of another shape from the real file formats: the templates below are
copied from the H200 recording (tests/fixtures/nodes/h200-vm-raw/) and from public real outputs
(the proprietary driver's version line), with only the values changed. ``materialize(name, dest)``
does either by name (``h200-vm`` or a key of ``shapes()``).

The lab (kubelab.gpunodes) builds its GPU nodes from these; ``tests/node_trees.py`` re-exports
this module for the collection's tests.
"""

from __future__ import annotations

import hashlib
import json
import os
import re

import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(REPO, "tests", "fixtures")
H200_NAME = "h200-vm"
H200_BUNDLE = os.path.join(FIXTURES, "nodes", "h200-vm.tar.gz")
# A second recording (another H200 machine, 2026-12-01) with the VBIOS in the nvidia-smi query and
# the NIC sysfs entries; the first one's nvidia-smi header predates vbios_version.
H200_BUNDLE_20261201 = os.path.join(FIXTURES, "nodes", "h200-vm-20261201.tar.gz")

# Real formats. Open module: the H200 machine's /proc/driver/nvidia/version. Proprietary module:
# the widely published 535.129.03 line ("NVIDIA UNIX x86_64 Kernel Module  <ver>  <date>").
DRIVER_VERSION_OPEN = (
    "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  {version}  Release Build  (dvs-builder@U22-I3-AE18-23-3)  "
    "Wed Apr 29 17:15:53 UTC 2026\nGCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04) \n")
DRIVER_VERSION_PROPRIETARY = (
    "NVRM version: NVIDIA UNIX x86_64 Kernel Module  {version}  Thu Oct 19 18:56:32 UTC 2023\n"
    "GCC version:  gcc version 11.4.0 (Ubuntu 11.4.0-1ubuntu1~22.04) \n")
# The H200 machine's /proc/driver/nvidia/gpus/<bdf>/information, values substituted.
GPU_INFORMATION = (
    "Model: \t\t {name}\nIRQ:   \t\t {irq}\nGPU UUID: \t {uuid}\nVideo BIOS: \t {vbios}\n"
    "Bus Type: \t PCIe\nDMA Size: \t 52 bits\nDMA Mask: \t 0xfffffffffffff\nBus Location: \t {bdf}\n"
    "Device Minor: \t {minor}\nGPU Firmware: \t {version}\nGPU Excluded:\t No\n")
# The H200 machine's nvidia-smi CSV header (nvidia-smi --query-gpu=... --format=csv,nounits), recorded
# before vbios_version was queried, and the header with it (nvidia-smi names each column as queried).
SMI_HEADER_LEGACY = "index, pci.bus_id, pci.device_id, name, uuid, mig.mode.current, memory.total [MiB], driver_version\n"
SMI_HEADER = SMI_HEADER_LEGACY.rstrip("\n") + ", vbios_version\n"
SMI_ARGV = ["/usr/bin/nvidia-smi",
            "--query-gpu=index,pci.bus_id,pci.device_id,name,uuid,mig.mode.current,memory.total,driver_version,vbios_version",
            "--format=csv,nounits"]
# The H200 machine's VBIOS as nvidia-smi -q prints it (procfs prints it in lower case).
VBIOS_VERSION = "96.00.A5.00.1A"
# Real failure text of nvidia-smi when the kernel module is not loaded (exit status 9).
SMI_NO_DRIVER = ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
                 "Make sure that the latest NVIDIA driver is installed and running.\n\n")
OS_RELEASE = 'PRETTY_NAME="{pretty}"\nNAME="{name}"\nVERSION_ID="{version_id}"\nID={id}\n'


def collection_importable() -> None:
    """Make ``ansible_collections.gpufleet.dra_gate`` importable (the checkout's .cache/collections link)."""
    try:
        import ansible_collections.gpufleet.dra_gate.plugins.module_utils  # noqa: F401  pylint: disable=unused-import,import-outside-toplevel
        return
    except ImportError:
        pass
    collections = os.path.join(REPO, ".cache", "collections")
    link = os.path.join(collections, "ansible_collections", "gpufleet", "dra_gate")
    if not os.path.lexists(link):
        os.makedirs(os.path.dirname(link), exist_ok=True)
        try:
            os.symlink(os.path.join(os.pardir, os.pardir, os.pardir, os.pardir), link)
        except FileExistsError:
            pass
    if collections not in sys.path:
        sys.path.insert(0, collections)


def h200_tree(dest, bundle=H200_BUNDLE):
    """Unpack the bundle recorded on the real H200 machine into ``dest``; return ``dest``."""
    collection_importable()
    from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node.bundle import extract_bundle  # pylint: disable=import-outside-toplevel
    extract_bundle(bundle, str(dest))
    return str(dest)


def _write(root, path, text, mode=0o644):
    full = os.path.join(root, path.lstrip("/"))
    if not os.path.isdir(os.path.dirname(full)):
        os.makedirs(os.path.dirname(full))
    with open(full, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.chmod(full, mode)
    return full


def _link(root, path, target):
    full = os.path.join(root, path.lstrip("/"))
    if not os.path.isdir(os.path.dirname(full)):
        os.makedirs(os.path.dirname(full))
    os.symlink(target, full)


def _command(root, name, argv, rc, stdout, stderr=""):
    _write(root, "/.gpufleet/commands/%s.json" % name,
           json.dumps({"argv": argv, "rc": rc, "stdout": stdout, "stderr": stderr}, indent=2))


def gpu(bdf, numa=None, iommu_group=None, kernel_driver="nvidia", name="NVIDIA H200", device="0x2335",
        uuid=None, mig="Disabled", memory=143771, vbios=VBIOS_VERSION):
    """One GPU of a constructed tree (defaults: the H200 machine's GPU)."""
    return {"bdf": bdf, "numa": numa, "iommu_group": iommu_group, "kernel_driver": kernel_driver,
            "name": name, "device": device, "mig": mig, "memory": memory, "vbios": vbios,
            "uuid": uuid or "GPU-f06f0ae7-4822-3c65-0972-%s" % hashlib.sha256(bdf.encode("utf-8")).hexdigest()[:12]}


def build_tree(root, spec):
    """Write a node tree described by ``spec`` (see the shapes below) under ``root``."""
    root = str(root)
    os_id, version_id, pretty = spec.get("os", ("ubuntu", "24.04", "Ubuntu 24.04.3 LTS"))
    _write(root, "/etc/os-release", OS_RELEASE.format(pretty=pretty, name=os_id.title(), version_id=version_id, id=os_id))
    _write(root, "/proc/sys/kernel/osrelease", spec.get("kernel", "6.8.0-45-generic") + "\n")
    _write(root, "/proc/cmdline", spec.get("cmdline", "BOOT_IMAGE=/vmlinuz ro quiet") + "\n")
    for field, value in (spec.get("dmi") or {}).items():
        _write(root, "/sys/class/dmi/id/" + field, value + "\n")
    version = spec.get("driver_version", "580.173.02")
    flavor = spec.get("driver", "open")
    if flavor:
        template = DRIVER_VERSION_OPEN if flavor == "open" else DRIVER_VERSION_PROPRIETARY
        text = spec["driver_version_text"] if "driver_version_text" in spec else template.format(version=version)
        _write(root, "/proc/driver/nvidia/version", text)
    os.makedirs(os.path.join(root, "sys/bus/pci/devices"))
    for number, bdf in enumerate(spec.get("other_pci", ["0000:00:00.0", "0000:00:01.0"])):
        _write(root, "/sys/bus/pci/devices/%s/vendor" % bdf, "0x8086\n")
        _write(root, "/sys/bus/pci/devices/%s/class" % bdf, "0x060000\n")
    groups = spec.get("iommu_groups", 0)
    os.makedirs(os.path.join(root, "sys/kernel/iommu_groups"))
    for group in range(groups):
        os.makedirs(os.path.join(root, "sys/kernel/iommu_groups/%d/devices" % group))
    if spec.get("iommufd"):
        _write(root, "/dev/iommu", "")
    smi_rows = []
    for minor, item in enumerate(spec.get("gpus", [])):
        dev = "/sys/bus/pci/devices/" + item["bdf"]
        _write(root, dev + "/vendor", "0x10de\n")
        _write(root, dev + "/device", item["device"] + "\n")
        _write(root, dev + "/class", "0x030200\n")
        _write(root, dev + "/numa_node", "%d\n" % (-1 if item["numa"] is None else item["numa"]))
        if item["kernel_driver"]:
            _link(root, dev + "/driver", "../../../bus/pci/drivers/" + item["kernel_driver"])
        if item["iommu_group"] is not None:
            _link(root, dev + "/iommu_group", "../../../../kernel/iommu_groups/%d" % item["iommu_group"])
        if item["kernel_driver"] == "nvidia" and flavor:
            _write(root, "/proc/driver/nvidia/gpus/%s/information" % item["bdf"], GPU_INFORMATION.format(
                name=item["name"], irq=40 + minor, uuid=item["uuid"], bdf=item["bdf"], minor=minor, version=version,
                vbios=item["vbios"].lower()))
            smi_rows.append("%d, 0000%s, %s10DE, %s, %s, %s, %s, %s, %s\n" % (
                len(smi_rows), item["bdf"].upper(), item["device"].upper().replace("0X", "0x"), item["name"],
                item["uuid"], item["mig"], item["memory"], version, item["vbios"]))
    smi = spec.get("smi", "ok")
    if smi == "ok" and flavor:
        _command(root, "nvidia-smi", SMI_ARGV, 0, SMI_HEADER + "".join(smi_rows))
    elif smi == "fail":
        _command(root, "nvidia-smi", SMI_ARGV, 9, SMI_NO_DRIVER)
    elif smi == "columns":
        _command(root, "nvidia-smi", SMI_ARGV, 0, "index, name\n0, NVIDIA H200\n")
    for nic in spec.get("nics") or []:
        _network_device(root, nic)
    for path, text in (spec.get("files") or {}).items():
        _write(root, path, text)
    if spec.get("containerd_version"):
        _command(root, "containerd-version", ["/usr/bin/containerd", "--version"], 0, spec["containerd_version"] + "\n")
    if spec.get("kubelet_version"):
        _command(root, "kubelet-version", ["/usr/bin/kubelet", "--version"], 0, "Kubernetes %s\n" % spec["kubelet_version"])
        _write(root, "/var/lib/kubelet/config.yaml", kubelet_config(spec.get("kubelet_feature_gates", DRA_KUBELET_GATES)))
    if spec.get("control_plane"):
        control_plane_files(root, **spec["control_plane"])
    return root


# The kubelet's and the control plane's DRA gates of a constructed 1.37 DRA canary: the GA gates are
# on by default; the beta ones a DRA node relies on are set explicitly, as clusters pin them.
DRA_KUBELET_GATES = {"DRAExtendedResource": True, "DRAConsumableCapacity": True, "ResourceHealthStatus": True}
DRA_CONTROL_PLANE_GATES = {"DRAExtendedResource": True, "DRAConsumableCapacity": True}
CONTROL_PLANE_COMPONENTS = ("kube-apiserver", "kube-scheduler", "kube-controller-manager")
_FEATURE_GATES_LINE = re.compile(r"^    - --feature-gates=.*\n", re.MULTILINE)


def _gates_text(gates):
    return ",".join("%s=%s" % (name, "true" if on else "false") for name, on in sorted(gates.items()))


def kubelet_config(feature_gates):
    """The kubelet config kubeadm writes (tests/fixtures/k8s_components/kubelet-config.yaml) with ``featureGates``."""
    text = fixture_text("k8s_components", "kubelet-config.yaml")
    block = "featureGates:\n" + "".join("  %s: %s\n" % (n, "true" if on else "false") for n, on in sorted(feature_gates.items()))
    return re.sub(r"^featureGates:\n(?:  .*\n)*", block if feature_gates else "", text, flags=re.MULTILINE)


def static_pod_manifest(component, version="v1.37.0", feature_gates=None, runtime_config=None):
    """A kubeadm static pod manifest (the fixtures' real format) with one ``--feature-gates`` flag."""
    text = fixture_text("k8s_components", component + ".yaml")
    text = _FEATURE_GATES_LINE.sub("", text)
    first = "    - %s\n" % component
    if feature_gates:
        text = text.replace(first, first + "    - --feature-gates=%s\n" % _gates_text(feature_gates), 1)
    if runtime_config is not None:
        value = ",".join("%s=%s" % item for item in sorted(runtime_config.items()))
        text = re.sub(r"^    - --runtime-config=.*\n", "    - --runtime-config=%s\n" % value if value else "", text, flags=re.MULTILINE)
    return text.replace(":v1.37.0\n", ":%s\n" % version)


def control_plane_files(root, version="v1.37.0", feature_gates=None, runtime_config=None,
                        manifests_dir="/etc/kubernetes/manifests"):
    """Write the static pod manifests of kube-apiserver, kube-scheduler and kube-controller-manager."""
    gates = DRA_CONTROL_PLANE_GATES if feature_gates is None else feature_gates
    for component in CONTROL_PLANE_COMPONENTS:
        _write(root, "%s/%s.yaml" % (manifests_dir.rstrip("/"), component), static_pod_manifest(
            component, version, gates, runtime_config if component == "kube-apiserver" else None), mode=0o600)
    return root


def nic(name, bdf, numa=None, driver="mlx5_core", vendor="0x15b3", device="0x1021", rdma=None, virtio=None):
    """One network device of a constructed tree: a NIC on PCI function ``bdf`` and, with ``rdma``,
    the RDMA device of the same function (an mlx5 ConnectX-7 by default)."""
    return {"name": name, "bdf": bdf, "numa": numa, "driver": driver, "vendor": vendor, "device": device,
            "rdma": rdma, "virtio": virtio}


def _network_device(root, item):
    """Write a NIC the way sysfs shows it: ``/sys/class/net/<name>`` is a link into
    ``/sys/devices/pci<domain>:<bus>/<bdf>/[virtioN/]net/<name>``, the PCI function's attributes
    are in ``/sys/bus/pci/devices/<bdf>`` and an RDMA device is ``/sys/class/infiniband/<dev>``."""
    bdf = item["bdf"]
    parent = "devices/pci%s/%s" % (bdf[:7], bdf) + ("/%s" % item["virtio"] if item["virtio"] else "")
    _write(root, "/sys/%s/net/%s/address" % (parent, item["name"]), "02:00:00:00:00:01\n")
    _link(root, "/sys/class/net/" + item["name"], "../../%s/net/%s" % (parent, item["name"]))
    dev = "/sys/bus/pci/devices/" + bdf
    if not os.path.isdir(os.path.join(root, dev.lstrip("/"))):
        _write(root, dev + "/vendor", item["vendor"] + "\n")
        _write(root, dev + "/device", item["device"] + "\n")
        _write(root, dev + "/class", "0x020000\n")
        _write(root, dev + "/numa_node", "%d\n" % (-1 if item["numa"] is None else item["numa"]))
        if item["driver"]:
            _link(root, dev + "/driver", "../../../bus/pci/drivers/" + item["driver"])
    if item["rdma"]:
        _write(root, "/sys/devices/pci%s/%s/infiniband/%s/node_type" % (bdf[:7], bdf, item["rdma"]), "1: CA\n")
        _link(root, "/sys/class/infiniband/" + item["rdma"], "../../devices/pci%s/%s/infiniband/%s" % (bdf[:7], bdf, item["rdma"]))


def fixture_text(*parts):
    with open(os.path.join(FIXTURES, *parts), encoding="utf-8") as handle:
        return handle.read()


def _two_numa_gpus():
    return [gpu("0000:%02x:00.0" % bus, numa=0 if index < 4 else 1, iommu_group=20 + index)
            for index, bus in enumerate((0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb))]


def shapes():
    """Named specs of the shapes the H200 machine lacks."""
    return {
        # 8 GPUs on two NUMA nodes, IOMMU on, containerd 2.3 config v3 (CDI on by default),
        # a valid nvidia-ctk spec in /var/run/cdi and a broken one in /etc/cdi, kubelet 1.36.
        "hgx-8gpu-2numa": {
            "os": ("ubuntu", "22.04", "Ubuntu 22.04.5 LTS"), "kernel": "5.15.0-126-generic",
            "cmdline": "BOOT_IMAGE=/vmlinuz-5.15.0-126-generic ro intel_iommu=on iommu=pt",
            "dmi": {"bios_vendor": "American Megatrends International, LLC.", "bios_version": "1.6b",
                    "sys_vendor": "Supermicro", "product_name": "SYS-821GE-TNHR"},
            "driver": "open", "driver_version": "580.173.02", "gpus": _two_numa_gpus(),
            "iommu_groups": 64, "iommufd": True,
            "containerd_version": "containerd github.com/containerd/containerd/v2 v2.3.1 3f5c8c8d4b8e1f6c0e5f7a9b2d4c6e8f0a1b3c5d",
            "files": {
                "/etc/containerd/config.toml": fixture_text("containerd", "containerd-2.x-v3-cdi-implicit.toml"),
                "/var/run/cdi/nvidia.yaml": fixture_text("cdi", "nvidia-ctk-0.5.0.yaml"),
                "/etc/cdi/broken.yaml": fixture_text("cdi", "broken", "invalid-yaml.yaml.broken"),
            },
            "kubelet_version": "v1.36.4",
            # One ConnectX-7 (NIC + RDMA) per NUMA node beside the GPUs, and the board's management NIC.
            "nics": [nic("ens1np0", "0000:1a:00.0", numa=0, rdma="mlx5_0"),
                     nic("ens2np0", "0000:9c:00.0", numa=1, rdma="mlx5_1"),
                     nic("eno1", "0000:03:00.0", numa=0, driver="igb", vendor="0x8086", device="0x1533")],
        },
        # The most common GPU node image: Ubuntu 22.04 (Python 3.10, no tomli), containerd 2.3 with a
        # config v3 that enables CDI and imports the nvidia-ctk drop-in, the nvidia-ctk spec in YAML.
        "ubuntu2204-containerd2-cdi": {
            "os": ("ubuntu", "22.04", "Ubuntu 22.04.5 LTS"), "kernel": "5.15.0-126-generic",
            "cmdline": "BOOT_IMAGE=/vmlinuz-5.15.0-126-generic ro intel_iommu=on iommu=pt",
            "driver": "open", "driver_version": "580.173.02",
            "gpus": [gpu("0000:18:00.0", numa=0, iommu_group=20), gpu("0000:9a:00.0", numa=1, iommu_group=40)],
            "iommu_groups": 48, "iommufd": True,
            "containerd_version": "containerd github.com/containerd/containerd/v2 v2.3.1 3f5c8c8d4b8e1f6c0e5f7a9b2d4c6e8f0a1b3c5d",
            "files": {
                "/etc/containerd/config.toml": fixture_text("containerd", "containerd-2.x-v3-imports.toml"),
                "/etc/containerd/conf.d/v3-99-nvidia.toml": fixture_text("containerd", "conf.d", "v3-99-nvidia.toml"),
                "/var/run/cdi/nvidia.yaml": fixture_text("cdi", "nvidia-ctk-0.5.0.yaml"),
                "/etc/cdi/nvidia.yml": fixture_text("cdi", "nvidia-ctk-0.5.0.yaml"),
            },
            "kubelet_version": "v1.36.4",
            "nics": [nic("ens1np0", "0000:1a:00.0", numa=0, rdma="mlx5_0")],
        },
        # Two GPUs, one bound to vfio-pci for passthrough; IOMMU on with iommufd.
        "vfio-passthrough": {
            "cmdline": "BOOT_IMAGE=/vmlinuz ro intel_iommu=on iommu=pt",
            "driver": "open", "driver_version": "595.91.07",
            "gpus": [gpu("0000:17:00.0", numa=0, iommu_group=12),
                     gpu("0000:65:00.0", numa=0, iommu_group=13, kernel_driver="vfio-pci")],
            "iommu_groups": 40, "iommufd": True,
            "containerd_version": "containerd github.com/containerd/containerd/v2 v2.3.1 3f5c8c8d4b8e1f6c0e5f7a9b2d4c6e8f0a1b3c5d",
            "files": {"/etc/containerd/config.toml": fixture_text("containerd", "containerd-2.x-v3-cdi-implicit.toml")},
            "kubelet_version": "v1.37.0",
        },
        # One H100 with MIG enabled and the nvidia-ctk MIG spec.
        "mig-h100": {
            "driver": "proprietary", "driver_version": "580.173.02",
            "gpus": [gpu("0000:3b:00.0", numa=0, name="NVIDIA H100 80GB HBM3", device="0x2330", mig="Enabled", memory=81559)],
            "containerd_version": "containerd github.com/containerd/containerd/v2 v2.3.1 3f5c8c8d4b8e1f6c0e5f7a9b2d4c6e8f0a1b3c5d",
            "files": {"/etc/containerd/config.toml": fixture_text("containerd", "containerd-2.x-v3-cdi-implicit.toml"),
                      "/var/run/cdi/nvidia.yaml": fixture_text("cdi", "nvidia-ctk-mig.yaml")},
            "kubelet_version": "v1.37.0",
        },
        # containerd 1.7 with a config v2 and the nvidia runtime; proprietary driver 535.
        "containerd17-v2": {
            "os": ("rhel", "9.4", "Red Hat Enterprise Linux 9.4 (Plow)"), "kernel": "5.14.0-427.13.1.el9_4.x86_64",
            "driver": "proprietary", "driver_version": "535.309.01",
            "gpus": [gpu("0000:ca:00.0", numa=1, name="NVIDIA A100-SXM4-80GB", device="0x20b2", memory=81920)],
            "containerd_version": "containerd containerd.io 1.7.27 05044ec0a9a75232cad458027ca83437aae3f4da",
            "files": {"/etc/containerd/config.toml": fixture_text("containerd", "containerd-1.7-v2-nvidia-cdi.toml")},
            "kubelet_version": "v1.33.5",
        },
        # A node where nvidia-smi fails: facts fall back to sysfs and procfs.
        "smi-fails": {"driver": "open", "gpus": [gpu("0000:17:00.0", numa=0)], "smi": "fail"},
        # nvidia-smi prints other columns than asked for.
        "smi-columns": {"driver": "open", "gpus": [gpu("0000:17:00.0", numa=0)], "smi": "columns"},
        # No GPU, no driver (a new user's laptop or CI machine).
        "no-gpu": {"driver": None, "gpus": [], "smi": "none"},
        # A kubeadm control-plane host of a 1.37 DRA canary: the static pod manifests of kube-apiserver,
        # kube-scheduler and kube-controller-manager with the canary's --feature-gates, and a kubelet.
        "control-plane-1.37": {"driver": None, "gpus": [], "smi": "none", "kubelet_version": "v1.37.0",
                               "control_plane": {"version": "v1.37.0"}},
    }


def tree_names() -> list:
    """Every name ``materialize`` accepts: the recorded H200 tree and the constructed shapes."""
    return [H200_NAME] + sorted(shapes())


def materialize(name: str, dest) -> str:
    """Write the tree called ``name`` (``h200-vm`` or a key of ``shapes()``) under ``dest``; return ``dest``."""
    if name == H200_NAME:
        return h200_tree(dest)
    known = shapes()
    if name not in known:
        raise KeyError("unknown node tree %r (known: %s)" % (name, ", ".join(tree_names())))
    return build_tree(dest, known[name])
