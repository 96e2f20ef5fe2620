"""What a paste adds to a log (quotes, pytest's E, emphasis) and how rich draws a traceback."""

from __future__ import annotations

from crashcart.parsers.lines import peel
from crashcart.parsers.traceback import unbox
from tests.conftest import categories, run_text


def test_decorations_are_peeled() -> None:
    assert peel("> E   **RuntimeError: x**")[0] == "RuntimeError: x"
    assert peel('>   File "x.py", line 3, in f')[0] == '  File "x.py", line 3, in f'
    assert peel("__init__.py")[0] == "__init__.py"
    assert peel(">>> import torch")[0] == ">>> import torch"


def test_a_quoted_traceback_is_read_as_a_traceback() -> None:
    report = run_text(
        """\
        > Traceback (most recent call last):
        >   File "train.py", line 88, in <module>
        >     loss = criterion(out, y)
        > RuntimeError: expected scalar type Float but found Half
        """
    )
    assert categories(report)[0] == "dtype_mismatch"


def test_rich_box_lines_become_frames() -> None:
    assert unbox("│ /home/me/train.py:88 in main                 │") == (
        '  File "/home/me/train.py", line 88, in main'
    )
    assert unbox("│ ❱ 88 │   loss = model(batch)          │") == "    loss = model(batch)"
    assert unbox("╰──────────────────────────────────╯") == ""
    assert unbox("RuntimeError: x") == "RuntimeError: x"


def test_a_rich_traceback_with_a_wrapped_message_is_diagnosed() -> None:
    report = run_text(
        """\
        ╭──────────────── Traceback (most recent call last) ─────────────────╮
        │ /home/me/train.py:88 in main                                       │
        │                                                                    │
        │ ❱ 88 │   loss = model(batch)                                       │
        ╰────────────────────────────────────────────────────────────────────╯
        RuntimeError: Expected all tensors to be on the same device, but found at least two
        devices, cuda:0 and cpu! (when checking argument for argument mat1 in method wrapper_addmm)
        """
    )
    assert categories(report)[0] == "device_mismatch"
    facts = [f for f in report.facts if f["kind"] == "exception"]
    assert facts[0]["calls"] == "main"
    assert "cuda:0 and cpu" in facts[0]["detail"]


def test_a_traceback_pasted_without_its_indentation_is_read() -> None:
    report = run_text(
        """\
        Traceback (most recent call last):
        File "tools/train.py", line 27, in custom_train_model
        custom_train_detector(
        File "mmcv/runner/epoch_based_runner.py", line 127, in run
        epoch_runner(data_loaders[i], **kwargs)
        RuntimeError: CUDA error: an illegal memory access was encountered
        """
    )
    assert categories(report)[0] == "cuda_illegal_access"
    facts = [f for f in report.facts if f["kind"] == "exception"]
    assert facts[0]["calls"] == "custom_train_model run"
