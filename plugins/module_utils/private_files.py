# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reading and atomically writing the private (0600) files that hold evidence and cluster state."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible.module_utils.common.text.converters import to_bytes


def read_text(path):
    """The file's text (UTF-8), or None when it cannot be read."""
    try:
        with open(path, "rb") as handle:
            return handle.read().decode("utf-8")
    except (IOError, OSError):
        return None


def write_private(path, text):
    """Write ``text`` to ``path`` with mode 0600 through a temporary file and a rename, so that a
    reader never sees half a file and the content is never readable by others, even briefly."""
    tmp = "%s.tmp-%d" % (path, os.getpid())
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(to_bytes(text))
    os.chmod(tmp, 0o600)
    os.rename(tmp, path)
