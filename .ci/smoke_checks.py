"""The smoke checks of one interpreter, run by .ci/smoke_matrix.py with a throwaway venv's Python.

It runs outside the repository, on crashcart as installed (the bundled example comes from the
installed package): ``analyze`` on a bundled log, the Python API, a durable-rules session in
which a rule fires (with DeprecationWarnings as errors), and ``watch`` on stdin. Prints one line
per check; exits 1 at the first that fails, with what it saw.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from importlib import resources
from pathlib import Path

EXAMPLE = resources.files("crashcart.rules") / "examples" / "cuda_oom" / "fragmentation.log"
CRASHCART = str(Path(sys.executable).with_name("crashcart"))
RULE = """\
id: cuda_oom.big
category: cuda_oom
title: big
confidence: 0.5
when:
  all:
    - fact: cuda_oom
      where: {requested_gib: {gte: 2}}
summary: x
fixes: [{title: t, command: c}]
"""
ENGINE = f"""\
import pathlib, tempfile
from crashcart.engine.durable import RuleSession
from crashcart.engine.rules import load_file
with tempfile.TemporaryDirectory() as folder:
    path = pathlib.Path(folder, "rule.yaml")
    path.write_text({RULE!r})
    errors = []
    rules = load_file(path, errors)
assert errors == [], errors
fact = {{"sid": "run", "id": 1, "seq": 1, "kind": "cuda_oom", "rank": 0, "line": 1,
        "requested_gib": 4.0}}
print([firing.rule.id for firing in RuleSession(rules).assert_fact(fact)])
"""


class CheckFailed(Exception):
    """A smoke check saw something other than what a working install gives."""


def run(argv: list[str], expected: int, stdin: bytes | None = None) -> str:
    """Run ``argv``; its stdout, once it exited with ``expected`` and printed no traceback."""
    result = subprocess.run(argv, input=stdin, capture_output=True, timeout=300, check=False)
    err = result.stderr.decode(errors="replace")
    if result.returncode != expected or "Traceback" in err:
        raise CheckFailed(f"{argv[-1]!r} exited with {result.returncode}, not {expected}:\n{err}")
    return result.stdout.decode()


def check_analyze() -> None:
    """``crashcart analyze`` on the bundled example names the OOM first."""
    out = run([CRASHCART, "analyze", str(EXAMPLE)], expected=1)
    if not out.startswith("1. cuda_oom"):
        raise CheckFailed(f"analyze printed:\n{out}")


def check_api() -> None:
    """The Python API's ``analyze`` gives the same root cause."""
    from crashcart import analyze

    report = analyze([str(EXAMPLE)])
    if not report.diagnoses or report.diagnoses[0].category != "cuda_oom":
        raise CheckFailed(f"the API found {[d.category for d in report.diagnoses]}")


def check_engine() -> None:
    """A durable-rules session fires a rule, DeprecationWarnings being errors."""
    out = run([sys.executable, "-W", "error::DeprecationWarning", "-c", ENGINE], expected=0)
    if out.strip() != "['cuda_oom.big']":
        raise CheckFailed(f"the engine fired {out.strip()}")


def check_watch() -> None:
    """``crashcart watch`` on stdin reports the OOM once, then its summary."""
    out = run([CRASHCART, "watch", "--json", "-"], expected=1, stdin=EXAMPLE.read_bytes())
    events = [json.loads(line) for line in out.splitlines() if line.strip()]
    found = [e["diagnosis"]["category"] for e in events if e["event"] == "diagnosis"]
    if found[:1] != ["cuda_oom"] or events[-1]["event"] != "summary":
        raise CheckFailed(f"watch printed:\n{out}")


CHECKS: list[tuple[str, Callable[[], None]]] = [
    ("analyze", check_analyze),
    ("python api", check_api),
    ("durable-rules session", check_engine),
    ("watch on stdin", check_watch),
]


def main() -> int:
    """Run every check; 0 when all pass."""
    for name, check in CHECKS:
        started = time.perf_counter()
        try:
            check()
        except CheckFailed as error:
            print(f"FAILED {name}: {error}")
            return 1
        print(f"ok {name} ({time.perf_counter() - started:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
