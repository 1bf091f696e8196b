"""okl.MultiKernelClassifier / MultiKernelRegressor (docs/multikernel.md): theory as tests."""
import io
import math

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_diabetes, load_digits
from sklearn.utils.estimator_checks import check_estimator

import okl
from okl import (
    MultiKernelClassifier, MultiKernelRegressor, OnlineKernelClassifier, OnlineKernelRegressor,
)
from okl._numpy.multikernel import uniform
from okl.multikernel import AUTO_GAMMAS
from okl.preprocessing import OnlineStandardScaler

GAMMAS = [0.05, 0.2, 0.8, 3.2, 12.8]
#: The papers' pool and Hedge: Gaussian learners whose steps decay, no fixed share.
PAPERS = dict(linear=False, forgetting=None, share=0.0)


def xor_stream(n, seed=0, noise=0.1):
    """A noisy XOR in 3 dimensions: a kernel problem with a best width in the middle."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = (X[:, 0] * X[:, 1] > 0).astype(int)
    flip = rng.random(n) < noise
    return X, np.where(flip, 1 - y, y)


def sine_stream(n, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3, 3, size=(n, 2))
    return X, np.sin(2 * X[:, 0]) + 0.5 * X[:, 1] + 0.1 * rng.normal(size=n)


def progressive(est, X, y, classes=None):
    """f_t(x_t) of every row, predicted before it is learned (one fit)."""
    return est._progressive_scores(X, y, classes=classes, reset=True)


# -- one width is the single learner, iterate for iterate ---------------------------------------

@pytest.mark.parametrize("engine", ["cython", "numpy"])
@pytest.mark.parametrize("loss, budget, policy", [("hinge", None, "smallest"),
                                                  ("logistic", 40, "smallest"),
                                                  ("hinge", 40, "oldest"),
                                                  ("logistic", 40, "merge")])
def test_one_width_is_the_single_classifier(engine, loss, budget, policy):
    X, y = xor_stream(600, seed=1)
    params = dict(loss=loss, lam=1e-2, eta="auto", eta_decay=0.5, budget=budget,
                  budget_policy=policy, fit_intercept=True, engine=engine)
    single = OnlineKernelClassifier(gamma=0.7, drift_detector=None, **params)   # as the pool's
    multi = MultiKernelClassifier(gammas=[0.7], eta_scales=[1.0], **PAPERS, **params)
    f_single = progressive(single, X, y, classes=[0, 1])
    f_multi = progressive(multi, X, y, classes=[0, 1])
    np.testing.assert_array_equal(np.where(f_single > 0, 1.0, -1.0), f_multi)
    np.testing.assert_allclose(multi.learner_decisions(X)[:, 0], single.decision_function(X),
                               rtol=0, atol=1e-12)
    if policy == "merge":           # BSGD's merge; its coefficient formula rounds differently
        np.testing.assert_allclose(multi.support_vectors_, single.support_vectors_, atol=1e-12)
    else:
        np.testing.assert_array_equal(multi.support_vectors_, single.support_vectors_)
    np.testing.assert_allclose(multi.dual_coef_[0], single.dual_coef_, rtol=0, atol=1e-12)
    assert multi.intercept_[0] == pytest.approx(single.intercept_, abs=1e-13)
    assert multi.t_ == single.t_ and multi.n_support_ == single.n_support_


@pytest.mark.parametrize("engine", ["cython", "numpy"])
@pytest.mark.parametrize("loss, budget", [("squared", None), ("pinball", 30),
                                          ("epsilon_insensitive", None)])
def test_one_width_is_the_single_regressor(engine, loss, budget):
    X, y = sine_stream(500, seed=2)
    params = dict(loss=loss, epsilon=0.05, quantile=0.7, lam=1e-3, eta="auto", eta_decay=0.6,
                  fit_intercept=True, budget=budget, budget_policy="oldest", engine=engine)
    single = OnlineKernelRegressor(gamma=0.5, drift_detector=None, **params)   # as the pool's
    multi = MultiKernelRegressor(gammas=[0.5], learner="sgd", **PAPERS, **params)
    np.testing.assert_allclose(progressive(multi, X, y), progressive(single, X, y),
                               rtol=0, atol=1e-12)
    np.testing.assert_allclose(multi.predict(X), single.predict(X), rtol=0, atol=1e-12)
    np.testing.assert_array_equal(multi.support_vectors_, single.support_vectors_)


# -- the Hedge bounds against the best learner of the grid -----------------------------------

def single_scores(X, y, gammas, classes=None):
    """Progressive f_t(x_t) of one single learner per width (the learners of the grid), with the
    base parameters of the multi-kernel learner's defaults."""
    Single, Multi = ((OnlineKernelClassifier, MultiKernelClassifier) if classes is not None
                     else (OnlineKernelRegressor, MultiKernelRegressor))
    multi = Multi(eta="auto")
    base = {name: getattr(multi, name)
            for name in ("loss", "lam", "eta", "eta_decay", "fit_intercept")}
    return np.column_stack([progressive(Single(gamma=g, budget=None, drift_detector=None, **base),
                                        X, y, classes)
                            for g in gammas])


def test_deterministic_vote_is_weighted_majority_within_its_mistake_bound():
    X, y = xor_stream(4000, seed=3)
    beta, K = 0.8, len(GAMMAS)
    F = single_scores(X, y, GAMMAS, classes=[0, 1])
    signs, label = np.where(F > 0, 1.0, -1.0), np.where(y == 1, 1.0, -1.0)
    mistakes = signs != label[:, None]
    # Littlestone-Warmuth's weighted majority on the learners' own predictions
    q, votes = np.full(K, 1.0 / K), []
    for s, m in zip(signs, mistakes):
        votes.append(q @ s)
        q = q * beta ** m
        q /= q.sum()
    clf = MultiKernelClassifier(gammas=GAMMAS, eta_scales=[1.0], beta=beta, budget=None,
                                eta="auto", **PAPERS)
    f = progressive(clf, X, y, classes=[0, 1])
    np.testing.assert_allclose(f, votes, rtol=0, atol=1e-12)
    np.testing.assert_allclose(clf.weights_, q, rtol=1e-10, atol=1e-300)
    M, best = int(np.sum(np.where(f > 0, 1.0, -1.0) != label)), int(mistakes.sum(axis=0).min())
    bound = (math.log(K) + best * math.log(1 / beta)) / math.log(2 / (1 + beta))
    assert M <= bound
    assert best < 0.3 * len(y) and mistakes.sum(axis=0).max() > best + 50   # a real choice


def test_stochastic_vote_within_the_hedge_bound_in_expectation():
    X, y = xor_stream(4000, seed=4)
    beta, K = 0.8, len(GAMMAS)
    F = single_scores(X, y, GAMMAS, classes=[0, 1])
    signs, label = np.where(F > 0, 1.0, -1.0), np.where(y == 1, 1.0, -1.0)
    mistakes = (signs != label[:, None]).astype(float)
    clf = MultiKernelClassifier(gammas=GAMMAS, eta_scales=[1.0], beta=beta, budget=None,
                                combination="stochastic", random_state=7, eta="auto", **PAPERS)
    f = progressive(clf, X, y, classes=[0, 1])
    q, expected = np.full(K, 1.0 / K), 0.0
    for t, (s, m) in enumerate(zip(signs, mistakes)):
        k = min(int(np.searchsorted(np.cumsum(q), uniform(7, t) * q.sum(), side="right")), K - 1)
        assert f[t] == s[k]                       # the drawn learner's prediction
        expected += q @ m
        q = q * np.exp(m * math.log(beta))
        q /= q.sum()
    best = mistakes.sum(axis=0).min()
    assert expected <= (math.log(K) + best * math.log(1 / beta)) / (1 - beta)


def test_regression_average_within_the_hedge_bound():
    X, y = sine_stream(3000, seed=5)
    beta, K = 0.5, len(GAMMAS)
    F = single_scores(X, y, GAMMAS)
    losses = 0.5 * (F - y[:, None]) ** 2
    scale = np.maximum.accumulate(losses.max(axis=1))          # S_t, the running maximum
    reg = MultiKernelRegressor(gammas=GAMMAS, beta=beta, budget=None, learner="sgd", **PAPERS)
    f = progressive(reg, X, y)
    combined = 0.5 * (f - y) ** 2
    z = losses / scale[:, None]
    best = z.sum(axis=0).min()
    # Jensen (the squared loss is convex) and Hedge on the normalised losses
    assert np.sum(combined / scale) <= (math.log(1 / beta) * best + math.log(K)) / (1 - beta)
    assert np.mean(combined) < np.mean(losses, axis=0).max()


def switch_stream(n, seed=0):
    """A noisy XOR in 3 dimensions, replaced by a linear concept at n / 2."""
    X, y = xor_stream(n, seed=seed)
    y[n // 2:] = (X[n // 2:, 2] > 0.3 * X[n // 2:, 0]).astype(int)
    return X, y


def test_fixed_share_vote_within_its_bound_against_a_switching_sequence():
    """Herbster and Warmuth's fixed share on the vote: every weight keeps share / K, and the
    mistakes obey (ln K + M ln(1/beta) + (T - S) ln(1/(1 - share)) + S ln(K / share))
    / ln(2 / (1 + beta)) against any sequence of learners with S switches and M mistakes
    (docs/multikernel.md, section 9)."""
    X, y = switch_stream(3000, seed=22)
    beta, share, K, T = 0.8, 0.01, len(GAMMAS), len(y)
    F = single_scores(X, y, GAMMAS, classes=[0, 1])
    signs, label = np.where(F > 0, 1.0, -1.0), np.where(y == 1, 1.0, -1.0)
    mistakes = signs != label[:, None]
    q, votes = np.full(K, 1.0 / K), []
    for s, m in zip(signs, mistakes):
        votes.append(q @ s)
        q = q * beta ** m
        q = (1.0 - share) * q / q.sum() + share / K
    clf = MultiKernelClassifier(gammas=GAMMAS, eta_scales=[1.0], beta=beta, budget=None,
                                linear=False, forgetting=None, share=share, eta="auto")
    f = progressive(clf, X, y, classes=[0, 1])
    np.testing.assert_allclose(f, votes, rtol=0, atol=1e-12)
    np.testing.assert_allclose(clf.weights_, q, rtol=1e-10, atol=1e-300)
    assert clf.weights_.min() >= share / K * (1.0 - 1e-12)
    M = int(np.sum(np.where(f > 0, 1.0, -1.0) != label))
    before = np.vstack([np.zeros(K), np.cumsum(mistakes, axis=0)])     # mistakes before s
    after = before[-1] - before
    one_switch = int((before.min(axis=1) + after.min(axis=1)).min())  # the best sequence, S <= 1
    bound = (math.log(K) + one_switch * math.log(1 / beta) + (T - 1) * math.log(1 / (1 - share))
             + math.log(K / share)) / math.log(2 / (1 + beta))
    assert M <= bound
    assert one_switch < mistakes.sum(axis=0).min() - 50          # the switch matters


def test_a_forgetting_learner_is_the_single_learner_with_a_constant_step():
    """The learner that forgets steps eta_1 = 1 / (lam + M) at every event and shrinks by the
    factor `forgetting`: NORMA with that constant step and lam = (1 - forgetting) / eta_1."""
    X, y = xor_stream(800, seed=23)
    multi = MultiKernelClassifier(gammas=[0.7], eta_scales=[1.0], linear=False, forgetting=0.99,
                                  share=0.0, budget=None, lam=1e-3, eta="auto").fit(X, y)
    eta = 1.0 / (1e-3 + 1.0)                # the hinge loss: M = 1
    single = OnlineKernelClassifier(gamma=0.7, eta=eta, eta_decay=0.0, lam=0.01 / eta,
                                    fit_intercept=False, budget=None,
                                    drift_detector=None).fit(X, y)
    np.testing.assert_allclose(multi.learner_decisions(X)[:, 1], single.decision_function(X),
                               rtol=0, atol=1e-11)
    np.testing.assert_array_equal(multi.forgetting_, [np.nan, 0.99])


def norma_over_kbar(X, y, gamma, lam, forgettings, warmup=100):
    """NORMA hinge learners on one support set written out with eta="scaled"'s rule: the step
    over kbar, the mean of K(x_s, centres before s) over the first `warmup` steps, counting
    K(x, x) = 1 once; per learner the decaying step t^-1/2 / (lam + 1) (None) or the first step
    and a shrink by its forgetting factor.  A centre joins when any learner's margin is below
    1, with a zero coefficient for the others."""
    centres, total, pairs, values = np.zeros((0, X.shape[1])), 0.0, 0, []
    coef = np.zeros((len(forgettings), 0))
    for t, (x, label) in enumerate(zip(X, np.where(y == 1, 1.0, -1.0)), start=1):
        k = np.exp(-gamma * ((centres - x) ** 2).sum(axis=1))
        f = coef @ k
        values.append(f)
        if t <= warmup:
            total, pairs = total + k.sum(), pairs + len(k)
        eta = np.array([1.0 if r else t ** -0.5 for r in forgettings]) / (lam + 1.0) * (
            pairs + 1.0) / (total + 1.0)
        coef = coef * np.array([r or 1.0 - lam * e for r, e in zip(forgettings, eta)])[:, None]
        if np.any(label * f < 1.0):
            centres = np.vstack([centres, x])
            coef = np.column_stack([coef, np.where(label * f < 1.0, eta * label, 0.0)])
    return np.array(values), centres, coef, total, pairs


@pytest.mark.parametrize("engine", ["cython", "numpy"])
@pytest.mark.parametrize("forgetting", [None, 0.99])
def test_scaled_step_is_the_auto_step_over_the_widths_kernel_mean(engine, forgetting):
    """eta="scaled" (docs/multikernel.md, section 4): a Gaussian learner's step is the auto step
    over kbar of its width, measured on the first 100 steps, then fixed."""
    X, y = xor_stream(400, seed=6)
    multi = MultiKernelClassifier(gammas=[0.7], eta_scales=[1.0], linear=False, share=0.0,
                                  forgetting=forgetting, budget=None, lam=1e-3, eta="scaled",
                                  engine=engine)
    f_multi = progressive(multi, X, y, classes=[0, 1])
    learners = (None,) if forgetting is None else (None, forgetting)
    values, centres, coef, total, pairs = norma_over_kbar(X, y, 0.7, 1e-3, learners)
    if forgetting is None:          # one learner: the vote is its sign
        np.testing.assert_array_equal(f_multi, np.where(values[:, 0] > 0, 1.0, -1.0))
    np.testing.assert_allclose(multi.support_vectors_, centres, rtol=0, atol=0)
    np.testing.assert_allclose(multi.dual_coef_, coef, rtol=1e-10, atol=1e-10)
    state = multi._model.get_state()
    assert state["kbar_pairs"] == pairs
    assert state["kbar_sum"][0] == pytest.approx(total, rel=1e-12)
    assert 0.0 < total < pairs <= 99 * 100 / 2         # kbar in (0, 1): the steps grew


@pytest.mark.parametrize("engine", ["cython", "numpy"])
def test_a_linear_learner_is_norma_on_centred_inputs_over_its_kernels_mean(engine):
    """A linear learner is NORMA with the kernel (<x - m, u - m> + r_t) / ((d + 1) r_t) (m the
    mean of the inputs before the event, the first event itself; r_t the mean squared entry of
    the centred inputs so far and this one, 1 while they are all 0) and, with eta="scaled", its
    step over that kernel's mean between two inputs, 1 / (d + 1): written out."""
    X, y = xor_stream(300, seed=8)
    X = X + np.array([0.5, -1.0, 2.0])          # not centred: the mean matters
    lam, d = 1e-3, X.shape[1]
    multi = MultiKernelClassifier(gammas=[0.7], eta_scales=[1.0], forgetting=None, share=0.0,
                                  budget=None, lam=lam, engine=engine).fit(X, y)
    w, mean, spread = np.zeros(d + 1), np.zeros(d), 0.0
    for t, (x, label) in enumerate(zip(X, np.where(y == 1, 1.0, -1.0)), start=1):
        xc = x - mean if t > 1 else np.zeros(d)
        r = (spread + xc @ xc) / (t * d) or 1.0
        nx = 1.0 / ((d + 1) * r)
        eta = t ** -0.5 / (lam + 1.0) * (d + 1)
        f = w[:d] @ xc + w[d]
        w *= 1.0 - lam * eta
        if label * f < 1.0:
            w += eta * label * nx * np.append(xc, r)
        delta = x - mean
        mean += delta / t
        spread += delta @ (x - mean)            # Welford's sum of squared deviations
    np.testing.assert_allclose(multi.learner_decisions(X)[:, -1], (X - mean) @ w[:d] + w[d],
                               rtol=1e-9, atol=1e-9)
    logistic = [MultiKernelClassifier(loss="logistic", eta=eta, budget=None, engine=engine,
                                      random_state=0).fit(X, y) for eta in ("scaled", "auto")]
    np.testing.assert_array_equal(logistic[0].learner_decisions(X),     # "scaled" is the
                                  logistic[1].learner_decisions(X))     # hinge's only


@pytest.mark.parametrize("engine", ["cython", "numpy"])
@pytest.mark.parametrize("cls", [MultiKernelClassifier, MultiKernelRegressor])
def test_the_pool_does_not_see_a_shift_of_the_inputs(cls, engine):
    """The Gaussian kernels see only differences of inputs, the widths and kbar only their
    spread, and the linear learners centred inputs: a stream shifted by a constant vector is
    learned as it is, to rounding, every learner and the vote."""
    X, y = xor_stream(400, seed=27)
    params = dict(learner="sgd") if cls is MultiKernelRegressor else dict(random_state=0)
    target = y if cls is MultiKernelClassifier else y + X[:, 0]
    shift = np.array([40.0, -25.0, 300.0])
    plain = cls(engine=engine, **params).fit(X, target)
    shifted = cls(engine=engine, **params).fit(X + shift, target)
    np.testing.assert_allclose(shifted.learner_decisions(X + shift),
                               plain.learner_decisions(X), rtol=0, atol=1e-7)
    np.testing.assert_allclose(shifted.weights_, plain.weights_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(shifted.linear_coef_[:, :-1], plain.linear_coef_[:, :-1],
                               rtol=0, atol=1e-7)
    for est, Z in ((plain, X), (shifted, X + shift)):      # the raw form of the weights
        w, L = est.linear_coef_, len(est.linear_coef_)
        np.testing.assert_allclose(est.learner_decisions(Z)[:, -L:],
                                   Z @ w[:, :-1].T + w[:, -1] + est.intercept_[-L:],
                                   rtol=1e-10, atol=1e-9)


@pytest.mark.parametrize("engine", ["cython", "numpy"])
def test_the_automatic_step_of_a_linear_learner_is_over_its_kernel_above_1(engine):
    """With the automatic step a linear learner steps over max(1, K(x_t, x_t)) (normalised
    LMS), written out for the squared loss; on correlated inputs far from their mean, where
    K(x_t, x_t) reaches several times 1 and the step alone overshot and diverged, it stays on
    the scale of the target."""
    rng = np.random.default_rng(28)
    z = np.cumsum(rng.normal(size=600)) * 0.3
    X = 20.0 + z[:, None] + 0.05 * rng.normal(size=(600, 6))       # six near-copies
    y = X[:, 0] - 20.0 + 0.1 * rng.normal(size=600)
    lam, d = 1e-3, X.shape[1]
    reg = MultiKernelRegressor(learner="sgd", gammas=[1.0], forgetting=None, lam=lam,
                               fit_intercept=False, eta="auto", engine=engine)
    f_pool = reg._progressive_scores(X, y, reset=True)
    w, mean, spread, values, grown = np.zeros(d + 1), np.zeros(d), 0.0, [], 0
    for t, (x, target) in enumerate(zip(X, y), start=1):
        xc = x - mean if t > 1 else np.zeros(d)
        r = (spread + xc @ xc) / (t * d) or 1.0
        nx = 1.0 / ((d + 1) * r)
        k = (xc @ xc + r) * nx
        grown += k > 1.0
        eta = t ** -0.6 / (lam + 1.0) / max(1.0, k)       # eta_decay 0.6, the default
        f = w[:d] @ xc + w[d]
        values.append(f)
        w = (1.0 - lam * eta) * w - eta * (f - target) * nx * np.append(xc, r)
        delta = x - mean
        mean += delta / t
        spread += delta @ (x - mean)
    np.testing.assert_allclose(reg.learner_decisions(X)[:, -1], (X - mean) @ w[:d] + w[d],
                               rtol=1e-9, atol=1e-9)
    assert grown > 50 and np.max(np.abs(values)) < 10.0 * np.abs(y).max()
    assert np.all(np.isfinite(f_pool)) and np.max(np.abs(f_pool)) < 10.0 * np.abs(y).max()


def test_scaled_step_is_the_same_for_a_stream_in_chunks_and_after_save_and_load(tmp_path):
    """kbar's sums are part of the model: chunks, one event at a time and a model saved and
    loaded mid-warm-up take the same steps."""
    X, y = xor_stream(250, seed=9)
    whole = MultiKernelClassifier(random_state=0).fit(X, y)
    events = MultiKernelClassifier(random_state=0, classes=[0, 1])
    for i in range(60):             # one event at a time: the compiled one-event step
        events.partial_fit(X[i:i + 1], y[i:i + 1])
    okl.save(events, tmp_path / "pool.okl")
    loaded = okl.load(tmp_path / "pool.okl")
    loaded.partial_fit(X[60:130], y[60:130])
    loaded.partial_fit(X[130:], y[130:])
    np.testing.assert_allclose(loaded.learner_decisions(X), whole.learner_decisions(X),
                               rtol=0, atol=1e-12)
    np.testing.assert_array_equal(loaded._model.get_state()["kbar_sum"],
                                  whole._model.get_state()["kbar_sum"])

def test_linear_data_is_learned_as_well_as_by_a_linear_learner():
    """On a linear concept the pool does as well as its best linear learner, and better than
    its Gaussian learners alone (docs/multikernel.md, section 1)."""
    rng = np.random.default_rng(24)
    X = rng.normal(size=(3000, 8)) * rng.uniform(0.5, 2.0, size=8)
    y = (X @ rng.normal(size=8) + 0.3 > 0).astype(int)
    y = np.where(rng.random(3000) < 0.05, 1 - y, y)
    clf = MultiKernelClassifier(classes=[0, 1]).partial_fit(X[:1], y[:1])
    own, hits = np.zeros(len(clf.weights_)), 0
    for x, label in zip(X[1:], y[1:]):
        own += (clf.learner_decisions(x[None])[0] > 0) == label
        hits += clf.predict_one(x) == label
        clf.learn_one(x, label)
    linear = np.isnan(clf.gammas_)
    assert linear.sum() == 3 and clf.linear_coef_.shape == (3, 9)
    assert hits >= own[linear].max() - 0.005 * len(y)
    gaussian = MultiKernelClassifier(linear=False)
    assert hits / len(y) >= np.mean(
        gaussian._predictions(progressive(gaussian, X, y, [0, 1])) == y) + 0.01


def test_the_defaults_recover_after_a_switch():
    """Learners that forget and the fixed share: after an abrupt change of concept the
    default pool is right sooner than the papers' (docs/multikernel.md, section 9)."""
    X, y = switch_stream(4000, seed=0)
    after = {}
    for name, params in (("defaults", {}), ("papers", dict(linear=False, forgetting=None,
                                                           share=0.0))):
        clf = MultiKernelClassifier(**params)
        hits = clf._predictions(progressive(clf, X, y, [0, 1])) == y
        after[name] = hits[2000:2500].mean()
        assert hits[1500:2000].mean() > 0.8          # the XOR is learned (10% noise)
    assert after["defaults"] > after["papers"] + 0.04


# -- the Hedge start (docs/multikernel.md, section 6) --------------------------------------------

def test_the_hedge_start_weighs_the_learners_that_forget_more():
    """Each learner that forgets starts with `forgetting_start` times the others' weight (1.0
    and width_start=False: the uniform start); the learners do not depend on it, and the vote
    is weighted majority with the fixed share from that start."""
    X, y = xor_stream(600, seed=25)
    frozen = MultiKernelClassifier(beta=1.0, share=0.0, width_start=False,
                                   classes=[0, 1]).fit(X[:1], y[:1])
    forgets = ~np.isnan(frozen.forgetting_)
    assert forgets.sum() == 9 and len(forgets) == 27
    np.testing.assert_allclose(frozen.weights_, np.where(forgets, 1.5, 1.0) / 31.5,
                               rtol=1e-15, atol=0)
    uniform = MultiKernelClassifier(beta=1.0, share=0.0, forgetting_start=1.0,
                                    width_start=False, classes=[0, 1]).fit(X[:1], y[:1])
    np.testing.assert_allclose(uniform.weights_, np.full(27, 1.0 / 27), rtol=1e-15, atol=0)
    # the learners' own predictions, event by event (without a budget they ignore q)
    plain = MultiKernelClassifier(budget=None, forgetting_start=1.0, width_start=False,
                                   classes=[0, 1])
    signs = []
    for x, label in zip(X, y):
        signs.append(np.where(plain.learner_decisions(x[None])[0] > 0, 1.0, -1.0)
                     if "t_" in plain.__dict__ else -np.ones(27))
        plain.learn_one(x, label)
    signs, label = np.array(signs), np.where(y == 1, 1.0, -1.0)
    q = np.where(forgets, 3.0, 1.0)
    q, votes = q / q.sum(), []
    for s, target in zip(signs, label):
        votes.append(q @ s)
        q = q * 0.8 ** (s != target)
        q = 0.999 * q / q.sum() + 1e-3 / 27
    clf = MultiKernelClassifier(budget=None, forgetting_start=3.0, width_start=False)
    np.testing.assert_allclose(progressive(clf, X, y, [0, 1]), votes, rtol=0, atol=1e-12)
    np.testing.assert_allclose(clf.weights_, q, rtol=1e-10, atol=0)
    np.testing.assert_allclose(clf.learner_decisions(X), plain.learner_decisions(X),
                               rtol=0, atol=1e-12)
    # a pool without learners that forget starts uniform whatever the parameter
    papers = MultiKernelClassifier(forgetting=None, forgetting_start=5.0,
                                    width_start=False).fit(X[:1], [1])
    np.testing.assert_allclose(papers.weights_, np.full(18, 1.0 / 18), rtol=1e-15, atol=0)
    with pytest.raises(ValueError, match="forgetting_start"):
        MultiKernelClassifier(forgetting_start=0.0).fit(X[:5], y[:5])


def test_the_hedge_start_weighs_the_wide_widths_less():
    """With gammas="auto" a Gaussian learner of relative width g starts with weight times
    1 - exp(-2 g) (the linear learners times 1), on top of `forgetting_start`, whatever the
    path of the first event; with widths given, or width_start=False, the widths start alike;
    the learners do not depend on the start."""
    X, y = xor_stream(300, seed=26)
    clf = MultiKernelClassifier(beta=1.0, share=0.0, forgetting_start=2.0)
    start = clf.fit(X[:1], y[:1]).weights_
    forgets = ~np.isnan(clf.forgetting_)
    relative = np.array(AUTO_GAMMAS)[np.arange(27) // 3 % 8]
    q = np.where(forgets, 2.0, 1.0) * np.where(np.arange(27) < 24, 1.0 - np.exp(-2.0 * relative),
                                               1.0)
    np.testing.assert_allclose(start, q / q.sum(), rtol=1e-14, atol=0)
    assert start[0] < start[3] < start[6] < start[9] < start[21] < start[24]
    one = MultiKernelClassifier(beta=1.0, share=0.0, forgetting_start=2.0, engine="numpy")
    one.learn_one(dict(enumerate(X[0])), y[0])
    np.testing.assert_array_equal(one.weights_, start)
    given = MultiKernelClassifier(gammas=[0.1, 1.0], forgetting_start=1.0).fit(X[:1], y[:1])
    np.testing.assert_array_equal(given.weights_, np.full(9, 1.0 / 9))
    light = MultiKernelClassifier(budget=None).fit(X, y)
    alike = MultiKernelClassifier(budget=None, width_start=False).fit(X, y)
    np.testing.assert_array_equal(light.learner_decisions(X), alike.learner_decisions(X))
    assert not np.allclose(light.weights_, alike.weights_)
    with pytest.raises(ValueError, match="width_start"):
        MultiKernelClassifier(width_start="yes").fit(X[:5], y[:5])


@pytest.mark.parametrize("engine", ["cython", "numpy"])
def test_ctrl_c_during_the_start_leaves_the_model_as_it_was(engine, model_state, monkeypatch):
    """A KeyboardInterrupt once the start has built the pool and its Hedge start (fit,
    partial_fit or learn_one of a fresh model) leaves the estimator as it was."""
    X, y = xor_stream(300, seed=26)
    start = MultiKernelClassifier(beta=1.0, share=0.0).fit(X[:1], y[:1]).weights_

    def interrupted(self, *args, **kwargs):
        assert self.__dict__["_model"].t == 0
        np.testing.assert_allclose(self.weights_, start, rtol=1e-15, atol=0)
        raise KeyboardInterrupt
    fresh = MultiKernelClassifier(engine=engine, budget=40, classes=[0, 1])
    fitted = MultiKernelClassifier(engine=engine, budget=40).fit(X[:100], y[:100])
    before = model_state(fitted)
    with monkeypatch.context() as patch:
        patch.setattr(MultiKernelClassifier, "_learn", interrupted)
        for call in (lambda: fresh.partial_fit(X[:50], y[:50]),
                     lambda: fresh.learn_one(X[0], y[0]),
                     lambda: fitted.fit(X[100:200], y[100:200])):
            with pytest.raises(KeyboardInterrupt):
                call()
    assert "t_" not in fresh.__dict__ and "_model" not in fresh.__dict__
    model_state.same(before, model_state(fitted))
    assert fitted.t_ == 100
    if engine == "numpy":       # Ctrl-C inside the start itself, as it sets the weights
        with monkeypatch.context() as patch:
            patch.setattr(type(fitted._model), "from_state",
                          classmethod(lambda cls, state: (_ for _ in ()).throw(
                              KeyboardInterrupt)))
            with pytest.raises(KeyboardInterrupt):
                fitted.fit(X[100:200], y[100:200])
        model_state.same(before, model_state(fitted))
    fresh.partial_fit(X, y)
    fitted.partial_fit(X[100:], y[100:])
    whole = MultiKernelClassifier(engine=engine, budget=40).fit(X, y)
    for est in (fresh, fitted):
        np.testing.assert_allclose(est.learner_decisions(X), whole.learner_decisions(X),
                                   rtol=0, atol=1e-12)
        np.testing.assert_allclose(est.weights_, whole.weights_, rtol=0, atol=1e-12)


def test_one_class_events_take_the_compiled_step_and_learn_nothing():
    """While a classifier knows one class, learn_one takes the compiled step, which learns
    nothing (as partial_fit); the second class starts the learning."""
    X, y = xor_stream(300, seed=25)
    y = np.concatenate([np.zeros(15, dtype=int), y[15:]])
    events, rows = MultiKernelClassifier(budget=50), MultiKernelClassifier(budget=50)
    for x, label in zip(X, y):
        events.learn_one(x, label)
        rows.partial_fit(x[None], [label])
    assert events.t_ == rows.t_ == 300 - int(np.argmax(y != 0))
    np.testing.assert_allclose(events.learner_decisions(X), rows.learner_decisions(X),
                               rtol=0, atol=1e-12)
    np.testing.assert_allclose(events.weights_, rows.weights_, rtol=0, atol=1e-12)


# -- both engines, the one-event path, bad input, persistence --------------------------------

def first_order(cls):
    """The parameters that make cls the first-order pool (MultiKernelRegressor's default is
    learner="krls", tests/test_multikernel_krls.py)."""
    return {"learner": "sgd"} if cls is MultiKernelRegressor else {}


TWIN_CASES = [
    (MultiKernelClassifier, dict(loss="logistic", budget=60)),
    (MultiKernelClassifier, dict(budget=50, budget_policy="oldest", combination="stochastic",
                                 random_state=3)),
    (MultiKernelClassifier, dict(eta=0.5, eta_scales=[0.5, 2.0], fit_intercept=False)),
    (MultiKernelRegressor, dict(learner="sgd", loss="pinball", quantile=0.8, budget=70)),
    (MultiKernelClassifier, dict(budget=40, budget_policy="merge")),
    (MultiKernelRegressor, dict(learner="sgd", budget=30, budget_policy="merge",
                                eta_scales=[0.5, 1.0])),
    (MultiKernelRegressor, dict(learner="sgd", eta_scales=[0.3, 1.0], combination="stochastic",
                                random_state=1)),
    (MultiKernelClassifier, dict(budget=None, forgetting=0.99, share=0.05)),
    (MultiKernelClassifier, dict(budget=40, linear=False, forgetting=0.95, eta_scales=[4.0])),
    (MultiKernelRegressor, dict(learner="sgd", budget=40, forgetting=None, share=0.02,
                                loss="huber", epsilon=0.5)),
    (MultiKernelRegressor, dict(learner="sgd", budget=None, gammas=[0.5, 2.0], forgetting=0.97)),
    (MultiKernelClassifier, dict(budget=40, forgetting_start=5.0, eta_scales=[1.0])),
] + [   # every budget policy without and with the offset
    (cls, dict(budget=40, budget_policy=policy, fit_intercept=intercept, **first_order(cls)))
    for cls in (MultiKernelClassifier, MultiKernelRegressor)
    for policy in ("merge", "smallest", "oldest") for intercept in (False, True)
]


@pytest.mark.parametrize("cls, params", TWIN_CASES)
def test_engine_twins(cls, params):
    if cls is MultiKernelClassifier:
        X, y = xor_stream(2500, seed=6)
    else:
        X, y = sine_stream(2500, seed=6)
    fits = []
    for engine in ("cython", "numpy"):
        est = cls(engine=engine, **params)
        est.partial_fit(X[:1000], y[:1000],
                        **({"classes": [0, 1]} if cls is MultiKernelClassifier else {}))
        est.partial_fit(X[1000:], y[1000:])
        fits.append(est)
    a, b = fits
    np.testing.assert_allclose(a.learner_decisions(X[:300]), b.learner_decisions(X[:300]),
                               rtol=0, atol=1e-10)
    np.testing.assert_allclose(a.weights_, b.weights_, rtol=0, atol=1e-10)
    np.testing.assert_allclose(a.dual_coef_, b.dual_coef_, rtol=0, atol=1e-10)
    np.testing.assert_allclose(a.support_vectors_, b.support_vectors_, rtol=0, atol=1e-10)
    np.testing.assert_allclose(a.gammas_, b.gammas_, rtol=1e-12)


@pytest.mark.filterwarnings("ignore:overflow:RuntimeWarning")     # the distances to that row
@pytest.mark.parametrize("cls", [MultiKernelClassifier, MultiKernelRegressor])
def test_a_row_whose_squared_norm_overflows_moves_no_linear_learner(cls):
    """||x - m||^2 = inf: the linear kernel of that row is 0 (as exp(-inf) for the Gaussian
    kernel), so the linear learners score their offsets and do not move, in both engines."""
    rng = np.random.default_rng(26)
    X = rng.normal(size=(60, 3))
    X[30] = [1e200, 0.5, -1.0]
    y = (X[:, 1] > 0).astype(int) if cls is MultiKernelClassifier else np.sin(X[:, 1])
    fits = []
    for engine in ("cython", "numpy"):
        est = cls(gammas=[0.5, 2.0], budget=20, engine=engine, random_state=0,
                  **first_order(cls)).fit(X[:30], y[:30])
        # the weights (the intercept column takes in the running mean, which that row moves)
        lin = est.linear_coef_[:, :-1]
        scores = est.learner_decisions(X[30:31])[0]
        linear = np.isnan(est.gammas_)
        np.testing.assert_array_equal(scores[linear], est._model.get_state()["b"][linear])
        est.partial_fit(X[30:31], y[30:31])
        before = est.linear_coef_[:, :-1]
        forgets = ~np.isnan(est.forgetting_[linear])
        factor = np.where(forgets, est.forgetting_[linear], 0.0)
        assert np.all(np.isfinite(before))
        np.testing.assert_allclose(before[forgets], factor[forgets, None] * lin[forgets],
                                   rtol=1e-12, atol=0)
        est.partial_fit(X[31:], y[31:])
        fits.append(est)
    np.testing.assert_allclose(fits[0].learner_decisions(X), fits[1].learner_decisions(X),
                               rtol=0, atol=1e-10)
    np.testing.assert_allclose(fits[0].weights_, fits[1].weights_, rtol=0, atol=1e-10)


@pytest.mark.parametrize("cls", [MultiKernelClassifier, MultiKernelRegressor])
def test_learn_one_takes_the_chunk_iterates(cls):
    X, y = xor_stream(400, seed=8) if cls is MultiKernelClassifier else sine_stream(400, seed=8)
    kw = dict(classes=[0, 1]) if cls is MultiKernelClassifier else first_order(cls)
    chunk = cls(budget=50, **kw).fit(X, y)
    events = cls(budget=50, **kw)
    for x, target in zip(X, y):
        events.learn_one(x, target)
    np.testing.assert_allclose(events.learner_decisions(X), chunk.learner_decisions(X),
                               rtol=0, atol=1e-12)
    np.testing.assert_allclose(events.weights_, chunk.weights_, rtol=0, atol=1e-12)
    assert events.predict_one(X[0]) == chunk.predict(X[:1])[0]
    assert events.t_ == chunk.t_


@pytest.mark.parametrize("policy", ["merge", "smallest", "oldest"])
def test_a_budget_bounds_the_shared_centres(policy):
    X, y = xor_stream(1500, seed=19)
    clf = MultiKernelClassifier(budget=60, budget_policy=policy, classes=[0, 1])
    for lo in range(0, 1500, 100):
        clf.partial_fit(X[lo:lo + 100], y[lo:lo + 100])
        assert clf.n_support_ <= 60
    for x, label in zip(X[:200], y[:200]):
        clf.learn_one(x, label)
    assert clf.n_support_ == 60 and clf.dual_coef_.shape == (24, 60)
    assert clf.score(X, y) > 0.6


@pytest.mark.parametrize("engine", ["cython", "numpy"])
def test_bad_input_leaves_the_model_unchanged(engine, model_state):
    X, y = xor_stream(300, seed=9)
    clf = MultiKernelClassifier(engine=engine, budget=40).fit(X, y)
    before, t = model_state(clf), clf.t_
    bad = X[:5].copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError):
        clf.partial_fit(bad, y[:5])
    with pytest.raises(ValueError):
        clf.learn_one(bad[3], 1)
    with pytest.raises(ValueError):
        clf.partial_fit(X[:5, :2], y[:5])
    model_state.same(before, model_state(clf))
    assert clf.t_ == t
    # a third class where the loss has no multiclass form
    clf = MultiKernelClassifier(loss="squared_hinge", engine=engine, budget=40).fit(X, y)
    before = model_state(clf)
    with pytest.raises(ValueError, match="multiclass losses"):
        clf.partial_fit(X[:5], np.array([0, 1, 2, 0, 1]))
    model_state.same(before, model_state(clf))
    np.testing.assert_array_equal(clf.classes_, [0, 1])
    reg = MultiKernelRegressor(engine=engine, eta=50.0, eta_decay=0.0, lam=0.0, learner="sgd")
    reg.fit(X[:2], np.array([0.0, 1.0]))
    before = model_state(reg)
    with pytest.raises(FloatingPointError):
        reg.partial_fit(np.vstack([X[2:50]] * 20), np.full(960, 1e300))
    model_state.same(before, model_state(reg))


@pytest.mark.parametrize("cls, params", TWIN_CASES)
def test_persistence_round_trip(cls, params, model_state):
    X, y = xor_stream(500, seed=10) if cls is MultiKernelClassifier else sine_stream(500, 10)
    est = cls(**params).fit(X[:400], y[:400])
    buffer = io.BytesIO()
    okl.save(est, buffer)
    buffer.seek(0)
    back = okl.load(buffer)
    model_state.same(model_state(est), model_state(back))
    assert back.seed_ == est.seed_
    est.partial_fit(X[400:], y[400:])
    back.partial_fit(X[400:], y[400:])
    np.testing.assert_array_equal(est.predict(X), back.predict(X))
    model_state.same(model_state(est), model_state(back))


def test_load_refuses_an_edited_file():
    X, y = xor_stream(200, seed=11)
    est = MultiKernelClassifier(gammas=[0.5, 1.0]).fit(X, y)
    state = est._model.get_state()
    est._model = type(est._model).from_state(dict(state, q=state["q"] * 2))
    buffer = io.BytesIO()
    okl.save(est, buffer)
    buffer.seek(0)
    with pytest.raises(okl.ModelFileError, match="q"):
        okl.load(buffer)


@pytest.mark.parametrize("est", [MultiKernelClassifier(), MultiKernelRegressor(),
                                 MultiKernelRegressor(learner="sgd")],
                         ids=["classifier", "regressor", "regressor-sgd"])
def test_sklearn_check_estimator(est):
    check_estimator(est, expected_failed_checks=est.expected_failed_checks)


def test_weights_show_the_winning_width():
    X, y = xor_stream(3000, seed=12)
    clf = MultiKernelClassifier(gammas=[1e-3, 1.0, 1e3], eta_scales=[1.0], **PAPERS).fit(X, y)
    assert np.argmax(clf.weights_) == 1
    np.testing.assert_allclose(clf.gammas_, [1e-3, 1.0, 1e3])
    assert clf.dual_coef_.shape == (3, clf.n_support_)


def test_auto_widths_follow_the_scale_of_the_inputs():
    """The Gaussian learners' widths and the linear learners' steps and intercept follow the
    scale of the inputs: a stream scaled by 1000 learns the same functions."""
    X, y = xor_stream(2000, seed=13)
    small = MultiKernelClassifier().fit(X, y)
    large = MultiKernelClassifier().fit(1000 * X, y)
    np.testing.assert_allclose(large.gammas_ * 1e6, small.gammas_, rtol=1e-9)
    np.testing.assert_allclose(large.learner_decisions(1000 * X), small.learner_decisions(X),
                               rtol=1e-7, atol=1e-9)
    np.testing.assert_array_equal(small.predict(X), large.predict(1000 * X))
    # 8 widths x (2 step scales + 1 that forgets), then the linear learners likewise
    assert len(small.weights_) == (len(AUTO_GAMMAS) + 1) * 3
    assert np.isnan(small.gammas_[-3:]).all() and np.isnan(small.forgetting_[:2]).all()
    np.testing.assert_array_equal(small.forgetting_[2::3], 0.998)


# -- the defaults, against the best single width in hindsight ------------------------------

def standardized_stream(name):
    """The data set shuffled once (seed 0) and scaled online by OnlineStandardScaler."""
    if name == "breast_cancer":
        X, y = load_breast_cancer(return_X_y=True)
    elif name == "digits":
        X, y = load_digits(return_X_y=True)
        y = (y >= 5).astype(int)
    elif name == "digits_10":
        X, y = load_digits(return_X_y=True)
    else:
        X, y = load_diabetes(return_X_y=True)
    order = np.random.default_rng(0).permutation(len(X))
    X, y = X[order], y[order].astype(np.float64)
    scaler, Z = OnlineStandardScaler(), np.empty_like(X, dtype=np.float64)
    for i, x in enumerate(X):
        scaler.partial_fit(x[None, :])
        Z[i] = scaler.transform(x[None, :])[0]
    return Z, y


def progressive_quality(est, Z, y):
    """Progressive accuracy (classifiers) or RMSE (regressors) of one pass."""
    if hasattr(est, "classes"):
        f = progressive(est, Z, y, classes=np.unique(y))
        return float(np.mean(est._predictions(f) == y))
    return float(np.sqrt(np.mean((progressive(est, Z, y) - y) ** 2)))


@pytest.mark.parametrize("name", ["breast_cancer", "digits", "digits_10", "diabetes"])
def test_defaults_match_the_best_single_width_in_hindsight(name):
    Z, y = standardized_stream(name)
    d = Z.shape[1]
    classify = name != "diabetes"
    Single = OnlineKernelClassifier if classify else OnlineKernelRegressor
    multi = MultiKernelClassifier() if classify else MultiKernelRegressor(learner="sgd")
    # the widths of gammas="auto" on standardized features (2^j / n_features), each a single
    # learner with the combination's own base parameters (its step scale 1)
    base = {name: getattr(multi, name)
            for name in ("loss", "lam", "eta", "eta_decay", "fit_intercept")}
    singles = [progressive_quality(Single(gamma=g / d, budget=None, **base), Z, y)
               for g in AUTO_GAMMAS]
    combined = progressive_quality(multi, Z, y)
    if classify:
        assert combined >= max(singles) - 0.005
    else:
        assert combined <= 1.02 * min(singles)


# -- everywhere: river, the command line, many streams ---------------------------------------

def test_to_river_learns_the_same_model():
    from okl.river import to_river
    X, y = xor_stream(300, seed=14)
    wrapped = to_river(MultiKernelClassifier(classes=[0, 1]))
    for x, label in zip(X, y):
        wrapped.learn_one(dict(enumerate(x)), int(label))
    direct = MultiKernelClassifier(classes=[0, 1]).fit(X, y)
    assert wrapped.predict_one(dict(enumerate(X[0]))) == direct.predict(X[:1])[0]
    p = wrapped.predict_proba_one(dict(enumerate(X[0])))
    assert set(p) == {0, 1} and abs(sum(p.values()) - 1) < 1e-12


def test_command_line_model_auto(tmp_path):
    from okl.__main__ import main
    X, y = sine_stream(300, seed=15)
    path = tmp_path / "data.csv"
    np.savetxt(path, np.column_stack([X, y]), delimiter=",", header="a,b,target", comments="")
    for name, cls in (("auto", MultiKernelRegressor), ("auto-classifier", MultiKernelClassifier)):
        if cls is MultiKernelClassifier:
            np.savetxt(path, np.column_stack([X, y > 0]), delimiter=",", header="a,b,target",
                       comments="", fmt=["%.8f", "%.8f", "%d"])
        model_file = tmp_path / f"{name}.okl"
        assert main(["learn", str(path), "--target", "target", "--model", name,
                     "-f", str(model_file)]) == 0
        model = okl.load(model_file)
        # a classifier learns from the second label on (docs/multiclass.md, section 1)
        first = 0 if cls is MultiKernelRegressor else int(np.argmax((y > 0) != (y[0] > 0)))
        assert type(model) is cls and model.t_ == 300 - first


def test_learn_many_sequential():
    from okl.distributed import learn_many
    X, y = xor_stream(400, seed=16)
    results = learn_many(MultiKernelClassifier(), {"a": (X[:200], y[:200]),
                                                   "b": (X[200:], y[200:])},
                         client="sequential", classes=[0, 1])
    alone = MultiKernelClassifier(classes=[0, 1]).fit(X[200:], y[200:])
    np.testing.assert_array_equal(results["b"].model.weights_, alone.weights_)


def test_the_compiled_codes_are_the_twins_codes():
    from okl._core import _multikernel as core
    from okl._numpy import multikernel as twin
    assert int(core.Combination.DETERMINISTIC) == twin.DETERMINISTIC
    assert int(core.Combination.STOCHASTIC) == twin.STOCHASTIC
    assert int(core.Task.CLASSIFY) == twin.CLASSIFY and int(core.Task.REGRESS) == twin.REGRESS


def test_predict_then_learn_reuses_the_prediction_and_stays_exact():
    X, y = xor_stream(300, seed=17)
    a, b = MultiKernelClassifier(classes=[0, 1]), MultiKernelClassifier(classes=[0, 1])
    for x, label in zip(X, y):
        a.predict_one(x)                 # cached, then reused by learn_one
        a.learn_one(x, label)
        b.learn_one(x, label)
    np.testing.assert_array_equal(a.learner_decisions(X), b.learner_decisions(X))
    a.predict_one(X[0])
    a.partial_fit(X[:3], y[:3])          # the chunk loop changes the model: no stale cache
    b.partial_fit(X[:3], y[:3])
    assert a.predict_one(X[0]) == b.predict(X[:1])[0]
    np.testing.assert_array_equal(a.weights_, b.weights_)


def test_an_unbudgeted_model_warns_once_when_it_grows_large(monkeypatch):
    import warnings

    from okl import _warnings
    monkeypatch.setattr(_warnings, "EXPANSION_WORK", 2000)   # centres x (features + learners)
    X, y = xor_stream(200, seed=18)
    clf = MultiKernelClassifier(classes=[0, 1], budget=None)
    with pytest.warns(_warnings.SizeWarning, match="budget=B"):
        clf.partial_fit(X[:150], y[:150])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clf.partial_fit(X[150:], y[150:])                     # once
        MultiKernelClassifier(budget=20).fit(X, y)            # a budget bounds it: no warning


def test_parameters_the_model_is_built_with_cannot_change_mid_stream(model_state):
    X, y = xor_stream(400, seed=20)
    clf = MultiKernelClassifier(gammas=[0.5, 1.0], budget=50).fit(X[:200], y[:200])
    before = model_state(clf)
    clf.set_params(gammas=[0.5, 2.0])
    with pytest.raises(ValueError, match="gammas"):
        clf.partial_fit(X[200:], y[200:])
    model_state.same(before, model_state(clf))
    for name, value in (("linear", False), ("forgetting", 0.9), ("budget", "auto")):
        clf.set_params(gammas=[0.5, 1.0], **{name: value})
        with pytest.raises(ValueError, match=name):
            clf.partial_fit(X[200:], y[200:])
        clf.set_params(linear=True, forgetting=0.998, budget=50)
    model_state.same(before, model_state(clf))
    clf.set_params(gammas=[0.5, 1.0], beta=0.5, share=0.1)  # the discount, the share may change
    clf.partial_fit(X[200:300], y[200:300])
    clf.set_params(engine="numpy")                        # so may the engine: same iterates
    clf.partial_fit(X[300:], y[300:])
    assert type(clf._model).__name__ == "NumpyMultiKernel" and clf.t_ == 400


def test_pickle_round_trip():
    import pickle
    X, y = xor_stream(300, seed=21)
    clf = MultiKernelClassifier(budget=40, classes=[0, 1])
    for x, label in zip(X[:200], y[:200]):
        clf.learn_one(x, label)
    back = pickle.loads(pickle.dumps(clf))
    clf.partial_fit(X[200:], y[200:])
    back.partial_fit(X[200:], y[200:])
    np.testing.assert_array_equal(clf.decision_function(X), back.decision_function(X))
