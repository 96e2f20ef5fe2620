"""crashcart: read a crashed training log, name the root cause, show the evidence, give the fix."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from .analyzer import Analyzer, Report, RuleBase, analyze
    from .engine.rules import RuleLoadError
    from .parsers.sources import InputError

__all__ = [
    "Analyzer",
    "InputError",
    "Report",
    "RuleBase",
    "RuleLoadError",
    "__version__",
    "analyze",
]

#: The public names and the module each comes from: imported on first use (PEP 562), so that
#: ``crashcart --version``, the probes' child processes and ``import crashcart.cli`` do not
#: import the whole pipeline before they need it.
_LAZY = {
    "Analyzer": "analyzer",
    "Report": "analyzer",
    "RuleBase": "analyzer",
    "analyze": "analyzer",
    "RuleLoadError": "engine.rules",
    "InputError": "parsers.sources",
}


def __getattr__(name: str) -> Any:
    """The public name ``name``, imported from its module on first use."""
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    globals()[name] = value  # the next access is a plain module attribute
    return value


def __dir__() -> list[str]:
    """The module's names, the lazy public ones included."""
    return sorted({*globals(), *__all__})
