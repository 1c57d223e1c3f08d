# Copyright: gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What every part of the tool shares: the checkout's layout, messages, running commands."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

PROG = "dra-gate"
PYTHON_MIN = (3, 11)


class ToolError(Exception):
    """A failure the user can act on: printed as ``dra-gate: error: MESSAGE``, never as a traceback."""


def log(message: str) -> None:
    """A progress or warning line on stderr, ``dra-gate: MESSAGE``."""
    sys.stdout.flush()
    print(f"{PROG}: {message}", file=sys.stderr, flush=True)


def say(text: str = "") -> None:
    """A line of the report on stdout, in order with the commands' own output."""
    print(text, flush=True)


@dataclasses.dataclass(frozen=True)
class Layout:
    """Where things are in a checkout (``root``, absolute and without symlinks)."""

    root: Path
    evidence_root: Path

    @classmethod
    def of(cls, root: str | os.PathLike, environ: Mapping[str, str] | None = None) -> Layout:
        environ = os.environ if environ is None else environ
        root = Path(os.path.realpath(root))
        # Where `preflight` keeps gate runs' evidence (absolute); override with DRA_GATE_EVIDENCE_ROOT.
        evidence = environ.get("DRA_GATE_EVIDENCE_ROOT") or str(root / "evidence")
        return cls(root=root, evidence_root=Path(os.path.abspath(evidence)))

    @property
    def venv(self) -> Path:
        return self.root / ".venv"

    @property
    def venv_python(self) -> Path:
        return self.venv / "bin" / "python"

    @property
    def stamp(self) -> Path:
        """The sha256 of requirements/*.txt as last installed into .venv."""
        return self.venv / ".requirements.sha256"

    @property
    def cache(self) -> Path:
        return self.root / ".cache"

    @property
    def collections_dir(self) -> Path:
        return self.cache / "collections"

    @property
    def collection_link(self) -> Path:
        return self.collections_dir / "ansible_collections" / "gpufleet" / "dra_gate"

    @property
    def sanity_collections(self) -> Path:
        # ansible-test needs a physical copy whose path ends in ansible_collections/<namespace>/<name>.
        return self.cache / "sanity" / "ansible_collections"

    @property
    def sanity_root(self) -> Path:
        return self.sanity_collections / "gpufleet" / "dra_gate"


def run(argv: Sequence[str | os.PathLike], **kwargs) -> int:
    """Run a command to its end (output inherited unless redirected); its exit status, 127 when not found."""
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        process = subprocess.Popen([os.fspath(arg) for arg in argv], **kwargs)
    except FileNotFoundError:
        log(f"{os.fspath(argv[0])}: command not found")
        return 127
    return wait(process)


def wait(process: subprocess.Popen) -> int:
    """Wait for ``process`` as the shell does: interrupted, let it end first, then go on interrupting.

    A Ctrl-C reaches the command from the terminal by itself (pytest then tears its labs down);
    a SIGTERM to this tool (SystemExit, see cli) is passed on to it.
    """
    interrupted: BaseException | None = None
    while True:
        try:
            rc = process.wait()
            break
        except KeyboardInterrupt as error:
            interrupted = error
        except SystemExit as error:
            interrupted = error
            process.terminate()
    if interrupted is not None:
        raise interrupted
    return rc


def quiet(argv: Sequence[str | os.PathLike], **kwargs) -> int:
    """Run a command with its output discarded; its exit status (127 when not found)."""
    return run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **kwargs)


def output(argv: Sequence[str | os.PathLike], **kwargs) -> str | None:
    """A command's stdout less trailing newlines (like the shell's ``$(...)``), or None when it failed."""
    try:
        done = subprocess.run([os.fspath(arg) for arg in argv], capture_output=True, text=True, check=False, **kwargs)
    except FileNotFoundError:
        return None
    if done.returncode != 0:
        return None
    return done.stdout.rstrip("\n")


def workers(environ: Mapping[str, str] | None, name: str, default: int = 2) -> int:
    """The worker count in ``environ[name]`` (default os.environ; unset or empty: ``default``); a clear
    error when not a number."""
    environ = os.environ if environ is None else environ
    value = environ.get(name, "").strip()
    if not value:
        return default
    try:
        return int(value)
    except ValueError:
        raise ToolError(f"{name} must be a whole number of workers, not {value!r}") from None
