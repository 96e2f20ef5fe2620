"""Loading and validating YAML rules, with errors that point at file:line:column.

One YAML document is one rule; a file holds the rules of one category::

    id: cuda_oom.fragmentation
    category: cuda_oom
    title: CUDA OOM with most reserved memory unused (fragmentation)
    confidence: 0.85
    when:
      all:
        - fact: cuda_oom
          where: {reserved_unallocated_gib: {gt: 1.0}}
    summary: PyTorch held {reserved_unallocated_gib} GiB reserved but unallocated ...
    fixes:
      - title: Let the caching allocator expand segments
        env: {PYTORCH_CUDA_ALLOC_CONF: "expandable_segments:True"}

Errors are collected, not raised one at a time, and each renders like a compiler's::

    rules/cuda_oom.yaml:7:26: error: unknown field 'reservd_gib' of fact 'cuda_oom'
        where: {reservd_gib: {gt: 1.0}}
                ^
    hint: known fields: allocated_gib, backend, ...
"""

from __future__ import annotations

import functools
import math
import os
import re
import string
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..parsers.prefilter import PatternError, check_pattern
from . import placeholders
from .facts import COMMON_FIELDS, FACT_KINDS
from .fixes import FRAMEWORKS
from .rulesource import SourceError, SourceText, read_source
from .vocabulary import CATEGORIES

if TYPE_CHECKING:
    import yaml
    from yaml.constructor import SafeConstructor

RULE_KEYS = (
    "id",
    "category",
    "title",
    "confidence",
    "tier",
    "when",
    "summary",
    "fixes",
    "explains",
    "probe",
    "references",
    "examples",
)
REQUIRED_KEYS = ("id", "category", "title", "confidence", "when", "summary", "fixes")
CONDITION_KEYS = ("fact", "as", "where", "regex", "same", "after", "count")
OPERATORS = (
    "eq",
    "ne",
    "gt",
    "gte",
    "lt",
    "lte",
    "in",
    "not_in",
    "exists",
    "matches",
    "not_matches",
)
#: The operators whose operand is an RE2 pattern.
REGEX_OPERATORS = ("matches", "not_matches")
#: specific: one wording family, precise fixes; vocabulary: a category recognised from the words
#: of a message and its frames, ranked below every specific rule.
TIERS = ("specific", "vocabulary")
FIX_KEYS = ("title", "env", "set", "command", "code", "patch", "note", "frameworks")
SETTINGS = (
    "micro_batch",
    "grad_accum",
    "gradient_checkpointing",
    "precision",
    "lr",
    "max_grad_norm",
    "ddp_timeout",
    "num_workers",
    "eval_batch",
)
#: Known probe names (implemented in crashcart.probes).
PROBES = (
    "cuda_memory",
    "nccl",
    "cudnn",
    "cuda_setup",
    "device_placement",
    "precision",
    "gpu_health",
    "disk_space",
    "shared_memory",
    "host_memory",
)
_ID = re.compile(r"^[a-z][a-z0-9_]*\.[a-z0-9_]+(?:\.[a-z0-9_]+)*$")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

# Limits on what a rule file may hold: a rule file is untrusted input, and each limit keeps one
# way of crashing, hanging or exhausting memory out (docs/rules.md, "Limits"). The shipped
# rules use a fraction of each.
#: Nesting of mappings and lists (the shipped rules nest 7 deep; the YAML parsers recurse).
MAX_DEPTH = 32
#: The one message for a file nested past either limit, ours or libyaml's.
TOO_DEEP = f"nested deeper than {MAX_DEPTH} levels (the limit of a rule file)"
#: What libyaml (0.2.6 on) says when its own, deeper, nesting limit stops it first.
LIBYAML_TOO_DEEP = "exceeded maximum nesting depth"
#: Rules loaded at once, over every file and directory.
MAX_RULES = 5000
#: Conditions of one rule (every ``any`` branch becomes an engine rule).
MAX_CONDITIONS = 32
#: Fixes of one rule.
MAX_FIXES = 16
#: Values of one ``in`` test.
MAX_IN_VALUES = 256
#: Characters of one regex (Hyperscan refuses patterns past 16,000; the shipped longest is 853).
MAX_REGEX_CHARS = 4000
#: Characters of one summary or fix text, and placeholders in it: the rendered text is bounded.
MAX_TEMPLATE_CHARS = 4000
MAX_PLACEHOLDERS = 32
#: Digits of an integer (past 2**63 the rules engine's numbers overflow).
MAX_INT_DIGITS = 18
#: The largest ``count``.
MAX_COUNT = 10_000


@dataclass
class Mark:
    """A position in a rule file (1-based line and column); ``source`` is the file's text when
    it was read, so an error quotes its line without reading the file again."""

    path: str
    line: int
    column: int
    source: SourceText | None = field(default=None, repr=False, compare=False)


class _Dict(dict):
    """A mapping that remembers where each of its keys and values stood."""

    mark: Mark
    key_marks: dict[str, Mark]
    value_marks: dict[str, Mark]


class _List(list):
    mark: Mark
    item_marks: list[Mark]


@functools.cache
def _parser() -> tuple[tuple[type, ...], Any]:
    """The YAML parser classes and their initialiser.

    libyaml's parser where PyYAML has it (several times faster), PyYAML's own composer on top:
    libyaml's composer recurses in C and overflows the stack on a deeply nested file (a
    segfault), so nodes are composed in Python, with a depth limit. yaml is imported here, on
    the first rule file read: a start-up that finds its rules in the cache never needs it.
    """
    import yaml

    try:
        from yaml.cyaml import CParser
    except ImportError:  # pragma: no cover - PyYAML built without libyaml

        def init_python(loader: Any, stream: str) -> None:
            yaml.reader.Reader.__init__(loader, stream)
            yaml.scanner.Scanner.__init__(loader)
            yaml.parser.Parser.__init__(loader)

        return (yaml.reader.Reader, yaml.scanner.Scanner, yaml.parser.Parser), init_python

    def init_libyaml(loader: Any, stream: str) -> None:
        CParser.__init__(loader, stream)

    return (CParser,), init_libyaml


def _loader_for(path: str, source: SourceText | None = None) -> type[SafeConstructor]:
    import yaml
    from yaml.composer import Composer
    from yaml.constructor import ConstructorError, SafeConstructor
    from yaml.resolver import Resolver

    parser_classes, init_parser = _parser()

    def mark(node: yaml.Node) -> Mark:
        return Mark(path, node.start_mark.line + 1, node.start_mark.column + 1, source)

    class Loader(Composer, *parser_classes, SafeConstructor, Resolver):  # type: ignore[misc]
        def __init__(self, stream: str) -> None:
            init_parser(self, stream)
            Composer.__init__(self)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)
            self.depth = 0

        # Only collections nest: counting them here (not in compose_node) leaves scalars, most
        # of the nodes, without the extra call.
        def compose_sequence_node(self, anchor: str | None) -> yaml.Node:
            self.enter()
            node = Composer.compose_sequence_node(self, anchor)
            self.depth -= 1
            return node

        def compose_mapping_node(self, anchor: str | None) -> yaml.Node:
            self.enter()
            node = Composer.compose_mapping_node(self, anchor)
            self.depth -= 1
            return node

        def enter(self) -> None:
            """One more mapping or list open; past :data:`MAX_DEPTH`, a marked YAML error."""
            self.depth += 1
            if self.depth > MAX_DEPTH:
                raise yaml.composer.ComposerError(
                    None,
                    None,
                    TOO_DEEP,
                    self.peek_event().start_mark,
                )

        def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
            text = str(node.value).lstrip("+-").replace("_", "")
            value = None if len(text) > MAX_INT_DIGITS else super().construct_yaml_int(node)
            if value is None or abs(value) >= 10**MAX_INT_DIGITS:
                raise ConstructorError(
                    None,
                    None,
                    f"integer of more than {MAX_INT_DIGITS} digits (the limit of a rule file)",
                    node.start_mark,
                )
            return value

        def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> _Dict:
            result = _Dict()
            result.mark, result.key_marks, result.value_marks = mark(node), {}, {}
            for key_node, value_node in node.value:
                key = self.construct_object(key_node, deep=True)
                try:
                    hash(key)
                except TypeError:
                    raise ConstructorError(
                        None,
                        None,
                        "a key must be a plain value, not a list or mapping",
                        key_node.start_mark,
                    ) from None
                result[key] = self.construct_object(value_node, deep=True)
                result.key_marks[key] = mark(key_node)
                result.value_marks[key] = mark(value_node)
            return result

        def construct_sequence(self, node: yaml.SequenceNode, deep: bool = False) -> _List:
            result = _List(self.construct_object(child, deep=True) for child in node.value)
            result.mark, result.item_marks = mark(node), [mark(child) for child in node.value]
            return result

    Loader.add_constructor("tag:yaml.org,2002:int", Loader.construct_yaml_int)
    Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, Loader.construct_mapping)
    Loader.add_constructor(
        yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, Loader.construct_sequence
    )
    return Loader


@dataclass
class RuleError:
    """One problem in a rule file."""

    mark: Mark
    message: str
    hint: str = ""

    def render(self) -> str:
        """``file:line:col: error: message``, the offending line, a caret, and a hint."""
        text = f"{self.mark.path}:{self.mark.line}:{self.mark.column}: error: {self.message}"
        source = self.mark.source
        if source is None:  # a mark made without the file's text: read it (bounded) once
            try:
                source = read_source(Path(self.mark.path))
            except SourceError:
                source = None
        quoted = source.excerpt(self.mark.line, self.mark.column) if source else None
        if quoted is not None:
            line, column = quoted
            text += f"\n    {line}\n    {' ' * (column - 1)}^"
        if self.hint:
            text += f"\nhint: {self.hint}"
        return text

    def __str__(self) -> str:
        return f"{self.mark.path}:{self.mark.line}:{self.mark.column}: {self.message}"


class RuleLoadError(Exception):
    """Rule files that did not load; ``errors`` holds every problem found."""

    def __init__(self, errors: list[RuleError]) -> None:
        super().__init__(str(errors[0]) if errors else "invalid rules")
        self.errors = errors


@dataclass
class Condition:
    """One fact pattern of a rule's ``when``."""

    fact: str
    name: str
    where: dict[str, Any] = field(default_factory=dict)
    regex: str | None = None
    same: list[str] = field(default_factory=list)
    after: str | None = None
    count: int = 1


@dataclass
class Rule:
    """A validated rule."""

    id: str
    category: str
    title: str
    confidence: float
    all: list[Condition]
    any: list[Condition]
    none: list[Condition]
    summary: str
    fixes: list[dict[str, Any]]
    explains: list[str] = field(default_factory=list)
    probe: str | None = None
    references: list[str] = field(default_factory=list)
    examples: dict[str, list[Path]] = field(default_factory=dict)
    path: str = ""
    line: int = 0
    tier: str = "specific"
    #: The text of the rule's file, for quoting its lines in errors found later (lint).
    source: SourceText | None = field(default=None, repr=False, compare=False)

    @property
    def mark(self) -> Mark:
        """Where the rule's document starts."""
        return Mark(self.path, self.line, 1, self.source)

    @property
    def conditions(self) -> list[Condition]:
        """Every condition, in order."""
        return [*self.all, *self.any, *self.none]


class _Checker:
    """Validates one rule document, collecting errors; ``style`` adds the house-style checks.

    Every value comes from an untrusted file, so each is checked for its type before it is
    used (a list where a name belongs must be an error, not a TypeError), and every size that
    later work grows with is bounded (see the ``MAX_`` limits above).
    """

    def __init__(
        self, path: Path, doc: _Dict, errors: list[RuleError], style: bool = False
    ) -> None:
        self.path, self.doc, self.errors, self.style = path, doc, errors, style
        self.conditions_failed = False

    def error(self, where: Mark, message: str, hint: str = "") -> None:
        self.errors.append(RuleError(where, message, hint))

    def key_mark(self, mapping: Any, key: Any) -> Mark:
        return getattr(mapping, "key_marks", {}).get(key, getattr(mapping, "mark", self.doc.mark))

    def value_mark(self, mapping: Any, key: Any) -> Mark:
        return getattr(mapping, "value_marks", {}).get(key, self.key_mark(mapping, key))

    def item_mark(self, items: Any, position: int) -> Mark:
        marks = getattr(items, "item_marks", [])
        return marks[position] if position < len(marks) else getattr(items, "mark", self.doc.mark)

    def string_list(self, mapping: _Dict, key: str, what: str) -> list[str]:
        """The strings of ``mapping[key]`` (absent: none), each non-string an error."""
        items = mapping.get(key, [])
        if not isinstance(items, list):
            self.error(self.value_mark(mapping, key), f"{key} must be a list of {what}")
            return []
        strings = []
        for position, item in enumerate(items):
            if isinstance(item, str):
                strings.append(item)
            else:
                self.error(
                    self.item_mark(items, position), f"{key} lists {what}, not {_brief(item)}"
                )
        return strings

    def check(self) -> Rule | None:
        doc, before = self.doc, len(self.errors)
        for key in doc:
            if key not in RULE_KEYS:
                self.error(self.key_mark(doc, key), f"unknown key {_brief(key)}", _known(RULE_KEYS))
        for key in REQUIRED_KEYS:
            if key not in doc:
                self.error(doc.mark, f"rule is missing required key {key!r}")
        if before != len(self.errors):
            return None
        rule_id = doc["id"]
        if not isinstance(rule_id, str) or not _ID.match(rule_id):
            self.error(
                self.value_mark(doc, "id"),
                f"rule id {_brief(rule_id)} is not of the form category.specific_cause",
                "use lower-case words joined by '_', e.g. cuda_oom.fragmentation",
            )
        category = doc["category"]
        if not isinstance(category, str) or category not in CATEGORIES:
            self.error(
                self.value_mark(doc, "category"),
                f"unknown category {_brief(category)}",
                _known(CATEGORIES),
            )
        elif isinstance(rule_id, str) and not rule_id.startswith(category + "."):
            self.error(
                self.value_mark(doc, "id"),
                f"rule id {_brief(rule_id)} does not start with its category {category!r}",
            )
        confidence = doc["confidence"]
        if (
            not isinstance(confidence, (int, float))
            or isinstance(confidence, bool)
            or not 0 <= confidence <= 1
        ):
            self.error(self.value_mark(doc, "confidence"), "confidence must be a number in [0, 1]")
        tier = doc.get("tier", "specific")
        if not isinstance(tier, str) or tier not in TIERS:
            self.error(self.value_mark(doc, "tier"), f"unknown tier {_brief(tier)}", _known(TIERS))
        for key in ("title", "summary"):
            if not isinstance(doc[key], str) or not doc[key].strip():
                self.error(self.value_mark(doc, key), f"{key} must be a non-empty string")
        all_, any_, none = self.check_when(doc["when"])
        conditions = [*all_, *any_, *none]
        fields = self.available_fields([*all_, *any_])
        # When a condition failed, its fields are unknown: a placeholder naming one of them is no
        # error of its own, so templates are checked only against complete conditions.
        checked = None if self.conditions_failed else fields
        self.check_template(doc, "summary", checked)
        fixes = self.check_fixes(doc.get("fixes"), checked)
        explains = doc.get("explains", [])
        for index, category_name in enumerate(explains if isinstance(explains, list) else []):
            if not isinstance(category_name, str) or category_name not in CATEGORIES:
                self.error(
                    self.item_mark(explains, index),
                    f"unknown category {_brief(category_name)}",
                    _known(CATEGORIES),
                )
        if not isinstance(explains, list):
            self.error(self.value_mark(doc, "explains"), "explains must be a list of categories")
        probe = doc.get("probe")
        if probe is not None and (not isinstance(probe, str) or probe not in PROBES):
            self.error(
                self.value_mark(doc, "probe"), f"unknown probe {_brief(probe)}", _known(PROBES)
            )
        references = self.string_list(doc, "references", "links")
        examples = self.check_examples(doc.get("examples", {}))
        if self.style:
            self.check_style(examples)
        if before != len(self.errors) or not conditions:
            return None
        return Rule(
            id=rule_id,
            category=category,
            title=doc["title"].strip(),
            confidence=float(confidence),
            all=all_,
            any=any_,
            none=none,
            summary=" ".join(doc["summary"].split()),
            fixes=fixes,
            explains=list(explains),
            probe=probe,
            references=references,
            examples=examples,
            path=str(self.path),
            line=doc.mark.line,
            tier=tier,
            source=doc.mark.source,
        )

    def check_style(self, examples: dict[str, list[Path]]) -> None:
        """House style: key order, a title without a full stop, references, both examples."""
        doc = self.doc
        order = [key for key in doc if key in RULE_KEYS]
        expected = sorted(order, key=RULE_KEYS.index)
        for key, wanted in zip(order, expected, strict=True):
            if key != wanted:
                self.error(
                    self.key_mark(doc, key),
                    f"key {key!r} is out of order",
                    "order: " + ", ".join(RULE_KEYS),
                )
                break
        title = doc.get("title")
        if isinstance(title, str) and (title.rstrip().endswith(".") or len(title) > 90):
            self.error(
                self.value_mark(doc, "title"),
                "a title is one line of at most 90 characters without a final full stop",
            )
        if not doc.get("references"):
            self.error(
                doc.mark,
                "rule has no references",
                "link the documentation or the issue thread that explains the failure",
            )
        for key in ("fires", "quiet"):
            if not examples.get(key):
                self.error(
                    self.key_mark(doc, "examples") if "examples" in doc else doc.mark,
                    f"rule has no examples.{key} log",
                    "every rule names a log it fires on and one it stays quiet on",
                )
            for position, path in enumerate(examples.get(key, [])):
                if not path.exists():
                    self.error(
                        self.item_mark(doc["examples"][key], position),
                        f"example log {_brief(path.name)} does not exist",
                    )

    def check_when(self, when: Any) -> tuple[list[Condition], list[Condition], list[Condition]]:
        if self.too_many_conditions(when):
            return [], [], []
        groups: dict[str, list[Condition]] = {"all": [], "any": [], "none": []}
        if not isinstance(when, dict) or not when:
            self.error(self.value_mark(self.doc, "when"), "when must map all/any/none to lists")
            return [], [], []
        index, failed = 0, False
        for group, items in when.items():
            if group not in groups:
                self.error(
                    self.key_mark(when, group),
                    f"unknown condition group {_brief(group)}",
                    "use all, any or none",
                )
                continue
            if not isinstance(items, list) or not items:
                self.error(self.value_mark(when, group), f"{group} must be a non-empty list")
                continue
            for position, item in enumerate(items):
                condition = self.check_condition(
                    item, self.item_mark(items, position), index, groups
                )
                index += 1
                if condition:
                    groups[group].append(condition)
                failed = failed or condition is None
        # A condition that failed was reported at its own line; "needs a group" would only repeat it.
        self.conditions_failed = failed
        if not groups["all"] and not groups["any"] and not failed:
            self.error(self.value_mark(self.doc, "when"), "when needs an all or any group")
        counted = [c for group in groups.values() for c in group if c.count > 1]
        if counted and (len(groups["all"]) != 1 or groups["any"] or groups["none"]):
            self.error(
                self.value_mark(self.doc, "when"),
                "count is supported on a rule with exactly one condition (under all)",
                "split the rule, or express the other conditions in the counted fact's where",
            )
        return groups["all"], groups["any"], groups["none"]

    def too_many_conditions(self, when: Any) -> bool:
        """More than :data:`MAX_CONDITIONS` conditions (each ``any`` one becomes an engine rule)
        is an error of its own."""
        if not isinstance(when, dict):
            return False
        total = sum(len(items) for items in when.values() if isinstance(items, list))
        if total <= MAX_CONDITIONS:
            return False
        self.error(
            self.value_mark(self.doc, "when"),
            f"rule has {total} conditions; the limit is {MAX_CONDITIONS}",
            "split it into several rules of the same category",
        )
        return True

    def check_condition(
        self, item: Any, mark: Mark, index: int, groups: dict[str, list[Condition]]
    ) -> Condition | None:
        if not isinstance(item, dict) or "fact" not in item:
            self.error(mark, "a condition is a mapping with a 'fact' key")
            return None
        for key in item:
            if key not in CONDITION_KEYS:
                self.error(
                    self.key_mark(item, key),
                    f"unknown condition key {_brief(key)}",
                    _known(CONDITION_KEYS),
                )
        kind = item["fact"]
        if not isinstance(kind, str) or kind not in FACT_KINDS:
            self.error(
                self.value_mark(item, "fact"),
                f"unknown fact kind {_brief(kind)}",
                _known(FACT_KINDS),
            )
            return None
        known = {**COMMON_FIELDS, **FACT_KINDS[kind]}
        regex = item.get("regex")
        if kind == "line":
            if not isinstance(regex, str):
                self.error(self.key_mark(item, "fact"), "a line condition needs a regex")
                return None
            groups_in_regex = self.check_regex(item, "regex")
            if groups_in_regex is None:
                return None
            known |= dict.fromkeys(groups_in_regex, "named group")
        elif regex is not None:
            self.error(self.key_mark(item, "regex"), "regex is only allowed on line facts")
        where = item.get("where", {})
        if not isinstance(where, dict):
            self.error(self.value_mark(item, "where"), "where must map fields to values")
            where = {}
        for name, test in where.items():
            if name not in known:
                self.error(
                    self.key_mark(where, name),
                    f"unknown field {_brief(name)} of fact {kind!r}",
                    _known(known),
                )
            self.check_test(where, name, test)
        earlier = [c.name for group in groups.values() for c in group]
        name = item.get("as", f"f{index}")
        if not isinstance(name, str) or not _NAME.match(name):
            self.error(
                self.value_mark(item, "as"),
                f"a condition's name must be a word, not {_brief(name)}",
                "letters, digits and '_', e.g. oom",
            )
            name = f"f{index}"
        same = item.get("same", [])
        same = [same] if isinstance(same, str) else same
        if not isinstance(same, list) or not all(isinstance(f, str) for f in same):
            self.error(self.value_mark(item, "same"), "same names a field or a list of fields")
            same = []
        for field_name in same:
            if field_name not in known:
                self.error(
                    self.value_mark(item, "same"), f"unknown field {_brief(field_name)} in same"
                )
        after = item.get("after")
        if after is not None and (not isinstance(after, str) or after not in earlier):
            self.error(
                self.value_mark(item, "after"),
                f"after names no earlier condition {_brief(after)}",
                "give the earlier condition a name with 'as:'",
            )
            after = None
        count = item.get("count", 1)
        if not isinstance(count, int) or isinstance(count, bool) or not 1 <= count <= MAX_COUNT:
            self.error(
                self.value_mark(item, "count"),
                f"count must be a whole number from 1 to {MAX_COUNT}",
            )
            count = 1
        return Condition(kind, name, dict(where), regex, list(same), after, count)

    def check_regex(self, mapping: _Dict, key: str) -> dict[str, int] | None:
        """A regex of ``mapping[key]``: a bounded, linear-time (RE2) pattern that Python's
        ``re`` reads the same way (its named groups are fields); its groups, or None."""
        pattern = mapping[key]
        if not isinstance(pattern, str):
            self.error(self.value_mark(mapping, key), f"{key} takes a regex string")
            return None
        if len(pattern) > MAX_REGEX_CHARS:
            self.error(
                self.value_mark(mapping, key),
                f"regex of {len(pattern)} characters; the limit is {MAX_REGEX_CHARS}",
                "match the distinctive part of the line, or split the rule",
            )
            return None
        try:
            check_pattern(pattern)
            return dict(re.compile(pattern).groupindex)
        except (PatternError, re.error, RecursionError, OverflowError) as error:
            self.error(
                self.value_mark(mapping, key),
                f"invalid regex: {_first_line(str(error))}",
                "patterns use RE2 syntax: no look-around or back-references",
            )
            return None

    def check_test(self, where: _Dict, name: Any, test: Any) -> None:
        """A field's test: a plain value (equality) or ``{operator: operand}`` with an operand
        of the operator's type (a list or mapping there would reach the rules engine)."""
        if not isinstance(test, dict):
            if not _plain(test):
                self.error(
                    self.value_mark(where, name),
                    f"a test is a plain value or {{operator: value}}, not {_brief(test)}",
                    "use {in: [a, b]} for a choice, {exists: false} for a missing field",
                )
            return
        for op, operand in test.items():
            if op not in OPERATORS:
                self.error(
                    self.key_mark(test, op), f"unknown operator {_brief(op)}", _known(OPERATORS)
                )
                continue
            mark = self.value_mark(test, op)
            if op in REGEX_OPERATORS:
                self.check_regex(test, op)
            elif op == "exists":
                if not isinstance(operand, bool):
                    self.error(mark, "exists takes true or false")
            elif op in ("in", "not_in"):
                if not isinstance(operand, list) or not operand:
                    self.error(mark, f"{op} takes a non-empty list of values")
                elif len(operand) > MAX_IN_VALUES:
                    self.error(
                        mark, f"{op} lists {len(operand)} values; the limit is {MAX_IN_VALUES}"
                    )
                elif not all(_plain(value) for value in operand):
                    self.error(mark, f"{op} lists plain values (strings, numbers, true/false)")
            elif op in ("gt", "gte", "lt", "lte"):
                if not _plain(operand) or isinstance(operand, bool):
                    self.error(mark, f"{op} takes a number or a string")
            elif not _plain(operand):
                self.error(mark, f"{op} takes a plain value (a string, number, true or false)")

    def available_fields(self, conditions: list[Condition]) -> set[str]:
        fields = set(COMMON_FIELDS) | {"config"}
        for condition in conditions:
            kind_fields = set(FACT_KINDS[condition.fact])
            if condition.regex:
                kind_fields |= set(re.compile(condition.regex).groupindex)
            fields |= kind_fields | {f"{condition.name}.{f}" for f in kind_fields}
        return fields

    def check_template(self, mapping: _Dict, key: str, fields: set[str] | None) -> None:
        """Placeholders must parse and (``fields`` given) name fields of the matched facts."""
        text = mapping.get(key)
        if not isinstance(text, str):
            return
        if not self.template_within_limits(mapping, key, text):
            return
        try:
            names = [name for _, name, _, _ in string.Formatter().parse(text) if name]
        except ValueError as error:
            self.error(self.value_mark(mapping, key), f"bad placeholder: {error}")
            return
        for placeholder in names:
            try:
                read = placeholders.names(placeholder)
            except placeholders.PlaceholderError as error:
                self.error(_locate(self.value_mark(mapping, key), "{" + placeholder), str(error))
                continue
            for name in read if fields is not None else ():
                if name not in fields and not name.startswith("config."):
                    self.error(
                        _locate(self.value_mark(mapping, key), "{" + placeholder),
                        f"placeholder {{{name}}} names no field of the facts this rule matches",
                        _known(sorted(fields)),
                    )

    def check_fixes(self, fixes: Any, fields: set[str] | None) -> list[dict[str, Any]]:
        if not isinstance(fixes, list) or not fixes:
            self.error(self.value_mark(self.doc, "fixes"), "fixes must be a non-empty list")
            return []
        if len(fixes) > MAX_FIXES:
            self.error(
                self.value_mark(self.doc, "fixes"),
                f"rule has {len(fixes)} fixes; the limit is {MAX_FIXES}",
            )
            return []
        for position, fix in enumerate(fixes):
            if not isinstance(fix, dict) or "title" not in fix:
                self.error(self.item_mark(fixes, position), "a fix is a mapping with a title")
                continue
            for key in fix:
                if key not in FIX_KEYS:
                    self.error(
                        self.key_mark(fix, key), f"unknown fix key {_brief(key)}", _known(FIX_KEYS)
                    )
            if not any(k in fix for k in ("env", "set", "command", "code", "patch")):
                self.error(fix.mark, "a fix needs one of env, set, command, code or patch")
            for name in _as_list(fix.get("frameworks")):
                if not isinstance(name, str) or name not in FRAMEWORKS:
                    self.error(
                        self.key_mark(fix, "frameworks"),
                        f"unknown framework {_brief(name)}",
                        _known(FRAMEWORKS),
                    )
            for key in ("env", "set"):
                values = fix.get(key, {})
                if not isinstance(values, dict):
                    self.error(self.value_mark(fix, key), f"{key} maps names to values")
                    continue
                for name, value in values.items():
                    if key == "set" and name not in SETTINGS:
                        self.error(
                            self.key_mark(values, name),
                            f"unknown setting {_brief(name)}",
                            _known(SETTINGS),
                        )
                    elif key == "env" and not isinstance(name, str):
                        self.error(self.key_mark(values, name), "an environment variable's name")
                    if not _plain(value):
                        self.error(
                            self.value_mark(values, name),
                            f"{key} values are plain (a string, number, true or false)",
                        )
                    elif isinstance(value, str):
                        self.check_template(values, name, fields)
            for key in ("title", "command", "code", "patch", "note"):
                if key in fix and not isinstance(fix[key], str):
                    self.error(self.value_mark(fix, key), f"a fix's {key} is a string")
                self.check_template(fix, key, fields)
        return [dict(fix) for fix in fixes if isinstance(fix, dict)]

    def check_examples(self, examples: Any) -> dict[str, list[Path]]:
        result: dict[str, list[Path]] = {}
        if not isinstance(examples, dict):
            self.error(self.value_mark(self.doc, "examples"), "examples maps fires/quiet to lists")
            return result
        for key in examples:
            if key not in ("fires", "quiet"):
                self.error(
                    self.key_mark(examples, key),
                    f"unknown examples key {_brief(key)}",
                    "use fires and quiet",
                )
                continue
            names = self.string_list(examples, key, "paths to log files")
            result[key] = [self.path.parent / name for name in names]
        return result

    def template_within_limits(self, mapping: _Dict, key: Any, text: str) -> bool:
        """A summary or fix text is at most :data:`MAX_TEMPLATE_CHARS` long with at most
        :data:`MAX_PLACEHOLDERS` placeholders, each with at most a small format spec (a width
        of 10**9 would render a gigabyte of spaces): what a diagnosis renders stays small."""
        mark = self.value_mark(mapping, key)
        if len(text) > MAX_TEMPLATE_CHARS:
            self.error(
                mark,
                f"{_cut(str(key))} of {len(text)} characters; the limit is {MAX_TEMPLATE_CHARS}",
            )
            return False
        try:
            parsed = [
                (name, spec) for _, name, spec, _ in _FORMATTER.parse(text) if name is not None
            ]
        except ValueError:
            return True  # check_template reports the bad placeholder
        if len(parsed) > MAX_PLACEHOLDERS:
            self.error(
                mark,
                f"{_cut(str(key))} has {len(parsed)} placeholders; the limit is {MAX_PLACEHOLDERS}",
            )
            return False
        for name, spec in parsed:
            if spec and (not _SMALL_SPEC.fullmatch(spec) or re.search(r"\d{3}", spec)):
                self.error(
                    _locate(mark, "{" + name),
                    f"placeholder {{{_cut(name)}:{_cut(spec)}}} has too large a format",
                    "a width or precision takes at most two digits, e.g. {gib:.1f}",
                )
                return False
        return True


_FORMATTER = string.Formatter()
#: A format spec without nested fields, e.g. ``.1f`` or ``>8``.
_SMALL_SPEC = re.compile(r"[^{}]{1,20}")


def _plain(value: Any) -> bool:
    """A value a test may compare with: a string, a bool or a finite number."""
    if isinstance(value, float):
        return math.isfinite(value)
    return isinstance(value, (str, int, bool))


def _first_line(text: str) -> str:
    return _cut(text.splitlines()[0] if text else text, 200)


def _cut(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


def _brief(value: Any) -> str:
    """A value from the file as quoted in a message: its repr, cut short."""
    if isinstance(value, (dict, list)):
        return "a mapping" if isinstance(value, dict) else "a list"
    return _cut(repr(value))


def _locate(start: Mark, needle: str) -> Mark:
    """The position of ``needle`` at or after ``start`` in the rule file (for a precise caret
    inside multi-line values), or ``start`` itself when it cannot be found nearby."""
    source = start.source
    if source is None:
        return start
    begin = source.offset(start.line, start.column)
    # A value's text is at most a few times its length in the file (escapes, folding).
    found = source.text.find(needle, begin, begin + 8 * MAX_TEMPLATE_CHARS)
    if found < 0:
        return start
    line, column = source.position(found)
    return Mark(start.path, line, column, source)


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]


def _known(names: Any) -> str:
    return "known: " + ", ".join(sorted(names))


def load_file(path: Path, errors: list[RuleError], style: bool = False) -> list[Rule]:
    """Load and validate every rule document of one file, appending problems to ``errors``.

    ``style`` also checks the house style (what ``crashcart rules lint`` adds).
    """
    import yaml

    try:
        source = read_source(path)
    except SourceError as error:
        errors.append(RuleError(Mark(str(path), 1, 1), str(error)))
        return []
    try:
        documents = list(yaml.load_all(source.text, Loader=_loader_for(str(path), source)))
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = (
            Mark(str(path), mark.line + 1, mark.column + 1, source)
            if mark
            else Mark(str(path), 1, 1, source)
        )
        problem = _first_line(str(error.problem or error.context))
        if problem == LIBYAML_TOO_DEEP:
            # libyaml 0.2.6 (PyYAML 6.0.4) stops at 1,000 levels while scanning ahead, before our
            # composer counts to MAX_DEPTH: one wording whichever limit is met first.
            problem = TOO_DEEP
        errors.append(RuleError(where, f"invalid YAML: {problem}"))
        return []
    except yaml.YAMLError as error:
        errors.append(
            RuleError(Mark(str(path), 1, 1, source), f"invalid YAML: {_first_line(str(error))}")
        )
        return []
    rules = []
    for doc in documents:
        if doc is None:
            continue
        if not isinstance(doc, _Dict):
            where = getattr(doc, "mark", Mark(str(path), 1, 1, source))
            errors.append(RuleError(where, "a rule document must be a mapping"))
            continue
        rule = _Checker(path, doc, errors, style).check()
        if rule:
            rules.append(rule)
    return rules


def shipped_rules_dir() -> Path:
    """The directory of the rules that ship with crashcart."""
    from .. import rules

    directory = Path(rules.__file__).parent
    try:  # shown relative to where the user stands, like the paths they typed
        return directory.relative_to(Path.cwd())
    except ValueError:
        return directory


def rule_files(path: Path) -> list[Path]:
    """The rule files of a directory (``*.yaml``, ``*.yml``), or the path itself when it is
    not a directory (whatever it is: reading it says why it is no rule file)."""
    if path.is_dir():
        return sorted([*path.glob("*.yaml"), *path.glob("*.yml")])
    return [path] if os.path.lexists(path) else []


def too_many_rules(rule: Rule) -> RuleError:
    """The error for the first rule past :data:`MAX_RULES`."""
    return RuleError(
        rule.mark,
        f"more than {MAX_RULES} rules; the limit of rules loaded at once",
        "keep rule directories to the rules you use",
    )


def load_rules(
    dirs: list[Path] | None = None,
    disable: tuple[str, ...] = (),
    *,
    shipped: bool = True,
    style: bool = False,
) -> list[Rule]:
    """Load the shipped rules and any extra directories (later ones override by id).

    Raises :class:`RuleLoadError` with every problem if any file is invalid.
    """
    errors: list[RuleError] = []
    by_id: dict[str, Rule] = {}
    loaded = 0
    for directory in [*([shipped_rules_dir()] if shipped else []), *(dirs or [])]:
        seen_here: dict[str, Rule] = {}
        for path in rule_files(directory):
            for rule in load_file(path, errors, style):
                loaded += 1
                if loaded > MAX_RULES:
                    errors.append(too_many_rules(rule))
                    raise RuleLoadError(errors)
                if rule.id in seen_here:
                    first = seen_here[rule.id]
                    errors.append(
                        RuleError(
                            rule.mark,
                            f"duplicate rule id {rule.id!r}",
                            f"first defined at {first.path}:{first.line}",
                        )
                    )
                seen_here[rule.id] = rule
        by_id.update(seen_here)
    if errors:
        raise RuleLoadError(errors)
    return [rule for rule_id, rule in by_id.items() if rule_id not in disable]
