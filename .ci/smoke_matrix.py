"""Smoke-test a real install of crashcart on every Python from 3.10 up that this machine has.

For each interpreter found (under ``~/.pyenv/versions``, or on PATH as ``python3.N``): a
throwaway venv, durable-rules' wheel from tools/durable_wheel.py (built once per interpreter,
then reused from ``wheels/``), crashcart's wheel built once from this checkout, its
dependencies from the package index, then .ci/smoke_checks.py in that venv. Interpreters that
are absent are skipped, with the reason printed. Exits 1 when any interpreter fails.

The venvs are made without pip, and this interpreter's pip installs into them (``pip
--python``): seeding each venv with its own pip took 20-40 s here, more than the rest of
its install.

``make test`` runs it after the full suite. ``--jobs`` sets how many interpreters run at once
(default 2: installs wait on the network, builds and checks on the CPU).
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHECKS = ROOT / ".ci" / "smoke_checks.py"
TOOL = [sys.executable, str(ROOT / "tools" / "durable_wheel.py")]
PIP = [sys.executable, "-m", "pip"]
FIRST_MINOR = 10  # requires-python = ">=3.10"
LAST_MINOR = 14  # the newest release worth looking for


@dataclass
class Outcome:
    """What happened to one interpreter."""

    minor: int
    python: str | None = None
    version: str = ""
    status: str = "skipped"
    detail: str = ""
    steps: dict[str, float] = field(default_factory=dict)


def version_of(python: str) -> tuple[int, int, int] | None:
    """The (major, minor, micro) of ``python``, or None when it does not run."""
    try:
        out = subprocess.run(
            [python, "-c", "import sys; print(*sys.version_info[:3])"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    major, minor, micro = (int(part) for part in out.split())
    return major, minor, micro


def find(minor: int) -> tuple[str, str] | None:
    """An interpreter of 3.``minor`` and its full version: the newest under pyenv, else PATH.

    A pyenv shim on PATH exists for every installed version but runs only the selected ones,
    so each candidate is asked for its version.
    """
    root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    pyenv = sorted(
        glob.glob(str(root / "versions" / f"3.{minor}.*" / "bin" / f"python3.{minor}")),
        key=lambda path: [int(p) for p in Path(path).parts[-3].split(".") if p.isdigit()],
        reverse=True,
    )
    for candidate in [*pyenv, shutil.which(f"python3.{minor}")]:
        version = version_of(candidate) if candidate else None
        if version is not None and version[:2] == (3, minor):
            return str(candidate), ".".join(map(str, version))
    return None


def step(outcome: Outcome, name: str, argv: list[str], cwd: Path = ROOT) -> None:
    """Run one step of ``outcome``'s interpreter; raise with its output when it fails."""
    started = time.perf_counter()
    result = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=900, check=False)
    outcome.steps[name] = time.perf_counter() - started
    if result.returncode != 0:
        output = (result.stdout + result.stderr).strip()
        raise RuntimeError(f"{name} failed (exit status {result.returncode}):\n{output[-3000:]}")


def smoke(minor: int, work: Path, crashcart_wheel: Path) -> Outcome:
    """Install into a fresh venv and run the checks with 3.``minor``, if the machine has it."""
    outcome = Outcome(minor)
    found = find(minor)
    if found is None:
        outcome.detail = f"no python3.{minor} on PATH or under ~/.pyenv/versions"
        return outcome
    outcome.python, outcome.version = found
    venv = work / f"py3{minor}"
    python = str(venv / "bin" / "python")
    try:
        step(outcome, "venv", [outcome.python, "-m", "venv", "--without-pip", str(venv)])
        step(outcome, "durable-rules", [*TOOL, "--python", python, "--install"])
        # --no-compile: byte-compiling every module of every dependency (Pygments alone has
        # hundreds) costs more CPU than the checks, which compile only what they import.
        install = ["install", "-q", "--no-compile", str(crashcart_wheel)]
        step(outcome, "install", [*PIP, "--python", python, *install])
        step(outcome, "checks", [python, str(CHECKS)], cwd=work)  # away from the source tree
    except (RuntimeError, subprocess.TimeoutExpired) as error:
        outcome.status, outcome.detail = "FAILED", str(error)
    else:
        outcome.status = "ok"
    finally:
        shutil.rmtree(venv, ignore_errors=True)
    return outcome


def report(outcome: Outcome) -> str:
    """One line (more for a failure) about ``outcome``."""
    if outcome.python is None:
        return f"3.{outcome.minor}: skipped: {outcome.detail}"
    steps = ", ".join(f"{name} {seconds:.0f} s" for name, seconds in outcome.steps.items())
    line = f"{outcome.version} ({outcome.python}): {outcome.status} in {sum(outcome.steps.values()):.0f} s ({steps})"
    return f"{line}\n{outcome.detail}" if outcome.status == "FAILED" else line


def main() -> int:
    """Run the matrix; 0 when every interpreter found passes."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2, help="interpreters at once (default 2)")
    parser.add_argument(
        "--only", help="comma-separated minors to run, e.g. 13 or 10,13 (default: all)"
    )
    args = parser.parse_args()
    minors = range(FIRST_MINOR, LAST_MINOR + 1)
    if args.only:
        minors = [int(minor) for minor in args.only.split(",")]
    started = time.perf_counter()
    print(
        f"smoke matrix: Python 3.{minors[0]} to 3.{minors[-1]}, {args.jobs} at a time", flush=True
    )
    with tempfile.TemporaryDirectory(prefix="crashcart-smoke-") as scratch:
        work = Path(scratch)
        built = subprocess.run(
            [*PIP, "wheel", "-q", "--no-deps", "-w", str(work), str(ROOT)],
            capture_output=True,
            text=True,
            check=False,
        )
        if built.returncode != 0:
            print(f"smoke matrix: building crashcart's wheel failed:\n{built.stderr}")
            return 1
        (crashcart_wheel,) = work.glob("crashcart-*.whl")
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            outcomes = []
            for outcome in pool.map(lambda minor: smoke(minor, work, crashcart_wheel), minors):
                print(report(outcome), flush=True)
                outcomes.append(outcome)
    failed = [o for o in outcomes if o.status == "FAILED"]
    passed = [o for o in outcomes if o.status == "ok"]
    print(
        f"smoke matrix: {len(passed)} passed, {len(outcomes) - len(passed) - len(failed)} skipped,"
        f" {len(failed)} failed in {time.perf_counter() - started:.0f} s"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
