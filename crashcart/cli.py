"""The ``crashcart`` command line.

Exit codes: 0 nothing found, 1 diagnoses found, 2 usage or input error (one line on stderr,
never a traceback). Results go to stdout; errors and warnings to stderr.

Built on :mod:`argparse`: the standard library's parser costs a few milliseconds to import
where click cost about 40, and ``crashcart analyze`` on a small log is mostly start-up
(benchmarks/README.md, "Start-up").
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from . import __version__
from .probes import probe_names

if TYPE_CHECKING:
    from .analyzer import RuleBase
    from .engine.diagnosis import Diagnosis
    from .engine.rules import RuleError

# Each command imports what it uses when it runs: `crashcart analyze` on a small log is mostly
# start-up, and the pipeline, the rules loader, rich, watchdog and the evaluation harness each
# cost tens of milliseconds to import (benchmarks/README.md, "Start-up").

EXIT_CLEAN, EXIT_FOUND, EXIT_ERROR = 0, 1, 2


def echo(text: str, err: bool = False) -> None:
    """Print one line to stdout, or to stderr with ``err``."""
    print(text, file=sys.stderr if err else sys.stdout)


def fail(message: str) -> NoReturn:
    """Print one clear error line and exit 2."""
    echo(f"crashcart: error: {message}", err=True)
    sys.exit(EXIT_ERROR)


def report_rule_errors(errors: list[RuleError]) -> None:
    """Print every rule problem, compiler style, on stderr."""
    for problem in errors:
        echo(problem.render(), err=True)


def load_rulebase(rule_dirs: tuple[Path, ...]) -> RuleBase:
    """Load the shipped rules, the user's configured rules and ``--rules``, or exit 2."""
    from .analyzer import RuleBase
    from .engine.rules import RuleLoadError
    from .settings import SettingsError, load_settings

    try:
        settings = load_settings(rule_dirs)
    except SettingsError as error:
        fail(str(error))
    for directory in settings.dirs:
        if not directory.exists():
            fail(f"no such rules directory: {directory}")
    try:
        return RuleBase.load(settings.dirs, settings.disable)
    except RuleLoadError as error:
        report_rule_errors(error.errors)
        fail(f"{len(error.errors)} problem(s) in rule files; nothing was analysed")


def analyze(
    paths: tuple[str, ...],
    as_json: bool,
    output_format: str | None,
    output: Path | None,
    quiet: bool,
    top: int | None,
    show_facts: bool,
    rule_dirs: tuple[Path, ...],
    run_probes: bool,
) -> None:
    """Analyse PATHS as one run: files (plain or .gz), a run directory, or - for stdin.

    On a terminal a healthy log says so in one line; piped, it prints nothing (exit code 0).
    """
    from .analyzer import analyze_sources, errors_warning
    from .parsers.sources import InputError, resolve

    if as_json and output_format not in (None, "json"):
        fail(f"--json and --format {output_format} disagree: give one of them")
    output_format = output_format or ("json" if as_json else "text")
    try:
        sources = [source for path in paths for source in resolve(path)]
    except InputError as error:
        fail(str(error))
    rulebase = load_rulebase(rule_dirs)
    try:
        report = analyze_sources(sources, rulebase, probe=run_probes)
    except InputError as error:
        fail(str(error))
    if report.stats.get("parse_errors"):
        count, examples = report.stats["parse_errors"], report.stats["parse_error_examples"]
        echo(errors_warning(count, examples), err=True)
    found = EXIT_FOUND if report.diagnoses else EXIT_CLEAN
    if quiet and output is None:
        sys.exit(found)
    try:
        out = output.open("w", encoding="utf-8") if output else sys.stdout
    except OSError as error:
        fail(f"cannot write {output}: {error.strerror}")
    with out if output else contextlib.nullcontext(out):
        if show_facts:
            for fact in report.facts:
                out.write(json.dumps(fact, ensure_ascii=False) + "\n")
        elif output_format == "json":
            from .report import render_json

            render_json(report, out, top)
        elif output_format == "sarif":
            from .sarif import to_sarif

            json.dump(to_sarif(report, rulebase, top), out, indent=2, ensure_ascii=False)
            out.write("\n")
        elif report.diagnoses or out.isatty():  # else nothing to print: rich is not imported
            from .report import render_text, report_console

            console = report_console(out)
            render_text(report, console, top)
            if not report.diagnoses:
                # Silence on a terminal looks like a hang or a crash; a pipe keeps "nothing".
                console.print(f"no problem found: {', '.join(paths)} looks healthy")
    sys.exit(found)


def watch(
    paths: tuple[str, ...],
    as_json: bool,
    poll: bool | None,
    globs: tuple[str, ...],
    from_end: bool,
    exec_command: str | None,
    exec_timeout: float,
    hang_after: float,
    rule_dirs: tuple[Path, ...],
) -> None:
    """Follow PATHS (files, run directories, or - for stdin) and report diagnoses live.

    With no PATHS, stdin is read when it is a pipe. Each directory is one run. Exit codes as
    analyze when stdin ends; Ctrl-C stops with a summary on stderr.
    """
    from .parsers.follow import DEFAULT_GLOBS
    from .report import make_console, render_diagnosis
    from .watch import Watcher

    targets = [p for p in paths if p != "-"]
    use_stdin = "-" in paths or (not paths and not sys.stdin.isatty())
    if not targets and not use_stdin:
        fail("nothing to watch: give files or directories, or pipe a log into stdin")
    for target in targets:
        if not Path(target).exists():
            fail(f"no such file or directory: {target}")
    rulebase = load_rulebase(rule_dirs)
    console = make_console()

    def render(position: int, diagnosis: Diagnosis, label: str) -> None:
        console.print(f"-- {label}", style="dim", highlight=False)
        render_diagnosis(console, position, diagnosis)

    watcher = Watcher(
        targets,
        use_stdin=use_stdin,
        rulebase=rulebase,
        out=sys.stdout,
        json_lines=as_json,
        render=render,
        poll=True if poll else None,
        globs=globs or DEFAULT_GLOBS,
        exec_command=exec_command,
        exec_timeout=exec_timeout,
        hang_after=hang_after,
        from_start=not from_end,
    )
    sys.exit(watcher.run())


def tui(
    directory: str,
    poll: bool | None,
    glob: tuple[str, ...],
    hang_after: float,
    rule_dirs: tuple[Path, ...],
) -> None:
    """Watch DIRECTORY (default: here) in a terminal UI: runs, diagnoses, evidence, fixes."""
    from .parsers.follow import DEFAULT_GLOBS
    from .settings import SettingsError, load_settings

    if not Path(directory).is_dir():
        fail(f"no such directory: {directory}")
    try:
        custom = load_settings(rule_dirs)
    except SettingsError as error:
        fail(str(error))
    # Only the shipped rules load in the UI's background (a fast first screen); user rules load
    # here, so a broken rule file is reported with its line and column before the UI starts.
    rulebase = load_rulebase(rule_dirs) if custom.dirs or custom.disable else None
    from .tui import run_tui  # Textual loads only for this command

    status = run_tui(
        directory,
        poll=True if poll else None,
        globs=glob or DEFAULT_GLOBS,
        rulebase=rulebase,
        hang_after=hang_after,
    )
    sys.exit(status)  # 2 after an unexpected error in the UI, never 0


def probe(name: str | None, log: Path | None, context_json: str | None, as_json: bool) -> None:
    """Run probe NAME on this machine, or the probes of the top diagnoses of --for LOG."""
    from .analyzer import analyze_sources
    from .parsers.sources import InputError, resolve
    from .probes import run_probe
    from .report import make_console, render_probe

    if (name is None) == (log is None):
        fail("give a probe NAME or --for LOG (see crashcart probe --help)")
    if name is not None and name not in probe_names():
        fail(f"no probe named {name!r}: one of {', '.join(probe_names())}")
    if name is not None:
        try:
            context = json.loads(context_json) if context_json else {}
        except json.JSONDecodeError as error:
            fail(f"--context is not valid JSON: {error}")
        results = [run_probe(name, context).to_dict()]
    else:
        try:
            report = analyze_sources(resolve(str(log)), load_rulebase(()), probe=True)
        except InputError as error:
            fail(str(error))
        results = [d.probe for d in report.diagnoses if d.probe]
        if not results:
            echo("no diagnosis of this log names a probe", err=True)
    if as_json:
        echo(json.dumps(results, indent=2))
    else:
        console = make_console()
        for result in results:
            render_probe(console, result)
    statuses = {r["status"] for r in results}
    sys.exit(EXIT_FOUND if "confirmed" in statuses else EXIT_CLEAN)


def eval_command(
    corpus: Path,
    as_json: bool,
    min_top1: float | None,
    min_top3: float | None,
    max_false_alarms: int | None,
    jobs: int | None,
    rule_dirs: tuple[Path, ...],
) -> None:
    """Measure accuracy on a corpus of cases (every expected.yaml below CORPUS)."""
    from .evaluate import CorpusError, default_jobs, evaluate, summary, to_json
    from .parsers.sources import InputError
    from .report import make_console, render_eval

    rulebase = load_rulebase(rule_dirs)
    try:
        results = evaluate(corpus, rulebase, jobs or default_jobs())
    except (CorpusError, InputError) as error:
        fail(str(error))
    totals = summary(results)
    if as_json:
        echo(json.dumps(to_json(results), indent=2))
    else:
        render_eval(results, make_console())
    failed = [
        f"top-1 {totals['top1']:.3f} < {min_top1}"
        if min_top1 is not None and totals["top1"] < min_top1
        else "",
        f"top-3 {totals['top3']:.3f} < {min_top3}"
        if min_top3 is not None and totals["top3"] < min_top3
        else "",
        f"{totals['false_alarms']} false alarms > {max_false_alarms}"
        if max_false_alarms is not None and totals["false_alarms"] > max_false_alarms
        else "",
    ]
    failed = [reason for reason in failed if reason]
    if failed:
        echo("crashcart: below threshold: " + "; ".join(failed), err=True)
        sys.exit(EXIT_FOUND)


def _rule_paths(paths: tuple[Path, ...]) -> list[Path]:
    from .engine.rules import shipped_rules_dir

    for path in paths:
        if not path.exists():
            fail(f"no such file or directory: {path}")
    return list(paths) or [shipped_rules_dir()]


def rules_lint(paths: tuple[Path, ...]) -> None:
    """Check rule files (default: the shipped rules) for schema, semantic and style errors."""
    from .ruletools import lint

    errors = lint(_rule_paths(paths))
    if errors:
        report_rule_errors(errors)
        echo(f"{len(errors)} problem(s)", err=True)
        sys.exit(EXIT_ERROR)
    echo("rules are clean")


def rules_test(
    paths: tuple[Path, ...], healthy_dirs: tuple[Path, ...], junitxml: Path | None
) -> None:
    """Run each rule's examples (fire / stay quiet) and the healthy logs against every rule."""
    from .analyzer import RuleBase
    from .engine.rules import shipped_rules_dir
    from .report import make_console, render_rule_results
    from .ruletools import default_healthy_dirs, healthy_logs, junit_xml, lint, run_tests

    targets = _rule_paths(paths)
    errors = lint(targets)
    if errors:
        report_rule_errors(errors)
        fail(f"{len(errors)} problem(s) in rule files; fix them before testing")
    shipped = targets == [shipped_rules_dir()]
    rulebase = RuleBase.load([] if shipped else targets)
    tested = [r for r in rulebase.rules if any(_within(r.path, t) for t in targets)]
    healthy = healthy_logs([*default_healthy_dirs(), *healthy_dirs])
    results = run_tests(tested, rulebase, healthy)
    render_rule_results(results, len(healthy), make_console())
    if junitxml:
        junitxml.write_text(junit_xml(results, len(healthy)), encoding="utf-8")
    sys.exit(EXIT_CLEAN if all(r.passed for r in results) else EXIT_FOUND)


def _within(path: str, target: Path) -> bool:
    resolved, target = Path(path).resolve(), target.resolve()
    return resolved == target or target in resolved.parents


def rules_list(paths: tuple[Path, ...]) -> None:
    """List rules: id, category, title and source file."""
    from .report import make_console

    rulebase = load_rulebase(tuple(paths))
    console = make_console()
    for rule in sorted(rulebase.rules, key=lambda r: r.id):
        console.print(
            f"{rule.id:<42} {rule.category:<20} {rule.title}  ({rule.path}:{rule.line})",
            highlight=False,
            soft_wrap=True,
        )


def rules_show(rule_id: str, paths: tuple[Path, ...], rule_dirs: tuple[Path, ...]) -> None:
    """Print one rule as it is written in its file (PATHS: rule directories besides the
    shipped ones, as for lint and test; --rules DIR still works)."""
    from .ruletools import rule_source

    rulebase = load_rulebase((*paths, *rule_dirs))
    rule = next((r for r in rulebase.rules if r.id == rule_id), None)
    if rule is None:
        fail(f"no rule with id {rule_id!r} (see crashcart rules list)")
    echo(f"# {rule.path}:{rule.line}")
    echo(rule_source(rule))


# -- the parser -----------------------------------------------------------------------------

DESCRIPTION = "Diagnose crashed deep-learning training runs from their logs."

EPILOG = """\
Examples:
  crashcart analyze train.log          root cause, evidence and fix of one log
  crashcart analyze runs/job-42/       a run directory: every rank's log, one run
  crashcart analyze --json train.log   the versioned JSON report
  crashcart analyze --format sarif -o crashcart.sarif train.log
  tail -f train.log | crashcart watch  diagnose a live run as it prints
  crashcart tui runs/                  browse runs and diagnoses in the terminal
  crashcart rules lint my-rules/ && crashcart rules test my-rules/

Exit codes:
  0    nothing found (a healthy log)
  1    diagnoses found; eval below a threshold; a rule test failed;
       a probe confirmed its diagnosis
  2    usage or input error (one line on stderr)
  130  interrupted (Ctrl-C)
"""

RULE_PATHS_HELP = "Rule directories or files (default: the shipped rules)."

#: Help text is wrapped to the terminal up to this width; short helps are written to fit.
MAX_HELP_WIDTH = 100


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions and epilogs as written (examples stay aligned); wrapped at 100 columns."""

    def __init__(self, prog: str) -> None:
        width = min(shutil.get_terminal_size().columns, MAX_HELP_WIDTH)
        super().__init__(prog, width=width, max_help_position=32)

    def _format_action(self, action: argparse.Action) -> str:
        text = super()._format_action(action)
        if action.nargs == argparse.PARSER:  # the commands, without a "COMMAND" line above
            text = text.split("\n", 1)[1]
        return text


class _Parser(argparse.ArgumentParser):
    """A usage error is one line on stderr and exit 2, naming the help to read."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, add_help=False, **kwargs)
        self.add_argument("-h", "--help", action="help", help="Show this help and exit.")

    def error(self, message: str) -> NoReturn:
        fail(f"{message} (see {self.prog} --help)")


def _at_least(minimum: float, kind: Callable[[str], Any] = float) -> Callable[[str], Any]:
    def convert(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{text} is below the minimum {minimum}")
        return value

    return convert


def _fraction(text: str) -> float:
    value = _at_least(0.0)(text)
    if value > 1:
        raise argparse.ArgumentTypeError(f"{text} is not between 0 and 1")
    return value


def _directory(text: str) -> Path:
    if not Path(text).is_dir():
        raise argparse.ArgumentTypeError(f"no such directory: {text}")
    return Path(text)


def _add_rules_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--rules",
        dest="rule_dirs",
        action="append",
        type=Path,
        default=[],
        metavar="PATH",
        help="Extra rule directory or file (repeatable); same id overrides a shipped rule.",
    )


def _add_hang_after_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--hang-after",
        type=_at_least(0.1),
        default=300.0,
        metavar="SECONDS",
        help="Minimum silence before a stalled run is reported as a hang (default: 300).",
    )


def _add_poll_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--poll", action="store_true", help="Poll files instead of using file events."
    )


def _as_written(docstring: str) -> str:
    first, _, rest = docstring.partition("\n")
    return f"{first}\n{textwrap.dedent(rest)}".strip()


def _command(
    commands: argparse._SubParsersAction,
    name: str,
    handler: Callable[..., None],
    summary: str,
    description: str | None = None,
) -> argparse.ArgumentParser:
    parser = commands.add_parser(
        name,
        help=summary,
        description=description or _as_written(handler.__doc__ or summary),
        formatter_class=_Formatter,
    )
    parser.set_defaults(handler=handler)
    return parser


def build_parser() -> argparse.ArgumentParser:
    """The whole command line: ``crashcart COMMAND [options]``, ``crashcart rules COMMAND``."""
    parser = _Parser(
        prog="crashcart", description=DESCRIPTION, epilog=EPILOG, formatter_class=_Formatter
    )
    parser.add_argument(
        "--version",
        action="version",
        version=f"crashcart {__version__}",
        help="Show the version and exit.",
    )
    commands = parser.add_subparsers(title="Commands", metavar="COMMAND", parser_class=_Parser)

    analyze_parser = _command(
        commands, "analyze", analyze, "Diagnose a log, several logs or a run directory."
    )
    analyze_parser.add_argument(
        "paths", nargs="+", metavar="PATH", help="A log (plain or .gz), a run directory, or -."
    )
    analyze_parser.add_argument(
        "--json", dest="as_json", action="store_true", help="Print the versioned JSON report."
    )
    analyze_parser.add_argument(
        "--format",
        dest="output_format",
        choices=["text", "json", "sarif"],
        help="Report format: text (default), json (as --json), sarif (SARIF 2.1.0, code scanning).",
    )
    analyze_parser.add_argument(
        "-o", "--output", type=Path, metavar="FILE", help="Write the report to FILE."
    )
    analyze_parser.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="Print no report; the exit code says what was found.",
    )
    analyze_parser.add_argument(
        "--top", type=_at_least(1, int), metavar="N", help="Show only the N best diagnoses."
    )
    analyze_parser.add_argument(
        "--facts",
        dest="show_facts",
        action="store_true",
        help="Print the facts the parsers extracted (JSON Lines), for writing and debugging rules.",
    )
    _add_rules_option(analyze_parser)
    analyze_parser.add_argument(
        "--probe",
        dest="run_probes",
        action="store_true",
        help="Run the top diagnoses' probes on this machine.",
    )

    watch_parser = _command(
        commands, "watch", watch, "Follow logs or stdin and report diagnoses live."
    )
    watch_parser.add_argument(
        "paths", nargs="*", metavar="PATH", help="A log, a run directory, or - for stdin."
    )
    watch_parser.add_argument(
        "--json", dest="as_json", action="store_true", help="Print JSON Lines events, flushed."
    )
    _add_poll_option(watch_parser)
    watch_parser.add_argument(
        "--glob",
        dest="globs",
        action="append",
        default=[],
        metavar="PATTERN",
        help="File names to follow in directories (repeatable; default *.log *.txt *.out *.err).",
    )
    watch_parser.add_argument(
        "--from-end",
        action="store_true",
        help="Start at the end of existing files (like tail -f).",
    )
    watch_parser.add_argument(
        "--exec",
        dest="exec_command",
        metavar="COMMAND",
        help="Run this shell command for each new diagnosis, JSON on stdin.",
    )
    watch_parser.add_argument(
        "--exec-timeout",
        type=_at_least(0.1),
        default=30.0,
        metavar="SECONDS",
        help="Seconds before an --exec command is stopped (default: 30).",
    )
    _add_hang_after_option(watch_parser)
    _add_rules_option(watch_parser)

    tui_parser = _command(commands, "tui", tui, "Watch a directory of runs in a terminal UI.")
    tui_parser.add_argument(
        "directory", nargs="?", default=".", help="The directory of runs (default: here)."
    )
    _add_poll_option(tui_parser)
    tui_parser.add_argument(
        "--glob",
        action="append",
        default=[],
        metavar="PATTERN",
        help="File names to follow (repeatable; default *.log *.txt *.out *.err).",
    )
    _add_hang_after_option(tui_parser)
    _add_rules_option(tui_parser)

    probe_parser = _command(
        commands,
        "probe",
        probe,
        "Check a diagnosis on this machine (GPU, NCCL, disk...).",
        # The names go in the description, wrapped between words; as choices in the usage
        # line argparse would list them all there.
        "Run probe NAME on this machine, or the probes of the top diagnoses of --for LOG.\n\n"
        + textwrap.fill(f"NAME is one of: {', '.join(probe_names())}.", width=88),
    )
    probe_parser.add_argument("name", nargs="?", metavar="NAME", help="The probe to run.")
    probe_parser.add_argument(
        "--for", dest="log", type=Path, metavar="LOG", help="Probe the top diagnoses of LOG."
    )
    probe_parser.add_argument(
        "--context", dest="context_json", metavar="JSON", help="JSON context for probe NAME."
    )
    probe_parser.add_argument(
        "--json", dest="as_json", action="store_true", help="Print the results as JSON."
    )

    eval_parser = _command(commands, "eval", eval_command, "Measure accuracy on a corpus of cases.")
    eval_parser.add_argument(
        "corpus", type=Path, help="A directory of cases (an expected.yaml beside each log)."
    )
    eval_parser.add_argument(
        "--json", dest="as_json", action="store_true", help="Print the results as JSON."
    )
    eval_parser.add_argument(
        "--min-top1", type=_fraction, metavar="F", help="Exit 1 if top-1 accuracy is lower."
    )
    eval_parser.add_argument(
        "--min-top3", type=_fraction, metavar="F", help="Exit 1 if top-3 accuracy is lower."
    )
    eval_parser.add_argument(
        "--max-false-alarms",
        type=_at_least(0, int),
        metavar="N",
        help="Exit 1 on more healthy-run alarms.",
    )
    eval_parser.add_argument(
        "-j",
        "--jobs",
        type=_at_least(1, int),
        metavar="N",
        help="Cases analysed at once, in separate processes (default: the number of cores; "
        "1: serial).",
    )
    _add_rules_option(eval_parser)

    rules_parser = commands.add_parser(
        "rules",
        help="Write, check and test rules.",
        description="Write, check and test rules.",
        formatter_class=_Formatter,
    )
    rules_parser.set_defaults(handler=None, parser=rules_parser)
    rule_commands = rules_parser.add_subparsers(
        title="Commands", metavar="COMMAND", parser_class=_Parser
    )
    lint_parser = _command(rule_commands, "lint", rules_lint, "Check rule files for errors.")
    lint_parser.add_argument("paths", nargs="*", type=Path, metavar="PATH", help=RULE_PATHS_HELP)
    test_parser = _command(
        rule_commands, "test", rules_test, "Run the rules' examples and the healthy logs."
    )
    test_parser.add_argument("paths", nargs="*", type=Path, metavar="PATH", help=RULE_PATHS_HELP)
    test_parser.add_argument(
        "--healthy",
        dest="healthy_dirs",
        action="append",
        type=_directory,
        default=[],
        metavar="DIR",
        help="More healthy logs (a directory of logs or of corpus cases); no rule may fire "
        "on them. Repeatable. Always used: the shipped healthy examples and, in a checkout, "
        "the corpus's healthy cases.",
    )
    test_parser.add_argument(
        "--junitxml", type=Path, metavar="FILE", help="Also write a JUnit XML report."
    )
    list_parser = _command(
        rule_commands, "list", rules_list, "List rules: id, category, title and source file."
    )
    list_parser.add_argument("paths", nargs="*", type=Path, metavar="PATH", help=RULE_PATHS_HELP)
    show_parser = _command(
        rule_commands, "show", rules_show, "Print one rule as it is written in its file."
    )
    show_parser.add_argument("rule_id", help="The rule's id (see crashcart rules list).")
    show_parser.add_argument(
        "paths", nargs="*", type=Path, metavar="PATH", help="Rule directories or files to add."
    )
    _add_rules_option(show_parser)
    parser.set_defaults(handler=None, parser=parser)
    return parser


def run(argv: list[str] | None = None) -> None:
    """Parse ``argv`` (default: the process's arguments) and run the command; exits."""
    parser = build_parser()
    arguments = vars(parser.parse_args(argv))
    handler = arguments.pop("handler")
    group = arguments.pop("parser", parser)
    if handler is None:  # `crashcart` or `crashcart rules` with no command: show what there is
        group.print_help(sys.stderr)
        sys.exit(EXIT_ERROR)
    handler(**{k: tuple(v) if isinstance(v, list) else v for k, v in arguments.items()})
    sys.exit(EXIT_CLEAN)


def main() -> None:
    """Console-script entry point: never lets a Python traceback reach the user."""
    try:
        run()
    except KeyboardInterrupt:
        sys.exit(130)
    except BrokenPipeError:
        # The reader went away (| head); exit quietly like other Unix tools.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(EXIT_ERROR)
    except Exception as error:
        if os.environ.get("CRASHCART_DEBUG"):
            raise
        echo(
            f"crashcart: internal error: {type(error).__name__}: {error} "
            "(set CRASHCART_DEBUG=1 for the traceback)",
            err=True,
        )
        sys.exit(EXIT_ERROR)


if __name__ == "__main__":
    main()
