# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``python -m kubelab``: see kubelab.cli."""

from __future__ import annotations

import sys

from kubelab.cli import main

if __name__ == "__main__":
    sys.exit(main())
