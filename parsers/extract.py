"""From raw chunks to parser findings: the incremental front half of the pipeline.

:class:`Extractor` is fed byte chunks per source, in any sizes, and returns what the parsers
found as soon as each finding is complete. It keeps per-source state across chunks (the partial
last line, line numbers, open traceback blocks per rank) and per-run state (metric series,
echoed configuration), so the same object serves ``analyze`` (fed a whole file, then
:meth:`finish`) and ``watch`` (fed whatever arrived).

Only prefilter candidates are decoded, except while a block (a traceback, a torchrun failure
summary) is open on a source: then every line is read until it closes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from types import ModuleType
from typing import Any

import re2

from . import (
    attempts,
    cuda_oom,
    detectors,
    elastic,
    error_lines,
    failure,
    metrics,
    nccl,
    oserror,
    torch_errors,
    traceback,
    waits,
)
from .base import CONTAINED, Draft, ParserErrors
from .config import TRIGGERS as CONFIG_TRIGGERS
from .config import parse_config
from .lazy import lazy_compile
from .lines import MAX_LINE_BYTES, TRUNCATION_MARKER, LogLine, make_line, to_seconds
from .prefilter import Prefilter

#: Modules whose ``parse(text)`` reads exception messages and stand-alone lines.
MESSAGE_PARSERS: tuple[ModuleType, ...] = (
    cuda_oom,
    nccl,
    torch_errors,
    oserror,
    elastic,
    failure,
    error_lines,
)
#: A source's first METRIC_FULL metric lines are all read; after that METRIC_SAMPLE per MiB
#: are: the first metric line of each stretch of METRIC_STRETCH bytes, counted from the start
#: of the source (see Extractor._candidates), so what is read never depends on how the input
#: was cut into chunks. steps_logged then counts the lines read.
METRIC_FULL = 2048
METRIC_SAMPLE = 24
METRIC_STRETCH = (1 << 20) // METRIC_SAMPLE
#: Lines that only repeat a rule pattern or a config echo are read this many times, then counted.
REPEAT_LIMIT = 50
#: Lines matching one message parser are read this many times per run (facts are capped anyway).
MESSAGE_LIMIT = 2000
#: Reports of patterns whose consumers have had their fill (REPEAT_LIMIT, MESSAGE_LIMIT) that
#: are dropped before the prefilters are rebuilt without those patterns (a compile, when not
#: cached on disk, costs about as much as 100,000 reports; cached, a few milliseconds).
REPORTS_BEFORE_RECOMPILE = 10_000
#: A traceback that receives no line of its rank for this many lines is closed.
BLOCK_IDLE_LINES = 200
_EVIDENCE_FRAMES = 1
_MAX_MESSAGE_EVIDENCE = 4
_ELASTIC_WAIT_LINES = 4
_ELASTIC_MAX_LINES = 400
#: Lines that may continue the message of an exception line found without a traceback (a
#: message wrapped by the terminal); a traceback's message may run longer (see traceback).
_BARE_MESSAGE_LINES = 3
#: A ``what():`` line belongs to the ``terminate called ...`` line this many lines above it.
_CXX_WHAT_LINES = 3
#: Frames whose function names an exception fact lists in ``calls`` (innermost last).
_CALL_FRAMES = 8
#: The innermost line of a traceback cut before its error line, when it names what it raises:
#: ``raise CheckpointMismatchError(`` (a paste ends where the exception's message begins).
_RAISED = lazy_compile(rf"raise (?P<qualname>{failure.QUALNAME})\s*\(")
#: Characters of an exception's whole message (its lines joined) kept in its ``detail``.
_DETAIL_CHARS = 1000
_PHASES = [
    ("generate", lazy_compile(r"(?i)generate|greedy_search|beam_search|_sample\b|sample_")),
    (
        "eval",
        lazy_compile(
            r"(?i)evaluat|prediction_step|validation_step|test_step|predict|\beval|^test\b|^valid"
        ),
    ),
    ("save", lazy_compile(r"(?i)save|_checkpoint\b|serializ")),
    ("load", lazy_compile(r"(?i)\bload|from_pretrained|_load")),
    ("data", lazy_compile(r"(?i)__getitem__|_worker_loop|collate|fetch\b|__next__")),
]


@dataclass
class Finding:
    """What a parser found, with the lines that prove it."""

    draft: Draft
    evidence: list[LogLine]
    rank: int | None
    attempt: int = 1
    #: Metric lines of its source read when it was found (did training go on after it?).
    progress: int | None = None


#: How far above a traceback a logger's error may stand to be its message (ai-toolkit prints
#: ``Error running job: ...``, then a summary of its jobs, then the traceback).
_LEAD_LINES = 40


@dataclass
class _Block:
    collector: traceback.TracebackCollector = field(default_factory=traceback.TracebackCollector)
    #: The block's lines as logged, kept like the collector's: first and last lines only.
    lines: traceback.HeadTail[LogLine] = field(default_factory=traceback.HeadTail)
    prefix: str = ""  # the shape of a per-line prefix in front of the traceback, if any
    prefix_seen: bool = False  # a line after the header showed whether the prefix repeats
    lead: str = ""  # an error a logger printed before the header, on the header's line
    lead_line: LogLine | None = None  # ... or on a line above it
    original: bool = False  # torch's "Original Traceback": a worker's, below the error it raised
    logging_error: bool = False  # printed by a logging handler that could not write a record
    idle: int = 0  # lines of other ranks seen since this block's last line
    bare: bool = False  # opened by an exception line with no traceback above it
    ignored: bool = False  # Python printed it under "Exception ignored in": not fatal
    rich: bool = False  # a rich-boxed traceback (frames drawn in a box)
    ipython: str = ""  # an IPython traceback: the exception its header names


_TRACEBACK_HEADER = "Traceback (most recent call last):"
#: What a logger puts between its message and a traceback printed on the same line.
_TRACEBACK_LEAD_IN = lazy_compile(r"(?i)[\s,;:.-]*traceback:?\s*$")
#: Lines that a traceback's frames state consumes and that no prefix, ANSI or \r rewrite
#: changes: frame lines and code lines (see Extractor._skip_frames).
_FRAME_RUN = lazy_compile(rb'(?:(?:  File "|    (?!E   )[A-Za-z_])[^\r\x1b\n]{0,4000}\n)+')
_DIGIT = lazy_compile(r"\d")


_SUBPROCESS_ENDING = lazy_compile(r"(?:returned|died with) [^'\"]*$")


def _said(exception_type: str, message: str) -> str:
    """The words of an exception's message, on one line. A failed subprocess's message quotes
    the command it ran; its flags (``--config_file``, ``--data_dir``) are not what went wrong,
    so only how it ended is kept ("returned non-zero exit status 1", "died with
    <Signals.SIGKILL: 9>")."""
    text = " ".join(message.split())
    if exception_type == "CalledProcessError":
        ending = _SUBPROCESS_ENDING.search(text)
        return f"Command {ending[0]}" if ending else "Command"
    return text


def _shape(text: str) -> str:
    """A prefix with its digits blanked, so that per-line timestamps still compare equal."""
    return _DIGIT.sub("0", text)


@dataclass
class SourceStats:
    """Bytes and lines read from one source."""

    bytes: int = 0
    lines: int = 0
    truncated_lines: int = 0


@dataclass
class _SourceState:
    name: str
    default_rank: int | None
    pending: bytes = b""
    lineno: int = 0
    overlong_head: bytes | None = None
    overlong_dropped: int = 0
    blocks: dict[int | None, _Block] = field(default_factory=dict)
    elastic_wait: int = 0
    elastic_lines: list[LogLine] | None = None
    #: ``terminate called after throwing an instance of 'T'``: the line, T, and lines left to
    #: wait for its ``what():``.
    cxx_throw: tuple[LogLine, str] | None = None
    cxx_wait: int = 0
    #: The last line that shows the run waiting, its kind, and the metric lines read by then.
    last_wait: tuple[LogLine, str, int] | None = None
    #: The file's last bytes read (whole lines), for a progress bar that stopped at 0.
    tail: bytes = b""
    #: Where the next whole lines scanned start in the source (bytes from its start).
    offset: int = 0
    #: Where the overlong line being skipped started.
    overlong_start: int = 0
    #: Metric lines found so far (all read up to METRIC_FULL), and the last stretch sampled.
    metric_lines: int = 0
    sampled_stretch: int = -1
    #: A traceback opened up to this line follows "Exception ignored in: ..." (a ``__del__``
    #: or a callback whose exception Python printed and ignored).
    ignored_until: int = -1
    #: The last error a logger reported (its line and message): the message of a traceback
    #: printed below it and cut before its own last line.
    last_logged: tuple[LogLine, str] | None = None
    #: The line of the last ``--- Logging error ---``: the traceback right after it was caught.
    logging_error_at: int = -10
    stats: SourceStats = field(default_factory=SourceStats)

    def busy(self) -> bool:
        return (
            self.elastic_wait > 0
            or self.cxx_wait > 0
            or self.elastic_lines is not None
            or any(block.collector.active for block in self.blocks.values())
        )


def _frame_phase(frame: traceback.Frame) -> str | None:
    for phase, pattern in _PHASES:
        # The call on the frame's code line counts too: `evaluator.evaluate(...)` in `main`.
        if pattern.search(frame.func) or pattern.search(frame.code.split("(", 1)[0]):
            return phase
    return None


def _quote(fields: dict[str, Any]) -> str:
    """The error as a summary quotes it: ``Type: message``; for an exception printed without a
    message (a bare ``AssertionError``), or one whose message a paste cut, the line of code it
    stopped at: ``AssertionError at assert os.path.exists(path)``."""
    name, message, code = fields["qualname"], fields["message"], fields.get("code", "")
    if message:
        return f"{name}: {message}" if name else message
    if code:
        return f"{name} at {code}" if name else f"a traceback cut at {code}"
    return name or "a traceback cut before its error line"


def _chain_phases(members: list[traceback.ExceptionInfo]) -> list[str]:
    """What the program was doing at each exception of a chain, judged from the innermost
    frame that says so among its own frames and those of the exceptions before it; a failure
    anywhere inside a dataset's __getitem__ (or a worker's loop) is data loading, whatever the
    library frames below it are called (json's loads, PIL's open). One pass over the chain's
    frames (a chain can be long)."""
    data, latest, phases = _PHASES[-1][1], None, []
    in_data = False
    for exc in members:
        for frame in exc.frames:
            in_data = in_data or bool(data.search(frame.func))
            latest = _frame_phase(frame) or latest
        phases.append("data" if in_data else latest or "train")
    return phases


class Extractor:
    """Incremental extraction for one run (one or several sources, e.g. one per rank)."""

    def __init__(self, line_patterns: dict[str, str] | RulePatterns | None = None) -> None:
        # A rule base compiles its patterns once (RulePatterns) for all its runs: compiling
        # them per run cost more than the run itself with 10x the shipped rules.
        compiled = (
            line_patterns
            if isinstance(line_patterns, RulePatterns)
            else compile_rule_patterns(line_patterns or {})
        )
        self.line_patterns = compiled.line_patterns
        self.prefilter = build_prefilter()
        self.rule_prefilter = compiled.prefilter
        self._rule_regexes = compiled.regexes
        self._bits = compiled.bits
        self._sources: dict[str, _SourceState] = {}
        self.series = detectors.SeriesTracker()
        self.config: dict[str, Any] = {}
        self.attempt = 1
        self._attempt_has_content = False
        self._closed_findings = 0  # findings of this line read before it began a new attempt
        self._seen: Counter[str] = Counter()
        self._exhausted: set[int] = set()
        #: The bits of patterns whose every consumer has had its fill, and how many reports
        #: carried one since the prefilters last left them out (see _leave_out_filled).
        self._filled = 0
        self._wasted = 0
        #: What is scanned: the prefilters less the patterns of ``_filled``, once worth it.
        self._scan_main = self.prefilter
        self._scan_rules = self.rule_prefilter
        #: What parsers raised on lines of this run: contained, counted, reported.
        self.errors = ParserErrors()

    def scanning(self) -> list[str]:
        """The names of the patterns the prefilters still scan for (those whose consumers have
        all had their fill are left out, see :meth:`_leave_out_filled`)."""
        rules = self._scan_rules.scanned if self._scan_rules is not None else []
        return self._scan_main.scanned + rules

    # -- feeding -------------------------------------------------------------------------

    def reading_blocks(self) -> bool:
        """Whether a multi-line block (a traceback, torchrun's summary, a C++ abort) is still
        open on some source: its findings are not out yet."""
        return any(state.busy() for state in self._sources.values())

    def stats(self) -> dict[str, SourceStats]:
        """Bytes and lines read so far, per source."""
        return {name: state.stats for name, state in self._sources.items()}

    def feed(self, source: str, data: bytes, default_rank: int | None = None) -> list[Finding]:
        """Take the next bytes of ``source``; return findings completed by them."""
        state = self._sources.get(source)
        if state is None:
            state = self._sources[source] = _SourceState(source, default_rank)
        state.stats.bytes += len(data)
        out: list[Finding] = []
        if state.overlong_head is not None:
            newline = data.find(b"\n")
            if newline < 0:
                state.overlong_dropped += len(data)
                return out
            state.overlong_dropped += newline
            self._finish_overlong(state, out)
            data = data[newline + 1 :]
            state.offset = state.stats.bytes - len(data)
        buf = state.pending + data if state.pending else data
        cut = buf.rfind(b"\n") + 1
        rest = buf[cut:]
        state.pending = b""
        if cut:
            self._scan_whole_lines(state, buf, cut, out)
        # After the whole lines: one of them too long would have used the overlong state.
        if len(rest) > MAX_LINE_BYTES:
            state.overlong_start = state.offset
            state.overlong_head = rest[:MAX_LINE_BYTES]
            state.overlong_dropped = len(rest) - MAX_LINE_BYTES
        else:
            state.pending = rest
        return out

    def _scan_whole_lines(
        self, state: _SourceState, buf: bytes, cut: int, out: list[Finding]
    ) -> None:
        """Scan ``buf[:cut]``, whole lines; a line over MAX_LINE_BYTES in it is read exactly as
        one that arrived over several chunks (its head only, see _finish_overlong), so that
        what is found never depends on where the chunks were cut."""
        start = pos = 0
        while pos + MAX_LINE_BYTES < cut:
            # The last newline within MAX_LINE_BYTES + 1 bytes of a line's start: none means
            # the line is too long. Steps of up to 64 KiB: a few calls per MiB.
            newline = buf.rfind(b"\n", pos, pos + MAX_LINE_BYTES + 1)
            if newline >= 0:
                pos = newline + 1
                continue
            end = buf.find(b"\n", pos)  # < cut: buf[:cut] ends with a newline
            if pos > start:
                self._scan(state, buf[start:pos], out)
            state.overlong_start = state.offset
            state.overlong_head = buf[pos : pos + MAX_LINE_BYTES]
            state.overlong_dropped = end - pos - MAX_LINE_BYTES
            self._finish_overlong(state, out)
            start = pos = end + 1
        if start == 0:
            self._scan(state, buf, out, limit=cut)
        elif start < cut:
            self._scan(state, buf[start:cut], out)

    def finish(self, source: str | None = None) -> list[Finding]:
        """End of input for one source (or all): flush partial lines and open blocks."""
        out: list[Finding] = []
        names = [source] if source is not None else list(self._sources)
        for name in names:
            state = self._sources.get(name)
            if state is None:
                continue
            if state.overlong_head is not None:
                self._finish_overlong(state, out)
            if state.pending:
                pending, state.pending = state.pending, b""
                self._scan(state, pending + b"\n", out, limit=len(pending) + 1)
            self.flush_blocks(name, out)
            self._stalled(state, out)
            self._ends_on_logged_error(state, out)
        return out

    def conclude(self) -> list[Finding]:
        """Trends over the run's metric series so far (at end of input, or live, periodically)."""
        try:
            found = self.series.conclude()
        except Exception as error:  # a detector's bug must not end a live session
            self.errors.record("detectors", error)
            return []
        return [
            Finding(draft, lines, lines[-1].rank if lines else None, self.attempt)
            for draft, lines in found
        ]

    def flush_blocks(self, source: str, out: list[Finding] | None = None) -> list[Finding]:
        """Close the open blocks of a source (end of input, or the live evidence bound)."""
        out = [] if out is None else out
        state = self._sources.get(source)
        if state is None:  # nothing of it read yet
            return out
        first = len(out)
        for block in list(state.blocks.values()):
            if block.collector.active:
                lines = block.collector.finish()
                try:
                    self._traceback_done(state, block, lines, out)
                except Exception as error:
                    where = block.lines.head[0].location() if block.lines.head else state.name
                    self.errors.record("traceback", error, where)
        if state.elastic_lines is not None:
            self._elastic_done(state, out)
        state.elastic_wait = 0
        if state.cxx_throw is not None:
            self._cxx_without_what(state, out)
        for finding in out[first:]:
            finding.attempt = self.attempt
        return out

    def _finish_overlong(self, state: _SourceState, out: list[Finding]) -> None:
        head, total = (
            state.overlong_head or b"",
            state.overlong_dropped + len(state.overlong_head or b""),
        )
        state.overlong_head, state.overlong_dropped = None, 0
        state.stats.truncated_lines += 1
        # The head alone goes through the prefilter; the marker says how much was cut. It is
        # sampled for metrics where the whole line started.
        state.offset = state.overlong_start
        self._scan(state, head + b"\n", out, marker=TRUNCATION_MARKER.format(n=total))
        state.offset = state.overlong_start + total + 1

    # -- scanning ------------------------------------------------------------------------

    def _scan(
        self,
        state: _SourceState,
        buf: bytes,
        out: list[Finding],
        marker: str | None = None,
        limit: int | None = None,
    ) -> None:
        """Read the whole lines of ``buf[:limit]`` (the rest is a partial line kept for later;
        slicing it off would copy the chunk)."""
        size = len(buf) if limit is None else limit
        hits = [hit for hit in self._candidates(state, buf, size) if hit[1] < size]
        pos, index = 0, 0
        no_skip_before = 0
        while pos < size:
            if state.busy():  # inside a block: every line, candidate or not
                if pos >= no_skip_before:
                    skipped = self._skip_frames(state, buf, pos, size, hits, index)
                    if isinstance(skipped, int):
                        no_skip_before = skipped  # a run too short to skip: no retry inside
                    elif skipped is not None:
                        pos, index = skipped
                        continue
                end = buf.find(b"\n", pos)
                end = size if end < 0 else end
                mask = 0
                if index < len(hits) and hits[index][0] == pos:
                    mask = hits[index][2]
                    index += 1
                state.lineno += 1
                self._line(state, buf[pos:end], mask, out, marker)
                pos = end + 1
                continue
            if index >= len(hits):
                state.lineno += buf.count(b"\n", pos, size)
                break
            start, end, mask = hits[index]
            index += 1
            state.lineno += buf.count(b"\n", pos, start) + 1
            if mask:
                self._line(state, buf[start:end], mask, out, marker)
            pos = end + 1
        state.stats.lines = state.lineno
        state.offset += size
        state.tail = (state.tail + buf[max(0, size - waits.TAIL_BYTES) : size])[-waits.TAIL_BYTES :]

    def _skip_frames(
        self,
        state: _SourceState,
        buf: bytes,
        pos: int,
        size: int,
        hits: list[tuple[int, int, int]],
        index: int,
    ) -> tuple[int, int] | int | None:
        """Pass over the middle of a huge traceback in one step.

        A traceback past its first lines keeps only its last ones (see
        :class:`~.traceback.HeadTail`), so of a run of plain frame lines (a RecursionError
        prints thousands) only the last ``TAIL_LINES`` need to be read one by one; the lines
        before them would only be counted and dropped. Counting them in bulk gives exactly the
        state that reading them would (the run stops at any line another consumer wants), in
        one regex pass instead of a few microseconds of Python per line. Returns the position
        and hit index to go on from, the end of a run too short to skip, or None.
        """
        block = state.blocks.get(state.default_rank)
        if (
            block is None
            or state.elastic_wait
            or state.cxx_wait
            or state.elastic_lines is not None
            or block.collector.state != "frames"
            or block.prefix
            or block.rich
            or block.bare
            or not block.collector.lines.head_full()
            or not block.lines.head_full()
            or any(b is not block and b.collector.active for b in state.blocks.values())
        ):
            return None
        run = _FRAME_RUN.match(buf, pos, size)
        if run is None:
            return None
        end = run.end()
        others = ~self._bits.traceback
        last = index
        while last < len(hits) and hits[last][0] < end:
            if hits[last][2] & others:  # a line another consumer wants: read it as usual
                end = hits[last][0]
                break
            last += 1
        # The start of the run's last TAIL_LINES lines: everything before it is skipped.
        cut = end - 1
        for _ in range(traceback.TAIL_LINES):
            cut = buf.rfind(b"\n", pos, cut)
            if cut < 0:
                return end
        cut += 1
        lines = buf.count(b"\n", pos, cut)
        frames = buf.count(b'\n  File "', pos, cut - 1) + buf.startswith(b'  File "', pos)
        block.collector.skip(lines, frames)
        block.lines.skip(lines)
        state.lineno += lines
        while index < len(hits) and hits[index][0] < cut:
            index += 1
        return cut, index

    def _candidates(self, state: _SourceState, buf: bytes, size: int) -> list[tuple[int, int, int]]:
        """The lines of ``buf[:size]`` worth reading, in order, with the consumers that want
        them.

        The main prefilter finds the rare lines (errors, rule patterns, config, non-finite
        metrics). Ordinary metric lines can be half of a log: a source's first METRIC_FULL of
        them are all found; after that the first of each METRIC_STRETCH bytes of the source is
        (see :func:`_sample_metric_lines`), which is plenty for trends over a bounded series.
        Lines that only repeat what a consumer has seen enough of are dropped (see
        :meth:`_useful`).
        """
        lines = {}
        for start, end, mask in self._scan_main.scan(buf):
            if end >= size:  # the partial last line: counted (see _useful) when it is whole
                break
            useful = self._useful(mask)
            if useful:
                lines[end] = (start, useful)
        metric_lines: list[tuple[int, int, int]] = []
        sample_from = 0
        if state.metric_lines < METRIC_FULL:
            found = [hit for hit in _metric_prefilter().scan(buf) if hit[1] < size]
            metric_lines = found[: METRIC_FULL - state.metric_lines]
            state.metric_lines += len(metric_lines)
            sample_from = metric_lines[-1][1] + 1 if len(found) > len(metric_lines) else size
        if sample_from < size:
            metric_lines += _sample_metric_lines(state, buf, sample_from, size)
        bit = self._bits.sampled_metrics
        for start, end, _ in metric_lines:
            known = lines.get(end)
            lines[end] = (start, (known[1] if known else 0) | bit)
        if self._scan_rules is not None:
            shift = self._bits.rule_shift
            for start, end, mask in self._scan_rules.scan(buf):
                if end >= size:
                    break
                useful = self._useful(mask << shift)
                if useful:
                    known = lines.get(end)
                    lines[end] = (start, (known[1] if known else 0) | useful)
        if self._wasted > REPORTS_BEFORE_RECOMPILE:
            self._leave_out_filled()
        return [(start, end, mask) for end, (start, mask) in sorted(lines.items())]

    def _useful(self, mask: int) -> int:
        """``mask`` without the consumers that have seen enough lines like this one."""
        if mask & self._filled:
            self._wasted += 1
        if mask in self._exhausted:  # every consumer of this kind of line has had its fill
            return 0
        bits = self._bits
        useful = mask
        if mask & bits.rules:
            for bit, pid in bits.rule_bits(mask):
                self._seen[pid] += 1
                if self._seen[pid] > REPEAT_LIMIT:
                    useful &= ~bit
        if mask & bits.config:
            self._seen["config"] += 1
            if self._seen["config"] > REPEAT_LIMIT:
                useful &= ~bits.config
        if mask & bits.messages:
            for module_bits, module in bits.module_bits(mask):
                self._seen[module.__name__] += 1
                if self._seen[module.__name__] > MESSAGE_LIMIT:
                    useful &= ~module_bits
        # Each of these bits belongs to one consumer only, which stays filled for the run.
        self._filled |= mask & ~useful
        if not useful:
            self._exhausted.add(mask)
        return useful

    def _leave_out_filled(self) -> None:
        """Scan on without the patterns whose every consumer has had its fill.

        Their reports are dropped by :meth:`_useful` anyway, but each cost a call into Python
        (a config echo or a warning printed every step: millions in a large log). Leaving them
        out of the databases changes no line's mask: those bits would have been cleared.
        """
        self._wasted = 0
        self._scan_main = self.prefilter.without(self._filled)
        if self.rule_prefilter is not None:
            self._scan_rules = self.rule_prefilter.without(self._filled >> self._bits.rule_shift)

    def _line(
        self, state: _SourceState, raw: bytes, mask: int, out: list[Finding], marker: str | None
    ) -> None:
        first = self._closed_findings = len(out)
        if mask & self._bits.attempts and self._attempt_has_content:
            self._restart(state, out)
        try:
            self._read_line(state, raw, mask, out, marker)
        except Exception as error:
            # One line must never end the run (nor a live session): count it, go on.
            self.errors.record("line", error, f"{state.name}:{state.lineno}")
        progress = self.series.points_by_source[state.name]
        for finding in out[first : self._closed_findings]:
            finding.attempt = self.attempt - 1  # read before the line that began a new one
        for finding in out[max(first, self._closed_findings) :]:
            finding.attempt = self.attempt
            finding.progress = progress
        if len(out) > first or mask & self._bits.metrics:
            self._attempt_has_content = True

    def _restart(self, state: _SourceState, out: list[Finding]) -> None:
        """The line begins a new attempt (a restart marker, an epoch counter back at its start):
        what the last attempt left open (an exception and its message) and the trends
        :meth:`conclude` finds in it keep that attempt's number."""
        self.flush_blocks(state.name, out)
        self._new_attempt(out)
        self._closed_findings = len(out)

    def _new_attempt(self, out: list[Finding]) -> None:
        """Close the current attempt (its trends) and start counting a new one."""
        out.extend(self.conclude())
        self.attempt += 1
        self.series = detectors.SeriesTracker()
        self._attempt_has_content = False

    def _read_line(
        self, state: _SourceState, raw: bytes, mask: int, out: list[Finding], marker: str | None
    ) -> None:
        line = make_line(state.name, state.lineno, raw, state.default_rank)
        if marker:
            line.text += marker
        if len(raw) > MAX_LINE_BYTES:
            state.stats.truncated_lines += 1
        bits = self._bits
        if mask & bits.rules:
            self._rule_lines(line, mask, out)
        if state.cxx_wait:
            state.cxx_wait -= 1
            if not state.cxx_wait and state.cxx_throw is not None:
                self._cxx_without_what(state, out)
        if mask & bits.exceptions and failure.IGNORED.search(line.text):
            # Even inside a block: logging's "Call stack:" follows the traceback it printed.
            state.ignored_until = state.lineno + 2
        elif mask & bits.exceptions and failure.LOGGING_ERROR.search(line.text):
            state.logging_error_at = state.lineno
        if self._in_block(state, line, out, starts_record=bool(mask & bits.records), mask=mask):
            return
        if not mask:
            return
        if mask & bits.traceback:
            block = state.blocks[line.rank] = _Block(
                ignored=state.lineno <= state.ignored_until,
                logging_error=state.lineno == state.logging_error_at + 1,
            )
            if traceback.VSCODE_HEADER.match(line.text):
                block.collector.start_vscode(line.text)
                block.lines = traceback.HeadTail([line])
                return
            ipython = traceback.IPYTHON_HEADER.match(line.text)
            if ipython:
                block.ipython = ipython["qualname"]
            if ipython or traceback.RICH_HEADER.search(line.text):
                block.rich = not ipython
                block.collector.start(_TRACEBACK_HEADER)
                block.lines = traceback.HeadTail([line])
                return
            start = line.text.find(_TRACEBACK_HEADER)
            if start < 0:  # a headless traceback: its first frame line opens the block
                start = line.text.find('File "')
                start = start - 2 if start >= 2 and line.text[start - 2 : start] == "  " else start
            block.prefix = _shape(line.text[:start]) if start > 0 else ""
            if start > 0:
                # ``logger.error(f"{e}, traceback: {format_exc()}")``: the message comes first,
                # and a paste that cuts the traceback before its last line keeps only that.
                logged = error_lines.parse(_TRACEBACK_LEAD_IN.sub("", line.text[:start]))
                block.lead = logged[0].fields["message"] if logged else ""
                block.original = line.text[:start].rstrip().endswith("Original")
            above = state.last_logged
            if not block.lead and above and line.lineno - above[0].lineno <= _LEAD_LINES:
                block.lead_line, block.lead = above
            block.collector.start(line.text[max(start, 0) :])
            block.lines = traceback.HeadTail([line])
            return
        if mask & bits.waits:
            kind = waits.signature(line.text)
            if kind is not None:
                state.last_wait = (line, kind, self.series.points_by_source[state.name])
            elif state.last_wait is not None and state.last_wait[1].startswith("evaluation"):
                state.last_wait = None  # the evaluation counted its last batch: it ended
        if mask & bits.exceptions and self._open_bare_exception(state, line):
            return
        seconds = to_seconds(line.time) if line.time else None
        if seconds is not None:
            self.series.last_time = seconds
        if mask & bits.metrics:
            for text in _redraws(raw, line.text):
                found = metrics.parse_metrics(text)
                if found and self.series.restarts(found):
                    self._restart(state, out)
                if found:
                    for draft in self.series.observe(found, line, seconds):
                        out.append(Finding(draft, [line], line.rank))
        if mask & bits.stopped and detectors.STOPPED.search(line.text):
            self.series.stopped = True
        if mask & bits.epoch_header:
            self.series.header(line.text)
        if mask & bits.loss_scale:
            for draft in self.series.loss_scale(line.text):
                out.append(Finding(draft, [line], line.rank))
        if mask & bits.printed_nan:
            for draft, evidence in self.series.printed_nan(line):
                out.append(Finding(draft, evidence, line.rank))
        if mask & bits.config:
            self._config(line, out)
        if mask & bits.messages:
            for module in bits.modules(mask):
                for draft in self._safe_parse(module, line.text, line):
                    draft.fields.setdefault("phase", "unknown")
                    draft.fields.setdefault("steps_logged", self.series.points)
                    # A line with no rank prefix may name one ("process rank 7 ... exited").
                    rank = line.rank if line.rank is not None else draft.fields.get("rank")
                    out.append(Finding(draft, [line], rank))
                    if draft.fields.get("signature") in error_lines.LOGGED_SIGNATURES:
                        state.last_logged = (line, draft.fields["message"])
            if "ChildFailedError" in line.text:
                state.elastic_wait = _ELASTIC_WAIT_LINES

    def _open_bare_exception(self, state: _SourceState, line: LogLine) -> bool:
        """Open a frameless block at an exception line that stands without a traceback (see
        :mod:`.failure`); True if the line was one."""
        if state.ignored_until == state.lineno + 2:
            return False  # _read_line found the line saying the stack after it is no error
        thrown = failure.cxx_exception(line.text)
        if thrown is not None:
            state.cxx_throw, state.cxx_wait = (line, thrown), _CXX_WHAT_LINES
            return True
        lines = [line]
        what = failure.cxx_what(line.text)
        if what is not None:
            if state.cxx_throw is not None:
                throw_line, thrown = state.cxx_throw
                lines.insert(0, throw_line)
            else:
                thrown = "std::exception"
            state.cxx_throw, state.cxx_wait = None, 0
            text: str | None = f"{thrown}: {what}"
        else:
            text = failure.bare_exception(line.text)
        if text is None:
            return False
        block = state.blocks[line.rank] = _Block(bare=True)
        block.collector.start_message(text, max_lines=_BARE_MESSAGE_LINES)
        block.lines = traceback.HeadTail(lines)
        return True

    def _in_block(
        self,
        state: _SourceState,
        line: LogLine,
        out: list[Finding],
        starts_record: bool = False,
        mask: int = 0,
    ) -> bool:
        """Route a line to an open block; True if the block consumed it.

        ``starts_record`` says the prefilter saw a metric, config or traceback line, which
        begins a new log record rather than continuing an exception message.
        """
        if state.elastic_lines is not None:
            state.elastic_lines.append(line)
            if line.text.startswith("====") or len(state.elastic_lines) > _ELASTIC_MAX_LINES:
                self._elastic_done(state, out)
            return True
        if state.elastic_wait:
            state.elastic_wait -= 1
            if line.text.startswith("===="):
                state.elastic_wait, state.elastic_lines = 0, [line]
                return True
        closed = []
        for rank, other in state.blocks.items():
            # Lines of other ranks interleave with a traceback; a block that hears nothing of
            # its own rank for long is over (its rank died mid-print, or the prefix changed).
            if rank != line.rank and other.collector.active:
                other.idle += 1
                if other.idle > BLOCK_IDLE_LINES:
                    self._traceback_done(state, other, other.collector.finish(), out)
            if not other.collector.active:
                closed.append(rank)
        for rank in closed:  # a log of many ranks must not make every line visit every rank
            del state.blocks[rank]
        block = state.blocks.get(line.rank)
        if block is None or not block.collector.active:
            return False
        block.idle = 0
        text = line.text
        if block.rich:
            text = traceback.unbox(text)
        elif block.ipython and block.collector.state == "frames":
            text = traceback.from_ipython(text)
        if block.bare:
            # Only a line no parser wants can continue a message found without its traceback.
            starts_record = starts_record or bool(mask)
        if block.prefix:
            # Loggers and job runners print their own prefix before every line of a traceback
            # ("2023-04-29 06:01:12.977 [177/train (pid 28936)] "); drop one of the same shape.
            head = len(block.prefix)
            if _shape(text[:head]) == block.prefix:
                block.prefix_seen = True
                text = text[head:]
                line = LogLine(line.path, line.lineno, text, line.rank, line.time)
            elif not block.prefix_seen and text.lstrip().startswith('File "'):
                # Only the header carried it: a logger's message ending in the traceback
                # it formatted (``logger.error(f"{e}, traceback: {format_exc()}")``).
                block.prefix = ""
            else:
                self._traceback_done(state, block, block.collector.finish(), out)
                return False
        new_record = starts_record or (line.time is not None and not block.prefix)
        finished, consumed = block.collector.feed(text, new_record=new_record)
        if consumed:
            block.lines.append(line)
        if finished is not None or not block.collector.active:
            self._traceback_done(state, block, finished, out)
        if not consumed and (state.elastic_wait or state.elastic_lines is not None):
            # The line that ended the traceback may open the torchrun summary that follows it.
            return self._in_block(state, line, out, starts_record, mask)
        return consumed

    def _stalled(self, state: _SourceState, out: list[Finding]) -> None:
        """A file that ends on a wait, or on a progress bar still at 0, with no metric line after
        it, shows where a run hung."""
        points = self.series.points_by_source[state.name]
        found = (
            self._last_wait(state, points)
            or self._stuck_at_zero(state)
            or self._ends_in_collective_setup(state)
        )
        if found is not None:
            line, kind = found
            fields = {"wait": kind, "steps_logged": points, "text": line.text[:300]}
            out.append(Finding(Draft("stalled", fields), [line], line.rank, self.attempt, points))

    def _ends_on_logged_error(self, state: _SourceState, out: list[Finding]) -> None:
        """A file whose last line is a logger's ERROR ended on it (see error_lines.last_logged)."""
        lines = _tail_lines(state)
        back = next((i for i, raw in enumerate(reversed(lines)) if raw.strip()), None)
        if back is None or (back == len(lines) - 1 and len(state.tail) >= waits.TAIL_BYTES):
            return  # no line, or only the end of one longer than the bytes kept
        line = make_line(state.name, state.lineno - back, lines[-1 - back], state.default_rank)
        draft = error_lines.last_logged(line.text) or error_lines.last_line(line.text)
        if draft is not None:
            out.append(Finding(draft, [line], line.rank, self.attempt))

    def _last_wait(self, state: _SourceState, points: int) -> tuple[LogLine, str] | None:
        if state.last_wait is None:
            return None
        line, kind, points_then = state.last_wait
        back = state.lineno - line.lineno
        after = _tail_lines(state)[-back:] if back else []
        if kind == "evaluation_stage" and len(after) == back:
            back = sum(1 for raw in after if raw.strip())  # it must be the last line written
        if back > _WAIT_REACH.get(kind, waits.TAIL_LINES) or points != points_then:
            return None
        announced = kind in ("training_start", "evaluation", "evaluation_stage")
        if announced and any(waits.FAILED_AFTER.search(raw) for raw in after):
            return None  # it failed right there: that error is the story, not a wait
        return line, kind

    def _stuck_at_zero(self, state: _SourceState) -> tuple[LogLine, str] | None:
        lines = _tail_lines(state)
        # Set-up chatter printed while the bar sat at 0 (NCCL building its rings for the first
        # collective) comes after the bar, not instead of a step.
        end = len(lines)
        while end and waits.CHATTER.search(lines[end - 1]):
            end -= 1
        back_from = len(lines) - end
        for back, raw in enumerate(
            reversed(lines[max(0, end - waits.TAIL_LINES) : end]), back_from
        ):
            shown = [part for part in raw.split(b"\r") if part.strip()]
            at_zero = waits.AT_ZERO.search(shown[-1]) if shown else None
            if at_zero is not None:
                after = [shown[-1][at_zero.end() :], *lines[len(lines) - back : end]]
                if any(
                    waits.FAILED_AFTER.search(text) or waits.MOVED_ON.search(text) for text in after
                ):
                    return None
                first = len(lines) - 1 - back
                before = lines[max(0, first - waits.TAIL_LINES) : first]
                if any(waits.FAILED_BEFORE.search(text) for text in before):
                    return None
                line = make_line(state.name, state.lineno - back, raw, state.default_rank)
                return line, "progress_at_zero"
        return None

    def _ends_in_collective_setup(self, state: _SourceState) -> tuple[LogLine, str] | None:
        """A file whose last lines are NCCL building a communicator (its rings, channels, "Init
        COMPLETE") with nothing after them: the first collective never returned."""
        shown = [
            (back, raw) for back, raw in enumerate(reversed(_tail_lines(state))) if raw.strip()
        ]
        last = shown[: waits.SETUP_TAIL_LINES]
        if len(last) < waits.SETUP_TAIL_LINES or not all(
            waits.CHATTER.search(raw) and not waits.NOT_SETUP.search(raw) for _, raw in last
        ):
            return None
        back, raw = last[0]
        return make_line(
            state.name, state.lineno - back, raw, state.default_rank
        ), "collective_setup"

    def _cxx_without_what(self, state: _SourceState, out: list[Finding]) -> None:
        """A ``terminate called ...`` line whose ``what():`` never came is an exception too."""
        line, thrown = state.cxx_throw or (None, "")
        state.cxx_throw = None
        if line is not None:
            block = _Block(bare=True)
            block.collector.start_message(thrown, max_lines=0)
            block.lines = traceback.HeadTail([line])
            self._traceback_done(state, block, block.collector.finish(), out)

    # -- turning blocks and lines into findings ------------------------------------------

    def _traceback_done(
        self, state: _SourceState, block: _Block, lines: list[str] | None, out: list[Finding]
    ) -> None:
        logged, block.lines = block.lines.items(), traceback.HeadTail()
        parsed = traceback.parse_block(lines) if lines and not block.ignored else None
        if parsed is None:
            return
        final = parsed.final
        if final.cut and block.ipython:
            final.qualname = block.ipython  # IPython's header named what the cut paste lost
        elif final.cut and final.frames and (raised := _RAISED.match(final.frames[-1].code)):
            final.qualname = raised["qualname"]  # the paste ends at `raise SomeError(`
        lead_line = None
        if final.cut and block.lead:
            final.message = block.lead  # the logger printed it before the traceback
            lead_line = block.lead_line
        rank = logged[0].rank if logged else None
        members = [*parsed.chain, final]
        phases = _chain_phases(members)
        evidence = [_traceback_evidence(logged, exc, block.bare) for exc in members]
        if lead_line is not None:
            evidence[-1] = [lead_line, *evidence[-1]]
        # An exception raised while handling another is a secondary failure (an emergency
        # checkpoint hitting a full disk after a shape error): its exception fact names the line
        # of the one it interrupted, and that one gets an exception fact of its own.
        interrupted = [None] + [
            _message_line(evidence[i - 1], members[i - 1]) if members[i].while_handling else None
            for i in range(1, len(members))
        ]
        last = len(members) - 1
        for index, exc in enumerate(members):
            if index != last and not members[index + 1].while_handling:
                continue
            fields: dict[str, Any] = {
                "type": exc.type,
                "qualname": exc.qualname,
                "message": exc.message.split("\n", 1)[0][:500],
                "detail": _said(exc.type, exc.message)[:_DETAIL_CHARS],
                "calls": " ".join(f.func for f in exc.frames[-_CALL_FRAMES:]),
                "files": " ".join(f.file for f in exc.frames[-_CALL_FRAMES:]),
                "phase": phases[index],
                "frames": len(parsed.frames) + parsed.omitted_frames,
                "chained": index > 0,
                "steps_logged": self.series.points,
            }
            # The call in progress in the innermost frame: for a bare ``AssertionError``, the
            # assert statement; for a ZeroDivisionError, the division that names its divisor.
            fields["code"] = exc.frames[-1].code[:200] if exc.frames else ""
            if exc.cut:
                fields["cut"] = True
            if exc.cut or not exc.message.strip():
                # Without a message, the words an expert reads are the frames' own (after what
                # a logger printed before the traceback, when it did).
                said = (fields["message"], fields["code"], fields["calls"])
                fields["detail"] = " ".join(filter(None, said))[:_DETAIL_CHARS]
            if exc.cut and block.original:
                fields["reraised"] = True
            if block.logging_error:
                fields["logging_error"] = True
            fields["quote"] = _quote(fields)
            if index > 0:
                fields["cause_type"] = members[index - 1].type
            if interrupted[index] is not None:
                fields["while_handling_line"] = interrupted[index].lineno
            out.append(Finding(Draft("exception", fields), evidence[index], rank))
        for index, exc in enumerate(members):
            if "\n" in exc.message:
                self._wrapped_rule_lines(exc, evidence[index], rank, out)
        written_to = _write_location(parsed.frames)
        for index, exc in enumerate(members):
            text = f"{exc.qualname}: {exc.message}"
            for module in MESSAGE_PARSERS:
                for draft in self._safe_parse(module, text, evidence[index][-1:]):
                    draft.fields.setdefault("phase", phases[index])
                    draft.fields.setdefault("steps_logged", self.series.points)
                    if draft.kind == "os_error" and written_to and "path" not in draft.fields:
                        draft.fields["mount_hint"] = written_to
                    out.append(Finding(draft, evidence[index], rank))
        if final.type == "KeyboardInterrupt":
            self.series.stopped = True
        if final.type == "ChildFailedError":
            state.elastic_wait = _ELASTIC_WAIT_LINES

    def _safe_parse(
        self, module: ModuleType, text: str, where: LogLine | list[LogLine]
    ) -> list[Draft]:
        """A message parser's drafts for ``text``; what it raises is counted, not fatal."""
        lines = where if isinstance(where, list) else [where]
        location = lines[0].location() if lines else ""
        before = CONTAINED.count
        try:
            drafts = list(module.parse(text))
        except Exception as error:
            self.errors.record(_short(module), error, location)
            return []
        if CONTAINED.count != before:  # the parser caught its own error (see never_raises)
            self.errors.note(_short(module), CONTAINED.last, location)
        return drafts

    def _elastic_done(self, state: _SourceState, out: list[Finding]) -> None:
        lines, state.elastic_lines = state.elastic_lines or [], None
        try:
            drafts = elastic.parse_block([line.text for line in lines])
        except Exception as error:
            self.errors.record("elastic", error, lines[0].location() if lines else state.name)
            drafts = []
        for draft in drafts:
            evidence = _elastic_evidence(lines, draft)
            out.append(Finding(draft, evidence, draft.fields.get("rank")))

    def _config(self, line: LogLine, out: list[Finding]) -> None:
        for key, value in parse_config(line.text):
            if self.config.get(key) == value:
                continue
            if key == "framework" and "framework" in self.config:
                continue  # the first framework named wins; later mentions are usually imports
            self.config[key] = value
            out.append(Finding(Draft("config", {"key": key, "value": value}), [line], line.rank))

    def _wrapped_rule_lines(
        self,
        exc: traceback.ExceptionInfo,
        evidence: list[LogLine],
        rank: int | None,
        out: list[Finding],
    ) -> None:
        """Rule patterns over an exception message that a terminal or a logger wrapped over
        several lines: they match the lines joined back, unless one line alone matched."""
        if self.rule_prefilter is None or not evidence:
            return
        parts = exc.message.split("\n")
        joined = f"{exc.qualname}: " + " ".join(part.strip() for part in parts)
        data = joined.encode("utf-8", "replace")
        for _, _, mask in self.rule_prefilter.scan(data):
            for pid in self.rule_prefilter.names(mask):
                regex = self._rule_regexes[pid]
                match = regex.search(joined)
                if match is None or any(regex.search(part) for part in parts):
                    continue
                fields = {"pattern": pid, "text": joined[:500]}
                fields |= {k: v for k, v in match.groupdict().items() if v is not None}
                out.append(Finding(Draft("line", fields), evidence, rank))

    def _rule_lines(self, line: LogLine, mask: int, out: list[Finding]) -> None:
        for pid in self._bits.rule_ids(mask):
            match = self._rule_regexes[pid].search(line.text)
            if match is None:
                continue  # matched the raw bytes, not the cleaned text
            fields = {"pattern": pid, "text": line.text[:500]}
            fields |= {k: v for k, v in match.groupdict().items() if v is not None}
            out.append(Finding(Draft("line", fields), [line], line.rank))


class _BitMap:
    """Which prefilter bits belong to which consumer."""

    def __init__(self, prefilter: Prefilter, rule_prefilter: Prefilter | None) -> None:
        def mask(module: str, triggers: Iterable[str]) -> int:
            return sum({prefilter.bit(_group(module, name)) for name in triggers})

        self.traceback = mask("traceback", traceback.TRIGGERS)
        self.exceptions = mask("exceptions", failure.EXCEPTION_TRIGGERS)
        self.waits = mask("waits", waits.TRIGGERS)
        self.metrics = mask("metrics", metrics.TRIGGERS)
        # Ordinary metric lines come from their own filter (see Extractor._candidates); they
        # get the bit just above the main prefilter's.
        self.sampled_metrics = 1 << prefilter.size
        self.metrics |= self.sampled_metrics
        self.loss_scale = mask("detectors", ["loss_scale"])
        self.stopped = mask("detectors", ["stopped"])
        self.epoch_header = mask("detectors", ["epoch_header"])
        self.printed_nan = mask("detectors", ["printed_nan"])
        self.config = mask("config", CONFIG_TRIGGERS)
        self.records = self.traceback | self.metrics | self.config
        self.attempts = mask("attempts", attempts.TRIGGERS)
        self._modules = [(mask(_short(m), m.TRIGGERS), m) for m in MESSAGE_PARSERS]
        self.messages = 0
        for bits, _ in self._modules:
            self.messages |= bits
        # Bits: the main prefilter's, then one for sampled metric lines, then the rule patterns'.
        self.rule_shift = prefilter.size + 1
        names = rule_prefilter.pattern_names if rule_prefilter is not None else []
        self._rule_names = list(names)
        self._rule_bits: dict[int, list[tuple[int, str]]] = {}
        self.rules = ((1 << len(names)) - 1) << self.rule_shift

    def modules(self, mask: int) -> list[ModuleType]:
        return [module for bits, module in self._modules if mask & bits]

    def module_bits(self, mask: int) -> list[tuple[int, ModuleType]]:
        return [(bits, module) for bits, module in self._modules if mask & bits]

    def rule_ids(self, mask: int) -> list[str]:
        return [pid for _, pid in self.rule_bits(mask)]

    def rule_bits(self, mask: int) -> list[tuple[int, str]]:
        found = self._rule_bits.get(mask & self.rules)  # few distinct masks recur: memoised
        if found is None:
            found = []
            rest = mask & self.rules
            while rest:  # the set bits only: a rule base may have thousands of patterns
                low = rest & -rest
                found.append((low, self._rule_names[low.bit_length() - 1 - self.rule_shift]))
                rest ^= low
            if len(self._rule_bits) >= _MAX_MEMOISED_MASKS:  # shared by every run: bounded
                self._rule_bits.clear()
            self._rule_bits[mask & self.rules] = found
        return found


#: Distinct rule masks a bit map remembers (it serves every run of a rule base).
_MAX_MEMOISED_MASKS = 4096


@dataclass(frozen=True)
class RulePatterns:
    """The rules' line patterns compiled for every run of a rule base: the prefilter, each
    pattern's own regex, and which prefilter bit is which."""

    line_patterns: dict[str, str]
    prefilter: Prefilter | None
    regexes: dict[str, Any]
    bits: _BitMap


def compile_rule_patterns(line_patterns: dict[str, str]) -> RulePatterns:
    """Compile the rules' ``line_patterns`` (pattern id -> regex); raises ``PatternError``
    when the prefilter refuses them."""
    patterns = dict(line_patterns)
    prefilter = build_rule_prefilter(patterns)
    regexes = _RuleRegexes(patterns)
    return RulePatterns(patterns, prefilter, regexes, _BitMap(build_prefilter(), prefilter))


#: Lines after a wait within which a file must end to end on it, where not waits.TAIL_LINES.
_WAIT_REACH = {
    "stack_dump": waits.DUMP_TAIL_LINES,
    "training_start": waits.TRAINING_START_TAIL_LINES,
    "evaluation": waits.TRAINING_START_TAIL_LINES,
    "evaluation_stage": waits.EVALUATION_STAGE_TAIL_LINES,
}


def _tail_lines(state: _SourceState) -> list[bytes]:
    """The last lines of a file as kept in ``state.tail``; the last is line ``state.lineno``."""
    lines = state.tail.split(b"\n")
    if lines and not lines[-1]:
        lines.pop()  # the newline that ends the file
    return lines


def _short(module: ModuleType) -> str:
    return module.__name__.rsplit(".", 1)[-1]


class _RuleRegexes(dict):
    """Pattern id -> the rule's compiled regex, compiled when a line first needs it: a run meets
    few rule patterns, and compiling all of them for every run was most of the time a small log
    took to analyse."""

    def __init__(self, patterns: dict[str, str]) -> None:
        super().__init__()
        self._patterns = patterns

    def __missing__(self, pid: str) -> re2._Regexp:
        regex = self[pid] = _rule_regex(self._patterns[pid])
        return regex


@lru_cache(maxsize=4096)
def _rule_regex(pattern: str) -> re2._Regexp:
    """A rule pattern compiled once per process (every run of ``eval`` or the TUI shares it)."""
    return re2.compile(pattern)


#: Up to this many rule patterns are scanned with Hyperscan, beyond with RE2 (slower to scan:
#: with 1,300 patterns the corpus took 12x the shipped rules' time). Compiling grows a little
#: faster than linearly (1,300 rule patterns 0.9 s, 13,000 11 s; once, then cached on disk).
HYPERSCAN_RULE_LIMIT = 20_000
_rule_prefilters: dict[tuple[tuple[str, str], ...], Prefilter | None] = {}


def build_rule_prefilter(line_patterns: dict[str, str]) -> Prefilter | None:
    """The prefilter of the rules' own line patterns (cached per rule set); None if none."""
    key = tuple(sorted(line_patterns.items()))
    if key not in _rule_prefilters:
        engine = "re2" if len(line_patterns) > HYPERSCAN_RULE_LIMIT else None
        _rule_prefilters[key] = (
            Prefilter(dict(key), engine=engine, rare=line_patterns) if line_patterns else None
        )
    return _rule_prefilters[key]


@lru_cache(maxsize=1)
def build_prefilter() -> Prefilter:
    """The combined prefilter of every parser trigger (one pattern per consumer)."""
    # One pattern per consumer (an alternation of its triggers): the prefilter then reports
    # a candidate line once per consumer that wants it, not once per trigger.
    groups: dict[str, list[str]] = {}
    for module in (traceback, metrics, detectors, attempts, *MESSAGE_PARSERS):
        for name, rx in module.TRIGGERS.items():
            groups.setdefault(_group(_short(module), name), []).append(rx)
    for name, rx in CONFIG_TRIGGERS.items():
        groups.setdefault(_group("config", name), []).append(rx)
    for name, rx in failure.EXCEPTION_TRIGGERS.items():
        groups.setdefault(_group("exceptions", name), []).append(rx)
    for name, rx in waits.TRIGGERS.items():
        groups.setdefault(_group("waits", name), []).append(rx)
    patterns = {name: "|".join(f"(?:{rx})" for rx in rxs) for name, rxs in groups.items()}
    return Prefilter(patterns)


_WRITERS = [
    # Semaphores and shared tensors live in /dev/shm.
    (
        "/dev/shm",
        lazy_compile(r"SemLock|multiprocessing/synchronize\.py|_share_filename|_new_shared"),
    ),
    # Library caches: HF datasets' map/save, hub downloads, torch.hub.
    (
        "cache",
        lazy_compile(
            r"datasets/arrow_(?:writer|dataset)\.py|huggingface_hub/file_download\.py|torch/hub\.py"
        ),
    ),
    # tempfile's files go to TMPDIR (by default /tmp).
    ("/tmp", lazy_compile(r"/tempfile\.py")),
]


def _write_location(frames: list[traceback.Frame]) -> str | None:
    """Where a failing write was going, judged from the innermost frames, when they say so."""
    recent = " ".join(f"{f.file} {f.code}" for f in frames[-8:])
    for hint, pattern in _WRITERS:
        if pattern.search(recent):
            return hint
    return None


@lru_cache(maxsize=1)
def _metric_prefilter() -> Prefilter:
    return Prefilter({"metric": metrics.METRIC_LINE_PATTERN})


@lru_cache(maxsize=1)
def _metric_re2() -> re2._Regexp:
    return re2.compile(f"(?m){metrics.METRIC_LINE_PATTERN}".encode())


def _sample_metric_lines(
    state: _SourceState, buf: bytes, start: int, size: int
) -> list[tuple[int, int, int]]:
    """The metric lines of ``buf[start:size]`` to read: the first that starts in each stretch of
    METRIC_STRETCH bytes of the source, stretches counted from its first byte. A stretch cut
    by a chunk's end goes on in the next chunk (``state.sampled_stretch`` says which got its
    line), and the pattern matches within one line, so whatever the chunks, the same lines are
    read. Each search is bounded to its stretch: the whole costs one pass at most."""
    pattern, base, step = _metric_re2(), state.offset, METRIC_STRETCH
    found = []
    stretch = (base + start) // step
    while True:
        begin = max(stretch * step - base, start)
        if begin >= size:
            return found
        end = min((stretch + 1) * step - base, size)
        if stretch > state.sampled_stretch:
            # The first line that starts in the stretch (0 after begin: none in this chunk),
            # then the end of the last one that does.
            at_line = begin == 0 or buf[begin - 1] == 10
            line = begin if at_line else buf.find(b"\n", begin, size) + 1
            match = None
            if (line or not begin) and line < end:
                last = buf.find(b"\n", end - 1, size)
                match = pattern.search(buf, line, size if last < 0 else last)
            if match is not None:
                first = buf.rfind(b"\n", 0, match.start()) + 1
                newline = buf.find(b"\n", match.start())
                found.append((first, size if newline < 0 else newline, 1))
                state.sampled_stretch = stretch
        stretch += 1


#: States of one \r-redrawn progress bar read as metric values (evenly spaced, plus the last).
REDRAW_SAMPLE = 64


def _redraws(raw: bytes, text: str) -> list[str]:
    """The states of a progress bar redrawn with \r on one line, as a series would have logged
    them (a tqdm bar written to a file is one line of thousands of redraws); else the line.

    The line's cleaned text (its last state) stays the evidence; earlier states only feed the
    metric series, so throughput and loss trends are visible in such logs too.
    """
    if b"\r" not in raw:
        return [text]
    states = [s for s in raw[:MAX_LINE_BYTES].split(b"\r") if s.strip()]
    if len(states) > REDRAW_SAMPLE:
        step = len(states) / REDRAW_SAMPLE
        states = [states[int(i * step)] for i in range(REDRAW_SAMPLE)] + [states[-1]]
    return [state.decode("utf-8", "replace") for state in states[:-1]] + [text]


def _group(module: str, trigger: str) -> str:
    """The prefilter pattern a trigger belongs to: one per module, with non-finite metrics apart
    (they must never be sampled away)."""
    return f"{module}:{'nonfinite' if trigger == 'metric_nonfinite' else 'any'}"


def _traceback_evidence(
    lines: list[LogLine], final: traceback.ExceptionInfo, bare: bool = False
) -> list[LogLine]:
    """The user's innermost frame and the final exception's message lines (for an exception
    found without a traceback, every line of its block)."""
    if not lines:
        return []
    if bare:
        return lines[: _MAX_MESSAGE_EVIDENCE + 1]
    if final.cut:  # no message: the user's frame and the innermost frame with its code line
        frames, own = _frame_lines(lines, len(lines))
        innermost = frames[-1] if frames else len(lines) - 1
        # IPython's header names the exception that the cut paste lost: it is the message.
        # So does a logger that printed the message before the header, on its line.
        named = final.message or traceback.IPYTHON_HEADER.match(lines[0].text)
        header = lines[:1] if named else []
        own_line = [lines[i] for i in own if i < innermost][-1:]
        return header + own_line + lines[innermost : innermost + 2]
    start = len(lines) - 1
    first_message_line = final.message.split("\n", 1)[0]
    for index in range(len(lines) - 1, -1, -1):
        text = lines[index].text
        if final.qualname in text and first_message_line[:40] in text:
            start = index
            break
    frames, own = _frame_lines(lines, start)
    frames = (own or frames)[-_EVIDENCE_FRAMES:]
    message = []
    for line in lines[start:]:
        text = line.text.strip()
        if message and (text in traceback.CHAIN_MARKERS or text.startswith(traceback.START)):
            break  # the next exception of a chain
        if text:
            message.append(line)
    return [lines[i] for i in frames] + message[:_MAX_MESSAGE_EVIDENCE]


def _frame_lines(lines: list[LogLine], end: int) -> tuple[list[int], list[int]]:
    """Indices of the frame lines before ``end``, and of those in the user's own files
    (train.py:88), not a library's: evidence points at the user's code."""
    frames = [i for i in range(end) if traceback.frame_file(lines[i].text) is not None]
    own = [
        i
        for i in frames
        if not traceback.is_library_file(traceback.frame_file(lines[i].text) or "")
    ]
    return frames, own


def _message_line(evidence: list[LogLine], exc: traceback.ExceptionInfo) -> LogLine | None:
    """The ``Type: message`` line among an exception's evidence lines."""
    for line in evidence:
        if line.text.startswith(exc.qualname):
            return line
    return evidence[-1] if evidence else None


def _elastic_evidence(lines: list[LogLine], draft: Draft) -> list[LogLine]:
    wanted = [str(draft.fields.get(k)) for k in ("rank", "exitcode") if k in draft.fields]
    picked = [
        line
        for line in lines
        if any(w in line.text for w in wanted)
        and ("rank" in line.text or "exitcode" in line.text or "Signal" in line.text)
    ]
    signal_lines = [line for line in lines if "Signal" in line.text or "signal" in line.text]
    return (picked + signal_lines)[:4] or lines[:1]
