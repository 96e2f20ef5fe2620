"""Failure lines outside a traceback: a bare exception line, a C++ exception, a fatal signal,
a non-zero exit.

People paste the last lines of a run, not the whole of it, and many runs die without a Python
traceback at all. Real examples::

    RuntimeError: CUDA error: an illegal memory access was encountered
    ERROR:root:ValueError: Expected input batch_size (64) to match target batch_size (32).
    Exception: process 1 terminated with signal SIGKILL
    terminate called after throwing an instance of 'c10::CUDAError'
      what():  CUDA error: unspecified launch failure
    Segmentation fault (core dumped)
    Fatal Python error: Aborted
    [1]    31337 killed     python train.py
    ./train.sh: line 60: 11880 Killed                  python3 train.py
    mpirun noticed that process rank 7 with PID 0 on node n1 exited on signal 9 (Killed).
    subprocess.CalledProcessError: Command '['python', 'train.py']' returned non-zero exit status 1.
    [2023-05-01 12:00:03,114] [ERROR] [launch.py:434:sigkill_handler] exits with return code = -11
    Command exited with non-zero status 255
    ERROR utils.py:42 -- The actor died unexpectedly before finishing this task.

:func:`bare_exception` and :func:`cxx_exception` recognise the first kinds as an exception line
(the extractor reads it, and the lines that continue its message, as a traceback without frames);
:func:`parse` turns signals and exit codes into ``fatal`` drafts (signal_name, exitcode, message).
A fatal line says how a run ended, not why: it is the evidence of last resort, reported as
``unrecognised`` only when nothing explains it.
"""

from __future__ import annotations

import signal
from typing import Any

from .base import Draft, never_raises
from .lazy import lazy_compile

#: macOS's C++ runtime says it in one line: "libc++abi: terminating with uncaught exception of
#: type std::length_error: vector" (newer libc++: "terminating due to uncaught exception of type
#: std::runtime_error: [METAL] ..."), then the shell's "Abort trap: 6".
_LIBCXXABI_WORDS = r"terminating (?:with|due to) uncaught exception of type "
#: Lines that may hold an exception without a traceback (read by the extractor, not by parse).
EXCEPTION_TRIGGERS: dict[str, str] = {
    "exception_line": (
        r"[A-Za-z0-9_](?:Error|Exception|Interrupt|Failure|Fault)\b"
        r"|\.(?:exc|exceptions|errors)\.[A-Z]\w*:"
    ),
    "exception_plain": r"(?:^|[^\w.])Exception: ",
    "cxx_terminate": r"terminate called after throwing an instance of",
    "cxx_what": r"what\(\): ",
    "cxx_libcxxabi": _LIBCXXABI_WORDS,
    "exception_ignored": (
        r"Exception ignored in|Found from :\s*$|--- Logging error ---|^\s*Call stack:\s*$"
    ),
}
#: The stack after this line is no error: Python's word that the traceback was printed and
#: ignored (``__del__``, atexit, the "Call stack:" of a call whose record a logging handler
#: could not write), or Inductor's note of where a graph came from ("skipping
#: cudagraphs due to cpu device (cat_1). Found from :") before the frames it quotes.
IGNORED = lazy_compile(r"^\s*Exception ignored in\b|\bFound from :\s*$|^\s*Call stack:\s*$")
#: The traceback after this line is one that a logging handler caught and printed (it could not
#: write a record): the program goes on. Its error still counts (a full disk), but it never
#: ended a run.
LOGGING_ERROR = lazy_compile(r"^\s*--- Logging error ---\s*$")

# Each wording once: the prefilter's trigger and the parser's regex are built from it.
_CORE_SIGNAL = (
    r"(segmentation fault|bus error|aborted|abort trap|floating point exception|illegal instruction"
    r"|terminated)"  # the shell's word for a job that SIGTERM stopped (timeout, kill, a scheduler)
    r"(?: \(core dumped\)|: \d+)?"  # macOS's shell: "Abort trap: 6"
)
# A shell's report of a job it ran: zsh's "[1]    31337 killed     python train.py" (or
# "[1]    357200 floating point exception (core dumped)  python make_onnx.py", or "[1]
# 2843557 killed" and nothing after), bash's "./train.sh: line 60: 11880 Killed    python3
# train.py", dash's "./train.sh: 60: 11880 killed", and zsh's for a command it ran in the
# foreground: "zsh: bus error  yolo task=detect mode=train", often glued to a progress bar.
_SHELL = (
    r"(?:^\[\d+\]\s+\d+|^\S+: (?:line )?\s*\d+:\s+\d+|\bzsh:)"
    r" ([Kk]illed|[Tt]erminated|[Ss]egmentation fault|[Aa]bort(?:ed)?|[Bb]us error"
    r"|[Ff]loating point exception|[Ii]llegal instruction)(?::\s\d+)?(?:\s|$)"  # macOS: "Killed: 9"
)
_HANDLER = r"\] Signal: [A-Z][a-z][\w ]* \((\d+)\)"
_RECEIVED = (
    r"(?:received|caught|got|with|by|exited on) signal:? (?:(\d+)|(SIG[A-Z]+))"
    r"|signal (\d+) \((SIG[A-Z]+)\) received"  # torchrun's "signal 9 (SIGKILL) received by PID"
)
_EXIT_WORDS = (
    r"(?:exit(?:ed)? (?:with )?(?:code|status)|exit code|return(?:ed)? (?:code|status)"
    r"|exits with return code|non-zero exit status|exited with non-zero status"
    r"|退出代码为?|終了コード)\s*[:=]?\s*(-?\d+)"  # PyCharm's "Process finished with ..." in zh, ja
)
#: Windows ends a crashed process with the NTSTATUS code of its exception, printed signed or
#: not: -1073741819 and 3221225477 are both 0xC0000005. None of them is a signal number.
_NTSTATUS = {
    0xC0000005: "access violation",
    0xC000001D: "illegal instruction",
    0xC0000094: "integer division by zero",
    0xC00000FD: "stack overflow",
    0xC0000374: "heap corruption",
    0xC0000409: "stack buffer overrun",
}

# Ray's word that a worker or actor process died under a task, without a signal or a code.
_DIED = (
    r"(?:actor|worker) died unexpectedly (?:before finishing|while executing) this task"
    r"|actor is dead because its worker process has died|local raylet died"
)

#: Fatal signals and exit codes (read by :func:`parse`).
TRIGGERS: dict[str, str] = {
    "signal_core": f"(?i){_CORE_SIGNAL}",
    "fatal_python": r"Fatal Python error: ",
    "shell_killed": _SHELL,
    # Open MPI's and UCX's handlers: "[host:10948] Signal: Aborted (6)".
    "handler_signal": _HANDLER,
    "signal_received": f"(?i){_RECEIVED}",
    "exit_code": f"(?i){_EXIT_WORDS}",
    "process_died": _DIED,
}

#: An exception's name ends in Error, Exception...; or it is any class of a module that holds
#: exceptions (``torch._dynamo.exc.Unsupported``, ``torch._dynamo.exc.FailOnRecompileLimitHit``).
QUALNAME = (
    r"(?:(?:[A-Za-z_]\w*(?:\.|::))*(?:_?[A-Z]\w*(?:Error|Exception|Interrupt|Failure|Fault)|Exception)"
    r"|(?:[A-Za-z_]\w*\.)*(?:exc|exceptions|errors)\.[A-Z]\w*)"
)
_BARE = lazy_compile(
    # Ray wraps the error a task raised: ``ray.exceptions.RayTaskError(OutOfMemoryError): ...``.
    rf"(?:^|(?<=[\s:>|\]\-*`'\"(]))(?P<qualname>{QUALNAME}(?:\([\w.]+\))?)(?:\[[\w.]+\])?"
    r"(?:(?P<colon>:)[ \t]*(?P<message>.*?))?[`*'\"]*\s*$"
)
#: What may stand before an exception line: a logger's level and name (``ERROR:root:``,
#: ``[ERROR]``, ``| ERROR |``), a ranker's tag. Anything else is prose, accepted only when the
#: exception carries a message (``I keep getting RuntimeError: ...``).
#: An exception printed as its repr, the way ``print(repr(e))`` and spaCy's "Encountered
#: exception:" show it: ``OutOfMemoryError('Out of memory allocating 3,327,510,528 bytes ...``
#: (its message may run on to the next line).
_REPR = lazy_compile(
    rf"^\s*(?P<qualname>{QUALNAME})\((?P<quote>['\"])(?P<message>.*?)(?:(?P=quote),?\)*)?\s*$"
)
_PREAMBLE_OK = lazy_compile(
    r"[\W\d_]*(?:(?:ERROR|CRITICAL|FATAL|E)\b[\W\d_]*)?(?:[\w.<>-]+:\d*[\W\d_]*)?"
)
_MAX_PREAMBLE = 120
_NOT_AN_ERROR = lazy_compile(r"(?i)warn|\braise\b|\bexcept\b|\bcatch|\bignor|\bhandl|\bretry")
_CXX_TYPE = lazy_compile(r"terminate called after throwing an instance of '(?P<type>[^']+)'")
_CXX_WHAT = lazy_compile(r"^\s*what\(\):\s*(?P<message>.*)$")
_LIBCXXABI = lazy_compile(_LIBCXXABI_WORDS + r"(?P<type>[\w:<>, ]+?)(?:: (?P<message>.*))?$")

_SIGNAL_NAMES = {
    "segmentation fault": "SIGSEGV",
    "bus error": "SIGBUS",
    "aborted": "SIGABRT",
    "abort": "SIGABRT",
    "abort trap": "SIGABRT",
    "floating point exception": "SIGFPE",
    "illegal instruction": "SIGILL",
    "killed": "SIGKILL",
    "terminated": "SIGTERM",
}
_SIGNAL_WORD = lazy_compile(rf"(?i){_CORE_SIGNAL}\s*$")
_SHELL_KILLED = lazy_compile(_SHELL)
_SIGNAL = lazy_compile(f"(?i){_RECEIVED}")
_HANDLER_SIGNAL = lazy_compile(_HANDLER)
_EXIT = lazy_compile(f"(?i){_EXIT_WORDS}")
#: Open MPI names the rank that died: "process rank 7 with PID 0 on node n1 exited on signal 9".
_MPI_RANK = lazy_compile(r"\bprocess rank (\d+) with PID\b")
_PROCESS_DIED = lazy_compile(_DIED)


def bare_exception(text: str) -> str | None:
    """``Type: message`` when ``text`` (a peeled line) is an exception line standing on its own,
    else ``None``; a logger's preamble is dropped, a warning or a line of code is not one."""
    libcxxabi = _LIBCXXABI.search(text[:2000]) if "uncaught exception of" in text else None
    if libcxxabi is not None:
        message = (libcxxabi["message"] or "").strip()
        return f"{libcxxabi['type']}: {message}" if message else libcxxabi["type"]
    printed = _REPR.match(text[:2000]) if "(" in text else None
    if printed is not None and printed["message"].strip():
        return f"{printed['qualname']}: {printed['message'].strip()}"
    match = _BARE.search(text[:2000])
    if match is None:
        return None
    preamble = text[: match.start()]
    if _NOT_AN_ERROR.search(preamble):
        return None
    message = (match["message"] or "").strip()
    logger_only = len(preamble) <= _MAX_PREAMBLE and _PREAMBLE_OK.fullmatch(preamble)
    if not logger_only and not (match["colon"] and message):
        return None  # prose naming an exception, not an exception
    qualname = match["qualname"]
    return f"{qualname}: {message}" if message else qualname


def cxx_exception(text: str) -> str | None:
    """The C++ exception type that ``terminate called after throwing ...`` names, else None."""
    match = _CXX_TYPE.search(text)
    return match["type"] if match else None


def cxx_what(text: str) -> str | None:
    """The message of a ``what():`` line, else None."""
    match = _CXX_WHAT.match(text)
    return match["message"].strip() if match else None


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(abs(number)).name
    except ValueError:
        return f"signal {abs(number)}"


@never_raises
def parse(text: str) -> list[Draft]:
    """``fatal`` drafts for the signals and non-zero exit codes that ``text`` reports."""
    drafts: list[Draft] = []
    for line in text.splitlines()[:50]:
        fields: dict[str, Any] = {}
        stripped = line.strip()
        shell = _SHELL_KILLED.search(stripped)
        word = _SIGNAL_WORD.search(stripped) or shell
        # The shell's word can land glued to the progress bar it cut short ("5.02it/s]Segmentation
        # fault (core dumped)").
        glued = word is not None and word.start() > 0 and stripped[word.start() - 1] in "]|%"
        if word and (
            word.start() == 0 or glued or stripped.startswith("Fatal Python error") or shell
        ):
            fields["signal_name"] = _SIGNAL_NAMES[word.group(1).lower()]
        if "Fatal Python error: " in stripped:
            detail = stripped.split("Fatal Python error: ", 1)[1].lower()
            for words, name in _SIGNAL_NAMES.items():
                if detail.startswith(words):
                    fields["signal_name"] = name
            fields.setdefault("signal_name", "fatal")
        received = _SIGNAL.search(stripped)
        if received:
            number, name = (
                received.group(1) or received.group(3),
                received.group(2) or received.group(4),
            )
            fields["signal_name"] = name.upper() if name else _signal_name(int(number))
        if received and (rank := _MPI_RANK.search(stripped)):
            fields["rank"] = int(rank.group(1)[:6])
        handler = _HANDLER_SIGNAL.search(stripped)
        if handler:
            fields["signal_name"] = _signal_name(int(handler.group(1)))
        exit_code = _EXIT.search(stripped)
        if exit_code:
            code = int(exit_code.group(1)[:12])
            if code == 0:
                continue
            fields["exitcode"] = code
            unsigned = code & 0xFFFFFFFF  # Windows prints its status either way
            if status := _NTSTATUS.get(unsigned):
                fields["signal_name"] = f"a Windows {status} (0x{unsigned:08X})"
            elif code < 0:
                fields.setdefault("signal_name", _signal_name(code))
            elif 128 < code < 128 + signal.NSIG:  # the shell's 128 + N for death by signal N
                fields.setdefault("signal_name", _signal_name(code - 128))
        if not fields and _PROCESS_DIED.search(stripped):
            fields["signal_name"] = "fatal"  # it died; the line does not say how
        if fields:
            fields["message"] = stripped[:300]
            drafts.append(Draft("fatal", fields))
    return drafts
