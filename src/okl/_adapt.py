"""What the adapting learners share: forgetting and a change detector (docs/drift.md).

The step keeps the drift state (`okl._numpy.drift`: the schedule's clock, Page-Hinkley's
statistics, the changes so far) in the learner's `_drift_state`, a tuple that okl.save
stores and okl.load checks here.  A learner keeps none while it neither forgets nor
detects (the clock is then t_).  A detector outside the step (river's, any object with
``update`` and ``drift_detected``) runs on the Python path: the rows one at a time, each
step's loss to a copy of the detector (`drift_detector_`), and a change it sees is taken
by the next step (`pending`).
"""
import copy

import numpy as np
from sklearn.base import is_classifier
from sklearn.utils.validation import check_is_fitted

from okl._numpy.drift import FIELDS, active, read_state, state_tuple
from okl.drift import drift_spec, outside_detector


class AdaptMixin:
    """`forgetting` and `drift_detector` for a learner (before `OnlineLearner` in its bases)."""

    def _drift(self):
        """The `Drift` record of the compiled step (`okl.drift.drift_spec`)."""
        return drift_spec(self.forgetting, self.drift_detector)

    def _watched(self):
        """The `Drift` record for a loop that watches only when asked (PA, CoefReg): None
        while the learner neither forgets nor detects and keeps no drift state."""
        drift = self._drift()
        return drift if active(drift) or "_drift_state" in self.__dict__ else None

    def _outside(self):
        """Whether the detector runs outside the compiled step (the Python path)."""
        return outside_detector(self.drift_detector)

    def _drift_state_now(self):
        """The drift state the next step reads (a dict)."""
        return read_state(self.__dict__.get("_drift_state"), self.__dict__.get("t_", 0))

    def _store_drift(self, drift):
        """Keep the drift state a step returned (a dict or a tuple); none while the learner
        neither forgets nor detects and never did."""
        if drift is None:
            return
        d = self.__dict__
        if "_drift_state" in d or active(self._drift()):
            d["_drift_state"] = drift if isinstance(drift, tuple) else state_tuple(drift)

    @property
    def n_drifts_(self):
        """The changes detected so far (by the compiled detector or the one outside)."""
        check_is_fitted(self, "t_")
        state = self.__dict__.get("_drift_state")
        return 0 if state is None else int(state[FIELDS.index("changes")])

    def _start_drift(self):
        """A fresh stream: no drift state, no copy of an outside detector."""
        self.__dict__.pop("_drift_state", None)
        self.__dict__.pop("drift_detector_", None)

    def _learn_all(self, X, y, weight, keep_scores=True):
        if not self._outside():
            return super()._learn_all(X, y, weight, keep_scores)
        d = self.__dict__
        detector = copy.deepcopy(d.get("drift_detector_", self.drift_detector))
        self.drift_detector_ = detector     # a new object: the template's undo keeps the old
        parts = []
        for i in range(X.shape[0]):
            rows = slice(i, i + 1)
            w = None if weight is None else weight[rows]
            t, scale = d.get("t_", 0), self._drift_scale(X[rows], w)
            scores = super()._learn_all(X[rows], y[rows], w)
            parts.append(scores)
            if d.get("t_", 0) == t or scale is None:    # not learned (a zero weight), not watched
                continue
            detector.update(self._drift_loss(np.asarray(scores)[0], y[i], scale))
            if detector.drift_detected:
                state = self._drift_state_now()
                state["pending"] = 1.0
                self._drift_state = state_tuple(state)
        return np.concatenate(parts) if keep_scores and parts else None

    def _drift_scale(self, X, weight):
        """The scale of a regressor's absolute errors on the row X (`weight`: None or its
        weight) before its step: the targets' mean absolute deviation so far (0 before any
        step); None: the step is not watched."""
        d = self.__dict__
        t = d.get("t_", 0)
        return d.get("dev_", 0.0) / t if t else 0.0

    def _drift_loss(self, score, y, scale):
        """The loss a detector watches for a step's score (f, or k scores) and target y (as
        the loop takes it): a mistake, or ``|y - f| / scale``, as the compiled step."""
        if np.ndim(score):
            return float(int(np.argmax(score)) != int(y))
        if is_classifier(self):
            return 1.0 if y * score <= 0.0 else 0.0
        return abs(y - score) / scale if scale > 0.0 else 0.0

    def _check_drift_state(self, check):
        """okl.load's check of `_drift_state` (`okl._numpy.drift.FIELDS`)."""
        if "_drift_state" not in check.attrs:
            return
        state = check.attrs["_drift_state"]
        if (not isinstance(state, (list, tuple)) or len(state) != len(FIELDS)
                or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                           and np.isfinite(v) for v in state)):
            check.fail(f"_drift_state must hold {len(FIELDS)} finite numbers {FIELDS}")
        values = dict(zip(FIELDS, (float(v) for v in state)))
        if (values["tau"] < 0 or values["n"] < 0 or values["changes"] < 0
                or values["changes"] != int(values["changes"]) or values["n"] != int(values["n"])
                or values["m2"] < 0 or values["pending"] not in (0.0, 1.0)
                or values["low"] > 0 or values["cusum"] < values["low"]):
            check.fail("_drift_state must have tau >= 0, whole n >= 0 and changes >= 0, "
                       "m2 >= 0, pending 0 or 1, and low <= min(cusum, 0)")
        check.out["_drift_state"] = tuple(values[name] for name in FIELDS)
