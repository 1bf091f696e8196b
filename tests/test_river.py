"""okl.river.to_river: okl learners inside river's evaluation, pipelines and metrics."""
import math
import pickle
import sys

import numpy as np
import pytest

from okl import (
    CoefficientRegularizedClassifier, MultiKernelClassifier, OnlineKernelClassifier,
    OnlineKernelRegressor, PairwiseLearner, RegularizedPAClassifier,
)
from okl.preprocessing import OnlineStandardScaler


@pytest.fixture
def river():
    return pytest.importorskip("river", reason="river is optional: pip install 'okl[river]'")


def stream(n=150, d=3, seed=0, classify=False):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, (n, d))
    if classify:
        y = X[:, 0] * X[:, 1] > 0
    else:
        y = np.sin(2 * X[:, 0]) + X[:, 1] + 0.1 * rng.normal(size=n)
    return X, y, [({f"x{j}": v for j, v in enumerate(row)}, target) for row, target in zip(X, y)]


def test_progressive_val_score_equals_okls_own_progressive_validation(river):
    from river import evaluate, metrics

    from okl.river import to_river
    X, y, events = stream()
    model = to_river(OnlineKernelRegressor(gamma=0.5))
    assert isinstance(model, river.base.Regressor)
    mae = evaluate.progressive_val_score(events, model, metrics.MAE())
    ref = OnlineKernelRegressor(gamma=0.5)
    preds = [0.0]
    ref.partial_fit(X[:1], y[:1])
    for i in range(1, len(X)):
        preds.append(ref.predict(X[i:i + 1])[0])
        ref.partial_fit(X[i:i + 1], y[i:i + 1])
    assert mae.get() == pytest.approx(np.mean(np.abs(np.array(preds) - y)), abs=1e-12)
    np.testing.assert_allclose(model.estimator.dual_coef_, ref.dual_coef_, rtol=0, atol=1e-12)


def test_river_pipeline_with_river_scaler(river):
    from river import compose, evaluate, metrics, preprocessing

    from okl.river import to_river
    X, y, events = stream(classify=True)
    model = preprocessing.StandardScaler() | to_river(OnlineKernelClassifier(loss="logistic"))
    assert isinstance(model, compose.Pipeline)
    accuracy = evaluate.progressive_val_score(events, model, metrics.Accuracy())
    assert accuracy.get() > 0.7
    auc = evaluate.progressive_val_score(events, model.clone(), metrics.ROCAUC())
    assert auc.get() > 0.7
    p = model.predict_proba_one(events[0][0])
    assert set(p) == {False, True} and sum(p.values()) == pytest.approx(1.0)
    assert model.predict_one(events[0][0]) in (False, True)


def test_river_scaler_equals_okls_scaler(river):
    from river import preprocessing
    _, _, events = stream()
    ours, theirs = OnlineStandardScaler(), preprocessing.StandardScaler()
    for x, _ in events:
        ours.learn_one(x)
        theirs.learn_one(x)
        a, b = ours.transform_one(x), theirs.transform_one(x)
        assert a.keys() == b.keys()
        np.testing.assert_allclose(list(a.values()), [b[k] for k in a], rtol=1e-9, atol=1e-12)


def test_classifier_needs_no_classes_and_predicts_the_prior_first(river):
    from okl.river import to_river
    _, y, events = stream(classify=True)
    model = to_river(OnlineKernelClassifier())
    assert isinstance(model, river.base.Classifier)
    assert model.predict_one(events[0][0]) is None          # nothing learned: river's None
    model.learn_one(*events[0])
    assert model.predict_one(events[1][0]) == events[0][1]  # the only label seen
    for x, label in events[1:]:
        model.learn_one(x, label)
    assert model.estimator.classes_.tolist() == [False, True]
    first = next(i for i, (_, label) in enumerate(events) if label != events[0][1])
    assert model.estimator.t_ == len(events) - first        # one label: nothing to learn
    p = model.predict_proba_one(events[0][0])     # hinge: Platt's scaling of the margin
    assert set(p) == {False, True} and p[True] + p[False] == pytest.approx(1.0)


def test_online_platt_recovers_a_logistic_link():
    """Margins f with P(y = 1 | f) = sigmoid(2 f - 0.5): (A, B) -> (2, -0.5)."""
    from okl.river import OnlinePlatt
    rng = np.random.default_rng(0)
    platt = OnlinePlatt()
    for f in rng.normal(0.0, 2.0, 20000):
        platt.learn(f, rng.random() < 1.0 / (1.0 + np.exp(-(2.0 * f - 0.5))))
    assert platt.A == pytest.approx(2.0, abs=0.15) and platt.B == pytest.approx(-0.5, abs=0.15)


@pytest.mark.parametrize("load", ["iris", "wine"])
def test_hinge_models_work_inside_one_vs_rest(river, load):
    """river's OneVsRestClassifier asks predict_proba_one[True] of every binary model, from
    the first event on; the hinge model answers with its online Platt scaling."""
    import sklearn.datasets
    from river import metrics, multiclass
    from sklearn.preprocessing import StandardScaler

    from okl.river import to_river
    X, y = getattr(sklearn.datasets, f"load_{load}")(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    model = multiclass.OneVsRestClassifier(
        to_river(OnlineKernelClassifier(gamma=1.0 / X.shape[1])))
    accuracy = metrics.Accuracy()
    order = np.random.default_rng(0).permutation(len(y))
    for k, i in enumerate(order):
        x = dict(enumerate(X[i]))
        p = model.predict_proba_one(x)
        if k:
            assert sum(p.values()) == pytest.approx(1.0) and min(p.values()) >= 0.0
        if k >= len(y) // 2:
            accuracy.update(int(y[i]), max(p, key=p.get))
        model.learn_one(x, int(y[i]))
    assert accuracy.get() > 0.8          # chance: 1/3 (iris), 0.40 (wine)


def test_a_bad_label_leaves_the_platt_scaling_as_it_was(river):
    from okl.river import to_river
    _, _, events = stream(classify=True)
    model = to_river(OnlineKernelClassifier())
    for x, label in events[:30]:
        model.learn_one(x, label)
    before = model.platt.state()
    with pytest.raises(ValueError):
        model.learn_one(events[30][0], "third label")
    assert model.platt.state() == before
    again = pickle.loads(pickle.dumps(model))
    assert again.predict_proba_one(events[31][0]) == model.predict_proba_one(events[31][0])


def test_pairwise_learner_is_a_river_regressor_of_scores(river):
    from okl.river import to_river
    X, y, events = stream()
    model = to_river(PairwiseLearner(eta=0.05))
    for x, target in events:
        model.learn_one(x, target)
    ref = PairwiseLearner(eta=0.05).partial_fit(X, y)
    assert model.predict_one(events[3][0]) == pytest.approx(ref.score_samples(X[3:4])[0],
                                                            abs=1e-12)


def test_bad_events_leave_the_model_as_it_was(river):
    from okl.river import to_river
    _, _, events = stream()
    model = to_river(OnlineKernelRegressor())
    for x, target in events[:20]:
        model.learn_one(x, target)
    before = model.estimator._expansion.get_state()
    for bad in ({"x0": np.nan, "x1": 0.0, "x2": 0.0}, {"x0": "a"}, {"zz": 1.0}):
        with pytest.raises((ValueError, TypeError)):
            model.learn_one(bad, 1.0)
    with pytest.raises((ValueError, TypeError)):
        model.learn_one(events[0][0], float("nan"))
    after = model.estimator._expansion.get_state()
    for key in before:
        np.testing.assert_array_equal(before[key], after[key])
    assert model.estimator.t_ == 20


def test_clone_and_pickle(river):
    from okl.river import to_river
    _, _, events = stream()
    model = to_river(OnlineKernelRegressor(gamma=0.5))
    for x, target in events[:30]:
        model.learn_one(x, target)
    fresh = model.clone()
    assert not hasattr(fresh.estimator, "t_") and fresh.estimator.gamma == 0.5
    again = pickle.loads(pickle.dumps(model))
    assert again.predict_one(events[40][0]) == model.predict_one(events[40][0])


def test_a_classifiers_compiled_state_survives_clone_pickle_and_deepcopy(river):
    """The river classifier's state is a compiled object's fields (its first base): a clone
    is fresh, a pickle or deep copy gives the same probabilities and Platt scaling, and
    learns on as the original does."""
    import copy

    from okl.river import to_river
    _, _, events = stream(classify=True)
    model = to_river(RegularizedPAClassifier())
    for x, label in events[:60]:
        model.learn_one(x, label)
    fresh = model.clone()
    assert fresh.platt.state() == type(fresh.platt)().state() and fresh._first_label is None
    assert not hasattr(fresh.estimator, "classes_") and fresh._own_step and fresh._direct
    for again in (pickle.loads(pickle.dumps(model)), copy.deepcopy(model)):
        assert again.estimator is not model.estimator and again.platt == model.platt
        assert again._first_label == model._first_label
        for x, label in events[60:90]:
            assert again.predict_proba_one(x) == model.predict_proba_one(x)
        assert again.platt == model.platt
    assert "platt" not in model.__dict__ and "estimator" not in model.__dict__


def test_threads_sharing_a_river_classifier_learn_every_event_once(river):
    """Threads predicting and learning through one wrapper: every event is learned once by
    the learner and teaches the Platt scaling once (each step under the learner's lock)."""
    import threading

    from okl.river import to_river
    _, _, events = stream(200, classify=True, seed=3)
    model = to_river(RegularizedPAClassifier())
    for x, label in events[:20]:
        model.learn_one(x, label)
    t0, n0 = model.estimator.t_, model.platt.n_positive + model.platt.n_negative
    errors = []

    def work(part):
        try:
            for x, label in part:
                p = model.predict_proba_one(x)
                assert sum(p.values()) == pytest.approx(1.0)
                model.predict_one(x)
                model.learn_one(x, label)
        except Exception as error:      # pragma: no cover - reported below
            errors.append(error)

    threads = [threading.Thread(target=work, args=(events[20 + i::4],)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert model.estimator.t_ == t0 + 180
    assert model.platt.n_positive + model.platt.n_negative == n0 + 180


def test_missing_river_names_the_extra(monkeypatch):
    import okl.river
    monkeypatch.setitem(sys.modules, "river", None)
    monkeypatch.setitem(sys.modules, "river.base", None)
    okl.river._classes.cache_clear()
    try:
        with pytest.raises(ImportError, match=r'pip install "okl\[river\]"'):
            okl.river.to_river(OnlineKernelRegressor())
    finally:
        okl.river._classes.cache_clear()


def test_unknown_features_raise_or_are_dropped(river):
    from okl.river import to_river
    _, _, events = stream()
    strict, lenient = to_river(OnlineKernelRegressor()), to_river(OnlineKernelRegressor(),
                                                                  unknown_features="ignore")
    for model in (strict, lenient):
        for x, target in events[:10]:
            model.learn_one(x, target)
    extra = dict(events[10][0], colour=3.0)
    with pytest.raises(ValueError, match="'colour'"):
        strict.learn_one(extra, 1.0)
    assert strict.estimator.t_ == 10
    lenient.learn_one(extra, 1.0)
    assert lenient.estimator.t_ == 11
    assert lenient.predict_one(extra) == lenient.predict_one(events[10][0])
    assert lenient.clone().unknown_features == "ignore"


class ReferencePlatt:
    """The online Platt scaling written out in plain Python (okl.river's rule)."""

    def __init__(self, lam=1.0, memory=1000.0):
        self.lam, self.memory, self.A, self.B = lam, memory, 1.0, 0.0
        self.h, self.n_positive, self.n_negative = [0.0, 0.0, 0.0], 0, 0

    def proba(self, f):
        # the C library's exp, as the compiled rule (NumPy's SIMD exp may differ in the last bit)
        z = self.A * f + self.B
        if z >= 0:
            return 1.0 / (1.0 + math.exp(-z))
        e = math.exp(z)
        return e / (1.0 + e)

    def learn(self, f, positive):
        if positive:
            target = (self.n_positive + 1.0) / (self.n_positive + 2.0)
            self.n_positive += 1
        else:
            target = 1.0 / (self.n_negative + 2.0)
            self.n_negative += 1
        p = float(self.proba(f))
        keep, c = 1.0 - 1.0 / self.memory, p * (1.0 - p)
        self.h = [keep * self.h[0] + c * f * f, keep * self.h[1] + c * f, keep * self.h[2] + c]
        ga, gb = 1.0 * (p - target) * f, 1.0 * (p - target)
        haa, hab, hbb = self.h[0] + self.lam, self.h[1], self.h[2] + self.lam
        det = haa * hbb - hab * hab
        self.A -= (hbb * ga - hab * gb) / det
        self.B -= (haa * gb - hab * ga) / det


@pytest.mark.parametrize("make, task", [
    (OnlineKernelClassifier, "hinge"),
    (lambda: OnlineKernelClassifier(loss="logistic"), "logistic"),
    (lambda: OnlineKernelClassifier(approximation="fourier", random_state=0), "hinge"),
    (OnlineKernelRegressor, "regression"),
])
def test_the_wrapper_gives_the_learners_own_results_and_platts_scaling_of_its_margins(
        river, make, task):
    """to_river(learner) predicts and learns exactly as the learner's own one-event path on
    the same events, and a hinge model's probabilities are the Platt scaling (written out
    in `ReferencePlatt`) of the margins taken before each event is learned."""
    from okl.river import to_river
    _, _, events = stream(300, classify=task != "regression", seed=3)
    ours, ref, platt = to_river(make()), make(), ReferencePlatt()
    for x, y in events:
        assert ours.predict_one(x) == ref.predict_one(x)
        classes = ref.__dict__.get("classes_", ())
        if task == "hinge" and len(classes) == 2:
            f = ref.decision_function_one(x)
            p = platt.proba(f)
            assert ours.predict_proba_one(x) == {bool(classes[0]): 1.0 - p, bool(classes[1]): p}
        elif task == "logistic" and len(classes) == 2:
            assert ours.predict_proba_one(x) == ref.predict_proba_one(x)
        ours.learn_one(x, y)
        ref.learn_one(x, y)
        if task == "hinge" and len(classes) == 2:
            platt.learn(f, y == classes[1])
    assert (ours.platt.A, ours.platt.B) == (platt.A, platt.B) if task == "hinge" else True
    X = np.array([list(x.values()) for x, _ in events])
    predict = "predict" if task == "regression" else "decision_function"
    np.testing.assert_array_equal(getattr(ours.estimator, predict)(X), getattr(ref, predict)(X))


def reference_softmax(labels, scores):
    """The k scores' softmax written out in plain Python (okl.river's rule for hinge models)."""
    top = scores[0]
    for s in scores[1:]:
        if not s <= top:
            top = s
    total = 0.0
    for s in scores:
        total += math.exp(s - top)
    return {label: math.exp(s - top) / total for label, s in zip(labels, scores)}


@pytest.mark.parametrize("make", [
    OnlineKernelClassifier,
    lambda: OnlineKernelClassifier(approximation="fourier", random_state=0),
    RegularizedPAClassifier,
])
def test_a_hinge_models_k_scores_give_their_softmax_on_every_path(river, make):
    """With three classes a hinge model's probabilities are the softmax of its k scores,
    written out in `reference_softmax`, to the last bit; the adapter's path (unknown keys
    dropped) and a weighted event's path give what the compiled one-event calls give."""
    from okl.river import to_river
    rng = np.random.default_rng(5)
    X = rng.normal(size=(200, 4))
    y = (X[:, 0] > 0.5).astype(int) + (X[:, 1] > 0).astype(int)
    events = [({f"x{j}": v for j, v in enumerate(row)}, int(label)) for row, label in zip(X, y)]
    ours, lenient, ref = (to_river(make()), to_river(make(), unknown_features="ignore"),
                          make())
    for i, (x, label) in enumerate(events):
        classes = ref.__dict__.get("classes_", ())
        extra = {**x, "unknown": 1.0} if i else x       # the first event fixes the features
        if len(classes) > 2:
            expected = reference_softmax(classes.tolist(), ref.decision_function_one(x).tolist())
            assert ours.predict_proba_one(x) == expected
            assert lenient.predict_proba_one(extra) == expected
        ours.learn_one(x, label)
        lenient.learn_one(extra, label, w=1 if i % 2 else 1.0)
        ref.learn_one(x, label)
    assert len(ref.classes_) == 3
    np.testing.assert_array_equal(ours.estimator.decision_function(X), ref.decision_function(X))
    np.testing.assert_array_equal(lenient.estimator.decision_function(X),
                                  ref.decision_function(X))


@pytest.mark.parametrize("make", [RegularizedPAClassifier, CoefficientRegularizedClassifier,
                                  lambda: RegularizedPAClassifier(kernel="gaussian"),
                                  lambda: MultiKernelClassifier(budget=50)])
def test_the_platt_scaling_is_the_same_on_every_path(river, make):
    """The compiled calls (one event, weight 1), the adapter's path (unknown keys dropped)
    and weighted events of weight 1 give the same labels, probabilities and (A, B) as the
    learner and `ReferencePlatt` on the margins taken before each event (the margin
    predict_one or predict_proba_one kept, or taken again in learn_one)."""
    from okl.river import to_river
    _, _, events = stream(200, classify=True, seed=4)
    ours, lenient, ref, platt = (to_river(make()), to_river(make(), unknown_features="ignore"),
                                 make(), ReferencePlatt())
    for i, (x, label) in enumerate(events):
        classes = ref.__dict__.get("classes_", ())
        extra = {**x, "unknown": 0.5} if i else x       # the first event fixes the features
        if len(classes) == 2:
            f = ref.decision_function_one(x)
            p = platt.proba(f)
            expected = {bool(classes[0]): 1.0 - p, bool(classes[1]): p}
            if i % 4 < 2:
                assert ours.predict_one(x) == ref.predict_one(x)
            if i % 4 > 0:
                assert ours.predict_proba_one(x) == expected
            assert lenient.predict_proba_one(extra) == expected
        ours.learn_one(x, label, w=1 if i % 3 == 0 else 1.0)
        lenient.learn_one(extra, label)
        ref.learn_one(x, label)
        if len(classes) == 2:
            platt.learn(f, label == classes[1])
    for model in (ours, lenient):
        assert (model.platt.A, model.platt.B) == (platt.A, platt.B)
        assert model.platt.n_positive + model.platt.n_negative == platt.n_positive + \
            platt.n_negative > 150


@pytest.mark.parametrize("make", [
    RegularizedPAClassifier,
    lambda: OnlineKernelClassifier(approximation="fourier", random_state=0),
])
def test_a_kept_margin_is_taken_again_after_a_change(river, make):
    """The margin predict_one / predict_proba_one keeps for the learn_one of the same event
    is taken again when the event or the learner changed in between (an event changed in
    place, another event learned, a pickle round trip): the Platt scaling is
    `ReferencePlatt`'s on the margins of the learner as it is at learn_one."""
    from okl.river import to_river
    _, _, events = stream(160, classify=True, seed=6)
    ours, ref, platt = to_river(make()), make(), ReferencePlatt()
    for i, (x, label) in enumerate(events):
        x = dict(x)
        ours.predict_proba_one(x) if i % 2 else ours.predict_one(x)
        change = i % 4
        if change == 1:
            x["x0"] += 0.5
        elif change == 2 and i:
            ours.estimator.learn_one(events[i - 1][0], events[i - 1][1])
            ref.learn_one(events[i - 1][0], events[i - 1][1])
        elif change == 3:
            ours = pickle.loads(pickle.dumps(ours))
        classes = ref.__dict__.get("classes_", ())
        f = ref.decision_function_one(x) if len(classes) == 2 else None
        ours.learn_one(x, label)
        ref.learn_one(x, label)
        if f is not None:
            platt.learn(f, label == classes[1])
    assert (ours.platt.A, ours.platt.B) == (platt.A, platt.B)
    assert ours.platt.n_positive + ours.platt.n_negative == platt.n_positive + \
        platt.n_negative > 150


def test_a_learner_with_its_own_learn_one_learns_through_it(river):
    """The wrapper calls the compiled step of okl's one-event learn_one itself; a learner
    whose learn_one is another (a conformal classifier's) is taught through its own."""
    from okl.conformal import ConformalClassifier
    from okl.river import to_river
    _, _, events = stream(120, classify=True)
    direct = ConformalClassifier(OnlineKernelClassifier(gamma=0.5))
    model = to_river(ConformalClassifier(OnlineKernelClassifier(gamma=0.5)))
    assert not model._own_step and to_river(OnlineKernelClassifier())._own_step
    for x, target in events:
        assert model.predict_one(x) == direct.predict_one(x)
        model.learn_one(x, target)
        direct.learn_one(x, target)
    assert direct.estimator_.t_ == model.estimator.estimator_.t_ > 100
