"""One event as one row: a dict of feature name -> value or a 1-D array-like.

Streams hand a learner one event at a time, often as a dict (river's
convention).  `check_row` turns either form into the C-contiguous float64
row the engines read, in O(d) Python work and at most one NumPy conversion,
and never changes its owner: a first dict fixes the feature order, and the
caller stores it (`commit_names`) only once the event was learned, so a call
that raises leaves the owner exactly as it was.

Rules
-----
- The feature order is fixed by the first call: the keys of a first dict, in
  its order, or the columns of a DataFrame given to fit / partial_fit.
- A key missing from a later dict is 0 (a sparse event).
- A key never seen before raises, unless the owner was built with
  ``unknown_features="ignore"``, which drops it.
- Values must be real numbers (bool included), finite.
"""
import math
from collections.abc import Mapping
from numbers import Real

import numpy as np

from okl._core._event import array_row, dict_row

UNKNOWN_FEATURES = ("error", "ignore")
_F64 = np.dtype(np.float64)


def _name(owner):
    return type(owner).__name__


def feature_index(owner):
    """{name: column} of the fixed feature order, or None when the owner has no names."""
    index = owner.__dict__.get("_feature_index")
    if index is not None:
        return index
    names = owner.__dict__.get("_row_keys")
    if names is None:
        names = owner.__dict__.get("feature_names_in_")
    if names is None:
        return None
    index = {key: i for i, key in enumerate(names.tolist() if isinstance(names, np.ndarray)
                                            else names)}
    owner.__dict__["_feature_index"] = index       # a cache of the names, not model state
    return index


def commit_names(owner, names):
    """Fix the feature order found by a first dict (call once the event was learned).

    The names stay private (`_row_keys`): `feature_names_in_` is scikit-learn's,
    set by DataFrames, and would make every later array call warn.
    """
    if names is None:
        return
    owner._row_keys = names
    owner.__dict__.pop("_feature_index", None)
    owner.__dict__.pop("_feature_keys", None)


def forget_names(owner):
    """Drop the feature order (a fresh fit)."""
    for name in ("_row_keys", "_feature_index", "_feature_keys", "feature_names_in_"):
        owner.__dict__.pop(name, None)


def _keys_of(owner, index):
    """The fixed feature names in column order (cached beside the index)."""
    keys = owner.__dict__.get("_feature_keys")
    if keys is None or len(keys) != len(index):
        keys = owner.__dict__["_feature_keys"] = tuple(index)
    return keys


def _dict_row(owner, x, n_features, check_finite=True):
    """The row of dict `x`; (row, names) with names set when x fixes the order."""
    index = feature_index(owner) if n_features is not None else None
    names = None
    if n_features is None:                       # the first event: its keys fix the order
        if not x:
            raise ValueError(f"{_name(owner)} got an empty dict as its first event: the "
                             "keys of the first dict fix the features.")
        names = tuple(x)
        index = {key: i for i, key in enumerate(names)}
        n_features = len(names)
    elif index is None:
        raise ValueError(
            f"{_name(owner)} was fitted on arrays without feature names, so a dict event "
            f"cannot be placed: pass a 1-D array of {n_features} values, or fit on dicts "
            "or on a DataFrame (whose columns name the features).")
    elif type(x) is dict and (row := dict_row(x, _keys_of(owner, index))) is not None:
        # the common stream: every feature, in the first event's order, Python numbers
        if not check_finite or np.isfinite(row).all():
            return row, None
    elif len(x) == n_features and tuple(x) == _keys_of(owner, index):
        # every feature in order, NumPy numbers: one conversion
        row = np.array(list(x.values()))
        if row.dtype is _F64 or (row.dtype.kind in "biu" and row.ndim == 1):
            if row.dtype is not _F64:
                row = row.astype(np.float64)
            if not check_finite or np.isfinite(row).all():
                return row, None
    row = [0.0] * n_features
    ignore = getattr(owner, "unknown_features", "error") == "ignore"
    for key, value in x.items():
        i = index.get(key)
        if i is None:
            if ignore:
                continue
            raise ValueError(
                f"{_name(owner)} got feature {key!r}, which was not in the first event "
                f"(the features are fixed by the first call: {list(index)[:10]}"
                f"{'...' if len(index) > 10 else ''}). Pass unknown_features='ignore' to "
                "drop unseen features.")
        if not isinstance(value, Real):
            raise TypeError(
                f"{_name(owner)} needs real numbers, but feature {key!r} is {value!r} "
                f"({type(value).__name__}). Encode it first (e.g. one-hot).")
        value = float(value)
        if not math.isfinite(value):
            raise ValueError(f"{_name(owner)} got a non-finite value {value} for feature "
                             f"{key!r}: NaN and inf cannot be learned.")
        row[i] = value
    return np.array(row, dtype=np.float64), names


def check_row(owner, x, check_finite=True):
    """x as a C-contiguous float64 row of `owner.n_features_in_` values; (row, names).

    `names` is the feature order a first dict fixes (store it with
    `commit_names` after learning), else None.  Before the first call the
    row's length is free.  With ``check_finite=False`` an array row is not
    scanned for NaN/inf (for callers whose compiled step checks it).
    """
    n_features = owner.__dict__.get("n_features_in_")
    if type(x) is dict:
        keys = owner.__dict__.get("_feature_keys")
        if keys is not None and (row := dict_row(x, keys)) is not None and (
                not check_finite or np.isfinite(row).all()):
            return row, None
        return _dict_row(owner, x, n_features, check_finite)
    if isinstance(x, Mapping):
        return _dict_row(owner, x, n_features, check_finite)
    if n_features is not None and (type(x) is list or type(x) is np.ndarray) and (
            row := array_row(x, n_features)) is not None and (
            not check_finite or np.isfinite(row).all()):
        return row, None            # a list of numbers, a float32 or strided row: one C pass
    if not (type(x) is np.ndarray and x.dtype == np.float64 and x.ndim == 1
            and x.flags.c_contiguous):
        if isinstance(x, (str, bytes)):
            raise TypeError(f"{_name(owner)} got a string as an event; pass a dict of "
                            "feature name -> value or a 1-D array of numbers.")
        try:
            x = np.asarray(x)
            if x.dtype.kind not in "biuf":
                raise TypeError
            x = np.ascontiguousarray(x, dtype=np.float64)
        except (TypeError, ValueError):
            raise TypeError(
                f"{_name(owner)} needs an event of real numbers (a dict of feature name -> "
                f"value or a 1-D array-like), got {type(x).__name__}: {repr(x)[:80]}") from None
        if x.ndim == 2 and x.shape[0] == 1:
            x = x[0]
        if x.ndim != 1:
            raise ValueError(
                f"{_name(owner)} takes one event, a 1-D row, but got an array of shape "
                f"{x.shape}; use partial_fit / predict for several rows.")
    if n_features is not None and x.shape[0] != n_features:
        raise ValueError(f"X has {x.shape[0]} features, but {_name(owner)} is expecting "
                         f"{n_features} features as input.")
    if x.shape[0] == 0:
        raise ValueError(f"{_name(owner)} got an empty row.")
    if check_finite and not np.isfinite(x).all():
        raise ValueError(f"{_name(owner)} got a row with NaN or inf: {x[:10]}; non-finite "
                         "values cannot be learned.")
    return x, None


def as_float(value):
    """A real number as a float; inf for an integer too large for one (10**400)."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def _missing_target(owner, y, where):
    """The error of a target that is missing (None, NaN), infinite or not a number."""
    if y is None or (isinstance(y, Real) and math.isnan(as_float(y))):
        return ValueError(
            f"{_name(owner)} got a missing target{where} ({'NaN' if y is not None else y}): "
            "every target must be a "
            "finite number. Drop the events without a target (or impute them) before "
            "learning.")
    if isinstance(y, Real) and not isinstance(y, (bool, np.bool_)):
        return ValueError(
            f"{_name(owner)} got a non-finite target{where} ({str(y)[:40]}): every target "
            "must be a finite float64 number. Rescale the targets.")
    return TypeError(
        f"{_name(owner)} needs real numbers as targets, but got {str(y)[:60]!r} "
        f"({type(y).__name__}){where}. Encode the targets as numbers.")


def check_label(owner, y):
    """y as one float: a real, finite scalar (a 0-d or one-element array is accepted)."""
    if isinstance(y, np.ndarray) and y.size == 1:
        y = y.reshape(()).item()
    if isinstance(y, (str, bytes)) or not isinstance(y, Real):
        raise _missing_target(owner, y, " as the target of one event")
    value = as_float(y)
    if not math.isfinite(value):
        raise _missing_target(owner, y, " as the target of one event")
    return value


def real_targets(owner, y):
    """y (one target per row) as a float64 array when it holds anything but finite numbers:
    a clear error names the first missing (None, NaN), infinite or non-numeric target,
    before any step.  Other arrays come back as given, for scikit-learn's checks."""
    values = y if isinstance(y, np.ndarray) else None
    if values is None:
        try:
            values = np.asarray(y)
        except (TypeError, ValueError):
            return y
    if values.ndim != 1 and not (values.ndim == 2 and values.shape[1:] == (1,)):
        return y                    # scikit-learn names a wrong shape
    flat = values.reshape(-1)
    if flat.dtype.kind not in "fOUS":
        return y                    # integers; complex numbers: scikit-learn refuses them
    if flat.dtype.kind == "f":
        bad = ~np.isfinite(flat)
        if bad.any():
            i = int(np.argmax(bad))
            raise _missing_target(owner, float(flat[i]), f" at row {i}")
        return y
    for i, item in enumerate(flat.tolist()):
        if (isinstance(item, (str, bytes)) or not isinstance(item, Real)
                or not math.isfinite(as_float(item))):
            raise _missing_target(owner, item, f" at row {i}")
    return np.asarray(flat.tolist(), dtype=np.float64).reshape(values.shape)


def check_weight(owner, sample_weight):
    """One sample weight: a finite float >= 0 (a number: a string is refused, as by the
    chunks' `okl._base.check_sample_weight`)."""
    if isinstance(sample_weight, (str, bytes)) or not isinstance(sample_weight, Real):
        raise TypeError(f"sample_weight of {_name(owner)}.learn_one must be a number >= 0, "
                        f"got {sample_weight!r}.")
    w = as_float(sample_weight)
    if not (w >= 0.0 and math.isfinite(w)):
        raise ValueError(f"sample_weight of {_name(owner)}.learn_one must be finite and "
                         f">= 0, got {str(sample_weight)[:40]}.")
    return w

