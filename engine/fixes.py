"""Fixes computed from the facts and rendered in the terms of the framework the log came from.

A rule's fix says *what* to change in framework-neutral settings; this module says *how*, with
the numbers from the log::

    set: {micro_batch: half, grad_accum: double}

renders for a Hugging Face Trainer log that echoed a batch of 16 and accumulation of 1 as::

    --per_device_train_batch_size 8 --gradient_accumulation_steps 2
    (per_device_train_batch_size 16 → 8, gradient_accumulation_steps 1 → 2: the effective batch stays 16)

Relative values are ``half``, ``double`` and ``tenth``; anything else is used as written (after
filling ``{placeholders}`` from the matched facts).
"""

from __future__ import annotations

import re
import string
from typing import Any

from . import placeholders

FRAMEWORKS = ("hf", "accelerate", "deepspeed", "lightning", "kohya", "megatron", "pytorch")

#: setting -> framework -> (name shown in the explanation, how to write it with value {v})
SETTINGS: dict[str, dict[str, tuple[str, str]]] = {
    "micro_batch": {
        "hf": ("per_device_train_batch_size", "--per_device_train_batch_size {v}"),
        "accelerate": ("batch_size", "DataLoader(dataset, batch_size={v})"),
        "deepspeed": ("train_micro_batch_size_per_gpu", '"train_micro_batch_size_per_gpu": {v}'),
        "lightning": ("batch_size", "DataLoader(dataset, batch_size={v})"),
        "kohya": ("train_batch_size", "train_batch_size = {v}"),
        "megatron": ("micro-batch-size", "--micro-batch-size {v}"),
        "pytorch": ("batch_size", "DataLoader(dataset, batch_size={v})"),
    },
    "eval_batch": {
        "hf": ("per_device_eval_batch_size", "--per_device_eval_batch_size {v}"),
        "lightning": ("batch_size", "val_loader = DataLoader(val_dataset, batch_size={v})"),
        "pytorch": ("batch_size", "eval_loader = DataLoader(eval_dataset, batch_size={v})"),
    },
    "grad_accum": {
        "hf": ("gradient_accumulation_steps", "--gradient_accumulation_steps {v}"),
        "accelerate": (
            "gradient_accumulation_steps",
            "Accelerator(gradient_accumulation_steps={v})",
        ),
        "deepspeed": ("gradient_accumulation_steps", '"gradient_accumulation_steps": {v}'),
        "lightning": ("accumulate_grad_batches", "Trainer(accumulate_grad_batches={v})"),
        "kohya": ("gradient_accumulation_steps", "gradient_accumulation_steps = {v}"),
        "megatron": (
            "global-batch-size",
            "--global-batch-size $((MICRO_BATCH_SIZE * {v} * DATA_PARALLEL_SIZE))",
        ),
        "pytorch": (
            "accumulation steps",
            "loss = loss / {v}; loss.backward()  # optimizer.step() every {v} micro-batches",
        ),
    },
    "gradient_checkpointing": {
        "hf": ("gradient_checkpointing", "--gradient_checkpointing"),
        "accelerate": ("gradient checkpointing", "model.gradient_checkpointing_enable()"),
        "deepspeed": (
            "activation_checkpointing",
            '"activation_checkpointing": {"partition_activations": true}',
        ),
        "lightning": (
            "gradient checkpointing",
            "model.gradient_checkpointing_enable()  # in configure_model",
        ),
        "kohya": ("gradient_checkpointing", "gradient_checkpointing = true"),
        "megatron": ("recompute-activations", "--recompute-activations"),
        "pytorch": (
            "checkpointing",
            "torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False)",
        ),
    },
    "precision": {
        "hf": ("bf16", "--bf16 --fp16 False"),
        "accelerate": ("mixed_precision", "accelerate launch --mixed_precision {v}"),
        "deepspeed": ("bf16", '"bf16": {"enabled": true}, "fp16": {"enabled": false}'),
        "lightning": ("precision", 'Trainer(precision="{v}-mixed")'),
        "kohya": ("mixed_precision", 'mixed_precision = "{v}"'),
        "megatron": ("bf16", "--bf16"),
        "pytorch": ("autocast dtype", "with torch.autocast('cuda', dtype=torch.bfloat16): ..."),
    },
    "lr": {
        "hf": ("learning_rate", "--learning_rate {v}"),
        "accelerate": ("lr", "torch.optim.AdamW(model.parameters(), lr={v})"),
        "deepspeed": ("lr", '"optimizer": {"params": {"lr": {v}}}'),
        "lightning": ("lr", "torch.optim.AdamW(self.parameters(), lr={v})  # configure_optimizers"),
        "kohya": ("learning_rate", "learning_rate = {v}"),
        "megatron": ("lr", "--lr {v}"),
        "pytorch": ("lr", "torch.optim.AdamW(model.parameters(), lr={v})"),
    },
    "max_grad_norm": {
        "hf": ("max_grad_norm", "--max_grad_norm {v}"),
        "accelerate": ("max_norm", "accelerator.clip_grad_norm_(model.parameters(), {v})"),
        "deepspeed": ("gradient_clipping", '"gradient_clipping": {v}'),
        "lightning": ("gradient_clip_val", "Trainer(gradient_clip_val={v})"),
        "kohya": ("max_grad_norm", "max_grad_norm = {v}"),
        "megatron": ("clip-grad", "--clip-grad {v}"),
        "pytorch": ("max_norm", "torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm={v})"),
    },
    "ddp_timeout": {
        "hf": ("ddp_timeout", "--ddp_timeout {v}"),
        "accelerate": (
            "timeout",
            "Accelerator(kwargs_handlers=[InitProcessGroupKwargs(timeout=timedelta(seconds={v}))])",
        ),
        "deepspeed": ("timeout", "deepspeed.init_distributed(timeout=timedelta(seconds={v}))"),
        "lightning": ("timeout", "Trainer(strategy=DDPStrategy(timeout=timedelta(seconds={v})))"),
        "pytorch": ("timeout", "dist.init_process_group('nccl', timeout=timedelta(seconds={v}))"),
    },
    "num_workers": {
        "hf": ("dataloader_num_workers", "--dataloader_num_workers {v}"),
        "kohya": ("max_data_loader_n_workers", "max_data_loader_n_workers = {v}"),
        "pytorch": ("num_workers", "DataLoader(dataset, num_workers={v})"),
    },
}
#: The same for fp16 (the table above spells bf16, which most precision fixes ask for): flags
#: and config keys are named after the format, not after a value.
FP16_PRECISION: dict[str, tuple[str, str]] = {
    "hf": ("fp16", "--fp16 --bf16 False"),
    "deepspeed": ("fp16", '"fp16": {"enabled": true}, "bf16": {"enabled": false}'),
    "megatron": ("fp16", "--fp16"),
    "lightning": ("precision", 'Trainer(precision="16-mixed")'),
    "pytorch": (
        "autocast dtype",
        "scaler = torch.amp.GradScaler(); with torch.autocast('cuda', dtype=torch.float16): ...",
    ),
}
# Where the framework has no entry for a setting, the plain-PyTorch form is the useful answer.
_FALLBACK = {"accelerate": "hf", "megatron": "pytorch"}


_OPTIONAL = re.compile(r"\[\[(.*?)\]\]", re.DOTALL)


def fill(template: str, fields: dict[str, Any]) -> str:
    """Fill ``{placeholders}`` from ``fields`` (numbers rounded for people).

    A part written ``[[like {this}]]`` appears only when every placeholder in it is known; a
    placeholder outside such a part that has no value shows as ``?``.
    """

    def known(name: str) -> bool:
        return placeholders.value(name, fields) is not None

    def optional(match: re.Match[str]) -> str:
        part = match.group(1)
        names = [n for _, n, _, _ in string.Formatter().parse(part) if n]
        return part if all(known(n) for n in names) else ""

    try:
        text = _OPTIONAL.sub(optional, template)
        # Each placeholder is looked up (or computed) by its whole text, so dotted names and
        # arithmetic such as {micro_batch * grad_accum} are never read by str.format itself.
        out = []
        for literal, name, spec, _ in string.Formatter().parse(text):
            out.append(literal)
            if name is not None:
                found = placeholders.value(name, fields)
                out.append("?" if found is None else format(_show(found), spec or ""))
        return "".join(out)
    except (ValueError, IndexError, KeyError, AttributeError, TypeError):
        return template


#: A value shown in a summary or fix is cut to this many characters: a field captured from a
#: 60 KB log line must not make 60 KB of every placeholder naming it (the loader bounds the
#: placeholders of a text, rules.MAX_PLACEHOLDERS, so a rendered text stays small).
MAX_SHOWN_CHARS = 200


def _show(value: Any) -> Any:
    if isinstance(value, float):
        return f"{value:.2f}" if abs(value) >= 0.01 or value == 0 else f"{value:.3g}"
    if isinstance(value, (int, bool)):
        return value
    text = str(value)
    return text if len(text) <= MAX_SHOWN_CHARS else text[:MAX_SHOWN_CHARS] + "…"


def _exact(value: Any) -> Any:
    """A setting's value as the log printed it (``0.116``, ``5e-05``): never rounded to a
    number the log did not show."""
    if isinstance(value, float):
        text = f"{value:.4g}"
        return text if any(c in text for c in ".en") else f"{text}.0"  # 1.0, not 1
    return value


def _relative(op: str, current: Any, setting: str) -> Any:
    if not isinstance(current, (int, float)) or isinstance(current, bool):
        return None
    if op == "half":
        return (
            max(1, int(current) // 2) if setting in ("micro_batch", "eval_batch") else current / 2
        )
    if op == "double":
        return int(current) * 2
    if op == "tenth":
        return float(f"{current / 10:.3g}")
    return None


def _setting_form(setting: str, framework: str, wanted: Any = None) -> tuple[str, str]:
    forms = SETTINGS[setting]
    if setting == "precision" and wanted == "fp16":
        forms = {**forms, **FP16_PRECISION}
    return (
        forms.get(framework) or forms.get(_FALLBACK.get(framework, "pytorch")) or forms["pytorch"]
    )


#: What to do to a value the log did not print, said in words (the title carries it: a number
#: the log never showed is never made up, and code shows only code).
_PHRASES = {
    "half": "halve the current value of {name}",
    "double": "double the current value of {name}",
    "tenth": "divide the current value of {name} by 10",
}


def render_fix(
    spec: dict[str, Any], fields: dict[str, Any], config: dict[str, Any]
) -> dict[str, Any] | None:
    """Render one rule fix for the run's framework and configuration (the values the log
    printed); None when the fix is for other frameworks than the log's."""
    framework = config.get("framework", "pytorch")
    if spec.get("frameworks") and framework not in spec["frameworks"]:
        return None
    fix: dict[str, Any] = {"title": fill(spec["title"], fields)}
    if "set" in spec:
        lines, changes, prose = [], [], []
        new_values: dict[str, Any] = {}
        for setting, wanted in spec["set"].items():
            name, form = _setting_form(setting, framework, wanted)
            current = config.get(setting)
            if wanted in _PHRASES:
                value = _relative(wanted, current, setting)
                if value is None:
                    prose.append(_PHRASES[wanted].format(name=name))
                    continue
                changes.append(f"{name} {_exact(current)} → {_exact(value)}")
            else:
                value = fill(str(wanted), fields) if isinstance(wanted, str) else wanted
                if isinstance(value, bool):
                    pass  # the rendered form says it all (--gradient_checkpointing)
                elif current is not None and current != value:
                    changes.append(f"{name} {_exact(current)} → {_exact(value)}")
                else:
                    changes.append(f"{name} = {_exact(value)}")
            new_values[setting] = value
            lines.append(form.replace("{v}", str(_exact(value))))
        if prose:
            them = "them" if len(prose) > 1 else "it"
            fix["title"] += f" ({'; '.join(prose)}: the log does not print {them})"
        if lines:
            joined = " ".join(lines) if framework in ("hf", "megatron") else "\n".join(lines)
            fix["patch"] = joined
        note = ", ".join(changes)
        batch, accum = new_values.get("micro_batch"), new_values.get("grad_accum")
        if isinstance(batch, int) and isinstance(accum, int):
            note += f": the effective batch per device stays {batch * accum}"
        if note:
            fix["change"] = note
        fix["framework"] = framework
    if "env" in spec:
        fix["env"] = {k: fill(str(v), fields) for k, v in spec["env"].items()}
    for key in ("command", "code", "patch", "note"):
        if key in spec:
            fix[key] = fill(spec[key], fields)
    return fix
