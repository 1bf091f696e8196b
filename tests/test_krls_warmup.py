"""KernelRLSRegressor's warm-up one event at a time (docs/krls.md, section 8): the one-row
path gives the iterates of chunks and of the NumPy engine, its compiled moments are the
NumPy twin's bit for bit, and a call that fails or is interrupted mid-warm-up leaves the
model as it was."""
import copy
import pickle

import numpy as np
import pytest

import okl
from okl import KernelRLSRegressor
from okl._core._krls import KRLSModel
from okl._core._warmup import Width
from okl._numpy.warmup import WidthMoments

SETTINGS = [{}, {"kernel": "auto"}, {"noise": 0.1}, {"gamma": 0.2},
            {"approximation": "fourier", "random_state": 0}]


def stream(n=160, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * np.array([1.0, 3.0, 0.2, 1.0])[:d]
    y = np.sin(X[:, 0]) + 0.5 * X[:, 1] + 0.1 * rng.standard_normal(n)
    return X, y


def fields(est):
    """The learner's fitted attributes and its model's state, for exact comparison."""
    d = {k: v for k, v in est.__dict__.items()
         if k.endswith("_") and not k.startswith("__") or k.startswith("_w")}
    return pickle.dumps(sorted((k, v) for k, v in d.items() if k != "_krls")), pickle.dumps(
        sorted(est._krls.get_state().items()))


@pytest.mark.parametrize("params", SETTINGS)
def test_one_event_at_a_time_gives_the_iterates_of_chunks(params):
    X, y = stream(seed=1)
    Z = stream(30, seed=2)[0]
    chunks = KernelRLSRegressor(**params).partial_fit(X[:1], y[:1])
    chunks.partial_fit(X[1:70], y[1:70]).partial_fit(X[70:], y[70:])
    rows, events = KernelRLSRegressor(**params), KernelRLSRegressor(**params)
    scores, predicted = [], []
    for i in range(len(X)):
        scores.append(rows._progressive_scores(X[i:i + 1], y[i:i + 1])[0])
        predicted.append(events.predict_one(X[i]))
        events.learn_one(X[i], y[i])
    whole = KernelRLSRegressor(**params)._progressive_scores(X, y)
    np.testing.assert_array_equal(scores, whole)
    np.testing.assert_array_equal(predicted, whole)
    for est in (rows, events):
        np.testing.assert_array_equal(est.predict(Z), chunks.predict(Z))
        assert est.t_ == chunks.t_ == len(X) and est.n_support_ == chunks.n_support_
        assert est.__dict__.get("gamma_") == chunks.__dict__.get("gamma_")
        assert est.__dict__.get("noise_") == chunks.__dict__.get("noise_")


@pytest.mark.parametrize("params", SETTINGS[:3])
def test_weighted_rows_and_the_numpy_engine_match_the_compiled_chunks(params):
    X, y = stream(seed=3)
    w = np.random.default_rng(4).choice([0.0, 0.5, 1.0, 2.0], size=len(X))
    Z = stream(30, seed=5)[0]
    chunks = KernelRLSRegressor(**params).fit(X, y, sample_weight=w)
    for engine in ("cython", "numpy"):
        est = KernelRLSRegressor(engine=engine, **params)
        for i in range(len(X)):
            est.partial_fit(X[i:i + 1], y[i:i + 1], sample_weight=w[i:i + 1])
        np.testing.assert_allclose(est.predict(Z), chunks.predict(Z), rtol=0, atol=1e-10)
        assert est.t_ == chunks.t_
        np.testing.assert_allclose(est.__dict__.get("gamma_", 0.0),
                                   chunks.__dict__.get("gamma_", 0.0), rtol=1e-12)


def test_the_compiled_width_moments_are_the_numpy_twins_bit_for_bit():
    """The warm-up's moments on the cython engine (`_core._warmup.Width`) against
    `WidthMoments`: offsets, scales, zero weights, a row whose squares overflow."""
    for seed in range(40):
        rng = np.random.default_rng(seed)
        d = int(rng.integers(1, 30))
        X = rng.normal(size=(100, d)) * 10.0 ** rng.uniform(-3, 3) + rng.choice([0.0, 1e3, -5e6])
        if seed % 4 == 0:
            X[7] = 1e200
        weight = rng.choice([0.0, 1.0], size=100) if seed % 2 else None
        twin = WidthMoments()
        for i in range(50):
            if weight is None or weight[i] != 0.0:
                twin.add(X[i])
        ours = Width(d, 1.0)
        ours.sequence(X[:50], None if weight is None else weight[:50])
        assert ours.state() == twin.state()
        cython = KernelRLSRegressor(noise=0.1).partial_fit(X[:50], np.zeros(50),
                                                           sample_weight=weight[:50]
                                                           if weight is not None else None)
        numpy = KernelRLSRegressor(noise=0.1, engine="numpy").partial_fit(
            X[:50], np.zeros(50), sample_weight=weight[:50] if weight is not None else None)
        assert cython._width_moments == numpy._width_moments == twin.state()


@pytest.mark.parametrize("params", [{}, {"noise": 0.1}])
def test_pickling_mid_warm_up_continues_the_same_stream(params):
    X, y = stream(seed=6)
    Z = stream(30, seed=7)[0]
    whole = KernelRLSRegressor(**params).fit(X, y)
    for stop in (1, 4, 37, 99, 100):
        est = KernelRLSRegressor(**params)
        for i in range(stop):
            est.learn_one(X[i], y[i])
        est = pickle.loads(pickle.dumps(est))
        for i in range(stop, len(X)):
            est.learn_one(X[i], y[i])
        np.testing.assert_array_equal(est.predict(Z), whole.predict(Z))


class InterruptedRewidth(KRLSModel):
    """A model whose next `interrupts` rewidths are interrupted once they are done."""
    interrupts = 0

    def rewidth(self, gamma):
        super().rewidth(gamma)
        if self.interrupts:
            self.interrupts -= 1
            raise KeyboardInterrupt


@pytest.mark.parametrize("at", [50, 31, 99, 20])   # plain, width and last event; after all
def test_an_interrupted_warm_up_event_leaves_the_model(at, monkeypatch):
    """Ctrl-C in the warm-up's bookkeeping of the one-row path (before the compiled step at
    a plain event, after the model's step at a width or the last event): the learner is as
    before the call, and learning the event again gives the iterates of an uninterrupted
    stream."""
    X, y = stream(seed=8)
    Z = stream(30, seed=9)[0]
    whole = KernelRLSRegressor().fit(X, y)
    est = KernelRLSRegressor().partial_fit(X[:1], y[:1])
    for i in range(1, at):
        est.partial_fit(X[i:i + 1], y[i:i + 1])
    before = fields(est)
    blob = pickle.dumps(est)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt
    if at == 20:        # the size check, after the event's whole warm-up work
        monkeypatch.setattr(KernelRLSRegressor, "_check_size", interrupted)
    elif at == 31:      # just after the compiled rewidth has moved the model's arrays
        est._krls = InterruptedRewidth.from_state(est._krls.get_state())
        est._krls.interrupts = 1
    else:
        name = {50: "moments_after", 99: "evidence_choice"}[at]
        monkeypatch.setattr(okl.krls, name, interrupted)
    with pytest.raises(KeyboardInterrupt):
        est.partial_fit(X[at:at + 1], y[at:at + 1])
    monkeypatch.undo()
    assert fields(est) == before
    assert fields(pickle.loads(blob)) == before
    for i in range(at, len(X)):
        est.partial_fit(X[i:i + 1], y[i:i + 1])
    np.testing.assert_array_equal(est.predict(Z), whole.predict(Z))


def test_bad_rows_mid_warm_up_raise_the_chunks_errors_and_leave_the_model():
    X, y = stream(seed=10)
    est = KernelRLSRegressor().fit(X[:30], y[:30])
    before = fields(est)
    cases = [(np.array([[np.nan, 0.0, 0.0, 0.0]]), y[:1], "NaN"),
             (X[30:31], np.array([np.inf]), "inf"),
             (X[30:31, :3], y[:1], "features")]
    for row, target, message in cases:
        with pytest.raises((ValueError, FloatingPointError), match=message):
            est.partial_fit(row, target)
        assert fields(est) == before
        with pytest.raises((ValueError, FloatingPointError), match=message):
            est.partial_fit(np.vstack([X[30:31], row]) if row.shape[1] == 4 else row,
                            np.r_[y[30], target] if row.shape[1] == 4 else target)
        assert fields(est) == before


@pytest.mark.parametrize("params", SETTINGS[:4])
def test_dict_events_through_the_warm_up_give_the_iterates_of_chunks_and_the_numpy_engine(
        params):
    """predict_one (with and without the deviation) and learn_one on dict events: the compiled
    step takes the warm-up's events between its width events, the same iterates as chunks
    (exactly) and as the NumPy engine (within 1e-10), through the warm-up and after."""
    X, y = stream(seed=11)
    Z = stream(30, seed=12)[0]
    chunks = KernelRLSRegressor(**params)
    mean, std = chunks._progressive_std(X, y)
    rows = [{f"x{j}": v for j, v in enumerate(x)} for x in X.tolist()]
    for engine in ("cython", "numpy"):
        est = KernelRLSRegressor(engine=engine, **params)
        means, stds, plain = [], [], []
        for row, target in zip(rows, y.tolist()):
            plain.append(est.predict_one(row))
            f, s = est.predict_one(row, return_std=True)
            means.append(f)
            stds.append(s)
            est.learn_one(row, target)
        tol = 0.0 if engine == "cython" else 1e-10
        np.testing.assert_allclose(plain, mean, rtol=0, atol=tol)
        np.testing.assert_allclose(means, mean, rtol=0, atol=tol)
        np.testing.assert_allclose(stds, std, rtol=0, atol=tol)
        np.testing.assert_allclose(est.predict(Z), chunks.predict(Z), rtol=0, atol=tol)
        assert est.t_ == chunks.t_ == len(X) and est.n_support_ == chunks.n_support_
        assert not est._warming()


@pytest.mark.parametrize("params", [{}, {"noise": 0.1}, {"gamma": 0.2}])
def test_a_refused_or_interrupted_dict_event_mid_warm_up_leaves_the_model(params, monkeypatch):
    """An event between two width events (the compiled step's): a Ctrl-C in its bookkeeping,
    a row or target the step refuses after the bookkeeping was done, leave the learner as it
    was (its warm-up's events and moments included), and the stream goes on as if they had
    never come."""
    X, y = stream(seed=13)
    Z = stream(30, seed=14)[0]
    whole = KernelRLSRegressor(**params).fit(X, y)
    rows = [{f"x{j}": v for j, v in enumerate(x)} for x in X.tolist()]
    est = KernelRLSRegressor(**params)
    for i in range(40):
        est.predict_one(rows[i])
        est.learn_one(rows[i], y[i])
    assert est._warming() and not est._warm_moves()
    before, blob = fields(est), pickle.dumps(est)
    bad = dict(rows[40], x1=float("nan"))
    for row, target, error in [(bad, y[40], ValueError), (rows[40], float("nan"), ValueError),
                               (X[40, :3].copy(), y[40], ValueError),
                               (rows[40], 1e300, FloatingPointError)]:
        with pytest.raises(error):
            est.learn_one(row, target)
        assert fields(est) == before and pickle.dumps(est) == blob

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt
    for name in (("moments_after", "KRLSEvents") if "gamma" not in params
                 else ("KRLSEvents",)):
        monkeypatch.setattr(okl.krls, name, interrupted)
        if name == "KRLSEvents":
            est.__dict__.pop("_one_event_state", None)      # (a step built anew)
        with pytest.raises(KeyboardInterrupt):
            est.learn_one(rows[40], y[40])
        monkeypatch.undo()
        assert fields(est) == before
        assert name == "KRLSEvents" or pickle.dumps(est) == blob    # (byte for byte)
    for i in range(40, len(X)):
        est.learn_one(rows[i], y[i])
    np.testing.assert_array_equal(est.predict(Z), whole.predict(Z))


def test_the_kept_events_are_the_learners_own_rows():
    """The warm-up's kept events (`_warm_X`, `_warm_y`, `_warm_w`) hold the events learned so far
    and only them, as okl.save writes them; a shallow copy learning other events mid-warm-up
    leaves the original's rows as they were."""
    X, y = stream(seed=15)
    est = KernelRLSRegressor()
    for i in range(40):
        est.learn_one(X[i], y[i])
    for name, value in (("_warm_X", X[:40]), ("_warm_y", y[:40]), ("_warm_w", np.ones(40))):
        np.testing.assert_array_equal(getattr(est, name), value)
        np.testing.assert_array_equal(getattr(pickle.loads(pickle.dumps(est)), name), value)
    other = copy.copy(est)
    for i in range(60, 70):
        other.learn_one(X[i], y[i])
    for i in range(40, 50):
        est.learn_one(X[i], y[i])
    np.testing.assert_array_equal(est._warm_X, X[:50])
    np.testing.assert_array_equal(other._warm_X, np.vstack([X[:40], X[60:70]]))
    np.testing.assert_array_equal(est._warm_y, y[:50])
    np.testing.assert_array_equal(other._warm_y, np.r_[y[:40], y[60:70]])


def test_a_shallow_copy_and_the_original_learn_apart_through_the_warm_up():
    """Two learners holding the same kept events (views of the same buffers, which grow in
    place: as MultiKernelRegressor's learners hold them, or a copy sharing its original's
    arrays) learning different events in turn, one at a time, through width events and the
    warm-up's end: each gives the iterates of a learner of its own stream."""
    X, y = stream(seed=16)
    X2, y2 = stream(seed=17)
    Z = stream(30, seed=18)[0]
    est = KernelRLSRegressor()
    for i in range(30):
        est.learn_one(X[i], y[i])
    other = copy.deepcopy(est)
    other.__dict__.update({name: est.__dict__[name] for name in ("_warm_X", "_warm_y", "_warm_w")})
    assert other._warm_X.base is est._warm_X.base is not None
    for i in range(30, 130):
        pair = [(est, X[i], y[i]), (other, X2[i], y2[i])]
        for learner, row, target in pair if i % 2 else pair[::-1]:
            learner.learn_one(row, target)
        if i == 50:
            np.testing.assert_array_equal(est._warm_X, X[:51])
            np.testing.assert_array_equal(other._warm_X, np.vstack([X[:30], X2[30:51]]))
            np.testing.assert_array_equal(other._warm_y, np.r_[y[:30], y2[30:51]])
    alone = KernelRLSRegressor().fit(X[:130], y[:130])
    apart = KernelRLSRegressor().fit(np.vstack([X[:30], X2[30:130]]), np.r_[y[:30], y2[30:130]])
    np.testing.assert_array_equal(est.predict(Z), alone.predict(Z))
    np.testing.assert_array_equal(other.predict(Z), apart.predict(Z))
    assert (est.gamma_, est.noise_) == (alone.gamma_, alone.noise_)
    assert (other.gamma_, other.noise_) == (apart.gamma_, apart.noise_)


@pytest.mark.parametrize("at", [15, 31, 99])       # width events 16 and 32, the last event
def test_a_refused_or_interrupted_dict_event_that_moves_the_width_leaves_the_model(
        at, monkeypatch):
    """An event that moves the width or ends the warm-up (the compiled step, then the width's
    move under a checkpoint): a row or target the step refuses, a Ctrl-C after the step has
    changed the model, leave the learner as it was, byte for byte, and the stream goes on
    as if they had never come."""
    X, y = stream(seed=19)
    Z = stream(30, seed=20)[0]
    whole = KernelRLSRegressor().fit(X, y)
    rows = [{f"x{j}": v for j, v in enumerate(x)} for x in X.tolist()]
    est = KernelRLSRegressor()
    for i in range(at):
        est.predict_one(rows[i])
        est.learn_one(rows[i], y[i])
    assert est._warming() and est._warm_moves()
    before, blob = fields(est), pickle.dumps(est)
    bad = dict(rows[at], x1=float("nan"))
    for row, target in [(bad, y[at]), (rows[at], float("nan")), (X[at, :3].copy(), y[at])]:
        with pytest.raises(ValueError):
            est.learn_one(row, target)
        assert fields(est) == before and pickle.dumps(est) == blob

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr(okl.krls, "evidence_choice" if at == 99 else "shared", interrupted)
    t = est._krls.t
    with pytest.raises(KeyboardInterrupt):
        est.learn_one(rows[at], y[at])
    monkeypatch.undo()
    assert est._krls.t == t and fields(est) == before and pickle.dumps(est) == blob
    for i in range(at, len(X)):
        est.learn_one(rows[i], y[i])
    np.testing.assert_array_equal(est.predict(Z), whole.predict(Z))
