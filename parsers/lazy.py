"""pyparsing and the parsers' regexes, made when first used rather than when crashcart starts.

Importing pyparsing takes longer than analysing a small log, and most lines never reach a
grammar: the prefilter and plain regexes settle them. The parsers write ``pp.Literal(...)``
as before; ``pp`` imports pyparsing on its first attribute access and then holds each name it
handed out as a plain attribute.

The same holds for the parsers' module-level regexes: compiling the ~150 of them took about
40 ms of every start, most of them for lines a small log never has (a C++ abort, a config
echo, an IPython traceback). ``lazy_compile`` returns a stand-in that compiles on first use.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, cast


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


class _LazyPattern:
    """Stands for ``re.compile(pattern, flags)`` until one of its attributes is first read.

    Then it compiles the pattern and keeps that attribute (a bound method such as ``search``)
    in its own ``__dict__``, so later look-ups find it there without ``__getattr__``: as fast
    as on the compiled pattern itself. Two threads racing to compile both get a correct
    pattern (``re`` caches it)."""

    def __init__(self, pattern: str | bytes, flags: int = 0) -> None:
        self.pattern = pattern
        self._flags = flags

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # copy, pickle and friends probe dunders: not the pattern's
            raise AttributeError(name)
        value = getattr(re.compile(self.pattern, self._flags), name)
        setattr(self, name, value)
        return value

    def __repr__(self) -> str:
        return f"lazy_compile({self.pattern!r})"


def lazy_compile(pattern: str | bytes, flags: int = 0) -> re.Pattern[Any]:
    """A pattern that compiles the first time it is used; typed as the ``re.Pattern`` it
    stands for (``search``, ``match``, ``finditer``, ``sub``, ``groupindex``... all work;
    pass ``.pattern``, not the object, to functions of ``re`` that take a pattern)."""
    return cast("re.Pattern[Any]", _LazyPattern(pattern, flags))


__all__ = ["lazy_compile", "pp"]
