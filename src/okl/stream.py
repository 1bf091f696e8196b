"""Streams from files and memory: CSV, libsvm / svmlight, arrays, DataFrames.

Every reader returns a `Stream`: iterating it yields ``(X, y)`` chunks of at
most `chunk_size` rows (2-D X, 1-D y) or, with ``chunk_size=None``, one
``(x, y)`` event at a time (1-D x).  Files are read line by line and never
held in memory; ``"-"`` reads standard input; a name ending in ``.gz`` is
decompressed on the fly.  Iterating again re-reads a file.

A malformed line raises `MalformedLineError` naming the file and the line, or
with ``skip_malformed=True`` is skipped and counted in ``Stream.n_skipped``.
Files are UTF-8 text (a byte-order mark is dropped): other bytes, and a broken
``.gz`` file, raise `MalformedLineError` naming the file and the line too.
"""
import csv
import gzip
import io
import os
import re
import sys
import zlib
from collections.abc import Iterable, Iterator
from itertools import chain, islice
from typing import Any

import numpy as np
import scipy.sparse as sp

__all__ = ["MalformedLineError", "Stream", "guess_format", "iter_array", "iter_csv",
           "iter_file", "iter_libsvm", "iter_pandas"]

MISSING = ("", "NA", "N/A", "NaN", "nan", "null", "?")
BLOCK = 1024            # lines parsed at once when events are asked for
MAX_INDEX = 2**31 - 1   # the largest libsvm feature index (the int32 indices of a CSR matrix)

Path = str | os.PathLike


class MalformedLineError(ValueError):
    """A line of a data file that cannot be read; the message reads ``file:line: reason``."""


class Stream:
    """An iterable of ``(X, y)`` chunks, or of ``(x, y)`` events when `chunk_size` is None.

    Attributes
    ----------
    name : str
        The source, as error messages name it.
    feature_names : list of str or None
        Column names, when the source has them (known once iteration starts).
    n_skipped : int
        Malformed lines skipped by the last iteration (``skip_malformed=True``).
    size : int or None
        Bytes in the source, when it is a plain file (for progress bars).
    """

    def __init__(self, name: str, chunk_size: int | None):
        if chunk_size is not None and (not isinstance(chunk_size, (int, np.integer))
                                       or isinstance(chunk_size, bool) or chunk_size < 1):
            raise ValueError(f"chunk_size must be a positive integer or None, got {chunk_size!r}.")
        self.name = name
        self.chunk_size = chunk_size
        self.feature_names: list[str] | None = None
        self.n_skipped = 0
        self.size: int | None = None

    def bytes_read(self) -> int | None:
        """Bytes of the source read so far (to a buffer's length), or None if unknown."""
        return None

    def _chunks(self, size: int) -> Iterator[tuple[Any, np.ndarray | None]]:
        raise NotImplementedError

    def __iter__(self) -> Iterator[tuple[Any, Any]]:
        self.n_skipped = 0
        if self.chunk_size is not None:
            yield from self._chunks(self.chunk_size)
            return
        for X, y in self._chunks(BLOCK):
            if sp.issparse(X):
                raise ValueError("Sparse rows come in chunks: pass chunk_size.")
            for i in range(X.shape[0]):
                yield X[i], (None if y is None else y[i])

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} chunk_size={self.chunk_size}>"


def _open_lines(source: Path | io.TextIOBase) -> tuple[Any, str, bool]:
    """(file of lines, bytes or text; name for messages; whether we opened it and must close
    it).  Paths and standard input are read as bytes: `_text` decodes them a line at a time."""
    if hasattr(source, "read"):
        return source, getattr(source, "name", "<stream>"), False
    if os.fspath(source) == "-":
        return getattr(sys.stdin, "buffer", sys.stdin), "<stdin>", False
    path = os.fspath(source)
    if path.endswith(".gz"):
        return gzip.open(path, "rb"), path, True
    return open(path, "rb"), path, True


def _text(file: Any, name: str) -> Iterator[str]:
    """The lines of `file` as text: UTF-8 decoded line by line (a byte-order mark dropped), so
    that bytes of another encoding and a broken .gz file are named by file and line."""
    number = 0
    try:
        for number, line in enumerate(file, start=1):
            if isinstance(line, bytes):
                line = line.decode("utf-8")
            yield line.removeprefix("\ufeff") if number == 1 else line
    except UnicodeDecodeError as exc:
        raise MalformedLineError(
            f"{name}:{number}: not UTF-8 text (byte {line[exc.start:exc.start + 1]!r} at "
            f"column {exc.start + 1}); okl reads UTF-8 files") from None
    except (EOFError, OSError, zlib.error) as exc:      # gzip's BadGzipFile is an OSError
        raise MalformedLineError(f"{name}:{number + 1}: cannot read the file past line "
                                 f"{number} ({type(exc).__name__}: {exc})") from None


class _FileStream(Stream):
    """A stream read from a path, ``"-"`` (stdin) or an open text file."""

    def __init__(self, source: Path | io.TextIOBase, chunk_size: int | None,
                 skip_malformed: bool):
        name = (getattr(source, "name", "<stream>") if hasattr(source, "read")
                else "<stdin>" if os.fspath(source) == "-" else os.fspath(source))
        super().__init__(name, chunk_size)
        self.source = source
        self.skip_malformed = skip_malformed
        plain = not hasattr(source, "read") and name != "<stdin>" and not name.endswith(".gz")
        self.size = os.path.getsize(name) if plain and os.path.isfile(name) else None
        self._file = None

    def bytes_read(self) -> int | None:
        if self.size is None or self._file is None:
            return None
        return self._file.tell()

    def _bad(self, number: int, reason: str) -> None:
        """Raise for line `number`, or count it when skipping."""
        if not self.skip_malformed:
            raise MalformedLineError(f"{self.name}:{number}: {reason}")
        self.n_skipped += 1

    def _chunks(self, size):
        file, self.name, close = _open_lines(self.source)
        self._file = file
        try:
            yield from self._parse(_text(file, self.name), size)
        finally:
            self._file = None
            if close:
                file.close()

    def _parse(self, file, size):
        raise NotImplementedError


class _CSVStream(_FileStream):
    def __init__(self, source, target, delimiter, header, missing, fill_value, chunk_size,
                 skip_malformed):
        super().__init__(source, chunk_size, skip_malformed)
        self.target = target
        self.delimiter = delimiter
        self.header = header
        self.missing = frozenset(missing)
        self.fill_value = fill_value

    def _columns(self, first_row):
        """(feature columns, target column) from the header or the first row."""
        width = len(first_row)
        if self.header:
            self._names = [name.strip() for name in first_row]
            self.feature_names = list(self._names)
            if self.target is None:
                return list(range(width)), None
            if self.target not in self._names:
                raise ValueError(f"{self.name}: no column {self.target!r}; the columns are "
                                 f"{', '.join(self._names)}.")
            target = self._names.index(self.target)
        elif self.target is None:
            return list(range(width)), None
        else:
            if not isinstance(self.target, (int, np.integer)) or not -width <= self.target < width:
                raise ValueError(f"{self.name} has no header: target must be a column number "
                                 f"in [0, {width}), got {self.target!r}.")
            target = int(self.target) % width
        features = [j for j in range(width) if j != target]
        if self.feature_names is not None:
            self.feature_names = [self.feature_names[j] for j in features]
        return features, target

    def _rows(self, lines):
        """(line number, fields) of every non-empty row; a row the csv module cannot split
        (a field past its limit, 131072 characters) is malformed."""
        rows = csv.reader(lines, delimiter=self.delimiter)
        while True:
            try:
                row = next(rows)
            except StopIteration:
                return
            except csv.Error as exc:
                self._bad(rows.line_num, f"cannot split the line into fields ({exc})")
                continue
            if row:
                yield rows.line_num, row

    def _parse(self, file, size):
        numbered = self._rows(file)
        first = next(numbered, None)
        if first is None:
            return
        features, target = self._columns(first[1])
        width = len(first[1])
        if not self.header:
            numbered = chain([first], numbered)
        numeric_y = None
        while block := list(islice(numbered, size)):
            X, y, numeric_y = self._convert(block, features, target, width, numeric_y)
            if len(X):
                yield X, y

    def _convert(self, block, features, target, width, numeric_y):
        """Rows of one block as float X and y; clean blocks take NumPy's fast path."""
        if numeric_y is None and target is not None:
            numeric_y = _is_number(block[0][1][target])
        try:
            if any(len(row) != width for _, row in block):
                raise ValueError
            table = np.array([row for _, row in block], dtype=str)
            X = table[:, features].astype(np.float64)
            y = None if target is None else table[:, target]
            if y is not None:
                y = y.astype(np.float64) if numeric_y else np.char.strip(y)
            if not np.isfinite(X).all() or (numeric_y and not np.isfinite(y).all()):
                raise ValueError
            if y is not None and not numeric_y and np.isin(y, list(self.missing)).any():
                raise ValueError
            return X, y, numeric_y
        except ValueError:
            pass
        good_X, good_y = [], []             # the slow path: line by line, naming the bad ones
        for number, row in block:
            if len(row) != width:
                self._bad(number, f"expected {width} fields, found {len(row)}")
                continue
            x = [self._value(row[j]) for j in features]
            bad = [j for j, v in zip(features, x) if v is None]
            label = None if target is None else row[target].strip()
            if bad and row[bad[0]].strip() in self.missing:
                self._bad(number, f"missing value in column {self._column_name(bad[0])} "
                                  "(fill missing values with fill_value= or okl's --fill-value)")
            elif bad:
                self._bad(number, f"non-numeric value {row[bad[0]].strip()!r} in column "
                                  f"{self._column_name(bad[0])}")
            elif target is not None and label in self.missing:
                self._bad(number, f"missing target in column {self._column_name(target)}")
            elif numeric_y and not _is_number(label):
                self._bad(number, f"non-numeric target {label!r} in column "
                                  f"{self._column_name(target)}")
            else:
                good_X.append(x)
                good_y.append(float(label) if numeric_y else label)
        X = np.array(good_X, dtype=np.float64).reshape(len(good_X), len(features))
        y = None if target is None else np.array(good_y, dtype=np.float64 if numeric_y else str)
        return X, y, numeric_y

    def _value(self, text):
        """A feature as float; the fill value when missing; None when unreadable."""
        text = text.strip()
        if text in self.missing:
            return self.fill_value
        try:
            value = float(text)
        except ValueError:
            return None
        return value if np.isfinite(value) else None

    def _column_name(self, j):
        return repr(self._names[j]) if self.header else str(j)


def _is_number(text):
    try:
        return np.isfinite(float(text))
    except ValueError:
        return False


def iter_csv(path: Path | io.TextIOBase, target: str | int | None = None, *,
             delimiter: str = ",", header: bool = True, missing: Iterable[str] = MISSING,
             fill_value: float | None = None, chunk_size: int | None = None,
             skip_malformed: bool = False) -> Stream:
    """Stream the rows of a CSV file as float features and a target.

    Parameters
    ----------
    path : path, ``"-"`` for standard input, or an open text file
    target : str or int, optional
        The target column: a name from the header (a number without header).
        Every other column is a feature.  None: no target, y is None.
    delimiter : str, default=","
    header : bool, default=True
        Whether the first line names the columns.
    missing : strings, default=("", "NA", "N/A", "NaN", "nan", "null", "?")
        Cells that mean "missing".
    fill_value : float, optional
        Replaces missing features; without it a row with one is malformed.
        A missing target is always malformed.
    chunk_size : int, optional
        Rows per ``(X, y)`` chunk; None yields ``(x, y)`` events.
    skip_malformed : bool, default=False
        Skip and count (``n_skipped``) malformed lines instead of raising
        `MalformedLineError`.

    Returns
    -------
    Stream
        y is float when the target's first value is a number, else str labels.
    """
    return _CSVStream(path, target, delimiter, header, missing, fill_value, chunk_size,
                      skip_malformed)
class _LibsvmStream(_FileStream):
    def __init__(self, source, n_features, zero_based, sparse, chunk_size, skip_malformed):
        super().__init__(source, chunk_size, skip_malformed)
        if sparse and chunk_size is None:
            raise ValueError("Sparse rows come in chunks: pass chunk_size with sparse=True.")
        if not (isinstance(zero_based, (bool, np.bool_)) or zero_based == "auto"):
            raise ValueError(f"zero_based must be True, False or 'auto'; got {zero_based!r}.")
        if n_features is not None and (not isinstance(n_features, (int, np.integer))
                                       or isinstance(n_features, bool)
                                       or not 1 <= n_features <= MAX_INDEX + 1):
            raise ValueError(f"n_features must be a positive integer, got {n_features!r}.")
        self.n_features = n_features
        self.zero_based = zero_based if zero_based == "auto" else bool(zero_based)
        self.offset = 0 if self.zero_based is True else 1
        self.sparse = sparse

    def _layout(self):
        """(offset, width): the first index (0 or 1) and the width of the rows.

        A first pass over the file finds the largest index when n_features is
        not given and, for zero_based="auto", the base: 0 if some index is 0,
        else 1 (as scikit-learn's ``load_svmlight_file(zero_based="auto")``).
        Standard input and open files cannot be read twice: "auto" is 1 there.
        """
        fixed = None if self.zero_based == "auto" else 0 if self.zero_based else 1
        once = hasattr(self.source, "read") or os.fspath(self.source) == "-"
        if once or (self.n_features is not None and fixed is not None):
            if self.n_features is None:
                raise ValueError(f"n_features is needed to read libsvm data from {self.name}: "
                                 "the width of the rows cannot be known before the end.")
            return (1 if fixed is None else fixed), int(self.n_features)
        smallest, largest = None, -1
        file, name, _ = _open_lines(self.source)
        with file:
            for line in _text(file, name):
                for token in line.partition("#")[0].split()[1:]:
                    index = token.partition(":")[0]
                    if index.isdigit() and int(index) <= MAX_INDEX:     # others: malformed
                        index = int(index)
                        largest = max(largest, index)
                        smallest = index if smallest is None else min(smallest, index)
        offset = fixed if fixed is not None else 0 if smallest == 0 else 1
        if self.n_features is not None:
            return offset, int(self.n_features)
        return offset, max(largest + 1 - offset, 0)

    def _parse(self, file, size):
        self.offset, width = self._layout()
        numbered = enumerate(file, start=1)
        while block := list(islice(numbered, size)):
            labels, indptr, indices, values = [], [0], [], []
            for number, line in block:
                row = self._row(number, line, width)
                if row is not None:
                    labels.append(row[0])
                    indices.extend(row[1])
                    values.extend(row[2])
                    indptr.append(len(indices))
            if not labels:
                continue
            X = sp.csr_matrix((np.array(values, dtype=np.float64), np.array(indices, np.int32),
                               np.array(indptr, np.intp)), shape=(len(labels), width))
            yield (X if self.sparse else X.toarray()), np.array(labels, dtype=np.float64)

    def _row(self, number, line, width):
        """(label, columns, values) of one line; None for a blank, comment or skipped line."""
        tokens = line.partition("#")[0].split()
        if not tokens:
            return None
        try:
            label = float(tokens[0])
        except ValueError:
            return self._bad(number, f"the label {tokens[0]!r} is not a number")
        columns, values = [], []
        for token in tokens[1:]:
            index, colon, value = token.partition(":")
            if index == "qid":
                continue
            try:
                column, value = int(index) - self.offset, float(value)
            except ValueError:
                column, value = -1, np.nan
            if not colon or not np.isfinite(value) or column < 0:
                hint = (" (indices from 0: pass zero_based=True, --zero-based true on the "
                        "command line)") if index == "0" else ""
                return self._bad(number, f"cannot read {token!r} as index:value{hint}")
            if column >= width:
                too_large = f" (the largest is {MAX_INDEX})" if int(index) > MAX_INDEX else ""
                return self._bad(number, f"feature index {index} is beyond "
                                         f"n_features={width}{too_large}")
            columns.append(column)
            values.append(value)
        if len(set(columns)) < len(columns):
            twice = next(c for i, c in enumerate(columns) if c in columns[:i])
            return self._bad(number, f"feature index {twice + self.offset} appears twice (as "
                                     "scikit-learn's load_svmlight_file, okl does not add them)")
        if not np.isfinite(label):
            return self._bad(number, f"the label {tokens[0]!r} is not finite")
        return label, columns, values


def iter_libsvm(path: Path | io.TextIOBase, *, n_features: int | None = None,
                zero_based: bool | str = "auto", sparse: bool = False,
                chunk_size: int | None = None, skip_malformed: bool = False) -> Stream:
    """Stream a libsvm / svmlight file, one ``label index:value [# comment]`` line per sample.

    ``qid:`` tokens are ignored, ``#`` starts a comment, blank lines are skipped.

    Parameters
    ----------
    path : path, ``"-"`` for standard input, or an open text file
    n_features : int, optional
        The width of the rows.  Default: the largest index in the file, found
        by a first pass over it (standard input needs n_features).
    zero_based : bool or "auto", default="auto"
        Whether indices start at 0 (libsvm's own files start at 1, those of
        scikit-learn's ``dump_svmlight_file`` at 0).  "auto", as scikit-learn's
        ``load_svmlight_file``: 0-based if some index is 0, else 1-based; it
        takes a first pass over a file, and is 1-based on standard input.
    sparse : bool, default=False
        Yield CSR matrices (for linear models such as
        ``RegularizedPAClassifier(kernel="linear")``) instead of dense rows
        (for kernel learners); needs `chunk_size`.
    chunk_size : int, optional
        Rows per ``(X, y)`` chunk; None yields ``(x, y)`` events.
    skip_malformed : bool, default=False
        Skip and count (``n_skipped``) malformed lines instead of raising
        `MalformedLineError`.

    Returns
    -------
    Stream
        y holds the float labels.
    """
    return _LibsvmStream(path, n_features, zero_based, sparse, chunk_size, skip_malformed)


class _ArrayStream(Stream):
    def __init__(self, X, y, chunk_size):
        super().__init__(f"<{type(X).__name__}>", chunk_size)
        self.X = X.tocsr() if sp.issparse(X) else np.asarray(X)
        self.y = None if y is None else np.asarray(y)
        if self.y is not None and len(self.y) != self.X.shape[0]:
            raise ValueError(f"X has {self.X.shape[0]} rows but y has {len(self.y)} values.")

    def _chunks(self, size):
        for lo in range(0, self.X.shape[0], size):
            yield self.X[lo:lo + size], (None if self.y is None else self.y[lo:lo + size])


def iter_array(X: Any, y: Any = None, *, chunk_size: int | None = None) -> Stream:
    """Stream the rows of an array or sparse matrix X (and of y), in order.

    Returns
    -------
    Stream
        Chunks are views (CSR slices for sparse X); events are 1-D rows.
    """
    return _ArrayStream(X, y, chunk_size)


class _FrameStream(Stream):
    def __init__(self, frames, target, chunk_size):
        super().__init__("<DataFrame>", chunk_size)
        self.frames = frames
        self.target = target

    def _chunks(self, size):
        frames = [self.frames] if hasattr(self.frames, "columns") else self.frames
        for frame in frames:
            if self.target is not None and self.target not in frame.columns:
                raise ValueError(f"The DataFrame has no column {self.target!r}; the columns are "
                                 f"{', '.join(map(str, frame.columns))}.")
            features = frame.drop(columns=self.target) if self.target is not None else frame
            self.feature_names = [str(c) for c in features.columns]
            for lo in range(0, len(frame), size):
                X = features.iloc[lo:lo + size].to_numpy(dtype=np.float64)
                y = None if self.target is None else frame[self.target].iloc[lo:lo + size]
                yield X, (None if y is None else y.to_numpy())


def iter_pandas(frames: Any, target: str | None = None, *,
                chunk_size: int | None = None) -> Stream:
    """Stream a pandas DataFrame, or an iterable of them, as float features and a target.

    An iterable such as ``pandas.read_csv(path, chunksize=10_000)`` is read one
    frame at a time, so the file is never in memory whole.

    Parameters
    ----------
    frames : DataFrame or iterable of DataFrames
    target : str, optional
        The target column; every other column is a feature.
    chunk_size : int, optional
        Rows per ``(X, y)`` chunk; None yields ``(x, y)`` events.

    Returns
    -------
    Stream
    """
    return _FrameStream(frames, target, chunk_size)


FORMATS = {".csv": "csv", ".tsv": "csv", ".libsvm": "libsvm", ".svm": "libsvm",
           ".svmlight": "libsvm"}
SNIFF_BYTES = 1 << 16   # how much of a file guess_format reads when the extension says nothing


def _sample_lines(path: Path | io.TextIOBase) -> list[str]:
    """The complete lines in the first SNIFF_BYTES of a file (standard input: peeked, not
    consumed); none when it cannot be read or peeked."""
    try:
        if os.fspath(path) == "-":
            data = sys.stdin.buffer.peek(SNIFF_BYTES)[:SNIFF_BYTES]
        else:
            opener = gzip.open if os.fspath(path).endswith(".gz") else open
            with opener(path, "rb") as file:
                data = file.read(SNIFF_BYTES)
    except (AttributeError, OSError, EOFError, zlib.error, ValueError):
        return []
    lines = data.decode("utf-8", errors="replace").splitlines(keepends=True)
    if lines and len(data) == SNIFF_BYTES and not lines[-1].endswith(("\n", "\r")):
        lines.pop()                                          # cut short
    return lines


def _is_libsvm(lines: Iterable[str]) -> bool:
    """Whether lines read as libsvm: ``label index:value ... [# comment]``, with a pair on at
    least one of them (a label alone is also a one-column CSV)."""
    pairs = False
    for line in lines:
        tokens = line.partition("#")[0].split()
        if not tokens:
            continue
        if not _is_number(tokens[0].lstrip("\ufeff")):
            return False
        for token in tokens[1:]:
            index, colon, value = token.partition(":")
            if not colon or not value or not (index.isdigit() or index == "qid"):
                return False
            pairs = True
    return pairs


def guess_format(path: Path | io.TextIOBase) -> str:
    """"csv" or "libsvm": from a file name's extension (``.csv``, ``.tsv``; ``.libsvm``,
    ``.svm``, ``.svmlight``; under ``.gz`` too), else from the file's first lines, as other
    tools' readers do: "libsvm" when every line reads ``label index:value ...`` (a libsvm
    file named ``.txt``), else "csv".  Standard input is peeked without being consumed; an
    open file object is "csv"."""
    if hasattr(path, "read"):
        return "csv"
    name = os.fspath(path).removesuffix(".gz")
    known = FORMATS.get(os.path.splitext(name)[1].lower())
    if known is not None:
        return known
    return "libsvm" if _is_libsvm(_sample_lines(path)) else "csv"


def iter_file(path: Path | io.TextIOBase, format: str | None = None, **options: Any) -> Stream:
    """`iter_csv` or `iter_libsvm`, by `format` or by the file's extension.

    Parameters
    ----------
    path : path, ``"-"`` for standard input, or an open text file
    format : {"csv", "libsvm"}, optional
        Default: from the extension (``.csv``, ``.tsv``; ``.libsvm``, ``.svm``,
        ``.svmlight``; also under ``.gz``), else from the first lines
        (`guess_format`).  ``.tsv`` sets a tab delimiter unless `options` give
        one.
    **options
        Passed on to the reader.
    """
    format = format or guess_format(path)
    if format == "csv":
        if not hasattr(path, "read") and os.fspath(path).removesuffix(".gz").endswith(".tsv"):
            options.setdefault("delimiter", "\t")
        return iter_csv(path, **options)
    if format == "libsvm":
        return iter_libsvm(path, **options)
    raise ValueError(f"Unknown format {format!r}: use 'csv' or 'libsvm'.")
