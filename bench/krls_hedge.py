"""Second-order learners over widths: KernelRLSRegressor at every width of its grid, combined.

The question of issue 35 item 6: should the parameter-free regressor combine KRLS learners
over widths (as MultiKernelRegressor combines first-order ones), or is KernelRLSRegressor's
own choice of the width by the evidence of its warm-up enough?  This script builds the pool
outside okl and measures it beside KernelRLSRegressor() and the first-order
MultiKernelRegressor(learner="sgd") on the
streams of bench/krls_defaults.py, same protocol (progressive RMSE of the last 20%, dB for
the series; tabular rows through an online standard scaler).

The pool: one `KernelRLSRegressor(gamma=f * g0, noise="auto")` per factor f of the width
grid (okl._numpy.krls.WIDTH_FACTORS), g0 the scale rule on the first 100 (scaled) rows, so
that each learner's warm-up evidence picks its noise.  Two combinations of their progressive
predictions f_k, both with a fixed share of 1e-3:

- "hedge": MultiKernelRegressor's rule on the squared loss, q_k *= beta**(loss_k / S_t),
  beta = 0.3, S_t the largest loss of any learner so far;
- "bayes": Bayesian model averaging over the widths, q_k *= N(y; f_k, s_k^2), s_k the
  learner's predictive standard deviation (noise included): the evidence, online.

The built learner is the same pool inside okl, `MultiKernelRegressor()` (the widths of the
scale rule followed online, a linear learner, the combination compiled, the learners below
the weight floor sleep="auto" sleeping), a column of its own, with the exact average
(sleep=None), a smaller budget per learner as the cheaper variant, and other floors
(`--sleep`).

    python bench/krls_hedge.py                          # every stream
    python bench/krls_hedge.py --streams sine diabetes --factors 0.25 1 4
    python bench/krls_hedge.py --built-only             # without the pool built here
    python bench/krls_hedge.py --built-only --columns "Regressor()" sgd --no-ridge
    python bench/krls_hedge.py --built-only --columns "KernelRLS" "sleep" --sleep 0.01 0.03
    python bench/krls_hedge.py --built-only --no-ridge --mode events   # one event at a time

Each cell of okl's learners: the figure, then the CPU time per event over the whole stream
(the median of `--repeat` runs) and its multiple of `KernelRLSRegressor()`'s.

`--mode` sets how okl's learners take the streams: "events" one event at a time
(`predict_one` then `learn_one`), "chunks" one `_progressive_scores` call per stream (the
tabular rows scaled beforehand, one event at a time, as the pipeline scales them to learn),
"default" the tabular streams through the pipeline's events and the series in one chunk.
"""
import argparse
import sys
import time
import warnings

import numpy as np
from sklearn.preprocessing import StandardScaler

from okl import KernelRLSRegressor, MultiKernelRegressor
from okl._gamma import scale_gamma
from okl._numpy.krls import WIDTH_FACTORS
from okl.preprocessing import OnlineStandardScaler

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from krls_defaults import figure, hindsight_ridge, okl_learner, okl_scores, streams  # noqa: E402

SHARE = 1e-3
BETA = 0.3


def pool_predictions(X, y, kind, factors):
    """(n, K) progressive means and standard deviations of the pool's learners."""
    head = StandardScaler().fit_transform(X[:100]) if kind == "tabular" else X[:100]
    g0 = scale_gamma(head)
    learners = [KernelRLSRegressor(gamma=f * g0) for f in factors]
    scaler = OnlineStandardScaler() if kind == "tabular" else None
    n, K = len(y), len(learners)
    F, S = np.empty((n, K)), np.empty((n, K))
    for i in range(n):
        x = X[i]
        z = scaler.transform_one(x) if scaler is not None and i > 0 else x
        for k, est in enumerate(learners):
            if i == 0:
                F[i, k], S[i, k] = 0.0, np.std(y[:1]) + 1.0
            else:
                F[i, k], S[i, k] = est.predict_one(z, return_std=True)
        if scaler is not None:
            scaler.learn_one(x)
            z = scaler.transform_one(x)
        for est in learners:
            est.learn_one(z, float(y[i]))
    return F, S


def combine(F, S, y, rule):
    n, K = F.shape
    logq = np.full(K, -np.log(K))
    worst = 0.0
    pred = np.empty(n)
    for i in range(n):
        q = np.exp(logq - logq.max())
        q /= q.sum()
        pred[i] = q @ F[i]
        r2 = (F[i] - y[i]) ** 2
        if rule == "hedge":
            worst = max(worst, r2.max())
            if worst > 0:
                logq += np.log(BETA) * r2 / worst
        else:
            s2 = np.maximum(S[i] ** 2, 1e-300)
            logq += -0.5 * (np.log(2 * np.pi * s2) + r2 / s2)
        q = np.exp(logq - logq.max())
        q = (1 - SHARE) * q / q.sum() + SHARE / K
        logq = np.log(q)
    return pred, q


def scaled_rows(X):
    """The rows as the pipeline's online scaler gives them to learn (moments with the row)."""
    scaler = OnlineStandardScaler()
    Z = np.empty(X.shape)
    for i in range(len(X)):
        scaler.learn_one(X[i])
        Z[i] = scaler.transform_one(X[i])
    return Z


def built_scores(make, X, y, kind, mode):
    """(progressive predictions, the learner) of an okl learner in the given mode (chunks:
    the tabular rows already scaled, `scaled_rows`)."""
    if mode == "default":
        est = okl_learner(make(), kind)
        return okl_scores(est, X, y), est
    est = okl_learner(make(), "series" if mode == "chunks" else kind)
    if mode == "chunks":
        return est._progressive_scores(X, y, reset=True), est
    pred = np.empty(len(y))
    for i in range(len(y)):
        pred[i] = est.predict_one(X[i])
        est.learn_one(X[i], float(y[i]))
    return pred, est


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--streams", nargs="*", default=None)
    parser.add_argument("--factors", nargs="*", type=float, default=list(WIDTH_FACTORS))
    parser.add_argument("--built-only", action="store_true",
                        help="only okl's learners and KernelRidge, not the pool built here")
    parser.add_argument("--sleep", nargs="*", type=float, default=[0.01],
                        help="the weight floors of the sleeping pools' columns")
    parser.add_argument("--columns", nargs="*", default=None,
                        help="only the built columns whose label holds one of these")
    parser.add_argument("--mode", choices=("default", "events", "chunks"), default="default",
                        help="how okl's learners take the streams (see above)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="runs of each okl learner; the cost is their median")
    parser.add_argument("--no-ridge", action="store_true",
                        help="with --built-only: without the KernelRidge column")
    args = parser.parse_args(argv)
    data = streams()
    warnings.simplefilter("ignore")
    built = {"KernelRLSRegressor()": KernelRLSRegressor,
             "MultiKernelRegressor()": MultiKernelRegressor,
             "MultiKernelRegressor(learner='sgd')": lambda: MultiKernelRegressor(learner="sgd"),
             "... sleep=None": lambda: MultiKernelRegressor(sleep=None),
             "... sleep=None, learner_params={'budget': 50}": lambda: MultiKernelRegressor(
                 sleep=None, learner_params={"budget": 50}),
             **{f"... sleep={floor:g}": (lambda floor=floor: MultiKernelRegressor(
                 sleep=floor)) for floor in args.sleep}}
    if args.columns:
        built = {k: v for k, v in built.items() if any(c in k for c in args.columns)}
    outside = () if args.built_only else ("pool: best width", "pool: hedge", "pool: bayes")
    rows = {k: [] for k in (*built, *outside, "KernelRidge (hindsight)")}
    names = args.streams or list(data)
    for name in names:
        X, y, kind = data[name]
        rows_in = scaled_rows(X) if args.mode == "chunks" and kind == "tabular" else X
        single = None       # KernelRLSRegressor()'s cost: the others' as a multiple of it
        for label, make in built.items():
            costs = []
            for _ in range(args.repeat):
                start = time.process_time()
                pred, est = built_scores(make, rows_in, y, kind, args.mode)
                costs.append((time.process_time() - start) / len(y) * 1e6)
            value, cost = figure(pred, y, kind), float(np.median(costs))
            single = cost if make is KernelRLSRegressor else single
            learner = est.steps[-1][1] if hasattr(est, "steps") else est
            top = ""
            if getattr(learner, "learner", "") == "krls":
                gammas = learner.gammas_
                k = int(np.argmax(learner.weights_))
                top = (", linear" if np.isnan(gammas[k])
                       else f", x{learner.learners_[k]._width_factor:g}")
            ratio = f", {cost / single:.1f}x" if single and make is not KernelRLSRegressor else ""
            rows[label].append(f"{value:.3f} ({cost:.3g} us{ratio}{top})")
        if args.built_only:
            rows["KernelRidge (hindsight)"].append(
                "-" if args.no_ridge else f"{hindsight_ridge(X, y, kind):.3f}")
            print(name, {k: v[-1] for k, v in rows.items()}, flush=True)
            continue
        start = time.process_time()
        F, S = pool_predictions(X, y, kind, args.factors)
        cost = (time.process_time() - start) / len(y) * 1e6
        each = [figure(F[:, k], y, kind) for k in range(F.shape[1])]
        best = int(np.argmin(each))
        rows["pool: best width"].append(f"{each[best]:.3f} (x{args.factors[best]:g})")
        for rule in ("hedge", "bayes"):
            pred, q = combine(F, S, y, rule)
            top = args.factors[int(np.argmax(q))]
            rows[f"pool: {rule}"].append(f"{figure(pred, y, kind):.3f} ({cost:.0f} us, x{top:g})")
        rows["KernelRidge (hindsight)"].append(f"{hindsight_ridge(X, y, kind):.3f}")
        print(name, {k: v[-1] for k, v in rows.items()}, flush=True)
    print()
    print("| learner | " + " | ".join(names) + " |")
    print("|" + "---|" * (len(names) + 1))
    for label, row in rows.items():
        print(f"| {label} | " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
