"""Python tracebacks: the frames, the final exception, and the chain of causes.

Example input (one block, as :class:`TracebackCollector` gathers it)::

    Traceback (most recent call last):
      File "train.py", line 41, in <module>
        main()
      File "train.py", line 33, in main
        loss.backward()
    RuntimeError: element 0 of tensors does not require grad and does not have a grad_fn

Chained exceptions ("During handling of the above exception, another exception occurred:" and
"The above exception was the direct cause of the following exception:") are kept as one block;
the last exception is the one that ended the program, the earlier ones are its causes.

People paste less than a whole traceback, and more decorated. An exception line with no
traceback above it (``RuntimeError: CUDA error: ...`` as the last line someone copied, or after a
logger's ``ERROR:root:``), a C++ exception that ended the process::

    terminate called after throwing an instance of 'c10::CUDAError'
      what():  CUDA error: an illegal memory access was encountered

and rich's boxed tracebacks (Lightning, typer, accelerate), whose frames are drawn in a box and
whose message is wrapped over lines::

    ╭──────────────── Traceback (most recent call last) ─────────────────╮
    │ /home/me/train.py:88 in main                                       │
    │ ❱ 88 │   loss = model(batch)                                       │
    ╰────────────────────────────────────────────────────────────────────╯
    RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 7.79 GiB total
    capacity; 6.90 GiB already allocated)

and IPython's tracebacks (Jupyter, Colab), whose header names the exception and whose frames
show the code around an arrow::

    UnidentifiedImageError                    Traceback (most recent call last)
    Cell In[4], line 2
          1 opt = get_config("config_files/en_filtered_config.yaml")
    ----> 2 train(opt, amp=False)
    File ~\\OCR\\trainer\\dataset.py:101, in Batch_Balanced_Dataset.get_batch(self)
    --> 101         image, text = next(data_loader_iter)

and VS Code's debugger, which names the exception first and lists the frames innermost first::

    Exception has occurred: RuntimeError       (note: full exception trace is shown but ...)
    split_with_sizes expects split_sizes to sum exactly to 2700 (input tensor's size at ...)
      File "/usr/lib/python3.10/site-packages/torch/_tensor.py", line 921, in split
        return torch._VF.split_with_sizes(self, split_size, dim)
      File "/home/me/train.py", line 12, in <module>
        loss = model(batch)

are each read as a block of the same shape: :mod:`.failure` turns the first two into an
exception line that opens a block without frames (:meth:`TracebackCollector.start_message`),
:func:`unbox` turns rich's box lines and :func:`from_ipython` IPython's into ordinary frame
lines, :func:`from_vscode` VS Code's block into an ordinary one.

The line grammars are pyparsing, built once; the walk over a block's lines is plain Python,
because a traceback is a sequence of line shapes rather than a nested language.
"""

from __future__ import annotations

import functools
import re
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from .lazy import lazy_compile, pp

TRIGGERS = {
    "traceback_start": r"Traceback \(most recent call last\):",
    # People often paste a traceback without its header; its first frame starts the block then.
    "traceback_frame": r"File \"[^\"\n]+\", line \d+, in \S",
    # rich's boxed traceback header (no colon after the parenthesis).
    "traceback_rich": r"Traceback \(most recent call last\) ─",
    # IPython's header: the exception's name, padding, and no colon.
    "traceback_ipython": r"[\w.]+ {2,}Traceback \(most recent call last\)\s*$",
    # VS Code's debugger: "Exception has occurred: RuntimeError", the message, the frames.
    "traceback_vscode": r"Exception has occurred: [\w.]+",
}

#: A block keeps its first HEAD_LINES and its last TAIL_LINES lines; what lies between (a
#: RecursionError's thousands of frames, a chain thousands of exceptions deep) is counted and
#: replaced by one marker line, so that a block costs the same to parse however long it is.
HEAD_LINES = 300
TAIL_LINES = 300
_MAX_MESSAGE_LINES = 25
OMITTED_MARKER = "... {frames} frames omitted ({lines} lines) ..."
_OMITTED = lazy_compile(r"^\.\.\. (?P<frames>\d+) frames omitted \(\d+ lines\) \.\.\.$")

T = TypeVar("T")


class HeadTail(Generic[T]):
    """A list that keeps only its first ``head`` and last ``tail`` items, counting the rest.

    :meth:`append` returns the item that fell out of the middle, for the caller to count.
    """

    def __init__(self, items: Iterable[T] = (), head: int = HEAD_LINES, tail: int = TAIL_LINES):
        self.head: list[T] = []
        self.tail: deque[T] = deque()
        self._head_size, self._tail_size = head, tail
        self.omitted_count = 0
        for item in items:
            self.append(item)

    def append(self, item: T) -> T | None:
        """Add ``item``; return the item that fell out of the middle to make room, if any."""
        if len(self.head) < self._head_size:
            self.head.append(item)
            return None
        self.tail.append(item)
        if len(self.tail) <= self._tail_size:
            return None
        self.omitted_count += 1
        return self.tail.popleft()

    def head_full(self) -> bool:
        """Whether new items now go to the tail."""
        return len(self.head) >= self._head_size

    def skip(self, count: int) -> list[T]:
        """Count ``count`` items as appended and dropped at once, as if ``count`` appends and
        then a full tail's worth of new items followed: the tail is emptied and returned, for
        the caller to count (the caller appends those new items next)."""
        dropped = list(self.tail)
        self.tail.clear()
        self.omitted_count += len(dropped) + count
        return dropped

    def __len__(self) -> int:
        return len(self.head) + len(self.tail)

    def items(self) -> list[T]:
        """The items kept, in order (without any marker for the omitted middle)."""
        return [*self.head, *self.tail]


def _build_frame_line() -> pp.ParserElement:
    # File "/path/to/train.py", line 41, in main
    path = pp.QuotedString('"', convert_whitespace_escapes=False)("file")
    # At most 9 digits: no file has more lines, and int() refuses more than 4,300 digits.
    number = pp.Regex(r"\d{1,9}(?!\d)").set_parse_action(lambda t: int(t[0]))("line")
    func = pp.rest_of_line()("func")
    return pp.Suppress(pp.Keyword("File")) + path + "," + "line" + number + "," + "in" + func


def _build_exception_line() -> pp.ParserElement:
    # torch.OutOfMemoryError: CUDA out of memory. ...   |   KeyboardInterrupt
    # ray.exceptions.RayTaskError(OutOfMemoryError): the wrapper names the error it carries.
    qualname = pp.Regex(r"(?:[A-Za-z_]\w*(?:\.|::))*[A-Za-z_]\w*(?:\([\w.]+\))?(?:\[[\w.]+\])?")(
        "qualname"
    )
    message = pp.Optional(pp.Suppress(":") + pp.rest_of_line()("message"))
    return pp.LineStart() + qualname + message + pp.StringEnd()


# Built on first use: a log without a traceback never imports pyparsing (parsers/lazy.py).
_frame_line = functools.cache(_build_frame_line)
_exception_line = functools.cache(_build_exception_line)
CHAIN_MARKERS = (
    "During handling of the above exception, another exception occurred:",
    "The above exception was the direct cause of the following exception:",
)
START = "Traceback (most recent call last):"
# A line that begins a new log record rather than continuing an exception message: glog's and
# c10d's ``W0623 16:45:48`` and ``[W623 16:45:48.055 ProcessGroupNCCL.cpp:1168]`` among them.
_NEW_RECORD = lazy_compile(
    r"^(?:Traceback \(most recent|\[?[EWIF]\d{3,4} \d\d:|\[[EWI] |(?:INFO|WARNING|WARN|DEBUG|CRITICAL)\b"
    r"|={5,}|-{5,}|\s*\d+%\||wandb:|Epoch \d|\{')"
)


RICH_HEADER = lazy_compile(r"╭─+ Traceback \(most recent call last\) ─+╮?")
_RICH_FRAME = lazy_compile(r"^(?P<file>\S.*?):(?P<line>\d+) in(?: (?P<func>\S+))?$")
_RICH_CODE = lazy_compile(r"^❱ *\d+ │(?P<code>.*)$")


def unbox(text: str) -> str:
    """One line of a rich-boxed traceback as the plain traceback line it stands for.

    ``│ /home/me/train.py:88 in main │`` becomes ``  File "/home/me/train.py", line 88, in
    main``, the ``❱`` line its code line; the box's other lines (context lines, locals, borders)
    become blank lines, which a block passes over. A line outside the box is returned as is.
    """
    stripped = text.strip()
    if stripped.startswith("╰"):
        return ""
    if not stripped.startswith("│"):
        return text
    inner = stripped.strip("│").strip()
    frame = _RICH_FRAME.match(inner)
    if frame:
        func = frame["func"] or "?"
        return f'  File "{frame["file"]}", line {frame["line"]}, in {func}'
    code = _RICH_CODE.match(inner)
    if code:
        return "    " + code["code"].strip(" │")
    return ""


IPYTHON_HEADER = lazy_compile(
    r"^\s*(?P<qualname>[\w.]+) {2,}Traceback \(most recent call last\)\s*$"
)
#: IPython 8's frame (``File ~/x.py:101, in f(self)``, ``Cell In[4], line 2``) and the older
#: one (``/x/y.py in f(self, a)``, ``<ipython-input-14-495233eaf2b4> in <module>``), whose
#: line number only its arrow line shows.
_IPYTHON_FRAME = lazy_compile(
    r"^(?:File (?P<file>.+?):(?P<line>\d+), in (?P<func>[\w<>.]+)"
    r"|(?P<cell>Cell In ?\[\d*\]), line (?P<cell_line>\d+)"
    r"|(?P<old_file><ipython-input-[\w-]+>|\S.*?\.pyx?) in (?P<old_func>[\w<>.]+))"
)
_IPYTHON_ARROW = lazy_compile(r"^-*> ?\d+ ?(?P<code>.*)$")
#: Context lines, rules, and the frames a notebook folded away: Colab's "6 frames" and IPython
#: 8's "[... skipping hidden 1 frame]", after which the traceback goes on.
_IPYTHON_CONTEXT = lazy_compile(
    r"^\s+\d+(?: |$)|^-{20,}$|^\d+ frames?\s*$|^\[\.\.\. skipping hidden \d+ frames?\]\s*$"
)


#: VS Code's header; what may follow the name is its note about where execution paused.
VSCODE_HEADER = lazy_compile(r"^\s*Exception has occurred: (?P<qualname>[\w.]+)(?:\s|$)")


def from_vscode(lines: list[str]) -> list[str]:
    """VS Code's exception block (header, message, frames innermost first) as the ordinary
    traceback it stands for: the frames outermost first, the exception line last. Any other
    block is returned as it is."""
    header = VSCODE_HEADER.match(lines[0]) if lines else None
    if header is None:
        return lines
    body = lines[1:]
    first = next((i for i, t in enumerate(body) if t.lstrip().startswith('File "')), len(body))
    message = [t.strip() for t in body[:first] if t.strip()]
    frames: list[list[str]] = []
    for text in body[first:]:
        if text.lstrip().startswith('File "'):
            frames.append([text])
        elif frames:
            frames[-1].append(text)
    qualname = header["qualname"]
    final = f"{qualname}: {message[0]}" if message else qualname
    return [START, *(text for frame in reversed(frames) for text in frame), final, *message[1:]]


def dedented(lines: list[str]) -> list[str]:
    """The block with the indentation a paste added to all of its lines taken off again.

    A traceback quoted in an issue often has every line but its header shifted right (frames at
    six spaces, the exception line at four): Python writes its frames two spaces in and the
    exception line at the margin, so whatever the frames carry beyond two spaces is the paste's
    and comes off every line that has it. A block whose frames sit at two spaces or less is
    returned as it is."""
    indents = [len(t) - len(t.lstrip()) for t in lines if t.lstrip().startswith('File "')]
    extra = min(indents, default=0) - 2
    if extra <= 0:
        return lines
    margin = " " * extra
    return [t[extra:] if t.startswith(margin) else t for t in lines]


def from_ipython(text: str) -> str:
    """One line of an IPython traceback's frames as the plain traceback line it stands for.

    A frame header becomes a ``File "...", line N, in func`` line (line 0 where IPython shows
    the number only on the arrow), the arrow line its code line, the numbered context lines
    around it blank lines, which a block passes over. Any other line is returned as is.
    """
    frame = _IPYTHON_FRAME.match(text)
    if frame:
        if frame["cell"]:
            return f'  File "{frame["cell"]}", line {frame["cell_line"]}, in <cell>'
        if frame["file"]:
            return f'  File "{frame["file"]}", line {frame["line"]}, in {frame["func"]}'
        return f'  File "{frame["old_file"]}", line 0, in {frame["old_func"]}'
    arrow = _IPYTHON_ARROW.match(text)
    if arrow:
        return "    " + arrow["code"].strip()
    if _IPYTHON_CONTEXT.match(text):
        return ""
    return text


@dataclass
class Frame:
    """One ``File "...", line N, in func`` entry and its source line."""

    file: str
    line: int
    func: str
    code: str = ""


@dataclass
class ExceptionInfo:
    """One exception of a (possibly chained) traceback."""

    qualname: str
    message: str
    frames: list[Frame] = field(default_factory=list)
    #: Raised inside an ``except`` block handling the exception before it ("During handling of
    #: the above exception, another exception occurred"): a secondary failure, not the cause.
    while_handling: bool = False
    #: The block ended before its exception line (a paste cut short, a log cut by a kill): the
    #: frames are known, the exception is not.
    cut: bool = False

    @property
    def type(self) -> str:
        """The exception's class name without its module (``OutOfMemoryError``)."""
        return re.split(r"\.|::", self.qualname)[-1]


@dataclass
class Traceback:
    """A parsed traceback block; ``chain`` holds the causes, oldest first."""

    final: ExceptionInfo
    chain: list[ExceptionInfo] = field(default_factory=list)
    #: Frames left out of a block too long to keep whole (see :data:`OMITTED_MARKER`).
    omitted_frames: int = 0

    @property
    def frames(self) -> list[Frame]:
        """Every frame of every exception in the block, oldest first."""
        return [f for exc in [*self.chain, self.final] for f in exc.frames]


#: Files that are not the user's code: installed packages, the standard library, an interpreter's
#: frozen or generated modules, and torch's own tree (a source build, or a pasted relative path).
_LIBRARY_FILE = lazy_compile(
    r"[/\\](?:site|dist)-packages[/\\]"
    r"|[/\\]lib(?:64)?[/\\]python\d[\d.]*[/\\]"
    r"|[/\\]Lib[/\\]"
    r"|^<(?!ipython-input)[^>]*>$"
    r"|(?:^|[/\\])torch[/\\](?:nn|autograd|utils|distributed|_dynamo|_inductor|optim|cuda|amp|serialization\.py|_tensor\.py|functional\.py)"
)
_FRAME_FILE = lazy_compile(r'^\s*File "(?P<file>[^"]+)", line \d+')


def is_library_file(path: str) -> bool:
    """Whether a frame's file belongs to an installed library or Python itself, not the user."""
    return bool(_LIBRARY_FILE.search(path))


def frame_file(text: str) -> str | None:
    """The file a frame line names (``File "...", line N`` or IPython's forms), or None for
    any other line."""
    match = _FRAME_FILE.match(text)
    if match:
        return match["file"]
    match = _IPYTHON_FRAME.match(text.strip())
    if match is None:
        return None
    return match["file"] or match["cell"] or match["old_file"]


def is_exception_line(text: str) -> bool:
    """Whether ``text`` looks like the final ``Type: message`` line of a traceback."""
    if not text or text[0].isspace():
        return False
    try:
        _exception_line().parse_string(text)
    except pp.ParseException:
        return False
    return True


def parse_block(lines: list[str]) -> Traceback | None:
    """Parse the lines of one traceback block (see the module docstring)."""
    lines = dedented(from_vscode(lines))
    exceptions: list[ExceptionInfo] = []
    frames: list[Frame] = []
    current: ExceptionInfo | None = None
    handling = False
    omitted = 0
    for text in lines:
        stripped = text.strip()
        marker = _OMITTED.match(stripped) if stripped.startswith("... ") else None
        if marker:
            omitted += int(marker["frames"])
            continue
        if stripped == START or stripped in CHAIN_MARKERS or not stripped:
            if stripped in CHAIN_MARKERS:
                handling = stripped == CHAIN_MARKERS[0]
            current = None
            continue
        if text[:1].isspace() or stripped.startswith('File "'):
            # A paste can lose the indentation: a frame line is one wherever it starts.
            if stripped.startswith("File "):
                try:
                    found = _frame_line().parse_string(stripped)
                except pp.ParseException:
                    continue
                frames.append(Frame(found["file"], found["line"], found["func"].strip()))
            elif frames and not frames[-1].code and not set(stripped) <= set("^~ "):
                frames[-1].code = stripped
            elif current is not None:
                current.message += "\n" + stripped
            continue
        if current is not None:
            current.message += "\n" + stripped
            continue
        try:
            found = _exception_line().parse_string(text)
        except pp.ParseException:
            continue
        current = ExceptionInfo(
            found["qualname"],
            found.get("message", "").strip(),
            frames,
            handling and bool(exceptions),
        )
        exceptions.append(current)
        frames = []
        handling = False
    if not exceptions:
        if not frames and not any(text.strip() == START for text in lines):
            return None
        # Cut before its exception line, or even before its first frame: still an exception.
        return Traceback(ExceptionInfo("", "", frames, cut=True), [], omitted)
    return Traceback(exceptions[-1], exceptions[:-1], omitted)


class TracebackCollector:
    """Gathers the lines of one traceback from a stream of lines, across chunk boundaries.

    Feed it every line of its stream while :attr:`active`; :meth:`feed` returns the finished
    block's lines when the traceback ends (or ``None``) and whether the line was consumed. A line
    that ends a block without belonging to it is returned unconsumed, for the caller to handle.
    """

    def __init__(self) -> None:
        self.lines: HeadTail[str] = HeadTail()
        self._omitted_frames = 0
        self.state = "idle"
        self._message_lines = 0
        self._max_message_lines = _MAX_MESSAGE_LINES
        self._after_frame = False

    @property
    def active(self) -> bool:
        """Whether a traceback is being gathered."""
        return self.state != "idle"

    def _restart(self, text: str) -> None:
        self.lines = HeadTail([text])
        self._omitted_frames = 0

    def _append(self, text: str) -> None:
        dropped = self.lines.append(text)
        if dropped is not None and dropped.lstrip().startswith('File "'):
            self._omitted_frames += 1

    def skip(self, lines: int, frames: int) -> None:
        """Count ``lines`` plain frame and code lines (``frames`` of them frame lines) into the
        omitted middle at once; the caller feeds the next ``TAIL_LINES`` lines as usual (see
        ``Extractor._skip_frames``)."""
        for text in self.lines.skip(lines):
            if text.lstrip().startswith('File "'):
                self._omitted_frames += 1
        self._omitted_frames += frames

    def start(self, text: str) -> None:
        """Begin a block at a ``Traceback (most recent call last):`` line."""
        self._restart(text)
        self.state = "frames"
        self._message_lines = 0
        self._max_message_lines = _MAX_MESSAGE_LINES

    def start_message(self, text: str, max_lines: int = _MAX_MESSAGE_LINES) -> None:
        """Begin a block at an exception line with no traceback above it (see :mod:`.failure`):
        up to ``max_lines`` lines that follow may continue its message."""
        self._restart(text)
        self.state = "message"
        self._message_lines = 0
        self._max_message_lines = max_lines

    def start_vscode(self, text: str) -> None:
        """Begin a block at VS Code's ``Exception has occurred: T`` header: the message comes
        next, then the frames (see :func:`from_vscode`)."""
        self._restart(text)
        self.state = "vscode_message"
        self._message_lines = 0
        self._max_message_lines = _MAX_MESSAGE_LINES

    def _feed_vscode(self, text: str, stripped: str) -> tuple[list[str] | None, bool]:
        """A line of a VS Code block: message lines up to the first frame, then frame and code
        lines up to the first line that is neither."""
        frame = stripped.startswith('File "')
        if self.state == "vscode_message" and not frame:
            self._message_lines += 1
            if not stripped or self._message_lines > self._max_message_lines:
                return self.finish(), False
            self._append(text)
            return None, True
        if frame or (stripped and text[:1].isspace()):
            self._append(text)
            self.state = "vscode_frames"
            return None, True
        return self.finish(), False

    def feed(self, text: str, new_record: bool = False) -> tuple[list[str] | None, bool]:
        """Offer the next line; return ``(finished_block_or_None, consumed)``.

        ``new_record`` says the line carried its own timestamp, so it starts a new log record.
        A block of any length is kept to its first and last lines (see :data:`HEAD_LINES`).
        """
        stripped = text.strip()
        if self.state.startswith("vscode"):
            return self._feed_vscode(text, stripped)
        if self.state == "frames":
            if stripped.startswith(START):
                self._restart(text)  # the previous header had no body; start over
                return None, True
            if text[:1].isspace() or not stripped or stripped.startswith('File "'):
                self._append(text)
                self._after_frame = stripped.startswith('File "')
                return None, True
            if self._after_frame and not is_exception_line(text):
                # The code line of a frame whose indentation a paste lost.
                self._append(" " + text)
                self._after_frame = False
                return None, True
            self._append(text)
            self.state = "message"
            self._message_lines = 0
            return None, True
        if self.state == "message":
            if not stripped:
                self.state = "after_blank"
                return None, True
            if stripped in CHAIN_MARKERS:
                self._append(text)
                self.state = "chain"
                return None, True
            self._message_lines += 1
            if (
                new_record
                or _NEW_RECORD.match(text)
                or self._message_lines > self._max_message_lines
            ):
                return self.finish(), False
            self._append(text)
            return None, True
        if self.state == "after_blank":
            if stripped in CHAIN_MARKERS:
                self._append(text)
                self.state = "chain"
                return None, True
            if not stripped:
                return None, True
            return self.finish(), False
        # state == "chain": blank lines, then the next Traceback header
        if not stripped:
            return None, True
        if stripped.startswith(START):
            self._append(text)
            self.state = "frames"
            return None, True
        return self.finish(), False

    def finish(self) -> list[str] | None:
        """End the block now (end of input, or a bound reached) and return its lines."""
        kept, self.lines, self.state = self.lines, HeadTail(), "idle"
        tail = list(kept.tail)
        lines_omitted, frames_omitted = kept.omitted_count, self._omitted_frames
        if lines_omitted:
            # The tail resumes at a frame line, so that no code line is read as another's.
            while tail and tail[0][:1].isspace() and not tail[0].lstrip().startswith('File "'):
                lines_omitted += 1
                tail.pop(0)
            marker = OMITTED_MARKER.format(frames=frames_omitted, lines=lines_omitted)
            return [*kept.head, marker, *tail]
        return kept.items() or None
