"""GPU out-of-memory messages from PyTorch (CUDA and ROCm/HIP), with every number in them.

PyTorch has worded the message differently in nearly every release. torch 1.0-1.4::

    RuntimeError: CUDA out of memory. Tried to allocate 1024.00 KiB (GPU 0; 11.17 GiB total
    capacity; 10.90 GiB already allocated; 576.00 KiB free; 30.96 MiB cached)

torch 1.5-2.0 (``reserved in total by PyTorch``, sometimes ``2.00 GiB allowed;`` and the
``max_split_size_mb`` hint)::

    RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 10.76 GiB total
    capacity; 9.73 GiB already allocated; 15.44 MiB free; 9.84 GiB reserved in total by PyTorch)
    If reserved memory is >> allocated memory try setting max_split_size_mb to avoid
    fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF

torch 2.1+ (sentences; 2.1 spells ``capacty``; zero or more ``Process N has`` sentences)::

    torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total
    capacity of 23.65 GiB of which 1.02 GiB is free. Process 12345 has 22.61 GiB memory in use.
    Including non-PyTorch memory, this process has 22.61 GiB memory in use. Of the allocated
    memory 20.10 GiB is allocated by PyTorch, and 1.98 GiB is reserved by PyTorch but
    unallocated. If reserved but unallocated memory is large try setting
    PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.

Also ``HIP out of memory`` (same shapes), ``CUBLAS_STATUS_ALLOC_FAILED``, ``CUDA error: out of
memory`` (and ROCm's ``HIP error: out of memory``), ``cudaErrorMemoryAllocation`` and
``hipErrorOutOfMemory``, the caching allocator's ``Allocation on device 0 would exceed
allowed memory. (out of memory)`` over a memory fraction's limit, and its warning before it
raises (torch 2.5+; pastes often keep it and cut the error)::

    [W906 15:02:06.204334026 CUDACachingAllocator.cpp:3934] memory allocation failed with OOM
    on device 0 while trying to allocate 1000341504 bytes (free: 916848640, total: 25243287552).
 A message cut off mid-sentence still yields a fact
with whatever numbers survived. ``DefaultCPUAllocator: can't allocate memory`` is host memory
and is deliberately not matched here.

Fields of the ``cuda_oom`` draft (amounts in GiB): ``backend`` (cuda | hip | cublas),
``requested_gib``, ``gpu``, ``total_gib``, ``free_gib``, ``allocated_gib``, ``reserved_gib``,
``reserved_unallocated_gib``, ``allowed_gib``, ``process_in_use_gib``, ``processes``,
``other_processes_gib``, ``fragmentation_hint``. A field that the message does not give is left
out.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from .base import Draft, never_raises, to_gib
from .lazy import lazy_compile, pp

TRIGGERS: dict[str, str] = {
    "cuda_oom_message": r"(?:CUDA|HIP) out of memory",
    "cuda_oom_torch_error": r"torch\.(?:cuda\.)?OutOfMemoryError",
    "cuda_oom_cublas_alloc": r"CUBLAS_STATUS_ALLOC_FAILED",
    "cuda_oom_cuda_error": r"(?:CUDA|HIP) error: out of memory",
    "cuda_oom_runtime_enum": r"cudaErrorMemoryAllocation|CUDA_ERROR_OUT_OF_MEMORY|hipErrorOutOfMemory",
    # torch <= 1.0: "THCudaCheck FAIL file=.../THCStorage.cu line=58 error=2 : out of memory"
    "cuda_oom_thc": r"THCudaCheck FAIL.* : out of memory|cuda runtime error \(2\) : out of memory",
    # Marian's C++ trainer: "Error: CUDA error 2 'out of memory' - .../device.cu:32: cudaMalloc"
    "cuda_oom_marian": r"CUDA error 2 'out of memory'",
    # PaddlePaddle: "Out of memory error on GPU 0. Cannot allocate 128.000000MB memory on GPU 0"
    "cuda_oom_paddle": r"Out of memory error on GPU \d+",
    # Over torch.cuda.set_per_process_memory_fraction's limit (ComfyUI sets one).
    "cuda_oom_fraction": r"Allocation on device \d+ would exceed allowed memory",
    # The caching allocator's warning before it raises (torch 2.5+).
    "cuda_oom_allocator_warning": r"memory allocation failed with OOM on device \d+",
}

# (?<!\d): a match starts where a number does; inside a long run of digits every start would
# rescan the run (quadratic: 65 s on a 20,000-digit line).
_ALLOWED = lazy_compile(r"(?<!\d)\d+(?:\.\d+)? ?[KMGT]?i?B(?:ytes)? allowed")


@lru_cache(maxsize=1)
def _grammar() -> dict[str, pp.ParserElement]:
    """Build the sentence grammars once; each is scanned for independently."""
    number = pp.Regex(r"\d+(?:\.\d+)?")
    unit = pp.Regex(r"(?:[KMGT]i?B|bytes|B)\b")
    amount = (number("value") + unit("unit")).set_parse_action(lambda t: to_gib(t.value, t.unit))
    integer = pp.common.integer

    # torch 1.x: "Tried to allocate 20.00 MiB (GPU 0; 10.76 GiB total capacity; ...)"
    # torch 2.x: "Tried to allocate 2.00 GiB."
    requested = pp.Literal("Tried to allocate") + amount("requested")
    label = pp.Regex(r"[A-Za-z][A-Za-z ]*")
    clause = pp.Group(amount("amount") + label("label"))
    paren = (
        pp.Literal("(")
        + pp.CaselessKeyword("GPU")
        + integer("gpu")
        + pp.Literal(";")
        + pp.DelimitedList(clause, delim=";")("clauses")
    )

    capacity = (
        pp.Keyword("GPU")
        + integer("gpu")
        + pp.Literal("has a total")
        + pp.Regex(r"capaci?ty")
        + pp.Literal("of")
        + amount("total")
        + pp.Literal("of which")
        + amount("free")
        + pp.Literal("is free")
    )
    # "memory in use" is optional so that a message cut off mid-sentence still counts.
    process = (
        pp.Keyword("Process")
        + integer("pid")
        + pp.Literal("has")
        + amount("used")
        + pp.Opt(pp.Literal("memory in use"))
    )
    this_process = pp.Literal("this process has") + amount("used") + pp.Literal("memory in use")
    allowed = amount("allowed") + pp.Literal("allowed")
    of_allocated = (
        pp.Literal("Of the allocated memory")
        + amount("allocated")
        + pp.Literal("is allocated by PyTorch,")
        + pp.Opt(
            pp.Literal("with")
            + amount("private")
            + pp.Regex(r"allocated in private pools(?: \([^)\n]*\))?,?")
        )
        + pp.Opt(
            pp.Literal("and")
            + amount("unallocated")
            + pp.Literal("is reserved by PyTorch but unallocated")
        )
    )

    # The caching allocator's warning: "on device 0 while trying to allocate 1000341504 bytes
    # (free: 916848640, total: 25243287552)".
    def byte_count(name: str) -> pp.ParserElement:
        return integer.copy().set_parse_action(lambda t: to_gib(t[0], "bytes"))(name)

    warning = (
        pp.Literal("failed with OOM on device")
        + integer("gpu")
        + pp.Literal("while trying to allocate")
        + byte_count("requested")
        + pp.Literal("bytes")
        + pp.Opt(
            pp.Literal("(free:") + byte_count("free") + pp.Literal(", total:") + byte_count("total")
        )
    )
    return {
        "warning": warning,
        "requested": requested,
        "paren": paren,
        "capacity": capacity,
        "process": process,
        "this_process": this_process,
        "allowed": allowed,
        "of_allocated": of_allocated,
    }


_ANCHORS = {
    "warning": "failed with OOM on device",
    "requested": "Tried to allocate",
    "paren": "(GPU",
    "capacity": "GPU ",
    "process": "Process ",
    "this_process": "this process has",
    "of_allocated": "Of the allocated memory",
}


def _scan(grammar: dict[str, pp.ParserElement], name: str, text: str) -> list[pp.ParseResults]:
    """All matches of one sentence grammar, tried only where its fixed opening words occur.

    Trying a grammar at every position (``scan_string``) costs milliseconds per message; the
    sentences all open with fixed words, so ``str.find`` picks the few places worth trying.
    """
    if name == "allowed":
        starts = [m.start() for m in _ALLOWED.finditer(text)]
    else:
        anchor, starts, pos = _ANCHORS[name], [], text.find(_ANCHORS[name])
        while pos >= 0 and len(starts) < 64:
            starts.append(pos)
            pos = text.find(anchor, pos + 1)
    found = []
    for start in starts:
        try:
            found.append(grammar[name].parse_string(text[start : start + 1000]))
        except pp.ParseException:
            continue
    return found


def _first(grammar: dict[str, pp.ParserElement], name: str, text: str) -> pp.ParseResults | None:
    found = _scan(grammar, name, text)
    return found[0] if found else None


def _backend(text: str) -> str | None:
    if (
        "HIP out of memory" in text
        or "HIP error: out of memory" in text
        or "hipErrorOutOfMemory" in text
    ):
        return "hip"
    if "CUDA out of memory" in text:
        return "cuda"
    if "CUBLAS_STATUS_ALLOC_FAILED" in text:
        return "cublas"
    if (
        "CUDA error: out of memory" in text
        or "cudaErrorMemoryAllocation" in text
        or "CUDA_ERROR_OUT_OF_MEMORY" in text
        or "CUDA error 2 'out of memory'" in text
        or "Out of memory error on GPU" in text
    ):
        return "cuda"
    if "OutOfMemoryError" in text and "torch." in text:
        return "cuda"
    if ("THCudaCheck FAIL" in text or "cuda runtime error (2)" in text) and "out of memory" in text:
        return "cuda"
    if "would exceed allowed memory" in text and "Allocation on device" in text:
        return "cuda"
    if "memory allocation failed with OOM on device" in text:
        return "cuda"
    return None


def _fill_paren(fields: dict[str, Any], tokens: pp.ParseResults) -> None:
    """Map the ``amount label`` clauses of the torch 1.x parenthesis onto fields."""
    fields["gpu"] = int(tokens.gpu)
    for clause in tokens.clauses:
        words = clause.label.strip().lower()
        value = clause.amount
        if words.startswith("total capacity"):
            fields["total_gib"] = value
        elif words.startswith("already allocated"):
            fields["allocated_gib"] = value
        elif words.startswith("free"):
            fields["free_gib"] = value
        elif words.startswith("allowed"):
            fields["allowed_gib"] = value
        elif words.startswith("reserved") or words.startswith("cached"):
            fields["reserved_gib"] = value
    if "reserved_gib" in fields and "allocated_gib" in fields:
        unallocated = fields["reserved_gib"] - fields["allocated_gib"]
        fields["reserved_unallocated_gib"] = round(max(unallocated, 0.0), 4)


def _fill_sentences(fields: dict[str, Any], text: str, grammar: dict[str, pp.ParserElement]):
    """Read the torch 2.x sentences."""
    capacity = _first(grammar, "capacity", text)
    if capacity is not None:
        fields["gpu"] = int(capacity.gpu)
        fields["total_gib"] = capacity.total
        fields["free_gib"] = capacity.free
    allowed = _first(grammar, "allowed", text)
    if allowed is not None and "allowed_gib" not in fields:
        fields["allowed_gib"] = allowed.allowed
    of_allocated = _first(grammar, "of_allocated", text)
    if of_allocated is not None:
        fields["allocated_gib"] = of_allocated.allocated
        if "unallocated" in of_allocated:
            fields["reserved_unallocated_gib"] = of_allocated.unallocated
            total = of_allocated.allocated + of_allocated.unallocated
            fields["reserved_gib"] = round(total, 4)
    this_process = _first(grammar, "this_process", text)
    if this_process is not None:
        fields["process_in_use_gib"] = this_process.used
    used = [tokens.used for tokens in _scan(grammar, "process", text)]
    if used:
        fields["processes"] = len(used)
        other = _other_processes(used, fields.get("process_in_use_gib"))
        if other is not None:
            fields["other_processes_gib"] = other


def _other_processes(used: list[float], own: float | None) -> float | None:
    """GiB held by processes other than the one that failed, from ``Process N has X`` sentences.

    torch lists every process on the device; its own appears as ``this process has`` but, in a
    container whose PID namespace hides the host PID, also as one ``Process N``. So: when the own
    usage is known, drop the one listed process whose usage equals it (if any) and sum the rest;
    when it is not known, assume the largest listed process is ours and sum the others (only
    with two or more processes; with one there is no way to tell). Never negative.
    """
    rest = list(used)
    if own is not None:
        for index, value in enumerate(rest):
            if abs(value - own) <= 0.01:
                del rest[index]
                break
        return round(max(float(sum(rest)), 0.0), 4)
    if len(rest) >= 2:
        rest.remove(max(rest))
        return round(max(float(sum(rest)), 0.0), 4)
    return None


@never_raises
def parse(text: str) -> list[Draft]:
    """Return one ``cuda_oom`` draft for a GPU out-of-memory message, else ``[]``."""
    backend = _backend(text)
    if backend is None:
        return []
    grammar = _grammar()
    fields: dict[str, Any] = {"backend": backend}
    requested = _first(grammar, "requested", text)
    if requested is not None:
        fields["requested_gib"] = requested.requested
    paren = _first(grammar, "paren", text)
    warning = _first(grammar, "warning", text) if paren is None else None
    if paren is not None:
        _fill_paren(fields, paren)
    elif warning is not None:
        fields["gpu"] = int(warning.gpu)
        fields["requested_gib"] = warning.requested
        if "total" in warning:
            fields["free_gib"], fields["total_gib"] = warning.free, warning.total
    else:
        _fill_sentences(fields, text, grammar)
    fields["fragmentation_hint"] = "max_split_size_mb" in text or "expandable_segments" in text
    if "requested_gib" in fields and "reserved_unallocated_gib" in fields:
        # The request would have fitted in memory PyTorch already held, had it been contiguous.
        fields["fits_in_reserved"] = fields["reserved_unallocated_gib"] >= fields["requested_gib"]
    return [Draft("cuda_oom", fields)]
