"""Regressions found by an adversarial audit of the multiclass, multi-kernel and label code.

Each test replays the smallest scenario that broke a rule of the house: nothing a
user can pass, load or do crashes or corrupts a model, and a call that raises
leaves the model exactly as it was.
"""
import functools
import pickle
import signal
import warnings

import numpy as np
import pytest

from okl import (
    CoefficientRegularizedClassifier,
    MultiKernelClassifier,
    MultiKernelRegressor,
    OnlineKernelClassifier,
    OnlineKernelRegressor,
    PairwiseLearner,
    RegularizedPAClassifier,
    load,
    save,
)
from okl.distributed import average_models

ENGINES = ["cython", "numpy"]
# the first-order multi-kernel regressor (the default is learner="krls")
FIRST_ORDER_REGRESSOR = functools.partial(MultiKernelRegressor, learner="sgd")


# ---- a multi-kernel model without centres ------------------------------------------------------

@pytest.mark.parametrize("engine", ENGINES)
def test_a_refused_call_restores_a_multikernel_model_without_centres(engine):
    """The checkpoint of a model of 0 centres could not be restored (centres reshaped to
    (0, -1)): a refused call raised a reshape error and left the offsets moved.  Here the call
    adds two classes and centres, then diverges on a huge row: all of it is undone."""
    X = np.random.default_rng(0).normal(size=(10, 2))
    X[7] = 1e300
    est = MultiKernelClassifier(gammas=(0.5,), eta_scales=(1.0,), eta=1e300, eta_decay=0.0,
                                engine=engine)
    est.partial_fit(X[:5], np.zeros(5, dtype=int))          # one class: no centre yet
    before = pickle.dumps(est)
    with pytest.raises(FloatingPointError, match="diverged"):
        est.partial_fit(X[5:], np.array([0, 1, 2, 0, 1]))
    assert pickle.dumps(est) == before


@pytest.mark.parametrize("make", [MultiKernelClassifier, FIRST_ORDER_REGRESSOR],
                         ids=["classifier", "regressor"])
@pytest.mark.parametrize("engine", ENGINES)
def test_a_multikernel_model_without_centres_pickles_and_saves(make, engine, tmp_path):
    X = np.random.default_rng(1).normal(size=(4, 3))
    est = make(engine=engine)
    if make is MultiKernelClassifier:
        est.partial_fit(X, np.zeros(4, dtype=int))
    else:
        est.partial_fit(X, np.zeros(4), sample_weight=np.zeros(4))
    assert est._model.n_support == 0
    copy = pickle.loads(pickle.dumps(est))
    save(est, tmp_path / "m.okl")
    for other in (copy, load(tmp_path / "m.okl")):
        assert other._model.n_support == 0
        np.testing.assert_array_equal(other.predict(X), est.predict(X))


# ---- a multi-kernel merge across an overflowing distance --------------------------------------

@pytest.mark.parametrize("engine", ENGINES)
def test_a_multikernel_merge_with_a_far_centre_keeps_the_model_finite(engine):
    """z = x_m (h = 1) with ||x_m - x_n||^2 = inf: K(x_m, z) was exp(-g 0 inf) = NaN, a NaN
    coefficient that every later prediction returned (the step had been accepted)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 5))
    X[8] = [1e-160, 1.5, 1.3, -1e300, 0.26]                  # finite, its squared norm is not
    y = np.sin(X[:, 0])
    est = MultiKernelRegressor(gammas=(0.5,), eta_scales=(1.0, 4.0), loss="absolute", eta=5.0,
                               eta_decay=0.0, budget=2, budget_policy="merge", random_state=0,
                               engine=engine, learner="sgd")
    for x, target in zip(X, y):
        est.learn_one(x, float(target))
        assert np.all(np.isfinite(est._model.get_state()["coef"]))
    assert np.all(np.isfinite(est.predict(rng.normal(size=(5, 5)))))


def test_the_far_centre_merge_is_the_same_in_both_engines():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(40, 3))
    X[::7, 1] = 1e300
    y = np.cos(X[:, 0]).clip(-1, 1)
    models = []
    for engine in ENGINES:
        est = MultiKernelRegressor(gammas=(0.5, 2.0), budget=3, budget_policy="merge",
                                   eta=1.0, engine=engine, learner="sgd")
        for x, target in zip(X, y):
            est.learn_one(x, float(target))
        state = est._model.get_state()
        models.append((state["scale"][:len(state["coef"]), None] * state["coef"], state["centers"]))
    np.testing.assert_allclose(models[0][0], models[1][0], rtol=0, atol=1e-10)
    np.testing.assert_allclose(models[0][1], models[1][1], rtol=0, atol=1e-10)
    assert np.all(np.isfinite(models[0][0]))


# ---- okl.save of a model fed dict events -------------------------------------------------------

DICT_FED = {
    "pa-linear": (RegularizedPAClassifier, 2),
    "pa-kernel-3": (lambda: RegularizedPAClassifier(kernel="gaussian"), 3),
    "coefreg": (lambda: CoefficientRegularizedClassifier(n_centers=5), 2),
    "pairwise": (PairwiseLearner, 0),
}


@pytest.mark.parametrize("name", sorted(DICT_FED))
def test_okl_load_reads_what_okl_save_wrote_after_dict_events(name, tmp_path):
    """The feature order of dict events (`_row_keys`) was saved, and load refused the file
    as damaged ("unknown entries ['_row_keys']")."""
    make, k = DICT_FED[name]
    rng = np.random.default_rng(3)
    est = make()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i in range(20):
            x = {"a": rng.normal(), "b": rng.normal()}
            est.learn_one(x, i % k if k else x["a"])
    save(est, tmp_path / "m.okl")
    other = load(tmp_path / "m.okl")
    assert other._row_keys == ("a", "b")
    probe = {"b": 0.5, "a": -1.0}                           # the saved order places the keys
    assert other.predict_one(probe) == est.predict_one(probe)


# ---- a Ctrl-C during learn_one -----------------------------------------------------------------

INTERRUPTED = {
    "pointwise": (lambda: OnlineKernelRegressor(gamma=0.02, budget=None), False),
    "multiclass": (lambda: OnlineKernelClassifier(gamma=0.02, budget=None), True),
    "multikernel": (lambda: MultiKernelRegressor(gammas=(0.02,), budget=None,
                                                     learner="sgd"), False),
    # rankers: the stored points grow (their buffers too), or g grows and a reservoir turns
    "pairwise": (lambda: PairwiseLearner(eta=0.5), False),
    "pairwise-difference": (lambda: PairwiseLearner(pair_kernel="difference", gamma=0.02,
                                                    eta=0.5, buffer=300, random_state=0), False),
}


def _size(est):
    model = est.__dict__.get("_expansion") or est.__dict__["_model"]
    return model.n_stored if isinstance(est, PairwiseLearner) else model.n_support


def _count(est):
    return est.n_stored_ if isinstance(est, PairwiseLearner) else est.n_support_


def _interrupted_events(name, trials=6, n=2500, d=50):
    """A SIGPROF handler raises KeyboardInterrupt during a stream of learn_one calls; returns,
    per trial, whether the model is that of the events before the interrupted one, or of
    those up to and including it (it was not: the compiled step had written, its counters
    were lost, the next steps took the wrong t and intercept)."""
    make, classifier = INTERRUPTED[name]
    rng = np.random.default_rng(5)
    X = rng.normal(size=(n + 400 * trials, d))
    y = np.digitize(X[:, 0], [-0.4, 0.4]) if classifier else np.sin(X[:, 0])
    est = make().fit(X[:n], y[:n])
    probe = X[:20]
    scores = (lambda m: m.decision_function(probe)) if classifier else (
        (lambda m: m.score_samples(probe)) if isinstance(est, PairwiseLearner) else
        (lambda m: m.predict(probe)))

    armed = [False]     # a signal still pending once the timer is stopped is dropped

    def interrupt(signum, frame):
        if armed[0]:
            raise KeyboardInterrupt

    old = signal.signal(signal.SIGPROF, interrupt)
    outcomes, start = [], n
    try:
        for trial in range(trials):
            before = pickle.dumps(est)
            armed[0] = True
            signal.setitimer(signal.ITIMER_PROF, 0.002 + 0.0007 * trial)
            i = start
            try:
                while i < start + 400:
                    est.learn_one(X[i], y[i])
                    i += 1
            except KeyboardInterrupt:
                pass
            finally:
                armed[0] = False
                signal.setitimer(signal.ITIMER_PROF, 0)
            ref = pickle.loads(before)
            for j in range(start, i):
                ref.learn_one(X[j], y[j])
            same = ref.t_ == est.t_ and np.array_equal(scores(ref), scores(est))
            if not same and i < start + 400:            # or the interrupted event completed
                ref.learn_one(X[i], y[i])
                same = ref.t_ == est.t_ and np.array_equal(scores(ref), scores(est))
            outcomes.append(None if same and _count(est) == _count(ref) else
                            f"event {i - start}: t_ {est.t_} (replayed {ref.t_}), size "
                            f"{_count(est)}, the model's {_size(est)} "
                            f"(replayed {_size(ref)})")
            start += 400
    finally:
        signal.signal(signal.SIGPROF, old)
    return outcomes


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="POSIX interval timers")
@pytest.mark.parametrize("name", sorted(INTERRUPTED))
def test_a_ctrl_c_during_learn_one_leaves_a_consistent_model(name, isolated):
    broken = [outcome for outcome in isolated(_interrupted_events, name) if outcome]
    assert not broken, broken


# ---- small refusals and asymmetries ------------------------------------------------------------

def test_a_metric_ranker_refuses_predict_one_clearly():
    """predict_one of pair_kernel='metric' (no one-point score) raised "'PairwiseLearner' object
    has no attribute 'predict'"."""
    X = np.random.default_rng(6).normal(size=(10, 2))
    est = PairwiseLearner(pair_kernel="metric").fit(X, X[:, 0])
    with pytest.raises(AttributeError, match="scores pairs of rows"):
        est.predict_one(X[0])


@pytest.mark.parametrize("engine", ENGINES)
def test_a_multikernel_classifier_learns_nothing_from_one_class_events(engine):
    """The compiled one-event step took steps while the stream had shown one class (t_ grew;
    partial_fit on the same rows takes none), and okl.load refused the saved file."""
    rng = np.random.default_rng(7)
    X = rng.normal(size=(30, 2))
    y = np.r_[np.zeros(6, dtype=int), (X[6:, 0] > 0).astype(int)]
    events = MultiKernelClassifier(random_state=0, engine=engine)
    for x, label in zip(X[:6], y[:6]):
        events.learn_one(x, label)
    assert events.t_ == 0
    chunk = MultiKernelClassifier(random_state=0, engine=engine).partial_fit(X[:6], y[:6])
    for x, label in zip(X[6:], y[6:]):
        events.learn_one(x, label)
    chunk.partial_fit(X[6:], y[6:])
    assert events.t_ == chunk.t_
    np.testing.assert_array_equal(events.decision_function(X), chunk.decision_function(X))


@pytest.mark.parametrize("make", [OnlineKernelClassifier, OnlineKernelRegressor])
@pytest.mark.parametrize("engine", ENGINES)
def test_a_nystroem_model_in_its_exact_phase_saves_and_loads(make, engine, tmp_path):
    """gamma='scale' (the default): okl.load compared the exact phase's width with the string
    'scale' ("could not convert string to float")."""
    X = np.random.default_rng(8).normal(size=(6, 2))
    est = make(approximation="nystroem", n_components=20, engine=engine)
    est.partial_fit(X, (X[:, 0] > 0).astype(int) if make is OnlineKernelClassifier else X[:, 0])
    save(est, tmp_path / "m.okl")
    np.testing.assert_array_equal(load(tmp_path / "m.okl").predict(X), est.predict(X))


def test_averaging_nystroem_models_in_their_exact_phase_is_refused_clearly():
    """average_features dereferenced the missing weight vector before its check ran."""
    X = np.random.default_rng(9).normal(size=(6, 2))
    models = [OnlineKernelRegressor(approximation="nystroem", n_components=20, gamma=0.5,
                                    random_state=0).partial_fit(X, X[:, 0]) for _ in range(2)]
    with pytest.raises(ValueError, match="exact phase"):
        average_models(models)


def test_a_merge_of_a_tiny_coefficient_is_the_same_in_both_engines():
    """c_m^2 underflows to 0 for a weight of 1e-300: the NumPy twin raised ZeroDivisionError
    where the compiled merge goes on (and the event was refused)."""
    rng = np.random.default_rng(10)
    X = rng.normal(size=(12, 2))
    y = np.sin(X[:, 0])
    predictions = []
    for engine in ENGINES:
        est = OnlineKernelRegressor(budget=3, budget_policy="merge", gamma=0.5,
                                    fit_intercept=False, engine=engine)
        for i, (x, target) in enumerate(zip(X, y)):
            est.learn_one(x, float(target), sample_weight=1e-300 if i in (4, 7) else 1.0)
        assert est.t_ == 12
        predictions.append(est.predict(X))
    np.testing.assert_allclose(predictions[0], predictions[1], rtol=0, atol=1e-10)


# ---- the multi-kernel width and file after extreme rows ----------------------------------------

@pytest.mark.parametrize("make", [FIRST_ORDER_REGRESSOR, MultiKernelClassifier],
                         ids=["regressor", "classifier"])
@pytest.mark.parametrize("engine", ENGINES)
def test_a_multikernel_model_after_a_huge_row_predicts_and_reloads(make, engine, tmp_path):
    """gammas='auto': a row near 1e300 overflows the running moments to inf, the width
    n / tr became 0 and K = exp(-0 inf) = NaN at the far centre (every prediction NaN); the
    file okl.save wrote was refused (moments not finite), and a loaded model had no
    n_support_ (its file was refused in turn)."""
    rng = np.random.default_rng(11)
    X = rng.normal(size=(20, 2))
    X[8] = [1e300, 0.5]
    y = (X[:, 1] > 0).astype(int) if make is MultiKernelClassifier else np.sin(X[:, 1])
    est = make(engine=engine, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for x, target in zip(X, y):
            est.learn_one(x, target)
        probe = rng.normal(size=(5, 2))
        assert np.all(np.isfinite(est.learner_decisions(probe)))
        save(est, tmp_path / "a.okl")
        once = load(tmp_path / "a.okl")
        save(once, tmp_path / "b.okl")
        twice = load(tmp_path / "b.okl")
        assert twice.n_support_ == once.n_support_ == est.n_support_
        np.testing.assert_array_equal(twice.predict(probe), est.predict(probe))


@pytest.mark.parametrize("classes", [2, 3])
def test_averaging_numpy_models_past_a_merge_budget(classes):
    """The union was reserved B slots; the NumPy expansions do not reserve in `add`, and the
    merge writes the newcomer to slot B first: IndexError."""
    rng = np.random.default_rng(12)
    X = rng.normal(size=(40, 3))
    y = np.digitize(X[:, 0], [-0.4, 0.4]) % classes
    averages = []
    for engine in ENGINES:
        models = [OnlineKernelClassifier(gamma=0.5, budget=6, budget_policy="merge",
                                         engine=engine).partial_fit(X[i::2], y[i::2])
                  for i in range(2)]
        average = average_models(models)
        assert average._expansion.n_support == 6
        averages.append(average.decision_function(X))
    np.testing.assert_allclose(averages[0], averages[1], rtol=0, atol=1e-10)


@pytest.mark.parametrize("make", [OnlineKernelClassifier, RegularizedPAClassifier,
                                  MultiKernelClassifier])
def test_string_classes_given_as_an_array_save_and_load(make, tmp_path):
    """classes=np.array(['a', 'b']) was saved, and okl.load refused the parameter as "not an
    array of finite numbers" (a list of the same strings loaded)."""
    X = np.random.default_rng(13).normal(size=(10, 2))
    y = np.array(list("ababbbaaba"))
    est = make(classes=np.array(["a", "b"])).partial_fit(X, y)
    save(est, tmp_path / "m.okl")
    other = load(tmp_path / "m.okl")
    np.testing.assert_array_equal(other.classes, ["a", "b"])
    np.testing.assert_array_equal(other.predict(X), est.predict(X))


# ---- a Ctrl-C during the undo of a failed call -------------------------------------------------

def _state(est):
    """Every attribute, model objects by their state, as pickled bytes (comparable)."""
    return {key: pickle.dumps(value.get_state() if hasattr(value, "get_state") else value)
            for key, value in vars(est).items()}


def test_a_ctrl_c_during_the_undo_still_restores_the_model(monkeypatch):
    """The undo of a failed call (here a divergence) restored the models, then cleared the
    estimator's attributes and put them back: a Ctrl-C in between left an estimator without
    its parameters (found with a refused third class of MultiKernelClassifier)."""
    from okl._numpy.expansion import NumpyExpansion
    X = np.random.default_rng(14).normal(size=(30, 2))
    est = OnlineKernelRegressor(eta=0.1, eta_decay=0.0, lam=0.0, engine="numpy")
    est.partial_fit(X[:10], X[:10, 0])
    before = _state(est)
    est.set_params(eta=1e150)
    restore, calls = NumpyExpansion.restore, []

    def interrupted_restore(self, token):
        calls.append(1)
        if len(calls) == 1:
            raise KeyboardInterrupt         # as a signal handler would, at the undo's start
        return restore(self, token)

    monkeypatch.setattr(NumpyExpansion, "restore", interrupted_restore)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(KeyboardInterrupt):
            est.partial_fit(X[10:], X[10:, 0])
    monkeypatch.undo()
    assert _state(est.set_params(eta=0.1)) == before
    assert len(calls) == 2                  # the interrupted undo ran again


def test_a_merge_with_a_far_centre_keeps_the_expansion_finite():
    """g = gamma ||x_m - x_n||^2 overflows to inf for a row near 1e300; the merge's
    K(x_n, z) - 1 at h = 0 was expm1(-inf * 0) = NaN: a NaN coefficient, every later
    prediction NaN and every later step refused (168 of 200 random such streams)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(8, 2))
    X[7, 0] = 1e300
    y = np.sin(X[:, 1])
    scores = []
    for engine in ENGINES:
        est = OnlineKernelRegressor(budget=2, budget_policy="merge", gamma=0.5,
                                    fit_intercept=False, engine=engine)
        for x, target in zip(X, y):
            est.learn_one(x, target)
        assert np.all(np.isfinite(est._expansion.coef_))
        probe = np.random.default_rng(1).normal(size=(4, 2))
        scores.append(est.predict(probe))
        assert np.all(np.isfinite(scores[-1]))
    np.testing.assert_allclose(scores[0], scores[1], rtol=0, atol=1e-10)


@pytest.mark.parametrize("make", [OnlineKernelRegressor, PairwiseLearner])
def test_fit_forgets_the_feature_order_of_earlier_dict_events(make):
    """fit starts a fresh stream, but the feature order fixed by earlier dict events stayed:
    dict events with fit's own columns were refused, and with more old names than columns
    the row was written past its end (IndexError)."""
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(17)
    est = make()
    for _ in range(5):
        est.learn_one({"a": rng.normal(), "b": rng.normal(), "c": rng.normal()}, rng.normal())
    est.fit(pd.DataFrame(rng.normal(size=(10, 2)), columns=["x", "y"]), rng.normal(size=10))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)    # scikit-learn: a row without names
        est.learn_one({"x": 1.0, "y": 2.0}, 0.5)
    assert est.t_ == 11
    est.fit(rng.normal(size=(10, 2)), rng.normal(size=10))       # arrays: no names at all
    with pytest.raises(ValueError, match="without feature names"):
        est.learn_one({"a": 1.0, "b": 2.0}, 0.5)


@pytest.mark.parametrize("nu", [0.5, 2.5])
def test_a_pickled_matern_fourier_model_predicts_as_the_original(nu):
    """A pickle draws the random features again from their seed, and drew them with Matern's
    default nu = 1.5: the copy (and every model Dask ships) predicted differently."""
    X = np.random.default_rng(18).normal(size=(30, 3))
    est = OnlineKernelRegressor(kernel="matern", nu=nu, gamma=0.5, approximation="fourier",
                                n_components=20, random_state=0).fit(X, np.sin(X[:, 0]))
    copy = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(copy.predict(X), est.predict(X))


# ---- a pickle holds the model, not spare capacity ----------------------------------------------

@pytest.mark.parametrize("make", [
    lambda: OnlineKernelClassifier(kernel="polynomial", gamma=1.0, engine="numpy"),
    lambda: RegularizedPAClassifier(kernel="polynomial", gamma=1.0, engine="numpy"),
    lambda: CoefficientRegularizedClassifier(kernel="polynomial", gamma=1.0, engine="numpy"),
], ids=["okc", "pa", "coefreg"])
@pytest.mark.parametrize("n_classes", [2, 3])
def test_a_refused_chunk_leaves_the_numpy_pickle_byte_identical(make, n_classes):
    """The NumPy expansions pickled their whole buffers: a refused chunk reserved room for its
    rows (and the undo kept it), so the model's pickle changed, with uninitialised memory in it.
    A pickle now holds the centres in use only."""
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(50, 3)), rng.integers(0, n_classes, 50)
    est = make().partial_fit(X, y)
    before = pickle.dumps(est)
    bad = X[:5].copy()
    bad[2] = 1e120                       # (gamma x.x + coef0)^3 overflows: the call diverges
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises(FloatingPointError):
            est.partial_fit(bad, y[:5])
    assert pickle.dumps(est) == before
    assert np.array_equal(pickle.loads(before).decision_function(X), est.decision_function(X))
