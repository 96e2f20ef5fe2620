"""Responsiveness of ``crashcart tui`` while 200 files are being appended to.

A writer process appends training-log lines (metric lines, warnings, and now and then a real
traceback from the corpus) to 200 files in 20 run directories at about ``RATE`` lines a second in
all, while the app runs headless (``App.run_test()``). The benchmark measures the UI's event-loop
lag: it asks the loop to wake it every 20 ms and records how late each wake-up is. A late wake-up
is a moment the UI could not answer a key press, so the maximum and the p99 are what a person
feels as a freeze.

It also measures opening a large directory that is already written (``--open DIR``, by default
the corpus: 742 runs in 839 files): the time until the first screen lists the runs, until the
run under the cursor is analysed, and until every run is analysed (every byte read has gone
through its run's analyzer and the app holds the last snapshot), with the event-loop lag.

Run it directly: ``python benchmarks/tui_load.py [--seconds 10] [--rate 5000] [--open DIR]``.
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


def _all_analysed(app) -> bool:
    """Every run of the model has its analyzer and no bytes waiting, and the app has been told."""
    model = app.model
    runs = list(model.runs.values())
    return (
        bool(runs)
        and model.backlog() == 0
        and len(app.runs) == len(runs)
        and all(not run.touched and not run.dirty for run in runs)
    )


def _selected_analysed(app) -> bool:
    """The run under the cursor (the one on screen) is analysed."""
    run = app.model.runs.get(app.selected_run or "")
    return run is not None and run.analyzer is not None and not run.pending


async def _open(directory: Path, limit: float) -> dict[str, float]:
    from crashcart.tui.app import CrashcartApp
    from crashcart.tui.widgets import RunsTable

    started = time.perf_counter()
    app = CrashcartApp(directory)
    first = selected = done = float("nan")
    lags: list[float] = []
    async with app.run_test(size=(160, 48)) as pilot:
        table = app.query_one(RunsTable)
        while time.perf_counter() - started < limit:
            before = time.perf_counter()
            await asyncio.sleep(TICK)
            lags.append(time.perf_counter() - before - TICK)
            now = time.perf_counter() - started
            if first != first and table.row_count:  # nan: not yet listed
                first = now
            if selected != selected and _selected_analysed(app):
                selected = now
            if first == first and _all_analysed(app):
                done = now
                break
        await pilot.pause(0.3)
        listed = len(app.runs)
        failed = sum(run.status == "failed" for run in app.runs.values())
    lags.sort()
    return {
        "first_list_s": first,
        "selected_s": selected,
        "analysed_s": done,
        "runs": listed,
        "failed_runs": failed,
        "max_lag_ms": lags[-1] * 1000 if lags else 0.0,
        "p99_lag_ms": lags[min(len(lags) - 1, int(len(lags) * 0.99))] * 1000 if lags else 0.0,
    }


def measure_open(directory: Path = ROOT / "corpus", limit: float = 120.0) -> dict[str, float]:
    """Open ``directory`` (already written) in the TUI: seconds to the first listing and until
    every run is analysed (nan if not within ``limit``), and the event-loop lag meanwhile."""
    return asyncio.run(_open(directory, limit))


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
    parser.add_argument("--open", type=Path, default=ROOT / "corpus", help="directory to open")
    parser.add_argument("--only-open", action="store_true", help="skip the load measurement")
    args = parser.parse_args()
    opened = measure_open(args.open)
    print(
        f"tui opening {args.open} ({opened['runs']} runs, {opened['failed_runs']} failed): "
        f"first list {opened['first_list_s']:.2f} s, the selected run analysed "
        f"{opened['selected_s']:.2f} s, all analysed {opened['analysed_s']:.2f} s; "
        f"loop lag p99 {opened['p99_lag_ms']:.0f} ms, max {opened['max_lag_ms']:.0f} ms"
    )
    if args.only_open:
        return 0
    result = measure_load(args.seconds, args.rate)
    print(
        f"tui with {RUNS * FILES_PER_RUN} files: {result['lines_per_s']:.0f} lines/s appended; "
        f"loop lag median {result['median_ms']:.0f} ms, p99 {result['p99_ms']:.0f} ms, "
        f"max {result['max_ms']:.0f} ms; failed runs seen: {result['failed_runs']}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
