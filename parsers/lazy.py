"""pyparsing, imported when a grammar is first built rather than when crashcart starts.

Importing pyparsing takes longer than analysing a small log, and most lines never reach a
grammar: the prefilter and plain regexes settle them. The parsers write ``pp.Literal(...)``
as before; ``pp`` imports pyparsing on its first attribute access and then holds each name it
handed out as a plain attribute.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any


class _Pyparsing:
    """Stands for the pyparsing module until the module is needed."""

    def __getattr__(self, name: str) -> Any:
        import pyparsing  # thread-safe: the import system holds its lock while importing

        value = getattr(pyparsing, name)
        setattr(self, name, value)  # later look-ups skip __getattr__
        return value


if TYPE_CHECKING:
    import pyparsing as pp
else:
    pp = _Pyparsing()

__all__ = ["pp"]
