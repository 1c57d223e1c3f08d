# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reading one gate run's evidence directory as a judge needs it: every record measured without
following a link, the bytes that were hashed kept, so the record judged is the record verified.

Used by ``canary_evidence`` (the canary clearance) and ``gate_decision`` (the gate decision). Whether
the files match the index is :func:`records.judge_run_dir` (the rule of ``artifact_index state=verified``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json
import os
import stat

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.evidence import artifacts
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.evidence import private_files as pf
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.evidence import records as evidence

#: A record larger than this is not read (records are a few hundred KiB at most).
MAX_RECORD_BYTES = 64 * 1024 * 1024


def observe(path, limit=MAX_RECORD_BYTES):
    """What :func:`records.judge_run_dir` needs of a file, measured without following a link, and
    the bytes that were hashed: ``(observed, data)``."""
    try:
        info = os.lstat(path)
    except OSError:
        return {"exists": False}, None
    if stat.S_ISLNK(info.st_mode):
        return {"exists": True, "is_link": True, "is_file": False}, None
    if not stat.S_ISREG(info.st_mode):
        return {"exists": True, "is_file": False}, None
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        return {"exists": True, "is_file": True, "error": str(exc)}, None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return {"exists": True, "is_file": False}, None
        if info.st_size > limit:
            return {"exists": True, "is_file": True, "error": "larger than %d bytes" % limit}, None
        chunks = []
        while True:
            block = os.read(fd, 1024 * 1024)
            if not block:
                break
            chunks.append(block)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    return {"exists": True, "is_file": True, "size": len(data), "sha256": hashlib.sha256(data).hexdigest(),
            "mode": stat.S_IMODE(info.st_mode)}, data


def measure(path, follow=True):
    """``exists``, ``is_file``, ``size``, ``sha256``, ``mode`` of a file of any size (read in chunks, never
    kept). ``follow=False``: a symbolic link is reported (``is_link``) and never opened."""
    try:
        info = os.stat(path) if follow else os.lstat(path)
    except OSError:
        return {"exists": False}
    if stat.S_ISLNK(info.st_mode):
        return {"exists": True, "is_link": True, "is_file": False}
    if not stat.S_ISREG(info.st_mode):
        return {"exists": True, "is_file": False}
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            for chunk in iter(lambda: handle.read(1024 * 1024), b""):
                digest.update(chunk)
    except (IOError, OSError) as exc:
        return {"exists": True, "is_file": True, "error": str(exc)}
    return {"exists": True, "is_file": True, "size": info.st_size, "sha256": digest.hexdigest(),
            "mode": stat.S_IMODE(info.st_mode)}


def verify_artifacts(run_directory):
    """The problems of the run's rollback artifacts (``artifacts/index.json``, the rule of ``artifact_index
    state=verified`` without the etcd structural check): ``(reasons, checked)``. A run without an artifact
    index has nothing to check (its phases say whether they needed one)."""
    index_path = os.path.join(run_directory, artifacts.INDEX_DIR, artifacts.INDEX_FILE)
    if not os.path.lexists(index_path):
        return [], 0
    seen, raw = observe(index_path)
    if raw is None:
        return ["%s: cannot be read (%s); expected the run's artifact index" % (
            index_path, seen.get("error") or ("a symbolic link" if seen.get("is_link") else "not a file"))], 0
    try:
        index = artifacts.load_index(raw.decode("utf-8"), os.path.basename(run_directory))
    except (artifacts.ArtifactError, UnicodeDecodeError) as exc:
        return ["%s: %s" % (index_path, exc)], 0
    reasons = []
    entries = index.get("artifacts") or []
    plan = artifacts.verification_plan(index)
    for item in plan:
        if item["problem"]:
            problems = [item["problem"]]
        else:
            observed = measure(item["path"])
            problems = ["cannot be read: %s" % observed["error"]] if observed.get("error") else \
                artifacts.judge(entries[item["position"]], observed)
        if problems:
            reasons.append("%s: the rollback artifact %s (%s) does not verify: %s" % (
                index_path, item["path"], item["kind"], "; ".join(problems)))
    return reasons, len(plan)


def read_run(root, run_id, what="the run"):
    """The run directory ``<root>/<run_id>`` read and verified.

    Returns ``{run_dir, reasons, index, index_sha256, observed, data}``: ``reasons`` lists every problem
    (each naming the path, what was found and what was expected; empty = the run's evidence verifies),
    ``index`` is None when it could not be read, ``data`` maps each record file to the bytes hashed.
    ``what`` names the run in the messages (e.g. "the canary run")."""
    out = {"run_dir": os.path.join(root, run_id), "reasons": [], "index": None, "index_sha256": None,
           "observed": {}, "data": {}}
    reasons = out["reasons"]
    problem = pf.check_private_root(root)
    if problem:
        reasons.append("evidence_root: %s" % problem)
        return out
    run_dir = out["run_dir"]
    if not os.path.lexists(run_dir):
        reasons.append("%s: no evidence directory for %s %s (found nothing, expected its gate run's evidence)"
                       % (run_dir, what, run_id))
        return out
    if os.path.islink(run_dir) or not os.path.isdir(run_dir):
        reasons.append("%s: the run directory is a link or not a directory; expected a directory" % run_dir)
        return out
    mode = stat.S_IMODE(os.lstat(run_dir).st_mode)
    if mode & 0o077:
        reasons.append("%s: the run directory has mode %04o; expected 0700" % (run_dir, mode))
    index_path = os.path.join(run_dir, evidence.INDEX_FILE)
    seen, raw = observe(index_path)
    if seen.get("is_link"):
        reasons.append("%s: the evidence index is a symbolic link; expected a file" % index_path)
        return out
    if raw is None:
        reasons.append("%s: %s; expected %s's evidence index" % (
            index_path, "cannot be read" if seen.get("exists") else "does not exist", what))
        return out
    try:
        index = evidence.load_index(raw.decode("utf-8"), run_id)
    except (evidence.EvidenceError, UnicodeDecodeError) as exc:
        reasons.append("%s: %s" % (index_path, exc))
        return out
    out["index"], out["index_sha256"] = index, seen.get("sha256")
    if index.get("run_id") != run_id:
        reasons.append("%s: run_id found %r, expected %r" % (index_path, index.get("run_id"), run_id))
    try:
        names = os.listdir(run_dir)
    except OSError as exc:
        reasons.append("%s: cannot be listed: %s" % (run_dir, exc))
        return out
    files = set(evidence.record_names(names)) | set(e["file"] for e in index["records"])
    for name in sorted(files):
        if os.path.basename(name) != name or name in ("", ".", ".."):
            out["observed"][name] = {"exists": False}
            continue
        out["observed"][name], out["data"][name] = observe(os.path.join(run_dir, name))
        if out["observed"][name].get("error"):
            reasons.append("%s: cannot be read: %s" % (os.path.join(run_dir, name), out["observed"][name]["error"]))
    for bad in evidence.judge_run_dir(index, out["observed"]):
        reasons.append("%s: does not verify against the evidence index: %s" % (
            os.path.join(run_dir, bad["file"]), "; ".join(bad["problems"])))
    return out


def load_record(run, name):
    """``(record, error)`` of a record file of a :func:`read_run` result, from the bytes that were hashed."""
    raw = run["data"].get(name)
    if raw is None:
        return None, "%s: not read" % os.path.join(run["run_dir"], name)
    try:
        return json.loads(raw.decode("utf-8")), None
    except (ValueError, UnicodeDecodeError) as exc:
        return None, "%s: not a JSON record: %s" % (os.path.join(run["run_dir"], name), exc)
