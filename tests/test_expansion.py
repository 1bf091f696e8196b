"""KernelExpansion: lazy scale, exact zeros, budgets, batch prediction, undo, state."""
import pickle

import numpy as np
import pytest

from okl import OnlineKernelRegressor
from okl._core._expansion import BudgetPolicy, KernelExpansion
from okl._numpy.expansion import NumpyExpansion
from okl.kernels import KERNELS, kernel_matrix, kernel_params
from okl.losses import loss_spec


def stream(n, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, np.sin(X[:, 0]) + 0.1 * rng.normal(size=n)


def test_lazy_scale_renormalises_and_matches_a_dense_update():
    # strong shrink: (1 - lam eta) = 0.5 per step drives the scale below 1e-9
    # every 30 steps; the numpy engine shrinks every coefficient instead.
    X, y = stream(100_000, d=2)
    params = dict(lam=1.0, eta=0.5, eta_decay=0.0, budget=50, budget_policy="oldest", gamma=0.5)
    fast = OnlineKernelRegressor(**params).fit(X, y)
    dense = OnlineKernelRegressor(engine="numpy", **params).fit(X, y)
    assert fast._expansion.n_rescale >= 1000
    np.testing.assert_allclose(fast.dual_coef_, dense.dual_coef_, rtol=1e-10, atol=0)
    np.testing.assert_array_equal(fast.support_vectors_, dense.support_vectors_)
    X_test, _ = stream(200, d=2, seed=1)
    np.testing.assert_allclose(fast.predict(X_test), dense.predict(X_test), rtol=1e-10)


@pytest.mark.filterwarnings("ignore:.*1 - lam_t eta_t")   # the reset warns, by design
@pytest.mark.parametrize("eta", [1.0, 3.0])      # 1 - lam eta = 0, then -2
@pytest.mark.parametrize("engine", ["cython", "numpy"])
def test_shrink_factor_at_or_below_zero_gives_exact_zeros(engine, eta):
    X, y = stream(20)
    est = OnlineKernelRegressor(lam=1.0, eta=eta, eta_decay=0.0, fit_intercept=False,
                                gamma=1.0, engine=engine)
    scores = est._progressive_scores(X, y)
    # the old model is wiped exactly at every step: one centre, the newest
    assert est.n_support_ == 1
    np.testing.assert_array_equal(est.support_vectors_, X[-1:])
    assert est.dual_coef_[0] == -eta * (scores[-1] - y[-1])
    # so each prediction is exactly the previous centre's contribution alone
    k = np.exp(-np.sum((X[1:] - X[:-1]) ** 2, axis=1))
    np.testing.assert_allclose(scores[1:], -eta * (scores[:-1] - y[:-1]) * k, rtol=1e-13)


@pytest.mark.parametrize("policy", ["oldest", "smallest"])
@pytest.mark.parametrize("engine", ["cython", "numpy"])
def test_budget_is_never_exceeded(policy, engine):
    X, y = stream(600)
    est = OnlineKernelRegressor(budget=25, budget_policy=policy, engine=engine)
    for lo in range(0, 600, 7):
        est.partial_fit(X[lo:lo + 7], y[lo:lo + 7])
        assert est.n_support_ <= 25
        assert est._expansion.capacity <= 25
    assert est.n_support_ == 25


def test_budget_policies_replace_the_right_centre():
    e = KernelExpansion(1, kernel_params("gaussian"), budget=3, policy=BudgetPolicy.OLDEST)
    X = np.arange(5.0)[:, None]
    pred = np.empty(5)
    from okl._core._pointwise import fit_chunk
    from okl._numpy.pointwise import make_schedule, make_state
    squared, eta = loss_spec("squared"), np.full(5, 1e-3)
    # squared loss with y far from 0: every step adds a centre with coefficient eta * y
    fit_chunk(e, X, np.array([1.0, 2.0, 3.0, 4.0, 5.0]), make_schedule(), squared, make_state(),
              pred, None, eta)
    # slots 0, 1, 2 filled with x = 0, 1, 2; then x = 3 replaced slot 0, x = 4 slot 1
    np.testing.assert_array_equal(e.centers_[:, 0], [3.0, 4.0, 2.0])
    s = KernelExpansion(1, kernel_params("gaussian"), budget=3, policy=BudgetPolicy.SMALLEST)
    fit_chunk(s, X, np.array([5.0, 1.0, 3.0, 2.0, 0.5]), make_schedule(), squared, make_state(),
              pred, None, eta)
    # |coef| ~ 1e-3 |y|: x = 3 (y = 2) evicts x = 1 (y = 1); x = 4 (y = 0.5) is the smallest: dropped
    np.testing.assert_array_equal(sorted(s.centers_[:, 0]), [0.0, 2.0, 3.0])


@pytest.mark.parametrize("kernel", sorted(KERNELS))
@pytest.mark.parametrize("n", [1, 7, 300])
def test_batch_prediction_equals_single_and_direct(kernel, n):
    X, y = stream(n)
    est = OnlineKernelRegressor(kernel=kernel, gamma=0.3, degree=2, coef0=1.0, lam=0.01).fit(X, y)
    X_test, _ = stream(513, seed=2)     # more rows than one dgemm block when n = 300? no: block <= 256
    batch = est.predict(X_test)
    single = np.array([est.predict(x[None, :])[0] for x in X_test[:20]])
    direct = kernel_matrix(X_test, est.support_vectors_, kernel, gamma=0.3, degree=2,
                           coef0=1.0) @ est.dual_coef_ + est.intercept_
    np.testing.assert_allclose(batch[:20], single, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(batch, direct, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kernel", sorted(KERNELS))
def test_rkhs_norm(kernel):
    X, y = stream(40)
    est = OnlineKernelRegressor(kernel=kernel, gamma=0.5, degree=2, coef0=1.0).fit(X, y)
    a, C = est.dual_coef_, est.support_vectors_
    K = kernel_matrix(C, kernel=kernel, gamma=0.5, degree=2, coef0=1.0)
    assert est.rkhs_norm() == pytest.approx(np.sqrt(a @ K @ a), rel=1e-12)


@pytest.mark.parametrize("cls", [KernelExpansion, NumpyExpansion])
def test_state_round_trip_and_engine_conversion(cls):
    X, y = stream(50)
    est = OnlineKernelRegressor(budget=20, lam=0.5, eta=0.9).fit(X, y)
    state = est._expansion.get_state()
    copy = cls.from_state(state)
    X_test, _ = stream(30, seed=3)
    np.testing.assert_allclose(copy.predict(X_test), est._expansion.predict(X_test), rtol=1e-13)
    assert copy.next_slot == est._expansion.next_slot
    again = pickle.loads(pickle.dumps(copy))
    np.testing.assert_array_equal(again.predict(X_test), copy.predict(X_test))


@pytest.mark.parametrize("policy", [BudgetPolicy.OLDEST, BudgetPolicy.SMALLEST])
@pytest.mark.parametrize("lam", [0.1, 3.0])     # 3.0: 1 - eta lam < 0 empties f, then refills it
def test_checkpoint_restore_undoes_overwrites(policy, lam):
    X, y = stream(60)
    from okl._core._pointwise import fit_chunk
    from okl._numpy.pointwise import make_schedule, make_state
    squared, eta = loss_spec("squared"), np.full(30, 0.5)
    e = KernelExpansion(3, kernel_params("gaussian"), budget=10, policy=policy)
    pred = np.empty(30)
    fit_chunk(e, X[:30], y[:30], make_schedule(lam=0.1), squared, make_state(), pred, None, eta)
    before = e.get_state()
    undo = e.checkpoint(30)
    assert len(undo[4]) == 10 and not any(np.ndim(part) == 2 for part in undo)    # no centres
    fit_chunk(e, X[30:], y[30:], make_schedule(lam=lam), squared, make_state(), pred, None, eta)
    assert not np.array_equal(e.get_state()["centers"], before["centers"])
    e.restore(undo)
    after = e.get_state()
    for key, value in before.items():
        np.testing.assert_array_equal(after[key], value, err_msg=key)
