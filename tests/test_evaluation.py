"""okl.evaluation.progressive_validation on streams: metrics, generic path, printing, plots."""
import numpy as np
import pytest
from scipy.special import expit
from sklearn import metrics as skm
from sklearn.linear_model import SGDClassifier, SGDRegressor
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from okl import OnlineKernelClassifier, OnlineKernelRegressor, PairwiseLearner
from okl.evaluation import PinballLoss, evaluate, progressive_validation
from okl.stream import iter_array, iter_csv


def regression_data(n=400, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, (n, 2))
    return X, np.sin(2 * X[:, 0]) + X[:, 1] + 0.3 * rng.standard_normal(n)


class Predictor:
    """Only partial_fit and predict: evaluation must take its generic path."""

    def __init__(self, learner):
        self.learner = learner

    def partial_fit(self, X, y):
        self.learner.partial_fit(X, y)
        return self

    def predict(self, X):
        return self.learner.predict(X)


class ScaledLearner(Predictor):
    """A streaming chain: a running StandardScaler, then a learner."""

    def __init__(self, learner):
        super().__init__(learner)
        self.scaler = StandardScaler()

    def partial_fit(self, X, y):
        self.learner.partial_fit(self.scaler.partial_fit(X).transform(X), y)
        return self

    def predict(self, X):
        return self.learner.predict(self.scaler.transform(X))


def test_running_metrics_match_sklearn_at_every_report_point():
    X, y = regression_data()
    result = progressive_validation(
        OnlineKernelRegressor(gamma=1.0), iter_array(X, y),
        metrics=["mae", "mse", "rmse", skm.r2_score, PinballLoss(0.9), "coverage"],
        print_every=100)
    p = result.predictions
    assert list(result.steps) == [1, 2, 4, 8, 16, 32, 64, 100, 128, 200, 256, 300, 400]
    for i, t in enumerate(result.steps[2:], start=2):
        expected = {"mae": skm.mean_absolute_error(y[:t], p[:t]),
                    "mse": skm.mean_squared_error(y[:t], p[:t]),
                    "rmse": skm.root_mean_squared_error(y[:t], p[:t]),
                    "r2_score": skm.r2_score(y[:t], p[:t]),
                    "pinball(0.9)": skm.mean_pinball_loss(y[:t], p[:t], alpha=0.9),
                    "coverage": np.mean(y[:t] <= p[:t])}
        for name, value in expected.items():
            assert result.metrics[name][i] == pytest.approx(value, rel=1e-10, abs=1e-12), name
    np.testing.assert_allclose(result.error, np.cumsum((p - y) ** 2) / np.arange(1, 401))


def test_classification_metrics_and_log_loss():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 2))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=300) > 0, "pos", "neg")
    clf = OnlineKernelClassifier(loss="logistic", gamma=0.5)
    result = progressive_validation(clf, X, y, metrics=["accuracy", "error_rate", "log_loss",
                                                        skm.balanced_accuracy_score])
    p, s = result.predictions, result.scores
    assert p[0] is None                           # no label known before the first sample
    assert result.metrics["accuracy"][-1] == pytest.approx(np.mean(p == y))
    assert result.metrics["error_rate"][-1] == pytest.approx(np.mean(p != y))
    proba = np.column_stack([expit(-s), expit(s)])[1:]
    first = -np.log(1e-15)                        # probability 0 for the first label
    assert result.metrics["log_loss"][-1] == pytest.approx(
        (skm.log_loss(y[1:], proba) * 299 + first) / 300)
    assert result.metrics["balanced_accuracy_score"][-1] == pytest.approx(
        skm.balanced_accuracy_score(y[1:], p[1:].astype(str)))
    assert result.error[-1] == pytest.approx(np.mean(p != y))


def test_generic_path_equals_the_fused_path():
    X, y = regression_data(1300)                 # more events than one merged record block
    fused = progressive_validation(OnlineKernelRegressor(gamma=1.0), X, y, chunk_size=64)
    events = ((x, t) for x, t in zip(X, y))
    generic = progressive_validation(Predictor(OnlineKernelRegressor(gamma=1.0)), events,
                                     metrics=["mse", skm.mean_squared_error], print_every=1000)
    assert generic.scores is None and generic.loss is None
    np.testing.assert_allclose(generic.predictions[1:], fused.predictions[1:], atol=1e-12)
    assert generic.predictions[0] == 0.0          # nothing learned yet
    np.testing.assert_allclose(generic.metrics["mse"], generic.metrics["mean_squared_error"])


def test_sklearn_partial_fit_estimators_and_a_scaling_chain():
    X, y = regression_data(150)
    X = 100 * X + 7
    result = progressive_validation(SGDRegressor(random_state=0), iter_array(X, y, chunk_size=1),
                                    metrics=["mae"])
    by_hand, preds = SGDRegressor(random_state=0), [0.0]
    by_hand.partial_fit(X[:1], y[:1])
    for i in range(1, 150):
        preds.append(by_hand.predict(X[i:i + 1])[0])
        by_hand.partial_fit(X[i:i + 1], y[i:i + 1])
    np.testing.assert_array_equal(result.predictions, preds)
    chain = progressive_validation(ScaledLearner(OnlineKernelRegressor(gamma=0.5)), X, y)
    raw = progressive_validation(OnlineKernelRegressor(gamma=0.5), X, y)
    assert chain.error[-1] < raw.error[-1]        # unscaled inputs defeat the kernel width
    labels = (y > 0).astype(int)
    result = progressive_validation(SGDClassifier(random_state=0), X, labels)
    assert 0 <= result.error[-1] < 0.5


def test_stream_classifier_finds_its_labels():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(120, 2))
    y = np.where(X[:, 0] > 0, 1, -1)
    y[:30] = -1                                   # the first samples show one label only
    from_stream = progressive_validation(OnlineKernelClassifier(), ((x, t) for x, t in zip(X, y)))
    clf = OnlineKernelClassifier()
    scores = clf._progressive_scores(X, y)        # labels added as they appear
    assert from_stream.predictions[0] is None     # before the first label
    np.testing.assert_array_equal(from_stream.predictions[1:], clf._predictions(scores)[1:])
    assert from_stream.confusion.sum() == 119 and from_stream.classes.tolist() == [-1, 1]


@pytest.mark.parametrize("pipeline", [False, True])
def test_arrays_know_no_future_label_and_equal_a_predict_one_learn_one_loop(pipeline):
    """On arrays as on streams, okl's classifiers discover the labels as they come: the
    run equals the loop of predict_one then learn_one (the first prediction is None)."""
    from sklearn.datasets import load_digits

    from okl.pipeline import StreamPipeline
    from okl.preprocessing import OnlineStandardScaler
    X, y = load_digits(return_X_y=True)
    order = np.random.default_rng(0).permutation(len(y))[:500]
    X, y = X[order], y[order]

    def model():
        clf = OnlineKernelClassifier(loss="logistic", gamma=0.04, lam=1e-4, eta_decay=0.0,
                                     fit_intercept=False, budget=100)
        return StreamPipeline([("scale", OnlineStandardScaler()), ("learn", clf)]) \
            if pipeline else OnlineKernelClassifier(loss="logistic", gamma=0.001)
    result = progressive_validation(model(), X, y, metrics=["accuracy"])
    loop, predictions = model(), []
    for x, label in zip(X, y):
        predictions.append(loop.predict_one(x))
        loop.learn_one(x, label)
    assert predictions[0] is None and result.predictions.tolist() == predictions
    assert result.metrics["accuracy"][-1] == np.mean(np.array(predictions) == y)


def test_csv_stream_dict_events_and_arrays_agree(tmp_path):
    X, y = regression_data(90)
    path = tmp_path / "d.csv"
    path.write_text("a,b,y\n" + "".join(f"{a:.17g},{b:.17g},{t:.17g}\n" for (a, b), t in zip(X, y)))
    arrays = progressive_validation(OnlineKernelRegressor(), X, y)
    from_csv = progressive_validation(OnlineKernelRegressor(), iter_csv(path, target="y"))
    dicts = progressive_validation(OnlineKernelRegressor(),
                                   (({"a": a, "b": b}, t) for (a, b), t in zip(X, y)))
    np.testing.assert_array_equal(from_csv.predictions, arrays.predictions)
    np.testing.assert_array_equal(dicts.predictions, arrays.predictions)


def test_print_every_lines(capsys):
    X, y = regression_data(250)
    progressive_validation(OnlineKernelRegressor(fit_intercept=False), X, y, print_every=100,
                           metrics=["mae"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:3] == ["average", "since", "samples"] and "(mae)" in lines[0]
    table = [line.split() for line in lines[1:]]
    assert [int(r[2]) for r in table] == [1, 2, 4, 8, 16, 32, 64, 100, 128, 200, 250]
    assert [int(r[5]) for r in table] == [int(r[2]) for r in table]        # centres
    progressive_validation(OnlineKernelRegressor(), X, y)
    assert capsys.readouterr().out == ""


def test_refusals():
    X, y = regression_data(20)
    with pytest.raises(ValueError, match="chunk_size must be a positive integer"):
        progressive_validation(OnlineKernelRegressor(), X, y, chunk_size=0)
    with pytest.raises(TypeError, match="okl.evaluation.ranking_error"):
        progressive_validation(PairwiseLearner(), X, y)
    with pytest.raises(TypeError, match="StreamPipeline"):
        progressive_validation(make_pipeline(StandardScaler(), SGDRegressor()), X, y)
    with pytest.raises(ValueError, match="Unknown metric 'f1'"):
        progressive_validation(OnlineKernelRegressor(), X, y, metrics=["f1"])
    with pytest.raises(ValueError, match="predict_proba"):
        progressive_validation(OnlineKernelClassifier(), X, y > 0, metrics=["log_loss"])
    with pytest.raises(ValueError, match="empty"):
        progressive_validation(OnlineKernelRegressor(), iter([]))


def test_evaluate_a_fitted_model():
    X, y = regression_data(300)
    model = OnlineKernelRegressor().fit(X[:200], y[:200])
    scores = evaluate(model, iter_array(X[200:], y[200:], chunk_size=30),
                      metrics=["mae", skm.r2_score])
    p = model.predict(X[200:])
    assert scores["mae"] == pytest.approx(skm.mean_absolute_error(y[200:], p))
    assert scores["r2_score"] == pytest.approx(skm.r2_score(y[200:], p))


def test_plot_returns_a_figure():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    X, y = regression_data(100)
    result = progressive_validation(OnlineKernelRegressor(), X, y, metrics=["mse", "mae"])
    figure = result.plot()
    assert len(figure.axes) == 2 and figure.axes[1].get_ylabel() == "mae"
    assert len(figure.axes[0].lines[0].get_xdata()) == len(result.steps)
    matplotlib.pyplot.close(figure)


def test_progress_bar_only_when_asked_or_on_a_terminal(capsys):
    X, y = regression_data(50)
    progressive_validation(OnlineKernelRegressor(), X, y)            # stderr is not a terminal
    assert capsys.readouterr().err == ""
    progressive_validation(OnlineKernelRegressor(), X, y, progress=True)
    err = capsys.readouterr().err
    assert "OnlineKernelRegressor" in err and "/50 [" in err
