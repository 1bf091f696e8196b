"""What the papers predict, measured: Smale-Yao's rate, Yang's quantiles and sparsity."""
import numpy as np
import pytest

from okl import OnlineKernelRegressor
from okl.evaluation import kernel_ridge_target, rkhs_distance
from okl.losses import loss_value
from okl.schedules import yang_exponents


@pytest.mark.parametrize("theta", [0.6, 0.75, 0.9])
def test_smale_yao_distance_to_kernel_ridge_shrinks_like_t_to_minus_theta(theta):
    """Theorem A: E||f_t - f*||_K^2 = O(t^-theta) once the initial error has decayed.

    rho is uniform on a fixed set of n = 40 points, so f* solves (K + n lam I) a = y.
    The squared RKHS distance, averaged over 24 streams, is fitted on log-log
    axes over t = 256 ... 8192.  Measured slopes: -0.515 (theta = 0.6),
    -0.686 (theta = 0.75), -0.948 (theta = 0.9).
    """
    n, lam = 40, 1.0
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (n, 2))
    y = np.sin(3 * X[:, 0]) * X[:, 1] + 0.3 * rng.normal(size=n)
    target = kernel_ridge_target(X, y, lam)
    checkpoints = 2 ** np.arange(8, 14)
    sq_dist = np.zeros(len(checkpoints))
    for seed in range(24):
        idx = np.random.default_rng(100 + seed).integers(0, n, checkpoints[-1])
        est = OnlineKernelRegressor(lam=lam, eta_decay=theta, eta="auto",   # Smale-Yao's step
                                    gamma=1.0, fit_intercept=False,   # the paper's iterates
                                    budget=None, drift_detector=None)
        done = 0
        for k, t in enumerate(checkpoints):
            est.partial_fit(X[idx[done:t]], y[idx[done:t]])
            done = t
            sq_dist[k] += rkhs_distance(est.support_vectors_, est.dual_coef_, X, target) ** 2
    slope = np.polyfit(np.log(checkpoints), np.log(sq_dist / 24), 1)[0]
    assert -theta - 0.15 < slope < -theta + 0.15, slope


def heteroscedastic(n, seed):
    """Yang's setting: y | x uniform on [f(x) - s(x), f(x) + s(x)], here with s growing in x."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 1, n)
    s = 0.3 + 0.7 * x
    return x[:, None], np.sin(2 * np.pi * x) + rng.uniform(-1, 1, n) * s


LAM_DECAY, ETA_DECAY = yang_exponents(1.0)      # Theorem 2.1, r = 1: 1/5 and 3/5


@pytest.mark.parametrize("tau", [0.1, 0.5, 0.9])
def test_yang_pinball_coverage(tau):
    """Held-out coverage P(y <= f_T(x)) is tau +- 0.03 (measured: 0.112, 0.511, 0.905)."""
    X, y = heteroscedastic(10_000, seed=0)
    X_test, y_test = heteroscedastic(20_000, seed=1)
    est = OnlineKernelRegressor(loss="pinball", quantile=tau, gamma=20.0, lam=1e-3,
                                lam_decay=LAM_DECAY, eta_decay=ETA_DECAY, eta="auto",
                                budget=None, fit_intercept=False,
                                drift_detector=None).fit(X, y)   # the paper's
    coverage = np.mean(y_test <= est.predict(X_test))
    assert abs(coverage - tau) <= 0.03, coverage


def test_yang_epsilon_buys_sparsity_at_similar_loss():
    """Median regression (tau = 1/2, Theorem 2.1): eps = 0.2 keeps 65% of the centres
    of eps = 0 (6462 vs 10000) at the same held-out pinball loss (0.1615 vs 0.1614)."""
    X, y = heteroscedastic(10_000, seed=0)
    X_test, y_test = heteroscedastic(20_000, seed=1)
    fits = {}
    for eps in (0.0, 0.2):
        est = OnlineKernelRegressor(loss="pinball", quantile=0.5, epsilon=eps, gamma=20.0,
                                    lam=1e-3, lam_decay=LAM_DECAY, eta_decay=ETA_DECAY,
                                    eta="auto", budget=None, fit_intercept=False,
                                    drift_detector=None).fit(X, y)
        loss = loss_value("pinball", est.predict(X_test) - y_test, tau=0.5).mean()
        fits[eps] = (est.n_support_, loss)
    (n0, loss0), (n1, loss1) = fits[0.0], fits[0.2]
    assert n1 < 0.75 * n0, fits
    assert loss1 < 1.02 * loss0, fits
