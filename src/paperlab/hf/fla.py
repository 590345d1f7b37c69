"""Weights of a ``DeltaNetMixer`` (GDN, KLA, ...) in the naming of flash-linear-attention's ``GatedDeltaNet`` layer.

fla's ``fla.layers.GatedDeltaNet(hidden_size, expand_v, head_dim, num_heads, conv_size, norm_eps, use_gate=True,
use_short_conv=True)`` holds ``q_proj``, ``k_proj``, ``v_proj``, ``g_proj``, ``o_proj`` (no biases), ``a_proj`` and
``b_proj`` (one output per head, no bias), ``A_log`` and ``dt_bias`` (one per head), the depthwise short convs
``q_conv1d`` / ``k_conv1d`` / ``v_conv1d`` (``nn.Conv1d`` weights ``[C, 1, conv_size]``, no bias, SiLU) and the gated
output norm ``o_norm`` (gain ``[head_v_dim]``). Our mixer has the same tensors under the names ``conv_q`` /
``conv_k`` / ``conv_v`` and ``norm``, with the same layouts, plus a bias on ``b_proj`` (zero at init), which fla's
layer has not.

fla's layer computes Gated DeltaNet: ``q, k`` L2-normalised (eps 1e-6 inside the root), ``beta = sigmoid(b_proj x)``,
``g = -exp(A_log) softplus(a_proj x + dt_bias)``, the recurrence ``S = e^g S; S += beta k (v - S^T k)^T;
o = S^T q / sqrt(d_k)``, then ``o_norm(o) * SiLU(g_proj x)`` and ``o_proj``. That is our ``mode="gdn"`` with the
Mamba2 gate, so only such a mixer (with a zero ``b_proj`` bias) converts to an fla layer that computes the same
function; other modes (KLA's beta = eta / (||k||^2 + eps) and raw keys) keep the same tensors, but fla's layer
would compute GDN from them, so they convert only with ``check_function=False``. Only weights are converted:
recent fla kernels also store the recurrent state transposed (``state_v_first``).
"""

from __future__ import annotations

from typing import Any

import torch

from paperlab.layers import DeltaNetMixer

__all__ = ["FLA_NAMES", "fla_config", "from_fla_gated_deltanet", "to_fla_gated_deltanet"]

# ours -> fla's
FLA_NAMES = {
    "q_proj.weight": "q_proj.weight",
    "k_proj.weight": "k_proj.weight",
    "v_proj.weight": "v_proj.weight",
    "g_proj.weight": "g_proj.weight",
    "o_proj.weight": "o_proj.weight",
    "a_proj.weight": "a_proj.weight",
    "b_proj.weight": "b_proj.weight",
    "A_log": "A_log",
    "dt_bias": "dt_bias",
    "conv_q.weight": "q_conv1d.weight",
    "conv_k.weight": "k_conv1d.weight",
    "conv_v.weight": "v_conv1d.weight",
    "norm.weight": "o_norm.weight",
}


def _check_mixer(mixer: DeltaNetMixer, *, check_function: bool) -> None:
    if not isinstance(mixer, DeltaNetMixer):
        raise TypeError(f"mixer must be a DeltaNetMixer, got {type(mixer).__name__}")
    if mixer.gate_mode != "mamba2" or mixer.mode == "deltanet_softmax":
        raise ValueError(f"fla's GatedDeltaNet has the Mamba2 decay (A_log, dt_bias); this mixer has "
                         f"mode={mixer.mode!r}, gate_mode={mixer.gate_mode!r}")
    if check_function and (mixer.mode != "gdn" or mixer.seq_factor != "none"):
        raise ValueError(f"fla's GatedDeltaNet computes Gated DeltaNet; a mixer with mode={mixer.mode!r}, "
                         f"seq_factor={mixer.seq_factor!r} would compute another function from these weights "
                         "(pass check_function=False to convert the tensors anyway)")


def fla_config(mixer: DeltaNetMixer) -> dict[str, Any]:
    """Keyword arguments of ``fla.layers.GatedDeltaNet`` with this mixer's shapes."""
    if not isinstance(mixer, DeltaNetMixer):
        raise TypeError(f"mixer must be a DeltaNetMixer, got {type(mixer).__name__}")
    return {"hidden_size": mixer.d_model, "num_heads": mixer.n_heads, "head_dim": mixer.head_dim_k,
            "expand_v": mixer.head_dim_v / mixer.head_dim_k, "conv_size": mixer.conv_q.kernel_size,
            "norm_eps": mixer.norm.eps, "use_gate": True, "use_short_conv": True, "conv_bias": False}


def to_fla_gated_deltanet(mixer: DeltaNetMixer, *, check_function: bool = True) -> dict[str, torch.Tensor]:
    """The state dict of an fla ``GatedDeltaNet`` layer (built with ``fla_config(mixer)``) holding these weights.

    Raises ``ValueError`` when fla's layer would compute another function (see the module notes; a nonzero
    ``b_proj`` bias too, as fla's ``b_proj`` has none) unless ``check_function=False`` (the bias is then dropped).
    """
    _check_mixer(mixer, check_function=check_function)
    ours = mixer.state_dict()
    if check_function and bool(ours["b_proj.bias"].any()):
        raise ValueError("fla's b_proj has no bias and this mixer's b_proj bias is nonzero: the layers would differ "
                         "(pass check_function=False to drop it)")
    return {fla: ours[name].detach().clone() for name, fla in FLA_NAMES.items()}


def from_fla_gated_deltanet(mixer: DeltaNetMixer, state_dict: dict[str, torch.Tensor], *,
                            check_function: bool = True) -> DeltaNetMixer:
    """Load an fla ``GatedDeltaNet`` state dict into ``mixer`` (in place; ``b_proj`` bias set to 0); returns it.

    Raises ``ValueError`` naming missing, unexpected or mis-shaped tensors (and, with ``check_function``, when the
    mixer is not a GDN mixer that computes fla's function).
    """
    _check_mixer(mixer, check_function=check_function)
    wanted = set(FLA_NAMES.values())
    missing, extra = sorted(wanted - set(state_dict)), sorted(set(state_dict) - wanted)
    if missing or extra:
        raise ValueError(f"not an fla GatedDeltaNet state dict for this mixer: missing {missing}, unexpected {extra}")
    ours = mixer.state_dict()
    new = {name: state_dict[fla] for name, fla in FLA_NAMES.items()}
    bad = [f"{FLA_NAMES[n]} {tuple(t.shape)} (expected {tuple(ours[n].shape)})" for n, t in new.items()
           if tuple(t.shape) != tuple(ours[n].shape)]
    if bad:
        raise ValueError(f"shapes do not match this mixer: {bad}; build it with fla_config's sizes")
    new["b_proj.bias"] = torch.zeros_like(ours["b_proj.bias"])
    mixer.load_state_dict(new)
    return mixer
