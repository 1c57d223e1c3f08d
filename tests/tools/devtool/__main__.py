# Copyright: gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``python tests/tools/devtool COMMAND [ARGS...]``: what ``./dra-gate`` runs."""

import os
import sys

# Run as a directory, python puts this package's own directory first on sys.path, where its modules
# would shadow installed ones of the same name; the directory above it is the one to import from.
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [entry for entry in sys.path if os.path.abspath(entry or ".") != HERE]
sys.path.insert(0, os.path.dirname(HERE))

from devtool.cli import main  # noqa: E402  pylint: disable=wrong-import-position

sys.exit(main(sys.argv[1:]))
