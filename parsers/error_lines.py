"""Error lines that are not exceptions: a logger's ERROR, a CUDA kernel's ``error in``, an old
``THCudaCheck FAIL``, C++'s ``Exception raised from``, a failing NCCL WARN, a compiler's error.

Many runs report their failure in a line of this kind and nothing else: a library logs it and
exits, a C++ extension prints it, a pasted excerpt keeps only it. Real examples::

    ERROR: Unexpected segmentation fault encountered in worker.
    error in ms_deformable_im2col_cuda: an illegal memory access was encountered
    THCudaCheck FAIL file=mmdet/ops/roi_align/src/roi_align_kernel.cu line=139 error=98 :
    Exception raised from findAlgorithms at /pytorch/aten/src/ATen/native/cudnn/Conv.cpp:550 (most recent call first):
    bd73ab638b22:502:568 [0] include/alloc.h:112 NCCL WARN Cuda failure 999 'unknown error'
    c39f5cf046aa:4533:4667 [0] NCCL INFO misc/socket.cc:619 -> 2
    (raylet) [2025-04-02 15:02:00,117 E 135782 135782] (raylet) node_manager.cc:3069: 1 Workers (tasks / actors) killed due to memory pressure (OOM)
    /usr/local/cuda/include/cuda_fp16.h:12: fatal error: cuda_runtime.h: No such file or directory
    formats: can't open input file `./data/01/01-1_01.wav': No such file or directory
    2020-10-03 17:02:24.528951: F tensorflow/core/kernels/random_op_gpu.h:227] Non-OK-status: ...
    bpe_model_trainer.h(69) [(r) <= (kuint16max)]

Kind: ``error_line`` (signature, message, detail). No rule names a cause from the line alone:
vocabulary rules read its words, and specific rules match the line itself. ``signature`` says
which form it took; all but ``logger`` are failures in their own right (see
:data:`FAILURE_SIGNATURES`), reported as unrecognised when nothing else explains the run.

    >>> [d.fields["signature"] for d in parse("error in roi_align_forward_cuda: invalid argument")]
    ['error_in']
    >>> parse("host:1:2 [0] NCCL INFO misc/socket.cc:619 -> 2")[0].fields["message"]
    'misc/socket.cc:619 returned ncclSystemError (2)'
    >>> parse("RuntimeError: CUDA error: out of memory")  # an exception line is not one of these
    []
"""

from __future__ import annotations

import re

from . import failure
from .base import Draft, never_raises
from .failure import bare_exception
from .lazy import lazy_compile

_LEVEL = r"(?:ERROR|CRITICAL|FATAL)"
_GLOG = r"^[EF]\d{4} \d\d:\d\d:\d\d"  # glog: E1123 12:00:00.123456  1234 file.cc:12] ...
_RAY = r"\d [EF] \d+ \d+\]"  # ray's C++ logger: [... 15:02:00,117 E 135782 135782] ...
#: c10's logger: [E ProcessGroupNCCL.cpp:455] ..., [E1123 04:24:50.496061 ProcessGroupNCCL.cpp:616] ...
_C10 = r"\[[EF](?:\d{4} [\d:.]+)? [\w.]+:\d+\]"
#: TensorFlow's C++ logger at FATAL, which aborts the process after the line:
#: ``2020-10-03 17:02:24.528951: F .\\tensorflow/core/kernels/random_op_gpu.h:227] Non-OK-status``.
_TF_FATAL = r"(?:^|\d: )F \S+:\d+\]"
#: TensorRT's logger (trtexec: ``[11/22/2024-13:40:47] [E] Error[1]: ...``) and onnxruntime's
#: (``[E:onnxruntime:Default, provider_bridge_ort.cc:1546 ...] ...``).
_ONE_LETTER = r"\[E\] |\[E:\w+:[^\]]*\] ?"
#: Open MPI's and UCX's signal handler prints the crashed process' stack, one frame a line:
#: ``[n193-019-222:14623] [ 4] /usr/lib/.../libcore.so(_ZN4core10BufferImpl7reserve...+0x313)``.
_CRASH_FRAME = r"(?P<process>\[[\w.-]+:\d+\]) \[ ?\d+\] \S+\("
_PHYSX = (
    r"\S \(\d+\) : (?:internal error|invalid parameter|invalid operation|out of memory|abort) : "
)
#: Omniverse Kit's and carb's logger (Isaac Sim, Isaac Lab): [Error] [gpu.foundation.plugin] ...
_KIT = r"\[(?:Error|Fatal)\] (?:\[[\w.-]+\] ?)?"
_NCCL_FAILURE = (
    r"(?i)NCCL WARN .{0,80}\b(?:fail\w*|error|invalid|abort\w*|duplicate|timed? ?out|unhandled"
    r"|refused|mismatch|unable|closed)"
)

#: strerror(3) texts of the errors a training run's tools meet: files, memory, disks, descriptors.
_STRERROR = (
    r"No such file or directory|Permission denied|Cannot allocate memory|No space left on device"
    r"|Input/output error|Too many open files|Read-only file system|Disk quota exceeded"
    r"|Stale file handle"
)

_THC_CHECK = "THCudaCheck FAIL "
_CUDA_CHECK = "cudaCheckError() failed : "
#: pointnet2's CUDA ops and the 3D code built on them print this and exit(-1).
_KERNEL_FAILED = "CUDA kernel failed : "
#: A report capitalised like a sentence: "Error running job: ", "Error while loading state: ",
#: and the trainer's of Chainer and its heirs (ESPnet 1, PaddleSpeech): "Exception in main
#: training loop: ".
_DOING = r"(?:Error (?:while |when )?[a-z]+ing\b[^:\n]{0,60}|Exception in main training loop): "
#: TensorFlow's failed kernel and the status code it returned: "OP_REQUIRES failed at
#: xla_ops.cc:446 : INTERNAL: ".
_OP_FAILED = r"OP_REQUIRES failed at \S+ : (?P<code>[A-Za-z][A-Za-z_ ]{2,30}): "

TRIGGERS: dict[str, str] = {
    # A FATAL record of glog, absl, TensorFlow, c10, ray or Kit: the logger aborts the process
    # after writing it, so it is the failure whatever follows (often nothing, or ``Aborted``).
    "fatal_logged": rf"^F\d{{4}} \d\d:\d\d:\d\d|{_TF_FATAL}|\d F \d+ \d+\]"
    r"|\[F(?:\d{4} [\d:.]+)? [\w.]+:\d+\]|\[Fatal\] ",
    "error_level": (
        rf"(?:^|[\s\[|(:]){_LEVEL}(?:[\s\]|:)-]|$)|{_GLOG}|{_RAY}|{_C10}|{_KIT}|{_ONE_LETTER}"
    ),
    # A job runner's or a loader's own report, capitalised like a sentence: ai-toolkit's
    # ``Error running job: Control image is required ...``, ``Error processing image: ...``.
    "error_doing": rf"(?:^|[\s\]>|]){_DOING}\S",
    # neural_renderer's and other extensions' printf: "Error in forward_face_index_map_1: ...".
    "error_in": r"\b[Ee]rror in [\w.:]+: ",
    # TensorFlow's kernel that failed, logged at W level before Python sees the error:
    # ``OP_REQUIRES failed at xla_ops.cc:446 : INTERNAL: libdevice not found at ./libdevice.10.bc``.
    "tf_op_failed": _OP_FAILED,
    # torch's THC checks before 1.0, and the macro of CUDA extensions built on the same pattern
    # (faster-rcnn.pytorch's NMS): ``cudaCheckError() failed : invalid device function``, and
    # pointnet2's ops: ``CUDA kernel failed : no kernel image is available for execution ...``.
    "thc_check": f"{re.escape(_THC_CHECK)}|{re.escape(_CUDA_CHECK)}|{re.escape(_KERNEL_FAILED)}",
    "cxx_raised": r"Exception raised from \S+ at ",
    "crash_frame": _CRASH_FRAME,
    # PhysX's error callback (Isaac Gym and Isaac Lab, SAPIEN and ManiSkill): ``.../
    # PxgNarrowphaseCore.cpp (2185) : internal error : PxgDynamicsMemoryConfig::...``.
    "physx_error": _PHYSX,
    # sentencepiece's CHECK that failed, then "Program terminated with an unrecoverable error.":
    # ``bpe_model_trainer.h(69) [(r) <= (kuint16max)]``, ``unigram_model_trainer.cc(150)
    # [!std::isnan(score)]`` (its routine lines say ``LOG(INFO)`` where the brackets are).
    "cxx_check": r"^[\w/.-]+\.(?:cc|cpp|h)\(\d+\) \[[^\]]+\]",
    "nccl_warn_failure": _NCCL_FAILURE,
    # A host C assert() that failed aborts the process (glibc: ``python: .../interface.cpp:899:
    # void magma_queue_create_from_cuda_internal(...): Assertion `queue->dBarray__ != __null'
    # failed.``); a device-side assertion closes its quote with a backtick instead.
    "c_assert": r"\.(?:c|cc|cpp|cxx|cu|h|hpp):\d+: .{0,600}: Assertion [`'][^`']+' failed",
    # A C or CUDA compiler's fatal error stops the build of an extension the run needs:
    # ``cc1plus: fatal error: cuda_runtime.h: No such file or directory``.
    "compiler_fatal": r"\bfatal error: [\w'\"/<]",
    "compiler": r"\berror: [\w'\"/]",  # not dlopen's "dlerror: "
    # A program's own report of what stopped it, at the start of its line or after its
    # timestamp: Marian's ``[2023-11-14 00:01:33] Error: CUDA error 999 'unknown error' - ...``.
    "error_report": r"(?:^|\] )Error: \S",
    # NCCL traces a failing call's way out at INFO level, one ``file:line -> code`` per frame.
    "nccl_trace": r"NCCL INFO [\w/.]+\.(?:cc|h|cu):\d+ -> [1-6]\b",
    # A tool's perror(3): ``prog: what it tried: strerror``, printed by sox, tar, ffmpeg, a shell.
    "os_error": rf": (?:{_STRERROR})\s*$",
}

#: How an unrecognised diagnosis names each form.
SIGNATURE_NAMES = {
    "fatal_logged": "a fatal log record",
    "error_level": "a logged error",
    "error_doing": "a logged error",
    "last_logged": "a logged error on the log's last line",
    "last_line": "the log's last sentence",
    "error_in": "an error in a native function",
    "tf_op_failed": "a TensorFlow kernel that failed",
    "thc_check": "a failed CUDA check",
    "cxx_raised": "a C++ exception",
    "cxx_check": "a failed C++ check",
    "c_assert": "a failed C assertion",
    "crash_frame": "a crashed process' stack",
    "physx_error": "a PhysX error",
    "nccl_warn_failure": "an NCCL failure",
    "compiler_fatal": "a compiler's fatal error",
    "compiler": "a compiler error",
    "error_report": "a program's error report",
    "nccl_trace": "an NCCL call that failed",
    "os_error": "a tool's system error",
}
#: Signatures that show a failure by their form alone; a logger's ERROR may be routine.
FAILURE_SIGNATURES = frozenset(
    {
        "error_in",
        "thc_check",
        "cxx_raised",
        "nccl_warn_failure",
        "nccl_trace",
        "last_logged",
        "tf_op_failed",
        "fatal_logged",
        "cxx_check",
        "c_assert",
        "crash_frame",
        "physx_error",
        "compiler_fatal",
        "error_report",
    }
)
#: Signatures of a logger's report, routine in the middle of a run.
LOGGED_SIGNATURES = frozenset({"error_level", "error_doing"})
#: ncclResult_t codes as NCCL's ``file:line -> code`` trace prints them (nccl.h).
_NCCL_RESULTS = {
    "1": "ncclUnhandledCudaError",
    "2": "ncclSystemError",
    "3": "ncclInternalError",
    "4": "ncclInvalidArgument",
    "5": "ncclInvalidUsage",
    "6": "ncclRemoteError",
}

_COMPILED = {name: lazy_compile(rx) for name, rx in TRIGGERS.items()}
_LEVEL_MESSAGE = lazy_compile(
    rf"{_LEVEL}[^\w(]{{0,4}}(?:[\w.]+:\d*\s*-*\s*|\([\w.]+\)\s*)?(?P<message>.*)"
)
_TF_OP_FAILED = lazy_compile(rf"{_OP_FAILED}(?P<message>.*)")
#: Status codes an op returns in a healthy run: an iterator's end of sequence, a cancelled step.
_TF_ROUTINE = lazy_compile(r"(?i)out[ _]of[ _]range$|cancelled$")
_DOING_MESSAGE = lazy_compile(rf"{_DOING}(?P<message>.*)")
_TRAILING_LEVEL = lazy_compile(
    rf"(?:{_GLOG}[^\]]*\]|{_TF_FATAL}|{_RAY}|{_C10}|{_KIT}|{_ONE_LETTER})\s*(?P<message>.*)"
)
#: Routine lines that carry the word: a run that prints its error count, a retry it survived.
_ROUTINE = lazy_compile(r"(?i)\b(?:0 errors?|no errors?|errors?: 0|warn(?:ing)?:|retry|retrying)\b")
_DETAIL_CHARS = 1000
_INFO = lazy_compile(r"\b(?:INFO|DEBUG)\b")


#: The words after which a line's message starts, whatever its signature ...
_MARKERS = (
    _THC_CHECK,
    _CUDA_CHECK,
    _KERNEL_FAILED,
    "Exception raised from ",
    "NCCL WARN ",
)
#: ... and those of signatures whose marker is a word other lines use too.
_MARKER_OF = {"error_report": "Error: ", "compiler_fatal": "fatal error: "}
#: The marker of ``error_in``, which extensions print capitalised or not.
_ERROR_IN = lazy_compile(r"\b[Ee]rror in ")


def _message(signature: str, text: str) -> str:
    if signature in ("error_level", "fatal_logged"):
        match = _TRAILING_LEVEL.search(text) or _LEVEL_MESSAGE.search(text)
        return match["message"].strip() if match else text.strip()
    if signature == "tf_op_failed":
        match = _TF_OP_FAILED.search(text)
        if match is None or _TF_ROUTINE.match(match["code"]):
            return ""  # a dataset iterator's end, a cancelled step: routine
        return f"{match['code']}: {match['message'].strip()}"
    if signature == "error_doing":
        match = _DOING_MESSAGE.search(text)
        return match["message"].strip() if match else ""
    if signature == "physx_error":
        return text.split(" : ", 2)[-1].strip()
    if signature == "nccl_trace":
        where, code = text.split("NCCL INFO ", 1)[1].split(" -> ", 1)
        code = code.strip()[:1]
        return f"{where.strip()} returned {_NCCL_RESULTS.get(code, code)} ({code})"
    if signature == "c_assert":
        return "Assertion " + text.rsplit(": Assertion ", 1)[-1].strip()
    if signature == "error_in":
        return _ERROR_IN.split(text, maxsplit=1)[-1].strip()
    for marker in _MARKERS:
        if marker in text:
            return text.split(marker, 1)[1].strip()
    if signature == "os_error":
        # A progress bar redrawn on the same line comes first: the tool's words follow its ``]``.
        return re.sub(r"^.*/(?:s|it)\]\s*", "", text).strip()
    return text.split(_MARKER_OF.get(signature, "error: "), 1)[-1].strip()


def last_logged(text: str) -> Draft | None:
    """The draft for a logger's ERROR that is the last line of its log: routine in the middle
    of a run, but a run that ends on one ended because of it (HugeCTR's ``[HCDEBUG][ERROR]
    DataHeaderError ...``, then nothing); ``None`` for any other line."""
    found = parse(text)
    if not found or found[0].fields["signature"] not in LOGGED_SIGNATURES:
        return None
    found[0].fields["signature"] = "last_logged"
    return found[0]


#: A sentence (three words of letters in a row: a message, not a table row or a path) that
#: says something could not be done. A log that ends on a note or a warning ended well.
_SENTENCE = lazy_compile(r"[A-Za-z]{2,}[,;:]? [A-Za-z]{2,}[,;:]? [A-Za-z]{2,}")
_FAILED_WORDS = lazy_compile(
    r"(?i)\b(?:error|failed|failure|cannot|can't|could not|couldn't|unable to|invalid"
    r"|exceeds?|larger than the maximum|too (?:large|long|big|many)|not (?:enough|supported"
    r"|allowed|permitted|found|implemented)|no such|is missing|aborted|aborting|denied)\b"
)
_NOTED = lazy_compile(
    r"(?i)warn|\bnote\b|\bskipp|\bignor|\bif you\b|\bmay\b|\bmight\b|\bfall(?:ing)? ?back\b"
    r"|\bcaught\b"
)


def last_line(text: str) -> Draft | None:
    """The draft for the sentence that ends a log: a message a program printed on its way out
    without an error's form (vLLM's "The model's max seq len (29000) is larger than the maximum
    number of tokens that can be stored in KV cache (23648)."). Its signature, ``last_line``,
    shows no failure by itself: only vocabulary rules read its words. ``None`` for a line that
    is no sentence, or that another reader already takes (an error line, an exception)."""
    if not _SENTENCE.search(text) or not _FAILED_WORDS.search(text) or _NOTED.search(text):
        return None
    if parse(text) or bare_exception(text) is not None or failure.parse(text):
        return None
    message = text.strip()[:300]
    fields = {"signature": "last_line", "message": message, "quote": message}
    fields["detail"] = text.strip()[:_DETAIL_CHARS]
    return Draft("error_line", fields)


@never_raises
def parse(text: str) -> list[Draft]:
    """An ``error_line`` draft for a line of ``text`` that reports an error outside an
    exception; ``[]`` for an exception line (the traceback reader has it) or a routine one."""
    line = text.split("\n", 1)[0]
    if bare_exception(line) is not None or _ROUTINE.search(line):
        return []
    for signature, pattern in _COMPILED.items():
        if signature == "os_error" and _INFO.search(line):
            continue  # a library's note on something optional it did not find (NCCL's plugin)
        if match := pattern.search(line):
            message = _message(signature, line)
            if not message:
                return []
            fields = {"signature": signature, "message": message[:300], "quote": message[:300]}
            fields["detail"] = line.strip()[:_DETAIL_CHARS]
            if signature == "crash_frame":
                fields["process"] = match["process"]  # its frames are one failure
            return [Draft("error_line", fields)]
    return []
