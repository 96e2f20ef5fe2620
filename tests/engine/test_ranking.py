"""Ranking across ranks, torchrun's first failure, and failures no rule knows."""

from __future__ import annotations

from tests.conftest import categories, run_text

TORCHRUN_SIGKILL = """\
    [rank1]:[E ProcessGroupNCCL.cpp:563] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600101 milliseconds before timing out.
    torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
    ============================================================
    train.py FAILED
    ------------------------------------------------------------
    Failures:
    [1]:
      time      : 2024-06-01_10:00:00
      host      : node1
      rank      : 1 (local_rank: 1)
      exitcode  : -6 (pid: 4321)
      error_file: <N/A>
      traceback : Signal 6 (SIGABRT) received by PID 4321
    ------------------------------------------------------------
    Root Cause (first observed failure):
    [0]:
      time      : 2024-06-01_09:59:58
      host      : node1
      rank      : 0 (local_rank: 0)
      exitcode  : -9 (pid: 4320)
      error_file: <N/A>
      traceback : Signal 9 (SIGKILL) received by PID 4320
    ============================================================
"""


def test_sigkill_root_cause_explains_the_timeouts_of_the_others() -> None:
    report = run_text(TORCHRUN_SIGKILL)
    assert categories(report)[:2] == ["host_oom", "distributed_timeout"]
    assert report.diagnoses[0].ranks == [0]
    assert "first observed failure" in report.diagnoses[0].reason


def test_an_unknown_fatal_exception_is_reported_with_a_fingerprint() -> None:
    log = """\
        step 10 loss 2.1
        Traceback (most recent call last):
          File "train.py", line 3, in <module>
            run()
        mylib.errors.WidgetError: widget 42 exploded at /data/shard-7
    """
    report = run_text(log)
    (only,) = report.diagnoses
    assert only.category == "unrecognised"
    assert only.fingerprint and "WidgetError" in only.title
    other = run_text(log.replace("42", "7").replace("shard-7", "shard-9"))
    assert other.diagnoses[0].fingerprint == only.fingerprint  # numbers and paths do not count


def test_an_exception_the_run_survived_is_not_a_failure() -> None:
    report = run_text(
        """\
        Traceback (most recent call last):
          File "callbacks.py", line 3, in on_log
            post(metrics)
        ConnectionError: wandb upload failed
        step 10 loss 2.1
        step 20 loss 1.9
        """
    )
    assert report.diagnoses == []


def test_known_cause_ranks_above_unrecognised() -> None:
    report = run_text(
        """\
        RuntimeError: CUDA error: an illegal memory access was encountered
        Traceback (most recent call last):
          File "train.py", line 3, in <module>
            cleanup()
        mylib.CleanupError: could not release handle
        """
    )
    assert categories(report) == ["cuda_illegal_access", "unrecognised"]


def test_each_attempt_is_reported_as_such() -> None:
    report = run_text(
        """\
        ***** Running training *****
        {'loss': 2.1, 'learning_rate': 5e-05, 'epoch': 0.1}
        RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 23.65 GiB total capacity; 21.00 GiB already allocated; 100.00 MiB free; 21.50 GiB reserved in total by PyTorch)
        ***** Running training *****
        {'loss': 2.0, 'learning_rate': 5e-05, 'epoch': 0.2}
        RuntimeError: PytorchStreamReader failed reading zip archive: failed finding central directory
        """
    )
    by_category = {d.category: d for d in report.diagnoses}
    assert by_category["cuda_oom"].attempts == [1]
    assert by_category["checkpoint_load"].attempts == [2]
