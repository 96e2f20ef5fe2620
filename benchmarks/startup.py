"""Start-up: `crashcart analyze` on small logs, warm cache, against the 150 ms target (issue 15).

Every command is run N times, round-robin (so a change in the machine's load hits them all
alike), with ``python -c pass`` as the floor measured in the same run: the interpreter and its
site-packages alone. For each it prints the median and best wall time and the median CPU time
(user + system of the child, from ``wait4``); CPU time is what the command itself costs, wall
time what a user waits, which on a shared machine includes waiting for a core. The load
average before and after is printed with them.

The cache (rule base, prefilter databases) lives in a fresh temporary ``CRASHCART_CACHE_DIR``,
filled by one run before timing ("warm"); the first run's time is printed as the cold start.
Bytecode is written and used as an installed package's would be (``PYTHONDONTWRITEBYTECODE`` is
removed from the children's environment). Run it directly::

    python benchmarks/startup.py --runs 21
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_MS = 150.0
#: Small logs (< 100 KB) of the corpus: a divergence without a traceback (2 KB), a DataLoader
#: worker's crash with tqdm bars and a traceback (13 KB), a NaN cascade ending in a traceback
#: (95 KB). A traceback loads the grammars (pyparsing); the first log needs none.
LOGS = (
    "corpus/nan_diverge_after_warmup_plain/train.log",
    "corpus/dataloader_worker_exit/train.log",
    "corpus/cascade_nan_target_clip_nonfinite_histc/train.log",
)


def run_once(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Run ``argv`` with its output drained; return (wall seconds, CPU seconds of the child)."""
    started = time.perf_counter()
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    assert process.stdout is not None
    process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        raise RuntimeError(f"{' '.join(argv)} exited with {os.waitstatus_to_exitcode(status)}")
    return wall, usage.ru_utime + usage.ru_stime


def commands(logs: list[Path]) -> list[tuple[str, list[str]]]:
    """(label, argv) of the floor and of each timed crashcart command."""
    python = sys.executable
    empty = ROOT / "benchmarks" / "data" / "six-bytes.log"
    empty.parent.mkdir(parents=True, exist_ok=True)
    empty.write_bytes(b"hello\n")
    rows = [("python -c pass (floor)", [python, "-c", "pass"])]
    rows.append(("analyze, 6-byte log", [python, "-m", "crashcart", "analyze", str(empty)]))
    analyze = [python, "-m", "crashcart", "analyze"]
    for log in logs:
        label = f"analyze {log.parent.name} ({log.stat().st_size / 1000:.0f} KB)"
        rows.append((label, [*analyze, str(log)]))
    rows.append((f"analyze --json {logs[0].parent.name}", [*analyze, "--json", str(logs[0])]))
    return rows


def measure(runs: int = 21, logs: list[Path] | None = None) -> dict[str, object]:
    """Time the commands; return the rows (label, median/min wall ms, median CPU ms), the cold
    start of the first log in ms, and the load averages before and after."""
    logs = logs or [ROOT / log for log in LOGS]
    for log in logs:
        if log.stat().st_size >= 100_000:
            raise ValueError(f"{log} is not a small log (< 100 KB)")
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    table = commands(logs)
    with tempfile.TemporaryDirectory(prefix="crashcart-cache-") as cache:
        env["CRASHCART_CACHE_DIR"] = cache
        cold_ms = run_once(table[2][1], env)[0] * 1000  # empty cache, bytecode maybe stale
        for _, argv in table:  # warm: bytecode written, rules and prefilters cached
            run_once(argv, env)
        load_before = os.getloadavg()
        walls: dict[str, list[float]] = {label: [] for label, _ in table}
        cpus: dict[str, list[float]] = {label: [] for label, _ in table}
        for _ in range(runs):
            for label, argv in table:
                wall, cpu = run_once(argv, env)
                walls[label].append(wall * 1000)
                cpus[label].append(cpu * 1000)
        load_after = os.getloadavg()
    rows = [
        (label, statistics.median(walls[label]), min(walls[label]), statistics.median(cpus[label]))
        for label, _ in table
    ]
    return {
        "rows": rows,
        "cold_ms": cold_ms,
        "load_before": load_before,
        "load_after": load_after,
        "runs": runs,
    }


def report(result: dict[str, object]) -> list[list[str]]:
    """The rows of the printed table, the target verdict in the last column."""
    rows = []
    floor = result["rows"][0][1]  # type: ignore[index]
    for label, wall, best, cpu in result["rows"]:  # type: ignore[attr-defined]
        verdict = "" if label.startswith("python") else ("met" if wall < TARGET_MS else "NOT met")
        over = "" if label.startswith("python") else f"{wall - floor:.0f}"
        rows.append([label, f"{wall:.0f}", f"{best:.0f}", f"{cpu:.0f}", over, verdict])
    return rows


def main() -> None:
    """Print the start-up table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21, help="timed runs of each command")
    args = parser.parse_args()
    result = measure(args.runs)
    header = ["command", "median ms", "best ms", "CPU ms", "over floor ms", f"< {TARGET_MS:.0f} ms"]
    rows = report(result)
    widths = [max(len(c) for c in column) for column in zip(header, *rows, strict=True)]
    print(f"Start-up, warm cache, {result['runs']} runs each (median wall; CPU = user + sys)")
    for row in [header, *rows]:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)))
    before, after = result["load_before"], result["load_after"]
    print(
        f"cold start (empty cache) of the first log: {result['cold_ms']:.0f} ms; "
        f"load average {before[0]:.2f} before, {after[0]:.2f} after, on {os.cpu_count()} cores"
    )


if __name__ == "__main__":
    main()
