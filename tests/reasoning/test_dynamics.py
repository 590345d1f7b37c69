"""Thought-chain dynamics: the chain equals the KV-cached latent pass, injected noise has the planted size,
finite-difference gains are stable in the step size, and the spread statistic's invariants."""

from __future__ import annotations

import pytest
import torch

from paperlab.reasoning.coconut import Curriculum, collate, encode_example, latent_forward
from paperlab.reasoning.dynamics import thought_chain, thought_dynamics, thought_spread
from paperlab.reasoning.prosqa_gen import GeneratorConfig, generate_prosqa
from paperlab.reasoning.tokenizer import prosqa_tokenizer
from paperlab.reasoning.train import ReasonerConfig, build_model


@pytest.fixture(scope="module")
def setup():
    tok = prosqa_tokenizer()
    model = build_model(ReasonerConfig(d_model=32, n_layers=2, n_heads=2), len(tok), seed=0).eval()
    examples = generate_prosqa(12, config=GeneratorConfig.easy(), seed=5)
    return model, tok, examples, Curriculum(c=1, max_stage=2)


def test_clean_chain_equals_latent_forward(setup):
    model, tok, examples, cur = setup
    items = [encode_example(e, tok, method="coconut", stage=cur.final_stage, curriculum=cur, with_answer=False)
             for e in examples]
    with torch.no_grad():
        _, thoughts, _ = latent_forward(model, collate(items, pad_id=tok.pad_id))
    chain = thought_chain(model, examples, tok, curriculum=cur, n_thoughts=thoughts.shape[1])
    torch.testing.assert_close(chain, thoughts, atol=1e-5, rtol=1e-5)


def test_noise_size_and_gains(setup):
    model, tok, examples, cur = setup
    dyn = thought_dynamics(model, examples, tok, curriculum=cur, n_thoughts=4, relative_sigma=0.05,
                           noise_seeds=(0, 1, 2, 3))
    d, n = dyn.dim, len(examples) * 4
    # e_1 is the injected N(0, sigma^2 I_d) itself: mean squared norm d sigma^2, relative s.e. sqrt(2 / (d n))
    assert abs(float(dyn.sq_error[0]) / (d * dyn.sigma**2) - 1) < 4 * (2 / (d * n)) ** 0.5
    assert dyn.lipschitz.shape == (len(examples), 3) and bool((dyn.lipschitz > 0).all())
    finer = thought_dynamics(model, examples, tok, curriculum=cur, n_thoughts=4, relative_sigma=0.05, eps=5e-4)
    torch.testing.assert_close(finer.lipschitz, dyn.lipschitz, rtol=0.05, atol=0)  # a local (linear) gain


def test_thought_spread_invariants():
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(50, 3, 8, generator=gen)
    s = thought_spread(x)
    assert s.shape == (3,) and bool(((s >= 0) & (s <= 1)).all())
    torch.testing.assert_close(thought_spread(7.0 * x), s)  # scale-free
    same = torch.randn(1, 3, 8, generator=gen).expand(50, 3, 8)
    assert torch.allclose(thought_spread(same), torch.zeros(3, dtype=torch.float64))
    with pytest.raises(ValueError, match="thoughts must be"):
        thought_spread(torch.zeros(1, 3, 8))
