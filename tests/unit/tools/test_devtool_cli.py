# Copyright: gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""./dra-gate's command line (usage, argument errors, finding a python) and the tool's commands."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

import pytest

from devtool import cli, preflight, rehearsal
from devtool.common import Layout, ToolError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
DRA_GATE = os.path.join(ROOT, "dra-gate")


def dra_gate(*args, script=DRA_GATE, **env):
    return subprocess.run([script, *args], capture_output=True, text=True, timeout=60, check=False,
                          env=dict(os.environ, **env))


def test_help():
    done = dra_gate("help")
    assert done.returncode == 0
    assert done.stdout.startswith("usage: ./dra-gate COMMAND [ARGS...]")
    assert "DRA_GATE_MOLECULE_WORKERS" in done.stdout


@pytest.mark.parametrize(("args", "message"), [
    (("test", "lab"), "test takes no arguments, got: lab"),
    (("units", "-k", "x"), "units takes no arguments, got: -k x"),
    (("setup", "now"), "setup takes no arguments, got: now"),
    (("help", "units"), "help takes no arguments, got: units"),
    (("bogus",), "unknown command: bogus"),
])
def test_bad_command_lines_are_errors_with_usage(args, message):
    done = dra_gate(*args)
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.startswith("usage: ./dra-gate COMMAND")
    assert done.stderr.splitlines()[-1].startswith(f"dra-gate: error: {message}")


def bare_checkout(tmp_path):
    """A copy of ./dra-gate alone: no .venv, so it must find a python itself."""
    shutil.copy2(DRA_GATE, tmp_path / "dra-gate")
    return str(tmp_path / "dra-gate")


def test_no_python(tmp_path):
    done = dra_gate("units", script=bare_checkout(tmp_path), PYTHON="/nonexistent/python3")
    assert done.returncode == 1
    assert "python >= 3.11 is required, but '/nonexistent/python3' was not found (set PYTHON=" in done.stderr


def test_python_too_old(tmp_path):
    old = tmp_path / "python2"
    old.write_text("#!/bin/sh\n[ \"$1\" = -c ] && case \"$2\" in *print*) echo 3.9;; *) exit 1;; esac\n")
    old.chmod(0o755)
    done = dra_gate("units", script=bare_checkout(tmp_path), PYTHON=str(old))
    assert done.returncode == 1
    assert f"python >= 3.11 is required, but '{old}' is 3.9" in done.stderr


def test_tool_rejects_arguments_and_unknown_commands(tmp_path, capsys):
    assert cli.main(["lint", "extra"], root=tmp_path) == 1
    assert "dra-gate: error: lint takes no arguments, got: extra" in capsys.readouterr().err
    assert cli.main(["frobnicate"], root=tmp_path) == 1
    assert "dra-gate: error: unknown command: frobnicate" in capsys.readouterr().err
    assert cli.main([], root=tmp_path) == 1


def test_newest_summary(tmp_path):
    assert preflight.newest_summary(tmp_path / "missing") is None
    older, newer = tmp_path / "run1" / "summary.md", tmp_path / "run2" / "x" / "summary.md"
    for path, stamp in ((older, 1000), (newer, 2000)):
        path.parent.mkdir(parents=True)
        path.write_text("verdict")
        os.utime(path, (stamp, stamp))
    assert preflight.newest_summary(tmp_path) == (2000, newer)


def test_show_summary_warns_about_an_old_one(tmp_path, capsys, monkeypatch):
    summary = tmp_path / "run" / "summary.md"
    summary.parent.mkdir()
    summary.write_text("# verdict: go\n")
    os.utime(summary, (1000, 1000))
    preflight.show_summary(tmp_path, started=int(time.time()))
    captured = capsys.readouterr()
    assert "this run wrote no summary.md; the newest one is from an earlier run" in captured.err
    assert f"\n{summary}\n\n# verdict: go\n\n" in captured.out
    preflight.show_summary(tmp_path / "none", started=0)
    assert "no summary.md under" in capsys.readouterr().err


def test_private_evidence_root(tmp_path):
    root = tmp_path / "a" / "evidence"
    old = os.umask(0o022)
    try:
        preflight.make_private_dir(root)
    finally:
        os.umask(old)
    assert root.stat().st_mode & 0o777 == 0o700
    root.chmod(0o750)
    preflight.make_private_dir(root)  # an existing one is left as it is (the phases judge it)
    assert root.stat().st_mode & 0o777 == 0o750


def test_evidence_root_from_the_environment(tmp_path):
    assert Layout.of(tmp_path, environ={}).evidence_root == tmp_path.resolve() / "evidence"
    assert Layout.of(tmp_path, environ={"DRA_GATE_EVIDENCE_ROOT": "/srv/ev"}).evidence_root.as_posix() == "/srv/ev"


def test_dispatch_preflight_passes_its_arguments(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(cli.environment, "setup", lambda layout: calls.append("setup"))
    monkeypatch.setattr(cli.preflight, "preflight", lambda layout, args: calls.append(list(args)) or 2)
    assert cli.dispatch(Layout.of(tmp_path, environ={}), "preflight", ["--localhost", "-v"]) == 2
    assert calls == ["setup", ["--localhost", "-v"]]
    with pytest.raises(ToolError, match="bench takes only --quick, got: x"):
        cli.dispatch(Layout.of(tmp_path, environ={}), "bench", ["x"])


def test_bench_takes_quick_and_prints_every_goal_in_one_table(tmp_path, monkeypatch, capsys):
    done = dra_gate("bench", "--fast")
    assert done.returncode == 1 and done.stderr.splitlines()[-1] == "dra-gate: error: bench takes only --quick, got: --fast"
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "goals.py").write_text(open(os.path.join(ROOT, "bench", "goals.py")).read())
    (tmp_path / "bench" / "bench_a.py").write_text(
        "import sys\nfrom goals import goal\n"
        "goal('speed', '%s s' % ('1' if '--quick' in sys.argv else '2'), '< 3 s', True)\n"
        "goal('memory', '9 MiB', '<= 5 MiB', False)\n")
    (tmp_path / "bench" / "bench_rehearsal.py").write_text("raise SystemExit(3)\n")
    calls = []
    monkeypatch.setattr(cli.environment, "setup", lambda layout: calls.append("setup"))
    layout = Layout.of(tmp_path, environ={})
    monkeypatch.setattr(type(layout), "venv_python", property(lambda self: sys.executable), raising=False)
    monkeypatch.chdir(tmp_path)
    assert cli.dispatch(layout, "bench", ["--quick"]) == 0
    out = capsys.readouterr().out
    table = out[out.index("== bench --quick: every goal"):].splitlines()[1:]
    assert table[0].split() == ["bench", "goal", "measured", "target", "status"]
    assert [line.split()[0] for line in table[1:4]] == ["bench_a", "bench_a", "bench_rehearsal"]
    assert table[1].split()[-1] == "PASS" and "1 s" in table[1] and table[2].split()[-1] == "MISS"
    assert table[3].endswith("SKIPPED (--quick)")
    assert table[4] == "1 met, 1 missed or failed, 1 skipped"


def test_rehearse_takes_no_arguments(tmp_path, monkeypatch):
    done = dra_gate("rehearse", "--fast")
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.splitlines()[-1] == "dra-gate: error: rehearse takes no arguments, got: --fast"
    assert "  rehearse  " in dra_gate("help").stdout
    calls = []
    monkeypatch.setattr(cli.environment, "setup", lambda layout: calls.append("setup"))
    monkeypatch.setattr(cli.rehearsal, "rehearse", lambda layout, args: calls.append(list(args)) or 0)
    assert cli.dispatch(Layout.of(tmp_path, environ={}), "rehearse", []) == 0
    assert calls == ["setup", []]
    with pytest.raises(ToolError, match="rehearse takes no arguments, got: x"):
        cli.dispatch(Layout.of(tmp_path, environ={}), "rehearse", ["x"])
    assert calls == ["setup", []]  # refused before the setup


def test_rehearsal_steps_are_the_gate_in_order(tmp_path):
    argvs = [step.argv(tmp_path) for step in rehearsal.STEPS]
    assert [(a[2], a[a.index("--tags") + 1]) for a in argvs] == [
        ("inventories/canary", "preflight,snapshot,upgrade"), ("inventories/mine", "preflight,snapshot,upgrade,drain"),
        ("inventories/dra-canary", "preflight,snapshot,dra_canary"), ("inventories/mine", "rollback"),
        ("inventories/mine", "decide"), ("inventories/mine", "decide")]
    assert all(a[:2] == ["ansible-playbook", "-i"] and a[3] == "playbooks/site.yml" for a in argvs)
    production = argvs[1]
    assert "dra_gate_upgrade_scope=production" in production and "dra_gate_canary_run_id=canary-2612" in production
    recorded = tmp_path / "evidence" / "decisions" / "rehearsal" / "decision.json"
    assert argvs[-1][-1] == "dra_gate_decision_recompute=%s" % recorded
    decide = json.loads(argvs[-2][-1])
    assert [r["run_id"] for r in decide["dra_gate_decision_runs"]] == ["canary-2612", "prod-2612", "dra-2612"]
    assert {r["evidence_root"] for r in decide["dra_gate_decision_runs"]} == {str(tmp_path / "evidence")}


def fake_playbook(tmp_path, script):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ansible-playbook").write_text("#!/bin/sh\n" + script)
    (bin_dir / "ansible-playbook").chmod(0o755)
    return dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")


def test_rehearsal_times_each_phase_and_stops_at_a_failed_playbook(tmp_path):
    run = tmp_path / "evidence" / "canary-2612"
    run.mkdir(parents=True)
    # the first playbook writes two records; the second one fails
    script = f"""case "$2" in inventories/canary)
cat > {run}/preflight-1.json <<R
{{"phase": "preflight", "started_at": "2026-12-07T01:00:00Z", "finished_at": "2026-12-07T01:00:12.5Z"}}
R
cat > {run}/upgrade-1.json <<R
{{"phase": "upgrade", "started_at": "2026-12-07T01:00:20Z", "finished_at": "2026-12-07T01:01:20Z"}}
R
echo '{{"records": [{{"phase": "preflight", "file": "preflight-1.json"}}, {{"phase": "upgrade", "file": "upgrade-1.json"}}]}}' > {run}/index.json
exit 0;;
esac
echo 'fatal: the drain refused'; exit 2
"""
    lines = []
    outcome = rehearsal.run_steps(tmp_path, fake_playbook(tmp_path, script), lambda text="": lines.append(text))
    assert outcome.rc == 1
    assert outcome.timings[:2] == [("canary preflight", 12.5), ("canary upgrade", 60.0)]
    assert [w for w, _s in outcome.timings] == ["canary preflight", "canary upgrade",
                                                "canary preflight+snapshot+upgrade (ansible-playbook)",
                                                "mine preflight+snapshot+upgrade+drain (ansible-playbook)"]
    assert any("the playbook failed (exit 2)" in line for line in lines)
    assert lines[-1].strip() == "fatal: the drain refused"
    assert len(list((tmp_path / "logs").iterdir())) == 2  # the later steps never ran
    rehearsal.report(outcome, lambda text="": lines.append(text))
    assert any("within the 600 s target" in line for line in lines)


def test_rehearsal_reads_the_decision_from_the_json_callback(tmp_path):
    results = {"plays": [{"tasks": [
        {"task": {"name": rehearsal.DECIDE_TASK}, "hosts": {"localhost": {
            "path": "/e/decisions/rehearsal/decision.json",
            "decisions": {"operator_upgrade": {"outcome": "accept", "reasons": []},
                          "dra_promotion": {"outcome": "incomplete", "reasons": ["drain: missing"]}}}}},
        {"task": {"name": rehearsal.REPORT_TASK}, "hosts": {"localhost": {
            "paths": {"html": "/e/decisions/rehearsal/report.html"}, "worksheet": ["claim_success  pass"]}}}]}]}
    script = "cat <<'J'\n" + json.dumps(results) + "\nJ\n"
    step = rehearsal.Step("mine", ("decide",))
    lines = []
    outcome = rehearsal.run_steps(tmp_path, fake_playbook(tmp_path, script), lambda text="": lines.append(text),
                                  steps=[step])
    assert outcome.rc == 0 and outcome.decision_path == "/e/decisions/rehearsal/decision.json"
    rehearsal.report(outcome, lambda text="": lines.append(text))
    text = "\n".join(lines)
    assert "decision 1, operator_upgrade: accept" in text and "decision 2, dra_promotion: incomplete" in text
    assert "- drain: missing" in text and "claim_success  pass" in text
    assert "HTML report:     /e/decisions/rehearsal/report.html" in text
