# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for ``gpufleet.dra_gate.compat_check``: evaluates on the controller.

It loads the matrix (default: the bundled ``<collection>/data/matrix``), validates the options
against the module's argument spec, calls :func:`compat.evaluate` and returns its result. It never
transfers or runs a module on the target.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.compat import (
    ARGUMENT_SPEC,
    CompatError,
    evaluate,
    should_fail,
    summarize,
)
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.compat_matrix import MatrixError, load_matrix

#: ``<collection>/data/matrix``, found relative to this file (plugins/action/compat_check.py).
BUNDLED_MATRIX_DIR = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "data", "matrix")


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False
    _supports_check_mode = True
    _supports_async = False

    def _matrix_path(self, path):
        if not path:
            return BUNDLED_MATRIX_DIR
        if os.path.isabs(path):
            return path
        return self._loader.path_dwim(path)

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        result["changed"] = False
        try:
            _validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        except AnsibleActionFail as exc:
            result.update(failed=True, msg=getattr(exc, "message", None) or str(exc))
            return result
        try:
            matrix = load_matrix(self._matrix_path(args.get("matrix")))
            evaluated = evaluate(args.get("nodes"), cluster=args.get("cluster"), target=args.get("target"),
                                 matrix=matrix, releases=args.get("releases"))
        except (CompatError, MatrixError) as exc:
            result.update(failed=True, msg=str(exc))
            return result
        result.update(evaluated)
        fail_on = args["fail_on"]
        result["failed"] = should_fail(evaluated["verdict"], fail_on)
        result["msg"] = summarize(evaluated, fail_on)
        return result
