"""Labels, fit / partial_fit and predictions shared by okl's binary classifiers.

`classes_` is sorted; `classes_[1]` is the positive class (+1).  Learners
see y in {-1, +1}; predictions map back through `classes_`.
"""
import numpy as np
from scipy.special import expit, log_expit
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets

from okl._base import check_X_y
from okl.losses import loss_value


def _is_logistic(estimator):
    return estimator.loss == "logistic"


class BinaryClassifierMixin:
    """The classifier side of the `OnlineLearner` template (labels, predictions)."""

    def fit(self, X, y):
        """Learn the rows of X in order, from a fresh model (one online pass).

        The two labels are the constructor's `classes`, else those of y.
        """
        return self._fit(X, y)

    def _fit(self, X, y, sample_weight=None):
        classes = y if getattr(self, "classes", None) is None else self.classes
        self._progressive_scores(X, y, classes=classes, reset=True, sample_weight=sample_weight)
        return self

    def partial_fit(self, X, y, classes=None):
        """Continue the stream with the rows of X, in order.

        Parameters
        ----------
        X : array of shape (n_samples, n_features)
        y : array of shape (n_samples,)
        classes : array of the two labels
            Required on the first call (as in scikit-learn) unless the
            estimator was built with `classes`; optional and checked afterwards.

        A call that raises (bad input, a label not in `classes_`, divergence)
        leaves the model exactly as it was.
        """
        self._progressive_scores(X, y, classes)
        return self

    def _check_X_y(self, X, y, reset):
        return check_X_y(self, X, y, reset=reset, y_numeric=False)

    def _targets(self, y, classes, first):
        """y as floats in {-1, +1}; fixes `classes_` on the first call."""
        name = type(self).__name__
        if first and classes is None:
            classes = getattr(self, "classes", None)
        if first:
            if classes is None:
                raise ValueError(
                    f"classes must be passed on the first call to partial_fit of {name}, e.g. "
                    "partial_fit(X, y, classes=[0, 1]), or to the constructor, e.g. "
                    f"{name}(classes=[0, 1]): a stream may not show both labels in its first "
                    "chunk.")
            check_classification_targets(y)
            classes = np.unique(np.asarray(classes))
            if len(classes) > 2:
                raise ValueError(
                    f"Only binary classification is supported: {name} got {len(classes)} "
                    f"classes ({classes.tolist()}). For more classes wrap it: "
                    f"sklearn.multiclass.OneVsRestClassifier({name}(...)).")
            if len(classes) < 2:
                raise ValueError(
                    f"{name} needs two classes to learn, but the data has only one class: "
                    f"{classes.tolist()}. Pass both labels in `classes`.")
            self.classes_ = classes
        elif classes is not None and not np.array_equal(np.unique(np.asarray(classes)),
                                                        self.classes_):
            raise ValueError(
                f"classes={np.unique(classes).tolist()} differs from classes_ "
                f"{self.classes_.tolist()} fixed by the first call; call fit to start over.")
        return self._encode(y)

    def _encode(self, y):
        """y as floats in {-1, +1}; labels outside `classes_` raise, naming the cure."""
        positive = y == self.classes_[1]
        if np.all(positive | (y == self.classes_[0])):
            return np.where(positive, 1.0, -1.0)
        check_classification_targets(y)
        unseen = np.setdiff1d(np.unique(y), self.classes_)
        raise ValueError(
            f"y contains labels {unseen.tolist()} that are not in classes_ "
            f"{self.classes_.tolist()}. Pass every label in `classes` on the first "
            "call to partial_fit.")

    def _predictions(self, scores):
        """The label of each decision value: classes_[1] where f(x) > 0."""
        return self.classes_[(np.asarray(scores) > 0).astype(np.intp)]

    def _stream_loss(self, scores, y):
        """phi(y_t f_t(x_t)) for every prediction of the stream."""
        margins = self._encode(np.asarray(y)) * np.asarray(scores, dtype=np.float64)
        return loss_value(self.loss, margins)

    def decision_function(self, X):
        """f(x) for every row of X; f(x) > 0 predicts classes_[1]."""
        return self._decision(X)

    def predict(self, X):
        """The label of every row of X: classes_[1] where f(x) > 0, else classes_[0]."""
        return self._predictions(self._decision(X))

    @available_if(_is_logistic)
    def predict_proba(self, X):
        """[P(classes_[0] | x), P(classes_[1] | x)] = [s(-f(x)), s(f(x))], s(u) = 1 / (1 + e^-u).

        Only with loss="logistic", whose minimiser is the log-odds.
        """
        f = self._decision(X)
        return np.column_stack([expit(-f), expit(f)])

    @available_if(_is_logistic)
    def predict_log_proba(self, X):
        """The logarithm of `predict_proba`, computed without cancellation."""
        f = self._decision(X)
        return np.column_stack([log_expit(-f), log_expit(f)])

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = False
        tags.classifier_tags.multi_class = False
        return tags
