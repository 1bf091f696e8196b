"""okl.synth.nonidentical: Yang's non-identical sampling, its rate t^-b and its effect."""
import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from okl import OnlineKernelRegressor
from okl.schedules import yang_exponents
from okl.synth import conditional_quantile, mixture_weight, nonidentical, target


def stream(n, b, **kwargs):
    """The whole stream as one chunk."""
    return next(nonidentical(n, b, chunk_size=n, **kwargs))


def h(X):
    """A smooth test function: E_rho h = 0 on U[0, 1]; E_nu h = sin(pi/5) / (pi/5) on U[0, 0.2]."""
    return np.cos(np.pi * X[:, 0])


def marginal_gaps(bs, n_log2=10, repeats=2000):
    """E_t[h] - E_rho[h] for each b, averaged over the dyadic blocks of steps [2^k, 2^(k+1)).

    Stream s of each b is paired with the i.i.d. stream of seed s, which shares
    its rho_X draws: h(x_t) - h(x_t^iid) is non-zero only on the steps drawn
    from nu, and its mean is E_t[h] - E_rho[h] exactly (the i.i.d. stream has
    the marginal rho_X), at a small fraction of the variance of E_t[h] alone.
    """
    n = 2 ** n_log2
    total = {b: np.zeros(n) for b in bs}
    for seed in range(repeats):
        h_iid = h(stream(n, np.inf, random_state=seed)[0])
        for b in bs:
            total[b] += h(stream(n, b, random_state=seed)[0]) - h_iid
    t = 2.0 ** np.arange(n_log2)
    return t, {b: np.array([total[b][int(lo) - 1:2 * int(lo) - 1].mean() / repeats for lo in t])
               for b in bs}


@pytest.fixture(scope="module")
def gaps():
    return marginal_gaps((0.25, 0.5, 1.0))


@pytest.mark.parametrize("b", [0.25, 0.5, 1.0])
def test_marginal_converges_at_rate_t_to_minus_b(gaps, b):
    """|E_t h - E_rho h| = w_t |E_nu h - E_rho h|: log-log slope -b within 0.06.

    2000 streams of 1024 steps; slopes over the blocks [2^k, 2^(k+1)), k = 1..9
    (measured: -0.256, -0.517, -1.026).  A wrong b (b +- 0.25) lies outside the
    tolerance, so the test can fail.
    """
    t, gap = gaps[0], gaps[1][b]
    slope = np.polyfit(np.log(t[1:]), np.log(gap[1:]), 1)[0]
    assert abs(slope + b) < 0.06, slope
    for wrong in (b - 0.25, b + 0.25):
        assert abs(slope + wrong) > 0.06
    # the level, too: the block means of w_t (E_nu h - E_rho h), within 10%
    e_nu = np.sin(np.pi / 5) / (np.pi / 5)
    expected = np.array([mixture_weight(np.arange(lo, 2 * lo), b).mean() for lo in t.astype(int)])
    np.testing.assert_allclose(gap[1:], e_nu * expected[1:], rtol=0.1)


def test_mixture_weight_and_quantile():
    np.testing.assert_allclose(mixture_weight([1, 4, 100], 0.5), [1.0, 0.5, 0.1])
    np.testing.assert_allclose(mixture_weight([1, 4, 16], 0.5, c=4.0), [1.0, 1.0, 1.0])
    np.testing.assert_allclose(mixture_weight([1, 1000], np.inf), [0.0, 0.0])
    X = np.array([[0.0], [0.25], [0.5]])
    np.testing.assert_allclose(conditional_quantile(X, 0.5), [0.0, 1.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(conditional_quantile(X, 0.9), target(X) + 0.8)
    np.testing.assert_allclose(conditional_quantile(X, 0.1, f=lambda X: 3 * X[:, 0]),
                               [-0.8, -0.05, 0.7])


def test_iid_marginal_and_conditional_quantiles():
    """b = inf is uniform on [0, 1]^d; P(y <= q_tau(x)) = tau for every b (y | x never moves)."""
    X, y = stream(40_000, np.inf, n_features=2, random_state=1)
    assert X.shape == (40_000, 2) and X.min() >= 0.0 and X.max() <= 1.0
    np.testing.assert_allclose(X.mean(axis=0), 0.5, atol=0.01)
    np.testing.assert_allclose(X.var(axis=0), 1 / 12, atol=0.005)
    for b in (0.25, np.inf):
        X, y = stream(40_000, b, random_state=2)
        for tau in (0.1, 0.5, 0.9):
            coverage = np.mean(y <= conditional_quantile(X, tau))
            assert abs(coverage - tau) < 5 * np.sqrt(tau * (1 - tau) / 40_000), (b, tau, coverage)
        assert np.all(np.abs(y - target(X)) <= 1.0)


def test_reproducible_by_seed_and_chunk_independent():
    """The same seed gives the same samples in chunks of 7, of 1000, or as events."""
    def collect(chunk_size, seed=5):
        parts = list(nonidentical(2500, 0.5, c=2.0, n_features=3, chunk_size=chunk_size,
                                  random_state=seed))
        if chunk_size is None:
            return np.array([x for x, _ in parts]), np.array([y for _, y in parts])
        assert all(len(X) == chunk_size for X, _ in parts[:-1])
        return np.vstack([X for X, _ in parts]), np.concatenate([y for _, y in parts])

    X7, y7 = collect(7)
    for other in (collect(1000), collect(None), collect(7)):
        np.testing.assert_array_equal(X7, other[0])
        np.testing.assert_array_equal(y7, other[1])
    assert X7.shape == (2500, 3)
    X_other, _ = collect(1000, seed=6)
    assert not np.array_equal(X7, X_other)
    x, y = next(nonidentical(3, 1.0, random_state=0))
    assert x.shape == (1,) and isinstance(y, float)
    # a Generator is used as given (and advanced), like numpy's own functions
    rng = np.random.default_rng(5)
    a, b = stream(10, 1.0, random_state=rng), stream(10, 1.0, random_state=rng)
    assert not np.array_equal(a[0], b[0])


def test_same_seed_couples_the_streams():
    """Streams with the same seed share their draws: smaller b only moves steps into nu."""
    X_small, y_small = stream(5000, 0.25, random_state=3)
    X_large, y_large = stream(5000, 1.0, random_state=3)
    moved = X_small[:, 0] != X_large[:, 0]
    assert moved.sum() > 500
    assert np.all(X_small[moved, 0] <= 0.2)
    noise_small, noise_large = y_small - target(X_small), y_large - target(X_large)
    np.testing.assert_allclose(noise_small, noise_large, atol=1e-12)      # the same noise everywhere


def test_errors_name_the_problem():
    with pytest.raises(ValueError, match="b must be"):
        nonidentical(10, 0.0)
    with pytest.raises(ValueError, match="n must be"):
        nonidentical(0, 1.0)
    with pytest.raises(ValueError, match="c must be"):
        nonidentical(10, 1.0, c=-1.0)
    with pytest.raises(ValueError, match="nu must be"):
        nonidentical(10, 1.0, nu=(0.5, 0.5))
    with pytest.raises(ValueError, match="chunk_size"):
        nonidentical(10, 1.0, chunk_size=0)
    with pytest.raises(ValueError, match="f must map"):
        next(nonidentical(10, 1.0, f=lambda X: X, n_features=2, chunk_size=5))


def final_errors(b, n=2048, seeds=6, c=4.0):
    """L2(rho_X) distance of Yang's fully online median regression to the median, after n steps."""
    lam_decay, eta_decay = yang_exponents(1.0)
    grid = np.linspace(0.0, 1.0, 257)[:, None]
    errors = []
    for seed in range(seeds):
        X, y = stream(n, b, c=c, random_state=seed)
        est = OnlineKernelRegressor(loss="pinball", quantile=0.5, gamma=20.0, lam=0.1,
                                    lam_decay=lam_decay, eta_decay=eta_decay).fit(X, y)
        errors.append(np.sqrt(np.mean((est.predict(grid) - conditional_quantile(grid, 0.5)) ** 2)))
    return np.array(errors)


def test_smaller_b_gives_larger_error_at_the_end():
    """w_t = min(1, 4 t^-b), 2048 steps, 6 seeds: every b = 0.25 stream ends worse than every
    b = 1 stream, and b = 1 ends level with i.i.d. (measured means 0.278, 0.140, 0.139)."""
    small, large, iid = final_errors(0.25), final_errors(1.0), final_errors(np.inf)
    assert small.min() > large.max(), (small, large)
    assert small.mean() - large.mean() > 3 * (small.std() + large.std()), (small, large)
    assert abs(large.mean() - iid.mean()) < 2 * iid.std(), (large, iid)


@pytest.mark.repository
def test_example_runs(tmp_path):
    """examples/yang_nonidentical.py --quick: both tables printed, the plot written."""
    script = Path(__file__).resolve().parents[1] / "examples" / "yang_nonidentical.py"
    out = tmp_path / "plot.png"
    result = subprocess.run([sys.executable, str(script), "--quick", "--seeds", "2",
                             "--out", str(out)],
                            capture_output=True, text=True, check=True, cwd=tmp_path)
    rows = [line.split() for line in result.stdout.splitlines()
            if line.split() and line.split()[0] in ("0.25", "0.5", "1", "2", "inf")]
    assert len(rows) == 10
    assert [row[1] for row in rows[:5]] == ["+0.075", "-0.050", "-0.200", "-0.200", "-0.200"]
    assert all(0.0 < float(row[5]) < 1.0 for row in rows)        # final errors
    assert out.exists() == (importlib.util.find_spec("matplotlib") is not None)
