"""Turn raw log bytes into clean lines with provenance.

A training log line arrives as bytes that may hold anything: ANSI colours, tqdm's ``\\r``
rewrites, invalid UTF-8, a 100 MB line of base64. :func:`clean` makes it readable text and
:func:`peel` lifts the prefixes that launchers and loggers put in front of it into fields::

    >>> peel("[rank3]: RuntimeError: CUDA out of memory.")
    ('RuntimeError: CUDA out of memory.', 3, None)
    >>> peel("2024-05-01 12:00:03,114 - INFO - step 10")
    ('INFO - step 10', None, '2024-05-01 12:00:03,114')
    >>> peel("[default1]:[2024-05-01T12:00:03Z] loss: 0.3")
    ('loss: 0.3', 1, '2024-05-01T12:00:03Z')

People paste logs into issues and chats, and the paste adds its own decoration: a ``> `` quote,
pytest's ``E   `` before each exception line, markdown emphasis around the line that matters.
Those are peeled too, so the parsers see the line the program printed::

    >>> peel("> E   **RuntimeError: CUDA error: device-side assert triggered**")
    ('RuntimeError: CUDA error: device-side assert triggered', None, None)
    >>> peel("`Assertion srcIndex < srcSelectDimSize failed. `")
    ('Assertion srcIndex < srcSelectDimSize failed.', None, None)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from .lazy import lazy_compile

#: Lines longer than this are cut, so that one pathological line cannot exhaust memory.
MAX_LINE_BYTES = 64 * 1024
TRUNCATION_MARKER = " …[crashcart: line truncated, {n} bytes]"

_ANSI = lazy_compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")

_TIMESTAMP = (
    r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?"
    r"|\d\d/\d\d/\d{4}[ ]\d\d:\d\d:\d\d"  # "[ ]": _PREFIX is a VERBOSE regex
)
# One prefix at a time, applied until none matches: launchers nest them freely
# (`[default0]:[2024-...][INFO] ...`, `3: [rank3]: ...`). A rank has at most 7 digits: a longer
# number is no rank (and int() refuses strings over 4,300 digits).
_PREFIX = lazy_compile(
    rf"""\s*(?:
        \[(?:rank|default)(?P<rank>\d{{1,7}})\]:\s?        # torch 2.x [rank3]:, torchrun --tee [default0]:
      | (?P<srank>\d{{1,4}}):\s                            # srun -l / torchrun --tee 'N: '
      | \[1,(?P<mpirank>\d{{1,7}})\]<std(?:out|err)>:\s?   # mpirun --tag-output
      | \[?(?P<time>{_TIMESTAMP})\]?(?:\s*[-|:]\s+|\s+|$)  # ISO and logging timestamps
      | >(?!>>)[ ]?                                          # a markdown or e-mail quote
      | E(?:[ ]{{3}}(?=[ ]*\S)|[ ]*$)                         # pytest's exception lines
      | (?P<emphasis>\*\*|`(?!``))(?=[A-Za-z])                # **RuntimeError: ...**, `...`
    )""",
    re.VERBOSE,
)


@dataclass(slots=True)
class LogLine:
    """One cleaned line of a log with where it came from."""

    path: str
    lineno: int
    text: str
    rank: int | None = None
    time: str | None = None

    def location(self) -> str:
        """``path:line``, as editors and terminals link it."""
        return f"{self.path}:{self.lineno}"


def clean(raw: bytes) -> str:
    """Decode one raw line (without its newline) into readable text.

    Invalid UTF-8 becomes U+FFFD, ANSI escapes go, a ``\\r``-rewritten progress bar keeps only
    its last state, and anything over :data:`MAX_LINE_BYTES` is cut with a visible marker.
    """
    cut = len(raw) - MAX_LINE_BYTES
    if cut > 0:
        raw = raw[:MAX_LINE_BYTES]
    text = raw.decode("utf-8", errors="replace")
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    if "\r" in text:
        # tqdm redraws with \r; what the terminal showed last is the last non-empty segment.
        segments = [s for s in text.split("\r") if s.strip()]
        text = segments[-1] if segments else ""
    if cut > 0:
        text += TRUNCATION_MARKER.format(n=cut + MAX_LINE_BYTES)
    return text


def peel(text: str) -> tuple[str, int | None, str | None]:
    """Strip rank and timestamp prefixes; return ``(text, rank, time)``."""
    rank: int | None = None
    time: str | None = None
    pos = 0
    emphasis = ""
    while True:
        match = _PREFIX.match(text, pos)
        if not match or match.end() == pos:
            break
        found_rank = match["rank"] or match["srank"] or match["mpirank"]
        if found_rank is not None and rank is None:
            rank = int(found_rank)
        elif match["time"] and time is None:
            time = match["time"]
        elif match["emphasis"]:
            emphasis = match["emphasis"]
        pos = match.end()
    if emphasis:
        body = text.rstrip()
        if body.endswith(emphasis):
            return body[pos : -len(emphasis)].rstrip(), rank, time
    if text.endswith("`") and text.count("`") % 2:
        return text[pos:].rstrip("`"), rank, time  # the end of a code block pasted inline
    return text[pos:], rank, time


_TIME_FORMATS = ("%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S", "%m/%d/%Y %H:%M:%S")


def to_seconds(time: str) -> float | None:
    """Seconds since the epoch of a peeled timestamp (zones ignored: one log, one clock)."""
    base, _, fraction = time.replace(",", ".").partition(".")
    base = base[:19].rstrip("Z")
    for fmt in _TIME_FORMATS:
        try:
            seconds = datetime.strptime(base, fmt).timestamp()
        except ValueError:
            continue
        digits = "".join(c for c in fraction if c.isdigit())
        return seconds + (float("0." + digits) if digits else 0.0)
    return None


def make_line(path: str, lineno: int, raw: bytes, default_rank: int | None = None) -> LogLine:
    """Clean and peel one raw line into a :class:`LogLine`."""
    text, rank, time = peel(clean(raw))
    return LogLine(path, lineno, text, default_rank if rank is None else rank, time)
