"""noise="auto"'s evidence (docs/krls.md, section 8): the Gram matrices from distances computed
once, and every noise of a width from one tridiagonal reduction, against the Cholesky
`log_evidence` of each (width, noise) and the Gram matrix a row at a time."""
import math

import numpy as np
import pytest
from sklearn.datasets import load_diabetes

import okl
import okl.krls
from okl._core import _evidence
from okl._engines import ENGINES
from okl._numpy.kernels import Kernel, gram_base, kernel_of, kernel_record, kernel_values
from okl._numpy.krls import (
    EVIDENCE_EVENTS, NOISE_GRID, WIDTH_FACTORS, evidence_choice, linear_evidence, log_evidence,
    log_evidences)
from okl._gamma import scale_gamma
from okl.synth import lorenz

# the tridiagonal reduction's log evidence against the Cholesky one: 1e-9 relative, and 1e-9
# per row absolute (a log evidence is a sum over the rows: one near 0 is a difference of
# terms of order 1 per row, each rounded in both factorisations)
RTOL = 1e-9


def close(a, b, n):
    return math.isclose(a, b, rel_tol=RTOL, abs_tol=RTOL * n)


def record(kernel, gamma=1.0, degree=3, coef0=0.0, nu=1.5):
    return dict(kernel=int(kernel), gamma=gamma, degree=degree, coef0=coef0, nu=nu)


def row_gram(rec, X):
    K = np.array([kernel_values(rec, X, x) for x in X])
    return 0.5 * (K + K.T)


def cholesky_choice(kernel, X, y, w, gammas, noises, centred):
    """The choice a `log_evidence` (one Cholesky factor) per (width, noise) makes, the
    Gram matrix a row at a time: the first of equal ones, gammas then noises."""
    best, choice = -np.inf, (float(gammas[0]), float(noises[-1]))
    for gamma in gammas:
        K = row_gram(dict(kernel_record(kernel), gamma=float(gamma)), X)
        for noise in noises:
            value = log_evidence(K, y, w, float(noise), centred)
            if value > best:
                best, choice = value, (float(gamma), float(noise))
    return (*choice, best)


def cholesky_linear(X, y, w, noises, centred):
    c = float(np.mean(np.einsum("ij,ij->i", X, X)))
    K = X @ X.T + c
    K = 0.5 * (K + K.T) / (2.0 * c)
    values = [log_evidence(K, y, w, float(noise), centred) for noise in noises]
    i = int(np.argmax(values))          # the first of equal ones
    return c, float(noises[i]) * 2.0 * c, values[i]


def stream(seed, n=99, d=5):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * rng.uniform(0.2, 3.0, d)
    y = np.sin(X @ rng.normal(size=d)) + 0.1 * rng.standard_normal(n) + 3.0
    w = rng.uniform(0.2, 2.0, n) if seed % 2 else np.ones(n)
    return X, y, w


@pytest.mark.parametrize("kernel", list(Kernel))
def test_the_gram_matrix_of_a_width_is_the_row_by_row_one(kernel):
    """`kernel_of` of `gram_base` gives, at every width, each entry as `kernel_values` does."""
    X, _, _ = stream(0, n=40, d=4)
    base = gram_base(int(kernel), X)
    for gamma in (0.01, 0.3, 2.0):
        for nu in (0.5, 1.5, 2.5):
            rec = record(kernel, gamma=gamma, coef0=0.5, nu=nu)
            expected = np.array([kernel_values(rec, X, x) for x in X])
            np.testing.assert_allclose(kernel_of(rec, base), expected, rtol=1e-15, atol=0.0)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("centred", [True, False])
def test_the_log_evidences_of_one_width_are_the_cholesky_ones(seed, centred):
    X, y, w = stream(seed)
    for gamma in scale_gamma(X) * WIDTH_FACTORS:
        K = row_gram(record(Kernel.GAUSSIAN, gamma=gamma), X)
        values = log_evidences(K, y, w, NOISE_GRID, centred)
        expected = [log_evidence(K, y, w, float(noise), centred) for noise in NOISE_GRID]
        np.testing.assert_allclose(values, expected, rtol=RTOL, atol=RTOL * len(y))


@pytest.mark.parametrize("n", [1, 2, 3])
def test_a_few_rows_have_the_cholesky_evidence(n):
    X, y, w = stream(n + 1, n=n)
    K = row_gram(record(Kernel.GAUSSIAN, gamma=0.5), X)
    for centred in (True, False) if n > 1 else (False,):
        values = log_evidences(K, y, w, NOISE_GRID, centred)
        expected = [log_evidence(K, y, w, float(noise), centred) for noise in NOISE_GRID]
        np.testing.assert_allclose(values, expected, rtol=RTOL, atol=RTOL * n)


def indefinite():
    """(K, y, w, noises): a symmetric K with two negative eigenvalues (-0.5, -1e-3), so that
    K + noise I is indefinite at the first two noises and positive definite at the others."""
    rng = np.random.default_rng(3)
    V = np.linalg.qr(rng.normal(size=(6, 6)))[0]
    K = (V * np.array([-0.5, -1e-3, 0.2, 1.0, 2.0, 3.0])) @ V.T
    y, w = rng.normal(size=6), np.ones(6)
    return 0.5 * (K + K.T), y, w, np.array([1e-4, 0.1, 0.6, 1.0])


def test_a_matrix_that_is_not_positive_definite_has_no_evidence():
    """-inf where the matrix plus the noise is not positive definite, as the Cholesky factor's
    failure was; the noises that make it positive definite keep their evidence."""
    K, y, w, noises = indefinite()
    values = log_evidences(K, y, w, noises, True)
    expected = [log_evidence(K, y, w, float(noise), True) for noise in noises]
    assert values[0] == values[1] == expected[0] == expected[1] == -np.inf
    assert np.isfinite(values[2:]).all()
    np.testing.assert_allclose(values[2:], expected[2:], rtol=RTOL, atol=RTOL * len(y))


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("kernel", [Kernel.GAUSSIAN, Kernel.LAPLACIAN, Kernel.MATERN])
def test_the_choice_is_the_cholesky_one_on_random_streams(seed, kernel):
    X, y, w = stream(seed)
    gammas = scale_gamma(X) * WIDTH_FACTORS
    for centred in (True, False):
        gamma, noise, value = evidence_choice(record(kernel), X, y, w, gammas, NOISE_GRID,
                                              centred)
        g0, n0, v0 = cholesky_choice(record(kernel), X, y, w, gammas, NOISE_GRID, centred)
        assert (gamma, noise) == (g0, n0)
        assert close(value, v0, len(y))
        c, linear, evidence = linear_evidence(X, y, w, NOISE_GRID, centred)
        c0, linear0, evidence0 = cholesky_linear(X, y, w, NOISE_GRID, centred)
        assert (c, linear) == (c0, linear0)
        assert close(evidence, evidence0, len(y))


def warmups(monkeypatch, make, X, y):
    """The arguments of every `evidence_choice` and `linear_evidence` a model's warm-up calls."""
    calls = {"choice": [], "linear": []}

    def choice(*args, **kwargs):
        calls["choice"].append(args)
        return evidence_choice(*args, **kwargs)

    def linear(*args, **kwargs):
        calls["linear"].append(args)
        return linear_evidence(*args, **kwargs)

    monkeypatch.setattr(okl.krls, "evidence_choice", choice)
    monkeypatch.setattr(okl.krls, "linear_evidence", linear)
    make().fit(X, y)
    monkeypatch.undo()
    return calls


@pytest.mark.parametrize("data", ["lorenz", "diabetes"])
def test_the_choice_is_the_cholesky_one_on_the_warm_ups_of_lorenz_and_diabetes(
        monkeypatch, data):
    if data == "lorenz":
        X, y = lorenz(300, embedding=6, random_state=0)
    else:
        X, y = load_diabetes(return_X_y=True)
        X = (X - X.mean(0)) / X.std(0)
    for make in (okl.KernelRLSRegressor, lambda: okl.KernelRLSRegressor(kernel="auto"),
                 lambda: okl.KernelRLSRegressor(gamma=0.1)):
        calls = warmups(monkeypatch, make, X[:300], y[:300])
        assert len(calls["choice"]) == 1
        assert len(calls["linear"]) == (make().kernel == "auto")
        args = calls["choice"][0]
        n = len(args[2])
        gamma, noise, value = evidence_choice(*args)
        g0, n0, v0 = cholesky_choice(*args)
        assert (gamma, noise) == (g0, n0)
        assert close(value, v0, n)
        for args in calls["linear"]:
            c, linear, evidence = linear_evidence(*args)
            c0, linear0, evidence0 = cholesky_linear(*args)
            assert (c, linear) == (c0, linear0)
            assert close(evidence, evidence0, n)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("n", [1, 2, 3, 50, 99])
def test_the_compiled_log_evidences_are_the_numpy_ones(seed, n):
    """`okl._core._evidence.log_evidences`, the cython engine's, is the twin of the NumPy one:
    the same values to 1e-10 (weighted or not, centred or not), -inf at the same noises."""
    X, y, w = stream(seed, n=n)
    for gamma in scale_gamma(X) * WIDTH_FACTORS[::3]:
        K = row_gram(record(Kernel.GAUSSIAN, gamma=gamma), X)
        for centred in (True, False) if n > 1 else (False,):
            values = _evidence.log_evidences(K, y, w, NOISE_GRID, centred)
            expected = log_evidences(K, y, w, NOISE_GRID, centred)
            assert np.isfinite(expected).all()
            np.testing.assert_allclose(values, expected, rtol=0.0, atol=1e-10)


def test_the_compiled_log_evidences_fail_where_the_numpy_ones_do():
    K, y, w, noises = indefinite()
    values = _evidence.log_evidences(K, y, w, noises, True)
    expected = log_evidences(K, y, w, noises, True)
    assert values[0] == values[1] == expected[0] == expected[1] == -np.inf
    assert np.isfinite(values[2:]).all()
    np.testing.assert_allclose(values[2:], expected[2:], rtol=0.0, atol=1e-10)


@pytest.mark.parametrize("engine", ["cython", "numpy"])
def test_the_evidence_reads_the_last_events_of_positive_weight(monkeypatch, engine):
    """The warm-up's evidence reads its last `EVIDENCE_EVENTS` events of positive weight (the
    engine's `log_evidences`), and both engines choose the same width and noise."""
    X, y = load_diabetes(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    w = np.ones(150)
    w[[10, 70, 80]] = 0.0
    calls = {"choice": []}

    def choice(*args, **kwargs):
        calls["choice"].append((args, kwargs))
        return evidence_choice(*args, **kwargs)
    monkeypatch.setattr(okl.krls, "evidence_choice", choice)
    est = okl.KernelRLSRegressor(engine=engine).fit(X[:150], y[:150], sample_weight=w)
    monkeypatch.undo()
    (args, kwargs), = calls["choice"]
    rows = np.flatnonzero(w[:103] > 0)[-EVIDENCE_EVENTS:]
    np.testing.assert_array_equal(args[1], X[rows])
    np.testing.assert_array_equal(args[2], y[rows])
    assert kwargs["evidences"] is ENGINES[engine].log_evidences
    other = okl.KernelRLSRegressor(engine="numpy" if engine == "cython" else "cython")
    other.fit(X[:150], y[:150], sample_weight=w)
    assert (est.gamma_, est.noise_) == (other.gamma_, other.noise_)


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("stride", [2, 3])
def test_the_coarse_to_fine_choice_is_the_best_of_the_widths_it_tries(seed, stride):
    """With a stride s, the choice is the best (the first of equal ones) over every s-th width
    and the widths within s - 1 of the best of those; stride 1 is the search over every width."""
    X, y, w = stream(seed, n=50)
    gammas = scale_gamma(X) * WIDTH_FACTORS
    table = [log_evidences(row_gram(record(Kernel.GAUSSIAN, gamma=g), X), y, w, NOISE_GRID,
                           True) for g in gammas]

    def first_best(widths):
        best, at = -np.inf, None
        for i in widths:
            for j, value in enumerate(table[i]):
                if value > best:
                    best, at = value, (i, j)
        return best, at
    coarse = first_best(range(0, len(gammas), stride))[1][0]
    tried = sorted(set(range(0, len(gammas), stride))
                   | set(range(max(coarse - stride + 1, 0), min(coarse + stride, len(gammas)))))
    value, (i, j) = first_best(tried)
    scored = []

    def evidences(K, *args):
        scored.append(K)
        return log_evidences(K, *args)
    gamma, noise, found = evidence_choice(record(Kernel.GAUSSIAN), X, y, w, gammas, NOISE_GRID,
                                          True, evidences=evidences, stride=stride)
    assert len(scored) == len(tried) < len(gammas)
    assert (gamma, noise) == (float(gammas[i]), float(NOISE_GRID[j]))
    assert close(found, value, len(y))
    full = evidence_choice(record(Kernel.GAUSSIAN), X, y, w, gammas, NOISE_GRID, True, stride=1)
    assert full[:2] == evidence_choice(record(Kernel.GAUSSIAN), X, y, w, gammas, NOISE_GRID,
                                       True)[:2]
    assert full[2] >= found


@pytest.mark.parametrize("kernel", list(Kernel))
def test_the_compiled_gram_base_is_the_numpy_one_bit_for_bit(kernel):
    """`okl._core._evidence.gram_base`, the cython engine's, sums each entry in NumPy's order:
    the same bits at every width (short and long rows, scales from 1e-3 to overflow)."""
    for d in (1, 3, 8, 10, 17, 129, 300):
        for scale in (1e-3, 1.0, 1e3, 1e200):
            X = np.random.default_rng(d).normal(size=(20, d)) * scale
            with np.errstate(over="ignore", invalid="ignore"):     # (inf, nan at 1e200)
                expected = gram_base(int(kernel), X)
                assert _evidence.gram_base(int(kernel), X).tobytes() == expected.tobytes()
