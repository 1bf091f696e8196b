"""The `okl` command line end to end, on files the tests write."""
import subprocess
import sys

import numpy as np
import pytest

import okl
from okl.__main__ import main


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """A regression CSV and a classification libsvm file of the same 400 points."""
    folder = tmp_path_factory.mktemp("cli")
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, (400, 2))
    y = np.sin(2 * X[:, 0]) + 0.5 * X[:, 1] + 0.1 * rng.standard_normal(400)
    csv = folder / "train.csv"
    csv.write_text("x1,x2,target\n" + "".join(f"{a:.6f},{b:.6f},{t:.6f}\n"
                                              for (a, b), t in zip(X, y)))
    labels = np.where(X[:, 0] * X[:, 1] > 0, 1, -1)
    libsvm = folder / "train.libsvm"
    libsvm.write_text("".join(f"{c:+d} 1:{a:.6f} 2:{b:.6f}\n" for (a, b), c in zip(X, labels)))
    return folder, csv, libsvm, X, y, labels


def run(*args, stdin=None):
    return subprocess.run([sys.executable, "-m", "okl", *map(str, args)], input=stdin,
                          capture_output=True, text=True)


def progress_rows(text):
    return [line.split() for line in text.splitlines() if line.strip()[:1].isdigit()]


def test_learn_csv_prints_doubling_lines_and_saves_a_model(data, capsys):
    folder, csv, _, X, y, _ = data
    model_file = folder / "reg.okl"
    assert main(["learn", str(csv), "--target", "target", "--param", "gamma=2.0",
                 "--print-every", "100", "-f", str(model_file)]) == 0
    out = capsys.readouterr().out
    counts = [int(r[2]) for r in progress_rows(out)]
    assert counts == [1, 2, 4, 8, 16, 32, 64, 100, 128, 200, 256, 300, 400]
    assert "finished: 400 samples" in out and f"model written to {model_file}" in out
    model = okl.load(model_file)
    assert model.gamma == 2.0 and model.t_ == 400
    reference = okl.OnlineKernelRegressor(gamma=2.0).fit(np.round(X, 6), np.round(y, 6))
    np.testing.assert_allclose(model.predict(X[:5]), reference.predict(X[:5]), atol=1e-12)


def test_learn_libsvm_classifier_then_predict_and_eval(data):
    folder, _, libsvm, X, _, labels = data
    model_file = folder / "clf.okl"
    result = run("learn", libsvm, "--model", "classifier", "--param", "gamma=1.0",
                 "-f", model_file)
    assert result.returncode == 0, result.stderr
    rows = progress_rows(result.stdout)
    assert int(rows[-1][2]) == 400 and "error_rate" in result.stdout
    out = folder / "predictions.txt"
    assert run("predict", "-m", model_file, libsvm, "-o", out).returncode == 0
    predicted = np.loadtxt(out)
    np.testing.assert_array_equal(predicted, okl.load(model_file).predict(np.round(X, 6)))
    evaluated = run("eval", "-m", model_file, libsvm)
    assert evaluated.returncode == 0
    scores = dict(line.split() for line in evaluated.stdout.splitlines())
    assert float(scores["error_rate"]) == pytest.approx(np.mean(predicted != labels))


def test_stdin_is_read_for_dash(data):
    _, csv, libsvm, *_ = data
    result = run("learn", "-", "--target", "target", stdin=csv.read_text())
    assert result.returncode == 0 and "finished: 400 samples" in result.stdout
    result = run("learn", "-", "--format", "libsvm", "--n-features", "2", "--model", "pa",
                 stdin=libsvm.read_text())
    assert result.returncode == 0 and "finished: 400 samples" in result.stdout


def test_delimiter_and_no_header(tmp_path, capsys):
    path = tmp_path / "plain.txt"
    path.write_text("1;0.5\n2;1.0\n3;1.5\n")
    assert main(["learn", str(path), "--delimiter", ";", "--no-header", "--target", "1"]) == 0
    assert "finished: 3 samples" in capsys.readouterr().out
    assert main(["learn", str(path), "--delimiter", ";", "--no-header", "--target", "y"]) == 2
    assert "--target is a column number" in capsys.readouterr().err


def test_predict_to_stdout_drops_the_target_column(data, capsys):
    folder, csv, *_ = data
    model_file = folder / "small.okl"
    main(["learn", str(csv), "--target", "target", "-f", str(model_file)])
    capsys.readouterr()
    assert main(["predict", "-m", str(model_file), str(csv), "--target", "target"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 400


def test_learn_reads_scikit_learn_svmlight_files(tmp_path, capsys):
    """dump_svmlight_file writes 0-based indices: found as load_svmlight_file's "auto" does."""
    from sklearn.datasets import dump_svmlight_file, load_iris
    X, y = load_iris(return_X_y=True)
    path = tmp_path / "iris.svm"
    dump_svmlight_file(X, np.where(y == 0, 1, -1), str(path))
    assert " 0:" in path.read_text().splitlines()[0]
    models = {}
    for flag in ([], ["--zero-based", "auto"], ["--zero-based", "true"]):
        models[len(flag)] = tmp_path / f"m{len(flag)}.okl"
        assert main(["learn", str(path), "--model", "classifier", *flag,
                     "-f", str(models[len(flag)])]) == 0, capsys.readouterr().err
        model = okl.load(models[len(flag)])
        assert model.n_features_in_ == 4 and model.t_ == 100    # the first 50: one label
    reference = okl.OnlineKernelClassifier().partial_fit(X, np.where(y == 0, 1, -1))
    np.testing.assert_allclose(model.decision_function(X), reference.decision_function(X),
                               atol=1e-12)
    assert main(["learn", str(path), "--model", "classifier", "--zero-based", "false"]) == 2
    assert "--zero-based true" in capsys.readouterr().err


@pytest.mark.parametrize("name, cls", [
    ("OnlineKernelRegressor", "OnlineKernelRegressor"), ("regressor", "OnlineKernelRegressor"),
    ("OnlineKernelClassifier", "OnlineKernelClassifier"),
    ("CoefficientRegularizedClassifier", "CoefficientRegularizedClassifier"),
    ("RegularizedPAClassifier", "RegularizedPAClassifier"),
])
def test_model_takes_estimator_class_names(data, name, cls):
    folder, _, libsvm, *_, labels = data
    model_file = folder / f"{name}.okl"
    assert main(["learn", str(libsvm), "--model", name, "-f", str(model_file)]) == 0
    model = okl.load(model_file)
    # a classifier learns from the second label on (docs/multiclass.md, section 1)
    first = 0 if "Regressor" in cls else int(np.argmax(labels != labels[0]))
    assert type(model).__name__ == cls and model.t_ == 400 - first


@pytest.mark.parametrize("args, message", [
    (["learn", "{missing}", "--target", "y"], "No such file or directory"),
    (["learn", "{csv}", "--target", "price"], "no column 'price'; the columns are x1, x2, target"),
    (["learn", "{csv}", "--target", "target", "--param", "gama=1"],
     "unknown parameter 'gama' for --model regressor (OnlineKernelRegressor); the parameters are"),
    (["learn", "{csv}", "--target", "target", "--param", "gamma=-1"], "'gamma' parameter"),
    (["learn", "{csv}", "--target", "target", "--model", "svm"],
     "unknown model 'svm'; the models are regressor, quantile, krls, classifier, coefreg, pa, "
     "auto, auto-classifier, or the estimator classes CoefficientRegularizedClassifier, "
     "KernelRLSRegressor, MultiKernelClassifier, MultiKernelRegressor, OnlineKernelClassifier, "
     "OnlineKernelRegressor, RegularizedPAClassifier."),
    (["learn", "{bad}", "--target", "y"], "bad.csv:3: non-numeric value 'oops' in column 'a'"),
    (["learn", "{csv}"], "name the target column with --target"),
    (["predict", "-m", "{csv}", "{csv}"], "is not a model written by okl learn -f or okl.save"),
    (["predict", "-m", "{model}", "{csv}"], "has 3 feature columns but the model was fitted on 2. "
     "If one of them is the label column, name it with --target"),
])
def test_user_errors_give_one_line_and_status_2(data, capsys, args, message):
    folder, csv, *_ = data
    (folder / "bad.csv").write_text("a,y\n1,2\noops,3\n")
    model = folder / "two.okl"
    okl.save(okl.OnlineKernelRegressor().fit(np.zeros((2, 2)), [0.0, 1.0]), model)
    paths = {"missing": folder / "missing.csv", "csv": csv, "bad": folder / "bad.csv",
             "model": model}
    argv = [a.format(**paths) for a in args]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and err.startswith(f"okl {args[0]}: error: ")
    assert message in err


def test_a_user_error_in_a_subprocess_has_no_traceback(data):
    _, csv, *_ = data
    result = run("learn", csv, "--target", "target", "--param", "kernel=spline")
    assert result.returncode == 2
    assert result.stderr.startswith("okl learn: error: The 'kernel' parameter")
    assert len(result.stderr.splitlines()) == 1


def test_skip_malformed_counts_lines(data, capsys):
    folder, *_ = data
    path = folder / "holes.csv"
    path.write_text("a,y\n1,2.5\noops,3\n2,4.5\n3\n")
    assert main(["learn", str(path), "--target", "y", "--skip-malformed"]) == 0
    out = capsys.readouterr().out
    assert "finished: 2 samples" in out and "skipped 2 malformed lines" in out


def test_version_and_demo(tmp_path):
    result = run("--version")
    assert result.returncode == 0 and result.stdout.strip() == f"okl {okl.__version__}"
    assert okl.__version__.count(".") == 2
    result = run("demo", "--n", "1000", "--out", tmp_path / "demo.png")
    assert result.returncode == 0 and (tmp_path / "demo.png").exists()
    assert result.stderr == ""                    # no progress bar when stderr is not a terminal


def test_a_libsvm_file_named_txt_is_read_as_libsvm_and_its_classes_get_a_classifier(data):
    folder, _, libsvm, X, _, labels = data
    txt = folder / "a9a.txt"                      # LIBSVM's own files are named so
    txt.write_text(libsvm.read_text())
    model_file = folder / "auto.okl"
    result = run("learn", txt, "-f", model_file)
    assert result.returncode == 0, result.stderr
    first = result.stdout.splitlines()[0]
    assert first.startswith("okl learn: OnlineKernelClassifier()")
    assert "the labels -1, 1 are classes" in first and "--model regressor" in first
    assert "(hinge loss)" in result.stdout and "finished: 400 samples" in result.stdout
    predicted = run("predict", "-m", model_file, txt)
    assert predicted.returncode == 0, predicted.stderr
    np.testing.assert_array_equal(np.array(predicted.stdout.split(), dtype=float),
                                  okl.load(model_file).predict(np.round(X, 6)))


def test_integer_labels_of_many_kinds_ask_which_model(data):
    folder, _, _, X, _, _ = data
    path = folder / "counts.txt"
    path.write_text("".join(f"{k} 1:{a:.6f} 2:{b:.6f}\n" for (a, b), k in zip(X, range(400))))
    result = run("learn", path, "--param", "gamma=1.0")
    assert result.returncode == 2 and len(result.stderr.splitlines()) == 1
    assert "are integers (0, 1, 2, ..., 399 in the first 400 rows)" in result.stderr
    for model in ("classifier", "regressor"):
        assert f"okl learn {path} --param gamma=1.0 --model {model}" in result.stderr
    assert run("learn", path, "--model", "regressor").returncode == 0


def test_a_label_metric_on_a_regressor_is_refused(data):
    folder, _, libsvm, *_ = data
    model_file = folder / "regressor.okl"
    assert run("learn", libsvm, "--model", "regressor", "-f", model_file).returncode == 0
    result = run("eval", "-m", model_file, libsvm, "--metric", "error_rate",
                 "--metric", "accuracy")
    assert result.returncode == 2 and len(result.stderr.splitlines()) == 1
    assert "'error_rate' compares predicted labels" in result.stderr
    assert "OnlineKernelRegressor is a regressor" in result.stderr
    assert run("eval", "-m", model_file, libsvm, "--metric", "mae").returncode == 0


def test_the_loss_column_names_its_loss(data):
    folder, csv, libsvm, *_ = data
    quantile = run("learn", csv, "--target", "target", "--model", "quantile")
    assert "(pinball loss)" in quantile.stdout and "pinball loss " in quantile.stdout
    hedge = run("learn", libsvm, "--model", "auto-classifier")      # its loss: its mistakes
    assert hedge.returncode == 0 and "(error_rate)" in hedge.stdout and " loss " not in hedge.stdout


def test_help_does_not_import_scikit_learn():
    code = ("import runpy, sys\nsys.argv = ['okl', '--help']\ntry:\n"
            "    runpy.run_module('okl', run_name='__main__')\nexcept SystemExit:\n    pass\n"
            "print(sorted({'sklearn', 'scipy', 'numpy'} & set(sys.modules)))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0 and "learn" in result.stdout
    assert result.stdout.splitlines()[-1] == "[]"


@pytest.mark.parametrize("name, text, message", [
    ("big.libsvm", "1 1:2\n-1 9999999999:1\n", "feature index 9999999999 is beyond"),
    ("long.csv", "x,y\n1," + "9" * 200_000 + "\n", "long.csv:2: cannot split the line"),
    ("latin.csv", "x,y\n1,caf\xe9\n", "latin.csv:2: not UTF-8 text"),
    ("dup.libsvm", "1 1:2 1:3\n", "feature index 1 appears twice"),
])
def test_bad_files_stop_in_one_line_with_status_2(tmp_path, name, text, message):
    path = tmp_path / name
    path.write_bytes(text.encode("latin-1"))
    result = run("learn", path, "--target", "y", "--model", "regressor") \
        if name.endswith(".csv") else run("learn", path, "--model", "regressor")
    assert result.returncode == 2 and len(result.stderr.splitlines()) == 1, result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("option", ["--n-features", "--chunk-size"])
def test_sizes_must_be_positive(data, option):
    _, _, libsvm, *_ = data
    result = run("learn", libsvm, option, "0")
    assert result.returncode == 2 and "a positive integer is needed" in result.stderr
