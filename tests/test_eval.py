"""crashcart eval: the accuracy table, thresholds, and bad corpora."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Collection
from pathlib import Path

from tests.conftest import EXIT_CODES, run_crashcart


def crashcart(*args: str, expected: Collection[int] = EXIT_CODES) -> subprocess.CompletedProcess:
    return run_crashcart(*args, text=True, timeout=300, expected=expected)


def make_corpus(tmp_path: Path) -> Path:
    corpus = tmp_path / "corpus"
    for case, category in [
        ("posted_cuda_oom_dcrnn_reserved_1x", "cuda_oom"),
        ("healthy_plain_mlp", "none"),
        ("posted_nccl_dfine_duplicate_gpu", "cudnn"),  # deliberately wrong: a miss
    ]:
        shutil.copytree(Path("corpus") / case, corpus / case)
        (corpus / case / "expected.yaml").write_text(f"category: {category}\n")
    return corpus


def test_eval_reports_hits_misses_and_false_alarms(tmp_path: Path) -> None:
    corpus = make_corpus(tmp_path)
    result = crashcart("eval", "--json", str(corpus))
    data = json.loads(result.stdout)
    assert data["summary"]["failure_cases"] == 2 and data["summary"]["top1"] == 0.5
    assert data["summary"]["false_alarms"] == 0
    assert data["categories"]["cudnn"]["misses"] == [
        {"case": "posted_nccl_dfine_duplicate_gpu", "predicted": ["nccl"]}
    ]


def test_thresholds_set_the_exit_code(tmp_path: Path) -> None:
    corpus = make_corpus(tmp_path)
    assert crashcart("eval", str(corpus), "--min-top1", "0.5").returncode == 0
    failing = crashcart("eval", str(corpus), "--min-top1", "0.9")
    assert failing.returncode == 1 and "top-1 0.500 < 0.9" in failing.stderr
    assert "miss posted_nccl_dfine_duplicate_gpu: expected cudnn, got nccl" in failing.stdout


def test_missing_or_empty_corpus_is_a_clear_error(tmp_path: Path) -> None:
    for path in (tmp_path / "nope", tmp_path):
        result = crashcart("eval", str(path))
        assert result.returncode == 2 and "Traceback" not in result.stderr


def test_parallel_and_serial_eval_give_the_same_report() -> None:
    """Cases analysed in worker processes score exactly as in one process, in the same order
    (a batch with misses, so the order of the misses lists is compared too)."""
    reports = {
        jobs: crashcart("eval", "--json", "--jobs", jobs, "corpus/batch-02").stdout
        for jobs in ("1", "3")
    }
    assert json.loads(reports["1"])["summary"]["cases"] == 52
    assert reports["3"] == reports["1"]


def test_jobs_must_be_positive() -> None:
    result = crashcart("eval", "--jobs", "0", "corpus/batch-02")
    assert result.returncode == 2 and "--jobs" in result.stderr


def test_an_unreadable_case_in_a_worker_is_one_error_line(tmp_path: Path) -> None:
    """An input error raised in a worker process reaches the user as in a serial run."""
    corpus = make_corpus(tmp_path)
    broken = corpus / "zz_broken"
    broken.mkdir()
    (broken / "expected.yaml").write_text("category: none\n")
    (broken / "train.log.gz").write_bytes(b"\x1f\x8b\x08\x00corrupt")
    for jobs in ("1", "2"):
        result = crashcart("eval", "--jobs", jobs, str(corpus))
        assert result.returncode == 2, result.stderr
        assert result.stderr.splitlines() == [
            f"crashcart: error: cannot read {broken / 'train.log.gz'}: Compressed file ended "
            "before the end-of-stream marker was reached"
        ]
