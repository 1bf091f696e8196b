"""One event in any row type: the iterates of a ready float64 row, and clear errors for bad rows."""
import numpy as np
import pytest

from okl import OnlineKernelClassifier, OnlineKernelRegressor, RegularizedPAClassifier
from okl._core._event import array_row, dict_row

rng = np.random.default_rng(22)
X = rng.normal(size=(80, 6))
y = np.sin(X[:, 0])
labels = (X[:, 1] > 0).astype(int)

FORMS = {
    "list": lambda X: X.tolist(),
    "float32": lambda X: list(X.astype(np.float32)),
    "fortran": lambda X: list(np.asfortranarray(X)),
    "strided": lambda X: list(np.repeat(X, 2, axis=1)[:, ::2]),
    "dict": lambda X: [dict(zip("abcdef", row.tolist())) for row in X],
    # keys of the same characters, but new str objects in every event (as a parser makes)
    "dict-new-keys": lambda X: [{"".join(("x", c)): v for c, v in zip("abcdef", row.tolist())}
                                for row in X],
    "dict-str-subclass": lambda X: [{Name(c): v for c, v in zip("abcdef", row.tolist())}
                                    for row in X],
}


class Name(str):
    """A key type whose comparison is Python code: the conversion in C declines it."""
    def __eq__(self, other):
        return str.__eq__(self, other)

    __hash__ = str.__hash__


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("make, target", [
    (lambda: OnlineKernelRegressor(gamma=0.3, budget=30), y),
    (lambda: OnlineKernelClassifier(gamma=0.3, loss="logistic", classes=[0, 1]), labels),
    (lambda: RegularizedPAClassifier(kernel="gaussian", gamma=0.3, classes=[0, 1]), labels),
])
def test_every_row_type_takes_the_steps_of_a_ready_row(form, make, target):
    Xf = X.astype(np.float32).astype(np.float64) if form == "float32" else X
    ready, other = make(), make()
    rows = FORMS[form](Xf)
    for i in range(len(X)):
        a, b = ready.predict_one(Xf[i]), other.predict_one(rows[i])
        assert a == b
        ready.learn_one(Xf[i], target[i])
        other.learn_one(rows[i], target[i])
    np.testing.assert_array_equal(ready.decision_function(Xf) if hasattr(ready, "classes_")
                                  else ready.predict(Xf),
                                  other.decision_function(Xf) if hasattr(other, "classes_")
                                  else other.predict(Xf))


def test_array_row_takes_only_what_it_converts_exactly():
    F = np.asfortranarray(np.arange(12.0).reshape(3, 4))
    np.testing.assert_array_equal(array_row(F[1], 4), [4.0, 5.0, 6.0, 7.0])
    np.testing.assert_array_equal(array_row(F[1].astype(np.float32), 4), [4.0, 5.0, 6.0, 7.0])
    np.testing.assert_array_equal(array_row([1, 2.5, -3, 4.0], 4), [1.0, 2.5, -3.0, 4.0])
    for x, d in [([1.0, 2.0], 3), ([1.0, True], 2), ([1.0, "a"], 2), ([2 ** 60, 1.0], 2),
                 (np.arange(4, dtype=">f8"), 4), (np.arange(4), 4), (F, 4), ([], 0),
                 ((1.0, 2.0), 2)]:
        assert array_row(x, d) is None          # the general path decides (and explains)


def test_dict_row_takes_only_what_it_converts_exactly():
    keys = tuple("".join(("k", str(j))) for j in range(3))
    np.testing.assert_array_equal(dict_row({"k0": 1.5, "k1": -2, "k2": 3.0}, keys),
                                  [1.5, -2.0, 3.0])
    for x in [{"k0": 1.0, "k1": 2.0}, {"k1": 2.0, "k0": 1.0, "k2": 3.0},
              {"k0": 1.0, "k1": True, "k2": 3.0}, {"k0": 1.0, "k1": 2 ** 60, "k2": 3.0},
              {"k0": 1.0, "k1": np.float64(2.0), "k2": 3.0}, {"k0": 1.0, "k1": "a", "k2": 3.0},
              {Name("k0"): 1.0, "k1": 2.0, "k2": 3.0}, {"k0": 1.0, "k1": 2.0, "kz": 3.0},
              {"k0": 1.0, "k1": 2.0, "k22": 3.0}, {"k0": 1.0, "k1": 2.0, "k\u00e9": 3.0},
              {"k0": 1.0, "k1": 2.0, 2: 3.0}]:
        assert dict_row(x, keys) is None        # the general path decides (and explains)


@pytest.mark.parametrize("bad, error, match", [
    ([0.0, 1.0, "a", 0.0, 0.0, 0.0], TypeError, "real numbers"),
    ([0.0] * 5, ValueError, "6 features"),
    (np.zeros(7, dtype=np.float32), ValueError, "6 features"),
    ([0.0, np.nan, 0.0, 0.0, 0.0, 0.0], ValueError, "NaN or inf"),
    (np.asfortranarray(np.full((2, 6), np.inf))[0], ValueError, "NaN or inf"),
])
def test_bad_rows_keep_their_clear_errors_and_leave_the_model(bad, error, match):
    est = OnlineKernelRegressor(gamma=0.3).fit(X[:20], y[:20])
    before = est.predict(X)
    with pytest.raises(error, match=match):
        est.learn_one(bad, 1.0)
    with pytest.raises(error, match=match):
        est.predict_one(bad)
    np.testing.assert_array_equal(est.predict(X), before)
    assert est.t_ == 20


@pytest.mark.parametrize("change", ["value", "same-value", "reorder", "key", "type"])
def test_a_dict_changed_between_predict_and_learn_is_read_again(change):
    """learn_one takes the dict predict_one converted without reading it again only while
    the dict is unchanged (its version, PEP 509): every change is learned as it is."""
    make = lambda: RegularizedPAClassifier(kernel="gaussian", gamma=0.3, classes=[0, 1])
    ready, other = make(), make()
    rows = FORMS["dict"](X)
    for i in range(40):
        ready.learn_one(X[i], labels[i])
        other.learn_one(rows[i], labels[i])
    for i in range(40, len(X)):
        x = rows[i]
        assert other.predict_one(x) == ready.predict_one(X[i])
        row = X[i].copy()
        if change == "value":
            x["c"] = row[2] = 2.5 * i
        elif change == "same-value":
            x["c"] = float(x["c"])
        elif change == "reorder":           # same values, another key order: the adapter's
            x = {key: x[key] for key in reversed(list(x))}
        elif change == "key":               # a key taken out and put back (now the last)
            del x["a"]
            x["a"] = row[0] = -1.0
        else:
            x["a"] = row[0] = int(i)
        ready.learn_one(row, labels[i])
        other.learn_one(x, labels[i])
    np.testing.assert_array_equal(ready.decision_function(X), other.decision_function(X))
