"""Where a run that hangs stops: the last lines of a log that ends while it waits.

A hung run prints nothing more, so a log read after the fact (or pasted into an issue) ends on
the line it was waiting behind. These lines are harmless in the middle of a log and telling at
its very end, when no training step came after them. Real examples::

    Using /root/.cache/torch_extensions/py310_cu118 as PyTorch extensions root...
    Loading extension module fused_adam...
    [I socket.cpp:624] Waiting in store based barrier to initialize process group for rank: 6
    initializing ddp: GLOBAL_RANK: 0, MEMBER: 1/8                    # Lightning, then nothing
    Timeout (0:10:00)!                                   # faulthandler.dump_traceback_later
    Thread 0x00007f3a (most recent call first):           # a faulthandler or py-spy stack dump
    2022-01-28 12:00:05,814 INFO: Start training from epoch: 0, iter: 0   # then nothing
    tcmalloc: large alloc 2309472256 bytes == 0x5654ccf58000 @  0x7fc2...   # then nothing

The last is no hang: a process whose log ends while it asks for gigabytes of host memory (Colab
prints tcmalloc's warning for each) was killed there by the kernel's OOM killer.

:func:`signature` names the kind of wait; the extractor reports a ``stalled`` fact when a file
ends within a few lines of one with no metric line after it.
"""

from __future__ import annotations

from .lazy import lazy_compile

#: The process group's set-up, which a healthy run logs once and then moves past.
_PROCESS_GROUP_INIT = (
    r"initializing (?:ddp|distributed): GLOBAL_RANK|Initializing TorchBackend in DeepSpeed"
    r"|Initializing process group\b|batch_all_reduce: \d+ all-reduces with algorithm"
    # c10d's warning as the first barrier starts on a rank whose GPU it has to guess.
    r"|using best-guess GPU \d+ to perform barrier"
)

#: A run announcing that its training loop begins (Real-ESRGAN's ``Start training from epoch: 0,
#: iter: 0``, OpenNMT's ``Start training loop``, the lines of the Trainer's banner): every run
#: prints it once, and a log that ends on it never took a step.
_TRAINING_START = (
    r"(?i)\bstart(?:ing)? (?:the )?training\b|\*{3,} Running training \*{3,}"
    r"|\b(?:Total optimization steps|Total train batch size \(w\. parallel[^)]*\)"
    r"|Gradient Accumulation steps|Instantaneous batch size per device) = \d"
)

#: A run announcing that an evaluation begins, or counting its batches (TensorFlow's estimator
#: prints ``Evaluation [80/100]`` for each tenth): a healthy run prints its results after it, so a
#: log that ends on it stopped inside the evaluation (VALL-E's ``Computing validation loss``
#: for days, one rank short of a collective).
_EVALUATION = (
    r"(?i)Computing validation loss|\*{3,} Running Evaluation \*{3,}|\bEvaluation \[\d+/\d+\]"
    r"|\bstart(?:ing)? (?:the )?(?:evaluation|validation)\b"
)
#: The same, as a whole line (the trigger finds candidates; this keeps only an announcement with
#: nothing after it, and a batch count short of its total).
_EVALUATION_LINE = (
    r"(?i)(?:Computing validation loss|\*{3,} Running Evaluation \*{3,}"
    r"|\bstart(?:ing)? (?:the )?(?:evaluation|validation)\b\W{0,4})\s*$"
    r"|\bEvaluation \[(?P<done>\d+)/(?P<total>\d+)\]\s*$"
)

#: A stage inside an evaluation that a healthy run follows at once with its result: pycocotools'
#: ``Loading and preparing results...`` then ``DONE (t=0.52s)``, detectron2's ``Total inference
#: pure compute time`` then its evaluator's ``Preparing results``. A log whose very last line is
#: one stopped inside the evaluation (ranks gathering predictions, COCOeval out of memory).
_EVALUATION_STAGE = (
    r"Loading and preparing results\.\.\.|Running per image evaluation\.\.\."
    r"|Accumulating evaluation results\.\.\.|Total inference (?:pure compute )?time: \d"
)

TRIGGERS: dict[str, str] = {
    "waiting": r"(?i)\bwaiting (?:in|for|on)\b|store based barrier|Lock file exists",
    "process_group_init": f"(?i){_PROCESS_GROUP_INIT}",
    "extension_build": r"as PyTorch extensions root|(?:Loading|Building) extension module",
    "training_start": _TRAINING_START,
    "evaluation": _EVALUATION,
    "evaluation_stage": _EVALUATION_STAGE,
    "host_alloc": r"tcmalloc:\s+large alloc \d+ bytes",
    "stack_dump": r"Timeout \(\d+:\d\d:\d\d\)!|Thread 0x[0-9a-fA-F]+ \(most recent call first\)"
    r"|Thread \S+ \((?:idle|active)\)",
}
# A progress bar still at 0 is a telling last line too, but every tqdm line redrawn with \r
# starts at 0%: as a trigger it would send every progress line of a log to Python. The extractor
# keeps each file's last bytes instead and looks at them once, when the file ends.

#: A progress bar's last state at 0 steps: ``Epoch 0:   0%|          | 0/32425 [00:00<?, ?it/s]``.
#: Only as drawn when it started (elapsed 00:00): tqdm redraws a bar only when the program
#: updates it, so ``0/1 [02:34<?`` was redrawn by a live program minutes later, not left behind.
AT_ZERO = lazy_compile(rb"(?:^|\s)0%\|[^|\r\n]*\|\s*0/\d+ \[(?:0:)?00:00<")
#: A bar past 0 drawn after it (``Epoch 2: 100%|##| 3/3 [00:23<00:00``): the run moved on, as
#: Lightning's validation bar at 0 is followed by the epoch's bar completing.
MOVED_ON = lazy_compile(rb"\|\s*[1-9]\d*/\d+ ?\[")

_SIGNATURES = (
    ("host_alloc", lazy_compile(r"tcmalloc:\s+large alloc \d")),
    ("extension_build", lazy_compile(r"extensions root|extension module|Lock file exists")),
    (
        "rendezvous",
        lazy_compile(
            r"(?i)store based barrier|waiting (?:in|for|on) .*(?:rank|node|process group|rendezvous|worker)"
            f"|{_PROCESS_GROUP_INIT}"
        ),
    ),
    ("stack_dump", lazy_compile(r"Timeout \(\d|Thread \S+ \((?:most recent|idle|active)")),
    ("waiting", lazy_compile(r"(?i)\bwaiting\b")),
    ("training_start", lazy_compile(_TRAINING_START)),
    ("evaluation", lazy_compile(_EVALUATION_LINE)),
    ("evaluation_stage", lazy_compile(_EVALUATION_STAGE)),
)

#: An error printed after a bar at 0 (glued to it, or on the lines after it): the run went on to
#: fail there, it did not hang.
FAILED_AFTER = lazy_compile(rb"(?i)\berror\b|Traceback \(most recent call last\)|\bexception\b")

#: An exception's last line just before a bar at 0: the run died there, and tqdm drew its bar's
#: closing state on the way out (``KeyError: 'prompt'`` then ``0%|   | 0/10 [00:00<?``).
FAILED_BEFORE = lazy_compile(rb"^\s*(?:[A-Za-z_][\w.]*)?(?:Error|Exception)\s*(?::|$)")

#: Lines a process prints while it sets up a collective, not training: NCCL's INFO lines and
#: banner, c10d's ``[I ProcessGroupNCCL.cpp:...]`` notes.
CHATTER = lazy_compile(rb"NCCL INFO |^NCCL version |^\[I (?:ProcessGroup|socket)")

#: NCCL tracing a failed call on its way out (``misc/socket.cc:619 -> 2``), or tearing a
#: communicator down: not set-up, so a log that ends on these did not hang in it.
NOT_SETUP = lazy_compile(
    rb"\.(?:cc|h|cu):\d+ -> \d|(?i:destroy|abort|finaliz|closed|WARN|error|fail)"
)
#: Set-up lines a log must end on, in a row, to end in a collective's set-up.
SETUP_TAIL_LINES = 2

#: A file that ends within this many lines of a wait line ends on it.
TAIL_LINES = 4
#: ... or within this many of the start of training: a paste cut right after the start shows
#: the warnings of the first step (two DDP notes), a run that hung there at most one more line.
#: The same for the start of an evaluation.
TRAINING_START_TAIL_LINES = 1
#: ... and an evaluation's inner stage only as the very last line (its result follows at once).
EVALUATION_STAGE_TAIL_LINES = 0
#: ... or within this many of a stack dump's thread header: each thread's frames follow it.
DUMP_TAIL_LINES = 64
#: Bytes of a file's end kept to look for a progress bar that never moved.
TAIL_BYTES = 4096


def signature(text: str) -> str | None:
    """The kind of wait a line shows (host_alloc, extension_build, rendezvous, stack_dump,
    waiting, training_start, evaluation, evaluation_stage), or ``None``."""
    for name, pattern in _SIGNATURES:
        found = pattern.search(text)
        if found is None:
            continue
        if name == "evaluation" and found["done"] and int(found["done"]) >= int(found["total"]):
            continue  # its last batch counted: the evaluation ended
        return name
    return None
