# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    # Where a module records what it changed. The default variant names the shared rules; a
    # module that writes its own files extends O(evidence_dir) with a line naming them.
    DOCUMENTATION = r"""
options:
  evidence_dir:
    description:
      - The evidence directory. Directories are created 0700 and files written 0600 through the
        collection's private-file writer; an evidence file is never replaced. Nothing is written in
        check mode.
    type: path
"""

    # Modules that record every object they write, before and after, under a new stamped directory.
    STAMPED = r"""
options:
  evidence_dir:
    description:
      - Directory under which a new C(<UTC stamp>/) directory receives each object before and after it
        is written (C(before/.../<name>.json), C(after/.../<name>.json); directories 0700, files 0600,
        never replaced). Nothing is written in check mode.
    type: path
"""
