"""durable-rules' C engine compiled as its release builds it, and with ``-O2 -DNDEBUG``: side by side.

Both wheels come from tools/durable_wheel.py (``--unoptimised`` gives the release's own flags,
no optimisation) and are unpacked into a temporary folder each; every measurement runs in a
child process whose ``PYTHONPATH`` puts one of them in front of the installed engine, so
everything else (crashcart, Hyperscan, the interpreter) is the same. The builds alternate
within each round and the median of the rounds is reported. Times are CPU seconds of the
child (user + system): the machine is shared, and wall time there measures the neighbours.

- **rule evaluation**: the facts crashcart asserted (and retracted) while analysing every
  corpus case, recorded, then replayed into a fresh session with the shipped rules;
- **ruleset build**: building the durable-rules host for the shipped rules, 10x and 100x as
  many (generated ``line`` rules, as in run.py);
- **analyze on the corpus**: every case of corpus/ analysed in one process (what
  ``crashcart eval corpus`` does, without its start-up).

``python benchmarks/engine_flags.py [--rounds 3] [--factors 1,10,100]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUILDS = {"unoptimised": ["--unoptimised"], "optimised (-O2 -DNDEBUG)": []}


def generated_rules(count: int) -> str:
    """``count`` generated line rules (the same shape as run.py's rule scaling)."""
    return "".join(
        f"---\nid: config_error.generated_{i}\ncategory: config_error\ntitle: generated {i}\n"
        f'confidence: 0.5\nwhen:\n  all:\n    - fact: line\n      regex: "custom failure E{i:05d} in (?P<where>\\\\w+)"\n'
        f'summary: generated rule {i} matched in {{where}}\nfixes:\n  - title: nothing\n    command: "true"\n'
        for i in range(count)
    )


def child_corpus() -> dict[str, float]:
    """In the child: analyse the corpus (timed), then record its facts and replay them (timed)."""
    from crashcart.analyzer import default_rulebase
    from crashcart.engine.durable import RuleSession
    from crashcart.evaluate import evaluate

    rules = default_rulebase().rules
    started = time.process_time()
    evaluate(ROOT / "corpus")
    corpus_cpu = time.process_time() - started

    recorded: list[tuple[str, dict]] = []
    original = {"assert": RuleSession.assert_fact, "retract": RuleSession.retract_fact}

    def recording(kind: str) -> Callable[[RuleSession, dict], object]:
        def wrapper(self: RuleSession, message: dict) -> object:
            recorded.append((kind, dict(message)))
            return original[kind](self, message)

        return wrapper

    RuleSession.assert_fact = recording("assert")  # type: ignore[method-assign]
    RuleSession.retract_fact = recording("retract")  # type: ignore[method-assign]
    evaluate(ROOT / "corpus")
    RuleSession.assert_fact, RuleSession.retract_fact = original["assert"], original["retract"]  # type: ignore[method-assign]

    session = RuleSession(rules)
    fired = 0
    started = time.process_time()
    for kind, message in recorded:
        if kind == "assert":
            fired += len(session.assert_fact(message))
        else:
            session.retract_fact(message)
    replay_cpu = time.process_time() - started
    asserted = sum(1 for kind, _ in recorded if kind == "assert")
    return {
        "corpus_cpu": corpus_cpu,
        "replay_cpu": replay_cpu,
        "asserted": asserted,
        "retracted": len(recorded) - asserted,
        "fired": fired,
    }


def child_build(factor: int) -> dict[str, float]:
    """In the child: seconds to build the durable-rules host for ``factor`` x the shipped rules."""
    from crashcart.analyzer import default_rulebase
    from crashcart.engine.durable import RuleSession
    from crashcart.engine.rules import load_file

    rules = list(default_rulebase().rules)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder, "generated.yaml")
        path.write_text(generated_rules(len(rules) * factor - len(rules)))
        errors: list = []
        rules += load_file(path, errors) if factor > 1 else []
        assert not errors, errors[:3]
    started = time.process_time()
    RuleSession(rules)
    return {"rules": len(rules), "build_cpu": time.process_time() - started}


def in_child(engine: Path, *args: str) -> dict[str, float]:
    """Run this script's child part with the engine unpacked at ``engine``; its JSON result."""
    result = subprocess.run(
        [sys.executable, __file__, "--child", *args],
        env={**os.environ, "PYTHONPATH": str(engine)},
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(f"child {args} failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.splitlines()[-1])


def unpack(label: str, flags: list[str], into: Path) -> Path:
    """The wheel of ``label`` (built if needed) unpacked under ``into``."""
    wheel = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "durable_wheel.py"), *flags],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    folder = into / label.split()[0]
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(folder)
    return folder


def table(title: str, header: list[str], rows: list[list[str]]) -> None:
    """Print a Markdown table (pasted into benchmarks/README.md as it is)."""
    print(f"\n{title}\n")
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" if i == 0 else "---:" for i in range(len(header))) + "|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


def main() -> None:
    """Measure both builds side by side and print the tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--factors", default="1,10,100", help="rule multiples to build")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        import durable_rules_engine

        engine = Path(durable_rules_engine.__file__).resolve()
        if not str(engine).startswith(os.environ.get("PYTHONPATH", "?")):
            sys.exit(f"the engine under test was not loaded: {engine}")
        mode, *rest = args.child
        result = child_corpus() if mode == "corpus" else child_build(int(rest[0]))
        print(json.dumps(result))
        return
    factors = [int(f) for f in args.factors.split(",")]
    results: dict[str, list[dict[str, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="engine-flags-") as scratch:
        engines = {label: unpack(label, flags, Path(scratch)) for label, flags in BUILDS.items()}
        for round_ in range(args.rounds):
            # Alternate which build goes first, so a neighbour's burst lands on both alike.
            order = list(engines) if round_ % 2 == 0 else list(reversed(engines))
            for label in order:
                print(f"round {round_ + 1}: {label}", file=sys.stderr, flush=True)
                results.setdefault(f"{label}|corpus", []).append(in_child(engines[label], "corpus"))
                for factor in factors:
                    results.setdefault(f"{label}|x{factor}", []).append(
                        in_child(engines[label], "build", str(factor))
                    )

    def median(key: str, field: str) -> float:
        return statistics.median(r[field] for r in results[key])

    labels = list(BUILDS)
    sample = results[f"{labels[0]}|corpus"][0]
    rows = []
    for what, key, field in [
        (
            f"rule evaluation: {sample['asserted']:,} facts asserted, {sample['retracted']:,} retracted",
            "corpus",
            "replay_cpu",
        ),
        *[
            (
                f"ruleset build, x{f} ({results[f'{labels[0]}|x{f}'][0]['rules']:,} rules)",
                f"x{f}",
                "build_cpu",
            )
            for f in factors
        ],
        ("analyze every corpus case in one process", "corpus", "corpus_cpu"),
    ]:
        slow, fast = (median(f"{label}|{key}", field) for label in labels)
        rows.append([what, f"{slow:.2f}", f"{fast:.2f}", f"{slow / fast:.2f}x"])
    replay = [median(f"{label}|corpus", "replay_cpu") for label in labels]
    rows.insert(
        1,
        [
            "rule evaluation rate, facts/s",
            *(f"{sample['asserted'] / seconds:,.0f}" for seconds in replay),
            f"{replay[0] / replay[1]:.2f}x",
        ],
    )
    print(
        f"Python {sys.version.split()[0]}, {os.cpu_count()} cores; median of {args.rounds} rounds"
    )
    table(
        "durable-rules engine: CPU seconds, release flags vs -O2 -DNDEBUG",
        ["measure", labels[0], labels[1], "speed-up"],
        rows,
    )


if __name__ == "__main__":
    main()
