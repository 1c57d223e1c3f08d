# Copyright: gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Make ``devtool`` (tests/tools/devtool, the tool behind ./dra-gate) importable for its unit tests."""

from __future__ import annotations

import os
import sys

TOOLS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "tools")
if TOOLS not in sys.path:
    sys.path.insert(0, TOOLS)
