# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpu_node facts from the tree recorded on the real H200 machine and from constructed shapes."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

import pytest

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node.config import gather
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node.bundle import extract_bundle, write_bundle
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node.tree import (
    LiveCommands,
    NoCommands,
    NodeTree,
    RecordedCommands,
)

import node_trees


# Facts added after the H200 recording of 2026-11-30 (facts.out, preflight-record.json lack them).
NEW_GPU_KEYS = ("vbios_version",)


def as_recorded(gpus):
    return [dict((k, v) for k, v in g.items() if k not in NEW_GPU_KEYS) for g in gpus]


def facts_of(root, commands="recorded"):
    tree = NodeTree(str(root))
    source = RecordedCommands(tree) if commands == "recorded" else NoCommands()
    return gather(tree, source)


@pytest.fixture(scope="module")
def h200(tmp_path_factory):
    return facts_of(node_trees.h200_tree(tmp_path_factory.mktemp("h200")))


def test_h200_driver_gpu_and_address(h200):
    assert h200["driver"]["loaded"] is True
    assert h200["driver"]["version"] == "580.159.04"
    assert h200["driver"]["flavor"] == "open"
    assert h200["gpu_count"] == 1
    gpu = h200["gpus"][0]
    # nvidia-smi printed 00000000:00:06.0; the facts use the 4-digit domain form of sysfs.
    assert gpu["pci_bus_id"] == "0000:00:06.0"
    assert gpu["device_id"] == "0x2335"
    assert gpu["name"] == "NVIDIA H200"
    assert gpu["uuid"] == "GPU-f06f0ae7-4822-3c65-0972-1d839772e142"
    assert gpu["memory_mib"] == 143771
    assert gpu["mig_mode"] == "disabled"
    assert gpu["kernel_driver"] == "nvidia"
    assert sorted(gpu["sources"]) == ["nvidia-smi", "procfs", "sysfs"]


def test_h200_what_it_lacks(h200):
    gpu = h200["gpus"][0]
    assert gpu["numa_node"] is None  # sysfs says -1 in the VM
    assert gpu["iommu_group"] is None
    assert h200["iommu"] == {"enabled": False, "group_count": 0, "iommufd": False}
    assert h200["cdi"]["specs"] == []
    assert h200["containerd"]["present"] is False
    assert h200["kubelet"]["present"] is False
    assert h200["firmware"]["bios_vendor"] is None  # Firecracker exposes no DMI
    assert h200["os"] == {"id": "ubuntu", "version_id": "24.04", "pretty_name": "Ubuntu 24.04.3 LTS"}
    assert h200["kernel"]["release"] == "6.18.44-fc-v657-gpu"
    assert h200["problems"] == []


def test_h200_matches_what_the_module_returned_on_the_machine(h200):
    """The facts from the recorded tree equal those the module returned live on the H200."""
    raw = os.path.join(node_trees.FIXTURES, "nodes", "h200-vm-raw", "facts.out")
    with open(raw) as handle:
        text = handle.read()
    live = json.loads(text[text.index("{"):])["ansible_facts"]["gpu_node"]
    for key in ("os", "kernel", "driver", "iommu", "cdi", "kubelet"):
        assert h200[key] == live[key], key
    assert as_recorded(h200["gpus"]) == live["gpus"]


def test_h200_vbios_from_procfs_when_the_recorded_nvidia_smi_lacks_it(h200):
    """The recording's nvidia-smi header predates vbios_version: still parsed (status ok), and the
    VBIOS comes from /proc/driver/nvidia/gpus/*/information ("Video BIOS: 96.00.a5.00.1a"), in
    the upper case nvidia-smi -q printed on the same machine (smi-q.txt: 96.00.A5.00.1A)."""
    assert h200["nvidia_smi"]["status"] == "ok"
    assert h200["gpus"][0]["vbios_version"] == "96.00.A5.00.1A"
    with open(os.path.join(node_trees.FIXTURES, "nodes", "h200-vm-raw", "smi-q.txt")) as handle:
        assert "VBIOS Version                                      : 96.00.A5.00.1A" in handle.read()
    assert h200["network"] == {"nics": [], "rdma_devices": []}  # the recording read no /sys/class/net


RAW_20261201 = os.path.join(node_trees.FIXTURES, "nodes", "h200-vm-20261201-raw")


def module_output(path):
    with open(path) as handle:
        text = handle.read()
    return json.loads(text[text.index("{"):])


@pytest.fixture(scope="module")
def h200_20261201(tmp_path_factory):
    return facts_of(node_trees.h200_tree(tmp_path_factory.mktemp("h200b"), node_trees.H200_BUNDLE_20261201))


def test_second_h200_recording_replays_exactly_what_the_module_returned_there(h200_20261201):
    """Recorded with vbios_version in the query and the NIC sysfs reads: every key replays equal
    (the action plugin's output there, facts.out, and the bundle's returned gpu_node)."""
    live = module_output(os.path.join(RAW_20261201, "facts.out"))["ansible_facts"]["gpu_node"]
    bundled = module_output(os.path.join(RAW_20261201, "bundle.out"))["gpu_node"]
    for key in live:
        if key not in ("root", "commands", "python", "nvidia_smi"):
            assert h200_20261201[key] == live[key], key
            assert bundled[key] == live[key], key
    assert h200_20261201["nvidia_smi"] == dict(live["nvidia_smi"], mode="recorded")
    assert "gpu_node_raw" not in module_output(os.path.join(RAW_20261201, "facts.out"))


def test_second_h200_recording_vbios_and_nic_from_the_real_machine(h200_20261201):
    gpu = h200_20261201["gpus"][0]
    assert h200_20261201["nvidia_smi"]["status"] == "ok"
    assert gpu["vbios_version"] == "96.00.A5.00.1A"  # nvidia-smi's column, as smi-q.txt says too
    with open(os.path.join(RAW_20261201, "smi-query-vbios.csv")) as handle:
        assert handle.read().splitlines()[0].endswith(", vbios_version")
    with open(os.path.join(RAW_20261201, "smi-q.txt")) as handle:
        assert "VBIOS Version                                      : 96.00.A5.00.1A" in handle.read()
    # sysfs-net.txt: eth0 -> ../../devices/pci0000:00/0000:00:03.0/virtio2/net/eth0; lo, ifb0, ifb1 virtual.
    assert h200_20261201["network"] == {"nics": [{"name": "eth0", "pci_bus_id": "0000:00:03.0", "numa_node": None,
                                                  "driver": "virtio-pci", "vendor_id": "0x1af4", "device_id": "0x1041"}],
                                        "rdma_devices": []}
    with open(os.path.join(RAW_20261201, "sysfs-net.txt")) as handle:
        assert "eth0 -> ../../devices/pci0000:00/0000:00:03.0/virtio2/net/eth0" in handle.read()
    assert h200_20261201["driver"]["version"] == "580.159.04"
    assert h200_20261201["problems"] == []


def test_both_h200_recordings_agree_on_the_gpu_but_its_uuid(h200, h200_20261201):
    assert [dict(g, uuid=None) for g in h200["gpus"]] == [dict(g, uuid=None) for g in h200_20261201["gpus"]]
    assert h200["gpus"][0]["uuid"] != h200_20261201["gpus"][0]["uuid"]


@pytest.fixture(scope="module")
def shapes(tmp_path_factory):
    built = {}
    for name, spec in node_trees.shapes().items():
        built[name] = facts_of(node_trees.build_tree(tmp_path_factory.mktemp(name), spec))
    return built


def test_eight_gpus_on_two_numa_nodes(shapes):
    facts = shapes["hgx-8gpu-2numa"]
    assert facts["gpu_count"] == 8
    assert [g["numa_node"] for g in facts["gpus"]] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert [g["iommu_group"] for g in facts["gpus"]] == list(range(20, 28))
    assert facts["iommu"] == {"enabled": True, "group_count": 64, "iommufd": True}
    assert facts["kernel"]["iommu_params"] == {"intel_iommu": "on", "iommu": "pt"}
    assert facts["firmware"]["sys_vendor"] == "Supermicro"
    assert facts["kubelet"] == {"present": True, "version": "1.36.4", "config_paths": ["/var/lib/kubelet/config.yaml"]}
    assert {g["vbios_version"] for g in facts["gpus"]} == {"96.00.A5.00.1A"}  # from nvidia-smi's vbios_version


def test_network_devices_with_pci_address_numa_and_driver(shapes):
    network = shapes["hgx-8gpu-2numa"]["network"]
    assert network["nics"] == [
        {"name": "eno1", "pci_bus_id": "0000:03:00.0", "numa_node": 0, "driver": "igb", "vendor_id": "0x8086", "device_id": "0x1533"},
        {"name": "ens1np0", "pci_bus_id": "0000:1a:00.0", "numa_node": 0, "driver": "mlx5_core", "vendor_id": "0x15b3", "device_id": "0x1021"},
        {"name": "ens2np0", "pci_bus_id": "0000:9c:00.0", "numa_node": 1, "driver": "mlx5_core", "vendor_id": "0x15b3", "device_id": "0x1021"},
    ]
    assert [(d["name"], d["pci_bus_id"], d["numa_node"], d["driver"], d["net_devices"]) for d in network["rdma_devices"]] == [
        ("mlx5_0", "0000:1a:00.0", 0, "mlx5_core", ["ens1np0"]),
        ("mlx5_1", "0000:9c:00.0", 1, "mlx5_core", ["ens2np0"]),
    ]


def test_virtio_nic_below_its_pci_function_and_virtual_interfaces_left_out(tmp_path):
    spec = dict(node_trees.shapes()["no-gpu"], nics=[node_trees.nic("eth0", "0000:00:05.0", driver="virtio-pci",
                                                                    vendor="0x1af4", device="0x1041", virtio="virtio1")])
    root = node_trees.build_tree(tmp_path, spec)
    os.makedirs(os.path.join(root, "sys/devices/virtual/net/lo"))
    os.symlink("../../devices/virtual/net/lo", os.path.join(root, "sys/class/net/lo"))
    facts = facts_of(root)
    assert facts["network"]["nics"] == [{"name": "eth0", "pci_bus_id": "0000:00:05.0", "numa_node": None,
                                         "driver": "virtio-pci", "vendor_id": "0x1af4", "device_id": "0x1041"}]
    assert facts["problems"] == []


def test_cdi_specs_valid_and_broken_reported_per_file(shapes):
    cdi = shapes["hgx-8gpu-2numa"]["cdi"]
    by_path = {s["path"]: s for s in cdi["specs"]}
    assert set(by_path) == {"/etc/cdi/broken.yaml", "/var/run/cdi/nvidia.yaml"}
    good = by_path["/var/run/cdi/nvidia.yaml"]
    assert good["error"] is None
    assert good["cdi_version"] == "0.5.0"
    assert good["kind"] == "nvidia.com/gpu"
    assert "all" in good["devices"] and "0" in good["devices"]
    assert by_path["/etc/cdi/broken.yaml"]["error"]
    assert cdi["invalid_count"] == 1


def test_containerd_2x_config_v3_cdi_default_on(shapes):
    ctr = shapes["hgx-8gpu-2numa"]["containerd"]
    assert ctr["version"] == "2.3.1"
    assert ctr["config_version"] == 3
    assert ctr["cdi_enabled"] is True
    assert ctr["cdi_enabled_source"] == "default"


def test_containerd_17_config_v2_with_nvidia_runtime(shapes):
    facts = shapes["containerd17-v2"]
    ctr = facts["containerd"]
    assert ctr["version"] == "1.7.27"
    assert ctr["config_version"] == 2
    assert ctr["nvidia_runtime"] is True
    assert ctr["cdi_enabled"] is True and ctr["cdi_enabled_source"] == "config"
    assert facts["driver"]["flavor"] == "proprietary"
    assert facts["driver"]["version"] == "535.309.01"
    assert facts["gpus"][0]["numa_node"] == 1


def test_vfio_bound_gpu(shapes):
    facts = shapes["vfio-passthrough"]
    by_bdf = {g["pci_bus_id"]: g for g in facts["gpus"]}
    assert by_bdf["0000:65:00.0"]["kernel_driver"] == "vfio-pci"
    assert by_bdf["0000:65:00.0"]["sources"] == ["sysfs"]  # invisible to nvidia-smi and procfs
    assert by_bdf["0000:17:00.0"]["kernel_driver"] == "nvidia"
    assert facts["iommu"]["iommufd"] is True


def test_mig_enabled(shapes):
    facts = shapes["mig-h100"]
    assert facts["gpus"][0]["mig_mode"] == "enabled"
    assert facts["gpus"][0]["name"] == "NVIDIA H100 80GB HBM3"
    spec = facts["cdi"]["specs"][0]
    assert "0:0" in spec["devices"] and spec["error"] is None


def test_nvidia_smi_failure_falls_back_to_sysfs_and_procfs(shapes):
    facts = shapes["smi-fails"]
    assert facts["nvidia_smi"]["status"] == "failed"
    assert facts["gpu_count"] == 1
    gpu = facts["gpus"][0]
    assert gpu["name"] == "NVIDIA H200" and gpu["uuid"].startswith("GPU-")
    assert gpu["sources"] == ["sysfs", "procfs"]
    assert gpu["mig_mode"] is None and gpu["memory_mib"] is None
    assert any(p["path"] == "nvidia-smi" and "exited 9" in p["reason"] for p in facts["problems"])


def test_nvidia_smi_unexpected_columns_is_a_problem_not_a_misread(shapes):
    facts = shapes["smi-columns"]
    assert facts["nvidia_smi"]["status"] == "unparsed"
    assert facts["gpus"][0]["name"] == "NVIDIA H200"  # from procfs
    assert any("unexpected columns" in p["reason"] for p in facts["problems"])


def test_no_gpu_node(shapes):
    facts = shapes["no-gpu"]
    assert facts["driver"]["loaded"] is False
    assert facts["gpus"] == []
    assert facts["nvidia_smi"]["status"] == "missing"


@pytest.mark.parametrize("text", [
    "",
    "garbage\x00\x01",
    "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64",  # truncated before the version
    "NVRM vers",
])
def test_bad_driver_version_file_is_a_problem(tmp_path, text):
    spec = dict(node_trees.shapes()["smi-fails"], driver_version_text=text)
    facts = facts_of(node_trees.build_tree(tmp_path, spec))
    assert facts["driver"]["loaded"] is True
    assert facts["driver"]["version"] is None
    assert any(p["path"] == "/proc/driver/nvidia/version" for p in facts["problems"])


def test_unreadable_sysfs_file_is_a_problem(tmp_path):
    if os.geteuid() == 0:
        # root reads mode-000 files; a directory in place of the file gives an error for anyone.
        root = node_trees.build_tree(tmp_path, node_trees.shapes()["smi-fails"])
        path = os.path.join(root, "sys/bus/pci/devices/0000:17:00.0/numa_node")
        os.unlink(path)
        os.mkdir(path)
    else:
        root = node_trees.build_tree(tmp_path, node_trees.shapes()["smi-fails"])
        os.chmod(os.path.join(root, "sys/bus/pci/devices/0000:17:00.0/numa_node"), 0)
    facts = facts_of(root)
    assert facts["gpus"][0]["numa_node"] is None
    assert any(p["path"] == "/sys/bus/pci/devices/0000:17:00.0/numa_node" for p in facts["problems"])


def test_containerd_toml_syntax_error_is_reported(tmp_path):
    spec = dict(node_trees.shapes()["no-gpu"], containerd_version="containerd github.com/containerd/containerd v1.7.27 05044ec",
                files={"/etc/containerd/config.toml": node_trees.fixture_text("containerd", "broken-syntax.toml")})
    facts = facts_of(node_trees.build_tree(tmp_path, spec))
    assert facts["containerd"]["config_error"].startswith("TOML syntax error")
    assert facts["containerd"]["cdi_enabled"] is None
    assert any(p["path"] == "/etc/containerd/config.toml" for p in facts["problems"])


def test_containerd_imports_are_followed(tmp_path):
    spec = dict(node_trees.shapes()["no-gpu"],
                containerd_version="containerd github.com/containerd/containerd/v2 v2.3.1 3f5c8c8",
                files={"/etc/containerd/config.toml": node_trees.fixture_text("containerd", "containerd-2.x-v3-imports.toml"),
                       "/etc/containerd/conf.d/v3-99-nvidia.toml": node_trees.fixture_text("containerd", "conf.d", "v3-99-nvidia.toml")})
    facts = facts_of(node_trees.build_tree(tmp_path, spec))
    assert facts["containerd"]["imported_files"] == ["/etc/containerd/conf.d/v3-99-nvidia.toml"]
    assert facts["containerd"]["nvidia_runtime"] is True


def test_files_only_mode_runs_nothing(tmp_path):
    facts = facts_of(node_trees.build_tree(tmp_path, node_trees.shapes()["hgx-8gpu-2numa"]), commands="none")
    assert facts["commands"] == "none"
    assert facts["nvidia_smi"]["status"] == "missing"
    assert facts["gpu_count"] == 8  # sysfs + procfs still find every GPU


def test_bundle_round_trip_gives_the_same_facts(tmp_path):
    """A bundle recorded from a tree yields the same facts as the tree it was recorded from."""
    source = node_trees.build_tree(tmp_path / "src", node_trees.shapes()["hgx-8gpu-2numa"])
    tree = NodeTree(source, record=True)
    before = gather(tree, RecordedCommands(tree))
    assert before["network"]["rdma_devices"] and before["cdi"]["specs"]
    write_bundle(str(tmp_path / "b.tar.gz"), tree, {}, before, {"host": "test"})
    assert oct(os.stat(str(tmp_path / "b.tar.gz")).st_mode & 0o777) == "0o600"
    os.mkdir(str(tmp_path / "out"))
    meta = extract_bundle(str(tmp_path / "b.tar.gz"), str(tmp_path / "out"))
    after = facts_of(tmp_path / "out")
    for key in before:
        if key != "root":
            assert before[key] == after[key], key
    assert meta["facts"]["gpu_count"] == 8


def test_live_commands_record_results_for_the_bundle():
    calls = []

    def runner(argv):
        calls.append(argv)
        return 0, "out", ""

    live = LiveCommands(runner, lambda name: "/usr/bin/" + name if name == "containerd" else None)  # a plain callable runner
    assert live.run("nvidia-smi", ["nvidia-smi", "-L"]) is None
    assert live.run("containerd-version", ["containerd", "--version"]) == (0, "out", "")
    assert calls == [["/usr/bin/containerd", "--version"]]
    assert live.results["containerd-version"]["argv"] == ["/usr/bin/containerd", "--version"]


def test_preflight_run_on_the_h200_recorded_the_same_facts(h200):
    """The evidence record written by the preflight playbook on the H200 holds the facts that
    the recorded tree yields here (the playbook on the machine and the fixture agree)."""
    path = os.path.join(node_trees.FIXTURES, "nodes", "h200-vm-raw", "preflight-record.json")
    with open(path) as handle:
        record = json.load(handle)
    live = record["nodes"]["localhost"]
    for key in ("os", "kernel", "driver", "iommu", "kubelet"):
        assert h200[key] == live[key], key
    # The second lease was another H200 machine of the same shape: only the GPU's UUID differs.
    strip = [dict(g, uuid=None) for g in as_recorded(h200["gpus"])]
    assert strip == [dict(g, uuid=None) for g in live["gpus"]]
    assert live["gpus"][0]["uuid"].startswith("GPU-") and live["gpus"][0]["uuid"] != h200["gpus"][0]["uuid"]
    assert record["results"]["verdict"] == "warn"
    assert [f["id"] for f in record["results"]["findings"] if f["severity"] == "warn"] == ["driver.point_release"]
