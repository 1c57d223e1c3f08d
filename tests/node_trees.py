# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Recorded and constructed node trees for tests: a re-export of ``kubelab.nodetrees`` (lab/kubelab/nodetrees.py).

``h200_tree(dest)``, ``build_tree(dest, spec)``, ``shapes()``, ``gpu(...)``, ``fixture_text(...)`` and
the format templates live in the lab package so that the lab cluster builds its GPU nodes from the
same trees the collection's tests use.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import sys

_LAB = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lab")
if _LAB not in sys.path:
    sys.path.insert(0, _LAB)

from kubelab import nodetrees as _nodetrees  # noqa: E402  pylint: disable=wrong-import-position

FIXTURES = _nodetrees.FIXTURES
H200_BUNDLE = _nodetrees.H200_BUNDLE
H200_BUNDLE_20261201 = _nodetrees.H200_BUNDLE_20261201
DRIVER_VERSION_OPEN = _nodetrees.DRIVER_VERSION_OPEN
DRIVER_VERSION_PROPRIETARY = _nodetrees.DRIVER_VERSION_PROPRIETARY
GPU_INFORMATION = _nodetrees.GPU_INFORMATION
SMI_HEADER = _nodetrees.SMI_HEADER
SMI_HEADER_LEGACY = _nodetrees.SMI_HEADER_LEGACY
VBIOS_VERSION = _nodetrees.VBIOS_VERSION
SMI_ARGV = _nodetrees.SMI_ARGV
SMI_NO_DRIVER = _nodetrees.SMI_NO_DRIVER
OS_RELEASE = _nodetrees.OS_RELEASE
h200_tree = _nodetrees.h200_tree
build_tree = _nodetrees.build_tree
gpu = _nodetrees.gpu
nic = _nodetrees.nic
fixture_text = _nodetrees.fixture_text
shapes = _nodetrees.shapes
materialize = _nodetrees.materialize
tree_names = _nodetrees.tree_names
