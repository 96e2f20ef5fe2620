"""The NCCL/gloo/store grammars on real distributed failure messages."""

from __future__ import annotations

import hyperscan
import pytest
import re2

from crashcart.parsers import nccl

POSITIVES = [
    # multi-line message with "Last error:"
    (
        "RuntimeError: NCCL error in: /opt/pytorch/torch/csrc/distributed/c10d/"
        "ProcessGroupNCCL.cpp:1269, unhandled system error, NCCL version 2.14.3\n"
        "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or"
        " device error.\nLast error:\nsocketStartConnect: Connect to 10.0.0.2<35011> failed :"
        " Software caused connection abort",
        "nccl_error",
        {
            "code": "unhandled_system_error",
            "version": "2.14.3",
            "last_error": "socketStartConnect: Connect to 10.0.0.2<35011> failed : Software"
            " caused connection abort",
        },
    ),
    # https://github.com/awslabs/awsome-distributed-ai/issues/192
    (
        "torch.distributed.DistBackendError: NCCL error in: /opt/conda/conda-bld/pytorch_1696588393313"
        "/work/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1331, unhandled system error (run"
        " with NCCL_DEBUG=INFO for details), NCCL version 2.18.5",
        "nccl_error",
        {"code": "unhandled_system_error", "version": "2.18.5"},
    ),
    (
        "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
        "NCCLUtils.hpp:219, unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL"
        " version 2.19.3\nncclUnhandledCudaError: Call to CUDA function failed.\nLast error:\n"
        "Cuda failure 'out of memory'",
        "nccl_error",
        {
            "code": "unhandled_cuda_error",
            "version": "2.19.3",
            "cuda_failure": "out of memory",
            "last_error": "Cuda failure 'out of memory'",
        },
    ),
    # https://github.com/NVIDIA/nccl/issues/875
    (
        "RuntimeError: NCCL error in: /home/builder/mc3/envs/pytorch-build/work/torch/csrc/"
        "distributed/c10d/ProcessGroupNCCL.cpp:1191, unhandled system error, NCCL version 2.10.3",
        "nccl_error",
        {"code": "unhandled_system_error", "version": "2.10.3"},
    ),
    ("ncclInternalError: Internal check failed.", "nccl_error", {"code": "internal_error"}),
    (
        "ncclInvalidUsage: This usually reflects invalid usage of NCCL library.",
        "nccl_error",
        {"code": "invalid_usage"},
    ),
    (
        "ncclRemoteError: A call failed possibly due to a network error or a remote process"
        " exiting prematurely.",
        "nccl_error",
        {"code": "remote_error"},
    ),
    (
        "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1275,"
        " invalid argument, NCCL version 2.14.3",
        "nccl_error",
        {"code": "invalid_argument"},
    ),
    (
        "ncclInvalidUsage: This usually reflects invalid usage of NCCL library.\nDuplicate GPU"
        " detected : rank 1 and rank 0 both on CUDA device 1000",
        "nccl_error",
        {"code": "invalid_usage"},
    ),
    (
        "Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1000",
        "nccl_error",
        {"code": "duplicate_gpu"},
    ),
    (
        "RuntimeError: NCCL communicator was aborted on rank 3.",
        "nccl_error",
        {"code": "aborted", "message": "RuntimeError: NCCL communicator was aborted on rank 3."},
    ),
    # torch 1.0; https://github.com/pytorch/pytorch/issues/17349 (wording of its title thread)
    (
        "RuntimeError: NCCL Error 2: unhandled system error",
        "nccl_error",
        {"code": "unhandled_system_error"},
    ),
    (
        "node1:12345:12399 [0] misc/socket.cc:538 NCCL WARN Net : Connection closed by remote peer"
        " 10.0.0.2<35011>",
        "nccl_warn",
        {
            "subsystem": "misc/socket.cc",
            "gpu": 0,
            "message": "Net : Connection closed by remote peer 10.0.0.2<35011>",
        },
    ),
    # https://github.com/NVIDIA/nccl/issues/1235
    (
        "ng30903:3063028:3066152 [3] include/alloc.h:178 NCCL WARN Cuda failure 'out of memory'",
        "nccl_warn",
        {"subsystem": "include/alloc.h", "gpu": 3, "cuda_failure": "out of memory"},
    ),
    # https://github.com/NVIDIA/nccl/issues/975
    (
        "n122-246-085:12251:12400 [5] misc/socket.cc:483 NCCL WARN socketStartConnect: Connect to"
        " fe80::966d:ae03:a2:8cf0%ib1<17943> failed : Software caused connection abort",
        "nccl_warn",
        {"subsystem": "misc/socket.cc", "gpu": 5},
    ),
    ("NCCL WARN Net : Connection closed by remote peer", "nccl_warn", {"subsystem": "Net"}),
    (
        "[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=2,"
        " OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for 1800328"
        " milliseconds before timing out.",
        "collective_timeout",
        {
            "backend": "nccl",
            "op": "ALLREDUCE",
            "seq_num": 2,
            "timeout_ms": 1800000,
            "ran_ms": 1800328,
            "rank": 0,
        },
    ),
    # https://github.com/OFA-Sys/OFA/issues/271
    (
        "[E ProcessGroupNCCL.cpp:737] [Rank 1] Watchdog caught collective operation timeout:"
        " WorkNCCL(SeqNum=469508, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1802212"
        " milliseconds before timing out.",
        "collective_timeout",
        {"seq_num": 469508, "rank": 1, "ran_ms": 1802212},
    ),
    # https://github.com/hiyouga/LlamaFactory/issues/6269
    (
        "[E1206 18:44:12.715298746 ProcessGroupNCCL.cpp:607] [PG ID 0 PG GUID 0(default_pg) Rank"
        " 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7753,"
        " OpType=_REDUCE_SCATTER_BASE, NumelIn=544997376, NumelOut=68124672, Timeout(ms)=600000)"
        " ran for 600061 milliseconds before timing out.",
        "collective_timeout",
        {"op": "_REDUCE_SCATTER_BASE", "rank": 3, "timeout_ms": 600000},
    ),
    (
        "RuntimeError: [/path/gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting 5000ms"
        " for recv operation to complete",
        "collective_timeout",
        {"backend": "gloo", "op": "recv", "timeout_ms": 5000},
    ),
    (
        "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection closed by"
        " peer [127.0.0.1]:12345",
        "peer_closed",
        {"backend": "gloo", "peer": "127.0.0.1:12345"},
    ),
    (
        "torch.distributed.DistStoreError: Timed out after 901 seconds waiting for clients. 1/2"
        " clients joined.",
        "store_timeout",
        {"timeout_s": 901, "joined": 1, "expected": 2},
    ),
    ("torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError", "store_timeout", {}),
    ("RuntimeError: Socket Timeout", "store_timeout", {"message": "RuntimeError: Socket Timeout"}),
    (
        "RuntimeError: wait timeout after 30000ms, keys: /default_pg/0//cuda//0",
        "store_timeout",
        {"timeout_s": 30.0},
    ),
    (
        "RuntimeError: Timed out initializing process group in store based barrier on rank: 0, for"
        " key: store_based_barrier_key:1 (world_size=2, worker_count=1, timeout=0:30:00)",
        "store_timeout",
        {"joined": 1, "expected": 2, "timeout_s": 1800.0},
    ),
]

NEGATIVES = [
    "node1:12345:12399 [0] NCCL INFO misc/socket.cc:504 -> 2 (Operation now in progress)",
    "node1:12345:12345 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>",
    "NCCL version 2.18.5+cuda12.1",
    "export NCCL_ASYNC_ERROR_HANDLING=1",
    "[rank0]:[I323 21:57:08.461980659 ProcessGroupNCCL.cpp:1538] [PG ID 0 PG GUID 0(default_pg)"
    " Rank 0] ProcessGroupNCCL heart beat monitor thread joined.",
    "step 200 loss: 0.3 all_reduce time 12ms",
    "Timeout set to 1800 seconds",
    "",
]


def _any_trigger(text: str) -> bool:
    return any(re2.compile(p).search(text) for p in nccl.TRIGGERS.values())


@pytest.mark.parametrize("text, kind, expected", POSITIVES)
def test_positive(text: str, kind: str, expected: dict) -> None:
    drafts = [d for d in nccl.parse(text) if d.kind == kind]
    assert len(drafts) == 1, nccl.parse(text)
    fields = drafts[0].fields
    for key, value in expected.items():
        assert fields[key] == value, key
    assert None not in fields.values()
    if kind in ("nccl_error", "nccl_warn", "store_timeout"):
        assert fields["message"] and len(fields["message"]) <= 300


@pytest.mark.parametrize("text, kind, expected", POSITIVES)
def test_positive_passes_prefilter(text: str, kind: str, expected: dict) -> None:
    assert _any_trigger(text)


@pytest.mark.parametrize("text", NEGATIVES)
def test_negative(text: str) -> None:
    assert nccl.parse(text) == []
    assert not _any_trigger(text)


def test_warn_quoting_cuda_failure_is_not_an_error() -> None:
    line = "host:1:2 [0] include/alloc.h:48 NCCL WARN Cuda failure 'out of memory'"
    assert [d.kind for d in nccl.parse(line)] == ["nccl_warn"]


@pytest.mark.parametrize("name", sorted(nccl.TRIGGERS))
def test_trigger_compiles_in_re2_and_hyperscan(name: str) -> None:
    pattern = nccl.TRIGGERS[name]
    assert re2.compile(pattern).search("") is None
    hyperscan.Database().compile(expressions=[pattern.encode()])


@pytest.mark.parametrize(
    "junk", [None, b"bytes", "[" * 50_000, "NCCL WARN " * 5_000, "a:1:2 [" + "9" * 60_000]
)
def test_never_raises(junk) -> None:
    assert isinstance(nccl.parse(junk), list)
