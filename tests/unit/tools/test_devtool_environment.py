# Copyright: gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""setup's pieces: the requirements stamp, Debian packages, the collection link, the environment."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from devtool import common, environment
from devtool.common import Layout, ToolError, workers


def checkout(tmp_path, files=None):
    files = files or {"dev.txt": "-r runtime.txt\npytest\n", "runtime.txt": "ansible-core==2.19.14\n"}
    (tmp_path / "requirements").mkdir()
    for name, text in files.items():
        (tmp_path / "requirements" / name).write_text(text)
    (tmp_path / ".venv").mkdir()
    return Layout.of(tmp_path, environ={})


@pytest.mark.skipif(shutil.which("sha256sum") is None, reason="no sha256sum")
def test_requirements_hash_is_the_shell_pipeline_s(tmp_path):
    layout = checkout(tmp_path)
    shell = subprocess.run("sha256sum requirements/*.txt | sha256sum", shell=True, cwd=tmp_path,
                           capture_output=True, text=True, check=True).stdout.split()[0]
    assert environment.requirements_hash(layout.root) == shell


def test_requirements_hash_follows_names_and_contents(tmp_path):
    layout = checkout(tmp_path)
    first = environment.requirements_hash(layout.root)
    (tmp_path / "requirements" / "runtime.txt").write_text("ansible-core==2.19.15\n")
    second = environment.requirements_hash(layout.root)
    (tmp_path / "requirements" / "runtime.txt").rename(tmp_path / "requirements" / "other.txt")
    third = environment.requirements_hash(layout.root)
    assert len({first, second, third}) == 3


def test_requirements_skipped_while_the_stamp_matches(tmp_path, monkeypatch):
    layout = checkout(tmp_path)
    layout.stamp.write_text(environment.requirements_hash(layout.root) + "\n")
    monkeypatch.setattr(environment, "run", lambda argv, **kw: pytest.fail(f"ran {argv}"))
    environment.ensure_requirements(layout)


def test_requirements_installed_and_stamped_when_changed(tmp_path, monkeypatch):
    layout = checkout(tmp_path)
    layout.stamp.write_text("stale\n")
    ran = []
    monkeypatch.setattr(environment, "run", lambda argv, **kw: ran.append([str(a) for a in argv]) or 0)
    environment.ensure_requirements(layout)
    assert ran == [[str(layout.venv_python), "-m", "pip", "install", "--disable-pip-version-check", "--quiet",
                    "-r", str(layout.root / "requirements" / "dev.txt")]]
    assert layout.stamp.read_text() == environment.requirements_hash(layout.root) + "\n"


def test_a_failed_install_is_an_error_and_leaves_the_stamp(tmp_path, monkeypatch):
    layout = checkout(tmp_path)
    monkeypatch.setattr(environment, "run", lambda argv, **kw: 1)
    with pytest.raises(ToolError, match="pip install -r requirements/dev.txt failed"):
        environment.ensure_requirements(layout)
    assert not layout.stamp.exists()


def test_missing_packages_in_order():
    status = {"containerd": "install ok installed", "etcd-server": "deinstall ok config-files"}
    assert environment.missing_packages(["containerd", "etcd-server", "prometheus"],
                                        lambda pkg: status.get(pkg, "")) == ["etcd-server", "prometheus"]


def test_apt_without_root_only_warns(monkeypatch, capsys):
    monkeypatch.setattr(environment.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(environment, "dpkg_status", lambda pkg: "")
    monkeypatch.setattr(environment.os, "geteuid", lambda: 1000)
    monkeypatch.setattr(environment, "run", lambda argv, **kw: pytest.fail(f"ran {argv}"))
    environment.ensure_apt_packages(["containerd"])
    assert "as root run: apt-get update && apt-get install -y containerd" in capsys.readouterr().err


def test_apt_as_root_installs_the_missing_ones(monkeypatch):
    ran = []
    monkeypatch.setattr(environment.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(environment, "dpkg_status", lambda pkg: "install ok installed" if pkg == "a" else "")
    monkeypatch.setattr(environment.os, "geteuid", lambda: 0)
    monkeypatch.setattr(environment, "run", lambda argv, **kw: ran.append((argv, kw["env"]["DEBIAN_FRONTEND"])) or 0)
    environment.ensure_apt_packages(["a", "b", "c"])
    assert ran == [(["apt-get", "update", "-qq"], "noninteractive"),
                   (["apt-get", "install", "-y", "-qq", "--no-install-recommends", "b", "c"], "noninteractive")]


def test_apt_failure_is_an_error(monkeypatch):
    monkeypatch.setattr(environment.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(environment, "dpkg_status", lambda pkg: "")
    monkeypatch.setattr(environment.os, "geteuid", lambda: 0)
    monkeypatch.setattr(environment, "run", lambda argv, **kw: 0 if "update" in argv else 100)
    with pytest.raises(ToolError, match="apt-get install b failed"):
        environment.ensure_apt_packages(["b"])


def test_collection_link_relative_and_repaired(tmp_path):
    layout = Layout.of(tmp_path, environ={})
    environment.ensure_collection_link(layout)
    link = layout.collection_link
    assert os.readlink(link) == "../../../.."
    assert os.path.samefile(link, tmp_path)
    link.unlink()
    link.mkdir()  # a directory where the link belongs
    environment.ensure_collection_link(layout)
    assert link.is_symlink() and os.readlink(link) == "../../../.."
    environment.ensure_collection_link(layout)  # idempotent
    assert os.readlink(link) == "../../../.."


def test_export_environment(tmp_path):
    layout = Layout.of(tmp_path, environ={})
    environ = {"PATH": "/usr/bin", "PYTHONHOME": "/opt/py"}
    environment.export_environment(layout, environ)
    assert environ == {"PATH": f"{layout.venv}/bin:/usr/bin", "VIRTUAL_ENV": str(layout.venv),
                       "ANSIBLE_COLLECTIONS_PATH": str(layout.collections_dir)}


def test_venv_kept_when_its_python_is_usable(tmp_path, monkeypatch):
    layout = Layout.of(tmp_path, environ={})
    layout.venv_python.parent.mkdir(parents=True)
    os.symlink(environment.sys.executable, layout.venv_python)
    monkeypatch.setattr(environment, "run", lambda argv, **kw: pytest.fail(f"ran {argv}"))
    environment.ensure_venv(layout)


def test_venv_recreated_when_its_python_is_gone(tmp_path, monkeypatch, capsys):
    layout = Layout.of(tmp_path, environ={})
    layout.venv.mkdir()
    (layout.venv / "junk").write_text("x")
    ran = []
    monkeypatch.setattr(environment, "run", lambda argv, **kw: ran.append(argv) or 0)
    environment.ensure_venv(layout, python="/usr/bin/python3")
    assert ran == [["/usr/bin/python3", "-m", "venv", layout.venv]]
    assert not layout.venv.exists()
    assert "recreating" in capsys.readouterr().err


def test_venv_failure_names_the_debian_package(tmp_path, monkeypatch):
    layout = Layout.of(tmp_path, environ={})
    monkeypatch.setattr(environment, "run", lambda argv, **kw: 1)
    with pytest.raises(ToolError, match="python3-venv"):
        environment.ensure_venv(layout, python="/usr/bin/python3")


@pytest.mark.parametrize(("value", "expected"), [(None, 2), ("", 2), ("1", 1), (" 4 ", 4), ("0", 0)])
def test_workers(value, expected):
    environ = {} if value is None else {"DRA_GATE_LAB_WORKERS": value}
    assert workers(environ, "DRA_GATE_LAB_WORKERS") == expected


def test_workers_not_a_number_names_the_variable():
    with pytest.raises(ToolError, match="DRA_GATE_MOLECULE_WORKERS must be a whole number of workers, not 'two'"):
        workers({"DRA_GATE_MOLECULE_WORKERS": "two"}, "DRA_GATE_MOLECULE_WORKERS")


class FakeProcess:
    """A child whose wait() is interrupted by ``interruptions`` in turn before it ends with ``rc``."""

    def __init__(self, rc, *interruptions):
        self.rc, self.interruptions, self.terminated = rc, list(interruptions), 0

    def wait(self):
        if self.interruptions:
            raise self.interruptions.pop(0)
        return self.rc

    def terminate(self):
        self.terminated += 1


def test_wait_returns_the_exit_status():
    assert common.wait(FakeProcess(3)) == 3


def test_wait_lets_the_child_end_after_ctrl_c():
    process = FakeProcess(2, KeyboardInterrupt(), KeyboardInterrupt())
    with pytest.raises(KeyboardInterrupt):
        common.wait(process)
    assert not process.interruptions  # waited through both, to the end
    assert process.terminated == 0  # the terminal's SIGINT reached it already


def test_wait_passes_sigterm_on():
    process = FakeProcess(143, SystemExit(143))
    with pytest.raises(SystemExit):
        common.wait(process)
    assert process.terminated == 1


def test_run_a_missing_command(capsys):
    assert common.run(["/nonexistent/tool", "x"]) == 127
    assert "dra-gate: /nonexistent/tool: command not found" in capsys.readouterr().err
