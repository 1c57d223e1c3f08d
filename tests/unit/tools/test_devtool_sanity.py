# Copyright: gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The sanity stage's harness: the get-pip stand-in and the copy of the collection."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from devtool import sanity
from devtool.common import ToolError

REQUIREMENTS_SOURCE = """
def get_venv_packages(python):
    default_packages = dict(
        pip='24.2',
        setuptools='70.0.0',
    )
"""


def test_pip_version_in_ansible_test_source():
    assert sanity.pip_version_in(REQUIREMENTS_SOURCE) == "24.2"
    assert sanity.pip_version_in("        pip='25.0.1'\n") == "25.0.1"
    assert sanity.pip_version_in("pip = '24.2'") is None
    assert sanity.pip_version_in("") is None


def test_the_installed_ansible_test_pins_a_pip():
    # The stage reads this from the venv's ansible-test: the pattern must still match its source.
    import ansible_test
    source = os.path.join(os.path.dirname(ansible_test.__file__), "_internal", "python_requirements.py")
    with open(source, encoding="utf-8") as handle:
        assert sanity.pip_version_in(handle.read())


def test_standin_written_replaced_and_real_get_pip_kept(tmp_path):
    path = sanity.ensure_get_pip_standin(tmp_path, "24.2")
    assert path == tmp_path / ".ansible" / "test" / "cache" / "get_pip_24_2.py"
    assert sanity.MARKER in path.read_text()
    compile(path.read_text(), str(path), "exec")
    path.write_text(f'"""{sanity.MARKER}: an older one"""\n')
    sanity.ensure_get_pip_standin(tmp_path, "24.2")
    assert path.read_text() == sanity.STANDIN
    path.write_text("# the real get-pip\n")
    sanity.ensure_get_pip_standin(tmp_path, "24.2")
    assert path.read_text() == "# the real get-pip\n"


def test_standin_without_a_version_is_an_error(tmp_path):
    with pytest.raises(ToolError, match="cannot find the pip version ansible-test bootstraps"):
        sanity.ensure_get_pip_standin(tmp_path, None)


@pytest.mark.parametrize(("name", "copied"), [
    ("plugins/modules/x.py", True), ("README.md", True), ("tests/unit/test_x.py", True),
    (".venv", False), (".venv/bin/python", False), (".cache/collections/a", False), ("site/x.py", False),
    ("evidence/run/summary.md", False), ("tests/output/junit.xml", False), ("plugins/__pycache__/x.py", False),
    ("plugins/x.pyc", False), (".git/config", False), (".github/workflows/ci.yml", True), ("sites/x", True),
])
def test_never_copied(name, copied):
    assert (sanity.NEVER_COPY_RE.search(name) is None) == copied


def tree(root):
    for name in ("plugins/modules/a.py", "README.md", "ignored.log", "plugins/__pycache__/a.cpython-311.pyc"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(name)
    (root / ".gitignore").write_text("*.log\n")
    (root / ".venv").symlink_to(root / "plugins")  # a link: git's "dir/" patterns do not catch it
    (root / "link.md").symlink_to("README.md")


@pytest.mark.skipif(shutil.which("git") is None, reason="no git")
def test_collection_files_as_git_sees_them(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    tree(root)
    subprocess.run(["git", "init", "-q", root], check=True)
    subprocess.run(["git", "-C", root, "add", "README.md"], check=True)
    (root / "README.md").unlink()  # deleted, still tracked
    assert sorted(sanity.collection_files(root)) == [".gitignore", "link.md", "plugins/modules/a.py"]


def test_collection_files_outside_git(tmp_path, monkeypatch):
    monkeypatch.setattr(sanity, "output", lambda argv, **kw: None)  # not a git work tree
    tree(tmp_path)
    assert sorted(sanity.collection_files(tmp_path)) == [".gitignore", "README.md", "ignored.log", "link.md",
                                                         "plugins/modules/a.py"]


def test_copy_keeps_links_and_modes(tmp_path):
    source, target = tmp_path / "src", tmp_path / "dst"
    (source / "bin").mkdir(parents=True)
    (source / "bin" / "run").write_text("#!/bin/sh\n")
    (source / "bin" / "run").chmod(0o755)
    (source / "alias").symlink_to("bin/run")
    sanity.copy_files(source, ["bin/run", "alias"], target)
    assert (target / "bin" / "run").stat().st_mode & 0o777 == 0o755
    assert os.readlink(target / "alias") == "bin/run"
