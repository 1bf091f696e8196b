"""The expansions' squared distances from cached norms (docs/algorithms.md, section 0.4).

The expanded form ||x||^2 + ||c||^2 - 2 x.c is kept only where it is exact enough; nearby
points far from the origin are summed directly, in both engines.
"""
from fractions import Fraction

import numpy as np
import pytest

from okl import OnlineKernelClassifier, OnlineKernelRegressor
from okl._core import _kernels
from okl._core._expansion import KernelExpansion
from okl._numpy import kernels as np_kernels
from okl._numpy.expansion import NumpyExpansion
from okl.kernels import kernel_params

U = 2.0 ** -53
D = 80                      # >= EXPAND_MIN_D: the expanded form is in play


def exact_sq(x, c):
    """||x - c||^2 of two float64 rows, rounded once from the exact value."""
    return float(sum((Fraction(float(a)) - Fraction(float(b))) ** 2 for a, b in zip(x, c)))


def cython_sq(X, C):
    return _kernels.sq_distances(X, C, np.einsum("ij,ij->i", C, C))


def numpy_sq(X, C):
    return np.array([np_kernels.sq_distances(C, x, np.einsum("ij,ij->i", C, C))
                     for x in X])


SQ = {"cython": cython_sq, "numpy": numpy_sq}


def scene(scale, rng, n_far=9, n_near=9):
    """x and centres around one point at `scale`: some far apart, some 1e-6 scale apart."""
    base = scale * rng.uniform(0.5, 1.5, size=D)
    x = base + scale * 1e-9 * rng.normal(size=D)
    far = base + scale * rng.normal(size=(n_far, D))
    near = base + scale * 1e-9 * rng.normal(size=(n_near, D))
    dup = x.copy()[None, :]
    return x, np.vstack([far, near, dup])


def test_the_rule_is_the_same_in_both_engines():
    assert np_kernels.CANCEL_TAU == _kernels.CANCEL_TAU == 0.25
    assert np_kernels.EXPAND_MIN_D == _kernels.EXPAND_MIN_D == 64 <= D


@pytest.mark.parametrize("engine", ["cython", "numpy"])
@pytest.mark.parametrize("scale", [1.0, 1e8, 1e150])
def test_distances_stay_exact_far_from_the_origin(engine, scale):
    rng = np.random.default_rng(int(np.log10(scale)))
    x, C = scene(scale, rng)
    got = SQ[engine](x[None, :], C)[0]
    exact = np.array([exact_sq(x, c) for c in C])
    # kept expanded form: (8 d + 5) u relative (section 0.4); direct sums (d + 2) u
    bound = (8 * D + 5) * U * exact
    assert np.all(np.abs(got - exact) <= 1.01 * bound)
    near = slice(9, None)              # the expanded form would lose every digit here
    assert np.all(np.abs(got[near] - exact[near]) <= 1.01 * (D + 2) * U * exact[near])
    assert got[-1] == 0.0              # the centre equal to x


@pytest.mark.parametrize("engine", ["cython", "numpy"])
def test_huge_norms_and_nan_fall_back_to_the_direct_sum(engine):
    x = np.full(D, 1e155)
    C = np.vstack([x, x + 1e150, -x])
    with np.errstate(over="ignore"):
        got = SQ[engine](x[None, :], C)[0]
    assert got[0] == 0.0 and got[1] == pytest.approx(exact_sq(x, C[1]), rel=1e-14)
    assert got[2] == np.inf
    bad = x.copy()
    bad[3] = np.nan
    with np.errstate(over="ignore", invalid="ignore"):
        assert np.isnan(SQ[engine](bad[None, :], C)[0]).all()


def test_a_row_does_not_depend_on_its_neighbours():
    """Four rows at a time, the last block padded: each value is that of its row alone."""
    rng = np.random.default_rng(1)
    for d in (3, 8, 64, 101):
        X, C = rng.normal(size=(3, d)), rng.normal(size=(11, d))
        cc = np.einsum("ij,ij->i", C, C)
        whole, direct = _kernels.sq_distances(X, C, cc), _kernels.sq_distances(X, C)
        for i in range(len(C)):
            assert np.array_equal(whole[:, i], _kernels.sq_distances(X, C[i:i + 1], cc[i:i + 1])[:, 0])
            assert np.array_equal(direct[:, i], _kernels.sq_distances(X, C[i:i + 1])[:, 0])


@pytest.mark.parametrize("cls", [KernelExpansion, NumpyExpansion])
def test_expansion_values_at_1e8_with_near_duplicates(cls):
    """Kernel values of an expansion whose centres sit 1e-3 apart at 1e8: exact, not 1 or 0."""
    rng = np.random.default_rng(2)
    base = 1e8 * rng.uniform(0.5, 1.5, size=D)
    C = base + 1e-3 * rng.normal(size=(12, D))
    x = base + 1e-3 * rng.normal(size=D)
    sq = np.array([exact_sq(x, c) for c in C])
    gamma = 0.5 / np.median(sq)
    e = cls(D, kernel_params("gaussian", gamma=gamma), budget=0)
    e.reserve(len(C))
    coef = rng.normal(size=len(C))
    for c, a in zip(C, coef):
        e.add(c, a)
    K = np.exp(-gamma * sq)
    exact = float(coef @ K)
    assert 0.1 < K.min() and K.max() < 0.99             # values the rounding would destroy
    assert e.predict(x[None, :])[0] == pytest.approx(exact, rel=1e-9, abs=1e-12)


def test_engines_match_on_a_long_stream_far_from_the_origin():
    """Both engines, a stream around 1e6 with repeated and near-repeated rows: same iterates."""
    rng = np.random.default_rng(3)
    n = 600
    centre = 1e6 * rng.uniform(0.5, 1.5, size=D)
    X = centre + rng.normal(size=(n, D))
    X[1::7] = X[0:-1:7] + 1e-7 * rng.normal(size=(len(X[1::7]), D))     # near-duplicates
    X[2::11] = X[0:-2:11]                                                 # exact repeats
    y = np.sin(X[:, 0] - centre[0]) + 0.1 * rng.normal(size=n)
    models = {}
    for engine in ("cython", "numpy"):
        est = OnlineKernelRegressor(gamma=1.0 / D, budget=120, budget_policy="merge",
                                    engine=engine, fit_intercept=False)
        scores = np.concatenate([est.partial_fit(X[i:i + 50], y[i:i + 50]).predict(X[:5])
                                 for i in range(0, n, 50)])
        models[engine] = (est, scores)
    (a, sa), (b, sb) = models["cython"], models["numpy"]
    np.testing.assert_allclose(sa, sb, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(a.dual_coef_, b.dual_coef_, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(a.support_vectors_, b.support_vectors_, rtol=1e-12)


@pytest.mark.parametrize("seed", range(3))
def test_multiclass_merges_match_far_from_the_origin(seed):
    """Three classes, a merge budget, rows around 1e6: the merge point z = x_n + h (x_m - x_n)
    moves by an ulp of h |x_m - x_n| when the engines' h differ by an ulp, where
    h x_m + (1 - h) x_n moved by an ulp of h |x_m| (the engines' scores differed by 2-4e-10)."""
    rng = np.random.default_rng(seed)
    X = 1e6 + rng.normal(size=(600, 4))
    y = rng.integers(0, 3, len(X))
    scores = [OnlineKernelClassifier(gamma=0.5, budget=30, budget_policy="merge", engine=engine)
              .fit(X, y).decision_function(X) for engine in ("cython", "numpy")]
    np.testing.assert_allclose(scores[0], scores[1], rtol=0, atol=1e-12)
