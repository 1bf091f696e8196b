"""The size warning and the policy helpers (the facade calls them)."""
import warnings

import pytest

from okl.budgets import (ExpansionSizeWarning, check_budget_policy, check_expansion_size,
                         default_budget_policy)


def test_warns_once_per_decade_naming_both_cures():
    with pytest.warns(ExpansionSizeWarning, match=r"budget=B.*approximation='fourier'"):
        assert check_expansion_size(99_999, 100_000, 20, "OnlineKernelRegressor")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not check_expansion_size(100_000, 150_000, 20, "OnlineKernelRegressor")
        assert not check_expansion_size(10, 5000, 20, "OnlineKernelRegressor")
    with pytest.warns(ExpansionSizeWarning, match="1000000 kernel centres"):
        check_expansion_size(900_000, 1_000_000, 20, "OnlineKernelRegressor")


def test_merge_policy_helpers():
    assert default_budget_policy("gaussian") == "merge"
    assert default_budget_policy("polynomial") == "oldest"
    assert default_budget_policy("laplacian") == "oldest"
    check_budget_policy("merge", "gaussian", "X")
    with pytest.raises(ValueError, match="needs the 'gaussian' kernel.*'oldest' or 'smallest'"):
        check_budget_policy("merge", "laplacian", "OnlineKernelClassifier")
