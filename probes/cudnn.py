"""The cudnn probe: cuDNN availability and version, and a small convolution with and without it.

The convolution uses the dtype and memory layout the log names (``dtype``, ``layout``:
``channels_last`` or ``contiguous``) and, when given, a small ``input_shape`` [N, C, H, W]
clipped to at most 8 x 64 x 64 x 64 so the probe stays in the tens of MiB. Forward and backward
run once with cuDNN enabled and once with it disabled; the outputs are compared.
"""

from __future__ import annotations

from typing import Any

from crashcart.probes.base import (
    category_of,
    devices_to_check,
    integer,
    outcome,
    require_cuda,
    rule_of,
)

_DTYPES = {
    "float16": "float16",
    "half": "float16",
    "fp16": "float16",
    "bfloat16": "bfloat16",
    "bf16": "bfloat16",
    "float32": "float32",
    "float": "float32",
    "fp32": "float32",
}
_LIMITS = (8, 64, 64, 64)


def _shape(context: dict[str, Any]) -> list[int]:
    """The input shape to test: the log's, clipped to a small size, else 4 x 16 x 32 x 32."""
    shape = context.get("input_shape")
    if (
        isinstance(shape, list)
        and len(shape) == 4
        and all(isinstance(v, int) and v > 0 for v in shape)
    ):
        return [min(v, cap) for v, cap in zip(shape, _LIMITS, strict=True)]
    return [4, 16, 32, 32]


def _conv(
    torch: Any, device: str, dtype: Any, shape: list[int], channels_last: bool, cudnn: bool
) -> dict[str, Any]:
    """Forward and backward of a 3x3 convolution; its output on the CPU, or the error."""
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(shape, generator=gen).to(device=device, dtype=dtype)
    conv = torch.nn.Conv2d(shape[1], 32, 3, padding=1).to(device=device, dtype=dtype)
    with torch.no_grad():  # identical weights in both runs, so their outputs can be compared
        conv.weight.copy_(torch.randn(conv.weight.shape, generator=gen).to(dtype) * 0.1)
        conv.bias.zero_()
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
        conv = conv.to(memory_format=torch.channels_last)
    x.requires_grad_(True)
    try:
        with torch.backends.cudnn.flags(enabled=cudnn):
            y = conv(x)
            y.float().sum().backward()
            torch.cuda.synchronize(device)
        return {"ok": True, "output": y.detach().float().cpu()}
    except RuntimeError as exc:
        return {"ok": False, "error": str(exc).splitlines()[0][:300]}
    finally:
        del x, conv
        torch.cuda.empty_cache()


def cudnn(context: dict[str, Any]) -> dict[str, Any]:
    """cuDNN version and a small convolution in the log's dtype/layout, with cuDNN on and off."""
    torch = require_cuda()
    index = devices_to_check(torch, context)[0]
    device = f"cuda:{index}"
    dtype_name = _DTYPES.get(
        str(context.get("dtype") or "float32").replace("torch.", ""), "float32"
    )
    channels_last = str(context.get("layout") or "") == "channels_last"
    shape = _shape(context)
    available = bool(torch.backends.cudnn.is_available())
    details: dict[str, Any] = {
        "device": device,
        "cudnn_available": available,
        "cudnn_version": torch.backends.cudnn.version() if available else None,
        "cudnn_enabled": bool(torch.backends.cudnn.enabled),
        "dtype": dtype_name,
        "layout": "channels_last" if channels_last else "contiguous",
        "input_shape": shape,
        "batch": integer(context, "batch"),
    }
    checking = category_of(context) == "cudnn"
    if not available:
        return outcome(
            "confirmed" if checking else "inconclusive",
            f"cuDNN is not available to torch {torch.__version__}",
            **details,
        )
    dtype = getattr(torch, dtype_name)
    with_cudnn = _conv(torch, device, dtype, shape, channels_last, cudnn=True)
    without = _conv(torch, device, dtype, shape, channels_last, cudnn=False)
    details["with_cudnn"] = {k: v for k, v in with_cudnn.items() if k != "output"}
    details["without_cudnn"] = {k: v for k, v in without.items() if k != "output"}
    if with_cudnn["ok"] and without["ok"]:
        diff = float((with_cudnn["output"] - without["output"]).abs().max())
        details["max_difference"] = diff
    what = f"a {details['layout']} {dtype_name} conv {'x'.join(map(str, shape))} on {device} (cuDNN {details['cudnn_version']})"
    if not with_cudnn["ok"] and without["ok"]:
        summary = f"{what} fails with cuDNN ({with_cudnn['error'][:120]}) and works without it"
        return outcome("confirmed" if checking else "inconclusive", summary, **details)
    if not with_cudnn["ok"]:
        summary = f"{what} fails with and without cuDNN ({with_cudnn['error'][:120]})"
        return outcome("inconclusive", summary, **details)
    summary = f"{what} works with cuDNN"
    # Working here refutes "cuDNN cannot do this configuration"; memory or init failures and
    # generic errors depend on the state of the run, which this small conv does not recreate.
    refutable = rule_of(context) in ("cudnn.not_supported", "cudnn.no_engine")
    return outcome("refuted" if checking and refutable else "inconclusive", summary, **details)
