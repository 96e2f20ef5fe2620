"""Framework detection and echoed configuration."""

from __future__ import annotations

from crashcart.parsers.config import parse_config


def test_hf_trainer_banner() -> None:
    assert parse_config("  Instantaneous batch size per device = 16") == [
        ("framework", "hf"),
        ("micro_batch", 16),
    ]
    assert parse_config("  Gradient Accumulation steps = 4") == [
        ("framework", "hf"),
        ("grad_accum", 4),
    ]


def test_deepspeed_config_echo() -> None:
    found = dict(parse_config("[INFO] [config.py:1007:print]   train_micro_batch_size_per_gpu  4"))
    assert found["micro_batch"] == 4


def test_lightning_and_kohya() -> None:
    assert parse_config("GPU available: True (cuda), used: True")[0] == ("framework", "lightning")
    assert dict(parse_config("  batch size per device / バッチサイズ: 2")) == {
        "framework": "kohya",
        "micro_batch": 2,
    }


def test_environment_echo() -> None:
    assert (
        dict(parse_config("PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"))["alloc_conf"]
        == "expandable_segments:True"
    )


def test_training_arguments_values() -> None:
    found = dict(parse_config("gradient_checkpointing=True, learning_rate=2e-05, fp16=True,"))
    assert found["gradient_checkpointing"] is True
    assert found["lr"] == 2e-05
    assert found["fp16"] is True
