"""PairwiseLearner: Algorithm 1 of Lin-Lei-Zhang-Zhou, its engines, theory and evaluation."""
import math
import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_diabetes
from sklearn.exceptions import NotFittedError
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

import okl
from okl import PairwiseLearner
from okl._core import _pairwise
from okl._numpy import pairwise as np_pairwise
from okl._params import InvalidParameterError
from okl.evaluation import pairwise_generalization_error, ranking_error
from okl.losses import loss_derivative, loss_spec, loss_value, pairwise_growth
from okl._pair_models import LinearPairModel, MomentsPairModel, PairHistory
from okl.pairwise import lin_eta1, pair_kernel_kappa, reservoir_slots

LOSSES = ["hinge", "logistic", "squared_hinge", "squared", "absolute", "power"]
MARGIN = {"hinge", "logistic", "squared_hinge"}
PAIR_KERNELS = ["linear", "difference", "metric"]


def make_stream(n, d=3, seed=0):
    """Real targets y (a noisy linear-plus-sine function) and class labels of the same rows."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = X @ np.linspace(1.0, -0.5, d) + np.sin(2 * X[:, 0]) + 0.2 * rng.normal(size=n)
    labels = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)
    return X, y, labels


def setting(loss, pair_kernel):
    """A natural reducer for the loss and pair kernel, and which targets it takes."""
    if pair_kernel == "metric":
        return "dissimilar", "labels"
    return ("sign" if loss in MARGIN else "difference"), "y"


def learner(loss, pair_kernel, **kw):
    reducer, target = setting(loss, pair_kernel)
    return PairwiseLearner(reducer=reducer, loss=loss, p=3.0, pair_kernel=pair_kernel,
                           gamma=0.5, **kw), target


def model_arrays(est):
    """The fitted function's parameters, whatever the pair kernel."""
    if est.pair_kernel == "linear":
        return est.coef_
    if est.pair_kernel == "metric":
        return est.metric_
    return est.dual_coef_


def snapshot(est):
    """Everything an estimator holds, as comparable plain values."""
    out = {}
    for key, value in vars(est).items():
        out[key] = value.get_state() if hasattr(value, "get_state") else value
    return pickle.dumps(sorted(out.items()))


# ---- the engines -------------------------------------------------------------------------------

@pytest.mark.parametrize("pair_kernel", PAIR_KERNELS)
@pytest.mark.parametrize("loss", LOSSES)
def test_engines_same_iterates_2000_steps(loss, pair_kernel):
    """cython and numpy engines: max |difference| <= 1e-10 over a 2000-step stream.

    eta_1 = 0.1 (0.01 for |u|^3) moves every model far (max |parameter| 0.07 to
    1.7) without diverging.  Measured: at most 5e-15.
    """
    X, y, labels = make_stream(2000, seed=1)
    _, target = learner(loss, pair_kernel)
    targets = y if target == "y" else labels
    eta = 0.01 if loss == "power" else 0.1
    fitted = {}
    for engine in ("cython", "numpy"):
        est, _ = learner(loss, pair_kernel, eta=eta, engine=engine)
        for lo in range(0, 2000, 700):      # chunks: the history grows between calls
            est.partial_fit(X[lo:lo + 700], targets[lo:lo + 700])
        fitted[engine] = est
    a, b = fitted["cython"], fitted["numpy"]
    assert np.max(np.abs(model_arrays(a))) > 0.05      # the model did move
    assert np.max(np.abs(model_arrays(a) - model_arrays(b))) <= 1e-10
    P1, P2 = X[:200], X[200:400]
    assert np.max(np.abs(a.decision_function(P1, P2) - b.decision_function(P1, P2))) <= 1e-10


@pytest.mark.parametrize("kernel", ["gaussian", "laplacian", "polynomial", "linear"])
def test_engines_agree_for_every_base_kernel(kernel):
    X, y, _ = make_stream(600, seed=2)
    out = [PairwiseLearner(pair_kernel="difference", kernel=kernel, gamma=0.3, degree=2,
                           coef0=1.0, eta=0.5, engine=engine).fit(X, y) for engine in
           ("cython", "numpy")]
    assert np.max(np.abs(out[0].dual_coef_ - out[1].dual_coef_)) <= 1e-10
    assert np.max(np.abs(out[0].score_samples(X) - out[1].score_samples(X))) <= 1e-10


@pytest.mark.parametrize("pair_kernel", PAIR_KERNELS)
def test_engines_agree_with_a_reservoir(pair_kernel):
    X, y, labels = make_stream(1500, seed=3)
    est0, target = learner("hinge", pair_kernel)
    targets = y if target == "y" else labels
    out = []
    for engine in ("cython", "numpy"):
        est, _ = learner("hinge", pair_kernel, eta=0.3, buffer=64, random_state=7,
                         engine=engine)
        out.append(est.fit(X, targets))
    assert out[0].n_stored_ == out[1].n_stored_ == 64
    assert np.max(np.abs(model_arrays(out[0]) - model_arrays(out[1]))) <= 1e-10


def test_engine_switch_midstream():
    X, y, _ = make_stream(400, seed=4)
    ref = PairwiseLearner(pair_kernel="difference", eta=0.5, gamma=1.0).fit(X, y)
    est = PairwiseLearner(pair_kernel="difference", eta=0.5, gamma=1.0).partial_fit(X[:200],
                                                                                    y[:200])
    est.set_params(engine="numpy").partial_fit(X[200:300], y[200:300])
    est.set_params(engine="cython").partial_fit(X[300:], y[300:])
    assert np.max(np.abs(est.dual_coef_ - ref.dual_coef_)) <= 1e-10


# ---- Algorithm 1, literally ----------------------------------------------------------------------

def _slope(loss, r, a, p=3.0):
    """The left derivative in a of V(r, a), written out independently of okl."""
    if loss in MARGIN:
        z = r * a
        if loss == "hinge":     # left slope in a: phi'_- (r > 0) or phi'_+ (r < 0) at z
            active = z <= 1 if r > 0 else z < 1
            return -r if active else 0.0
        if loss == "logistic":
            return -r / (1 + math.exp(z))
        return -2 * r * max(0.0, 1 - z)
    u = a - r
    if loss == "squared":
        return u
    if loss == "absolute":
        return 1.0 if u > 0 else -1.0
    return p * abs(u) ** (p - 1) * (1.0 if u > 0 else -1.0)


def _reduce(reducer, y, yp):
    if reducer == "sign":
        return float(np.sign(y - yp))
    if reducer == "difference":
        return y - yp
    return 1.0 if y != yp else -1.0


def _pair_kernel(pair_kernel, p, q, gamma=0.5):
    (x, xp), (u, up) = p, q
    if pair_kernel == "linear":
        return (x - xp) @ (u - up)
    if pair_kernel == "metric":
        return ((x - xp) @ (u - up)) ** 2
    k = lambda a, b: math.exp(-gamma * np.sum((a - b) ** 2))    # noqa: E731
    return k(x, u) - k(x, up) - k(xp, u) + k(xp, up)


def algorithm_1(X, y, loss, reducer, pair_kernel, eta1, theta):
    """f_{t+1} = f_t - eta_t/(t-1) sum_j V'_-(r_tj, f_t(x_t, x_j)) K_{(x_t, x_j)}, f as pairs."""
    terms = []      # ((x, x'), coefficient): f = sum c K_{(x, x')}

    def f(a, b):
        return sum(c * _pair_kernel(pair_kernel, pair, (a, b)) for pair, c in terms)

    for t in range(2, len(X) + 1):
        xt, yt = X[t - 1], y[t - 1]
        eta_t = eta1 * (t - 1) ** -theta
        new = [((xt, X[j]), -eta_t / (t - 1) * _slope(loss, _reduce(reducer, yt, y[j]),
                                                        f(xt, X[j])))
               for j in range(t - 1)]
        terms += new
    return f


@pytest.mark.parametrize("pair_kernel", PAIR_KERNELS)
@pytest.mark.parametrize("loss", LOSSES)
def test_matches_algorithm_1_written_out(loss, pair_kernel):
    """Both engines equal eq. (2.1) computed term by term with the pair kernel itself."""
    X, y, labels = make_stream(22, seed=5)
    reducer, target = setting(loss, pair_kernel)
    targets = y if target == "y" else labels
    eta1 = 0.6 if loss != "power" and pair_kernel != "metric" else 0.05
    if loss == "power" and pair_kernel == "metric":
        eta1 = 0.002
    f = algorithm_1(X, targets.astype(float), loss, reducer, pair_kernel, eta1, 0.5)
    rng = np.random.default_rng(0)
    P1, P2 = rng.normal(size=(8, 3)), rng.normal(size=(8, 3))
    expected = np.array([f(a, b) for a, b in zip(P1, P2)])
    assert np.max(np.abs(expected)) > 1e-3
    for engine in ("cython", "numpy"):
        est = PairwiseLearner(reducer=reducer, loss=loss, p=3.0, pair_kernel=pair_kernel,
                              gamma=0.5, eta=eta1, theta=0.5, engine=engine)
        est.fit(X, targets)
        assert np.max(np.abs(est.decision_function(P1, P2) - expected)) <= 1e-10


@pytest.mark.parametrize("engine", ["cython", "numpy"])
def test_hinge_slope_is_the_left_derivative_at_the_kink(engine):
    """At r a = 1 the left slope in a is -r for r = +1 but 0 for r = -1."""
    module = _pairwise if engine == "cython" else np_pairwise
    H, yh = np.array([[0.0]]), np.array([1.0])
    for yt, xt, moved in [(0.0, -1.0, False), (2.0, 1.0, True)]:   # r = -1, a = -1 | r = 1, a = 1
        w = np.array([1.0])
        module.linear_chunk(H.copy(), yh.copy(), 1, w, np.array([[xt]]), np.array([yt]),
                            np.array([0.5]), np.array([-1], dtype=np.intp), 0, loss_spec("hinge"))
        assert (w[0] != 1.0) == moved


# ---- the running-moment shortcut ---------------------------------------------------------------

def test_running_moments_give_the_full_average():
    """Squared loss, linear pair kernel, r = y - y': moments vs the O(t) average, 2000 steps.

    The data sit far from the origin (mean 50) to exercise the shifted sums.
    Measured: max |w_moments - w_full| = 1e-14 with max |w| = 3.7.
    """
    X, y, _ = make_stream(2000, d=5, seed=6)
    X, y = X + 50.0, 3 * y + 100.0
    short = PairwiseLearner(reducer="difference", loss="squared", eta=0.02, theta=0.5)
    full = PairwiseLearner(reducer="difference", loss="squared", eta=0.02, theta=0.5)
    full._running_moments = False
    short.fit(X, y)
    full.fit(X, y)
    assert isinstance(short._model, MomentsPairModel)
    assert isinstance(full._model, LinearPairModel) and full.n_stored_ == 2000
    assert np.max(np.abs(short.coef_)) > 0.1
    assert np.max(np.abs(short.coef_ - full.coef_)) <= 1e-10
    numpy_short = PairwiseLearner(reducer="difference", loss="squared", eta=0.02, theta=0.5,
                                  engine="numpy").fit(X, y)
    assert np.max(np.abs(numpy_short.coef_ - short.coef_)) <= 1e-10


# ---- theory ------------------------------------------------------------------------------------

@pytest.mark.parametrize("pair_kernel", PAIR_KERNELS)
@pytest.mark.parametrize("loss", LOSSES)
def test_lemma_3_2_norm_bound_at_every_step(loss, pair_kernel):
    """With eta_1 of eq. (2.6), ||f_{t+1}||_K <= (t-1)^((1-theta)/2) at every step t.

    Measured max of norm / bound over 300 steps: 0.20 (linear hinge), 0.19
    (difference hinge), 0.13 (difference logistic), 0.06 (metric hinge), below
    0.11 for the others; with 30 times that eta_1 the hinge ratio reaches
    2.5 (linear) and 3.5 (difference).
    """
    X, y, labels = make_stream(300, seed=3)
    ref, target = learner(loss, pair_kernel)
    targets = y if target == "y" else labels
    ref.fit(X, targets)     # eta1_ and kappa_ over the whole stream
    for scale, holds in [(1.0, True)] + ([(30.0, False)] if loss == "hinge"
                                         and pair_kernel != "metric" else []):
        est, _ = learner(loss, pair_kernel, eta=scale * ref.eta1_, theta=ref.theta_)
        ratios = []
        for t in range(len(X)):
            est.partial_fit(X[t:t + 1], targets[t:t + 1])
            if t >= 1:  # after t+1 samples the model is f_{t+2}: bound t^((1-theta)/2)
                ratios.append(est.rkhs_norm() / t ** ((1 - ref.theta_) / 2))
        assert (max(ratios) <= 1.0) == holds, max(ratios)


@pytest.mark.parametrize("loss", LOSSES)
def test_growth_constants_bound_the_slopes(loss):
    """|V'_-(r, a)| <= c_q (1 + |a|^q) for |r| <= R, and |V|_0 = sup_r V(r, 0)."""
    R, p = 2.5, 3.0
    q, c_q, v0 = pairwise_growth(loss, R, p)
    r = np.linspace(-R, R, 41)[:, None]
    a = np.linspace(-30, 30, 1201)[None, :]
    z = r * a if loss in MARGIN else a - r
    slope = loss_derivative(loss, z, p=p).reshape(z.shape) * (r if loss in MARGIN else 1.0)
    assert np.all(np.abs(slope) <= c_q * (1 + np.abs(a) ** q) * (1 + 1e-12))
    zero = r * 0.0 if loss in MARGIN else -r
    assert np.isclose(loss_value(loss, zero, p=p).max(), v0)


def test_growth_constants_of_the_squared_loss_are_half_the_papers():
    """Corollary 2.7 has (r - a)^2: q = 1, c_q = 2 max(R, 1), |V|_0 = R^2; ours is half of it."""
    for R in (0.5, 1.0, 3.0):
        assert pairwise_growth("squared", R) == (1.0, max(1.0, R), R * R / 2)
        assert pairwise_growth("power", R, p=2.0) == (1.0, 2 * max(1.0, R), R * R)
    assert pairwise_growth("hinge", 1.0) == (0.0, 1.0, 1.0)      # Corollary 2.6 with M = 1


def test_auto_step_is_eq_2_6():
    X, y, _ = make_stream(200, seed=7)
    est = PairwiseLearner().fit(X, y)            # hinge, sign: q = 0, c_q = 1, |V|_0 = 1
    kappa = 2 * np.sqrt(np.max(np.sum((X - X.mean(0)) ** 2, axis=1)))
    assert est.kappa_ == pytest.approx(kappa)
    assert est.theta_ == pytest.approx(2 / 3)
    expected = min(np.sqrt(1 / 3) / (2 * np.sqrt(2) * kappa), (1 / 3) / 4)
    assert est.eta1_ == pytest.approx(expected)
    assert lin_eta1(0.75, 1.0, 2.0, 0.5, 3.0) == pytest.approx(
        min(0.5 / (2 * np.sqrt(2) * 2 * 3 * 4), 0.25 / 2))
    est = PairwiseLearner(loss="squared", reducer="difference").fit(X, y)
    R = np.ptp(y)
    assert est.theta_ == pytest.approx(0.75)
    assert est.eta1_ == pytest.approx(lin_eta1(0.75, 1.0, max(1, R), R * R / 2, kappa))


@pytest.mark.parametrize("loss,theta", [("hinge", 2 / 3), ("logistic", 2 / 3),
                                        ("absolute", 2 / 3), ("squared", 3 / 4),
                                        ("squared_hinge", 3 / 4), ("power", 4 / 5)])
def test_default_theta_is_corollary_2_5(loss, theta):
    X, y, _ = make_stream(20, seed=8)
    reducer = "sign" if loss in MARGIN else "difference"
    assert PairwiseLearner(loss=loss, p=3.0, reducer=reducer).fit(X, y).theta_ == \
        pytest.approx(theta)


def test_kappa_bounds_the_pair_kernel_on_the_data():
    X, _, _ = make_stream(150, seed=9)
    D2 = np.sum((X[:, None] - X[None]) ** 2, axis=-1)
    assert pair_kernel_kappa(X, "linear") ** 2 >= D2.max()
    assert pair_kernel_kappa(X, "metric") ** 2 >= (D2 ** 2).max()
    K = np.exp(-0.5 * D2)
    pair_diag = 2 - 2 * K
    assert pair_kernel_kappa(X, "difference", "gaussian", 0.5) ** 2 >= pair_diag.max()
    P = (X @ X.T + 1.0) ** 2
    diag = np.diag(P)[:, None] + np.diag(P)[None] - 2 * P
    assert pair_kernel_kappa(X, "difference", "polynomial", 1.0, 2, 1.0) ** 2 >= diag.max()


def test_ranking_improves_with_the_stream():
    """Linear ranking with hinge on diabetes (Section 2): the ranking error falls with t.

    Measured (10 shuffles, eta_t = (t-1)^-2/3): 0.284 after 50 samples, 0.245 after 2000.
    """
    X, y = load_diabetes(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    early, late = [], []
    for seed in range(10):
        order = np.random.default_rng(seed).integers(0, len(X), 2000)
        est = PairwiseLearner(eta=1.0, theta=2 / 3).fit(X[order[:50]], y[order[:50]])
        early.append(ranking_error(est, X, y))
        est.partial_fit(X[order[50:]], y[order[50:]])
        late.append(ranking_error(est, X, y))
    assert np.mean(late) < np.mean(early) - 0.02


# ---- reservoir -----------------------------------------------------------------------------------

def test_reservoir_is_a_uniform_sample():
    """Algorithm R: each of T points ends in the reservoir with probability B/T.

    400 seeds, T = 1000, B = 50: kept points per tenth of the stream, expected
    2000 each; measured chi-square 3.3 on 9 degrees of freedom (limit 27.9, p = 0.001).
    """
    T, B, seeds = 1000, 50, 400
    t = np.arange(1, T + 1)
    counts = np.zeros(10)
    for seed in range(seeds):
        slots = reservoir_slots(t, B, seed)
        owner = np.full(B, -1)
        for i, s in enumerate(slots):
            if s >= 0:
                owner[s] = i
        assert np.all(owner >= 0)
        counts += np.bincount(owner // (T // 10), minlength=10)
    expected = seeds * B / 10
    chi2 = np.sum((counts - expected) ** 2 / expected)
    assert chi2 < 27.9


def test_reservoir_slots_fill_then_replace():
    slots = reservoir_slots(np.arange(1, 11), 4, 0)
    assert list(slots[:4]) == [0, 1, 2, 3]
    assert np.all((slots[4:] >= -1) & (slots[4:] < 4))
    assert list(reservoir_slots(np.arange(1, 6), None, 0)) == [0, 1, 2, 3, 4]


def test_gram_matrix_too_large_names_the_cure():
    """10^7 stored points would need 745 thousand GiB of Gram matrix: a clear error, no change."""
    history = PairHistory(3, "centres")
    with pytest.raises(MemoryError, match="buffer=B"):
        history.reserve(10 ** 7)
    assert history.capacity == 0 and len(history.y) == 0 and len(history.s) == 0


def test_buffer_keeps_stored_points_from_the_stream():
    X, y, _ = make_stream(500, seed=10)
    est = PairwiseLearner(buffer=40, random_state=0, eta=0.5).fit(X, y)
    stored = est._model.history.X[:est.n_stored_]
    assert est.n_stored_ == 40
    assert all(np.any(np.all(X == row, axis=1)) for row in stored)
    assert np.array_equal(est._model.history.y[:40], [y[np.all(X == r, axis=1)][0] for r in stored])


# ---- streams: chunks, persistence, the function learned ---------------------------------------

@pytest.mark.parametrize("pair_kernel", PAIR_KERNELS)
@pytest.mark.parametrize("buffer", [None, 30])
def test_partial_fit_in_chunks_equals_fit(pair_kernel, buffer):
    X, y, labels = make_stream(300, seed=11)
    est0, target = learner("logistic", pair_kernel)
    targets = y if target == "y" else labels
    whole, _ = learner("logistic", pair_kernel, eta=0.2, buffer=buffer, random_state=3)
    parts, _ = learner("logistic", pair_kernel, eta=0.2, buffer=buffer, random_state=3)
    whole.fit(X, targets)
    for lo, hi in [(0, 1), (1, 2), (2, 37), (37, 150), (150, 300)]:
        parts.partial_fit(X[lo:hi], targets[lo:hi])
    assert np.array_equal(model_arrays(whole), model_arrays(parts))


@pytest.mark.parametrize("case", [
    dict(pair_kernel="linear"),
    dict(pair_kernel="linear", loss="squared", reducer="difference"),     # running moments
    dict(pair_kernel="difference", buffer=20, random_state=1),
    dict(pair_kernel="metric", reducer="dissimilar", buffer=25, random_state=2),
    dict(pair_kernel="metric", reducer="dissimilar", engine="numpy"),
])
def test_pickle_and_save_load_continue_the_stream(case, tmp_path):
    X, y, _ = make_stream(260, seed=12)
    targets = (np.array(["low", "high", "mid"])[(y > 0).astype(int) + (y > 1)]
               if case.get("reducer") == "dissimilar" else y)
    est = PairwiseLearner(eta=0.3, **case).fit(X[:200], targets[:200])
    okl.save(est, tmp_path / "model.npz")
    copies = [pickle.loads(pickle.dumps(est)), okl.load(tmp_path / "model.npz")]
    for other in copies:
        assert np.array_equal(other.decision_function(X[:20], X[20:40]),
                              est.decision_function(X[:20], X[20:40]))
    est.partial_fit(X[200:], targets[200:])
    for other in copies:
        other.partial_fit(X[200:], targets[200:])
        assert np.array_equal(model_arrays(other), model_arrays(est))
        assert other.t_ == est.t_ == 260


def test_dissimilar_labels_grow_and_metric_separates_classes():
    """Metric learning: two classes differ along x0 only; M weighs x0 most."""
    rng = np.random.default_rng(13)
    X = rng.normal(size=(600, 4))
    labels = np.where(X[:, 0] > 0, "a", "b")
    est = PairwiseLearner(reducer="dissimilar", pair_kernel="metric", eta=0.05)
    est.partial_fit(X[:300][labels[:300] == "a"][:50], labels[:300][labels[:300] == "a"][:50])
    assert list(est.classes_) == ["a"]
    est.partial_fit(X, labels)
    assert list(est.classes_) == ["a", "b"]
    M = est.metric_
    assert np.array_equal(M, M.T)
    assert np.argmax(np.diag(M)) == 0 and M[0, 0] > 2 * np.max(np.abs(M[1:, 1:]))
    i, j = rng.integers(0, 600, (2, 2000))
    f = est.decision_function(X[i], X[j])
    same = labels[i] == labels[j]
    assert f[~same].mean() > f[same].mean()


def test_fit_starts_afresh_after_other_parameters():
    X, y, labels = make_stream(100, seed=19)
    est = PairwiseLearner(loss="squared", reducer="difference", eta=0.1).fit(X, y)
    for params, targets in [(dict(loss="hinge", reducer="sign"), y),
                            (dict(pair_kernel="metric", reducer="dissimilar"), labels),
                            (dict(pair_kernel="difference", reducer="sign"), y)]:
        est.set_params(**params).fit(X, targets)
        fresh = PairwiseLearner(**est.get_params()).fit(X, targets)
        assert snapshot(est) == snapshot(fresh)


@pytest.mark.parametrize("pair_kernel", ["linear", "difference"])
def test_pairs_are_score_differences(pair_kernel):
    X, y, _ = make_stream(200, seed=14)
    est = PairwiseLearner(pair_kernel=pair_kernel, eta=0.5).fit(X, y)
    s = est.score_samples(X)
    f = est.decision_function(X[:50], X[50:100])
    assert np.allclose(f, s[:50] - s[50:100], atol=1e-12)
    assert np.allclose(est.decision_function(X[50:100], X[:50]), -f, atol=1e-12)
    assert np.allclose(est.decision_function(X[:5]), est.decision_function(X[:5], 0 * X[:5]))
    assert len(est.support_vectors_ if pair_kernel == "difference" else est.coef_) in (200, 3)


# ---- evaluation ----------------------------------------------------------------------------------

def test_ranking_error_by_hand():
    y = np.array([1.0, 2.0, 3.0, 3.0])
    s = np.array([0.3, 0.1, 0.2, 0.5])
    # ordered pairs i != j with sign(y_i - y_j)(s_i - s_j) < 0: (0,1), (1,2) and their mirrors
    assert ranking_error(s, None, y) == pytest.approx(4 / 12)
    F = s[:, None] - s[None, :]
    assert ranking_error(F, None, y) == pytest.approx(4 / 12)
    # hinge with r = sign(y_i - y_j), mean over the 12 ordered pairs
    R = np.sign(y[:, None] - y[None, :])
    V = np.maximum(0, 1 - R * F)
    expected = (V.sum() - np.trace(V)) / 12
    assert pairwise_generalization_error(s, None, y, loss="hinge", reducer="sign") == \
        pytest.approx(expected)


@pytest.mark.parametrize("pair_kernel", PAIR_KERNELS)
def test_evaluation_of_an_estimator_equals_its_pair_values(pair_kernel):
    X, y, labels = make_stream(120, seed=15)
    est, target = learner("hinge", pair_kernel, eta=0.3)
    targets = y if target == "y" else labels
    est.fit(X, targets)
    n = len(X)
    i, j = np.repeat(np.arange(n), n), np.tile(np.arange(n), n)
    F = est.decision_function(X[i], X[j]).reshape(n, n)
    assert ranking_error(est, X, y) == pytest.approx(ranking_error(F, None, y))
    assert pairwise_generalization_error(est, X, targets) == pytest.approx(
        pairwise_generalization_error(F, None, targets, loss="hinge", reducer=est.reducer))


def test_evaluation_refuses_bad_input():
    with pytest.raises(ValueError, match="two samples"):
        ranking_error(np.array([1.0]), None, [1.0])
    with pytest.raises(ValueError, match="scores"):
        ranking_error(np.ones(3), None, [1.0, 2.0])
    with pytest.raises(ValueError, match="loss="):
        pairwise_generalization_error(np.ones(3), None, [1.0, 2.0, 3.0])


# ---- validation ----------------------------------------------------------------------------------

@pytest.mark.parametrize("pair_kernel", PAIR_KERNELS)
def test_failed_partial_fit_leaves_the_model_unchanged(pair_kernel):
    X, y, labels = make_stream(60, seed=16)
    est, target = learner("power", pair_kernel, eta=0.5, buffer=8, random_state=0)
    targets = (y if target == "y" else labels).astype(float)
    est.partial_fit(1e-3 * X[:30], targets[:30])      # the reservoir is full
    before = snapshot(est)
    bad = X[30:].copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        est.partial_fit(bad, targets[30:])
    with pytest.raises(ValueError, match="features"):
        est.partial_fit(X[30:, :2], targets[30:])
    with pytest.raises(TypeError, match="sparse"):
        est.partial_fit(sp.csr_matrix(X[30:]), targets[30:])
    # 15 sane steps, in which the reservoir replaces stored points, then |u|^3 overflows
    # (the Gaussian g is bounded in x, so there the targets grow instead of X)
    assert np.any(reservoir_slots(np.arange(31, 46), 8, est._seed) >= 0)
    Xb, yb = 1e-3 * X[30:], targets[30:].copy()
    if pair_kernel == "difference":
        yb[15:] *= 1e150
    else:
        Xb[15:] *= 1e150
    with pytest.raises(FloatingPointError, match="diverged at step t=4[67] "):
        est.partial_fit(Xb, yb)
    assert snapshot(est) == before


def test_divergence_of_the_running_moments_restores_the_model():
    X, y, _ = make_stream(40, seed=17)
    est = PairwiseLearner(loss="squared", reducer="difference", eta=1.0).fit(X[:20], y[:20])
    before = snapshot(est)
    with pytest.raises(FloatingPointError, match="StandardScaler"):
        est.partial_fit(1e160 * X[20:], y[20:])
    assert snapshot(est) == before


@pytest.mark.parametrize("params,match", [
    (dict(eta=-1.0), "'eta' parameter"),
    (dict(reducer="rank"), "'reducer' parameter"),
    (dict(loss="pinball"), "'loss' parameter"),
    (dict(buffer=0), "'buffer' parameter"),
    (dict(theta=1.0), "theta < 1"),
    (dict(p=0.5), "'p' parameter"),
])
def test_bad_parameters(params, match):
    X, y, _ = make_stream(10)
    with pytest.raises(InvalidParameterError, match=match):
        PairwiseLearner(**params).fit(X, y)


def test_interface_errors():
    X, y, _ = make_stream(30, seed=18)
    with pytest.raises(NotFittedError):
        PairwiseLearner().decision_function(X)
    est = PairwiseLearner(eta=0.5).fit(X, y)
    with pytest.raises(ValueError, match="same number of rows"):
        est.decision_function(X[:5], X[:4])
    with pytest.raises(ValueError, match="loss='logistic' \\(fitted with 'hinge'\\)"):
        est.set_params(loss="logistic").partial_fit(X, y)
    est.set_params(loss="hinge", engine="numpy").partial_fit(X, y)     # engine may change
    metric = PairwiseLearner(pair_kernel="metric", eta=0.1).fit(X, y)
    assert not hasattr(metric, "score_samples")
    with pytest.raises(AttributeError, match="difference"):
        metric.dual_coef_
    with pytest.raises(ValueError, match="label type"):
        PairwiseLearner(reducer="dissimilar").fit(X, y)      # continuous y is not classes
    assert PairwiseLearner(theta=1.0, eta=1.0).fit(X, y).theta_ == 1.0  # explicit eta: any theta


# ---- scikit-learn conventions --------------------------------------------------------------------

@parametrize_with_checks([
    PairwiseLearner(),
    PairwiseLearner(loss="squared", reducer="difference"),
    PairwiseLearner(pair_kernel="difference", buffer=7),
    PairwiseLearner(pair_kernel="metric", loss="logistic"),
])
def test_sklearn_compatible(estimator, check):
    check(estimator)
