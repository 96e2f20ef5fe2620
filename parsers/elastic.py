"""torchrun / torch.distributed.elastic failure reports: the summary block and its one-liners.

The summary block that torchrun prints when a worker dies::

    torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
    ============================================================
    train.py FAILED
    ------------------------------------------------------------
    Failures:
      <NO_OTHER_FAILURES>
    ------------------------------------------------------------
    Root Cause (first observed failure):
    [0]:
      time      : 2024-01-01_12:00:00
      host      : node1
      rank      : 3 (local_rank: 3)
      exitcode  : -9 (pid: 12345)
      error_file: <N/A>
      traceback : Signal 9 (SIGKILL) received by PID 12345
    ============================================================

And the one-line forms::

    ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) local_rank: 0 (pid: 2405) of binary: /usr/bin/python3
    WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 2406 closing signal SIGTERM
    torch.distributed.elastic.multiprocessing.api.SignalException: Process 12345 got signal: 15

Kinds: ``process_exit`` (rank, local_rank, exitcode, signal, signal_name, host, pid, root_cause,
time, error_file) and ``process_terminated`` (pid, signal_name): the SIGTERMs torchrun sends to
the surviving workers are consequences of a failure, not causes.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from .base import Draft
from .lazy import pp

TRIGGERS: dict[str, str] = {
    "elastic_failed_exitcode": r"failed \(exitcode: -?\d+\) local_rank: \d+",
    "elastic_closing_signal": r"Sending process \d+ closing signal SIG[A-Z]+",
    "elastic_got_signal": r"Process \d+ got signal: \d+",
    "elastic_child_failed": r"ChildFailedError",
    "elastic_root_cause": r"Root Cause \(first observed failure\)",
}

#: A line that opens the summary block (for the pipeline's block collector).
BLOCK_START = r"^(?:={20,}|.*ChildFailedError:?)\s*$"

_MAX_LINES = 2_000

# Linux signal numbers (torchrun reports a signal death as a negative exit code).
_SIGNAL_NAMES = {
    1: "SIGHUP",
    2: "SIGINT",
    3: "SIGQUIT",
    4: "SIGILL",
    5: "SIGTRAP",
    6: "SIGABRT",
    7: "SIGBUS",
    8: "SIGFPE",
    9: "SIGKILL",
    10: "SIGUSR1",
    11: "SIGSEGV",
    12: "SIGUSR2",
    13: "SIGPIPE",
    14: "SIGALRM",
    15: "SIGTERM",
}


@lru_cache(maxsize=1)
def _grammar() -> dict[str, pp.ParserElement]:
    """Build the grammars once."""
    integer = pp.common.signed_integer
    pid = pp.Literal("(pid:") + integer("pid") + pp.Literal(")")

    entry_start = pp.Regex(r"\[(?P<index>\d+)\]:\s*$")
    field = pp.Regex(r"(?P<key>[a-z_]+)\s*:\s*(?P<value>.*)$")
    rank = integer("rank") + pp.Opt(
        pp.Literal("(local_rank:") + integer("local_rank") + pp.Literal(")")
    )
    exitcode = integer("exitcode") + pp.Opt(pid)
    signal = (
        pp.Literal("Signal")
        + integer("signal")
        + pp.Opt(pp.Literal("(") + pp.Word(pp.alphanums)("signal_name") + pp.Literal(")"))
        + pp.Literal("received by PID")
        + integer("pid")
    )

    failed = (
        pp.Literal("failed (exitcode:")
        + integer("exitcode")
        + pp.Literal(")")
        + pp.Literal("local_rank:")
        + integer("local_rank")
        + pp.Opt(pid)
        + pp.Opt(pp.Literal("of binary:") + pp.Regex(r"\S+")("binary"))
    )
    closing = (
        pp.Literal("Sending process")
        + integer("pid")
        + pp.Literal("closing signal")
        + pp.Regex(r"SIG[A-Z0-9]+")("signal_name")
    )
    got_signal = (
        pp.Literal("Process") + integer("pid") + pp.Literal("got signal:") + integer("signal")
    )
    return {
        "entry_start": entry_start,
        "field": field,
        "rank": rank,
        "exitcode": exitcode,
        "signal": signal,
        "failed": failed,
        "closing": closing,
        "got_signal": got_signal,
    }


def _first(expr: pp.ParserElement, text: str) -> pp.ParseResults | None:
    for tokens, _start, _end in expr.scan_string(text, max_matches=1):
        return tokens
    return None


def _add_signal(fields: dict[str, Any], exitcode: int) -> None:
    """A negative exit code is a death by signal: -9 is SIGKILL."""
    if exitcode < 0:
        fields.setdefault("signal", -exitcode)
        name = _SIGNAL_NAMES.get(-exitcode)
        if name:
            fields.setdefault("signal_name", name)


def _entry_fields(pairs: dict[str, str], grammar: dict[str, pp.ParserElement]) -> dict[str, Any]:
    """Turn the ``key : value`` lines of one failure entry into ``process_exit`` fields."""
    fields: dict[str, Any] = {}
    if pairs.get("time"):
        fields["time"] = pairs["time"]
    if pairs.get("host"):
        fields["host"] = pairs["host"]
    if "rank" in pairs:
        rank = _first(grammar["rank"], pairs["rank"])
        if rank is not None:
            fields["rank"] = int(rank.rank)
            if "local_rank" in rank:
                fields["local_rank"] = int(rank.local_rank)
    if "exitcode" in pairs:
        exitcode = _first(grammar["exitcode"], pairs["exitcode"])
        if exitcode is not None:
            fields["exitcode"] = int(exitcode.exitcode)
            if "pid" in exitcode:
                fields["pid"] = int(exitcode.pid)
    if pairs.get("error_file") and pairs["error_file"] != "<N/A>":
        fields["error_file"] = pairs["error_file"]
    if "traceback" in pairs:
        signal = _first(grammar["signal"], pairs["traceback"])
        if signal is not None:
            fields["signal"] = int(signal.signal)
            if signal.signal_name:
                fields["signal_name"] = signal.signal_name
            fields.setdefault("pid", int(signal.pid))
    if "exitcode" in fields:
        _add_signal(fields, fields["exitcode"])
    return fields


def parse_block(lines: list[str]) -> list[Draft]:
    """Return one ``process_exit`` draft per failure entry of a torchrun summary block.

    ``lines`` are the block's lines (cleaned of rank/time prefixes), from its opening ``====``
    or ``ChildFailedError:`` line on. The entry under ``Root Cause (first observed failure)``
    has ``root_cause: True``; those under ``Failures:`` have ``root_cause: False``. Never raises.
    """
    try:
        return _parse_block(lines)
    except Exception:  # a parser must never break the pipeline
        return []


def _parse_block(lines: list[str]) -> list[Draft]:
    grammar = _grammar()
    drafts: list[Draft] = []
    section = None
    pairs: dict[str, str] | None = None
    entry_section = None

    def flush() -> None:
        if pairs:
            fields = _entry_fields(pairs, grammar)
            if fields:
                fields["root_cause"] = entry_section == "root"
                drafts.append(Draft("process_exit", fields))

    for raw in list(lines)[:_MAX_LINES]:
        line = str(raw).strip()[:2000]
        if line.startswith("Root Cause"):
            flush()
            pairs, section = None, "root"
        elif line.startswith("Failures:"):
            flush()
            pairs, section = None, "failures"
        elif re.fullmatch(r"[=\-]{10,}", line):
            flush()
            pairs = None
        elif section is not None and grammar["entry_start"].matches(line):
            flush()
            pairs, entry_section = {}, section
        elif pairs is not None:
            match = _first(grammar["field"], line)
            if match is not None and ":" in line:
                pairs[match["key"]] = match["value"].strip()
    flush()
    return drafts


def _one_liners(text: str, grammar: dict[str, pp.ParserElement]) -> list[Draft]:
    drafts: list[Draft] = []
    if "failed (exitcode:" in text:
        for tokens, _s, _e in grammar["failed"].scan_string(text):
            fields: dict[str, Any] = {
                "exitcode": int(tokens.exitcode),
                "local_rank": int(tokens.local_rank),
            }
            if "pid" in tokens:
                fields["pid"] = int(tokens.pid)
            _add_signal(fields, fields["exitcode"])
            drafts.append(Draft("process_exit", fields))
    if "closing signal" in text:
        for tokens, _s, _e in grammar["closing"].scan_string(text):
            fields = {"pid": int(tokens.pid), "signal_name": tokens.signal_name}
            drafts.append(Draft("process_terminated", fields))
    if "got signal:" in text:
        for tokens, _s, _e in grammar["got_signal"].scan_string(text):
            fields = {"pid": int(tokens.pid), "signal": int(tokens.signal)}
            name = _SIGNAL_NAMES.get(int(tokens.signal))
            if name:
                fields["signal_name"] = name
            drafts.append(Draft("process_exit", fields))
    return drafts


def parse(text: str) -> list[Draft]:
    """Return the drafts of torchrun's one-line failure reports (or of a whole joined block).

    Never raises.
    """
    try:
        if not isinstance(text, str):
            return []
        text = text[:100_000]
        if "Root Cause (first observed failure)" in text or re.search(
            r"^\s*\[\d+\]:\s*$", text, re.M
        ):
            drafts = parse_block(text.splitlines())
            if drafts:
                return drafts
        return _one_liners(text, _grammar())
    except Exception:  # a parser must never break the pipeline
        return []
