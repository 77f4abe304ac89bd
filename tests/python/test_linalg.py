"""The linalg extension's factorizations (cholesky, det, eigh, eigvalsh, inv, qr, slogdet, solve,
svd, svdvals, matrix_norm) and compositions (matrix_power, matrix_rank, pinv) against NumPy on
random batches, on each device; lstsq against PyTorch; einsum and scaled_dot_product_attention against NumPy; and
gradients through solve."""

import math

import numpy as np
import pytest

import ctensor as ct
from conftest import assert_close

L = ct.linalg
TOL = {np.float32: 2e-4, np.float64: 1e-10}
SHAPES = [(4, 4), (3, 5, 5), (2, 1, 3, 3), (0, 3, 3)]


def spd(rng, shape, dtype):
    a = rng.normal(size=shape)
    return (a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", SHAPES)
def test_square_factorizations(dtype, shape, device, rng):
    tol = TOL[dtype]
    a = (rng.normal(size=shape) + 3 * np.eye(shape[-1])).astype(dtype)
    x = ct.asarray(a, device=device)
    assert_close(L.inv(x), np.linalg.inv(a), tol, tol)
    assert_close(L.det(x), np.linalg.det(a), tol, tol)
    sign, logabs = L.slogdet(x)
    s_ref, l_ref = np.linalg.slogdet(a)
    assert_close(sign, s_ref, 0, 0)
    assert_close(logabs, l_ref, tol, tol)
    b = rng.normal(size=shape[:-1] + (2,)).astype(dtype)
    assert_close(L.solve(x, ct.asarray(b, device=device)), np.linalg.solve(a, b), tol, tol)
    s = spd(rng, shape, dtype)
    S = ct.asarray(s, device=device)
    assert_close(L.cholesky(S), np.linalg.cholesky(s), tol, tol)
    assert_close(L.cholesky(S, upper=True), np.swapaxes(np.linalg.cholesky(s), -1, -2), tol, tol)
    w, v = L.eigh(S)
    assert_close(w, np.linalg.eigvalsh(s), tol, tol)
    assert_close(L.eigvalsh(S), np.linalg.eigvalsh(s), tol, tol)
    # eigenvectors are unique up to sign: check a = V diag(w) V^T and V^T V = I
    vn, wn = np.asarray(ct.asnumpy(v), np.float64), np.asarray(ct.asnumpy(w), np.float64)
    np.testing.assert_allclose((vn * wn[..., None, :]) @ np.swapaxes(vn, -1, -2), s, rtol=tol, atol=tol * 10)
    n = shape[-1]
    np.testing.assert_allclose(np.swapaxes(vn, -1, -2) @ vn, np.broadcast_to(np.eye(n), vn.shape), atol=tol * 10)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4), (2, 6, 2)])
def test_qr_svd(dtype, shape, device, rng):
    tol = TOL[dtype]
    a = rng.normal(size=shape).astype(dtype)
    x = ct.asarray(a, device=device)
    for mode in ("reduced", "complete"):
        q, r = L.qr(x, mode=mode)
        q_ref, r_ref = np.linalg.qr(a, mode=mode)
        assert q.shape == q_ref.shape and r.shape == r_ref.shape
        qn, rn = ct.asnumpy(q).astype(np.float64), ct.asnumpy(r).astype(np.float64)
        np.testing.assert_allclose(qn @ rn, a, rtol=tol, atol=tol * 10)
        np.testing.assert_allclose(np.triu(rn), rn, atol=0)
        # Q and R are unique up to the signs of R's diagonal
        assert_close(np.abs(rn), np.abs(r_ref), tol * 10, tol * 10)
    for full in (True, False):
        u, s, vh = L.svd(x, full_matrices=full)
        u_ref, s_ref, vh_ref = np.linalg.svd(a, full_matrices=full)
        assert u.shape == u_ref.shape and vh.shape == vh_ref.shape
        assert_close(s, s_ref, tol, tol)
        k = s_ref.shape[-1]
        un, sn, vn = (ct.asnumpy(t).astype(np.float64) for t in (u, s, vh))
        np.testing.assert_allclose((un[..., :k] * sn[..., None, :]) @ vn[..., :k, :], a, rtol=tol, atol=tol * 10)
    assert_close(L.svdvals(x), np.linalg.svd(a, compute_uv=False), tol, tol)
    with pytest.raises(ValueError, match="mode"):
        L.qr(x, mode="r")


def test_matrix_norms_and_compositions(device, rng):
    a = rng.normal(size=(2, 4, 3))
    x = ct.asarray(a, device=device)
    for ord in ("fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf):
        assert_close(L.matrix_norm(x, ord=ord), np.linalg.norm(a, ord=ord, axis=(-2, -1)), 1e-10, 1e-10)
    assert_close(L.matrix_norm(x, ord=2, keepdims=True), np.linalg.norm(a, ord=2, axis=(-2, -1), keepdims=True),
                 1e-10, 1e-10)
    assert_close(L.norm(x[0], ord="nuc"), np.linalg.norm(a[0], "nuc"), 1e-10, 1e-10)
    assert_close(L.norm(x, ord=1, axis=(0, 2)), np.linalg.norm(a, 1, axis=(0, 2)), 1e-10, 1e-10)
    with pytest.raises(ValueError, match="ord"):
        L.matrix_norm(x, ord=3)
    sq = ct.asarray(a[:, :3, :3], device=device)
    for n in (0, 1, 2, 5, -1, -3):
        assert_close(L.matrix_power(sq, n), np.linalg.matrix_power(a[:, :3, :3], n), 1e-8, 1e-8)
    assert_close(L.matrix_power(ct.asarray(np.full((2, 2), np.nan), device=device), 0), np.eye(2), 0, 0)
    low = a[0] @ rng.normal(size=(3, 5))  # rank 3 of 4 x 5
    assert_close(L.matrix_rank(ct.asarray(low, device=device)), np.linalg.matrix_rank(low), 0, 0)
    assert_close(L.matrix_rank(x), np.linalg.matrix_rank(a), 0, 0)
    assert_close(L.pinv(x), np.linalg.pinv(a), 1e-8, 1e-8)
    assert_close(L.pinv(ct.asarray(low, device=device)), np.linalg.pinv(low), 1e-8, 1e-8)


def test_errors_carry_the_c_message(device):
    singular = ct.asarray(np.ones((3, 3)), device=device)
    with pytest.raises(ValueError, match="solve"):
        L.solve(singular, ct.ones((3, 1), dtype=ct.float64, device=device))
    assert L.det(singular).item() == 0
    with pytest.raises(ValueError, match="cholesky"):
        L.cholesky(ct.asarray(-np.eye(3), device=device))
    with pytest.raises(TypeError):
        L.inv(ct.ones((3, 3), dtype=ct.int64, device=device))
    with pytest.raises(ValueError):
        L.det(ct.ones((2, 3), device=device))


def test_solve_reads_a_2d_right_hand_side_as_matrices(device, rng):
    a = rng.normal(size=(3, 3, 3)) + 3 * np.eye(3)
    b = rng.normal(size=(3, 3))  # a.shape[:-1]: torch reads vectors, the standard a matrix
    r = L.solve(ct.asarray(a, device=device), ct.asarray(b, device=device))
    assert_close(r, np.linalg.solve(a, np.broadcast_to(b, (3, 3, 3))), 1e-10, 1e-10)
    v = rng.normal(size=3)
    assert_close(L.solve(ct.asarray(a, device=device), ct.asarray(v, device=device)),
                 np.linalg.solve(a, np.broadcast_to(v[:, None], (3, 3, 1)))[..., 0], 1e-10, 1e-10)
    with pytest.raises(ValueError):
        L.solve(ct.asarray(a[:2], device=device), ct.asarray(b[:2], device=device))


def test_solve_gradient(device, rng):
    a = rng.normal(size=(3, 3)) + 3 * np.eye(3)
    b = rng.normal(size=(3, 2))
    g = rng.normal(size=(3, 2))
    A, B = ct.asarray(a, device=device), ct.asarray(b, device=device)
    A.requires_grad = True
    B.requires_grad = True
    (L.solve(A, B) * ct.asarray(g, device=device)).sum().backward()
    x = np.linalg.solve(a, b)
    gb = np.linalg.solve(a.T, g)
    assert_close(B.grad, gb, 1e-10, 1e-10)
    assert_close(A.grad, -gb @ x.T, 1e-10, 1e-10)


def test_lstsq(device, rng):
    """torch.linalg.lstsq's four results for each driver the device has, a gradient, and errors."""
    torch = pytest.importorskip("torch")
    a, b = rng.normal(size=(2, 6, 3)), rng.normal(size=(2, 6, 2))
    low = a[0] @ np.diag([1.0, 1.0, 0.0])  # rank 2: the minimum-norm solution
    drivers = ["gels"] if device.type == "cuda" else ["gelsy", "gelsd", "gelss", "gels"]
    for A_np, B_np in ((a, b), (a[0], b[0, :, 0:1])):
        for driver in drivers:
            r = L.lstsq(ct.asarray(A_np, device=device), ct.asarray(B_np, device=device), driver=driver)
            e = torch.linalg.lstsq(torch.from_numpy(A_np), torch.from_numpy(B_np), driver=driver)
            for got, want in zip(r, e):
                assert_close(got, want.numpy(), 1e-9, 1e-9)
            assert r.solution is r[0] and r.singular_values is r[3]
    # Rank-deficient: NumPy is the oracle. Debian's torch 1.13 leaves gelsy's pivot array
    # uninitialized, so its rank and solution there depend on earlier calls (pytorch#71222).
    x_ref, _, rank_ref, s_ref = np.linalg.lstsq(low, b[0], rcond=None)
    for driver in drivers[:3] if device.type == "cpu" else []:
        r = L.lstsq(ct.asarray(low, device=device), ct.asarray(b[0], device=device), driver=driver)
        assert_close(r.solution, x_ref, 1e-9, 1e-9)
        assert_close(r.rank, rank_ref, 0, 0)
        if driver != "gelsy":
            assert_close(r.singular_values, s_ref, 1e-9, 1e-9)
    with pytest.raises(ValueError, match="rank"):  # gels (QR) needs full rank
        L.lstsq(ct.asarray(low, device=device), ct.asarray(b[0], device=device), driver="gels")
    A = ct.asarray(a, device=device)
    A.requires_grad = True
    B = ct.asarray(b, device=device)
    x = L.lstsq(A, B).solution
    x.sum().backward()
    ta = torch.from_numpy(a).requires_grad_(True)
    torch.linalg.lstsq(ta, torch.from_numpy(b)).solution.sum().backward()
    assert_close(A.grad, ta.grad.numpy(), 1e-9, 1e-9)
    # rcond: None is torch's default; a large one cuts the smallest singular value
    if device.type == "cpu":
        for rcond in (None, 0.0, 0.9):
            r = L.lstsq(ct.asarray(a[0], device=device), ct.asarray(b[0], device=device), rcond,
                        driver="gelsd")
            e = torch.linalg.lstsq(torch.from_numpy(a[0]), torch.from_numpy(b[0]), rcond, driver="gelsd")
            assert_close(r.rank, e.rank.numpy(), 0, 0)
            assert_close(r.solution, e.solution.numpy(), 1e-9, 1e-9)
    with pytest.raises(ValueError, match="driver"):
        L.lstsq(A, B, driver="nope")
    with pytest.raises(ValueError):
        L.lstsq(A, ct.asarray(b[:, :5], device=device))


def test_einsum_and_attention(device, rng):
    a, b = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 4, 5))
    A, B = ct.asarray(a, device=device), ct.asarray(b, device=device)
    assert_close(ct.einsum("bij,bjk->bik", A, B), np.einsum("bij,bjk->bik", a, b), 1e-12, 1e-12)
    assert_close(ct.einsum("bij,bjk->bik", [A, B]), np.einsum("bij,bjk->bik", a, b), 1e-12, 1e-12)
    assert_close(ct.einsum("bii->b", ct.asarray(a[:, :3, :3], device=device)),
                 np.einsum("bii->b", a[:, :3, :3]), 1e-12, 1e-12)
    assert_close(ct.einsum("...ij->...ji", A), np.einsum("...ij->...ji", a), 0, 0)
    with pytest.raises(ValueError, match="einsum"):
        ct.einsum("ij,jk->ik", A, B)
    q, k, v = (rng.normal(size=s).astype(np.float32) for s in ((2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 4)))
    Q, K, V = (ct.asarray(t, device=device) for t in (q, k, v))
    sdpa = ct.nn.functional.scaled_dot_product_attention
    assert_close(sdpa(Q, K, V), attention_reference(q, k, v), 1e-5, 1e-5)
    mask = rng.uniform(size=(5, 7)) > 0.3
    mask[:, 0] = True
    assert_close(sdpa(Q, K, V, attn_mask=ct.asarray(mask, device=device)),
                 attention_reference(q, k, v, mask=mask), 1e-5, 1e-5)
    kq = ct.asarray(q, device=device)
    causal = np.tril(np.ones((5, 5), bool))
    assert_close(sdpa(kq, kq, kq, is_causal=True, scale=0.5),
                 attention_reference(q, q, q, mask=causal, scale=0.5), 1e-5, 1e-5)
    with pytest.raises(ValueError):
        sdpa(Q, K, ct.asarray(v[..., :6, :], device=device))


def attention_reference(q, k, v, mask=None, scale=None):
    """softmax(scale q k^T, masked) v in float64 (torch's formula)."""
    q, k, v = (t.astype(np.float64) for t in (q, k, v))
    s = (1 / math.sqrt(q.shape[-1]) if scale is None else scale) * q @ np.swapaxes(k, -1, -2)
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ v


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_cross(dtype, device, rng):
    a = (rng.normal(size=(4, 3)) * 4).astype(dtype)
    b = (rng.normal(size=(2, 1, 3)) * 4).astype(dtype)
    r = L.cross(ct.asarray(a, device=device), ct.asarray(b, device=device))
    assert r.dtype == ct.asarray(a).dtype
    assert_close(r, np.cross(a, b), 1e-5, 1e-5)
    c = rng.normal(size=(3, 5))
    assert_close(L.cross(ct.asarray(c, device=device), ct.asarray(c[::-1].copy(), device=device),
                         axis=0), np.cross(c, c[::-1], axis=0), 1e-12, 1e-12)
    with pytest.raises(ValueError, match="expected 3"):
        L.cross(ct.asarray(a[:, :2], device=device), ct.asarray(a[:, :2], device=device))
