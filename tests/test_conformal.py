"""okl.conformal: the guarantees (docs/conformal.md), both engines, chunks and events, state."""
import io
import math
import pickle
import threading

import numpy as np
import pytest
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.estimator_checks import parametrize_with_checks

import okl
from okl import (
    ConformalClassifier, ConformalRegressor, KernelRLSRegressor, OnlineKernelClassifier,
    OnlineKernelRegressor,
)
from okl._core._conformal import Calibration
from okl._core import _conformal
from okl.conformal import _DictGuard
from okl._numpy.conformal import Method, NumpyCalibration, conformal_quantile
from okl._persist import ModelFileError

AGACI_STEPS = (0.001, 0.005, 0.02, 0.1)
RULES = [(Method.ACI, (0.005,)), (Method.QUANTILE, (0.01,)), (Method.AGACI, AGACI_STEPS),
         (Method.PID, (0.01,))]


def heavy_scores(n, seed=0):
    """Cauchy-sized scores whose scale jumps (a drifting, heavy-tailed score stream)."""
    rng = np.random.default_rng(seed)
    return np.abs(rng.standard_cauchy(n)) * np.repeat(rng.uniform(0.1, 10, n // 500 + 1),
                                                      500)[:n]


def stream(n=1500, d=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3, 3, (n, d))
    y = np.sin(X[:, 0]) + (0.1 + 0.3 * (X[:, 0] > 0)) * rng.normal(size=n)
    return X, y


def test_method_codes_are_the_compiled_ones():
    assert {m.name: int(m) for m in Method} == {m.name: int(m) for m in _conformal.Method}


def both_engines(method, gammas, s):
    """Both calibrations after the scores s, once their thresholds were found equal."""
    a, b = Calibration(method, 0.1, gammas, 300), NumpyCalibration(method, 0.1, gammas, 300)
    qa, qb = np.empty(len(s)), np.empty(len(s))
    a.update(s, qa)
    b.update(s, qb)
    assert np.array_equal(np.isinf(qa), np.isinf(qb))
    finite = np.isfinite(qa)
    assert np.max(np.abs(qa[finite] - qb[finite])) <= 1e-10
    return a, b


@pytest.mark.parametrize("method, gammas", RULES)
def test_both_engines_take_the_same_steps(method, gammas):
    a, b = both_engines(method, gammas, heavy_scores(6000))
    sa, sb = a.get_state(), b.get_state()
    for key in sa:
        assert np.allclose(sa[key], sb[key], rtol=0, atol=1e-10), key


@pytest.mark.parametrize("method, gammas", RULES)
def test_both_engines_agree_on_tied_scores(method, gammas):
    """Scores on a grid of 8 values: every insertion, removal and rank in the window meets
    equal scores, where a score's rank (AgACI's beta) depends on the search's side."""
    s = np.random.default_rng(5).integers(0, 8, size=4000) / 4.0
    a, b = both_engines(method, gammas, s)
    assert np.array_equal(a.get_state()["sorted"], b.get_state()["sorted"])
    assert np.array_equal(a.get_state()["sorted"], np.sort(s[-300:]))


def test_agaci_weights_of_a_restored_state_and_an_underflow_match_the_twin():
    """AgACI's weights from a state set by restore or from_state (each expert's 1 / (2 range)
    is kept between events: computed again for a range it was not computed for), and with
    experts whose exp underflows (their weight exactly 0, the exp skipped), are the twin's."""
    a, b = both_engines(Method.AGACI, AGACI_STEPS, heavy_scores(3000))
    early = a.checkpoint()
    a.update(heavy_scores(2000, seed=1), np.empty(2000))
    a.restore(early)
    assert np.array_equal(a.weights(), b.weights())
    state = b.get_state()
    state["range"] = state["range"] * 3.0
    state["regret"] = state["regret"] + np.array([0.0, -5e4, 3.0, -1e6])
    c, d = Calibration.from_state(state), NumpyCalibration.from_state(state)
    assert np.max(np.abs(c.weights() - d.weights())) <= 1e-10
    assert c.weights()[1] == c.weights()[3] == 0.0 and c.threshold() == d.threshold()
    s = heavy_scores(2000, seed=2)
    qc, qd = np.empty(2000), np.empty(2000)
    c.update(s, qc)
    d.update(s, qd)
    assert np.max(np.abs(qc - qd)) <= 1e-10


def test_quantile_index_at_its_edges_matches_the_twin():
    """The compiled quantile's index (ceil((n + 1) beta) from its truncation) is the twin's
    `math.ceil` at every edge: (n + 1) beta on an integer, a hair either side of one, at 0,
    below 0 and past n, for windows holding 1, 7 and 50 scores."""
    for n in (1, 7, 50):
        b = NumpyCalibration(Method.ACI, 0.1, (0.01,), 50)
        b.update(heavy_scores(n), np.empty(n))
        state = b.get_state()
        betas = [(j + e) / (n + 1) for j in range(-1, n + 3)
                 for e in (0.0, -1e-12, 1e-12, -2e-9, 1e-9, 1e-9 - 1e-15, 1e-9 + 1e-15)]
        for beta in betas + [-0.5, 0.0, 1.0, 1.5, 1e-300, -1e-300]:
            state["levels"] = np.array([1.0 - beta])
            c = Calibration.from_state(state)
            want = conformal_quantile(state["sorted"], n, 1.0 - state["levels"][0])
            assert c.expert_thresholds()[0] == want, (n, beta)
            assert c.threshold() == NumpyCalibration.from_state(state).threshold(), (n, beta)


@pytest.mark.parametrize("gamma", [0.001, 0.01, 0.1])
@pytest.mark.parametrize("adversary", ["miss", "cover", "alternate", "threshold"])
def test_aci_long_run_miscoverage_bound_on_adversarial_sequences(gamma, adversary):
    """Gibbs and Candes, Proposition 4.1: |mean err - alpha| <= (max(a1, 1 - a1) + gamma) /
    (gamma T) for every sequence of scores (a1 = alpha)."""
    alpha, T = 0.1, 3000
    for engine in (Calibration, NumpyCalibration):
        cal = engine(Method.ACI, alpha, (gamma,), 50)
        rng = np.random.default_rng(1)
        errors = 0
        for t in range(T):
            q = cal.threshold()
            s = adversarial_score(adversary, q, t, rng)
            errors += s > q
            cal.learn(s)
        bound = (max(alpha, 1 - alpha) + gamma) / (gamma * T)
        assert abs(errors / T - alpha) <= bound


def adversarial_score(adversary, q, t, rng):
    """The next score an adversary picks, seeing the threshold q."""
    if adversary == "miss":         # always beyond a finite threshold
        return q + 1.0 if math.isfinite(q) else 1e6 * (1 + t)
    if adversary == "cover":
        return 0.0
    if adversary == "alternate":    # blocks of misses and covers
        return (q + 1.0 if math.isfinite(q) else 1e3) if (t // 200) % 2 else 0.0
    if adversary == "threshold":    # exactly at the threshold, or just above it
        return (q if rng.random() < 0.5 else q * (1 + 1e-12) + 1e-12) \
            if math.isfinite(q) else rng.random()
    return abs(rng.standard_cauchy()) * (1 + 100 * ((t // 300) % 2))   # "heavy": jumps


@pytest.mark.parametrize("gains", [(1.0, 1.0), (0.1, 0.2), (2.0, 0.5)])
@pytest.mark.parametrize("adversary", ["miss", "cover", "alternate", "threshold", "heavy"])
def test_pid_long_run_miscoverage_bound_on_adversarial_sequences(gains, adversary):
    """Angelopoulos, Candes and Tibshirani: with the integrator saturating at
    |E_t| >= pi/2 C_sat h(t), h(t) = (t + 1) / log(t + 1), the summed excess of misses E_T
    stays within pi/2 C_sat max_{t <= T} h(t) + 1 on every sequence, so the miscoverage
    E_T / T + alpha tends to alpha (docs/conformal.md)."""
    alpha, T = 0.1, 3000
    ki, csat = gains
    h = max((t + 1) / math.log(t + 1) for t in range(1, T + 1))
    for engine in (Calibration, NumpyCalibration):
        cal = engine(Method.PID, alpha, (0.01,), 50, ki, csat)
        rng = np.random.default_rng(2)
        excess, worst = 0.0, 0.0
        for t in range(T):
            q = cal.threshold()
            s = adversarial_score(adversary, q, t, rng)
            excess += (s > q) - alpha
            worst = max(worst, abs(excess))
            cal.learn(s)
        assert worst <= math.pi / 2 * csat * h + 1
        assert abs(cal.get_state()["integral"] - excess) <= 1e-9


@pytest.mark.parametrize("n, alpha", [(49, 0.1), (99, 0.1), (60, 0.2), (20, 0.05)])
def test_split_conformal_coverage_is_exact_on_exchangeable_data(n, alpha):
    """With a fixed model and n calibration points, the chance that the next exchangeable
    point is covered is ceil((n + 1)(1 - alpha)) / (n + 1), in [1 - alpha,
    1 - alpha + 1/(n + 1)): averaged exactly over which of the n + 1 points is the new one."""
    rng = np.random.default_rng(n)
    X = rng.uniform(-3, 3, (n + 1, 1))
    y = np.sin(X[:, 0]) + rng.normal(size=n + 1)
    base = OnlineKernelRegressor(gamma=0.5).fit(rng.uniform(-3, 3, (200, 1)),
                                                rng.normal(size=200))
    covered = 0
    for j in range(n + 1):
        others = np.arange(n + 1) != j
        model = ConformalRegressor(base, alpha=alpha, method="aci", gamma=0.0, window=n)
        model.calibrate(X[others], y[others])
        lower, upper = model.predict_interval(X[j:j + 1])
        covered += bool(lower[0] <= y[j] <= upper[0])
    k = math.ceil((n + 1) * (1 - alpha))
    assert covered == k
    assert 1 - alpha <= covered / (n + 1) < 1 - alpha + 1 / (n + 1)


@pytest.mark.parametrize("method", ["aci", "quantile", "agaci", "pid"])
@pytest.mark.parametrize("nonconformity", ["absolute", "quantile"])
def test_chunks_and_events_give_the_same_intervals(method, nonconformity):
    X, y = stream(800)
    params = dict(method=method, nonconformity=nonconformity)
    chunked = ConformalRegressor(OnlineKernelRegressor(gamma=0.5), **params)
    f, lo, hi = chunked._progressive_intervals(X[:300], y[:300])
    f2, lo2, hi2 = chunked._progressive_intervals(X[300:], y[300:])
    lo, hi = np.concatenate([lo, lo2]), np.concatenate([hi, hi2])
    events = ConformalRegressor(OnlineKernelRegressor(gamma=0.5), **params)
    out = np.array([events.predict_interval_one(x) + (events.learn_one(x, t),)[:0]
                    for x, t in zip(X, y)])
    assert np.array_equal(out[:, 0], lo) and np.array_equal(out[:, 1], hi)
    assert events.t_ == chunked.t_ == 800
    assert events.threshold_ == chunked.threshold_


def test_learn_one_without_a_prediction_and_with_a_changed_row():
    """The kept prediction serves only the very row it was made for."""
    X, y = stream(300)
    a = ConformalRegressor(OnlineKernelRegressor(gamma=0.5))
    b = ConformalRegressor(OnlineKernelRegressor(gamma=0.5))
    for x, t in zip(X, y):
        a.learn_one(x, t)
        row = x + 1.0
        b.predict_interval_one(row)
        row[:] = x                       # changed in place after the prediction
        b.learn_one(row, t)
    assert a.threshold_ == b.threshold_
    assert np.array_equal(a.predict_interval(X), b.predict_interval(X))


@pytest.mark.parametrize("learner", [OnlineKernelRegressor(gamma=0.5, budget=10),
                                     KernelRLSRegressor(gamma=0.5)], ids=["okr", "krls"])
def test_the_kept_prediction_serves_no_other_row_and_no_restored_learner(learner):
    """A prediction kept for the learn_one of its event serves neither another row (the same
    array changed in place) nor a learner restored to another state since: `kept` predicts
    and then learns as asked, `twin` only learns; their scores stay bitwise equal."""
    X, y = stream(400)
    kept = ConformalRegressor(learner, method="aci").fit(X[:100], y[:100])
    twin = pickle.loads(pickle.dumps(kept))
    guard = _DictGuard(kept.estimator_)
    for i in range(100, 400, 2):
        row = X[i] + 1.0
        kept.predict_interval_one(row)
        row[:] = X[i]                   # changed in place after the prediction
        kept.learn_one(row, y[i])
        twin.learn_one(X[i], y[i])
        row = X[i + 1]
        token = guard.checkpoint(1)
        kept.estimator_.learn_one(row, y[i + 1])
        kept.predict_interval_one(row)          # kept for the learner after that event
        guard.restore(token)                    # ... which a restore undoes
        kept.learn_one(row, y[i + 1])
        twin.learn_one(X[i + 1], y[i + 1])
    assert kept._last.fast
    assert np.array_equal(kept.calibration_.get_state()["ring"],
                          twin.calibration_.get_state()["ring"])
    assert np.array_equal(kept.predict_interval(X), twin.predict_interval(X))


@pytest.mark.parametrize("learner", [OnlineKernelRegressor(gamma=0.5, budget=10),
                                     KernelRLSRegressor(gamma=0.5)], ids=["okr", "krls"])
def test_the_kept_prediction_serves_no_learner_changed_under_the_same_t(learner):
    """A learner whose state changed between predict and learn while its t_ is the same object
    (its dict written directly, then `rebound`: a new `_attr_version`) gets a new prediction: the
    scores stay those of `twin`, which changes the same way without predicting first."""
    from okl._one_event import rebound
    X, y = stream(300)
    kept = ConformalRegressor(learner, method="aci").fit(X[:100], y[:100])
    twin = pickle.loads(pickle.dumps(kept))
    for i in range(100, 300, 2):
        row = X[i]
        kept.predict_interval_one(row)
        assert kept._last.match(row, kept.estimator_) is not None      # kept for row
        for model in (kept, twin):
            est = model.estimator_
            t = est.__dict__["t_"]
            est.learn_one(X[i + 1], y[i + 1])       # another state, then the same t_ object
            est.__dict__["t_"] = t
            rebound(est)
            model.learn_one(row, y[i])
    assert kept._last.fast
    assert np.array_equal(kept.calibration_.get_state()["ring"],
                          twin.calibration_.get_state()["ring"])


@pytest.fixture
def krls_predict_calls(monkeypatch):
    """KernelRLSRegressor.predict_one counted: (the original method, the list of the
    `return_std` of every call made since)."""
    original, calls = KernelRLSRegressor.predict_one, []

    def counted(self, x, return_std=False):
        calls.append(return_std)
        return original(self, x, return_std)

    monkeypatch.setattr(KernelRLSRegressor, "predict_one", counted)
    return original, calls


def krls_wrapper_one_event(X, y, calls):
    """ConformalRegressor(KernelRLSRegressor(gamma=0.5)) fitted on 150 events (past
    noise="auto"'s warm-up of 100 events, the chunk path), then event 150 one at a time (the
    first event after a chunk: the Python path); `calls` cleared after it."""
    model = ConformalRegressor(KernelRLSRegressor(gamma=0.5)).fit(X[:150], y[:150])
    model.predict_interval_one(X[150])
    model.learn_one(X[150], y[150])
    calls.clear()
    return model


def test_kernel_rls_one_event_interval_is_its_predictive_std_in_c(krls_predict_calls):
    """ConformalRegressor(KernelRLSRegressor()).predict_interval_one takes the mean and std
    from the learner's compiled step (the learner's predict_one is not called) and they are
    exactly those of ``predict_one(x, return_std=True)``; learn_one then learns the learner
    exactly as its own learn_one."""
    original, calls = krls_predict_calls
    X, y = stream(600)
    model = krls_wrapper_one_event(X, y, calls)
    alone = KernelRLSRegressor(gamma=0.5).fit(X[:151], y[:151])
    est = model.estimator_
    for x, t in zip(X[151:], y[151:]):
        f, sd = original(est, x, return_std=True)
        q = model.threshold_
        assert model.predict_interval_one(x) == (f - q * sd, f + q * sd)
        model.learn_one(x, t)
        alone.learn_one(x, t)
    assert calls == [] and model.t_ == 600
    assert np.array_equal(est.predict(X), alone.predict(X))


def test_kernel_rls_one_event_interval_follows_a_changed_noise(krls_predict_calls):
    """The compiled one-event path keeps KernelRLSRegressor's noise value between events; a
    new `noise_` (written directly, as a restore writes it) is used from the next event on:
    the interval stays exactly that of ``predict_one(x, return_std=True)``, which the wrapper
    does not call."""
    original, calls = krls_predict_calls
    X, y = stream(400)
    model = krls_wrapper_one_event(X, y, calls)
    est = model.estimator_
    widths = []
    for i, (x, t) in enumerate(zip(X[151:], y[151:])):
        if i in (100, 200):
            est.__dict__["noise_"] = 2.0 if i == 100 else 5.0
        f, sd = original(est, x, return_std=True)
        q = model.threshold_
        assert model.predict_interval_one(x) == (f - q * sd, f + q * sd)
        widths.append(sd)
        model.learn_one(x, t)
    assert calls == [] and model.t_ == 400
    assert widths[99] < widths[100] < widths[200]


def test_the_one_event_path_reads_a_replaced_calibration_and_learner():
    """The compiled one-event path keeps the wrapper's estimator_, calibration_ and t_ between
    events while its dict is unchanged; one written directly (as a restore writes them) serves
    from the next call on."""
    X, y = stream(300)
    model = ConformalRegressor(OnlineKernelRegressor(gamma=0.5, budget=10)).fit(X[:100], y[:100])
    for x, t in zip(X[100:200], y[100:200]):
        model.predict_interval_one(x)
        model.learn_one(x, t)
    other = model.calibration_.copy()
    for _ in range(50):
        other.learn(100.0)
    assert other.threshold() != model.calibration_.threshold()
    model.__dict__["calibration_"] = other
    f = model.estimator_.predict_one(X[200])
    q = other.threshold()
    assert model.predict_interval_one(X[200]) == (f - q, f + q)
    model.learn_one(X[200], y[200])
    assert other.t == 251 and model.t_ == 201
    learner = OnlineKernelRegressor(gamma=0.5, budget=10).fit(X[:50], y[:50])
    model.__dict__["estimator_"] = learner
    f, q = learner.predict_one(X[201]), other.threshold()
    assert model.predict_interval_one(X[201]) == (f - q, f + q)
    model.learn_one(X[201], y[201])
    assert learner.t_ == 51 and other.t == 252
    model.__dict__["t_"] = 7
    model.predict_interval_one(X[202])
    model.learn_one(X[202], y[202])
    assert model.t_ == 8


@pytest.mark.parametrize("learner", [OnlineKernelRegressor(gamma=0.5, budget=10),
                                     KernelRLSRegressor(gamma=0.5)], ids=["okr", "krls"])
def test_two_threads_on_the_one_event_path(learner):
    """Two threads predicting and learning events on one model: every event is learned
    once, the calibration counts them all, and the model learns on and saves."""
    X, y = stream(1200)
    model = ConformalRegressor(learner).fit(X[:100], y[:100])
    errors = []

    def work(rows):
        try:
            for i in rows:
                model.predict_interval_one(X[i])
                model.learn_one(X[i], y[i])
        except BaseException as exc:      # noqa: BLE001 (reported below)
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(range(k, 1200, 2),)) for k in (100, 101)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert model.t_ == 1200 == model.estimator_.t_
    # every event counted but the normalised score's first (SPREAD_EVENTS)
    assert model.calibration_.t == 1200 - 2 * (model.score_ == "normalized")
    lower, upper = model.predict_interval(X[:10])
    assert np.all(np.isfinite(lower)) and np.all(lower <= upper)
    again = pickle.loads(pickle.dumps(model))
    again.learn_one(X[0], y[0])
    assert again.t_ == 1201


def test_an_interval_kept_by_the_caller_never_changes():
    """The one-event interval's tuple is reused only when nothing else holds it: every
    interval a caller keeps (the tuple, or its items) stays the value it was returned with."""
    X, y = stream(400)
    model = ConformalRegressor(OnlineKernelRegressor(gamma=0.5, budget=10)).fit(X[:200], y[:200])
    kept, values, items = [], [], []
    for i in range(200, 400):
        if i % 3 == 0:
            out = model.predict_interval_one(X[i])
            kept.append(out)
            values.append(tuple(float(v) for v in out))
        elif i % 3 == 1:
            lo, hi = model.predict_interval_one(X[i])
            items.append((lo, hi, float(lo), float(hi)))
        else:
            model.predict_interval_one(X[i])
        model.learn_one(X[i], y[i])
    assert [tuple(out) for out in kept] == values and len(set(map(id, kept))) == len(kept)
    assert all(lo == a and hi == b for lo, hi, a, b in items)
    lower, upper = model.predict_interval(X[:1])
    assert model.predict_interval_one(X[0]) == (lower[0], upper[0])


def _lock_of(model):
    from okl import _locks
    return _locks.locked(model)


def test_the_learners_take_the_wrappers_lock(tmp_path):
    """A learner the wrapper built (fit, a first learn_one, a refit, calibrate, the pinball
    pair, a pickle, a copy, okl.load) takes the wrapper's lock: one lock per event; a learner
    bound while its own lock is held keeps it."""
    import copy
    X, y = stream(300)
    models = [ConformalRegressor(KernelRLSRegressor(gamma=0.5)).fit(X, y),
              ConformalRegressor(OnlineKernelRegressor(gamma=0.5, budget=10),
                                 nonconformity="quantile").fit(X, y),
              ConformalClassifier(OnlineKernelClassifier(budget=10)).fit(X, y > 0),
              ConformalRegressor(OnlineKernelRegressor(gamma=0.5).fit(X, y)).calibrate(X, y)]
    first = ConformalRegressor(OnlineKernelRegressor(budget=10))
    first.learn_one(X[0], y[0])
    models.append(first)
    for model in list(models):
        okl.save(model, tmp_path / "m.okl")
        models += [pickle.loads(pickle.dumps(model)), copy.deepcopy(model),
                   okl.load(tmp_path / "m.okl")]
    refit = ConformalRegressor(OnlineKernelRegressor(budget=10)).fit(X, y)
    old = refit.estimator_
    refit.fit(X, y)
    assert refit.estimator_ is not old
    models.append(refit)
    for model in models:
        model.learn_one(X[1], float(y[1]) if isinstance(model, ConformalRegressor) else y[1] > 0)
        learners = model._learners()
        assert len(learners) == (3 if getattr(model, "score_", "") == "quantile" else 1)
        for learner in learners:
            assert _lock_of(learner) is _lock_of(model)
            assert learner._one_event().lock is _lock_of(model)
    assert len({id(_lock_of(m)) for m in models}) == len(models)
    held, taken, done = OnlineKernelRegressor(budget=10).fit(X, y), threading.Event(), threading.Event()
    lock = _lock_of(held)

    def hold():
        with lock:
            taken.set()
            done.wait()
    thread = threading.Thread(target=hold)
    thread.start()
    taken.wait()
    model = ConformalRegressor(OnlineKernelRegressor(budget=10)).fit(X, y)
    model.estimator_ = held                 # in use: it keeps its lock
    done.set()
    thread.join()
    assert _lock_of(held) is lock and lock is not _lock_of(model)
    model.predict_interval_one(X[2])
    model.learn_one(X[2], y[2])
    assert held.t_ == 301


@pytest.mark.parametrize("through", ["learner", "wrapper"])
def test_one_lock_keeps_a_thread_out_of_an_event_of_the_learner_or_the_wrapper(through):
    """While a thread holds the learner's lock (or the wrapper's), another thread's event on
    the wrapper (or the learner) waits for it: the two are one lock."""
    X, y = stream(300)
    model = ConformalRegressor(KernelRLSRegressor(gamma=0.5)).fit(X[:200], y[:200])
    model.predict_interval_one(X[200])
    learner = model.estimator_
    holder = learner if through == "learner" else model
    other = model if through == "learner" else learner
    started, errors = threading.Event(), []

    def event():
        started.set()
        try:
            other.predict_one(X[201])
            other.learn_one(X[201], y[201])
        except BaseException as exc:      # noqa: BLE001 (reported below)
            errors.append(exc)
    with _lock_of(holder):
        t = (model.t_, learner.t_)
        thread = threading.Thread(target=event)
        thread.start()
        started.wait()
        thread.join(0.3)
        assert thread.is_alive() and (model.t_, learner.t_) == t     # it waits
    thread.join()
    assert errors == [] and learner.t_ == t[1] + 1


def test_both_engines_give_the_same_intervals():
    X, y = stream(1000)
    a = ConformalRegressor(OnlineKernelRegressor(gamma=0.5)).fit(X, y)
    b = ConformalRegressor(OnlineKernelRegressor(gamma=0.5), engine="numpy").fit(X, y)
    assert isinstance(b.calibration_, NumpyCalibration)
    assert np.allclose(a.predict_interval(X), b.predict_interval(X), rtol=0, atol=1e-10)


class StdRegressor(RegressorMixin, BaseEstimator):
    """A stand-in for a learner with a predictive standard deviation (the contract of
    okl.KernelRLSRegressor): a running mean, and a spread that grows with |x_0|."""

    def __init__(self, scale=1.0):
        self.scale = scale

    def _std(self, X):
        return self.scale * (0.1 + np.abs(np.asarray(X, dtype=float)[..., 0]))

    def predict(self, X, return_std=False):
        mean = np.full(len(X), getattr(self, "mean_", 0.0))
        return (mean, self._std(X)) if return_std else mean

    def predict_one(self, x, return_std=False):
        mean = getattr(self, "mean_", 0.0)
        return (mean, float(self._std(np.asarray(x)))) if return_std else mean

    def learn_one(self, x, y):
        self.t_ = getattr(self, "t_", 0) + 1
        self.mean_ = getattr(self, "mean_", 0.0) + (y - getattr(self, "mean_", 0.0)) / self.t_

    def partial_fit(self, X, y):
        for x, t in zip(X, y):
            self.learn_one(x, t)
        return self


def test_a_learner_with_a_standard_deviation_normalises_the_scores():
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, (2000, 1))
    y = (0.1 + np.abs(X[:, 0])) * rng.normal(size=2000)
    model = ConformalRegressor(StdRegressor(), method="aci")
    f, lo, hi = model._progressive_intervals(X, y)
    assert model.score_ == "normalized"
    sd = 0.1 + np.abs(X[:, 0])
    half = (hi - lo) / 2
    finite = np.isfinite(half)
    q = half[finite] / sd[finite]        # one threshold per event, times each event's spread
    assert np.allclose(lo[finite] + half[finite], f[finite])
    events = ConformalRegressor(StdRegressor(), method="aci")
    out = np.array([events.predict_interval_one(x) + (events.learn_one(x, t),)[:0]
                    for x, t in zip(X, y)])
    assert np.allclose(out[:, 0], lo, rtol=0, atol=1e-12) and events.threshold_ == model.threshold_
    assert np.all(q > 0)
    assert abs(np.mean((y >= lo) & (y <= hi)) - 0.9) < 0.02
    with pytest.raises(ValueError, match="return_std"):
        ConformalRegressor(OnlineKernelRegressor(), nonconformity="normalized").fit(X, y)


class UncountedStdRegressor(StdRegressor):
    """StdRegressor without `t_` (a learner that does not count its events)."""

    def learn_one(self, x, y):
        self.seen_ = getattr(self, "seen_", 0) + 1
        self.mean_ = getattr(self, "mean_", 0.0) + (y - getattr(self, "mean_", 0.0)) / self.seen_


def test_a_learner_without_t_has_learned_the_wrappers_events():
    """The normalised score's first events are counted by the wrapper for a learner without
    `t_` (chunks and events alike), and a fitted one calibrates on every row."""
    X, y = stream(50)
    chunked = ConformalRegressor(UncountedStdRegressor(), method="aci")
    chunked.partial_fit(X[:1], y[:1]).partial_fit(X[1:], y[1:])
    events = ConformalRegressor(UncountedStdRegressor(), method="aci")
    for x, t in zip(X, y):
        events.learn_one(x, t)
    assert chunked.calibration_.t == events.calibration_.t == 48
    assert events.threshold_ == chunked.threshold_ < math.inf
    fitted = UncountedStdRegressor().partial_fit(X[:1], y[:1])
    assert ConformalRegressor(fitted).calibrate(X, y).calibration_.t == 50


def test_kernel_rls_gives_its_predictive_std_to_the_scores():
    """ConformalRegressor(KernelRLSRegressor()) normalises by the posterior's std: the band is
    the predictive std times one threshold, chunks equal events, and it covers."""
    rng = np.random.default_rng(3)
    X = rng.uniform(-3, 3, (1500, 2))
    y = np.sin(X[:, 0]) + 0.3 * rng.normal(size=1500)
    model = ConformalRegressor(KernelRLSRegressor(gamma=0.5), method="aci")
    f, lo, hi = model._progressive_intervals(X, y)
    assert model.score_ == "normalized"
    events = ConformalRegressor(KernelRLSRegressor(gamma=0.5), method="aci")
    out = []
    for x, t in zip(X, y):
        out.append(events.predict_interval_one(x))
        events.learn_one(x, t)
    np.testing.assert_allclose(np.array(out), np.column_stack([lo, hi]), rtol=0, atol=1e-10)
    mean, std = events.estimator_.predict(X[:20], return_std=True)
    lower, upper = events.predict_interval(X[:20])
    np.testing.assert_allclose((upper - lower) / 2, events.threshold_ * std, rtol=1e-10)
    np.testing.assert_allclose((upper + lower) / 2, mean, rtol=0, atol=1e-10)
    assert abs(np.mean((y[200:] >= lo[200:]) & (y[200:] <= hi[200:])) - 0.9) < 0.03


def diabetes_stream():
    """scikit-learn's diabetes, features standardised, rows shuffled (targets 25-346, sd 77)."""
    from sklearn.datasets import load_diabetes
    X, y = load_diabetes(return_X_y=True)
    order = np.random.default_rng(0).permutation(len(y))
    return ((X - X.mean(0)) / X.std(0))[order], y[order]


@pytest.mark.parametrize("engine", ["cython", "numpy"])
def test_normalised_scores_wait_for_the_learners_spread(engine):
    """KernelRLSRegressor's spread is its prior's, in no unit of the targets, until its scale
    has a residual (its second event): the calibration leaves out the scores of the first
    `SPREAD_EVENTS` events, so that no interval of the first pass over diabetes is wider than
    12 sd of its targets (with those scores they were up to 700 sd wide), the same from
    chunks of any size and from events; a split calibration on a learner of one event takes
    no score."""
    assert okl.conformal.SPREAD_EVENTS == 2
    X, y = diabetes_stream()
    chunked = ConformalRegressor(KernelRLSRegressor(), engine=engine)
    parts = [chunked._progressive_intervals(X[a:b], y[a:b]) for a, b in ((0, 1), (1, 3),
                                                                         (3, 442))]
    f, lo, hi = (np.concatenate(p) for p in zip(*parts))
    width = hi - lo
    finite = np.isfinite(width)
    assert np.all(finite[8:]) and np.max(width[finite]) <= 12 * y.std()
    assert chunked.calibration_.t == chunked.t_ - 2 == 440
    events = ConformalRegressor(KernelRLSRegressor(), engine=engine)
    out = []
    for x, t in zip(X, y):
        out.append(events.predict_interval_one(x))
        events.learn_one(x, t)
    np.testing.assert_allclose(np.array(out), np.column_stack([lo, hi]), rtol=1e-12, atol=1e-10)
    assert events.calibration_.t == 440
    one = KernelRLSRegressor().fit(X[:1], y[:1])
    split = ConformalRegressor(one, engine=engine).calibrate(X[1:100], y[1:100])
    assert split.calibration_.t == 0 and split.threshold_ == math.inf
    absolute = ConformalRegressor(KernelRLSRegressor(), nonconformity="absolute").fit(X[:20],
                                                                                     y[:20])
    assert absolute.calibration_.t == 20        # only the normalised score waits


def test_the_default_learner_is_kernel_rls_with_the_normalised_score():
    """ConformalRegressor() wraps KernelRLSRegressor() and normalises by its spread; the
    pinball pair asks for a learner with a pinball loss, naming one."""
    X, y = stream(200)
    model = ConformalRegressor().fit(X, y)
    assert type(model.estimator_) is KernelRLSRegressor and model.score_ == "normalized"
    assert model.estimator_.get_params() == KernelRLSRegressor().get_params()
    assert model.calibration_.t == 198
    with pytest.raises(ValueError, match=r"okl\.OnlineKernelRegressor\(\)"):
        ConformalRegressor(nonconformity="quantile").fit(X, y)


def test_a_krls_mixture_learns_one_event_at_a_time_from_the_first():
    """MultiKernelRegressor(learner="krls") gives no spread before it learns (NotFittedError):
    the wrapper's first learn_one takes (0, 1), its score left out as the next one's, and the
    events give the chunks' intervals."""
    X, y = stream(60)
    chunked = ConformalRegressor(okl.MultiKernelRegressor(learner="krls"))
    _, lo, hi = chunked._progressive_intervals(X, y)
    events = ConformalRegressor(okl.MultiKernelRegressor(learner="krls"))
    out = []
    for x, t in zip(X, y):
        out.append(events.predict_interval_one(x))
        events.learn_one(x, t)
    np.testing.assert_allclose(np.array(out), np.column_stack([lo, hi]), rtol=1e-12, atol=1e-10)
    assert events.calibration_.t == chunked.calibration_.t == 58 and np.isfinite(hi[-1])


def test_a_failed_call_leaves_the_model_as_it_was():
    X, y = stream(400)
    model = ConformalRegressor(OnlineKernelRegressor(gamma=0.5)).fit(X[:200], y[:200])
    before = pickle.dumps(model)
    bad = X[200:300].copy()
    bad[50, 0] = np.nan
    with pytest.raises(ValueError):
        model.partial_fit(bad, y[200:300])
    with pytest.raises(ValueError):
        model.learn_one(X[0], float("nan"))
    with pytest.raises(ValueError):
        model.learn_one(np.array([np.nan, 0.0]), 1.0)
    assert pickle.dumps(model) == before


def test_save_load_and_pickle_keep_learning_identically(tmp_path):
    X, y = stream(600)
    for model in (ConformalRegressor(OnlineKernelRegressor(gamma=0.5)),
                  ConformalRegressor(OnlineKernelRegressor(gamma=0.5), gamma=(0.001, 0.01, 0.1)),
                  ConformalRegressor(OnlineKernelRegressor(), nonconformity="quantile",
                                     method="aci", engine="numpy"),
                  ConformalRegressor(OnlineKernelRegressor(gamma=0.5), method="pid",
                                     integrator=(0.5, 2.0))):
        model.fit(X[:300], y[:300])
        okl.save(model, tmp_path / "m.okl")
        loaded = okl.load(tmp_path / "m.okl")
        copied = pickle.loads(pickle.dumps(model))
        for m in (model, loaded, copied):
            m.partial_fit(X[300:], y[300:])
        assert np.array_equal(model.predict_interval(X), loaded.predict_interval(X))
        assert np.array_equal(model.predict_interval(X), copied.predict_interval(X))


def test_load_refuses_an_edited_calibration():
    X, y = stream(300)
    model = ConformalRegressor(OnlineKernelRegressor(gamma=0.5), window=100).fit(X, y)
    buffer = io.BytesIO()
    okl.save(model, buffer)
    data = dict(np.load(io.BytesIO(buffer.getvalue())))
    key = "obj:calibration_:sorted"
    data[key] = data[key][::-1].copy()
    edited = io.BytesIO()
    np.savez(edited, **data)
    edited.seek(0)
    with pytest.raises(ModelFileError, match="sorted"):
        okl.load(edited)


def test_classifier_sets_from_chunks_and_events_and_its_state():
    from sklearn.datasets import load_iris
    X, y = load_iris(return_X_y=True)
    order = np.random.default_rng(0).permutation(len(y))
    X, y = X[order], y[order]
    chunked = ConformalClassifier()
    pred, covered, sizes = chunked._progressive_sets(X, y)
    events = ConformalClassifier()
    seen = []
    for x, label in zip(X, y):
        chosen = events.predict_set_one(x)
        seen.append((label in chosen, len(chosen)))
        events.learn_one(x, label)
    assert np.array_equal(covered, [c for c, _ in seen])
    assert np.array_equal(sizes, [k for _, k in seen])
    sets = chunked.predict_set(X)
    assert sets.shape == (len(y), 3) and sets.dtype == bool
    buffer = io.BytesIO()
    okl.save(chunked, buffer)
    buffer.seek(0)
    assert np.array_equal(okl.load(buffer).predict_set(X), sets)


def test_classifier_one_event_path_keeps_the_probabilities_and_fails_cleanly():
    """predict_set_one's probabilities serve the learn_one of the same event; the compiled
    path (cython) and the Python one (numpy) take the same steps; a refused label changes
    nothing."""
    from sklearn.datasets import load_wine
    X, y = load_wine(return_X_y=True)
    order = np.random.default_rng(1).permutation(len(y))
    X, y = (X[order] - X.mean(0)) / X.std(0), y[order]
    learn_only, both, python = (ConformalClassifier(method=m, engine=e) for m, e in (
        ("pid", "cython"), ("pid", "cython"), ("pid", "numpy")))
    for x, label in zip(X, y):
        learn_only.learn_one(x, label)
        for model in (both, python):
            model.predict_set_one(x)
            model.learn_one(x, label)
    assert both._last.fast and not python._last.fast
    assert learn_only.threshold_ == both.threshold_
    assert abs(both.threshold_ - python.threshold_) <= 1e-10
    assert np.array_equal(learn_only.predict_set(X), both.predict_set(X))
    fixed = ConformalClassifier(OnlineKernelClassifier(classes=[0, 1, 2])).fit(X[:50], y[:50])
    fixed.predict_set_one(X[50])
    before = pickle.dumps(fixed)
    with pytest.raises(ValueError):
        fixed.learn_one(X[50], 7)
    assert pickle.dumps(fixed) == before


@pytest.mark.parametrize("data", ["digits", "breast_cancer", "iris_named"])
def test_classifier_sets_in_c_are_the_learners_probabilities(data):
    """The compiled predict_set_one takes the probabilities from the learner's scores with
    its softmax / logistic in C: the same floats as its predict_proba_one (the sum added
    in order), so the same sets as the Python path (numpy engine) on every
    event, and the same threshold; a label that cannot be looked up changes nothing."""
    from sklearn import datasets
    name = data.replace("_named", "")
    X, y = getattr(datasets, f"load_{name}")(return_X_y=True)
    order = np.random.default_rng(2).permutation(len(y))[:600]
    X, y = (X[order] - X.mean(0)) / np.maximum(X.std(0), 1e-12), y[order]
    if data.endswith("_named"):
        y = np.array(["setosa", "versicolor", "virginica"])[y]
    compiled, python = (ConformalClassifier(OnlineKernelClassifier(loss="logistic", budget=20),
                                            engine=e) for e in ("cython", "numpy"))
    served = 0
    for i, (x, label) in enumerate(zip(X, y)):
        label = label.item()
        if i >= 20:
            chosen = compiled.predict_set_one(x)
            assert chosen == python.predict_set_one(x)
            proba = compiled.estimator_.predict_proba_one(x)
            kept = compiled._last.match_proba(x, compiled.estimator_)
            assert kept == proba
            q = compiled.threshold_
            assert chosen == {c for c, p in proba.items() if 1.0 - p <= q}
            # kept in C (a new dict each time it is asked for), not the learner's dict
            served += kept is not compiled._last.match_proba(x, compiled.estimator_)
        compiled.learn_one(x, label)
        python.learn_one(x, label)
    # (an event right after a new label takes the learner's dict: its step is rebuilt)
    assert compiled._last.fast and served >= len(y) - 25
    assert abs(compiled.threshold_ - python.threshold_) <= 1e-10
    compiled.predict_set_one(X[0])
    before = pickle.dumps(compiled)
    with pytest.raises(TypeError):
        compiled.learn_one(X[0], [y[0]])
    assert pickle.dumps(compiled) == before


def test_progressive_validation_reports_coverage_width_and_the_window():
    from okl.evaluation import progressive_validation
    X, y = stream(1200)
    result = progressive_validation(ConformalRegressor(OnlineKernelRegressor(gamma=0.5)), X, y)
    assert set(result.metrics) == {"mse", "coverage", "width", "window_coverage"}
    covered = (y >= result.lower) & (y <= result.upper)
    assert result.metrics["coverage"][-1] == covered.mean()
    assert result.window_coverage(500)[-1] == covered[-500:].mean()
    finite = np.isfinite(result.width)
    assert np.isclose(result.metrics["width"][-1], result.width[finite].mean())


def test_cli_learn_with_an_interval(tmp_path, capsys):
    from okl.__main__ import main
    X, y = stream(500)
    path = tmp_path / "s.csv"
    np.savetxt(path, np.column_stack([X, y]), delimiter=",", header="a,b,y", comments="")
    out = tmp_path / "p.csv"
    assert main(["learn", str(path), "--target", "y", "--interval", "0.9", "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "coverage" in printed and "width" in printed
    rows = np.genfromtxt(out, delimiter=",", names=True)
    assert rows.dtype.names == ("prediction", "lower", "upper") and len(rows) == 500
    assert np.all(rows["lower"] <= rows["upper"])


def test_to_river_gives_rivers_interval():
    from river import conf as river_conf
    from okl.river import to_river
    X, y = stream(200)
    model = to_river(ConformalRegressor(OnlineKernelRegressor(gamma=0.5)))
    direct = ConformalRegressor(OnlineKernelRegressor(gamma=0.5))
    for x, t in zip(X, y):
        event = {"a": x[0], "b": x[1]}
        interval = model.predict_one(event, with_interval=True)
        assert isinstance(interval, river_conf.Interval)
        assert (interval.lower, interval.upper) == direct.predict_interval_one(x)
        model.learn_one(event, t)
        direct.learn_one(x, t)


@parametrize_with_checks([ConformalRegressor(OnlineKernelRegressor()),
                          ConformalClassifier(OnlineKernelClassifier()),
                          ConformalRegressor(KernelRLSRegressor(), method="pid")])
def test_sklearn_compatible(estimator, check):
    """Every check passes, none expected to fail (the learners' own sample-weight caveats do
    not arise: the wrappers take no sample_weight)."""
    check(estimator)


def test_a_learner_interrupted_once_it_has_learned_keeps_the_wrapper_in_step(monkeypatch):
    """A Ctrl-C in the learner's last Python lines, once it holds the event: the wrapper's
    threshold and t_ follow the learner before the exception goes on, so the stream goes on
    as if the call had returned."""
    X, y = stream(80, seed=31)
    y = [float(v) for v in y]        # floats: the compiled path
    model, twin = ConformalRegressor(), ConformalRegressor()
    for i in range(30):         # the learner is still in its warm-up: its Python path
        model.learn_one(X[i], y[i])
        twin.learn_one(X[i], y[i])
    learn_event = KernelRLSRegressor._learn_event

    def late(self, *args, **kwargs):
        learn_event(self, *args, **kwargs)
        raise KeyboardInterrupt
    monkeypatch.setattr(KernelRLSRegressor, "_learn_event", late)
    with pytest.raises(KeyboardInterrupt):
        model.learn_one(X[30], y[30])
    monkeypatch.undo()
    twin.learn_one(X[30], y[30])
    assert model.t_ == twin.t_ and np.array_equal(model.threshold_, twin.threshold_)
    for i in range(31, 80):
        assert model.predict_interval_one(X[i]) == twin.predict_interval_one(X[i])
        model.learn_one(X[i], y[i])
        twin.learn_one(X[i], y[i])
