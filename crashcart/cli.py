"""The ``crashcart`` command line.

Exit codes: 0 nothing found, 1 diagnoses found, 2 usage or input error (one line on stderr,
never a traceback). Results go to stdout; errors and warnings to stderr.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import click

from . import __version__
from .analyzer import RuleBase, analyze_sources
from .engine.rules import RuleLoadError
from .parsers.sources import InputError, resolve
from .report import make_console, render_json, render_text

EXIT_CLEAN, EXIT_FOUND, EXIT_ERROR = 0, 1, 2


def fail(message: str) -> None:
    """Print one clear error line and exit 2."""
    click.echo(f"crashcart: error: {message}", err=True)
    sys.exit(EXIT_ERROR)


def load_rulebase(rule_dirs: tuple[Path, ...]) -> RuleBase:
    """Load the shipped rules plus ``--rules`` directories, or exit 2 listing every problem."""
    for directory in rule_dirs:
        if not directory.exists():
            fail(f"no such rules directory: {directory}")
    try:
        return RuleBase.load(rule_dirs)
    except RuleLoadError as error:
        for problem in error.errors:
            click.echo(problem.render(), err=True)
        fail(f"{len(error.errors)} problem(s) in rule files; nothing was analysed")
        raise  # unreachable: fail() exits


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="crashcart")
def cli() -> None:
    """Diagnose crashed deep-learning training runs from their logs."""


@cli.command()
@click.argument("paths", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True, help="Print the versioned JSON report.")
@click.option("--top", type=click.IntRange(min=1), help="Show only the N best diagnoses.")
@click.option(
    "--facts",
    "show_facts",
    is_flag=True,
    help="Print the facts the parsers extracted (JSON Lines), for writing and debugging rules.",
)
@click.option(
    "--rules",
    "rule_dirs",
    multiple=True,
    type=click.Path(path_type=Path),
    help="Extra rule directory or file (repeatable); same id overrides a shipped rule.",
)
def analyze(
    paths: tuple[str, ...],
    as_json: bool,
    top: int | None,
    show_facts: bool,
    rule_dirs: tuple[Path, ...],
) -> None:
    """Analyse PATHS as one run: files (plain or .gz), a run directory, or - for stdin."""
    try:
        sources = [source for path in paths for source in resolve(path)]
    except InputError as error:
        fail(str(error))
    rulebase = load_rulebase(rule_dirs)
    try:
        report = analyze_sources(sources, rulebase)
    except InputError as error:
        fail(str(error))
    if show_facts:
        for fact in report.facts:
            click.echo(json.dumps(fact, ensure_ascii=False))
    elif as_json:
        render_json(report, sys.stdout, top)
    else:
        render_text(report, make_console(), top)
    sys.exit(EXIT_FOUND if report.diagnoses else EXIT_CLEAN)


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
