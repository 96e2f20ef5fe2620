"""Exception messages raised by torch itself: devices, cuDNN, cuBLAS, autograd, CUDA errors.

Real examples, one per kind::

    RuntimeError: Expected all tensors to be on the same device, but found at least two devices,
    cuda:0 and cpu! (when checking argument for argument mat1 in method wrapper_CUDA_addmm)
    RuntimeError: Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) should be the same
    RuntimeError: cuDNN error: CUDNN_STATUS_NOT_SUPPORTED. This error may appear if you passed in a non-contiguous input.
    RuntimeError: element 0 of tensors does not require grad and does not have a grad_fn
    RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasSgemm( handle, opa, ...)`
    RuntimeError: CUDA error: device-side assert triggered
    /pytorch/aten/src/ATen/native/cuda/Loss.cu:240: nll_loss_forward_reduce_cuda_kernel_2d: block:
    [0,0,0], thread: [5,0,0] Assertion `t >= 0 && t < n_classes` failed.

ROCm builds of torch word the same failures their own way, and they mean the same thing::

    RuntimeError: HIP error: invalid device function
    "hipErrorNoBinaryForGpu: Unable to find code object for all current devices!"
    /pytorch/aten/src/ATen/native/hip/Indexing.hip:1292: indexSelectLargeIndex: Device-side
    assertion `srcIndex < srcSelectDimSize' failed.
    RuntimeError: miopenStatusUnknownError
    MIOpen Error: /MIOpen/src/ocl/convolutionocl.cpp:831: Forward Convolution cannot be executed
    due to incorrect params

MIOpen is ROCm's cuDNN (``torch.backends.cudnn`` drives it), so its statuses are
``cudnn_error`` facts with ``library: MIOpen``.

Kinds: ``device_mismatch`` (device_a, device_b, argument, op, where), ``cudnn_error`` (status,
message, library), ``requires_grad_error`` (variant, element), ``cublas_error`` (status, call),
``cuda_error`` (error, message), ``device_assert`` (file, kernel, assertion, line).
``CUDA error: out of memory`` and ``CUBLAS_STATUS_ALLOC_FAILED`` are GPU OOMs: the
:mod:`cuda_oom` parser reports them, so this one stays silent on them.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from .base import Draft, never_raises
from .lazy import lazy_compile, pp

# The driver API's error by number or CUresult name; the trigger and the parser share it.
_CUDA_CODE_PATTERN = r"\bcu[A-Z]\w+ failed with error (\d{1,3})\b|CUDA_ERROR_[A-Z_]+"

TRIGGERS: dict[str, str] = {
    "device_mismatch_same_device": r"Expected all tensors to be on the same device",
    "device_mismatch_input_weight": r"Input type \([^)]*\) and weight type \(",
    "device_mismatch_argument": r"Tensor for argument #\d+ '\w+' is on (?:CPU|GPU)",
    "device_mismatch_device_type": r"Expected object of device type \w+ but got device type",
    "device_mismatch_expected_device": r"is not on the expected device",
    "cudnn_status": r"CUDNN_STATUS_[A-Z_]+",
    "cudnn_no_engine": r"(?:GET|FIND) was unable to find an engine",
    "cudnn_frontend": r"cuDNN Frontend error",
    "miopen_status": r"miopenStatus[A-Z]\w+|MIOpen Error: ",
    "requires_grad_no_grad_fn": r"does not require grad and does not have a grad_fn",
    "requires_grad_leaf_inplace": r"leaf Variable that requires grad (?:is being|has been) used",
    "requires_grad_numpy": r"Can't call numpy\(\) on (?:Tensor|Variable) that requires grad",
    "requires_grad_hook": r"cannot register a hook on a tensor that doesn't require gradient",
    "requires_grad_differentiated": r"One of the differentiated Tensors does not require grad",
    "cublas_status": r"CUBLAS_STATUS_(?:EXECUTION_FAILED|INTERNAL_ERROR|NOT_INITIALIZED"
    r"|INVALID_VALUE|NOT_SUPPORTED|ARCH_MISMATCH|MAPPING_ERROR|LICENSE_ERROR)",
    # torch's ``CUDA error: ...``, and the check macro of CUDA code outside torch (a custom
    # kernel, a GNN sampler): ``GPUassert: an illegal memory access was encountered file.cu 458``.
    "cuda_error": r"(?:CUDA|HIP) error: [a-z]|GPUassert: [a-z]"
    # cudaGetErrorString's own sentences, as a kernel library's check macro prints them after a
    # prefix of its own ("[CUDA ERROR] in rasterizer_impl.cu / Line 298: an illegal memory ...").
    r"|\ban illegal (?:memory access|instruction) was encountered",
    "hip_error_name": r"hipError(?:NoBinaryForGpu|InvalidDeviceFunction|IllegalAddress|LaunchFailure)"
    r"|cudaError(?:IllegalAddress|LaunchFailure|NoKernelImageForDevice|MisalignedAddress|Assert"
    r"|InvalidDeviceFunction)\b",
    # The driver API's names and bare numbers, as libraries outside torch print them (PhysX:
    # "cuEventRecord failed with error 700"; numba, CuPy, JAX: "CUDA_ERROR_ILLEGAL_ADDRESS").
    "cuda_error_code": _CUDA_CODE_PATTERN,
    # HIP's kernels close the quote with an apostrophe; a host C assert() (``Assertion `x' failed``)
    # is not a device assertion, so only the "Device-side" form may end that way.
    # A paste rendered as markdown loses the backticks: the kernel's block/thread site still
    # marks the line as a device assertion.
    "device_assert": r"Assertion `[^`]+` failed|Device-side assertion `[^`]+['`] failed"
    r"|thread: \[\d+,\d+,\d+\] Assertion [^`]+ failed"
    # The kernel's site alone, where a terminal wrapped the line before its assertion (only a
    # device-side assert prints a kernel file with its block coordinates).
    r"|\.cuh?:\d+: [^\n]{0,300}block: \[\d+,\d+,\d+\]",
}


_CUDA_ERRORS = (
    ("device-side assert triggered", "device_side_assert_triggered"),
    ("illegal memory access", "illegal_memory_access"),
    ("unspecified launch failure", "unspecified_launch_failure"),
    ("misaligned address", "misaligned_address"),
    ("no kernel image is available", "no_kernel_image"),
    ("illegal instruction", "illegal_instruction"),
    ("invalid device function", "invalid_device_function"),
    ("invalid device ordinal", "invalid_device_ordinal"),
    ("invalid argument", "invalid_argument"),
    ("launch timed out", "launch_timeout"),
    ("too many resources requested for launch", "too_many_resources"),
    ("uncorrectable ECC error", "ecc_error"),
    ("initialization error", "initialization_error"),
    ("CUDA-capable device(s) is/are busy or unavailable", "device_busy_or_unavailable"),
    ("operation not supported", "not_supported"),
)

#: HIP runtime error names (printed by the ROCm runtime itself) with the CUDA error they mirror.
_HIP_ERROR_NAMES = {
    "hipErrorNoBinaryForGpu": "no_kernel_image",
    "hipErrorInvalidDeviceFunction": "invalid_device_function",
    "hipErrorIllegalAddress": "illegal_memory_access",
    "hipErrorLaunchFailure": "unspecified_launch_failure",
    # cudaError_t names, as the CUDA samples' checkCudaErrors prints them:
    # ``CUDA error at kernel.cu:42 code=700(cudaErrorIllegalAddress) "cudaDeviceSynchronize()"``.
    "cudaErrorIllegalAddress": "illegal_memory_access",
    "cudaErrorLaunchFailure": "unspecified_launch_failure",
    "cudaErrorNoKernelImageForDevice": "no_kernel_image",
    "cudaErrorMisalignedAddress": "misaligned_address",
    "cudaErrorAssert": "device_side_assert_triggered",
    "cudaErrorInvalidDeviceFunction": "invalid_device_function",
}

#: cudaError_t numbers and the driver API's CUresult names (cuda.h) of the errors that name a
#: cause; an OOM (2) is cuda_oom's, and "unknown" (999) names nothing.
_CUDA_ERROR_CODES = {
    700: "illegal_memory_access",
    701: "too_many_resources",
    702: "launch_timeout",
    710: "device_side_assert_triggered",
    716: "misaligned_address",
    719: "unspecified_launch_failure",
    209: "no_kernel_image",
    214: "ecc_error",
    98: "invalid_device_function",
}
_DRIVER_ERROR_NAMES = {
    "CUDA_ERROR_ILLEGAL_ADDRESS": "illegal_memory_access",
    "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES": "too_many_resources",
    "CUDA_ERROR_LAUNCH_TIMEOUT": "launch_timeout",
    "CUDA_ERROR_ASSERT": "device_side_assert_triggered",
    "CUDA_ERROR_MISALIGNED_ADDRESS": "misaligned_address",
    "CUDA_ERROR_LAUNCH_FAILED": "unspecified_launch_failure",
    "CUDA_ERROR_NO_BINARY_FOR_GPU": "no_kernel_image",
    "CUDA_ERROR_ECC_UNCORRECTABLE": "ecc_error",
    "CUDA_ERROR_ILLEGAL_INSTRUCTION": "illegal_instruction",
}

#: miopenStatus_t names (miopen.h) with the cuDNN status they correspond to.
_MIOPEN_STATUSES = {
    "NotInitialized": "NOT_INITIALIZED",
    "InvalidValue": "BAD_PARAM",
    "BadParm": "BAD_PARAM",
    "AllocFailed": "ALLOC_FAILED",
    "InternalError": "INTERNAL_ERROR",
    "NotImplemented": "NOT_SUPPORTED",
    "UnsupportedOp": "NOT_SUPPORTED",
}

_CUDNN_STATUSES = (
    "NOT_SUPPORTED",
    "INTERNAL_ERROR",
    "EXECUTION_FAILED",
    "NOT_INITIALIZED",
    "MAPPING_ERROR",
    "BAD_PARAM",
    "ALLOC_FAILED",
)

_REQUIRES_GRAD = (
    ("does not require grad and does not have a grad_fn", "no_grad_fn"),
    ("leaf Variable that requires grad", "leaf_inplace"),
    ("that requires grad. Use", "numpy_requires_grad"),
    ("numpy() on Tensor that requires grad", "numpy_requires_grad"),
    ("numpy() on Variable that requires grad", "numpy_requires_grad"),
    ("register a hook on a tensor that doesn't require gradient", "hook_no_grad"),
    ("One of the differentiated Tensors does not require grad", "differentiated_no_grad"),
)


@lru_cache(maxsize=1)
def _grammar() -> dict[str, pp.ParserElement]:
    """Build the grammars once."""
    integer = pp.common.integer
    device = pp.Regex(r"(?:cuda|cpu|meta|mps|xpu|hpu|xla|npu)(?::\d+)?")
    # "(when checking argument for argument mat1 in method wrapper_CUDA_addmm)";
    # torch 1.9 spelled it "arugment"; the index_select form has no argument name.
    checking = pp.Regex(
        r"\(when checking (?:argument|arugment)(?: for argument (?P<argument>\w+))?"
        r" in method (?P<op>\w+)\)"
    )
    found_two = (
        pp.Literal("but found at least two devices,")
        + device("device_a")
        + pp.Literal("and")
        + device("device_b")
        + pp.Opt(pp.Literal("!"))
    )
    got_index = (
        pp.Literal("but got")
        + pp.Word(pp.alphanums + "_")("argument")
        + pp.Literal("is on")
        + device("device_a")
        + pp.Literal(", different from other tensors on")
        + device("device_b")
    )
    tensor_type = pp.Regex(r"[\w.]+")
    input_weight = (
        pp.Literal("Input type (")
        + tensor_type("type_a")
        + pp.Literal(") and weight type (")
        + tensor_type("type_b")
        + pp.Literal(")")
    )
    for_argument = (
        pp.Literal("Tensor for argument #")
        + integer("index")
        + pp.QuotedString("'", convert_whitespace_escapes=False)("argument")
        + pp.Literal("is on")
        + pp.Word(pp.alphas)("device_a")
        + pp.Literal(", but expected it to be on")
        + pp.Word(pp.alphas)("device_b")
        + pp.Opt(pp.Regex(r"\(while checking arguments for (?P<op>\w+)\)"))
    )
    device_type = (
        pp.Literal("Expected object of device type")
        + pp.Word(pp.alphas)("device_b")
        + pp.Literal("but got device type")
        + pp.Word(pp.alphas)("device_a")
        + pp.Opt(
            pp.Literal("for argument #")
            + integer
            + pp.QuotedString("'", convert_whitespace_escapes=False)("argument")
        )
    )
    expected_device = (
        pp.Literal("Tensor on device")
        + device("device_a")
        + pp.Literal("is not on the expected device")
        + device("device_b")
    )
    cublas = pp.Regex(
        r"CUBLAS_STATUS_(?P<status>[A-Z_]+)(?: when calling `?(?P<call>cublas\w+|cublasLt\w+))?"
    )
    # "/path/Loss.cu:240: kernel_name: block: [0,0,0], thread: [5,0,0] Assertion `...` failed."
    # HIP: "/path/Indexing.hip:1292: indexSelectLargeIndex: Device-side assertion `...' failed."
    kernel_file = r"(?P<file>(?:[A-Za-z]:)?[\w./\\\-]{1,300}\.(?:cu|cuh|cpp|h|hip)):(?P<line>\d+): "
    site = pp.Regex(
        kernel_file
        + r"(?P<kernel>[^\n]{1,300}?)(?:: block: \[[\d,]+\], thread: \[[\d,]+\]|:(?= Device-side))"
    )
    device_assert = pp.Opt(site) + pp.Regex(
        r"Assertion `(?P<assertion>[^`]*)` failed"
        r"|Device-side assertion `(?P<hip_assertion>[^`'\n]*)['`] failed"
        r"|(?<=\] )Assertion (?P<bare_assertion>[^`\n]+?) failed"
    )
    # The site alone, its assertion wrapped away; Windows builds print no kernel name.
    site_only = pp.Regex(kernel_file + r"(?:(?P<kernel>[^\n]{1,300}?): )?block: \[\d+,\d+,\d+\]")
    return {
        "checking": checking,
        "found_two": found_two,
        "got_index": got_index,
        "input_weight": input_weight,
        "for_argument": for_argument,
        "device_type": device_type,
        "expected_device": expected_device,
        "cublas": cublas,
        "device_assert": device_assert,
        "device_assert_site": site_only,
    }


def _first(expr: pp.ParserElement, text: str) -> pp.ParseResults | None:
    for tokens, _start, _end in expr.scan_string(text, max_matches=1):
        return tokens
    return None


def _line_with(text: str, needle: str) -> str:
    for line in text.splitlines():
        if needle in line:
            return line.strip()[:300]
    return text.strip()[:300]


def _type_device(name: str) -> str:
    """``torch.cuda.FloatTensor`` / ``CUDABFloat16Type`` -> ``cuda``; CPU types -> ``cpu``."""
    lowered = name.lower()
    for device in ("cuda", "mps", "xpu", "meta", "hip"):
        if device in lowered:
            return device
    return "cpu"


def _device_mismatch(text: str, grammar: dict[str, pp.ParserElement]) -> Draft | None:
    fields: dict[str, Any] = {}
    if "on the same device" in text:
        tokens = _first(grammar["found_two"], text) or _first(grammar["got_index"], text)
        if tokens is not None:
            fields["device_a"] = tokens.device_a
            fields["device_b"] = tokens.device_b
            if tokens.argument:
                fields["argument"] = tokens.argument
        checking = _first(grammar["checking"], text)
        if checking is not None:
            if checking.get("argument"):
                fields["argument"] = checking["argument"]
            fields["op"] = checking["op"]
        fields["where"] = "tensors"
    elif "Input type (" in text and "weight type" in text:
        tokens = _first(grammar["input_weight"], text)
        if tokens is None:
            return None
        fields["device_a"] = _type_device(tokens.type_a)
        fields["device_b"] = _type_device(tokens.type_b)
        if fields["device_a"] == fields["device_b"]:
            return None  # same device, different dtype: a dtype mismatch, not ours
        fields["where"] = "input_weight"
    elif "Tensor for argument #" in text:
        tokens = _first(grammar["for_argument"], text)
        if tokens is None:
            return None
        fields["device_a"] = "cpu" if tokens.device_a == "CPU" else "cuda"
        fields["device_b"] = "cpu" if tokens.device_b == "CPU" else "cuda"
        fields["argument"] = tokens.argument
        if tokens.get("op"):
            fields["op"] = tokens["op"]
        fields["where"] = "tensors"
    elif "Expected object of device type" in text:
        tokens = _first(grammar["device_type"], text)
        if tokens is None:
            return None
        fields["device_a"] = tokens.device_a.lower()
        fields["device_b"] = tokens.device_b.lower()
        if tokens.argument:
            fields["argument"] = tokens.argument
        fields["where"] = "tensors"
    elif "is not on the expected device" in text:
        tokens = _first(grammar["expected_device"], text)
        if tokens is None:
            return None
        fields["device_a"] = tokens.device_a
        fields["device_b"] = tokens.device_b
        fields["where"] = "tensors"
    else:
        return None
    return Draft("device_mismatch", fields)


#: A line that Python's warnings module printed (``path.py:744: UserWarning: ...``). torch warns
#: when one cuDNN plan fails and it tries the next ("Plan failed with a cudnnException: ...
#: CUDNN_STATUS_NOT_SUPPORTED"); when none works it raises, and that error is the failure.
_PYTHON_WARNING = lazy_compile(r":\d+: [A-Z]\w*Warning: ")


def _cudnn_error(text: str) -> Draft | None:
    status = None
    miopen = _miopen_error(text)
    if miopen is not None:
        return miopen
    match = re.search(r"CUDNN_STATUS_([A-Z_]+)", text)
    if match:
        status = match.group(1) if match.group(1) in _CUDNN_STATUSES else "OTHER"
        needle = match.group(0)
    elif "unable to find an engine" in text:
        status, needle = "NO_ENGINE", "unable to find an engine"
    elif "cuDNN Frontend error" in text:
        status, needle = "FRONTEND", "cuDNN Frontend error"
    if status is None:
        return None
    return Draft(
        "cudnn_error", {"status": status, "message": _line_with(text, needle), "library": "cuDNN"}
    )


def _miopen_error(text: str) -> Draft | None:
    """MIOpen's status names and its ``MIOpen Error: file:line: what`` lines, as cuDNN statuses."""
    match = re.search(r"miopenStatus([A-Z]\w+)", text)
    if match:
        status, needle = _MIOPEN_STATUSES.get(match.group(1), "OTHER"), match.group(0)
    else:
        match = re.search(r"MIOpen Error: (?:\S+:\d+: )?([^\n]*)", text)
        if match is None:
            return None
        what, needle = match.group(1).lower(), "MIOpen Error: "
        if "build failed" in what:
            status = "BUILD_FAILED"  # a kernel MIOpen compiles at run time did not compile
        elif "incorrect param" in what or "bad param" in what:
            status = "BAD_PARAM"
        elif "memory" in what:
            status = "ALLOC_FAILED"
        else:
            status = "OTHER"
    return Draft(
        "cudnn_error", {"status": status, "message": _line_with(text, needle), "library": "MIOpen"}
    )


def _requires_grad(text: str) -> Draft | None:
    for needle, variant in _REQUIRES_GRAD:
        if needle in text:
            fields: dict[str, Any] = {"variant": variant}
            if variant == "no_grad_fn":
                match = re.search(r"element (\d+) of tensors", text)
                if match:
                    fields["element"] = int(match.group(1))
            return Draft("requires_grad_error", fields)
    return None


def _cublas_error(text: str, grammar: dict[str, pp.ParserElement]) -> Draft | None:
    if "CUBLAS_STATUS_" not in text:
        return None
    tokens = _first(grammar["cublas"], text)
    if tokens is None or tokens["status"] == "ALLOC_FAILED":
        return None  # ALLOC_FAILED is a GPU OOM (see cuda_oom)
    fields: dict[str, Any] = {"status": tokens["status"]}
    if tokens.get("call"):
        fields["call"] = tokens["call"]
    return Draft("cublas_error", fields)


#: Words found in every line _cuda_error reads (a cheap test before its regexes).
_CUDA_ERROR_WORDS = (
    "CUDA error:",
    "HIP error:",
    "hipError",
    "cudaError",
    "GPUassert",
    " was encountered",
)
_CUDA_CODE_WORDS = ("failed with error", "CUDA_ERROR_")
_CUDA_CODE = lazy_compile(_CUDA_CODE_PATTERN)


def _cuda_error_code(text: str) -> Draft | None:
    """A driver API error by number or CUresult name, where it names a cause."""
    for match in _CUDA_CODE.finditer(text):
        if match.group(1) is not None:
            error = _CUDA_ERROR_CODES.get(int(match.group(1)))
        else:
            error = _DRIVER_ERROR_NAMES.get(match.group(0))
        if error is not None:
            return Draft(
                "cuda_error", {"error": error, "message": _line_with(text, match.group(0))}
            )
    return None


def _cuda_error_sentence(text: str) -> Draft | None:
    """cudaGetErrorString's own sentence ("an illegal memory access was encountered") after
    whatever prefix a library's check macro printed it with."""
    for needle, error in _CUDA_ERRORS:
        sentence = f"an {needle} was encountered"
        if sentence in text:
            return Draft("cuda_error", {"error": error, "message": _line_with(text, sentence)})
    return None


def _cuda_error(text: str) -> Draft | None:
    match = re.search(r"(?:(?:CUDA|HIP) error|GPUassert): ([^\n]*)", text)
    if match is None:
        name = re.search(r"(?:hip|cuda)Error\w+", text)
        if name is None or name.group(0) not in _HIP_ERROR_NAMES:
            return _cuda_error_sentence(text)
        error = _HIP_ERROR_NAMES[name.group(0)]
        return Draft("cuda_error", {"error": error, "message": _line_with(text, name.group(0))})
    detail = match.group(1).strip()
    if detail.startswith("out of memory") or detail.startswith("CUBLAS_STATUS_"):
        return None  # the OOM is cuda_oom's; a cuBLAS status is a cublas_error
    error = "other"
    for needle, name in _CUDA_ERRORS:
        if detail.startswith(needle) or needle in detail[:80]:
            error = name
            break
    return Draft("cuda_error", {"error": error, "message": _line_with(text, match.group(0)[:10])})


def _device_asserts(text: str, grammar: dict[str, pp.ParserElement]) -> list[Draft]:
    drafts = []
    seen = set()
    for line in text.splitlines():
        start = line.find("ssertion ")
        tokens = None
        if start >= 0:
            tokens = _first(grammar["device_assert"], line[max(0, start - 700) : start + 700])
        if tokens is None:
            start = line.find("block: [")
            if start < 0:
                continue
            # The site without its assertion: the line was wrapped or cut after it.
            tokens = _first(grammar["device_assert_site"], line[max(0, start - 700) : start + 40])
            if tokens is None:
                continue
        assertion = next(
            (
                tokens[name]
                for name in ("assertion", "hip_assertion", "bare_assertion")
                if tokens.get(name) is not None
            ),
            "",
        )
        fields: dict[str, Any] = {"assertion": assertion}
        if tokens.get("file"):
            fields["file"] = tokens["file"]
            fields["source_line"] = int(tokens["line"])
            if tokens.get("kernel"):  # Windows builds print no kernel name
                fields["kernel"] = tokens["kernel"].strip()
        key = tuple(sorted(fields.items()))
        if key not in seen:  # one per distinct site; every GPU thread prints its own line
            seen.add(key)
            drafts.append(Draft("device_assert", fields))
    return drafts


@never_raises
def parse(text: str) -> list[Draft]:
    """Return the torch error drafts found in one exception message or log line, else ``[]``."""
    grammar = _grammar()
    drafts: list[Draft] = []
    if "device" in text or "weight type" in text or "Tensor for argument #" in text:
        mismatch = _device_mismatch(text, grammar)
        if mismatch is not None:
            drafts.append(mismatch)
    if (
        "CUDNN" in text
        or "cuDNN" in text
        or "unable to find an engine" in text
        or "MIOpen" in text
        or "miopenStatus" in text
    ) and not _PYTHON_WARNING.search(text):
        cudnn = _cudnn_error(text)
        if cudnn is not None:
            drafts.append(cudnn)
    if "grad" in text:
        grad = _requires_grad(text)
        if grad is not None:
            drafts.append(grad)
    cublas = _cublas_error(text, grammar)
    if cublas is not None:
        drafts.append(cublas)
    if any(word in text for word in _CUDA_ERROR_WORDS):
        cuda = _cuda_error(text)
        if cuda is not None:
            drafts.append(cuda)
    elif any(word in text for word in _CUDA_CODE_WORDS):
        cuda = _cuda_error_code(text)
        if cuda is not None:
            drafts.append(cuda)
    if "ssertion `" in text or "] Assertion " in text or "block: [" in text:
        drafts += _device_asserts(text, grammar)
    return drafts
