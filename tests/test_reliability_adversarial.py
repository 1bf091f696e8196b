"""An adversarial state machine over every public estimator (issue 38, item 11).

Hypothesis drives one estimator (every case of `estimator_case`, both engines) through
random sequences of attacks: chunks and events with bad values (NaN, None and string
targets, rows of 1e-300 to 1e300, a wrong width, new labels, bad weights), predictions,
okl.save / okl.load, pickle and copy.deepcopy round trips that then go on learning,
set_params with odd values, a snapshot taken while another thread learns, and Ctrl-C in the
middle of a call.  After each attack the rules of the house must hold:

- a call that raises raises ValueError, TypeError or FloatingPointError (or the
  KeyboardInterrupt it was sent) with a message, and leaves the model as it was;
- a call that succeeds leaves a model whose predictions on ordinary rows are finite;
- a file okl.save wrote loads, and the loaded model (as a pickle or a deep copy) predicts
  what the original does and learns what it learns, bit for bit;
- a snapshot taken while another thread learns is the model before or after that call.

The run is derandomized and bounded (a few examples of a few steps per estimator); the
crash-prone part runs in a forked child (`isolated`).  `bench/adversarial.py --attacks N`
runs the same machine longer, with fresh random seeds, and reports what it found.
"""
import _thread
import copy
import io
import pickle
import signal
import threading
import time
import warnings
from collections import Counter

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine, initialize, invariant, rule, run_state_machine_as_test,
)
from sklearn.base import is_classifier

import okl

ALLOWED = (ValueError, TypeError, FloatingPointError)
D = 3
PROBE = np.random.default_rng(12345).normal(size=(8, D + 1))    # a column to spare
ODD_VALUES = [None, 0, -1, 0.5, 2.0, 1e300, float("inf"), float("nan"), "auto", "scale",
              "bogus", True, 2 ** 40, [0, 1, 2]]


def machine(kit, cls, engine, log):
    """The state machine class for one estimator case; `log` counts the attacks by name."""

    class Attack(RuleBasedStateMachine):
        @initialize(seed=st.integers(0, 2 ** 16),
                    warm=st.sampled_from(["chunk", "frame", "events", "one-label events",
                                          "nothing"]))
        def start(self, seed, warm):
            """A fresh estimator, warmed by a chunk, a DataFrame, dict events (all of one
            label for a classifier), or nothing."""
            self.rng = np.random.default_rng(seed)
            self.est = kit.make(cls, engine)
            self.transformer = kit.is_transformer(self.est)
            self.labels = is_classifier(self.est)
            if warm in ("chunk", "frame"):
                X = self._rows(20)
                if warm == "frame":
                    import pandas as pd
                    X = pd.DataFrame(X, columns=[f"f{j}" for j in range(D)])
                self._learn(X, warm, y=self._targets(np.asarray(X), "clean"), expect_ok=True)
            elif warm != "nothing":
                X = self._rows(3)
                y = self._targets(X, "clean")
                for i, x in enumerate(X):
                    event = {f"f{j}": v for j, v in enumerate(x.tolist())}
                    if self.transformer:
                        self.est.learn_one(event)
                    else:
                        label = y[0] if warm == "one-label events" else y[i]
                        self.est.learn_one(event, label.item())

        # -- data -------------------------------------------------------------------------

        def _rows(self, n, scale=1.0):
            """n rows of the model's width (D before it has one)."""
            try:
                width = getattr(self.est, "n_features_in_", D)
            except AttributeError:          # a pipeline whose first step is not fitted
                width = D
            return self.rng.normal(size=(n, width)) * scale

        def _targets(self, X, kind):
            if self.transformer:
                return None
            if self.labels:
                y = (X[:, 0] > 0).astype(int)
                if kind == "new_labels":
                    y = self.rng.integers(0, 40, size=len(X))
                return y
            return np.sin(np.clip(X[:, 0], -1e3, 1e3)) + 0.1

        # -- what the model is ------------------------------------------------------------

        def _learner(self, est=None):
            est = self.est if est is None else est
            return getattr(est, "steps", [(None, est)])[-1][1]

        def _state(self, est=None):
            """(t_, what it gives on PROBE) of a fitted model; None before any learning."""
            est = self.est if est is None else est
            t = getattr(self._learner(est), "t_", getattr(self._learner(est),
                                                            "n_samples_seen_", None))
            if t is None:
                return None
            try:
                width = getattr(est, "n_features_in_", D)   # a first narrow chunk fixes 2
            except AttributeError:
                width = D
            probe = PROBE[:, :width]
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    scores = (getattr(est, "decision_function", None)     # a wrapper's sets:
                              or getattr(est, "predict_set", None))        # its threshold's
                    if self.labels and scores is not None:
                        out = np.asarray(scores(probe)) if len(
                            self._learner(est).classes_) >= 2 else np.asarray(est.predict(probe))
                    else:
                        out = kit.fingerprint(est, probe)
            except ALLOWED as exc:          # a parameter set_params made invalid: named
                assert self._params_odd(), f"a prediction of a valid model raised {exc!r}"
                out = np.array([type(exc).__name__])
            return t, out

        def _same(self, a, b, what):
            if a is None or b is None:
                assert a is None and b is None, f"{what}: one model is fitted, one is not"
                return
            assert a[0] == b[0], f"{what}: t_ {a[0]} != {b[0]}"
            np.testing.assert_array_equal(a[1], b[1], err_msg=what)

        def _call(self, name, call):
            """Run an attack: it succeeds, or raises an allowed error and changes nothing."""
            log[name] += 1
            before = self._state()
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    call()
            except ALLOWED as exc:
                assert str(exc), f"{name}: {type(exc).__name__} without a message"
                self._same(self._state(), before, f"{name} raised {exc!r} and changed the model")
                return False
            return True

        def _learn(self, X, kind, expect_ok=False, y=None, est=None, **kwargs):
            est = self.est if est is None else est
            y = self._targets(X, kind) if y is None else y

            def call():
                if y is None:
                    est.partial_fit(X)
                else:
                    est.partial_fit(X, y, **kwargs)
            ok = self._call(f"partial_fit:{kind}", call)
            assert ok or not expect_ok, "a clean chunk was refused"
            return ok

        # -- attacks ----------------------------------------------------------------------

        @rule(n=st.integers(1, 12), exponent=st.sampled_from([0, 0, 2, -150, 150, 300, -300]))
        def chunk(self, n, exponent):
            X = self._rows(n, 10.0 ** exponent)
            self._learn(X, "clean" if exponent == 0 else f"scale1e{exponent}",
                        expect_ok=exponent == 0 and not self._params_odd())

        @rule(n=st.integers(1, 6), bad=st.sampled_from(["nan_x", "inf_x", "none_y", "nan_y",
                                                          "str_y", "huge_int_y", "wide",
                                                          "narrow", "empty", "new_labels"]))
        def bad_chunk(self, n, bad):
            if bad == "str_y":      # one row labelled "a" alone is a string-labelled stream
                n = max(n, 2)
            X = self._rows(n)
            y = self._targets(X, bad)
            if bad in ("nan_x", "inf_x"):
                X[n // 2, 0] = np.nan if bad == "nan_x" else np.inf
            elif bad == "wide":
                X = np.hstack([X, X[:, :1]])
            elif bad == "narrow" and X.shape[1] > 1:
                X = X[:, 1:]
            elif bad == "empty":
                X, y = X[:0], None if y is None else y[:0]
            elif y is not None and bad != "new_labels":
                y = y.astype(object)
                y[n // 2] = {"none_y": None, "nan_y": float("nan"), "str_y": "a",
                             "huge_int_y": 10 ** 400}[bad]
            self._learn(X, bad, y=y)

        @rule(weights=st.sampled_from([[-1.0], ["2"], [np.inf], [10 ** 400], [0.0], [2.0]]))
        def weighted_chunk(self, weights):
            X = self._rows(3)
            y = self._targets(X, "clean")
            if y is None:
                return
            self._learn(X, "weights", y=y, sample_weight=np.array(weights * 3, dtype=object))

        @rule(exponent=st.sampled_from([0, 0, -300, 300, 155]),
              value=st.sampled_from(["clean", None, "nan", "str", "big"]),
              form=st.sampled_from(["array", "dict", "list"]))
        def event(self, exponent, value, form):
            if not hasattr(self.est, "learn_one"):
                return
            x = self._rows(1, 10.0 ** exponent)[0]
            y = None if self.transformer else self._targets(x[None, :], "clean")[0].item()
            if value != "clean" and not self.transformer:
                y = {None: None, "nan": float("nan"), "str": "a", "big": 10 ** 400}[value]
            event = {"array": x, "list": x.tolist(),
                     "dict": {f"f{j}": v for j, v in enumerate(x.tolist())}}[form]

            def call():
                if self.transformer:
                    self.est.learn_one(event)
                else:
                    self.est.learn_one(event, y)
            self._call(f"learn_one:{form}:{value}:1e{exponent}", call)

        @rule(exponent=st.sampled_from([0, -300, 300, 160]))
        def predict(self, exponent):
            log["predict"] += 1
            X = self._rows(4, 10.0 ** exponent)
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    out = kit.fingerprint(self.est, X)
            except ALLOWED as exc:
                assert str(exc)
                return
            if exponent == 0 and out.dtype.kind == "f":
                assert np.all(np.isfinite(out)), f"predictions on ordinary rows: {out}"

        @rule(how=st.sampled_from(["okl.save", "pickle", "deepcopy"]), n=st.integers(1, 8),
              swap=st.booleans())
        def round_trip(self, how, n, swap):
            """A copy predicts what the original does and learns what it learns."""
            log[f"round_trip:{how}"] += 1
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if how == "okl.save":
                    buffer = io.BytesIO()
                    try:
                        okl.save(self.est, buffer)
                    except (ValueError, TypeError) as exc:     # parameters okl cannot keep
                        assert str(exc)
                        return
                    buffer.seek(0)
                    other = okl.load(buffer)
                elif how == "pickle":
                    other = pickle.loads(pickle.dumps(self.est))
                else:
                    other = copy.deepcopy(self.est)
            self._same(self._state(other), self._state(), f"{how} copy")
            X = self._rows(n)
            y = self._targets(X, "clean")
            outcomes = [self._learn(X, "after-" + how, y=y, est=est) for est in (self.est, other)]
            assert outcomes[0] == outcomes[1], f"the {how} copy and the original disagree"
            self._same(self._state(other), self._state(), f"{how} copy after learning")
            if swap:
                self.est = other

        @rule(data=st.data())
        def set_params(self, data):
            params = self.est.get_params(deep=False)
            names = sorted(k for k, v in params.items()
                           if v is None or isinstance(v, (bool, int, float, str)))
            if not names:
                return
            name = data.draw(st.sampled_from(names))
            value = data.draw(st.sampled_from(ODD_VALUES + [params[name]]))
            log["set_params"] += 1
            fitted = "t_" in getattr(self.est, "__dict__", {})
            try:
                self.est.set_params(**{name: value})
            except ValueError as exc:      # other classes than a fitted model's, refused
                assert name == "classes" and fitted and "set_params cannot change" in str(exc)
                assert self.est.get_params(deep=False)[name] is params[name]
                return
            self.original = getattr(self, "original", {})
            self.original.setdefault(name, params[name])

        @rule(n=st.integers(1, 30))
        def fit(self, n):
            X = self._rows(n)

            def call():
                y = self._targets(X, "clean")
                if y is None:
                    self.est.fit(X)
                else:
                    self.est.fit(X, y)
            self._call("fit", call) if self._params_odd() else call()
            log["fit"] += 0 if self._params_odd() else 1

        @rule()
        def restore_params(self):
            log["restore_params"] += 1
            self.est.set_params(**getattr(self, "original", {}))
            self.original = {}

        def _params_odd(self):
            return bool(getattr(self, "original", {}))

        @rule(n=st.integers(50, 400))
        def snapshot_while_learning(self, n):
            """Pickles taken while another thread learns: before or after, never between."""
            if self._params_odd():
                return
            log["snapshot_while_learning"] += 1
            X = self._rows(n)
            y = self._targets(X, "clean")
            twin = copy.deepcopy(self.est)
            before = self._state()
            if not self._learn(X, "twin", y=y, est=twin):
                return
            after = self._state(twin)
            seen, done = [], threading.Event()

            def learn():
                try:
                    self._learn(X, "threaded", y=y)
                finally:
                    done.set()
            thread = threading.Thread(target=learn)
            thread.start()
            while not done.is_set() or not seen:
                seen.append(self._state(pickle.loads(pickle.dumps(self.est))))
            thread.join()
            for state in seen:
                if before is None or state[0] != before[0]:
                    self._same(state, after, "a snapshot during partial_fit")
                else:
                    self._same(state, before, "a snapshot during partial_fit")

        @rule(n=st.integers(200, 2000), delay=st.sampled_from([0.0, 0.0005, 0.002, 0.01]))
        def ctrl_c(self, n, delay):
            """A Ctrl-C during a call leaves the model before or after it."""
            if self._params_odd():
                return
            log["ctrl_c"] += 1
            X = self._rows(n)
            y = self._targets(X, "clean")
            twin = copy.deepcopy(self.est)
            before = self._state()
            completed = self._learn(X, "twin", y=y, est=twin)
            timer = threading.Timer(delay, _thread.interrupt_main)
            handler = signal.signal(signal.SIGINT, signal.default_int_handler)
            interrupted = returned = False
            try:
                try:
                    timer.start()
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        if y is None:
                            self.est.partial_fit(X)
                        else:
                            self.est.partial_fit(X, y)
                    returned = True
                    timer.join()
                    time.sleep(0.001)               # a late interrupt arrives here
                except KeyboardInterrupt:
                    interrupted = not returned
                except ALLOWED:
                    pass
                timer.join()
                time.sleep(0.001)
            except KeyboardInterrupt:               # delivered after the call returned
                pass
            finally:
                signal.signal(signal.SIGINT, handler)
            state = self._state()
            if interrupted and (before is None or state is None or state[0] == before[0]):
                self._same(state, before, "a Ctrl-C mid-call")
            elif completed:
                self._same(state, self._state(twin), "a call Ctrl-C did not stop")

        @invariant()
        def finite(self):
            state = self._state() if not self._params_odd() else None
            if state is not None and state[1].dtype.kind == "f":
                assert np.all(np.isfinite(state[1])), "a model with non-finite predictions"

    return Attack


def run(kit, cls, engine, examples, steps, seed=None):
    """Run the machine on one estimator case; returns the attacks made, by name."""
    log = Counter()
    Attack = machine(kit, cls, engine, log)
    config = settings(max_examples=examples, stateful_step_count=steps, deadline=None,
                      derandomize=seed is None, database=None,
                      suppress_health_check=list(HealthCheck))
    if seed is not None:
        config = settings(config, derandomize=False)
        np.random.seed(seed)
    run_state_machine_as_test(Attack, settings=config)
    return dict(log)


def test_the_adversarial_machine_finds_nothing(estimator_case, kit, isolated):
    cls, engine = estimator_case
    attacks = isolated(run, kit, cls, engine, 4, 10, timeout=600)
    assert sum(attacks.values()) >= 20, attacks     # the machine ran (4 x 10 steps)
