"""Cases for make_optimizer and the optimizers, the losses, and the training loop (train, EarlyStopping,
warmup_cosine)."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
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
    write,
)


# --------------------------------------------------------------------------------------------- the optimizers
def _net() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 2))


def _stepped(name: str, grad: Callable[[torch.Tensor], torch.Tensor] = lambda p: torch.ones_like(p),
             init: Callable[[nn.Module], None] | None = None, **kw: Any) -> list[torch.Tensor]:
    """Parameters of ``_net()`` after one ``make_optimizer(name)`` step with gradients ``grad(p)``."""
    from paperlab.optim import make_optimizer

    model = _net()
    if init is not None:
        init(model)
    opt = make_optimizer(model, name, **{"lr": 0.01, **kw})
    for i, p in enumerate(model.parameters()):
        p.grad = grad(p) * (1 + 0.1 * torch.arange(p.numel(), dtype=p.dtype).view_as(p)) * (-1) ** i
    opt.step()
    return [p.detach().clone() for p in model.parameters()]


def _changed_or_visible(ps: list[torch.Tensor], name: str) -> bool:
    before = [p.detach() for p in _net().parameters()]
    return visible(ps) or all(torch.equal(a, b) for a, b in zip(ps, before, strict=True))


def _close_to(ref: Callable[[], list[torch.Tensor]]) -> Callable[[list[torch.Tensor]], bool]:
    return lambda ps: finite(ps) and all(torch.allclose(a, b, rtol=1e-3, atol=1e-6)
                                         for a, b in zip(ps, ref(), strict=True))


BIG_GRAD_NOTES = {  # every update here is scale-invariant in exact arithmetic: the step must equal the unit step
    "adamw": "torch.optim.AdamW itself: g^2 overflows fp32 (|g| > 1.8e19), so m / sqrt(v) = 0 and nothing moves",
    "nora": "scale-invariant in exact arithmetic; compare with the unit-gradient step (the AdamW-routed biases too)",
    "rmnp": "scale-invariant in exact arithmetic; compare with the unit-gradient step (the AdamW-routed biases too)",
    "muon": "scale-invariant in exact arithmetic; compare with the unit-gradient step (the AdamW-routed biases too)",
}


def optim_cases() -> None:
    from paperlab.optim import OPTIMIZERS, RMNP, Muon, Nora, RoutedOptimizer, make_optimizer

    def make(model: Any = None, name: Any = "nora", **kw: Any) -> Any:
        return make_optimizer(_net() if model is None else model, name, **{"lr": 0.01, **kw})

    m = "make_optimizer"
    add(m, "baseline", "nora on a 2-layer MLP", lambda: make(), "", always)
    hp_cases(m, make, "name", bad=("sgdx", None, 1))
    hp_cases(m, make, "lr", bad=(-1.0, math.nan, math.inf, True, "0.1", None), ok=(0.0, 1e20), check=always)
    for name in ("nora", "adamw"):
        hp_cases(f"{m}[{name}]", lambda name=name, **kw: make(name=name, **kw), "weight_decay",
                 bad=(-1.0, math.nan, "a"))
        hp_cases(f"{m}[{name}]", lambda name=name, **kw: make(name=name, **kw), "adamw_betas",
                 bad=((1.0, 0.9), (0.9,), None, "ab", (math.nan, 0.9)), names=r"\bbetas?\b")
    hp_cases(m, make, "adamw_lr", bad=(-1.0, math.nan), note="the message must say which lr (adamw_lr, not lr)")
    hp_cases(m, make, "adamw_weight_decay", bad=(-1.0,))
    hp_cases(m, make, "master_weights", bad=("yes", 1))
    hp_cases(m, make, "options", bad=([1, 2], {"momentum": 1.5}, {"momentum": math.nan}, {"eps": -1.0},
                                      {"nesterov": "yes"}, {"preset": "bogus"}, {"bogus": 1}),
             names=r"options|momentum|eps|nesterov|preset|bogus")
    hp_cases(f"{m}[muon]", lambda **kw: make(name="muon", **kw), "options",
             bad=({"ns_steps": -1}, {"ns_steps": 2.5}), names=r"ns_steps")
    hp_cases(f"{m}[adamw]", lambda **kw: make(name="adamw", **kw), "options", bad=({"momentum": 0.9},),
             names=r"options")
    for desc, model, names in (("None", None, r"\bmodel\b"), ("str", "abc", r"\bmodel\b"),
                               ("no parameters", nn.Identity(), r"\bmodel\b|param"),
                               ("all parameters frozen", _net().requires_grad_(False), r"\bmodel\b|param")):
        for name in ("nora", "adamw"):
            add(f"{m}[{name}]", "type" if isinstance(model, (str, type(None))) else "empty", f"model {desc}",
                lambda model=model, name=name: make_optimizer(model, name, lr=0.01), names)
    add(m, "type", "head=[1]", lambda: make(head=[1]), r"\bhead\b")
    for name in OPTIMIZERS:
        e = f"{name}.step"
        add(e, "baseline", "one step", lambda name=name: _stepped(name), "", finite)
        add(e, "nonfinite", "one NaN gradient entry", lambda name=name: _stepped(name, lambda p: poke(
            torch.ones_like(p), math.nan)), r"grad", lambda ps, name=name: _changed_or_visible(ps, name),
            "ambiguous: torch.optim propagates NaN too; the NaN must at least stay visible (or the step be skipped)")
        add(e, "nonfinite", "one +inf gradient entry", lambda name=name: _stepped(name, lambda p: poke(
            torch.ones_like(p), math.inf)), r"grad", lambda ps, name=name: _changed_or_visible(ps, name),
            "as for NaN: a silent finite step from an inf gradient hides the problem")
        add(e, "degenerate", "all gradients 0", lambda name=name: _stepped(name, torch.zeros_like), r"grad", finite)
        add(e, "degenerate", "weights all 0", lambda name=name: _stepped(
            name, init=lambda mdl: [p.data.zero_() for p in mdl.parameters()]), r"weight|param", finite)
        add(e, "magnitude", "gradients x1e20", lambda name=name: _stepped(name, lambda p: torch.ones_like(p) * 1e20),
            r"grad", _close_to(lambda name=name: _stepped(name)), BIG_GRAD_NOTES[name])
        add(e, "magnitude", "gradients x1e-40", lambda name=name: _stepped(name, lambda p: torch.ones_like(p) * 1e-40),
            r"grad", finite, "eps dominates; only finiteness is required")

        def set_lr(value: float, name: str = name) -> list[torch.Tensor]:
            from paperlab.optim import make_optimizer as mk

            model = _net()
            opt = mk(model, name, lr=0.01)
            for group in opt.param_groups:
                group["lr"] = value
            for p in model.parameters():
                p.grad = torch.ones_like(p)
            opt.step()
            return [p.detach() for p in model.parameters()]

        for value in (math.nan, -1.0):
            add(e, "hyperparam", f"param_groups lr set to {value} before step", lambda value=value, f=set_lr: f(value),
                r"\blr\b", RAISE, "as a scheduler could set it; ambiguous: torch.optim does not re-check lr at step")
    w = torch.nn.Parameter(rand(3, 3))
    for cls, bad in ((Nora, {"lr": (-1.0, math.nan), "momentum": (1.0, -0.1, math.nan), "eps": (-1.0,),
                             "eps_mode": ("x",), "row_dim": (2, True), "shape_scale": ("x",), "nesterov": ("yes",)}),
                     (RMNP, {"lr": (math.inf,), "momentum": (math.nan,)}),
                     (Muon, {"ns_steps": (-1, 2.5, True), "momentum": (1.5,)})):
        for name, values in bad.items():
            hp_cases(cls.__name__, lambda cls=cls, **kw: cls([w], **kw), name, bad=values)
        add(cls.__name__, "shape", "a 1-D parameter", lambda cls=cls: cls([torch.nn.Parameter(torch.ones(3))]),
            r"param|shape|matri")
        add(cls.__name__, "empty", "no parameters", lambda cls=cls: cls([]), r"param")
    r = "RoutedOptimizer"
    add(r, "empty", "no groups", lambda: RoutedOptimizer([]), r"group")
    add(r, "mismatch", "group without kind", lambda: RoutedOptimizer([{"params": [w]}]), r"\bkind\b")
    add(r, "hyperparam", "kind='bogus'", lambda: RoutedOptimizer([{"params": [w], "kind": "bogus"}]), r"\bkind\b")
    add(r, "type", "groups is a list of params", lambda: RoutedOptimizer([w]), r"group|param")


# ------------------------------------------------------------------------------------------------- the losses
def loss_cases() -> None:
    from paperlab.losses import (
        FreLELoss,
        band_slices,
        efr_loss,
        fredf_loss,
        frele_loss,
        get_loss,
        ifr_weights,
        mae_loss,
        mse_loss,
        per_bin_relative_error,
        spectral_band_errors,
    )

    pred, target = rand(2, 8, 3, seed=9), rand(2, 8, 3, seed=10)
    base = {"pred": pred, "target": target}
    square = "ambiguous: the mean square (1e40) is beyond fp32, so inf is the IEEE result; fp64 would hold it"
    for entry, fn in (("frele_loss", frele_loss), ("mse_loss", mse_loss), ("mae_loss", mae_loss),
                      ("efr_loss", efr_loss), ("fredf_loss", fredf_loss)):
        tensor_cases(entry, lambda fn=fn, **kw: fn(**kw), base,
                     overrides={(n, "x1e20"): (finite, square) for n in ("pred", "target")}
                     if entry in ("mse_loss", "fredf_loss") else None)
        for desc, p, t, check in (("batch 0", pred[:0], target[:0], finite), ("channels 0", pred[..., :0],
                                                                              target[..., :0], finite),
                                  ("horizon 1", pred[:, :1], target[:, :1], finite),
                                  ("horizon 2", pred[:, :2], target[:, :2], finite)):
            add(entry, "empty", desc, lambda fn=fn, p=p, t=t: fn(p, t), r"pred|target|horizon", check,
                "an empty batch may not give a NaN mean; refusing clearly is fine")
        add(entry, "mismatch", "pred [2,8,3] vs target [2,8,2]", lambda fn=fn: fn(pred, target[..., :2]),
            r"pred|target")
        add(entry, "mismatch", "pred float64, target float32", lambda fn=fn: fn(pred.double(), target),
            r"pred|target|dtype")
        add(entry, "degenerate", "pred == target == 0", lambda fn=fn: fn(torch.zeros(2, 8, 3), torch.zeros(2, 8, 3)),
            r"pred|target", lambda r: float(r) == 0.0)
    fl = "frele_loss"
    for name, bad, ok in (("delta", (-0.1, 1.1, math.nan, True, "a"), (0.0, 1.0)), ("window", (0, 2, -1, True), (7,)),
                          ("eta", (0.0, -1.0, math.nan, math.inf), (1e20, 1e-40)), ("index_base", (2, True), ()),
                          ("keep_ratio", (0.0, 1.5, math.nan), (1e-40,)), ("time_loss", ("l2",), ()),
                          ("reduction", ("avg",), ()), ("peak_source", ("pred",), ()), ("weight_mode", ("x",), ()),
                          ("window_mode", ("x",), ()), ("freq_metric", ("x",), ()), ("fft_norm", ("forward",), ()),
                          ("ifr", ("yes",), ())):
        hp_cases(fl, lambda **kw: frele_loss(pred, target, **kw), name, bad=bad, ok=ok,
                 note={"1e-40": "eta=1e-40 makes the peak weights i / eta overflow fp32",
                       "'yes'": "a str where a bool is expected"})
    hp_cases("fredf_loss", lambda **kw: fredf_loss(pred, target, **kw), "alpha", bad=(1.5, math.nan, None))
    iw = "ifr_weights"
    add(iw, "baseline", "target [2,8,3]", lambda: ifr_weights(target), "", shape_is(2, 5, 3))
    for klass, desc, value in (("type", "None", None), ("type", "list", target.tolist()), ("shape", "2-D", target[0]),
                               ("dtype", "complex", target.to(torch.complex64))):
        add(iw, klass, f"target {desc}", lambda value=value: ifr_weights(value), r"target")
    add(iw, "dtype", "target int64", lambda: ifr_weights(target.long()), r"target", shape_is(2, 5, 3),
        "an integer series has a well-defined spectrum; refusing it like frele_loss does is also fine")
    add(iw, "nonfinite", "target one nan", lambda: ifr_weights(poke(target, math.nan)), r"target", finite,
        "weights (no gradient) from a NaN target: finite weights are defensible, a refusal too")
    hp_cases(iw, lambda **kw: ifr_weights(target, **kw), "pred", bad=(target[0], "abc"), names=r"\bpred\b")
    add("get_loss", "baseline", "frele with delta=0.5", lambda: get_loss("frele", delta=0.5)(pred, target), "", finite)
    for desc, fn, names in (("name='nope'", lambda: get_loss("nope"), r"loss|nope"),
                            ("name=None", lambda: get_loss(None), r"loss"),
                            ("options for mse", lambda: get_loss("mse", delta=0.5), r"option|delta"),
                            ("frele delta=2", lambda: get_loss("frele", delta=2.0), r"delta"),
                            ("frele bogus option", lambda: get_loss("frele", bogus=1), r"bogus")):
        add("get_loss", "hyperparam", desc, fn, names)
    hp_cases("FreLELoss", lambda **kw: FreLELoss(**kw), "delta", bad=(2.0, math.nan))
    hp_cases("FreLELoss", lambda **kw: FreLELoss(**kw), "window", bad=(0, 4))
    sb = "spectral_band_errors"
    tensor_cases(sb, lambda **kw: spectral_band_errors(**kw), base, args=("pred",))
    hp_cases(sb, lambda **kw: spectral_band_errors(pred, target, **kw), "bands",
             bad=((0.5, 0.1), (0.1,), None, (0.0, 0.5), (math.nan, 0.5)))
    hp_cases(sb, lambda **kw: spectral_band_errors(pred, target, **kw), "metric", bad=("mae",))
    add(sb, "empty", "batch 0", lambda: spectral_band_errors(pred[:0], target[:0]), r"pred|target", finite)
    add(sb, "degenerate", "horizon 2 (MF band empty)", lambda: spectral_band_errors(pred[:, :2], target[:, :2]),
        r"horizon|bands", lambda r: math.isfinite(r["GF"]), "NaN for a band with no bins is the code's deliberate "
        "sentinel; only GF must be finite")
    hp_cases("band_slices", lambda **kw: band_slices(**kw), "horizon", bad=(1, True, 2.5, None))
    hp_cases("per_bin_relative_error", lambda **kw: per_bin_relative_error(pred, target, **kw), "eps",
             bad=(0.0, -1.0, math.nan))
    add("per_bin_relative_error", "degenerate", "target all 0, pred all 0",
        lambda: per_bin_relative_error(torch.zeros(2, 8, 3), torch.zeros(2, 8, 3)), r"target", finite)


# ------------------------------------------------------------------------------------------ the training loop
def train_cases() -> None:
    from paperlab.checkpoint import save_checkpoint
    from paperlab.train import EarlyStopping, train, warmup_cosine

    def loop(model: Any = None, loss_fn: Any = None, batches: Any = None, optimizer: Any = None, **kw: Any) -> Any:
        model = _net() if model is None else model
        opt = torch.optim.SGD(model.parameters(), lr=0.1) if optimizer is None else optimizer
        loss_fn = (lambda m, b: m(b).square().mean()) if loss_fn is None else loss_fn
        batches = (lambda step: torch.ones(2, 4)) if batches is None else batches
        return train(model, loss_fn, batches, opt, **{"steps": 2, "progress": False, **kw})

    t = "train"
    add(t, "baseline", "2 steps", lambda: loop(), "", lambda r: r.steps_done == 2)
    for name, bad in (("steps", (-1, True, 2.5, None)), ("grad_clip", (0.0, -1.0, math.nan, math.inf, True, "1")),
                      ("eval_every", (-1, True)), ("checkpoint_every", (-1,)), ("scheduler", ("abc",))):
        hp_cases(t, loop, name, bad=bad)
    for klass, desc, loss_fn, names, check, note in (
            ("nonfinite", "loss nan", lambda m, b: m(b).sum() * math.nan, r"\bloss\b", RAISE, ""),
            ("nonfinite", "loss inf", lambda m, b: m(b).sum() * math.inf, r"\bloss\b", RAISE, ""),
            ("shape", "loss a vector", lambda m, b: m(b).sum(0), r"\bloss\b|scalar", RAISE, ""),
            ("type", "loss a float", lambda m, b: 1.0, r"\bloss\b", RAISE, ""),
            ("type", "loss None", lambda m, b: None, r"\bloss\b", RAISE, ""),
            ("type", "metric a str", lambda m, b: (m(b).sum(), {"acc": "high"}), r"metric|acc", RAISE, ""),
            ("nonfinite", "metric nan", lambda m, b: (m(b).sum(), {"acc": math.nan}), r"metric|acc", always,
             "logging a NaN metric is legitimate")):
        add(t, klass, desc, lambda loss_fn=loss_fn: loop(loss_fn=loss_fn), names, check, note)
    for klass, desc, kw, names in (
            ("empty", "batches iterable of 1 for 3 steps", {"batches": [torch.ones(2, 4)], "steps": 3}, r"batches"),
            ("type", "batches None", {"batches": 5}, r"batches"),
            ("type", "optimizer 'sgd'", {"optimizer": "sgd"}, r"optimizer"),
            ("type", "eval_fn returns a float", {"eval_fn": lambda m: 1.0}, r"eval_fn"),
            ("mismatch", "early_stopping metric not in eval_fn output",
             {"eval_fn": lambda m: {"a": 1.0}, "early_stopping": EarlyStopping(metric="v")}, r"metric|early_stopping"),
            ("file", "checkpoint_dir is a file", {"checkpoint_dir": write("train_file", "x")}, r"train_file")):
        add(t, klass, desc, lambda kw=kw: loop(**kw), names)
    add(t, "type", "model None", lambda: train(None, lambda m, b: 0, lambda s: 0, None, steps=1, progress=False),
        r"\bmodel\b")
    add(t, "nonfinite", "early stopping on a NaN metric", lambda: loop(
        steps=4, eval_every=1, eval_fn=lambda m: {"v": math.nan}, early_stopping=EarlyStopping(metric="v", patience=2)),
        r"\bv\b|metric", lambda r: not (r.best and math.isnan(r.best["v"])),
        "ambiguous: NaN is kept as the best value and training stops at the patience; raising or skipping is better")

    def resume_from(payload_writer: Callable[[Path], None], optimizer: Any = None) -> Any:
        folder = Path("files") / f"ck{len(list(Path('files').glob('ck*'))) if Path('files').exists() else 0}"
        folder.mkdir(parents=True, exist_ok=True)
        payload_writer(folder / "checkpoint.pt")
        return loop(checkpoint_dir=folder, resume=True, optimizer=optimizer, steps=3)

    add(t, "file", "resume from a garbage checkpoint.pt",
        lambda: resume_from(lambda p: p.write_bytes(b"garbage")), r"checkpoint\.pt")
    add(t, "file", "resume from another model's checkpoint",
        lambda: resume_from(lambda p: save_checkpoint(p, model=nn.Linear(3, 3))), r"checkpoint\.pt|match")

    def sgd_checkpoint(p: Path) -> None:
        model = _net()
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        model(torch.ones(1, 4)).sum().backward()
        opt.step()
        save_checkpoint(p, model=model, optimizer=opt, step=1)

    add(t, "baseline", "resume a momentum-SGD checkpoint", lambda: resume_from(sgd_checkpoint), "",
        lambda r: r.steps_done == 3)
    add(t, "mismatch", "resume an SGD checkpoint into an AdamW optimizer", lambda: _resume_adam(sgd_checkpoint, loop),
        r"optimizer|checkpoint", RAISE, "ambiguous: torch loads foreign optimizer state without checking its keys")
    es = "EarlyStopping"
    for name, bad in (("patience", (0, -1, True, 2.5, None)), ("mode", ("avg", None)),
                      ("stopping_threshold", (math.nan, math.inf, "a")), ("metric", (None, 5, "")),
                      ("restore_best", ("no",))):
        hp_cases(es, lambda **kw: EarlyStopping(**{"metric": "v", **kw}), name, bad=bad,
                 note="ambiguous: not checked here; train() names the metric later" if name == "metric" else "")
    wc = "warmup_cosine"

    def sched(optimizer: Any = None, **kw: Any) -> list[float]:
        opt = torch.optim.SGD(_net().parameters(), lr=0.1) if optimizer is None else optimizer
        s = warmup_cosine(opt, **{"steps": 5, "warmup": 1, **kw})
        lrs = []
        for _ in range(6):
            lrs.append(opt.param_groups[0]["lr"])
            opt.step()
            s.step()
        return lrs

    add(wc, "baseline", "steps=5, warmup=1", lambda: sched(), "", lambda lrs: all(0 <= x <= 0.1 for x in lrs))
    for name, bad in (("steps", (0, -1, True, 2.5, None)), ("warmup", (-1, True, 2.5)),
                      ("min_ratio", (-1.0, math.nan, 2.0, "a", True))):
        hp_cases(wc, sched, name, bad=bad)
    add(wc, "hyperparam", "warmup=10 > steps=5", lambda: sched(warmup=10), r"warmup",
        lambda lrs: all(0 <= x <= 0.1 for x in lrs), "may also be refused clearly")
    add(wc, "type", "optimizer None", lambda: warmup_cosine(None, steps=5), r"optimizer")


def _resume_adam(writer: Callable[[Path], None], loop: Callable[..., Any]) -> Any:
    folder = Path("files") / "ck_adam"
    folder.mkdir(parents=True, exist_ok=True)
    writer(folder / "checkpoint.pt")
    model = _net()
    return loop(model=model, optimizer=torch.optim.AdamW(model.parameters()), checkpoint_dir=folder, resume=True,
                steps=3)
