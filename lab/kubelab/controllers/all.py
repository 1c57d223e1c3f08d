# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every simulated component, in start order: ``install(lab)`` before ``lab.start()``."""

from __future__ import annotations

from kubelab.controllers.daemonset import DaemonSetController
from kubelab.controllers.disruption import DisruptionController
from kubelab.controllers.gc import GarbageCollector
from kubelab.controllers.kubelet import KubeletController
from kubelab.controllers.namespaces import NamespacesController
from kubelab.controllers.scheduler import SchedulerController
from kubelab.controllers.sets import JobController, StatefulSetController
from kubelab.controllers.workloads import DeploymentController, ReplicaSetController

CONTROLLERS = (NamespacesController, KubeletController, SchedulerController, DeploymentController,
               ReplicaSetController, DaemonSetController, StatefulSetController, JobController, DisruptionController,
               GarbageCollector)


def install(lab) -> list:
    """Append one instance of each controller to ``lab.controllers`` (started by ``LabServer.start``)."""
    added = [cls(lab) for cls in CONTROLLERS]
    lab.controllers.extend(added)
    return added
