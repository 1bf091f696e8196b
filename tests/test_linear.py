"""The linear loop over feature rows: Cython vs NumPy twin, lazy scale, atomicity pieces, cosine."""
import numpy as np
import pytest

from okl._core import _linear as cy
from okl._core._losses import Loss
from okl._feature_maps import NystroemFeatures, RandomFourierFeatures
from okl._core._pointwise import fit_chunk as cy_loop
from okl._numpy import linear as nl
from okl._numpy.pointwise import fit_chunk as np_loop, make_schedule, make_state

LOSSES = [(Loss.SQUARED, None), (Loss.PINBALL, False), (Loss.HUBER, False),
          (Loss.HINGE, True), (Loss.LOGISTIC, True)]


def run(loop, model, Z, y, eta, lam, loss, state):
    """The pointwise loop over feature rows with given steps; `state` (None: no offset) is updated."""
    assert np.all(lam == lam[0])
    out, kdiag = np.empty(len(Z)), np.einsum("ij,ij->i", Z, Z)
    spec = dict(kind=int(loss), tau=0.3, eps=0.05, delta=0.5, p=2.0)
    schedule = make_schedule(lam=lam[0], intercept=state is not None)
    status, after = loop(model, Z, y, schedule, spec, state or make_state(), out, None, eta, kdiag)
    if state is not None:
        state.update(after)
    return status, out


@pytest.mark.parametrize("loss,margin", LOSSES)
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_twin_iterates_on_a_long_stream(loss, margin, fit_intercept):
    rng = np.random.default_rng(int(loss) + 7 * fit_intercept)
    n, d = 2000, 5
    X = rng.normal(size=(n, d))
    y = np.sign(X[:, 0] + 0.3 * rng.normal(size=n)) if margin else np.sin(X[:, 0]) + 0.1 * rng.normal(size=n)
    Z = RandomFourierFeatures("gaussian", 0.5, 64, random_state=0).fit(d).transform(X)
    t = np.arange(1, n + 1)
    eta, lam = 0.5 * t ** -0.6, np.full(n, 1e-2)
    a, b = cy.LinearModel(64), nl.NumpyLinearModel(64)
    oa, ob = (make_state(), make_state()) if fit_intercept else (None, None)
    for lo in range(0, n, 300):                                   # chunks
        rows = slice(lo, lo + 300)
        sa, pa = run(cy_loop, a, Z[rows], y[rows], eta[rows], lam[rows], loss, oa)
        sb, pb = run(np_loop, b, Z[rows], y[rows], eta[rows], lam[rows], loss, ob)
        assert sa == sb == -1
        np.testing.assert_allclose(pa, pb, rtol=0, atol=1e-10)
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=0, atol=1e-10)
    if fit_intercept:
        assert oa["b"] == pytest.approx(ob["b"], abs=1e-10) and oa["b"] != 0.0
    np.testing.assert_allclose(a.predict(Z[:50]), b.predict(Z[:50]), atol=1e-10)


def test_lazy_scale_renormalises_and_zeroes():
    rng = np.random.default_rng(1)
    Z, y = rng.normal(size=(500, 8)), rng.normal(size=500)
    a, b = cy.LinearModel(8), nl.NumpyLinearModel(8)
    eta, lam = np.full(500, 0.1), np.full(500, 5.0)             # shrink 0.5 per step
    run(cy_loop, a, Z, y, eta, lam, Loss.SQUARED, None)
    run(np_loop, b, Z, y, eta, lam, Loss.SQUARED, None)
    assert a.n_rescale > 0
    np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-12)
    lam[:] = 20.0                                                 # 1 - eta lam < 0: w = 0 before the add
    run(cy_loop, a, Z[:1], y[:1], eta[:1], lam[:1], Loss.SQUARED, None)
    run(np_loop, b, Z[:1], y[:1], eta[:1], lam[:1], Loss.SQUARED, None)
    np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-12)


def test_divergence_is_reported_and_checkpoint_restores():
    Z, y = np.ones((5, 3)), np.array([1e308] * 5)
    a = cy.LinearModel(3)
    state = a.checkpoint()
    status, _ = run(cy_loop, a, Z, y, np.full(5, 1e10), np.zeros(5), Loss.SQUARED, None)
    assert status >= 0
    a.restore(state)
    np.testing.assert_array_equal(a.coef_, 0.0)


def test_state_round_trip_and_engine_switch():
    rng = np.random.default_rng(2)
    Z, y = rng.normal(size=(100, 6)), rng.normal(size=100)
    a = cy.LinearModel(6)
    run(cy_loop, a, Z, y, np.full(100, 0.05), np.full(100, 0.1), Loss.SQUARED, make_state())
    s = a.get_state()
    for other in (cy.LinearModel.from_state(s), nl.NumpyLinearModel.from_state(s)):
        np.testing.assert_allclose(other.predict(Z), a.predict(Z), atol=1e-12)
    import pickle
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(a)).predict(Z), a.predict(Z))


def test_simd_cosine_equals_numpy():
    rng = np.random.default_rng(3)
    for scale in (1.0, 30.0, 1e5):
        Z = rng.normal(size=(37, 129)) * scale
        b = rng.uniform(0, 2 * np.pi, 129)
        ref = 0.7 * np.cos(Z + b)
        cy.cos_rows(Z, b, 0.7)
        np.testing.assert_allclose(Z, ref, rtol=0, atol=5e-16)


def test_nystroem_switch_continues_the_exact_function():
    # NOGD: the weights converted from an exact expansion over the landmarks predict the same
    rng = np.random.default_rng(4)
    L, a = rng.normal(size=(30, 3)), rng.normal(size=30)
    f = NystroemFeatures(L, "gaussian", 0.5)
    model = cy.LinearModel(f.n_components)
    model.set_coef(f.weights_from_expansion(a))
    X = rng.normal(size=(40, 3))
    K = np.exp(-0.5 * ((X[:, None] - L[None]) ** 2).sum(axis=2))
    np.testing.assert_allclose(model.predict(f.transform(X)), K @ a, atol=1e-9)
