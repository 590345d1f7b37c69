"""Cases for the delta-rule ops and kla_beta, the DeltaNet layer, the LM, generate and sample_next."""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

from _probe.common import (
    RAISE,
    add,
    always,
    finite,
    hp_cases,
    poke,
    rand,
    shape_is,
    tensor_cases,
    visible,
)


# ---------------------------------------------------------------------------------------------------- the ops
def ops_cases() -> None:
    from paperlab.ops import delta_rule_chunk, delta_rule_recurrent, delta_rule_step, kla_beta

    def inputs(B: int = 1, T: int = 4, H: int = 2, K: int = 3, V: int = 5) -> dict[str, torch.Tensor]:
        return {"q": rand(B, T, H, K, seed=1), "k": rand(B, T, H, K, seed=2), "v": rand(B, T, H, V, seed=3),
                "g": -torch.rand(B, T, H, generator=torch.Generator().manual_seed(4)),
                "beta": torch.rand(B, T, H, generator=torch.Generator().manual_seed(5))}

    g_rules = {("g", "one nan"): ("raise", ""), ("g", "one +inf"): ("raise", ""),
               ("g", "one -inf"): (finite, "g = -inf is the documented hard reset"),
               ("beta", "x1e20"): (finite, "ambiguous: beta is not range-checked; 1e20 makes the recurrence overflow"),
               ("g", "x1e20"): (finite, "g = -1e20 decays to 0: a hard reset")}
    base = inputs()
    for entry, fn in (("delta_rule_chunk", delta_rule_chunk), ("delta_rule_recurrent", delta_rule_recurrent)):
        def call(fn=fn, **kw: Any) -> Any:
            return fn(**kw, output_final_state=True)

        tensor_cases(entry, call, base, overrides=g_rules)
        state = torch.zeros(1, 2, 3, 5)
        tensor_cases(entry, call, {**base, "initial_state": state}, args=("initial_state",), baseline="skip",
                     overrides={("initial_state", "None"): (finite, "None is the default (a zero state)")})
        names = r"\b(q|k|v|g|beta)\b"
        for desc, shapes, expect in (("batch 0", {"B": 0}, shape_is(0, 4, 2, 5)),
                                     ("length 0", {"T": 0}, shape_is(1, 0, 2, 5)),
                                     ("heads 0", {"H": 0}, shape_is(1, 4, 0, 5)),
                                     ("key dim 0", {"K": 0}, shape_is(1, 4, 2, 5)),
                                     ("value dim 0", {"V": 0}, shape_is(1, 4, 2, 0))):
            add(entry, "empty", desc, lambda fn=fn, shapes=shapes: call(fn, **inputs(**shapes)), names, expect,
                "an empty dimension may return an empty result or raise clearly")
        for desc, change, names_ in (("k key dim 4 vs q 3", {"k": rand(1, 4, 2, 4)}, r"\b(q|k)\b"),
                                     ("v length 3 vs 4", {"v": rand(1, 3, 2, 5)}, r"\bv\b"),
                                     ("g heads 3 vs 2", {"g": -torch.rand(1, 4, 3)}, r"\bg\b"),
                                     ("beta batch 2 vs 1", {"beta": torch.rand(2, 4, 2)}, r"\bbeta\b"),
                                     ("q batch 2, others 1", {"q": rand(2, 4, 2, 3)}, r"\b(q|k)\b"),
                                     ("initial_state [1,2,5,3]", {"initial_state": torch.zeros(1, 2, 5, 3)},
                                      r"initial_state"),
                                     ("mask [1,3]", {"mask": torch.ones(1, 3, dtype=torch.bool)}, r"\bmask\b"),
                                     ("mask list", {"mask": [[1, 1, 1, 1]]}, r"\bmask\b")):
            add(entry, "mismatch", desc, lambda fn=fn, change=change: call(fn, **{**base, **change}), names_)
        add(entry, "dtype", "mask float 0.5", lambda fn=fn: call(fn, **base, mask=torch.full((1, 4), 0.5)),
            r"\bmask\b", RAISE, "ambiguous: the op reads 0.5 as a real token; layers' check_attention_mask refuses "
            "float masks")
        add(entry, "degenerate", "mask all 0", lambda fn=fn: call(fn, **base, mask=torch.zeros(1, 4)), r"\bmask\b",
            finite)
        add(entry, "degenerate", "all inputs 0", lambda fn=fn: call(fn, **{n: torch.zeros_like(t) for n, t in
                                                                           base.items()}), names, finite)
        hp_cases(entry, lambda fn=fn, **kw: call(fn, **base, **kw), "scale",
                 bad=(-1.0, 0.0, math.nan, math.inf, True, "0.5"), ok=(1e20, 1e-40))

    def chunk_call(**kw: Any) -> Any:
        return delta_rule_chunk(**inputs(), **kw)

    hp_cases("delta_rule_chunk", chunk_call, "chunk_size", bad=(0, -1, True, 2.5, None, "4"), ok=(1, 3, 10**9))
    hp_cases("delta_rule_chunk", chunk_call, "backend", bad=("triton", None, ""))
    add("delta_rule_chunk", "hyperparam", "backend='fla' on CPU tensors", lambda: chunk_call(backend="fla"),
        r"backend|fla|cuda", finite, "ambiguous: may run the torch path or refuse clearly (fla needs CUDA)")

    def step_inputs(B: int = 1, H: int = 2, K: int = 3, V: int = 5) -> dict[str, torch.Tensor]:
        seq = inputs(B, 1, H, K, V)
        return {**{n: t[:, 0] for n, t in seq.items()}, "state": torch.zeros(B, H, K, V)}

    step = step_inputs()
    tensor_cases("delta_rule_step", lambda **kw: delta_rule_step(**kw), step, overrides=g_rules)
    for desc, shapes, expect in (("batch 0", {"B": 0}, shape_is(0, 2, 5)), ("key dim 0", {"K": 0}, shape_is(1, 2, 5)),
                                 ("heads 0", {"H": 0}, shape_is(1, 0, 5))):
        add("delta_rule_step", "empty", desc, lambda shapes=shapes: delta_rule_step(**step_inputs(**shapes)),
            r"\b(q|k|v|g|beta|state)\b", expect, "an empty dimension may return an empty result or raise clearly")
    for desc, change, names_ in (("mask [2]", {"mask": torch.ones(2, dtype=torch.bool)}, r"\bmask\b"),
                                 ("v heads 3", {"v": rand(1, 3, 5)}, r"\bv\b"),
                                 ("state [1,2,3,4]", {"state": torch.zeros(1, 2, 3, 4)}, r"\bstate\b")):
        add("delta_rule_step", "mismatch", desc, lambda change=change: delta_rule_step(**{**step, **change}), names_)
    hp_cases("delta_rule_step", lambda **kw: delta_rule_step(**step, **kw), "scale", bad=(-1.0, math.nan, True))

    eta, keys = torch.rand(1, 4, 2, generator=torch.Generator().manual_seed(6)), rand(1, 4, 2, 3, seed=7)
    tensor_cases("kla_beta", lambda **kw: kla_beta(**kw), {"eta": eta, "k": keys})
    hp_cases("kla_beta", lambda **kw: kla_beta(eta, keys, **kw), "eps", bad=(-1.0, math.nan, math.inf, True, "1e-6"),
             note={"inf": "ambiguous: eps=inf makes every beta 0"})
    add("kla_beta", "degenerate", "k all 0, eps=0", lambda: kla_beta(eta, torch.zeros(1, 4, 2, 3), eps=0.0),
        r"\b(eps|k)\b", finite, "eps=0 is accepted (>= 0) so a zero key divides by zero")
    add("kla_beta", "magnitude", "k all 0, eps=1e-40", lambda: kla_beta(eta, torch.zeros(1, 4, 2, 3), eps=1e-40),
        r"\b(eps|k)\b", finite)
    add("kla_beta", "empty", "eta [0], k [0, 3]", lambda: kla_beta(torch.rand(0), torch.rand(0, 3)), r"\b(eta|k)\b",
        shape_is(0))
    add("kla_beta", "empty", "k last dim 0", lambda: kla_beta(eta, torch.rand(1, 4, 2, 0)), r"\b(eta|k)\b", finite,
        "K = 0 gives ||k||^2 = 0, so beta = eta / eps: finite, defensible")
    for value in (-0.5, 2.0):
        add("kla_beta", "hyperparam", f"eta={value} everywhere", lambda value=value: kla_beta(torch.full((1, 4, 2),
            value), keys), r"\beta\b", RAISE, "the docstring gives eta's range (0, 1); ambiguous whether to enforce")



# ------------------------------------------------------------------------------------------------- the layers
def layer_cases() -> None:
    from paperlab.layers import DeltaNetMixer, make_mixer
    from paperlab.layers.deltanet import DELTANET_MODES

    def mixer(**kw: Any) -> DeltaNetMixer:
        torch.manual_seed(0)
        return DeltaNetMixer(**{"d_model": 8, "n_heads": 2, **kw})

    def forward(x: Any, **kw: Any) -> Any:
        return mixer()(x, **kw)

    entry = "DeltaNetMixer"
    x = rand(1, 4, 8, seed=8)
    add(entry, "baseline", "construct", lambda: mixer(), "", always)
    for name, bad, ok in (("d_model", (0, -1, True, 8.0, None, "8", 7), ()), ("n_heads", (0, 3, True, None), ()),
                          ("mode", ("nope", None), ()), ("head_dim_k", (0, -1, 2.5, True), ()),
                          ("head_dim_v", (0, 2.5), ()), ("conv_size", (0, True, 2.5), ()),
                          ("eps", (-1.0, math.nan, math.inf, "1e-6"), (0.0,)), ("norm_eps", (-1.0, 0.0, math.nan), ()),
                          ("seq_factor", ("1/t^2", None), ()), ("gate_mode", ("mamba", None), ()),
                          ("chunk_size", (0, True, 2.5), (10**9,))):
        hp_cases(entry, mixer, name, bad=bad, ok=ok, check=always,
                 note={"inf": "ambiguous: eps=inf makes every write 0", "-1.0": "", "0.0": "documented: eps >= 0"})
    for name, values in (("expand_k", (0.0, -1.0, math.nan, math.inf, "a")), ("expand_v", (0.0, math.nan))):
        hp_cases(entry, mixer, name, bad=values,
                 note="the message may name head_dim_k/v (derived from expand_*), which counts as unclear here")
    fwd = f"{entry}.forward"
    tensor_cases(fwd, forward, {"x": x}, policy={"magnitude": finite})
    for desc, fn, names, check, note in (
            ("x float64 (model fp32)", lambda: forward(x.double()), r"\bx\b|dtype", finite,
             "may run in float64 or refuse clearly"),
            ("x last dim 7", lambda: forward(rand(1, 4, 7)), r"\bx\b", RAISE, ""),
            ("x batch 0", lambda: forward(rand(0, 4, 8)), r"\bx\b", shape_is(0, 4, 8), ""),
            ("x length 0", lambda: forward(rand(1, 0, 8)), r"\bx\b", shape_is(1, 0, 8), ""),
            ("x length 1 (decode step)", lambda: forward(x[:, :1]), r"\bx\b", shape_is(1, 1, 8), ""),
            ("state='abc'", lambda: forward(x, state="abc"), r"\bstate\b", RAISE, ""),
            ("state of batch 2", lambda: forward(x, state=mixer().initial_state(2)), r"\bstate\b", RAISE, ""),
            ("state of another width", lambda: forward(x, state=mixer(d_model=16).initial_state(1)), r"\bstate\b",
             RAISE, ""),
            ("attention_mask [1,3]", lambda: forward(x, attention_mask=torch.ones(1, 3)), r"attention_mask", RAISE, ""),
            ("attention_mask list", lambda: forward(x, attention_mask=[[1, 1, 1, 1]]), r"attention_mask", RAISE, ""),
            ("attention_mask float 0.5", lambda: forward(x, attention_mask=torch.full((1, 4), 0.5)),
             r"attention_mask", RAISE, "ambiguous: Attention refuses float masks (check_attention_mask), this reads "
             "0.5 as real"),
            ("attention_mask value 2", lambda: forward(x, attention_mask=torch.full((1, 4), 2)), r"attention_mask",
             RAISE, "Attention refuses values other than 0/1"),
            ("attention_mask all 0", lambda: forward(x, attention_mask=torch.zeros(1, 4, dtype=torch.long)),
             r"attention_mask", finite, "")):
        add(fwd, "mismatch" if "state" in desc or "mask" in desc else "shape", desc, fn, names, check, note)
    for mode in DELTANET_MODES:
        add(f"{entry}[{mode}]", "baseline", "forward", lambda mode=mode: mixer(mode=mode)(x), "", finite)
        add(f"{entry}[{mode}]", "degenerate", "x all 0", lambda mode=mode: mixer(mode=mode)(torch.zeros(1, 4, 8)),
            r"\bx\b", finite)
        add(f"{entry}[{mode}]", "magnitude", "x*1e20", lambda mode=mode: mixer(mode=mode)(x * 1e20), r"\bx\b",
            finite, "the keys overflow fp32; a clear refusal should name x, the caller's argument")
    for mode in ("kla", "kaczmarz", "learned_scalar"):
        add(f"{entry}[{mode}]", "degenerate", "x all 0 with eps=0",
            lambda mode=mode: mixer(mode=mode, eps=0.0)(torch.zeros(1, 4, 8)), r"\beps\b", finite,
            "eps=0 is accepted (>= 0), so zero keys give beta = eta / 0")
    hp_cases("make_mixer", lambda name: make_mixer(name, 8, 2), "name", bad=("lstm", None), names=r"mixer|name")


# ------------------------------------------------------------------------------------ the LM and its sampling
def _lm(mixer: str = "attention", **kw: Any) -> Any:
    from paperlab.models import LM, LMConfig

    torch.manual_seed(0)
    return LM(LMConfig(**{"vocab_size": 11, "d_model": 8, "n_layers": 1, "n_heads": 2, "mixer": mixer,
                          "mlp_ratio": 2.0, **kw}))


def model_cases() -> None:
    from paperlab.models import LMConfig, generate
    from paperlab.models.generate import sample_next

    base = {"vocab_size": 11, "d_model": 8, "n_layers": 1, "n_heads": 2, "mixer": "attention", "mlp_ratio": 2.0}
    add("LMConfig", "baseline", "valid config", lambda: LMConfig(**base), "", always)
    for name, bad, ok in (("vocab_size", (0, -1, True, 2.5, None), ()), ("d_model", (0, True), ()),
                          ("n_layers", (0, -1), ()), ("n_heads", (0, 3), ()), ("mixer", ("lstm", None), ()),
                          ("mlp_ratio", (0.0, -1.0, math.nan, math.inf, True, "2"), (1e-40,)),
                          ("tie_embeddings", ("yes", 1), ()), ("norm_eps", (0.0, -1.0, math.nan), ()),
                          ("max_seq_len", (0, True), ()), ("init_std", (0.0, math.nan, math.inf), ()),
                          ("mixer_options", ([1], {"bogus": 1}), ())):
        hp_cases("LMConfig", lambda name=name, **kw: _lm(**{**base, **kw}), name, bad=bad, ok=ok, check=always,
                 names=r"\bn_heads\b|\bd_model\b" if name == "n_heads" else (r"bogus|mixer_options"
                                                                            if name == "mixer_options" else None))
    add("LMConfig", "mismatch", "mixer='kla' with mixer_options={'mode': 'gdn'}",
        lambda: _lm("kla", mixer_options={"mode": "gdn"}), r"\bmode\b|mixer", RAISE,
        "ambiguous: the option silently replaces the named mixer's mode")
    add("LM.forward", "magnitude", "init_std=1e20", lambda: _lm(init_std=1e20)(torch.tensor([[1, 2, 3]])),
        r"init_std", lambda r: finite(r[0]))
    ids = torch.tensor([[1, 2, 3]])
    for mixer in ("attention", "kla"):
        entry = f"LM[{mixer}].forward"

        def fwd(input_ids: Any, mixer: str = mixer, **kw: Any) -> Any:
            return _lm(mixer)(input_ids, **kw)[0]

        add(entry, "baseline", "ids [1,3]", lambda fwd=fwd: fwd(ids), "", shape_is(1, 3, 11))
        for klass, desc, value, check in (
                ("type", "None", None, RAISE), ("type", "str", "abc", RAISE), ("type", "list", [[1, 2, 3]], RAISE),
                ("dtype", "float", ids.float(), RAISE), ("dtype", "bool", ids > 1, RAISE),
                ("dtype", "complex", ids.to(torch.complex64), RAISE),
                ("dtype", "int32", ids.int(), shape_is(1, 3, 11)), ("dtype", "uint8", ids.to(torch.uint8),
                                                                     shape_is(1, 3, 11)),
                ("shape", "1-D", ids[0], RAISE), ("shape", "3-D", ids[None], RAISE),
                ("hyperparam", "id -1", torch.tensor([[1, -1]]), RAISE),
                ("hyperparam", "id == vocab_size", torch.tensor([[1, 11]]), RAISE),
                ("magnitude", "id 2**62", torch.tensor([[1, 2**62]]), RAISE),
                ("empty", "batch 0", torch.zeros(0, 3, dtype=torch.long), shape_is(0, 3, 11)),
                ("empty", "length 0", torch.zeros(1, 0, dtype=torch.long), shape_is(1, 0, 11))):
            add(entry, klass, f"input_ids {desc}", lambda fwd=fwd, value=value: fwd(value), r"input_ids", check)
        for desc, kw, names, check, note in (
                ("state='abc'", {"state": "abc"}, r"\bstate\b", RAISE, ""),
                ("state of another model", {"state": _lm(mixer, d_model=16).initial_state(1)}, r"\bstate\b", RAISE,
                 ""),
                ("state of batch 2", {"state": _lm(mixer).initial_state(2)}, r"\bstate\b", RAISE, ""),
                ("attention_mask [1,2]", {"attention_mask": torch.ones(1, 2)}, r"attention_mask", RAISE, ""),
                ("attention_mask float", {"attention_mask": torch.ones(1, 3)}, r"attention_mask", RAISE, ""),
                ("attention_mask value 2", {"attention_mask": torch.tensor([[1, 2, 1]])}, r"attention_mask", RAISE, ""),
                ("attention_mask list", {"attention_mask": [[1, 1, 1]]}, r"attention_mask", RAISE, ""),
                ("attention_mask all 0", {"attention_mask": torch.zeros(1, 3, dtype=torch.long)}, r"attention_mask",
                 finite, "a row with no real token must not give NaN logits (or must be refused clearly)")):
            add(entry, "mismatch", desc, lambda fwd=fwd, kw=kw: fwd(ids, **kw), names, check, note)
        add(entry, "magnitude", "T=6 > max_seq_len=4", lambda mixer=mixer: _lm(mixer, max_seq_len=4)(
            torch.ones(1, 6, dtype=torch.long))[0], r"max_seq_len", shape_is(1, 6, 11),
            "documented: attention computes RoPE for any position")
    hs = "LM.hidden_states"
    for desc, fn, check in (
            ("both input_ids and inputs_embeds", lambda: _lm().hidden_states(ids, inputs_embeds=rand(1, 3, 8)), RAISE),
            ("neither", lambda: _lm().hidden_states(), RAISE),
            ("inputs_embeds float64", lambda: _lm().hidden_states(inputs_embeds=rand(1, 3, 8).double()), RAISE),
            ("inputs_embeds last dim 7", lambda: _lm().hidden_states(inputs_embeds=rand(1, 3, 7)), RAISE),
            ("inputs_embeds list", lambda: _lm().hidden_states(inputs_embeds=[[[0.0] * 8]]), RAISE),
            ("inputs_embeds one nan", lambda: _lm().hidden_states(inputs_embeds=poke(rand(1, 3, 8), math.nan)),
             lambda r: visible(r[0]))):
        add(hs, "mismatch" if "both" in desc or "neither" in desc else "type", desc, fn,
            r"input_ids|inputs_embeds", check)

    def gen(model: Any = None, input_ids: Any = ids, max_new_tokens: Any = 2, **kw: Any) -> Any:
        return generate(_lm() if model is None else model, input_ids, max_new_tokens, **kw)

    add("generate", "baseline", "2 new tokens", lambda: gen(seed=0), "", shape_is(1, 5))
    hp_cases("generate", gen, "max_new_tokens", bad=(-1, True, 2.5, "3", None), ok=(0,), check=shape_is(1, 3))
    hp_cases("generate", gen, "temperature", bad=(-1.0, math.nan, math.inf, 1e-320, 1e-5, True, "1", None),
             ok=(1e20,), check=shape_is(1, 5))
    hp_cases("generate", gen, "top_k", bad=(0, -1, True, 2.5, "3"), ok=(10**9, 1), check=shape_is(1, 5))
    hp_cases("generate", gen, "seed", bad=(-1, True, 2.5, "1"), ok=(2**64, 2**63), check=shape_is(1, 5),
             note="seeds >= 2**64 are valid ints (>= 0) that torch's generator cannot take: refuse clearly or work")
    for klass, desc, value, check in (("shape", "1-D", ids[0], RAISE), ("dtype", "float", ids.float(), RAISE),
                                      ("type", "list", [[1, 2]], RAISE), ("type", "None", None, RAISE),
                                      ("empty", "length 0", torch.zeros(1, 0, dtype=torch.long), RAISE),
                                      ("hyperparam", "id 11 (vocab 11)", torch.tensor([[11]]), RAISE),
                                      ("empty", "batch 0, sampling", torch.zeros(0, 3, dtype=torch.long),
                                       shape_is(0, 5))):
        add("generate", klass, f"input_ids {desc}", lambda value=value: gen(input_ids=value, seed=0), r"input_ids",
            check)
    add("generate", "empty", "input_ids batch 0, greedy", lambda: gen(input_ids=torch.zeros(0, 3, dtype=torch.long),
                                                                       temperature=0), r"input_ids", shape_is(0, 5))
    for desc, mask, note in (("right padding", torch.tensor([[1, 1, 0]]), ""), ("shape [1,2]", torch.ones(1, 2), ""),
                             ("float", torch.ones(1, 3), ""), ("all 0", torch.zeros(1, 3, dtype=torch.long), "")):
        add("generate", "mismatch", f"attention_mask {desc}", lambda mask=mask: gen(attention_mask=mask, seed=0),
            r"attention_mask", RAISE, note)
    add("generate", "type", "model nn.Linear", lambda: gen(model=nn.Linear(2, 2)), r"\bmodel\b")
    add("generate", "type", "model None", lambda: generate(None, ids, 2), r"\bmodel\b")
    add("generate", "degenerate", "kla model, 1-token prompt", lambda: gen(_lm("kla"), ids[:, :1], 3, seed=0), "",
        shape_is(1, 4))

    def nan_model() -> Any:
        model = _lm()
        with torch.no_grad():
            model.embedding.weight.fill_(math.nan)
        return model

    add("generate", "nonfinite", "model weights NaN, sampling", lambda: gen(nan_model(), seed=0), r"logits")
    gens = [torch.Generator().manual_seed(0)]
    logits = torch.tensor([[0.5, 2.0, -1.0]])

    def sample(logits: Any = logits, temperature: Any = 1.0, top_k: Any = None, generators: Any = gens) -> Any:
        return sample_next(logits, temperature=temperature, top_k=top_k, generators=generators)

    s = "sample_next"
    add(s, "baseline", "logits [1,3]", lambda: sample(), "", shape_is(1))
    for klass, desc, kw, names, check, note in (
            ("type", "logits None", {"logits": None}, r"logits", RAISE, ""),
            ("shape", "logits 1-D", {"logits": logits[0]}, r"logits", RAISE, ""),
            ("shape", "logits 1-D, greedy", {"logits": logits[0], "temperature": 0}, r"logits", RAISE,
             "documented [B, V]; greedy returns a 0-d tensor, sampling fails on the same input"),
            ("dtype", "logits int64, greedy", {"logits": logits.long(), "temperature": 0}, r"logits", shape_is(1), ""),
            ("empty", "logits vocab 0", {"logits": torch.zeros(1, 0)}, r"logits", RAISE, ""),
            ("empty", "logits batch 0, greedy", {"logits": torch.zeros(0, 3), "temperature": 0}, r"logits",
             shape_is(0), ""),
            ("empty", "logits batch 0, sampling", {"logits": torch.zeros(0, 3), "generators": []}, r"logits",
             shape_is(0), ""),
            ("type", "generators None, sampling", {"generators": None}, r"generators", RAISE, ""),
            ("mismatch", "2 generators for batch 1", {"generators": gens * 2}, r"generators", RAISE, ""),
            ("hyperparam", "top_k=0", {"top_k": 0}, r"top_k", RAISE, ""),
            ("hyperparam", "top_k=-1", {"top_k": -1}, r"top_k", RAISE, ""),
            ("hyperparam", "top_k=True", {"top_k": True}, r"top_k", RAISE, ""),
            ("hyperparam", "temperature=nan", {"temperature": math.nan}, r"temperature", RAISE, ""),
            ("magnitude", "float64 logits [1e300, 0], temperature 1e-4",
             {"logits": torch.tensor([[1e300, 0.0]], dtype=torch.float64), "temperature": 1e-4}, r"logits",
             lambda r: r.tolist() == [0], "the dominant token must be drawn (1e300 / 1e-4 overflows)"),
            ("degenerate", "all logits equal", {"logits": torch.zeros(1, 3)}, r"logits",
             lambda r: 0 <= int(r) < 3, ""),
            ("nonfinite", "logits [0, -inf] (a banned token)", {"logits": torch.tensor([[0.0, -math.inf]])},
             r"logits", lambda r: r.tolist() == [0], "ambiguous: -inf is the usual way to ban a token; refusing "
             "clearly is also fine")):
        add(s, klass, desc, lambda kw=kw: sample(**kw), names, check, note)
