"""One event at a time: `learn_one`, `predict_one` and friends for every okl learner.

`OneEvent` holds the logic; `EventAdapter` gives it to any okl learner from
outside (the river wrapper and StreamPipeline use it), and
`OneEventMixin` gives it to an estimator class itself.

- An event is a dict of feature name -> value or a 1-D array-like (see
  `okl._rows`: the first call fixes the feature order; a missing key is 0;
  an unknown key raises unless ``unknown_features="ignore"``).
- The learners on the cython engine take a compiled one-event step (their
  `_compiled_events`, `okl._core._pointwise.Events`): on the estimator,
  `learn_one` / `predict_one` are one compiled call (`learn_ready` /
  `predict_ready`) and the adapter takes what it declines; the others take
  one-row `partial_fit` / `predict` calls.  Either way the iterates are those
  of `partial_fit` on the same rows.
- Before any learning `predict_one` returns the prior: 0 for a regressor or
  a ranker, and for a classifier the one label seen so far (or None).
- A classifier started without `classes` learns its first events once the
  second label has appeared: until then they wait, in order, and learning
  them then gives exactly the iterates of `partial_fit` on the same rows.
"""
import inspect
import itertools
import math

import numpy as np
from sklearn.base import is_classifier
from sklearn.utils.metaestimators import available_if

from okl import _locks
from okl._core import _pointwise
from okl._rows import (
    check_label, check_row, check_weight, commit_names, feature_index, forget_names,
)

F64 = np.dtype(np.float64)
_VERSIONS = itertools.count()     # `OneEventMixin.__setattr__`'s tokens, never given twice


class _Schema:
    """The feature order of dict events, for steps that only take arrays."""

    def __init__(self, unknown_features="error"):
        self.unknown_features = unknown_features

    def row(self, x, check_finite=True):
        """(row, names): x as a float64 row; names to `commit` when a first dict fixed them."""
        return check_row(self, x, check_finite)

    def commit(self, row, names):
        commit_names(self, names)
        self.n_features_in_ = row.shape[0]

    def reset(self):
        forget_names(self)
        self.__dict__.pop("n_features_in_", None)

    def learned(self):
        """The learner took rows through partial_fit (nothing to do for a separate schema)."""


class _EstimatorSchema:
    """The feature order kept on the estimator itself (`OneEventMixin`)."""

    def __init__(self, estimator):
        self.estimator = estimator

    def row(self, x, check_finite=True):
        return check_row(self.estimator, x, check_finite)

    def commit(self, row, names):
        est = self.estimator
        commit_names(est, names)
        if "n_features_in_" not in est.__dict__:    # events waiting for a second label
            est.n_features_in_ = row.shape[0]

    def learned(self):
        """partial_fit took the rows (the names stay in `_row_keys`)."""

    def reset(self):
        forget_names(self.estimator)


def _accepts(method, name):
    try:
        return name in inspect.signature(method).parameters
    except (TypeError, ValueError):
        return False


def _is_fitted(est):
    return hasattr(est, "t_") or hasattr(est, "n_samples_seen_")


class EventAdapter:
    """One event at a time for any okl learner: its own `learn_one` where it has one.

    A learner without `learn_one` gets one-row `partial_fit` / `predict`
    calls (same iterates).  A classifier started without `classes` learns its
    first events once the second label has appeared: until then they wait in
    order (learning them then gives exactly the iterates of `partial_fit` on
    the same rows), and `predict_one` returns the one label seen, the prior.
    """

    def __init__(self, estimator, schema=None, delegate=True):
        self.estimator = estimator
        self.schema = _Schema() if schema is None else schema
        self.delegate = delegate    # use the learner's own learn_one when it has one
        self._pending = []          # (row, y, weight) waiting for the second label
        self._classes = None        # (classes_, classes_.tolist()) for the label of one event
        self._events = [None]       # the compiled one-event step (`_compiled_events`)
        self._kind = None           # (estimator, is a classifier, native, labelled)
        self._targets = (None, {})  # (classes_, {label: what `_sign` gave}) of the last labels

    def reset(self):
        self._pending = []
        self.schema.reset()

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_events"] = [None]       # compiled steps are rebuilt on demand
        state["_targets"] = (None, {})
        state.pop("lock", None)         # the estimator's lock lives in okl._locks
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.__dict__.setdefault("_targets", (None, {}))

    def __getattr__(self, name):
        """`lock`: the estimator's lock (okl._locks), looked up on first use and then kept
        as a plain attribute (read twice per event)."""
        if name != "lock":
            raise AttributeError(name)
        lock = self.lock = _locks.locked(self.estimator)
        return lock

    @property
    def native(self):
        return self._kinds()[2]

    def _kinds(self):
        """(estimator, is a classifier, has its own learn_one, learns labels), computed once
        per estimator.  A learner that is not a classifier learns labels when it maps them
        to its targets itself (`_event_target`: `PairwiseLearner(reducer="dissimilar")`)."""
        kind = self._kind
        if kind is None or kind[0] is not self.estimator:
            est = self.estimator
            classifier = is_classifier(est)
            kind = self._kind = (est, classifier, self.delegate and hasattr(est, "learn_one"),
                                 classifier or hasattr(est, "_event_target"))
        return kind

    def _fit_kwargs(self, sample_weight, classes=None):
        kwargs = {}
        method = self.estimator.partial_fit
        if classes is not None:
            kwargs["classes"] = classes
        if sample_weight is not None and (np.any(np.asarray(sample_weight) != 1.0)):
            if not _accepts(method, "sample_weight"):
                raise TypeError(f"{type(self.estimator).__name__}.partial_fit takes no "
                                "sample_weight in this version of okl.")
            kwargs["sample_weight"] = np.atleast_1d(np.asarray(sample_weight, dtype=np.float64))
        return kwargs

    def _drop_unknown(self, x):
        """With unknown_features="ignore", a dict event without the keys the learner never saw."""
        if getattr(self.schema, "unknown_features", "error") != "ignore" or type(x) is not dict:
            return x
        index = feature_index(self.estimator)
        if index is None:
            return x
        return {key: value for key, value in x.items() if key in index}

    def _fast(self):
        """The compiled one-event steps, when they apply (a fitted pointwise learner), or None.

        It also gives the step what its ready-row call needs: the learner's lock (once)
        and the labels with the codes seen so far (okl._core._pointwise.Events)."""
        est = self.estimator
        events = self._events[0]
        if events is None or not events.matches(est):
            compiled = getattr(est, "_compiled_events", None)
            events = None if compiled is None else compiled(self._events)
            if events is not None:
                self._sync_schema()
                events.set_lock(self.lock)
            if isinstance(est, OneEventMixin):      # the compiled learn_one's first try
                object.__setattr__(est, "_one_event_step", events)
            if events is None:
                return None
        if self._kinds()[3]:            # the ready-row entry: the labels it takes
            classes, memo = est.__dict__.get("classes_"), self._targets
            events.set_labels(classes, memo[1] if memo[0] is classes else None)
        else:
            events.set_labels(None)
        return events

    def _sync_schema(self):
        """Take the fitted width (and feature names) of a learner fitted elsewhere."""
        est, schema = self.estimator, self.schema
        if isinstance(schema, _EstimatorSchema):
            return
        if "n_features_in_" not in schema.__dict__ and "n_features_in_" in est.__dict__:
            names = est.__dict__.get("feature_names_in_")
            schema.commit(np.empty(est.n_features_in_),
                          None if names is None else tuple(names.tolist()))

    def _known_classes(self):
        """The two labels a classifier was built with (sorted, as Python objects), or None."""
        classes = getattr(self.estimator, "classes", None)
        return None if classes is None else np.unique(np.asarray(classes)).tolist()

    def _is_classifier(self):
        return self._kinds()[1]

    def _labels(self):
        """[negative, positive] as Python objects."""
        classes = self.estimator.classes_
        if self._classes is None or self._classes[0] is not classes:
            self._classes = (classes, classes.tolist())
        return self._classes[1]

    def _sign(self, y):
        """A label as the compiled step takes it (-1.0 / +1.0 by classes_, or a class index);
        an unseen label raises, or gives None where the estimator adds classes (okl._labels).

        The labels of the current classes_ are remembered (a dict lookup per event)."""
        classes = self.estimator.__dict__.get("classes_")
        memo = self._targets
        if memo[0] is classes and classes is not None:
            try:
                return memo[1][y]
            except (KeyError, TypeError):
                pass
        target = self._sign_of(y)
        if target is not None:
            events = self._events[0]
            if events is not None:      # the ready-row entry takes this label from now on
                events.remember(classes, y, target)
            if memo[0] is not classes:
                memo = self._targets = (classes, {})
            if len(memo[1]) < 64:
                try:
                    memo[1][y] = target
                except TypeError:
                    pass
        return target

    def _sign_of(self, y):
        target = getattr(self.estimator, "_event_target", None)
        if target is not None:
            return target(y)
        negative, positive = self._labels()
        if y == positive:
            return 1.0
        if y == negative:
            return -1.0
        raise ValueError(f"y contains labels [{y!r}] that are not in classes_ "
                         f"{[negative, positive]}. Pass every label in `classes` on the "
                         "first call to partial_fit.")

    def learn_one(self, x, y, sample_weight=1.0):
        est = self.estimator
        kind = self._kind
        if kind is None or kind[0] is not est:
            kind = self._kinds()
        _, classifier, native, labelled = kind
        if native:
            x = self._drop_unknown(x)
            if sample_weight == 1.0:
                est.learn_one(x, y)
            else:
                est.learn_one(x, y, sample_weight=sample_weight)
            return
        if not (type(sample_weight) in (float, int) and sample_weight == 1.0):
            sample_weight = check_weight(est, sample_weight)    # a number, as every path takes
            if sample_weight != 1.0:
                self._fit_kwargs(sample_weight)         # raises where partial_fit has none
        events = self._events[0]
        if events is None or not events.matches(est):
            events = self._fast()
        if events is not None and labelled:
            target = self._sign(y)
            if target is None:              # a new label: the one-row partial_fit adds it
                events = None
        if events is not None:
            names = None
            if not (type(x) is np.ndarray and x.dtype is F64 and x.ndim == 1
                    and x.flags.c_contiguous):
                x, names = self.schema.row(x, check_finite=False)  # the compiled step checks
            if labelled:
                pass                        # target: above
            elif type(y) is float and y - y == 0.0:        # a finite float
                target = y
            else:
                target = check_label(est, y)
            est._learn_event(events, x, target,
                             1.0 if sample_weight == 1.0 and type(sample_weight) in (float, int)
                             else check_weight(est, sample_weight))
            if names is not None:
                self.schema.commit(x, names)
            return
        row, names = self.schema.row(x)
        if (self._is_classifier() and not hasattr(est, "classes_")
                and getattr(est, "classes", None) is None and not hasattr(est, "_event_target")):
            labels = {label for _, label, _ in self._pending} | {y}
            if len(labels) < 2:
                self._pending.append((row, y, sample_weight))
                self.schema.commit(row, names)
                return
            rows = [r for r, _, _ in self._pending] + [row]
            ys = [label for _, label, _ in self._pending] + [y]
            ws = [w for _, _, w in self._pending] + [sample_weight]
            est.partial_fit(np.vstack(rows), np.asarray(ys),
                            **self._fit_kwargs(ws, classes=np.unique(np.asarray(ys))))
            self._pending = []
        else:
            est.partial_fit(row[None, :], np.asarray([y]), **self._fit_kwargs(sample_weight))
        self.schema.commit(row, names)
        self.schema.learned()
        self._build()

    def _build(self):
        """Build the compiled step after a one-row partial_fit (a learner's first events, a
        new label), so that the next event starts on it: building it costs about 100 us.

        The event is learned by then: a step that cannot be built is left to the next
        event, which tries again (and raises there, as before); a Ctrl-C here is raised
        after a completed call, the model holding the event."""
        est = self.estimator
        # the learner's own adapter: its first partial_fit started a fresh one
        adapter = est._one_event() if isinstance(est, OneEventMixin) else self
        try:
            adapter._fast()
        except BaseException as exc:
            adapter._events[0] = None
            if isinstance(est, OneEventMixin):
                object.__setattr__(est, "_one_event_step", None)
            if not isinstance(exc, Exception):
                raise

    def _row(self, x):
        row, _ = self.schema.row(x)
        return row[None, :]

    def _decision_fast(self, events, x):
        if not (type(x) is np.ndarray and x.dtype is F64 and x.ndim == 1
                and x.flags.c_contiguous):
            x, _ = self.schema.row(x, check_finite=False)      # the compiled step checks
        est = self.estimator
        return events.predict(x, est.t_, getattr(est, "intercept_", None))

    def predict_one(self, x):
        est = self.estimator
        kind = self._kind
        if kind is None or kind[0] is not est:
            kind = self._kinds()
        _, classifier, native, _ = kind
        if native:
            return est.predict_one(self._drop_unknown(x))
        events = self._events[0]
        if events is None or not events.matches(est):
            events = self._fast()
        if events is not None:
            if not (type(x) is np.ndarray and x.dtype is F64 and x.ndim == 1
                    and x.flags.c_contiguous):
                x, _ = self.schema.row(x, check_finite=False)      # the compiled step checks
            f = events.predict(x, est.t_, getattr(est, "intercept_", None))
            if classifier:
                if type(f) is float:            # two classes: the label of the sign
                    labels = self._classes
                    labels = (labels[1] if labels is not None and labels[0] is est.classes_
                              else self._labels())
                    if len(labels) == 2:
                        return labels[f > 0]
                label = getattr(est, "_event_label", None)
                return self._labels()[f > 0] if label is None else label(f)
            return f
        X = self._row(x)
        if not _is_fitted(est):
            if self._is_classifier():
                known = self._known_classes()
                if known is not None:           # f = 0 predicts the first class
                    return known[0]
                return self._pending[0][1] if self._pending else None
            return 0.0
        if not hasattr(est, "predict"):       # a ranker: its score of one row
            if not hasattr(est, "score_samples"):
                raise AttributeError(
                    f"{type(est).__name__} has no score of one event here: it scores pairs "
                    "of rows (e.g. pair_kernel='metric'); use decision_function(X1, X2).")
            return float(est.score_samples(X)[0])
        value = est.predict(X)[0]
        return value.item() if isinstance(value, np.generic) else value

    def decision_function_one(self, x):
        est = self.estimator
        if self.native and hasattr(est, "decision_function_one"):
            return est.decision_function_one(self._drop_unknown(x))
        events = self._fast()
        if events is not None and (hasattr(est, "predict") or hasattr(est, "score_samples")):
            return self._decision_fast(events, x)      # (not f(x, 0) of a metric ranker)
        X = self._row(x)
        if not _is_fitted(est):
            return 0.0
        if hasattr(est, "score_samples") and not hasattr(est, "predict"):
            return float(est.score_samples(X)[0])
        value = est.decision_function(X)[0]
        return value if np.ndim(value) else float(value)     # k scores for k >= 3 classes

    def proba_of(self, f):
        """{label: probability} of the score f (or the k scores) of a fitted classifier."""
        proba = getattr(self.estimator, "_event_proba", None)
        if proba is not None:
            return proba(f)
        p = _sigmoid(f)
        negative, positive = self._labels()
        return {negative: 1.0 - p, positive: p}

    def predict_proba_one(self, x):
        """{label: probability}, river's form; {} while no label is known."""
        est = self.estimator
        if self.native and hasattr(est, "predict_proba_one"):
            return est.predict_proba_one(self._drop_unknown(x))
        events = self._fast()
        if events is not None:
            if not hasattr(est, "predict_proba"):
                raise AttributeError(f"{type(est).__name__} has no predict_proba "
                                     f"(loss={getattr(est, 'loss', None)!r}).")
            return self.proba_of(self._decision_fast(events, x))
        X = self._row(x)
        if not _is_fitted(est):
            known = self._known_classes()
            if known is not None:               # f = 0: even odds
                return {known[0]: 0.5, known[1]: 0.5}
            return {self._pending[0][1]: 1.0} if self._pending else {}
        classes = getattr(est, "classes_", None)
        if classes is not None and len(classes) == 1:     # one class seen: it is certain
            label = classes[0]
            return {label.item() if isinstance(label, np.generic) else label: 1.0}
        p = est.predict_proba(X)[0]
        return {label.item() if isinstance(label, np.generic) else label: float(q)
                for label, q in zip(est.classes_, p)}


def _sigmoid(f):
    """1 / (1 + e^-f) without overflow."""
    if f >= 0:
        return 1.0 / (1.0 + math.exp(-f))
    e = math.exp(f)
    return e / (1.0 + e)


def rebound(obj):
    """A new `_attr_version` for an okl learner whose ``__dict__`` was written directly (a
    restore): its one-event step then compares every object again."""
    if isinstance(obj, OneEventMixin):
        object.__setattr__(obj, "_attr_version", next(_VERSIONS))


class OneEventMixin(_locks.LockedState):
    """learn_one / predict_one / decision_function_one / predict_proba_one on the estimator.

    An event is a dict of feature name -> value or a 1-D array-like; the
    first call fixes the feature order.  The iterates are those of
    `partial_fit` on the same rows; a call that raises leaves the model as
    it was.  Before any learning `predict_one` returns the prior (0, or for
    a classifier the one label seen so far, or None).
    """

    # not in __dict__: not model state, never saved or copied.  `_one_event_step` is the
    # compiled step the adapter last gave (`EventAdapter._fast`), for learn_one / predict_one
    __slots__ = ("_attr_version", "_one_event_step")

    def __setattr__(self, name, value):
        """Bind, and give the learner a new `_attr_version`: the compiled one-event step
        compares all the objects it was built from only when the version changed
        (`okl._core._pointwise.Events.cmatches`)."""
        object.__setattr__(self, name, value)
        object.__setattr__(self, "_attr_version", next(_VERSIONS))

    def __delattr__(self, name):
        object.__delattr__(self, name)
        object.__setattr__(self, "_attr_version", next(_VERSIONS))

    # pickling, copies and get_params / set_params run under the lock (`_locks.LockedState`;
    # its __getstate__ also stands in for scikit-learn's, which refuses a class with __slots__)

    def __setstate__(self, state):
        super().__setstate__(state)
        rebound(self)

    def _one_event(self):
        adapter = self.__dict__.get("_one_event_state")
        if adapter is None or adapter.estimator is not self:
            adapter = self.__dict__["_one_event_state"] = EventAdapter(
                self, _EstimatorSchema(self), delegate=False)
        return adapter

    # the compiled step in one call, else the adapter: compiled themselves, since the two
    # Python frames were 0.3-0.4 us of an event of 2.5 us (docs/streaming.md)
    learn_one = _pointwise.learn_one
    predict_one = _pointwise.predict_one

    def _score_one(self, x):
        """f(x) of one event (the k scores with k classes; 0 before any learning): the
        compiled step's in one call (`Events.decision_ready`), else the adapter's."""
        step = getattr(self, "_one_event_step", None)
        if step is not None:
            f = step.decision_ready(self, x)
            if f is not _pointwise.MISS:
                return f
        events = self._one_event()
        with events.lock:
            return events.decision_function_one(x)

    @available_if(lambda self: hasattr(self, "decision_function"))
    def decision_function_one(self, x):
        """f(x) for one event (0 before any learning)."""
        return self._score_one(x)

    @available_if(lambda self: hasattr(self, "predict_proba"))
    def predict_proba_one(self, x):
        """{label: probability} for one event ({} while no label is known): from the
        compiled step's score where it serves (`decision_function_one`)."""
        step = getattr(self, "_one_event_step", None)
        if step is not None:
            f = step.decision_ready(self, x)
            if f is not _pointwise.MISS:
                return self._one_event().proba_of(f)
        events = self._one_event()
        with events.lock:
            return events.predict_proba_one(x)
