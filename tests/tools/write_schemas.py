# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Write docs/gate-policy.schema.json and docs/decision-record.schema.json from the code's schemas
(tests/unit/plugins/module_utils/test_gate_policy.py fails when they differ). Run:
``env PYTHONPATH=$PWD/.cache/collections .venv/bin/python tests/tools/write_schemas.py``."""

import json
import os

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.evidence import decision_schema
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.judges import gate_policy

DOCS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs")

for name, schema in (("gate-policy.schema.json", gate_policy.SCHEMA),
                     ("decision-record.schema.json", decision_schema.SCHEMA)):
    with open(os.path.join(DOCS, name), "w", encoding="utf-8") as handle:
        handle.write(json.dumps(schema, indent=2, sort_keys=True) + "\n")
