"""Off a terminal, ``analyze`` prints its text report without rich (start-up, issue 15): the
plain console must write exactly the bytes rich writes there, for every report and any text."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.text import Text

from crashcart import analyze
from crashcart.report import (
    PlainConsole,
    PlainText,
    make_console,
    render_diagnosis,
    render_text,
    report_console,
)

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "rules" / "examples").glob("*/*.log"))
CORPUS = sorted((ROOT / "corpus").glob("*/train.log"))[::25]


def both(render) -> tuple[str, str]:
    """What ``render(console)`` writes through rich's console off a terminal, and through the
    plain one."""
    with_rich, plain = io.StringIO(), io.StringIO()
    render(make_console(with_rich))
    render(PlainConsole(plain))
    return with_rich.getvalue(), plain.getvalue()


def test_off_a_terminal_analyze_uses_the_plain_console() -> None:
    assert isinstance(report_console(io.StringIO()), PlainConsole)


@pytest.mark.parametrize("log", EXAMPLES + CORPUS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_report_prints_the_same_bytes(log: Path) -> None:
    report = analyze(log)
    with_rich, plain = both(lambda console: render_text(report, console))
    assert plain == with_rich
    if report.diagnoses:  # with a probe's verdict under it too
        diagnosis = report.diagnoses[0]
        diagnosis.probe = {"name": "disk_space", "status": "confirmed", "seconds": 1.25}
        diagnosis.probe["summary"] = "the disk\tis full\r"
        with_rich, plain = both(lambda console: render_diagnosis(console, 1, diagnosis))
        assert plain == with_rich


#: Text a log line or a rule's fix can hold: tabs, line breaks, the control characters rich drops
#: and those it keeps, wide and zero-width characters, combining accents.
TEXT = st.text(
    alphabet=st.sampled_from(list("ab \t\n\r\x07\x08\x0b\x0c\x1b\x00\x85é中🙂\u200b\u0301\u3000")),
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(text=TEXT, more=TEXT, indent=st.integers(min_value=0, max_value=9))
def test_any_text_prints_the_same_bytes(text: str, more: str, indent: int) -> None:
    with_rich, plain = io.StringIO(), io.StringIO()
    rich_console = make_console(with_rich)
    rich_console.print(Text(" " * indent) + Text(text, style="bold").append(more, style="dim"))
    rich_console.print()
    plain_console = PlainConsole(plain)
    plain_console.print(PlainText(" " * indent) + PlainText(text, style="bold").append(more))
    plain_console.print()
    assert plain.getvalue() == with_rich.getvalue()
