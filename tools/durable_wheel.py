"""Build durable-rules' wheel for this interpreter from its released source, optimised.

durable-rules 2.0.28 (2020, its only release) ships source only, and its setup.py replaces
``CFLAGS``: the C engine is then compiled without ``-O2`` and ``-DNDEBUG``, and on Python 3.13,
which removed ``PyEval_CallObject``, it does not build (GCC 14) or builds a module that fails on
import (older GCC). ``CPPFLAGS`` still reaches the compiler, so this script builds the wheel with

- ``-O2 -DNDEBUG`` on every interpreter, and
- ``-DPyEval_CallObject=PyObject_CallObject`` on 3.13 and later (the change upstream merged
  in 2025 without a release; earlier versions define the name themselves),

from the release's sdist, pinned by its hash, with pip's cache off (pip would otherwise reuse a
wheel it built earlier without these flags). The wheel is kept in
``wheels/durable-rules/<interpreter ABI>-<flags digest>/`` and built again only when that
folder is missing. docs/decisions.md says why this route.

Usage, with the interpreter crashcart will run on (or name it with ``--python``)::

    python tools/durable_wheel.py              # build if needed; print the wheel's path
    python tools/durable_wheel.py --install    # ... and install it into this interpreter
    python tools/durable_wheel.py --unoptimised  # the flags of the release (for benchmarks)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

VERSION = "2.0.28"
#: sha256 of durable_rules-2.0.28.tar.gz as published on PyPI.
SDIST_SHA256 = "053b26f5e48d312d4fa27995243f954671be6eece477f150c059c364eb4d7d61"
OPTIMISE = "-O2 -DNDEBUG"
#: Python 3.13 removed PyEval_CallObject; PyObject_CallObject takes the same arguments.
PY313_COMPAT = "-DPyEval_CallObject=PyObject_CallObject"
DEFAULT_DEST = Path(__file__).resolve().parent.parent / "wheels" / "durable-rules"
_DESCRIBE = """\
import importlib.util, json, sys, sysconfig
print(json.dumps({"version": sys.version_info[:2], "pip": bool(importlib.util.find_spec("pip")),
    "abi": sysconfig.get_config_var("EXT_SUFFIX") or sys.implementation.cache_tag}))
"""


@dataclass
class Target:
    """The interpreter the wheel is for."""

    python: str
    version: tuple[int, int]
    abi: str  # e.g. "cpython-313-x86_64-linux-gnu"
    pip: list[str]  # how to run pip for it

    @classmethod
    def of(cls, python: str) -> Target:
        """Ask ``python`` what it is; a venv made ``--without-pip`` gets this script's pip."""
        found = json.loads(subprocess.check_output([python, "-c", _DESCRIBE], text=True))
        abi = found["abi"].removeprefix(".").removesuffix(".so").removesuffix(".pyd")
        pip = [python, "-m", "pip"] if found["pip"] else [sys.executable, "-m", "pip"]
        pip += [] if found["pip"] else ["--python", python]
        return cls(python, tuple(found["version"]), abi, pip)


def cppflags(target: Target, *, optimised: bool = True) -> str:
    """The preprocessor/compiler flags ``target``'s build gets, after the user's own."""
    flags = [os.environ.get("CPPFLAGS", "")]
    if optimised:
        flags.append(OPTIMISE)
    if target.version >= (3, 13):
        flags.append(PY313_COMPAT)
    return " ".join(flag for flag in flags if flag)


def wheel_dir(target: Target, flags: str, dest: Path = DEFAULT_DEST) -> Path:
    """Where the wheel built with ``flags`` for ``target``'s ABI is kept."""
    digest = hashlib.sha256(flags.encode()).hexdigest()[:10]
    return dest / f"{target.abi}-{digest}"


def build(target: Target, flags: str, dest: Path = DEFAULT_DEST) -> Path:
    """The wheel built with ``flags`` for ``target``, building it first when it is not there."""
    folder = wheel_dir(target, flags, dest)
    existing = sorted(folder.glob("durable_rules-*.whl"))
    if existing:
        return existing[0]
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest, prefix=".building-") as scratch:
        requirement = Path(scratch, "requirement.txt")
        requirement.write_text(f"durable-rules=={VERSION} --hash=sha256:{SDIST_SHA256}\n")
        out = Path(scratch, "out")
        command = [
            *(*target.pip, "wheel", "--quiet", "--no-deps"),
            # Off: pip's cache may hold a wheel built without our flags, and would reuse it.
            "--no-cache-dir",
            # Old pips (3.10's venvs have 23.0) would otherwise call setup.py bdist_wheel directly.
            "--use-pep517",
            *("--no-binary", "durable-rules", "--wheel-dir", str(out), "-r", str(requirement)),
        ]
        print(f"building durable-rules {VERSION} with CPPFLAGS={flags!r}", file=sys.stderr)
        subprocess.run(command, check=True, env={**os.environ, "CPPFLAGS": flags})
        # Moved into place whole, so a build that was interrupted never counts as done; a
        # build that ran at the same time and finished first is as good as this one.
        try:
            out.rename(folder)
        except OSError:
            if not folder.is_dir():
                raise
    return next(folder.glob("durable_rules-*.whl"))


def install(target: Target, wheel: Path) -> None:
    """Install ``wheel`` into ``target``'s environment, replacing any other build."""
    subprocess.run(
        [*target.pip, "install", "--quiet", "--no-deps", "--force-reinstall", str(wheel)],
        check=True,
    )


def main() -> int:
    """Build (if needed), print the wheel's path, optionally install it."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--install", action="store_true", help="install it into this Python")
    parser.add_argument(
        "--unoptimised", action="store_true", help="the release's own flags (no -O2 -DNDEBUG)"
    )
    parser.add_argument("--dest", type=Path, default=DEFAULT_DEST, help="where wheels are kept")
    parser.add_argument("--python", default=sys.executable, help="the interpreter (this one)")
    args = parser.parse_args()
    try:
        target = Target.of(args.python)
        wheel = build(target, cppflags(target, optimised=not args.unoptimised), args.dest)
        if args.install:
            install(target, wheel)
    except (subprocess.CalledProcessError, OSError) as error:
        print(f"durable_wheel: {error}", file=sys.stderr)
        return 2
    print(wheel)
    return 0


if __name__ == "__main__":
    sys.exit(main())
