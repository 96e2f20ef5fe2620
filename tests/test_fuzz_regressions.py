"""Every input that broke the analyzer under fuzzing (issue 18), kept as a regression test.

Time bounds here are generous guards against super-linear behaviour on a loaded machine, not
benchmarks (those live in benchmarks/).
"""

from __future__ import annotations

import gzip
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crashcart.analyzer import Analyzer, analyze, default_rulebase
from crashcart.parsers import metrics
from crashcart.parsers.lines import MAX_LINE_BYTES

CLI = [sys.executable, "-m", "crashcart"]


def feed_in_pieces(analyzer: Analyzer, data: bytes, cuts: list[int]) -> None:
    """Feed ``data`` to ``analyzer`` in pieces cut at ``cuts``, then end the run."""
    last = 0
    for cut in [*sorted(set(cuts)), len(data)]:
        analyzer.feed("train.log", data[last:cut])
        last = cut
    analyzer.finish()
    analyzer.conclude()


def run_chunks(data: bytes, cuts: list[int]) -> tuple[list, list, dict]:
    """Analyse ``data`` fed in pieces cut at ``cuts``; return diagnoses, facts and errors."""
    analyzer = Analyzer(default_rulebase())
    try:
        feed_in_pieces(analyzer, data, cuts)
        report = analyzer.report()
        diagnoses = [
            (d.rule, d.summary, [(e.lineno, e.text) for e in d.evidence]) for d in report.diagnoses
        ]
        return diagnoses, report.facts, {"errors": analyzer.errors.count}
    finally:
        analyzer.close()


def analyze_bytes(tmp_path: Path, data: bytes, name: str = "train.log"):
    path = tmp_path / name
    path.write_bytes(data)
    return analyze([path])


# -- one line must never end the program -----------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "step inf loss nan",
        "step nan",
        "step nan loss 0.5",
        "{'loss': 1.0, 'step': inf, 'epoch': nan, 'learning_rate': inf}",
        "  5%|#  | 5/" + "9" * 400 + " [00:01<00:01, 3" + "9" * 400 + "it/s, loss=0.1]",
        "[rank" + "1" * 5000 + "]: RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB",
        "[1," + "7" * 5000 + "]<stdout>: loss 0.5",
        '  File "train.py", line ' + "1" * 5000 + ", in main",
        "per_device_train_batch_size = " + "8" * 5000,
    ],
    ids=lambda line: line[:24],
)
def test_a_hostile_line_is_read_without_error(tmp_path: Path, line: str) -> None:
    data = ("step 1 loss 0.5\n" + line + "\nstep 2 loss 0.4\n").encode()
    _, _, errors = run_chunks(data, [])
    assert errors == {"errors": 0}  # fixed at the cause, not merely contained
    path = tmp_path / "x.log"
    path.write_bytes(data)
    result = subprocess.run(
        [*CLI, "analyze", str(path)], capture_output=True, text=True, check=False
    )
    assert result.returncode in (0, 1), result.stderr
    assert "internal error" not in result.stderr and "Traceback" not in result.stderr


def test_step_inf_keeps_the_nan_loss_diagnosis(tmp_path: Path) -> None:
    report = analyze_bytes(tmp_path, b"step inf loss nan\n")
    assert [d.category for d in report.diagnoses][:1] == ["nan_loss"]
    assert report.stats["parse_errors"] == 0


def test_non_finite_steps_and_rates_are_no_values() -> None:
    assert metrics.parse_metrics("step inf loss nan") == {
        "loss": pytest.approx(float("nan"), nan_ok=True)
    }
    assert metrics.parse_metrics("step nan") == {}
    assert "bar_total" not in metrics.parse_metrics(
        "| 5/" + "9" * 400 + " [00:01, 3.1it/s, loss=1]"
    )


def test_a_parser_error_is_contained_counted_and_warned_about(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(text: str) -> dict[str, float]:
        raise ZeroDivisionError("a parser bug")

    monkeypatch.setattr(metrics, "parse_metrics", broken)
    path = tmp_path / "train.log"
    path.write_bytes(
        b"step 1 loss 0.5\nRuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    )
    report = analyze([path])
    assert [d.category for d in report.diagnoses][:1] == ["cuda_oom"]  # the rest still found
    assert report.stats["parse_errors"] == 1
    assert "ZeroDivisionError: a parser bug" in report.stats["parse_error_examples"][0]
    assert f"{path}:1" in report.stats["parse_error_examples"][0]


def test_a_corrupt_gzip_block_is_an_input_error(tmp_path: Path) -> None:
    data = bytearray(gzip.compress(b"".join(b"step %d loss 0.%d\n" % (i, i) for i in range(20000))))
    rng = random.Random(3)
    found = set()
    for trial in range(30):
        broken = bytearray(data)
        broken[rng.randrange(12, len(broken) - 10)] ^= 0xFF
        path = tmp_path / f"run{trial}.log.gz"
        path.write_bytes(bytes(broken))
        result = subprocess.run(
            [*CLI, "analyze", str(path)], capture_output=True, text=True, check=False
        )
        if result.returncode == 2:
            assert result.stderr.startswith("crashcart: error: cannot read"), result.stderr
            assert len(result.stderr.strip().splitlines()) == 1
            found.add(result.stderr.split(": ")[-1][:20])
        else:
            assert result.returncode in (0, 1)
    assert any("invalid" in f for f in found), found  # a zlib block error was among them


def test_watch_survives_a_hostile_line_and_ends_with_its_summary() -> None:
    lines = b"step 1 loss 0.5\nstep inf loss nan\nstep nan\n[rank" + b"1" * 5000 + b"]: hi\n"
    oom = Path("rules/examples/cuda_oom/fragmentation.log").read_bytes()
    result = subprocess.run(
        [*CLI, "watch", "--json", "-"],
        input=lines + oom,
        capture_output=True,
        timeout=120,
        check=False,
    )
    out = result.stdout.decode()
    assert '"event": "summary"' in out.splitlines()[-1]
    assert '"cuda_oom"' in out
    assert b"Traceback" not in result.stderr and b"internal error" not in result.stderr


# -- every input under 10 MB within 10 s -----------------------------------------------------


def _timed(data: bytes, tmp_path: Path):
    path = tmp_path / "big.log"
    path.write_bytes(data)
    start = time.monotonic()
    report = analyze([path])
    return report, time.monotonic() - start


def test_a_traceback_of_300k_frames_is_read_in_bounded_time(tmp_path: Path) -> None:
    frames = 300_000
    data = (
        b"Traceback (most recent call last):\n"
        + b'  File "t.py", line 1, in f\n' * frames
        + b"RecursionError: maximum recursion depth exceeded\n"
    )
    assert len(data) > 8_000_000
    report, seconds = _timed(data, tmp_path)
    assert seconds < 10
    (fact,) = [f for f in report.facts if f["kind"] == "exception"]
    assert fact["type"] == "RecursionError" and fact["frames"] == frames  # the middle counted


def test_a_10k_deep_chain_is_read_in_bounded_time(tmp_path: Path) -> None:
    link = (
        b'Traceback (most recent call last):\n  File "t.py", line 3, in f\n    g()\n'
        b"ValueError: boom\n\nDuring handling of the above exception, another exception occurred:\n\n"
    )
    final = b'Traceback (most recent call last):\n  File "t.py", line 5, in h\n    f()\nRuntimeError: final\n'
    report, seconds = _timed(link * 10_000 + final, tmp_path)
    assert seconds < 10
    assert any(f["kind"] == "exception" and f["type"] == "RuntimeError" for f in report.facts)


@pytest.mark.parametrize(
    "line",
    [
        "loss" + " " * 4090 + " 1",  # took 100 s per 2,000 spaces in the metric regex
        "1" * 4090 + " loss 1",  # rescanned every digit run (quadratic)
        ("a1 " * 1400)[:4080] + " loss 1",
        ("lo " * 700)[:2040] + " loss nan",  # never sampled away
        "1" * 20000 + " MiB allowed; CUDA out of memory. Tried to allocate 2.00 GiB",
    ],
    ids=lambda line: line[:12],
)
def test_lines_that_were_super_linear_stay_linear(tmp_path: Path, line: str) -> None:
    data = (line + "\n").encode() * (4_000_000 // (len(line) + 1))
    _, seconds = _timed(data, tmp_path)
    assert seconds < 10


def test_a_huge_traceback_keeps_its_first_and_last_frames() -> None:
    from crashcart.parsers import traceback

    collector = traceback.TracebackCollector()
    collector.start("Traceback (most recent call last):")
    for i in range(5000):
        collector.feed(f'  File "f{i}.py", line {i}, in fn{i}')
        collector.feed(f"    call{i}()")
    collector.feed("RecursionError: deep")
    lines = collector.finish()
    assert lines is not None and len(lines) < 700
    assert any("frames omitted" in line for line in lines)
    parsed = traceback.parse_block(lines)
    assert parsed is not None
    assert parsed.frames[0].file == "f0.py" and parsed.frames[-1].file == "f4999.py"
    assert parsed.frames[-1].code == "call4999()"
    assert len(parsed.frames) + parsed.omitted_frames == 5000


# -- diagnoses never depend on chunking --------------------------------------------------------


def _chunking_corpus() -> bytes:
    long_line = (
        b"x" * (MAX_LINE_BYTES + 70_000)
        + b" RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    )
    return (
        "step 1 loss 0.5 é\r\n".encode() * 30
        + long_line
        + b"[rank1]: "
        + b"y" * (1 << 20)
        + b"\n"
        + "héllo wörld ✓\r\n".encode()
        + Path("rules/examples/cuda_oom/fragmentation.log").read_bytes()
        + b"step 3 loss nan\n" * 3
    )


CHUNKING_DATA = _chunking_corpus()
CHUNKING_BASE = run_chunks(CHUNKING_DATA, [])


@settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(st.lists(st.integers(min_value=1, max_value=len(CHUNKING_DATA) - 1), max_size=12))
def test_diagnoses_do_not_depend_on_chunk_boundaries(cuts: list[int]) -> None:
    # Cut points near the interesting places too: inside multi-byte characters, at \r\n, and
    # around the end of the long lines' kept heads.
    special = [i for i in range(1, 400) if CHUNKING_DATA[i] >= 0x80 or CHUNKING_DATA[i] == 0x0A]
    rng = random.Random(sum(cuts))
    extra = [*rng.sample(special, 3), len(CHUNKING_DATA) // 2 + rng.randrange(-9, 9)]
    assert run_chunks(CHUNKING_DATA, cuts + extra) == CHUNKING_BASE


def test_the_issue_long_line_case_is_chunking_independent() -> None:
    # A line over 1 MiB whose error text lies past the 64 KiB head: found in neither feeding.
    whole = run_chunks(CHUNKING_DATA, [])
    split = run_chunks(CHUNKING_DATA, [31 * 20, 31 * 20 + MAX_LINE_BYTES + 5])
    assert whole == split


# -- a small seeded fuzz of the API --------------------------------------------------------------

_PIECES = [
    b"step 1 loss 0.5",
    b"loss nan",
    b"step inf",
    b"Traceback (most recent call last):",
    b'  File "a.py", line 1, in f',
    b"    f()",
    b"RuntimeError: CUDA out of memory.",
    b"[rank3]: ",
    b"\r",
    b"\x1b[31m",
    b"\xff\xfe",
    b"\x00",
    b"NCCL WARN",
    b"Killed",
    b"During handling of the above exception, another exception occurred:",
    b"9" * 5000,
    b" " * 3000,
    "é✓".encode(),
    b"Tried to allocate 2.00 GiB",
    b"ChildFailedError",
]


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    st.lists(
        st.one_of(st.sampled_from(_PIECES), st.binary(max_size=40)),
        max_size=40,
    ),
    st.lists(st.sampled_from([b"\n", b"\r\n", b"", b" "]), min_size=1, max_size=40),
)
def test_random_lines_never_raise(pieces: list[bytes], seps: list[bytes]) -> None:
    data = b"".join(p + seps[i % len(seps)] for i, p in enumerate(pieces))
    diagnoses, _, errors = run_chunks(data, [len(data) // 3])
    assert errors == {"errors": 0}
    assert isinstance(diagnoses, list)


# -- sampled metric series never depend on chunking (issue 18) ---------------------------------


def _long_metric_log() -> bytes:
    """Past METRIC_FULL metric lines and several sampling stretches: lines of varied lengths,
    \\r-redrawn bars, CRLF, a line over MAX_LINE_BYTES that holds a loss, then an OOM."""
    rng = random.Random(18)
    lines = []
    for step in range(7000):
        loss = 2.5 - step / 5000 + rng.random() / 10
        kind = step % 4
        if kind == 0:
            lines.append(f"step {step} | loss {loss:.4f} | lr 3.0e-04".encode())
        elif kind == 1:
            lines.append(f"{{'loss': {loss:.4f}, 'grad_norm': {rng.random():.3f}}}\r".encode())
        elif kind == 2:
            bar = " ".join(
                f"{p}%| {step}/9000 [00:01<00:01, {8 + rng.random():.2f}it/s]" for p in (0, 50)
            )
            lines.append(bar.replace(" 50%", "\r 50%").encode())
        else:
            lines.append(b"INFO some chatter " + b"x" * rng.randrange(0, 300))
        if step == 5000:
            lines.append(b"z" * (MAX_LINE_BYTES + 10) + b" loss 0.1234")
    oom = Path("rules/examples/cuda_oom/fragmentation.log").read_bytes()
    return b"\n".join(lines) + b"\n" + oom


LONG_METRIC_LOG = _long_metric_log()


def series_and_diagnoses(data: bytes, cuts: list[int]) -> tuple[dict, list, int]:
    """The run's metric series (values, where), its diagnoses, and its metric points."""
    analyzer = Analyzer(default_rulebase())
    try:
        feed_in_pieces(analyzer, data, cuts)
        tracker = analyzer.extractor.series
        series = {
            key: [(p.value, p.index, p.step, p.line.lineno) for p in s.points]
            for key, s in tracker.series.items()
        }
        report = analyzer.report()
        diagnoses = [(d.rule, d.summary, [e.lineno for e in d.evidence]) for d in report.diagnoses]
        return series, diagnoses, tracker.points
    finally:
        analyzer.close()


LONG_METRIC_BASE = series_and_diagnoses(LONG_METRIC_LOG, [])


def test_the_long_metric_log_is_sampled() -> None:
    series, diagnoses, points = LONG_METRIC_BASE
    assert points > 2048 + 20  # past the lines all read, into the sampled ones
    assert points < 7000  # but not every line
    assert diagnoses and series["loss"]


@pytest.mark.parametrize("size", [1 << 20, 65_536, 4_096, 777])
def test_metric_sampling_is_the_same_for_any_chunk_size(size: int) -> None:
    cuts = list(range(size, len(LONG_METRIC_LOG), size))
    assert series_and_diagnoses(LONG_METRIC_LOG, cuts) == LONG_METRIC_BASE


@settings(max_examples=15, deadline=None, derandomize=True)
@given(st.lists(st.integers(min_value=1, max_value=len(LONG_METRIC_LOG) - 1), max_size=30))
def test_metric_sampling_does_not_depend_on_chunk_boundaries(cuts: list[int]) -> None:
    assert series_and_diagnoses(LONG_METRIC_LOG, cuts) == LONG_METRIC_BASE
