"""crashcart: read a crashed training log, name the root cause, show the evidence, give the fix."""

from __future__ import annotations

__version__ = "0.1.0"

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
