"""``make bench``: throughput against grep, scaling in input and rules, streaming latency, memory.

Every number is measured in this run, on this machine, side by side: crashcart's throughput is
reported as a ratio to ``LC_ALL=C grep -c -E -f`` over the same file with an equivalent
pattern set, and to plain Python line iteration. Logs are generated once into benchmarks/data/
(ignored by git). Sizes can be chosen: ``python benchmarks/run.py --sizes 10,100,1000``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from logs import write_log

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "benchmarks" / "data"
CRASHCART = [sys.executable, "-m", "crashcart"]
MB = 1_000_000
# grep -E equivalents of what the prefilter looks for (errors, rule patterns, metrics).
GREP_PATTERNS = [
    "Traceback \\(most recent call last\\)",
    "out of memory",
    "OutOfMemoryError",
    "NCCL WARN",
    "NCCL error",
    "ncclUnhandled",
    "ncclInternalError",
    "ncclSystemError",
    "Watchdog caught",
    "Timed out",
    "DistStoreError",
    "RendezvousTimeout",
    "ChildFailedError",
    "exitcode",
    "Expected all tensors",
    "Input type",
    "CUDNN_STATUS",
    "cuDNN error",
    "unable to find an engine",
    "CUBLAS_STATUS",
    "CUDA error",
    "Assertion .* failed",
    "does not require grad",
    "leaf Variable",
    "Errno [0-9]+",
    "No space left",
    "PytorchStreamWriter",
    "unexpected pos",
    "Bus error",
    "shared memory",
    "killed by signal",
    "Killed",
    "loss",
    "Loss",
    "grad_norm",
    "it/s",
    "s/it",
    "samples/s",
    "OVERFLOW",
    "loss scale",
    "returned nan values",
    "mat1 and mat2",
    "must match the size",
    "state_dict",
    "No module named",
    "cannot import name",
    "JSONDecodeError",
    "not compiled with CUDA",
    "Xid",
    "ECC error",
    "DataLoader worker",
]


def ensure_log(size_mb: int) -> Path:
    """The generated log of ``size_mb`` MB (made on first use)."""
    path = DATA / f"{size_mb}mb.log"
    if not path.exists() or path.stat().st_size < size_mb * MB:
        print(f"generating {path.name} ...", file=sys.stderr, flush=True)
        write_log(path, size_mb * MB)
    return path


def timed(argv: list[str]) -> tuple[float, float]:
    """Run a command; return (wall seconds, peak RSS in MB) of that child alone (see
    :func:`timed_usage`)."""
    wall, rss, _ = timed_usage(argv)
    return wall, rss


def timed_usage(argv: list[str]) -> tuple[float, float, float]:
    """Run a command; return (wall seconds, peak RSS in MB, user CPU seconds) of that child.

    User CPU is what issue 15's target compares: on a shared machine the wall time depends on
    the other jobs' load, the CPU time a command needs much less.

    Output goes to a pipe that is drained, not to /dev/null: GNU grep stops at the first
    match when it sees its output is /dev/null.
    """
    started = time.perf_counter()
    process = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env={**os.environ, "LC_ALL": "C"}
    )
    assert process.stdout is not None
    process.stdout.read()  # the output is small (a count, a JSON report); wait4 reaps
    _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        raise RuntimeError(f"{' '.join(argv[:5])} failed with {os.waitstatus_to_exitcode(status)}")
    return time.perf_counter() - started, usage.ru_maxrss / 1024, usage.ru_utime


def python_lines(path: Path) -> float:
    """Seconds to iterate over the file's lines in Python (the floor for per-line Python)."""
    started = time.perf_counter()
    with path.open("rb") as handle:
        sum(1 for _line in handle)
    return time.perf_counter() - started


def startup() -> float:
    """Seconds crashcart takes on an empty log (interpreter, imports, rules, prefilter)."""
    with tempfile.NamedTemporaryFile(suffix=".log") as empty:
        return min(timed([*CRASHCART, "analyze", empty.name])[0] for _ in range(3))


def throughput(sizes: list[int]) -> list[list[str]]:
    patterns = DATA / "grep-patterns.txt"
    patterns.write_text("\n".join(GREP_PATTERNS) + "\n")
    base = startup()
    rows = []
    for size in sizes:
        log = ensure_log(size)
        seconds, rss, user = timed_usage([*CRASHCART, "analyze", "--json", str(log)])
        grep_seconds, _, grep_user = timed_usage(
            ["grep", "-c", "-E", "-f", str(patterns), str(log)]
        )
        py_seconds = python_lines(log)
        work = max(seconds - base, 1e-9)
        rows.append(
            [
                f"{size} MB",
                f"{size / seconds:.0f}",
                f"{size / work:.0f}",
                f"{size / grep_seconds:.0f}",
                f"{seconds / grep_seconds:.1f}x",
                f"{user / max(grep_user, 1e-9):.1f}x (target 2x)",
                f"{size / py_seconds:.0f}",
                f"{rss:.0f}",
            ]
        )
    print(f"(startup on an empty log: {base:.2f} s, subtracted in the 'analysis MB/s' column)")
    return rows


def rule_scaling(size: int, factors: tuple[int, ...] = (1, 10)) -> list[list[str]]:
    """Time on the same log with the shipped rules and ``factors`` times as many (generated line
    rules). x100 is left out by default: see benchmarks/README.md."""
    from crashcart.analyzer import default_rulebase

    shipped = len(default_rulebase().rules)
    log = ensure_log(size)
    rows = []
    baseline = None
    for factor in factors:
        with tempfile.TemporaryDirectory() as directory:
            extra = shipped * factor - shipped
            text = "".join(
                f"---\nid: config_error.generated_{i}\ncategory: config_error\ntitle: generated {i}\n"
                f'confidence: 0.5\nwhen:\n  all:\n    - fact: line\n      regex: "custom failure E{i:05d} in (?P<where>\\\\w+)"\n'
                f'summary: generated rule {i} matched in {{where}}\nfixes:\n  - title: nothing\n    command: "true"\n'
                for i in range(extra)
            )
            args = [*CRASHCART, "analyze", "--json", str(log)]
            if extra:
                Path(directory, "generated.yaml").write_text(text)
                args[4:4] = ["--rules", directory]
                timed(args)  # compile and cache the larger prefilter once, as a user would
            seconds, rss = timed(args)
        baseline = baseline or seconds
        rows.append(
            [
                f"x{factor} ({shipped * factor} rules)",
                f"{seconds:.2f}",
                f"{seconds / baseline:.2f}x",
                f"{rss:.0f}",
            ]
        )
    return rows


def streaming_latency(trials: int) -> list[list[str]]:
    """Seconds from a failure's last line entering `crashcart watch --json` to its diagnosis."""
    failure = (ROOT / "rules/examples/cuda_oom/fragmentation.log").read_bytes()
    noise = b"".join(
        f"{{'loss': {2 - i / 1000:.4f}, 'learning_rate': 5e-05, 'epoch': {i / 1000:.3f}}}\n".encode()
        for i in range(200)
    )
    latencies = []
    for _ in range(trials):
        process = subprocess.Popen(
            [*CRASHCART, "watch", "--json", "-"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert process.stdin and process.stdout
        process.stdin.write(noise)
        process.stdin.flush()
        time.sleep(3.0)  # past start-up (imports, rules, prefilter) and idle, like a real run
        sent = time.perf_counter()
        process.stdin.write(failure)
        process.stdin.flush()
        process.stdout.readline()
        latencies.append(time.perf_counter() - sent)
        process.stdin.close()
        process.wait(timeout=30)
    latencies.sort()
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
    return [[f"{trials}", f"{statistics.median(latencies) * 1000:.0f}", f"{p99 * 1000:.0f}"]]


def ingest(size_mb: int) -> list[list[str]]:
    """Sustained lines/s through `crashcart watch --json -` and its peak RSS after them all."""
    log = ensure_log(size_mb)
    started = time.perf_counter()
    with log.open("rb") as source:
        process = subprocess.Popen(
            [*CRASHCART, "watch", "--json", "-"],
            stdin=source,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert process.stdout is not None
        output = process.stdout.read()
        _, _, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - started
    summary = json.loads(output.splitlines()[-1])
    lines = summary["files"]["<stdin>"]["lines"]
    return [
        [f"{lines:,}", f"{seconds:.1f}", f"{lines / seconds:,.0f}", f"{usage.ru_maxrss / 1024:.0f}"]
    ]


def table(title: str, header: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(str(c)) for c in column) for column in zip(header, *rows, strict=True)]
    print(f"\n{title}")
    print("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)))
    for row in rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)))


def main() -> None:
    """Run the benchmarks and print their tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,100,1000", help="log sizes in MB, comma-separated")
    parser.add_argument(
        "--rules-size", type=int, default=100, help="log size (MB) for rule scaling"
    )
    parser.add_argument("--latency-trials", type=int, default=20)
    parser.add_argument(
        "--ingest-size", type=int, default=1000, help="log size (MB) piped to watch"
    )
    parser.add_argument(
        "--startup-runs", type=int, default=21, help="runs of each start-up command"
    )
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    )
    from startup import TARGET_MS
    from startup import measure as measure_small_logs
    from startup import report as small_log_rows

    small = measure_small_logs(args.startup_runs)
    table(
        f"Start-up: analyze on small logs, warm cache, median of {small['runs']} "
        f"(target < {TARGET_MS:.0f} ms; floor: python -c pass; "
        f"load {small['load_before'][0]:.2f} -> {small['load_after'][0]:.2f})",
        ["command", "median ms", "best ms", "CPU ms", "over floor ms", "target"],
        small_log_rows(small),
    )
    table(
        "Throughput (crashcart analyze --json vs grep -c -E -f with an equivalent pattern set)",
        [
            "log",
            "crashcart MB/s",
            "analysis MB/s",
            "grep MB/s",
            "time vs grep",
            "user CPU vs grep",
            "python lines MB/s",
            "peak RSS MB",
        ],
        throughput(sizes),
    )
    table(
        "Scaling in rules",
        ["rules", "seconds", "vs shipped", "peak RSS MB"],
        rule_scaling(args.rules_size),
    )
    table(
        "Streaming latency (watch, failure's last line to its JSON line)",
        ["trials", "p50 ms", "p99 ms"],
        streaming_latency(args.latency_trials),
    )
    table(
        "Following: sustained ingest through watch (stdin) and peak RSS after it",
        ["lines", "seconds", "lines/s", "peak RSS MB"],
        ingest(args.ingest_size),
    )
    from tui_startup import measure_startup

    seconds = measure_startup()
    table("TUI start-up (50 logs, until every file is listed)", ["seconds"], [[f"{seconds:.2f}"]])
    from tui_load import measure_load, measure_open

    load = measure_load()
    table(
        "TUI under load (200 files appended to; UI event-loop lag)",
        ["lines/s", "median ms", "p99 ms", "max ms"],
        [[f"{load[k]:.0f}" for k in ("lines_per_s", "median_ms", "p99_ms", "max_ms")]],
    )
    opened = measure_open()
    table(
        f"TUI opening the corpus ({opened['runs']} runs)",
        ["first list s", "selected run analysed s", "all analysed s"],
        [[f"{opened[k]:.2f}" for k in ("first_list_s", "selected_s", "analysed_s")]],
    )


if __name__ == "__main__":
    main()
