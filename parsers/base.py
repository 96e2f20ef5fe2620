"""The contract between parsers and the rest of the pipeline.

A *message parser* is a module with two names:

``TRIGGERS``
    ``{name: regex}``: patterns (RE2/Hyperscan syntax, no look-around or back-references) that
    the prefilter scans for. A line that matches none of them never reaches the parser.

``parse(text: str) -> list[Draft]``
    Reads one exception message (possibly several lines joined by ``\\n``) or one stand-alone
    log line, already cleaned of ANSI and rank/timestamp prefixes, and returns what it found.

A :class:`Draft` is a fact without provenance; the pipeline adds the path, line, rank and
sequence number when it turns drafts into facts.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

_UNITS = {"b": 1 / 2**30, "kb": 1 / 2**20, "kib": 1 / 2**20, "mb": 1 / 2**10, "mib": 1 / 2**10}
_UNITS |= {"gb": 1.0, "gib": 1.0, "tb": 1024.0, "tib": 1024.0, "bytes": 1 / 2**30}


@dataclass
class Draft:
    """A fact found by a parser, before the pipeline gives it provenance."""

    kind: str
    fields: dict[str, Any] = field(default_factory=dict)


def to_gib(value: float | str, unit: str) -> float:
    """Convert an amount in ``unit`` (B, KiB, MiB, GiB, TiB, or their KB/MB/GB spellings) to GiB."""
    return round(float(value) * _UNITS[unit.lower()], 4)


#: A message parser reads at most this much of one message (a 100 MB line is cut before).
MAX_TEXT = 20_000


class ParserErrors:
    """Errors that a parser raised on one line or block, contained and counted.

    One line of a log must never end an analysis or a live session, so the pipeline catches what
    a parser raises on a line (and carries on with the next); but a bug must not vanish either:
    each is counted here, the first few are kept with where they happened, and the report and
    the CLI say so.
    """

    EXAMPLES = 5

    def __init__(self) -> None:
        self.count = 0
        self.by_where: Counter[str] = Counter()
        self.examples: list[str] = []
        self.last = ""

    def record(self, where: str, error: BaseException, location: str = "") -> None:
        """Count ``error``, raised by ``where`` (a parser's name) at ``location`` (path:line)."""
        self.note(where, f"{type(error).__name__}: {str(error)[:200]}", location)
        # logging (and the traceback module it imports) only once something went wrong.
        import logging

        logging.getLogger("crashcart.parsers").debug(
            "contained parser error at %s", location or where, exc_info=error
        )

    def note(self, where: str, what: str, location: str = "") -> None:
        """Count an error already described as ``what``."""
        self.count += 1
        self.by_where[where] += 1
        self.last = what
        if len(self.examples) < self.EXAMPLES:
            self.examples.append(f"{location or '?'}: {where}: {what}")


#: What :func:`never_raises` parsers contained, process-wide (the pipeline compares counts
#: before and after a call to charge a failure to its run and line).
CONTAINED = ParserErrors()


def never_raises(parse: Callable[[str], list[Draft]]) -> Callable[[str], list[Draft]]:
    """Make a message parser total: non-text gives ``[]``, text is cut to :data:`MAX_TEXT`, and
    a bug in the parser gives ``[]`` rather than breaking the pipeline (counted in
    :data:`CONTAINED`, so that it is reported rather than lost)."""

    @functools.wraps(parse)
    def safe(text: str) -> list[Draft]:
        if not isinstance(text, str):
            return []
        try:
            return parse(text[:MAX_TEXT])
        except Exception as error:
            CONTAINED.record(parse.__module__, error)
            return []

    return safe
