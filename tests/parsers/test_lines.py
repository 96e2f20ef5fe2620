"""Cleaning and peeling raw lines."""

from __future__ import annotations

from crashcart.parsers.lines import MAX_LINE_BYTES, clean, make_line, peel


def test_invalid_utf8_becomes_replacement_characters() -> None:
    assert clean(b"loss \xff\xfe 0.5") == "loss \ufffd\ufffd 0.5"


def test_ansi_colours_are_removed() -> None:
    assert clean(b"\x1b[31mRuntimeError\x1b[0m: boom") == "RuntimeError: boom"


def test_carriage_return_progress_keeps_the_last_state() -> None:
    raw = b"  1%|          | 1/100\r 50%|#####     | 50/100\r100%|##########| 100/100\r"
    assert clean(raw) == "100%|##########| 100/100"


def test_overlong_line_is_capped_with_a_marker() -> None:
    text = clean(b"x" * (MAX_LINE_BYTES + 10))
    assert text.startswith("x" * 100)
    assert "truncated" in text
    assert len(text) < MAX_LINE_BYTES + 100


def test_rank_prefixes() -> None:
    assert peel("[rank3]: RuntimeError: x") == ("RuntimeError: x", 3, None)
    assert peel("[default1]:loss: 0.3") == ("loss: 0.3", 1, None)
    assert peel("7: Traceback (most recent call last):")[1] == 7
    assert peel("[1,2]<stderr>:NCCL WARN x")[1] == 2


def test_timestamp_prefixes() -> None:
    assert peel("2024-05-01 12:00:03,114 - INFO - step") == (
        "INFO - step",
        None,
        "2024-05-01 12:00:03,114",
    )
    assert peel("[2024-05-01T12:00:03.5Z] boom")[2] == "2024-05-01T12:00:03.5Z"
    # transformers' example scripts: logging with datefmt="%m/%d/%Y %H:%M:%S"
    assert peel("05/01/2024 12:00:03 - INFO - __main__ - step") == (
        "INFO - __main__ - step",
        None,
        "05/01/2024 12:00:03",
    )


def test_nested_prefixes_and_indentation_survive() -> None:
    text, rank, time = peel('[rank0]:[2024-05-01 12:00:03] [rank0]:   File "t.py", line 3, in f')
    assert (rank, time) == (0, "2024-05-01 12:00:03")
    assert text == '  File "t.py", line 3, in f'


def test_plain_lines_are_untouched() -> None:
    assert peel("    main()") == ("    main()", None, None)


def test_make_line_uses_the_default_rank_of_the_file() -> None:
    line = make_line("rank4.log", 12, b"boom", default_rank=4)
    assert (line.path, line.lineno, line.rank, line.text) == ("rank4.log", 12, 4, "boom")
    assert line.location() == "rank4.log:12"
