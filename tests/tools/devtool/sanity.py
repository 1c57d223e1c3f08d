# Copyright: gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The sanity stage: ``ansible-test sanity --local``, offline, on a copy of the collection.

ansible-test runs only inside a physical ``ansible_collections/<namespace>/<name>`` directory, and
bootstraps pip into its per-test venvs by downloading get-pip; the stage makes the copy under
.cache/sanity and writes an offline stand-in for the download (docs/development.md).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

from devtool.common import Layout, ToolError, log, output

# Paths never copied into the ansible-test tree (besides what .gitignore already ignores).
NEVER_COPY_RE = re.compile(
    r"^(\.git|\.venv|\.cache|\.ansible|\.whl|site|evidence|build|tests/output|\.pytest_cache)(/|$)"
    r"|(^|/)__pycache__(/|$)|\.py[co]$"
)

MARKER = "dra-gate get-pip stand-in"

# ansible-test downloads get-pip-<version>.py from the internet to bootstrap pip into each sanity
# venv. This stand-in does the same offline: ensurepip, then a pip install of the packages asked
# for (pip==<version>) from the package index.
STANDIN = f'''"""{MARKER}: bootstrap pip offline for ansible-test (written by ./dra-gate)."""
import subprocess
import sys

DROP = {{"--no-setuptools", "--no-wheel"}}


def main():
    args = [arg for arg in sys.argv[1:] if arg not in DROP]
    subprocess.check_call([sys.executable, "-m", "ensurepip", "--default-pip"])
    subprocess.check_call([sys.executable, "-m", "pip", "install"] + args)


if __name__ == "__main__":
    main()
'''

_PIP_PIN = re.compile(r"^ *pip='([0-9.]*)',?$", re.MULTILINE)


def pip_version_in(source: str) -> str | None:
    """The pip version that ansible-test's python_requirements.py pins (``pip='24.2',``), if any."""
    found = _PIP_PIN.search(source)
    return found.group(1) if found and found.group(1) else None


def ansible_test_pip_version() -> str | None:
    """The pip version ansible-test bootstraps into its sanity venvs (get_venv_packages())."""
    package = output(["python", "-c", "import ansible_test, os; print(os.path.dirname(ansible_test.__file__))"])
    if not package:
        return None
    try:
        return pip_version_in((Path(package) / "_internal" / "python_requirements.py").read_text())
    except OSError:
        return None


def ensure_get_pip_standin(home: Path, version: str | None) -> Path:
    """Write the stand-in as ~/.ansible/test/cache/get_pip_<version>.py; a real get-pip found there stays."""
    if not version:
        raise ToolError("cannot find the pip version ansible-test bootstraps")
    cache_file = home / ".ansible" / "test" / "cache" / f"get_pip_{version.replace('.', '_')}.py"
    if cache_file.is_file() and MARKER not in cache_file.read_text(errors="replace"):
        return cache_file  # a real get-pip script someone put there: leave it
    cache_file.parent.mkdir(parents=True, exist_ok=True)
    tmp = cache_file.with_name(cache_file.name + ".tmp")
    tmp.write_text(STANDIN)
    os.replace(tmp, cache_file)
    return cache_file


def _candidates(root: Path) -> Iterator[str]:
    top = output(["git", "-C", root, "rev-parse", "--show-toplevel"])
    if top is not None and os.path.realpath(top) == str(root):
        listing = subprocess.run(["git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                                 capture_output=True, check=True).stdout
        yield from (name.decode("utf-8", "surrogateescape") for name in listing.split(b"\0") if name)
        return
    for directory, dirs, files in os.walk(root):
        dirs.sort()
        relative = os.path.relpath(directory, root)
        links = [name for name in dirs if os.path.islink(os.path.join(directory, name))]
        for name in sorted(files) + links:
            yield name if relative == "." else os.path.join(relative, name)


def collection_files(root: Path) -> list[str]:
    """The files of the collection as git sees them (tracked and untracked-but-not-ignored, less deleted
    ones); outside a git work tree, every file and link. Never what NEVER_COPY_RE names."""
    return [name for name in _candidates(root)
            if os.path.lexists(root / name) and not NEVER_COPY_RE.search(name)]


def copy_files(root: Path, names: Iterable[str], destination: Path) -> None:
    """Copy each file (a symlink as a symlink) with its mode, making directories as needed."""
    for name in names:
        source, target = root / name, destination / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            os.symlink(os.readlink(source), target)
        else:
            shutil.copy2(source, target)


def link_dependencies(layout: Layout) -> None:
    """Collections this one depends on (galaxy.yml), linked from the ones the ansible package bundles."""
    site = output(["python", "-c", "import ansible_collections; print(list(ansible_collections.__path__)[0])"])
    deps = output(["python", "-c", 'import sys, yaml; print("\\n".join((yaml.safe_load(open(sys.argv[1])) or {})'
                                   '.get("dependencies") or {}))', layout.root / "galaxy.yml"])
    if site is None or deps is None:
        raise ToolError("cannot read the bundled collections or galaxy.yml's dependencies")
    for dep in filter(None, deps.splitlines()):
        namespace, _dot, name = dep.partition(".")
        bundled = Path(site) / namespace / name
        if bundled.is_dir():
            link = layout.sanity_collections / namespace / name
            link.parent.mkdir(parents=True, exist_ok=True)
            if link.is_symlink():
                link.unlink()
            os.symlink(bundled, link)
        else:
            log(f"warning: dependency {dep} is not bundled with ansible; the import test may fail")


def sync_tree(layout: Layout) -> None:
    shutil.rmtree(layout.cache / "sanity", ignore_errors=True)
    layout.sanity_root.mkdir(parents=True)
    try:
        copy_files(layout.root, collection_files(layout.root), layout.sanity_root)
    except (OSError, subprocess.CalledProcessError) as error:
        raise ToolError(f"copying the collection to {layout.sanity_root} failed: {error}") from None
    # ansible-test lists the files through the nearest enclosing git work tree; without a
    # repository of its own, the copy would be seen through the checkout's, where .cache/ is
    # ignored, and every target would be skipped. The copy's own (empty) repository lists
    # exactly the copied files (all untracked, none ignored).
    if shutil.which("git") and subprocess.call(["git", "-C", layout.sanity_root, "init", "-q"]) != 0:
        raise ToolError(f"git init in {layout.sanity_root} failed")
    link_dependencies(layout)


def tee(argv: list[str], log_path: Path, cwd: Path, env: dict[str, str]) -> int:
    """Run ``argv`` with stdout and stderr to this stdout and to ``log_path``; its exit status."""
    sys.stdout.flush()
    with open(log_path, "wb") as log_file:
        try:
            process = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        except FileNotFoundError:
            log(f"{argv[0]}: command not found")
            return 127
        with process:
            for chunk in iter(process.stdout.readline, b""):
                sys.stdout.buffer.write(chunk)
                sys.stdout.buffer.flush()
                log_file.write(chunk)
        return process.returncode


def stage(layout: Layout) -> int:
    version = output(["python", "-c", 'import sys; print("%d.%d" % sys.version_info[:2])'])
    if version is None:
        raise ToolError("the venv's python does not run")
    ensure_get_pip_standin(Path.home(), ansible_test_pip_version())
    sync_tree(layout)
    log(f"ansible-test sanity in {layout.sanity_root}")
    # ansible-test finds collections from the tree it runs in.
    env = {key: value for key, value in os.environ.items() if key != "ANSIBLE_COLLECTIONS_PATH"}
    log_path = layout.cache / "sanity" / "output.log"
    rc = tee(["ansible-test", "sanity", "--local", "--python", version, "--color", "no"],
             log_path, cwd=layout.sanity_root, env=env)
    if rc != 0:
        log(f"results: {layout.sanity_root}/tests/output/")
        return rc
    if b"All targets skipped" in log_path.read_bytes():
        log(f"ansible-test saw no files in {layout.sanity_root}: a harness problem, not a pass")
        return 1
    return 0
