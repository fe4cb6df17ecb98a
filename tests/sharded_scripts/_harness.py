"""The shared part of the sharded check scripts (``checks.py``, ``solver_checks.py``): the ``@check`` registry
and the loop that runs the checks and writes ``{name: "ok" | "skipped ..." | traceback}`` to OUT.json.

``SHARDED_CHECKS=a,b`` runs only those checks. Each script runs in its own process, so one registry each.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback

CHECKS = {}


def check(fn):
    CHECKS[fn.__name__] = fn
    return fn


def run_checks(out: str) -> None:
    results = {}
    only = os.environ.get("SHARDED_CHECKS")
    for name, fn in CHECKS.items():
        if only and name not in only.split(","):
            continue
        t0 = time.perf_counter()
        try:
            r = fn()
            results[name] = r if isinstance(r, str) else "ok"
        except Exception:
            results[name] = traceback.format_exc()
        print(f"{name}: {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    with open(out, "w") as fh:
        json.dump(results, fh, indent=1)
