# Copyright: gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The pytest stages and lint: skips, pytest's exit code 5, the lab's timing run, worker arguments."""

from __future__ import annotations

import pytest

from devtool import stages
from devtool.common import Layout
from devtool.runner import Skip


def layout_with(tmp_path, *files):
    for name in files:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")
    return Layout.of(tmp_path, environ={})


def fake_pytest(monkeypatch, *codes):
    """pytest runs answered with ``codes`` in turn; returns the list of argv run."""
    ran, codes = [], list(codes)
    monkeypatch.setattr(stages, "run", lambda argv, **kw: ran.append(list(argv)) or codes.pop(0))
    return ran


def test_has_test_files(tmp_path):
    assert not stages.has_test_files(tmp_path / "missing")
    layout_with(tmp_path, "t/helpers.py", "t/__pycache__/test_x.py")
    assert not stages.has_test_files(tmp_path / "t")
    layout_with(tmp_path, "t/deep/er/thing_test.py")
    assert stages.has_test_files(tmp_path / "t")
    assert stages.has_test_files(layout_with(tmp_path, "u/test_a.py").root / "u")


def test_no_test_files_is_a_skip_without_pytest(tmp_path, monkeypatch):
    ran = fake_pytest(monkeypatch)
    with pytest.raises(Skip, match="no test files under tests/unit"):
        stages.units(layout_with(tmp_path, "tests/unit/conftest.py"), environ={"DRA_GATE_UNIT_WORKERS": "1"})
    assert not ran


def test_no_tests_collected_fails(tmp_path, monkeypatch, capsys):
    fake_pytest(monkeypatch, 5)
    assert stages.units(layout_with(tmp_path, "tests/unit/test_a.py"), environ={"DRA_GATE_UNIT_WORKERS": "0"}) == 1
    assert "pytest collected no tests, but tests/unit has test files" in capsys.readouterr().err


def test_units_with_workers(tmp_path, monkeypatch):
    monkeypatch.setattr(stages, "quiet", lambda argv, **kw: 0)  # pytest-xdist importable
    ran = fake_pytest(monkeypatch, 0)
    assert stages.units(layout_with(tmp_path, "tests/unit/test_a.py"), environ={}) == 0
    assert ran == [["python", "-m", "pytest", "-n", "2", "tests/unit"]]


def test_no_xdist_no_workers(tmp_path, monkeypatch):
    monkeypatch.setattr(stages, "quiet", lambda argv, **kw: 1)
    ran = fake_pytest(monkeypatch, 3)
    assert stages.integration(layout_with(tmp_path, "tests/integration/test_a.py"), environ={}) == 3
    assert ran == [["python", "-m", "pytest", "--durations=15", "tests/integration"]]


def test_lab_runs_the_timing_tests_alone_afterwards(tmp_path, monkeypatch):
    monkeypatch.setattr(stages, "quiet", lambda argv, **kw: 0)
    ran = fake_pytest(monkeypatch, 0, 0)
    assert stages.lab(layout_with(tmp_path, "tests/lab/test_a.py"), environ={"DRA_GATE_LAB_WORKERS": "3"}) == 0
    assert ran == [["python", "-m", "pytest", "-n", "3", "--dist", "loadfile", "-m", "not timing", "--durations=25", "tests/lab"],
                   ["python", "-m", "pytest", "-m", "timing", "tests/lab"]]


@pytest.mark.parametrize(("codes", "rc"), [((1, 0), 1), ((0, 1), 1), ((2, 1), 1), ((0, 5), 0), ((5, 5), 1)])
def test_lab_exit_status(tmp_path, monkeypatch, codes, rc):
    # A timing run that selects nothing after a run that found tests (PYTEST_ADDOPTS="-k ...") is no failure.
    fake_pytest(monkeypatch, *codes)
    assert stages.lab(layout_with(tmp_path, "tests/lab/test_a.py"), environ={"DRA_GATE_LAB_WORKERS": "1"}) == rc


@pytest.mark.parametrize(("before", "after"), [
    ({}, {"ANSIBLE_PYTHON_INTERPRETER": "VENV"}),
    ({"CI": "true"}, {"CI": "true", "ANSIBLE_PYTHON_INTERPRETER": "VENV", "ANSIBLE_NOCOLOR": "1"}),
    ({"ANSIBLE_NOCOLOR": "", "ANSIBLE_PYTHON_INTERPRETER": "/usr/bin/python3"},
     {"ANSIBLE_PYTHON_INTERPRETER": "/usr/bin/python3"}),
    ({"ANSIBLE_NOCOLOR": "0", "ANSIBLE_PYTHON_INTERPRETER": ""},
     {"ANSIBLE_NOCOLOR": "0", "ANSIBLE_PYTHON_INTERPRETER": "VENV"}),
])
def test_test_environment(tmp_path, before, after):
    layout = Layout.of(tmp_path, environ={})
    environ = dict(before)
    stages.test_environment(layout, environ)
    assert environ == {key: str(layout.venv_python) if value == "VENV" else value for key, value in after.items()}


def test_lint_drops_molecule_s_installed_copy_only(tmp_path, monkeypatch):
    ran = fake_pytest(monkeypatch, 0, 0)
    installed = tmp_path / "home" / ".ansible" / "collections" / "ansible_collections" / "gpufleet" / "dra_gate"
    installed.mkdir(parents=True)
    assert stages.lint(Layout.of(tmp_path, environ={}), home=tmp_path / "home") == 0
    assert not installed.exists()
    installed.symlink_to(tmp_path)  # a link (a developer's own) stays
    stages.lint(Layout.of(tmp_path, environ={}), home=tmp_path / "home")
    assert installed.is_symlink()
    assert ran == [["ansible-lint", "--offline", "--profile", "production"]] * 2


def test_registry_has_every_stage(tmp_path):
    assert tuple(stages.registry(Layout.of(tmp_path, environ={}))) == stages.ALL_STAGES
