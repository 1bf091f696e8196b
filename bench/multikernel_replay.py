"""The classifier's combination rules replayed on its recorded learners (docs/multikernel.md).

The learners of the default pool (27: 9 widths x (2 step scales + 1 that
forgets)) do not depend on the Hedge weights until the budget's first merge
(500 centres): their progressive values f_k(x_t) are recorded once per stream
(predict, then learn, one event at a time), and each combination rule is then
run on them in NumPy. The default rule replayed gives the built learner's
predictions on every event (checked first, printed); the short streams (the
first 150 or 200 events) are exact for every rule, the full ones near-exact
(after 500 events the merge's leader follows the built weights).

Streams: the rows of bench/multikernel_defaults.py, every one over the
shuffles of seeds 0-4 (averaged), scaled online the same way. Rules
(`RULES`): Hedge on the mistakes (beta; the default 0.8) or with AdaHedge's
rate (ln K over the observed mixability gap, no beta); Hedge on the hinge
loss clipped to [0, 2] / 2; the Bayesian mixture (exponential weights with
eta on the log loss of each learner's probability, the logistic or softmax
of c f_k, c fixed, or per learner a temperature fitted online by Newton
steps on its own log loss: an online Platt scaling); the prediction is the
weighted vote ("vote") or the largest class of the mixture of probabilities
("mix"); "meta" runs Hedge (beta 0.8) over the default vote and the fitted
mixture. All with the fixed share 1e-3 and the 1.5x start of the learners
that forget.

``soft`` runs `SOFT_RULES` instead: Hedge on the clipped hinge
min(1, max(0, 1 - margin)), the weighted vote of the learners' margins (of
their tanh, or of the margins over each learner's mean |margin| so far),
the decreasing Hedge (eta sqrt(8 ln K / t) on the cumulative losses), beta
rising from 0.5 to 0.8 by event 100 and Squint; then every learner's
mistakes, clipped hinge loss and mean |margin| on digits 0-4 vs 5-9 (first
200) and iris.

``members`` asks whether the pool lacks a learner on the short streams (wine, iris and the
first 150 or 200 events; exact): the default vote beside the same rule with more learners
recorded in the same pass: the two widths above the grid (2^4 and 2^5, every learner or only
those that forget; the pool is recorded with AUTO_GAMMAS extended, so its other learners are
the default's), the nearest neighbour of the events so far, and second-order least squares
one-vs-rest (KernelRLSRegressor() or MultiKernelRegressor() on +-1 targets per class, their
values as the learner's scores); the last column is MultiKernelRegressor() one-vs-rest alone.

    python bench/multikernel_replay.py [soft | members]
"""
import os
import sys

import numpy as np
from scipy.special import log_softmax, logsumexp, softmax

import okl.multikernel
from okl import KernelRLSRegressor, MultiKernelClassifier, MultiKernelRegressor
from okl.multikernel import AUTO_GAMMAS

sys.path.insert(0, os.path.dirname(__file__))
from multikernel_defaults import scaled_stream  # noqa: E402

#: (row label, data set, events or None for all)
ROWS = [("breast cancer (569)", "breast_cancer", None),
        ("digits 0-4 vs 5-9 (1797)", "digits_binary", None),
        ("digits, 10 classes (1797)", "digits_10", None),
        ("wine (178)", "wine", None), ("iris (150)", "iris", None),
        ("breast cancer, first 150", "breast_cancer", 150),
        ("digits 0-4 vs 5-9, first 200", "digits_binary", 200),
        ("digits 10 classes, first 200", "digits_10", 200)]
SEEDS = range(5)
SHARE, START = 1e-3, 1.5
#: The learners that forget: width-major, (step scale 2, step scale 16, forgets) per width.
FORGETS = np.arange(27) % 3 == 2
#: Squint's rates (its prior: uniform over them).
SQUINT_RATES = 0.5 ** np.arange(1, 12)


def learner_values(clf, Z, y, classes):
    """The progressive values (events, K) or (events, K, C) of `clf`'s learners, one event at
    a time (the first: 0, no centre yet)."""
    F = []
    for i in range(len(y)):
        F.append(clf.learner_decisions(Z[i:i + 1])[0] if i else None)
        clf.partial_fit(Z[i:i + 1], y[i:i + 1], classes=classes)
    F[0] = np.zeros_like(F[1])
    return np.array(F)


def record(name, seed):
    """(F, y, classes, built): the learners' progressive values F (events, K) or (events, K,
    C), and the built default's progressive predictions."""
    Z, y = scaled_stream(name, None, seed)
    classes = np.unique(y)
    F = learner_values(MultiKernelClassifier(), Z, y, classes)
    built = MultiKernelClassifier()
    built = built._predictions(built._progressive_scores(Z, y, classes=classes, reset=True))
    return F, y, classes, built


def scores(f):
    """(K, C) class scores of the learners' values (two classes: (-f/2, f/2))."""
    return np.stack([-0.5 * f, 0.5 * f], axis=1) if f.ndim == 1 else f


def margins(f, j):
    """(the learners' class scores, their margins, their mistakes) on an event of label index j:
    the margin is y f_k with two classes, else s_k,y - max_{c != y} s_k,c."""
    S = scores(f)
    rival = np.max(np.where(np.arange(S.shape[1]) == j, -np.inf, S), axis=1)
    wrong = (np.argmax(S, axis=1) != j) if f.ndim > 1 else ((f > 0) != (j == 1))
    return S, S[:, j] - rival if f.ndim > 1 else f * (1.0 if j else -1.0), wrong


def run(F, y, classes, forgets, loss="mistake", rate=0.8, predict="vote", c=1.0, h0=None):
    """The progressive predictions of one rule. rate: beta (Hedge on `loss`), a function of
    the events seen giving beta, ("eta", eta), "ada" (AdaHedge), "decreasing" (Hedge of the
    cumulative losses with eta sqrt(8 ln K / t) after t events, no share) or "squint" (Squint:
    a uniform prior over the rates 2^-1..2^-11); loss "mistake", "hinge" (clipped to [0, 2],
    halved), "clipped" (min(1, max(0, 1 - margin))) or "log" with c, or with h0 set a
    per-learner temperature fitted online (starting at c, Newton steps with curvature h0 plus
    the observed ones); predict "vote" (of the learners' labels), "margin", "tanh" or "scaled"
    (the largest class of sum_k q_k s_k, s_k the learner's class scores, their tanh or the
    scores over the learner's mean |margin| on the events before) or "mix"."""
    K = F.shape[1]
    q = np.where(forgets, START, 1.0)
    q /= q.sum()
    start, total, R, V, size = np.log(q), np.zeros(K), np.zeros(K), np.zeros(K), np.zeros(K)
    a, H, gap = np.full(K, c), np.full(K, h0 or 1.0), 0.0
    pred = np.empty_like(y)
    for t, f in enumerate(F):
        j = int(np.searchsorted(classes, y[t]))
        S, margin, wrong = margins(f, j)
        P = softmax(a[:, None] * S, axis=1)
        if predict == "vote":
            votes = np.zeros(S.shape[1])
            if f.ndim > 1:
                np.add.at(votes, np.argmax(S, axis=1), q)
                pred[t] = classes[int(np.argmax(votes))]
            else:       # the sign of sum q_k sign(f_k): a tie goes to classes[0]
                np.add.at(votes, (f > 0).astype(int), q)
                pred[t] = classes[int(votes[1] > votes[0])]
        elif predict in ("margin", "tanh"):
            pred[t] = classes[int(np.argmax(q @ (S if predict == "margin" else np.tanh(S))))]
        elif predict == "scaled":       # each learner's scores over its mean |margin| so far
            scale = np.maximum(size / max(t, 1), 1e-12)
            pred[t] = classes[int(np.argmax(q @ (S / scale[:, None])))]
        else:
            pred[t] = classes[int(np.argmax(q @ P))]
        size += np.abs(margin)
        if loss == "mistake":
            lk = wrong.astype(np.float64)
        elif loss == "hinge":
            lk = np.clip(1.0 - margin, 0.0, 2.0) / 2.0
        elif loss == "clipped":
            lk = np.clip(1.0 - margin, 0.0, 1.0)
        else:
            lk = -log_softmax(a[:, None] * S, axis=1)[:, j]
        if rate == "decreasing":
            total += lk
            lw = start - np.sqrt(8.0 * np.log(K) / (t + 1)) * total
            q = np.exp(lw - logsumexp(lw))
            continue
        if rate == "squint":      # regrets against the mixture q, a prior over the rates
            R += q @ lk - lk
            V += (q @ lk - lk) ** 2
            eta = SQUINT_RATES[:, None]
            lw = start + logsumexp(np.log(eta) + eta * R - eta ** 2 * V, axis=0)
        elif rate == "ada" and gap == 0.0:        # eta = infinity: the leaders share the weight
            lw = np.where(lk == lk.min(), np.log(q), -np.inf)
            gap = q @ lk - lk.min()
        else:
            eta = (rate[1] if isinstance(rate, tuple) else np.log(K) / gap if rate == "ada"
                   else -np.log(rate(t + 1) if callable(rate) else rate))
            lw = np.log(q) - eta * lk
            gap += max(q @ lk + logsumexp(lw) / eta, 0.0)
        q = (1.0 - SHARE) * np.exp(lw - logsumexp(lw)) + SHARE / K
        if h0 is not None:      # the temperatures: a Newton step on each learner's log loss
            mean = (P * S).sum(axis=1)
            H += (P * S ** 2).sum(axis=1) - mean ** 2
            a = np.clip(a + (S[:, j] - mean) / H, 0.0, 20.0)
    return pred


def meta(F, y, classes, forgets):
    """Hedge (beta 0.8) over two rules: the default vote and the fitted mixture."""
    a = run(F, y, classes, forgets)
    b = run(F, y, classes, forgets, loss="log", rate=("eta", 1.0), predict="mix", h0=5.0)
    w, pred = np.array([0.5, 0.5]), np.empty_like(y)
    for t in range(len(y)):
        pred[t] = a[t] if w[0] >= w[1] else b[t]
        w *= 0.8 ** np.array([a[t] != y[t], b[t] != y[t]])
        w /= w.sum()
    return pred


RULES = {
    "Hedge beta 0.8 (default)": dict(),
    "beta 0.75": dict(rate=0.75),
    "beta 0.7": dict(rate=0.7),
    "beta 0.5": dict(rate=0.5),
    "AdaHedge": dict(rate="ada"),
    "hinge, eta 1": dict(loss="hinge", rate=("eta", 1.0)),
    "hinge, AdaHedge": dict(loss="hinge", rate="ada"),
    "log c 1, vote": dict(loss="log", rate=("eta", 1.0)),
    "log c 1, mix": dict(loss="log", rate=("eta", 1.0), predict="mix"),
    "log c 2, mix": dict(loss="log", rate=("eta", 1.0), c=2.0, predict="mix"),
    "log c 4, eta 0.3, mix": dict(loss="log", rate=("eta", 0.3), c=4.0, predict="mix"),
    "log c 1, AdaHedge, vote": dict(loss="log", rate="ada"),
    "Platt, mix": dict(loss="log", rate=("eta", 1.0), predict="mix", h0=1.0),
    "Platt h0 5, mix": dict(loss="log", rate=("eta", 1.0), predict="mix", h0=5.0),
    "Platt, vote": dict(loss="log", rate=("eta", 1.0), h0=1.0),
    "meta": "meta",
}

#: ``soft``: bounded soft losses, the vote of margins and rates that need no tuning.
SOFT_RULES = {
    "Hedge beta 0.8 (default)": dict(),
    "margin vote": dict(predict="margin"),
    "tanh vote": dict(predict="tanh"),
    "clipped hinge": dict(loss="clipped"),
    "clipped hinge, margin vote": dict(loss="clipped", predict="margin"),
    "decreasing Hedge": dict(rate="decreasing"),
    "decreasing Hedge, clipped hinge": dict(loss="clipped", rate="decreasing"),
    "beta 0.5 to 0.8 by event 100": dict(rate=lambda t: 0.5 + 0.3 * min(t / 100, 1.0)),
    "Squint": dict(rate="squint"),
    "scaled margin vote": dict(predict="scaled"),
}


def ranks(recorded, streams=(("digits 0-4 vs 5-9, first 200", "digits_binary", 200),
                             ("iris (150)", "iris", None))):
    """Every learner's mistakes, clipped hinge loss and mean |margin| per shuffle."""
    kinds = [f"2^{np.log2(g):g}" for g in AUTO_GAMMAS] + ["linear"]
    sums = {}
    for label, name, n in streams:
        for seed in SEEDS:
            F, y, classes, _ = recorded[name, seed]
            for f, target in zip(F[:n], y[:n]):
                _, margin, wrong = margins(f, int(np.searchsorted(classes, target)))
                sums[label] = sums.get(label, 0.0) + np.stack(
                    [wrong, np.clip(1.0 - margin, 0.0, 1.0), np.abs(margin) / len(F[:n])])
    print("| learner | " + " | ".join(f"{label}: mistakes, clipped hinge, mean abs margin"
                                        for label in sums) + " |")
    print("|" + "---|" * (len(sums) + 1))
    for k in range(len(FORGETS)):
        print(f"| {kinds[k // 3]} {('x2', 'x16', 'forgets')[k % 3]} | " + " | ".join(
            ", ".join(f"{v / len(SEEDS):.{p}f}" for v, p in zip(m[:, k], (1, 1, 2)))
            for m in sums.values()) + " |")


def main(rules):
    print(f"load average {os.getloadavg()[0]:.1f}")
    recorded = {}
    for name in dict.fromkeys(name for _, name, _ in ROWS):
        for seed in SEEDS:
            F, y, classes, built = recorded[name, seed] = record(name, seed)
            replayed = run(F, y, classes, FORGETS)
            print(f"{name} seed {seed}: the default replayed agrees with the built learner on "
                  f"{np.mean(replayed == built):.4f} of the events")
    print("| stream | " + " | ".join(rules) + " |")
    print("|" + "---|" * (len(rules) + 1))
    for label, name, n in ROWS:
        cells = []
        for rule in rules.values():
            acc = []
            for seed in SEEDS:
                F, y, classes, _ = recorded[name, seed]
                F, y = F[:n], y[:n]
                pred = (meta(F, y, classes, FORGETS) if rule == "meta"
                        else run(F, y, classes, FORGETS, **rule))
                acc.append(np.mean(pred == y))
            cells.append(np.mean(acc))
        print(f"| {label} | " + " | ".join(f"{c:.4f}" for c in cells) + " |", flush=True)
    return recorded


#: ``members``: the relative widths recorded (the default's and two more).
WIDER = tuple(AUTO_GAMMAS) + (2.0 ** 4, 2.0 ** 5)


def extra_members(name, n, seed):
    """(F, forgets, width_of, extra, y, classes) on the first n events: the pool recorded with
    `WIDER`, and the extra learners' values by name (as the pool's: (events,) or (events, C))."""
    Z, y = scaled_stream(name, n, seed)
    classes = np.unique(y)
    okl.multikernel.AUTO_GAMMAS = WIDER
    try:
        clf = MultiKernelClassifier()
        F = learner_values(clf, Z, y, classes)
    finally:
        okl.multikernel.AUTO_GAMMAS = AUTO_GAMMAS
    width_of = np.asarray(clf._model.get_state()["width_of"])
    forgets = np.asarray(clf.forgetting_) > 0
    signs = np.where(y[:, None] == classes, 1.0, -1.0)      # +-1 per class
    extra = {"nearest neighbour": np.zeros(F.shape[:1] + F.shape[2:])}
    for t in range(1, len(y)):
        j = np.searchsorted(classes, y[np.argmin(((Z[:t] - Z[t]) ** 2).sum(axis=1))])
        extra["nearest neighbour"][t] = (j - 0.5) * 2 if F.ndim == 2 else np.arange(
            len(classes)) == j
    for label, make in (("KernelRLSRegressor() one-vs-rest", KernelRLSRegressor),
                        ("MultiKernelRegressor() one-vs-rest", MultiKernelRegressor)):
        columns = [signs[:, 1]] if F.ndim == 2 else signs.T
        f = [make()._progressive_scores(Z, c, reset=True) for c in columns]
        extra[label] = f[0] if F.ndim == 2 else np.stack(f, axis=1)
    return F, forgets, width_of, extra, y, classes


def members():
    """The default vote with more learners (`extra_members`), on the short streams."""
    default = len(AUTO_GAMMAS)
    columns = ["default", "+ 2^4, 2^5 that forget", "+ 2^4, 2^5", "+ nearest neighbour",
               "+ KernelRLSRegressor() one-vs-rest", "+ MultiKernelRegressor() one-vs-rest",
               "MultiKernelRegressor() one-vs-rest alone"]
    print(f"load average {os.getloadavg()[0]:.1f}")
    print("| stream | " + " | ".join(columns) + " |")
    print("|" + "---|" * (len(columns) + 1))
    for label, name, n in ROWS:
        if n is None and name not in ("wine", "iris"):
            continue
        acc = np.zeros((len(SEEDS), len(columns)))
        for i, seed in enumerate(SEEDS):
            F, forgets, width_of, extra, y, classes = extra_members(name, n, seed)
            ours = width_of < default          # the default's widths and the linear learners
            pools = [ours, ours | ((width_of >= default) & forgets), np.ones_like(ours)]
            runs = [(F[:, keep], forgets[keep]) for keep in pools]
            for key in list(extra)[:3]:
                runs.append((np.concatenate([F[:, ours], extra[key][:, None]], axis=1),
                             np.append(forgets[ours], False)))
            for j, (G, g) in enumerate(runs):
                acc[i, j] = np.mean(run(G, y, classes, g) == y)
            f = extra["MultiKernelRegressor() one-vs-rest"]
            acc[i, -1] = np.mean(classes[(f > 0).astype(int) if f.ndim == 1
                                         else np.argmax(f, axis=1)] == y)
        print(f"| {label} | " + " | ".join(f"{c:.4f}" for c in acc.mean(axis=0)) + " |",
              flush=True)


if __name__ == "__main__":
    if sys.argv[1:] == ["soft"]:
        ranks(main(SOFT_RULES))
    elif sys.argv[1:] == ["members"]:
        members()
    else:
        main(RULES)
