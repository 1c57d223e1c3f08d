#!/usr/bin/env bash
# Run the collection on a real GPU node that has Python 3 but no Ansible and no network
# (the H200 machine lent through the device tool): install the carried wheels into ./site,
# expose this checkout as gpufleet.dra_gate, then run what is asked:
#   tests/tools/on_gpu_node.sh record OUTDIR     support bundle + facts + raw captures
#   tests/tools/on_gpu_node.sh preflight OUTDIR  the preflight playbook against localhost
# Wheels: see docs/development.md ("Running on a real GPU node").
set -euo pipefail
cd "$(dirname "$0")/../.."
what=$1 out=$2
mkdir -p "$out" site
python3 -m pip install -q --no-index --no-deps --target site .whl/*.whl >/dev/null 2>&1 || true
coll=$(mktemp -d)
mkdir -p "$coll/ansible_collections/gpufleet"
ln -s "$PWD" "$coll/ansible_collections/gpufleet/dra_gate"
ANSIBLE_PYTHON_INTERPRETER=$(command -v python3)
export PYTHONPATH=$PWD/site PATH=$PWD/site/bin:$PATH ANSIBLE_PYTHON_INTERPRETER
export ANSIBLE_COLLECTIONS_PATH=$coll ANSIBLE_STDOUT_CALLBACK=default ANSIBLE_LOCALHOST_WARNING=false
case $what in
record)
  ansible localhost -c local -m gpufleet.dra_gate.gpu_node_bundle -a "dest=$out/node.tar.gz force=true" >"$out/bundle.out" 2>&1 || cat "$out/bundle.out"
  ansible localhost -c local -m gpufleet.dra_gate.gpu_node_facts >"$out/facts.out" 2>&1 || cat "$out/facts.out"
  # Raw captures beyond what the module reads, for fixtures of other shapes and for review.
  {
    nvidia-smi --query-gpu=index,pci.bus_id,pci.device_id,name,uuid,mig.mode.current,memory.total,driver_version --format=csv >"$out/smi-query-units.csv" 2>&1 || true
    nvidia-smi --query-gpu=index,pci.bus_id,pci.device_id,name,uuid,mig.mode.current,memory.total,driver_version --format=csv,nounits >"$out/smi-query.csv" 2>&1 || true
    nvidia-smi --query-gpu=index,pci.bus_id,pci.device_id,name,uuid,mig.mode.current,memory.total,driver_version,vbios_version --format=csv,nounits >"$out/smi-query-vbios.csv" 2>&1 || true
    nvidia-smi -q >"$out/smi-q.txt" 2>&1 || true
    nvidia-smi >"$out/smi.txt" 2>&1 || true
    nvidia-smi --version >"$out/smi-version.txt" 2>&1 || true
    cat /proc/driver/nvidia/version >"$out/proc-version.txt" 2>&1 || true
    for f in /proc/driver/nvidia/gpus/*/information; do echo "== $f"; cat "$f"; done >"$out/proc-information.txt" 2>&1 || true
    ls -la /sys/bus/pci/devices/ >"$out/pci-devices.txt" 2>&1 || true
    for d in /sys/bus/pci/devices/*; do
      [ "$(cat "$d/vendor" 2>/dev/null)" = 0x10de ] || continue
      echo "== $d"; for a in vendor device class numa_node subsystem_vendor subsystem_device current_link_speed current_link_width local_cpulist; do printf '%s=%s\n' "$a" "$(cat "$d/$a" 2>/dev/null)"; done
      ls -la "$d/" ; readlink "$d/driver" "$d/iommu_group" || true
    done >"$out/pci-nvidia.txt" 2>&1
    # Network devices that matter to GPU placement: the class links, their PCI functions' attributes.
    for c in /sys/class/net /sys/class/infiniband; do
      echo "== $c"; ls -la "$c/" 2>&1
      for d in "$c"/*; do
        [ -e "$d" ] || continue
        echo "-- $d -> $(readlink "$d")"; echo "device -> $(readlink "$d/device" 2>/dev/null)"
        for a in numa_node vendor device class; do printf '%s=%s\n' "$a" "$(cat "$d/device/$a" 2>/dev/null)"; done
        echo "driver -> $(readlink "$d/device/driver" 2>/dev/null)"
      done
    done >"$out/sysfs-net.txt" 2>&1 || true
    ls -la /sys/kernel/iommu_groups /dev/iommu /etc/cdi /var/run/cdi /etc/containerd >"$out/misc-ls.txt" 2>&1 || true
    cat /proc/cmdline /etc/os-release /proc/sys/kernel/osrelease >"$out/misc-cat.txt" 2>&1 || true
    for f in /sys/class/dmi/id/*; do [ -f "$f" ] && printf '%s=%s\n' "$(basename "$f")" "$(head -c 200 "$f" 2>/dev/null)"; done >"$out/dmi.txt" 2>&1 || true
    python3 --version >"$out/python-version.txt" 2>&1
  } || true
  ;;
preflight)
  install -d -m 0700 "$out/evidence"
  ansible-playbook -i inventories/local playbooks/preflight.yml -e "dra_gate_evidence_root=$out/evidence" -e dra_gate_fail_on=never >"$out/preflight.out" 2>&1; echo "rc=$?" >>"$out/preflight.out"
  ansible localhost -c local -m gpufleet.dra_gate.gpu_node_facts >"$out/facts.out" 2>&1 || true
  tail -40 "$out/preflight.out"
  ;;
esac
ls -la "$out"
