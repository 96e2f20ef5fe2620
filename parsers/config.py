"""Which framework wrote the log, and the configuration it echoed.

Trainers print their settings at start-up; fixes quote them ("batch 16 → 8"). Examples::

    ***** Running training *****                                          # HF Trainer
      Instantaneous batch size per device = 16
      Gradient Accumulation steps = 1
    [INFO] [config.py:1007:print]   train_micro_batch_size_per_gpu  4        # DeepSpeed
    GPU available: True (cuda), used: True                                 # Lightning
    batch size per device / バッチサイズ: 2                                    # kohya-ss
    PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True                       # environment echo

    >>> parse_config("  Instantaneous batch size per device = 16")
    [('framework', 'hf'), ('micro_batch', 16)]
"""

from __future__ import annotations

import re

from .lazy import lazy_compile

TRIGGERS = {
    "config_framework": (
        r"\*\*\*\*\* Running training \*\*\*\*\*|TrainingArguments\(|DeepSpeed info: version"
        r"|\[deepspeed\]|deepspeed\.|GPU available: (?:True|False)|LOCAL_RANK: \d+ - CUDA_VISIBLE"
        r"|pytorch_lightning|lightning\.pytorch|Distributed environment: |Mixed precision type: "
        r"|running training / |train_network\.py|sdxl_train|num train images \* repeats"
        r"|using world size: \d+|megatron|log_dist\]|_checkpoint_engine\.py:|ds_accelerator"
    ),
    "config_value": (
        r"(?i)batch[_ ]size|gradient[_ ]accumulation|accumulate_grad_batches|mixed[_ ]precision"
        r"|\bfp16\b|\bbf16\b|fp16_enabled|bf16_enabled|learning[_ ]rate\s*[=:]|max_grad_norm"
        r"|gradient_clipping|gradient_checkpointing|PYTORCH_CUDA_ALLOC_CONF|world[_ ]size"
        r"|Using \d+bit|precision="
    ),
}

_FRAMEWORK_MARKERS = [
    (
        "kohya",
        lazy_compile(r"running training / |train_network\.py|sdxl_train|num train images \*"),
    ),
    (
        "deepspeed",
        lazy_compile(
            r"DeepSpeed info: version|\[deepspeed\]|deepspeed\.|DeepSpeedEngine"
            # its logger's own records: [logging.py:96:log_dist], checkpoint engine, accelerator
            r"|log_dist\]|_checkpoint_engine\.py:|ds_accelerator"
        ),
    ),
    ("megatron", lazy_compile(r"(?i)megatron|using world size: \d+")),
    ("lightning", lazy_compile(r"GPU available: |LOCAL_RANK: \d+ - CUDA_VISIBLE|lightning")),
    ("accelerate", lazy_compile(r"Distributed environment: |Mixed precision type: ")),
    ("hf", lazy_compile(r"\*\*\*\*\* Running training|TrainingArguments\(|Instantaneous batch")),
]

# At most 9 digits: a longer number is no batch size (and int() refuses over 4,300 digits).
_INT = r"(?P<value>\d{1,9})(?!\d)"
_FLOAT = r"(?P<value>[-+]?\d*\.?\d+(?:[eE][-+]?\d+)?)"
_BOOL = r"(?P<value>True|False|true|false)"
_SEP = r"\s*(?:=|:|\.{2,}|\s)\s*"
_VALUES: list[tuple[str, re.Pattern[str], str | None]] = [
    ("micro_batch", lazy_compile(r"Instantaneous batch size per device = " + _INT), "hf"),
    ("micro_batch", lazy_compile(r"per_device_train_batch_size" + _SEP + _INT), None),
    (
        "micro_batch",
        lazy_compile(r"train_micro_batch_size_per_gpu['\"]?" + _SEP + _INT),
        "deepspeed",
    ),
    ("micro_batch", lazy_compile(r"batch size per device / \S+\s*:?\s*" + _INT), "kohya"),
    ("micro_batch", lazy_compile(r"\btrain_batch_size\s*=\s*" + _INT), None),
    ("micro_batch", lazy_compile(r"\bmicro_batch_size\b" + _SEP + _INT), "megatron"),
    ("micro_batch", lazy_compile(r"(?i)\bbatch[_ ]size\s*[=:]\s*" + _INT), None),
    ("grad_accum", lazy_compile(r"Gradient Accumulation steps = " + _INT), "hf"),
    ("grad_accum", lazy_compile(r"gradient[_ ]accumulation[_ ]steps['\"]?" + _SEP + _INT), None),
    ("grad_accum", lazy_compile(r"gradient accumulation steps / \S+\s*=?\s*" + _INT), "kohya"),
    ("grad_accum", lazy_compile(r"accumulate_grad_batches\s*[=:]\s*" + _INT), "lightning"),
    ("lr", lazy_compile(r"\blearning_rate\s*[=:]\s*" + _FLOAT), None),
    ("max_grad_norm", lazy_compile(r"\bmax_grad_norm\s*[=:]\s*" + _FLOAT), None),
    ("max_grad_norm", lazy_compile(r"\bgradient_clipping['\"]?" + _SEP + _FLOAT), "deepspeed"),
    ("gradient_checkpointing", lazy_compile(r"\bgradient_checkpointing\s*[=:]\s*" + _BOOL), None),
    ("fp16", lazy_compile(r"\bfp16(?:_enabled)?['\"]?" + _SEP + _BOOL), None),
    ("bf16", lazy_compile(r"\bbf16(?:_enabled)?['\"]?" + _SEP + _BOOL), None),
    ("precision", lazy_compile(r"Mixed precision type: (?P<value>\w+)"), "accelerate"),
    (
        "precision",
        lazy_compile(r"\bmixed_precision\s*[=:]\s*['\"]?(?P<value>fp16|bf16|no|fp8)"),
        None,
    ),
    (
        "precision",
        lazy_compile(r"Using (?P<value>16)bit (?:native )?Automatic Mixed Precision"),
        "lightning",
    ),
    (
        "precision",
        lazy_compile(r"\bprecision\s*=\s*['\"]?(?P<value>16-mixed|bf16-mixed|16|bf16|32)"),
        "lightning",
    ),
    # Not the advice the OOM message itself gives ("try setting PYTORCH_CUDA_ALLOC_CONF=..."):
    # that is PyTorch's suggestion, not the run's setting.
    (
        "alloc_conf",
        lazy_compile(
            r"(?<!setting )(?<!set )PYTORCH_CUDA_ALLOC_CONF\s*[=:]\s*['\"]?(?P<value>[\w:,.]+)"
        ),
        None,
    ),
    ("world_size", lazy_compile(r"(?i)\bworld[_ ]size\s*[=:]?\s*" + _INT), None),
]


def _convert(key: str, raw: str) -> int | float | str | bool:
    if key in ("micro_batch", "grad_accum", "world_size"):
        return int(raw)
    if key in ("lr", "max_grad_norm"):
        return float(raw)
    if key in ("gradient_checkpointing", "fp16", "bf16"):
        return raw.lower() == "true"
    if key == "precision":
        return "bf16" if "bf16" in raw else "fp16" if "16" in raw else raw
    return raw


def parse_config(text: str) -> list[tuple[str, int | float | str | bool]]:
    """Return ``(key, value)`` pairs a line reveals, ``framework`` first when it names one."""
    found: list[tuple[str, int | float | str | bool]] = []
    for framework, marker in _FRAMEWORK_MARKERS:
        if marker.search(text):
            found.append(("framework", framework))
            break
    seen: set[str] = set()
    for key, pattern, implies in _VALUES:
        if key in seen:
            continue
        match = pattern.search(text)
        if match:
            seen.add(key)
            if implies and not found:
                found.append(("framework", implies))
            found.append((key, _convert(key, match["value"])))
    return found
