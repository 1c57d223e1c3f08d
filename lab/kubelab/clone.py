# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A deep copy of API objects that is fast enough to make on every write.

Every object the lab handles is JSON data (dicts, lists, strings, numbers, booleans, None): a pickle round
trip copies that exactly, in C, about five times faster than ``copy.deepcopy`` (an 80 us pod copy becomes
17 us; the write path copies each object several times). Anything pickle refuses falls back to deepcopy.
"""

from __future__ import annotations

import copy
import pickle


def clone(obj):
    """A deep copy of ``obj`` (as ``copy.deepcopy``)."""
    if obj is None or isinstance(obj, (str, int, float, bool)):
        return obj
    try:
        return pickle.loads(pickle.dumps(obj, pickle.HIGHEST_PROTOCOL))
    except (pickle.PicklingError, TypeError, AttributeError):
        return copy.deepcopy(obj)
