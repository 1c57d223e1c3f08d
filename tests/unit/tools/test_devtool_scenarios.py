# Copyright: gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The molecule stage's worker pool, on fake scenarios (small python commands)."""

from __future__ import annotations

import io
import sys
import textwrap

import pytest

from devtool import scenarios
from devtool.common import Layout
from devtool.runner import Skip

# A fake scenario: marks itself running in DIR, records how many were running at once, sleeps, ends
# with the exit status in its name ("fail-..." exits 3), after a few lines of output.
FAKE = textwrap.dedent("""
    import os, sys, time
    name, directory = sys.argv[1], sys.argv[2]
    mark = os.path.join(directory, name + ".running")
    open(mark, "w").close()
    running = len([n for n in os.listdir(directory) if n.endswith(".running")])
    with open(os.path.join(directory, name + ".seen"), "w") as seen:
        seen.write(str(running))
    for line in range(3):
        print(f"{name} line {line}", flush=True)
        time.sleep(0.05)
    time.sleep(0.2)
    os.unlink(mark)
    sys.exit(3 if name.startswith("fail") else 0)
""")


def fake_command(directory):
    return lambda name: [sys.executable, "-c", FAKE, name, str(directory)]


def pool(tmp_path, count):
    (tmp_path / "marks").mkdir()
    (tmp_path / "logs").mkdir()
    out = io.BytesIO()
    return scenarios.Pool(count, fake_command(tmp_path / "marks"), tmp_path / "logs", out=out), out


def test_scenario_names(tmp_path):
    for name in ("phase", "drain_waves", "broken"):
        (tmp_path / "molecule" / name).mkdir(parents=True)
    (tmp_path / "molecule" / "phase" / "molecule.yml").write_text("")
    (tmp_path / "molecule" / "drain_waves" / "molecule.yml").write_text("")
    assert scenarios.scenario_names(tmp_path) == ["drain_waves", "phase"]
    assert scenarios.scenario_names(tmp_path / "nowhere") == []


def test_pool_runs_all_two_at_a_time_and_logs_each_whole(tmp_path, capsys):
    runner, out = pool(tmp_path, 2)
    names = ["a", "fail-b", "c", "d", "fail-e"]
    failed = runner.run_all(names)
    assert sorted(failed) == ["fail-b", "fail-e"]
    seen = {name: int((tmp_path / "marks" / f"{name}.seen").read_text()) for name in names}
    assert max(seen.values()) <= 2
    assert max(seen.values()) == 2  # they did run side by side
    text = out.getvalue().decode()
    for name in names:
        block = "".join(f"{name} line {line}\n" for line in range(3))
        assert block in text  # each log whole, never interleaved
    err = capsys.readouterr().err
    for name in names:
        assert f"dra-gate: molecule test -s {name} (in the background, 2 at a time)" in err
    assert "dra-gate: molecule test -s fail-b: exit 3" in err
    assert "dra-gate: molecule test -s a: exit 0" in err
    starts = [line for line in err.splitlines() if "in the background" in line]
    assert [line.split()[4] for line in starts] == names  # started in order


def test_pool_of_one_runs_one_at_a_time(tmp_path):
    runner = pool(tmp_path, 1)[0]
    assert runner.run_all(["a", "b", "c"]) == []
    assert {int((tmp_path / "marks" / f"{name}.seen").read_text()) for name in "abc"} == {1}


def test_pool_missing_command_fails_that_scenario(tmp_path):
    (tmp_path / "logs").mkdir()
    runner = scenarios.Pool(2, lambda name: ["/nonexistent/molecule", name], tmp_path / "logs", out=io.BytesIO())
    assert runner.run_all(["x"]) == ["x"]


def test_stage_skips_without_scenarios(tmp_path):
    with pytest.raises(Skip, match=r"no molecule/\*/molecule.yml scenarios"):
        scenarios.stage(Layout.of(tmp_path, environ={}), environ={})


def test_stage_fails_when_any_scenario_failed(tmp_path, monkeypatch, capsys):
    for name in ("ok", "fail-one"):
        (tmp_path / "molecule" / name).mkdir(parents=True)
        (tmp_path / "molecule" / name / "molecule.yml").write_text("")
    (tmp_path / "marks").mkdir()
    monkeypatch.setattr(scenarios, "molecule_command", fake_command(tmp_path / "marks"))
    monkeypatch.setattr(scenarios.sys, "stdout", io.TextIOWrapper(io.BytesIO()))
    assert scenarios.stage(Layout.of(tmp_path, environ={}), environ={}) == 1
    assert "dra-gate: molecule scenarios failed: fail-one" in capsys.readouterr().err


def test_stage_in_order_with_one_worker(tmp_path, monkeypatch, capsys):
    (tmp_path / "molecule" / "only").mkdir(parents=True)
    (tmp_path / "molecule" / "only" / "molecule.yml").write_text("")
    ran = []
    monkeypatch.setattr(scenarios, "run", lambda argv, **kw: ran.append(argv) or 0)
    assert scenarios.stage(Layout.of(tmp_path, environ={}), environ={"DRA_GATE_MOLECULE_WORKERS": "1"}) == 0
    assert ran == [["molecule", "test", "-s", "only"]]
    assert "dra-gate: molecule test -s only\n" in capsys.readouterr().err
