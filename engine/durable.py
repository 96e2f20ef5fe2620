"""The thin adapter between our rule language and the durable-rules engine.

:func:`compile_rules` turns validated :class:`~.rules.Rule` objects into one durable-rules
ruleset (its JSON form); :class:`RuleSession` owns a durable host, asserts facts into a session
per run and collects which rules fired on which facts. Nothing outside this module imports
durable-rules, so the engine stays replaceable.

durable-rules facts this adapter respects: a ruleset cannot be reloaded (one host per rule
load), an event no rule matches raises ``MessageNotHandledException``, facts stay until
retracted, the stock host dispatches actions on its own timer threads (we turn those off:
see :class:`_SynchronousHost`), and its clock calls ``datetime.utcfromtimestamp`` (replaced
here: see :func:`_unix_now`).
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import itertools
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import re2

try:
    import durable_rules_engine
except ImportError as error:
    if "PyEval_CallObject" not in str(error):
        raise
    # durable-rules 2.0.28 built as released for Python 3.13 by a GCC older than 14: it built,
    # and fails here. Say how to rebuild it instead of leaving the symbol to be looked up.
    raise ImportError(
        f"{error}\ndurable-rules was built without its Python 3.13 fix; rebuild it with "
        '`python tools/durable_wheel.py --install` in a crashcart checkout, or `CPPFLAGS="-O2 '
        '-DNDEBUG -DPyEval_CallObject=PyObject_CallObject" pip install --no-cache-dir '
        "--force-reinstall --no-deps durable-rules==2.0.28` (README: Set-up)"
    ) from error
from durable import engine as durable_engine

from .rules import REGEX_OPERATORS, Condition, Rule

_RULESET_NAME = "crashcart"
_hosts = itertools.count()
RULES_PER_SET = 100
_EPOCH = datetime.datetime(1970, 1, 1)
#: Matching lines one ``line`` condition takes per run (the extractor sends no more than this).
MAX_LINES_PER_CONDITION = 50
#: The combinations of lines a rule's ``line`` conditions may form in one run. Unrelated line
#: conditions join as a cross product (3 conditions of 50 lines each: 125,000 firings, 10 s;
#: 4 conditions: hours), so a rule with k line conditions takes floor(k-th root) lines each.
MAX_LINE_COMBINATIONS = 2500


def line_cap(line_conditions: int) -> int:
    """The matching lines each ``line`` condition of a rule with ``line_conditions`` of them
    (in one branch) takes per run: their product stays within :data:`MAX_LINE_COMBINATIONS`."""
    if line_conditions <= 1:
        return MAX_LINES_PER_CONDITION
    cap = int(MAX_LINE_COMBINATIONS ** (1 / line_conditions))
    while (cap + 1) ** line_conditions <= MAX_LINE_COMBINATIONS:  # the float root may be short
        cap += 1
    return max(1, min(MAX_LINES_PER_CONDITION, cap))


def _unix_now() -> float:
    """durable-rules' clock, the value it computes itself (local time as seconds since the
    naive epoch), without ``datetime.utcfromtimestamp(0)``: that call is deprecated since
    Python 3.12 (a DeprecationWarning on every rule firing, an error under
    ``-W error::DeprecationWarning``) and due for removal."""
    return (datetime.datetime.now() - _EPOCH).total_seconds()


# Contained here, where the engine is adapted: the deprecated call is never made, rather than its
# warning filtered (pytest and -W put their own filters in front of any filter of ours).
durable_engine._unix_now = _unix_now


class _SynchronousHost(durable_engine.Host):
    """A durable-rules host without its background dispatch threads.

    The stock host starts timer threads that pick up pending actions and run them on their own
    thread, racing the assert that created them: a rule could then fire after ``assert_fact``
    returned, and its firing be missed. Our rules use no timers, so every action runs inside
    the assert, on the caller's thread.
    """

    def _run(self) -> None:
        """No timer thread: every action runs inside its assert (see the class docstring)."""


#: One encoder for every fact: ``json.dumps`` with options builds a new encoder on each call,
#: which cost more than the rules engine itself (benchmarks/README.md).
_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def to_json(message: dict[str, Any]) -> str:
    """A flat fact as JSON the engine can read: its parser rejects exponents (``5e-05``), so
    floats are written in positional notation (``0.00005``)."""
    if not any(isinstance(value, float) for value in message.values()):
        return _encode(message)
    parts = []
    for key, value in message.items():
        text = format(Decimal(repr(value)), "f") if isinstance(value, float) else _encode(value)
        parts.append(f"{_encode(key)}:{text}")
    return "{" + ",".join(parts) + "}"


def line_pattern_id(rule: Rule, condition: Condition) -> str:
    """The prefilter/pattern id of a ``line`` condition's regex."""
    return f"rule:{rule.id}:{condition.name}"


def match_flag(rule: Rule, condition: Condition, field: str, op: str = "matches") -> str:
    """The field a fact carries, set to true, when ``field`` matches the ``matches`` (or
    ``not_matches``) pattern of ``condition`` (the engine's own regex dialect is not RE2, so the
    match runs in Python)."""
    key = field if op == "matches" else f"{field}\0{op}"
    digest = hashlib.sha1(f"{rule.id}\0{condition.name}\0{key}".encode()).hexdigest()[:12]
    return f"match_{digest}"


def _test(field: str, test: Any, flags: dict[str, str]) -> list[dict[str, Any]]:
    if not isinstance(test, dict):
        return [{field: test}]
    tests: list[dict[str, Any]] = []
    for op, value in test.items():
        if op == "matches":
            tests.append({flags[op]: True})
        elif op == "not_matches":
            # The flag is set only on a match: a fact without it does not match. A missing
            # field does not match either, so it passes.
            tests.append({"$nex": {flags[op]: 1}})
        elif op == "eq":
            tests.append({field: value})
        elif op == "in":
            tests.append({"$or": [{field: v} for v in value]})
        elif op == "not_in":
            tests.extend({"$neq": {field: v}} for v in value)
        elif op == "exists":
            tests.append({"$ex" if value else "$nex": {field: 1}})
        elif op == "ne":
            tests.append({"$neq": {field: value}})  # durable-rules' spelling
        else:
            tests.append({f"${op}": {field: value}})
    return tests


def _condition(rule: Rule, condition: Condition, first: str | None) -> dict[str, Any]:
    tests: list[dict[str, Any]] = [{"kind": condition.fact}]
    if condition.fact == "line":
        tests.append({"pattern": line_pattern_id(rule, condition)})
    for field, test in condition.where.items():
        regex_ops = [op for op in REGEX_OPERATORS if isinstance(test, dict) and op in test]
        flags = {op: match_flag(rule, condition, field, op) for op in regex_ops}
        tests.extend(_test(field, test, flags))
    if first and first != condition.name:
        for field in condition.same:
            tests.append({field: {first: field}})
    if condition.after:
        tests.append({"$gt": {"seq": {condition.after: "seq"}}})
    return {"$and": tests} if len(tests) > 1 else tests[0]


#: The condition name under which a veto rule matches the fact that a ``none`` forbids.
VETO = "vetoed_by"


def compile_rule(
    rule: Rule, action: Callable[[Any], None], veto: Callable[[Any], None] | None = None
) -> dict[str, dict[str, Any]]:
    """Compile one rule into durable-rules rules (an ``any`` becomes one rule per branch).

    The engine tests a ``none`` condition only when the positive facts arrive; a forbidden fact
    that comes later must still undo the match ("no such fact in the run"). So each ``none``
    condition also compiles to a veto rule (the positives and that fact, in any order), whose
    ``veto`` action withdraws the match.
    """
    branches = [[*rule.all, alternative] for alternative in rule.any] or [list(rule.all)]
    compiled = {}
    for index, positives in enumerate(branches):
        first = positives[0].name
        # durable-rules hands a counted rule's matches over unwrapped only under the name "m".
        names = ["m"] if positives[0].count > 1 else [c.name for c in positives]
        items = [{n: _condition(rule, c, first)} for n, c in zip(names, positives, strict=True)]
        items += [{f"{c.name}$not": _condition(rule, c, first)} for c in rule.none]
        compiled[f"{rule.id}#{index}"] = {"all": items, "run": action}
        if positives[0].count > 1:  # "at least N such facts" (the loader allows it alone)
            compiled[f"{rule.id}#{index}"]["count"] = positives[0].count
        for number, forbidden in enumerate(rule.none if veto else []):
            joined = [*items[: len(positives)], {VETO: _condition(rule, forbidden, first)}]
            compiled[f"{rule.id}#{index}!{number}"] = {"all": joined, "run": veto}
    return compiled


class EngineError(Exception):
    """The rules engine refused a fact."""


@dataclass
class Firing:
    """One match of a rule: the rule and the ids (``seq``) of the facts it matched."""

    rule: Rule
    fact_ids: list[int]
    #: A fact the rule's ``none`` forbids came after this match: withdraw it.
    veto: bool = False


class RuleSession:
    """A durable-rules host with our rules loaded; runs are separate sessions in it."""

    def __init__(self, rules: list[Rule]) -> None:
        self.rules = {rule.id: rule for rule in rules}
        self._lock = threading.RLock()
        self._firings: dict[str, list[Firing]] = {}
        self._positive_names = {rule.id: [c.name for c in [*rule.all, *rule.any]] for rule in rules}
        #: pattern id -> matching lines its condition takes per run (see :func:`line_cap`).
        self.line_caps: dict[str, int] = {}
        for rule in rules:
            joined = sum(c.fact == "line" for c in rule.all) + any(
                c.fact == "line" for c in rule.any
            )
            for condition in rule.conditions:
                if condition.fact == "line":
                    self.line_caps[line_pattern_id(rule, condition)] = line_cap(joined)
        # durable-rules builds one ruleset in time that grows much faster than its rule count
        # (200 rules: 0.02 s; 900: minutes), so rules are spread over rulesets of RULES_PER_SET.
        # A line fact only concerns the rule whose pattern matched; other facts go to the sets
        # with a rule on their kind.
        #: kind -> (flag, field, pattern) of every ``matches`` test, run as facts arrive.
        self._match_tests: dict[str, list[tuple[str, str, str]]] = {}
        for rule in rules:
            for condition in rule.conditions:
                for field, test in condition.where.items():
                    if not isinstance(test, dict):
                        continue
                    for op in REGEX_OPERATORS:
                        if op in test:
                            self._match_tests.setdefault(condition.fact, []).append(
                                (match_flag(rule, condition, field, op), field, test[op])
                            )
        #: The same, compiled, per kind on the first fact of that kind: compiling them all up
        #: front was a third of the start-up of a small log, and most runs meet few kinds.
        self._matchers: dict[str, list[tuple[str, str, Any]]] = {}
        self._host = _SynchronousHost()
        self._sets: list[str] = []
        self._set_of_rule: dict[str, str] = {}
        #: fact kind -> the rulesets with a rule that has a condition on it (only those can use
        #: such a fact: with 100x the shipped rules, sending every fact to every set cost more
        #: than the rest of the run).
        self._sets_of_kind: dict[str, list[str]] = {}
        #: Rulesets not built yet, and their rules: a set is compiled and handed to the engine
        #: before its first fact (a healthy log, which asserts none, builds none: that was a
        #: tenth of a small log's start-up).
        self._unbuilt: dict[str, list[Rule]] = {}
        host = next(_hosts)
        for start in range(0, len(rules), RULES_PER_SET):
            name = f"{_RULESET_NAME}{host}_{start // RULES_PER_SET}"
            kinds: set[str] = set()
            for rule in rules[start : start + RULES_PER_SET]:
                self._set_of_rule[rule.id] = name
                kinds.update(condition.fact for condition in rule.conditions)
            for kind in sorted(kinds):
                self._sets_of_kind.setdefault(kind, []).append(name)
            self._unbuilt[name] = rules[start : start + RULES_PER_SET]
            self._sets.append(name)
        self._empty = not self._sets
        self._runs = itertools.count(1)
        self._free_sids: list[str] = []

    def build(self) -> None:
        """Build every ruleset now rather than before its first fact (to time the engine, or to
        pay its cost before a stream starts)."""
        with self._lock:
            for name in list(self._unbuilt):
                self._build(name)

    @property
    def built_sets(self) -> list[str]:
        """The rulesets handed to the engine so far."""
        return [name for name in self._sets if name not in self._unbuilt]

    def _build(self, name: str) -> None:
        """Hand ruleset ``name`` to the engine if it is not built yet (lock held)."""
        rules = self._unbuilt.pop(name, None)
        if rules is None:
            return
        definition: dict[str, Any] = {}
        for rule in rules:
            definition.update(compile_rule(rule, self._action(rule), self._action(rule, veto=True)))
        self._host.register_rulesets({name: definition})

    def open_run(self) -> str:
        """A session id for a new run. The engine never gives back the memory of a session id
        (about 2 MB each; its delete_state aborts the process), so the ids of closed runs, whose
        facts were all retracted, are used again: memory stays flat over any number of runs."""
        with self._lock:
            return self._free_sids.pop() if self._free_sids else f"run{next(self._runs)}"

    def close_run(self, sid: str) -> None:
        """The run of ``sid`` retracted its facts: its id may serve another run."""
        with self._lock:
            self._firings.pop(sid, None)
            if sid not in self._free_sids:
                self._free_sids.append(sid)

    def _action(self, rule: Rule, veto: bool = False) -> Callable[[Any], None]:
        def fired(closure: Any) -> None:
            ids = []
            batch = closure.__dict__.get("m")  # a counted rule fires with a list of matches
            if isinstance(batch, list):
                ids = sorted(int(matched["id"]) for matched in batch)
            for name in [] if ids else self._positive_names[rule.id]:
                matched = getattr(closure, name, None)
                if matched is not None:
                    ids.append(int(matched["id"]))
            with self._lock:
                self._firings.setdefault(str(closure.s.sid), []).append(Firing(rule, ids, veto))

        return fired

    def assert_fact(self, message: dict[str, Any]) -> list[Firing]:
        """Assert one fact (it must carry ``sid`` and a unique ``id``); return new firings.

        Raises :class:`EngineError` if the engine rejects the fact.
        """
        if self._empty:
            return []
        message = self._flagged(message)
        sid = str(message["sid"])
        text = to_json(message)  # once, for every ruleset it goes to
        with self._lock:
            for name in self._sets_for(message):
                # A fact no rule of a set cares about raises MessageNotHandledException: normal.
                self._build(name)
                with contextlib.suppress(durable_engine.MessageNotHandledException):
                    self._call(name, durable_rules_engine.assert_fact, message, text)
            return self._firings.pop(sid, [])

    def _flagged(self, message: dict[str, Any]) -> dict[str, Any]:
        """``message`` with a true flag for each ``matches`` test its fields pass."""
        kind = str(message.get("kind"))
        matchers = self._matchers.get(kind)
        if matchers is None:
            # Two threads may both compile a kind's patterns: the same list either way.
            matchers = self._matchers[kind] = [
                (flag, field, re2.compile(pattern))
                for flag, field, pattern in self._match_tests.get(kind, [])
            ]
        if not matchers:
            return message
        flags = {
            flag: True
            for flag, field, pattern in matchers
            if isinstance(message.get(field), str) and pattern.search(message[field])
        }
        return {**message, **flags} if flags else message

    def _sets_for(self, message: dict[str, Any]) -> list[str]:
        if message.get("kind") == "line":
            rule_id = str(message.get("pattern", "")).split(":")[1:2]
            owner = self._set_of_rule.get(rule_id[0]) if rule_id else None
            if owner is not None:
                return [owner]
        return self._sets_of_kind.get(str(message.get("kind")), [])

    def _call(
        self,
        name: str,
        operation: Callable[[Any, str], Any],
        message: dict[str, Any],
        text: str,
    ) -> None:
        """Run an engine operation on ``message`` (``text``: its :func:`to_json`) in ruleset
        ``name`` and then the actions it triggered, the way ``Host.assert_fact`` does, but with
        our own JSON encoding."""
        ruleset = self._host.get_ruleset(name)

        def apply(_: Any) -> Any:
            return ruleset._handle_result(operation(ruleset._handle, text), message)

        try:
            self._host._handle_function(ruleset, apply, None, None)
        except durable_rules_engine.error as error:
            raise EngineError(
                f"the rules engine rejected a {message.get('kind')} fact: {error}"
            ) from None

    def retract_fact(self, message: dict[str, Any]) -> None:
        """Retract a fact asserted earlier (the same message), freeing its memory in the engine.

        This is how a run is closed: durable-rules' ``delete_state`` aborts the process in the
        2.0.28 release ("free(): invalid pointer"), retracting each fact does not.
        """
        if self._empty:
            return
        message = self._flagged(message)
        text = to_json(message)
        with self._lock:
            for name in self._sets_for(message):
                if name in self._unbuilt:
                    continue  # never built, so it never took the fact
                # A set that never kept the fact (no rule of it wanted it) has nothing to retract.
                with contextlib.suppress(durable_engine.MessageNotHandledException, EngineError):
                    self._call(name, durable_rules_engine.retract_fact, message, text)
            self._firings.pop(str(message["sid"]), None)
