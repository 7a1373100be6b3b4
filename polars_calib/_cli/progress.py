"""Progress lines on stderr, the printed tables' format, and an engine's output silenced."""

from __future__ import annotations

import os
import sys
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

import polars as pl

from polars_calib._cli.arguments import PROG

STEP_SECONDS = 10.0
"""The least time between two lines of a long stage's progress (``Progress.step``)."""


class Progress:
    """Progress lines on stderr: one per stage, as it starts; nothing with ``--quiet``.

    On a terminal, or with ``--progress``, each line starts with the time elapsed
    (``[m:ss]``) and, for a stage reading the log, says how many passes it makes
    and how long they should take at the rate the earlier passes ran (the passes
    over the log are the long part of every command); a last line says when the
    command is done. Otherwise (a pipe, a file) the lines are the stages alone.
    """

    def __init__(self, stderr: TextIO, *, quiet: bool, detailed: bool | None = None) -> None:
        self.stderr, self.quiet = stderr, quiet
        self.detailed = _is_terminal(stderr) if not detailed else True
        self.start = self.stage_start = time.monotonic()
        self.stage_passes = 0
        self.pass_seconds, self.passes_done = 0.0, 0
        self.step_of: tuple[str, int] | None = None
        self.step_start = self.step_said = self.step_last = 0.0

    def __call__(self, message: str, *, passes: int = 0) -> None:
        """Say that a stage starts; `passes`: how many times it reads the log."""
        now = time.monotonic()
        if self.stage_passes:
            self.pass_seconds += now - self.stage_start
            self.passes_done += self.stage_passes
        self.stage_start, self.stage_passes = now, passes
        if self.quiet:
            return
        if self.detailed:
            message = f"[{_clock(now - self.start)}] {message}"
            if passes and self.passes_done:
                left = self.pass_seconds / self.passes_done * passes
                message += f" (about {_clock(left)} for {passes} pass{'es' * (passes > 1)})"
        print(f"{PROG}: {message}", file=self.stderr, flush=True)

    def step(self, stage: str, done: int, total: int) -> None:
        """Say how far a long stage is, `done` of `total` (the audit's `progress`).

        Only in the detailed form, at most every :data:`STEP_SECONDS` and at the
        stage's end, with what is left at the rate of its steps so far.
        """
        now = time.monotonic()
        if self.quiet or not self.detailed or total <= 1:
            return
        if (stage, total) != self.step_of:  # a new stage: its steps from the last one's end
            self.step_of, self.step_said = (stage, total), 0.0
            self.step_start = max(self.stage_start, self.step_last)
        self.step_last = now
        if done < total and now - self.step_said < STEP_SECONDS:
            return
        self.step_said = now
        left = (now - self.step_start) / done * (total - done)
        message = f"[{_clock(now - self.start)}]   {stage}: {done:,} of {total:,}"
        if done < total:
            message += f" (about {_clock(left)} left)"
        print(f"{PROG}: {message}", file=self.stderr, flush=True)

    def done(self) -> None:
        """Say that the command is done, and in how long (only in the detailed form)."""
        if self.detailed and not self.quiet:
            elapsed = _clock(time.monotonic() - self.start)
            print(f"{PROG}: [{elapsed}] done", file=self.stderr, flush=True)


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _clock(seconds: float) -> str:
    """A duration as ``m:ss`` (or ``h:mm:ss``)."""
    minutes, second = divmod(round(seconds), 60)
    hours, minute = divmod(minutes, 60)
    return f"{hours}:{minute:02d}:{second:02d}" if hours else f"{minute}:{second:02d}"


def log_passes(resamples: int | None) -> int:
    """The passes over the log of a statistics table: one, and one per 64 replicates."""
    return 1 + (-(-resamples // 64) if resamples else 0)


def table_config() -> pl.Config:
    """How a table is printed: every row and column, floats to 4 decimals."""
    return pl.Config(
        tbl_rows=-1,
        tbl_cols=-1,
        tbl_width_chars=1_000,
        float_precision=4,
        fmt_str_lengths=80,
        tbl_hide_dataframe_shape=True,
    )


@contextmanager
def silenced(quiet: bool) -> Iterator[None]:
    """With `quiet`, silence what an engine prints itself: Spark's JVM log, Python warnings.

    This process's standard error (file descriptor 2) points to the null device
    while the block runs, and the processes started meanwhile (Spark's JVM and its
    Python workers, Dask's) keep it; warnings are ignored. An error still reaches
    the command line's one-line message, printed after the block.
    """
    if not quiet:
        yield
        return
    sys.stderr.flush()
    saved, null = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 2)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)
