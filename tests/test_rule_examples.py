"""Every rule example is real output: byte-identical to a corpus log, whose case records where
it came from (a generator program or the URL it was posted at).

After adding examples, regenerate the table with ``python tests/test_rule_examples.py``.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

EXAMPLES = Path("rules/examples")
SOURCES = EXAMPLES / "SOURCES.md"
HEADER = """\
# Where each example log comes from

Each example is a byte-for-byte copy of a corpus log; the corpus case's `expected.yaml` records
its source (a program in `corpus/generate/` or the URL where it was posted).

| example | corpus case |
|---|---|
"""


def corpus_cases() -> dict[str, str]:
    """sha256 of each corpus log -> its case directory name."""
    logs = [p for p in Path("corpus").rglob("*") if p.suffix in (".log", ".txt")]
    corpus = Path("corpus")
    return {
        hashlib.sha256(p.read_bytes()).hexdigest(): p.parent.relative_to(corpus).as_posix()
        for p in logs
        if "generate" not in p.parts
    }


def table() -> str:
    cases = corpus_cases()
    rows = []
    for example in sorted(EXAMPLES.rglob("*.log")):
        case = cases.get(hashlib.sha256(example.read_bytes()).hexdigest())
        rows.append(f"| `{example.relative_to(EXAMPLES)}` | `corpus/{case}` |\n")
    return HEADER + "".join(rows)


def test_every_example_is_a_corpus_log_listed_with_its_case() -> None:
    cases = corpus_cases()
    for example in sorted(EXAMPLES.rglob("*.log")):
        digest = hashlib.sha256(example.read_bytes()).hexdigest()
        assert digest in cases, f"{example} is not a copy of any corpus log"
    assert SOURCES.read_text() == table(), "run: python tests/test_rule_examples.py"


if __name__ == "__main__":
    SOURCES.write_text(table())
