"""FreLE loss: values, gradients, peaks and weights on known spectra, layout checks (FreLE spec Sec. 6)."""

from __future__ import annotations

import math

import pytest
import torch

from paperlab.losses import FreLELoss, efr_loss, fredf_loss, frele_loss, get_loss, ifr_weights, mae_loss, mse_loss

OPTIONS = [
    {},
    {"time_loss": "mse"},
    {"ifr": False},
    {"keep_ratio": 0.5},
    {"peak_source": "union"},
    {"index_base": 0},
    {"weight_mode": "constant"},
    {"window_mode": "paper", "window": 2},
    {"freq_metric": "amplitude"},
    {"fft_norm": "ortho"},
]


def _pair(b=2, h=8, c=3, *, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(b, h, c, generator=g, dtype=dtype), torch.randn(b, h, c, generator=g, dtype=dtype)


def _from_amplitudes(amps: list[float], h: int) -> torch.Tensor:
    """A ``[1, h, 1]`` target whose rfft amplitudes are ``amps`` (real spectrum)."""
    spec = torch.tensor(amps, dtype=torch.float64).to(torch.complex128)
    return torch.fft.irfft(spec, n=h).reshape(1, h, 1)


@pytest.mark.parametrize("opts", OPTIONS, ids=lambda o: "-".join(f"{k}={v}" for k, v in o.items()) or "default")
def test_zero_at_target_positive_elsewhere(opts):
    pred, target = _pair()
    assert frele_loss(target, target, **opts).item() == 0.0
    assert frele_loss(pred, target, **opts).item() > 0.0


@pytest.mark.parametrize("h", [7, 8])
@pytest.mark.parametrize("opts", [{}, {"time_loss": "mse"}, {"fft_norm": "ortho"}, {"keep_ratio": 0.6},
                                  {"freq_metric": "amplitude"}], ids=["default", "mse", "ortho", "keep", "amplitude"])
def test_gradcheck_fp64(h, opts):
    pred, target = _pair(2, h, 3, dtype=torch.float64, seed=h)
    pred.requires_grad_(True)
    assert torch.autograd.gradcheck(lambda p: frele_loss(p, target, **opts), (pred,))


def test_delta_endpoints_and_linearity():
    pred, target = _pair(3, 16, 2, dtype=torch.float64)
    l0, l1 = frele_loss(pred, target, delta=0.0), frele_loss(pred, target, delta=1.0)
    torch.testing.assert_close(l0, mae_loss(pred, target), rtol=0, atol=1e-12)
    w = ifr_weights(target)
    ferr = (torch.fft.rfft(pred, dim=1) - torch.fft.rfft(target, dim=1)).abs()
    torch.testing.assert_close(l1, (w * ferr).mean(), rtol=0, atol=1e-12)
    for d in (0.2, 0.7):
        torch.testing.assert_close(frele_loss(pred, target, delta=d), d * l1 + (1 - d) * l0, rtol=0, atol=1e-12)


def test_efr_is_fredf_frequency_term_and_ifr_off_equals_efr():
    pred, target = _pair(2, 12, 3, dtype=torch.float64)
    fredf_freq = (torch.fft.rfft(pred, dim=1) - torch.fft.rfft(target, dim=1)).abs().mean()
    torch.testing.assert_close(efr_loss(pred, target), fredf_freq, rtol=0, atol=1e-12)
    expected = 0.3 * fredf_freq + 0.7 * mae_loss(pred, target)
    torch.testing.assert_close(frele_loss(pred, target, ifr=False), expected, rtol=0, atol=1e-12)
    flat = torch.zeros_like(target)  # a zero target has no peaks -> IFR is a no-op
    torch.testing.assert_close(frele_loss(pred, flat), frele_loss(pred, flat, ifr=False), rtol=0, atol=1e-12)
    torch.testing.assert_close(fredf_loss(pred, target, alpha=0.8),
                               0.8 * fredf_freq + 0.2 * mse_loss(pred, target), rtol=0, atol=1e-12)


def test_fredf_matches_neuralforecast_if_installed():
    from tests.losses.test_adapters import need

    nf = need("neuralforecast.losses.pytorch")
    if not hasattr(nf, "FreDF"):
        pytest.skip("this neuralforecast has no FreDF")
    pred, target = _pair(2, 12, 3, dtype=torch.float64)
    ref = nf.FreDF(alpha=0.8)(y=target, y_hat=pred)
    torch.testing.assert_close(fredf_loss(pred, target, alpha=0.8), ref.to(pred.dtype))


def test_known_spectrum_peaks_and_weights():
    h = 16  # K = 9 bins
    amps = [0.0, 5.0, 1.0, 1.0, 4.0, 1.0, 0.5, 3.0, 1.0]
    target = _from_amplitudes(amps, h)
    w = ifr_weights(target).squeeze()
    k = 9
    peaks = {1, 4, 7}  # local maxima within window 3 (bins 2 and 3 have a larger neighbour)
    expected = torch.tensor([(i + 1) / k if i in peaks else 1.0 for i in range(k)], dtype=torch.float64)
    torch.testing.assert_close(w, expected, rtol=0, atol=1e-12)
    # d = 1 marks every non-zero bin; d >= 2K + 1 only the global max
    w1 = ifr_weights(target, window=1).squeeze()
    nonzero = torch.tensor(amps) > 0
    torch.testing.assert_close(w1[nonzero], (torch.arange(k, dtype=torch.float64)[nonzero] + 1) / k)
    assert w1[0] == 1.0
    wbig = ifr_weights(target, window=2 * k + 1).squeeze()
    assert torch.nonzero(wbig != 1.0).flatten().tolist() == [1]
    # eta scales the weights
    torch.testing.assert_close(ifr_weights(target, eta=2.0).squeeze()[4], torch.tensor(2.5, dtype=torch.float64))


def test_dc_index_base_and_constant_mode():
    target = _from_amplitudes([6.0, 1.0, 2.0, 1.0, 1.0], 8)  # K = 5, peaks at 0 and 2
    w1 = ifr_weights(target, weight_mode="index").squeeze()
    w0 = ifr_weights(target, weight_mode="index", index_base=0).squeeze()
    assert ifr_weights(target).squeeze()[0].item() == 1.0  # the default never damps DC
    wc = ifr_weights(target, weight_mode="constant").squeeze()
    assert w1[0].item() == pytest.approx(1 / 5) and w0[0].item() == 0.0
    assert w1[2].item() == pytest.approx(3 / 5) and w0[2].item() == pytest.approx(2 / 5)
    assert wc[0].item() == wc[2].item() == pytest.approx(1.0)
    assert torch.equal(w1[[1, 3, 4]], torch.ones(3, dtype=torch.float64))


def test_zero_target_has_no_peaks_and_weights_ignore_pred():
    pred, target = _pair(2, 10, 2)
    assert torch.equal(ifr_weights(torch.zeros(2, 10, 2)), torch.ones(2, 6, 2))
    a = frele_loss(pred, target, delta=1.0)
    pred2 = pred.detach().clone().requires_grad_(True)
    loss = frele_loss(pred2, target, delta=1.0)
    loss.backward()
    torch.testing.assert_close(loss, a)
    w = ifr_weights(target)
    assert w.requires_grad is False


def test_keep_ratio():
    pred, target = _pair(2, 16, 3, dtype=torch.float64)
    torch.testing.assert_close(frele_loss(pred, target, keep_ratio=1.0), frele_loss(pred, target))
    k = 9
    r = 0.5  # keeps ceil(4.5) = 5 bins per series
    amp = torch.fft.rfft(target, dim=1).abs()
    top = amp.topk(math.ceil(r * k), dim=1).indices
    mask = torch.zeros_like(amp).scatter_(1, top, 1.0)
    ferr = (torch.fft.rfft(pred, dim=1) - torch.fft.rfft(target, dim=1)).abs() * ifr_weights(target) * mask
    torch.testing.assert_close(frele_loss(pred, target, keep_ratio=r, delta=1.0), ferr.mean())
    assert int(mask.sum(dim=1).unique().item()) == 5


@pytest.mark.parametrize("bad, kwargs, err", [
    ((torch.zeros(4, 8),), {}, ValueError),
    ((torch.zeros(2, 8, 3), torch.zeros(2, 8, 4)), {}, ValueError),
    ((torch.zeros(2, 8, 3, dtype=torch.long),) * 2, {}, TypeError),
    ((torch.zeros(2, 1, 3),), {}, ValueError),
    ((torch.zeros(2, 8, 3),), {"delta": 1.5}, ValueError),
    ((torch.zeros(2, 8, 3),), {"window": 0}, ValueError),
    ((torch.zeros(2, 8, 3),), {"window": 4}, ValueError),
    ((torch.zeros(2, 8, 3),), {"eta": 0.0}, ValueError),
    ((torch.zeros(2, 8, 3),), {"time_loss": "huber"}, ValueError),
    ((torch.zeros(2, 8, 3),), {"keep_ratio": 0.0}, ValueError),
], ids=["2d", "mismatch", "int", "H1", "delta", "window0", "window-even", "eta", "time_loss", "keep0"])
def test_bad_input_raises(bad, kwargs, err):
    pred = bad[0]
    target = bad[1] if len(bad) > 1 else bad[0].clone()
    with pytest.raises(err) as info:
        frele_loss(pred, target, **kwargs)
    msg = str(info.value)
    assert any(s in msg for s in ("shape", "dtype", "delta", "window", "eta", "time_loss", "keep_ratio"))


def test_fft_runs_on_dim_1():
    target = _pair(2, 12, 3)[1]
    pred = target + 0.5  # a constant offset in time errs only at DC
    fdiff = (torch.fft.rfft(pred, dim=1) - torch.fft.rfft(target, dim=1)).abs()
    assert fdiff[:, 1:].max() < 1e-5 and fdiff[:, 0].min() > 5.0
    w = ifr_weights(target)
    expected = 0.3 * (w[:, 0] * fdiff[:, 0]).sum() / (2 * 7 * 3) + 0.7 * 0.5
    torch.testing.assert_close(frele_loss(pred, target), expected, rtol=1e-5, atol=1e-6)


def test_reduction_none_sum_and_module():
    pred, target = _pair(3, 10, 2, dtype=torch.float64)
    none = frele_loss(pred, target, reduction="none")
    assert none.shape == (3, 10, 2)
    torch.testing.assert_close(none.mean(), frele_loss(pred, target), rtol=0, atol=1e-12)
    torch.testing.assert_close(frele_loss(pred, target, reduction="sum"), none.sum(), rtol=1e-12, atol=1e-12)
    mod = FreLELoss(delta=0.5)
    torch.testing.assert_close(mod(pred, target), frele_loss(pred, target, delta=0.5))
    mod.reduction = "none"  # darts sets the attribute and probes with (2, 2) tensors
    assert mod(torch.zeros(2, 2), torch.ones(2, 2)).shape == (2, 2)
    with pytest.raises(ValueError, match="reduction"):
        FreLELoss(reduction="avg")


def test_batch_order_invariance_and_fp32_matches_fp64():
    pred, target = _pair(5, 24, 3, dtype=torch.float64)
    perm = torch.tensor([3, 0, 4, 1, 2])
    ref = frele_loss(pred, target)
    torch.testing.assert_close(frele_loss(pred[perm], target[perm]), ref, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(frele_loss(pred.float(), target.float()).double(), ref, rtol=1e-5, atol=1e-6)


def test_get_loss_names_and_options():
    pred, target = _pair()
    assert get_loss("efr")(pred, target).item() == pytest.approx(frele_loss(pred, target, ifr=False).item())
    assert get_loss("frele", delta=1.0)(pred, target).item() == pytest.approx(
        frele_loss(pred, target, delta=1.0).item())
    with pytest.raises(ValueError, match="loss"):
        get_loss("l3")
    with pytest.raises(ValueError, match="only accepted"):
        get_loss("mse", delta=0.5)


@pytest.mark.parametrize("fn", [frele_loss, mse_loss, mae_loss, efr_loss, fredf_loss])
def test_empty_batch_is_refused(fn):
    with pytest.raises(ValueError, match=r"at least one series.*\(0, 16, 3\)"):
        fn(torch.zeros(0, 16, 3), torch.zeros(0, 16, 3))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_low_precision_inputs_run_the_spectrum_in_fp32(dtype: torch.dtype) -> None:
    g = torch.Generator().manual_seed(0)
    pred = torch.randn(4, 24, 3, generator=g).to(dtype).requires_grad_()
    target = torch.randn(4, 24, 3, generator=g).to(dtype)
    for fn in (frele_loss, efr_loss, fredf_loss):
        out = fn(pred, target)
        assert out.dtype == torch.float32 and torch.isfinite(out)
        torch.testing.assert_close(out, fn(pred.detach().float(), target.float()))
        (grad,) = torch.autograd.grad(out, pred)
        assert grad.dtype == dtype and bool(torch.isfinite(grad).all())


def test_named_losses_pickle() -> None:
    import pickle

    pred, target = torch.randn(2, 8, 1), torch.randn(2, 8, 1)
    for name in ("efr", "frele", "frele_ortho", "frele_amp", "frele_mse"):
        fn = pickle.loads(pickle.dumps(get_loss(name)))
        torch.testing.assert_close(fn(pred, target), get_loss(name)(pred, target))
    fn = pickle.loads(pickle.dumps(get_loss("frele", delta=0.7)))
    torch.testing.assert_close(fn(pred, target), frele_loss(pred, target, delta=0.7))
    module = pickle.loads(pickle.dumps(FreLELoss(delta=0.2)))
    torch.testing.assert_close(module(pred, target), frele_loss(pred, target, delta=0.2))


def test_index_dc1_weighting_keeps_dc_at_weight_one() -> None:
    t = torch.zeros(1, 16, 1)
    t[0, :, 0] = 3.0 + torch.cos(torch.arange(16) * 2 * math.pi * 3 / 16)  # peaks at DC and bin 3
    base = ifr_weights(t, window=3, weight_mode="index")
    dc1 = ifr_weights(t, window=3)  # the default
    assert base[0, 0, 0] == pytest.approx(1 / 9) and dc1[0, 0, 0] == 1.0
    assert dc1[0, 3, 0] == base[0, 3, 0] == pytest.approx(4 / 9)


SIBLINGS = [mse_loss, mae_loss, efr_loss, fredf_loss, frele_loss]


@pytest.mark.parametrize("fn", SIBLINGS, ids=lambda f: f.__name__)
def test_declared_channels_first_layout_equals_the_default_in_values_and_gradients(fn) -> None:
    pred, target = _pair(b=3, h=12, c=4)
    pred.requires_grad_()
    ref = fn(pred, target)
    (g_ref,) = torch.autograd.grad(ref, pred)
    bch = pred.detach().transpose(1, 2).contiguous().requires_grad_()
    out = fn(bch, target.transpose(1, 2), layout="BCH", horizon=12)
    (g,) = torch.autograd.grad(out, bch)
    torch.testing.assert_close(out, ref)
    torch.testing.assert_close(g, g_ref.transpose(1, 2))


@pytest.mark.parametrize("fn", SIBLINGS, ids=lambda f: f.__name__)
def test_a_channels_first_tensor_is_rejected_once_the_horizon_is_known(fn) -> None:
    pred, target = _pair(b=2, h=24, c=7)
    fn(pred, target, horizon=24)  # the right layout passes
    with pytest.raises(ValueError, match=r"horizon=24 must be the H axis.*declare layout='BCH'"):
        fn(pred.transpose(1, 2), target.transpose(1, 2), horizon=24)
    with pytest.raises(ValueError, match=r"horizon=96 must be the H axis of layout 'BHC'.*holds 24"):
        fn(pred, target, horizon=96)
    with pytest.raises(ValueError, match="layout"):
        fn(pred, target, layout="BTC")


def test_layout_through_the_module_get_loss_and_reduction_none() -> None:
    pred, target = _pair(b=2, h=10, c=3)
    per_point = frele_loss(pred.transpose(1, 2), target.transpose(1, 2), layout="BCH", reduction="none")
    torch.testing.assert_close(per_point, frele_loss(pred, target, reduction="none").transpose(1, 2))
    module = FreLELoss(layout="BCH", horizon=10)
    torch.testing.assert_close(module(pred.transpose(1, 2), target.transpose(1, 2)), frele_loss(pred, target))
    with pytest.raises(ValueError, match="horizon=10"):
        module(pred, target)
    two_d = FreLELoss(layout="BCH", reduction="none")(pred[:, :, 0], target[:, :, 0])
    torch.testing.assert_close(two_d, frele_loss(pred[:, :, :1], target[:, :, :1], reduction="none")[:, :, 0])
    with pytest.raises(ValueError, match="horizon"):
        FreLELoss(horizon=1)
    fn = get_loss("mse", layout="BCH", horizon=10)
    torch.testing.assert_close(fn(pred.transpose(1, 2), target.transpose(1, 2)), mse_loss(pred, target))
    with pytest.raises(ValueError, match="layout"):
        get_loss("mae", layout="CHB")
