"""Cases for the SMI auditor and the MIAs, fit_law, and the reasoning module's public functions."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import torch

from _probe.common import (
    RAISE,
    add,
    always,
    finite,
    hp_cases,
    poke,
    shape_is,
    tensor_cases,
    visible,
    write,
)


# -------------------------------------------------------------------------------------------------- the audits
def _rate_ok(r: Any) -> bool:
    """A usable audit: a rate in [0, 1], or NaN flagged as not identifiable (the documented refusal)."""
    rate = r.forgetting_rate
    return (0.0 <= rate <= 1.0 and r.identifiable) or (math.isnan(rate) and not r.identifiable)


def _mia_ok(r: Any) -> bool:
    """An MIA result: a rate in [0, 1] (``identifiable`` says whether it means anything) or NaN."""
    return 0.0 <= r.forgetting_rate <= 1.0 or math.isnan(r.forgetting_rate)


NOT_SEPARABLE = ("AuditResult documents forgetting_rate = NaN when the references are not separable; this "
                 "returns a rate with identifiable=False")


def audit_cases() -> None:
    from paperlab.audit import ESTIMATORS, RMIA, SMI, SVCMIA, AttackData, LiRA, ThresholdMIA, auc
    from paperlab.audit.mia import balanced_threshold, membership_score

    rng = np.random.default_rng(0)
    member, nonmember = rng.standard_normal((20, 2)), rng.standard_normal((20, 2)) + 3.0
    forget = np.concatenate([member[:10] + 0.1, nonmember[:10] - 0.1])
    fast = {"n_bootstrap": 20, "n_permutations": 20}

    def smi(member_features: Any = member, nonmember_features: Any = nonmember, forget_features: Any = forget,
            fit_kw: dict[str, Any] | None = None, **kw: Any) -> Any:
        return SMI(**{**fast, **kw}).fit(member_features, nonmember_features, **(fit_kw or {})).estimate(
            forget_features)

    def near_half(r: Any) -> bool:
        return r.identifiable and abs(r.forgetting_rate - 0.5) < 0.1

    ok_feats = {"list": _rate_ok, "int": _rate_ok, "bool": _rate_ok, "nonfinite": RAISE, "magnitude": _rate_ok}
    tensor_cases("SMI", smi, {"member_features": member, "nonmember_features": nonmember, "forget_features": forget},
                 policy=ok_feats, baseline=near_half)
    for scale in (1e20, 1e-40):
        add("SMI", "magnitude", f"all features x{scale:g}", lambda scale=scale: smi(member * scale, nonmember * scale,
            forget * scale), r"features", near_half, "features are standardised at fit: the rate is scale-invariant")
    for desc, kw, names, check, note in (
            ("member == nonmember", {"nonmember_features": member}, r"features|separa", _rate_ok,
             "documented: NaN with NotSeparableWarning"),
            ("every feature constant", {"member_features": np.ones((20, 2)), "nonmember_features": np.ones((20, 2))},
             r"features|separa", _rate_ok, ""),
            ("one constant column", {"member_features": np.c_[member[:, :1], np.ones(20)],
                                     "nonmember_features": np.c_[nonmember[:, :1], np.ones(20)],
                                     "forget_features": np.c_[forget[:, :1], np.ones(20)]}, r"features", near_half, ""),
            ("duplicated rows", {"member_features": np.repeat(member[:10], 2, 0)}, r"features", _rate_ok, ""),
            ("9 member rows", {"member_features": member[:9]}, r"member_features", RAISE, ""),
            ("0 forget rows", {"forget_features": forget[:0]}, r"forget_features", RAISE, ""),
            ("nonmember width 3", {"nonmember_features": np.c_[nonmember, nonmember[:, :1]]}, r"nonmember_features",
             RAISE, ""),
            ("forget width 1", {"forget_features": forget[:, :1]}, r"forget_features", RAISE, ""),
            ("member_labels length 5", {"fit_kw": {"member_labels": np.zeros(5, int),
                                                   "nonmember_labels": np.zeros(20, int)}}, r"member_labels", RAISE,
             ""),
            ("member_labels floats 0.5", {"fit_kw": {"member_labels": np.full(20, 0.5),
                                                     "nonmember_labels": np.zeros(20)}}, r"member_labels", RAISE, ""),
            ("stratify=per_class without labels", {"stratify": "per_class"}, r"label|per_class", RAISE, "")):
        add("SMI", "degenerate" if check is not RAISE else "mismatch", desc, lambda kw=kw: smi(**kw), names, check,
            note)
    for name, bad, ok in (("estimator", ("nope", None), ()), ("kernel", ("rbf",), ()),
                          ("bandwidth", (0.0, -1.0, math.nan, math.inf, "1"), (1e20, 1e-40)),
                          ("n_bootstrap", (-1, True, 2.5), (0,)), ("alpha", (0.0, 1.0, math.nan, 1.5), ()),
                          ("n_permutations", (0, -1), ()), ("level", (2.0, math.nan), ()), ("min_auc", (-1.0,), ()),
                          ("max_width", (0.0, 2.0), ()), ("stratify", ("x",), ()), ("interval", ("x",), ()),
                          ("max_ref", (5, True), ()), ("n_components", (0,), ()), ("seed", (-1, "a", 2.5, None), ())):
        hp_cases("SMI", smi, name, bad=bad, ok=ok, check=_rate_ok,
                 note="seed is not range-checked at fit" if name == "seed" else "")
    add("SMI", "mismatch", "estimate before fit", lambda: SMI().estimate(forget), r"fit")
    add("SMI", "mismatch", "witness width 3", lambda: SMI(**fast).fit(member, nonmember).witness(np.ones((2, 3))),
        r"\bx\b|features")
    for est in ESTIMATORS:
        add(f"SMI[{est}]", "baseline", "planted half", lambda est=est: smi(estimator=est), "", near_half)
        add(f"SMI[{est}]", "degenerate", "member == nonmember", lambda est=est: smi(estimator=est,
            nonmember_features=member), r"features|separa", _rate_ok)
        add(f"SMI[{est}]", "magnitude", "all features x1e20", lambda est=est: smi(
            member * 1e20, nonmember * 1e20, forget * 1e20, estimator=est), r"features", near_half)

    logits, labels = rng.standard_normal((20, 3)), rng.integers(0, 3, 20)
    logits_n = rng.standard_normal((20, 3)) * 0.5
    logits_m = logits + 2.0 * np.eye(3)[labels]
    t = "ThresholdMIA"

    def mia(cls: Any = ThresholdMIA, member: Any = (logits_m, labels), nonmember: Any = (logits_n, labels),
            forget: Any = (logits, labels), **kw: Any) -> Any:
        return cls(**{"n_bootstrap": 20, **kw}).fit(member, nonmember).estimate(forget)

    add(t, "baseline", "fit + estimate", lambda: mia(), "", _mia_ok)
    for klass, desc, member_, names in (
            ("type", "member logits None", (None, labels), r"member|logits"),
            ("type", "member logits str", ("abc", labels), r"member|logits"),
            ("type", "member is a list [logits, labels]", [logits_m, labels], r"member"),
            ("type", "member is a 3-tuple", (logits_m, labels, labels), r"member"),
            ("shape", "member logits 1-D", (logits_m[:, 0], labels), r"member|logits"),
            ("mismatch", "member labels length 19", (logits_m, labels[:19]), r"member|labels"),
            ("mismatch", "member has 4 classes", (np.c_[logits_m, logits_m[:, :1]], labels), r"member|class"),
            ("hyperparam", "member label 3 (of 3 classes)", (logits_m, np.r_[labels[:19], 3]), r"member|labels"),
            ("hyperparam", "member label -1", (logits_m, np.r_[labels[:19], -1]), r"member|labels"),
            ("dtype", "member labels float 0.5", (logits_m, labels + 0.5), r"member|labels"),
            ("dtype", "member labels letters", (logits_m, np.array(list("abc"))[labels]), r"member|labels"),
            ("nonfinite", "member logits one nan", (poke(logits_m, math.nan), labels), r"member|logits"),
            ("nonfinite", "member logits one inf", (poke(logits_m, math.inf), labels), r"member|logits"),
            ("empty", "member 0 rows", (logits_m[:0], labels[:0]), r"member"),
            ("empty", "member 9 rows", (logits_m[:9], labels[:9]), r"member")):
        add(t, klass, desc, lambda member_=member_: mia(member=member_), names)
    add(t, "magnitude", "all logits x1e20", lambda: mia(member=(logits_m * 1e20, labels),
                                                        nonmember=(logits_n * 1e20, labels),
                                                        forget=(logits * 1e20, labels)), r"logits", _mia_ok)
    add(t, "degenerate", "member == nonmember", lambda: mia(nonmember=(logits_m, labels)), r"separa", _rate_ok,
        NOT_SEPARABLE)
    add(t, "degenerate", "one class (C=1)", lambda: mia(member=(logits_m[:, :1], labels * 0),
                                                        nonmember=(logits_n[:, :1], labels * 0),
                                                        forget=(logits[:, :1], labels * 0)), r"class", _rate_ok,
        NOT_SEPARABLE)
    for name, bad in (("score", ("nope", None)), ("n_bootstrap", (-1, True)), ("alpha", (0.0, math.nan)),
                      ("debias", ("yes",)), ("seed", (-1, "a"))):
        hp_cases(t, lambda **kw: mia(**kw), name, bad=bad, note={"'yes'": "a str where a bool is expected"})
    add(t, "mismatch", "estimate before fit", lambda: ThresholdMIA().estimate((logits, labels)), r"fit")
    add(t, "mismatch", "forget has 2 classes", lambda: mia(forget=(logits[:, :2], labels % 2)), r"forget|class")
    ms = "membership_score"
    for kind in ("loss", "confidence", "entropy", "m_entropy", "scaled_confidence"):
        if kind in ("loss", "scaled_confidence"):  # the two code paths; the other kinds share the first
            tensor_cases(f"{ms}[{kind}]", lambda kind=kind, **kw: membership_score(**kw, kind=kind),
                         {"logits": logits, "labels": labels}, args=("logits",),
                         policy={"list": finite, "int": finite},
                         overrides={("logits", "one -inf"): (always, "a -inf logit is a zero probability: a finite "
                                                                     "score (or -inf on the true class) is right"),
                                    ("logits", "extra leading dim"): ("raise", "documented [n, C]; it broadcasts")})
        else:
            add(f"{ms}[{kind}]", "baseline", "valid call", lambda kind=kind: membership_score(logits, labels,
                                                                                             kind=kind), "", finite)
        for klass, desc, lg, lb, check in (
                ("hyperparam", "label 3 of 3 classes", logits, np.r_[labels[:19], 3], RAISE),
                ("hyperparam", "label -1", logits, np.r_[labels[:19], -1], RAISE),
                ("mismatch", "labels length 19", logits, labels[:19], RAISE),
                ("empty", "0 rows", logits[:0], labels[:0], shape_is(0)),
                ("empty", "0 classes", logits[:, :0], labels, RAISE),
                ("degenerate", "one class", logits[:, :1], labels * 0, finite)):
            add(f"{ms}[{kind}]", klass, desc, lambda kind=kind, lg=lg, lb=lb: membership_score(lg, lb, kind=kind),
                r"labels|logits|class", check)
    hp_cases(ms, lambda **kw: membership_score(logits, labels, **kw), "kind", bad=("nope", None))
    add("balanced_threshold", "empty", "member empty", lambda: balanced_threshold(np.array([]), np.ones(3)),
        r"member", RAISE)
    add("balanced_threshold", "nonfinite", "member has nan", lambda: balanced_threshold(np.array([0.5, math.nan]),
                                                                                        np.ones(3)), r"member", RAISE)
    add("auc", "empty", "positive empty", lambda: auc(np.array([]), np.ones(3)), r"positive", RAISE)
    add("auc", "nonfinite", "positive has nan", lambda: auc(np.array([0.5, math.nan]), np.ones(3)), r"positive",
        RAISE, "ambiguous: a NaN score ranks as the largest")
    shadow_in = np.zeros((4, 20), bool)
    shadow_in[:2] = True  # shadows 0 and 1 trained on every example: confident like the members' logits
    shadow = 0.5 * rng.standard_normal((4, 20, 3)) + 2.0 * shadow_in[:, :, None] * np.eye(3)[labels][None]

    def attack(lg: Any, shadow_logits: Any = shadow, shadow_in: Any = shadow_in) -> Any:
        return AttackData(lg, labels, shadow_logits, shadow_in)

    for cls, kw in ((LiRA, {}), (LiRA, {"online": True}), (RMIA, {})):
        e = cls.__name__ + ("[online]" if kw else "")

        def run(cls: Any = cls, kw: dict[str, Any] = kw, **changes: Any) -> Any:
            data = {"member": attack(logits_m), "nonmember": attack(logits_n), "forget": attack(logits)}
            return mia(cls, **{**data, **{k: v for k, v in changes.items() if k in data}},
                       **kw, **{k: v for k, v in changes.items() if k not in data})

        add(e, "baseline", "fit + estimate", lambda run=run: run(), "", lambda r: _mia_ok(r) and r.identifiable)
        for klass, desc, member_, names in (
                ("type", "member without shadows", (logits_m, labels), r"shadow"),
                ("shape", "shadow_logits [4,20,2]", attack(logits_m, shadow[..., :2]), r"shadow_logits"),
                ("nonfinite", "shadow_logits one nan", attack(logits_m, poke(shadow, math.nan)), r"shadow_logits"),
                ("shape", "shadow_in [4,19]", attack(logits_m, shadow_in=shadow_in[:, :19]), r"shadow_in")):
            add(e, klass, desc, lambda run=run, member_=member_: run(member=member_), names)
        same = np.repeat(shadow[2:3], 4, 0)
        add(e, "degenerate", "all shadows identical", lambda run=run, same=same: run(
            member=attack(logits_m, same), nonmember=attack(logits_n, same), forget=attack(logits, same)),
            r"shadow|variance", _mia_ok if cls is RMIA else RAISE)
    add("LiRA[online]", "mismatch", "shadow_in missing", lambda: mia(LiRA, attack(logits_m, shadow_in=None),
                                                                     attack(logits_n), attack(logits), online=True),
        r"shadow_in")
    hp_cases("LiRA", lambda **kw: LiRA(**kw).fit(attack(logits_m), attack(logits_n)), "level", bad=(0.0, math.nan))
    hp_cases("LiRA", lambda **kw: LiRA(**kw).fit(attack(logits_m), attack(logits_n)), "rule", bad=("nope",))
    hp_cases("RMIA", lambda **kw: RMIA(**kw).fit(attack(logits_m), attack(logits_n)), "a", bad=(2.0, math.nan))
    hp_cases("RMIA", lambda **kw: RMIA(**kw).fit(attack(logits_m), attack(logits_n)), "gamma",
             bad=(0.0, math.nan, math.inf))
    hp_cases("SVCMIA", lambda **kw: SVCMIA(**kw).fit((logits_m, labels), (logits_n, labels)), "C",
             bad=(0.0, math.nan, math.inf, "1"))
    add("SVCMIA", "baseline", "fit + estimate", lambda: mia(SVCMIA), "", _mia_ok)


# ----------------------------------------------------------------------------------------- the scaling laws
def scaling_cases() -> None:
    from paperlab.scaling import LawFitter, fit_law

    N = np.array([1e6, 2e6, 4e6, 8e6, 1.6e7, 3.2e7, 6.4e7, 1.28e8])
    D = N * 20 * np.array([1, 2, 0.5, 1, 2, 0.5, 1, 2])
    loss = 1.7 + 400 / N**0.34 + 410 / D**0.28

    def fit(law: Any = "chinchilla", N: Any = N, D: Any = D, loss: Any = loss, **kw: Any) -> Any:
        return fit_law(law, N=N, D=D, loss=loss, **{"n_starts": 2, **kw})

    def params_finite(r: Any) -> bool:
        return finite(list(r.params.values())) and math.isfinite(r.n_exponent)

    tensor_cases("fit_law", fit, {"N": N, "D": D, "loss": loss}, args=("N", "loss"),
                 policy={"list": params_finite, "int": params_finite, "nonfinite": "raise",
                         "magnitude": params_finite},
                 overrides={("N", "bool"): ("raise", "ambiguous: bools read as 1.0")}, baseline=params_finite)
    for desc, kw, names, check, note in (
            ("every N equal", {"N": np.full(8, 1e7)}, r"\bN\b", params_finite,
             "ill-posed (alpha unidentifiable): finite parameters at least, a clear refusal is better"),
            ("every N and D equal", {"N": np.full(8, 1e7), "D": np.full(8, 2e8)}, r"\b(N|D)\b", params_finite,
             "ill-posed"),
            ("points repeated twice", {"N": np.r_[N, N], "D": np.r_[D, D], "loss": np.r_[loss, loss]}, r"\bN\b",
             params_finite, ""),
            ("5 points for 5 parameters", {"N": N[:5], "D": D[:5], "loss": loss[:5]}, r"point", RAISE, ""),
            ("0 points", {"N": N[:0], "D": D[:0], "loss": loss[:0]}, r"point|\bN\b", RAISE, ""),
            ("D length 7", {"D": D[:7]}, r"\bD\b|length", RAISE, ""),
            ("loss = 0 somewhere", {"loss": np.r_[loss[:7], 0.0]}, r"loss", RAISE, ""),
            ("N negative", {"N": -N}, r"\bN\b", RAISE, ""),
            ("name='nope'", {"law": "nope"}, r"law|nope", RAISE, ""),
            ("T for chinchilla", {"T": N}, r"\bT\b", RAISE, ""),
            ("frontier with T one nan", {"law": "frontier", "T": poke(N, math.nan)}, r"\bT\b", RAISE, ""),
            ("holdout mask length 3", {"holdout": np.ones(3, bool)}, r"holdout", RAISE, ""),
            ("holdout index 8 of 8", {"holdout": [8]}, r"holdout", RAISE, ""),
            ("holdout index -1", {"holdout": [-1]}, r"holdout", RAISE, ""),
            ("holdout floats", {"holdout": [0.5]}, r"holdout", RAISE, ""),
            ("holdout=True", {"holdout": True}, r"holdout", RAISE, ""),
            ("holdout every point", {"holdout": np.ones(8, bool)}, r"holdout|point", RAISE, ""),
            ("p for chinchilla", {"p": 1.0}, r"\bp\b", RAISE, ""),
            ("frontier s=inf", {"law": "frontier", "s": math.inf}, r"\bs\b", RAISE, "")):
        add("fit_law", "mismatch" if check is RAISE else "degenerate", desc, lambda kw=kw: fit(**kw), names, check,
            note)
    for name, bad in (("delta", (0.0, -1.0, math.nan)), ("n_starts", (0, True, 2.5)), ("n_bootstrap", (-1,)),
                      ("seed", ("a", 2.5)), ("gamma_N", (0.0,))):
        hp_cases("fit_law", fit, name, bad=bad)
    hp_cases("fit_law", lambda **kw: fit(n_bootstrap=3, **kw), "seed", bad=(-1,),
             note="seed=-1 passes check_int (no minimum) and reaches numpy's default_rng at the bootstrap")
    lf = "LawFitter.predict"
    fitted = LawFitter("chinchilla", n_starts=2).fit(N, D, loss)
    add(lf, "baseline", "at the fitted points", lambda: fitted.predict(N, D), "", finite)
    for klass, desc, n in (("nonfinite", "N one nan", poke(N, math.nan)), ("hyperparam", "N negative", -N),
                           ("hyperparam", "N = 0", N * 0), ("type", "N str", "abc"),
                           ("mismatch", "N length 3", N[:3])):
        add(lf, klass, desc, lambda n=n: fitted.predict(n, D), r"\bN\b")
    add(lf, "mismatch", "before fit", lambda: LawFitter("chinchilla").predict(N, D), r"fit")


# ----------------------------------------------------------------------------------------------- reasoning
def reasoning_cases() -> None:
    from paperlab.reasoning import (
        GeneratorConfig,
        WordTokenizer,
        compounding_error_bound,
        decision_margin,
        exploration_kl_lower_bound,
        fit_noise_ratio,
        generate_prosqa,
        kl_extremal,
        kl_to_uniform,
        load_prosqa,
        margin_lower_bound,
        noise_curve,
        symbolic_index,
    )
    from paperlab.reasoning.tokenizer import SPECIALS

    probs = torch.tensor([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]], dtype=torch.float64)
    si = "symbolic_index"
    tensor_cases(si, lambda **kw: symbolic_index(**kw), {"probs": probs},
                 policy={"list": finite, "nonfinite": "raise", "magnitude": "raise"},
                 overrides={("probs", "x1e-40"): ("raise", "rows no longer sum to 1"),
                            ("probs", "leading dim dropped"): (finite, "a single [V] distribution is valid"),
                            ("probs", "extra leading dim"): (shape_is(1, 2), "[..., V] takes any leading dims")})
    for klass, desc, kw, names, check, note in (
            ("hyperparam", "a row summing to 0.9", {"probs": probs * 0.9}, r"probs", RAISE, ""),
            ("hyperparam", "a negative entry", {"probs": torch.tensor([[1.2, -0.2, 0.0]])}, r"probs", RAISE, ""),
            ("empty", "V=0", {"probs": torch.zeros(2, 0)}, r"probs", RAISE, ""),
            ("empty", "0 rows", {"probs": probs[:0]}, r"probs", shape_is(0), ""),
            ("shape", "0-d", {"probs": torch.tensor(1.0)}, r"probs", RAISE, ""),
            ("hyperparam", "candidates out of range [5]", {"probs": probs, "candidates": [5]}, r"candidate", RAISE, ""),
            ("hyperparam", "candidates [-1]", {"probs": probs, "candidates": [-1]}, r"candidate", RAISE, ""),
            ("empty", "candidates []", {"probs": probs, "candidates": []}, r"candidate", RAISE, ""),
            ("dtype", "candidates floats [0.5, 1.7]", {"probs": probs, "candidates": [0.5, 1.7]}, r"candidate", RAISE,
             "floats are truncated to ids 0 and 1"),
            ("type", "candidates 'ab'", {"probs": probs, "candidates": "ab"}, r"candidate", RAISE, ""),
            ("degenerate", "candidates [1, 1] (duplicate)", {"probs": probs, "candidates": [1, 1]}, r"candidate", RAISE,
             "ambiguous: a duplicated option is counted twice when renormalising"),
            ("degenerate", "candidates with zero mass",
             {"probs": torch.tensor([[1.0, 0.0, 0.0]]), "candidates": [1, 2]}, r"candidate|zero", RAISE, ""),
            ("hyperparam", "top_p=0", {"probs": probs, "top_p": 0.0}, r"top_p", RAISE, ""),
            ("hyperparam", "top_p=1.5", {"probs": probs, "top_p": 1.5}, r"top_p", RAISE, ""),
            ("hyperparam", "top_p=nan", {"probs": probs, "top_p": math.nan}, r"top_p", RAISE, ""),
            ("hyperparam", "top_p=True", {"probs": probs, "top_p": True}, r"top_p", RAISE, ""),
            ("magnitude", "top_p=1e-40", {"probs": probs, "top_p": 1e-40}, r"top_p", finite, "")):
        add(si, klass, desc, lambda kw=kw: symbolic_index(**kw), names, check, note)
    dm = "decision_margin"
    z = torch.tensor([[2.0, 0.5, -1.0]])
    tensor_cases(dm, lambda **kw: decision_margin(**kw), {"logits": z},
                 policy={"list": finite, "int": finite, "bool": "raise"},
                 overrides={("logits", "leading dim dropped"): (finite, "a single [V] row is valid"),
                            ("logits", "extra leading dim"): (shape_is(1, 1), "[..., V] takes any leading dims"),
                            ("logits", "one -inf"): (finite, "a -inf logit below the top two leaves the margin")})
    for klass, desc, kw, check in (("empty", "V=1", {"logits": z[:, :1]}, RAISE),
                                   ("empty", "0 rows", {"logits": z[:0]}, shape_is(0)),
                                   ("hyperparam", "candidates [5]", {"logits": z, "candidates": [0, 5]}, RAISE),
                                   ("hyperparam", "candidates [-1]", {"logits": z, "candidates": [0, -1]}, RAISE),
                                   ("dtype", "candidates floats", {"logits": z, "candidates": [0.5, 1.5]}, RAISE)):
        add(dm, klass, desc, lambda kw=kw: decision_margin(**kw), r"logits|candidate|option", check)
    for entry, fn, bad, ok in (
            ("margin_lower_bound", margin_lower_bound, (0.0, -0.1, 1.5, math.nan, None, "0.5"), ()),
            ("exploration_kl_lower_bound", lambda i_s: exploration_kl_lower_bound(i_s, 3), (0.2, 1.5, math.nan, None),
             ())):
        hp_cases(entry, lambda fn=fn, **kw: fn(**kw), "i_s", bad=bad, ok=ok)
        add(entry, "baseline", "i_s=0.9", lambda fn=fn: fn(0.9), "", finite)
        add(entry, "degenerate", "i_s=1 (documented +inf)", lambda fn=fn: fn(1.0), r"i_s",
            lambda r: bool(torch.isinf(r).all()), "documented: +inf at I_S = 1")
    hp_cases("exploration_kl_lower_bound", lambda **kw: exploration_kl_lower_bound(0.9, **kw), "n_options",
             bad=(1, 0, True, 2.5))
    add("kl_to_uniform", "baseline", "probs [2,3]", lambda: kl_to_uniform(probs), "", finite)
    add("kl_to_uniform", "degenerate", "a zero probability", lambda: kl_to_uniform(torch.tensor([[1.0, 0.0]])),
        r"probs", always, "KL(uniform || p) = +inf is the right value")
    add("kl_to_uniform", "hyperparam", "probs not summing to 1", lambda: kl_to_uniform(probs * 2), r"probs")
    add("kl_extremal", "baseline", "B=3, delta=0.1", lambda: kl_extremal(3, 0.1), "", finite)
    hp_cases("kl_extremal", lambda **kw: kl_extremal(**{"n_options": 3, "delta": 0.1, **kw}), "delta",
             bad=(0.0, 1.0, math.nan, None), ok=(1e-320,))
    hp_cases("kl_extremal", lambda **kw: kl_extremal(**{"n_options": 3, "delta": 0.1, **kw}), "n_options",
             bad=(1, True, 3.0), ok=(10**400,))
    ce = "compounding_error_bound"
    cbase = {"lipschitz": 0.9, "steps": 4, "dim": 8, "sigma": 0.1}
    add(ce, "baseline", "L=0.9, M=4, d=8, sigma=0.1", lambda: compounding_error_bound(**cbase), "", finite)
    for name, bad, ok in (("lipschitz", (-1.0, math.nan, math.inf, "1"), (1e200,)), ("steps", (-1, True, 2.5), ()),
                          ("dim", (0, True), ()), ("sigma", (-1.0, math.nan), (1e200,))):
        hp_cases(ce, lambda **kw: compounding_error_bound(**{**cbase, **kw}), name, bad=bad, ok=ok, check=finite,
                 note={"1e+200": "ambiguous: the bound overflows float64; inf may be by design"})
    add(ce, "magnitude", "L=2, steps=10**6", lambda: compounding_error_bound(2.0, 10**6, 8, 0.1), r"lipschitz|steps",
        finite)
    nc = "noise_curve"
    sig, marg = torch.tensor([0.0, 0.5, 1.0]), torch.tensor([1.0, 2.0])
    add(nc, "baseline", "sigma [3], margin [2]", lambda: noise_curve(sig, margin=marg), "", finite)
    for klass, desc, kw, names, check, note in (
            ("hyperparam", "sigma negative", {"sigma": -sig}, r"sigma", RAISE, ""),
            ("nonfinite", "sigma nan", {"sigma": poke(sig, math.nan)}, r"sigma", RAISE, ""),
            ("nonfinite", "margin nan at sigma 0", {"sigma": torch.tensor([0.0]), "margin": torch.tensor([math.nan])},
             r"margin", visible, "a NaN margin must not turn into a finite accuracy"),
            ("nonfinite", "margin nan", {"margin": poke(marg, math.nan)}, r"margin", visible, ""),
            ("hyperparam", "scale 0", {"scale": 0.0}, r"scale", RAISE, ""),
            ("nonfinite", "scale nan", {"scale": math.nan}, r"scale", visible, ""),
            ("mismatch", "margin [2] vs scale [3]", {"scale": torch.ones(3)}, r"margin|scale", RAISE, ""),
            ("empty", "margin empty", {"margin": torch.zeros(0)}, r"margin", finite,
             "the mean over no examples is NaN"),
            ("type", "sigma None", {"sigma": None}, r"sigma", RAISE, ""),
            ("type", "margin str", {"margin": "1"}, r"margin", RAISE, "")):
        add(nc, klass, desc, lambda kw=kw: noise_curve(**{"sigma": sig, "margin": marg, **kw}), names, check, note)
    fr = "fit_noise_ratio"
    sigmas, ratios = [0.5, 1.0, 2.0, 4.0], [0.98, 0.84, 0.6, 0.4]
    add(fr, "baseline", "4 points", lambda: fit_noise_ratio(sigmas, ratios), "", finite)
    for klass, desc, s, a, names, check, note in (
            ("mismatch", "lengths 4 and 3", sigmas, ratios[:3], r"sigmas|ratios", RAISE, ""),
            ("empty", "one sigma > 0", [0.0, 1.0], [1.0, 0.8], r"sigma", RAISE, ""),
            ("nonfinite", "a ratio nan", sigmas, [0.98, math.nan, 0.6, 0.4], r"ratios", RAISE, ""),
            ("nonfinite", "a sigma inf", [0.5, 1.0, 2.0, math.inf], ratios, r"sigmas", RAISE, ""),
            ("hyperparam", "a sigma negative", [-0.5, 1.0, 2.0, 4.0], ratios, r"sigmas", RAISE, ""),
            ("degenerate", "constant ratios", sigmas, [0.5] * 4, r"ratios", lambda r: math.isfinite(r[0]),
             "R^2 is undefined (NaN by design); r must be finite"),
            ("type", "ratios None", sigmas, None, r"ratios", RAISE, ""),
            ("type", "sigmas str", "abcd", ratios, r"sigmas", RAISE, "")):
        add(fr, klass, desc, lambda s=s, a=a: fit_noise_ratio(s, a), names, check, note)
    gp = "generate_prosqa"
    add(gp, "baseline", "2 examples", lambda: generate_prosqa(2, seed=0), "", lambda r: len(r) == 2)
    hp_cases(gp, lambda **kw: generate_prosqa(**{"n": 2, "seed": 0, **kw}), "n", bad=(-1, True, 2.5, None),
             ok=(0,), check=lambda r: r == [])
    hp_cases(gp, lambda **kw: generate_prosqa(**{"n": 2, "seed": 0, **kw}), "seed", bad=(None, "a", 2.5))
    hp_cases(gp, lambda **kw: generate_prosqa(**{"n": 2, "seed": 0, **kw}), "config", bad=("small", 1))
    for name, bad in (("depth", ((3, 2), (0, 2))), ("n_persons", ((1, 2),)), ("n_nodes", ((5, None), (3, 4))),
                      ("reachable_frac", (0.0, 1.0, math.nan)), ("branching", (-1.0, math.nan)),
                      ("cross_edges", (9.0, -1.0)), ("depth_weights", ((1.0,), (-1.0, 1.0, 1.0)))):
        hp_cases("GeneratorConfig", lambda **kw: generate_prosqa(2, seed=0, config=GeneratorConfig(**kw)), name,
                 bad=bad)
    lp = "load_prosqa"
    good = {"question": "Tom is a wumpus. Is Tom a rempus or a gerpus?", "answer": "Tom is a rempus.", "steps": [],
            "idx_to_symbol": ["Tom", "wumpus"], "edges": [[0, 1]], "root": 0, "target": 1, "neg_target": 1}
    add(lp, "baseline", "one record", lambda: load_prosqa("train", path=write("p_ok.json", json.dumps([good]))), "",
        lambda r: len(r) == 1)
    for desc, content, check in (("empty", "", RAISE), ("garbage", "\x00\x01garbage", RAISE),
                                 ("truncated", json.dumps([good])[:40], RAISE), ("a dict", json.dumps(good), RAISE),
                                 ("a list of ints", "[1, 2]", RAISE), ("record lacking keys", '[{"question": "x"}]',
                                                                      RAISE),
                                 ("record edges [[1]]", json.dumps([{**good, "edges": [[1]]}]), RAISE),
                                 ("record root 'x'", json.dumps([{**good, "root": "x"}]), RAISE)):
        add(lp, "file", f"file {desc}", lambda desc=desc, content=content: load_prosqa(
            "train", path=write(f"p_{desc.replace(' ', '_')}.json", content)), r"p_\w+\.json|ProsQA .*file|record",
            check)
    add(lp, "file", "file missing", lambda: load_prosqa("train", path="files/none.json"), r"none\.json")
    add(lp, "file", "path is a folder", lambda: load_prosqa("train", path=write("d/x", "").parent), r"files/d")
    add(lp, "hyperparam", "split='train' without path", lambda: load_prosqa("train"), r"split")
    hp_cases(lp, lambda **kw: load_prosqa("train", path=write("p_ok2.json", json.dumps([good])), **kw), "limit",
             bad=(0, True, 2.5))
    wt = "WordTokenizer"
    add(wt, "baseline", "specials + 2 words", lambda: WordTokenizer([*SPECIALS, "a", "b"]), "", always)
    for klass, desc, words, names in (("type", "None", None, r"vocab|words"), ("degenerate", "no specials", ["a"],
                                                                                r"special"),
                                      ("degenerate", "duplicate words", [*SPECIALS, "a", "a"], r"duplicate"),
                                      ("type", "a str", "abc", r"vocab|special")):
        add(wt, klass, desc, lambda words=words: WordTokenizer(words), names)
    add(wt, "hyperparam", "id of an unknown word", lambda: WordTokenizer([*SPECIALS, "a"]).id("zz"), r"zz|unknown")
