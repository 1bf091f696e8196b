"""okl.MultiKernelClassifier with three classes or more (docs/multikernel.md, section 8)."""
import io
import math

import numpy as np
import pytest
from scipy.special import expit, softmax

import okl
from okl import MultiKernelClassifier, OnlineKernelClassifier


def rings_stream(n, k=4, seed=0, noise=0.1):
    """k classes by the angle of a 3-d point, plus label noise; the labels 0 and 1 come first,
    the others appear later on the stream (classes are discovered)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = (np.floor((np.arctan2(X[:, 1], X[:, 0]) + np.pi) / (2 * np.pi) * k).astype(int)
         + (X[:, 2] > 0.8).astype(int)) % k
    flip = rng.random(n) < noise
    y = np.where(flip, rng.integers(0, k, n), y)
    first = np.flatnonzero(y < 2)[:20]          # 20 events of the first two labels lead
    order = np.concatenate([first, np.setdiff1d(np.arange(n), first)])
    return X[order], y[order]


@pytest.mark.parametrize("engine", ["cython", "numpy"])
@pytest.mark.parametrize("loss, budget, policy", [("hinge", None, "smallest"),
                                                  ("logistic", 40, "smallest"),
                                                  ("hinge", 40, "oldest"),
                                                  ("logistic", 40, "merge"),
                                                  ("hinge", 40, "merge")])
def test_one_width_is_the_single_multiclass_classifier(engine, loss, budget, policy):
    X, y = rings_stream(700, seed=1)
    params = dict(loss=loss, lam=1e-2, eta="auto", eta_decay=0.5, budget=budget,
                  budget_policy=policy, fit_intercept=True, engine=engine)
    single = OnlineKernelClassifier(gamma=0.7, drift_detector=None, **params)  # as the pool's
    multi = MultiKernelClassifier(gammas=[0.7], eta_scales=[1.0], linear=False, forgetting=None,
                                  share=0.0, **params)
    s_single = single._progressive_scores(X, y, reset=True)
    s_multi = multi._progressive_scores(X, y, reset=True)
    np.testing.assert_array_equal(multi.classes_, single.classes_)
    # the vote of one learner is its own label: the progressive predictions agree
    np.testing.assert_array_equal(single._predictions(s_single), multi._predictions(s_multi))
    F = multi.learner_decisions(X)
    assert F.shape == (len(X), 1, 4)
    np.testing.assert_allclose(F[:, 0], single.decision_function(X), rtol=0, atol=1e-11)
    np.testing.assert_allclose(multi.dual_coef_[0], single.dual_coef_, rtol=0, atol=1e-11)
    np.testing.assert_allclose(multi.support_vectors_, single.support_vectors_, rtol=0,
                               atol=1e-11)
    np.testing.assert_allclose(multi.intercept_[0], single.intercept_, rtol=0, atol=1e-12)
    assert multi.t_ == single.t_ and multi.n_support_ == single.n_support_


def test_two_classes_keep_the_binary_model():
    X, y = rings_stream(300, k=2, seed=2)
    clf = MultiKernelClassifier(budget=30).fit(X, y)
    assert clf._model.n_outputs == 1 and clf.dual_coef_.ndim == 2
    assert clf.decision_function(X).shape == (300,)


TWIN_CASES = [
    dict(),
    dict(loss="logistic", budget=50, budget_policy="merge"),
    dict(budget=50, budget_policy="smallest", combination="stochastic", random_state=2),
    dict(loss="logistic", budget=50, budget_policy="oldest", eta_scales=[0.5, 2.0],
         fit_intercept=False),
    dict(budget=60, budget_policy="merge", beta=0.5),
] + [   # every budget policy without and with the offset (fit_intercept=False is the default)
    dict(budget=60, budget_policy=policy, beta=0.5, fit_intercept=intercept)
    for policy in ("merge", "smallest", "oldest") for intercept in (False, True)
]


@pytest.mark.parametrize("params", TWIN_CASES)
def test_engine_twins(params):
    X, y = rings_stream(3000, seed=3)
    fits = []
    for engine in ("cython", "numpy"):
        est = MultiKernelClassifier(engine=engine, gammas=[0.1, 0.2, 0.4, 1.6, 5.0], **params)
        scores = [est._progressive_scores(X[:1200], y[:1200], reset=True),
                  est._progressive_scores(X[1200:], y[1200:])]
        fits.append((est, scores))
    (a, sa), (b, sb) = fits
    for u, v in zip(sa, sb):
        np.testing.assert_allclose(u, v, rtol=0, atol=1e-10)
    np.testing.assert_allclose(a.learner_decisions(X[:300]), b.learner_decisions(X[:300]),
                               rtol=0, atol=1e-10)
    np.testing.assert_allclose(a.weights_, b.weights_, rtol=0, atol=1e-10)
    np.testing.assert_allclose(a.dual_coef_, b.dual_coef_, rtol=0, atol=1e-10)
    np.testing.assert_allclose(a.support_vectors_, b.support_vectors_, rtol=0, atol=1e-10)
    np.testing.assert_allclose(a.intercept_, b.intercept_, rtol=0, atol=1e-10)


def test_a_new_class_converts_every_learner_exactly():
    X, y = rings_stream(400, k=3, seed=4)
    clf = MultiKernelClassifier(loss="logistic", budget=60)
    two = np.flatnonzero(y < 2)[:100]
    clf.partial_fit(X[two], y[two])
    f = clf.learner_decisions(X)                    # (rows, K): binary learners
    p = clf.predict_proba(X)
    clf.partial_fit(X[:1], [2])                     # the third class arrives (and is learned)
    assert list(clf.classes_) == [0, 1, 2]
    np.testing.assert_array_equal(clf.weights_.shape, (27,))     # 8 widths x 3, 3 linear
    np.testing.assert_allclose(clf.linear_coef_.shape, (3, X.shape[1] + 1, 3))
    clf2 = MultiKernelClassifier(loss="logistic", budget=60)
    clf2.partial_fit(X[two], y[two])
    clf2._add_class(2)                              # the conversion alone: s = (-f/2, f/2, 0)
    S = clf2.learner_decisions(X)
    np.testing.assert_allclose(S[:, :, 1] - S[:, :, 0], f, rtol=0, atol=1e-12)   # linear too
    np.testing.assert_array_equal(S[:, :, 2], 0.0)
    np.testing.assert_allclose(softmax(S[:, :, :2], axis=2)[:, :, 1], expit(f), atol=1e-12)
    assert p.shape == (400, 2)


def test_learn_one_takes_the_chunk_iterates():
    X, y = rings_stream(500, seed=5)
    chunk = MultiKernelClassifier(budget=50, loss="logistic").partial_fit(X, y)
    events = MultiKernelClassifier(budget=50, loss="logistic")
    for x, label in zip(X, y):
        events.learn_one(x, label)
    assert list(events.classes_) == list(chunk.classes_) == [0, 1, 2, 3]
    np.testing.assert_allclose(events.learner_decisions(X), chunk.learner_decisions(X),
                               rtol=0, atol=1e-12)
    np.testing.assert_allclose(events.weights_, chunk.weights_, rtol=0, atol=1e-12)
    assert events.predict_one(X[0]) == chunk.predict(X[:1])[0]
    np.testing.assert_allclose(events.decision_function_one(X[0]),
                               chunk.decision_function(X[:1])[0], atol=1e-12)
    p = events.predict_proba_one(X[0])
    np.testing.assert_allclose([p[c] for c in range(4)], chunk.predict_proba(X[:1])[0],
                               atol=1e-12)
    assert events.t_ == chunk.t_


@pytest.mark.parametrize("width_start", [False, True])
def test_vote_is_weighted_majority_within_its_mistake_bound(width_start):
    """The vote's mistakes obey (ln(1 / q_k,0) + M_k ln(1/beta)) / ln(2 / (1 + beta)) for every
    learner k, q_k,0 its start weight (1 / K for the papers' uniform start; docs/multikernel.md,
    section 2: the wrong learners hold at least half of the weight)."""
    X, y = rings_stream(3000, seed=6)
    beta = 0.8
    papers = dict(linear=False, forgetting=None, share=0.0, budget=None, width_start=width_start)
    clf = MultiKernelClassifier(beta=beta, loss="hinge", classes=[0, 1, 2, 3], **papers)
    scores = clf._progressive_scores(X, y, reset=True)
    mistakes = int(np.sum(clf._predictions(scores) != y))
    # every learner's own mistakes: replay with the learners' progressive scores
    replay = MultiKernelClassifier(beta=1.0, loss="hinge", classes=[0, 1, 2, 3], **papers)
    K = len(clf.weights_)
    own = np.zeros(K)
    for lo in range(0, 3000, 1):
        if lo:
            own += np.argmax(replay.learner_decisions(X[lo:lo + 1])[0], axis=1) != y[lo]
        else:
            own += 0 != y[0]        # no centre yet: every score 0, the first class
        replay.partial_fit(X[lo:lo + 1], y[lo:lo + 1])
    start = replay.weights_         # beta = 1, no share: the weights stay at the start
    assert np.all(start == 1.0 / K) != width_start
    bound = (-np.log(start) + own * math.log(1 / beta)) / math.log(2 / (1 + beta))
    assert mistakes <= bound.min()
    assert mistakes < 0.5 * len(y)


def test_predict_proba_is_the_hedge_mixture():
    X, y = rings_stream(600, seed=7)
    clf = MultiKernelClassifier(loss="logistic", budget=80).fit(X, y)
    P = clf.predict_proba(X[:50])
    mix = np.einsum("nkc,k->nc", softmax(clf.learner_decisions(X[:50]), axis=2),
                    clf.weights_)
    np.testing.assert_allclose(P, mix, atol=1e-14)
    np.testing.assert_allclose(P.sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(clf.predict_log_proba(X[:50]), np.log(P), atol=1e-12)
    binary = MultiKernelClassifier(loss="logistic").fit(X[y < 2], y[y < 2])
    f = binary.learner_decisions(X[:20])
    np.testing.assert_allclose(binary.predict_proba(X[:20])[:, 1], expit(f) @ binary.weights_)
    assert not hasattr(MultiKernelClassifier(loss="hinge"), "predict_proba")


@pytest.mark.parametrize("engine", ["cython", "numpy"])
def test_persistence_round_trip_and_edited_file(engine, model_state):
    X, y = rings_stream(500, seed=8)
    est = MultiKernelClassifier(engine=engine, budget=40, loss="logistic").fit(X[:400], y[:400])
    buffer = io.BytesIO()
    okl.save(est, buffer)
    buffer.seek(0)
    back = okl.load(buffer)
    model_state.same(model_state(est), model_state(back))
    est.partial_fit(X[400:], y[400:])
    back.partial_fit(X[400:], y[400:])
    model_state.same(model_state(est), model_state(back))
    s = est._model.get_state()
    est._model = type(est._model).from_state(dict(s, n_outputs=3, coef=s["coef"][:, :, :3],
                                                  linear_coef=s["linear_coef"][:, :, :3],
                                                  b=s["b"][:, :3]))
    buffer = io.BytesIO()
    okl.save(est, buffer)
    buffer.seek(0)
    with pytest.raises(okl.ModelFileError, match="n_outputs"):
        okl.load(buffer)


def test_bad_input_leaves_the_model_unchanged(model_state):
    X, y = rings_stream(300, seed=9)
    clf = MultiKernelClassifier(budget=40, classes=[0, 1, 2, 3]).fit(X, y)
    before = model_state(clf)
    bad = X[:5].copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError):
        clf.partial_fit(bad, y[:5])
    with pytest.raises(ValueError):
        clf.partial_fit(X[:5], [0, 1, 7, 2, 3])        # outside the fixed classes
    with pytest.raises(ValueError):
        clf.learn_one(bad[3], 1)
    model_state.same(before, model_state(clf))
    with pytest.raises(ValueError, match="multiclass form"):
        clf.set_params(loss="squared_hinge").partial_fit(X[:5], y[:5])
    model_state.same(before, model_state(clf))


def test_to_river_multiclass():
    from okl.river import to_river
    X, y = rings_stream(300, seed=10)
    wrapped = to_river(MultiKernelClassifier(loss="logistic", budget=50))
    for x, label in zip(X, y):
        wrapped.learn_one(dict(enumerate(x)), int(label))
    direct = MultiKernelClassifier(loss="logistic", budget=50).partial_fit(X, y)
    assert wrapped.predict_one(dict(enumerate(X[0]))) == direct.predict(X[:1])[0]
    p = wrapped.predict_proba_one(dict(enumerate(X[0])))
    assert set(p) == {0, 1, 2, 3} and abs(sum(p.values()) - 1) < 1e-12
    np.testing.assert_allclose([p[c] for c in range(4)], direct.predict_proba(X[:1])[0],
                               atol=1e-12)


@pytest.mark.parametrize("engine", ["cython", "numpy"])
def test_one_known_class_learns_nothing_on_the_one_event_path(engine):
    X, y = rings_stream(50, seed=11)
    clf = MultiKernelClassifier(engine=engine)
    for x in X[:5]:
        clf.learn_one(x, 0)
    assert clf.t_ == 0 and clf.n_support_ == 0 and list(clf.classes_) == [0]
    assert clf.predict_one(X[0]) == 0
