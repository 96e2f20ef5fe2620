"""The stand-ins of parsers/lazy.py: a regex compiled on first use, pyparsing imported on first use."""

from __future__ import annotations

import copy
import re
import subprocess
import sys
import textwrap

import pytest

from crashcart.parsers.lazy import lazy_compile


def test_a_lazy_pattern_matches_as_the_compiled_one() -> None:
    lazy = lazy_compile(r"(?i)loss[:=]\s*(?P<value>\S+)")
    plain = re.compile(r"(?i)loss[:=]\s*(?P<value>\S+)")
    text = "step 3 LOSS= nan, loss:1.5"
    assert lazy.search(text)["value"] == plain.search(text)["value"]
    assert [m.span() for m in lazy.finditer(text)] == [m.span() for m in plain.finditer(text)]
    assert lazy.sub("x", text) == plain.sub("x", text)
    assert lazy.groupindex == plain.groupindex
    assert lazy.flags == plain.flags
    assert lazy.pattern == plain.pattern


def test_flags_and_bytes_patterns_are_kept() -> None:
    assert lazy_compile(rb"^b", re.MULTILINE).findall(b"a\nb\nb") == [b"b", b"b"]


def test_it_compiles_once_and_then_answers_from_its_own_attributes() -> None:
    lazy = lazy_compile(r"a+")
    assert "search" not in vars(lazy)
    lazy.search("aa")
    assert vars(lazy)["search"].__self__ is re.compile(r"a+")


def test_a_copy_or_a_repr_does_not_compile_or_break() -> None:
    lazy = lazy_compile(r"b+")
    assert copy.copy(lazy).search("abb").group() == "bb"
    assert "b+" in repr(lazy)


def test_a_bad_pattern_fails_where_it_is_used() -> None:
    lazy = lazy_compile(r"(unclosed")
    with pytest.raises(re.error):
        lazy.search("x")


def test_starting_the_analyzer_compiles_few_regexes_and_imports_no_pyparsing() -> None:
    # Importing the pipeline must not compile the parsers' patterns (each start paid ~40 ms for
    # them) nor import pyparsing; a line that needs them compiles them then.
    probe = textwrap.dedent(
        """
        import re, sys
        compiled = []
        plain = re._compile
        re._compile = lambda pattern, flags: compiled.append(pattern) or plain(pattern, flags)
        import crashcart.parsers.extract
        print(len(compiled), "pyparsing" in sys.modules)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout.split()
    compiled, pyparsing_loaded = int(out[0]), out[1] == "True"
    assert not pyparsing_loaded
    assert compiled < 40, f"{compiled} regexes compiled at import"
