# Copyright: gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Make ``ansible_collections.gpufleet.dra_gate`` importable for pytest.

Run from the checkout (``pytest tests/unit``): the checkout is linked as
``.cache/collections/ansible_collections/gpufleet/dra_gate`` (the same link ``./dra-gate setup``
makes) and ``.cache/collections`` goes to the front of ``sys.path``.

Run from inside an ``ansible_collections/gpufleet/dra_gate`` tree (ansible-test, or a copy made
for it): the directory above ``ansible_collections`` goes to the front of ``sys.path`` instead.
"""

from __future__ import annotations

import os
import sys

NAMESPACE = "gpufleet"
NAME = "dra_gate"

COLLECTION_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _collections_dir() -> str:
    """The directory that holds ``ansible_collections/gpufleet/dra_gate`` for this checkout."""
    parts = COLLECTION_ROOT.split(os.sep)
    if parts[-3:] == ["ansible_collections", NAMESPACE, NAME]:
        return os.sep.join(parts[:-3]) or os.sep

    collections_dir = os.path.join(COLLECTION_ROOT, ".cache", "collections")
    link = os.path.join(collections_dir, "ansible_collections", NAMESPACE, NAME)
    # Relative, like ./dra-gate's, so that it survives moving the checkout.
    target = os.path.join(os.pardir, os.pardir, os.pardir, os.pardir)
    if not os.path.islink(link) or os.readlink(link) != target:
        os.makedirs(os.path.dirname(link), exist_ok=True)
        try:
            if os.path.islink(link):
                os.unlink(link)
            os.symlink(target, link)
        except FileExistsError:
            # Another pytest-xdist worker made it at the same moment.
            pass
    return collections_dir


def _activate() -> None:
    collections_dir = _collections_dir()
    if collections_dir in sys.path:
        sys.path.remove(collections_dir)
    sys.path.insert(0, collections_dir)
    # ansible-playbook and friends started by the tests find the collection too, and run modules
    # on this machine with this python (as ./dra-gate does for its test stages).
    os.environ.setdefault("ANSIBLE_COLLECTIONS_PATH", collections_dir)
    os.environ.setdefault("ANSIBLE_PYTHON_INTERPRETER", sys.executable)
    # Labs started by the tests (in-process or as a process) check that no controller changes an object it
    # read from the store's shared cache (kubelab.store.Store.list(shared=True)): one read in 16 (every
    # read would double the lab's CPU; a changed object is read again many times before its next write).
    os.environ.setdefault("KUBELAB_CHECK_SHARED", "16")


_activate()
