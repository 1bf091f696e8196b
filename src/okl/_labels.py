"""Labels of okl's classifiers: `classes_`, their discovery on a stream, predictions.

The rules (docs/multiclass.md, section 1):

- `classes_` is sorted.  `classes=` (constructor, or the first `partial_fit`)
  fixes it; without it, `fit` takes the labels of y and `partial_fit` /
  `learn_one` add a label seen for the first time at its sorted place (river's
  rule; scikit-learn's "classes on the first partial_fit" is relaxed).
- Labels are numbers or strings, one kind per stream: NaN, an unhashable or
  other object, a label of the other kind, duplicates in `classes=` raise and
  leave the model as it was.
- k = 1: the model predicts the one class and learns nothing (no boundary to
  learn: its iterates start with the second label).  k = 2: the binary model
  and rule of the papers, y in {-1, +1}, f scalar, classes_[1] is +1.
  k >= 3: a score per class, y is the class index.
- A chunk is learned in segments cut at each new label, so `partial_fit` on a
  chunk and `learn_one` on its rows give the same iterates.

The estimator supplies the model hooks:

``_add_class(position)``  a zero column for a new class inserted at `position`
                          of the model's current classes (`classes_` is updated
                          after it returns); called while the model has k >= 2
                          classes (k = 2: convert the binary model exactly,
                          s = (-f/2, f/2)); a fresh fit of k classes calls it for
                          positions 2, ..., k - 1.  It may rebind model objects
                          (the template undoes rebinding), never change a
                          checkpointed one in place.  `_multiclass = True` says
                          the estimator has it.
``_learn(X, y, weight)``  y as encoded here (+-1 for k = 2, intp indices for k >= 3)
``_decision(X)``          f of shape (n,) for k <= 2, scores (n, k) for k >= 3
"""
import math
import numbers
import weakref

import numpy as np
from scipy.special import expit, log_expit, log_softmax, softmax
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import column_or_1d

from okl import _locks
from okl._base import check_X_y
from okl._rows import as_float
from okl.losses import loss_value

NUMBER, TEXT = "numbers", "strings"
_CODES = {}         # id(classes_) -> (weakref to it, {label: code}, string labels): one event's code


def _is_logistic(estimator):
    return estimator.loss == "logistic"


def label_kind(values, name="y"):
    """NUMBER or TEXT for a 1-D array of labels; a clear ValueError for anything else."""
    kind = values.dtype.kind
    if kind in "biuf":
        if kind == "f" and not np.all(np.isfinite(values)):
            raise ValueError(f"{name} holds NaN or infinity, which cannot be a class label.")
        return NUMBER
    if kind in "US":
        return TEXT
    if kind == "O":
        items = values.tolist()
        if all(isinstance(v, str) for v in items):
            return TEXT
        if all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in items):
            return label_kind(np.array([as_float(v) for v in items]), name)   # 10**400: inf
        odd = [v for v in items if not isinstance(v, (str, numbers.Real))]
        if not odd:
            raise ValueError(f"{name} mixes numbers and strings; the labels of one stream are "
                             "all numbers or all strings.")
        raise ValueError(f"{name} holds {odd[0]!r} (a {type(odd[0]).__name__}), which cannot be a class "
                         "label: labels are numbers or strings.")
    raise ValueError(f"{name} has dtype {values.dtype}: class labels are numbers or strings.")


def as_labels(y, name="y"):
    """y as a 1-D ndarray of labels (numbers or strings) and its kind; clear errors otherwise."""
    try:
        values = np.asarray(y)
    except (TypeError, ValueError):
        values = None
    if values is None or values.ndim != 1:
        if values is not None and values.ndim == 0:
            values = values.reshape(1)
        else:
            raise ValueError(f"{name} must be a 1-D sequence of labels (numbers or strings), got "
                             f"{type(y).__name__} {str(y)[:60]}.")
    if values.dtype.kind == "O":
        items = values.tolist()
        if all(isinstance(v, str) for v in items):
            values = np.asarray(items, dtype=str)
    kind = label_kind(values, name)
    if values.dtype.kind == "O":
        values = np.array([as_float(v) for v in values.tolist()])
    return values, kind


def check_classes(classes, name="classes"):
    """The labels of `classes=`, sorted; duplicates, fewer than two, NaN raise."""
    values, _ = as_labels(classes, name)
    if len(np.unique(values)) != len(values):
        raise ValueError(f"{name}={values.tolist()} repeats a label; each class is listed once.")
    if len(values) < 2:
        raise ValueError(f"{name}={values.tolist()} must list at least two labels.")
    return np.sort(values)


class LabelsMixin:
    """The classifier side of the `OnlineLearner` template: labels, discovery, predictions.

    See the module docstring and docs/multiclass.md.  Attributes it keeps:
    `classes_` (sorted) and `fixed_classes_` (True when `classes=` fixed them).
    """

    #: whether the estimator's model can take a third class (its `_add_class` does)
    _multiclass = False

    def fit(self, X, y):
        """Learn the rows of X in order, from a fresh model (one online pass).

        The classes are the constructor's `classes`, else the labels of y.
        """
        return self._fit(X, y)

    def _fit(self, X, y, sample_weight=None):
        self._progressive_scores(X, y, reset=True, sample_weight=sample_weight,
                                 keep_scores=False)
        return self

    def partial_fit(self, X, y, classes=None):
        """Continue the stream with the rows of X, in order.

        Parameters
        ----------
        X : array of shape (n_samples, n_features)
        y : array of shape (n_samples,)
        classes : array of labels, optional
            On the first call, fixes `classes_` (a label outside it then
            raises).  Without it (nor the constructor's `classes`), a label
            seen for the first time adds a class (docs/multiclass.md).

        A call that raises (bad input, a label not in fixed classes, divergence)
        leaves the model exactly as it was.
        """
        self._progressive_scores(X, y, classes, keep_scores=False)
        return self

    def _check_X_y(self, X, y, reset):
        """Validated X; y as a 1-D array of labels (checked by `_targets`)."""
        if y is None or isinstance(y, (str, bytes)) or not hasattr(y, "__len__"):
            return check_X_y(self, X, y, reset=reset, y_numeric=False)
        if np.ndim(y) == 2 and np.shape(y)[1] == 1:
            y = column_or_1d(y, warn=True)
        X, _ = check_X_y(self, X, np.zeros(len(y)), reset=reset)
        return X, y

    # -- labels ----------------------------------------------------------------------------

    def _targets(self, y, classes, first):
        """Check the labels; fix or start `classes_` on the first call.  Returns the labels:
        `_learn_all` encodes them segment by segment (new labels cut segments)."""
        labels, kind = as_labels(y)
        if first and kind == NUMBER and labels.dtype.kind == "f":
            check_classification_targets(labels)      # refuses continuous targets (scikit-learn)
        if first:
            fixed = self.__dict__.get("classes") if classes is None else classes
            if fixed is not None:
                self.classes_ = check_classes(fixed)
                self.fixed_classes_ = True
                if not self._multiclass and len(self.classes_) > 2:
                    self._refuse_multiclass(self.classes_)
            else:
                start = labels if self._fresh_fit else labels[:1]
                self.classes_ = np.unique(start)
                self.fixed_classes_ = False
                if not self._multiclass and len(self.classes_) > 2:
                    self._refuse_multiclass(self.classes_)
            for position in range(2, len(self.classes_)):    # a fresh model of k classes
                self._add_class(position)
        elif classes is not None and not np.array_equal(check_classes(classes), self.classes_):
            raise ValueError(
                f"classes={np.sort(np.asarray(classes)).tolist()} differs from classes_ "
                f"{self.classes_.tolist()} fixed by the first call; call fit to start over.")
        if len(self.classes_) and label_kind(self.classes_, "classes_") != kind:
            raise ValueError(
                f"y holds {kind}, but the classes of this stream are {label_kind(self.classes_)} "
                f"({self.classes_.tolist()[:10]}): a stream keeps one kind of label.")
        if self.__dict__.get("fixed_classes_", False):   # absent in older files
            self._encode(labels)            # raises on a label outside the fixed classes
        return labels

    def _unhonoured(self):
        """`OnlineLearner._unhonoured`, and `classes` set to other labels than the fitted
        classes_ (okl.load checks that they agree)."""
        out = super()._unhonoured()
        problem = self._classes_problem(self.__dict__.get("classes"))
        if problem:
            out.append(problem)
        return out

    def _classes_problem(self, given):
        """The words for `classes=given` on the fitted model, if it cannot take them (other
        labels than its classes_); "" if it can (None, the same labels, or not fitted)."""
        classes = self.__dict__.get("classes_")
        if given is None or classes is None or "t_" not in self.__dict__:
            return ""
        try:
            same = np.array_equal(np.sort(np.asarray(given)), classes)
        except (TypeError, ValueError):
            same = False
        return "" if same else (f"classes={np.asarray(given).tolist()!r} (fitted with "
                                f"classes_ {classes.tolist()!r})")

    def set_params(self, **params):
        """Set the parameters (scikit-learn's `set_params`).  On a fitted model `classes`
        other than its classes_ is refused here, the model unchanged: it could not learn nor
        save with them (docs/guide/persistence.md)."""
        with _locks.locked(self):
            problem = self._classes_problem(params.get("classes"))
            if problem:
                raise ValueError(
                    f"{type(self).__name__}.set_params cannot change {problem}: the fitted "
                    "model is built on its classes_. Set classes on a fresh model "
                    "(sklearn.base.clone(model).set_params(classes=...)) and fit it.")
            return super().set_params(**params)

    @property
    def _fresh_fit(self):
        return self.__dict__.get("_fitting", False)

    def _progressive_scores(self, X, y, classes=None, reset=False, sample_weight=None,
                            keep_scores=True):
        self._fitting = reset
        try:
            return super()._progressive_scores(X, y, classes, reset, sample_weight, keep_scores)
        finally:
            self.__dict__.pop("_fitting", None)

    def _refuse_multiclass(self, classes):
        name = type(self).__name__
        raise ValueError(
            f"Only binary classification is supported by {name}: it got {len(classes)} "
            f"classes ({classes.tolist()[:10]}). For more classes wrap it: "
            f"sklearn.multiclass.OneVsRestClassifier({name}(...)), or use "
            "okl.OnlineKernelClassifier, which learns any number of classes natively.")

    def _insert_class(self, label):
        """Add `label` to `classes_` at its sorted place; the model gets a zero column."""
        classes = self.classes_
        position = int(np.searchsorted(classes, label))
        new = np.asarray([label])
        if new.dtype.kind == "f":
            check_classification_targets(new)         # a new class is discrete (scikit-learn)
        grown = np.concatenate([classes[:position], new, classes[position:]])  # dtype promoted
        if len(classes) >= 2:
            if not self._multiclass:
                self._refuse_multiclass(grown)
            self._add_class(position)
        self.classes_ = grown

    def _add_class(self, position):
        raise NotImplementedError

    def _encode(self, y):
        """Labels as the loops take them: +-1 floats (k = 2), intp indices (k >= 3), 0 (k = 1)."""
        classes = self.classes_
        k = len(classes)
        if k == 2:
            positive = y == classes[1]
            if np.all(positive | (y == classes[0])):
                return np.where(positive, 1.0, -1.0)
        else:
            index = np.minimum(np.searchsorted(classes, y), k - 1)
            if np.all(classes[index] == y):
                return index.astype(np.intp) if k > 2 else np.zeros(len(y))
        unseen = np.setdiff1d(np.unique(y), classes)
        raise ValueError(
            f"y contains labels {unseen.tolist()} that are not in classes_ "
            f"{classes.tolist()}, fixed by `classes`. Pass every label in `classes`, or none "
            "to let the stream add classes as they appear.")

    def _new_labels(self, y):
        """[(row, label)]: the rows where a label not yet in classes_ first appears."""
        if self.__dict__.get("fixed_classes_", False):
            return []
        known = set(self.classes_.tolist())
        if len(y) > 64:
            fresh = np.setdiff1d(np.unique(y), self.classes_)
            if not len(fresh):
                return []
        out = []
        for i, label in enumerate(y.tolist()):
            if label not in known:
                known.add(label)
                out.append((i, label))
        return out

    def _learn_all(self, X, y, weight, keep_scores=True):
        """Learn the chunk in segments cut where a new label appears (docs/multiclass.md);
        without `keep_scores`, nothing of a segment is kept once it is learned."""
        cuts = self._new_labels(y)
        if not cuts:
            return self._learn_segment(X, y, weight, keep_scores)
        n = len(y)
        parts = []                      # (rows, classes during them, scores, new label)
        bounds = [row for row, _ in cuts] + [n]
        if bounds[0] > 0:
            rows = slice(0, bounds[0])
            scores = self._learn_segment(X[rows], y[rows],
                                         None if weight is None else weight[rows], keep_scores)
            if keep_scores:
                parts.append((rows, self.classes_, scores, None))
        for (row, label), end in zip(cuts, bounds[1:]):
            self._insert_class(label)
            rows = slice(row, end)
            scores = self._learn_segment(X[rows], y[rows],
                                         None if weight is None else weight[rows], keep_scores)
            if keep_scores:
                parts.append((rows, self.classes_, scores, label))
        return self._join(parts, n) if keep_scores else None

    def _learn_segment(self, X, y, weight, keep_scores=True):
        y = self._encode(y)
        if len(self.classes_) < 2:
            return np.zeros(len(y)) if keep_scores else None   # one class: nothing to learn
        return super()._learn_all(X, y, weight, keep_scores)

    def _join(self, parts, n):
        """The scores of the segments in the form of the final classes_.

        k <= 2: f of every row (0 while one class was known).  k >= 3: (n, k)
        scores, -inf for a class not known when the row was predicted (its
        probability was 0), binary rows as (-f/2, f/2) (docs/multiclass.md).
        """
        classes = self.classes_
        k = len(classes)
        if k <= 2:
            return np.concatenate([np.asarray(s, dtype=np.float64) for _, _, s, _ in parts])
        out = np.full((n, k), -np.inf)
        for rows, known, scores, label in parts:
            cols = np.searchsorted(classes, known)
            if len(known) >= 3:
                out[rows][:, cols] = scores
            elif len(known) == 2:
                out[rows, cols[0]] = -0.5 * scores
                out[rows, cols[1]] = 0.5 * scores
            else:
                out[rows, cols[0]] = 0.0
            if label is not None:
                out[rows.start, np.searchsorted(classes, label)] = -np.inf
        return out

    # -- one event (okl._one_event) ----------------------------------------------------------

    def _labels_list(self):
        """classes_ as Python objects (cached with the label codes)."""
        classes = self.classes_
        entry = _CODES.get(id(classes))
        if entry is None or entry[0]() is not classes:
            self._event_target(None)
            entry = _CODES[id(classes)]
        return entry[3]

    def _event_target(self, y):
        """One label as the compiled step takes it (+-1.0, or the class index as a float), or
        None when it is not a known class (the one-row partial_fit path adds or refuses it)."""
        classes = self.classes_
        entry = _CODES.get(id(classes))
        if entry is None or entry[0]() is not classes:
            labels = classes.tolist()
            codes = ({label: (1.0 if i else -1.0) for i, label in enumerate(labels)}
                     if len(labels) == 2 else {label: float(i) for i, label in enumerate(labels)})
            if len(_CODES) > 256:
                _CODES.clear()
            entry = _CODES[id(classes)] = (weakref.ref(classes), codes, classes.dtype.kind in "US",
                                           labels)
        if isinstance(y, str) != entry[2]:
            return None
        try:
            return entry[1].get(y)
        except TypeError:               # unhashable: the generic path names it
            return None

    def _event_label(self, f):
        """The label of one decision value (a float, or k scores)."""
        labels = self._labels_list()
        if len(labels) == 1:
            return labels[0]
        return labels[int(f.argmax())] if type(f) is np.ndarray else labels[f > 0]

    def _event_proba(self, f):
        """{label: probability} of one decision value (loss="logistic"): scipy's expit and
        softmax, computed as they compute them (exp(f - max f) / sum), in scalar Python
        for one event (NumPy's call overhead was 7 us of a 10-class event)."""
        labels = self._labels_list()
        if len(labels) == 1:
            return {labels[0]: 1.0}
        if not isinstance(f, float):
            scores = f.tolist() if isinstance(f, np.ndarray) else [float(v) for v in f]
            top = max(scores)
            e = [math.exp(v - top) for v in scores]
            total = 0.0
            for v in e:             # in order, as the compiled conformal sets add them
                total += v
            return dict(zip(labels, [v / total for v in e]))
        try:
            p = 1.0 / (1.0 + math.exp(-f))         # expit(f)
        except OverflowError:
            p = 0.0
        return {labels[0]: 1.0 - p, labels[1]: p}

    # -- progressive scores (okl.evaluation) --------------------------------------------------

    def _scores_proba(self, scores):
        """P(class | x) behind progressive scores of the current classes_ (loss="logistic")."""
        scores = np.asarray(scores, dtype=np.float64)
        if scores.ndim == 2:
            return softmax(scores, axis=1)
        if len(self.classes_) == 1:
            return np.ones((len(scores), 1))
        return np.column_stack([expit(-scores), expit(scores)])

    def _align_scores(self, parts):
        """Progressive scores of several calls, [(scores, classes_ after the call)], in the
        form of the current classes_ (as `_join` does within a call)."""
        classes = self.classes_
        if len(classes) <= 2:
            return np.concatenate([np.asarray(s, dtype=np.float64) for s, _ in parts])
        out = []
        for scores, known in parts:
            cols = np.searchsorted(classes, known)
            block = np.full((len(scores), len(classes)), -np.inf)
            if len(known) >= 3:
                block[:, cols] = scores
            elif len(known) == 2:
                block[:, cols[0]], block[:, cols[1]] = -0.5 * scores, 0.5 * scores
            else:
                block[:, cols[0]] = 0.0
            out.append(block)
        return np.concatenate(out)

    # -- predictions -----------------------------------------------------------------------

    def _predictions(self, scores):
        """The label of each score: argmax of k scores, classes_[1] where f > 0 (k = 2)."""
        scores = np.asarray(scores)
        classes = self.classes_
        if len(classes) == 1:
            return np.repeat(classes, len(scores))
        if scores.ndim == 2:
            return classes[np.argmax(scores, axis=1)]
        return classes[(scores > 0).astype(np.intp)]

    def _stream_loss(self, scores, y):
        """The training loss of every prediction of the stream (multiclass: docs/multiclass.md;
        a class unknown at a row scores 0 there, as its new zero column does)."""
        scores = np.asarray(scores, dtype=np.float64)
        if scores.ndim == 2:
            index = np.searchsorted(self.classes_, np.asarray(y))
            return multiclass_loss(self.loss, np.where(np.isfinite(scores), scores, 0.0), index)
        if len(self.classes_) < 2:
            return np.zeros(len(scores))
        margins = self._encode(np.asarray(y)) * scores
        return loss_value(self.loss, margins)

    def decision_function(self, X):
        """f(x) for every row of X: shape (n,) with two classes (f > 0 predicts classes_[1]),
        (n, k) scores with k >= 3 classes (the largest predicts)."""
        return self._decision(X)

    def predict(self, X):
        """The label of every row of X (docs/multiclass.md)."""
        return self._predictions(self._decision(X))

    @available_if(_is_logistic)
    def predict_proba(self, X):
        """P(class | x), one column per class of `classes_`.

        Only with loss="logistic": the logistic s(f) for two classes, the
        softmax of the k scores for more (docs/multiclass.md, section 3).
        """
        f = self._decision(X)
        if f.ndim == 2:
            return softmax(f, axis=1)
        if len(self.classes_) == 1:
            return np.ones((len(f), 1))
        return np.column_stack([expit(-f), expit(f)])

    @available_if(_is_logistic)
    def predict_log_proba(self, X):
        """The logarithm of `predict_proba`, computed without cancellation."""
        f = self._decision(X)
        if f.ndim == 2:
            return log_softmax(f, axis=1)
        if len(self.classes_) == 1:
            return np.zeros((len(f), 1))
        return np.column_stack([log_expit(-f), log_expit(f)])

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = False
        tags.classifier_tags.multi_class = self._multiclass
        return tags


def multiclass_loss(loss, scores, index):
    """The multiclass loss of each row: scores (n, k), the true class indices (n,).

    "hinge": Crammer-Singer, max(0, 1 - (s_y - max_{j != y} s_j));
    "logistic": the softmax cross-entropy, logsumexp(s) - s_y (docs/multiclass.md).
    """
    rows = np.arange(len(index))
    true = scores[rows, index]
    if loss == "logistic":
        return -log_softmax(scores, axis=1)[rows, index]
    other = scores.copy()
    other[rows, index] = -np.inf
    margin = true - other.max(axis=1)
    if loss == "hinge":
        return np.maximum(0.0, 1.0 - margin)
    raise ValueError(f"loss={loss!r} has no multiclass form; use 'hinge' or 'logistic'.")
