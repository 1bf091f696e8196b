"""okl.projections against scipy.optimize, the NumPy twins and the closed forms of the paper."""
import numpy as np
import pytest
from scipy.optimize import minimize

from okl import projections as P
from okl._numpy import projections as N

RNG_SEEDS = range(60)


def instance(seed, d_max=12):
    """A random (v, a, b, beta), varied in scale so that every case of the KKT split occurs."""
    rng = np.random.default_rng(seed)
    d = int(rng.integers(2, d_max))
    v = rng.normal(size=d) * rng.uniform(0.1, 5.0)
    a = rng.normal(size=d)
    if seed % 3 == 0:
        a[rng.random(d) < 0.5] = 0.0           # sparse a, as a text row
        a[0] = 1.0
    return v, a, float(rng.normal() * 2.0), float(rng.uniform(0.1, 3.0))


def slsqp(v, constraints, l1_ball=None):
    """min 1/2 ||w - v||^2 under `constraints` on w; with l1_ball = beta, also
    ||w||_1 <= beta, written smoothly over (w, t): -t <= w <= t, sum t <= beta."""
    d = len(v)
    fun = lambda z: 0.5 * np.sum((z[:d] - v) ** 2)
    jac = lambda z: np.concatenate([z[:d] - v, np.zeros(len(z) - d)])
    z0 = v
    if l1_ball is not None:
        z0 = np.concatenate([v, np.abs(v)])
        constraints = [{"type": "ineq", "fun": (lambda z, c=c: c["fun"](z[:d]))}
                       for c in constraints] + [
            {"type": "ineq", "fun": lambda z: z[d:] - z[:d]},
            {"type": "ineq", "fun": lambda z: z[d:] + z[:d]},
            {"type": "ineq", "fun": lambda z: l1_ball - z[d:].sum()}]
    res = minimize(fun, z0, jac=jac, constraints=constraints, method="SLSQP",
                   options=dict(ftol=1e-15, maxiter=2000))
    assert res.status in (0, 8), res.message   # 8: no descent left at this precision
    return res.x[:d]


def check_optimal(w, w_ref, v, feasible):
    """w is feasible, no worse than scipy's point (which may violate a constraint by
    its tolerance, ~1e-9), and close to it."""
    assert feasible(w)
    dist, dist_ref = 0.5 * np.sum((w - v) ** 2), 0.5 * np.sum((w_ref - v) ** 2)
    assert dist <= dist_ref + 1e-7 * (1 + dist_ref)
    np.testing.assert_allclose(w, w_ref, atol=1e-5)


@pytest.mark.parametrize("seed", RNG_SEEDS)
def test_l2_ball(seed):
    v, _, _, beta = instance(seed)
    w = P.project_l2_ball(v, beta)
    ref = slsqp(v, [{"type": "ineq", "fun": lambda w: beta ** 2 - w @ w}])
    check_optimal(w, ref, v, lambda w: w @ w <= beta ** 2 * (1 + 1e-12))
    np.testing.assert_allclose(P.project_l2_ball(w, beta), w, rtol=1e-15)
    np.testing.assert_allclose(w, N.l2_ball(v, beta), rtol=1e-14)


@pytest.mark.parametrize("seed", RNG_SEEDS)
def test_l1_ball(seed):
    v, _, _, beta = instance(seed)
    w = P.project_l1_ball(v, beta)
    ref = slsqp(v, [], l1_ball=beta)
    check_optimal(w, ref, v, lambda w: np.abs(w).sum() <= beta * (1 + 1e-12))
    np.testing.assert_allclose(P.project_l1_ball(w, beta), w, atol=1e-14)
    np.testing.assert_allclose(w, N.l1_ball(v, beta), atol=1e-13)


@pytest.mark.parametrize("seed", RNG_SEEDS)
def test_halfspace_l2_ball(seed):
    v, a, b, beta = instance(seed)
    if b > beta * np.linalg.norm(a):
        with pytest.raises(ValueError, match="No w has a.w >= b"):
            P.project_halfspace_l2_ball(v, a, b, beta)
        return
    w = P.project_halfspace_l2_ball(v, a, b, beta)
    ref = slsqp(v, [{"type": "ineq", "fun": lambda w: a @ w - b},
                    {"type": "ineq", "fun": lambda w: beta ** 2 - w @ w}])
    check_optimal(w, ref, v, lambda w: a @ w >= b - 1e-12 and w @ w <= beta ** 2 + 1e-12)
    np.testing.assert_allclose(P.project_halfspace_l2_ball(w, a, b, beta), w, atol=1e-14)
    np.testing.assert_allclose(w, N.halfspace_l2_ball(v, a, b, beta), atol=1e-13)


@pytest.mark.parametrize("seed", RNG_SEEDS)
def test_halfspace_l1_ball(seed):
    v, a, b, beta = instance(seed)
    if b > beta * np.abs(a).max():
        with pytest.raises(ValueError, match="No w has a.w >= b"):
            P.project_halfspace_l1_ball(v, a, b, beta)
        return
    w = P.project_halfspace_l1_ball(v, a, b, beta)
    ref = slsqp(v, [{"type": "ineq", "fun": lambda w: a @ w - b}], l1_ball=beta)
    check_optimal(w, ref, v, lambda w: a @ w >= b - 1e-12 and np.abs(w).sum() <= beta + 1e-12)
    np.testing.assert_allclose(P.project_halfspace_l1_ball(w, a, b, beta), w, atol=1e-13)
    np.testing.assert_allclose(w, N.halfspace_l1_ball(v, a, b, beta), atol=1e-12)


def test_lemma_3_2_closed_form():
    """a = y x, b = 1: the paper's w = (v + tau y x) / Z, Z = max(1, sqrt(...)), tau = (l + Z - 1)/||x||^2."""
    rng = np.random.default_rng(1)
    cases = 0
    for _ in range(200):
        x, v, y = rng.normal(size=6), rng.normal(size=6) * 2, rng.choice([-1.0, 1.0])
        beta = rng.uniform(0.5, 4.0)
        loss = 1 - y * v @ x
        if loss <= 0 or beta * np.linalg.norm(x) <= 1:
            continue
        xx, vv, vx = x @ x, v @ v, v @ x
        Z = max(1.0, np.sqrt((vv * xx - vx ** 2) / (beta ** 2 * xx - 1)))
        paper = (v + (loss + Z - 1) / xx * y * x) / Z
        np.testing.assert_allclose(P.project_halfspace_l2_ball(v, y * x, 1.0, beta), paper,
                                   atol=1e-12)
        cases += Z > 1
    assert cases > 20        # the norm constraint was active often enough to matter


def test_l1_face_and_l2_point():
    """b = beta ||a||: the L1 set is a face of the ball, the L2 set a single point."""
    a = np.array([1.0, -1.0, 0.5, 0.0])
    v = np.array([0.3, 0.9, -2.0, 1.0])
    # {a.w >= 2, ||w||_1 <= 2} is the segment from (2, 0, 0, 0) to (0, -2, 0, 0);
    # w = (2s, 2s - 2, 0, 0) is closest to v at s = 0.8 (SLSQP stalls on this thin set)
    w = P.project_halfspace_l1_ball(v, a, 2.0, 2.0)
    np.testing.assert_allclose(w, [1.6, -0.4, 0.0, 0.0], atol=1e-15)
    np.testing.assert_allclose(w, N.halfspace_l1_ball(v, a, 2.0, 2.0), atol=1e-15)
    b = 2.0 * np.linalg.norm(a)
    np.testing.assert_allclose(P.project_halfspace_l2_ball(v, a, b, 2.0), b * a / (a @ a),
                               atol=1e-14)


def test_l1_near_face_stays_accurate():
    """b just below beta ||a||_inf: tau is large, the answer still matches scipy."""
    rng = np.random.default_rng(3)
    v, a = rng.normal(size=8), rng.normal(size=8)
    b = 1.5 * np.abs(a).max() * (1 - 1e-4)
    w = P.project_halfspace_l1_ball(v, a, b, 1.5)
    ref = slsqp(v, [{"type": "ineq", "fun": lambda w: a @ w - b}], l1_ball=1.5)
    check_optimal(w, ref, v, lambda w: a @ w >= b - 1e-10 and np.abs(w).sum() <= 1.5 + 1e-12)


def test_degenerate_sets():
    v = np.array([3.0, -4.0])
    np.testing.assert_array_equal(P.project_l2_ball(v, 0.0), [0.0, 0.0])
    np.testing.assert_array_equal(P.project_l1_ball(v, 0.0), [0.0, 0.0])
    zero = np.zeros(2)
    for project in (P.project_halfspace_l2_ball, P.project_halfspace_l1_ball):
        # a = 0: the halfspace is everything (b <= 0) or empty (b > 0)
        np.testing.assert_allclose(project(v, zero, -1.0, 1.0),
                                   P.project_l2_ball(v, 1.0) if project is P.project_halfspace_l2_ball
                                   else P.project_l1_ball(v, 1.0))
        with pytest.raises(ValueError, match="empty|No w"):
            project(v, zero, 0.5, 1.0)
        # the ball inside the halfspace: the ball projection
        np.testing.assert_allclose(project(v, np.array([1.0, 0.0]), -10.0, 1.0),
                                   project(v, zero, 0.0, 1.0))


def test_large_sparse_halfspace_l1():
    """d = 8000, a 50-sparse 0/1 text row: exact and matching the twin."""
    rng = np.random.default_rng(0)
    v = rng.normal(size=8000) * 0.01
    a = np.zeros(8000)
    a[rng.choice(8000, 50, replace=False)] = rng.choice([-1.0, 1.0], 50)
    w = P.project_halfspace_l1_ball(v, a, 1.0, 5.0)
    assert a @ w == pytest.approx(1.0, abs=1e-12)
    assert np.abs(w).sum() == pytest.approx(5.0, abs=1e-11)
    np.testing.assert_allclose(w, N.halfspace_l1_ball(v, a, 1.0, 5.0), atol=1e-13)


@pytest.mark.parametrize("seed", range(30))
def test_truncate_smallest(seed):
    rng = np.random.default_rng(seed)
    w = rng.normal(size=int(rng.integers(1, 40)))
    w[rng.random(w.size) < 0.2] = 0.0
    w[rng.random(w.size) < 0.2] = 0.5            # ties
    sigma = float(rng.uniform(0, 1.5) * (w @ w))
    out = P.truncate_smallest(w, sigma)
    order = np.argsort(np.abs(w), kind="stable")   # the definition: a sorted prefix
    k = np.count_nonzero(np.cumsum(w[order] ** 2) < sigma)
    expected = w.copy()
    expected[order[:k]] = 0.0
    np.testing.assert_array_equal(out, expected)
    np.testing.assert_array_equal(out, N.truncate_smallest(w, sigma))
    removed = w[out == 0] ** 2
    assert removed.sum() < sigma or sigma == 0
    np.testing.assert_array_equal(P.truncate_smallest(w, 0.0), w)


def test_inputs_are_validated_and_not_modified():
    v = np.array([1.0, 2.0])
    before = v.copy()
    P.project_l1_ball(v, 1.0)
    P.truncate_smallest(v, 10.0)
    np.testing.assert_array_equal(v, before)
    with pytest.raises(ValueError, match="NaN"):
        P.project_l2_ball([1.0, np.nan], 1.0)
    with pytest.raises(ValueError, match="1-D"):
        P.project_l1_ball(np.ones((2, 2)), 1.0)
    with pytest.raises(ValueError, match="same shape"):
        P.project_halfspace_l2_ball(v, np.ones(3), 0.0, 1.0)
    with pytest.raises(ValueError, match="empty"):
        P.project_l2_ball(v, -1.0)
    with pytest.raises(ValueError, match="finite"):
        P.project_halfspace_l1_ball(v, v, np.inf, 1.0)
    with pytest.raises(ValueError, match="sigma"):
        P.truncate_smallest(v, -1.0)
