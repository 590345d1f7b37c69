"""Dynamics of continuous thoughts: noise compounding along the thought chain (arXiv 2602.01148, Thm 4.8; our
experiment X4) and the geometry of the thoughts across examples (PCA, our X7, after the paper's Fig. 5).

The thought chain of a Coconut model is ``x_1 = h(<bot>)``, ``x_{j+1} = f_j(x_j)``: the post-norm hidden state
of a single-position pass with input embedding ``x_j`` over the KV cache of the question and the earlier thoughts.
Noise enters as in Thm 4.8: ``x~_j = f_{j-1}(x~_{j-1}) + xi_j``, ``xi_j ~ N(0, sigma^2 I_d)`` i.i.d.
(reconstructed statement). The chain can be run past the trained number of thoughts; the map is the same.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from paperlab._validate import check_int, check_positive
from paperlab.reasoning.coconut import Curriculum, collate, encode_example
from paperlab.reasoning.prosqa import ProsQAExample
from paperlab.reasoning.tokenizer import WordTokenizer

__all__ = ["ThoughtDynamics", "thought_chain", "thought_dynamics", "thought_spread"]


@dataclass(frozen=True)
class ThoughtDynamics:
    """Noise compounding along ``M`` thoughts of ``N`` examples.

    Attributes:
        clean: ``[N, M, D]`` noise-free thought inputs ``x*_j``.
        sq_error: ``[M]`` mean over examples and noise draws of ``||x~_j - x*_j||^2`` (j = 1..M).
        lipschitz: ``[N, M - 1]`` finite-difference ratios ``||f_j(x + d) - f_j(x)|| / ||d||`` at the clean
            states (the cache held fixed), for the maps between consecutive thoughts.
        sigma: absolute noise standard deviation per coordinate.
    """

    clean: torch.Tensor
    sq_error: torch.Tensor
    lipschitz: torch.Tensor
    sigma: float

    @property
    def dim(self) -> int:
        return self.clean.shape[-1]


def _prefix(model, examples: Sequence[ProsQAExample], tok: WordTokenizer, curriculum: Curriculum):
    items = [encode_example(e, tok, method="coconut", stage=curriculum.final_stage, curriculum=curriculum,
                            with_answer=False) for e in examples]
    batch = collate(items, pad_id=tok.pad_id).to(next(model.parameters()).device)
    h, state = model.hidden_states(batch.prefix_ids, attention_mask=batch.prefix_mask)
    return h[:, -1:], state


@torch.no_grad()
def thought_chain(model, examples: Sequence[ProsQAExample], tok: WordTokenizer, *, curriculum: Curriculum,
                  n_thoughts: int, sigma: float = 0.0, generator: torch.Generator | None = None) -> torch.Tensor:
    """The thought inputs ``[N, n_thoughts, D]`` of a Coconut model after each question (``<bot>`` appended),
    with ``N(0, sigma^2 I)`` added to every thought input when ``sigma > 0`` (``generator`` draws it)."""
    check_int("n_thoughts", n_thoughts, minimum=1)
    check_positive("sigma", sigma, allow_zero=True)
    was_training = model.training
    model.eval()
    x, state = _prefix(model, examples, tok, curriculum)
    fed = []
    for _ in range(n_thoughts):
        if sigma:
            x = x + sigma * torch.randn(x.shape, generator=generator, dtype=x.dtype).to(x.device)
        fed.append(x)
        x, state = model.hidden_states(inputs_embeds=x, state=state)
    model.train(was_training)
    return torch.cat(fed, 1)


@torch.no_grad()
def _lipschitz(model, examples, tok, curriculum, n_thoughts: int, eps: float, gen: torch.Generator):
    """Finite-difference gain of each thought map at the clean trajectory: ``[N, n_thoughts - 1]``."""
    x, state = _prefix(model, examples, tok, curriculum)
    ratios = []
    for _ in range(n_thoughts - 1):
        d = torch.randn(x.shape, generator=gen, dtype=x.dtype).to(x.device)
        d = d * (eps * x.norm(dim=-1, keepdim=True) / d.norm(dim=-1, keepdim=True))
        y, new_state = model.hidden_states(inputs_embeds=x, state=state)
        y_d, _ = model.hidden_states(inputs_embeds=x + d, state=state)
        ratios.append(((y_d - y).norm(dim=-1) / d.norm(dim=-1))[:, 0])
        x, state = y, new_state
    return torch.stack(ratios, 1) if ratios else x.new_zeros(x.shape[0], 0)


def thought_dynamics(model, examples: Sequence[ProsQAExample], tok: WordTokenizer, *, curriculum: Curriculum,
                     n_thoughts: int, relative_sigma: float, noise_seeds: Sequence[int] = (0,),
                     eps: float = 1e-3) -> ThoughtDynamics:
    """Run the clean chain and noisy chains (one per noise seed; ``sigma = relative_sigma x`` the RMS
    coordinate of the clean thoughts) and estimate each map's local Lipschitz gain with relative step ``eps``."""
    check_int("n_thoughts", n_thoughts, minimum=2)
    check_positive("relative_sigma", relative_sigma)
    check_positive("eps", eps)
    if not noise_seeds:
        raise ValueError("noise_seeds must name at least one seed")
    clean = thought_chain(model, examples, tok, curriculum=curriculum, n_thoughts=n_thoughts)
    sigma = relative_sigma * float(clean.pow(2).mean().sqrt())
    err = torch.zeros(n_thoughts, dtype=torch.float64)
    for s in noise_seeds:
        noisy = thought_chain(model, examples, tok, curriculum=curriculum, n_thoughts=n_thoughts, sigma=sigma,
                              generator=torch.Generator().manual_seed(s))
        err += (noisy - clean).double().pow(2).sum(-1).mean(0).cpu()
    lips = _lipschitz(model, examples, tok, curriculum, n_thoughts, eps, torch.Generator().manual_seed(10_007))
    return ThoughtDynamics(clean=clean.cpu(), sq_error=err / len(noise_seeds), lipschitz=lips.cpu(), sigma=sigma)


def thought_spread(thoughts: torch.Tensor) -> torch.Tensor:
    """Relative spread of each thought across examples, ``E||x_j - mean_j||^2 / E||x_j||^2``, for
    ``thoughts [N, M, D]`` -> ``[M]`` (scale-free: thought norms differ from step to step)."""
    if thoughts.dim() != 3 or thoughts.shape[0] < 2:
        raise ValueError(f"thoughts must be [N >= 2, M, D], got shape {tuple(thoughts.shape)}")
    t = thoughts.double()
    return (t - t.mean(0)).pow(2).sum(-1).mean(0) / t.pow(2).sum(-1).mean(0)
