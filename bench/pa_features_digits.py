"""Kernel PA on fixed-size features, one event at a time against one chunk (prints a table).

Digits 0-4 against 5-9 (scikit-learn's bundled 8x8 digits, shuffled with seed
0, standardised on the 1000 learned events, 797 held out), Gaussian kernel,
gamma = 1/32.  Each model learns the 1000 events by `learn_one` (progressive
accuracy: `predict_one` before each event) and as one chunk (`fit`); the
table gives held-out and progressive accuracy of both.  A model that does not
depend on chunking shows equal columns.  The figures of docs/budget.md,
section 2.

Run: python bench/pa_features_digits.py
"""
import numpy as np
from sklearn.datasets import load_digits
from sklearn.preprocessing import StandardScaler

from okl import OnlineKernelClassifier, RegularizedPAClassifier

GAMMA = 1 / 32


def digits_stream():
    X, y = load_digits(return_X_y=True)
    order = np.random.default_rng(0).permutation(len(X))
    X, y = X[order], (y[order] >= 5).astype(int)
    scaler = StandardScaler().fit(X[:1000])
    return scaler.transform(X[:1000]), y[:1000], scaler.transform(X[1000:]), y[1000:]


def one_event_at_a_time(model, X, y):
    hits = 0
    for x, label in zip(X, y):
        hits += hasattr(model, "t_") and model.predict_one(x) == label
        model.learn_one(x, label)
    return hits / len(y)


def one_chunk(model, X, y):
    scores = model._progressive_scores(X, y, classes=np.array([0, 1]))
    return float(np.mean((np.asarray(scores) > 0) == (y == 1)))


def main():
    X, y, X_test, y_test = digits_stream()
    common = dict(kernel="gaussian", gamma=GAMMA, classes=np.array([0, 1]))
    models = {
        "PA exact": lambda: RegularizedPAClassifier(**common),
        "PA fourier D=500": lambda: RegularizedPAClassifier(
            approximation="fourier", n_components=500, random_state=0, **common),
        "PA nystroem D=200": lambda: RegularizedPAClassifier(
            approximation="nystroem", n_components=200, **common),
        "PA nystroem D=500": lambda: RegularizedPAClassifier(
            approximation="nystroem", n_components=500, **common),
        "OnlineKernelClassifier nystroem D=200": lambda: OnlineKernelClassifier(
            approximation="nystroem", n_components=200, **common),
    }
    print(f"{'model':40s} {'held-out':>17s} {'progressive':>17s}")
    print(f"{'':40s} {'one':>8s} {'chunk':>8s} {'one':>8s} {'chunk':>8s}")
    for name, make in models.items():
        one, chunk = make(), make()
        p_one, p_chunk = one_event_at_a_time(one, X, y), one_chunk(chunk, X, y)
        print(f"{name:40s} {one.score(X_test, y_test):8.3f} {chunk.score(X_test, y_test):8.3f} "
              f"{p_one:8.3f} {p_chunk:8.3f}", flush=True)


if __name__ == "__main__":
    main()
