"""One combined multi-pattern scan that finds the few lines of a log worth parsing.

Almost every line of a training log is noise (progress bars, loss lines, INFO chatter). The
prefilter compiles every parser trigger and every rule pattern into one matcher and runs it over
whole ~1 MiB chunks, so that per-line Python work happens only on candidate lines::

    >>> pf = Prefilter({"oom": r"out of memory", "nccl": r"NCCL (?:WARN|error)"})
    >>> buf = b"step 1\\nRuntimeError: CUDA out of memory.\\nstep 2\\n"
    >>> [(buf[s:e], sorted(pf.names(mask))) for s, e, mask in pf.scan(buf)]
    [(b'RuntimeError: CUDA out of memory.', ['oom'])]

Engines, fastest first: Hyperscan (block mode, x86-64 wheels), RE2 (linear time, portable).
Both guarantee linear-time matching, so a hostile pattern or line cannot hang the scan.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

try:  # pragma: no cover - which branch runs depends on the platform's wheels
    import hyperscan
except ImportError:  # pragma: no cover
    hyperscan = None

import re2


class PatternError(ValueError):
    """A pattern the prefilter engines cannot compile."""


def _re2_options() -> re2.Options:
    options = re2.Options()
    options.max_mem = 64 << 20
    return options


def check_pattern(pattern: str) -> None:
    """Raise :class:`PatternError` if ``pattern`` is not a linear-time (RE2) pattern."""
    try:
        re2.compile(pattern, options=_re2_options())
    except re2.error as error:
        raise PatternError(str(error)) from None


class Prefilter:
    """A compiled set of named patterns scanned together over byte chunks."""

    def __init__(self, patterns: Mapping[str, str], *, engine: str | None = None) -> None:
        if not patterns:
            raise ValueError("a prefilter needs at least one pattern")
        self._names = list(patterns)
        self._patterns = [patterns[name] for name in self._names]
        for pattern in self._patterns:
            check_pattern(pattern)
        self.engine = engine or ("hyperscan" if hyperscan is not None else "re2")
        if self.engine == "hyperscan":
            self._db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
            try:
                self._db.compile(
                    expressions=[p.encode() for p in self._patterns],
                    ids=list(range(len(self._patterns))),
                    elements=len(self._patterns),
                )
            except hyperscan.error as error:
                raise PatternError(str(error)) from None
        elif self.engine == "re2":
            alternation = "|".join(f"(?:{p})" for p in self._patterns)
            self._any = re2.compile(alternation.encode(), options=_re2_options())
            self._each = [re2.compile(p.encode(), options=_re2_options()) for p in self._patterns]
        else:
            raise ValueError(f"unknown prefilter engine {self.engine!r}")

    def names(self, mask: int) -> Iterable[str]:
        """The names of the patterns set in a match ``mask``."""
        index = 0
        while mask:
            if mask & 1:
                yield self._names[index]
            mask >>= 1
            index += 1

    def bit(self, name: str) -> int:
        """The mask bit of the pattern called ``name``."""
        return 1 << self._names.index(name)

    def scan(self, buf: bytes) -> list[tuple[int, int, int]]:
        """Return ``(start, end, mask)`` for each line of ``buf`` that any pattern matches.

        ``buf`` holds whole lines; ``end`` excludes the newline; ``mask`` has bit *i* set for
        each pattern *i* found in the line. Lines come in order.
        """
        if self.engine == "hyperscan":
            return self._scan_hyperscan(buf)
        return self._scan_re2(buf)

    def _scan_hyperscan(self, buf: bytes) -> list[tuple[int, int, int]]:
        hits: list[tuple[int, int]] = []
        self._db.scan(buf, match_event_handler=lambda i, _f, to, _fl, _c: hits.append((to, i)))
        if not hits:
            return []
        hits.sort()
        lines: list[tuple[int, int, int]] = []
        start = end = -1
        mask = 0
        for to, index in hits:
            if to > end:
                if mask:
                    lines.append((start, end, mask))
                # The line is the one holding the match's last byte (a trailing \s may be the \n).
                start = buf.rfind(b"\n", 0, to - 1) + 1
                end = buf.find(b"\n", to - 1)
                if end < 0:
                    end = len(buf)
                mask = 0
            mask |= 1 << index
        lines.append((start, end, mask))
        return lines

    def _scan_re2(self, buf: bytes) -> list[tuple[int, int, int]]:
        lines: list[tuple[int, int, int]] = []
        pos = 0
        size = len(buf)
        while pos <= size:
            match = self._any.search(buf, pos)
            if match is None:
                break
            start = buf.rfind(b"\n", 0, match.start()) + 1
            end = buf.find(b"\n", match.start())
            if end < 0:
                end = size
            line = buf[start:end]
            mask = 0
            for index, pattern in enumerate(self._each):
                if pattern.search(line):
                    mask |= 1 << index
            lines.append((start, end, mask))
            pos = end + 1
        return lines
