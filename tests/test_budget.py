"""The size warning and the policy helpers (the facade calls them)."""
import numpy as np
import pytest

from okl import OnlineKernelClassifier, OnlineKernelRegressor
from okl._warnings import SizeWarning
from okl.budgets import check_budget_policy, default_budget_policy


def test_merge_policy_helpers():
    assert default_budget_policy("gaussian") == "merge"
    assert default_budget_policy("polynomial") == "oldest"
    assert default_budget_policy("laplacian") == "oldest"
    check_budget_policy("merge", "gaussian", "X")
    with pytest.raises(ValueError, match="needs the 'gaussian' kernel.*'oldest' or 'smallest'"):
        check_budget_policy("merge", "laplacian", "OnlineKernelClassifier")


def test_size_warning_names_budget_and_approximation(monkeypatch):
    import okl._warnings as guard
    monkeypatch.setattr(guard, "EXPANSION_WORK", 40)
    X, y = np.random.default_rng(0).normal(size=(30, 2)), np.arange(30.0)
    with pytest.warns(SizeWarning, match=r"budget=B.*approximation='fourier'"):
        OnlineKernelRegressor(budget=None).fit(X, y)


def test_auto_policy_is_not_a_changed_parameter():
    X = np.random.default_rng(0).normal(size=(60, 2))
    y = (X[:, 0] > 0).astype(int)
    est = OnlineKernelClassifier(budget=10).fit(X[:30], y[:30])
    est.partial_fit(X[30:], y[30:])                          # "auto" resolved to merge: unchanged
    with pytest.raises(ValueError, match="budget_policy"):
        est.set_params(budget_policy="oldest").partial_fit(X, y)

