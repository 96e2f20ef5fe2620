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

import copy
import threading
from collections.abc import Iterable, Mapping
from typing import Any

try:  # pragma: no cover - which branch runs depends on the platform's wheels
    import hyperscan
except ImportError:  # pragma: no cover
    hyperscan = None

import re2

from .. import __version__, diskcache


class PatternError(ValueError):
    """A pattern the prefilter engines cannot compile."""


def _re2_options() -> re2.Options:
    options = re2.Options()
    options.max_mem = 64 << 20
    # RE2 would also log each bad pattern from C++ straight to stderr (absl's "E0000 re2.cc"
    # lines); the error is raised to the caller instead, which reports it once.
    options.log_errors = False
    return options


def check_pattern(pattern: str) -> None:
    """Raise :class:`PatternError` if ``pattern`` is not a linear-time (RE2) pattern."""
    try:
        re2.compile(pattern, options=_re2_options())
    except re2.error as error:
        raise PatternError(_message(error)) from None


def _message(error: re2.error) -> str:
    """RE2's message as text (the binding passes it as bytes)."""
    detail = error.args[0] if error.args else error
    return detail.decode(errors="replace") if isinstance(detail, bytes) else str(detail)


def _hyperscan_patterns(patterns: list[str], anchors: list[bool]) -> list[bytes]:
    """The expressions of the Hyperscan database.

    "The line contains p": extending a pattern to the end of its line makes Hyperscan report
    each (pattern, line) once, at the line's end, however often p occurs in it (a tqdm line
    redrawn with \r holds dozens of "loss="). That is worth it for the few frequent patterns
    (``anchors``); it would make compiling thousands of rare rule patterns slow, so those stay
    as written and their reports are folded into lines after the scan.
    """
    return [
        (f"(?:{p})[^\n]*$" if anchor else without_line_edges(p)).encode()
        for p, anchor in zip(patterns, anchors, strict=True)
    ]


#: What may stand between a pattern's ``$`` and the raw line's end (see without_line_edges).
_PASTED_LINE_END = r"[`*\s]*$"


def without_line_edges(pattern: str) -> str:
    """``pattern`` loosened to the raw line: its ``^`` anchors dropped, and its ``$`` anchors
    allowed after what a paste leaves at a line's end (markdown's closing backtick or emphasis),
    which :func:`.lines.peel` takes off before the rule's own regex reads the line. It finds
    every line the original finds, and maybe more, which that regex then checks.

    Hyperscan 5.4 (python-hyperscan 0.9.1) loses matches when several multi-line patterns of one
    database start with ``^``: ``^\\s*full_key: \\w+`` and ``^\\s*(?:mapping values|found
    unexpected end of stream)`` compiled together find nothing in " full_key: lr", though each
    finds it alone. Rule patterns are written with ``^`` freely, so none reaches Hyperscan.
    """
    out = []
    escaped = in_class = False
    for position, char in enumerate(pattern):
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif in_class:
            # "]" right after "[" or "[^" is a literal, not the end of the class.
            opened = pattern[position - 1] == "[" or pattern[position - 2 : position] == "[^"
            in_class = char != "]" or opened
        elif char == "[":
            in_class = True
        elif char == "^":
            continue
        elif char == "$":
            out.append(_PASTED_LINE_END)
            continue
        out.append(char)
    return "".join(out)


def _database_key(anchored: list[bytes], ids: list[int] | None) -> str:
    # crashcart's version too: a database is stored only after every pattern passed
    # check_pattern, and a cache hit skips that check, so the check must be this version's.
    numbers = [] if ids is None else ["ids", ",".join(map(str, ids))]
    return diskcache.digest(__version__, hyperscan.__version__, *numbers, *anchored)


def _cache_kind(ids: list[int] | None) -> str:
    # The few full databases apart from the subsets (see Prefilter.without), so that subsets
    # never push a full database out of the cache.
    return "prefilter" if ids is None else "prefilter-subset"


def _cached_database(anchored: list[bytes], ids: list[int] | None = None) -> Any:
    """The database compiled earlier from exactly ``anchored`` (with these ``ids``), or None."""
    payload = diskcache.read(_cache_kind(ids), _database_key(anchored, ids))
    if payload is None:
        return None
    try:
        database = hyperscan.loadb(payload, hyperscan.HS_MODE_BLOCK)
        database.scratch = hyperscan.Scratch(database)  # a loaded database comes without one
    except (hyperscan.error, ValueError, TypeError):
        return None  # from another platform or Hyperscan: compile
    return database


def _compile_database(anchored: list[bytes], ids: list[int] | None = None) -> Any:
    """Compile the Hyperscan database of ``anchored`` (pattern *k* reported as ``ids[k]``, by
    default *k*) and store it in the cache (compiling takes up to a second; loading it,
    milliseconds)."""
    database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    try:
        database.compile(
            expressions=anchored,
            ids=list(range(len(anchored))) if ids is None else ids,
            elements=len(anchored),
            flags=[hyperscan.HS_FLAG_MULTILINE] * len(anchored),
        )
    except hyperscan.error as error:
        raise PatternError(str(error)) from None
    # A read-only or full cache: compile every time, still correct.
    diskcache.write(_cache_kind(ids), _database_key(anchored, ids), hyperscan.dumpb(database))
    return database


class Prefilter:
    """A compiled set of named patterns scanned together over byte chunks."""

    def __init__(
        self,
        patterns: Mapping[str, str],
        *,
        engine: str | None = None,
        rare: Iterable[str] = (),
    ) -> None:
        """``rare`` names patterns expected to match seldom (rule patterns): they are compiled as
        written, the others are line-anchored (see :func:`_hyperscan_patterns`)."""
        if not patterns:
            raise ValueError("a prefilter needs at least one pattern")
        self._names = list(patterns)
        self._plain = set(rare)
        self._patterns = [patterns[name] for name in self._names]
        self.engine = engine or ("hyperscan" if hyperscan is not None else "re2")
        if self.engine not in ("hyperscan", "re2"):
            raise ValueError(f"unknown prefilter engine {self.engine!r}")
        #: Subsets of this prefilter already built, by the mask of the patterns left out.
        self._subsets: dict[int, Prefilter] = {}
        self._lock = threading.Lock()
        self._compile(list(range(len(self._names))), checked=False)

    def _compile(self, keep: list[int], *, checked: bool) -> None:
        """Compile the patterns numbered ``keep`` (none: a prefilter that finds nothing), each
        reported under its own number; ``checked`` says RE2 has accepted them already."""
        self._kept = keep
        if not keep:
            return
        patterns = [self._patterns[i] for i in keep]
        whole = len(keep) == len(self._patterns)
        if self.engine == "hyperscan":
            anchors = [
                self._names[i] not in self._plain and "$" not in self._patterns[i] for i in keep
            ]
            # A database in the cache was stored after its patterns passed the check below: a
            # start-up that finds it skips compiling every pattern again just to check it.
            anchored = _hyperscan_patterns(patterns, anchors)
            ids = None if whole else keep
            self._db = _cached_database(anchored, ids)
            if self._db is None:
                if not checked:
                    self._check()
                self._db = _compile_database(anchored, ids)
            self._local = threading.local()
        else:
            if not checked:
                self._check()
            # Multi-line, as Hyperscan's: a rule's "^" is the start of any line of the chunk.
            alternation = "(?m)" + "|".join(f"(?:{p})" for p in patterns)
            self._any = re2.compile(alternation.encode(), options=_re2_options())
            self._each = [
                (i, re2.compile(self._patterns[i].encode(), options=_re2_options())) for i in keep
            ]

    def without(self, mask: int) -> Prefilter:
        """This prefilter without the patterns whose bits are set in ``mask``; the others keep
        their bits and names, so its scans read exactly as this one's with ``mask`` cleared.

        For patterns whose every consumer has had its fill (see the extractor): each of their
        reports would be a call into Python only to be dropped. Subsets are built once per
        prefilter (compiled and cached on disk like the whole database) and shared.
        """
        mask &= (1 << len(self._names)) - 1
        if not mask:
            return self
        with self._lock:  # a prefilter serves every run of the process, the TUI's thread too
            subset = self._subsets.get(mask)
            if subset is None:
                subset = copy.copy(self)
                subset._subsets = {}
                subset._lock = threading.Lock()
                keep = [i for i in range(len(self._names)) if not mask >> i & 1]
                subset._compile(keep, checked=True)
                self._subsets[mask] = subset
        return subset

    def _check(self) -> None:
        """Raise :class:`PatternError` for the first pattern RE2 refuses (see
        :func:`check_pattern`)."""
        for pattern in self._patterns:
            check_pattern(pattern)

    def names(self, mask: int) -> Iterable[str]:
        """The names of the patterns set in a match ``mask``."""
        while mask:  # the set bits only, lowest first: a mask may have thousands of bits
            low = mask & -mask
            yield self._names[low.bit_length() - 1]
            mask ^= low

    @property
    def pattern_names(self) -> list[str]:
        """The names of the patterns, in bit order."""
        return list(self._names)

    @property
    def scanned(self) -> list[str]:
        """The names of the patterns this prefilter scans for (all, unless it is a subset)."""
        return [self._names[i] for i in self._kept]

    @property
    def size(self) -> int:
        """How many patterns (mask bits) the prefilter has."""
        return len(self._names)

    def bit(self, name: str) -> int:
        """The mask bit of the pattern called ``name``."""
        return 1 << self._names.index(name)

    def scan(self, buf: bytes) -> list[tuple[int, int, int]]:
        """Return ``(start, end, mask)`` for each line of ``buf`` that any pattern matches.

        ``buf`` holds whole lines; ``end`` excludes the newline; ``mask`` has bit *i* set for
        each pattern *i* found in the line. Lines come in order.
        """
        if not self._kept:
            return []
        if self.engine == "hyperscan":
            return self._scan_hyperscan(buf)
        return self._scan_re2(buf)

    def _scratch(self) -> Any:
        """This thread's Hyperscan scratch space (one scratch must not serve two threads)."""
        scratch = getattr(self._local, "scratch", None)
        if scratch is None:
            scratch = self._local.scratch = hyperscan.Scratch(self._db)
        return scratch

    def _scan_hyperscan(self, buf: bytes) -> list[tuple[int, int, int]]:
        hits: list[tuple[int, int]] = []
        append = hits.append
        self._db.scan(
            buf,
            match_event_handler=lambda i, _f, to, _fl, _c: append((to, i)),
            scratch=self._scratch(),
        )
        if not hits:
            return []
        # Every report ends at its line's end, in order; reports of one line share that end.
        masks: dict[int, int] = {}
        find = buf.find
        # After a final newline there is no line: a "\s*$" that ran over the newline ends there.
        past_the_end = len(buf) if buf.endswith(b"\n") else -1
        for to, index in hits:
            if buf[to : to + 1] not in (b"\n", b""):  # a pattern that ends before its line does
                to = find(b"\n", to)
                to = len(buf) if to < 0 else to
            elif to == past_the_end:
                continue
            masks[to] = masks.get(to, 0) | (1 << index)
        rfind = buf.rfind
        return [(rfind(b"\n", 0, end) + 1, end, mask) for end, mask in sorted(masks.items())]

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
            for index, pattern in self._each:
                if pattern.search(line):
                    mask |= 1 << index
            lines.append((start, end, mask))
            pos = end + 1
        return lines
