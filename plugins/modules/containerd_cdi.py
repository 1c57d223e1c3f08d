#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: containerd_cdi
short_description: Enable CDI in containerd's configuration, with a backup first
version_added: 0.2.0
description:
  - Ensures C(enable_cdi = true) and C(cdi_spec_dirs) in the CRI plugin table for the installed containerd.
  - containerd 2.x (config version 3, C(plugins.'io.containerd.cri.v1.runtime')) - through a drop-in file in a
    directory that the main file's C(imports) already globs (2.x merges plugin tables), else an in-place edit.
  - containerd 1.7 (config version 2, C(plugins."io.containerd.grpc.v1.cri")) - an in-place edit of the file that
    carries the effective CRI table (1.x replaces a plugin's whole table from an import, so a small drop-in would
    drop the rest of it). Every other byte of the file is kept; runtime entries (C(nvidia)) are never touched.
  - containerd 1.6 and older have no CDI - refused, naming the version, before anything is written.
  - A file that does not parse is refused before anything is written. Files are parsed with C(tomllib)/C(tomli)
    when the node's Python has one; otherwise the original and the candidate are validated with
    C(containerd --config FILE config dump) when O(root=/), and refused otherwise.
  - Before a write the file is backed up (mode 0600) under O(backup_dir); the backup's path and sha256 are returned
    (C(artifact)) for M(gpufleet.dra_gate.artifact_index), and C(restore) is what
    M(gpufleet.dra_gate.containerd_runtime) takes to put it back.
  - Does not restart containerd (M(gpufleet.dra_gate.containerd_runtime) does). Registry credentials never appear in
    diffs, messages or returns. Standard library only, Python 3.8+.
author:
  - gpufleet maintainers (@gpufleet)
extends_documentation_fragment:
  - gpufleet.dra_gate.node_root
  - gpufleet.dra_gate.attributes.node
options:
  config:
    description: containerd's main config file (node path).
    type: path
    default: /etc/containerd/config.toml
  spec_dirs:
    description: The CDI spec directories containerd must scan (absolute node paths), in order.
    type: list
    elements: str
    default: [/etc/cdi, /var/run/cdi]
  containerd_version:
    description:
      - The installed containerd version (as C(containerd --version) prints it). Empty runs O(containerd) C(--version),
        which needs O(root=/).
    type: str
    default: ""
  containerd:
    description: The containerd binary (for C(--version) and the validation without a TOML parser).
    type: str
    default: containerd
  backup_dir:
    description: Directory (node path) of the backups, created mode 0700.
    type: path
    default: /var/lib/gpufleet/containerd-backups
  dropin_stem:
    description: Stem of the drop-in's name; the import glob's prefix and suffix are added (C(conf.d/*.toml) gives C(conf.d/99-gpufleet-cdi.toml)).
    type: str
    default: 99-gpufleet-cdi
  timeout:
    description: Deadline in seconds of each command; on expiry its process group is killed and the module fails naming it.
    type: float
    default: 30
attributes:
  check_mode:
    support: full
    description: Computes and reports the change (and the diff) without a backup or a write.
  diff_mode:
    support: full
    description: Returns the changed file's before and after, registry credentials redacted.
notes:
  - The change is text-level; with a TOML parser the merged result of the main file and its imports is checked to give
    CDI on with O(spec_dirs) (an import that overrides it is refused).
seealso:
  - module: gpufleet.dra_gate.containerd_runtime
  - module: gpufleet.dra_gate.artifact_index
"""

EXAMPLES = r"""
- name: Enable CDI in containerd's configuration
  gpufleet.dra_gate.containerd_cdi:
    spec_dirs: [/etc/cdi, /var/run/cdi]
  register: cdi_config

- name: Plan the change on a recorded tree
  gpufleet.dra_gate.containerd_cdi:
    root: /tmp/trees/gpu-node-07
    containerd_version: 2.1.4
  check_mode: true
  diff: true
"""

RETURN = r"""
changed:
  description: Whether the file was (or in check mode would be) written.
  returned: always
  type: bool
method:
  description: C(dropin) (a drop-in file written), C(edit) (a file edited in place) or C(none) (already right).
  returned: always
  type: str
  sample: edit
target:
  description: The node path of the file written or to write.
  returned: always
  type: str
reason:
  description: Why this method and this file.
  returned: always
  type: str
containerd_version:
  description: The containerd version the change is for.
  returned: always
  type: str
cri_table:
  description: The plugin table that holds the CDI settings.
  returned: always
  type: str
  sample: io.containerd.grpc.v1.cri
config_version:
  description: The config format version (2 for 1.7, 3 for 2.x).
  returned: always
  type: int
validated_by:
  description: How the files were validated - C(toml) (parsed, merged result checked) or C(containerd config dump).
  returned: always
  type: str
backup:
  description:
    - The backup taken before the write - C(path), C(sha256), C(size), C(source) (the file backed up); C(path) null
      when the target did not exist (a new drop-in). Null when nothing was written.
  returned: always
  type: dict
artifact:
  description: The backup as an M(gpufleet.dra_gate.artifact_index) entry (C(path), C(kind), C(source), C(sha256), C(size)); null without a backup file.
  returned: always
  type: dict
restore:
  description: What puts the file back - C(target), C(backup) (null - remove the target), C(sha256); null when nothing was written.
  returned: always
  type: dict
started_at:
  description: Start, RFC 3339 UTC.
  returned: always
  type: str
finished_at:
  description: End, RFC 3339 UTC.
  returned: always
  type: str
duration_seconds:
  description: Duration in seconds.
  returned: always
  type: float
"""

import hashlib
import os
import tempfile

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.common import clock
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.common.module_run import ModuleRun
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.wrappers import command_runner
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node import containerd as ctd
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node import containerd_cdi as cdi
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.evidence.private_files import (
    PrivateFileError, ensure_private_dir, replace_keeping_mode, write_private)


def real(root, path):
    return path if root in ("", "/") else os.path.join(root, path.lstrip("/"))


def read(root, path):
    try:
        with open(real(root, path), "rb") as handle:
            data = handle.read()
    except (IOError, OSError) as exc:
        raise cdi.CdiError("%s: cannot read: %s" % (path, exc.strerror))
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise cdi.CdiError("%s: not UTF-8 text; containerd config must be UTF-8 TOML" % path)


def dump_check(runner, binary, text, directory, spec_dirs=None):
    """Validate ``text`` with ``containerd --config FILE config dump`` (no TOML parser on the node)."""
    fd, path = tempfile.mkstemp(prefix=".gpufleet-cdi-", suffix=".toml", dir=directory)
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        result = runner.run([binary, "--config", path, "config", "dump"])
    finally:
        os.unlink(path)
    if result.rc != 0:
        raise cdi.CdiError("containerd refuses the config: %s: %s" % (result.describe(), cdi.redact_text(result.stderr.strip())[-400:]))
    if spec_dirs is not None:
        dump = cdi.read_dump(result.stdout)[0]
        ok, problems = cdi.verify_dump(dump, {"enable_cdi": True, "cdi_spec_dirs": spec_dirs}, expect_nvidia=False)[:2]
        if not ok:
            raise cdi.CdiError("the candidate does not give CDI on: %s" % "; ".join(problems))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            root=dict(type="path", default="/"),
            config=dict(type="path", default="/etc/containerd/config.toml"),
            spec_dirs=dict(type="list", elements="str", default=["/etc/cdi", "/var/run/cdi"]),
            containerd_version=dict(type="str", default=""),
            containerd=dict(type="str", default="containerd"),
            backup_dir=dict(type="path", default="/var/lib/gpufleet/containerd-backups"),
            dropin_stem=dict(type="str", default=cdi.DEFAULT_DROPIN_STEM),
            timeout=dict(type="float", default=30),
        ),
        supports_check_mode=True,
    )
    run = ModuleRun(module)
    started = run.started
    params = module.params
    root = params["root"] or "/"
    result = dict(changed=False, method="none", target=params["config"], reason="", containerd_version=None,
                  cri_table=None, config_version=None, validated_by=None, backup=None, artifact=None, restore=None)

    def finish(**extra):
        result.update(extra)
        return run.timed(result)

    def fail(msg):
        module.fail_json(msg="containerd_cdi: %s" % cdi.redact_text(msg), **finish())

    if not params["config"].startswith("/"):
        fail("config must be an absolute node path, got %r" % params["config"])
    if not params["dropin_stem"] or "/" in params["dropin_stem"]:
        fail("dropin_stem must be a file name stem without '/', got %r" % params["dropin_stem"])
    if not params["timeout"] > 0:
        fail("timeout must be a positive number of seconds, got %r" % params["timeout"])
    runner = command_runner.Runner(params["timeout"])
    change = None
    try:
        version = params["containerd_version"]
        if not version:
            if root not in ("", "/"):
                raise cdi.CdiError("containerd_version is required with root=%s (a recorded tree runs no binary)" % root)
            rc, out, err = runner([params["containerd"], "--version"])
            version = ctd.parse_containerd_version(out) if rc == 0 else None
            if not version:
                raise cdi.CdiError("%s --version: exit code %s, no version in its output: %s" % (params["containerd"], rc, (err or out).strip()[:200]))
        result["containerd_version"] = version
        main_text = read(root, params["config"])
        imports = [(node, read(root, node)) for node, dummy in cdi.expand_imports(cdi.import_patterns(main_text), params["config"], root)]
        change = cdi.compute(version, params["config"], main_text, imports, params["spec_dirs"], params["dropin_stem"])
        if not change["validated"]:
            if root not in ("", "/"):
                raise cdi.CdiError("no TOML parser on this Python (tomllib needs 3.11; install tomli) and root=%s: "
                                   "the candidate cannot be validated with the binary; refused" % root)
            directory = os.path.dirname(params["config"])
            dump_check(runner, params["containerd"], main_text, directory)
            if change["method"] != "none":
                dump_check(runner, params["containerd"], change["after"], directory,
                           params["spec_dirs"] if change["target"] == params["config"] or change["method"] == "dropin" else None)
    except command_runner.CommandTimedOut as exc:
        fail(str(exc))
    except (cdi.CdiError, command_runner.CommandError) as exc:
        fail(str(exc))
    result.update(method=change["method"], target=change["target"], reason=change["reason"], cri_table=change["cri_table"],
                  config_version=change["config_version"],
                  validated_by="toml" if change["validated"] else "containerd config dump")
    if change["method"] == "none":
        module.exit_json(**finish())
    result["changed"] = True
    diff = dict(before_header=change["target"], after_header=change["target"],
                before=cdi.redact_text(change["before"] or ""), after=cdi.redact_text(change["after"]))
    if module._diff:
        result["diff"] = diff
    if module.check_mode:
        module.exit_json(**finish())

    target_real = real(root, change["target"])
    backup = dict(path=None, sha256=None, size=None, source=change["target"])
    try:
        if change["before"] is not None:
            original = change["before"].encode("utf-8")
            with open(target_real, "rb") as handle:
                if handle.read() != original:
                    raise cdi.CdiError("%s changed while it was being read; nothing written" % change["target"])
            stamp = clock.name_stamp(started, micro=True)
            backup_node = os.path.join(params["backup_dir"], "%s.%s.bak" % (os.path.basename(change["target"]), stamp))
            ensure_private_dir(real(root, params["backup_dir"]))
            write_private(real(root, backup_node), original)
            backup.update(path=backup_node, sha256=hashlib.sha256(original).hexdigest(), size=len(original))
        elif not os.path.isdir(os.path.dirname(target_real)):
            os.makedirs(os.path.dirname(target_real), 0o755)
        replace_keeping_mode(target_real, change["after"].encode("utf-8"))  # a new drop-in: 0600
    except (cdi.CdiError, PrivateFileError) as exc:
        fail(str(exc))
    except (IOError, OSError) as exc:
        fail("%s: cannot write: %s" % (change["target"], exc))
    result["backup"] = backup
    result["restore"] = dict(target=change["target"], backup=backup["path"], sha256=backup["sha256"])
    if backup["path"]:
        result["artifact"] = dict(path=real(root, backup["path"]), kind="containerd-config", sha256=backup["sha256"], size=backup["size"],
                                  source="containerd_cdi backup of %s" % change["target"])
    module.exit_json(**finish())


if __name__ == "__main__":
    main()
