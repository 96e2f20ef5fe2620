"""The cuda_oom grammar on real torch 1.x-2.x out-of-memory messages."""

from __future__ import annotations

import hyperscan
import pytest
import re2

from crashcart.parsers import cuda_oom

FRAG_HINT_1X = (
    " If reserved memory is >> allocated memory try setting max_split_size_mb to avoid"
    " fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF"
)
FRAG_HINT_2X = (
    " If reserved but unallocated memory is large try setting"
    " PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation"
    " for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"
)

POSITIVES = [
    # torch 1.5-1.13, with the fragmentation hint
    (
        "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 10.76 GiB total"
        " capacity; 9.73 GiB already allocated; 15.44 MiB free; 9.84 GiB reserved in total by"
        " PyTorch)" + FRAG_HINT_1X,
        {
            "backend": "cuda",
            "requested_gib": 0.0195,
            "gpu": 0,
            "total_gib": 10.76,
            "allocated_gib": 9.73,
            "free_gib": 0.0151,
            "reserved_gib": 9.84,
            "reserved_unallocated_gib": 0.11,
            "fragmentation_hint": True,
        },
    ),
    # torch 1.x without the hint
    (
        "RuntimeError: CUDA out of memory. Tried to allocate 2.00 MiB (GPU 0; 11.17 GiB total"
        " capacity; 10.35 GiB already allocated; 3.81 MiB free; 10.46 GiB reserved in total by"
        " PyTorch)",
        {"total_gib": 11.17, "allocated_gib": 10.35, "reserved_gib": 10.46},
    ),
    # torch 1.0-1.4 said "cached"; https://github.com/shllln/GenerativeGraph/issues/5
    (
        "RuntimeError: CUDA out of memory. Tried to allocate 1024.00 KiB (GPU 0; 11.17 GiB total"
        " capacity; 10.90 GiB already allocated; 576.00 KiB free; 30.96 MiB cached)",
        {"requested_gib": 0.001, "free_gib": 0.0005, "reserved_gib": 0.0302},
    ),
    # "0 bytes free"; https://github.com/CompVis/stable-diffusion/issues/702
    (
        "OutOfMemoryError: CUDA out of memory. Tried to allocate 192.00 MiB (GPU 0; 4.00 GiB total"
        " capacity; 3.08 GiB already allocated; 0 bytes free; 3.47 GiB reserved in total by"
        " PyTorch)" + FRAG_HINT_1X,
        {"free_gib": 0.0, "requested_gib": 0.1875, "reserved_unallocated_gib": 0.39},
    ),
    # torch 2.x, own process listed under its host PID too
    (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total"
        " capacity of 23.65 GiB of which 1.02 GiB is free. Process 12345 has 22.61 GiB memory in"
        " use. Including non-PyTorch memory, this process has 22.61 GiB memory in use. Of the"
        " allocated memory 20.10 GiB is allocated by PyTorch, and 1.98 GiB is reserved by PyTorch"
        " but unallocated." + FRAG_HINT_2X,
        {
            "backend": "cuda",
            "requested_gib": 2.0,
            "gpu": 0,
            "total_gib": 23.65,
            "free_gib": 1.02,
            "allocated_gib": 20.1,
            "reserved_unallocated_gib": 1.98,
            "reserved_gib": 22.08,
            "process_in_use_gib": 22.61,
            "processes": 1,
            "other_processes_gib": 0.0,
            "fragmentation_hint": True,
        },
    ),
    # torch 2.1 "capacty" typo, no process sentences;
    # https://github.com/carolchenyx/MGFN./issues/35
    (
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.70 GiB. GPU 0 has a"
        " total capacty of 6.00 GiB of which 0 bytes is free. Of the allocated memory 2.93 GiB is"
        " allocated by PyTorch, and 2.30 GiB is reserved by PyTorch but unallocated. If reserved"
        " but unallocated memory is large try setting max_split_size_mb to avoid fragmentation. "
        " See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF",
        {
            "gpu": 0,
            "total_gib": 6.0,
            "free_gib": 0.0,
            "allocated_gib": 2.93,
            "reserved_gib": 5.23,
            "fragmentation_hint": True,
        },
    ),
    # torch 2.2 with "this process has" only; https://github.com/kerrj/lerf/issues/73
    (
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.00 GiB. GPU 0 has a"
        " total capacty of 23.65 GiB of which 1.66 GiB is free. Including non-PyTorch memory, this"
        " process has 20.81 GiB memory in use. Of the allocated memory 12.09 GiB is allocated by"
        " PyTorch, and 4.84 GiB is reserved by PyTorch but unallocated.",
        {"process_in_use_gib": 20.81, "reserved_gib": 16.93, "free_gib": 1.66},
    ),
    # several other processes on the GPU
    (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 512.00 MiB. GPU 1 has a"
        " total capacity of 79.15 GiB of which 12.06 MiB is free. Process 4242 has 40.00 GiB"
        " memory in use. Process 4343 has 9.00 GiB memory in use. Including non-PyTorch memory,"
        " this process has 30.10 GiB memory in use. Of the allocated memory 28.00 GiB is"
        " allocated by PyTorch, with 1.00 GiB allocated in private pools (e.g., CUDA Graphs), and"
        " 1.50 GiB is reserved by PyTorch but unallocated.",
        {
            "gpu": 1,
            "processes": 2,
            "other_processes_gib": 49.0,
            "process_in_use_gib": 30.1,
            "allocated_gib": 28.0,
            "reserved_unallocated_gib": 1.5,
            "reserved_gib": 29.5,
        },
    ),
    # ROCm; https://github.com/ROCm/TheRock/issues/1054
    (
        "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 16.00 GiB. GPU 0 has a total"
        " capacity of 15.24 GiB of which 15.09 GiB is free. Of the allocated memory 0 bytes is"
        " allocated by PyTorch, and 0 bytes is reserved by PyTorch but unallocated. If reserved"
        " but unallocated memory is large try setting PYTORCH_HIP_ALLOC_CONF=expandable_segments:"
        "True to avoid fragmentation.",
        {"backend": "hip", "requested_gib": 16.0, "allocated_gib": 0.0, "reserved_gib": 0.0},
    ),
    # cut off mid-sentence: still an OOM, with what survived
    (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total"
        " capacity of 23.65 GiB of which 1.02 GiB is free. Process 1 has 12.00 GiB memory in use."
        " Process 2 has 10.00 GiB mem",
        {"requested_gib": 2.0, "processes": 2, "other_processes_gib": 10.0},
    ),
    ("torch.OutOfMemoryError: CUDA out of mem", {"backend": "cuda"}),
    (
        "RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`",
        {"backend": "cublas", "fragmentation_hint": False},
    ),
    ("RuntimeError: CUDA error: out of memory", {"backend": "cuda"}),
    ("CUDA runtime error: cudaErrorMemoryAllocation", {"backend": "cuda"}),
    # BLAST-WarpX/warpx#3398: the HIP runtime's error name
    (
        "amrex::Abort::1::HIP error in file WarpX/build/_deps/fetchedamrex-src/Src/Base/"
        "AMReX_GpuDevice.cpp line 402 hipErrorOutOfMemory !!!",
        {"backend": "hip"},
    ),
    # over set_per_process_memory_fraction's limit (ComfyUI, as it prints the message)
    ("Allocation on device 0 would exceed allowed memory. (out of memory)", {"backend": "cuda"}),
    # the caching allocator's warning before it raises (MiniMind's GRPO on an RTX 4090, batch-82)
    (
        "[W906 15:02:06.204334026 CUDACachingAllocator.cpp:3934] memory allocation failed with OOM"
        " on device 0 while trying to allocate 1000341504 bytes (free: 916848640, total:"
        " 25243287552).",
        {
            "backend": "cuda",
            "gpu": 0,
            "requested_gib": 0.9316,
            "free_gib": 0.8539,
            "total_gib": 23.5099,
        },
    ),
]

NEGATIVES = [
    "RuntimeError: [enforce fail at alloc_cpu.cpp:114] data. DefaultCPUAllocator: can't allocate"
    " memory: you tried to allocate 34359738368 bytes. Error code 12 (Cannot allocate memory)",
    "step 100 | loss: 0.3 | memory: 12.3 GiB allocated, 14.0 GiB reserved",
    "torch.cuda.max_memory_allocated() = 9.73 GiB",
    "Tried to allocate a bigger batch",
    "",
    "\x00\xff" * 100,
]


def _any_trigger(text: str) -> bool:
    return any(re2.compile(p).search(text) for p in cuda_oom.TRIGGERS.values())


@pytest.mark.parametrize("text, expected", POSITIVES)
def test_positive(text: str, expected: dict) -> None:
    drafts = cuda_oom.parse(text)
    assert len(drafts) == 1 and drafts[0].kind == "cuda_oom"
    fields = drafts[0].fields
    for key, value in expected.items():
        assert fields[key] == pytest.approx(value, abs=1e-3), key
    assert None not in fields.values()


@pytest.mark.parametrize("text, expected", POSITIVES)
def test_positive_passes_prefilter(text: str, expected: dict) -> None:
    assert _any_trigger(text)


@pytest.mark.parametrize("text", NEGATIVES)
def test_negative(text: str) -> None:
    assert cuda_oom.parse(text) == []
    assert not _any_trigger(text)


def test_reserved_unallocated_never_negative() -> None:
    fields = cuda_oom.parse(POSITIVES[2][0])[0].fields
    assert fields["reserved_unallocated_gib"] == 0.0


@pytest.mark.parametrize("name", sorted(cuda_oom.TRIGGERS))
def test_trigger_compiles_in_re2_and_hyperscan(name: str) -> None:
    pattern = cuda_oom.TRIGGERS[name]
    assert re2.compile(pattern).search("") is None
    hyperscan.Database().compile(expressions=[pattern.encode()])


@pytest.mark.parametrize("junk", [None, 12, "(" * 50_000, "CUDA out of memory. " * 5_000])
def test_never_raises(junk) -> None:
    assert isinstance(cuda_oom.parse(junk), list)
