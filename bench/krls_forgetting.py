"""KRLS's two forgetting modes on the streams of bench/krls_defaults.py (docs/krls.md, section 11).

Rows: `KernelRLSRegressor()` and `KernelRLSRegressor(forgetting=lam, forgetting_mode=mode)` for
each lambda of `--lambdas` and mode of `--modes` (default "inflate"), and with `--pools` the pool
`MultiKernelRegressor()` as built ("built": its linear learner and the one that forgets by
uncertainty injection), without the second one ("without": the pool before it) or with it in
place of the first ("replace").  Same protocol as
bench/krls_defaults.py: progressive RMSE of the last 20% of the tabular streams (one event at a
time through `OnlineStandardScaler`, its moments running, or with `--freeze-after` held after that
many events), 10 log10 MSE after 1000 events for the series, and the CPU time per event.
With `--whole`, two more tabular streams scored on the whole stream (progressive RMSE of every
event): "drifting", `okl.synth.drifting_friedman(10000, random_state=0)` (changes at 2000, 4000,
6000, 8000), and "diabetes all", the diabetes stream.  With `--coverage`, each KRLS row's
`ConformalRegressor` (alpha 0.1) instead, one event at a time on 6000 raw events of a
heteroscedastic sine (x uniform on [-3, 3]^2, y = sin(x0) + (0.1 + 0.3 |x1|) N(0, 1), seed 1) and of
`okl.synth.drifting_friedman(6000, random_state=1)`: the coverage overall and the lowest of the
500-event windows after event 500.

    python bench/krls_forgetting.py                           # KRLS, lambdas 0.999 0.998 0.995
    python bench/krls_forgetting.py --freeze-after 100        # the settled scaler
    python bench/krls_forgetting.py --lambdas --pools built without replace
    python bench/krls_forgetting.py --streams linear --modes prior inflate --lambdas 0.999
    python bench/krls_forgetting.py --whole --streams drifting "diabetes all" --lambdas 0.999
    python bench/krls_forgetting.py --coverage --modes prior --lambdas 1.0
"""
import argparse
import sys
import time
import warnings

import numpy as np

import okl.multikernel as multikernel
from okl import ConformalRegressor, KernelRLSRegressor, MultiKernelRegressor
from okl.synth import drifting_friedman

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from krls_defaults import figure, okl_learner, okl_scores, streams  # noqa: E402

POOL_MEMBERS = {
    "built": lambda members: members,
    "without": lambda members: [m for m in members if m[0] != "tracking"],
    "replace": lambda members: [m for m in members if m[0] != "linear"],
}


def whole_streams(data):
    """The streams of `--whole`: (X, y, "whole"), learned as the tabular ones."""
    X, y, _ = drifting_friedman(10000, random_state=0)
    return {"drifting": (X, y, "whole"), "diabetes all": (*data["diabetes"][:2], "whole")}


def score(pred, y, kind):
    """`figure`, or with kind "whole" the progressive RMSE of every event."""
    if kind == "whole":
        return float(np.sqrt(np.mean((pred - y) ** 2)))
    return figure(pred, y, kind)


def coverage(make, n=6000):
    """`--coverage`: {stream: (coverage, lowest 500-event window after 500)} of
    ConformalRegressor(make()) one event at a time."""
    rng = np.random.default_rng(1)
    X = rng.uniform(-3, 3, (n, 2))
    y = np.sin(X[:, 0]) + (0.1 + 0.3 * np.abs(X[:, 1])) * rng.standard_normal(n)
    out = {}
    for name, (X, y) in (("heteroscedastic sine", (X, y)),
                         ("drifting", drifting_friedman(n, random_state=1)[:2])):
        model, covered = ConformalRegressor(make()), np.empty(n)
        for i in range(n):
            lo, hi = model.predict_interval_one(X[i])
            covered[i] = lo <= y[i] <= hi
            model.learn_one(X[i], float(y[i]))
        windows = np.convolve(covered[500:], np.ones(500) / 500, mode="valid")
        out[name] = (covered.mean(), windows.min())
    return out


def pool(variant):
    """MultiKernelRegressor() whose learners are `POOL_MEMBERS[variant]` of the built pool's."""
    build = multikernel._pool

    def make():
        multikernel._pool = lambda *args: POOL_MEMBERS[variant](build(*args))
        return MultiKernelRegressor()
    return make, lambda: setattr(multikernel, "_pool", build)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--streams", nargs="*", default=None)
    parser.add_argument("--lambdas", nargs="*", type=float, default=[0.999, 0.998, 0.995])
    parser.add_argument("--modes", nargs="*", default=["inflate"], choices=["prior", "inflate"])
    parser.add_argument("--pools", nargs="*", default=[], choices=sorted(POOL_MEMBERS))
    parser.add_argument("--freeze-after", type=int, default=None)
    parser.add_argument("--whole", action="store_true")
    parser.add_argument("--coverage", action="store_true")
    args = parser.parse_args(argv)
    data = streams()
    if args.whole:
        data.update(whole_streams(data))
    names = args.streams or list(data)
    learners = {"KernelRLSRegressor()": (KernelRLSRegressor, lambda: None)}
    for mode in args.modes:
        for lam in args.lambdas:
            learners[f"{mode} {lam}"] = (
                lambda lam=lam, mode=mode: KernelRLSRegressor(forgetting=lam, forgetting_mode=mode),
                lambda: None)
    for variant in args.pools:
        learners[f"MultiKernelRegressor() {variant}"] = pool(variant)
    warnings.simplefilter("ignore")
    if args.coverage:
        for label, (make, _) in learners.items():
            if not label.startswith("MultiKernelRegressor"):
                cells = [f"{name} {c:.3f} / {w:.3f}" for name, (c, w) in coverage(make).items()]
                print(label, ", ".join(cells), flush=True)
        return
    rows = []
    for label, (make, undo) in learners.items():
        row = [label]
        for name in names:
            X, y, kind = data[name]
            start = time.process_time()
            try:
                learner = okl_learner(make(), "tabular" if kind == "whole" else kind,
                                      args.freeze_after)
                pred = okl_scores(learner, X, y)
            finally:
                undo()
            cost = (time.process_time() - start) / len(y) * 1e6
            row.append(f"{score(pred, y, kind):.3f} ({cost:.0f} us)")
            print(label, name, row[-1], flush=True)
        rows.append(row)
    print()
    print("| learner | " + " | ".join(names) + " |")
    print("|" + "---|" * (len(names) + 1))
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
