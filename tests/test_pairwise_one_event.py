"""PairwiseLearner one event at a time: the compiled step (`okl._core._pairwise.PairEvents`)
takes the iterates of partial_fit on the same rows, and fails leaving the model as it was."""
import copy
import warnings

import numpy as np
import pytest

import okl
from okl import PairwiseLearner, _warnings
from okl._core._pairwise import PairEvents, step_slots
from okl._pair_models import reservoir_slots
from okl.schedules import step_sizes

MODELS = {
    "linear": dict(eta=0.5),
    "linear-buffer": dict(eta=0.5, buffer=40, random_state=1),
    "logistic-difference-reducer": dict(loss="logistic", reducer="difference", eta=0.2,
                                        buffer=40, random_state=2),
    "metric": dict(pair_kernel="metric", eta=0.01),
    "metric-buffer": dict(pair_kernel="metric", eta=0.01, buffer=30, random_state=3),
    "difference": dict(pair_kernel="difference", gamma=0.2, eta=0.5),
    "difference-buffer": dict(pair_kernel="difference", gamma=0.2, eta=0.5, buffer=40,
                              random_state=4),
    "difference-laplacian": dict(pair_kernel="difference", kernel="laplacian", gamma=0.3,
                                 loss="squared_hinge", eta=0.3, buffer=30, random_state=5),
    "moments": dict(loss="squared", reducer="difference", eta=0.02),
    "squared-full-average": dict(loss="squared", reducer="difference", eta=0.02, buffer=50,
                                 random_state=6),
    "dissimilar": dict(reducer="dissimilar", eta=0.3, buffer=40, random_state=7),
    "dissimilar-difference": dict(reducer="dissimilar", pair_kernel="difference", gamma=0.2,
                                  eta=0.3, buffer=40, random_state=8),
}


def stream(n, d=5, seed=0, labels=False):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = X @ rng.normal(size=d) + 0.1 * rng.normal(size=n)
    if labels:
        y = np.where(y > 0.5, "high", np.where(y < -0.5, "low", "mid"))
    return X, y


def data_for(params, n, seed=0):
    return stream(n, seed=seed, labels=params.get("reducer") == "dissimilar")


def model_state(est):
    return {key: np.asarray(value, dtype=float) for key, value in est._model.get_state().items()
            if not isinstance(value, str)}


def assert_same(a, b, atol=1e-12):
    assert (a.t_, a.n_stored_) == (b.t_, b.n_stored_)
    if "classes_" in b.__dict__:
        np.testing.assert_array_equal(a.classes_, b.classes_)
    sa, sb = model_state(a), model_state(b)
    assert sa.keys() == sb.keys()
    for key in sa:
        np.testing.assert_allclose(sa[key], sb[key], rtol=0, atol=atol, err_msg=key)


def compiled(est):
    return type(est.__dict__["_one_event_state"]._events[0]) is PairEvents


@pytest.mark.parametrize("name", MODELS)
def test_events_equal_partial_fit(name, monkeypatch):
    """predict_one + learn_one after a first chunk: the iterates of one partial_fit, every
    event in the compiled step (no one-row partial_fit), the scores those of score_samples."""
    params = MODELS[name]
    X, y = data_for(params, 400)
    ours = PairwiseLearner(**params).fit(X[:30], y[:30])
    calls = []
    original = PairwiseLearner._progressive_scores
    monkeypatch.setattr(PairwiseLearner, "_progressive_scores",
                        lambda self, *a, **k: calls.append(1) or original(self, *a, **k))
    scores = []
    for x, label in zip(X[30:], y[30:].tolist()):
        if params.get("pair_kernel") != "metric":
            scores.append(ours.predict_one(x))
            assert scores[-1] == pytest.approx(float(ours.score_samples(x[None])[0]),
                                               rel=1e-12, abs=1e-12)
        ours.learn_one(x, label)
    assert calls == [] and compiled(ours)
    monkeypatch.undo()
    ref = PairwiseLearner(**params).fit(X[:30], y[:30]).partial_fit(X[30:], y[30:])
    assert_same(ours, ref)
    np.testing.assert_allclose(ours.decision_function(X[:50], X[50:100]),
                               ref.decision_function(X[:50], X[50:100]), rtol=0, atol=1e-12)


def test_step_sizes_and_reservoir_slots_match_the_chunk_path():
    """eta_t and the reservoir slot of each step, computed in C one step at a time, are the
    chunk path's (`step_sizes`, `reservoir_slots`), slots exactly."""
    t = np.arange(1.0, 20001.0)
    for eta1, theta in [(0.5, 2 / 3), (1e-3, 0.75), (2.0, 0.0), (0.3, 1.0)]:
        for buffer, seed in [(0, 0), (1, 5), (100, 123456789), (5000, 2 ** 31 - 2)]:
            eta, slots = step_slots(t, eta1, theta, buffer, seed)
            np.testing.assert_allclose(eta, step_sizes(eta1, theta, np.maximum(t - 1.0, 1.0)),
                                       rtol=1e-15, atol=0)
            np.testing.assert_array_equal(slots, reservoir_slots(t, buffer or None, seed))


@pytest.mark.parametrize("form", ["dict", "list", "float32", "strided"])
@pytest.mark.parametrize("name", ["linear-buffer", "difference-buffer", "dissimilar"])
def test_row_types_give_the_same_iterates(name, form):
    params = MODELS[name]
    X, y = data_for(params, 200, seed=1)
    X32 = X.astype(np.float32).astype(np.float64)
    Xf = np.asfortranarray(X32)
    ours = PairwiseLearner(**params).fit(X32[:20], y[:20])
    keys = [f"f{j}" for j in range(X.shape[1])]
    if form == "dict":
        ours = PairwiseLearner(**params)
        for x, label in zip(X32[:20], y[:20].tolist()):
            ours.learn_one(dict(zip(keys, x.tolist())), label)
    for i in range(20, 200):
        row = {"dict": lambda: dict(zip(keys, X32[i].tolist())), "list": lambda: X32[i].tolist(),
               "float32": lambda: X[i].astype(np.float32), "strided": lambda: Xf[i]}[form]()
        if params.get("pair_kernel") != "metric":
            ours.predict_one(row)
        ours.learn_one(row, y[i])
    assert compiled(ours)
    ref = PairwiseLearner(**params).fit(X32[:20], y[:20])
    if form == "dict":                  # the first events, one at a time (labels as they came)
        ref = PairwiseLearner(**params)
        for i in range(20):
            ref.partial_fit(X32[i:i + 1], y[i:i + 1])
    assert_same(ours, ref.partial_fit(X32[20:], y[20:]))


@pytest.mark.parametrize("name", ["linear", "metric", "difference-buffer", "moments",
                                  "dissimilar"])
def test_bad_row_leaves_the_model_as_it_was(name):
    params = MODELS[name]
    X, y = data_for(params, 120, seed=2)
    est = PairwiseLearner(**params).fit(X[:20], y[:20])
    for x, label in zip(X[20:60], y[20:60].tolist()):
        est.learn_one(x, label)
    before = copy.deepcopy(est)
    for bad in ([np.nan, 0, 0, 0, 0], [np.inf, 1, 1, 1, 1], [1.0, 2.0, 3.0]):
        row = np.asarray(bad, dtype=float)
        with pytest.raises(ValueError):
            est.learn_one(row, y[0])
        if params.get("pair_kernel") != "metric":
            with pytest.raises(ValueError):
                est.predict_one(row)
        assert_same(est, before, atol=0)
    for x, label in zip(X[60:], y[60:].tolist()):     # and it goes on as if nothing happened
        est.learn_one(x, label)
        before.learn_one(x, label)
    assert_same(est, before, atol=0)


@pytest.mark.parametrize("name", ["linear", "linear-buffer", "metric", "difference",
                                  "moments"])
def test_divergent_step_raises_and_changes_nothing(name):
    """A step whose model would overflow raises FloatingPointError, as partial_fit does, and
    changes nothing: not the weights, the stored points, the cache of g nor the counters."""
    params = dict(MODELS[name], eta=1e300)
    if name == "difference":
        params["kernel"] = "linear"         # K(x, x) = ||x||^2 overflows
    X, y = data_for(params, 60, seed=3)
    est = PairwiseLearner(**params).fit(X[:2] * 1e-200, y[:2])
    for x, label in zip(X[2:10] * 1e-200, y[2:10].tolist()):
        est.learn_one(x, label)
    before = copy.deepcopy(est)
    big = np.full(X.shape[1], 1e150)
    # below every stored target where g(big) > 0 (a violated margin), else above
    target = -1e6 if name != "metric" and est.score_samples(big[None])[0] > 0 else 1e6
    with pytest.raises(FloatingPointError):
        copy.deepcopy(est).partial_fit(big[None], [target])
    with pytest.raises(FloatingPointError, match="left as it was"):
        est.learn_one(big, target)
    assert_same(est, before, atol=0)
    for x, label in zip(X[10:20] * 1e-200, y[10:20].tolist()):
        est.learn_one(x, label)
        before.learn_one(x, label)
    assert_same(est, before, atol=0)


def test_a_row_changed_between_predict_and_learn_is_learned_as_it_is():
    """The difference kernel keeps predict_one's g(x_t) for learn_one: a row written in place
    between the two calls is learned with its new values."""
    params = MODELS["difference-buffer"]
    X, y = stream(150, seed=4)
    ours = PairwiseLearner(**params).fit(X[:20], y[:20])
    learned = X.copy()
    for i in range(20, 150):
        row = X[i].copy()
        ours.predict_one(row)
        if i % 3 == 0:
            row[0] += 1.0
            learned[i] = row
        ours.learn_one(row, y[i])
    ref = PairwiseLearner(**params).fit(X[:20], y[:20]).partial_fit(learned[20:], y[20:])
    assert_same(ours, ref)


def test_a_metric_ranker_learns_one_event_and_scores_pairs():
    params = MODELS["metric"]
    X, y = stream(80, seed=5)
    est = PairwiseLearner(**params).fit(X[:10], y[:10])
    for x, label in zip(X[10:], y[10:].tolist()):
        est.learn_one(x, label)
    assert compiled(est)
    with pytest.raises(AttributeError, match="scores pairs of rows"):
        est.predict_one(X[0])
    assert est.decision_function_one(X[0]) == pytest.approx(
        float(est.decision_function(X[:1])[0]), rel=1e-12)


def test_new_labels_of_a_dissimilar_stream_take_the_one_row_path_and_then_the_step():
    """reducer="dissimilar": a label never seen is added by a one-row partial_fit; its code
    (index in classes_) serves the compiled step from the next event on."""
    X, _ = stream(300, seed=6)
    labels = np.array(["a", "b", "c", "d"])[np.arange(300) % 4]
    labels[:100] = np.where(np.arange(100) % 2, "b", "a")
    params = MODELS["dissimilar"]
    ours = PairwiseLearner(**params).fit(X[:10], labels[:10])
    for x, label in zip(X[10:], labels[10:].tolist()):
        ours.learn_one(x, label)
    assert compiled(ours)
    ref = PairwiseLearner(**params).fit(X[:10], labels[:10])
    for lo, hi in [(10, 100), (100, 101), (101, 103), (103, 300)]:   # as the labels came
        ref.partial_fit(X[lo:hi], labels[lo:hi])
    np.testing.assert_array_equal(ours.classes_, ["a", "b", "c", "d"])
    assert_same(ours, ref)


@pytest.mark.parametrize("name", ["linear", "metric", "difference"])
def test_the_size_warning_comes_once_before_the_event_that_passes_it(name, monkeypatch):
    """An unbounded stream of events warns (SizeWarning) at the event whose point reaches the
    size `_check_size` warns at; with warnings as errors that event raises and changes
    nothing."""
    params = MODELS[name]
    monkeypatch.setattr(_warnings, "EXPANSION_WORK", 5 * 25 * (5 if name == "metric" else 1))
    monkeypatch.setattr(_warnings, "GRAM_BYTES", 8 * 25 * 25)
    X, y = stream(60, seed=7)
    est = PairwiseLearner(**params).fit(X[:10], y[:10])
    for x, label in zip(X[10:24], y[10:24].tolist()):
        est.learn_one(x, label)
    assert est.n_stored_ == 24
    before = copy.deepcopy(est)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(_warnings.SizeWarning):
            est.learn_one(X[24], y[24])
    assert_same(est, before, atol=0)
    with pytest.warns(_warnings.SizeWarning, match="buffer=B"):
        est.learn_one(X[24], y[24])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for x, label in zip(X[25:], y[25:].tolist()):     # once
            est.learn_one(x, label)
    assert compiled(est)
    with pytest.warns(_warnings.SizeWarning):
        ref = PairwiseLearner(**params).fit(X[:10], y[:10]).partial_fit(X[10:], y[10:])
    assert_same(est, ref)


def test_warm_up_of_the_width_then_the_compiled_step():
    """gamma="scale" with the difference pair kernel: the warm-up's events take the one-row
    path, the rest the compiled step; the iterates are partial_fit's."""
    params = dict(pair_kernel="difference", eta=0.5, buffer=60, random_state=0)
    X, y = stream(260, seed=8)
    ours = PairwiseLearner(**params)
    for x, label in zip(X, y.tolist()):
        ours.learn_one(x, label)
    assert compiled(ours) and "_width_moments" not in ours.__dict__
    ref = PairwiseLearner(**params)
    for x, label in zip(X, y):
        ref.partial_fit(x[None], [label])
    assert ours.gamma_ == ref.gamma_
    assert_same(ours, ref)


def test_save_load_and_engine_switch_rebuild_the_step(tmp_path):
    params = MODELS["difference-buffer"]
    X, y = stream(300, seed=9)
    est = PairwiseLearner(**params).fit(X[:20], y[:20])
    for x, label in zip(X[20:100], y[20:100].tolist()):
        est.learn_one(x, label)
    okl.save(est, tmp_path / "pair.okl")
    est = okl.load(tmp_path / "pair.okl")
    for x, label in zip(X[100:200], y[100:200].tolist()):
        est.learn_one(x, label)
    assert compiled(est)
    est.set_params(engine="numpy")
    for x, label in zip(X[200:250], y[200:250].tolist()):
        est.learn_one(x, label)
    assert est.__dict__["_one_event_state"]._fast() is None      # the one-row path
    est.set_params(engine="cython")
    for x, label in zip(X[250:], y[250:].tolist()):
        est.learn_one(x, label)
    assert compiled(est)
    ref = PairwiseLearner(**params).fit(X[:20], y[:20]).partial_fit(X[20:], y[20:])
    assert_same(est, ref, atol=1e-10)


@pytest.mark.parametrize("name", ["linear-buffer", "difference-buffer"])
def test_threads_share_one_model(name, in_threads):
    """Threads calling learn_one / predict_one on one model: every event is learned once and
    the model stays finite (the estimator's lock serialises the compiled step)."""
    params = MODELS[name]
    X, y = stream(1200, seed=10)
    est = PairwiseLearner(**params).fit(X[:10], y[:10])

    def work(rows):
        for i in rows:
            est.predict_one(X[i])
            est.learn_one(X[i], float(y[i]))
    assert not in_threads(work, [range(10 + j, 1200, 4) for j in range(4)])
    assert est.t_ == 1200 and est.n_stored_ == 40
    assert np.all(np.isfinite(est.score_samples(X)))


@pytest.mark.parametrize("name", ["linear-buffer", "metric", "difference-buffer", "moments",
                                  "dissimilar"])
def test_one_row_partial_fit_takes_the_compiled_step(name, monkeypatch):
    """partial_fit on one row (any dtype or order, or a nested list) takes the compiled step:
    no validation by the template, the iterates of one partial_fit."""
    params = MODELS[name]
    X, y = data_for(params, 200, seed=11)
    ours = PairwiseLearner(**params).fit(X[:20], y[:20])
    calls = []
    original = PairwiseLearner._check_X_y
    monkeypatch.setattr(PairwiseLearner, "_check_X_y",
                        lambda self, *a, **k: calls.append(1) or original(self, *a, **k))
    for i in range(20, 200):
        rows = X[i:i + 1] if i % 3 else (X[i:i + 1].tolist() if i % 2 else
                                         np.asfortranarray(X[i:i + 1], dtype=np.float32))
        assert ours.partial_fit(rows, y[i:i + 1]) is ours
    assert calls == []
    monkeypatch.undo()
    X32 = X.copy()
    f32 = [i for i in range(20, 200) if i % 6 == 0]
    X32[f32] = X[f32].astype(np.float32)            # the float32 rows, as they were learned
    ref = PairwiseLearner(**params).fit(X[:20], y[:20]).partial_fit(X32[20:], y[20:])
    assert_same(ours, ref)
