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


SHAPE_THEN_FULL_DISK = """\
    step 10 loss 2.1
    Traceback (most recent call last):
      File "train.py", line 40, in <module>
        out = model(x)
      File "model.py", line 12, in forward
        h = x.view(64, 8, 6)
    RuntimeError: shape '[64, 8, 6]' is invalid for input of size 1536

    During handling of the above exception, another exception occurred:

    Traceback (most recent call last):
      File "train.py", line 44, in <module>
        torch.save(model.state_dict(), "/ckpt/emergency.pt")
      File "torch/serialization.py", line 834, in __exit__
        self.file_like.write_end_of_file()
    RuntimeError: [enforce fail at inline_container.cc:672] . unexpected pos 64 vs 0
"""


def test_an_error_raised_while_handling_another_is_its_symptom() -> None:
    """The emergency checkpoint failed on a full disk, after the shape error: the last error is
    not the cause."""
    report = run_text(SHAPE_THEN_FULL_DISK)
    assert categories(report) == ["shape_mismatch", "disk_full"]
    shape, disk = report.diagnoses
    assert disk.explained_by == "shape_mismatch"
    assert "raised while handling" in disk.reason
    assert any("invalid for input of size" in line.text for line in shape.evidence)
    assert all("unexpected pos" not in line.text for line in shape.evidence)


def test_a_direct_cause_chain_is_not_a_secondary_failure() -> None:
    report = run_text(
        SHAPE_THEN_FULL_DISK.replace(
            "During handling of the above exception, another exception occurred:",
            "The above exception was the direct cause of the following exception:",
        )
    )
    assert all(d.explained_by is None for d in report.diagnoses)


HANDLED_RECORD = """\
    step 10 loss 2.1
    WARNING skipping corrupt record 17
    Traceback (most recent call last):
      File "data.py", line 9, in __getitem__
        return json.loads(line)
    json.decoder.JSONDecodeError: Expecting ',' delimiter: line 1 column 30 (char 29)
"""


def test_a_handled_error_in_a_run_that_went_on_is_not_reported() -> None:
    steps = "".join(f"    step {i} loss {2 - i / 100}\n" for i in range(11, 19))
    assert run_text(HANDLED_RECORD + steps).diagnoses == []
    # ... unless the run then failed: the skipped record may be why
    crash = """\
    Traceback (most recent call last):
      File "train.py", line 3, in <module>
        run()
    mylib.errors.WidgetError: no batch
"""
    found = categories(run_text(HANDLED_RECORD + steps + crash))
    assert found[0] == "data_error" and found[-1] == "unrecognised"
    # ... and an error followed by a line or two did not leave the run running
    assert categories(run_text(HANDLED_RECORD + "    step 11 loss 2.0\n"))[0] == "data_error"


def test_an_unknown_error_on_the_first_failed_rank_explains_the_waiting_ranks() -> None:
    # torchrun's summary as above, both ranks having exited with an error (exit code 1)
    summary = TORCHRUN_SIGKILL.split("\n", 1)[1]
    for signal, name, pid in (("-6", "6 (SIGABRT)", 4321), ("-9", "9 (SIGKILL)", 4320)):
        summary = summary.replace(f"exitcode  : {signal} ", "exitcode  : 1 ").replace(
            f"Signal {name} received by PID {pid}", "To enable traceback see: the docs"
        )
    log = (
        """\
    [rank0]: Traceback (most recent call last):
    [rank0]:   File "train.py", line 3, in <module>
    [rank0]:     evaluate()
    [rank0]: mylib.errors.WidgetError: widget 42 exploded
    [rank1]: Traceback (most recent call last):
    [rank1]:   File "train.py", line 5, in <module>
    [rank1]:     dist.barrier()
    [rank1]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer [10.0.0.1]:5921
"""
        + summary
    )
    report = run_text(log)
    assert categories(report)[:2] == ["unrecognised", "distributed_timeout"]
    assert report.diagnoses[1].explained_by == "unrecognised"


def test_an_epoch_counter_back_at_its_start_begins_a_new_attempt() -> None:
    # CNTK's Fast R-CNN example run twice into one log (Microsoft/CNTK#2354): the second run's
    # first epochs are no divergence from the first run's last.
    def epochs(first: int, losses: list[float]) -> str:
        return "\n".join(
            f"Finished Epoch[{e} of 20]: [Training] loss = {v} * 40, metric = 0.5% * 40"
            for e, v in enumerate(losses, start=first)
        )

    report = run_text(
        f"{epochs(15, [30.1, 28.7, 25.55, 21.75, 35.53, 26.35])}\n"
        "Training Fast R-CNN model for 20 epochs.\n"
        f"{epochs(1, [4711.03, 401.34, 232.15, 201.90])}\n"
    )
    assert report.diagnoses == []


def test_a_cuda_warning_the_run_survived_ranks_below_the_error_that_ended_it() -> None:
    # rl-agents (SafetyRL_HighwayEnv#1): torch warned that the driver is too old and the run went
    # on on the CPU, where a Linear layer got 5 features instead of 7.
    warning = (
        "/usr/lib/python3.6/site-packages/torch/cuda/__init__.py:52: UserWarning: CUDA "
        "initialization: The NVIDIA driver on your system is too old (found version 9010)."
    )
    report = run_text(
        f"""\
        {warning}
        Traceback (most recent call last):
          File "experiments.py", line 45, in main
            agent.act(obs)
        RuntimeError: mat1 and mat2 shapes cannot be multiplied (1x5 and 7x64)
        """
    )
    assert categories(report) == ["shape_mismatch", "cuda_setup"]
    assert report.diagnoses[1].rule == "cuda_setup.driver_warning"
    # Alone, the warning is the cause.
    assert [d.rule for d in run_text(warning + "\n").diagnoses] == ["cuda_setup.driver_warning"]


def test_a_scheduler_that_says_the_job_is_preempted_is_preemption() -> None:
    # submitit on Slurm (its PR #1701 log): SIGHUP, then its own word for it.
    report = run_text(
        """\
        submitit WARNING (2022-07-12 04:18:45,881) - Bypassing signal SIGTERM
        submitit WARNING (2022-07-12 04:18:45,881) - Caught signal SIGHUP on learnfair0293: this job is preempted.
        """
    )
    assert categories(report)[:1] == ["preemption"]


def test_the_stack_a_signal_handler_dumps_is_one_failure_and_only_an_echo() -> None:
    # Open MPI's handler (HugeCTR#389): the signal, then the crashed process' frames.
    dumped = """\
[b:117125] *** Process received signal ***
[b:117125] Signal: Aborted (6)
[b:117125] [ 0] /usr/lib/x86_64-linux-gnu/libc.so.6(+0x43090)[0x7fb889e50090]
[b:117125] [ 1] /usr/lib/x86_64-linux-gnu/libc.so.6(gsignal+0xcb)[0x7fb889e5000b]
[b:117125] [ 2] /usr/lib/x86_64-linux-gnu/libc.so.6(abort+0x12b)[0x7fb889e2f859]
"""
    (diagnosis,) = run_text(dumped).diagnoses
    assert diagnosis.title == "Unrecognised failure: the process died with SIGABRT"
    # The frames alone (the paste began below the signal line, DeepRec#838): one diagnosis.
    frames = "\n".join(dumped.splitlines()[3:]) + "\n"
    (diagnosis,) = run_text(frames).diagnoses
    assert diagnosis.title == "Unrecognised failure: a crashed process' stack"
    assert diagnosis.evidence[0].text.startswith("[b:117125] [ 1]")
