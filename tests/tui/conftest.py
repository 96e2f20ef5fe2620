"""Helpers for the TUI tests: a directory of runs and waiting for the live model to settle."""

from __future__ import annotations

import asyncio
import functools
import shutil
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest

from crashcart.analyzer import default_rulebase
from crashcart.tui.app import CrashcartApp

ROOT = Path(__file__).resolve().parents[2]
OOM_LOG = ROOT / "rules" / "examples" / "cuda_oom" / "fragmentation.log"
HEALTHY_LOG = ROOT / "corpus" / "healthy_cnn_tqdm" / "train.log"
FIXED_CLOCK = 1_700_000_000.0


def make_runs(directory: Path) -> Path:
    """``directory/runs`` with a crashed run (``oom``) and a healthy one (``ok``)."""
    runs = directory / "runs"
    (runs / "oom").mkdir(parents=True)
    (runs / "ok").mkdir()
    shutil.copyfile(OOM_LOG, runs / "oom" / "rank0.log")
    shutil.copyfile(HEALTHY_LOG, runs / "ok" / "train.log")
    return runs


@pytest.fixture
def runs_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Two runs under ``./runs`` (the test runs in ``tmp_path``, so paths are relative)."""
    monkeypatch.chdir(tmp_path)
    make_runs(tmp_path)
    return Path("runs")


def new_app(directory: str | Path = "runs", **kwargs) -> CrashcartApp:
    """An app with the shipped rules already loaded and a fixed clock (stable screens)."""
    kwargs.setdefault("rulebase", default_rulebase())
    kwargs.setdefault("clock", lambda: FIXED_CLOCK)
    return CrashcartApp(directory, **kwargs)


async def wait_for(pilot, condition: Callable[[], object], timeout: float = 30.0) -> None:
    """Let the app run until ``condition()`` is true, or fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(
                f"timed out after {timeout} s waiting for {condition}; {describe(pilot.app)}"
            )
        await pilot.pause(0.05)


def describe(app: CrashcartApp) -> str:
    """What the app and its model hold, for a failure message."""
    model = app.model
    runs = {
        name: (
            run.analyzer is not None,
            len(run.pending),
            {path: file.lines for path, file in run.files.items()},
        )
        for name, run in list(model.runs.items())
    }
    workers = [(worker.name, worker.state.name, worker.error) for worker in app.workers]
    return (
        f"app runs {sorted(app.runs)}, diagnosed {sorted(app.diagnoses)}; model runs (analyzer, "
        f"pending, lines) {runs}; rules ready {model._rules_ready.is_set()}; workers {workers}"
    )


async def settle(pilot, quiet: float = 1.0, timeout: float = 40.0, runs: int = 2) -> None:
    """Wait until the failed run is diagnosed and the model has been quiet for ``quiet`` s."""
    app: CrashcartApp = pilot.app
    await wait_for(pilot, lambda: app.diagnoses.get("runs/oom") and len(app.runs) == runs, timeout)
    await wait_for(pilot, lambda: time.monotonic() - app.last_message > quiet, timeout)
    await pilot.pause(0.3)


def async_test(function: Callable[..., Coroutine[Any, Any, None]]) -> Callable[..., None]:
    """Run an async test with ``asyncio.run`` (no asyncio plugin needed)."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        asyncio.run(function(*args, **kwargs))

    return wrapper
