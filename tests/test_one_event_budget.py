"""The compiled one-event step on a full merge budget: room for the newcomer before the merge."""
import numpy as np
import pytest

from okl import OnlineKernelClassifier, OnlineKernelRegressor


@pytest.mark.parametrize("make", [
    lambda: OnlineKernelRegressor(gamma=0.5, budget=40, budget_policy="merge",
                                  fit_intercept=False),    # every row a centre
    lambda: OnlineKernelClassifier(gamma=0.5, budget=40, budget_policy="merge",
                                   loss="logistic", classes=[0, 1]),
    lambda: OnlineKernelClassifier(gamma=0.5, budget=40, budget_policy="merge",
                                   loss="logistic", classes=[0, 1, 2]),    # MultiExpansion
])
def test_one_event_after_a_chunk_that_filled_a_merge_budget(make):
    """partial_fit of exactly B rows reserves B slots; a merge writes the newcomer to slot B
    first, so the next learn_one must make room for it (it wrote past the buffers before)."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(90, 3))
    if make().__class__ is OnlineKernelRegressor:
        y = np.sin(X[:, 0])
    else:
        y = np.digitize(X[:, 0], [-0.4, 0.4]) % len(make().classes)
    est, ref = make().partial_fit(X[:40], y[:40]), make().partial_fit(X[:40], y[:40])
    assert est._expansion.n_support == est._expansion.capacity == 40     # B slots, full
    for x, target in zip(X[40:], y[40:]):
        est.learn_one(x, target)
    assert est._expansion.capacity == 41 and est.n_support_ == 40
    ref.partial_fit(X[40:], y[40:])                     # same iterates as the chunk loop
    np.testing.assert_allclose(est.decision_function(X) if hasattr(est, "classes_")
                               else est.predict(X),
                               ref.decision_function(X) if hasattr(ref, "classes_")
                               else ref.predict(X), atol=1e-12)
