"""The README's first command: `okl demo` learns a stream, prints, plots."""
import builtins
import subprocess
import sys

import numpy as np

from okl.__main__ import main
from okl.evaluation import progressive_validation
from okl import OnlineKernelRegressor


def test_demo_prints_progress_and_writes_a_png(tmp_path, capsys):
    out = tmp_path / "curve.png"
    main(["demo", "--n", "2000", "--out", str(out)])
    text = capsys.readouterr().out
    rows = [line.split() for line in text.splitlines() if line.strip()[:1].isdigit()]
    assert [int(r[0]) for r in rows] == [1000, 2000]
    mse, *coverage = map(float, rows[-1][1:5])
    assert mse < 0.45                      # noise variance is ~0.3 on this stream
    assert all(abs(c - q) < 0.1 for c, q in zip(coverage, (0.1, 0.5, 0.9)))
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_demo_without_matplotlib(tmp_path, capsys, monkeypatch):
    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    main(["demo", "--n", "300", "--out", str(tmp_path / "x.png")])
    assert "matplotlib is not installed" in capsys.readouterr().out
    assert not (tmp_path / "x.png").exists()


def test_console_entry_point():
    result = subprocess.run([sys.executable, "-m", "okl", "--help"], capture_output=True, text=True)
    assert result.returncode == 0 and "demo" in result.stdout


def test_progressive_validation_matches_predict_then_learn():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 2))
    y = X[:, 0] ** 2 + 0.1 * rng.normal(size=120)
    fused = progressive_validation(OnlineKernelRegressor(loss="huber", epsilon=1.0), X, y,
                                   chunk_size=50)
    by_hand = OnlineKernelRegressor(loss="huber", epsilon=1.0)
    preds = [0.0]
    by_hand.partial_fit(X[:1], y[:1])
    for i in range(1, 120):
        preds.append(by_hand.predict(X[i:i + 1])[0])
        by_hand.partial_fit(X[i:i + 1], y[i:i + 1])
    np.testing.assert_allclose(fused.predictions, preds, atol=1e-12)
    np.testing.assert_allclose(fused.error, np.cumsum((np.array(preds) - y) ** 2) / np.arange(1, 121))
    u = np.abs(np.array(preds) - y)
    huber = np.where(u <= 1.0, u ** 2 / 2, u - 0.5)
    np.testing.assert_allclose(fused.loss, np.cumsum(huber) / np.arange(1, 121), atol=1e-12)


def test_progressive_validation_of_any_partial_fit_estimator(capsys):
    from sklearn.linear_model import Perceptron, SGDRegressor
    rng = np.random.default_rng(1)
    X = rng.normal(size=(60, 3))
    y = X @ [1.0, -2.0, 0.5]
    result = progressive_validation(SGDRegressor(random_state=0), X, y, print_every=20)
    assert result.scores is None and result.loss is None
    by_hand, preds = SGDRegressor(random_state=0), [0.0]
    by_hand.partial_fit(X[:1], y[:1])
    for i in range(1, 60):
        preds.append(by_hand.predict(X[i:i + 1])[0])
        by_hand.partial_fit(X[i:i + 1], y[i:i + 1])
    np.testing.assert_array_equal(result.predictions, preds)
    labels = np.where(y > 0, "pos", "neg")
    result = progressive_validation(Perceptron(random_state=0), X, labels)
    assert result.predictions[0] == "neg" and 0 <= result.error[-1] < 0.5
    lines = capsys.readouterr().out.splitlines()
    assert [int(line.split()[2]) for line in lines[1:]] == [1, 2, 4, 8, 16, 20, 32, 40, 60]
