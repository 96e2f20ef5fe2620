"""Memory over thousands of analyses in one process (issue 18).

Analyses the corpus's cases one after another with one rule base, as ``crashcart eval``, the TUI
and ``watch`` over many runs do, cycling over the cases until ``--analyses`` runs are done, and
samples the process's resident set (``VmRSS``) every ``--every`` analyses. The first pass over
the corpus is the warm-up (caches of interned strings, regex and allocator arenas fill as new
inputs are seen); the growth per 1,000 analyses is measured from its end to the last sample and
compared with ``--bound`` (MiB per 1,000). Before each run's engine state was released, every
analysis kept about 1.6 MiB (1,600 MiB per 1,000; a ``MemoryError`` at the 1,025th).

Run it directly: ``python benchmarks/rss_soak.py [--analyses 5000] [--every 250] [--bound 5]``.
Exit code 1 when the growth is over the bound.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def rss_mb(field: str = "VmRSS") -> float:
    """The resident set of this process now (``VmRSS``) or its peak (``VmHWM``), in MiB, from
    /proc/self/status (``getrusage``'s peak is updated lazily and can read below the last
    sample)."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def main() -> int:
    """Run the analyses, print a sample line every ``--every``, then the summary."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--analyses", type=int, default=5000)
    parser.add_argument("--every", type=int, default=250, help="sample RSS every N analyses")
    parser.add_argument("--bound", type=float, default=5.0, help="MiB per 1,000 after warm-up")
    parser.add_argument("--corpus", type=Path, default=ROOT / "corpus")
    args = parser.parse_args()

    from crashcart.analyzer import RuleBase, analyze
    from crashcart.evaluate import load_cases

    rulebase = RuleBase.load()
    cases = [directory for directory, _ in load_cases(args.corpus)]
    warmup = min(len(cases), args.analyses // 2)
    samples: list[tuple[int, float]] = [(0, rss_mb())]
    print(f"{len(cases)} cases, {args.analyses} analyses, warm-up {warmup}")
    print(f"{'analyses':>9} {'RSS MiB':>8} {'seconds':>8}")
    print(f"{0:>9} {samples[0][1]:>8.1f} {0:>8.1f}")
    started = time.monotonic()
    at_warmup = samples[0]
    for done in range(1, args.analyses + 1):
        analyze([cases[(done - 1) % len(cases)]], rulebase)
        if done == warmup:
            at_warmup = (done, rss_mb())
        if done % args.every == 0 or done == args.analyses:
            samples.append((done, rss_mb()))
            print(f"{done:>9} {samples[-1][1]:>8.1f} {time.monotonic() - started:>8.1f}")
    first, last = samples[0][1], samples[-1][1]
    peak = rss_mb("VmHWM")
    after = samples[-1][0] - at_warmup[0]
    growth = (last - at_warmup[1]) / after * 1000 if after else 0.0
    print(
        f"first {first:.1f} MiB, after warm-up ({at_warmup[0]}) {at_warmup[1]:.1f} MiB, "
        f"last {last:.1f} MiB, peak {peak:.1f} MiB"
    )
    verdict = "met" if growth <= args.bound else "NOT met"
    print(
        f"growth after warm-up: {growth:+.2f} MiB per 1,000 analyses "
        f"(bound {args.bound:g}; the leak of issue 18 was ~1,600): {verdict}"
    )
    return 0 if growth <= args.bound else 1


if __name__ == "__main__":
    sys.exit(main())
