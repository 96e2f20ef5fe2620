"""``crashcart tui``: a live terminal UI over a directory of training logs (Textual)."""

from __future__ import annotations

from .app import CrashcartApp, run_tui

__all__ = ["CrashcartApp", "run_tui"]
