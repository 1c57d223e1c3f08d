# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every simulated component, in start order: ``install(lab)`` before ``lab.start()``."""

from __future__ import annotations

from kubelab.controllers.daemonset import DaemonSetController
from kubelab.controllers.disruption import DisruptionController
from kubelab.controllers.dra import DeviceTaintEvictionController, DraDriverController, ResourceClaimController
from kubelab.controllers.gc import GarbageCollector
from kubelab.controllers.kubelet import KubeletController
from kubelab.controllers.namespaces import (KubernetesServiceController, NamespacesController, RootCACertPublisher,
                                            ServiceAccountsController)
from kubelab.controllers.operator import GpuOperatorController  # GPU part: operator, faults, metrics
from kubelab.controllers.scheduler import SchedulerController
from kubelab.controllers.sets import JobController, StatefulSetController
from kubelab.controllers.taints import TaintEvictionController
from kubelab.controllers.workloads import DeploymentController, ReplicaSetController
from kubelab.faults import FaultController
from kubelab.metrics import MetricsController

CONTROLLERS = (NamespacesController, KubernetesServiceController, ServiceAccountsController, RootCACertPublisher,
               KubeletController, SchedulerController, DeploymentController,
               ReplicaSetController, DaemonSetController, StatefulSetController, JobController, DisruptionController,
               GarbageCollector, DraDriverController, ResourceClaimController, DeviceTaintEvictionController,
               TaintEvictionController, GpuOperatorController, FaultController, MetricsController)


def install(lab) -> list:
    """Append one instance of each controller to ``lab.controllers`` (started by ``LabServer.start``)."""
    added = [cls(lab) for cls in CONTROLLERS]
    lab.controllers.extend(added)
    return added
