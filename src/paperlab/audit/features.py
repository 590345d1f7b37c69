"""Feature extraction for audits: the activations SMI compares (arXiv 2602.01150; the feature choice is ours).

The audited model runs in ``eval()`` mode with no augmentation. By default the features are the
penultimate activations, i.e. the input of the last ``nn.Linear`` in module order (the classifier head);
any named submodule's output can be taken instead, and ``"logits"`` / ``"softmax"`` give grey-box features.
"""

from __future__ import annotations

import torch
from torch import nn

from paperlab._validate import check_int

__all__ = ["extract_features"]


def _last_linear(model: nn.Module) -> nn.Module:
    last = None
    for module in model.modules():
        if isinstance(module, nn.Linear):
            last = module
    if last is None:
        raise ValueError(f"{type(model).__name__} has no nn.Linear layer; pass layer= the name of a submodule")
    return last


@torch.no_grad()
def extract_features(
    model: nn.Module, x: torch.Tensor, *, layer: str | None = None, batch_size: int = 512
) -> torch.Tensor:
    """Run ``model`` on ``x`` in batches and return one flattened feature vector per example.

    Args:
        model: any module; it is put in eval mode for the pass and its mode restored afterwards.
        x: ``[n, ...]`` inputs accepted by ``model``.
        layer: ``None`` (penultimate: the input of the last ``nn.Linear``), ``"logits"``, ``"softmax"``, or
            the dotted name of a submodule (``model.get_submodule(layer)``) whose output is taken.
        batch_size: examples per forward pass.

    Returns:
        ``[n, d]`` float32 features (fp32 on the input's device).
    """
    check_int("batch_size", batch_size, minimum=1)
    if len(x) == 0:
        raise ValueError("x must hold at least one example")
    captured: list[torch.Tensor] = []
    handle = None
    if layer is None:
        handle = _last_linear(model).register_forward_pre_hook(lambda _m, args: captured.append(args[0]))
    elif layer not in ("logits", "softmax"):
        try:
            target = model.get_submodule(layer)
        except AttributeError as err:
            names = [n for n, _ in model.named_modules() if n]
            raise ValueError(f"layer={layer!r} is not a submodule; valid: {names} or 'logits'/'softmax'") from err
        handle = target.register_forward_hook(lambda _m, _a, out: captured.append(out))
    was_training = model.training
    model.eval()
    chunks = []
    try:
        for i in range(0, len(x), batch_size):
            out = model(x[i:i + batch_size])
            if layer == "softmax":
                out = out.softmax(-1)
            if handle is not None:
                out = captured.pop()
                captured.clear()
            chunks.append(out.reshape(out.shape[0], -1).float())
    finally:
        if handle is not None:
            handle.remove()
        model.train(was_training)
    return torch.cat(chunks)
