"""What every probe shares: the result shape, the context accessors and the torch/CUDA gate.

A probe is a function ``probe(context) -> dict`` that runs inside the child process (see
:mod:`crashcart.probes.child`). It returns :func:`outcome`, or raises :class:`Unavailable` when
it cannot measure anything (no torch, no GPU, nothing readable); any other exception is turned
into ``unavailable`` by the child, so a probe never has to guard against its own bugs.
"""

from __future__ import annotations

import math
from typing import Any

#: The four verdicts a probe can give on the diagnosis it was asked to check.
STATUSES = ("confirmed", "refuted", "inconclusive", "unavailable")

GIB = float(1 << 30)


class Unavailable(Exception):
    """The probe could not measure what it needs; ``reason`` says why, for people."""

    def __init__(self, reason: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.details = details or {}


def outcome(status: str, summary: str, **details: Any) -> dict[str, Any]:
    """The dictionary a probe returns: a verdict, one sentence with numbers, and measurements."""
    if status not in STATUSES:
        raise ValueError(f"unknown probe status {status!r}")
    return {"status": status, "summary": summary, "details": details}


def gib(n_bytes: float) -> float:
    """Bytes as GiB rounded to 2 decimals, the unit the rules and summaries use."""
    return round(n_bytes / GIB, 2)


def jsonsafe(value: Any) -> Any:
    """``value`` with non-finite floats as strings, tuples as lists and unknown objects as text.

    Strict JSON has no NaN or Infinity, and the report that embeds probe details is strict.
    """
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, dict):
        return {str(k): jsonsafe(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [jsonsafe(v) for v in value]
    if value is None or isinstance(value, bool | int | str):
        return value
    return str(value)


# -- the context: what the diagnosis knows, taken from the log; every key is optional ----------


def rule_of(context: dict[str, Any]) -> str:
    """The rule id being checked (``cuda_oom.other_process``), or ``""``."""
    return str(context.get("rule") or "")


def category_of(context: dict[str, Any]) -> str:
    """The category being checked: ``category``, else the rule id's prefix, else ``""``."""
    category = context.get("category")
    if category:
        return str(category)
    return rule_of(context).split(".", 1)[0]


def number(context: dict[str, Any], key: str) -> float | None:
    """``context[key]`` as a float, or None when it is missing or not a number."""
    try:
        value = float(context[key])
    except (KeyError, TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def integer(context: dict[str, Any], key: str) -> int | None:
    """``context[key]`` as an int (``"3"`` and ``3.0`` accepted), or None."""
    value = number(context, key)
    return int(value) if value is not None and value == int(value) else None


def strings(context: dict[str, Any], key: str) -> list[str]:
    """``context[key]`` as a list of strings (a single string becomes a one-item list)."""
    value = context.get(key)
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    return [str(v) for v in value]


# -- the torch / CUDA gate --------------------------------------------------------------------


def require_torch() -> Any:
    """Import torch here, in the child, so the caller never pays for it or needs it."""
    try:
        import torch
    except ImportError as exc:
        raise Unavailable(f"torch is not installed ({exc})") from None
    return torch


def require_cuda(details: dict[str, Any] | None = None) -> Any:
    """torch, once it is known to see at least one CUDA device; else :class:`Unavailable`."""
    torch = require_torch()
    info = {"torch": torch.__version__, "torch_cuda": torch.version.cuda}
    info.update(details or {})
    if not torch.cuda.is_available():
        why = "no CUDA device: torch.cuda.is_available() is False"
        if torch.version.cuda is None:
            why += f" (torch {torch.__version__} is a CPU-only build)"
        raise Unavailable(why, info)
    return torch


def devices_to_check(torch: Any, context: dict[str, Any]) -> list[int]:
    """The ordinals to look at: the log's ``gpu`` when it exists here, else every device."""
    count = torch.cuda.device_count()
    gpu = integer(context, "gpu")
    return [gpu] if gpu is not None and 0 <= gpu < count else list(range(count))
