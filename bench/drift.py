"""Streams that change (docs/drift.md): recovery on okl's drifting streams, the cost on
stationary data, and the cost per event.

    python bench/drift.py recovery     # okl.synth's four drifting streams, each learner
                                       # without and with adaptation, river's adaptive
                                       # forest and tree beside: overall, after each change,
                                       # delay back (okl.evaluation.recovery)
    python bench/drift.py stationary   # scikit-learn's bundled data sets, shuffled five
                                       # times: what adaptation costs where nothing changes
    python bench/drift.py cost         # microseconds per event, one event at a time and in
                                       # chunks of 1000: the same learners without and with
                                       # adaptation, river's ARF and HAT, in one run
    python bench/drift.py krls         # KernelRLSRegressor without and with the detector (and
                                       # with its own forgetting): the drifting Friedman
                                       # target, stationary streams (false alarms), the cost
    python bench/drift.py tune         # Page-Hinkley's delta and threshold, and KEEP, on the
                                       # drifting streams, the drifting digits and three long
                                       # noisy stationary streams (false alarms)

Every stream is predicted, then learned, one event at a time in order (progressive
validation); okl's learners run untuned (their defaults) and with one parameter more.  river is
a bench-only peer here: its learners run on okl's streams, never its data sets or generators.
Timings are noisy on a shared machine: the load average is printed beside them, and the
ratios are measured in the same run.
"""
import os
import sys
import time
import warnings

import numpy as np
from sklearn.datasets import (
    load_breast_cancer, load_diabetes, load_digits, load_iris, load_wine,
)

from okl import (
    CoefficientRegularizedClassifier, KernelRLSRegressor, OnlineKernelClassifier,
    OnlineKernelRegressor, RegularizedPAClassifier,
)
from okl.evaluation import progressive_validation, recovery
from okl.synth import (
    concept_switch, drifting_friedman, lorenz, mackey_glass, moving_clusters, rotating_hyperplane,
)

from scaled_streams import online_scaled

SEEDS = (0, 1, 2)
N = 10000
STREAMS = {                         # name: (generator, task)
    "moving clusters": (moving_clusters, "classification"),
    "concept switch": (concept_switch, "classification"),
    "rotating hyperplane": (rotating_hyperplane, "classification"),
    "drifting Friedman": (drifting_friedman, "regression"),
}
PLAIN = {"drift_detector": None}              # the papers' iterates
ADAPT = {"drift_detector": "page_hinkley"}
CLASSIFIERS = {
    "OnlineKernelClassifier": OnlineKernelClassifier,
    "RegularizedPAClassifier (gaussian)":
        lambda **kw: RegularizedPAClassifier(kernel="gaussian", budget=500, **kw),
    "CoefficientRegularizedClassifier": CoefficientRegularizedClassifier,
}
REGRESSORS = {"OnlineKernelRegressor": OnlineKernelRegressor}


def load():
    return f"load average {os.getloadavg()[0]:.1f} (2 cores)"


def river_peers(task):
    """river's adaptive learners, untuned (None when river is not installed)."""
    try:
        from river import forest, tree
    except ImportError:
        return {}
    if task == "classification":
        return {"river ARFClassifier": lambda: forest.ARFClassifier(seed=0),
                "river HoeffdingAdaptiveTreeClassifier":
                    lambda: tree.HoeffdingAdaptiveTreeClassifier(seed=0)}
    return {"river ARFRegressor": lambda: forest.ARFRegressor(seed=0),
            "river HoeffdingAdaptiveTreeRegressor":
                lambda: tree.HoeffdingAdaptiveTreeRegressor(seed=0)}


def river_predictions(make, X, y, task):
    """Predict, then learn, each event with a river model: (predictions, seconds)."""
    model = make()
    names = [f"x{j}" for j in range(X.shape[1])]
    out = np.empty(len(y), dtype=np.float64)
    start = time.perf_counter()
    for i, (x, target) in enumerate(zip(X, y.tolist())):
        event = dict(zip(names, x.tolist()))
        p = model.predict_one(event)
        out[i] = np.nan if p is None else p
        model.learn_one(event, target)
    seconds = time.perf_counter() - start
    if task == "classification":
        out = np.where(np.isnan(out), -1, out).astype(np.int64)
    else:
        out = np.nan_to_num(out)
    return out, seconds


def okl_predictions(est, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        result = progressive_validation(est, X, y)
        return result.predictions, time.perf_counter() - start


def cell(recs):
    """overall; mean level after the changes; mean delay (never: the stretch's length)."""
    overall = np.mean([r.overall for r in recs])
    after = np.mean([np.mean(r.after) for r in recs])
    delays = np.concatenate([r.delay for r in recs])
    never = int(np.isnan(delays).sum())
    gap = N // 5
    delay = np.mean(np.where(np.isnan(delays), gap, delays))
    text = f"{overall:.4f} / {after:.4f} / {delay:.0f}"
    return text + (f" ({never} never)" if never else "")


def side_by_side(models, X, y, path, block, **first):
    """us per event of each model learning the same stream side by side: the first block by
    each (partial_fit with `first`), then every later block (path "events": predict_one, then
    learn_one, one event at a time; "chunks": one partial_fit) by one model after the other,
    the process's CPU time of each block summed (so that the machine's other work shifts
    neither)."""
    n, targets = len(y), y.tolist()
    for est in models:
        est.partial_fit(X[:block], y[:block], **first)
    seconds = [0.0] * len(models)
    for lo in range(block, n, block):
        for k, est in enumerate(models):
            start = time.process_time()
            if path == "events":
                for i in range(lo, min(lo + block, n)):
                    est.predict_one(X[i])
                    est.learn_one(X[i], targets[i])
            else:
                est.partial_fit(X[lo:lo + block], y[lo:lo + block])
            seconds[k] += time.process_time() - start
    return [sec / (n - block) * 1e6 for sec in seconds]


def recovery_table(river=True):
    print(f"okl.synth streams of {N} events, drifts at 2000, 4000, 6000, 8000; seeds {SEEDS}; "
          "window 500, tolerance 0.01 (RMSE: 1 %); " + load())
    print("cells: overall / mean level over the 500 events after each change / mean delay "
          "back within the tolerance of the level before (events; never: counted as 2000)")
    for name, (make_stream, task) in STREAMS.items():
        streams = [make_stream(N, random_state=seed) for seed in SEEDS]
        metric = "RMSE" if task == "regression" else "accuracy"
        print(f"\n{name} ({metric})")
        print("| learner | drift_detector=None | drift_detector='page_hinkley' | "
              "ms per 1000 events |")
        print("|---|---|---|---|")
        learners = REGRESSORS if task == "regression" else CLASSIFIERS
        for label, make in learners.items():
            cells, seconds = [], 0.0
            for adapt in (PLAIN, ADAPT):
                recs = []
                for X, y, drifts in streams:
                    pred, s = okl_predictions(make(**adapt), X, y)
                    recs.append(recovery(y, pred, drifts))
                    seconds += s
                cells.append(cell(recs))
            per = 1000 * seconds / (2 * len(streams) * N) * 1000
            print(f"| {label} | {cells[0]} | {cells[1]} | {per:.0f} |")
        if not river:
            continue
        for label, make in river_peers(task).items():
            recs, seconds = [], 0.0
            for X, y, drifts in streams:
                pred, s = river_predictions(make, X, y, task)
                recs.append(recovery(y, pred, drifts, metric="rmse" if task == "regression"
                                     else "accuracy"))
                seconds += s
            print(f"| {label} | {cell(recs)} | (adapts by itself) | "
                  f"{1000 * seconds / (len(streams) * N) * 1000:.0f} |")


def stationary_sets():
    digits = load_digits(return_X_y=True)
    return {
        "digits 0-4 vs 5-9": ((digits[0], (digits[1] >= 5).astype(int)), "classification"),
        "digits odd vs even": ((digits[0], digits[1] % 2), "classification"),
        "breast cancer": (load_breast_cancer(return_X_y=True), "classification"),
        "digits (10 classes)": (digits, "classification"),
        "wine (3 classes)": (load_wine(return_X_y=True), "classification"),
        "iris (3 classes)": (load_iris(return_X_y=True), "classification"),
        "diabetes": (load_diabetes(return_X_y=True), "regression"),
    }


def stationary(shuffles=5):
    print(f"scikit-learn's bundled data sets, each shuffled {shuffles} times and standardised "
          "online; mean over the shuffles; " + load())
    print("| data set | learner | drift_detector=None | drift_detector='page_hinkley' | "
          "difference | changes seen |")
    print("|---|---|---|---|---|---|")
    worst = 0.0
    for name, ((X, y), task) in stationary_sets().items():
        runs = [online_scaled(X, y, seed=seed) for seed in range(shuffles)]
        learners = REGRESSORS if task == "regression" else CLASSIFIERS
        for label, make in learners.items():
            scores, changes = [], 0
            for adapt in (PLAIN, ADAPT):
                values = []
                for Z, t in runs:
                    est = make(**adapt)
                    pred, _ = okl_predictions(est, Z, t)
                    values.append(np.sqrt(np.mean((pred - t) ** 2)) if task == "regression"
                                  else np.mean(pred == t))
                    changes += est.n_drifts_
                scores.append(np.mean(values))
            diff = scores[1] - scores[0]
            if task == "classification":
                worst = min(worst, diff)
            print(f"| {name} | {label} | {scores[0]:.4f} | {scores[1]:.4f} | {diff:+.4f} | "
                  f"{changes} |")
    print(f"\nlargest accuracy loss: {-worst:.4f}")


def cost(n=20000, block=500):
    """us per event of the same learner without and with the detector, learning the same
    stream side by side (`side_by_side`: one event at a time, then in chunks).  The streams
    do not change: the detector sees no change and both hold the same model, so the
    difference is the detector's own cost (on a changing stream the models, and their costs,
    differ)."""
    print(f"{n} events of okl.synth.concept_switch(drifts=0) (10 features, 2 classes) and "
          f"drifting_friedman(drifts=0) (10 features); blocks of {block} events alternating "
          "between the two settings; CPU time of the process; " + load())
    print("| learner | one event at a time: us/event, drift_detector=None | page_hinkley | ratio "
          "| chunks of 500: us/event, None | page_hinkley | ratio |")
    print("|---|---|---|---|---|---|---|")
    Xc, yc, _ = concept_switch(n, drifts=0, random_state=0)
    Xr, yr, _ = drifting_friedman(n, drifts=0, random_state=0)
    learners = [(label, make, Xc, yc) for label, make in CLASSIFIERS.items()]
    learners += [(label, make, Xr, yr) for label, make in REGRESSORS.items()]
    for label, make, X, y in learners:
        fixed = {} if "Regressor" in label else {"classes": np.unique(y)}
        row = []
        for path in ("events", "chunks"):
            models = [make(**adapt) for adapt in (PLAIN, ADAPT)]
            per = side_by_side(models, X, y, path, block, **fixed)
            if models[1].n_drifts_:
                print(f"({label}: the detector saw {models[1].n_drifts_} changes)")
            row += [f"{per[0]:.1f}", f"{per[1]:.1f}", f"{per[1] / per[0]:.2f}"]
        print(f"| {label} | " + " | ".join(row) + " |", flush=True)
    for task, X, y in (("classification", Xc, yc), ("regression", Xr, yr)):
        for label, make in river_peers(task).items():
            m = min(n, 3000)
            model = make()
            names = [f"x{j}" for j in range(X.shape[1])]
            start = time.process_time()
            for x, target in zip(X[:m], y[:m].tolist()):
                event = dict(zip(names, x.tolist()))
                model.predict_one(event)
                model.learn_one(event, target)
            per = (time.process_time() - start) / m * 1e6
            print(f"| {label} ({m} events, dicts) | {per:.0f} | | | | | |", flush=True)
    print(load())


def krls(block=500):
    """KernelRLSRegressor (its defaults) without a detector, with Page-Hinkley (the default),
    with Page-Hinkley and no forgetting (lambda = 1, KRLS-T's stationary posterior), and with
    KRLS-T's forgetting back to the prior instead of a detector (lambda = 0.995): recovery on
    the drifting Friedman target, RMSE and changes seen on stationary streams, and the cost
    per event side by side (as `cost`)."""
    settings = {"drift_detector=None": {"drift_detector": None}, "'page_hinkley'": ADAPT,
                "'page_hinkley', forgetting=1": {"forgetting": 1.0},
                "forgetting=0.995 (prior), no detector": {
                    "forgetting": 0.995, "forgetting_mode": "prior", "drift_detector": None}}
    print(f"KernelRLSRegressor, defaults (budget 200, noise and width from the warm-up); "
          f"seeds {SEEDS}; " + load())
    print(f"\ndrifting Friedman, {N} events, drifts at 2000, 4000, 6000, 8000 (RMSE): overall / "
          "mean RMSE over the 500 events after each change / mean delay (never: 2000)")
    print("| " + " | ".join(settings) + " |")
    print("|" + "---|" * len(settings))
    streams = [drifting_friedman(N, random_state=seed) for seed in SEEDS]
    cells = []
    for adapt in settings.values():
        recs = [recovery(y, okl_predictions(KernelRLSRegressor(**adapt), X, y)[0], drifts)
                for X, y, drifts in streams]
        cells.append(cell(recs))
    print("| " + " | ".join(cells) + " |", flush=True)
    print("\nstationary streams (RMSE, mean over the seeds or shuffles; changes seen)")
    print("| stream | " + " | ".join(settings) + " |")
    print("|" + "---|" * (len(settings) + 1))
    X, y = load_diabetes(return_X_y=True)
    stationary_streams = {
        "diabetes (5 shuffles, standardised online)":
            [online_scaled(X, y, seed=s) for s in range(5)],
        f"Friedman, {N} events": [drifting_friedman(N, drifts=0, random_state=s)[:2]
                                  for s in SEEDS],
        f"Lorenz, {N} events": [lorenz(N, random_state=s) for s in SEEDS],
        f"Mackey-Glass, {N} events": [mackey_glass(N, random_state=s) for s in SEEDS],
    }
    for name, runs in stationary_streams.items():
        cells = []
        for adapt in settings.values():
            values, changes = [], 0
            for Xs, ys in runs:
                est = KernelRLSRegressor(**adapt)
                pred, _ = okl_predictions(est, Xs, ys)
                values.append(np.sqrt(np.mean((pred - ys) ** 2)))
                changes += est.n_drifts_
            cells.append(f"{np.mean(values):.4f}"
                         + (f" ({changes})" if adapt.get("drift_detector", 1) else ""))
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)
    n = 10000
    X, y, _ = drifting_friedman(n, drifts=0, random_state=0)
    print(f"\ncost: {n} events of drifting_friedman(drifts=0), blocks of {block} alternating, "
          "CPU time of the process; " + load())
    print("| path | us/event, None | page_hinkley | ratio | watching only (no change) | ratio |")
    print("|---|---|---|---|---|---|")
    from okl.drift import PageHinkley
    watching = {"drift_detector": PageHinkley(threshold=1e300)}    # its own cost alone
    for path in ("events", "chunks"):
        models = [KernelRLSRegressor(**adapt) for adapt in (PLAIN, ADAPT, watching)]
        per = side_by_side(models, X, y, path, block)
        print(f"| {path} | {per[0]:.1f} | {per[1]:.1f} ({models[1].n_drifts_} changes) | "
              f"{per[1] / per[0]:.2f} | {per[2]:.1f} | {per[2] / per[0]:.2f} |", flush=True)
    print(load())


def drifting_digits(n_trials=6):
    """The Shen-Dietterich streams (okl.synth.drifting_phases on digits 3, 7 vs 8, 9)."""
    from okl.synth import drifting_phases
    X, y = load_digits(return_X_y=True)
    return [drifting_phases(X / 16.0, y, (3, 7, 8, 9), 500, random_state=seed)
            for seed in range(n_trials)]


def tune():
    """The detector's constants: (delta, threshold) and KEEP (docs/drift.md, section 3)."""
    import okl.drift
    from okl.drift import PageHinkley
    print("OnlineKernelClassifier / OnlineKernelRegressor; okl.synth streams of 10000 events, "
          "seeds 0 and 1; digits: error over phases 3-4, seeds 0-5; alarms on 50000 events of "
          "three noisy stationary streams; " + load())
    streams = {name: [make(N, random_state=seed) for seed in (0, 1)]
               for name, (make, _) in STREAMS.items()}
    digits = drifting_digits()
    noisy = [rotating_hyperplane(50000, drifts=0, noise=0.3, random_state=0),
             concept_switch(50000, drifts=0, cluster_std=0.4, random_state=0),
             drifting_friedman(50000, drifts=0, noise=3.0, random_state=0)]

    def row(detector, with_alarms=True):
        cells = []
        for name, runs in streams.items():
            regression = STREAMS[name][1] == "regression"
            make = OnlineKernelRegressor if regression else OnlineKernelClassifier
            values = []
            for X, y, _ in runs:
                pred, _ = okl_predictions(make(drift_detector=detector), X, y)
                values.append(np.sqrt(np.mean((pred - y) ** 2)) if regression
                              else np.mean(pred == y))
            cells.append(f"{np.mean(values):.4f}")
        errors = []
        for Xs, ys in digits:
            pred, _ = okl_predictions(OnlineKernelClassifier(drift_detector=detector), Xs, ys)
            errors.append(np.mean(pred[1000:] != ys[1000:]))
        cells.append(f"{np.mean(errors):.4f}")
        if with_alarms:
            alarms = []
            for i, (X, y, _) in enumerate(noisy):
                est = (OnlineKernelRegressor if i == 2 else OnlineKernelClassifier)(
                    drift_detector=detector)
                okl_predictions(est, X, y)
                alarms.append(str(est.n_drifts_))
            cells.append(", ".join(alarms))
        return " | ".join(cells)

    print("| delta, threshold | moving | switch | hyperplane | Friedman (RMSE) | digits, error "
          "3-4 | alarms on the noisy stationary streams |")
    print("|---|---|---|---|---|---|---|")
    print(f"| no detector | {row(None)} |", flush=True)
    for delta, threshold in ((0.05, 30), (0.05, 50), (0.05, 80), (0.1, 30), (0.1, 50)):
        print(f"| {delta}, {threshold} | "
              f"{row(PageHinkley(delta=delta, threshold=threshold))} |", flush=True)
    print("\n| KEEP | moving | switch | hyperplane | Friedman (RMSE) | digits, error 3-4 |")
    print("|---|---|---|---|---|---|")
    chosen = okl.drift.KEEP
    try:
        for keep in (1.0, 0.5, 0.25, 0.0):
            okl.drift.KEEP = keep
            print(f"| {keep} | {row('page_hinkley', with_alarms=False)} |", flush=True)
    finally:
        okl.drift.KEEP = chosen


if __name__ == "__main__":
    command = sys.argv[1] if len(sys.argv) > 1 else "recovery"
    {"recovery": recovery_table, "stationary": stationary, "cost": cost, "krls": krls,
     "tune": tune}[command]()
