"""Failure lines outside a traceback: bare exception lines, C++ exceptions, signals, exit codes."""

from __future__ import annotations

import pytest

from crashcart.parsers import failure
from tests.conftest import categories, run_text


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            "RuntimeError: CUDA error: an illegal memory access was encountered",
            "RuntimeError: CUDA error: an illegal memory access was encountered",
        ),
        ("ERROR:root:ValueError: bad batch", "ValueError: bad batch"),
        (
            "[2023-01-01 12:00:00,000] [ERROR] [x.py:12:main] AssertionError: bad",
            "AssertionError: bad",
        ),
        (
            "Exception: process 1 terminated with signal SIGKILL",
            "Exception: process 1 terminated with signal SIGKILL",
        ),
        ("I keep getting RuntimeError: CUDA out of memory", "RuntimeError: CUDA out of memory"),
        (
            "torch._C._LinAlgError: linalg.cholesky: failed",
            "torch._C._LinAlgError: linalg.cholesky: failed",
        ),
        ("KeyboardInterrupt", "KeyboardInterrupt"),
        (  # Ray names the error its task raised in parentheses (ray-project/ray#31828).
            "ray.exceptions.RayTaskError(RuntimeError): ray::TrainTrainable.train() (pid=1876)",
            "ray.exceptions.RayTaskError(RuntimeError): ray::TrainTrainable.train() (pid=1876)",
        ),
        (  # a class of a module of exceptions, whatever its name ends with (dion#23)
            "torch._dynamo.exc.FailOnRecompileLimitHit: recompile_limit reached with fullgraph=True.",
            "torch._dynamo.exc.FailOnRecompileLimitHit: recompile_limit reached with fullgraph=True.",
        ),
        (  # macOS's C++ runtime, one line for the type and the message (TopoModelX#16)
            "libc++abi: terminating with uncaught exception of type std::length_error: vector",
            "std::length_error: vector",
        ),
        (
            "libc++abi.dylib: terminating with uncaught exception of type c10::Error",
            "c10::Error",
        ),
        (  # newer libc++ words it "due to" (mlx-examples#481, Metal out of memory)
            "libc++abi: terminating due to uncaught exception of type std::runtime_error: [METAL]"
            " Command buffer execution failed: Insufficient Memory",
            "std::runtime_error: [METAL] Command buffer execution failed: Insufficient Memory",
        ),
        (  # the repr spaCy prints after "Encountered exception:", wrapped (spaCy#8093)
            "OutOfMemoryError('Out of memory allocating 3,327,510,528 bytes (allocated so",
            "OutOfMemoryError: Out of memory allocating 3,327,510,528 bytes (allocated so",
        ),
        ("KeyError('fname',)", "KeyError: fname"),
    ],
)
def test_an_exception_line_standing_alone_is_read(line: str, expected: str) -> None:
    assert failure.bare_exception(line) == expected


@pytest.mark.parametrize(
    "line",
    [
        '    raise ValueError("x")',
        "    ValueError()",
        "except RuntimeError:",
        "UserWarning: this will be an error in 2.0",
        "WARNING: caught ValueError: retrying",
        "we handle RuntimeError gracefully",
        "see torch._dynamo.exc for the Unsupported cases",
    ],
)
def test_code_warnings_and_prose_are_not_exceptions(line: str) -> None:
    assert failure.bare_exception(line) is None


@pytest.mark.parametrize(
    ("line", "signal", "code"),
    [
        ("Segmentation fault (core dumped)", "SIGSEGV", None),
        ("Fatal Python error: Aborted", "SIGABRT", None),
        ("[1]    31337 killed     python train.py", "SIGKILL", None),
        # bash and dash report a job of a script they ran (a TF Object Detection train.sh).
        ("./train.sh: line 60: 11880 Killed                  python3 train.py", "SIGKILL", None),
        ("./train.sh:  60: 11880 killed              PYTHONPATH=x python3 t.py", "SIGKILL", None),
        (
            "run.sh: line 3:  4242 Segmentation fault      (core dumped) python t.py",
            "SIGSEGV",
            None,
        ),
        ("[ERROR] [launch.py:434:sigkill_handler] exits with return code = -11", "SIGSEGV", -11),
        ("Process finished with exit code 137 (interrupted by signal 9: SIGKILL)", "SIGKILL", 137),
        ("[149-130-218-240:10948] Signal: Aborted (6)", "SIGABRT", None),
        ("traceback : signal 9 (SIGKILL) received by PID 36071", "SIGKILL", None),
        ("Abort trap: 6", "SIGABRT", None),  # macOS's shell
        # zsh's report of a job that crashed (FoundationStereo#215)
        (
            "[1]    357200 floating point exception (core dumped)  XFORMERS_DISABLED=1 python"
            " scripts/make_onnx.py --save_path  --ckpt_dir   192",
            "SIGFPE",
            None,
        ),
        # zsh's job report with nothing after it (BirdNET-Analyzer#285), and its report of a
        # command run in the foreground, glued to the progress bar it cut (ultralytics#3591).
        ("[1]    2843557 killed", "SIGKILL", None),
        (
            "  0%|          | 0/144 [00:00<?, ?it/s]zsh: bus error  yolo task=detect mode=train",
            "SIGBUS",
            None,
        ),
        # bash's word for a job that SIGTERM stopped (YOLOX#646), and its job report.
        ("Terminated", "SIGTERM", None),
        ("./run.sh: line 9:  4242 Terminated              python train.py", "SIGTERM", None),
        # macOS's bash says "Killed: 9" (rl-swarm#369); a segfault glued to the progress bar it
        # cut short (batch-133, TNT trajectory prediction).
        (
            "./run_rl_swarm.sh: line 323: 23001 Killed: 9               python swarm_launcher.py",
            "SIGKILL",
            None,
        ),
        (
            "[Info: loss: 4.38811e+02]:  20%|| 11/56 [00:02<00:08,  5.02it/s]Segmentation fault"
            " (core dumped)",
            "SIGSEGV",
            None,
        ),
        # Ray says a process died and not how (ray-project/ray#22349).
        (
            "ERROR utils.py:42 -- The actor died unexpectedly before finishing this task.",
            "fatal",
            None,
        ),
    ],
)
def test_fatal_signals_and_exit_codes(line: str, signal: str, code: int | None) -> None:
    (draft,) = failure.parse(line)
    assert draft.kind == "fatal"
    assert draft.fields["signal_name"] == signal
    assert draft.fields.get("exitcode") == code


def test_terminated_in_prose_is_no_signal() -> None:
    assert failure.parse("Training terminated early: no improvement in 10 epochs") == []
    (draft,) = failure.parse("Exception: process 1 terminated with signal SIGKILL")
    assert draft.fields["signal_name"] == "SIGKILL"


def test_a_job_the_shell_reports_terminated_was_stopped_from_outside() -> None:
    assert categories(run_text("step 1 loss 2.0\nTerminated\n")) == ["preemption"]
    # ... and a run that hung first was stopped because it hung (YOLOX#646, batch-103).
    hung = (
        "[W ProcessGroupNCCL.cpp:1569] Rank 0 using best-guess GPU 0 to perform barrier as"
        " devices used by this process are currently unknown.\nTerminated\n"
    )
    assert categories(run_text(hung)) == ["hang", "preemption"]


def test_gnu_times_report_of_a_failed_command_is_its_exit_code() -> None:
    # time(1) around sentencepiece's spm_train (sentencepiece#859), its last line.
    (draft,) = failure.parse("Command exited with non-zero status 255")
    assert draft.kind == "fatal" and draft.fields["exitcode"] == 255
    assert failure.parse("Command exited with non-zero status 0") == []


def test_exit_code_zero_is_not_fatal() -> None:
    assert failure.parse("Process finished with exit code 0") == []


def test_a_pasted_last_line_is_never_silent() -> None:
    report = run_text("step 1 loss 2.0\nmylib.WeirdError: the frobnicator jammed\n")
    assert categories(report) == ["unrecognised"]
    (diagnosis,) = report.diagnoses
    assert "the frobnicator jammed" in diagnosis.summary
    assert diagnosis.evidence[0].lineno == 2


def test_a_cxx_exception_is_read_with_its_what_line() -> None:
    report = run_text(
        """\
        terminate called after throwing an instance of 'c10::Error'
          what():  something odd happened in the
          frobnicator
        Aborted (core dumped)
        """
    )
    (diagnosis,) = report.diagnoses
    assert diagnosis.title == "Unrecognised failure: c10::Error"
    assert "something odd happened in the frobnicator" in diagnosis.summary
    assert [line.lineno for line in diagnosis.evidence] == [1, 2, 3]


def test_a_cxx_cuda_error_reaches_the_cuda_rules() -> None:
    report = run_text(
        """\
        terminate called after throwing an instance of 'c10::CUDAError'
          what():  CUDA error: an illegal memory access was encountered
        """
    )
    assert categories(report)[0] == "cuda_illegal_access"


def test_a_signal_alone_is_an_unrecognised_failure_and_only_then() -> None:
    alone = run_text("step 1 loss 2.0\nSegmentation fault (core dumped)\n")
    assert [d.title for d in alone.diagnoses] == [
        "Unrecognised failure: the process died with SIGSEGV"
    ]
    assert alone.diagnoses[0].summary.startswith(
        "The run ended: the process died with SIGSEGV: Segmentation fault (core dumped)."
    )
    with_cause = run_text(
        "RuntimeError: CUDA error: an illegal memory access was encountered\n"
        "Segmentation fault (core dumped)\n"
    )
    assert categories(with_cause) == ["cuda_illegal_access"]


def test_a_healthy_log_with_exit_code_zero_stays_quiet() -> None:
    assert run_text("step 1 loss 2.0\nstep 2 loss 1.0\nexited with code 0\n").diagnoses == []


def test_an_exception_python_ignored_is_not_a_failure() -> None:
    # Posted in SimpleTransformers#763: the DataLoader's __del__ at interpreter shutdown.
    report = run_text(
        """\
        Exception ignored in: <function _MultiProcessingDataLoaderIter.__del__ at 0x7f0>
        Traceback (most recent call last):
          File "torch/utils/data/dataloader.py", line 1101, in __del__
            self._shutdown_workers()
        AssertionError: can only join a child process
        """
    )
    assert report.diagnoses == []


def test_open_mpi_names_the_rank_killed_by_a_signal() -> None:
    report = run_text(
        "mpirun noticed that process rank 7 with PID 0 on node HOSTNAME exited on signal 9"
        " (Killed).\n"
    )
    assert categories(report) == ["host_oom"]
    assert report.diagnoses[0].ranks == [7]
    assert "(rank 7)" in report.diagnoses[0].summary


@pytest.mark.parametrize(
    "line",
    [
        "Process finished with exit code -1073741819 (0xC0000005)",
        "进程已结束，退出代码为 -1073741819 (0xC0000005)",  # PyCharm in Chinese
        "subprocess.CalledProcessError: Command 'x' returned non-zero exit status 3221225477.",
    ],
)
def test_a_windows_crash_code_is_named_not_read_as_a_signal(line: str) -> None:
    (draft,) = failure.parse(line)
    assert draft.fields["signal_name"] == "a Windows access violation (0xC0000005)"
    assert abs(draft.fields["exitcode"]) in (1073741819, 3221225477)


def test_a_signal_word_inside_prose_is_not_glued_to_a_bar() -> None:
    assert failure.parse("We saw a Segmentation fault (core dumped) twice last week") == []
