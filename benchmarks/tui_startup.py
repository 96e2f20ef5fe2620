"""Startup time of ``crashcart tui`` on a directory of 50 real logs.

Copies 50 logs from ``corpus/`` into a temporary directory (one run directory each), starts the
app headless with ``App.run_test()`` and measures the time until the first screen lists all 50
files. Run it directly (prints the seconds) or import :func:`measure_startup`.
"""

from __future__ import annotations

import asyncio
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FILES = 50


def make_logs(directory: Path, count: int = FILES) -> list[Path]:
    """Copy ``count`` real logs from the corpus into ``directory``/<case>/<name>."""
    logs = sorted(ROOT.glob("corpus/*/*.log"))[:count]
    if len(logs) < count:
        raise RuntimeError(f"the corpus holds only {len(logs)} logs; {count} are needed")
    copied = []
    for index, log in enumerate(logs):
        target = directory / f"{index:02d}-{log.parent.name}" / log.name
        target.parent.mkdir(parents=True)
        shutil.copyfile(log, target)
        copied.append(target)
    return copied


async def _startup(directory: Path, count: int, limit: float) -> float:
    from crashcart.tui.app import CrashcartApp
    from crashcart.tui.widgets import RunsTable

    started = time.perf_counter()
    app = CrashcartApp(directory)
    async with app.run_test(size=(160, 48)) as pilot:
        table = app.query_one(RunsTable)
        while time.perf_counter() - started < limit:
            listed = sum(1 for row in table.ordered_rows if str(row.key.value).startswith("file:"))
            if listed >= count:
                return time.perf_counter() - started
            await pilot.pause(0.005)
    raise TimeoutError(f"not all {count} files were listed within {limit} s")


def measure_startup(count: int = FILES, limit: float = 30.0) -> float:
    """Seconds from App start to the first screen listing all ``count`` files."""
    with tempfile.TemporaryDirectory(prefix="crashcart-tui-") as tmp:
        make_logs(Path(tmp), count)
        return asyncio.run(_startup(Path(tmp), count, limit))


def main() -> int:
    """Print the startup time."""
    seconds = measure_startup()
    print(f"tui startup with {FILES} logs: {seconds:.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
