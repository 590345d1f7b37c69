"""LM: state-carrying forward equals the full pass for every mixer; generation; input checks."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from paperlab.layers import MIXERS
from paperlab.models import LM, LMConfig, LMState

V = 37



def _model(mixer: str, dtype=torch.float64, **kw) -> LM:
    torch.manual_seed(0)
    cfg = LMConfig(vocab_size=V, d_model=kw.pop("d_model", 16), n_layers=2, n_heads=2, mixer=mixer,
                   mlp_ratio=2.0, **kw)
    return LM(cfg).to(dtype)


MAIN = ("attention", "gdn", "kla")
CASES = [(m, dtype, tol) for m in sorted(MIXERS) for dtype, tol in ((torch.float64, 1e-9), (torch.float32, 1e-5))]


@pytest.mark.parametrize(("mixer", "dtype", "tol"), CASES,
                         ids=[f"{m}-{str(d)[-7:]}" for m, d, _ in CASES])
def test_decode_and_split_equal_full_forward(mixer: str, dtype, tol: float) -> None:
    model = _model(mixer, dtype)
    ids = torch.randint(0, V, (2, 7), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        full, _ = model(ids)
        state, steps = None, []
        for t in range(ids.shape[1]):
            logits, state = model(ids[:, t : t + 1], state=state)
            steps.append(logits)
        torch.testing.assert_close(torch.cat(steps, 1), full, atol=tol, rtol=0)
        a, s = model(ids[:, :3])
        b, _ = model(ids[:, 3:], state=s)
        torch.testing.assert_close(torch.cat((a, b), 1), full, atol=tol, rtol=0)


@pytest.mark.parametrize("mixer", MAIN)
def test_batched_left_padded_generation_equals_one_prompt_at_a_time(mixer: str) -> None:
    model = _model(mixer, torch.float64).eval()
    g = torch.Generator().manual_seed(2)
    p1, p2 = torch.randint(0, V, (1, 6), generator=g), torch.randint(0, V, (1, 2), generator=g)
    ids = torch.cat((p1, torch.cat((torch.full((1, 4), 5), p2), 1)))
    mask = torch.tensor([[1] * 6, [0, 0, 0, 0, 1, 1]])
    greedy = model.generate(ids, 5, temperature=0, attention_mask=mask)
    assert greedy.shape == (2, 11)
    assert torch.equal(greedy[0], model.generate(p1, 5, temperature=0)[0])
    assert torch.equal(greedy[1, 4:], model.generate(p2, 5, temperature=0)[0])
    sampled = model.generate(ids, 5, temperature=1.5, top_k=10, seed=7, attention_mask=mask)
    assert torch.equal(sampled[1, 4:], model.generate(p2, 5, temperature=1.5, top_k=10, seed=8)[0])
    assert torch.equal(sampled, model.generate(ids, 5, temperature=1.5, top_k=10, seed=7, attention_mask=mask))


def test_greedy_generation_equals_argmax_of_recomputed_forward() -> None:
    model = _model("attention").eval()
    ids = torch.randint(0, V, (1, 4), generator=torch.Generator().manual_seed(3))
    out = model.generate(ids, 4, temperature=0)
    seq = ids
    with torch.no_grad():
        for _ in range(4):
            seq = torch.cat((seq, model(seq)[0][:, -1].argmax(-1, keepdim=True)), 1)
    assert torch.equal(out, seq)


def test_top_k_one_is_greedy() -> None:
    model = _model("attention").eval()
    ids = torch.randint(0, V, (2, 3), generator=torch.Generator().manual_seed(4))
    assert torch.equal(model.generate(ids, 3, top_k=1, seed=0), model.generate(ids, 3, temperature=0))


@pytest.mark.parametrize("mixer", MAIN)
def test_an_empty_batch_generates_an_empty_batch(mixer: str) -> None:
    model = _model(mixer)
    ids = torch.zeros(0, 3, dtype=torch.long)
    for kw in ({"temperature": 0}, {"seed": 0}, {"seed": 0, "top_k": 2}):
        assert model.generate(ids, 2, **kw).shape == (0, 5)


def test_redundant_mixer_mode_is_allowed() -> None:
    assert LMConfig(vocab_size=V, d_model=16, n_layers=1, n_heads=2, mixer="kla",
                    mixer_options={"mode": "kla"}).mixer_options == {"mode": "kla"}


def test_inputs_embeds_path_and_latent_feedback() -> None:
    model = _model("attention")
    ids = torch.randint(0, V, (2, 5), generator=torch.Generator().manual_seed(5))
    h_ids, _ = model.hidden_states(ids)
    h_emb, state = model.hidden_states(inputs_embeds=model.embed(ids))
    torch.testing.assert_close(h_ids, h_emb, atol=0, rtol=0)
    torch.testing.assert_close(model.logits(h_ids), model(ids)[0], atol=0, rtol=0)
    # Coconut-style: feed the last hidden state back as the next input embedding, with the state
    h2, _ = model.hidden_states(inputs_embeds=h_emb[:, -1:], state=state)
    full, _ = model.hidden_states(inputs_embeds=torch.cat((model.embed(ids), h_emb[:, -1:]), 1))
    torch.testing.assert_close(h2, full[:, -1:], atol=1e-10, rtol=0)


def test_tied_and_untied_heads() -> None:
    tied, untied = _model("attention"), _model("attention", tie_embeddings=False)
    assert tied.lm_head.weight is tied.embedding.weight
    assert untied.num_parameters(non_embedding=False) - tied.num_parameters(non_embedding=False) == V * 16
    d, hidden = 16, 32  # per block: 4 attention projections, 3 SwiGLU projections, 2 norms; + final norm
    assert tied.num_parameters() == 2 * (4 * d * d + 3 * d * hidden + 2 * d) + d


def test_output_projections_are_scaled_at_init() -> None:
    model = _model("attention", d_model=64)
    std_q = model.blocks[0].mixer.q_proj.weight.std().item()
    std_o = model.blocks[0].mixer.o_proj.weight.std().item()
    assert abs(std_q - 0.02) < 0.002 and abs(std_o - 0.01) < 0.001  # 1/sqrt(2 * 2 layers) = 0.5


def test_config_round_trip_and_errors() -> None:
    cfg = LMConfig(vocab_size=10, d_model=8, n_layers=1, n_heads=2, mixer="attention")
    assert LMConfig.from_dict(cfg.to_dict()) == cfg
    with pytest.raises(ValueError, match="unknown LMConfig keys"):
        LMConfig.from_dict({**cfg.to_dict(), "depth": 3})
    with pytest.raises(ValueError, match="mixer"):
        dataclasses.replace(cfg, mixer="mamba")
    with pytest.raises(ValueError, match="vocab_size"):
        dataclasses.replace(cfg, vocab_size=0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.d_model = 4  # type: ignore[misc]


def test_bad_inputs_raise_value_error() -> None:
    model = _model("attention")
    with pytest.raises(ValueError, match="vocab_size"):
        model(torch.tensor([[1, V]]))
    with pytest.raises(ValueError, match="vocab_size"):
        model(torch.tensor([[-1, 2]]))
    with pytest.raises(ValueError, match="integer dtype"):
        model(torch.tensor([[1.0, 2.0]]))
    with pytest.raises(ValueError, match="shape"):
        model(torch.tensor([1, 2]))
    with pytest.raises(ValueError, match="exactly one"):
        model.hidden_states()
    with pytest.raises(ValueError, match="dtype"):
        model.hidden_states(inputs_embeds=torch.zeros(1, 2, 16, dtype=torch.float32))
    _, state = _model("attention", d_model=8)(torch.tensor([[1, 2]]))
    with pytest.raises(ValueError, match="different config"):
        model(torch.tensor([[1]]), state=state)
    with pytest.raises(ValueError, match="LMState"):
        model(torch.tensor([[1]]), state=list(state))
    assert isinstance(state, LMState) and len(state) == 2
    with pytest.raises(ValueError, match="left"):
        model.generate(torch.tensor([[1, 2]]), 2, attention_mask=torch.tensor([[1, 0]]))
    with pytest.raises(ValueError, match="temperature"):
        model.generate(torch.tensor([[1, 2]]), 2, temperature=-1.0)


@pytest.mark.parametrize("mixer", sorted(MIXERS))
def test_padding_and_masked_decode_steps_leave_other_rows_unchanged(mixer: str) -> None:
    model = _model(mixer)
    g = torch.Generator().manual_seed(6)
    a, b = torch.randint(0, V, (1, 9), generator=g), torch.randint(0, V, (1, 5), generator=g)
    ids = torch.cat((a, torch.cat((torch.full((1, 4), 3), b), 1)))
    mask = torch.tensor([[1] * 9, [0] * 4 + [1] * 5])
    with torch.no_grad():
        logits, state = model(ids, attention_mask=mask)
        torch.testing.assert_close(logits[:1], model(a)[0], atol=1e-12, rtol=0)
        ref_b, state_b = model(b)
        torch.testing.assert_close(logits[1:, 4:], ref_b, atol=1e-12, rtol=0)
        # a decode step masked out for row 1 (a finished sequence, as in latent reasoning) is an identity step
        _, state = model(torch.randint(0, V, (2, 1), generator=g), state=state,
                         attention_mask=torch.tensor([[1], [0]]))
        nxt = torch.randint(0, V, (2, 1), generator=g)
        torch.testing.assert_close(model(nxt, state=state)[0][1:], model(nxt[1:], state=state_b)[0],
                                   atol=1e-12, rtol=0)


def test_generation_refuses_non_finite_logits_and_tiny_temperatures() -> None:
    from paperlab.models.generate import MIN_TEMPERATURE, sample_next

    model = _model("attention").eval()
    ids = torch.tensor([[1, 2]])
    with torch.no_grad():
        model.embedding.weight[2] = float("nan")  # a diverged checkpoint
    for temperature in (0.0, 0.8):
        with pytest.raises(ValueError, match=r"logits.*NaN or inf.*step 0"):
            model.generate(ids, 3, temperature=temperature, seed=0)
    healthy = _model("attention").eval()
    for tiny in (1e-320, MIN_TEMPERATURE / 2):
        with pytest.raises(ValueError, match=r"temperature must be 0 \(greedy\) or >= 0.0001"):
            healthy.generate(ids, 3, temperature=tiny, seed=0)
    assert healthy.generate(ids, 3, temperature=MIN_TEMPERATURE, seed=0).shape == (1, 5)
    gens = [torch.Generator().manual_seed(0)]
    with pytest.raises(ValueError, match="logits"):
        sample_next(torch.tensor([[0.0, float("inf")]]), temperature=1.0, top_k=None, generators=gens)
    with pytest.raises(ValueError, match="temperature"):
        sample_next(torch.zeros(1, 3), temperature=1e-320, top_k=None, generators=gens)


@pytest.mark.parametrize("mixer", MAIN)
def test_initial_state_equals_no_state_and_decoding_never_copies_the_kv_cache(mixer: str) -> None:
    model = _model(mixer)
    ids = torch.randint(0, V, (2, 9), generator=torch.Generator().manual_seed(7))
    with torch.no_grad():
        full, _ = model(ids)
        logits, state = model(ids[:, :4], state=model.initial_state(2, max_len=9))
        torch.testing.assert_close(logits, full[:, :4], atol=1e-9, rtol=0)
        storages = set()
        for t in range(4, 9):
            logits, state = model(ids[:, t : t + 1], state=state)
            torch.testing.assert_close(logits, full[:, t : t + 1], atol=1e-9, rtol=0)
            storages.add(tuple(s.k.untyped_storage().data_ptr() for s in state if hasattr(s, "k")))
    assert len(storages) == 1  # attention: every step wrote into the storage allocated for 9 tokens


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bfloat16", "float16"])
@pytest.mark.parametrize("mixer", MAIN)
def test_greedy_generation_under_autocast_equals_fp32(mixer: str, dtype) -> None:
    """Greedy tokens may differ from fp32 only at a step whose two largest fp32 logits are closer than twice the
    autocast logit error; the test checks that no step of this seeded model is that close, then that they match."""
    model = _model(mixer, torch.float32).eval()
    ids = torch.randint(0, V, (2, 5), generator=torch.Generator().manual_seed(3))
    want = model.generate(ids, 6, temperature=0)
    with torch.no_grad():
        ref, _ = model(want[:, :-1])
        with torch.autocast("cpu", dtype=dtype):
            got = model.generate(ids, 6, temperature=0)
            low, _ = model(want[:, :-1])
    top2 = ref[:, 4:].topk(2, dim=-1).values
    margin = float((top2[..., 0] - top2[..., 1]).min())
    error = float((low.float() - ref).abs().max())
    assert low.dtype == dtype and margin > 2 * error, (margin, error)
    assert torch.equal(got, want)
