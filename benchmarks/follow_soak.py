"""A longer soak of the file follower under the random writer model of issue 18.

Runs seeded sequences of writes, rotations (rename, numbered), copytruncate, truncations
(with and without new writes at once), deletions with late writes and re-creation, and new
files against a real :class:`~crashcart.parsers.follow.Follower` (even seeds poll, odd seeds
use file events), checks every numbered line (tests/parsers/follow_model.py), and prints the
totals by class. Exit code 1 when any sequence broke the contract; its seed is printed.

Run it directly: ``python benchmarks/follow_soak.py [--sequences 40] [--seed 20251123]
[--steps 25] [--max-line 1000000]``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "parsers"))

from follow_model import run_sequence  # noqa: E402

CLASSES = (
    "lines", "bytes", "delivered", "duplicates", "reordered", "mixed", "lost_announced",
    "lost_announced_bytes", "said_lost_bytes", "lost_unseen", "lost_unannounced",
    "lost_unannounced_bytes", "truncations",
)  # fmt: skip


def main() -> int:
    """Run the sequences and print one line each, then the totals."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sequences", type=int, default=40)
    parser.add_argument("--seed", type=int, default=20251123, help="the first seed")
    parser.add_argument("--steps", type=int, default=25, help="operations per sequence")
    parser.add_argument("--max-line", type=int, default=1_000_000, help="longest line, bytes")
    args = parser.parse_args()
    totals = dict.fromkeys(CLASSES, 0)
    operations = 0
    failed = []
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="follow-soak-") as scratch:
        for seed in range(args.seed, args.seed + args.sequences):
            model, result = run_sequence(
                seed, args.steps, Path(scratch) / "logs", max_line=args.max_line
            )
            operations += len(model.operations)
            for name in CLASSES:
                totals[name] += getattr(result, name)
            if not result.ok:
                failed.append(seed)
            mode = "poll" if seed % 2 == 0 else "events"
            print(
                f"seed {seed} ({mode}): {'ok' if result.ok else 'BROKEN'}, {result.lines} lines, "
                f"{result.duplicates} duplicates, {result.mixed} mixed, "
                f"{result.lost_announced} lost with a notice, {result.lost_unseen} unseen, "
                f"{result.lost_unannounced} lost without"
            )
            for example in result.examples:
                print("   ", example)
    elapsed = time.monotonic() - started
    print()
    print(
        f"{args.sequences} sequences, {operations} operations, {totals['lines']:,} lines, "
        f"{totals['bytes'] / 1e6:.1f} MB in {elapsed:.0f} s"
    )
    print(f"  delivered exactly once:        {totals['delivered']:,}")
    print(f"  duplicates:                    {totals['duplicates']:,}")
    print(f"  reordered:                     {totals['reordered']:,}")
    print(f"  mixed or torn fragments:       {totals['mixed']:,}")
    print(
        f"  lost, announced:               {totals['lost_announced']:,} lines "
        f"({totals['lost_announced_bytes']:,} bytes; the notices said at least "
        f"{totals['said_lost_bytes']:,})"
    )
    print(f"  lost before any byte was read: {totals['lost_unseen']:,} lines (unavoidable)")
    print(
        f"  lost, unannounced:             {totals['lost_unannounced']:,} lines "
        f"({totals['lost_unannounced_bytes']:,} bytes)"
    )
    print(f"  truncations in the model:      {totals['truncations']:,}")
    if failed:
        print(f"broken sequences (seeds): {failed}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
