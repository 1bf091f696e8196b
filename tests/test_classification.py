"""OnlineKernelClassifier and CoefficientRegularizedClassifier: engines, labels,
validation, atomicity, persistence, scikit-learn conventions, NORMA's norm bound."""
import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import expit
from sklearn.base import clone
from sklearn.datasets import make_moons
from sklearn.utils.estimator_checks import parametrize_with_checks

import okl
from okl import CoefficientRegularizedClassifier, OnlineKernelClassifier
from okl.evaluation import progressive_validation
from okl.losses import MARGIN_LOSSES, lipschitz_at_origin, loss_value, slope_at_origin

CLASSIFIERS = (OnlineKernelClassifier, CoefficientRegularizedClassifier)
KERNEL_PARAMS = {
    "gaussian": dict(gamma=0.5),
    "laplacian": dict(gamma=0.5),
    "linear": dict(coef0=1.0),
    "polynomial": dict(gamma=0.2, degree=3, coef0=1.0),
}


def stream(n, d=3, seed=0, labels=(0, 1)):
    """A noisy non-linear binary problem: the sign of x0 + x1^2 - 1/3 plus noise."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, d))
    positive = X[:, 0] + X[:, 1] ** 2 - 1 / 3 + 0.3 * rng.normal(size=n) > 0
    return X, np.where(positive, labels[1], labels[0])


def make(cls, **params):
    """A small model of either class (40 stream centres for Tian-Sheng)."""
    if cls is CoefficientRegularizedClassifier:
        params.setdefault("n_centers", 40)
        params.setdefault("gamma", 1.0)    # a width of the first chunk would depend on the chunks
    return cls(**params)


def model_state(est):
    """Everything that defines a fitted model, for exact before/after comparisons."""
    scalars = {k: v for k, v in vars(est).items() if k != "_expansion"}
    return scalars, est._expansion.get_state()


def assert_same_state(a, b):
    assert a[0].keys() == b[0].keys()
    for key in a[0]:
        np.testing.assert_array_equal(a[0][key], b[0][key], err_msg=key)
    assert a[1].keys() == b[1].keys()
    for key in a[1]:
        np.testing.assert_array_equal(a[1][key], b[1][key], err_msg=key)


# -- the two engines ------------------------------------------------------------------------

@pytest.mark.parametrize("kernel", sorted(KERNEL_PARAMS))
@pytest.mark.parametrize("loss", sorted(MARGIN_LOSSES))
@pytest.mark.parametrize("cls", CLASSIFIERS)
def test_engines_give_the_same_iterates(cls, loss, kernel):
    """Largest difference measured over these 40 streams of 2000 steps: 2.4e-14."""
    X, y = stream(2000)
    params = dict(kernel=kernel, loss=loss, lam=0.01, **KERNEL_PARAMS[kernel])
    if loss == "exponential":
        params["eta"] = 0.05        # no finite M: no auto step
    fast, slow = make(cls, **params), make(cls, engine="numpy", **params)
    f_fast = fast._progressive_scores(X, y, classes=[0, 1])
    f_slow = slow._progressive_scores(X, y, classes=[0, 1])
    np.testing.assert_allclose(f_fast, f_slow, rtol=0, atol=1e-10)
    np.testing.assert_allclose(fast.dual_coef_, slow.dual_coef_, rtol=0, atol=1e-10)
    assert np.abs(fast.dual_coef_).max() > 1e-3      # something was learned
    X_test, _ = stream(200, seed=1)
    np.testing.assert_allclose(fast.decision_function(X_test), slow.decision_function(X_test),
                               rtol=0, atol=1e-10)
    assert fast.eta_ == pytest.approx(slow.eta_, rel=1e-12)


@pytest.mark.parametrize("policy", ["oldest", "smallest"])
def test_engines_agree_under_a_budget(policy):
    X, y = stream(2000, seed=3)
    params = dict(loss="logistic", budget=50, budget_policy=policy, gamma=2.0)
    fast = OnlineKernelClassifier(**params).fit(X, y)
    slow = OnlineKernelClassifier(engine="numpy", **params).fit(X, y)
    assert fast.n_support_ == slow.n_support_ == 50
    np.testing.assert_allclose(fast.dual_coef_, slow.dual_coef_, rtol=0, atol=1e-10)
    np.testing.assert_array_equal(fast.support_vectors_, slow.support_vectors_)


@pytest.mark.parametrize("cls", CLASSIFIERS)
def test_chunks_and_engine_switch_continue_the_same_stream(cls):
    X, y = stream(900, seed=4)
    whole = make(cls).fit(X, y)
    pieces = make(cls)
    pieces.partial_fit(X[:1], y[:1], classes=[0, 1])
    pieces.set_params(engine="numpy").partial_fit(X[1:20], y[1:20])    # centres still arriving
    pieces.set_params(engine="cython").partial_fit(X[20:400], y[20:400])
    pieces.set_params(engine="numpy").partial_fit(X[400:650], y[400:650])
    pieces.set_params(engine="cython").partial_fit(X[650:], y[650:])
    assert pieces.t_ == whole.t_ == 900
    np.testing.assert_allclose(pieces.dual_coef_, whole.dual_coef_, rtol=0, atol=1e-10)


# -- labels and predictions ---------------------------------------------------------------

@pytest.mark.parametrize("cls", CLASSIFIERS)
def test_classes_are_sorted_and_the_second_is_positive(cls):
    X, y = stream(600, seed=5, labels=("spam", "ham"))    # "ham" sorts first
    clf = make(cls).fit(X, y)
    assert clf.classes_.tolist() == ["ham", "spam"]
    f = clf.decision_function(X)
    np.testing.assert_array_equal(clf.predict(X), np.where(f > 0, "spam", "ham"))
    # the model learned y = +1 for "spam": its scores agree with the labels
    assert np.mean((f > 0) == (y == "spam")) > 0.75


@pytest.mark.parametrize("cls", CLASSIFIERS)
def test_predict_proba_only_for_the_logistic_loss(cls):
    X, y = stream(500, seed=6)
    assert not hasattr(make(cls).fit(X, y), "predict_proba")
    clf = make(cls, loss="logistic").fit(X, y)
    proba = clf.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_allclose(proba[:, 1], expit(clf.decision_function(X)))
    np.testing.assert_allclose(clf.predict_log_proba(X), np.log(proba), atol=1e-12)
    np.testing.assert_array_equal(clf.predict(X), clf.classes_[proba.argmax(axis=1)])


@pytest.mark.parametrize("cls", CLASSIFIERS)
def test_learns_two_moons(cls):
    """Held-out accuracy after one pass over 1500 samples: 0.968 NORMA, 0.936 Tian-Sheng (m=40)."""
    X, y = make_moons(2000, noise=0.2, random_state=0)
    clf = make(cls, gamma=2.0).fit(X[:1500], y[:1500])
    assert clf.score(X[1500:], y[1500:]) > 0.92


@pytest.mark.parametrize("cls", CLASSIFIERS)
def test_progressive_validation_reports_error_and_loss(cls):
    X, y = stream(1500, seed=7, labels=(-3, 8))
    clf = make(cls, loss="logistic")
    result = progressive_validation(clf, X, y, chunk_size=400, classes=[-3, 8])
    manual = make(cls, loss="logistic")._progressive_scores(X, y, classes=[-3, 8])
    np.testing.assert_array_equal(result.scores, manual)
    np.testing.assert_array_equal(result.predictions, np.where(manual > 0, 8, -3))
    margins = np.where(y == 8, 1.0, -1.0) * manual
    np.testing.assert_allclose(result.loss[-1], loss_value("logistic", margins).mean())
    assert result.error[-1] < 0.25 and clf.t_ == 1500


@pytest.mark.parametrize("cls", CLASSIFIERS)
def test_more_than_two_classes_are_learned_natively(cls):
    """Every okl classifier learns k classes itself (docs/multiclass.md, docs/multiclass-pa.md)."""
    X, y = stream(300, seed=8)
    y3 = y + (X[:, 2] > 0.5)
    clf = make(cls).fit(X, y3)
    assert clf._multiclass and list(clf.classes_) == [0, 1, 2]
    assert clf.decision_function(X).shape == (300, 3)
    assert set(clf.predict(X)) <= {0, 1, 2}


# -- validation and atomic updates --------------------------------------------------------

@pytest.mark.parametrize("cls", CLASSIFIERS)
def test_first_partial_fit_discovers_classes(cls):
    """Without `classes`, the stream adds its labels; one class learns nothing (okl._labels)."""
    X, y = stream(50)
    clf = make(cls).partial_fit(X[:5], np.full(5, 1))
    assert clf.classes_.tolist() == [1] and clf.t_ == 0 and not clf.fixed_classes_
    assert clf.predict(X[:3]).tolist() == [1, 1, 1]
    clf.partial_fit(X[5:], y[5:])
    first = 5 + int(np.argmax(y[5:] == 0))          # the second label appears here
    ref = make(cls).partial_fit(X[first:], y[first:], classes=[0, 1])
    assert clf.classes_.tolist() == [0, 1] and clf.t_ == ref.t_
    np.testing.assert_allclose(clf.decision_function(X), ref.decision_function(X), atol=1e-12)
    clf.partial_fit(X[:5], y[:5], classes=[0, 1])     # the same classes: accepted
    with pytest.raises(ValueError, match="differs from classes_"):
        clf.partial_fit(X[:5], y[:5], classes=[0, 2])


@pytest.mark.parametrize("cls", CLASSIFIERS)
def test_a_failing_partial_fit_leaves_the_model_exactly_as_it_was(cls):
    X, y = stream(300, seed=9)
    clf = make(cls).partial_fit(X[:200], y[:200], classes=[0, 1])
    before = model_state(clf)
    X_nan = X[200:].copy()
    X_nan[50, 1] = np.nan
    X_inf = X[200:].copy()
    X_inf[99, 0] = np.inf
    y_new = y[200:].copy()
    y_new[70] = 2                                       # a label never declared
    bad_calls = [
        ((X_nan, y[200:]), {}, ValueError, "NaN"),
        ((X_inf, y[200:]), {}, ValueError, "infinity"),
        ((X[200:, :2], y[200:]), {}, ValueError, "features"),
        ((X[200:], y_new), {}, ValueError, r"not in classes_.*Pass every label"),
        ((X[200:], y[200:].astype(float) + np.r_[np.nan, np.zeros(99)]), {}, ValueError, "NaN"),
        ((X[200:], y[200:]), {"classes": [0, 2]}, ValueError, "differs from classes_"),
        ((sp.csr_matrix(X[200:]), y[200:]), {}, TypeError, "sparse"),
    ]
    for args, kwargs, error, match in bad_calls:
        with pytest.raises(error, match=match):
            clf.partial_fit(*args, **kwargs)
        assert_same_state(model_state(clf), before)
    clf.partial_fit(X[200:], y[200:])
    assert clf.t_ == 300


@pytest.mark.filterwarnings("ignore:.*1 - lam_t eta_t")   # the huge step also resets
@pytest.mark.parametrize("cls", CLASSIFIERS)
def test_divergence_raises_and_restores(cls):
    X, y = stream(400, seed=10)
    # a tiny lam: eta lam < 1, which CoefficientRegularizedClassifier requires of any eta
    clf = make(cls, loss="least_squares", eta=1e150, eta_decay=0.0, lam=1e-200, kernel="linear",
               coef0=1.0)
    clf.partial_fit(X[:1], y[:1], classes=[0, 1])
    before = model_state(clf)
    with pytest.raises(FloatingPointError, match="diverged at step"):
        clf.partial_fit(X[1:], y[1:])
    assert_same_state(model_state(clf), before)


@pytest.mark.parametrize("cls", CLASSIFIERS)
def test_invalid_parameters_are_reported_at_fit(cls):
    X, y = stream(50)
    for params, match in [({"loss": "squared"}, "'loss' parameter"),
                          ({"lam": -1.0}, "'lam' parameter"),
                          ({"eta": 0}, "'eta' parameter"),
                          ({"kernel": "rbf"}, "'kernel' parameter")]:
        clf = make(cls, **params)               # __init__ accepts anything
        with pytest.raises(ValueError, match=match):
            clf.fit(X, y)
        assert not hasattr(clf, "t_")


@pytest.mark.parametrize("cls", CLASSIFIERS)
def test_exponential_loss_needs_an_explicit_step(cls):
    X, y = stream(200, seed=11)
    clf = make(cls, loss="exponential")
    with pytest.raises(ValueError, match="no finite|explicit step"):
        clf.fit(X, y)
    assert not hasattr(clf, "t_")
    assert make(cls, loss="exponential", eta=0.1).fit(X, y).score(X, y) > 0.7


# -- persistence ---------------------------------------------------------------------------

@pytest.mark.parametrize("engine", ["cython", "numpy"])
@pytest.mark.parametrize("cls", CLASSIFIERS)
def test_pickle_and_okl_save_round_trips(cls, engine, tmp_path):
    X, y = stream(700, seed=12, labels=("a", "b"))
    clf = make(cls, loss="logistic", engine=engine).fit(X[:500], y[:500])
    path = tmp_path / "model.npz"
    okl.save(clf, path)
    for copy in (pickle.loads(pickle.dumps(clf)), okl.load(path)):
        assert type(copy) is cls and copy.get_params()["engine"] == engine
        np.testing.assert_array_equal(copy.classes_, clf.classes_)
        np.testing.assert_array_equal(copy.decision_function(X), clf.decision_function(X))
        np.testing.assert_array_equal(copy.predict_proba(X), clf.predict_proba(X))
        # the copy continues the stream exactly as the original does
        ref = clone(clf).fit(X, y)
        copy.partial_fit(X[500:], y[500:])
        np.testing.assert_allclose(copy.decision_function(X), ref.decision_function(X),
                                   rtol=0, atol=1e-12)


def test_okl_save_keeps_given_centers(tmp_path):
    X, y = stream(300, seed=13)
    clf = CoefficientRegularizedClassifier(centers=X[::10]).fit(X, y)
    okl.save(clf, tmp_path / "m.npz")
    copy = okl.load(tmp_path / "m.npz")
    np.testing.assert_array_equal(copy.get_params()["centers"], X[::10])
    np.testing.assert_array_equal(copy.centers_, X[::10])
    np.testing.assert_array_equal(copy.coef_, clf.coef_)


# -- scikit-learn's estimator checks -------------------------------------------------------

@parametrize_with_checks([
    OnlineKernelClassifier(),
    OnlineKernelClassifier(loss="logistic"),
    CoefficientRegularizedClassifier(),
    CoefficientRegularizedClassifier(loss="logistic", n_centers=20),
], expected_failed_checks=lambda est: getattr(est, "expected_failed_checks", {}))
def test_sklearn_compatible(estimator, check):
    check(estimator)


# -- NORMA: the RKHS form of the norm bound (Ying-Zhou; Tian-Sheng Theorem 3) -------------

def norma_norm_ratios(clf, X, y):
    """||f_{t+1}||_K / (C_K |phi'_-(0)| / lam) after every step, one sample per call."""
    ratios = []
    for t in range(len(X)):
        clf.partial_fit(X[t:t + 1], y[t:t + 1], classes=[0, 1])
        bound = np.sqrt(clf.ck2_) * abs(slope_at_origin(clf.loss)) / clf.lam
        ratios.append(clf.rkhs_norm() / bound)
    return np.array(ratios)


@pytest.mark.parametrize("loss", ["hinge", "squared_hinge", "logistic", "least_squares"])
def test_norma_auto_step_keeps_the_rkhs_norm_bound(loss):
    """||f_t||_K <= C_K |phi'_-(0)| / lam at every step under eta='auto'.

    With lam = 2 the largest ratio over 400 steps is eta_1 lam = lam / (lam + M),
    reached at the first step: 0.667 hinge, 0.5 squared_hinge, 0.889 logistic,
    0.5 least_squares (measured).
    """
    X, y = stream(400, seed=14)
    ratios = norma_norm_ratios(OnlineKernelClassifier(loss=loss, lam=2.0, gamma=0.5), X, y)
    M = lipschitz_at_origin(loss)
    assert ratios.max() <= 1 + 1e-12
    assert ratios.max() == pytest.approx(2.0 / (2.0 + M), rel=1e-12)


def test_norma_steps_beyond_the_condition_break_the_bound():
    """eta = 0.45 keeps eta lam < 1 but not eta (M C_K^2 + lam) <= 1 for least squares
    (M = 2): the norm leaves the ball (measured ratio 1.85)."""
    X, y = stream(400, seed=14)
    clf = OnlineKernelClassifier(loss="least_squares", lam=2.0, gamma=0.5, eta=0.45,
                                 eta_decay=0.0)
    assert norma_norm_ratios(clf, X, y).max() > 1.5


def test_norma_auto_step_uses_the_loss_lipschitz_constant():
    X, y = stream(30, seed=15)
    for loss in ("hinge", "logistic", "least_squares"):
        clf = OnlineKernelClassifier(loss=loss, lam=0.1, eta="auto",
                                     eta_decay=0.5).fit(X, y)
        M = lipschitz_at_origin(loss)
        assert clf.eta_ == pytest.approx(1 / ((0.1 + M * 1.0) * 30 ** 0.5), rel=1e-14)
