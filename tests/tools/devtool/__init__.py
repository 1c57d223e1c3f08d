# Copyright: gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""devtool: what ``./dra-gate`` does beyond dispatching (docs/development.md).

Standard library only: it runs before ``.venv`` exists, with the python that will create it.

- ``common``       the checkout's layout, messages, running commands, worker counts
- ``environment``  setup: ``.venv``, requirements (hash stamp), Debian packages, collection link
- ``runner``       the stage runner: ``== stage:`` lines, recap, pass/fail/skip accounting
- ``stages``       the pytest stages (units, lab, integration) and lint
- ``sanity``       ansible-test sanity offline: the copy of the collection, the get-pip stand-in
- ``scenarios``    the molecule stage: scenarios N at a time, each logged whole when it ends
- ``labctl``       start, settle and stop the lab cluster (for preflight)
- ``preflight``    the preflight command and the newest summary.md
- ``rehearsal``    the rehearse command: the whole gate (site.yml) against three labs (tests/gate_lab.py)
- ``bench``        bench/bench_*.py
- ``cli``          the commands ``./dra-gate`` hands over
"""
