"""Memory stays flat over many analyses in one process (issue 18).

Each run's engine state used to stay in the durable-rules host (about 1.6 MB per analysis, a
``MemoryError`` at the 1,025th): ``crashcart eval`` on 1,030 cases failed. benchmarks/rss_soak.py
measures 5,000 analyses; these are the bounded guards.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from crashcart.analyzer import RuleBase, analyze
from crashcart.evaluate import load_cases

CORPUS = Path(__file__).resolve().parent.parent / "corpus"


def rss_mib() -> float:
    """This process's resident set now, in MiB."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS in /proc/self/status")


def small_cases(count: int) -> list[tuple[Path, dict]]:
    """``count`` corpus cases with the smallest logs (quick to analyse), in a fixed order."""
    cases = load_cases(CORPUS)
    size = {d: sum(f.stat().st_size for f in d.rglob("*") if f.is_file()) for d, _ in cases}
    return sorted(cases, key=lambda case: (size[case[0]], case[0]))[:count]


def test_rss_stays_flat_over_hundreds_of_analyses() -> None:
    """300 analyses after a warm-up grow RSS by far less than one leaked session per analysis
    (at the old 1.6 MB each: 480 MB; with each run released: well under 1 MB)."""
    rulebase = RuleBase.load()
    cases = [directory for directory, _ in small_cases(25)]
    for directory in cases * 2:  # warm-up: caches and allocator arenas see every input once
        analyze([directory], rulebase)
    before = rss_mib()
    for index in range(300):
        analyze([cases[index % len(cases)]], rulebase)
    growth = rss_mib() - before
    assert growth < 40, f"RSS grew {growth:.1f} MiB over 300 analyses"


def link_cases(target: Path, count: int) -> None:
    """``count`` case directories under ``target``, hard links (or copies) of corpus cases."""
    cases = small_cases(60)
    for index in range(count):
        source, _ = cases[index % len(cases)]
        case = target / f"case{index:05d}"
        case.mkdir(parents=True)
        for path in source.rglob("*"):
            destination = case / path.relative_to(source)
            if path.is_dir():
                destination.mkdir(parents=True, exist_ok=True)
                continue
            destination.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(path, destination)
            except OSError:  # another file system: a copy does as well
                destination.write_bytes(path.read_bytes())


def test_eval_runs_on_two_thousand_cases_in_bounded_memory(tmp_path: Path) -> None:
    """``crashcart eval`` on 2,000 cases (it failed at 1,025 with a MemoryError) finishes, scores
    every case, and its processes peak well under what 2,000 kept sessions would take."""
    corpus = tmp_path / "corpus"
    link_cases(corpus, 2000)
    # A parent of its own, so that the peak measured is crashcart's (and its workers').
    code = (
        "import resource, subprocess, sys\n"
        "done = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
        "sys.stderr.write(done.stderr)\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)\n"
        "print(done.returncode)\n"
        "sys.stdout.write(done.stdout)\n"
    )
    command = [sys.executable, "-c", code, sys.executable, "-m", "crashcart"]
    result = subprocess.run(
        [*command, "eval", "--json", str(corpus)], capture_output=True, text=True, timeout=900
    )
    assert "Traceback" not in result.stderr, result.stderr[-4000:]
    peak, returncode, report = result.stdout.split("\n", 2)
    assert returncode == "0", result.stderr[-4000:]
    assert json.loads(report)["summary"]["cases"] == 2000
    assert int(peak) < 300, f"peak RSS {peak} MiB"
