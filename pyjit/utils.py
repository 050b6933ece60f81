"""Process-wide statistics pyjit keeps as it works.

`counters[group][name]` counts events, e.g. counters["stats"]["unique_graphs"] or
counters["inductor"]["compiles"] (C compiler runs). Every group is a Counter, created
on first use; tests and users read them, and may clear them (`counters.clear()`).
"""

import collections

counters: collections.defaultdict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
