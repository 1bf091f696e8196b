"""Kernels against direct formulas; Gram matrices are PSD; the vectorised exp."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra.numpy import arrays

from sklearn.gaussian_process.kernels import Matern

from okl.kernels import KERNELS, kernel_diag, kernel_matrix

rng = np.random.default_rng(0)
X = rng.normal(size=(30, 4))
U = rng.normal(size=(20, 4))


def direct(x, u, kernel, gamma, degree, coef0):
    if kernel == "linear":
        return x @ u + coef0
    if kernel == "polynomial":
        return (gamma * (x @ u) + coef0) ** degree
    if kernel == "gaussian":
        return np.exp(-gamma * np.sum((x - u) ** 2))
    if kernel == "matern":          # length scale 1 / sqrt(2 gamma), nu = 1.5 (the default)
        return Matern(length_scale=1.0 / np.sqrt(2.0 * gamma), nu=1.5)(x[None], u[None])[0, 0]
    assert kernel == "laplacian"
    return np.exp(-gamma * np.sum(np.abs(x - u)))


@pytest.mark.parametrize("kernel", sorted(KERNELS))
def test_against_direct_formula(kernel):
    params = dict(gamma=0.7, degree=3, coef0=0.5)
    K = kernel_matrix(X, U, kernel, **params)
    expected = np.array([[direct(x, u, kernel, **params) for u in U] for x in X])
    np.testing.assert_allclose(K, expected, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(kernel_diag(X, kernel, **params),
                               np.diag(kernel_matrix(X, None, kernel, **params)), rtol=1e-13)


@pytest.mark.parametrize("kernel", sorted(KERNELS))
def test_gram_is_psd(kernel):
    K = kernel_matrix(X, kernel=kernel, gamma=0.3, degree=2, coef0=1.0)
    np.testing.assert_allclose(K, K.T, rtol=1e-14)
    eig = np.linalg.eigvalsh(K)
    assert eig.min() >= -1e-10 * eig.max()


@settings(max_examples=50, deadline=None)
@given(points=arrays(np.float64, (8, 3), elements=st.floats(-10, 10)),
       kernel=st.sampled_from(sorted(KERNELS)), gamma=st.floats(0.01, 3.0))
def test_gram_is_psd_property(points, kernel, gamma):
    K = kernel_matrix(points, kernel=kernel, gamma=gamma, degree=2, coef0=1.0)
    eig = np.linalg.eigvalsh((K + K.T) / 2)
    assert eig.min() >= -1e-9 * max(1.0, np.abs(eig).max())


def test_vectorised_exp_matches_libm():
    # Gaussian values exp(-gamma d^2) over the whole double range of the exponent
    d2 = np.concatenate([np.linspace(0, 800, 200001), [1e-300, 1e-10, 1e300]])
    x = np.zeros((1, 1))
    u = np.sqrt(d2)[:, None]
    K = kernel_matrix(x, u, "gaussian", gamma=1.0)[0]
    arg = (u * u)[:, 0]          # the squared distance exactly as the loop forms it
    exact = np.exp(-arg)
    inside = arg <= 708
    np.testing.assert_allclose(K[inside], exact[inside], rtol=3e-16)
    # below exp(-708) the kernel saturates at exp(-708) ~ 3.3e-308 instead of 0
    assert np.all(K[~inside] <= np.exp(-708) * (1 + 1e-15))


def test_feature_mismatch():
    with pytest.raises(ValueError, match="X has 4 features but U has 3"):
        kernel_matrix(X, U[:, :3])
    with pytest.raises(ValueError, match="Unknown kernel 'rbf'"):
        kernel_matrix(X, kernel="rbf")
