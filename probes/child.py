"""The child side of a probe: run one probe function and print its result as one JSON line.

The child owns stdout: before the probe runs, file descriptor 1 is pointed at stderr, so
whatever the probe or its libraries print (NCCL_DEBUG, CUDA warnings) cannot corrupt the
result, and the only thing on the real stdout is the final JSON object.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import traceback
from typing import Any

from crashcart.probes.base import STATUSES, Unavailable, jsonsafe


def execute(name: str, context: dict[str, Any]) -> dict[str, Any]:
    """Run probe ``name`` on ``context``; always a ``{status, summary, details}`` dict."""
    from crashcart.probes import REGISTRY  # the registry lives with the public API

    if name not in REGISTRY:
        return _unavailable(f"unknown probe {name!r}")
    module_name, function_name = REGISTRY[name]
    try:
        function = getattr(importlib.import_module(module_name), function_name)
        result = function(context)
    except Unavailable as exc:
        return _unavailable(exc.reason, exc.details)
    except Exception as exc:
        # A bug or an unexpected library error: report it as a fact, never as a crash.
        trace = traceback.format_exc().splitlines()[-8:]
        return _unavailable(f"probe failed: {type(exc).__name__}: {exc}", {"traceback": trace})
    if not isinstance(result, dict) or result.get("status") not in STATUSES:
        return _unavailable(f"probe returned a malformed result: {result!r:.200}")
    return result


def _unavailable(reason: str, details: dict[str, Any] | None = None) -> dict[str, Any]:
    """An ``unavailable`` result with ``reason`` as its summary."""
    return {
        "status": "unavailable",
        "summary": reason,
        "details": {"reason": reason, **(details or {})},
    }


def main(argv: list[str] | None = None) -> int:
    """``python -m crashcart.probes NAME [--context JSON]``: print the result on stdout."""
    parser = argparse.ArgumentParser(prog="python -m crashcart.probes", description=__doc__)
    parser.add_argument("name", help="the probe to run")
    parser.add_argument("--context", default="{}", help="what the diagnosis knows, as JSON")
    args = parser.parse_args(argv)
    try:
        context = json.loads(args.context)
    except json.JSONDecodeError as exc:
        context = None
        error = f"--context is not JSON: {exc}"
    if context is not None and not isinstance(context, dict):
        context, error = None, "--context must be a JSON object"
    result_stream = os.fdopen(os.dup(1), "w")
    sys.stdout.flush()
    os.dup2(2, 1)  # from here on, anything printed goes to stderr
    sys.stdout = sys.stderr
    result = _unavailable(error) if context is None else execute(args.name, context)
    result_stream.write(json.dumps(jsonsafe(result)) + "\n")
    result_stream.flush()
    return 0
