"""OnlineStandardScaler: exact running moments, one-event rows, atomicity, scikit-learn parity."""
import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from okl.preprocessing import OnlineStandardScaler


def data(n=200, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(1000.0, 300.0, (n, d)) * rng.uniform(0.01, 10, d)
    X[:, -1] = 7.25                                  # a constant feature
    return X


def state(scaler):
    return {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in vars(scaler).items()}


def assert_same_state(a, b):
    assert a.keys() == b.keys()
    for key in a:
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)


def feed(scaler, X, splits):
    """Learn X in chunks of the sizes in splits (1: learn_one); n_samples_seen_ after each."""
    lo, seen = 0, []
    for size in splits:
        if size == 1:
            scaler.learn_one(X[lo])
        else:
            scaler.partial_fit(X[lo:lo + size])
        lo += size
        seen.append(scaler.n_samples_seen_)
    return seen


@pytest.mark.parametrize("splits", [[200], [1] * 200, [7, 1, 1, 50, 141], [100, 100]])
def test_running_moments_are_exact_for_any_split(splits):
    X = data()
    scaler = OnlineStandardScaler()
    feed(scaler, X, splits)
    assert scaler.n_samples_seen_ == len(X)
    np.testing.assert_allclose(scaler.mean_, X.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(scaler.var_, X.var(axis=0), rtol=1e-10, atol=1e-12)
    ref = StandardScaler().fit(X)
    np.testing.assert_allclose(scaler.scale_, ref.scale_, rtol=1e-10)
    assert scaler.scale_[-1] == 1.0 and scaler.var_[-1] == 0.0
    np.testing.assert_allclose(scaler.transform(X), ref.transform(X), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(scaler.inverse_transform(scaler.transform(X)), X, rtol=1e-12)


def test_fit_starts_over_and_matches_partial_fit():
    X = data()
    a = OnlineStandardScaler().fit(X[:50])
    a.fit(X)
    b = OnlineStandardScaler().partial_fit(X)
    assert_same_state(state(a), state(b))
    np.testing.assert_allclose(a.fit_transform(X), StandardScaler().fit_transform(X),
                               rtol=1e-9, atol=1e-12)


def test_transform_one_matches_transform_and_dicts_keep_their_keys():
    X = data(d=3)
    arrays = OnlineStandardScaler()
    dicts = OnlineStandardScaler()
    for row in X:
        arrays.learn_one(row)
        dicts.learn_one({"a": row[0], "b": row[1], "c": row[2]})
    assert_same_state({k: v for k, v in state(arrays).items()},
                      {k: v for k, v in state(dicts).items()
                       if k not in ("_row_keys", "feature_names_in_", "_feature_index",
                                    "_feature_keys")})
    assert list(dicts._row_keys) == ["a", "b", "c"]
    z = arrays.transform_one(X[3])
    np.testing.assert_array_equal(z, arrays.transform(X[3:4])[0])
    zd = dicts.transform_one({"c": X[3, 2], "a": X[3, 0], "b": X[3, 1]})   # any key order
    assert list(zd) == ["a", "b", "c"]
    np.testing.assert_array_equal(list(zd.values()), z)
    # a missing key is 0
    np.testing.assert_array_equal(list(dicts.transform_one({"a": 1.0}).values()),
                                  arrays.transform_one(np.array([1.0, 0.0, 0.0])))


def test_before_learning_an_event_passes_through_and_a_batch_is_not_fitted():
    scaler = OnlineStandardScaler()
    assert scaler.transform_one({"a": 2, "b": 3.5}) == {"a": 2.0, "b": 3.5}
    np.testing.assert_array_equal(scaler.transform_one([1, 2]), [1.0, 2.0])
    assert not hasattr(scaler, "n_features_in_")
    with pytest.raises(NotFittedError):
        scaler.transform(np.ones((2, 2)))


def test_first_event_fixes_the_features():
    scaler = OnlineStandardScaler()
    scaler.learn_one({"a": 1.0, "b": 2.0})
    before = state(scaler)
    with pytest.raises(ValueError, match="'zz'.*unknown_features='ignore'"):
        scaler.learn_one({"a": 1.0, "zz": 2.0})
    assert_same_state(state(scaler), before)
    ignoring = OnlineStandardScaler(unknown_features="ignore")
    ignoring.learn_one({"a": 1.0, "b": 2.0})
    ignoring.learn_one({"a": 3.0, "zz": 2.0})
    np.testing.assert_array_equal(ignoring.mean_, [2.0, 1.0])


@pytest.mark.parametrize("splits", [[200], [1] * 200, [7, 1, 1, 50, 141], [30, 1, 169]])
def test_freeze_after_holds_the_moments_of_the_first_rows(splits):
    X = data()
    scaler = OnlineStandardScaler(freeze_after=31)
    seen = feed(scaler, X, splits)
    assert scaler.n_samples_seen_ == 31 and max(seen) == 31
    ref = StandardScaler().fit(X[:31])
    np.testing.assert_allclose(scaler.mean_, ref.mean_, rtol=1e-12)
    np.testing.assert_allclose(scaler.scale_, ref.scale_, rtol=1e-10)
    np.testing.assert_allclose(scaler.transform(X), ref.transform(X), rtol=1e-9, atol=1e-12)
    held = state(scaler)
    scaler.partial_fit(X[:5] * 100.0)
    scaler.learn_one(X[0] * 100.0)
    assert_same_state(state(scaler), held)


def test_freeze_after_checks_rows_it_does_not_learn_and_can_be_raised():
    X = data()
    scaler = OnlineStandardScaler(freeze_after=10).partial_fit(X[:12])
    held = state(scaler)
    for bad in (np.array([np.nan, 1.0, 1.0, 1.0]), X[0, :2]):
        with pytest.raises(ValueError):
            scaler.learn_one(bad)
    with pytest.raises(ValueError):
        scaler.partial_fit(X[:3, :2])
    assert_same_state(state(scaler), held)
    scaler.set_params(freeze_after=40).partial_fit(X[12:60])
    assert scaler.n_samples_seen_ == 40
    np.testing.assert_allclose(scaler.mean_, np.concatenate([X[:10], X[12:42]]).mean(axis=0),
                               rtol=1e-12)
    scaler.set_params(freeze_after=None).learn_one(X[60])
    assert scaler.n_samples_seen_ == 41
    with pytest.raises(ValueError, match="freeze_after"):
        OnlineStandardScaler(freeze_after=0).partial_fit(X)
    restored = pickle.loads(pickle.dumps(OnlineStandardScaler(freeze_after=3).partial_fit(X)))
    assert restored.freeze_after == 3 and restored.n_samples_seen_ == 3


@pytest.mark.parametrize("bad, error, match", [
    ({"a": float("nan"), "b": 1.0}, ValueError, "non-finite"),
    ({"a": "x", "b": 1.0}, TypeError, "real numbers.*'a'"),
    ({"a": None}, TypeError, "real numbers"),
    (np.array([1.0, np.inf]), ValueError, "NaN or inf"),
    (np.array([1.0, 2.0, 3.0]), ValueError, "3 features.*expecting 2"),
    (["1", "2"], TypeError, "real numbers"),
    ("ab", TypeError, "string"),
    (np.ones((2, 2)), ValueError, "one event"),
])
def test_bad_events_raise_and_leave_the_scaler_as_it_was(bad, error, match):
    scaler = OnlineStandardScaler()
    scaler.learn_one({"a": 1.0, "b": 2.0})
    scaler.learn_one({"a": 2.0, "b": 5.0})
    before = state(scaler)
    with pytest.raises(error, match=match):
        scaler.learn_one(bad)
    assert_same_state(state(scaler), before)


def test_bad_chunks_leave_the_scaler_as_it_was():
    X = data()
    scaler = OnlineStandardScaler().partial_fit(X[:20])
    before = state(scaler)
    bad = X[20:30].copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError):
        scaler.partial_fit(bad)
    with pytest.raises(ValueError):
        scaler.partial_fit(X[20:30, :2])
    with pytest.raises(ValueError):
        scaler.fit(bad)
    assert_same_state(state(scaler), before)


def test_rows_of_any_layout_give_the_same_moments():
    X = data(d=3).astype(np.float32).astype(np.float64)     # exact in float32 too
    ref = OnlineStandardScaler()
    other = OnlineStandardScaler()
    F = np.asfortranarray(X)
    for i, row in enumerate(X):
        ref.learn_one(row)
        layout = (row.tolist(), row.astype(np.float32), F[i], F[i:i + 1])[i % 4]
        other.learn_one(layout)
    assert_same_state(state(ref), state(other))


def test_options_pickle_and_clone():
    X = data()
    for with_mean, with_std in ((True, False), (False, True), (False, False)):
        ours = OnlineStandardScaler(with_mean=with_mean, with_std=with_std).partial_fit(X)
        ref = StandardScaler(with_mean=with_mean, with_std=with_std).fit(X)
        np.testing.assert_allclose(ours.transform(X), ref.transform(X), rtol=1e-9, atol=1e-12)
    scaler = OnlineStandardScaler().partial_fit(X)
    again = pickle.loads(pickle.dumps(scaler))
    assert_same_state(state(again), state(scaler))
    fresh = clone(scaler)
    assert not hasattr(fresh, "mean_") and fresh.get_params() == scaler.get_params()
    with pytest.raises(ValueError, match="unknown_features"):
        OnlineStandardScaler(unknown_features="drop").partial_fit(X)


def test_dataframe_columns_name_the_dict_features():
    pd = pytest.importorskip("pandas", reason="pandas names the features of a DataFrame")
    X = data(d=2)
    scaler = OnlineStandardScaler().partial_fit(pd.DataFrame(X, columns=["u", "v"]))
    z = scaler.transform_one({"v": X[0, 1], "u": X[0, 0]})
    np.testing.assert_allclose(list(z.values()), scaler.transform(
        pd.DataFrame(X[:1], columns=["u", "v"]))[0], rtol=1e-12)


@parametrize_with_checks([OnlineStandardScaler()])
def test_sklearn_compatible(estimator, check):
    check(estimator)


@pytest.mark.parametrize("params", [{}, {"with_mean": False}, {"with_std": False},
                                    {"freeze_after": 40}])
def test_one_pass_row_methods_equal_learn_one_then_transform_one(params):
    """`_learn_row` / `_transform_row` (one pass in C, okl._core._event) give the floats of
    the NumPy `learn_one` then `transform_one`, bit for bit, on a long stream."""
    rng = np.random.default_rng(7)
    X = rng.normal(size=(1000, 6)) * np.logspace(-3, 6, 6) + np.linspace(-1e4, 1e4, 6)
    X[:, 5] = 2.5                                       # a constant feature: scale 1
    fast, numpy = OnlineStandardScaler(**params), OnlineStandardScaler(**params)
    fast.learn_one(X[0])
    numpy.learn_one(X[0])
    for row in X[1:]:
        assert fast._ready()
        np.testing.assert_array_equal(fast._transform_row(row), numpy.transform_one(row))
        z = fast._learn_row(row)
        numpy.learn_one(row)
        np.testing.assert_array_equal(z, numpy.transform_one(row))
    for name in ("n_samples_seen_", "mean_", "_m2", "var_", "scale_"):
        np.testing.assert_array_equal(getattr(fast, name), getattr(numpy, name), err_msg=name)
    before = dict(fast.__dict__)
    for bad in (np.nan, np.inf, 1e200):
        row = X[1].copy()
        row[2] = bad
        huge, frozen = bad == 1e200, not fast._room(1)     # a huge value: refused if learned
        assert (fast._learn_row(row) is None) is not (huge and frozen)
        assert (fast._transform_row(row) is None) is not huge
    assert fast.__dict__ == before
