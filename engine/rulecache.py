"""The validated rule base, cached on disk: rule files are parsed and checked once, not per run.

Parsing and validating the shipped YAML rules takes longer than analysing a small log (every
regex is compiled twice to check it, every node of every document gets a position), so
:func:`load_rules_cached` keeps the result of :func:`~.rules.load_rules` in the cache of
:mod:`crashcart.diskcache`, keyed by everything the result depends on:

- the exact text and path of every rule file read, in order, and the disabled rule ids;
- crashcart's version and the Python running it (a pickle is read by the classes that wrote
  it);
- the size and modification time of the engine's own modules and the pattern checker, so that
  in a checkout an edit to the loader or to the fact vocabulary is never served an old result.

A rule file that cannot be read, or that holds an error, is never cached: the loader runs and
reports it with its line and column as before.
"""

from __future__ import annotations

import os
import pickle
import sys
from collections.abc import Sequence
from pathlib import Path

from .. import __version__
from ..diskcache import digest, read, write
from ..parsers import prefilter
from .rules import Rule, load_rules, rule_files, shipped_rules_dir
from .rulesource import SourceError, read_source

KIND = "rules"


def _code_fingerprint() -> list[str]:
    """Name, size and mtime of each module that decides what a rule file loads into."""
    parts = []
    with os.scandir(Path(__file__).parent) as entries:
        for entry in sorted(entries, key=lambda entry: entry.name):
            if entry.name.endswith(".py"):
                info = entry.stat()
                parts.append(f"{entry.name}:{info.st_size}:{info.st_mtime_ns}")
    info = os.stat(prefilter.__file__)
    parts.append(f"prefilter.py:{info.st_size}:{info.st_mtime_ns}")
    return parts


def rules_key(dirs: Sequence[Path], disable: Sequence[str] = ()) -> str | None:
    """The cache key of loading the shipped rules plus ``dirs`` without ``disable``; None when
    a rule file cannot be read (then only the loader can say what is wrong)."""
    parts = [
        __version__,
        sys.version,
        sys.implementation.cache_tag or "",
        *_code_fingerprint(),
        "\0disable",
        *sorted(disable),
    ]
    for directory in [shipped_rules_dir(), *dirs]:
        parts += ["\0dir", str(directory)]
        for path in rule_files(directory):
            try:
                source = read_source(path)
            except SourceError:
                return None
            parts += [str(path), source.text]
    return digest(*parts)


def _unpickle(payload: bytes) -> list[Rule] | None:
    try:
        rules = pickle.loads(payload)
    except Exception:  # a corrupt or foreign entry: any unpickling error means "build again"
        return None
    if not isinstance(rules, list) or not all(isinstance(rule, Rule) for rule in rules):
        return None
    return rules


def load_rules_cached(dirs: Sequence[Path] = (), disable: Sequence[str] = ()) -> list[Rule]:
    """What ``load_rules(list(dirs), tuple(disable))`` returns, from the cache when the rule
    files, crashcart and Python are unchanged since it was stored. Raises
    :class:`~.rules.RuleLoadError` as :func:`~.rules.load_rules` does."""
    key = rules_key(dirs, disable)
    if key is not None:
        payload = read(KIND, key)
        rules = _unpickle(payload) if payload is not None else None
        if rules is not None:
            return rules
    rules = load_rules(list(dirs), tuple(disable))
    # Stored only if no rule file changed while it was loading: the entry must hold what its
    # key's texts load into.
    if key is not None and rules_key(dirs, disable) == key:
        write(KIND, key, pickle.dumps(rules, protocol=pickle.HIGHEST_PROTOCOL))
    return rules
