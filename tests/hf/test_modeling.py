"""PaperlabForCausalLM: the same logits and tokens as paperlab's LM, through Hugging Face's forward, cache and
generate, for KLA, GDN and attention."""

from __future__ import annotations

import pytest

pytest.importorskip("transformers")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from transformers import AutoConfig, AutoModelForCausalLM, DynamicCache  # noqa: E402

from paperlab.hf import PaperlabCache, PaperlabConfig, PaperlabForCausalLM, from_lm  # noqa: E402
from tests.hf.conftest import MIXERS, V, tiny_lm  # noqa: E402


def test_config_holds_the_lm_config_fields_and_validates_them() -> None:
    lm_cfg = tiny_lm("gdn", mixer_options={"expand_v": 2.0}).config
    cfg = PaperlabConfig.from_lm_config(lm_cfg, eos_token_id=3)
    assert cfg.lm_config() == lm_cfg and cfg.model_type == "paperlab" and cfg.eos_token_id == 3
    assert (cfg.hidden_size, cfg.num_hidden_layers, cfg.num_attention_heads) == (16, 2, 2)
    assert PaperlabConfig(tie_embeddings=False).tie_word_embeddings is False
    with pytest.raises(ValueError, match="mixer='nope' is not valid"):
        PaperlabConfig(mixer="nope")
    assert isinstance(AutoConfig.for_model("paperlab"), PaperlabConfig)
    assert AutoModelForCausalLM.from_config(cfg).__class__ is PaperlabForCausalLM


@pytest.mark.parametrize("mixer", MIXERS)
def test_forward_equals_lm_and_the_loss_is_shifted_cross_entropy(mixer: str, ids: torch.Tensor) -> None:
    lm = tiny_lm(mixer)
    model = from_lm(lm)
    with torch.no_grad():
        ref, _ = lm(ids)
        out = model(ids, labels=ids)
    assert torch.equal(out.logits, ref)
    manual = F.cross_entropy(ref[:, :-1].reshape(-1, V), ids[:, 1:].reshape(-1))
    torch.testing.assert_close(out.loss, manual, atol=1e-6, rtol=0)
    labels = ids.clone()
    labels[:, :4] = -100  # ignored, as in Hugging Face
    masked = F.cross_entropy(ref[:, 3:-1].reshape(-1, V), ids[:, 4:].reshape(-1))
    torch.testing.assert_close(model(ids, labels=labels).loss, masked, atol=1e-6, rtol=0)
    loss, logits = model(ids, labels=ids, use_cache=False, return_dict=False)
    assert torch.equal(logits, ref) and torch.equal(loss, out.loss)


@pytest.mark.parametrize("mixer", MIXERS)
def test_incremental_forward_with_the_cache_equals_the_full_forward(mixer: str, ids: torch.Tensor) -> None:
    model = from_lm(tiny_lm(mixer))
    with torch.no_grad():
        full = model(ids).logits
        out = model(ids[:, :4], use_cache=True)
        assert isinstance(out.cache, PaperlabCache) and out.cache.get_seq_length() == 4
        steps, cache = [out.logits], out.cache
        for t in range(4, ids.shape[1]):  # one token at a time; the mask may be full-length, as generate passes it
            mask = torch.ones(2, t + 1, dtype=torch.long) if t % 2 else None
            step = model(ids[:, t:t + 1], cache=cache, attention_mask=mask)
            assert step.cache is cache
            steps.append(step.logits)
        inc = torch.cat(steps, 1)
    diff = (inc - full).abs().max().item()
    assert diff <= 1e-5, f"{mixer}: incremental vs full logits differ by {diff:.2e}"
    assert cache.get_seq_length() == ids.shape[1]


@pytest.mark.parametrize("mixer", MIXERS)
def test_greedy_generate_gives_the_tokens_of_paperlab_generate(mixer: str, ids: torch.Tensor) -> None:
    lm = tiny_lm(mixer)
    model = from_lm(lm)
    ref = lm.generate(ids, 16, temperature=0)
    out = model.generate(ids, max_new_tokens=16, do_sample=False)
    assert out.shape == (2, ids.shape[1] + 16)
    assert torch.equal(out, ref), f"{mixer}: {int((out != ref).sum())} tokens differ"
    res = model.generate(ids, max_new_tokens=4, do_sample=False, return_dict_in_generate=True)
    assert isinstance(res.cache, PaperlabCache) and res.cache.get_seq_length() == ids.shape[1] + 3
    more = model.generate(res.sequences, cache=res.cache, max_new_tokens=12, do_sample=False)  # continue
    assert torch.equal(more, ref)
    embeds = model.generate(inputs_embeds=lm.embed(ids).detach(), max_new_tokens=16, do_sample=False)
    assert torch.equal(embeds, ref[:, ids.shape[1]:])  # (generate returns only the new tokens then)


@pytest.mark.parametrize("mixer", MIXERS)
def test_left_padded_batch_generates_as_paperlab_does(mixer: str) -> None:
    lm = tiny_lm(mixer)
    model = from_lm(lm)
    g = torch.Generator().manual_seed(5)
    ids = torch.randint(1, V, (2, 7), generator=g)
    ids[1, :3] = 0
    mask = torch.ones(2, 7, dtype=torch.long)
    mask[1, :3] = 0
    ref = lm.generate(ids, 8, temperature=0, attention_mask=mask)
    out = model.generate(ids, attention_mask=mask, max_new_tokens=8, do_sample=False, pad_token_id=0)
    assert torch.equal(out, ref)
    with torch.no_grad():  # a float 0/1 mask (as some collators make) means the same
        assert torch.equal(model(ids, attention_mask=mask.float()).logits, lm(ids, attention_mask=mask)[0])
    assert torch.equal(out[1, 3:], lm.generate(ids[1:, 3:], 8, temperature=0)[0])


@pytest.mark.parametrize("mixer", ("kla", "attention"))
def test_beam_search_and_sampling_with_the_cache_equal_recomputing_without_it(mixer: str,
                                                                               ids: torch.Tensor) -> None:
    model = from_lm(tiny_lm(mixer))
    kw = {"max_new_tokens": 6, "num_beams": 3, "do_sample": False}
    assert torch.equal(model.generate(ids, **kw), model.generate(ids, use_cache=False, **kw))  # reorder_cache
    sampled = []
    for use_cache in (True, False):
        torch.manual_seed(11)
        sampled.append(model.generate(ids, max_new_tokens=6, do_sample=True, top_k=5, use_cache=use_cache))
    assert torch.equal(*sampled)
    rep = model.generate(ids, max_new_tokens=3, do_sample=True, num_return_sequences=2)  # batch expansion
    assert rep.shape == (4, ids.shape[1] + 3)


def test_cache_arguments_are_checked(ids: torch.Tensor) -> None:
    model = from_lm(tiny_lm("gdn"))
    with torch.no_grad():
        cache = model(ids, use_cache=True).cache
        old = model(ids[:, :1], past_key_values=cache).logits  # the older name of `cache` still works
        assert cache.get_seq_length() == ids.shape[1] + 1 and old.shape == (2, 1, V)
        empty = model(ids, cache=DynamicCache()).cache  # an empty cache of another class is replaced
        assert isinstance(empty, PaperlabCache)
        with pytest.raises(ValueError, match="expected the 1 new steps"):
            model(ids[:, :1], cache=cache, attention_mask=torch.ones(2, 3, dtype=torch.long))
        with pytest.raises(ValueError, match="belongs to a model with another config"):
            from_lm(tiny_lm("kla"))(ids, cache=cache)
        with pytest.raises(TypeError, match="position_ids"):
            model(ids, position_ids=torch.arange(ids.shape[1])[None])
        with pytest.raises(NotImplementedError, match="cannot be cropped"):
            cache.crop(-1)
    # assisted decoding would have to roll the state back: refused (transformers >= 5.25 says so by the cache, which
    # cannot be cropped; older releases by the model's stateful flag)
    with pytest.raises(ValueError, match="stateful|cropped"):
        model.generate(ids[:1], assistant_model=from_lm(tiny_lm("gdn", seed=1)), max_new_tokens=2, do_sample=False)
    assert model(ids).cache is not None and model.train()(ids).cache is None  # no cache while training


def test_fresh_model_equals_an_lm_built_from_the_same_seed(ids: torch.Tensor) -> None:
    cfg = PaperlabConfig.from_lm_config(tiny_lm("kla").config)
    torch.manual_seed(4)
    model = PaperlabForCausalLM(cfg).eval()
    torch.manual_seed(4)
    from paperlab.models import LM

    lm = LM(cfg.lm_config()).eval()
    with torch.no_grad():
        assert torch.equal(model(ids).logits, lm(ids)[0])  # post_init keeps the LM's own initialisation
    assert model.get_input_embeddings() is model.model.embedding
    assert model.get_output_embeddings().weight is model.model.embedding.weight  # tied
