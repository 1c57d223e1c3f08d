# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run a module's main() in-process with given arguments and return its JSON result."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest

from ansible.module_utils.testing import patch_module_args


class ModuleExit(Exception):
    def __init__(self, result):
        super(ModuleExit, self).__init__(result)
        self.result = result


@pytest.fixture
def run_module(capsys):
    """``run_module(module, args)`` -> the result dict (``failed`` set when the module failed)."""

    def run(module, args):
        with patch_module_args(args):
            with pytest.raises(SystemExit):
                module.main()
        out = capsys.readouterr().out
        return json.loads(out)

    return run
