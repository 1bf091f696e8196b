"""okl.stream: readers of CSV, libsvm, arrays and DataFrames, in chunks or events."""
import gzip
import io

import numpy as np
import pytest
import scipy.sparse as sp

from okl.stream import (MalformedLineError, iter_array, iter_csv, iter_file, iter_libsvm,
                        iter_pandas)


def rows(stream):
    """Every (x, y) row of a stream of chunks or events, as lists."""
    out = []
    for X, y in stream:
        X = X.toarray() if sp.issparse(X) else np.asarray(X)
        if X.ndim == 1:
            X, y = X[None, :], [y]
        out.extend((list(x), label) for x, label in zip(X, y if y is not None else [None] * len(X)))
    return out


@pytest.fixture
def csv_file(tmp_path):
    path = tmp_path / "data.csv"
    path.write_text("a,label,b\n1.5,yes,2\n-3,no,4e-1\n0,yes,7\n")
    return path


def test_csv_header_and_named_target(csv_file):
    stream = iter_csv(csv_file, target="label")
    assert rows(stream) == [([1.5, 2.0], "yes"), ([-3.0, 0.4], "no"), ([0.0, 7.0], "yes")]
    assert stream.feature_names == ["a", "b"]


def test_csv_numeric_target_delimiter_and_no_header(tmp_path):
    path = tmp_path / "data.txt"
    path.write_text("1;2;3\n4;5;6\n")
    got = rows(iter_csv(path, target=0, delimiter=";", header=False, chunk_size=5))
    assert got == [([2.0, 3.0], 1.0), ([5.0, 6.0], 4.0)]
    assert rows(iter_csv(path, delimiter=";", header=False)) == [([1.0, 2.0, 3.0], None),
                                                               ([4.0, 5.0, 6.0], None)]


def test_chunks_and_events_give_the_same_rows(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2500, 3))
    y = rng.normal(size=2500)
    path = tmp_path / "big.csv"
    path.write_text("x0,x1,x2,y\n" + "".join(f"{a:.17g},{b:.17g},{c:.17g},{t:.17g}\n"
                                              for (a, b, c), t in zip(X, y)))
    events = rows(iter_csv(path, target="y"))
    for size in (1, 7, 1000, 5000):
        chunks = list(iter_csv(path, target="y", chunk_size=size))
        assert max(len(c[1]) for c in chunks) == min(size, 2500)
        assert rows(chunks) == events
    np.testing.assert_array_equal(np.array([x for x, _ in events]), X)
    np.testing.assert_array_equal([t for _, t in events], y)


def test_csv_missing_values_error_fill_or_skip(tmp_path):
    path = tmp_path / "gaps.csv"
    path.write_text("a,b,y\n1,2,3\n4,,5\n7,NA,8\n9,10,\n")
    with pytest.raises(MalformedLineError, match=r"gaps\.csv:3: missing value in column 'b'"):
        list(iter_csv(path, target="y"))
    filled = iter_csv(path, target="y", fill_value=0.0)
    with pytest.raises(MalformedLineError, match=r"gaps\.csv:5: missing target"):
        list(filled)
    skipping = iter_csv(path, target="y", fill_value=-1.0, skip_malformed=True, chunk_size=2)
    assert rows(skipping) == [([1.0, 2.0], 3.0), ([4.0, -1.0], 5.0), ([7.0, -1.0], 8.0)]
    assert skipping.n_skipped == 1


@pytest.mark.parametrize("text, line, reason", [
    ("a,y\n1,2\n3\n", 3, "expected 2 fields, found 1"),
    ("a,y\n1,2\nx,4\n", 3, "non-numeric value 'x'"),
    ("a,y\n1,2\n3,4\n5,z\n", 4, "non-numeric target 'z'"),
])
def test_csv_malformed_lines_name_file_and_line(tmp_path, text, line, reason):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(MalformedLineError, match=rf"bad\.csv:{line}: {reason}"):
        list(iter_csv(path, target="y", chunk_size=10))
    stream = iter_csv(path, target="y", skip_malformed=True)
    assert len(rows(stream)) == text.count("\n") - 2 and stream.n_skipped == 1


def test_csv_missing_column(csv_file):
    with pytest.raises(ValueError, match="no column 'price'; the columns are a, label, b"):
        list(iter_csv(csv_file, target="price"))


LIBSVM = """\
# a comment line
+1 qid:3 1:0.5 3:-2   # trailing comment

-1 2:1.25
1 3:4 1:1
"""


def test_libsvm_dense_rows_qid_comments_blank_lines(tmp_path):
    path = tmp_path / "data.libsvm"
    path.write_text(LIBSVM)
    got = rows(iter_libsvm(path))        # n_features from a first pass: 3
    assert got == [([0.5, 0.0, -2.0], 1.0), ([0.0, 1.25, 0.0], -1.0), ([1.0, 0.0, 4.0], 1.0)]
    assert rows(iter_libsvm(path, n_features=5, chunk_size=2))[0] == ([0.5, 0, -2, 0, 0], 1.0)


def test_libsvm_zero_based_and_sparse_chunks(tmp_path):
    path = tmp_path / "zero.svm"
    path.write_text("1 0:1 2:3\n-1 1:2\n")
    with pytest.raises(MalformedLineError, match=r"zero\.svm:1: .*zero_based=True"):
        list(iter_libsvm(path, zero_based=False))
    assert rows(iter_libsvm(path)) == [([1.0, 0.0, 3.0], 1.0), ([0.0, 2.0, 0.0], -1.0)]
    chunks = list(iter_libsvm(path, zero_based=True, sparse=True, chunk_size=10))
    assert len(chunks) == 1 and sp.issparse(chunks[0][0])
    np.testing.assert_array_equal(chunks[0][0].toarray(), [[1, 0, 3], [0, 2, 0]])
    np.testing.assert_array_equal(chunks[0][1], [1.0, -1.0])
    with pytest.raises(ValueError, match="chunk_size"):
        iter_libsvm(path, sparse=True)


def test_libsvm_malformed_lines(tmp_path):
    path = tmp_path / "bad.libsvm"
    path.write_text("1 1:2\nspam 1:2\n1 1:2 2\n1 9:1\n-1 2:1\n")
    with pytest.raises(MalformedLineError, match=r"bad\.libsvm:2: the label 'spam'"):
        list(iter_libsvm(path, n_features=2))
    stream = iter_libsvm(path, n_features=2, skip_malformed=True)
    assert rows(stream) == [([2.0, 0.0], 1.0), ([0.0, 1.0], -1.0)]
    assert stream.n_skipped == 3


def test_stdin_and_open_files(monkeypatch, tmp_path):
    monkeypatch.setattr("sys.stdin", io.StringIO("x,y\n1,2\n3,4\n"))
    assert rows(iter_csv("-", target="y")) == [([1.0], 2.0), ([3.0], 4.0)]
    monkeypatch.setattr("sys.stdin", io.StringIO("1 1:5\n"))
    with pytest.raises(ValueError, match="n_features is needed"):
        list(iter_libsvm("-"))
    monkeypatch.setattr("sys.stdin", io.StringIO("1 1:5\n"))
    assert rows(iter_libsvm("-", n_features=1)) == [([5.0], 1.0)]


def test_iter_file_by_extension_and_gzip(tmp_path):
    path = tmp_path / "data.libsvm.gz"
    with gzip.open(path, "wt") as file:
        file.write("2 1:1\n")
    assert rows(iter_file(path)) == [([1.0], 2.0)]
    tsv = tmp_path / "data.tsv"
    tsv.write_text("a\ty\n1\t2\n")
    assert rows(iter_file(tsv, target="y")) == [([1.0], 2.0)]
    with pytest.raises(ValueError, match="Unknown format"):
        iter_file(tsv, format="parquet")


def test_arrays_and_dataframes():
    pd = pytest.importorskip("pandas")
    X = np.arange(12.0).reshape(6, 2)
    y = np.arange(6)
    assert rows(iter_array(X, y)) == rows(iter_array(X, y, chunk_size=4))
    assert rows(iter_array(sp.csr_matrix(X), y, chunk_size=4)) == rows(iter_array(X, y))
    frame = pd.DataFrame({"a": X[:, 0], "t": y, "b": X[:, 1]})
    stream = iter_pandas(frame, target="t", chunk_size=4)
    assert rows(stream) == rows(iter_array(X, y)) and stream.feature_names == ["a", "b"]
    pieces = (frame.iloc[lo:lo + 2] for lo in range(0, 6, 2))      # as read_csv(chunksize=2)
    assert rows(iter_pandas(pieces, target="t")) == rows(iter_array(X, y))
    with pytest.raises(ValueError, match="no column 'z'"):
        list(iter_pandas(frame, target="z"))


@pytest.mark.parametrize("chunk_size", [0, -1, 2.5, True])
def test_chunk_size_must_be_positive(chunk_size):
    with pytest.raises(ValueError, match="chunk_size"):
        iter_array(np.zeros((2, 1)), chunk_size=chunk_size)


def test_files_report_their_size_and_bytes_read(csv_file, monkeypatch):
    stream = iter_csv(csv_file, target="label", chunk_size=1)
    assert stream.size == csv_file.stat().st_size
    for _ in stream:
        assert 0 < stream.bytes_read() <= stream.size
    monkeypatch.setattr("sys.stdin", io.StringIO("x,y\n1,2\n"))
    piped = iter_csv("-", target="y")
    assert piped.size is None and [piped.bytes_read() for _ in piped] == [None]


def test_the_format_is_guessed_from_the_first_lines_when_the_extension_says_nothing(tmp_path):
    from okl.stream import guess_format
    libsvm = tmp_path / "a9a.txt"              # a libsvm file as LIBSVM's site names them
    libsvm.write_text("# a comment\n-1 3:1 6:1 qid:2\n+1 5:0.5\n")
    plain = tmp_path / "plain.txt"
    plain.write_text("1 2 3\n4 5 6\n")          # numbers without index:value: a CSV
    gz = tmp_path / "a9a.t.gz"
    with gzip.open(gz, "wt") as file:
        file.write("1 1:2\n")
    named = tmp_path / "named.libsvm"           # the extension decides
    named.write_text("x,y\n")
    assert [guess_format(p) for p in (libsvm, plain, gz, named, tmp_path / "missing")] == \
        ["libsvm", "csv", "libsvm", "libsvm", "csv"]
    assert rows(iter_file(libsvm)) == [([0.0, 0.0, 1.0, 0.0, 0.0, 1.0], -1.0),
                                       ([0.0, 0.0, 0.0, 0.0, 0.5, 0.0], 1.0)]


@pytest.mark.parametrize("data, line, reason", [
    (b"x,y\n1,2\n3,\xff\n", 3, "not UTF-8 text"),
    (bytes(np.random.default_rng(0).integers(0, 256, 2000, dtype=np.uint8)), 1,
     "not UTF-8 text"),
])
def test_bytes_that_are_not_utf8_name_the_file_and_line(tmp_path, data, line, reason):
    path = tmp_path / "bad.csv"
    path.write_bytes(data)
    with pytest.raises(MalformedLineError, match=rf"bad.csv:{line}: {reason}"):
        list(iter_csv(path, target=None))


def test_a_broken_gzip_file_names_the_file_and_line(tmp_path):
    rng = np.random.default_rng(0)
    text = "x,y\n" + "".join(f"{a:.17g},{b:.17g}\n" for a, b in rng.normal(size=(5000, 2)))
    whole = gzip.compress(text.encode())
    for name, data in (("cut.csv.gz", whole[:len(whole) // 2]), ("not.csv.gz", b"plain text\n")):
        path = tmp_path / name
        path.write_bytes(data)
        with pytest.raises(MalformedLineError, match=rf"{name}:\d+: cannot read the file"):
            list(iter_csv(path, target="y", chunk_size=100))


def test_a_utf8_byte_order_mark_is_not_part_of_the_first_name(tmp_path):
    path = tmp_path / "bom.csv"
    path.write_bytes("\ufeffa,y\n1,2\n".encode())
    stream = iter_csv(path, target="y")
    assert rows(stream) == [([1.0], 2.0)] and stream.feature_names == ["a"]
    libsvm = tmp_path / "bom.libsvm"
    libsvm.write_bytes("\ufeff1 1:2\n".encode())
    assert rows(iter_libsvm(libsvm)) == [([2.0], 1.0)]


def test_a_csv_field_past_the_csv_modules_limit_is_a_malformed_line(tmp_path):
    path = tmp_path / "long.csv"
    path.write_text("x,y\n1,2\n1," + "9" * 200_000 + "\n3,4\n")
    with pytest.raises(MalformedLineError, match="long.csv:3: cannot split the line"):
        list(iter_csv(path, target="y"))
    stream = iter_csv(path, target="y", skip_malformed=True)
    assert rows(stream) == [([1.0], 2.0), ([3.0], 4.0)] and stream.n_skipped == 1


def test_libsvm_refuses_duplicate_and_int32_overflowing_indices(tmp_path):
    path = tmp_path / "dup.libsvm"
    path.write_text("1 1:2 3:1 1:5\n")          # scikit-learn's load_svmlight_file refuses it
    with pytest.raises(MalformedLineError, match="dup.libsvm:1: feature index 1 appears twice"):
        list(iter_libsvm(path))
    big = tmp_path / "big.libsvm"
    big.write_text("1 1:2\n-1 9999999999:1\n")
    with pytest.raises(MalformedLineError, match=r"big.libsvm:2: feature index 9999999999 "
                                                 r"is beyond n_features=1 \(the largest is"):
        list(iter_libsvm(big))
    stream = iter_libsvm(big, skip_malformed=True)
    assert rows(stream) == [([2.0], 1.0)] and stream.n_skipped == 1


@pytest.mark.parametrize("n_features", [0, -3, 2.5, True])
def test_libsvm_n_features_must_be_positive(tmp_path, n_features):
    with pytest.raises(ValueError, match="n_features must be a positive integer"):
        iter_libsvm(tmp_path / "x.libsvm", n_features=n_features)
