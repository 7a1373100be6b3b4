"""Shared command-line parsing: the errors, the parser and the argument types."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import NoReturn

from polars_calib._core.options import (
    MAX_BINS,
    MAX_LEVELS,
    check_every,
    check_n_levels,
)

PROG = "polars-calib"


class UsageError(Exception):
    """A bad command line: exit code 2."""


class DataError(Exception):
    """Unreadable or invalid input data: exit code 1."""


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line, without the usage block."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def positive_int(text: str) -> int:
    """Parse a positive integer (an argument type)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        msg = f"must be a positive integer, got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return value


def non_negative_int(text: str) -> int:
    """Parse a non-negative integer (an argument type)."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        msg = f"must be a non-negative integer, got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return value


def level_count(text: str) -> int:
    """Parse the number of levels of a calibration curve (an argument type)."""
    try:
        return check_n_levels(int(text))
    except ValueError:
        msg = f"must be an integer from 2 to {MAX_LEVELS}, got {text!r}"
        raise argparse.ArgumentTypeError(msg) from None


def bin_count(text: str) -> int:
    """Parse a number of bins, at most the library's (an argument type)."""
    value = positive_int(text)
    if value > MAX_BINS:
        msg = f"must be at most {MAX_BINS} (see docs/binning.md), got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return value


def confidence_level(text: str) -> float:
    """Parse a level strictly between 0 and 1 (an argument type)."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 < value < 1.0:
        msg = f"must be a number strictly between 0 and 1, got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return value


def seed_value(text: str) -> int:
    """Parse a seed of the counter-based draws, 0 to 2**32 - 1 (an argument type)."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value < 2**32:
        msg = f"must be an integer from 0 to 2**32 - 1, got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return value


def column_names(text: str) -> list[str]:
    """Parse comma-separated column names (an argument type)."""
    names = [name.strip() for name in text.split(",")]
    if not all(names):
        msg = f"must be comma-separated column names, got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return names


def numbers(text: str) -> list[float]:
    """Parse comma-separated numbers (an argument type)."""
    try:
        return [float(value) for value in text.split(",")]
    except ValueError:
        msg = f"must be comma-separated numbers, got {text!r}"
        raise argparse.ArgumentTypeError(msg) from None


def positive_numbers(text: str) -> list[float]:
    """Parse comma-separated positive numbers (an argument type)."""
    try:
        values = [float(part) for part in text.split(",")]
    except ValueError:
        values = []
    if not values or not all(0.0 < value < float("inf") for value in values):
        msg = f"must be comma-separated positive numbers, got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return values


def positive_number(text: str) -> float:
    """Parse one positive number (an argument type)."""
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0.0 < value < float("inf"):
        msg = f"must be a positive number, got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return value


def duration(text: str) -> str:
    """Parse a positive Polars duration such as ``1d`` (an argument type)."""
    try:
        return check_every(text)
    except ValueError:
        msg = f"must be a positive Polars duration such as 1h, 1d, 1w or 1mo, got {text!r}"
        raise argparse.ArgumentTypeError(msg) from None


def given_flags(args: argparse.Namespace, names: Sequence[str]) -> list[str]:
    """The options among `names` (argparse's names) given on the command line, as flags."""
    return as_flags([name for name in names if getattr(args, name) is not None])


def as_flags(names: Sequence[str]) -> list[str]:
    """Options' argparse names as their flags: ``n_levels`` is ``--n-levels``."""
    return ["--" + name.replace("_", "-") for name in names]


def add_progress_options(command: argparse.ArgumentParser) -> None:
    """A command's ``-q``/``--quiet`` and ``--progress``: how it says its stages on stderr."""
    command.add_argument(
        "-q", "--quiet", action="store_true", help="no progress messages on stderr"
    )
    command.add_argument(
        "--progress",
        action="store_true",
        help="progress with elapsed time and estimates even when stderr is not a terminal",
    )


def check_metrics(names: Sequence[str], known: Sequence[str], *, of: str = "") -> None:
    """Refuse (a usage error) a ``--metrics`` name not among `known` (`of`: whose they are)."""
    unknown = [name for name in names if name not in known]
    if unknown:
        choices = ", ".join(known)
        msg = f"argument --metrics: unknown metric {unknown[0]!r}{of} (choose from {choices})"
        raise UsageError(msg)
