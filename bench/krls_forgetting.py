"""KRLS's two forgetting modes on the streams of bench/krls_defaults.py (docs/krls.md, section 11).

Rows: `KernelRLSRegressor()` and `KernelRLSRegressor(forgetting=lam, forgetting_mode=mode)` for
each lambda of `--lambdas` and mode of `--modes` (default "inflate"), and with `--pools` the pool
`MultiKernelRegressor()` as built ("built": its linear learner and the one that forgets by
uncertainty injection), without the second one ("without": the pool before it) or with it in
place of the first ("replace").  Same protocol as
bench/krls_defaults.py: progressive RMSE of the last 20% of the tabular streams (one event at a
time through `OnlineStandardScaler`, its moments running, or with `--freeze-after` held after that
many events), 10 log10 MSE after 1000 events for the series, and the CPU time per event.

    python bench/krls_forgetting.py                           # KRLS, lambdas 0.999 0.998 0.995
    python bench/krls_forgetting.py --freeze-after 100        # the settled scaler
    python bench/krls_forgetting.py --lambdas --pools built without replace
    python bench/krls_forgetting.py --streams linear --modes prior inflate --lambdas 0.999
"""
import argparse
import sys
import time
import warnings

import okl.multikernel as multikernel
from okl import KernelRLSRegressor, MultiKernelRegressor

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from krls_defaults import figure, okl_learner, okl_scores, streams  # noqa: E402

POOL_MEMBERS = {
    "built": lambda members: members,
    "without": lambda members: [m for m in members if m[0] != "tracking"],
    "replace": lambda members: [m for m in members if m[0] != "linear"],
}


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
    args = parser.parse_args(argv)
    data = streams()
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
    rows = []
    for label, (make, undo) in learners.items():
        row = [label]
        for name in names:
            X, y, kind = data[name]
            start = time.process_time()
            try:
                pred = okl_scores(okl_learner(make(), kind, args.freeze_after), X, y)
            finally:
                undo()
            cost = (time.process_time() - start) / len(y) * 1e6
            row.append(f"{figure(pred, y, kind):.3f} ({cost:.0f} us)")
            print(label, name, row[-1], flush=True)
        rows.append(row)
    print()
    print("| learner | " + " | ".join(names) + " |")
    print("|" + "---|" * (len(names) + 1))
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
