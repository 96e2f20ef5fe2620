"""``crashcart eval`` serial and parallel, side by side (issue 15).

Runs ``crashcart eval --json`` on the corpus with ``--jobs 1`` and with ``--jobs N`` (default:
the cores of this machine), alternating, ``--rounds`` times each; prints the wall times, their
medians, the speed-up, the load average around each run (other jobs on the machine take cores
the workers would use), and checks that both reports are identical.

Run it directly: ``python benchmarks/eval_jobs.py [--rounds 3] [--jobs N] [--corpus corpus]``.
Exit code 1 when the reports differ.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(jobs: int, corpus: Path) -> tuple[float, str]:
    """Wall seconds of one ``crashcart eval --json --jobs N`` and its report."""
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "crashcart", "eval", "--json", "--jobs", str(jobs), str(corpus)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode not in (0, 1):
        raise SystemExit(f"crashcart eval failed ({done.returncode}):\n{done.stderr}")
    return time.monotonic() - started, done.stdout


def main() -> int:
    """Alternate serial and parallel runs; print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--corpus", type=Path, default=ROOT / "corpus")
    args = parser.parse_args()
    times: dict[int, list[float]] = {1: [], args.jobs: []}
    reports: dict[int, str] = {}
    for round_ in range(args.rounds):
        # Alternating which goes first, so a change of load is shared between them.
        for jobs in (1, args.jobs) if round_ % 2 == 0 else (args.jobs, 1):
            seconds, reports[jobs] = run(jobs, args.corpus)
            times[jobs].append(seconds)
            load = os.getloadavg()[0]
            print(f"round {round_ + 1} --jobs {jobs}: {seconds:.2f} s (load average {load:.2f})")
    serial, parallel = statistics.median(times[1]), statistics.median(times[args.jobs])
    print(
        f"median: --jobs 1 {serial:.2f} s, --jobs {args.jobs} {parallel:.2f} s, "
        f"speed-up {serial / parallel:.2f}x on {os.cpu_count()} cores"
    )
    same = reports[1] == reports[args.jobs]
    print("reports identical" if same else "REPORTS DIFFER")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
