"""gamma="scale" on every kernel learner: the same 100-event warm-up (docs/defaults.md, section 2).

A chunk and the same events one at a time give the same iterates, on both
engines; the width stays after the warm-up; okl.save keeps an unfinished
warm-up; a raw stream learned one event at a time gets the width of its events.
"""
import importlib
import io

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer

import okl
from okl._gamma import LOCAL_FACTOR, WARMUP, scale_gamma

# (class name, parameters, width factor): every kernel learner beside the pointwise ones
# without an approximation (tests/test_gamma.py)
LEARNERS = [
    ("OnlineKernelClassifier", dict(approximation="fourier", n_components=60,
                                    random_state=0), 1.0),
    ("OnlineKernelClassifier", dict(approximation="fourier", kernel="laplacian",
                                    n_components=60, random_state=1), 1.0),
    ("OnlineKernelClassifier", dict(approximation="fourier", kernel="matern",
                                    n_components=60, random_state=2), 1.0),
    ("OnlineKernelClassifier", dict(approximation="nystroem", n_components=120), 1.0),
    ("OnlineKernelRegressor", dict(approximation="fourier", n_components=60,
                                   random_state=0), 1.0),
    ("OnlineKernelRegressor", dict(approximation="nystroem", n_components=110), 1.0),
    ("RegularizedPAClassifier", dict(kernel="gaussian"), LOCAL_FACTOR),
    ("RegularizedPAClassifier", dict(kernel="gaussian", regularization="l2", beta=3.0,
                                     budget=60), LOCAL_FACTOR),
    ("RegularizedPAClassifier", dict(kernel="gaussian", approximation="fourier",
                                     n_components=60, random_state=0), LOCAL_FACTOR),
    ("RegularizedPAClassifier", dict(kernel="gaussian", approximation="nystroem",
                                     n_components=110), LOCAL_FACTOR),
    ("CoefficientRegularizedClassifier", dict(n_centers=60), LOCAL_FACTOR),
    ("PairwiseLearner", dict(pair_kernel="difference", reducer="difference",
                             loss="squared", buffer=70, random_state=0), 1.0),
]
IDS = [f"{name}-{'-'.join(f'{k}={v}' for k, v in params.items())}"
       for name, params, _ in LEARNERS]


def stream(n=220, d=5, scale=1.0, seed=0):
    rng = np.random.default_rng(seed)
    X = scale * rng.normal(0.5, 2.0, (n, d))
    y = (X[:, 0] * X[:, 1] > 0).astype(float)
    return X, y


def taken(t):
    """The rows the width after t rows is of: the last move of the schedule (1, 2, 3, 5, 8,
    12, ..., each ceil(r / 2) rows after the last, r, and the warm-up's end) at or before t
    (docs/defaults.md, section 2)."""
    r = 1
    while r + (r + 1) // 2 <= min(t, WARMUP - 1):
        r += (r + 1) // 2
    return WARMUP if t >= WARMUP else r


def make(name, params, **more):
    kw = dict(params, **more)
    if name != "PairwiseLearner" and "Regressor" not in name:
        kw.setdefault("classes", [0.0, 1.0])
    return getattr(okl, name)(**kw)


def function(est, X):
    """What the model computes at X: its scores."""
    if type(est).__name__ == "PairwiseLearner":
        return est.score_samples(X)
    if hasattr(est, "decision_function"):
        return est.decision_function(X)
    return est.predict(X)


@pytest.mark.parametrize("name, params, factor", LEARNERS, ids=IDS)
def test_a_chunk_and_its_events_one_at_a_time_give_the_same_model(name, params, factor):
    X, y = stream()
    chunk = make(name, params).fit(X, y)
    assert chunk.gamma == "scale" and "_width_moments" not in chunk.__dict__
    assert chunk.gamma_ == pytest.approx(scale_gamma(X[:WARMUP], name, factor), rel=1e-12)
    pieces = make(name, params).fit(X[:7], y[:7])
    for lo, hi in ((7, 8), (8, 60), (60, 61), (61, 150), (150, len(X))):
        pieces.partial_fit(X[lo:hi], y[lo:hi])
    events = make(name, params)
    for i in range(len(X)):
        events.learn_one(X[i], y[i])
    numpy = make(name, params, engine="numpy").fit(X, y)
    for other in (pieces, events, numpy):
        assert other.gamma_ == chunk.gamma_
        np.testing.assert_allclose(function(other, X), function(chunk, X), rtol=0, atol=1e-10)


@pytest.mark.parametrize("name, params, factor", LEARNERS, ids=IDS)
def test_the_width_follows_the_warm_up_then_stays(name, params, factor):
    X, y = stream(seed=1)
    for t in (1, 2, 3, 30, 32, 33, WARMUP - 1):
        est = make(name, params).fit(X[:t], y[:t])
        assert est.gamma_ == pytest.approx(scale_gamma(X[:taken(t)], name, factor), rel=1e-12)
        assert est.__dict__["_width_moments"][0] == t
        events = make(name, params, engine="numpy")
        for i in range(t):
            events.learn_one(X[i], y[i])
        assert events.gamma_ == est.gamma_
    est = make(name, params).fit(X[:WARMUP], y[:WARMUP])
    assert "_width_moments" not in est.__dict__
    gamma = est.gamma_
    before = function(est, X)
    Z, z = stream(seed=2)
    est.partial_fit(3.0 * Z, z)                 # events of another scale: the width stays
    assert est.gamma_ == gamma
    assert not np.allclose(function(est, X), before)        # and the model learned


@pytest.mark.parametrize("name, params, factor", LEARNERS, ids=IDS)
def test_okl_save_keeps_an_unfinished_warm_up(name, params, factor):
    X, y = stream(seed=3)
    whole = make(name, params).fit(X, y)
    est = make(name, params)
    for i in range(40):
        est.learn_one(X[i], y[i])
    buffer = io.BytesIO()
    okl.save(est, buffer)
    buffer.seek(0)
    loaded = okl.load(buffer)
    assert loaded.__dict__["_width_moments"] == est.__dict__["_width_moments"]
    for i in range(40, len(X)):
        loaded.learn_one(X[i], y[i])
    assert loaded.gamma_ == pytest.approx(whole.gamma_, rel=1e-14)
    np.testing.assert_allclose(function(loaded, X), function(whole, X), rtol=0, atol=1e-10)
    buffer = io.BytesIO()
    okl.save(whole, buffer)                     # and after the warm-up
    buffer.seek(0)
    np.testing.assert_array_equal(function(okl.load(buffer), X), function(whole, X))


@pytest.mark.parametrize("name, params, factor", LEARNERS, ids=IDS)
def test_a_failed_call_during_the_warm_up_leaves_the_model_as_it_was(name, params, factor):
    X, y = stream(seed=4)
    est = make(name, params).fit(X[:20], y[:20])
    state = (est.gamma_, list(est.__dict__["_width_moments"]), function(est, X))
    calls = []

    def interrupted(X, *args, **kwargs):        # Ctrl-C once the loop has learned 8 rows,
        scores = type(est)._learn_rows(est, X, *args, **kwargs)     # after the move at 27
        calls.append(len(X))
        if sum(calls) >= 8:
            raise KeyboardInterrupt
        return scores
    est._learn_rows = interrupted
    with pytest.raises(KeyboardInterrupt):
        est.partial_fit(X[20:30], y[20:30])
    del est._learn_rows
    assert sum(calls) >= 8
    assert (est.gamma_, est.__dict__["_width_moments"]) == tuple(state[:2])
    np.testing.assert_array_equal(function(est, X), state[2])
    est.partial_fit(X[20:], y[20:])
    whole = make(name, params).fit(X, y)
    np.testing.assert_allclose(function(est, X), function(whole, X), rtol=0, atol=1e-10)


@pytest.mark.parametrize("name, params, loop", [
    ("RegularizedPAClassifier", dict(kernel="gaussian"), "pa._fit_kernel"),
    ("RegularizedPAClassifier", dict(kernel="gaussian", regularization="l2", beta=3.0),
     "pa._fit_kernel"),
    ("PairwiseLearner", dict(pair_kernel="difference", reducer="difference", loss="squared",
                             buffer=70, random_state=0), "pairwise._difference_chunk"),
])
def test_ctrl_c_inside_the_warm_up_s_loop_leaves_the_model_as_it_was(
        name, params, loop, monkeypatch):
    module_name, function_name = loop.split(".")
    module = importlib.import_module(f"okl._numpy.{module_name}")
    step = getattr(module, function_name)
    X, y = stream(seed=14)
    est = make(name, params, engine="numpy").fit(X[:20], y[:20])
    state = (est.gamma_, list(est.__dict__["_width_moments"]), function(est, X))
    rows = []

    def interrupted(*args, **kwargs):           # the widths' loop learns one row per call
        rows.append(1)
        if len(rows) == 16:                     # Ctrl-C at row 36, the width moved at 27
            raise KeyboardInterrupt
        return step(*args, **kwargs)
    monkeypatch.setattr(module, function_name, interrupted)
    with pytest.raises(KeyboardInterrupt):
        est.partial_fit(X[20:70], y[20:70])
    monkeypatch.undo()
    assert (est.gamma_, est.__dict__["_width_moments"]) == tuple(state[:2])
    np.testing.assert_array_equal(function(est, X), state[2])
    est.partial_fit(X[20:], y[20:])
    whole = make(name, params, engine="numpy").fit(X, y)
    assert est.gamma_ == whole.gamma_
    np.testing.assert_allclose(function(est, X), function(whole, X), rtol=0, atol=1e-12)


def test_multiclass_models_follow_the_warm_up():
    rng = np.random.default_rng(5)
    X = rng.normal(1.0, 3.0, (200, 4))
    y = np.digitize(X[:, 0] + X[:, 1], [-2.0, 2.0])           # three classes
    for name, params in [("RegularizedPAClassifier", dict(kernel="gaussian")),
                         ("RegularizedPAClassifier", dict(kernel="gaussian", budget=40,
                                                          regularization="l2", beta=3.0)),
                         ("RegularizedPAClassifier", dict(kernel="gaussian",
                                                          approximation="fourier",
                                                          n_components=50, random_state=0)),
                         ("CoefficientRegularizedClassifier", dict(n_centers=50)),
                         ("OnlineKernelClassifier", dict(approximation="fourier",
                                                         n_components=50, random_state=0))]:
        chunk = getattr(okl, name)(**params).partial_fit(X, y)      # classes as they come
        events = getattr(okl, name)(**params)
        for i in range(len(X)):
            events.learn_one(X[i], y[i])
        numpy = getattr(okl, name)(engine="numpy", **params).partial_fit(X, y)
        factor = LOCAL_FACTOR if "Regularized" in name else 1.0
        first = int(np.argmax(y != y[0]))       # the rows before the second label wait
        assert chunk.gamma_ == pytest.approx(
            scale_gamma(X[first:first + WARMUP], name, factor), rel=1e-12)
        for other in (events, numpy):
            assert other.gamma_ == chunk.gamma_
            np.testing.assert_allclose(other.decision_function(X), chunk.decision_function(X),
                                       rtol=0, atol=1e-10)


def test_the_kernel_pa_tracks_the_norm_of_the_re_read_model():
    X, y = stream(seed=6)
    for params in (dict(), dict(regularization="l2", beta=2.0),
                   dict(regularization="objective", budget=20)):
        for t in (3, 50, 150):
            est = okl.RegularizedPAClassifier(kernel="gaussian", **params).fit(X[:t], y[:t])
            assert ("_width_moments" in est.__dict__) == (t < WARMUP)
            assert est.sq_norm_ == pytest.approx(est.rkhs_norm() ** 2, rel=1e-10)
            events = okl.RegularizedPAClassifier(kernel="gaussian", classes=[0.0, 1.0],
                                                 **params)
            for i in range(t):                  # the compiled one-event step's warm-up
                events.learn_one(X[i], y[i])
            assert events.gamma_ == est.gamma_
            assert events.sq_norm_ == pytest.approx(est.sq_norm_, rel=1e-10)
            if t > WARMUP:                      # tracked again once the warm-up ended
                assert events._model.sq_norm == pytest.approx(est.rkhs_norm() ** 2, rel=1e-10)


def test_fourier_maps_are_one_draw_re_read_at_each_width():
    from okl._feature_maps import RandomFourierFeatures
    for kernel in ("gaussian", "laplacian", "matern"):
        fmap = RandomFourierFeatures(kernel, 0.3, 40, random_state=7).fit(6)
        wider = fmap.with_gamma(1.7)
        drawn = RandomFourierFeatures(kernel, 1.7, 40, random_state=7).fit(6)
        np.testing.assert_array_equal(wider.W, drawn.W)       # the seed re-draws it exactly
        np.testing.assert_array_equal(wider.b, fmap.b)
        loaded = RandomFourierFeatures.from_state(fmap.get_state()).with_gamma(1.7)
        np.testing.assert_allclose(loaded.W, drawn.W, rtol=1e-14)
    gaussian = RandomFourierFeatures("gaussian", 0.5, 30, random_state=3).fit(4)
    unit = np.random.default_rng(3).standard_normal((4, 30))      # s(1/2) = 1
    np.testing.assert_array_equal(gaussian.W, unit)


def test_a_pickled_fourier_model_re_draws_its_map_after_the_warm_up():
    import pickle
    X, y = stream(seed=8)
    est = okl.OnlineKernelClassifier(approximation="fourier", n_components=40,
                                     random_state=4, classes=[0.0, 1.0]).fit(X, y)
    again = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(again._expansion.fmap.W, est._expansion.fmap.W)
    np.testing.assert_array_equal(again.decision_function(X), est.decision_function(X))


def test_nystroem_with_fewer_landmarks_than_the_warm_up_keeps_the_width_of_its_switch():
    X, y = stream(seed=9)
    for name in ("OnlineKernelClassifier", "RegularizedPAClassifier"):
        params = dict(approximation="nystroem", n_components=20)
        if name == "RegularizedPAClassifier":
            params["kernel"] = "gaussian"
        chunk = make(name, params).fit(X, y)
        assert "_width_moments" not in chunk.__dict__
        # the switch came at the 20th centre: the width of the rows before it
        widths = [scale_gamma(X[:taken(t)], name, LOCAL_FACTOR if "PA" in name else 1.0)
                  for t in range(1, WARMUP)]
        t = int(np.argmin([abs(w - chunk.gamma_) for w in widths])) + 1
        assert chunk.gamma_ == pytest.approx(widths[t - 1], rel=1e-12)
        assert taken(t) == 18                   # the width of the schedule's 18 rows
        fmap = (chunk._expansion if name == "OnlineKernelClassifier"
                else chunk._model.features).fmap
        assert fmap.gamma == chunk.gamma_
        events = make(name, params)
        for i in range(len(X)):
            events.learn_one(X[i], y[i])
        assert events.gamma_ == chunk.gamma_
        np.testing.assert_allclose(function(events, X), function(chunk, X), rtol=0, atol=1e-10)


# the rule is the squared distance's (Gaussian, Matern): a Laplacian on d = 30 features wants
# a wider one, and stays near constant here with either rule
RAW = [learner for learner, i in zip(LEARNERS, IDS) if "laplacian" not in i]


@pytest.mark.parametrize("name, params, factor", RAW,
                         ids=[i for i in IDS if "laplacian" not in i])
def test_a_raw_stream_learned_one_event_at_a_time_gets_a_useful_width(name, params, factor):
    """Features of scale 1000 whose first event is unlike the rest (the first-chunk rule
    took the width of that one row: a kernel near 0 between any two events)."""
    X, y = load_breast_cancer(return_X_y=True)
    rng = np.random.default_rng(0)
    order = rng.permutation(len(X))
    X = 1000.0 * (X[order] - X.mean(axis=0)) / X.std(axis=0)
    y = y[order].astype(float)
    X[0] = X[0].mean()                              # a first event of equal entries
    if params.get("approximation") == "fourier":
        params = dict(params, n_components=200)
    est = make(name, params)
    for i in range(300):
        est.learn_one(X[i], y[i])
    assert est.gamma_ == pytest.approx(scale_gamma(X[:WARMUP], name, factor), rel=1e-12)
    held = function(est, X[300:])
    if name == "PairwiseLearner":
        pairs = rng.integers(300, len(X), (2000, 2))
        i, j = pairs[:, 0] - 300, pairs[:, 1] - 300
        keep = y[pairs[:, 0]] != y[pairs[:, 1]]
        agree = np.sign(held[i] - held[j])[keep] == np.sign(y[pairs[:, 0]] - y[pairs[:, 1]])[keep]
        assert agree.mean() > 0.85
    elif name == "OnlineKernelRegressor":
        assert np.corrcoef(held, y[300:])[0, 1] > 0.6
    else:
        assert np.mean((held > 0) == (y[300:] > 0)) > 0.7       # the majority: 0.62


@pytest.mark.parametrize("name", ["OnlineKernelClassifier", "RegularizedPAClassifier"])
def test_random_features_take_the_weights_of_the_warm_up_expansion(name):
    """During the warm-up a Fourier model is the exact expansion on the live width; at its
    end, the weights w = sum_i a_i z(x_i): <w, z(x)> estimates f(x)."""
    X, y = stream(seed=10)
    params = dict(approximation="fourier", n_components=4000, random_state=0)
    if name == "RegularizedPAClassifier":
        params["kernel"] = "gaussian"
    est = make(name, params).fit(X[:WARMUP - 1], y[:WARMUP - 1])
    exact = function(est, X)
    model = est._expansion if name == "OnlineKernelClassifier" else est._model
    expansion = model.expansion
    est.partial_fit(X[WARMUP - 1:WARMUP], y[WARMUP - 1:WARMUP])
    assert "_width_moments" not in est.__dict__
    after = est._expansion if name == "OnlineKernelClassifier" else est._model
    fmap = after.fmap
    assert fmap.gamma == est.gamma_
    if name == "OnlineKernelClassifier":
        assert est.n_support_ == 0 and est.n_components_ == 4000
    # the last event was learned on the exact phase (in place), then the switch
    w = fmap.transform(expansion.centers_).T @ expansion.coef_
    np.testing.assert_allclose(after.linear.coef_ if name == "OnlineKernelClassifier"
                               else after.linear.coef, w, rtol=1e-12, atol=1e-12)
    f = function(est, X)
    # a Monte Carlo estimate (error ~ sum |a_i| / sqrt(D)): its error's norm on the stream
    # measured 0.07-0.19 of f's over feature seeds 0-2 (PA-I or PA)
    assert np.linalg.norm(f - exact) < 0.25 * np.linalg.norm(exact)
    assert np.corrcoef(f, exact)[0, 1] > 0.95


@pytest.mark.parametrize("error", [KeyboardInterrupt, FloatingPointError])
def test_the_fourier_warm_up_s_last_event_is_compiled_and_undone_when_the_switch_fails(
        error, monkeypatch):
    """The warm-up's last event is the compiled step's: the exact phase learns it, then the
    model takes the features' weights (`FeatureModel.end_warmup`) in the same event; an
    error there (a Ctrl-C included) leaves the model as it was, and the event learned
    again gives the uninterrupted model."""
    from okl._feature_model import FeatureModel
    X, y = stream(seed=12)
    params = dict(approximation="fourier", n_components=60, random_state=0)
    est = make("OnlineKernelClassifier", params)
    for i in range(WARMUP - 1):
        est.learn_one(X[i], y[i])
    step = est._one_event_state._fast()
    assert step is not None and step.matches(est)       # the compiled step takes the event
    before = (est.gamma_, list(est.__dict__["_width_moments"]), est.t_,
              est._expansion, function(est, X))
    end = FeatureModel.end_warmup

    def failing(self):
        raise error("in the switch")
    monkeypatch.setattr(FeatureModel, "end_warmup", failing)
    with pytest.raises(error):
        est.learn_one(X[WARMUP - 1], y[WARMUP - 1])
    assert (est.gamma_, est.__dict__["_width_moments"], est.t_, est._expansion) == before[:4]
    np.testing.assert_array_equal(function(est, X), before[4])
    monkeypatch.setattr(FeatureModel, "end_warmup", end)
    for i in range(WARMUP - 1, len(X)):
        est.learn_one(X[i], y[i])
    whole = make("OnlineKernelClassifier", params).fit(X, y)
    assert "_width_moments" not in est.__dict__ and est.gamma_ == whole.gamma_
    assert est.n_support_ == 0 and est._expansion.linear is not None
    np.testing.assert_allclose(function(est, X), function(whole, X), rtol=0, atol=1e-10)


def test_a_pickled_fourier_model_in_its_warm_up_re_draws_its_map():
    import pickle
    X, y = stream(seed=11)
    est = okl.OnlineKernelClassifier(approximation="fourier", n_components=40,
                                     random_state=4, classes=[0.0, 1.0]).fit(X[:30], y[:30])
    state = est._expansion.__reduce__()[1][0]
    assert "fmap_W" not in state and state["fmap_seed"] == 4      # shipped without the map
    again = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(again._expansion.fmap.W, est._expansion.fmap.W)
    again.partial_fit(X[30:], y[30:])
    est.partial_fit(X[30:], y[30:])
    np.testing.assert_array_equal(again.decision_function(X), est.decision_function(X))


@pytest.mark.parametrize("name, params, factor", LEARNERS, ids=IDS)
def test_the_engines_are_twins_through_the_warm_up_on_a_long_stream(name, params, factor):
    X, y = stream(n=1200, d=6, seed=12)
    rng = np.random.default_rng(13)
    cython, numpy = make(name, params), make(name, params, engine="numpy")
    lo = 0
    while lo < len(X):                      # random chunks, some of one event
        hi = min(len(X), lo + int(rng.choice([1, 1, 3, 17, 150])))
        for est in (cython, numpy):
            est.partial_fit(X[lo:hi], y[lo:hi])
        assert cython.gamma_ == numpy.gamma_
        lo = hi
    np.testing.assert_allclose(function(numpy, X), function(cython, X), rtol=0, atol=1e-10)


def test_the_pa_fourier_warm_up_runs_in_the_exact_loops_and_its_map_follows_the_width():
    """RegularizedPAClassifier(approximation="fourier"): the warm-up's exact PA takes the
    widths in its loops; the map follows the width after each chunk (the same draw), and a
    failed chunk gives back the map with the rest."""
    X, y = stream(seed=7)
    params = dict(kernel="gaussian", approximation="fourier", n_components=60, random_state=0)
    est = make("RegularizedPAClassifier", params).fit(X[:30], y[:30])
    model = est._model
    assert est._width_loops and model.fmap.params["gamma"] == est.gamma_
    fmap, before = model.fmap, function(est, X)
    calls = []

    def fail(*args, **kwargs):
        calls.append(1)
        raise KeyboardInterrupt
    est._end_width = fail
    with pytest.raises(KeyboardInterrupt):
        est.partial_fit(X[30:150], y[30:150])         # the warm-up ends in this chunk
    del est._end_width
    assert calls and est._model is model and model.fmap is fmap
    np.testing.assert_array_equal(function(est, X), before)
    est.partial_fit(X[30:], y[30:])
    whole = make("RegularizedPAClassifier", params).fit(X, y)
    assert est.gamma_ == whole.gamma_ and est._model.fmap.params["gamma"] == est.gamma_
    np.testing.assert_allclose(function(est, X), function(whole, X), rtol=0, atol=1e-10)


@pytest.mark.filterwarnings("ignore:.*empty constraint set")
@pytest.mark.parametrize("more", [dict(), dict(classes=[0.0, 1.0, 2.0]),
                                  dict(regularization="l2", beta=0.9)])
def test_the_pa_fourier_warm_up_s_events_are_all_compiled(more, monkeypatch):
    """One event at a time the exact PA's compiled step takes the whole warm-up, and the
    map follows its width; its last event switches to the features in the same step (an
    infeasible row too: beta^2 K(x, x) < 1 skips every row), as partial_fit does."""
    X, y = stream(seed=8)
    if "beta" not in more and len(more.get("classes", ())) == 3:
        y = y + (X[:, 2] > 1.0)
    params = dict(kernel="gaussian", approximation="fourier", n_components=60, random_state=0)
    est = make("RegularizedPAClassifier", params, **more)
    est.learn_one(X[0], y[0])
    fit = type(est).partial_fit

    def refused(self, *args, **kwargs):
        raise AssertionError("a one-row partial_fit after the first event")
    monkeypatch.setattr(type(est), "partial_fit", refused)
    for i in range(1, WARMUP):
        assert est._compiled_events([None]) is not None
        est.learn_one(X[i], y[i])
    assert est._model.fmap.params["gamma"] == est.gamma_
    assert "_width_moments" not in est.__dict__ and type(est._model).__name__ == "FeaturePAModel"
    monkeypatch.setattr(type(est), "partial_fit", fit)
    for i in range(WARMUP, len(X)):
        est.learn_one(X[i], y[i])
    whole = make("RegularizedPAClassifier", params, **more).fit(X, y)
    assert est.gamma_ == whole.gamma_ and type(est._model) is type(whole._model)
    assert (est.t_, est.n_updates_, est.n_infeasible_) == (
        whole.t_, whole.n_updates_, whole.n_infeasible_)
    np.testing.assert_allclose(function(est, X), function(whole, X), rtol=0, atol=1e-10)


@pytest.mark.parametrize("error", [KeyboardInterrupt, MemoryError])
def test_the_pa_fourier_switch_that_fails_leaves_the_model_as_it_was(error, monkeypatch):
    """An error in the compiled switch to the features (a Ctrl-C included) undoes the
    warm-up's last step: the model, its counters and its width as they were; the event
    learned again gives the uninterrupted model."""
    from okl._pa_models import WarmFourierPAModel
    X, y = stream(seed=9)
    params = dict(kernel="gaussian", approximation="fourier", n_components=60, random_state=0)
    est = make("RegularizedPAClassifier", params)
    for i in range(WARMUP - 1):
        est.learn_one(X[i], y[i])
    keys = ("t_", "n_updates_", "n_infeasible_", "gamma_", "_width_moments", "_model")
    before = {key: est.__dict__[key] for key in keys}
    model, sq_norm, f = est._model, est._model.sq_norm, function(est, X)
    switch = WarmFourierPAModel.feature_model

    def failing(self):
        raise error("in the switch")
    monkeypatch.setattr(WarmFourierPAModel, "feature_model", failing)
    with pytest.raises(error):
        est.learn_one(X[WARMUP - 1], y[WARMUP - 1])
    assert {key: est.__dict__[key] for key in keys} == before
    assert est._model is model and est._model.sq_norm == sq_norm
    np.testing.assert_array_equal(function(est, X), f)
    monkeypatch.setattr(WarmFourierPAModel, "feature_model", switch)
    for i in range(WARMUP - 1, len(X)):
        est.learn_one(X[i], y[i])
    whole = make("RegularizedPAClassifier", params).fit(X, y)
    assert est.gamma_ == whole.gamma_ and type(est._model) is type(whole._model)
    np.testing.assert_allclose(function(est, X), function(whole, X), rtol=0, atol=1e-10)
