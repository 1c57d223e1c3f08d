# Copyright: gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``rehearse``: the whole gate, end to end, against three lab clusters.

The upgrade's canary and production (scenario operator-upgrade, the GPU Operator 26.3.1 installed) and the DRA
canary (scenario gate-dra-canary) are started in one process (tests/gate_lab.py, the same clusters the README
flow's contract test uses), their inventories, the pinned charts and a gate policy written under
``.cache/rehearsal``; then ``ansible-playbook playbooks/site.yml --tags ...`` runs once per cluster in the gate's
order (STEPS): the upgrade canary; production's preflight, snapshot, upgrade and drain; the DRA canary's
preflight, snapshot, build and acceptance; production's rollback as the timed rehearsal; and the decision over
the three run ids. Each playbook's output goes to a log of its own; printed: the wall time of each step and of
each phase (its evidence record's started_at to finished_at), both decisions, the worksheet and the report's
paths. Exit status 0 when every playbook ran (whatever the decision), 1 when one failed (its log's tail shown).

``rehearse`` (standard library, like the rest of devtool) runs ``main`` in the venv's python, which has what the
labs need (kubelab's etcd, the Helm library, the kubernetes client).
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

TARGET_SECONDS = 600
CHARTS = ("-e", "@inventories/charts.yml")
RUNS = {"canary": "canary-2612", "mine": "prod-2612", "dra-canary": "dra-2612"}
DECISION_ID = "rehearsal"


@dataclasses.dataclass(frozen=True)
class Step:
    """One ``ansible-playbook -i inventories/<cluster> playbooks/site.yml --tags <tags>`` of the gate."""

    cluster: str
    tags: tuple[str, ...]
    extra: tuple[str, ...] = ()
    recompute: bool = False  # decide: recompute the decision just made (byte for byte), instead of deciding

    @property
    def run_id(self) -> str:
        return RUNS[self.cluster]

    def argv(self, root: Path) -> list[str]:
        extra = list(self.extra)
        if self.tags == ("decide",) and self.recompute:
            extra += ["-e", f"dra_gate_decision_recompute={root / 'evidence' / 'decisions' / DECISION_ID / 'decision.json'}"]
        elif self.tags == ("decide",):
            runs = [{"evidence_root": str(root / "evidence"), "run_id": run} for run in RUNS.values()]
            extra += ["-e", f"dra_gate_decision_policy={root / 'inventories' / 'gate_policy.yml'}",
                      "-e", json.dumps({"dra_gate_decision_runs": runs, "dra_gate_decision_id": DECISION_ID})]
        return ["ansible-playbook", "-i", f"inventories/{self.cluster}", "playbooks/site.yml",
                "--tags", ",".join(self.tags), "-e", f"dra_gate_run_id={self.run_id}", *extra]

    @property
    def title(self) -> str:
        return f"{self.cluster} ({self.run_id}): {', '.join(self.tags)}{' (recompute)' if self.recompute else ''}"


# The gate in order: decision 1 on the upgrade's canary, then production; decision 2 on the DRA canary; the
# timed rollback rehearsal of production; the decision over the three runs (README, "Using it against your fleet").
STEPS = (
    Step("canary", ("preflight", "snapshot", "upgrade"), CHARTS),
    Step("mine", ("preflight", "snapshot", "upgrade", "drain"),
         CHARTS + ("-e", "dra_gate_upgrade_scope=production", "-e", f"dra_gate_canary_run_id={RUNS['canary']}",
                   "-e", json.dumps({"dra_gate_drain_waves": [1, "10%", "25%"]}))),
    Step("dra-canary", ("preflight", "snapshot", "dra_canary"), CHARTS),
    Step("mine", ("rollback",), CHARTS + ("-e", json.dumps({"dra_gate_rollback_reason": "rehearsal"}))),
    Step("mine", ("decide",)),
    Step("mine", ("decide",), recompute=True),
)


def rehearse(layout, args: Sequence[str]) -> int:
    """The command: ``main`` in the venv's python, in a fresh .cache/rehearsal."""
    from devtool.common import ToolError, log, run  # pylint: disable=import-outside-toplevel
    if args:
        raise ToolError(f"rehearse takes no arguments, got: {' '.join(args)}")
    workdir = layout.cache / "rehearsal"
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    workdir.chmod(0o700)
    log(f"rehearsing the whole gate against three lab clusters in {workdir}")
    tests = layout.root / "tests"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(str(p) for p in (tests / "tools", tests, layout.root / "lab")))
    return run([layout.venv_python, "-m", "devtool.rehearsal", workdir], env=env)


# --- the venv side -------------------------------------------------------------------------------------------

def _seconds(started: str, finished: str) -> float | None:
    try:
        return (datetime.datetime.fromisoformat(finished) - datetime.datetime.fromisoformat(started)).total_seconds()
    except (TypeError, ValueError):
        return None


def records(evidence: Path, run_id: str) -> list[dict]:
    """The index entries of a run (phase, file, ...), [] before its first record."""
    try:
        with open(evidence / run_id / "index.json", encoding="utf-8") as handle:
            return list(json.load(handle).get("records") or [])
    except FileNotFoundError:
        return []


def phase_times(evidence: Path, run_id: str, entries: list[dict]) -> list[tuple[str, float | None]]:
    """(phase, seconds from started_at to finished_at) of each record of ``entries``."""
    out = []
    for entry in entries:
        try:
            with open(evidence / run_id / entry["file"], encoding="utf-8") as handle:
                record = json.load(handle)
        except (OSError, ValueError, KeyError):
            out.append((str(entry.get("phase")), None))
            continue
        out.append((str(record.get("phase") or entry.get("phase")),
                    _seconds(record.get("started_at"), record.get("finished_at"))))
    return out


def task_results(callback_json: str, names: Sequence[str]) -> dict:
    """{task name: localhost's result} from the ansible.posix.json callback's output."""
    start = callback_json.find("\n{")  # the callback's one document, after the command line and any warnings
    try:
        data = json.loads(callback_json[start + 1:]) if start >= 0 else {}
    except ValueError:
        return {}
    found = {}
    for play in data.get("plays") or []:
        for task in play.get("tasks") or []:
            name = (task.get("task") or {}).get("name")
            if name in names:
                found[name] = (task.get("hosts") or {}).get("localhost") or {}
    return found


DECIDE_TASK, REPORT_TASK = "Decide (decision.json, 0600)", "Write the reports from the decision record"


@dataclasses.dataclass
class Outcome:
    rc: int = 0
    timings: list = dataclasses.field(default_factory=list)  # (what, seconds) in order
    decisions: dict = dataclasses.field(default_factory=dict)
    worksheet: list = dataclasses.field(default_factory=list)
    paths: dict = dataclasses.field(default_factory=dict)
    decision_path: str = ""
    logs: Path | None = None


def run_steps(root: Path, env: dict, say: Callable[[str], None], steps: Sequence[Step] = STEPS,
              outcome: Outcome | None = None) -> Outcome:
    """Run ``steps`` in ``root`` (inventories written), each into logs/NN-<cluster>-<tags>.log; stop at the first
    failure. Every step's and phase's wall time goes into ``outcome.timings``."""
    outcome = outcome or Outcome()
    logs = root / "logs"
    logs.mkdir(exist_ok=True)
    outcome.logs = logs
    evidence = root / "evidence"
    for number, step in enumerate(steps, 1):
        log = logs / f"{number:02d}-{step.cluster}-{'-'.join(step.tags)}{'-recompute' if step.recompute else ''}.log"
        before = len(records(evidence, step.run_id))
        decide = step.tags == ("decide",)
        step_env = dict(env, ANSIBLE_STDOUT_CALLBACK="ansible.posix.json") if decide else env
        say(f"== {step.title}")
        started = time.monotonic()
        with open(log, "w", encoding="utf-8") as out:
            out.write("$ " + " ".join(step.argv(root)) + "\n")
            out.flush()
            proc = subprocess.run(step.argv(root), cwd=root, env=step_env, stdout=out, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, check=False)
        elapsed = time.monotonic() - started
        if not decide:
            for phase, seconds in phase_times(evidence, step.run_id, records(evidence, step.run_id)[before:]):
                outcome.timings.append((f"{step.cluster} {phase}", seconds))
                say(f"   {phase:<16} {'?' if seconds is None else f'{seconds:7.1f} s'}")
        outcome.timings.append((f"{step.cluster} {'+'.join(step.tags)} (ansible-playbook)", elapsed))
        say(f"   {'playbook':<16} {elapsed:7.1f} s  exit {proc.returncode}  log {log}")
        if decide and step.recompute:
            say(f"   recomputed from the same evidence: {'identical' if proc.returncode == 0 else 'DIFFERENT (see the log)'}")
        elif decide:
            found = task_results(log.read_text(encoding="utf-8"), (DECIDE_TASK, REPORT_TASK))
            decision, report = found.get(DECIDE_TASK) or {}, found.get(REPORT_TASK) or {}
            outcome.decisions = decision.get("decisions") or {}
            outcome.decision_path = decision.get("path") or ""
            outcome.worksheet = list(report.get("worksheet") or [])
            outcome.paths = dict(report.get("paths") or {})
        if proc.returncode != 0:
            lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
            say(f"the playbook failed (exit {proc.returncode}); the end of {log}:")
            for line in lines[-60:]:
                say("   " + line)
            outcome.rc = 1
            break
    return outcome


def report(outcome: Outcome, say: Callable[[str], None]) -> None:
    say()
    say("== time per phase")
    total = 0.0
    for what, seconds in outcome.timings:
        say(f"   {what:<58} {'?' if seconds is None else f'{seconds:7.1f} s'}")
    total = sum(s for w, s in outcome.timings if s is not None and (w.endswith("(ansible-playbook)") or w == "labs"))
    verdict = "within" if total <= TARGET_SECONDS else "OVER"
    say(f"   {'total (labs + playbooks)':<58} {total:7.1f} s  ({verdict} the {TARGET_SECONDS} s target)")
    if outcome.decisions:
        say()
        say("== the decisions")
        for key, label in (("operator_upgrade", "decision 1, operator_upgrade"), ("dra_promotion", "decision 2, dra_promotion")):
            decision = outcome.decisions.get(key) or {}
            say(f"   {label}: {decision.get('outcome')}")
            for reason in decision.get("reasons") or []:
                say(f"     - {reason}")
        say()
        say("== the worksheet")
        for line in outcome.worksheet:
            say("   " + str(line))
        say()
        say(f"decision record: {outcome.decision_path}")
        say(f"HTML report:     {outcome.paths.get('html')}")


def rehearsal(root: Path, say: Callable[[str], None] = print) -> Outcome:
    """The whole rehearsal in ``root`` (an empty private directory): the labs, then every step."""
    import gate_lab  # pylint: disable=import-outside-toplevel
    from upgrade_lab import env  # pylint: disable=import-outside-toplevel
    outcome = Outcome()
    started = time.monotonic()
    scratch = gate_lab.prepare(str(root))
    errors: list = []
    with gate_lab.clusters(scratch, errors, progress=lambda text: say("== " + text)) as _labs:
        outcome.timings.append(("labs", time.monotonic() - started))
        say(f"   {'labs':<16} {outcome.timings[-1][1]:7.1f} s")
        run_steps(root, env(), say, outcome=outcome)
    if errors:
        say(f"the lab's controllers reported {len(errors)} errors: {errors[:3]}")
    return outcome


def main(argv: Sequence[str]) -> int:
    root = Path(argv[0])

    def say(text: str = "") -> None:
        print(text, flush=True)

    outcome = rehearsal(root, say)
    report(outcome, say)
    return outcome.rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
