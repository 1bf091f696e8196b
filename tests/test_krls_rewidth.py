"""gamma="scale"'s width moves in KernelRLSRegressor's warm-up (`rewidth`, docs/krls.md,
section 5): the Gram matrix from distances computed once and LAPACK's triangular solve called
directly give the same states, bit for bit, as the Gram matrix a row at a time and
`solve_triangular`, on the states of real warm-ups."""
import math

import numpy as np
import pytest
from scipy.linalg import solve_triangular
from sklearn.datasets import load_diabetes

import okl
from okl._core._krls import KRLSModel
from okl._numpy.kernels import kernel_record, kernel_values
from okl._numpy.krls import RESIDUAL_FLOOR, rewidth
from okl.synth import lorenz


def rewidth_by_rows(state, gamma):
    """`rewidth` with the Gram matrix and its factor a row at a time."""
    state = dict(state, gamma=float(gamma))
    m = len(state["mean"])
    L = solve_triangular(state["R"], np.eye(m), lower=True)
    f_mean, f_ones = L @ state["mean"], L @ state["ones"]
    f_cov = L @ state["cov"] @ L.T
    centers = np.asarray(state["centers"])
    record = kernel_record(state, complete=True)
    K = np.array([kernel_values(record, centers, x) for x in centers])
    K = 0.5 * (K + K.T)
    keep, Lk = [], np.zeros((m, m))
    for j in range(m):
        row = solve_triangular(Lk[:len(keep), :len(keep)], K[keep, j], lower=True) \
            if keep else np.empty(0)
        gamma2 = K[j, j] - row @ row
        if gamma2 > max(float(state["threshold"]), RESIDUAL_FLOOR * K[j, j]):
            n = len(keep)
            Lk[n, :n], Lk[n, n] = row, math.sqrt(gamma2)
            keep.append(j)
    n = len(keep)
    R = solve_triangular(Lk[:n, :n], np.eye(n), lower=True)
    cov = R @ f_cov[np.ix_(keep, keep)] @ R.T
    state.update(centers=centers[keep], order=np.asarray(state["order"])[keep], R=R,
                 mean=R @ f_mean[keep], ones=R @ f_ones[keep], cov=0.5 * (cov + cov.T))
    return state


def states(X, y, weight=None, **params):
    """The states of a warm-up (gamma fixed, so that nothing rewidths them) after 1-64 rows."""
    out = []
    for n in (1, 2, 5, 16, 40, 64):
        est = okl.KernelRLSRegressor(gamma=0.2, engine="numpy", **params).fit(
            X[:n], y[:n], sample_weight=None if weight is None else weight[:n])
        out.append(est._krls.get_state())
    return out


def dataset(name):
    if name == "lorenz":
        return lorenz(100, embedding=6, random_state=0)
    if name == "diabetes":
        X, y = load_diabetes(return_X_y=True)
        return (X - X.mean(0)) / X.std(0), y
    rng = np.random.default_rng(0)
    X = rng.normal(size=(100, 4))
    return X, np.sin(X[:, 0]) + 0.1 * rng.standard_normal(100)


@pytest.mark.parametrize("data", ["lorenz", "diabetes", "random"])
@pytest.mark.parametrize("params", [{}, {"nu": 0.05}, {"kernel": "laplacian"}])
def test_rewidth_is_the_row_by_row_factor(data, params):
    X, y = dataset(data)
    for state in states(X, y, **params):
        for gamma in (0.01, 0.2, 1.5, 20.0):
            new, old = rewidth(state, gamma), rewidth_by_rows(state, gamma)
            assert list(new) == list(old)
            for name, value in old.items():
                if isinstance(value, np.ndarray):
                    np.testing.assert_array_equal(new[name], value, err_msg=name)
                else:
                    assert new[name] == value, name


@pytest.mark.parametrize("data", ["diabetes", "random"])
@pytest.mark.parametrize("params", [{}, {"nu": 0.05}, {"kernel": "laplacian"},
                                    {"kernel": "matern"}, {"forgetting": 0.98},
                                    {"weighted": True}])
def test_the_compiled_rewidth_is_the_numpy_twin(data, params):
    """`KRLSModel.rewidth` (in place) gives `rewidth`'s state within 1e-10 of each array's
    largest entry, its dropped centres included.  (Lorenz's delay embedding is left out: its
    Gram matrices are near-singular at these widths, where a centre moved by an ulp moves
    `rewidth`'s own R by 1e-8 to 1e-6.)"""
    X, y = dataset(data)
    params = dict(params)
    weight = (np.random.default_rng(1).uniform(0.2, 3.0, len(y))
              if params.pop("weighted", False) else None)
    dropped = 0
    for state in states(X, y, weight, **params):
        for gamma in (0.1, 0.2, 1.5, 20.0):
            old = rewidth(state, gamma)
            model = KRLSModel.from_state(state)
            model.rewidth(gamma)
            new = model.get_state()
            assert set(new) == set(old)
            dropped += len(old["mean"]) < len(state["mean"])
            for name, value in old.items():
                if name in ("R", "cov", "mean", "ones", "centers"):
                    scale = np.abs(value).max()
                    np.testing.assert_allclose(new[name], value, rtol=0, atol=1e-10 * scale,
                                               err_msg=name)
                elif isinstance(value, np.ndarray):
                    np.testing.assert_array_equal(new[name], value, err_msg=name)
                else:
                    assert new[name] == value, name
    assert dropped > 0 or "nu" not in params
