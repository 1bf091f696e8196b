"""verbose=: a progress bar over a long chunk, the same iterates, still all-or-nothing."""
import numpy as np
import pytest

from okl import (
    CoefficientRegularizedClassifier, OnlineKernelClassifier, OnlineKernelRegressor,
    PairwiseLearner, RegularizedPAClassifier,
)


def data(n=2500):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 3))
    return X, (X[:, 0] > 0).astype(int), X[:, 0]


@pytest.mark.parametrize("cls", [OnlineKernelRegressor, OnlineKernelClassifier,
                                 CoefficientRegularizedClassifier, RegularizedPAClassifier,
                                 PairwiseLearner])
def test_verbose_fit_shows_progress_and_learns_the_same(cls, capsys):
    X, labels, values = data()
    y = values if cls in (OnlineKernelRegressor, PairwiseLearner) else labels
    loud, quiet = cls(verbose=True).fit(X, y), cls().fit(X, y)
    assert type(loud).__name__ in capsys.readouterr().err      # the bar, on stderr
    assert loud.t_ == quiet.t_ == 2500
    state = {"coef_", "dual_coef_", "intercept_"}
    for name in state:
        if hasattr(quiet, name):
            np.testing.assert_array_equal(getattr(loud, name), getattr(quiet, name))


def test_a_failure_in_a_later_stretch_restores_the_whole_call(monkeypatch):
    X, _, y = data(2600)
    est = OnlineKernelRegressor(verbose=True, fit_intercept=False).fit(X[:100], y[:100])
    before = (est.t_, est.dual_coef_.copy(), est.support_vectors_.copy())
    bad = X[100:2600].copy()
    bad[1800] = np.inf          # found by validation: nothing learned
    with pytest.raises(ValueError):
        est.partial_fit(bad, y[:2500])
    learn, calls = OnlineKernelRegressor._learn, []

    def second_stretch_fails(self, *args):          # e.g. Ctrl-C during the second stretch
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return learn(self, *args)
    monkeypatch.setattr(OnlineKernelRegressor, "_learn", second_stretch_fails)
    with pytest.raises(KeyboardInterrupt):
        est.partial_fit(X[100:2600], y[:2500])
    assert len(calls) == 2
    assert est.t_ == before[0]
    np.testing.assert_array_equal(est.dual_coef_, before[1])
    np.testing.assert_array_equal(est.support_vectors_, before[2])
