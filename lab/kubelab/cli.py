# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``python -m kubelab``: start, stop and inspect a lab cluster (etcd + the API server) in a directory.

    python -m kubelab start --dir DIR [--scenario FILE] [--https] [--token] [--port N] [--background]
    python -m kubelab stop --dir DIR
    python -m kubelab status --dir DIR
    python -m kubelab fault --dir DIR (--add JSON | --list | --clear [ID])
    python -m kubelab truth --dir DIR [--clear]

``start`` writes ``DIR/kubeconfig`` and ``DIR/lab.json`` (pids, URLs, paths) and runs in the
foreground until SIGTERM or SIGINT; ``--background`` starts the same in a new session (log in
``DIR/kubelab.log``) and returns once the API answers ``/version``. ``start`` runs the simulated
components (``--no-controllers``: the API only). ``fault`` adds, lists or clears injected faults
(kubelab.faults) of the running lab through ``/kubelab/faults``. ``truth`` prints the lab's ground truth
per ResourceClaim (``GET /kubelab/claims/truth``, see kubelab.controllers.dra) as JSON; ``--clear`` empties it.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import signal
import ssl
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

from kubelab import etcd as etcd_mod
from kubelab.gpunodes import prepare as prepare_gpu_nodes
from kubelab.kubeconfig import write_kubeconfig
from kubelab.scenario import ScenarioError, load_scenario
from kubelab.tls import generate_tls, write_private, write_token

LAB_JSON = "lab.json"
EXIT_NOT_RUNNING = 3


class LabError(Exception):
    """A start, stop or status failed; the message says why."""


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def read_lab(directory: str) -> dict | None:
    path = os.path.join(directory, LAB_JSON)
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise LabError("%s is unreadable: %s" % (path, exc)) from exc


def write_lab(directory: str, data: dict) -> None:
    write_private(os.path.join(directory, LAB_JSON), json.dumps(data, indent=2, sort_keys=True) + "\n", 0o644)


def _cmdline(pid: int) -> str:
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _ours(pid: int | None, marker: str) -> bool:
    """``pid`` runs and its command line mentions ``marker`` (guards against a reused pid)."""
    return bool(pid) and etcd_mod.pid_alive(pid) and marker in _cmdline(pid)


def get_version(lab: dict, timeout: float = 2.0) -> dict:
    """GET ``/version`` on the lab's API with its CA and token; raises OSError/ValueError on failure."""
    request = urllib.request.Request(lab["server_url"].rstrip("/") + "/version")
    if lab.get("token_path"):
        with open(lab["token_path"], encoding="utf-8") as handle:
            request.add_header("Authorization", "Bearer " + handle.read().strip())
    context = ssl.create_default_context(cafile=lab["ca_path"]) if lab.get("ca_path") else None
    with urllib.request.urlopen(request, timeout=timeout, context=context) as resp:
        return json.loads(resp.read().decode())


# -- start ------------------------------------------------------------------------------------


def _server_class():
    try:
        from kubelab.server import LabServer  # pylint: disable=import-outside-toplevel
    except ImportError as exc:
        raise LabError("the API server (kubelab.server.LabServer) cannot be imported: %s" % exc) from exc
    return LabServer


def run_lab(args: argparse.Namespace, stop: threading.Event, server_factory=None, ready=None) -> int:
    """Start etcd and the server for ``args``, write kubeconfig and lab.json, wait for ``stop``, tear down.

    ``server_factory`` defaults to ``kubelab.server.LabServer``; ``ready(lab)`` is called once serving.
    """
    directory = os.path.abspath(args.dir)
    os.makedirs(directory, exist_ok=True)
    previous = read_lab(directory)
    if previous and previous.get("state") == "running" and _ours(previous.get("pid"), "kubelab"):
        raise LabError("a lab cluster already runs in %s (pid %s); stop it first" % (directory, previous["pid"]))
    scenario = load_scenario(args.scenario) if args.scenario else None
    if scenario and scenario.get("gpu_nodes"):  # node trees under DIR/trees, DIR/inventory.yml
        prepare_gpu_nodes(scenario, directory, os.path.join(directory, "kubeconfig"))
    simulate = server_factory is None and not getattr(args, "no_controllers", False)
    server_factory = server_factory or _server_class()

    tls = ca_pem = token = None
    lab = {"state": "starting", "pid": os.getpid(), "dir": directory, "started": _now(),
           "kubeconfig": os.path.join(directory, "kubeconfig"), "token_path": None, "ca_path": None,
           "scenario": os.path.abspath(args.scenario) if args.scenario else None}
    if args.https:
        files = generate_tls(os.path.join(directory, "tls"))
        tls, ca_pem, lab["ca_path"] = files.server_pair, files.ca_pem, files.ca_cert
    if args.token:
        lab["token_path"] = os.path.join(directory, "token")
        token = write_token(lab["token_path"])

    etcd = etcd_mod.EtcdProcess(etcd_mod.find_etcd(args.etcd_source), os.path.join(directory, "etcd"))
    server = None
    try:
        etcd.start()
        lab.update(etcd_pid=etcd.pid, etcd_url=etcd.client_url, etcd_version=etcd.version,
                   etcd_source=etcd.binaries.source, etcd_log=etcd.log_path)
        server = server_factory(etcd.client_url, host="127.0.0.1", port=args.port or 0, tls=tls,
                                token=token, scenario=scenario)
        if simulate:  # the simulated cluster: scheduler, kubelets, workload controllers, GPU Operator, DRA
            from kubelab.controllers.all import install  # pylint: disable=import-outside-toplevel
            install(server)
        server.start()
        lab["server_url"] = server.url
        write_kubeconfig(lab["kubeconfig"], server.url, ca_pem=ca_pem, token=token)
        lab["state"] = "running"
        write_lab(directory, lab)
        print("kubelab: serving %s (etcd %s %s at %s); KUBECONFIG=%s"
              % (server.url, etcd.binaries.source, etcd.version, etcd.client_url, lab["kubeconfig"]), flush=True)
        if ready:
            ready(lab)
        code = 0
        while not stop.wait(0.5):
            if not etcd.running():
                print("kubelab: etcd exited unexpectedly; see %s" % etcd.log_path, file=sys.stderr, flush=True)
                code = 1
                break
        return code
    finally:
        if server is not None:
            try:
                server.stop()
            except Exception as exc:  # pylint: disable=broad-exception-caught
                print("kubelab: stopping the server failed: %s" % exc, file=sys.stderr, flush=True)
        etcd.stop()
        lab.update(state="stopped", stopped=_now())
        write_lab(directory, lab)
        print("kubelab: stopped", flush=True)


def _foreground(args: argparse.Namespace) -> int:
    stop = threading.Event()

    def on_signal(signum, _frame):
        print("kubelab: %s, stopping" % signal.Signals(signum).name, flush=True)
        stop.set()

    old = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        return run_lab(args, stop)
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)


def _child_argv(args: argparse.Namespace) -> list[str]:
    argv = [sys.executable, "-m", "kubelab", "start", "--dir", os.path.abspath(args.dir)]
    if args.scenario:
        argv += ["--scenario", os.path.abspath(args.scenario)]
    if args.https:
        argv.append("--https")
    if args.token:
        argv.append("--token")
    if args.port:
        argv += ["--port", str(args.port)]
    if args.etcd_source:
        argv += ["--etcd-source", args.etcd_source]
    if getattr(args, "no_controllers", False):
        argv.append("--no-controllers")
    return argv


def _background(args: argparse.Namespace) -> int:
    directory = os.path.abspath(args.dir)
    os.makedirs(directory, exist_ok=True)
    previous = read_lab(directory)
    if previous and previous.get("state") == "running" and _ours(previous.get("pid"), "kubelab"):
        raise LabError("a lab cluster already runs in %s (pid %s); stop it first" % (directory, previous["pid"]))
    if args.scenario:
        load_scenario(args.scenario)  # fail here, with the error, rather than in the log
    log_path = os.path.join(directory, "kubelab.log")
    env = dict(os.environ)
    package_parent = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = os.pathsep.join([package_parent] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    with open(log_path, "ab") as log:
        child = subprocess.Popen(_child_argv(args), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,  # pylint: disable=consider-using-with
                                 env=env, cwd=directory, start_new_session=True)
    deadline = time.monotonic() + args.wait_timeout
    last = "no lab.json yet"
    while time.monotonic() < deadline:
        if child.poll() is not None:
            raise LabError("the lab cluster exited with code %s while starting; %s:\n%s"
                           % (child.returncode, log_path, etcd_mod.log_tail(log_path)))
        try:
            lab = read_lab(directory)
        except LabError as exc:
            lab, last = None, str(exc)
        if lab and lab.get("pid") == child.pid and lab.get("state") == "running":
            try:
                version = get_version(lab)
                print("kubelab: running (pid %d), %s, Kubernetes %s; KUBECONFIG=%s"
                      % (child.pid, lab["server_url"], version.get("gitVersion", "?"), lab["kubeconfig"]), flush=True)
                return 0
            except (OSError, ValueError) as exc:
                last = "GET /version: %s" % exc
        time.sleep(0.1)
    _terminate(child.pid, "kubelab", 10)
    child.wait(timeout=10)
    raise LabError("the lab cluster did not answer within %.0f s (%s); %s:\n%s"
                   % (args.wait_timeout, last, log_path, etcd_mod.log_tail(log_path)))


# -- stop and status ---------------------------------------------------------------------------


def _wait_gone(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while etcd_mod.pid_alive(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True


def _terminate(pid: int | None, marker: str, timeout: float) -> bool:
    """SIGTERM ``pid`` if it is ours, SIGKILL after ``timeout``; True if it was running."""
    if not _ours(pid, marker):
        return False
    try:
        os.kill(pid, signal.SIGTERM)
        if not _wait_gone(pid, timeout):
            os.kill(pid, signal.SIGKILL)
            _wait_gone(pid, 5)
    except ProcessLookupError:
        pass
    return True


def stop_lab(directory: str, timeout: float = 30.0) -> bool:
    """Stop the lab cluster of ``directory`` (the supervisor, then etcd if it outlived it); True if one ran."""
    lab = read_lab(directory)
    if not lab:
        return False
    was_running = _terminate(lab.get("pid"), "kubelab", timeout)
    was_running = _terminate(lab.get("etcd_pid"), "etcd", 10) or was_running
    if lab.get("state") != "stopped":
        lab.update(state="stopped", stopped=_now())
        write_lab(directory, lab)
    return was_running


def lab_status(directory: str) -> dict:
    """lab.json plus ``running``, ``etcd_running``, ``api`` (the /version answer or the error)."""
    lab = read_lab(directory)
    if not lab:
        return {"dir": os.path.abspath(directory), "state": "absent", "running": False}
    lab["running"] = _ours(lab.get("pid"), "kubelab")
    lab["etcd_running"] = _ours(lab.get("etcd_pid"), "etcd")
    if lab["running"] and lab.get("server_url"):
        try:
            lab["api"] = get_version(lab)
        except (OSError, ValueError) as exc:
            lab["api_error"] = str(exc)
    return lab


# -- faults ------------------------------------------------------------------------------------


def fault_request(lab: dict, method: str, path: str = "/kubelab/faults", body=None, timeout: float = 10.0) -> dict:
    """``method`` on the lab's fault endpoint (with its CA and token); the JSON answer."""
    data = json.dumps(body).encode("utf-8") if body is not None else None
    request = urllib.request.Request(lab["server_url"].rstrip("/") + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
    if lab.get("token_path"):
        with open(lab["token_path"], encoding="utf-8") as handle:
            request.add_header("Authorization", "Bearer " + handle.read().strip())
    context = ssl.create_default_context(cafile=lab["ca_path"]) if lab.get("ca_path") else None
    try:
        with urllib.request.urlopen(request, timeout=timeout, context=context) as resp:
            return json.loads(resp.read().decode())
    except urllib.error.HTTPError as exc:
        detail = exc.read().decode(errors="replace")
        try:
            detail = json.loads(detail).get("message", detail)
        except ValueError:
            pass
        raise LabError("%s %s: HTTP %d: %s" % (method, path, exc.code, detail)) from exc
    except OSError as exc:
        raise LabError("%s %s: %s" % (method, path, exc)) from exc


def fault_command(args: argparse.Namespace) -> int:
    lab = read_lab(os.path.abspath(args.dir))
    if not lab or lab.get("state") != "running" or not lab.get("server_url"):
        raise LabError("no running lab cluster in %s" % os.path.abspath(args.dir))
    if args.add is not None:
        try:
            body = json.loads(args.add)
        except ValueError as exc:
            raise LabError("--add: not JSON: %s" % exc) from exc
        result = fault_request(lab, "POST", body=body)
    elif args.clear is not None:
        result = fault_request(lab, "DELETE", "/kubelab/faults" + ("/%d" % args.clear if args.clear >= 0 else ""))
    else:
        result = fault_request(lab, "GET")
    print(json.dumps(result, indent=2, sort_keys=True))
    return 0


def truth_command(args: argparse.Namespace) -> int:
    """Print (or with ``--clear`` empty) the claim ground truth of the running lab."""
    lab = read_lab(os.path.abspath(args.dir))
    if not lab or lab.get("state") != "running" or not lab.get("server_url"):
        raise LabError("no running lab cluster in %s" % os.path.abspath(args.dir))
    result = fault_request(lab, "DELETE" if args.clear else "GET", "/kubelab/claims/truth")
    print(json.dumps(result, indent=2, sort_keys=True))
    return 0


def _settled(lab: dict) -> tuple[bool, str]:
    """Every node Ready, and each ClusterPolicy/GPUCluster ready or refused for good (PrerequisiteNotMet)."""
    nodes = fault_request(lab, "GET", "/api/v1/nodes").get("items", [])
    waiting = [n["metadata"]["name"] for n in nodes
               if not any(c.get("type") == "Ready" and c.get("status") == "True"
                          for c in (n.get("status") or {}).get("conditions") or [])]
    if waiting:
        return False, "nodes not Ready: %s" % ", ".join(waiting[:5])
    for path in ("/apis/nvidia.com/v1/clusterpolicies", "/apis/nvidia.com/v1alpha1/gpuclusters"):
        try:
            items = fault_request(lab, "GET", path).get("items", [])
        except LabError:
            continue  # the CRD is not served in this scenario
        for obj in items:
            status = obj.get("status") or {}
            reasons = {c.get("reason") for c in status.get("conditions") or []}
            if status.get("state") != "ready" and "PrerequisiteNotMet" not in reasons:
                return False, "%s %s is %s" % (obj.get("kind"), obj["metadata"]["name"], status.get("state") or "pending")
    return True, "settled"


def settle_command(args: argparse.Namespace) -> int:
    """Wait until the scenario has settled (what an operator waits for before a gate phase)."""
    lab = read_lab(os.path.abspath(args.dir))
    if not lab or lab.get("state") != "running" or not lab.get("server_url"):
        raise LabError("no running lab cluster in %s" % os.path.abspath(args.dir))
    deadline = time.monotonic() + args.timeout
    while True:
        done, why = _settled(lab)
        if done:
            print("kubelab: settled")
            return 0
        if time.monotonic() > deadline:
            print("kubelab: not settled after %.0f s: %s" % (args.timeout, why), file=sys.stderr)
            return 1
        time.sleep(0.5)


# -- command line ------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m kubelab", description="The lab cluster: etcd and a Kubernetes API stand-in.")
    sub = parser.add_subparsers(dest="command", required=True)
    start = sub.add_parser("start", help="start etcd and the API server")
    start.add_argument("--dir", required=True, help="working directory (kubeconfig, lab.json, etcd data, logs)")
    start.add_argument("--scenario", help="scenario file (lab/scenarios/*.yml) to load at start")
    start.add_argument("--https", action="store_true", help="serve HTTPS with a generated CA (in DIR/tls)")
    start.add_argument("--token", action="store_true", help="require a generated bearer token (in DIR/token)")
    start.add_argument("--port", type=int, default=0, help="API port (default: a free one)")
    start.add_argument("--background", action="store_true", help="run detached; return once /version answers")
    start.add_argument("--wait-timeout", type=float, default=60.0, help="seconds --background waits (default 60)")
    start.add_argument("--etcd-source", choices=etcd_mod.SOURCES, help="use only this etcd (default: the first found)")
    start.add_argument("--no-controllers", action="store_true", help="serve the API only (no simulated components)")
    stop = sub.add_parser("stop", help="stop the lab cluster of DIR")
    stop.add_argument("--dir", required=True)
    stop.add_argument("--timeout", type=float, default=30.0, help="seconds before SIGKILL (default 30)")
    status = sub.add_parser("status", help="show the lab cluster of DIR (exit 0 running, 3 not running)")
    status.add_argument("--dir", required=True)
    settle = sub.add_parser("settle", help="wait until nodes are Ready and the GPU Operator CRs have settled")
    settle.add_argument("--dir", required=True)
    settle.add_argument("--timeout", type=float, default=180.0, help="seconds to wait (default 180)")
    fault = sub.add_parser("fault", help="inject, list or clear faults in the lab cluster of DIR")
    fault.add_argument("--dir", required=True)
    action = fault.add_mutually_exclusive_group()
    action.add_argument("--add", metavar="JSON", help="fault(s) to add, e.g. '{\"reboot\": {\"node\": \"gpu-1\", "
                        "\"seconds\": 10}}' (a list adds several)")
    action.add_argument("--list", action="store_true", help="list the faults (the default)")
    action.add_argument("--clear", metavar="ID", type=int, nargs="?", const=-1, help="remove fault ID, or all")
    truth = sub.add_parser("truth", help="print the ground truth per ResourceClaim of the lab cluster of DIR")
    truth.add_argument("--dir", required=True)
    truth.add_argument("--clear", action="store_true", help="empty the ground truth instead")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "start":
            return _background(args) if args.background else _foreground(args)
        if args.command == "fault":
            return fault_command(args)
        if args.command == "truth":
            return truth_command(args)
        if args.command == "settle":
            return settle_command(args)
        if args.command == "stop":
            ran = stop_lab(os.path.abspath(args.dir), args.timeout)
            print("kubelab: stopped" if ran else "kubelab: not running")
            return 0
        info = lab_status(os.path.abspath(args.dir))
        print(json.dumps(info, indent=2, sort_keys=True))
        if info.get("running") and "api" in info:
            return 0
        return EXIT_NOT_RUNNING if not info.get("running") else 1
    except (LabError, ScenarioError, etcd_mod.EtcdError) as exc:
        print("kubelab: error: %s" % exc, file=sys.stderr)
        return 1
