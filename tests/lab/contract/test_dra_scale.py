# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Contract: the upstream DRA scale shape (scenario ``dra-scale-100``, issue 33) at a small size, so the suite
proves what ``bench/bench_claim_scale.py`` measures at full size: the scenario's own file with its GPU node
pool cut from 100 nodes to 6 (48 whole GPUs), every other object as written. The lab comes up with one
ResourceSlice per DRA node and the operator ready; claim_lifecycle then runs long-lived lifecycles held for the
run with churn cycling beside them, twice, with 4x the churn the second time:

- counts: every lifecycle succeeds (numerator = denominator = long-lived + churn), each claim named once in the
  records file (streamed, one JSON line per lifecycle), the lab's truth has every claim and every pod deleted;
- cleanup: no defects, nothing left behind, nothing of the run in the namespace;
- memory flat: the lifecycles tracked at once (``tracked_peak``) stay at most long-lived + concurrency, the same
  bound for 4x the churn: the harness holds what is running, not what has run.
"""

from __future__ import annotations

import os
import shutil

import pytest
import yaml

from kubelab.testing import start_lab, stop_lab, wait_for

from claim_runs import lifecycles, nothing_left, records, truth_of  # tests/ is on pytest's pythonpath (pytest.ini)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SCENARIO = os.path.join(REPO, "lab", "scenarios", "dra-scale-100.yml")
NS = "dra-scale"
NODES = 6
LONG_LIVED = 12
CONCURRENCY = 6


def small_scenario(directory: str) -> str:
    """dra-scale-100 with its GPU pool cut to ``NODES`` nodes: the same file otherwise."""
    with open(SCENARIO, encoding="utf-8") as handle:
        data = yaml.safe_load(handle)
    pools = [node for node in data["nodes"] if node.get("gpu")]
    assert len(pools) == 1 and pools[0]["count"] == 100, "dra-scale-100 is no longer one pool of 100 GPU nodes"
    pools[0]["count"] = NODES
    data["name"] = "dra-scale-%d" % NODES
    path = os.path.join(directory, "dra-scale-small.yml")
    with open(path, "w", encoding="utf-8") as handle:
        yaml.safe_dump(data, handle)
    return path


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    work = str(tmp_path_factory.mktemp("dra-scale"))
    cluster = start_lab(work, small_scenario(work))
    from kubernetes import client, config
    api = config.new_client_from_config(config_file=cluster.kubeconfig)
    cluster.core, cluster.custom = client.CoreV1Api(api), client.CustomObjectsApi(api)
    yield cluster
    stop_lab(cluster)
    errors = list(cluster.server.controller_errors)
    shutil.rmtree(work, ignore_errors=True)
    assert not errors, "controller errors: %s" % errors[:5]


def test_the_scale_scenario_comes_up_with_a_slice_per_dra_node(lab):
    def ready():
        slices = lab.custom.list_cluster_custom_object("resource.k8s.io", "v1", "resourceslices")["items"]
        classes = {c["metadata"]["name"] for c in lab.custom.list_cluster_custom_object(
            "resource.k8s.io", "v1", "deviceclasses")["items"]}
        return slices if len(slices) == NODES and "gpu-extended.nvidia.com" in classes else None
    slices = wait_for(ready, 60, "a ResourceSlice per DRA node and the extended-resource DeviceClass")
    assert sorted(s["spec"]["nodeName"] for s in slices) == sorted("gpu-%d" % i for i in range(1, NODES + 1))
    assert sum(len(s["spec"]["devices"]) for s in slices) == 8 * NODES
    cluster = wait_for(lambda: [g for g in lab.custom.list_cluster_custom_object(
        "nvidia.com", "v1alpha1", "gpuclusters")["items"] if (g.get("status") or {}).get("state") == "ready"],
        60, "the GPUCluster ready")
    assert [g["metadata"]["name"] for g in cluster] == ["gpu-cluster"]


@pytest.mark.parametrize("run_id, churn", [("scale-a", 12), ("scale-b", 48)])
def test_long_lived_and_churn_counted_cleaned_and_tracked_flat(lab, tmp_path, run_id, churn):
    result = lifecycles(lab, tmp_path, run_id, NS, timeout=400, create_namespace=True, count=churn,
                        long_lived=LONG_LIVED, concurrency=CONCURRENCY, kinds=["template"], lifecycle_timeout=60,
                        cleanup_timeout=60)
    total = LONG_LIVED + churn
    assert result["success_rate"] == {"numerator": total, "denominator": total, "percent": 100.0}, result.get("msg")
    assert (result["attempted"], result["long_lived"], result["churn"]) == (total, LONG_LIVED, churn)
    recs = records(result)
    assert len(recs) == total and len({rec["claim"] for rec in recs}) == total
    assert all(rec["error_class"] is None for rec in recs)
    defects = result["cleanup_defects"]
    assert (defects["numerator"], defects["denominator"], defects["claims"]) == (0, total, [])
    assert result["left_behind"] == [] and nothing_left(lab, NS, run_id)
    truth = truth_of(lab, NS, run_id)
    assert len(truth) == total and all(t["deleted"] and t["pod_deleted"] for t in truth)
    # memory flat: what is tracked at once is bounded by what runs at once, whatever the churn
    assert LONG_LIVED < result["tracked_peak"] <= LONG_LIVED + CONCURRENCY
