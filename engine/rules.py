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

import re
import string
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..parsers.prefilter import PatternError, check_pattern
from .facts import COMMON_FIELDS, FACT_KINDS
from .fixes import FRAMEWORKS
from .vocabulary import CATEGORIES

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
OPERATORS = ("eq", "ne", "gt", "gte", "lt", "lte", "in", "exists", "matches")
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


@dataclass
class Mark:
    """A position in a rule file (1-based line and column)."""

    path: str
    line: int
    column: int


class _Dict(dict):
    """A mapping that remembers where each of its keys and values stood."""

    mark: Mark
    key_marks: dict[str, Mark]
    value_marks: dict[str, Mark]


class _List(list):
    mark: Mark
    item_marks: list[Mark]


def _loader_for(path: str) -> type[yaml.SafeLoader]:
    def mark(node: yaml.Node) -> Mark:
        return Mark(path, node.start_mark.line + 1, node.start_mark.column + 1)

    # The C parser where PyYAML has it (several times faster); our constructor adds the marks.
    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class Loader(base):  # type: ignore[valid-type,misc]
        def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> _Dict:
            result = _Dict()
            result.mark, result.key_marks, result.value_marks = mark(node), {}, {}
            for key_node, value_node in node.value:
                key = self.construct_object(key_node, deep=True)
                result[key] = self.construct_object(value_node, deep=True)
                result.key_marks[key] = mark(key_node)
                result.value_marks[key] = mark(value_node)
            return result

        def construct_sequence(self, node: yaml.SequenceNode, deep: bool = False) -> _List:
            result = _List(self.construct_object(child, deep=True) for child in node.value)
            result.mark, result.item_marks = mark(node), [mark(child) for child in node.value]
            return result

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
        try:
            source = Path(self.mark.path).read_text(encoding="utf-8").splitlines()
            line = source[self.mark.line - 1]
        except (OSError, IndexError, UnicodeDecodeError):
            line = None
        if line is not None:
            text += f"\n    {line}\n    {' ' * (self.mark.column - 1)}^"
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

    @property
    def conditions(self) -> list[Condition]:
        """Every condition, in order."""
        return [*self.all, *self.any, *self.none]


class _Checker:
    """Validates one rule document, collecting errors; ``style`` adds the house-style checks."""

    def __init__(
        self, path: Path, doc: _Dict, errors: list[RuleError], style: bool = False
    ) -> None:
        self.path, self.doc, self.errors, self.style = path, doc, errors, style

    def error(self, where: Mark, message: str, hint: str = "") -> None:
        self.errors.append(RuleError(where, message, hint))

    def key_mark(self, mapping: _Dict, key: str) -> Mark:
        return getattr(mapping, "key_marks", {}).get(key, getattr(mapping, "mark", self.doc.mark))

    def value_mark(self, mapping: _Dict, key: str) -> Mark:
        return getattr(mapping, "value_marks", {}).get(key, self.key_mark(mapping, key))

    def check(self) -> Rule | None:
        doc, before = self.doc, len(self.errors)
        for key in doc:
            if key not in RULE_KEYS:
                self.error(self.key_mark(doc, key), f"unknown key {key!r}", _known(RULE_KEYS))
        for key in REQUIRED_KEYS:
            if key not in doc:
                self.error(doc.mark, f"rule is missing required key {key!r}")
        if before != len(self.errors):
            return None
        rule_id = doc["id"]
        if not isinstance(rule_id, str) or not _ID.match(rule_id):
            self.error(
                self.value_mark(doc, "id"),
                f"rule id {rule_id!r} is not of the form category.specific_cause",
                "use lower-case words joined by '_', e.g. cuda_oom.fragmentation",
            )
        category = doc["category"]
        if category not in CATEGORIES:
            self.error(
                self.value_mark(doc, "category"),
                f"unknown category {category!r}",
                _known(CATEGORIES),
            )
        elif isinstance(rule_id, str) and not rule_id.startswith(category + "."):
            self.error(
                self.value_mark(doc, "id"),
                f"rule id {rule_id!r} does not start with its category {category!r}",
            )
        confidence = doc["confidence"]
        if not isinstance(confidence, (int, float)) or not 0 <= confidence <= 1:
            self.error(self.value_mark(doc, "confidence"), "confidence must be a number in [0, 1]")
        tier = doc.get("tier", "specific")
        if tier not in TIERS:
            self.error(self.value_mark(doc, "tier"), f"unknown tier {tier!r}", _known(TIERS))
        for key in ("title", "summary"):
            if not isinstance(doc[key], str) or not doc[key].strip():
                self.error(self.value_mark(doc, key), f"{key} must be a non-empty string")
        all_, any_, none = self.check_when(doc["when"])
        conditions = [*all_, *any_, *none]
        fields = self.available_fields([*all_, *any_])
        self.check_template(doc, "summary", fields)
        fixes = self.check_fixes(doc.get("fixes"), fields)
        explains = doc.get("explains", [])
        for index, category_name in enumerate(explains if isinstance(explains, list) else []):
            if category_name not in CATEGORIES:
                self.error(
                    explains.item_marks[index],
                    f"unknown category {category_name!r}",
                    _known(CATEGORIES),
                )
        probe = doc.get("probe")
        if probe is not None and probe not in PROBES:
            self.error(self.value_mark(doc, "probe"), f"unknown probe {probe!r}", _known(PROBES))
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
            references=list(doc.get("references", [])),
            examples=examples,
            path=str(self.path),
            line=doc.mark.line,
            tier=tier,
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
                    marks = doc["examples"][key].item_marks
                    self.error(marks[position], f"example log {path.name!r} does not exist")

    def check_when(self, when: Any) -> tuple[list[Condition], list[Condition], list[Condition]]:
        groups: dict[str, list[Condition]] = {"all": [], "any": [], "none": []}
        if not isinstance(when, dict) or not when:
            self.error(self.value_mark(self.doc, "when"), "when must map all/any/none to lists")
            return [], [], []
        index = 0
        for group, items in when.items():
            if group not in groups:
                self.error(
                    self.key_mark(when, group),
                    f"unknown condition group {group!r}",
                    "use all, any or none",
                )
                continue
            if not isinstance(items, list) or not items:
                self.error(self.value_mark(when, group), f"{group} must be a non-empty list")
                continue
            for position, item in enumerate(items):
                condition = self.check_condition(item, items.item_marks[position], index, groups)
                index += 1
                if condition:
                    groups[group].append(condition)
        if not groups["all"] and not groups["any"]:
            self.error(self.value_mark(self.doc, "when"), "when needs an all or any group")
        counted = [c for group in groups.values() for c in group if c.count > 1]
        if counted and (len(groups["all"]) != 1 or groups["any"] or groups["none"]):
            self.error(
                self.value_mark(self.doc, "when"),
                "count is supported on a rule with exactly one condition (under all)",
                "split the rule, or express the other conditions in the counted fact's where",
            )
        return groups["all"], groups["any"], groups["none"]

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
                    f"unknown condition key {key!r}",
                    _known(CONDITION_KEYS),
                )
        kind = item["fact"]
        if kind not in FACT_KINDS:
            self.error(
                self.value_mark(item, "fact"), f"unknown fact kind {kind!r}", _known(FACT_KINDS)
            )
            return None
        known = {**COMMON_FIELDS, **FACT_KINDS[kind]}
        regex = item.get("regex")
        if kind == "line":
            if not isinstance(regex, str):
                self.error(self.key_mark(item, "fact"), "a line condition needs a regex")
                return None
            try:
                check_pattern(regex)
                groups_in_regex = re.compile(regex).groupindex
            except (PatternError, re.error) as error:
                self.error(
                    self.value_mark(item, "regex"),
                    f"invalid regex: {error}",
                    "patterns use RE2 syntax: no look-around or back-references",
                )
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
                    f"unknown field {name!r} of fact {kind!r}",
                    _known(known),
                )
            if isinstance(test, dict):
                for op in test:
                    if op not in OPERATORS:
                        self.error(
                            self.key_mark(test, op), f"unknown operator {op!r}", _known(OPERATORS)
                        )
                    elif op == "matches":
                        self.check_matches(test, op)
        earlier = [c.name for group in groups.values() for c in group]
        name = item.get("as", f"f{index}")
        same = item.get("same", [])
        same = [same] if isinstance(same, str) else same
        for field_name in same:
            if field_name not in known:
                self.error(self.value_mark(item, "same"), f"unknown field {field_name!r} in same")
        after = item.get("after")
        if after is not None and after not in earlier:
            self.error(
                self.value_mark(item, "after"),
                f"after names no earlier condition {after!r}",
                "give the earlier condition a name with 'as:'",
            )
        count = item.get("count", 1)
        if not isinstance(count, int) or isinstance(count, bool) or count < 1:
            self.error(self.value_mark(item, "count"), "count must be a whole number >= 1")
            count = 1
        return Condition(kind, name, dict(where), regex, list(same), after, count)

    def check_matches(self, test: _Dict, op: str) -> None:
        """A ``matches`` test names a linear-time (RE2) pattern searched in a text field."""
        pattern = test[op]
        if not isinstance(pattern, str):
            self.error(self.value_mark(test, op), "matches takes a regex string")
            return
        try:
            check_pattern(pattern)
        except PatternError as error:
            self.error(
                self.value_mark(test, op),
                f"invalid regex: {error}",
                "patterns use RE2 syntax: no look-around or back-references",
            )

    def available_fields(self, conditions: list[Condition]) -> set[str]:
        fields = set(COMMON_FIELDS) | {"config"}
        for condition in conditions:
            kind_fields = set(FACT_KINDS[condition.fact])
            if condition.regex:
                kind_fields |= set(re.compile(condition.regex).groupindex)
            fields |= kind_fields | {f"{condition.name}.{f}" for f in kind_fields}
        return fields

    def check_template(self, mapping: _Dict, key: str, fields: set[str]) -> None:
        text = mapping.get(key)
        if not isinstance(text, str):
            return
        try:
            names = [name for _, name, _, _ in string.Formatter().parse(text) if name]
        except ValueError as error:
            self.error(self.value_mark(mapping, key), f"bad placeholder: {error}")
            return
        for name in names:
            if name not in fields and not name.startswith("config."):
                self.error(
                    _locate(self.value_mark(mapping, key), "{" + name),
                    f"placeholder {{{name}}} names no field of the facts this rule matches",
                    _known(sorted(fields)),
                )

    def check_fixes(self, fixes: Any, fields: set[str]) -> list[dict[str, Any]]:
        if not isinstance(fixes, list) or not fixes:
            self.error(self.value_mark(self.doc, "fixes"), "fixes must be a non-empty list")
            return []
        for position, fix in enumerate(fixes):
            if not isinstance(fix, dict) or "title" not in fix:
                self.error(fixes.item_marks[position], "a fix is a mapping with a title")
                continue
            for key in fix:
                if key not in FIX_KEYS:
                    self.error(
                        self.key_mark(fix, key), f"unknown fix key {key!r}", _known(FIX_KEYS)
                    )
            if not any(k in fix for k in ("env", "set", "command", "code", "patch")):
                self.error(fix.mark, "a fix needs one of env, set, command, code or patch")
            for name in _as_list(fix.get("frameworks")):
                if name not in FRAMEWORKS:
                    self.error(
                        self.key_mark(fix, "frameworks"),
                        f"unknown framework {name!r}",
                        _known(FRAMEWORKS),
                    )
            for setting in fix.get("set", {}) or {}:
                if setting not in SETTINGS:
                    self.error(
                        self.key_mark(fix["set"], setting),
                        f"unknown setting {setting!r}",
                        _known(SETTINGS),
                    )
            for key in ("title", "command", "code", "patch", "note"):
                self.check_template(fix, key, fields)
        return [dict(fix) for fix in fixes if isinstance(fix, dict)]

    def check_examples(self, examples: Any) -> dict[str, list[Path]]:
        result: dict[str, list[Path]] = {}
        if not isinstance(examples, dict):
            self.error(self.value_mark(self.doc, "examples"), "examples maps fires/quiet to lists")
            return result
        for key, paths in examples.items():
            if key not in ("fires", "quiet"):
                self.error(
                    self.key_mark(examples, key),
                    f"unknown examples key {key!r}",
                    "use fires and quiet",
                )
                continue
            result[key] = []
            for position, name in enumerate(paths if isinstance(paths, list) else []):
                if not isinstance(name, str):
                    self.error(paths.item_marks[position], "an example is a path to a log file")
                    continue
                result[key].append(self.path.parent / name)
        return result


def _locate(start: Mark, needle: str) -> Mark:
    """The position of ``needle`` at or after ``start`` in the rule file (for a precise caret
    inside multi-line values), or ``start`` itself when it cannot be found."""
    try:
        lines = Path(start.path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return start
    for number in range(start.line, len(lines) + 1):
        offset = start.column - 1 if number == start.line else 0
        column = lines[number - 1].find(needle, offset)
        if column >= 0:
            return Mark(start.path, number, column + 1)
    return start


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
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        errors.append(RuleError(Mark(str(path), 1, 1), f"cannot read rule file: {error}"))
        return []
    try:
        documents = list(yaml.load_all(text, Loader=_loader_for(str(path))))
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = Mark(str(path), mark.line + 1, mark.column + 1) if mark else Mark(str(path), 1, 1)
        errors.append(RuleError(where, f"invalid YAML: {error.problem or error.context}"))
        return []
    except yaml.YAMLError as error:
        errors.append(RuleError(Mark(str(path), 1, 1), f"invalid YAML: {error}"))
        return []
    rules = []
    for doc in documents:
        if doc is None:
            continue
        if not isinstance(doc, _Dict):
            errors.append(RuleError(Mark(str(path), 1, 1), "a rule document must be a mapping"))
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
    """The rule files of a directory (``*.yaml``, ``*.yml``), or the file itself."""
    if path.is_file():
        return [path]
    return sorted([*path.glob("*.yaml"), *path.glob("*.yml")])


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
    for directory in [*([shipped_rules_dir()] if shipped else []), *(dirs or [])]:
        seen_here: dict[str, Rule] = {}
        for path in rule_files(directory):
            for rule in load_file(path, errors, style):
                if rule.id in seen_here:
                    first = seen_here[rule.id]
                    errors.append(
                        RuleError(
                            Mark(rule.path, rule.line, 1),
                            f"duplicate rule id {rule.id!r}",
                            f"first defined at {first.path}:{first.line}",
                        )
                    )
                seen_here[rule.id] = rule
        by_id.update(seen_here)
    if errors:
        raise RuleLoadError(errors)
    return [rule for rule_id, rule in by_id.items() if rule_id not in disable]
