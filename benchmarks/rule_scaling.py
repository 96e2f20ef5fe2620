"""The cost of rules: 10x and 100x the shipped rule base, on the corpus (issue 15).

For each factor, generated ``line`` rules (one distinct pattern each, the shape of a rule
written from one log line) are added to the shipped ones, and a fresh child process measures:
parsing and checking the rule files, building the durable-rules rulesets, compiling the
prefilter of the rules' patterns (with an empty prefilter cache, then cached), and analysing
every corpus case in that one process. Prints the times and their ratio to the shipped rules
(the corpus in CPU seconds of the child, since other jobs share the machine's cores, and wall
seconds); the target is the corpus analysed within 1.5x of the shipped rules' time.

x100 is past the loader's limit of rules loaded at once (``MAX_RULES``); the child lifts it, and
the table says so.

Run it directly: ``python benchmarks/rule_scaling.py [--factors 1,10,100] [--cases N]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

RULE = (
    "---\nid: config_error.generated_{i}\ncategory: config_error\ntitle: generated {i}\n"
    'confidence: 0.5\nwhen:\n  all:\n    - fact: line\n      regex: "custom failure E{i:05d} in '
    '(?P<where>\\\\w+)"\nsummary: generated rule {i} matched in {{where}}\n'
    'fixes:\n  - title: nothing\n    command: "true"\n'
)


def child(directory: str, cases: int) -> None:
    """In a fresh process: load, build and analyse; print the times as JSON."""
    from crashcart.analyzer import RuleBase, analyze
    from crashcart.engine import rules as rules_module
    from crashcart.engine.durable import RuleSession
    from crashcart.evaluate import load_cases

    rules_module.MAX_RULES = 1_000_000  # x100 is past the shipped limit: measured anyway
    started = time.perf_counter()
    rules = rules_module.load_rules([Path(directory)] if directory else [])
    parsed = time.perf_counter()
    RuleSession(rules).build()  # the durable-rules rulesets alone (built before first facts)
    durable = time.perf_counter()
    rulebase = RuleBase(rules)  # the prefilter (cached on disk or not); rulesets at first fact
    rulebase.session.build()
    built = time.perf_counter()
    prefilter = rulebase.rule_patterns.prefilter
    corpus = [d for d, _ in load_cases(ROOT / "corpus")][:cases]
    analysed, cpu = time.perf_counter(), time.process_time()
    for case in corpus:
        analyze([case], rulebase)
    done, cpu = time.perf_counter(), time.process_time() - cpu
    print(
        json.dumps(
            {
                "rules": len(rules),
                "parse": parsed - started,
                "durable": durable - parsed,
                "rulebase": built - durable,
                "engine": prefilter.engine if prefilter else "none",
                "cases": len(corpus),
                "analyse": done - analysed,
                "analyse_cpu": cpu,
            }
        )
    )


def measure(factor: int, shipped: int, cases: int, cache: str) -> dict[str, float]:
    """Run the child for ``factor`` times the shipped rules; its figures."""
    with tempfile.TemporaryDirectory(prefix="rule-scaling-") as directory:
        extra = shipped * factor - shipped
        if extra:
            for start in range(0, extra, 1000):  # a rule file holds at most 1 MiB
                text = "".join(RULE.format(i=i) for i in range(start, min(extra, start + 1000)))
                Path(directory, f"generated{start // 1000:03d}.yaml").write_text(text)
        done = subprocess.run(
            [
                sys.executable,
                __file__,
                "--child",
                directory if extra else "",
                "--cases",
                str(cases),
            ],
            capture_output=True,
            text=True,
            env={**os.environ, "XDG_CACHE_HOME": cache},
            check=False,
        )
    if done.returncode:
        raise SystemExit(f"x{factor} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.splitlines()[-1])


def main() -> int:
    """Measure each factor twice (prefilter cache empty, then filled); print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--factors", default="1,10,100")
    parser.add_argument("--cases", type=int, default=10_000, help="corpus cases analysed")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        child(args.child, args.cases)
        return 0
    from crashcart.engine.rules import load_rules

    shipped = len(load_rules())
    print(
        f"{'rules':>14} {'parse s':>8} {'durable s':>9} {'build cold s':>12} "
        f"{'build cached s':>14} {'prefilter':>9} {'corpus CPU s':>12} {'vs x1':>6} {'wall s':>7}"
    )
    baseline = None
    with tempfile.TemporaryDirectory(prefix="rule-scaling-cache-") as cache:
        for factor in (int(f) for f in args.factors.split(",")):
            cold = measure(factor, shipped, args.cases, cache)
            warm = measure(factor, shipped, args.cases, cache)
            baseline = baseline or warm["analyse_cpu"]
            label = f"x{factor} ({warm['rules']})"
            print(
                f"{label:>14} {warm['parse']:>8.2f} "
                f"{warm['durable']:>9.2f} {cold['rulebase']:>12.2f} {warm['rulebase']:>14.2f} "
                f"{warm['engine']:>9} {warm['analyse_cpu']:>12.2f} {warm['analyse_cpu'] / baseline:>5.2f}x "
                f"{warm['analyse']:>7.2f}",
                flush=True,
            )
    print(f"(corpus: {warm['cases']} cases analysed in one process; target: within 1.5x of x1)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
