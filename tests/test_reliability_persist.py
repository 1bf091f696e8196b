"""Attacks on okl.load: tampered, truncated and random files.

A broken file must raise okl.ModelFileError (a ValueError that names what is
wrong) before anything is built; a file that loads must give a model that
works.  Crash-prone attacks run in a forked child (the `isolated` fixture),
so a segfault fails the test instead of killing pytest.
"""
import functools
import io
import json
import os
import pickle
import tempfile
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import okl
from okl import (
    CoefficientRegularizedClassifier,
    OnlineKernelClassifier,
    OnlineKernelRegressor,
    PairwiseLearner,
    RegularizedPAClassifier,
)

FUZZ = settings(max_examples=250, derandomize=True, database=None, deadline=None,
                suppress_health_check=list(HealthCheck))


def _data(n=24, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, (X[:, 0] > 0).astype(int), X[:, 0] + 0.1 * X[:, 1]


@functools.lru_cache(maxsize=1)
def _models():
    """One fitted model of every kind of state okl.save writes."""
    X, yc, yr = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [
            OnlineKernelRegressor().fit(X, yr),
            OnlineKernelRegressor(budget=8, engine="numpy").fit(X, yr),
            OnlineKernelClassifier(budget=5, budget_policy="smallest").fit(X, yc),
            CoefficientRegularizedClassifier(n_centers=10).fit(X, yc),
            RegularizedPAClassifier(regularization="objective").fit(X, yc),
            RegularizedPAClassifier(kernel="gaussian", budget=7).fit(X, yc),
            RegularizedPAClassifier(regularization="l1", beta=5.0, truncate_sigma=0.01).fit(X, yc),
            RegularizedPAClassifier(kernel="gaussian", approximation="nystroem",
                                    n_components=30).fit(X, yc),      # NOGD's exact phase
            RegularizedPAClassifier(kernel="gaussian", approximation="nystroem",
                                    n_components=4).fit(X, yc),       # on Nystroem features
            RegularizedPAClassifier(kernel="gaussian", approximation="fourier", n_components=5,
                                    random_state=0).fit(X, yc),
            PairwiseLearner().fit(X, yr),
            PairwiseLearner(pair_kernel="difference", buffer=10, random_state=0).fit(X, yr),
            PairwiseLearner(pair_kernel="metric", reducer="dissimilar").fit(X, yc),
            PairwiseLearner(loss="squared", reducer="difference").fit(X, yr),
        ]


_TMP = []


def _path():
    if not _TMP:
        _TMP.append(tempfile.TemporaryDirectory())
    return os.path.join(_TMP[0].name, "model.npz")


def _saved(est):
    okl.save(est, _path())
    with open(_path(), "rb") as file:
        return file.read()


def _load(blob):
    with open(_path(), "wb") as file:
        file.write(blob)
    return okl.load(_path())


def _unpack(blob):
    with np.load(io.BytesIO(blob)) as data:
        header = json.loads(bytes(data["__header__"]).decode())
        arrays = {k: data[k] for k in data.files if k != "__header__"}
    return header, arrays


def _pack(header, arrays, raw_header=None):
    buffer = io.BytesIO()
    text = json.dumps(header).encode() if raw_header is None else raw_header
    np.savez(buffer, __header__=np.frombuffer(text, dtype=np.uint8), **arrays)
    return buffer.getvalue()


def _use(est):
    """What a user does next with a loaded model; it must work (or refuse clearly)."""
    d = est.n_features_in_ if hasattr(est, "n_features_in_") else 3
    X = np.random.default_rng(1).normal(size=(6, d))
    if hasattr(est, "classes_") and len(est.classes_) >= 2:
        y = np.resize(est.classes_, 6)
    elif isinstance(est, PairwiseLearner) and est.reducer == "dissimilar":
        y = np.array([0, 1, 0, 1, 0, 1])
    else:
        y = X[:, 0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            if hasattr(est, "t_"):
                if isinstance(est, PairwiseLearner):
                    values = est.decision_function(X, X[::-1])
                else:
                    values = est.decision_function(X) if hasattr(est, "classes_") \
                        else est.predict(X)
                assert np.all(np.isfinite(values)), "a loaded model predicts non-finite values"
            kwargs = {}
            if (hasattr(est, "classes_") and not hasattr(est, "t_")
                    and not isinstance(est, PairwiseLearner)) or (not hasattr(est, "t_") and isinstance(est, (
                    OnlineKernelClassifier, CoefficientRegularizedClassifier,
                    RegularizedPAClassifier))):
                kwargs = {"classes": np.unique(y)}
            est.partial_fit(X, y, **kwargs)
        except FloatingPointError:
            return        # a divergence on valid data: a clear error, model left as it was
    _load(_saved(est))


def _outcome(blob):
    """'rejected' (ModelFileError) or 'accepted' (loads and works); anything else raises."""
    try:
        est = _load(blob)
    except okl.ModelFileError as exc:
        assert isinstance(exc, ValueError)
        assert "allow_pickle" not in str(exc)
        return "rejected"
    _use(est)
    return "accepted"


# ---- the mutations ---------------------------------------------------------------------------

ODD_SCALARS = [-1, 0, 1, 2, -(2 ** 31), 2 ** 31, 2 ** 63, 10 ** 30, -10 ** 30, 1e308, -1e308,
               float("nan"), float("inf"), -float("inf"), 0.5, -0.5, 1e-320, "x", "", None,
               True, False, [], [1, 2], {}, {"a": 1}]


def _array_mutation(data, arr):
    """arr shortened, lengthened, re-typed, re-shaped or poisoned."""
    kind = data.draw(st.sampled_from(
        ["shorten", "lengthen", "empty", "retype", "reshape", "nonfinite", "huge_int",
         "negative_int", "transpose", "scalar"]))
    flat = arr.reshape(-1)
    if kind == "shorten" and arr.size:
        return arr[:-1] if arr.ndim else flat[:0]
    if kind == "lengthen":
        return np.concatenate([arr.reshape((-1,) + arr.shape[1:]),
                               arr.reshape((-1,) + arr.shape[1:])[:1] if arr.size
                               else np.zeros((1,) + arr.shape[1:], arr.dtype)])
    if kind == "empty":
        return arr[:0] if arr.ndim else np.empty(0)
    if kind == "retype":
        dtype = data.draw(st.sampled_from(["f4", "i4", "i8", "u1", "?", "c16", "U3", "S2",
                                           "f2", "i2"]))
        return arr.astype(dtype) if arr.dtype.kind != "U" else np.zeros(arr.shape, dtype)
    if kind == "reshape" and arr.size:
        return flat if arr.ndim != 1 else flat[:, None]
    if kind == "transpose" and arr.ndim == 2:
        return np.ascontiguousarray(arr.T)
    if kind == "scalar":
        return np.asarray(flat[0] if arr.size else 0.0)
    out = np.array(arr)
    if not out.size:
        return out
    pos = data.draw(st.integers(0, out.size - 1))
    if kind == "nonfinite" and out.dtype.kind == "f":
        out.reshape(-1)[pos] = data.draw(st.sampled_from([np.nan, np.inf, -np.inf]))
    elif kind == "huge_int" and out.dtype.kind in "iu":
        out.reshape(-1)[pos] = np.iinfo(out.dtype).max
    elif kind == "negative_int" and out.dtype.kind == "i":
        out.reshape(-1)[pos] = -data.draw(st.integers(1, 10 ** 6))
    else:
        out.reshape(-1)[pos] = out.reshape(-1)[pos] * 1e6 + 7 if out.dtype.kind in "iuf" \
            else out.reshape(-1)[pos]
    return out


def _scalar_paths(header):
    """Every scalar of the header: (section, key) or ('objects', name, key)."""
    paths = [("params", k) for k in header["params"]] + [("attrs", k) for k in header["attrs"]]
    for name, spec in header["objects"].items():
        paths += [("objects", name, k) for k in spec["scalars"]]
    return paths


def _get(header, path):
    return (header[path[0]][path[1]] if len(path) == 2
            else header["objects"][path[1]]["scalars"][path[2]])


def _set(header, path, value):
    if len(path) == 2:
        header[path[0]][path[1]] = value
    else:
        header["objects"][path[1]]["scalars"][path[2]] = value


def _delete(header, path):
    if len(path) == 2:
        del header[path[0]][path[1]]
    else:
        del header["objects"][path[1]]["scalars"][path[2]]


def _tamper(data, blob):
    header, arrays = _unpack(blob)
    what = data.draw(st.sampled_from(["array", "array", "scalar", "scalar", "drop", "add",
                                      "header", "file"]))
    if what == "array" and arrays:
        key = data.draw(st.sampled_from(sorted(arrays)))
        arrays[key] = _array_mutation(data, arrays[key])
        return _pack(header, arrays)
    if what == "scalar":
        path = data.draw(st.sampled_from(_scalar_paths(header)))
        old = _get(header, path)
        choices = list(ODD_SCALARS)
        if isinstance(old, (int, float)) and not isinstance(old, bool):
            choices += [old + 1, old - 1, old * 2, -old, old + 1000]
        _set(header, path, data.draw(st.sampled_from(choices)))
        return _pack(header, arrays)
    if what == "drop":
        keys = [("array", k) for k in arrays] + [("scalar", p) for p in _scalar_paths(header)]
        kind, key = data.draw(st.sampled_from(keys))
        if kind == "array":
            del arrays[key]
        else:
            _delete(header, key)
        return _pack(header, arrays)
    if what == "add":
        where = data.draw(st.sampled_from(["attr", "array", "object"]))
        if where == "attr":
            header["attrs"][data.draw(st.sampled_from(["fit", "predict", "__class__", "junk_",
                                                       "_model", "_expansion"]))] = 1
        elif where == "array":
            arrays[data.draw(st.sampled_from(["attr:junk_", "attr:t_", "obj:_expansion:coef",
                                              "param:gamma", "obj:_model:raw",
                                              "obj:_model:history_y"]))] = np.ones(3)
        else:
            header["objects"][data.draw(st.sampled_from(["_expansion", "_model"]))] = {
                "type": data.draw(st.sampled_from(["KernelExpansion", "LinearPAModel",
                                                   "NumpyExpansion", "DifferencePairModel",
                                                   "dict"])),
                "scalars": {}}
        return _pack(header, arrays)
    if what == "header":
        kind = data.draw(st.sampled_from(["json", "utf8", "list", "format", "class", "params",
                                          "objects", "missing"]))
        if kind == "json":
            return _pack(header, arrays, raw_header=b"{not json")
        if kind == "utf8":
            return _pack(header, arrays, raw_header=b"\xff\xfe\x00")
        if kind == "list":
            return _pack(header, arrays, raw_header=b"[1, 2]")
        if kind == "format":
            header["format"] = data.draw(st.sampled_from([0, 2, "1", None, 1.5]))
        elif kind == "class":
            header["class"] = data.draw(st.sampled_from(
                ["load", "save", "Nope", "KernelExpansion", "__version__", None, 3]))
        elif kind == "params":
            header["params"] = data.draw(st.sampled_from([None, [], {"nope": 1}, "x"]))
        elif kind == "objects":
            header["objects"] = data.draw(st.sampled_from([None, [], {"_x": 3},
                                                           {"_x": {"type": "LinearPairModel"}}]))
        else:
            del header[data.draw(st.sampled_from(["format", "class", "params", "attrs",
                                                  "objects"]))]
        return _pack(header, arrays)
    # the file itself
    kind = data.draw(st.sampled_from(["truncate", "flip", "random", "empty", "npy"]))
    if kind == "truncate":
        return blob[:data.draw(st.integers(0, len(blob) - 1))]
    if kind == "flip":
        raw = bytearray(blob)
        pos = data.draw(st.integers(0, len(raw) - 1))
        raw[pos] ^= 1 << data.draw(st.integers(0, 7))
        return bytes(raw)
    if kind == "random":
        return data.draw(st.binary(min_size=0, max_size=300))
    if kind == "empty":
        return b""
    buffer = io.BytesIO()
    np.save(buffer, np.arange(5.0))
    return buffer.getvalue()


def _fuzz_tampered_files():
    blobs = [_saved(m) for m in _models()]
    counts = {"tried": 0, "rejected": 0, "accepted": 0}

    @FUZZ
    @given(st.data())
    def attack(data):
        blob = blobs[data.draw(st.integers(0, len(blobs) - 1))]
        outcome = _outcome(_tamper(data, blob))
        counts["tried"] += 1
        counts[outcome] += 1

    attack()
    return counts


def test_tampered_files_raise_model_file_error_or_load_a_working_model(isolated):
    counts = isolated(_fuzz_tampered_files)
    assert counts["tried"] >= 200
    assert counts["rejected"] > counts["accepted"]


# ---- the attacks of the audit, one by one ----------------------------------------------------

def _edit(est, scalars=None, arrays=None):
    """est saved, with header scalars ((section, key) or ('objects', name, key)) and arrays
    replaced (a callable maps the old value to the new one)."""
    header, data = _unpack(_saved(est))
    for path, new in (scalars or {}).items():
        _set(header, path, new(_get(header, path)) if callable(new) else new)
    for key, new in (arrays or {}).items():
        data[key] = new(data[key]) if callable(new) else new
    return _pack(header, data)


def _known_attack(name):
    X, yc, yr = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if name == "budget ring slot":
            blob = _edit(RegularizedPAClassifier(kernel="gaussian", budget=7).fit(X, yc),
                         {("objects", "_model", "next_slot"): 10 ** 6})
        elif name == "ring slot of a regressor":
            blob = _edit(OnlineKernelRegressor(budget=8).fit(X, yr),
                         {("objects", "_expansion", "next_slot"): -5})
        elif name == "pairwise t_":
            blob = _edit(PairwiseLearner().fit(X, yr), {("attrs", "t_"): lambda t: t + 10 ** 5})
        elif name == "pairwise history index":
            blob = _edit(PairwiseLearner(pair_kernel="difference").fit(X, yr),
                         arrays={"obj:_model:history_idx": lambda i: i + 10 ** 6})
        elif name == "shortened centres":
            blob = _edit(OnlineKernelRegressor().fit(X, yr),
                         arrays={"obj:_expansion:centers": lambda c: c[:1]})
        elif name == "lengthened coefficients":
            blob = _edit(OnlineKernelRegressor(budget=8).fit(X, yr),
                         arrays={"obj:_expansion:coef": lambda c: np.tile(c, 3)})
        elif name == "re-typed weights":
            blob = _edit(RegularizedPAClassifier().fit(X, yc),
                         arrays={"obj:_model:raw": lambda w: w.astype(np.float32)})
        elif name == "n_features_in_":
            blob = _edit(RegularizedPAClassifier().fit(X, yc),
                         {("attrs", "n_features_in_"): 100})
        elif name == "Nystroem exact phase past n_components":
            blob = _edit(RegularizedPAClassifier(kernel="gaussian", approximation="nystroem",
                                                 n_components=30).fit(X, yc),
                         {("params", "n_components"): 3, ("objects", "_model", "n_components"): 3})
        elif name == "Nystroem basis of the PA":
            blob = _edit(RegularizedPAClassifier(kernel="gaussian", approximation="nystroem",
                                                 n_components=4).fit(X, yc),
                         {("objects", "_model", "fmap_basis"): "other"})
        elif name == "Nystroem basis of a regressor":
            blob = _edit(OnlineKernelRegressor(approximation="nystroem", n_components=4,
                                               gamma=0.5).fit(X, yr),
                         {("objects", "_expansion", "fmap_basis"): "other"})
        elif name == "random bytes":
            blob = np.random.default_rng(0).bytes(500)
        elif name == "invalid parameter":
            blob = _edit(OnlineKernelRegressor().fit(X, yr), {("params", "lam"): -1.0})
        else:
            raise KeyError(name)
    try:
        est = _load(blob)
    except okl.ModelFileError as exc:
        return str(exc)
    _use(est)
    return None


KNOWN = ["budget ring slot", "ring slot of a regressor", "pairwise t_", "pairwise history index",
         "shortened centres", "lengthened coefficients", "re-typed weights", "n_features_in_",
         "random bytes", "invalid parameter", "Nystroem exact phase past n_components",
         "Nystroem basis of the PA", "Nystroem basis of a regressor"]


@pytest.mark.parametrize("name", KNOWN)
def test_known_tampering_is_refused_by_name(name, isolated):
    message = isolated(_known_attack, name)
    assert message is not None, f"a file with a tampered {name} loaded"
    assert "allow_pickle" not in message


def test_model_file_error_names_the_field(tmp_path):
    X, yc, yr = _data()
    blob = _edit(OnlineKernelRegressor(budget=8).fit(X, yr),
                 {("objects", "_expansion", "next_slot"): 99})
    with pytest.raises(okl.ModelFileError, match="next_slot"):
        _load(blob)
    blob = _edit(OnlineKernelRegressor().fit(X, yr), {("params", "gamma"): -2.0})
    with pytest.raises(okl.ModelFileError, match="gamma"):
        _load(blob)
    path = tmp_path / "noise.npz"
    path.write_bytes(b"\x00" * 64)
    with pytest.raises(okl.ModelFileError, match="okl"):
        okl.load(path)


@pytest.mark.parametrize("index", range(14))
def test_valid_files_still_round_trip(index):
    est = pickle.loads(pickle.dumps(_models()[index]))
    loaded = _load(_saved(est))
    (h1, a1), (h2, a2) = _unpack(_saved(loaded)), _unpack(_saved(est))
    assert h1 == h2 and a1.keys() == a2.keys()
    for key in a1:
        np.testing.assert_array_equal(a1[key], a2[key])
    _use(loaded)


@pytest.mark.parametrize("classes", [[0, 1], ["no", "yes"]])
def test_a_model_built_with_a_list_of_classes_loads(classes, tmp_path):
    import okl
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    y = np.asarray(classes)[(X[:, 0] > 0).astype(int)]
    est = okl.OnlineKernelClassifier(classes=classes).partial_fit(X, y)
    okl.save(est, tmp_path / "m.npz")
    loaded = okl.load(tmp_path / "m.npz")
    np.testing.assert_array_equal(loaded.classes, classes)
    np.testing.assert_array_equal(loaded.predict(X), est.predict(X))
