"""Optional GPU path: flash-linear-attention's Triton chunk kernel for the gated delta rule.

Selection rule (in ``delta_rule_chunk(backend="auto")``): CUDA inputs, not fp64, and ``fla`` importable.
The kernel gets the inputs exactly as our ops do: q as given (the layer pre-normalizes it), raw k, a
precomputed beta, and in-kernel q/k normalization switched off. Install with ``pip install paperlab[gpu]``.
"""

from __future__ import annotations

import functools
import warnings

import torch

__all__ = ["delta_rule_fla", "fla_available"]


@functools.lru_cache(maxsize=1)
def fla_available() -> bool:
    """True when ``fla.ops.gated_delta_rule.chunk_gated_delta_rule`` imports (needs triton) and CUDA is present."""
    if not torch.cuda.is_available():
        return False
    try:
        with warnings.catch_warnings():  # fla warns at import about its platform; that is not our caller's concern
            warnings.simplefilter("ignore")
            from fla.ops.gated_delta_rule import chunk_gated_delta_rule  # noqa: F401
    except Exception:  # fla raises assorted errors when triton or a driver is missing
        return False
    return True


def delta_rule_fla(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    *,
    scale: float,
    initial_state: torch.Tensor | None = None,
    output_final_state: bool = False,
    cu_seqlens: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Call fla's ``chunk_gated_delta_rule`` (``[B, T, H, *]`` layout); shapes as in ``delta_rule_chunk``.

    The state is passed and returned in fp32; outputs come back in v's dtype. ``cu_seqlens`` (packed
    sequences, ``B = 1``, checked by the caller) goes to the kernel as a long tensor on q's device.
    """
    try:
        from fla.ops.gated_delta_rule import chunk_gated_delta_rule
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError("backend='fla' needs flash-linear-attention and triton: "
                          "pip install 'paperlab[gpu]'") from err
    dtype = v.dtype
    k, v = k.to(q.dtype), v.to(q.dtype)
    h0 = None if initial_state is None else initial_state.float()
    varlen = {} if cu_seqlens is None else {"cu_seqlens": cu_seqlens.to(device=q.device, dtype=torch.long)}
    o, S = chunk_gated_delta_rule(
        q, k, v, g.float(), beta.to(q.dtype), scale=scale, initial_state=h0,
        output_final_state=output_final_state, use_qk_l2norm_in_kernel=False, **varlen,
    )
    return o.to(dtype), (S if output_final_state else None)
