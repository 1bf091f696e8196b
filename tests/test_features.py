"""Random Fourier and Nystroem feature maps: kernel approximation, exactness, state, seeds."""
import numpy as np
import pytest

from okl._feature_maps import NystroemFeatures, RandomFourierFeatures, kernel_matrix


def exact(kernel, gamma, X, U):
    if kernel == "gaussian":
        return np.exp(-gamma * ((X[:, None] - U[None]) ** 2).sum(axis=2))
    return np.exp(-gamma * np.abs(X[:, None] - U[None]).sum(axis=2))


@pytest.mark.parametrize("kernel", ["gaussian", "laplacian"])
def test_fourier_inner_products_converge(kernel):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 5)) / np.sqrt(5)
    K = exact(kernel, 0.7, X, X)
    errs = []
    for D in (100, 10_000):
        Z = RandomFourierFeatures(kernel, 0.7, D, random_state=1).fit(5).transform(X)
        errs.append(np.abs(Z @ Z.T - K).max())
    # each entry is a mean of D terms bounded by 2 (|2 cos cos| <= 2): Hoeffding with a
    # union bound over 1600 pairs gives max error <= 2 sqrt(2 log(2 * 1600 / 1e-6) / D)
    # with probability 1 - 1e-6
    assert errs[1] <= 2 * np.sqrt(2 * np.log(3200 / 1e-6) / 10_000)
    assert errs[1] < errs[0]


def test_fourier_shape_layout_and_seeds():
    X = np.random.default_rng(0).normal(size=(5000, 3))
    a = RandomFourierFeatures("gaussian", 1.0, 64, random_state=3).fit(X)
    b = RandomFourierFeatures("gaussian", 1.0, 64, random_state=3).fit(3)
    c = RandomFourierFeatures("gaussian", 1.0, 64, random_state=4).fit(3)
    Z = a.transform(X)
    assert Z.shape == (5000, 64) and Z.dtype == np.float64 and Z.flags.c_contiguous
    np.testing.assert_array_equal(Z, b.transform(X))
    assert not np.allclose(Z, c.transform(X))
    # per-chunk computation equals the one-shot formula
    np.testing.assert_allclose(Z, np.sqrt(2 / 64) * np.cos(X @ a.W + a.b), atol=1e-13)


@pytest.mark.parametrize("kind", ["fourier", "nystroem"])
def test_state_round_trip(kind):
    rng = np.random.default_rng(2)
    X = rng.normal(size=(50, 4))
    if kind == "fourier":
        f = RandomFourierFeatures("laplacian", 0.3, 32, random_state=0).fit(4)
        g = RandomFourierFeatures.from_state(f.get_state())
    else:
        f = NystroemFeatures(X[:20], "gaussian", 0.3)
        g = NystroemFeatures.from_state(f.get_state())
    np.testing.assert_array_equal(f.transform(X), g.transform(X))


def test_fourier_refuses_other_kernels():
    with pytest.raises(ValueError, match="gaussian"):
        RandomFourierFeatures("polynomial", 1.0, 10)


@pytest.mark.parametrize("kernel", ["gaussian", "laplacian", "polynomial", "linear"])
def test_nystroem_exact_on_landmarks(kernel):
    rng = np.random.default_rng(5)
    L = rng.normal(size=(30, 6)) / np.sqrt(6)
    f = NystroemFeatures(L, kernel, gamma=0.5, degree=2, coef0=1.0)
    Z = f.transform(L)
    K = kernel_matrix(f.params, L, L)
    np.testing.assert_allclose(Z @ Z.T, K, atol=1e-9)


def test_nystroem_converts_an_expansion_exactly():
    rng = np.random.default_rng(6)
    L = rng.normal(size=(25, 3))
    a = rng.normal(size=25)
    f = NystroemFeatures(L, "gaussian", gamma=0.4)
    assert f.n_components == 25                     # nothing dropped
    w = f.weights_from_expansion(a)
    X = rng.normal(size=(200, 3))
    direct = exact("gaussian", 0.4, X, L) @ a
    np.testing.assert_allclose(f.transform(X) @ w, direct, atol=1e-9)
    # ||w||^2 is the RKHS norm of f
    assert w @ w == pytest.approx(a @ exact("gaussian", 0.4, L, L) @ a, rel=1e-9)


def test_nystroem_drops_small_eigenvalues_and_projects():
    rng = np.random.default_rng(8)
    base = rng.normal(size=(10, 3))
    L = np.vstack([base, base[:5]])                 # repeated landmarks: K_LL is singular
    f = NystroemFeatures(L, "gaussian", gamma=0.5, tol=1e-10)
    assert f.n_components <= 10
    a = rng.normal(size=15)
    w = f.weights_from_expansion(a)
    X = rng.normal(size=(50, 3))
    # duplicated rows carry the same function: f is unchanged by the projection
    np.testing.assert_allclose(f.transform(X) @ w, exact("gaussian", 0.5, X, L) @ a, atol=1e-7)


@pytest.mark.parametrize("scale", [1.0, 1e8, 1e16, 1e300])
def test_the_fast_cosine_hands_far_arguments_to_libm(scale):
    """The compiled cosine reduces by the quadrant trick, meaningless once |x 2/pi| nears 2^51
    (it returned values near 1e186 there): arguments past 1e7, and NaN, take libm's cos, so
    every feature stays in [-c, c] and equals NumPy's cos of the same argument."""
    from okl._core._linear import cos_rows, fourier_rows
    rng = np.random.default_rng(0)
    D = 70                                   # one full block of 64 columns and a tail
    X = rng.normal(size=(3, 1)) * scale      # d = 1: x W + b is rounded as NumPy rounds it
    X[1, 0] = 0.5                            # an ordinary row beside the far ones
    W = rng.normal(size=(1, D))
    b = rng.uniform(0.0, 2.0 * np.pi, D)
    c = np.sqrt(2.0 / D)
    args = X @ W + b
    want = c * np.cos(args)
    Z = np.empty((3, D))
    fourier_rows(X, W, b, c, Z)
    np.testing.assert_allclose(Z, want, rtol=0, atol=1e-15)
    Z = X @ W
    cos_rows(Z, b, c)
    np.testing.assert_allclose(Z, want, rtol=0, atol=1e-15)
    Z = np.full((1, D), np.nan)
    cos_rows(Z, b, c)
    assert np.isnan(Z).all()


@pytest.mark.parametrize("engine", ["cython", "numpy"])
@pytest.mark.parametrize("approximation, classes", [("fourier", 2), ("fourier", 3),
                                                    ("nystroem", 2), ("nystroem", 3)])
def test_a_chunk_maps_its_features_a_block_at_a_time_with_the_same_iterates(
        monkeypatch, engine, approximation, classes):
    """A chunk's features are mapped FEATURE_ROWS rows at a time (okl._feature_model): the
    blocks change nothing, with sample weights and the exact phase included.  Random Fourier
    features are compiled row by row: bit for bit.  Nystroem's z = k(x, L) C is a BLAS matrix
    product, and BLAS rounds a row differently in blocks of other shapes (OpenBLAS's Haswell
    kernels differ in the last bit): the same iterates to 1e-10, the engines' tolerance."""
    import okl._feature_model as feature_model
    from okl import OnlineKernelClassifier
    rng = np.random.default_rng(5)
    X = rng.normal(size=(700, 4))
    y = np.argmax(X[:, :classes], axis=1) if classes > 2 else (X[:, 0] * X[:, 1] > 0)
    w = rng.uniform(0.5, 2.0, size=len(X))
    models = []
    for rows in (100_000, 37):
        monkeypatch.setattr(feature_model, "FEATURE_ROWS", rows)
        est = OnlineKernelClassifier(approximation=approximation, n_components=30, gamma=0.4,
                                     random_state=0, engine=engine)
        est.partial_fit(X[:650], y[:650], classes=np.unique(y), sample_weight=w[:650])
        est.partial_fit(X[650:], y[650:], sample_weight=w[650:])
        models.append(est)
    assert models[0].t_ == models[1].t_ == len(X)
    tolerance = 0.0 if approximation == "fourier" else 1e-10
    np.testing.assert_allclose(models[0].decision_function(X), models[1].decision_function(X),
                               rtol=0, atol=tolerance)


@pytest.mark.parametrize("repeat", [0, 5])
def test_nystroem_lower_basis_is_a_rotation_whose_one_row_map_reads_half(repeat):
    """basis="lower" (the default) is the eigen basis rotated by an orthogonal Q that makes C
    zero above its diagonal: the same kernel approximation, the same f from the same
    expansion, and the compiled one-row map (which reads C from row j on) agrees with
    `transform`; with a dropped eigenvalue (repeated landmarks) C is lower-trapezoidal."""
    from okl._core._linear import FeatureRow
    rng = np.random.default_rng(3)
    base = rng.normal(size=(70, 4)) / 2
    L = np.vstack([base, base[:repeat]])
    lower = NystroemFeatures(L, "gaussian", gamma=0.7, tol=1e-10)
    eigen = NystroemFeatures(L, "gaussian", gamma=0.7, tol=1e-10, basis="eigen")
    C = lower.components
    assert lower.basis == "lower" and C.shape == eigen.components.shape
    assert not np.any(np.triu(C, 1)) and np.any(np.triu(eigen.components, 1))
    X = rng.normal(size=(40, 4)) / 2
    Zl, Ze = lower.transform(X), eigen.transform(X)
    np.testing.assert_allclose(Zl, Ze @ lower.rotation, atol=1e-12)
    np.testing.assert_allclose(Zl @ Zl.T, Ze @ Ze.T, atol=1e-12)
    a = rng.normal(size=(len(L), 3))
    np.testing.assert_allclose(Zl @ lower.weights_from_expansion(a),
                               Ze @ eigen.weights_from_expansion(a), atol=1e-10)
    for fmap, Z in ((lower, Zl), (eigen, Ze)):
        np.testing.assert_allclose(fmap.row_map().transform(X), Z, atol=1e-12)
    with pytest.raises(ValueError, match="basis"):
        NystroemFeatures(L, "gaussian", basis="other")


def test_a_nystroem_state_without_a_basis_is_the_eigen_basis_of_its_time():
    """A model saved before the lower basis (its state has no fmap_basis, its weights are in
    the eigen basis) loads with that basis and predicts as it did."""
    from okl import OnlineKernelRegressor
    from okl._feature_model import FeatureModel
    rng = np.random.default_rng(4)
    X = rng.normal(size=(300, 3))
    y = np.sin(X[:, 0]) + X[:, 1]
    est = OnlineKernelRegressor(approximation="nystroem", n_components=40, gamma=0.5).fit(X, y)
    model = est._expansion
    state = model.get_state()
    assert state["fmap_basis"] == "lower"
    old = dict(state, linear_w=model.fmap.rotation @ state["linear_w"])
    del old["fmap_basis"]
    restored = FeatureModel.from_state(old)
    assert restored.fmap.basis == "eigen"
    np.testing.assert_allclose(restored.linear.predict(restored.fmap.transform(X)),
                               model.linear.predict(model.fmap.transform(X)), atol=1e-10)
