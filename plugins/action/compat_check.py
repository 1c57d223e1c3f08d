# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for ``gpufleet.dra_gate.compat_check``: evaluates on the controller.

It loads the matrix (default: the bundled ``<collection>/data/matrix``), validates the options
against the module's argument spec, calls :func:`compat.evaluate` (with the play's coverage:
``expected_hosts`` against the hosts that answered) and returns its result; whether the task fails
is :func:`gate.decide`'s rule (:func:`compat.gate_decision`, returned as ``gate``). It never transfers or runs a
module on the target.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.errors import UnsupportedError
from ansible.plugins.action import ActionBase

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.compat.evaluate import (
    ARGUMENT_SPEC,
    CompatError,
    coverage_of,
    evaluate,
    gate_decision,
    summarize,
)
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.compat.matrix import MatrixError, load_matrix

#: ``<collection>/data/matrix``, found relative to this file (plugins/action/compat_check.py).
BUNDLED_MATRIX_DIR = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "data", "matrix")

# ``nodes`` (one facts dict per host, 10,000 hosts and more) and ``cluster`` (in the gpu_cluster_facts
# form, one dict per Kubernetes node) are checked by compat's normalize_nodes and normalize_cluster
# instead: ArgumentSpecValidator deep-copies every value it validates, which costs about 0.1 ms
# per node, and would refuse keys a newer gpu_cluster_facts adds.
_SPEC_WITHOUT_NODES = dict((k, v) for k, v in ARGUMENT_SPEC.items() if k not in ("nodes", "cluster"))


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
        args = dict(self._task.args)
        nodes = args.pop("nodes", None)
        cluster = args.pop("cluster", None)
        validation = ArgumentSpecValidator(_SPEC_WITHOUT_NODES).validate(args)
        errors = list(validation.errors.errors)
        if errors:
            msg = validation.errors.msg
            if isinstance(errors[0], UnsupportedError):
                msg = "Unsupported parameters for (%s) module: %s" % (self._task.action, msg)
            result.update(failed=True, msg=msg)
            return result
        args = validation.validated_parameters
        try:
            matrix = load_matrix(self._matrix_path(args.get("matrix")))
            evaluated = evaluate(nodes, cluster=cluster, target=args.get("target"),
                                 matrix=matrix, releases=args.get("releases"), coverage=coverage_of(args))
        except (CompatError, MatrixError) as exc:
            result.update(failed=True, msg=str(exc))
            return result
        result.update(evaluated)
        fail_on = args["fail_on"]
        result["gate"] = gate_decision(evaluated, fail_on)
        result["failed"] = result["gate"]["failed"]
        result["msg"] = summarize(evaluated, fail_on)
        return result
