"""okl.save / okl.load: an estimator as one .npz file, without pickle.

The file holds a JSON header (class, parameters, scalar attributes) and the
fitted arrays.  Loading parses JSON and reads arrays with allow_pickle=False,
so a file can never run code; and it trusts nothing in it: every parameter
goes through the estimator's own validation, every array and scalar is
checked against the header and the model's invariants (shapes, dtypes,
finiteness, counters, slot and history indices) before anything is built.
A broken or edited file raises `ModelFileError`, naming what is wrong.

Nested estimators.  A parameter or fitted attribute whose value is an estimator okl.save
can store itself (a `loadable` class: a pipeline's steps, a wrapper's inner learner), or a
list of ``(name, estimator)`` pairs (scikit-learn's ``steps``), is saved as a nested model:
its own header in the parent's ``"estimators"`` list, its arrays under ``est<i>:``, the
value in the parent's header a reference ``{"estimator": i}``.  okl.load checks and
builds every nested model as it does a file of its own, then hands the built estimators
to the parent: in its parameters, and among the attributes its `_check_state` reads
(`StateCheck.estimator`), where a wrapper checks that they fit together.  A new wrapper
needs nothing more than `@loadable` and its `_check_state` (docs/guide/persistence.md).

Everything save writes is read under the estimator's lock (`okl._locks.locked`; nested
estimators under theirs, inside it), so a file is always a state between two calls.
"""
import inspect
import json
import math
import os
import zipfile
from typing import Any

import numpy as np

from okl import _locks
from okl._feature_maps import NystroemFeatures
from okl._numpy.codes import BudgetPolicy
from okl._params import InvalidParameterError
from okl.kernels import KERNEL_PARAMS, NAMED_KERNEL_PARAMS, kernel_params_of

# the kernel parameters every file has; later ones (Matern's nu, ...) a file may lack: their
# default, what the model had before the parameter existed
FIRST_KERNEL_PARAMS = ("gamma", "degree", "coef0")
# estimator parameters a file may lack for the same reason
LATER_PARAMS = ("kernel_params",) + tuple(name for name in NAMED_KERNEL_PARAMS
                                          if name not in FIRST_KERNEL_PARAMS)
# ... and those whose absence means what the model did before them, not their default
# (docs/drift.md: a file saved before them neither forgets nor detects; docs/krls.md,
# section 11: KRLS forgot back to the prior)
LATER_BEHAVIOUR = {"forgetting": 1.0, "drift_detector": None, "forgetting_mode": "prior"}


def later_kernel_params():
    """The kernel parameters after the first three (read when a file is checked)."""
    return tuple(name for name in KERNEL_PARAMS if name not in FIRST_KERNEL_PARAMS)


FORMAT = 1
INT_MAX = 2 ** 62           # counters; array sizes are bounded by the file itself
C_INT_MAX = 2 ** 31 - 1     # what the loops pass to C ints and BLAS


class ModelFileError(ValueError):
    """A file given to okl.load is not an intact okl model: it is damaged, truncated,
    edited, or not an okl file at all; or it holds another kind of model than the
    `expected` one."""


ESTIMATORS = {}     # the classes okl.load builds, by name (`loadable`)


def loadable(cls):
    """Class decorator: okl.load may build `cls`, which checks its own fitted state
    (`_check_state(check)`, given a `StateCheck`)."""
    ESTIMATORS[cls.__name__] = cls
    return cls


def _state_types(cls):
    """The model classes (get_state / from_state) an estimator class holds, by name."""
    classes = getattr(cls, "_state_classes", None)     # none: the estimator keeps only arrays
    return {} if classes is None else {model.__name__: model for model in classes()}


# attributes that are caches, not model state (okl._one_event, okl._rows; a pipeline's event
# adapter, which holds nothing for okl's steps: they learn events themselves)
TRANSIENT = ("_one_event_state", "_feature_index", "_feature_keys", "_events", "_last")
# the counters okl.load checks before `_check_state` (a class's `_counters` may name others)
COUNTERS = ("n_features_in_", "t_")
MAX_NESTING = 8             # nested estimators in nested estimators: a file may not go deeper


def _scalar(value):
    """value as a JSON scalar, or raise TypeError."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, np.generic) and value.ndim == 0 and value.dtype.kind in "biuf":
        return value.item()
    if isinstance(value, (list, tuple)) and all(
            v is None or isinstance(v, (bool, int, float, str, dict)) for v in value):
        return [_scalar(v) for v in value]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value) and all(
            v is None or isinstance(v, (bool, int, float, str)) for v in value.values()):
        return dict(value)                  # kernel_params: numbers by name
    raise TypeError(type(value).__name__)


def _nested(value):
    """True for an estimator okl.save stores itself (a `loadable` class)."""
    return ESTIMATORS.get(type(value).__name__) is type(value)


def _is_steps(value):
    return isinstance(value, (list, tuple)) and value and all(
        isinstance(step, tuple) and len(step) == 2 and isinstance(step[0], str)
        and _nested(step[1]) for step in value)


def _split(items, prefix, arrays, what, nested):
    """Scalars of `items` for the header; arrays go to `arrays` under `prefix` (copies: the
    caller holds the estimator's lock, the file is written after it is released);
    estimators to `nested` (`_encode`)."""
    scalars = {}
    for key, value in items.items():
        if isinstance(value, np.ndarray):
            if value.dtype.hasobject:
                raise TypeError(f"okl.save cannot store the object array {what} {key!r}; "
                                "use pickle for this estimator.")
            arrays[prefix + key] = np.array(value)
            continue
        if _nested(value):
            scalars[key] = nested(value)
            continue
        if _is_steps(value):
            scalars[key] = [[name, nested(est)] for name, est in value]
            continue
        try:
            scalars[key] = _scalar(value)
        except TypeError:
            kind = type(value).__name__
            hint = ("an estimator okl.save cannot store: only okl's estimators nest"
                    if hasattr(value, "get_params") or isinstance(value, (list, tuple))
                    and any(hasattr(v, "get_params") or isinstance(v, tuple) for v in value)
                    else f"a {kind}")
            raise TypeError(
                f"okl.save stores data only; the {what} {key!r} is {hint}. "
                "Use a plain value (e.g. a number instead of a callable eta) or pickle.") from None
    return scalars


def _encode(estimator, arrays, prefix=""):
    """The header of `estimator`, read under its lock; its arrays go to `arrays` under
    `prefix`, its nested estimators' under ``prefix + "est<i>:"``."""
    headers = []

    def nested(est):
        headers.append(_encode(est, arrays, f"{prefix}est{len(headers)}:"))
        return {"estimator": len(headers) - 1}

    with _locks.locked(estimator):
        validate = getattr(estimator, "_validate_params", None)
        if validate is not None:        # okl.load validates them: what it would refuse is
            validate()                  # refused here (a value set_params did not check)
        _refuse_unhonoured(estimator)
        objects, attrs = {}, {}
        params = _split(estimator.get_params(deep=False), prefix + "param:", arrays,
                        "parameter", nested)
        state_types = _state_types(type(estimator))
        for key, value in vars(estimator).items():
            if key in TRANSIENT:            # caches of the one-event path, rebuilt on demand
                continue
            if key in params or f"{prefix}param:{key}" in arrays:
                continue                    # parameters are stored once, in "params"
            if type(value).__name__ in state_types:
                objects[key] = {"type": type(value).__name__,
                                "scalars": _split(value.get_state(), f"{prefix}obj:{key}:",
                                                  arrays, "state", nested)}
            else:
                if key == "feature_names_in_":     # scikit-learn's object array of str
                    value = np.asarray(value.tolist(), dtype=str)
                attrs.update(_split({key: value}, prefix + "attr:", arrays, "attribute",
                                    nested))
    header = {"class": type(estimator).__name__, "params": params, "attrs": attrs,
              "objects": objects}
    if headers:
        header["estimators"] = headers
    return header


def _refuse_unhonoured(estimator):
    """A fitted estimator whose parameters were changed (set_params) in a way its model
    cannot follow is refused: okl.load would refuse the file it wrote."""
    check = getattr(estimator, "_unhonoured", None)
    problems = check() if check is not None else []
    if problems:
        raise ValueError(
            f"okl.save: the model of {type(estimator).__name__} was fitted with other "
            f"parameters: {', '.join(problems)}. It cannot take them without a new fit, so "
            "the file would not describe it. Call fit with the new values, or set them back.")


def save(estimator: Any, path: Any) -> None:
    """Write a fitted (or unfitted) okl estimator to `path` (NumPy .npz format).

    `path` is a file name or a binary file object.  Parameters must be plain
    values (a callable eta cannot be saved: use pickle); okl estimators among
    them (a `StreamPipeline`'s steps, a wrapper's learner) are saved with it.
    The state is read under the estimator's lock: a file is never half of a
    call running in another thread.
    """
    arrays = {}
    header = dict(_encode(estimator, arrays), format=FORMAT)
    blob = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
    if hasattr(path, "write"):
        np.savez(path, __header__=blob, **arrays)
        return
    with open(path, "wb") as file:      # exactly `path`: np.savez would append ".npz"
        np.savez(file, __header__=blob, **arrays)


# ---- load: read, check everything, then build -------------------------------------------------

def _fail(source, message):
    raise ModelFileError(f"{source} is not an intact okl model file: {message}. The file is "
                         "damaged or was edited; save the model again with okl.save.")


def _read(path, source):
    """(header, arrays) of the file; any failure to read it is a ModelFileError."""
    try:
        data = np.load(path, allow_pickle=False)
        if not isinstance(data, np.lib.npyio.NpzFile):
            _fail(source, "it is a single NumPy array, not an .npz archive")
        with data:
            if "__header__" not in data.files:
                _fail(source, "it has no okl header (the '__header__' entry)")
            raw = data["__header__"]
            arrays = {k: data[k] for k in data.files if k != "__header__"}
    except ModelFileError:
        raise
    except (ValueError, OSError, EOFError, KeyError, zipfile.BadZipFile, zipfile.LargeZipFile,
            NotImplementedError, MemoryError, OverflowError, UnicodeError,
            RuntimeError) as exc:         # RuntimeError: a member flagged as encrypted
        if isinstance(exc, (FileNotFoundError, IsADirectoryError, PermissionError)):
            raise
        reason = ("numpy could read it only as a pickle, and okl never unpickles"
                  if "allow_pickle" in str(exc) else f"it cannot be read ({type(exc).__name__})")
        raise ModelFileError(f"{source} is not an intact okl model file: {reason}. The file "
                             "is damaged, truncated or not an okl file; save the model again "
                             "with okl.save.") from None
    if not isinstance(raw, np.ndarray) or raw.dtype != np.uint8 or raw.ndim != 1:
        _fail(source, "the header is not a byte string")
    try:
        header = json.loads(raw.tobytes().decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        _fail(source, "the header is not valid JSON")
    if not isinstance(header, dict):
        _fail(source, "the header is not a JSON object")
    if header.get("format") != FORMAT or isinstance(header.get("format"), bool):
        _fail(source, f"the header's format is {header.get('format')!r}, not {FORMAT}")
    _check_header(header, source, "the header")
    return header, arrays


def _check_header(header, source, where):
    """The entries of one estimator's header (the file's, or a nested estimator's)."""
    if not isinstance(header, dict):
        _fail(source, f"{where} is not a JSON object")
    for key, kind in (("class", str), ("params", dict), ("attrs", dict), ("objects", dict)):
        if not isinstance(header.get(key), kind):
            _fail(source, f"{where}'s {key!r} entry is missing or not a {kind.__name__}")
    for key, spec in header["objects"].items():
        if not (isinstance(spec, dict) and isinstance(spec.get("type"), str)
                and isinstance(spec.get("scalars"), dict)):
            _fail(source, f"{where}'s object {key!r} is malformed")
    if not isinstance(header.get("estimators", []), list):
        _fail(source, f"{where}'s 'estimators' entry is not a list")


class StateCheck:
    """Checks of one file's fields; each failure names the field.

    okl.load makes one per file; an estimator's `_check_state` reads the file's
    attributes from `attrs` and model objects from `objects`, and puts the
    attributes to set in `out`.
    """

    def __init__(self, source, est=None, attrs=None, objects=None):
        self.source, self.est = source, est
        self.attrs, self.objects, self.out = attrs or {}, objects or {}, {}

    def fail(self, message):
        _fail(self.source, message)

    def int(self, value, name, lo=0, hi=INT_MAX):
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
            self.fail(f"{name} is {value!r}, not an integer")
        if not lo <= value <= hi:
            self.fail(f"{name} = {value} is outside [{lo}, {hi}]")
        return int(value)

    def float(self, value, name, lo=-math.inf, hi=math.inf, open_lo=False):
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
            self.fail(f"{name} is {value!r}, not a number")
        try:
            value = float(value)
        except OverflowError:
            self.fail(f"{name} is not a finite number")
        if not math.isfinite(value):
            self.fail(f"{name} = {value} is not finite")
        if value < lo or (open_lo and value == lo) or value > hi:
            self.fail(f"{name} = {value!r} is out of range")
        return value

    def array(self, value, name, shape, kind="f", finite=True):
        """value as an ndarray of `shape` (None: any size), float64 (kind "f") or integer
        (kind "i", returned as intp); floats must be finite unless finite=False."""
        if not isinstance(value, np.ndarray):
            self.fail(f"the array {name} is missing or not an array (got {type(value).__name__})")
        if kind == "f" and value.dtype != np.float64:
            self.fail(f"the array {name} has dtype {value.dtype}, expected float64")
        if kind == "i" and (value.dtype.kind not in "iu" or value.dtype.itemsize > 8):
            self.fail(f"the array {name} has dtype {value.dtype}, expected integers")
        if value.ndim != len(shape) or any(s is not None and s != v
                                           for s, v in zip(shape, value.shape)):
            want = "(" + ", ".join("?" if s is None else str(s) for s in shape) + ")"
            self.fail(f"the array {name} has shape {value.shape}, expected {want}")
        if kind == "f" and finite and not np.all(np.isfinite(value)):
            self.fail(f"the array {name} holds NaN or infinity")
        if kind == "i":
            return np.ascontiguousarray(value, dtype=np.intp)
        return np.array(value, dtype=np.float64, order="C")

    def equal(self, value, expected, name):
        if isinstance(value, bool) != isinstance(expected, bool) or value != expected:
            self.fail(f"{name} is {value!r}, but the model's parameters say {expected!r}")

    def keys(self, found, expected, what, optional=()):
        missing = set(expected) - set(found)
        extra = set(found) - set(expected) - set(optional)
        if missing:
            self.fail(f"{what} lacks {sorted(missing)}")
        if extra:
            self.fail(f"{what} has unknown entries {sorted(extra)}")

    def row_keys(self):
        """`_row_keys`, the feature order of dict events (`okl._rows`), when the file has it."""
        if "_row_keys" not in self.attrs:
            return
        keys = self.attrs["_row_keys"]
        if (not isinstance(keys, list) or len(keys) != self.out["n_features_in_"]
                or not all(isinstance(k, (str, int)) for k in keys)):
            self.fail("_row_keys must list the names of the n_features_in_ features")
        self.out["_row_keys"] = tuple(keys)

    def labels(self, value, name, binary):
        """classes_: a 1-D array of distinct numbers or strings (two, sorted, for classifiers)."""
        if not isinstance(value, np.ndarray) or value.ndim != 1 or value.dtype.kind not in "biufU":
            self.fail(f"the array {name} must be a 1-D array of numbers or strings")
        if value.dtype.kind == "f" and not np.all(np.isfinite(value)):
            self.fail(f"the array {name} holds NaN or infinity")
        if len(np.unique(value)) != len(value):
            self.fail(f"the array {name} repeats a label")
        if binary and (len(value) != 2 or not np.array_equal(np.sort(value), value)):
            self.fail(f"the array {name} must hold the two labels, sorted")
        return np.array(value)

    def expansion(self, state, key, d, kernel, budget, policy):
        """Check the state of a kernel expansion against the estimator (kernel, budget, d)."""
        name = f"the expansion {key!r}"
        self.keys(state, ("n_features", "budget", "policy", "scale", "n_rescale", "next_slot",
                           "kernel", *FIRST_KERNEL_PARAMS, "centers", "coef", "sqnorms"),
                  name, optional=later_kernel_params())
        self.equal(state["n_features"], d, f"{key}.n_features")
        self.equal(state["kernel"], kernel["kernel"], f"{key}.kernel")
        self.kernel_fields(state, key, kernel)
        self.equal(self.int(state["budget"], f"{key}.budget", 0, C_INT_MAX), budget,
                    f"{key}.budget")
        self.equal(self.int(state["policy"], f"{key}.policy", 0, max(map(int, BudgetPolicy))),
                    policy, f"{key}.policy")
        scale = self.float(state["scale"], f"{key}.scale", 0.0, open_lo=True)
        self.int(state["n_rescale"], f"{key}.n_rescale")
        coef = self.array(state["coef"], f"{key}.coef", (None,))
        n = len(coef)
        if budget and n > budget:
            self.fail(f"{key} holds {n} centres, more than its budget {budget}")
        if n > C_INT_MAX:
            self.fail(f"{key} holds {n} centres, more than {C_INT_MAX}")
        centers = self.array(state["centers"], f"{key}.centers", (n, d))
        sqnorms = self.array(state["sqnorms"], f"{key}.sqnorms", (n,), finite=False)
        true = np.einsum("ij,ij->i", centers, centers)
        if not np.allclose(sqnorms, true, rtol=1e-10, atol=0.0, equal_nan=False):
            self.fail(f"{key}.sqnorms are not the squared norms of {key}.centers")
        with np.errstate(over="ignore"):
            finite = np.all(np.isfinite(scale * coef))
        if not finite:
            self.fail(f"{key}.scale times {key}.coef is not finite")
        ring = budget if (budget and policy == BudgetPolicy.OLDEST and n == budget) else 1
        self.int(state["next_slot"], f"{key}.next_slot", 0, ring - 1)
        return dict(state, centers=centers, coef=coef, sqnorms=sqnorms)

    def kernel_fields(self, state, key, record, prefix=""):
        """Check every kernel parameter saved in `state` (its names under `prefix`) against
        the estimator's record (`kernel_params_of`); one the file lacks takes its default.
        Returns the record's parameters, under `prefix`."""
        for field, default in KERNEL_PARAMS.items():
            name = f"{key}.{prefix}{field}"
            value = state.get(prefix + field, default)
            value = (self.int(value, name, -C_INT_MAX, C_INT_MAX) if isinstance(default, int)
                     else self.float(value, name))
            self.equal(value, record[field], name)
        return {prefix + field: record[field] for field in KERNEL_PARAMS}

    def features(self, state, d, n_support, gamma, n_classes=0):
        """Check the state of a FeatureModel (okl._feature_model) against the estimator;
        `n_classes` k >= 3: its weights are a matrix W (k, D), its exact phase k-valued."""
        k = n_classes if n_classes >= 3 else 0
        self.keys(state, ("approximation", "n_features", "kernel", "kernel_code",
                           *FIRST_KERNEL_PARAMS, "n_components", "engine", "phase"),
                  "the feature model",
                  optional=later_kernel_params() + tuple(k for k in state
                                                       if k.startswith(("linear_", "fmap_",
                                                                        "expansion_"))))
        record = self.kernel_of(self.est, gamma)          # gamma: gamma_ when fitted
        self.equal(state["approximation"], self.est.approximation, "_expansion.approximation")
        self.equal(state["n_features"], d, "_expansion.n_features")
        self.equal(state["kernel"], self.est.kernel, "_expansion.kernel")
        self.equal(state["kernel_code"], record["kernel"], "_expansion.kernel_code")
        self.kernel_fields(state, "_expansion", record)
        D = self.int(state["n_components"], "_expansion.n_components", 1, C_INT_MAX)
        self.equal(D, self.est.n_components, "_expansion.n_components")
        self.engine(state["engine"], "_expansion.engine")
        fourier = state["approximation"] == "fourier"
        if state["phase"] == "exact":
            if fourier and "_width_moments" not in self.out:
                self.fail("a 'fourier' feature model has an exact phase only during "
                          "gamma='scale''s warm-up")
            if fourier:     # the map drawn at the start (docs/defaults.md, 2): its width is
                # the one it was drawn at, not gamma_, which the warm-up moves in place
                start = dict(record, gamma=self.float(
                    state.get("fmap_gamma"), "_expansion.fmap_gamma", 0.0, open_lo=True))
                self.feature_map(state, "_expansion", start, d, D, "fourier")
            elif any(key.startswith("fmap_") for key in state):
                self.fail("a Nystroem model's exact phase has no feature map yet")
            rest = substate(state, "expansion_")
            est = self.est
            if k:
                rest = self.multi_expansion(rest, "_expansion.expansion", 0, 0, k)
                self.equal(int(rest["n_features"]), d, "_expansion.expansion.n_features")
            else:
                rest = self.expansion(rest, "_expansion.expansion", d, record, 0, 0)
            if len(rest["coef"]) != n_support or (n_support >= D and not fourier):
                self.fail(f"the exact phase holds {len(rest['coef'])} centres; n_support_ = "
                           f"{n_support}, n_components = {D}")
        elif state["phase"] == "linear":
            if n_support != 0:
                self.fail(f"n_support_ = {n_support} but a feature model has no support vectors")
            if k:
                self.equal(self.int(state.get("linear_n_classes"), "_expansion.linear_n_classes",
                                    3, C_INT_MAX), k, "_expansion.linear_n_classes")
                w = self.array(state.get("linear_w"), "_expansion.linear_w", (k, None))
                r = w.shape[1]
                self.equal(self.int(state.get("linear_n_components"),
                                    "_expansion.linear_n_components", 1, C_INT_MAX), r,
                           "_expansion.linear_n_components")
            else:
                if "linear_n_classes" in state:
                    self.fail("_expansion holds a weight matrix of "
                              f"{state['linear_n_classes']} classes; classes_ holds "
                              f"{n_classes}")
                w = self.array(state.get("linear_w"), "_expansion.linear_w", (None,))
                r = len(w)
                self.equal(self.int(state.get("linear_n_components"),
                                    "_expansion.linear_n_components", 1, C_INT_MAX), r,
                           "_expansion.linear_n_components")
            # the map the weights are read through: its kernel is the estimator's, and it
            # gives exactly r features (a Nystroem map rebuilt from its landmarks)
            features = self.feature_map(state, "_expansion", record, d, D,
                                        state["approximation"])
            if r != features:
                self.fail(f"_expansion.linear_w has {r} weights for {features} features of "
                          "its map")
            self.int(state.get("linear_n_rescale"), "_expansion.linear_n_rescale")
            self.float(state.get("linear_scale"), "_expansion.linear_scale", 0.0, open_lo=True)
        else:
            self.fail(f"_expansion.phase = {state['phase']!r} is neither 'exact' nor 'linear'")
        return state

    def feature_map(self, state, key, record, d, D, kind):
        """Check the feature map saved under ``fmap_`` in `state` (random Fourier features or
        a Nystroem map, `kind`) against the estimator's kernel `record`, d features and D
        components; returns the number of features it gives (a Nystroem map is rebuilt from
        its landmarks: its tolerance decides how many)."""
        self.equal(state.get("fmap_kind"), kind, f"{key}.fmap_kind")
        self.equal(state.get("fmap_kernel"), record["kernel"], f"{key}.fmap_kernel")
        self.kernel_fields(state, key, record, "fmap_")
        if kind == "fourier":
            self.equal(state.get("fmap_n_components"), D, f"{key}.fmap_n_components")
            self.equal(state.get("fmap_n_features"), d, f"{key}.fmap_n_features")
            self.array(state.get("fmap_W"), f"{key}.fmap_W", (d, D))
            self.array(state.get("fmap_b"), f"{key}.fmap_b", (D,))
            return D
        tol = self.float(state.get("fmap_tol"), f"{key}.fmap_tol", 0.0, 1.0)
        landmarks = self.array(state.get("fmap_landmarks"), f"{key}.fmap_landmarks", (D, d))
        try:                    # the map itself: K_LL's eigendecomposition, r <= D components
            with np.errstate(all="ignore"):
                built = NystroemFeatures(landmarks, record, tol=tol,
                                         basis=self.basis(state, key))
        except (ValueError, ArithmeticError, np.linalg.LinAlgError):
            self.fail("the Nystroem landmarks give no valid feature map")
        if not np.all(np.isfinite(built.components)):
            self.fail("the Nystroem landmarks give no valid feature map")
        return built.n_components

    def pa_features(self, state, d):
        """Check a RegularizedPAClassifier's feature model state (its feature map rebuilt)."""
        est, check = self.est, self
        D, fourier = est.n_components, est.approximation == "fourier"
        fmap = ("kind", "kernel", "gamma", "n_components", "n_features", "W", "b") if fourier \
            else ("kind", "kernel", "gamma", "degree", "coef0", "tol", "landmarks")
        check.keys(state, ("linear_raw", "linear_scale", "linear_sq_norm")
                   + tuple("fmap_" + k for k in fmap), "the feature model '_model'",
                   optional=tuple("fmap_" + k for k in KERNEL_PARAMS)   # Fourier: no degree
                   + (() if fourier else ("fmap_basis",)))
        gamma = float(self.out.get("gamma_", est.gamma))
        record = self.kernel_of(est, gamma)
        k = len(self.out["classes_"])          # k >= 3: one row of weights per class
        raw = check.array(state["linear_raw"], "_model.linear_raw",
                          (k, None) if k >= 3 else (None,))
        scale = check.float(state["linear_scale"], "_model.linear_scale", 0.0, open_lo=True)
        with np.errstate(over="ignore"):
            if not np.all(np.isfinite(scale * raw)):
                check.fail("_model.linear_scale times _model.linear_raw is not finite")
        sq_norm = check.float(state["linear_sq_norm"], "_model.linear_sq_norm", 0.0)
        check.equal(state["fmap_kind"], est.approximation, "_model.fmap_kind")
        check.equal(state["fmap_kernel"], record["kernel"], "_model.fmap_kernel")
        if fourier:             # random features read no degree nor coef0: a file may lack them
            state = dict(state, fmap_degree=state.get("fmap_degree", record["degree"]),
                         fmap_coef0=state.get("fmap_coef0", record["coef0"]))
        out = dict(linear_raw=raw, linear_scale=scale, linear_sq_norm=sq_norm,
                   fmap_kind=est.approximation, fmap_kernel=record["kernel"],
                   **check.kernel_fields(state, "_model", record, "fmap_"))
        features = check.feature_map(state, "_model", record, d, D, est.approximation)
        if raw.shape[-1] != features:
            check.fail(f"_model.linear_raw has {raw.shape[-1]} weights for {features} "
                       f"{'random Fourier' if fourier else 'Nystroem'} features")
        if fourier:
            return dict(out, fmap_n_components=D, fmap_n_features=d,
                        fmap_W=np.array(state["fmap_W"]), fmap_b=np.array(state["fmap_b"]))
        return dict(out, fmap_tol=float(state["fmap_tol"]),
                    fmap_landmarks=np.array(state["fmap_landmarks"]),
                    fmap_basis=self.basis(state, "_model"))

    def basis(self, state, key):
        """The basis of a Nystroem map (okl._feature_maps.NystroemFeatures): "lower", or
        "eigen" for a file saved before the key existed."""
        basis = state.get("fmap_basis", "eigen")
        if basis not in ("lower", "eigen"):
            self.fail(f"{key}.fmap_basis = {basis!r} is neither 'lower' nor 'eigen'")
        return basis

    def history(self, state, d, kind, buffer, t, n_centres):
        """Check the stored points of a PairwiseLearner's model against its counters."""
        fields = ("y", "X") if kind == "points" else ("y", "idx", "s", "gram")
        self.keys(state, ("n_features", "kind", "buffer", "m") + fields, "the pair history")
        self.equal(state["n_features"], d, "history_n_features")
        self.equal(state["kind"], kind, "history_kind")
        self.equal(state["buffer"], buffer, "history_buffer")
        m = self.int(state["m"], "history_m", 0, t if buffer is None else min(t, buffer))
        if m != (t if buffer is None else min(t, buffer)):
            self.fail(f"history_m = {m} does not match t_ = {t} (buffer={buffer})")
        out = dict(state, y=self.array(state["y"], "history_y", (m,)))
        if kind == "points":
            out["X"] = self.array(state["X"], "history_X", (m, d))
        else:
            idx = self.array(state["idx"], "history_idx", (m,), kind="i")
            if m and (idx.min() < 0 or idx.max() >= n_centres):
                self.fail(f"history_idx points outside the {n_centres} centres of g")
            out.update(idx=idx, s=self.array(state["s"], "history_s", (m,)),
                       gram=self.array(state["gram"], "history_gram", (m, m)))
        return out

    def engine(self, value, name):
        if value not in ("cython", "numpy"):
            self.fail(f"{name} is {value!r}, not 'cython' or 'numpy'")
        return value

    # -- the fitted state of `est`, for its _check_state ----------------------------------

    def floats(self, *names, lo=-math.inf, open_lo=False, optional=False):
        """Copy the attributes `names` into `out` as numbers >= lo (> lo with open_lo)."""
        for key in names:
            if key in self.attrs or not optional:
                self.out[key] = self.float(self.attrs.get(key), key, lo, open_lo=open_lo)

    def model(self, key, types):
        """(type, state) of the object `key`, which must be one of `types` (and the only one)."""
        objects = self.objects
        if set(objects) != {key}:
            self.fail(f"{type(self.est).__name__} holds exactly one model object, {key!r}; the "
                      f"file has {sorted(objects)}")
        if objects[key]["type"] not in types:
            self.fail(f"the object {key!r} is a {objects[key]['type']!r}, expected one of "
                      f"{list(types)}")
        return objects[key]["type"], objects[key]["state"]

    def fitted_expansion(self, state, key, budget, policy):
        """`expansion` against the estimator's kernel (gamma='scale': its fitted gamma_)."""
        gamma = self.est.gamma
        if isinstance(gamma, str):
            if "gamma_" not in self.out:
                self.fail("gamma='scale' needs the fitted gamma_")
            gamma = self.out["gamma_"]
        return self.expansion(state, key, self.out["n_features_in_"],
                              self.kernel_of(self.est, gamma), budget, policy)

    def multi_expansion(self, state, key, budget, policy, k):
        """`fitted_expansion` for a multi-output expansion of k classes (docs/multiclass.md)."""
        state = dict(state)
        if not isinstance(state.get("n_classes"), int) or not isinstance(state.get("n_merges"),
                                                                          int):
            self.fail(f"{key}.n_classes and {key}.n_merges must be integers")
        self.equal(self.int(state.pop("n_classes"), f"{key}.n_classes", 1, C_INT_MAX), k,
                   f"{key}.n_classes")
        merges = self.int(state.pop("n_merges"), f"{key}.n_merges")
        coef = self.array(state.get("coef"), f"{key}.coef", (None, k))
        state["coef"] = np.ascontiguousarray(coef[:, 0])     # the shared checks: one column
        out = self.fitted_expansion(state, key, budget, policy)
        with np.errstate(over="ignore"):
            if not np.all(np.isfinite(out["scale"] * coef)):
                self.fail(f"{key}.scale times {key}.coef is not finite")
        return dict(out, coef=coef, n_classes=k, n_merges=merges)

    def kernel_of(self, est, gamma):
        """The kernel's record the estimator's parameters give (`kernel_params_of`), with
        `gamma` (gamma_ when gamma="scale" set it)."""
        try:
            return kernel_params_of(est, gamma=gamma)
        except (ValueError, TypeError) as exc:
            self.fail(f"its kernel parameters are invalid: {exc}")

    def fitted_gamma(self, needed=True):
        """gamma_, stored exactly when gamma="scale" set it (`needed`: the kernel uses gamma)."""
        if isinstance(self.est.gamma, str) and needed:
            self.floats("gamma_", lo=0.0, open_lo=True)
        elif "gamma_" in self.attrs:
            self.fail(f"gamma_ is stored, but gamma={self.est.gamma!r} sets none")

    def binary_labels(self, max_classes=2):
        """classes_ (sorted, 1 to `max_classes` labels: one while the stream showed one) and
        fixed_classes_ (docs/multiclass.md)."""
        value = self.attrs.get("classes_")
        classes = self.out["classes_"] = self.labels(value, "classes_", binary=False)
        if not 1 <= len(classes) <= max_classes or not np.array_equal(np.sort(classes), classes):
            self.fail(f"the array classes_ must hold 1 to {max_classes} labels, sorted")
        if "fixed_classes_" in self.attrs:
            fixed = self.attrs["fixed_classes_"]
            if not isinstance(fixed, bool):
                self.fail(f"fixed_classes_ is {fixed!r}, not a bool")
            self.out["fixed_classes_"] = fixed
        if len(classes) == 1 and self.out.get("t_", 0) != 0:
            self.fail("with one class in classes_ nothing is learned, yet t_ > 0")
        given = getattr(self.est, "classes", None)
        if given is not None and not np.array_equal(np.sort(np.asarray(given)), classes):
            self.fail("classes_ differs from the parameter classes")



def substate(state, prefix):
    return {k[len(prefix):]: v for k, v in state.items() if k.startswith(prefix)}


def prefixed(prefix, state):
    return {prefix + k: v for k, v in state.items()}


def _expected_kind(expected):
    """`expected` as a tuple of classes (a class, or a tuple of them)."""
    kinds = expected if isinstance(expected, tuple) else (expected,)
    if not kinds or not all(isinstance(k, type) for k in kinds):
        raise TypeError(f"expected must be an estimator class or a tuple of them (e.g. "
                        f"okl.OnlineKernelRegressor), got {expected!r}.")
    return kinds


def load(path: Any, expected: Any = None) -> Any:
    """Read an estimator written by `save`; never unpickles.

    `path` is a file name or a binary file object.  `expected`, a class or a
    tuple of classes, refuses a file that holds another kind of model
    (``okl.load(path, expected=okl.OnlineKernelRegressor)``) before anything
    is built.  Raises `ModelFileError` (a ValueError) when the file is not an
    intact okl model: damaged, truncated, edited, with parameters the
    estimator refuses, or of another kind than `expected`.
    """
    kinds = None if expected is None else _expected_kind(expected)
    source = repr(os.fspath(path)) if isinstance(path, (str, os.PathLike)) else "the file"
    header, arrays = _read(path, source)
    cls = ESTIMATORS.get(header["class"])
    if kinds is not None and cls is not None and not issubclass(cls, kinds):
        names = " or ".join(k.__name__ for k in kinds)
        raise ModelFileError(
            f"{source} holds a model of class {header['class']}, not {names} (expected="
            f"{names}): it is another kind of model. Give the file of the model you meant, or "
            "load it without `expected`.")
    used = set()
    estimator = _build(header, arrays, source, "", 0, used)
    unknown = sorted(set(arrays) - used)
    if unknown:
        _fail(source, f"it holds an unknown array {unknown[0]!r}")
    return estimator


def _references(value, nested, taken, check, where):
    """value with every nested reference ``{"estimator": i}`` replaced by the estimator built
    for it (each used once), and a list of [name, reference] pairs by (name, estimator)."""
    def one(ref):
        i = ref.get("estimator") if isinstance(ref, dict) and len(ref) == 1 else None
        if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < len(nested):
            check.fail(f"{where} refers to no nested estimator ({ref!r})")
        if i in taken:
            check.fail(f"the nested estimator {i} is referred to twice")
        taken.add(i)
        return nested[i]

    if isinstance(value, dict) and "estimator" in value:
        return one(value)
    if isinstance(value, list) and value and all(
            isinstance(v, list) and len(v) == 2 and isinstance(v[0], str)
            and isinstance(v[1], dict) and "estimator" in v[1] for v in value):
        return [(name, one(ref)) for name, ref in value]
    return value


def _build(header, arrays, source, prefix, depth, used):
    """Check and build the estimator of `header` (its arrays under `prefix`; `used` collects
    the array names read): nested estimators first, each as a file of its own."""
    check = StateCheck(source)
    name = header["class"]
    cls = ESTIMATORS.get(name)
    if cls is None:
        check.fail(f"it names an unknown estimator class {name!r}")
    if depth > MAX_NESTING:
        check.fail(f"its estimators nest more than {MAX_NESTING} deep")
    nested = []
    for i, sub in enumerate(header.get("estimators", [])):
        _check_header(sub, source, f"the nested estimator {prefix}est{i}")
        nested.append(_build(sub, arrays, source, f"{prefix}est{i}:", depth + 1, used))
    taken = set()

    own = {k[len(prefix):]: v for k, v in arrays.items() if k.startswith(prefix)
           and not k[len(prefix):].startswith("est")}
    used.update(prefix + k for k in own)

    def gather(kind):
        return {k[len(kind):]: v for k, v in own.items() if k.startswith(kind)}

    for key in own:
        if not key.startswith(("param:", "attr:", "obj:")):
            check.fail(f"it holds an unknown array {prefix + key!r}")
    params = dict(header["params"])
    for key, value in gather("param:").items():
        if key in params:
            check.fail(f"the parameter {key!r} is stored twice")
        params[key] = value
    defaults = _defaults(cls)
    for key in LATER_PARAMS:            # a file saved before the parameter existed: its default
        if key in defaults and key not in params:
            params[key] = defaults[key]
    for key, value in LATER_BEHAVIOUR.items():
        if key in defaults and key not in params:
            params[key] = value
    check.keys(params, defaults, f"the parameters of {name}")
    for key, value in params.items():
        value = params[key] = _references(value, nested, taken, check, f"the parameter {key!r}")
        if isinstance(value, list) and value and all(     # a list of labels, e.g. classes=[0, 1]
                isinstance(v, (int, float, str)) and not isinstance(v, bool) for v in value):
            value = params[key] = np.asarray(value)
            if value.dtype.kind == "U":
                continue
        if isinstance(value, np.ndarray) and (value.dtype.kind not in "iufU" or (  # U: labels
                value.dtype.kind == "f" and not np.all(np.isfinite(value)))):
            check.fail(f"the parameter {key!r} is not an array of finite numbers")
        if isinstance(value, dict) and key == "kernel_params" and all(   # numbers by name
                isinstance(v, (int, float)) and not isinstance(v, bool) for v in value.values()):
            continue
        if isinstance(value, dict) and key == "learner_params" and all(  # values by name
                v is None or isinstance(v, (bool, int, float, str)) for v in value.values()):
            continue
        if isinstance(value, list) and value and all(isinstance(v, tuple) for v in value):
            continue                    # (name, estimator) steps, built above
        if isinstance(value, (list, dict)):
            check.fail(f"the parameter {key!r} is a {type(value).__name__}")
    estimator = cls(**params)
    try:
        estimator._validate_params()
    except (InvalidParameterError, ValueError, TypeError, OverflowError) as exc:
        raise ModelFileError(f"{source} is not an intact okl model file: its parameters are "
                             f"invalid: {exc}") from None

    attrs = dict(header["attrs"])
    for key, value in gather("attr:").items():
        if key in attrs:
            check.fail(f"the attribute {key!r} is stored twice")
        attrs[key] = value
    for key in list(attrs):
        attrs[key] = _references(attrs[key], nested, taken, check, f"the attribute {key!r}")
        if key in params:       # files of okl <= 0.1 store parameters among the attributes too
            same = (np.array_equal(attrs[key], params[key])
                    if isinstance(params[key], np.ndarray) or isinstance(attrs[key], np.ndarray)
                    else attrs[key] == params[key] and type(attrs[key]) is type(params[key]))
            if not same:
                check.fail(f"the attribute {key!r} differs from the parameter {key!r}")
            del attrs[key]
    if len(taken) != len(nested):
        check.fail(f"it holds {len(nested) - len(taken)} nested estimators nothing refers to")
    objects = {}
    for key, spec in header["objects"].items():
        state = dict(spec["scalars"])
        for sub, value in gather(f"obj:{key}:").items():
            if sub in state:
                check.fail(f"the field {key}.{sub} is stored twice")
            state[sub] = value
        objects[key] = {"type": spec["type"], "state": state}
    for key in gather("obj:"):
        if key.split(":", 1)[0] not in objects:
            check.fail(f"the array 'obj:{key}' belongs to no object of the header")

    if not attrs and not objects:
        return estimator                    # an unfitted estimator
    check = StateCheck(source, estimator, attrs, objects)
    for counter in getattr(cls, "_counters", COUNTERS):   # checked first, for _check_state
        check.out[counter] = check.int(attrs.get(counter), counter,
                                       *((1, C_INT_MAX) if counter == "n_features_in_" else ()))
    names = attrs.pop("feature_names_in_", None)      # a DataFrame's columns, every estimator
    if names is not None:
        d = check.out.get("n_features_in_")
        if (not isinstance(names, np.ndarray) or names.dtype.kind != "U"
                or names.shape != (d,) or len(set(names.tolist())) != d):
            check.fail("feature_names_in_ must hold the n_features_in_ distinct column names")
        check.out["feature_names_in_"] = np.asarray(names.tolist(), dtype=object)
    built = estimator._check_state(check)
    state_types = _state_types(type(estimator))
    for key, value in check.out.items():
        setattr(estimator, key, value)
    for key, (kind, state) in built.items():
        setattr(estimator, key, state_types[kind].from_state(state))
    unhonoured = getattr(estimator, "_unhonoured", None)
    if unhonoured is not None and not unhonoured():
        _locks.mark_validated(estimator)    # validated above: the compiled events serve at once
    return estimator


def _defaults(cls):
    """{parameter: its default} of an estimator class (its constructor's signature)."""
    return {p.name: p.default for p in inspect.signature(cls.__init__).parameters.values()
            if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
