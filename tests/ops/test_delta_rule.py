"""The delta-rule ops: chunk == recurrent == T decode steps (outputs, states, all grads), padding, KLA identities."""

from __future__ import annotations

import pytest
import torch

from paperlab.ops import delta_rule_chunk, delta_rule_recurrent, delta_rule_step, kla_beta

SHAPES = [(1, 1, 1, 4, 6), (2, 63, 3, 8, 12), (1, 100, 2, 16, 8), (1, 257, 1, 8, 4)]
IDS = [f"B{b}-T{t}-H{h}-K{k}-V{v}" for b, t, h, k, v in SHAPES]


def make_inputs(B, T, H, K, V, *, dtype=torch.float64, seed=0, raw_k=True, grad=True):
    """Random inputs with KLA's step size (raw keys, beta = eta / (||k||^2 + eps)) and a nonzero initial state."""
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(B, T, H, K, generator=gen, dtype=torch.float64)
    q = q / q.norm(dim=-1, keepdim=True)
    k = torch.randn(B, T, H, K, generator=gen, dtype=torch.float64)
    k = k / k.norm(dim=-1, keepdim=True)
    if raw_k:  # raw keys with norms in [0.5, 2]: KLA's beta then ranges over [eta / 4, 4 eta]
        k = k * (0.5 + 1.5 * torch.rand(B, T, H, 1, generator=gen, dtype=torch.float64))
    v = torch.randn(B, T, H, V, generator=gen, dtype=torch.float64)
    g = -torch.rand(B, T, H, generator=gen, dtype=torch.float64) * 0.3
    eta = torch.rand(B, T, H, generator=gen, dtype=torch.float64) * 0.9 + 0.05
    beta = kla_beta(eta, k)
    h0 = torch.randn(B, H, K, V, generator=gen, dtype=torch.float64) * 0.5
    out = [t.to(dtype) for t in (q, k, v, g, beta, h0)]
    if grad:
        out = [t.requires_grad_() for t in out]
    return out


def run_with_grads(fn, inputs, cot, **kw):
    q, k, v, g, beta, h0 = inputs
    o, S = fn(q, k, v, g, beta, initial_state=h0, output_final_state=True, **kw)
    loss = (o * cot[0]).sum() + (S * cot[1]).sum()
    return o, S, torch.autograd.grad(loss, inputs)


@pytest.mark.parametrize("chunk_size", [16, 32, 64])
@pytest.mark.parametrize("shape", SHAPES, ids=IDS)
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["fp64", "fp32"])
def test_chunk_matches_recurrent_with_grads(shape, chunk_size, dtype):
    B, T, H, K, V = shape
    inputs = make_inputs(*shape, dtype=dtype, seed=T + chunk_size)
    gen = torch.Generator().manual_seed(1)
    cot = (torch.randn(B, T, H, V, generator=gen).to(dtype), torch.randn(B, H, K, V, generator=gen).to(dtype))
    o1, S1, g1 = run_with_grads(delta_rule_recurrent, inputs, cot)
    o2, S2, g2 = run_with_grads(delta_rule_chunk, inputs, cot, chunk_size=chunk_size)
    tol = {"atol": 1e-10, "rtol": 0} if dtype == torch.float64 else {"atol": 1e-5, "rtol": 1e-5}
    assert o2.dtype == dtype and S2.dtype == dtype
    torch.testing.assert_close(o2, o1, **tol)
    torch.testing.assert_close(S2, S1, **tol)
    for name, a, b in zip(("q", "k", "v", "g", "beta", "initial_state"), g2, g1, strict=True):
        torch.testing.assert_close(a, b, **tol, msg=lambda m, n=name: f"grad {n}: {m}")


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["fp64", "fp32"])
def test_chunk_strong_and_weak_decays_take_both_paths_and_match(dtype, monkeypatch):
    """Chunks whose total decay exceeds the factoring limit use the exact in-chunk path; both agree with the
    recurrence (outputs, state, grads) when one call mixes them, chunk by chunk."""
    from paperlab.ops.delta_rule import chunk as chunk_mod

    B, T, H, K, V, C = 1, 64, 2, 8, 6, 16
    q, k, v, g, beta, h0 = make_inputs(B, T, H, K, V, dtype=torch.float64, grad=False)
    g = g.clone()
    g[:, 16:32] *= 30.0  # the second chunk decays by up to ~140 in total, beyond e^{-gam} fp32 safety
    inputs = [t.to(dtype).requires_grad_() for t in (q, k, v, g, beta, h0)]
    calls = {"_intra_factored": 0, "_intra_exact": 0}

    def counting(name, fn):
        def spy(*args, **kwargs):
            calls[name] += 1
            return fn(*args, **kwargs)
        return spy

    for name in calls:
        monkeypatch.setattr(chunk_mod, name, counting(name, getattr(chunk_mod, name)))
    monkeypatch.setattr(chunk_mod, "GROUP_MATRICES", B * H)  # one chunk per group: the path is chosen per chunk
    gen = torch.Generator().manual_seed(1)
    cot = (torch.randn(B, T, H, V, generator=gen).to(dtype), torch.randn(B, H, K, V, generator=gen).to(dtype))
    o1, S1, g1 = run_with_grads(delta_rule_recurrent, inputs, cot)
    o2, S2, g2 = run_with_grads(delta_rule_chunk, inputs, cot, chunk_size=C)
    assert calls == {"_intra_factored": 3, "_intra_exact": 1}
    tol = {"atol": 1e-10, "rtol": 0} if dtype == torch.float64 else {"atol": 1e-5, "rtol": 1e-5}
    torch.testing.assert_close(o2, o1, **tol)
    torch.testing.assert_close(S2, S1, **tol)
    for name, a, b in zip(("q", "k", "v", "g", "beta", "initial_state"), g2, g1, strict=True):
        torch.testing.assert_close(a, b, **tol, msg=lambda m, n=name: f"grad {n}: {m}")


def test_gradcheck_chunk_and_recurrent():
    inputs = make_inputs(1, 5, 1, 3, 2, seed=3)
    for fn in (delta_rule_recurrent, delta_rule_chunk):
        def f(q, k, v, g, beta, h0, fn=fn):
            kw = {"chunk_size": 2} if fn is delta_rule_chunk else {}
            return fn(q, k, v, g, beta, initial_state=h0, output_final_state=True, **kw)
        assert torch.autograd.gradcheck(f, tuple(inputs), atol=1e-8, fast_mode=True)


def test_chunk_without_initial_state_and_low_precision_input():
    q, k, v, g, beta, _ = make_inputs(2, 37, 2, 8, 8, grad=False)
    o1, S1 = delta_rule_recurrent(q, k, v, g, beta, output_final_state=True)
    o2, S2 = delta_rule_chunk(q.float(), k.float(), v.bfloat16(), g.float(), beta.float(), output_final_state=True)
    assert o2.dtype == torch.bfloat16 and S2.dtype == torch.float32  # state stays fp32
    torch.testing.assert_close(S2.double(), S1, atol=2e-2, rtol=2e-2)
    o3, S3 = delta_rule_chunk(q, k, v, g, beta)
    assert S3 is None
    torch.testing.assert_close(o3, o1, atol=1e-10, rtol=0)


def test_steps_equal_recurrent_and_split_equals_one_pass():
    q, k, v, g, beta, h0 = make_inputs(2, 40, 2, 6, 5, grad=False)
    o_ref, S_ref = delta_rule_recurrent(q, k, v, g, beta, initial_state=h0, output_final_state=True)
    S, outs = h0, []
    for t in range(q.shape[1]):
        o_t, S = delta_rule_step(q[:, t], k[:, t], v[:, t], g[:, t], beta[:, t], S)
        outs.append(o_t)
    torch.testing.assert_close(torch.stack(outs, 1), o_ref, atol=1e-12, rtol=0)
    torch.testing.assert_close(S, S_ref, atol=1e-12, rtol=0)
    for fn in (delta_rule_recurrent, delta_rule_chunk):
        oa, Sa = fn(q[:, :17], k[:, :17], v[:, :17], g[:, :17], beta[:, :17], initial_state=h0,
                    output_final_state=True)
        ob, Sb = fn(q[:, 17:], k[:, 17:], v[:, 17:], g[:, 17:], beta[:, 17:], initial_state=Sa,
                    output_final_state=True)
        torch.testing.assert_close(torch.cat([oa, ob], 1), o_ref, atol=1e-11, rtol=0)
        torch.testing.assert_close(Sb, S_ref, atol=1e-11, rtol=0)


@pytest.mark.parametrize("fn", [delta_rule_recurrent, delta_rule_chunk], ids=["recurrent", "chunk"])
def test_padded_batch_equals_separate_runs(fn):
    q, k, v, g, beta, h0 = make_inputs(3, 21, 2, 4, 3, grad=False)
    mask = torch.ones(3, 21, dtype=torch.bool)
    mask[0, :5] = False  # left padding
    mask[1, 10:13] = False  # a gap
    mask[2, 20] = False  # padding in the last chunk
    o, S = fn(q, k, v, g, beta, initial_state=h0, output_final_state=True, mask=mask)
    for b in range(3):
        keep = mask[b]
        ob, Sb = fn(q[b:b + 1, keep], k[b:b + 1, keep], v[b:b + 1, keep], g[b:b + 1, keep], beta[b:b + 1, keep],
                    initial_state=h0[b:b + 1], output_final_state=True)
        torch.testing.assert_close(o[b:b + 1, keep], ob, atol=1e-11, rtol=0)
        torch.testing.assert_close(S[b:b + 1], Sb, atol=1e-11, rtol=0)
    # An all-padding call leaves the state exactly as it was.
    _, S_pad = fn(q, k, v, g, beta, initial_state=h0, output_final_state=True, mask=torch.zeros(3, 21))
    assert torch.equal(S_pad, h0)


def test_step_mask_keeps_state():
    q, k, v, g, beta, h0 = make_inputs(2, 1, 2, 4, 3, grad=False)
    _, S = delta_rule_step(q[:, 0], k[:, 0], v[:, 0], g[:, 0], beta[:, 0], h0, mask=torch.tensor([True, False]))
    assert torch.equal(S[1], h0[1]) and not torch.equal(S[0], h0[0])


def test_kla_equals_gdn_with_unit_keys():
    """KLA(q, k, v, eta, g) == GDN(q, k/||k||, v/||k||, eta ||k||^2/(||k||^2 + eps), g) (spec, reparametrisation)."""
    q, k, v, g, _, h0 = make_inputs(2, 30, 2, 5, 4, grad=False)
    eta = torch.rand(2, 30, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(5))
    eps = 1e-6
    norm = k.norm(dim=-1)
    o1, S1 = delta_rule_recurrent(q, k, v, g, kla_beta(eta, k, eps=eps), initial_state=h0, output_final_state=True)
    beta_gdn = eta * norm**2 / (norm**2 + eps)
    o2, S2 = delta_rule_recurrent(q, k / norm[..., None], v / norm[..., None], g, beta_gdn, initial_state=h0,
                                  output_final_state=True)
    torch.testing.assert_close(o1, o2, atol=1e-12, rtol=0)
    torch.testing.assert_close(S1, S2, atol=1e-12, rtol=0)


def test_kaczmarz_step_projects_and_relaxes():
    q, k, v, g, _, h0 = make_inputs(2, 1, 3, 6, 4, grad=False)
    q, k, v, g = q[:, 0], k[:, 0], v[:, 0], g[:, 0]
    # eta = 1, g = 0, tiny eps: after the step S^T k = v exactly (a Kaczmarz projection).
    ones = torch.ones(2, 3, dtype=torch.float64)
    _, S = delta_rule_step(q, k, v, torch.zeros_like(g), kla_beta(ones, k, eps=1e-30), h0)
    torch.testing.assert_close(torch.einsum("bhkv,bhk->bhv", S, k), v, atol=1e-12, rtol=0)
    # General case: S^T k = (1 - eta') alpha S0^T k + eta' v with eta' = eta ||k||^2 / (||k||^2 + eps).
    eta, eps = 0.3 * ones, 0.1
    _, S = delta_rule_step(q, k, v, g, kla_beta(eta, k, eps=eps), h0)
    k2 = k.square().sum(-1)
    eta_p = (eta * k2 / (k2 + eps))[..., None]
    want = (1 - eta_p) * g.exp()[..., None] * torch.einsum("bhkv,bhk->bhv", h0, k) + eta_p * v
    torch.testing.assert_close(torch.einsum("bhkv,bhk->bhv", S, k), want, atol=1e-12, rtol=0)


TINY = torch.finfo(torch.float32).tiny  # the smallest eps kla_beta takes; k2 + TINY == k2 in fp64 here


def test_scaling_keys_in_kla_equals_scaling_values():
    q, k, v, g, _, h0 = make_inputs(1, 12, 2, 4, 3, grad=False)
    eta = torch.full((1, 12, 2), 0.7, dtype=torch.float64)
    c = 3.7
    o1, _ = delta_rule_recurrent(q, c * k, v, g, kla_beta(eta, c * k, eps=TINY), initial_state=h0)
    o2, _ = delta_rule_recurrent(q, k, v / c, g, kla_beta(eta, k, eps=TINY), initial_state=h0)
    torch.testing.assert_close(o1, o2, atol=1e-12, rtol=0)


def test_transition_is_contractive_and_no_norm_blows_up():
    gen = torch.Generator().manual_seed(0)
    k = torch.randn(50, 8, generator=gen, dtype=torch.float64)
    kh = k / k.norm(dim=-1, keepdim=True)
    eta_p = torch.linspace(0, 2, 50, dtype=torch.float64)
    alpha = torch.rand(50, dtype=torch.float64, generator=gen)
    M = alpha[:, None, None] * (torch.eye(8, dtype=torch.float64) - eta_p[:, None, None] * kh[:, :, None] * kh[:, None])
    assert torch.linalg.matrix_norm(M, ord=2).max() <= 1 + 1e-12
    # no_norm (beta = eta) with ||k|| = 10: I - 0.5 * 100 k^ k^T has an eigenvalue -49, so S explodes.
    q, k, v, _, _, _ = make_inputs(1, 20, 1, 4, 4, grad=False, raw_k=False)
    _, S = delta_rule_recurrent(q, 10 * k, v, torch.zeros(1, 20, 1, dtype=torch.float64),
                                torch.full((1, 20, 1), 0.5, dtype=torch.float64), output_final_state=True)
    assert S.norm() > 1e10


def test_kla_beta_fp32_from_bf16_keys():
    k = torch.randn(2, 3, 4, 16, dtype=torch.bfloat16)
    eta = torch.rand(2, 3, 4, dtype=torch.bfloat16)
    beta = kla_beta(eta, k)
    assert beta.dtype == torch.float32
    torch.testing.assert_close(beta, eta.float() / (k.float().square().sum(-1) + 1e-6))
    with pytest.raises(ValueError, match="eta must have the shape"):
        kla_beta(eta[..., :2], k)


def test_bad_inputs_raise_value_error_naming_argument():
    q, k, v, g, beta, h0 = make_inputs(1, 4, 2, 3, 5, grad=False)
    for fn in (delta_rule_recurrent, delta_rule_chunk):
        with pytest.raises(ValueError, match=r"k must have the shape of q.*k=\(1, 4, 2, 4\)"):
            fn(q, torch.randn(1, 4, 2, 4, dtype=torch.float64), v, g, beta)
        with pytest.raises(ValueError, match="v must have 4 dims"):
            fn(q, k, v[0], g, beta)
        with pytest.raises(ValueError, match="g is a log decay and must be <= 0"):
            fn(q, k, v, -g, beta)
        with pytest.raises(ValueError, match="beta must have a floating dtype"):
            fn(q, k, v, g, torch.ones(1, 4, 2, dtype=torch.long))
        with pytest.raises(ValueError, match="beta must be"):
            fn(q, k, v, g, beta[:, :3])
        with pytest.raises(ValueError, match="initial_state must be"):
            fn(q, k, v, g, beta, initial_state=h0[..., :4])
        with pytest.raises(ValueError, match="mask must be"):
            fn(q, k, v, g, beta, mask=torch.ones(1, 3))
        with pytest.raises(ValueError, match="scale must be"):
            fn(q, k, v, g, beta, scale=-1.0)
    for bad in (0, -3, 2.0):
        with pytest.raises(ValueError, match="chunk_size must be an int >= 1"):
            delta_rule_chunk(q, k, v, g, beta, chunk_size=bad)
    with pytest.raises(ValueError, match="backend="):
        delta_rule_chunk(q, k, v, g, beta, backend="triton")
    with pytest.raises(ValueError, match="state must be"):
        delta_rule_step(q[:, 0], k[:, 0], v[:, 0], g[:, 0], beta[:, 0], h0[:, :1])


@pytest.mark.gpu
def test_fla_backend_matches_reference_on_cuda():
    pytest.importorskip("fla")
    from paperlab.ops.delta_rule.fla import fla_available

    if not fla_available():
        pytest.skip("fla does not import on this machine")
    B, T, H, K, V = 2, 100, 2, 64, 64
    inputs = [t.detach() for t in make_inputs(B, T, H, K, V, grad=False)]
    q, k, v, g, beta, h0 = (t.cuda() for t in inputs)
    o_ref, S_ref = delta_rule_recurrent(q, k, v, g, beta, initial_state=h0, output_final_state=True)
    for dtype, tol in ((torch.float32, 2e-3), (torch.bfloat16, 5e-2)):
        args = [t.to(dtype) for t in (q, k, v)] + [g.float(), beta.float()]
        o, S = delta_rule_chunk(*args, initial_state=h0.float(), output_final_state=True, backend="fla")
        rel = (o.double() - o_ref).norm() / o_ref.norm()
        assert rel < tol, f"{dtype}: relative error {rel:.3g}"
        assert (S.double() - S_ref).norm() / S_ref.norm() < tol
    # auto selects fla for CUDA fp32 inputs (same numbers as the forced call)
    o_auto, _ = delta_rule_chunk(*(t.float() for t in (q, k, v, g, beta)), initial_state=h0.float())
    o_fla, _ = delta_rule_chunk(*(t.float() for t in (q, k, v, g, beta)), initial_state=h0.float(), backend="fla")
    assert torch.equal(o_auto, o_fla)


def test_chunk_inference_path_equals_autograd_path():
    """Without a graph the op overwrites temporaries in place; it must give the same numbers as with one."""
    gen = torch.Generator().manual_seed(3)
    B, T, H, K, V = 2, 150, 2, 16, 8
    q, k = torch.randn(B, T, H, K, generator=gen), torch.randn(B, T, H, K, generator=gen)
    v, h0 = torch.randn(B, T, H, V, generator=gen), torch.randn(B, H, K, V, generator=gen)
    g, beta = -torch.rand(B, T, H, generator=gen), torch.rand(B, T, H, generator=gen)
    with torch.no_grad():
        o_ng, s_ng = delta_rule_chunk(q, k, v, g, beta, initial_state=h0, output_final_state=True, chunk_size=32)
    o_g, s_g = delta_rule_chunk(q.requires_grad_(), k, v, g, beta, initial_state=h0, output_final_state=True,
                                chunk_size=32)
    assert o_g.requires_grad and torch.equal(o_ng, o_g.detach()) and torch.equal(s_ng, s_g.detach())


@pytest.mark.parametrize("C", [1, 2, 5, 16, 17, 33, 64, 100])
def test_unit_lower_inverse_matches_linalg_and_ignores_upper_part(C):
    from paperlab.ops.delta_rule.triangular import unit_lower_inverse

    gen = torch.Generator().manual_seed(C)
    A = torch.randn(3, 2, C, C, generator=gen, dtype=torch.float64) * 0.3  # upper part and diagonal: ignored
    expected = torch.linalg.inv(torch.eye(C, dtype=torch.float64) + A.tril(-1))
    torch.testing.assert_close(unit_lower_inverse(A), expected, atol=1e-10, rtol=0)
    if C in (5, 33):  # Neumann blocks alone, and blocks merged with padding
        assert torch.autograd.gradcheck(unit_lower_inverse, (A[0, 0].clone().requires_grad_(),), fast_mode=True)


@pytest.mark.parametrize("C", [1, 3, 16, 20, 64])
def test_unit_lower_solve_matches_triangular_solve_with_gradients(C):
    from paperlab.ops.delta_rule.triangular import unit_lower_solve

    gen = torch.Generator().manual_seed(C)
    A = (torch.randn(2, 3, C, C, generator=gen, dtype=torch.float64) * 0.3).requires_grad_()
    R = torch.randn(2, 3, C, 5, generator=gen, dtype=torch.float64, requires_grad=True)
    cot = torch.randn(2, 3, C, 5, generator=gen, dtype=torch.float64)
    X = unit_lower_solve(A, R)
    L = torch.eye(C, dtype=torch.float64) + A.tril(-1)
    expected = torch.linalg.solve_triangular(L, R, upper=False, unitriangular=True)
    torch.testing.assert_close(X, expected, atol=1e-10, rtol=0)
    got = torch.autograd.grad((X * cot).sum(), (A, R))
    want = torch.autograd.grad((expected * cot).sum(), (A, R))
    for a, b in zip(got, want, strict=True):
        torch.testing.assert_close(a, b, atol=1e-10, rtol=0)
    assert torch.count_nonzero(got[0].triu()) == 0  # diagonal and upper part are not read
    if C in (3, 20):
        assert torch.autograd.gradcheck(unit_lower_solve, (A[0, 0].detach().clone().requires_grad_(),
                                                           R[0, 0].detach().clone().requires_grad_()))


def test_unit_lower_solve_rejects_bad_shapes():
    from paperlab.ops.delta_rule.triangular import unit_lower_solve

    with pytest.raises(ValueError, match="A must be"):
        unit_lower_solve(torch.zeros(2, 3, 4), torch.zeros(2, 3, 1))
    with pytest.raises(ValueError, match="R must be"):
        unit_lower_solve(torch.zeros(2, 4, 4), torch.zeros(2, 5, 1))


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.detach().double() - b.detach().double()).norm() / b.detach().double().norm())


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["fp64", "fp32"])
@pytest.mark.parametrize("case", ["reset", "reset-at-chunk-start", "reset-first-token", "overflowing-cumsum"])
def test_hard_resets_and_overflowing_decays_match_recurrent(case, dtype):
    """g = -inf (a hard reset, allowed by g <= 0) and in-chunk cumsums that overflow (g = -1e38) make the state
    forget exactly; the chunk form must agree with the recurrence and the steps, gradients included."""
    B, T, H, K, V, C = 2, 48, 2, 8, 6, 16
    q, k, v, g, beta, h0 = make_inputs(B, T, H, K, V, grad=False)
    g = g.clone()
    if case == "overflowing-cumsum":
        g[:, 20:24] = -1e38
    else:
        g[0, {"reset": 21, "reset-at-chunk-start": 16, "reset-first-token": 0}[case], 1] = -float("inf")
    inputs = [t.to(dtype).requires_grad_() for t in (q, k, v, g, beta, h0)]
    gen = torch.Generator().manual_seed(1)
    cot = (torch.randn(B, T, H, V, generator=gen).to(dtype), torch.randn(B, H, K, V, generator=gen).to(dtype))
    o1, S1, g1 = run_with_grads(delta_rule_recurrent, inputs, cot)
    o2, S2, g2 = run_with_grads(delta_rule_chunk, inputs, cot, chunk_size=C)
    assert all(torch.isfinite(t).all() for t in (o1, S1, *g1))
    tol = {"atol": 1e-10, "rtol": 0} if dtype == torch.float64 else {"atol": 1e-5, "rtol": 1e-5}
    torch.testing.assert_close(o2, o1, **tol)
    torch.testing.assert_close(S2, S1, **tol)
    for name, a, b in zip(("q", "k", "v", "g", "beta", "initial_state"), g2, g1, strict=True):
        torch.testing.assert_close(a, b, **tol, msg=lambda m, n=name: f"grad {n}: {m}")
    with torch.no_grad():  # prefill the first 30 tokens chunkwise, decode the rest: the full pass again
        o_pre, S = delta_rule_chunk(*(t[:, :30] for t in inputs[:5]), initial_state=inputs[5],
                                    output_final_state=True, chunk_size=C)
        outs = [o_pre]
        for t in range(30, T):
            o_t, S = delta_rule_step(*(x[:, t] for x in inputs[:5]), S)
            outs.append(o_t[:, None])
    torch.testing.assert_close(torch.cat(outs, 1), o1.detach(), **tol)


@pytest.mark.parametrize("decay", [30.0, 59.0, 61.0, 200.0])
@pytest.mark.parametrize("norm", [1.0, 1e5, 1e10, 1e15])
def test_huge_keys_near_the_decay_threshold_match_recurrent_in_fp32(norm, decay):
    """Raw KLA keys of any norm (beta = eta / ||k||^2 shrinks as they grow) with a chunk decay near the limit
    where the decay matrix is factored: the chunk form stays finite and agrees with the recurrence."""
    B, T, H, K, V, C = 1, 48, 2, 8, 6, 16
    q, k, v, _, _, h0 = make_inputs(B, T, H, K, V, grad=False)
    k = k * norm
    beta = kla_beta(torch.full((B, T, H), 0.7, dtype=torch.float64), k)
    g = torch.full((B, T, H), -decay / C, dtype=torch.float64)
    h0 = h0 / norm  # a state of the scale the keys write (S^T k ~ v)
    inputs = [t.float().requires_grad_() for t in (q, k, v, g, beta, h0)]
    gen = torch.Generator().manual_seed(2)
    cot = (torch.randn(B, T, H, V, generator=gen), torch.randn(B, H, K, V, generator=gen) * norm)
    ref = run_with_grads(delta_rule_recurrent, [t.detach().double().requires_grad_() for t in inputs],
                         [c.double() for c in cot])
    got = run_with_grads(delta_rule_chunk, inputs, cot, chunk_size=C)
    assert _rel(got[0], ref[0]) < 1e-5 and _rel(got[1], ref[1]) < 1e-5, (_rel(got[0], ref[0]), _rel(got[1], ref[1]))
    for name, a, b in zip(("q", "k", "v", "g", "beta", "initial_state"), got[2], ref[2], strict=True):
        assert torch.isfinite(a).all() and _rel(a, b) < 1e-4, (name, _rel(a, b))


def test_nan_decay_is_rejected():
    q, k, v, g, beta, h0 = make_inputs(1, 4, 2, 3, 5, grad=False)
    g = g.clone()
    g[0, 1, 0] = float("nan")
    for fn in (delta_rule_recurrent, delta_rule_chunk):
        with pytest.raises(ValueError, match="g is a log decay and must be <= 0.*NaN"):
            fn(q, k, v, g, beta)
    with pytest.raises(ValueError, match="g is a log decay"):
        delta_rule_step(q[:, 1], k[:, 1], v[:, 1], g[:, 1], beta[:, 1], h0)


def test_resets_never_reach_the_fla_kernel(monkeypatch):
    """fla subtracts in-chunk cumsums: "auto" sends decays below FLA_MIN_G to the exact PyTorch path and a forced
    backend="fla" refuses them (checked with a stand-in kernel, so this runs without CUDA)."""
    from paperlab.ops.delta_rule import chunk as chunk_mod

    calls = []
    monkeypatch.setattr(chunk_mod, "_fla_applies", lambda q: True)
    monkeypatch.setattr(chunk_mod, "delta_rule_fla", lambda *a, **kw: calls.append(1) or (a[2].clone(), None))
    q, k, v, g, beta, _ = make_inputs(1, 8, 2, 4, 3, grad=False)
    delta_rule_chunk(q, k, v, g, beta)
    assert calls == [1]
    g = g.clone()
    g[0, 3, 1] = -float("inf")
    o, _ = delta_rule_chunk(q, k, v, g, beta)
    torch.testing.assert_close(o, delta_rule_recurrent(q, k, v, g, beta)[0], atol=1e-10, rtol=0)
    assert calls == [1]
    with pytest.raises(ValueError, match=r"backend='fla' needs g >= FLA_MIN_G"):
        delta_rule_chunk(q, k, v, g, beta, backend="fla")


@pytest.mark.parametrize("fn", [delta_rule_recurrent, delta_rule_chunk], ids=["recurrent", "chunk"])
def test_empty_batch_gives_empty_outputs(fn):
    q, k, v, g, beta, h0 = make_inputs(2, 5, 2, 4, 3, grad=False)
    o, S = fn(q[:0], k[:0], v[:0], g[:0], beta[:0], initial_state=h0[:0], output_final_state=True)
    assert o.shape == (0, 5, 2, 3) and S.shape == (0, 2, 4, 3)


def test_keys_whose_squared_norm_overflows_are_refused():
    """Past ||k|| ~ 1.8e19 in fp32, ||k||^2 is inf: beta = eta / ||k||^2 was 0 and the output silently 87-100% off
    (key gradients NaN) in every form; now each op and kla_beta names k and the overflow."""
    q, k, v, g, _, h0 = make_inputs(1, 6, 2, 4, 3, grad=False)
    q, k, v, g, h0 = (t.float() for t in (q, k, v, g, h0))
    k = k * 1e20
    beta = torch.full(g.shape, 1e-3)
    with pytest.raises(ValueError, match=r"k: the squared key norm overflows torch.float32"):
        kla_beta(torch.full(g.shape, 0.5), k)
    for fn in (delta_rule_recurrent, delta_rule_chunk):
        with pytest.raises(ValueError, match=r"k: the squared key norm overflows"):
            fn(q, k, v, g, beta)
    with pytest.raises(ValueError, match=r"k: the squared key norm overflows"):
        delta_rule_step(q[:, 0], k[:, 0], v[:, 0], g[:, 0], beta[:, 0], h0)
    ok = kla_beta(torch.full(g.shape, 0.5), k.double())  # fp64 holds these norms
    assert torch.isfinite(ok).all() and (ok > 0).all()
