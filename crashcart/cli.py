"""The ``crashcart`` command line.

Exit codes: 0 nothing found, 1 diagnoses found, 2 usage or input error (one line on stderr,
never a traceback). Results go to stdout; errors and warnings to stderr.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

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


def fail(message: str) -> None:
    """Print one clear error line and exit 2."""
    click.echo(f"crashcart: error: {message}", err=True)
    sys.exit(EXIT_ERROR)


def report_rule_errors(errors: list[RuleError]) -> None:
    """Print every rule problem, compiler style, on stderr."""
    for problem in errors:
        click.echo(problem.render(), err=True)


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
        raise  # unreachable: fail() exits


#: The same ``--rules`` option for every command that loads rules.
rules_option = click.option(
    "--rules",
    "rule_dirs",
    multiple=True,
    type=click.Path(path_type=Path),
    help="Extra rule directory or file (repeatable); same id overrides a shipped rule.",
)

#: The same ``--hang-after`` option for ``watch`` and ``tui``.
hang_after_option = click.option(
    "--hang-after",
    type=click.FloatRange(min=0.1),
    default=300.0,
    show_default=True,
    help="Minimum silence (seconds) before a stalled run is reported as a hang.",
)


EPILOG = """\b
Examples:
  crashcart analyze train.log          root cause, evidence and fix of one log
  crashcart analyze runs/job-42/       a run directory: every rank's log, one run
  crashcart analyze --json train.log   the versioned JSON report
  crashcart analyze --format sarif -o crashcart.sarif train.log
  tail -f train.log | crashcart watch  diagnose a live run as it prints
  crashcart tui runs/                  browse runs and diagnoses in the terminal
  crashcart rules lint my-rules/ && crashcart rules test my-rules/

\b
Exit codes:
  0    nothing found (a healthy log)
  1    diagnoses found; eval below a threshold; a rule test failed;
       a probe confirmed its diagnosis
  2    usage or input error (one line on stderr)
  130  interrupted (Ctrl-C)
"""

#: Help text is wrapped to the terminal up to this width; short helps are written to fit.
CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


@click.group(context_settings=CONTEXT, epilog=EPILOG)
@click.version_option(__version__, prog_name="crashcart")
def cli() -> None:
    """Diagnose crashed deep-learning training runs from their logs."""


@cli.command(short_help="Diagnose a log, several logs or a run directory.")
@click.argument("paths", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True, help="Print the versioned JSON report.")
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json", "sarif"]),
    help="Report format: text (default), json (as --json), sarif (SARIF 2.1.0, code scanning).",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    help="Write the report to FILE instead of stdout.",
)
@click.option(
    "-q", "--quiet", is_flag=True, help="Print no report; the exit code says what was found."
)
@click.option("--top", type=click.IntRange(min=1), help="Show only the N best diagnoses.")
@click.option(
    "--facts",
    "show_facts",
    is_flag=True,
    help="Print the facts the parsers extracted (JSON Lines), for writing and debugging rules.",
)
@rules_option
@click.option(
    "--probe", "run_probes", is_flag=True, help="Run the top diagnoses' probes on this machine."
)
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
        click.echo(errors_warning(count, examples), err=True)
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


@cli.command(short_help="Follow logs or stdin and report diagnoses live.")
@click.argument("paths", nargs=-1)
@click.option("--json", "as_json", is_flag=True, help="Print JSON Lines events, flushed at once.")
@click.option("--poll", is_flag=True, default=None, help="Poll files instead of using file events.")
@click.option(
    "--glob",
    "globs",
    multiple=True,
    help="File names to follow in directories (repeatable; default *.log *.txt *.out *.err).",
)
@click.option("--from-end", is_flag=True, help="Start at the end of existing files (like tail -f).")
@click.option(
    "--exec", "exec_command", help="Run this shell command for each new diagnosis, JSON on stdin."
)
@click.option(
    "--exec-timeout",
    type=click.FloatRange(min=0.1),
    default=30.0,
    show_default=True,
    help="Seconds before an --exec command is stopped.",
)
@hang_after_option
@rules_option
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


@cli.command(short_help="Watch a directory of runs in a terminal UI.")
@click.argument("directory", default=".")
@click.option("--poll", is_flag=True, default=None, help="Poll files instead of using file events.")
@click.option(
    "--glob",
    multiple=True,
    help="File names to follow (repeatable; default *.log *.txt *.out *.err).",
)
@hang_after_option
@rules_option
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


@cli.command(
    short_help="Check a diagnosis on this machine (GPU, NCCL, disk...).",
    # The names go in the help text, wrapped between words; as a choice metavar the usage line
    # would break them mid-word.
    help="Run probe NAME on this machine, or the probes of the top diagnoses of --for LOG.\n\n"
    f"NAME is one of: {', '.join(probe_names())}.",
)
@click.argument("name", required=False, metavar="[NAME]", type=click.Choice(probe_names()))
@click.option(
    "--for", "log", type=click.Path(path_type=Path), help="Probe the top diagnoses of this log."
)
@click.option("--context", "context_json", help="JSON context for a probe run by NAME.")
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
def probe(name: str | None, log: Path | None, context_json: str | None, as_json: bool) -> None:
    """Run probe NAME on this machine, or the probes of the top diagnoses of --for LOG."""
    from .analyzer import analyze_sources
    from .parsers.sources import InputError, resolve
    from .probes import run_probe
    from .report import make_console, render_probe

    if (name is None) == (log is None):
        fail("give a probe NAME or --for LOG (see crashcart probe --help)")
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
            click.echo("no diagnosis of this log names a probe", err=True)
    if as_json:
        click.echo(json.dumps(results, indent=2))
    else:
        console = make_console()
        for result in results:
            render_probe(console, result)
    statuses = {r["status"] for r in results}
    sys.exit(EXIT_FOUND if "confirmed" in statuses else EXIT_CLEAN)


@cli.command("eval", short_help="Measure accuracy on a corpus of cases.")
@click.argument("corpus", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
@click.option("--min-top1", type=click.FloatRange(0, 1), help="Exit 1 if top-1 accuracy is lower.")
@click.option("--min-top3", type=click.FloatRange(0, 1), help="Exit 1 if top-3 accuracy is lower.")
@click.option(
    "--max-false-alarms", type=click.IntRange(min=0), help="Exit 1 on more healthy-run alarms."
)
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(min=1),
    help="Cases analysed at once, in separate processes [default: the number of cores; 1: serial].",
)
@rules_option
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
        click.echo(json.dumps(to_json(results), indent=2))
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
        click.echo("crashcart: below threshold: " + "; ".join(failed), err=True)
        sys.exit(EXIT_FOUND)


@cli.group()
def rules() -> None:
    """Write, check and test rules."""


def _rule_paths(paths: tuple[Path, ...]) -> list[Path]:
    from .engine.rules import shipped_rules_dir

    for path in paths:
        if not path.exists():
            fail(f"no such file or directory: {path}")
    return list(paths) or [shipped_rules_dir()]


@rules.command("lint", short_help="Check rule files for errors.")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
def rules_lint(paths: tuple[Path, ...]) -> None:
    """Check rule files (default: the shipped rules) for schema, semantic and style errors."""
    from .ruletools import lint

    errors = lint(_rule_paths(paths))
    if errors:
        report_rule_errors(errors)
        click.echo(f"{len(errors)} problem(s)", err=True)
        sys.exit(EXIT_ERROR)
    click.echo("rules are clean")


@rules.command("test", short_help="Run the rules' examples and the healthy logs.")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--healthy",
    "healthy_dirs",
    multiple=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="More healthy logs (a directory of logs or of corpus cases); no rule may fire on "
    "them. Repeatable. Always used: the shipped healthy examples and, in a checkout, the "
    "corpus's healthy cases.",
)
@click.option("--junitxml", type=click.Path(path_type=Path), help="Also write a JUnit XML report.")
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


@rules.command("list")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
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


@rules.command("show", short_help="Print one rule as it is written in its file.")
@click.argument("rule_id")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@rules_option
def rules_show(rule_id: str, paths: tuple[Path, ...], rule_dirs: tuple[Path, ...]) -> None:
    """Print one rule as it is written in its file (PATHS: rule directories besides the
    shipped ones, as for lint and test; --rules DIR still works)."""
    from .ruletools import rule_source

    rulebase = load_rulebase((*paths, *rule_dirs))
    rule = next((r for r in rulebase.rules if r.id == rule_id), None)
    if rule is None:
        fail(f"no rule with id {rule_id!r} (see crashcart rules list)")
    click.echo(f"# {rule.path}:{rule.line}")
    click.echo(rule_source(rule))


def main() -> None:
    """Console-script entry point: never lets a Python traceback reach the user."""
    try:
        cli.main(standalone_mode=False)
    except click.exceptions.Exit as done:
        sys.exit(done.exit_code)
    except click.ClickException as error:
        error.show()
        sys.exit(EXIT_ERROR)
    except click.exceptions.Abort:
        sys.exit(130)
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
        click.echo(
            f"crashcart: internal error: {type(error).__name__}: {error} "
            "(set CRASHCART_DEBUG=1 for the traceback)",
            err=True,
        )
        sys.exit(EXIT_ERROR)


if __name__ == "__main__":
    main()
