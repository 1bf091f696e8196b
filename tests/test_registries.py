"""One row per kernel, loss and budget policy: every engine and every derived list agrees with it."""
import numpy as np
import pytest

import okl.kernels

from okl import OnlineKernelClassifier, OnlineKernelRegressor
from okl._numpy.expansion import NumpyExpansion
from okl._numpy.kernels import kernel_values
from okl._numpy.losses import derivative, value
from okl.budgets import BUDGET_POLICIES
from okl.kernels import KERNELS, kernel_diag, kernel_matrix, kernel_params
from okl.losses import (
    LOSSES, MARGIN_LOSSES, PAIRWISE_LOSSES, loss_derivative, loss_spec, loss_value,
)


@pytest.mark.parametrize("name", KERNELS)
def test_every_kernel_row_agrees_across_engines(name):
    rng = np.random.default_rng(0)
    X, U = rng.normal(size=(5, 3)), rng.normal(size=(7, 3))
    row = KERNELS[name]
    K = kernel_matrix(X, U, kernel=name, gamma=0.7, degree=2, coef0=0.5)
    spec = kernel_params(row.code, gamma=0.7, degree=2, coef0=0.5)    # nu: its default
    twin = np.array([kernel_values(spec, U, x) for x in X])
    np.testing.assert_allclose(K, twin, rtol=1e-13)
    np.testing.assert_allclose(kernel_diag(X, name, 0.7, 2, 0.5),
                               np.diag(kernel_matrix(X, kernel=name, gamma=0.7, degree=2,
                                                     coef0=0.5)), rtol=1e-13)
    assert name in OnlineKernelRegressor._parameter_constraints["kernel"][0].options
    assert name in okl.kernels.__doc__      # the docstring table is built from the rows


@pytest.mark.parametrize("name", LOSSES)
def test_every_loss_row_agrees_across_engines(name):
    z = np.linspace(-3, 3, 61)
    params = dict(tau=0.3, eps=0.25, delta=0.8, p=1.5)
    spec = loss_spec(name, **params)
    np.testing.assert_allclose(loss_value(name, z, **params), value(spec, z),
                               rtol=1e-14)
    np.testing.assert_allclose(loss_derivative(name, z, **params),
                               derivative(spec, z), rtol=1e-14)
    assert (name in MARGIN_LOSSES) == (LOSSES[name].kind == "margin")
    assert (name in PAIRWISE_LOSSES) == (LOSSES[name].growth(1.0, 2.0) is not None)
    if name in MARGIN_LOSSES:
        assert name in OnlineKernelClassifier._parameter_constraints["loss"][0].options


@pytest.mark.parametrize("policy", BUDGET_POLICIES)
def test_every_budget_policy_is_accepted_and_bounds_the_expansion(policy):
    rng = np.random.default_rng(1)
    X, y = rng.normal(size=(60, 2)), rng.normal(size=60)
    for engine in ("cython", "numpy"):
        est = OnlineKernelRegressor(budget=7, budget_policy=policy, engine=engine).fit(X, y)
        assert est.n_support_ == 7
    assert isinstance(NumpyExpansion(2, kernel_params("gaussian"), budget=3,
                                     policy=BUDGET_POLICIES[policy]).victim(1.0), int)
