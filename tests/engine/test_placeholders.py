"""Placeholders compute simple arithmetic over fields, safely (issue 17, item 10)."""

from __future__ import annotations

from pathlib import Path

import pytest

from crashcart.engine import placeholders
from crashcart.engine.fixes import fill
from crashcart.engine.rules import load_file

RULE = """\
id: cuda_oom.tiny_gpu
category: cuda_oom
title: OOM on a small GPU
confidence: 0.8
when:
  all:
    - fact: cuda_oom
      as: oom
summary: SUMMARY
fixes:
  - title: Halve the batch
    set: {micro_batch: half}
"""


def test_arithmetic_is_computed() -> None:
    assert fill("effective batch {16 * 4 * 2}", {}) == "effective batch 128"
    fields = {"micro_batch": 16, "grad_accum": 4, "oom.requested_gib": 2.5}
    assert fill("{micro_batch * grad_accum} samples", fields) == "64 samples"
    assert fill("{(micro_batch + 16) // 2}", fields) == "16"
    assert fill("{oom.requested_gib * 2} GiB", fields) == "5 GiB"
    assert fill("{micro_batch / 3}", fields) == "5.33"
    assert fill("{-micro_batch}", fields) == "-16"


def test_dotted_field_names_are_filled() -> None:
    assert fill("{oom.requested_gib} GiB", {"oom.requested_gib": 2.0}) == "2.00 GiB"


def test_missing_values_and_bad_arithmetic_have_no_value() -> None:
    assert fill("{missing * 2}", {}) == "?"
    assert fill("{x / 0}", {"x": 1}) == "?"
    assert fill("{text * 2}", {"text": "abc"}) == "?"
    assert fill("a[[ b {missing * 2}]]", {}) == "a"


@pytest.mark.parametrize(
    "expression",
    ["__import__('os').system('true')", "x ** 99", "f(x)", "x[0]", "'a' * 3", "x if y else z"],
)
def test_anything_but_numbers_names_and_arithmetic_is_refused(expression: str) -> None:
    with pytest.raises(placeholders.PlaceholderError):
        placeholders.names(expression)
    assert placeholders.value(expression, {"x": 2, "y": 1, "z": 3}) is None


def test_lint_checks_the_names_inside_arithmetic(tmp_path: Path) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text(RULE.replace("SUMMARY", "Asked {oom.requested_gib * 2} GiB."))
    errors: list = []
    assert load_file(path, errors) and not errors
    path.write_text(RULE.replace("SUMMARY", "Asked {oom.requestd_gib * 2} GiB."))
    load_file(path, errors)
    assert any("{oom.requestd_gib} names no field" in e.message for e in errors)
    errors.clear()
    path.write_text(RULE.replace("SUMMARY", "Asked {oom.requested_gib ** 2} GiB."))
    load_file(path, errors)
    assert any("only numbers, field names" in e.message for e in errors)
