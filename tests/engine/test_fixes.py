"""Fixes rendered in the framework's own terms, with the numbers from the log."""

from __future__ import annotations

import pytest

from crashcart.engine.fixes import fill, render_fix

HALVE = {"title": "Halve the micro-batch", "set": {"micro_batch": "half", "grad_accum": "double"}}


@pytest.mark.parametrize(
    ("framework", "patch"),
    [
        ("hf", "--per_device_train_batch_size 4 --gradient_accumulation_steps 4"),
        ("deepspeed", '"train_micro_batch_size_per_gpu": 4\n"gradient_accumulation_steps": 4'),
        ("lightning", "DataLoader(dataset, batch_size=4)\nTrainer(accumulate_grad_batches=4)"),
        ("kohya", "train_batch_size = 4\ngradient_accumulation_steps = 4"),
    ],
)
def test_batch_halving_per_framework(framework: str, patch: str) -> None:
    config = {"framework": framework, "micro_batch": 8, "grad_accum": 2}
    fix = render_fix(HALVE, {}, config)
    assert fix["patch"] == patch
    assert fix["change"].endswith("the effective batch per device stays 16")


def test_unknown_current_value_says_what_to_do() -> None:
    fix = render_fix({"title": "t", "set": {"micro_batch": "half"}}, {}, {})
    assert fix["patch"] == "DataLoader(dataset, batch_size=<halve the current value>)"


def test_learning_rate_tenth_uses_the_echoed_value() -> None:
    fix = render_fix({"title": "t", "set": {"lr": "tenth"}}, {}, {"framework": "hf", "lr": 5e-4})
    assert fix["patch"] == "--learning_rate 5e-05"
    assert fix["change"] == "learning_rate 0.0005 → 5e-05"


def test_env_and_code_fill_placeholders() -> None:
    spec = {"title": "Guard {function}", "env": {"X": "{gpu}"}, "code": "f({function})"}
    fix = render_fix(spec, {"function": "LogBackward0", "gpu": 3}, {})
    assert fix == {"title": "Guard LogBackward0", "env": {"X": "3"}, "code": "f(LogBackward0)"}


def test_optional_parts_disappear_when_a_value_is_missing() -> None:
    template = "GPU[[ {gpu}]] ran out of memory[[ asking for {requested_gib} GiB]]."
    assert fill(template, {"gpu": 0}) == "GPU 0 ran out of memory."
    assert fill(template, {"gpu": 1, "requested_gib": 2.0}) == (
        "GPU 1 ran out of memory asking for 2.00 GiB."
    )
    assert fill("{missing} stays visible", {}) == "? stays visible"
