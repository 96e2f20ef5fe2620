"""Rendering reports: the terminal (rich; plain text off a terminal or with NO_COLOR) and JSON.

A terminal report reads top-down, best first::

    1. cuda_oom · CUDA OOM with most reserved memory unused (fragmentation)   confidence 0.88
       PyTorch held 5.20 GiB reserved but unallocated when 2.00 GiB was requested on GPU 0 ...
       evidence
         logs/train.log:1042 [rank 0]  torch.OutOfMemoryError: CUDA out of memory. Tried ...
       fix
         1. Let the caching allocator expand segments
            export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
       explains: nccl
"""

from __future__ import annotations

import functools
import json
import os
import sys
from typing import TYPE_CHECKING, Any, TextIO

from .engine.diagnosis import Diagnosis, ranges

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text

    from .analyzer import Report
    from .evaluate import CaseResult
    from .ruletools import RuleResult

# rich is imported by the functions that draw with it: `analyze --json` and the TUI's Markdown
# export never need it, and it is the largest import of a text report (benchmarks/README.md).

_EVIDENCE_WIDTH = 240
_PIPE_WIDTH = 1000


def make_console(file: TextIO | None = None) -> Console:
    """A console that writes plain text unless ``file`` is a colour terminal."""
    from rich.console import Console

    file = file or sys.stdout
    terminal = file.isatty()
    plain = bool(os.environ.get("NO_COLOR")) or not terminal
    return Console(
        file=file,
        no_color=plain,
        highlight=False,
        soft_wrap=plain,
        force_terminal=False if plain else None,
        emoji=False,
        # Off a terminal nothing is wrapped: a table sized to 80 columns would cut rule ids
        # and paths that a script or grep reading the pipe needs whole.
        width=None if terminal else _PIPE_WIDTH,
    )


class PlainText:
    """The part of rich's ``Text`` that :func:`render_diagnosis` uses, without styles: what a
    report off a terminal needs (see :class:`PlainConsole`)."""

    def __init__(self, text: str = "", style: str = "") -> None:
        """``text``; the style is dropped, as off a terminal rich drops it."""
        self.plain = text

    def append(self, text: str, style: str = "") -> PlainText:
        """Add ``text`` at the end (the style is dropped)."""
        self.plain += text
        return self

    def __add__(self, other: PlainText) -> PlainText:
        return PlainText(self.plain + other.plain)


#: The control characters rich removes from any text it prints (BEL, BS, VT, FF, CR).
_STRIPPED = dict.fromkeys((7, 8, 11, 12, 13))


class PlainConsole:
    """Prints :class:`PlainText` exactly as :func:`make_console` prints rich ``Text`` off a
    terminal (no colour, no wrapping), without importing rich: rich is the largest import of
    ``crashcart analyze``, and off a terminal its output is the text itself, less the control
    characters in :data:`_STRIPPED`, with tabs expanded to 8-cell stops, one line per print.
    tests/test_report_plain.py holds the two to the same bytes."""

    soft_wrap = True

    def __init__(self, file: TextIO) -> None:
        """Write to ``file``."""
        self.file = file

    def print(self, text: PlainText | None = None) -> None:
        """Write ``text`` and a newline (an empty line with no ``text``)."""
        if text is None:
            self.file.write("\n")
            return
        plain = text.plain.translate(_STRIPPED)
        if "\t" in plain:
            plain = "\n".join(_expand_tabs(line) for line in plain.split("\n"))
        self.file.write(plain + "\n")


def _expand_tabs(line: str, tab_size: int = 8) -> str:
    """rich's ``Text.expand_tabs`` on one line: each tab becomes a space, then spaces up to the
    next multiple of ``tab_size`` cells (a wide character takes two)."""
    if "\t" not in line:
        return line
    from rich.cells import cell_len  # only for a line with a tab

    out, position = [], 0
    *parts, last = line.split("\t")
    for part in parts:
        position += cell_len(part) + 1
        remainder = position % tab_size
        padding = tab_size - remainder if remainder else 0
        position += padding
        out.append(part + " " * (1 + padding))
    out.append(last)
    return "".join(out)


def report_console(file: TextIO) -> Any:
    """The console of ``analyze``'s text report: :func:`make_console` on a terminal, else a
    :class:`PlainConsole`, which prints the same bytes without importing rich."""
    return make_console(file) if file.isatty() else PlainConsole(file)


def _text_class(console: Any) -> Any:
    """The ``Text`` class that ``console`` prints."""
    if isinstance(console, PlainConsole):
        return PlainText
    from rich.text import Text

    return Text


def fix_lines(fix: dict[str, Any]) -> list[str]:
    """The copy-pastable lines of a fix (env exports, patch, command, code)."""
    lines = [f"export {name}={value}" for name, value in fix.get("env", {}).items()]
    for key in ("patch", "command", "code"):
        if fix.get(key):
            lines.extend(str(fix[key]).splitlines())
    return lines


def _indented(console: Console, indent: int, text: Text) -> None:
    """Print ``text`` indented; on a terminal its wrapped lines keep the indent too."""
    if console.soft_wrap:  # plain output is never wrapped: the indent is a prefix
        console.print(_text_class(console)(" " * indent) + text)
    else:
        from rich.padding import Padding

        console.print(Padding(text, (0, 0, 0, indent), expand=False))


def render_diagnosis(console: Console, number: int, diagnosis: Diagnosis) -> None:
    """Print one diagnosis."""
    Text = _text_class(console)  # rich's class, or the plain one off a terminal
    head = Text(f"{number}. ", style="bold")
    head.append(diagnosis.category, style="bold red" if number == 1 else "bold yellow")
    head.append(" · ")
    head.append(diagnosis.title, style="bold")
    if diagnosis.ranks:
        label = "rank" if len(diagnosis.ranks) == 1 else "ranks"
        head.append(f"  [{label} {ranges(diagnosis.ranks)}]", style="magenta")
    if diagnosis.attempts:
        label = "attempt" if len(diagnosis.attempts) == 1 else "attempts"
        head.append(f"  ({label} {ranges(diagnosis.attempts)})", style="magenta")
    head.append(f"   confidence {diagnosis.confidence:.2f}", style="dim")
    console.print(head)
    say = functools.partial(_indented, console)
    say(3, Text(diagnosis.summary))
    if diagnosis.explained_by:
        say(3, Text(f"(a symptom of {diagnosis.explained_by}, shown above)", style="dim"))
    say(3, Text("evidence", style="bold"))
    for line in diagnosis.evidence:
        where = Text(line.location(), style="cyan")
        if line.rank is not None:
            where.append(f" [rank {line.rank}]", style="magenta")
        text = line.text if len(line.text) <= _EVIDENCE_WIDTH else line.text[:_EVIDENCE_WIDTH] + "…"
        where.append("  " + text)
        say(5, where)
    if diagnosis.fixes:
        say(3, Text("fix", style="bold"))
        for index, fix in enumerate(diagnosis.fixes, 1):
            say(5, Text(f"{index}. {fix['title']}", style="green"))
            if fix.get("change"):
                say(8, Text(f"({fix['change']})", style="dim"))
            for line in fix_lines(fix):
                say(8, Text(line))
            if fix.get("note"):
                say(8, Text(fix["note"], style="dim"))
    if diagnosis.probe:
        render_probe(console, diagnosis.probe, indent="   ")
    if diagnosis.explains:
        say(3, Text(f"explains: {', '.join(diagnosis.explains)}", style="dim"))
    say(3, Text(f"ranked by: {diagnosis.reason}", style="dim"))
    console.print()


_PROBE_STYLES = {"confirmed": "bold green", "refuted": "bold red", "unavailable": "dim"}


def render_probe(console: Console, result: dict[str, Any], indent: str = "") -> None:
    """One probe result: its verdict and its one-sentence summary."""
    Text = _text_class(console)  # rich's class, or the plain one off a terminal
    line = Text(f"{indent}probe {result['name']}: ")
    line.append(result["status"], style=_PROBE_STYLES.get(result["status"], "yellow"))
    line.append(f" ({result.get('seconds', 0):.1f} s) {result.get('summary', '')}")
    console.print(line)


def render_text(report: Report, console: Console, top: int | None = None) -> None:
    """Print the diagnoses best first; a healthy log prints nothing."""
    for number, diagnosis in enumerate(report.diagnoses[:top] if top else report.diagnoses, 1):
        render_diagnosis(console, number, diagnosis)


def render_json(report: Report, file: TextIO, top: int | None = None) -> None:
    """Write the versioned JSON document."""
    data = report.to_json()
    if top:
        data["diagnoses"] = data["diagnoses"][:top]
    json.dump(data, file, indent=2, ensure_ascii=False)
    file.write("\n")


def render_rule_results(results: list[RuleResult], healthy: int, console: Console) -> None:
    """The per-rule table of ``crashcart rules test``, failures spelled out below it."""
    from rich.table import Table
    from rich.text import Text

    table = Table(box=None, pad_edge=False, header_style="bold")
    for column in ("rule", "TP", "FN", "TN", "FP", f"healthy FP (of {healthy})", "result"):
        table.add_column(column)
    for r in results:
        table.add_row(
            r.rule.id,
            str(len(r.true_positives)),
            str(len(r.false_negatives)),
            str(len(r.true_negatives)),
            str(len(r.false_positives)),
            str(len(r.healthy_false_positives)),
            Text("ok", style="green") if r.passed else Text("FAIL", style="bold red"),
        )
    console.print(table)
    for r in results:
        for path in r.false_negatives:
            console.print(f"FAIL {r.rule.id}: did not fire on {path}")
        for path in r.false_positives:
            console.print(f"FAIL {r.rule.id}: fired on {path}, which it must stay quiet on")
        for path in r.healthy_false_positives:
            console.print(f"FAIL {r.rule.id}: fired on the healthy log {path}")
    failed = sum(not r.passed for r in results)
    console.print(f"{len(results) - failed} passed, {failed} failed")


def render_eval(results: list[CaseResult], console: Console) -> None:
    """The per-category accuracy table of ``crashcart eval``, then every miss."""
    from rich.table import Table

    from .evaluate import HEALTHY, score, summary

    table = Table(box=None, pad_edge=False, header_style="bold")
    for column in ("category", "cases", "top-1", "top-3"):
        table.add_column(column, justify="left" if column == "category" else "right")
    scores = score(results)
    for name, entry in scores.items():
        if name != HEALTHY:
            table.add_row(
                name,
                str(entry.cases),
                f"{entry.top1 / entry.cases:.2f}",
                f"{entry.top3 / entry.cases:.2f}",
            )
    console.print(table)
    totals = summary(results)
    console.print(
        f"all failures: {totals['failure_cases']} cases, top-1 {totals['top1']:.3f}, "
        f"top-3 {totals['top3']:.3f} (hard cases top-1 {totals['hard_top1']:.3f}), "
        f"silent on {totals['silent_cases']} ({totals['silent']:.1%}); "
        f"healthy runs: {totals['healthy_cases']}, false alarms {totals['false_alarms']}"
    )
    for entry in scores.values():
        for miss in entry.misses:
            predicted = ", ".join(miss.predicted[:3]) or "nothing"
            console.print(f"miss {miss.name}: expected {miss.expected}, got {predicted}")


def render_markdown(diagnoses: list[Diagnosis], run_name: str) -> str:
    """A Markdown report of one run: per diagnosis its title, confidence, summary, the evidence
    as a code block of ``file:line`` lines, and the fixes with their copy-pastable lines."""
    out = [f"# crashcart report: {run_name}", ""]
    if not diagnoses:
        out += ["No problem found: the log looks healthy.", ""]
    for number, diagnosis in enumerate(diagnoses, 1):
        out.append(f"## {number}. {diagnosis.title}")
        out.append("")
        facts = [f"**{diagnosis.category}**", f"confidence {diagnosis.confidence:.2f}"]
        if diagnosis.ranks:
            facts.append(f"ranks {ranges(diagnosis.ranks)}")
        if diagnosis.probe:
            facts.append(f"probe {diagnosis.probe['name']}: {diagnosis.probe['status']}")
        out += [" · ".join(facts), "", diagnosis.summary, ""]
        if diagnosis.explained_by:
            out += [f"A symptom of {diagnosis.explained_by}.", ""]
        if diagnosis.evidence:
            out += ["### Evidence", "", "```text"]
            for line in diagnosis.evidence:
                text = line.text.replace("```", "'''")
                out.append(f"{line.location()}: {text}")
            out += ["```", ""]
        if diagnosis.fixes:
            out += ["### Fix", ""]
            for index, fix in enumerate(diagnosis.fixes, 1):
                out.append(f"{index}. {fix['title']}")
                if fix.get("change"):
                    out.append(f"   ({fix['change']})")
                lines = fix_lines(fix)
                if lines:
                    language = "sh" if fix.get("env") or fix.get("command") else ""
                    out += ["", f"   ```{language}"]
                    out += [f"   {line}".rstrip() for line in lines]
                    out.append("   ```")
                if fix.get("note"):
                    out += ["", f"   {fix['note']}"]
                out.append("")
        if diagnosis.explains:
            out += [f"Explains: {', '.join(diagnosis.explains)}.", ""]
    return "\n".join(out).rstrip() + "\n"
