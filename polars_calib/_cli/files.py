"""Shared file handling: reading a log (Polars or an engine), refusing outputs over it,
writing output directories and charts."""

from __future__ import annotations

import glob
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import polars as pl

from polars_calib._cli.arguments import DataError, UsageError
from polars_calib._core.files import (
    check_replaceable,
    overwritten_input,
    replaced_directory,
)
from polars_calib._engines import Engine, read_with
from polars_calib._plot.png import save_png

PARQUET_SUFFIXES = (".parquet", ".parq", ".pq")


CSV_SUFFIXES = (".csv", ".tsv")


PLOT_EXTRA = "pip install 'polars_calib[plot]'"
"""What the charts need, as the notes on stderr say it."""


def check_found(source: str) -> None:
    """Raise :class:`DataError` when a local path, glob or directory names no log file."""
    path = Path(source)
    if glob.has_magic(source):
        if not glob.glob(source, recursive=True):
            msg = f"no file matches {source!r}"
            raise DataError(msg)
    elif path.is_dir():
        if not any(path.rglob("*.parquet")):
            msg = f"directory {source!r} holds no .parquet file"
            raise DataError(msg)
    elif not path.exists():
        msg = f"no such file: {source!r}"
        raise DataError(msg)


def scan(source: str) -> pl.LazyFrame:
    """Scan a parquet or CSV file, a glob of them, or a directory of parquet files, lazily."""
    check_found(source)
    path = Path(source)
    if not glob.has_magic(source) and path.is_dir():
        return pl.scan_parquet(path)
    suffix = path.suffix.lower()
    if suffix in PARQUET_SUFFIXES:
        return pl.scan_parquet(source)
    if suffix in CSV_SUFFIXES:
        separator = "\t" if suffix == ".tsv" else ","
        lf = pl.scan_csv(source, separator=separator, try_parse_dates=True)
        # A header alone reads every column as String: say what is wrong instead.
        if lf.head(1).collect().is_empty():
            msg = f"{source!r} holds no rows (a CSV header only): nothing to read"
            raise DataError(msg)
        return lf
    msg = f"cannot tell the format of {source!r}: expected a .parquet or .csv file"
    raise DataError(msg)


def read_engine(engine: Engine, log: str) -> tuple[Any, pl.Schema]:
    """The log as the engine's frame, and its schema (the engine's extra is needed)."""
    if "://" not in log:  # a local path (the engine may read others, Polars not)
        check_found(log)
    try:
        return read_with(engine, log)
    except ImportError as error:
        msg = f"--engine {engine} needs the {engine} extra: pip install 'polars_calib[{engine}]'"
        raise DataError(msg) from error


def check_output_file(option: str, output: Path, inputs: Sequence[str | Path]) -> None:
    """Refuse (a usage error) an output file that is an input, compared as files.

    The same path, a symbolic or hard link to an input file, or a path inside an
    input directory is refused, before anything is read.
    """
    source = overwritten_input(output, inputs)
    if source is not None:
        msg = (
            f"argument {option}: {str(output)!r} would write over the input {source!r} "
            "(the same file, a link to it, or inside its directory): give another path"
        )
        raise UsageError(msg)
    if output.is_dir():
        msg = f"argument {option}: {str(output)!r} is a directory: give a file name"
        raise UsageError(msg)


def check_output_directory(
    option: str, out: Path, owned: Sequence[str], inputs: Sequence[str | Path]
) -> None:
    """Refuse (a usage error) an output directory that cannot be replaced whole.

    It may not be, hold or lie inside an input (files compared through links), be a
    file, or hold files other than `owned` (the command's outputs).
    """
    source = overwritten_input(out, inputs, directory=True)
    if source is not None:
        msg = (
            f"argument {option}: {str(out)!r} would write over the input {source!r} "
            "(it holds the input or a link to it, or lies inside it; the directory is "
            "replaced whole): give another directory"
        )
        raise UsageError(msg)
    try:
        check_replaceable(out, owned)
    except ValueError as error:
        raise UsageError(f"argument {option}: {error}") from error


@contextmanager
def replaced(out: Path, owned: Sequence[str]) -> Iterator[Path]:
    """:func:`replaced_directory`, its errors as the command line's data errors."""
    try:
        with replaced_directory(out, owned) as staging:
            yield staging
    except OSError as error:
        msg = f"cannot write the output directory {str(out)!r}: {error.strerror or error}"
        raise DataError(msg) from error


def save_chart(plot: Any, path: Path) -> str | None:
    """Draw `plot` (a plotting function given all but `backend`) to `path` with Altair
    (vl-convert), else matplotlib; return the backend used, or None when neither can."""
    try:
        save_png(plot(), path)
        return "altair"
    except ImportError:
        pass
    try:
        save_png(plot(backend="matplotlib"), path, scale=1.5)
        return "matplotlib"
    except ImportError:
        return None
