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


def test_unknown_current_value_says_what_to_do_in_the_title() -> None:
    """No number the log did not print, and no prose inside code (issue 17, item 3)."""
    fix = render_fix({"title": "t", "set": {"micro_batch": "half"}}, {}, {})
    assert "patch" not in fix
    assert fix["title"] == "t (halve the current value of batch_size: the log does not print it)"


def test_accumulation_is_not_assumed_to_be_1() -> None:
    fix = render_fix(HALVE, {}, {"micro_batch": 8})
    assert fix["patch"] == "DataLoader(dataset, batch_size=4)"
    assert "1 →" not in fix["change"] and "→ 2" not in fix["change"]
    assert "double the current value of accumulation steps" in fix["title"]


def test_code_forms_are_code() -> None:
    """Every way a setting is written is code: a shell flag, a JSON pair, Python, a TOML line."""
    import ast

    from crashcart.engine.fixes import SETTINGS

    for setting, forms in SETTINGS.items():
        for framework, (_, form) in forms.items():
            text = form.replace("{v}", "2")
            if framework in ("pytorch", "lightning"):
                ast.parse(text.replace(": ...", ": pass"))  # raises on prose
            assert "<" not in text, (setting, framework, text)


def test_the_lr_a_metric_line_printed_is_the_current_value() -> None:
    from tests.conftest import run_text

    lines = "".join(
        f"step {s} loss {2.0 + 0.3 * s:.2f} lr=0.116 grad_norm 1.2\n" for s in range(40)
    )
    report = run_text(lines + "step 40 loss nan lr=0.116\nstep 41 loss nan lr=0.116\n")
    fixes = [f for d in report.diagnoses for f in d.fixes if "lr=" in f.get("patch", "")]
    assert fixes, [d.fixes for d in report.diagnoses]
    assert all("lr=0.0116" in f["patch"] for f in fixes)
    assert all("current value" not in f["title"] for f in fixes)


def test_hf_flags_only_for_hf_logs() -> None:
    spec = {"title": "Keep fewer", "patch": "--save_total_limit 2", "frameworks": ["hf"]}
    assert render_fix(spec, {}, {}) is None
    assert render_fix(spec, {}, {"framework": "deepspeed"}) is None
    assert render_fix(spec, {}, {"framework": "hf"})["patch"] == "--save_total_limit 2"


def test_a_plain_pytorch_disk_full_gets_no_hf_flags() -> None:
    from tests.conftest import run_text

    report = run_text(
        """\
        step 1 loss 2.0
        Traceback (most recent call last):
          File "train.py", line 40, in <module>
            torch.save(state, "ckpt/last.pt")
        RuntimeError: [enforce fail at inline_container.cc:595] . unexpected pos 1234 vs 1200
        """
    )
    (disk,) = [d for d in report.diagnoses if d.category == "disk_full"]
    assert disk.fixes
    assert not any("--save" in (f.get("patch") or "") for f in disk.fixes)


def test_a_deepspeed_log_is_rendered_for_deepspeed() -> None:
    from pathlib import Path

    from crashcart import analyze

    root = Path(__file__).resolve().parents[2]
    report = analyze(root / "corpus" / "posted_disk_full_chatglm_deepspeed_optim_states")
    assert report.config.get("framework") == "deepspeed"


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


def test_every_rule_code_is_python() -> None:
    """``code:`` is a line of Python (shell goes in ``command:``, words in the title)."""
    import ast
    import re

    from crashcart.analyzer import default_rulebase

    for rule in default_rulebase().rules:
        for fix in rule.fixes:
            if "code" in fix:
                text = re.sub(r"\{[^{}]+\}", "x", fix["code"].replace("[[", "").replace("]]", ""))
                ast.parse(text)  # raises SyntaxError naming the line


@pytest.mark.parametrize(
    ("framework", "patch"),
    [
        ("hf", "--fp16 --bf16 False"),
        ("deepspeed", '"fp16": {"enabled": true}, "bf16": {"enabled": false}'),
        ("lightning", 'Trainer(precision="16-mixed")'),
    ],
)
def test_fp16_is_spelled_as_fp16_not_as_bf16(framework: str, patch: str) -> None:
    # A GPU without bf16 (cuda_setup.precision_unsupported) is told to use fp16.
    fix = render_fix({"title": "t", "set": {"precision": "fp16"}}, {}, {"framework": framework})
    assert fix["patch"] == patch
