"""The command line as a user runs it: exit codes, stdout/stderr, bad input."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
from collections.abc import Collection
from pathlib import Path

import pytest

from tests.conftest import CRASHCART, EXIT_CODES, run_crashcart

EXAMPLE = Path("rules/examples/cuda_oom/fragmentation.log")


def crashcart(
    *args: str,
    stdin: bytes | None = None,
    env: dict | None = None,
    expected: Collection[int] = EXIT_CODES,
) -> subprocess.CompletedProcess:
    return run_crashcart(*args, input=stdin, env=env, expected=expected)


def assert_clean_error(result: subprocess.CompletedProcess, needle: str) -> None:
    err = result.stderr.decode()
    assert result.returncode == 2
    assert "Traceback" not in err
    assert needle in err
    assert result.stdout == b""


def test_analyze_finds_the_oom_and_exits_1() -> None:
    result = crashcart("analyze", str(EXAMPLE), env={"NO_COLOR": "1"}, expected=[1])
    out = result.stdout.decode()
    assert out.startswith("1. cuda_oom")
    assert "\x1b[" not in out  # plain text off a terminal
    assert f"{EXAMPLE}:5" in out
    assert "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True" in out


def test_json_report_follows_the_contract() -> None:
    result = crashcart("analyze", "--json", str(EXAMPLE), expected=[1])
    report = json.loads(result.stdout)
    assert report["schema"] == 1
    assert report["inputs"][0]["path"] == str(EXAMPLE)
    assert report["stats"]["bytes"] == EXAMPLE.stat().st_size
    top = report["diagnoses"][0]
    for key in (
        "rule",
        "category",
        "title",
        "confidence",
        "summary",
        "evidence",
        "fixes",
        "explains",
    ):
        assert key in top
    assert {"path", "line", "text", "rank"} <= set(top["evidence"][-1])
    assert all("title" in fix for fix in top["fixes"])


def test_stdin_and_gzip(tmp_path: Path) -> None:
    data = EXAMPLE.read_bytes()
    crashcart("analyze", "-", stdin=data, expected=[1])
    packed = tmp_path / "old.log.gz"
    packed.write_bytes(gzip.compress(data))
    result = crashcart("analyze", "--json", str(packed), expected=[1])
    assert json.loads(result.stdout)["diagnoses"][0]["category"] == "cuda_oom"


def test_directory_is_one_run_of_per_rank_files(tmp_path: Path) -> None:
    (tmp_path / "rank0.log").write_text(
        "[E ProcessGroupNCCL.cpp:563] [Rank 0] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=7, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600037 milliseconds "
        "before timing out.\n"
    )
    (tmp_path / "rank1.log").write_bytes(EXAMPLE.read_bytes())
    (tmp_path / "notes.md").write_text("not a log")
    report = json.loads(crashcart("analyze", "--json", str(tmp_path), expected=[1]).stdout)
    assert [d["category"] for d in report["diagnoses"]] == ["cuda_oom", "distributed_timeout"]
    assert len(report["inputs"]) == 2
    assert report["diagnoses"][1]["evidence"][0]["rank"] == 0


def test_healthy_log_prints_nothing_and_exits_0(tmp_path: Path) -> None:
    log = tmp_path / "ok.log"
    log.write_text(
        "".join(
            f"{{'loss': {2.0 - i / 100:.3f}, 'learning_rate': 1e-4, 'epoch': {i / 100}}}\n"
            for i in range(100)
        )
    )
    result = crashcart("analyze", str(log))
    assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")


def test_missing_file() -> None:
    assert_clean_error(
        crashcart("analyze", "no/such.log"), "no such file or directory: no/such.log"
    )


def test_directory_without_logs(tmp_path: Path) -> None:
    (tmp_path / "readme.md").write_text("x")
    assert_clean_error(crashcart("analyze", str(tmp_path)), "no log files")


@pytest.mark.skipif(os.geteuid() == 0, reason="root can read any file")
def test_unreadable_file(tmp_path: Path) -> None:
    log = tmp_path / "secret.log"
    log.write_text("x")
    log.chmod(0)
    assert_clean_error(crashcart("analyze", str(log)), "permission denied")


def test_empty_input_is_a_normal_empty_result(tmp_path: Path) -> None:
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    result = crashcart("analyze", "--json", str(empty), expected=[0])
    assert json.loads(result.stdout)["stats"]["bytes"] == 0


def test_binary_garbage_and_invalid_utf8(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.log"
    garbage.write_bytes(os.urandom(300_000) + b"\xff\xfeRuntimeError: CUDA out of memory.\n")
    result = crashcart("analyze", "--json", str(garbage), expected=[0, 1])
    assert json.loads(result.stdout)["stats"]["bytes"] == 300_000 + 36


def test_a_100_mb_line(tmp_path: Path) -> None:
    big = tmp_path / "big.log"
    with big.open("wb") as handle:
        handle.write(b"step 1 loss 2.0\n")
        for _ in range(100):
            handle.write(b"A" * (1 << 20))
        handle.write(b"\nRuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
    result = crashcart("analyze", "--json", str(big), expected=[1])
    report = json.loads(result.stdout)
    assert report["inputs"][0]["truncated_lines"] == 1
    assert report["stats"]["lines"] == 3
    assert report["diagnoses"][0]["category"] == "cuda_oom"


def test_broken_rule_file_names_file_line_and_column(tmp_path: Path) -> None:
    (tmp_path / "mine.yaml").write_text(
        "id: cuda_oom.mine\ncategory: cuda_oom\ntitle: t\nconfidence: 2\n"
        "when: {all: [{fact: cuda_oom}]}\nsummary: s\nfixes: [{title: t, command: c}]\n"
    )
    result = crashcart("analyze", "--rules", str(tmp_path), str(EXAMPLE))
    assert_clean_error(result, f"{tmp_path / 'mine.yaml'}:4:13: error: confidence must be")
    # the terminal UI checks the same rules before it takes over the terminal
    result = crashcart("tui", "--rules", str(tmp_path), str(tmp_path))
    assert_clean_error(result, f"{tmp_path / 'mine.yaml'}:4:13: error: confidence must be")


def test_usage_error_exits_2() -> None:
    crashcart("analyze", expected=[2])


def test_a_crashcart_that_cannot_start_fails_every_cli_test(tmp_path: Path) -> None:
    # What issue 14 saw: durable-rules built for Python 3.13 by an older GCC fails on import.
    (tmp_path / "durable_rules_engine.py").write_text(
        'raise ImportError("durable_rules_engine.so: undefined symbol: PyEval_CallObject")\n'
    )
    broken = {"PYTHONPATH": str(tmp_path)}
    result = subprocess.run(
        [*CRASHCART, "analyze", str(EXAMPLE)],
        capture_output=True,
        env={**os.environ, **broken},
        timeout=120,
        check=False,
    )
    # The engine is imported when a command runs (start-up, issue 15), inside the command line's
    # error handling: a message and exit 2, not a traceback with the status of "diagnoses found".
    assert result.returncode == 2
    assert b"Traceback" not in result.stderr
    assert b"rebuild it with `python tools/durable_wheel.py --install`" in result.stderr
    with pytest.raises(pytest.fail.Exception, match="undefined symbol: PyEval_CallObject"):
        crashcart("analyze", str(EXAMPLE), env=broken, expected=[1])
    with pytest.raises(pytest.fail.Exception, match="expected one of \\[0\\]"):
        crashcart("analyze", str(EXAMPLE), expected=[0])  # starts, but finds a diagnosis
