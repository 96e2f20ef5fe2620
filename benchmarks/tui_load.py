"""Responsiveness of ``crashcart tui`` while 200 files are being appended to.

A writer process appends training-log lines (metric lines, warnings, and now and then a real
traceback from the corpus) to 200 files in 20 run directories at about ``RATE`` lines a second in
all, while the app runs headless (``App.run_test()``). The benchmark measures the UI's event-loop
lag: it asks the loop to wake it every 20 ms and records how late each wake-up is. A late wake-up
is a moment the UI could not answer a key press, so the maximum and the p99 are what a person
feels as a freeze.

Run it directly: ``python benchmarks/tui_load.py [--seconds 10] [--rate 5000]``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUNS, FILES_PER_RUN = 20, 10
RATE = 5000  # lines per second over all files
TICK = 0.02  # seconds between the loop-lag samples

WRITER = r"""
import random, sys, time
from pathlib import Path

directory, rate, seconds = Path(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
crash = Path(sys.argv[4]).read_text(errors="replace")
files = sorted(directory.glob("*/*.log"))
handles = [path.open("a", buffering=1) for path in files]
steps = [0] * len(files)
rng = random.Random(0)
started = time.monotonic()
written = 0
while time.monotonic() - started < seconds:
    for _ in range(int(rate / 20)):  # a burst every 50 ms
        index = rng.randrange(len(files))
        steps[index] += 1
        step = steps[index]
        if step % 400 == 0:
            line = "UserWarning: The given NumPy array is not writable\n"
        else:
            line = f"step {step} loss {2.5 / (1 + step / 300):.4f} lr 3e-4 it/s {8 + rng.random():.2f}\n"
        handles[index].write(line)
        written += 1
    if written > rate * seconds / 2 and crash:  # one run crashes half-way
        handles[0].write(crash)
        crash = ""
    time.sleep(0.05)
print(written)
"""


async def _measure(directory: Path, seconds: float, rate: float) -> dict[str, float]:
    from crashcart.tui.app import CrashcartApp

    crash = ROOT / "rules/examples/cuda_oom/fragmentation.log"
    app = CrashcartApp(directory)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause(1.0)  # past start-up
        writer = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(directory), str(rate), str(seconds), str(crash)],
            stdout=subprocess.PIPE,
            text=True,
        )
        lags = []
        started = time.perf_counter()
        while time.perf_counter() - started < seconds:
            before = time.perf_counter()
            await asyncio.sleep(TICK)
            lags.append(time.perf_counter() - before - TICK)
        written = int(writer.communicate(timeout=60)[0] or 0)
        await pilot.pause(1.0)
        failed = sum(run.status == "failed" for run in app.runs.values())
    lags.sort()
    return {
        "lines": written,
        "lines_per_s": written / seconds,
        "median_ms": statistics.median(lags) * 1000,
        "p99_ms": lags[min(len(lags) - 1, int(len(lags) * 0.99))] * 1000,
        "max_ms": lags[-1] * 1000,
        "failed_runs": failed,
    }


def measure_load(seconds: float = 10.0, rate: float = RATE) -> dict[str, float]:
    """Event-loop lag of the TUI while 200 files grow by ``rate`` lines a second in all."""
    with tempfile.TemporaryDirectory(prefix="crashcart-tui-load-") as tmp:
        directory = Path(tmp)
        for run in range(RUNS):
            for index in range(FILES_PER_RUN):
                path = directory / f"run{run:02d}" / f"rank{index}.log"
                path.parent.mkdir(exist_ok=True)
                path.write_text("starting training\n")
        return asyncio.run(_measure(directory, seconds, rate))


def main() -> int:
    """Print the loop lag under load."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--rate", type=float, default=RATE)
    args = parser.parse_args()
    result = measure_load(args.seconds, args.rate)
    print(
        f"tui with {RUNS * FILES_PER_RUN} files: {result['lines_per_s']:.0f} lines/s appended; "
        f"loop lag median {result['median_ms']:.0f} ms, p99 {result['p99_ms']:.0f} ms, "
        f"max {result['max_ms']:.0f} ms; failed runs seen: {result['failed_runs']}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
