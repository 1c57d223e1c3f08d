# Copyright: gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The stages of ``./dra-gate test``: the pytest ones (units, lab, integration) and lint live here;
sanity and molecule have modules of their own."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Mapping, MutableMapping
from pathlib import Path

from devtool import sanity, scenarios
from devtool.common import Layout, log, quiet, run, workers
from devtool.runner import Skip

# Stages of `./dra-gate test`, in order.
ALL_STAGES = ("units", "sanity", "lint", "molecule", "lab", "integration")


def test_environment(layout: Layout, environ: MutableMapping[str, str] | None = None) -> None:
    """For the test stages: every host the tests touch is this machine (connection local).

    Modules run with the venv's python, which has the requirements; interpreter discovery would pick
    some python3 on PATH (here a pyenv shim of a version that is not installed). An inventory's own
    ansible_python_interpreter still wins. `preflight` does not do this: its hosts may be remote.
    """
    environ = os.environ if environ is None else environ
    if not environ.get("ANSIBLE_PYTHON_INTERPRETER"):
        environ["ANSIBLE_PYTHON_INTERPRETER"] = str(layout.venv_python)
    nocolor = environ.get("ANSIBLE_NOCOLOR") or ("1" if environ.get("CI") else "")
    if nocolor:
        environ["ANSIBLE_NOCOLOR"] = nocolor
    else:
        environ.pop("ANSIBLE_NOCOLOR", None)


def has_test_files(directory: Path) -> bool:
    """True when ``directory`` holds at least one pytest test file (test_*.py or *_test.py)."""
    for _directory, dirs, files in os.walk(directory):
        dirs[:] = [name for name in dirs if name != "__pycache__"]
        if any(name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py")) for name in files):
            return True
    return False


def xdist_args(environ: Mapping[str, str] | None, variable: str, *extra: str) -> list[str]:
    """``-n N`` (and ``extra``) when ``environ[variable]`` (default 2) asks for workers and pytest-xdist is there."""
    count = workers(environ, variable)
    if count > 1 and quiet(["python", "-c", "import xdist"]) == 0:
        return ["-n", str(count), *extra]
    return []


def run_pytest(layout: Layout, directory: str, *args: str) -> int:
    """``python -m pytest ARGS DIRECTORY``; skipped without test files; "no tests collected" fails."""
    if not has_test_files(layout.root / directory):
        raise Skip(f"no test files under {directory}")
    rc = run(["python", "-m", "pytest", *args, directory])
    if rc == 5:
        log(f"pytest collected no tests, but {directory} has test files")
        return 1
    return rc


def units(layout: Layout, environ: Mapping[str, str] | None = None) -> int:
    return run_pytest(layout, "tests/unit", *xdist_args(environ, "DRA_GATE_UNIT_WORKERS"))


def integration(layout: Layout, environ: Mapping[str, str] | None = None) -> int:
    # Each file's real components (etcd, containerd, Prometheus, labs) take free ports: two workers, a
    # file whole on one (282 s instead of about 400 s here).
    return run_pytest(layout, "tests/integration",
                      *xdist_args(environ, "DRA_GATE_INTEGRATION_WORKERS", "--dist", "loadfile"), "--durations=15")


def lab(layout: Layout, environ: Mapping[str, str] | None = None) -> int:
    """The lab cluster: its unit tests (real etcd) and the contract suite (real kubectl, Helm library,
    kubernetes.core and the kubernetes Python client against the lab API server).

    The contract tests mostly wait on the lab's simulated clocks: two workers, each test file (and its
    module-scoped lab) whole on one worker (--dist loadfile). Tests marked timing (pytest.ini) measure
    against the lab's truth within milliseconds: they run afterwards, alone, as a benchmark would.
    """
    args = xdist_args(environ, "DRA_GATE_LAB_WORKERS", "--dist", "loadfile")
    # the 25 slowest tests in the log: where the stage's time goes (the CI budget is the whole command's)
    rc = run_pytest(layout, "tests/lab", *args, "-m", "not timing", "--durations=25")
    log("lab: the timing tests, one at a time")
    timing = run(["python", "-m", "pytest", "-m", "timing", "tests/lab"])
    if timing == 5:
        # The first run found tests, so none selected here means none of the selected ones
        # (PYTEST_ADDOPTS="-k ...") is a timing test: nothing to run, not a broken collection.
        log("lab: no timing tests among the selected ones")
        timing = 0
    return timing or rc


def lint(layout: Layout, home: Path | None = None) -> int:
    # molecule installs this collection into ~/.ansible/collections when it runs; an older copy there
    # would shadow the checkout's plugins for ansible-lint ("couldn't resolve module"). Drop it.
    home = Path.home() if home is None else home
    stale = home / ".ansible" / "collections" / "ansible_collections" / "gpufleet" / "dra_gate"
    if stale.is_dir() and not stale.is_symlink():
        log(f"removing molecule's installed copy of the collection: {stale}")
        shutil.rmtree(stale)
    return run(["ansible-lint", "--offline", "--profile", "production"])


def registry(layout: Layout) -> dict[str, Callable[[], int]]:
    """Every stage by name, ready to run."""
    return {
        "units": lambda: units(layout),
        "sanity": lambda: sanity.stage(layout),
        "lint": lambda: lint(layout),
        "molecule": lambda: scenarios.stage(layout),
        "lab": lambda: lab(layout),
        "integration": lambda: integration(layout),
    }
