"""Metric lines in the formats trainers print."""

from __future__ import annotations

import math

import pytest

from crashcart.parsers.metrics import parse_metrics


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            "{'loss': 2.3121, 'grad_norm': 1.84, 'learning_rate': 4.9e-05, 'epoch': 0.02}",
            {"loss": 2.3121, "grad_norm": 1.84, "lr": 4.9e-05, "epoch": 0.02},
        ),
        ("step 120 | loss 2.31 | lr 3.0e-04", {"step": 120, "loss": 2.31, "lr": 3e-4}),
        (
            "Epoch 0:  45%|####  | 45/100 [00:01<00:01, 30.2it/s, v_num=0, train_loss=0.512]",
            {"epoch": 0, "step": 45, "loss": 0.512, "it_s": 30.2, "bar_total": 100},
        ),
        (
            "steps:  10%|#         | 100/1000 [01:00<09:00,  1.66it/s, avr_loss=0.123]",
            {"step": 100, "loss": 0.123, "it_s": 1.66, "bar_total": 1000},
        ),
        (
            " iteration      100/    1000 | lm loss: 6.5E+00 | loss scale: 65536.0 | grad norm: 1.2 |",
            {"step": 100, "loss": 6.5, "loss_scale": 65536.0, "grad_norm": 1.2},
        ),
        ("Train Epoch: 1 [0/60000 (0%)]\tLoss: 2.305", {"epoch": 1, "loss": 2.305}),
        ("{'eval_loss': 1.9, 'eval_runtime': 3.2, 'epoch': 1.0}", {"eval_loss": 1.9, "epoch": 1.0}),
    ],
)
def test_formats(line: str, expected: dict[str, float]) -> None:
    assert parse_metrics(line) == pytest.approx(expected)


def test_nan_and_inf() -> None:
    found = parse_metrics("{'loss': nan, 'grad_norm': inf, 'learning_rate': 5e-05}")
    assert math.isnan(found["loss"])
    assert found["grad_norm"] == math.inf


@pytest.mark.parametrize(
    "line",
    ["no metrics here", "learning_rate=5e-05", "Epoch 3/10", "loss function: CrossEntropyLoss"],
)
def test_lines_without_a_loss_report_nothing(line: str) -> None:
    assert parse_metrics(line) == {}
