"""BSGD merging: the degradation formula, the exact merge point, the table, the twin, signs,
the budget policy."""
import numpy as np
import pytest

from okl._core._kernels import Kernel
from okl._core import _merge as cy
from okl._numpy import merge as nm

G = int(Kernel.GAUSSIAN)


def gauss(X, U, gamma):
    d2 = ((X[:, None, :] - U[None, :, :]) ** 2).sum(axis=2)
    return np.exp(-gamma * d2)


def rkhs_sq(points, coef, gamma):
    P = np.asarray(points)
    return float(coef @ gauss(P, P, gamma) @ coef)


@pytest.mark.parametrize("seed", range(30))
def test_degradation_is_the_rkhs_distance(seed):
    rng = np.random.default_rng(seed)
    d, gamma = 4, rng.uniform(0.1, 2.0)
    xm, xn = rng.normal(size=d), rng.normal(size=d)
    cm = rng.normal()
    cn = np.sign(cm) * (abs(cm) + rng.exponential())
    h, cz, loss = cy.merge_pair(cm, cn, gamma * ((xm - xn) ** 2).sum())
    z = h * xm + (1 - h) * xn
    direct = rkhs_sq([xm, xn, z], np.array([cm, cn, -cz]), gamma)
    assert loss == pytest.approx(direct, rel=1e-9, abs=1e-12)
    # c_z is the projection of c_m K_m + c_n K_n on K_z
    k = gauss(np.array([z]), np.array([xm, xn]), gamma)[0]
    assert cz == pytest.approx(cm * k[0] + cn * k[1], rel=1e-12, abs=1e-15)
    k_mn = np.exp(-gamma * ((xm - xn) ** 2).sum())
    assert 0.0 <= loss <= cm * cm * (1 - k_mn ** 2) * (1 + 1e-12) + 1e-15   # never worse than z = x_n


def line_search(cm, cn, g):
    """max |c_z(h)| over h in [0, 1] by brute force: a grid of 20001 points, then golden
    section on the bracket around the best; (h, c_z, degradation)."""
    def cz(h):
        return cm * np.exp(-g * (1 - h) ** 2) + cn * np.exp(-g * h ** 2)
    grid = np.linspace(0, 1, 20001)
    i = int(np.argmax(np.abs(cz(grid))))
    a, b = grid[max(i - 1, 0)], grid[min(i + 1, 20000)]
    for _ in range(60):
        p, q = b - 0.618034 * (b - a), a + 0.618034 * (b - a)
        if abs(cz(p)) >= abs(cz(q)):
            b = q
        else:
            a = p
    h = 0.5 * (a + b)
    c = float(cz(h))
    return h, c, cm * cm + cn * cn + 2 * cm * cn * np.exp(-g) - c * c


MU = np.concatenate([[1e-4, 1e-3], np.linspace(0.01, 0.5, 22)])
KS = np.concatenate([[1e-6, 1e-3], np.linspace(0.01, 0.99, 34), [0.999, 1 - 1e-6]])


@pytest.mark.parametrize("engine", [cy, nm])
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_exact_merge_point_matches_a_brute_force_line_search(engine, sign):
    # over a grid of (mu, k), both signs, and |c_m| > |c_n| (mu in (1/2, 1)) by symmetry
    for mu in MU:
        for k in KS:
            g = -np.log(k)
            cm, cn = sign * mu * 3.0, sign * (1 - mu) * 3.0
            h, cz, loss = engine.merge_pair(cm, cn, g)
            hb, czb, lossb = line_search(cm, cn, g)
            # in units of the removal cost, plus the rounding of the line search's
            # c_m^2 + c_n^2 + 2 c_m c_n k - c_z^2 (the exact solver's form has none)
            tol = 1e-9 * cm * cm + 1e-14 * (cm + cn) ** 2
            assert loss <= lossb + tol           # never worse than the line search
            assert loss == pytest.approx(lossb, abs=tol)
            assert cz == pytest.approx(czb, rel=1e-10)
            if not (mu > 0.45 and 1.7 < g < 2.3):    # the optimum is flat in h at the pitchfork
                # at mu = 1/2 (c_m = c_n) and g > 2, h and 1 - h are both optimal: the line
                # search's grid takes either, as the last bit of NumPy's exp decides
                assert (h == pytest.approx(hb, abs=1e-4)
                        or (mu == 0.5 and h == pytest.approx(1 - hb, abs=1e-4)))
            h2, cz2, loss2 = engine.merge_pair(cn, cm, g)    # mu -> 1 - mu: h -> 1 - h
            assert cz2 == pytest.approx(cz, rel=1e-12)
            assert h2 == pytest.approx(1 - h, abs=1e-12) or mu == 0.5    # (two optima when g > 2)
            assert loss2 == pytest.approx(loss, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("engine", [cy, nm])
def test_the_table_matches_a_brute_force_line_search(engine):
    # tabulated rho(mu, k) = degradation / c_m^2 against the line search, within TABLE_TOL
    # (the merge search solves exactly every partner the table leaves within TABLE_TOL)
    tol = cy.TABLE_TOL
    assert tol == nm.TOL and cy.TABLE_SHAPE == (nm.NM + 1, nm.NK + 1)
    worst = 0.0
    for mu in np.linspace(0.0005, 0.5, 23):
        for k in np.linspace(0.0, 1.0, 61):
            if k == 0.0:
                exact = 1.0
            else:
                exact = line_search(mu, 1 - mu, -np.log(k))[2] / mu ** 2
            worst = max(worst, abs(float(engine.rho(mu, k)) - exact))
    assert worst < tol / 2


def test_interpolation_error_is_below_the_tolerance_everywhere():
    # the largest error (3.0e-3, near mu = 1/2, k = e^-2) is half of TABLE_TOL
    rng = np.random.default_rng(0)
    mu, k = rng.uniform(0, 0.5, 20000), rng.uniform(0, 1, 20000)
    mu[:2000] = rng.uniform(0.45, 0.5, 2000)
    k[:2000] = rng.uniform(0.1, 0.2, 2000)
    err = [abs(cy.rho(a, b) - cy.rho_exact(a, b)) for a, b in zip(mu, k)]
    assert max(err) < 0.55 * cy.TABLE_TOL
    cy_rho = [cy.rho(a, b) for a, b in zip(mu[:500], k[:500])]
    np.testing.assert_allclose(nm.rho(mu[:500], k[:500]), cy_rho, rtol=0, atol=1e-12)


def test_both_engines_build_the_same_table():
    T = cy.rho_table()
    np.testing.assert_allclose(nm.rho_table(), T, rtol=0, atol=1e-12)
    assert T[:, 0].tolist() == [1.0] * T.shape[0]                   # k = 0: a removal
    np.testing.assert_allclose(T[:, -1], 0.0, atol=1e-12)           # k = 1: a free merge
    assert (np.diff(T, axis=0) <= 1e-12).all() and (np.diff(T, axis=1) <= 1e-12).all()


@pytest.mark.parametrize("engine", [cy, nm])
def test_bimodal_segment_takes_the_bump_at_the_larger_coefficient(engine):
    # far apart (g = 8): c_z has a bump near each end; the one near x_n (larger |c|) wins
    h, cz, loss = engine.merge_pair(0.5, 1.0, 8.0)
    grid = np.linspace(0, 1, 100001)
    cz_grid = 0.5 * np.exp(-8 * (1 - grid) ** 2) + np.exp(-8 * grid ** 2)
    assert cz >= cz_grid.max() - 1e-12
    assert h < 0.01


@pytest.mark.parametrize("engine", [cy, nm])
def test_mu_outside_zero_one_is_refused(engine):
    # opposite signs (mu = c_m / (c_m + c_n) outside [0, 1]) are never merged (the contract)
    for cm, cn in [(0.3, -0.8), (-0.3, 0.8), (0.8, -0.3)]:
        with pytest.raises(ValueError, match="same sign"):
            engine.merge_pair(cm, cn, 0.5)
    with pytest.raises(ValueError, match="rho needs"):
        cy.rho(0.7, 0.5)


@pytest.mark.parametrize("engine", [cy, nm])
def test_opposite_signs_are_never_partners(engine):
    rng = np.random.default_rng(5)
    C = rng.normal(size=(40, 3))
    c = rng.normal(size=40)
    m, p, h, cz, loss = engine.merge_find(C, c, 0.5)
    assert p >= 0 and c[m] * c[p] > 0
    # the nearest centre has the opposite sign: still not chosen
    C2 = np.array([[0.0, 0.0], [0.01, 0.0], [3.0, 0.0]])
    c2 = np.array([0.1, -5.0, 2.0])
    m, p, h, cz, loss = engine.merge_find(C2, c2, 0.5)
    assert (m, p) == (0, 2)
    # no partner of the sign of c_m: x_m is removed, degradation c_m^2
    m, p, h, cz, loss = engine.merge_find(C2[:2], c2[:2], 0.5)
    assert (m, p) == (0, -1) and loss == pytest.approx(0.01)
    with pytest.raises(ValueError, match="same sign"):
        engine.merge_pair(0.3, -0.8, 0.7)


def brute_force(centers, coef, gamma):
    m = int(np.argmin(np.abs(coef)))
    best = (coef[m] ** 2, -1, 0.0, 0.0)
    for i in range(len(coef)):
        if i == m or coef[i] * coef[m] <= 0:
            continue
        g = gamma * ((centers[m] - centers[i]) ** 2).sum()
        h, cz, loss = line_search(coef[m], coef[i], g)
        if best[1] < 0 or loss < best[0]:
            best = (loss, i, h, cz)
    return m, best


@pytest.mark.parametrize("seed", range(40))
def test_twin_and_pruned_scan_equal_the_brute_force_scan(seed):
    rng = np.random.default_rng(seed)
    n, d = rng.integers(2, 60), rng.integers(1, 30)
    centers = rng.normal(size=(n, d))
    coef = rng.normal(size=n) * rng.exponential(size=n)
    gamma = rng.uniform(0.02, 1.0) / d
    got_cy = cy.merge_find(centers, coef, gamma)
    got_np = nm.merge_find(centers, coef, gamma)
    assert got_cy[:2] == got_np[:2]
    np.testing.assert_allclose(got_cy[2:], got_np[2:], rtol=0, atol=1e-12)
    # the merge decisions of a line search per partner, up to its own accuracy
    m, (loss, partner, h, cz) = brute_force(centers, coef, gamma)
    tol = 1e-9 * coef[m] ** 2 + 1e-14 * np.max(coef ** 2)
    assert got_np[0] == m and got_np[4] <= loss + tol
    assert got_np[1] == partner or abs(got_np[4] - loss) <= tol


@pytest.mark.parametrize("seed", range(5))
def test_merge_step_twin_over_a_long_sequence(seed):
    rng = np.random.default_rng(seed)
    d, B, gamma = 6, 20, 0.3
    A = rng.normal(size=(B, d))
    a = rng.normal(size=B)
    Ac, ac = A.copy(), a.copy()
    for t in range(300):
        x, c = rng.normal(size=d), rng.normal()
        A, a, _ = nm.merge_step(np.vstack([A, x]), np.append(a, c), gamma)
        Ac, ac, _ = cy.merge_step(np.vstack([Ac, x]), np.append(ac, c), gamma)
        assert len(a) == B
    np.testing.assert_allclose(Ac, A, rtol=0, atol=1e-10)
    np.testing.assert_allclose(ac, a, rtol=0, atol=1e-10)


def test_scale_invariance():
    rng = np.random.default_rng(3)
    C, c = rng.normal(size=(30, 4)), rng.normal(size=30)
    m, p, h, cz, loss = cy.merge_find(C, c, 0.4)
    m2, p2, h2, cz2, loss2 = cy.merge_find(C, -2.5 * c, 0.4)
    assert (m, p) == (m2, p2) and h2 == pytest.approx(h, abs=1e-9)
    assert cz2 == pytest.approx(-2.5 * cz) and loss2 == pytest.approx(6.25 * loss)


def test_degenerate_cases_remove():
    assert cy.merge_find(np.zeros((1, 3)), np.array([0.5]), 1.0)[1] == -1
    m, p, h, cz, loss = cy.merge_find(np.eye(3), np.array([0.0, 1.0, 2.0]), 1.0)
    assert (m, p, loss) == (0, -1, 0.0)


def test_norm_change_formula():
    # the exact ||f||_K^2 correction a norm-keeping learner (kernel PA) applies after a merge
    rng = np.random.default_rng(7)
    gamma, n = 0.5, 12
    C, c = rng.normal(size=(n, 3)), rng.normal(size=n)
    m, p, h, cz, loss = nm.merge_find(C, c, gamma)
    z = h * C[m] + (1 - h) * C[p]
    rest = [i for i in range(n) if i not in (m, p)]
    K = lambda U, V: gauss(np.atleast_2d(U), np.atleast_2d(V), gamma)
    before = float(c @ K(C, C) @ c)
    C2, c2, _ = nm.merge_step(C, c, gamma)
    after = float(c2 @ K(C2, C2) @ c2)
    delta = nm.norm_change(c[rest], K(C[rest], C[m])[:, 0], K(C[rest], C[p])[:, 0],
                           K(C[rest], z)[:, 0], c[m], c[p], cz, loss)
    assert after - before == pytest.approx(delta, rel=1e-9, abs=1e-12)


# -- the merge budget policy inside the expansions and the learners ------------------------

from okl import OnlineKernelClassifier, OnlineKernelRegressor  # noqa: E402
from okl._core._expansion import BudgetPolicy, KernelExpansion  # noqa: E402
from okl.kernels import kernel_params  # noqa: E402
from okl._core._losses import Loss  # noqa: E402
from okl._core._pointwise import fit_chunk as cy_fit  # noqa: E402
from okl._numpy.expansion import NumpyExpansion  # noqa: E402
from okl._numpy.pointwise import fit_chunk as np_fit, make_schedule, make_state  # noqa: E402


def spec(loss):
    return dict(kind=int(loss), tau=0.5, eps=0.0, delta=1.0, p=2.0)


@pytest.mark.parametrize("loss", [Loss.SQUARED, Loss.HINGE])
def test_merge_policy_twin_on_a_long_stream(loss):
    kind = G
    rng = np.random.default_rng(int(loss))
    n, d, B = 2000, 4, 30
    X = rng.normal(size=(n, d))
    y = np.sign(X[:, 0] * X[:, 1]) if loss == Loss.HINGE else np.sin(2 * X[:, 0]) + 0.1 * rng.normal(size=n)
    t = np.arange(1, n + 1)
    eta, lam = 0.5 * t ** -0.5, np.full(n, 1e-3)
    exps = [cls(d, kernel_params(kind, gamma=0.5), B, int(BudgetPolicy.MERGE))
            for cls in (KernelExpansion, NumpyExpansion)]
    for lo in range(0, n, 250):
        outs = []
        for e, fit in zip(exps, (cy_fit, np_fit)):
            out = np.empty(250)
            e.checkpoint(250)
            failed, _ = fit(e, X[lo:lo + 250], y[lo:lo + 250], make_schedule(lam=lam[0]),
                            spec(loss), make_state(), out, None, eta[lo:lo + 250])
            assert failed == -1
            outs.append(out)
        np.testing.assert_allclose(outs[0], outs[1], rtol=0, atol=1e-10)
    a, b = exps
    assert a.n_support == b.n_support == B and a.n_merges == b.n_merges > 0
    np.testing.assert_allclose(a.centers_, b.centers_, rtol=0, atol=1e-10)
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=0, atol=1e-10)


def test_merge_policy_restores_after_a_failed_chunk():
    rng = np.random.default_rng(0)
    e = KernelExpansion(3, kernel_params(G, gamma=0.5), 10, int(BudgetPolicy.MERGE))
    X, y = rng.normal(size=(40, 3)), rng.normal(size=40)
    squared, schedule = spec(Loss.SQUARED), make_schedule(lam=1e-3)
    cy_fit(e, X, y, schedule, squared, make_state(), np.empty(40), None, np.full(40, 0.5))
    before = e.get_state()
    token = e.checkpoint(30)
    cy_fit(e, X[:30] + 1, y[:30], schedule, squared, make_state(), np.empty(30), None,
           np.full(30, 0.5))
    e.restore(token)
    after = e.get_state()
    for key in ("centers", "coef", "sqnorms"):
        np.testing.assert_array_equal(before[key], after[key])


@pytest.mark.parametrize("cls", [OnlineKernelClassifier, OnlineKernelRegressor])
def test_learners_merge_by_default_and_engines_agree(cls):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(600, 3))
    y = np.where(X[:, 0] * X[:, 1] > 0, 1, 0) if cls is OnlineKernelClassifier else np.sin(X[:, 0])
    a = cls(gamma=0.5, budget=25).fit(X, y)
    b = cls(gamma=0.5, budget=25, engine="numpy").fit(X, y)
    assert a._expansion.policy == BudgetPolicy.MERGE and a.n_support_ == 25
    assert a._expansion.n_merges > 0
    np.testing.assert_allclose(a.decision_function(X[:50]) if hasattr(a, "classes_") else a.predict(X[:50]),
                               b.decision_function(X[:50]) if hasattr(b, "classes_") else b.predict(X[:50]),
                               atol=1e-10)
    c = cls(gamma=0.5, budget=25, kernel="laplacian")
    c.fit(X, y)
    assert c._expansion.policy == BudgetPolicy.OLDEST        # "auto" on a kernel that cannot merge


def test_merge_on_a_kernel_that_cannot_merge_is_refused():
    X, y = np.eye(3), np.arange(3.0)
    for kernel in ("linear", "laplacian"):
        with pytest.raises(ValueError, match="'gaussian' kernel.*'oldest' or 'smallest'"):
            OnlineKernelRegressor(kernel=kernel, budget=2, budget_policy="merge").fit(X, y)
    with pytest.raises(ValueError, match="'gaussian' kernel"):
        KernelExpansion(2, kernel_params(int(Kernel.LAPLACIAN)), 5, int(BudgetPolicy.MERGE))


# -- kernel PA: a merging budget keeps ||f||_K^2 exact ----------------------------------------

from okl import RegularizedPAClassifier  # noqa: E402


@pytest.mark.parametrize("regularization", ["none", "objective"])
def test_kernel_pa_merges_and_keeps_the_exact_norm(regularization):
    rng = np.random.default_rng(2)
    X = rng.normal(size=(800, 3))
    y = np.where(X[:, 0] * X[:, 1] > 0, 1, -1)
    kw = dict(regularization=regularization, kernel="gaussian", gamma=0.7, budget=20, C=1.0)
    a = RegularizedPAClassifier(**kw).fit(X, y)
    b = RegularizedPAClassifier(engine="numpy", **kw).fit(X, y)
    exp = a._model.expansion
    assert exp.policy == BudgetPolicy.MERGE and exp.n_merges > 0 and exp.n_support == 20
    assert a.sq_norm_ == pytest.approx(exp.sq_norm(), rel=1e-9, abs=1e-12)    # kept == recomputed
    assert b.sq_norm_ == pytest.approx(a.sq_norm_, rel=1e-9, abs=1e-12)
    np.testing.assert_allclose(a.decision_function(X[:50]), b.decision_function(X[:50]), atol=1e-10)


@pytest.mark.parametrize("make", [
    lambda: OnlineKernelRegressor(gamma=0.5, budget=15),
    lambda: RegularizedPAClassifier(kernel="gaussian", gamma=0.5, budget=15),
])
def test_merging_models_save_and_load(tmp_path, make):
    import okl
    rng = np.random.default_rng(4)
    X = rng.normal(size=(200, 3))
    y = np.where(X[:, 0] > 0, 1, -1)
    est = make().fit(X[:100], y[:100])
    okl.save(est, tmp_path / "m.npz")
    other = okl.load(tmp_path / "m.npz")
    est.partial_fit(X[100:], y[100:])
    other.partial_fit(X[100:], y[100:])
    score = "predict" if isinstance(est, OnlineKernelRegressor) else "decision_function"
    np.testing.assert_allclose(getattr(other, score)(X), getattr(est, score)(X), atol=1e-12)
