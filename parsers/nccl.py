"""NCCL and gloo errors, NCCL WARN lines, collective timeouts and store/rendezvous timeouts.

NCCL errors as torch raises them (one message, several lines joined by ``\\n``)::

    torch.distributed.DistBackendError: NCCL error in: /opt/conda/.../ProcessGroupNCCL.cpp:1331,
    unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.18.5
    ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error.
    Last error:
    socketStartConnect: Connect to 127.0.0.1<45069> failed : Software caused connection abort

NCCL's own warnings (``NCCL INFO`` lines are chatter and are ignored)::

    node1:12345:12399 [0] misc/socket.cc:538 NCCL WARN Net : Connection closed by remote peer 10.0.0.2<35011>
    ng30903:3063028:3066152 [3] include/alloc.h:178 NCCL WARN Cuda failure 'out of memory'

Collective and store timeouts::

    [E ProcessGroupNCCL.cpp:475] [Rank 0] Watchdog caught collective operation timeout:
    WorkNCCL(SeqNum=2, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for
    1800328 milliseconds before timing out.
    RuntimeError: [/path/gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting 5000ms for recv operation to complete
    torch.distributed.DistStoreError: Timed out after 901 seconds waiting for clients. 1/2 clients joined.

Kinds: ``nccl_error`` (code, version, cuda_failure, last_error, message), ``nccl_warn``
(subsystem, message, cuda_failure, gpu), ``collective_timeout`` (backend, op, seq_num,
timeout_ms, ran_ms, rank), ``peer_closed`` (backend, peer), ``store_timeout`` (message,
timeout_s, joined, expected).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from .base import Draft, never_raises
from .lazy import lazy_compile, pp

TRIGGERS: dict[str, str] = {
    "nccl_error_in": r"NCCL (?:error|Error \d+)",
    "nccl_result_code": (
        r"nccl(?:UnhandledCudaError|SystemError|InternalError|InvalidArgument|InvalidUsage"
        r"|RemoteError)"
    ),
    "nccl_duplicate_gpu": r"Duplicate GPU detected",
    "nccl_comm_aborted": r"NCCL communicator was aborted",
    "nccl_failure": r"NCCL failure \S+ '",
    "nccl_warn": r"NCCL WARN ",
    "collective_timeout": r"[Cc]aught collective operation timeout",
    "nccl_watchdog_stuck": r"watchdog got stuck for \d+",
    "gloo_timeout": r"Timed out waiting \d+ ?ms for (?:recv|send) operation",
    "gloo_peer_closed": r"gloo.*(?:Connection closed by peer|Connection reset by peer)",
    "store_timeout_clients": r"Timed out after \d+ seconds waiting for clients",
    "rendezvous_timeout": r"RendezvousTimeoutError",
    "store_socket_timeout": r"Socket Timeout",
    "store_wait_timeout": r"wait timeout after \d+ ?ms, keys:",
    "store_barrier_timeout": r"Timed out initializing process group in store based barrier",
    "store_client_socket_timeout": r"client socket has timed out after \d+",
}

_WATCHDOG = lazy_compile(r"(?:Watchdog c|C)aught collective operation timeout:")
_PAIR = lazy_compile(r"(SeqNum|OpType|Timeout\(ms\))=(\w+)(?=[,)])")
_RANK = lazy_compile(r"\[(?:PG [^\]\n]*?)?Rank (\d+)\]\s*$")

# NCCL's result codes, by enum name, by the text of ncclGetErrorString, and by number.
_CODE_NAMES = {
    "ncclUnhandledCudaError": "unhandled_cuda_error",
    "ncclSystemError": "unhandled_system_error",
    "ncclInternalError": "internal_error",
    "ncclInvalidArgument": "invalid_argument",
    "ncclInvalidUsage": "invalid_usage",
    "ncclRemoteError": "remote_error",
}
_CODE_TEXTS = (
    ("unhandled system error", "unhandled_system_error"),
    ("unhandled cuda error", "unhandled_cuda_error"),
    ("internal error", "internal_error"),
    ("invalid usage", "invalid_usage"),
    ("invalid argument", "invalid_argument"),
    ("remote process exited", "remote_error"),
    ("remote error", "remote_error"),
    ("duplicate gpu", "duplicate_gpu"),
    ("communicator was aborted", "aborted"),
)
_CODE_NUMBERS = {
    1: "unhandled_cuda_error",
    2: "unhandled_system_error",
    3: "internal_error",
    4: "invalid_argument",
    5: "invalid_usage",
    6: "remote_error",
}
_NCCL_ERROR_MARKERS = (
    "NCCL error",
    "NCCL Error",
    "NCCL failure",
    "Duplicate GPU detected",
    "NCCL communicator was aborted",
    *_CODE_NAMES,
)


@lru_cache(maxsize=1)
def _grammar() -> dict[str, pp.ParserElement]:
    """Build the grammars once; each one is scanned for on its own."""
    integer = pp.common.signed_integer
    rest_of_line = pp.Regex(r"[^\n]*")

    version = pp.Literal("NCCL version") + pp.Regex(r"\d+(?:\.\d+)+")("version")
    cuda_failure = pp.Literal("Cuda failure") + pp.QuotedString(
        "'", convert_whitespace_escapes=False
    )("cuda_failure")
    last_error = pp.Literal("Last error:") + pp.Regex(r"\s*[^\n]*")("last_error")
    error_number = pp.Literal("NCCL Error") + integer("number")

    # node1:12345:12399 [0] misc/socket.cc:538 NCCL WARN Net : Connection closed ...
    warn = (
        pp.Regex(r"[\w.\-]+:\d+:\d+")("origin")
        + pp.Suppress("[")
        + integer("gpu")
        + pp.Suppress("]")
        + pp.Opt(pp.Regex(r"[\w./\-]+\.(?:cc|cu|cpp|h|c):\d+")("source"))
        + pp.Literal("NCCL WARN")
        + rest_of_line("message")
    )
    bare_warn = pp.Literal("NCCL WARN") + rest_of_line("message")

    # WorkNCCL(SeqNum=2, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000)
    key = pp.Regex(r"[A-Za-z]+(?:\(ms\))?")
    value = pp.Regex(r"[^,()\s]+")
    pair = pp.Group(key("key") + pp.Suppress("=") + value("value"))
    work = (
        pp.Regex(r"(?:Watchdog c|C)aught collective operation timeout:")
        + pp.Regex(r"Work\w+\(")
        + pp.DelimitedList(pair)("pairs")
        + pp.Suppress(")")
        + pp.Opt(pp.Literal("ran for") + integer("ran_ms") + pp.Literal("milliseconds"))
    )
    stuck = pp.Literal("watchdog got stuck for") + integer("seconds") + pp.Literal("seconds")

    gloo_timeout = (
        pp.Literal("Timed out waiting")
        + integer("timeout_ms")
        + pp.Literal("ms")
        + pp.Literal("for")
        + pp.one_of("recv send")("op")
        + pp.Literal("operation")
    )
    gloo_peer = pp.Regex(
        r"Connection (?:closed|reset) by peer\s*(?:\[(?P<host>[^\]\n]+)\]:(?P<port>\d+))?"
    )

    clients = (
        pp.Literal("Timed out after")
        + integer("seconds")
        + pp.Literal("seconds waiting for clients.")
        + pp.Opt(
            integer("joined")
            + pp.Suppress("/")
            + integer("expected")
            + pp.Literal("clients joined")
        )
    )
    wait_timeout = pp.Literal("wait timeout after") + integer("ms") + pp.Literal("ms")
    barrier = (
        pp.Literal("(world_size=")
        + integer("expected")
        + pp.Literal(", worker_count=")
        + integer("joined")
        + pp.Literal(", timeout=")
        + pp.Regex(r"(?P<h>\d+):(?P<m>\d\d):(?P<s>\d\d)")
    )
    client_socket = (
        pp.Literal("client socket has timed out after")
        + integer("amount")
        + pp.one_of("ms s")("unit")
    )
    return {
        "version": version,
        "cuda_failure": cuda_failure,
        "last_error": last_error,
        "error_number": error_number,
        "warn": warn,
        "bare_warn": bare_warn,
        "work": work,
        "stuck": stuck,
        "gloo_timeout": gloo_timeout,
        "gloo_peer": gloo_peer,
        "clients": clients,
        "wait_timeout": wait_timeout,
        "barrier": barrier,
        "client_socket": client_socket,
    }


def _first(expr: pp.ParserElement, text: str) -> pp.ParseResults | None:
    for tokens, _start, _end in expr.scan_string(text, max_matches=1):
        return tokens
    return None


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:300]
    return ""


def _line_with(text: str, needle: str) -> str:
    for line in text.splitlines():
        if needle in line:
            return line.strip()[:300]
    return _first_line(text)


def _nccl_code(text: str, grammar: dict[str, pp.ParserElement]) -> str:
    """Normalise NCCL's result code from its enum name, its text, or its number."""
    names = [(text.find(name), code) for name, code in _CODE_NAMES.items() if name in text]
    if names:
        return min(names)[1]
    lowered = text.lower()
    for needle, code in _CODE_TEXTS:
        if needle in lowered:
            return code
    number = _first(grammar["error_number"], text)
    if number is not None:
        return _CODE_NUMBERS.get(int(number.number), "other")
    return "other"


def _nccl_error(text: str, grammar: dict[str, pp.ParserElement]) -> Draft | None:
    if not any(marker in text for marker in _NCCL_ERROR_MARKERS):
        return None
    if "NCCL WARN" in text and not re.search(r"NCCL (?:error|Error \d)|nccl[A-Z]\w+Error", text):
        return None  # a WARN line quoting a failure is an nccl_warn, not a raised error
    fields: dict[str, Any] = {"code": _nccl_code(text, grammar)}
    version = _first(grammar["version"], text)
    if version is not None:
        fields["version"] = version.version
    failure = _first(grammar["cuda_failure"], text)
    if failure is not None:
        fields["cuda_failure"] = failure.cuda_failure
    last = _first(grammar["last_error"], text)
    if last is not None and last.last_error.strip():
        fields["last_error"] = last.last_error.strip()[:300]
    fields["message"] = _first_line(text)
    return Draft("nccl_error", fields)


def _nccl_warn(text: str, grammar: dict[str, pp.ParserElement]) -> list[Draft]:
    drafts = []
    for line in text.splitlines():
        if "NCCL WARN" not in line:
            continue
        # NCCL prints "host:pid:tid [gpu] file.cc:line NCCL WARN ..."; look only near the WARN.
        start = line.find("NCCL WARN")
        line = line[max(0, start - 200) : start + 1000]
        tokens = _first(grammar["warn"], line) or _first(grammar["bare_warn"], line)
        if tokens is None:
            continue
        message = tokens.message.strip()
        fields: dict[str, Any] = {}
        if tokens.source:
            fields["subsystem"] = tokens.source.rsplit(":", 1)[0]
        else:
            word = re.match(r"[\w/.\-]+", message)
            if word:
                fields["subsystem"] = word.group(0)
        fields["message"] = message[:300]
        failure = _first(grammar["cuda_failure"], message)
        if failure is not None:
            fields["cuda_failure"] = failure.cuda_failure
        if "gpu" in tokens:
            fields["gpu"] = int(tokens.gpu)
        drafts.append(Draft("nccl_warn", fields))
    return drafts


def _timeouts(text: str, grammar: dict[str, pp.ParserElement]) -> list[Draft]:
    drafts = []
    if "collective operation timeout" in text:
        for match in _WATCHDOG.finditer(text):
            fields: dict[str, Any] = {"backend": "nccl"}
            try:
                tokens = grammar["work"].parse_string(text[match.start() : match.start() + 600])
            except pp.ParseException:
                # Cut off mid-record (terminal wrapping, a truncated paste): the sentence itself
                # is the evidence; keep whatever numbers precede the cut.
                tokens = None
            pairs = {pair.key: pair.value for pair in tokens.pairs} if tokens else {}
            if tokens is None:
                pairs = dict(_PAIR.findall(text[match.end() : match.end() + 300]))
            if "OpType" in pairs:
                fields["op"] = pairs["OpType"]
            for key, name in (("SeqNum", "seq_num"), ("Timeout(ms)", "timeout_ms")):
                if pairs.get(key, "").isdigit():
                    fields[name] = int(pairs[key])
            if tokens and "ran_ms" in tokens:
                fields["ran_ms"] = int(tokens.ran_ms)
            # "[Rank 0] Watchdog ..." or "[PG ID 0 PG GUID 0(default_pg) Rank 3] Watchdog ..."
            rank = _RANK.search(text[max(0, match.start() - 120) : match.start()])
            if rank:
                fields["rank"] = int(rank.group(1))
            drafts.append(Draft("collective_timeout", fields))
    if "watchdog got stuck" in text:
        stuck = _first(grammar["stuck"], text)
        if stuck is not None:
            fields = {"backend": "nccl", "timeout_ms": int(stuck.seconds) * 1000}
            drafts.append(Draft("collective_timeout", fields))
    if "Timed out waiting" in text:
        for tokens, _s, _e in grammar["gloo_timeout"].scan_string(text):
            fields = {"backend": "gloo", "op": tokens.op, "timeout_ms": int(tokens.timeout_ms)}
            drafts.append(Draft("collective_timeout", fields))
    if "by peer" in text and "gloo" in text:
        peer = _first(grammar["gloo_peer"], text)
        if peer is not None:
            fields = {"backend": "gloo", "message": _line_with(text, "by peer")}
            if peer.get("host"):
                fields["peer"] = f"{peer['host']}:{peer['port']}"
            drafts.append(Draft("peer_closed", fields))
    return drafts


def _store_timeout(text: str, grammar: dict[str, pp.ParserElement]) -> Draft | None:
    markers = (
        "waiting for clients",
        "RendezvousTimeoutError",
        "Socket Timeout",
        "wait timeout after",
        "store based barrier",
        "client socket has timed out",
    )
    if not any(marker in text for marker in markers):
        return None
    fields: dict[str, Any] = {}
    clients = _first(grammar["clients"], text)
    if clients is not None:
        fields["timeout_s"] = float(clients.seconds)
        if "joined" in clients:
            fields["joined"] = int(clients.joined)
            fields["expected"] = int(clients.expected)
    wait = _first(grammar["wait_timeout"], text)
    if wait is not None:
        fields["timeout_s"] = int(wait.ms) / 1000
    barrier = _first(grammar["barrier"], text)
    if barrier is not None:
        fields["joined"] = int(barrier.joined)
        fields["expected"] = int(barrier.expected)
        fields["timeout_s"] = float(int(barrier.h) * 3600 + int(barrier.m) * 60 + int(barrier.s))
    client_socket = _first(grammar["client_socket"], text)
    if client_socket is not None:
        scale = 1000 if client_socket.unit == "ms" else 1
        fields["timeout_s"] = int(client_socket.amount) / scale
    needle = next(marker for marker in markers if marker in text)
    fields["message"] = _line_with(text, needle)
    return Draft("store_timeout", fields)


@never_raises
def parse(text: str) -> list[Draft]:
    """Return the NCCL/gloo/store drafts found in one message or log line, else ``[]``."""
    grammar = _grammar()
    drafts: list[Draft] = []
    if "NCCL WARN" in text:
        drafts += _nccl_warn(text, grammar)
    error = _nccl_error(text, grammar)
    if error is not None:
        drafts.append(error)
    drafts += _timeouts(text, grammar)
    store = _store_timeout(text, grammar)
    if store is not None:
        drafts.append(store)
    return drafts
