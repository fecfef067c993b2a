"""Times Hermes's matcher on one case, for bench:fuzzy's comparison (BENCH_HERMES).

Reads {"content", "search", "runs"} as JSON on stdin; imports `tools.fuzzy_match` from the Hermes
checkout named on the command line (NousResearch/hermes-agent; not part of this repository) and
calls its `fuzzy_find_and_replace(content, search, "x", False)` `runs` times. Prints one JSON line:
the median in ms, the strategy and the match count of the last call.
"""
import json
import sys
import time

sys.path.insert(0, sys.argv[1])
from tools.fuzzy_match import fuzzy_find_and_replace  # noqa: E402

case = json.load(sys.stdin)
times = []
result = None
for _ in range(int(case.get("runs", 3))):
    start = time.perf_counter()
    result = fuzzy_find_and_replace(case["content"], case["search"], "x", False)
    times.append((time.perf_counter() - start) * 1000)
times.sort()
_, count, strategy, _ = result
print(json.dumps({"median_ms": times[len(times) // 2], "strategy": strategy, "matches": count}))
