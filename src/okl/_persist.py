"""okl.save / okl.load: an estimator as one .npz file, without pickle.

The file holds a JSON header (class, parameters, scalar attributes) and the
fitted arrays.  Loading parses JSON and reads arrays with allow_pickle=False,
so a file can never run code.
"""
import json
import os
from typing import Any

import numpy as np

FORMAT = 1


def _state_types(cls):
    """The model classes (get_state / from_state) an estimator class holds, by name."""
    return {model.__name__: model for model in cls._state_classes()}


def _scalar(value):
    """value as a JSON scalar, or raise TypeError."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, np.generic) and value.ndim == 0 and value.dtype.kind in "biuf":
        return value.item()
    if isinstance(value, (list, tuple)) and all(
            v is None or isinstance(v, (bool, int, float, str)) for v in value):
        return list(value)
    raise TypeError(type(value).__name__)


def _split(items, prefix, arrays, what):
    """Scalars of `items` for the header; arrays go to `arrays` under `prefix`."""
    scalars = {}
    for key, value in items.items():
        if isinstance(value, np.ndarray):
            if value.dtype.hasobject:
                raise TypeError(f"okl.save cannot store the object array {what} {key!r}; "
                                "use pickle for this estimator.")
            arrays[prefix + key] = value
            continue
        try:
            scalars[key] = _scalar(value)
        except TypeError:
            raise TypeError(
                f"okl.save stores data only; the {what} {key!r} is a {type(value).__name__}. "
                "Use a plain value (e.g. a number instead of a callable eta) or pickle.") from None
    return scalars


def save(estimator: Any, path: str | os.PathLike) -> None:
    """Write a fitted (or unfitted) okl estimator to the file `path` (NumPy .npz format).

    Parameters must be plain values (a callable eta cannot be saved: use pickle).
    """
    arrays, objects, attrs = {}, {}, {}
    params = _split(estimator.get_params(deep=False), "param:", arrays, "parameter")
    state_types = _state_types(type(estimator))
    for key, value in vars(estimator).items():
        if type(value).__name__ in state_types:
            objects[key] = {"type": type(value).__name__,
                            "scalars": _split(value.get_state(), f"obj:{key}:", arrays, "state")}
        else:
            attrs.update(_split({key: value}, "attr:", arrays, "attribute"))
    header = {"format": FORMAT, "class": type(estimator).__name__, "params": params,
              "attrs": attrs, "objects": objects}
    blob = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
    with open(path, "wb") as file:      # exactly `path`: np.savez would append ".npz"
        np.savez(file, __header__=blob, **arrays)


def load(path: str | os.PathLike) -> Any:
    """Read an estimator written by `save`; never unpickles."""
    import okl

    with np.load(path, allow_pickle=False) as data:
        header = json.loads(bytes(data["__header__"]).decode())
        arrays = {k: data[k] for k in data.files if k != "__header__"}
    if header.get("format") != FORMAT:
        raise ValueError(f"{path} is not an okl file of format {FORMAT}.")
    name = header["class"]
    if name not in okl.__all__ or not isinstance(getattr(okl, name), type):
        raise ValueError(f"{path} names an unknown estimator class {name!r}.")

    def gather(prefix):
        return {k[len(prefix):]: v for k, v in arrays.items() if k.startswith(prefix)}

    params = {**header["params"], **gather("param:")}
    estimator = getattr(okl, name)(**params)
    for key, value in {**header["attrs"], **gather("attr:")}.items():
        setattr(estimator, key, value)
    state_types = _state_types(type(estimator))
    for key, spec in header["objects"].items():
        state = {**spec["scalars"], **gather(f"obj:{key}:")}
        setattr(estimator, key, state_types[spec["type"]].from_state(state))
    return estimator
