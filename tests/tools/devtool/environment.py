# Copyright: gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``setup``: .venv, requirements, Debian packages and the collection link, each skipped when in place."""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
from collections.abc import Callable, Iterable, MutableMapping
from pathlib import Path

from devtool.common import PYTHON_MIN, Layout, ToolError, log, output, quiet, run

# Debian packages that the tests need (installed by `setup` when missing, as root, with apt-get).
APT_PACKAGES = (
    # a real containerd 1.6 binary (brings runc) for the containerd tests
    "containerd",
    # etcd 3.4 (/usr/bin/etcd, etcdctl) behind the lab cluster (lab/kubelab/etcd.py)
    "etcd-server",
    "etcd-client",
    # Prometheus: the lab's metrics test scrapes the simulated kubelets' DRA metrics with it (skipped without)
    "prometheus",
    # a real headless browser (/usr/lib/chromium/chromium-headless-shell) that playwright drives to open
    # the decision's report.html (tests/integration/test_report_browser.py; playwright downloads nothing)
    "chromium-headless-shell",
)

_MIN = ".".join(str(part) for part in PYTHON_MIN)


def python_ok(python: str | os.PathLike) -> bool:
    """True when ``python`` runs and is at least PYTHON_MIN."""
    check = f"import sys; sys.exit(0 if sys.version_info[:2] >= {PYTHON_MIN!r} else 1)"
    return quiet([python, "-c", check]) == 0


def requirements_hash(root: Path) -> str:
    """The sha256 of the names and contents of requirements/*.txt: a change to any of them reinstalls.

    The same value as ``(cd ROOT && sha256sum requirements/*.txt) | sha256sum``, so a stamp written by
    either stays valid.
    """
    lines = []
    for path in sorted((root / "requirements").glob("*.txt")):
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        lines.append(f"{digest}  requirements/{path.name}\n")
    return hashlib.sha256("".join(lines).encode()).hexdigest()


def ensure_venv(layout: Layout, python: str = sys.executable) -> None:
    """Create .venv with ``python`` (the one running this tool) unless it has a usable python already."""
    if os.access(layout.venv_python, os.X_OK) and python_ok(layout.venv_python):
        return
    if sys.version_info[:2] < PYTHON_MIN:
        raise ToolError(f"python >= {_MIN} is required, but {python} is {sys.version_info[0]}.{sys.version_info[1]}"
                        " (set PYTHON=/path/to/python3.11)")
    if layout.venv.is_symlink() or layout.venv.exists():
        log(f"recreating {layout.venv} (its python is missing or older than {_MIN})")
        if layout.venv.is_symlink() or not layout.venv.is_dir():
            layout.venv.unlink()
        else:
            shutil.rmtree(layout.venv)
    log(f"creating {layout.venv} with {python} ({sys.version_info[0]}.{sys.version_info[1]})")
    if run([python, "-m", "venv", layout.venv]) != 0:
        raise ToolError(f"'{python} -m venv' failed (on Debian: apt-get install python3-venv)")


def ensure_requirements(layout: Layout) -> None:
    """pip install -r requirements/dev.txt, unless .venv's stamp matches requirements/*.txt."""
    want = requirements_hash(layout.root)
    have = layout.stamp.read_text().strip() if layout.stamp.is_file() else ""
    if want == have:
        return
    log(f"installing requirements/dev.txt into {layout.venv}")
    pip = [layout.venv_python, "-m", "pip", "install", "--disable-pip-version-check", "--quiet"]
    if run(pip + ["-r", layout.root / "requirements" / "dev.txt"]) != 0:
        raise ToolError("pip install -r requirements/dev.txt failed")
    layout.stamp.write_text(want + "\n")


def dpkg_status(package: str) -> str:
    """dpkg's status of ``package`` ("install ok installed" when installed), "" when unknown."""
    return output(["dpkg-query", "-W", "-f=${Status}", package]) or ""


def missing_packages(packages: Iterable[str], status: Callable[[str], str] = dpkg_status) -> list[str]:
    """The packages that dpkg does not report as installed, in order."""
    return [package for package in packages if status(package) != "install ok installed"]


def ensure_apt_packages(packages: Iterable[str] = APT_PACKAGES) -> None:
    """apt-get install the missing ones as root; elsewhere, say what to install and go on."""
    packages = list(packages)
    if shutil.which("dpkg-query") is None:
        log(f"warning: not a Debian system; make sure these are installed: {' '.join(packages)}")
        return
    missing = missing_packages(packages, dpkg_status)
    if not missing:
        return
    names = " ".join(missing)
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        log(f"warning: Debian packages missing: {names} (tests that need them will fail); "
            f"as root run: apt-get update && apt-get install -y {names}")
        return
    log(f"installing Debian packages: {names}")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    if run(["apt-get", "update", "-qq"], env=env) != 0:
        raise ToolError("apt-get update failed")
    if run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", *missing], env=env) != 0:
        raise ToolError(f"apt-get install {names} failed")


# Relative, so that the link survives moving the checkout.
LINK_TARGET = os.path.join(os.pardir, os.pardir, os.pardir, os.pardir)


def ensure_collection_link(layout: Layout) -> None:
    """.cache/collections/ansible_collections/gpufleet/dra_gate -> the checkout."""
    link = layout.collection_link
    if link.is_symlink() and os.readlink(link) == LINK_TARGET:
        return
    link.parent.mkdir(parents=True, exist_ok=True)
    if link.is_symlink() or link.is_file():
        link.unlink()
    elif link.exists():
        shutil.rmtree(link)
    os.symlink(LINK_TARGET, link)


def export_environment(layout: Layout, environ: MutableMapping[str, str] | None = None) -> None:
    """What every command run from here sees: .venv first in PATH, the collection on the collections path."""
    environ = os.environ if environ is None else environ
    environ["VIRTUAL_ENV"] = str(layout.venv)
    environ["PATH"] = f"{layout.venv / 'bin'}{os.pathsep}{environ.get('PATH', '')}"
    environ["ANSIBLE_COLLECTIONS_PATH"] = str(layout.collections_dir)
    environ.pop("PYTHONHOME", None)


def setup(layout: Layout) -> None:
    ensure_venv(layout)
    ensure_requirements(layout)
    ensure_apt_packages()
    ensure_collection_link(layout)
    export_environment(layout)
