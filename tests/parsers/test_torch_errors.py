"""The torch_errors grammars on real torch exception messages."""

from __future__ import annotations

import hyperscan
import pytest
import re2

from crashcart.parsers import torch_errors

POSITIVES = [
    # CUDA code outside torch checks its calls with its own macro (GIDS#33, CUDA samples).
    (
        "GPUassert: an illegal memory access was encountered /src/GIDS/gids_nvme.cu 458",
        "cuda_error",
        {
            "error": "illegal_memory_access",
            "message": "GPUassert: an illegal memory access was encountered /src/GIDS/gids_nvme.cu 458",
        },
    ),
    (
        'CUDA error at kernel.cu:42 code=700(cudaErrorIllegalAddress) "cudaDeviceSynchronize()"',
        "cuda_error",
        {
            "error": "illegal_memory_access",
            "message": 'CUDA error at kernel.cu:42 code=700(cudaErrorIllegalAddress) "cudaDeviceSynchronize()"',
        },
    ),
    (
        "RuntimeError: Expected all tensors to be on the same device, but found at least two"
        " devices, cuda:0 and cpu! (when checking argument for argument mat1 in method"
        " wrapper_CUDA_addmm)",
        "device_mismatch",
        {
            "device_a": "cuda:0",
            "device_b": "cpu",
            "argument": "mat1",
            "op": "wrapper_CUDA_addmm",
            "where": "tensors",
        },
    ),
    (
        "RuntimeError: Expected all tensors to be on the same device, but got index is on cpu,"
        " different from other tensors on cuda:0 (when checking argument in method"
        " wrapper_CUDA__index_select)",
        "device_mismatch",
        {
            "device_a": "cpu",
            "device_b": "cuda:0",
            "argument": "index",
            "op": "wrapper_CUDA__index_select",
        },
    ),
    # torch 1.9 "arugment" typo; https://github.com/JieyuZ2/wrench/issues/4
    (
        "RuntimeError: Expected all tensors to be on the same device, but found at least two"
        " devices, cuda:0 and cpu! (when checking arugment for argument target in method"
        " wrapper_nll_loss_forward)",
        "device_mismatch",
        {"argument": "target", "op": "wrapper_nll_loss_forward"},
    ),
    # https://github.com/zhongyy/Face-Transformer/issues/37
    (
        "Expected all tensors to be on the same device, but found at least two devices, cuda:0"
        " and cuda:1! (when checking argument for argument index in method"
        " wrapper_CUDA_scatter__value)",
        "device_mismatch",
        {"device_a": "cuda:0", "device_b": "cuda:1", "argument": "index"},
    ),
    (
        "RuntimeError: Expected all tensors to be on the same device, but found at least two"
        " devices, cuda:0 and cpu!",
        "device_mismatch",
        {"device_a": "cuda:0", "device_b": "cpu", "where": "tensors"},
    ),
    (
        "RuntimeError: Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor)"
        " should be the same",
        "device_mismatch",
        {"device_a": "cuda", "device_b": "cpu", "where": "input_weight"},
    ),
    (
        "RuntimeError: Input type (torch.FloatTensor) and weight type (torch.cuda.FloatTensor)"
        " should be the same or input should be a MKLDNN tensor and weight is a dense tensor",
        "device_mismatch",
        {"device_a": "cpu", "device_b": "cuda", "where": "input_weight"},
    ),
    (
        "RuntimeError: Input type (CUDABFloat16Type) and weight type (CPUBFloat16Type) should be"
        " the same",
        "device_mismatch",
        {"device_a": "cuda", "device_b": "cpu", "where": "input_weight"},
    ),
    (
        "RuntimeError: Tensor for argument #2 'mat1' is on CPU, but expected it to be on GPU"
        " (while checking arguments for addmm)",
        "device_mismatch",
        {"device_a": "cpu", "device_b": "cuda", "argument": "mat1", "op": "addmm"},
    ),
    (
        "RuntimeError: Expected object of device type cuda but got device type cpu for argument"
        " #1 'self' in call to _th_index_select",
        "device_mismatch",
        {"device_a": "cpu", "device_b": "cuda", "argument": "self"},
    ),
    # https://github.com/lm-sys/FastChat/issues/580
    (
        "RuntimeError: Tensor on device cpu is not on the expected device meta!",
        "device_mismatch",
        {"device_a": "cpu", "device_b": "meta"},
    ),
    # https://github.com/pppLang/SKNet/issues/14
    (
        "RuntimeError: cuDNN error: CUDNN_STATUS_NOT_SUPPORTED. This error may appear if you"
        " passed in a non-contiguous input.",
        "cudnn_error",
        {"status": "NOT_SUPPORTED"},
    ),
    (
        "RuntimeError: cuDNN error: CUDNN_STATUS_INTERNAL_ERROR",
        "cudnn_error",
        {"status": "INTERNAL_ERROR"},
    ),
    (
        "RuntimeError: cuDNN error: CUDNN_STATUS_EXECUTION_FAILED",
        "cudnn_error",
        {"status": "EXECUTION_FAILED"},
    ),
    (
        "RuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED",
        "cudnn_error",
        {"status": "NOT_INITIALIZED"},
    ),
    (
        "RuntimeError: cuDNN error: CUDNN_STATUS_MAPPING_ERROR",
        "cudnn_error",
        {"status": "MAPPING_ERROR"},
    ),
    ("RuntimeError: cuDNN error: CUDNN_STATUS_BAD_PARAM", "cudnn_error", {"status": "BAD_PARAM"}),
    ("RuntimeError: cuDNN error: CUDNN_STATUS_ARCH_MISMATCH", "cudnn_error", {"status": "OTHER"}),
    (
        "RuntimeError: GET was unable to find an engine to execute this computation",
        "cudnn_error",
        {"status": "NO_ENGINE"},
    ),
    (
        "RuntimeError: FIND was unable to find an engine to execute this computation",
        "cudnn_error",
        {"status": "NO_ENGINE"},
    ),
    (
        "RuntimeError: cuDNN Frontend error: [cudnn_frontend] Error: No execution plans support"
        " the graph.",
        "cudnn_error",
        {"status": "FRONTEND"},
    ),
    (
        "RuntimeError: element 0 of tensors does not require grad and does not have a grad_fn",
        "requires_grad_error",
        {"variant": "no_grad_fn", "element": 0},
    ),
    (
        "RuntimeError: a leaf Variable that requires grad is being used in an in-place operation.",
        "requires_grad_error",
        {"variant": "leaf_inplace"},
    ),
    (
        "RuntimeError: Can't call numpy() on Tensor that requires grad. Use"
        " tensor.detach().numpy() instead.",
        "requires_grad_error",
        {"variant": "numpy_requires_grad"},
    ),
    (
        "RuntimeError: cannot register a hook on a tensor that doesn't require gradient",
        "requires_grad_error",
        {"variant": "hook_no_grad"},
    ),
    (
        "RuntimeError: One of the differentiated Tensors does not require grad",
        "requires_grad_error",
        {"variant": "differentiated_no_grad"},
    ),
    (
        "RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasSgemm("
        " handle, opa, opb, m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc)`",
        "cublas_error",
        {"status": "EXECUTION_FAILED", "call": "cublasSgemm"},
    ),
    (
        "RuntimeError: CUDA error: CUBLAS_STATUS_INTERNAL_ERROR when calling `cublasGemmEx("
        " handle, opa, opb, m, n, k, &falpha, a, CUDA_R_16F, lda, b)`",
        "cublas_error",
        {"status": "INTERNAL_ERROR", "call": "cublasGemmEx"},
    ),
    (
        "RuntimeError: CUDA error: CUBLAS_STATUS_NOT_INITIALIZED when calling `cublasCreate(handle)`",
        "cublas_error",
        {"status": "NOT_INITIALIZED", "call": "cublasCreate"},
    ),
    ("CUBLAS_STATUS_INVALID_VALUE", "cublas_error", {"status": "INVALID_VALUE"}),
    (
        "RuntimeError: CUDA error: an illegal memory access was encountered\nCUDA kernel errors"
        " might be asynchronously reported at some other API call, so the stacktrace below might"
        " be incorrect.",
        "cuda_error",
        {
            "error": "illegal_memory_access",
            "message": "RuntimeError: CUDA error: an illegal memory access was encountered",
        },
    ),
    (
        "RuntimeError: CUDA error: device-side assert triggered",
        "cuda_error",
        {"error": "device_side_assert_triggered"},
    ),
    (
        "RuntimeError: CUDA error: unspecified launch failure",
        "cuda_error",
        {"error": "unspecified_launch_failure"},
    ),
    ("RuntimeError: CUDA error: misaligned address", "cuda_error", {"error": "misaligned_address"}),
    (
        "RuntimeError: CUDA error: no kernel image is available for execution on the device",
        "cuda_error",
        {"error": "no_kernel_image"},
    ),
    ("RuntimeError: CUDA error: some brand new failure", "cuda_error", {"error": "other"}),
    (
        "/pytorch/aten/src/ATen/native/cuda/Loss.cu:240: nll_loss_forward_reduce_cuda_kernel_2d:"
        " block: [0,0,0], thread: [5,0,0] Assertion `t >= 0 && t < n_classes` failed.",
        "device_assert",
        {
            "file": "/pytorch/aten/src/ATen/native/cuda/Loss.cu",
            "kernel": "nll_loss_forward_reduce_cuda_kernel_2d",
            "assertion": "t >= 0 && t < n_classes",
            "source_line": 240,
        },
    ),
    (
        "../aten/src/ATen/native/cuda/IndexKernel.cu:92: operator(): block: [36,0,0], thread:"
        ' [64,0,0] Assertion `-sizes[i] <= index && index < sizes[i] && "index out of bounds"`'
        " failed.",
        "device_assert",
        {"kernel": "operator()", "file": "../aten/src/ATen/native/cuda/IndexKernel.cu"},
    ),
    # A Windows build's kernel site (no kernel name) wrapped by the terminal before its
    # assertion (pixel-nerf#26): the site alone is the device assert.
    (
        "C:/cb/pytorch_1000000000000/work/aten/src/ATen/native/cuda/IndexKernel.cu:142: block:"
        " [0,0,0], thread",
        "device_assert",
        {
            "file": "C:/cb/pytorch_1000000000000/work/aten/src/ATen/native/cuda/IndexKernel.cu",
            "source_line": 142,
            "assertion": "",
        },
    ),
    # cudaGetErrorString's sentence after a kernel library's own prefix (gaussian-splatting#41).
    (
        "Line 298: an illegal memory access was encountered",
        "cuda_error",
        {"error": "illegal_memory_access"},
    ),
    # ROCm builds: HIP errors, the HIP runtime's error names, HIP device assertions and MIOpen.
    # verl-project/verl#3163
    (
        "RuntimeError: HIP error: invalid device function",
        "cuda_error",
        {"error": "invalid_device_function"},
    ),
    # huggingface/autotrain-advanced#737
    (
        "RuntimeError: HIP error: no kernel image is available for execution on the device",
        "cuda_error",
        {"error": "no_kernel_image"},
    ),
    # ROCm/legacy-rocm-build#2061
    (
        "hipErrorNoBinaryForGpu: Unable to find code object for all current devices!",
        "cuda_error",
        {"error": "no_kernel_image"},
    ),
    # mosaicml/composer#2758: HIP closes the quote with an apostrophe
    (
        "/pytorch/aten/src/ATen/native/hip/Indexing.hip:1292: indexSelectLargeIndex: Device-side"
        " assertion `srcIndex < srcSelectDimSize' failed.",
        "device_assert",
        {
            "file": "/pytorch/aten/src/ATen/native/hip/Indexing.hip",
            "kernel": "indexSelectLargeIndex",
            "assertion": "srcIndex < srcSelectDimSize",
            "source_line": 1292,
        },
    ),
    # ROCm/MIOpen#3943
    (
        "RuntimeError: miopenStatusUnknownError",
        "cudnn_error",
        {"status": "OTHER", "library": "MIOpen"},
    ),
    # ROCm/MIOpen#1994
    (
        "MIOpen Error: /MIOpen/src/ocl/convolutionocl.cpp:831: Forward Convolution cannot be"
        " executed due to incorrect params",
        "cudnn_error",
        {"status": "BAD_PARAM", "library": "MIOpen"},
    ),
    # ryujaehun/pytorch-gpu-benchmark#19
    (
        "MIOpen Error: /MIOpen/src/hipoc/hipoc_program.cpp:286: Code object build failed. Source:"
        " MIOpenIm2d2Col.cl",
        "cudnn_error",
        {"status": "BUILD_FAILED", "library": "MIOpen"},
    ),
    (
        "RuntimeError: cuDNN error: CUDNN_STATUS_NOT_SUPPORTED. This error may appear if you"
        " passed in a non-contiguous input.",
        "cudnn_error",
        {"status": "NOT_SUPPORTED", "library": "cuDNN"},
    ),
    # Pasted as markdown inline code, which ate the assertion's backticks (a DPO run's eval).
    (
        "indexSelectLargeIndex: block: [213,0,0], thread: [63,0,0] Assertion srcIndex <"
        " srcSelectDimSize failed.",
        "device_assert",
        {"assertion": "srcIndex < srcSelectDimSize"},
    ),
    # NVIDIA PhysX in Isaac Gym (OmniIsaacGymEnvs#64): the driver API's error number.
    (
        "[Error] [omni.physx.plugin] PhysX error: SynchronizeStreams cuEventRecord failed with"
        " error 700",
        "cuda_error",
        {"error": "illegal_memory_access"},
    ),
    (
        "numba.cuda.cudadrv.driver.CudaAPIError: [719] Call to cuCtxSynchronize results in"
        " CUDA_ERROR_LAUNCH_FAILED",
        "cuda_error",
        {"error": "unspecified_launch_failure"},
    ),
]

NEGATIVES = [
    "RuntimeError: CUDA error: out of memory",  # cuda_oom's
    "cuMemAlloc failed with error 2",  # an OOM: cuda_oom's words, not a cause named here
    "CUDA_ERROR_OUT_OF_MEMORY",
    "thread: [1,0,0] Assertion passed",
    "RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`",
    # same device, different dtype: a dtype mismatch, not a device mismatch
    "RuntimeError: Input type (torch.cuda.HalfTensor) and weight type (torch.cuda.FloatTensor)"
    " should be the same",
    "Using device: cuda:0",
    "model.requires_grad_(False); 12 tensors require grad",
    "cudnn.benchmark = True, cuDNN version 8902",
    "loss: 0.3",
    "python: main.c:12: main: Assertion `x > 0' failed.",
    # torch's warning that one cuDNN plan failed and the next is tried (F5-TTS#521, a healthy
    # run): when none works torch raises, and that error is the failure.
    "C:\\envs\\f5-tts\\lib\\site-packages\\torch\\autograd\\graph.py:744: UserWarning: Plan failed"
    " with a cudnnException: CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR: cudnnFinalize Descriptor"
    " Failed cudnn_status: CUDNN_STATUS_NOT_SUPPORTED",
    # A kernel's site is printed only with its block coordinates.
    "kernels.cu:12: setup done",
    # MIOpen's routine warning in healthy ROCm runs (ryujaehun/pytorch-gpu-benchmark#19)
    "MIOpen(HIP): Warning [SQLiteBase] Unable to read system database"
    " file:/opt/rocm/miopen/share/miopen/db/gfx900_64.kdb Performance may degrade",
]


def _any_trigger(text: str) -> bool:
    return any(re2.compile(p).search(text) for p in torch_errors.TRIGGERS.values())


@pytest.mark.parametrize("text, kind, expected", POSITIVES)
def test_positive(text: str, kind: str, expected: dict) -> None:
    drafts = [d for d in torch_errors.parse(text) if d.kind == kind]
    assert len(drafts) == 1, torch_errors.parse(text)
    fields = drafts[0].fields
    for key, value in expected.items():
        assert fields[key] == value, key
    assert None not in fields.values()


@pytest.mark.parametrize("text, kind, expected", POSITIVES)
def test_positive_passes_prefilter(text: str, kind: str, expected: dict) -> None:
    assert _any_trigger(text)


@pytest.mark.parametrize("text", NEGATIVES)
def test_negative(text: str) -> None:
    assert torch_errors.parse(text) == []


def test_one_assert_per_site() -> None:
    line = (
        "/pytorch/aten/src/ATen/native/cuda/Loss.cu:240: nll_loss_forward_reduce_cuda_kernel_2d:"
        " block: [0,0,0], thread: [{n},0,0] Assertion `t >= 0 && t < n_classes` failed."
    )
    text = "\n".join(line.format(n=n) for n in range(32))
    assert len(torch_errors.parse(text)) == 1


@pytest.mark.parametrize("name", sorted(torch_errors.TRIGGERS))
def test_trigger_compiles_in_re2_and_hyperscan(name: str) -> None:
    pattern = torch_errors.TRIGGERS[name]
    assert re2.compile(pattern).search("") is None
    hyperscan.Database().compile(expressions=[pattern.encode()])


@pytest.mark.parametrize(
    "junk", [None, "Assertion `" * 10_000, "a/" * 30_000 + ".cu:1: k: block: [", "device " * 9_000]
)
def test_never_raises(junk) -> None:
    assert isinstance(torch_errors.parse(junk), list)
