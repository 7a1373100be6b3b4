"""The incremental monitoring store: a directory that a daily job updates from the new rows.

A store holds what a full recomputation would need of the rows it has seen, and no row:

* ``statistics/``: the mergeable per-(keys, window, bin) statistics table
  (:func:`polars_calib.bin_statistics`, uniform bins), one parquet part per update;
* ``alarms/``: the CUSUM alarms found, one part per update (empty when none);
* ``state/``: one small table, a row per (group, chart): the threshold, the chart's end
  state (:data:`~polars_calib._monitor.alarms.CHART_STATE`), the last alarm, and the
  group's last seen time, the rows seen at that time and all the rows seen;
* ``manifest.json``: the format version, the options the store was built with, and
  the parts that make it up.

An update holds the store's lock, ``update.lock`` (created exclusively; a second
update at the same time is refused), writes its parts under new names (each through a
temporary name, then a rename) and the manifest last: until the manifest is replaced
the store is the old one, whatever failed. The proofs (continuing the chart, the
boundary rows) are in ``docs/monitoring.md``, "The store and the daily job".

An update never holds its new rows: it streams them to a temporary parquet file; their
statistics table is one streaming aggregation of it, and the charts, seeded with the
saved state, read it in batches through the driver of ``pc.monitor``
(:func:`~polars_calib._monitor.stream.run_charts`).
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from polars_calib._core.exprs import Keys
from polars_calib._core.files import atomic_path, write_text
from polars_calib._core.options import Diagnostic, Metric, check_every, check_n_bins
from polars_calib._core.validation import CalibrationDataError
from polars_calib._frames.statistics import (
    bin_statistics,
    metrics_from_statistics,
    validate_statistics,
)
from polars_calib._monitor.alarms import (
    CHART_STATE,
    GROUP,
    chart_arrays,
    check_options,
    thresholds_for,
)
from polars_calib._monitor.api import _given, _lazy
from polars_calib._monitor.batched import TIME, Charts, from_physical
from polars_calib._monitor.reference import REF
from polars_calib._monitor.stream import Groups, run_charts
from polars_calib._monitor.windows import windows_with_limits

__all__ = ["monitor_store_alarms", "monitor_store_windows", "update_monitor_store"]

FORMAT = 1
"""The store's format version, in its manifest."""
MANIFEST = "manifest.json"
LOCK = "update.lock"
"""The lock an update holds (created exclusively, removed when the update ends)."""
WINDOW_METRICS: list[Metric | Diagnostic] = ["ece", "spiegelhalter_z"]
"""The metrics the statistics table can finish (those of :func:`monitor_windows`)."""
_POSITION = "__calib_position__"


def _options(given: dict[str, Any]) -> dict[str, Any]:
    """The options a store is built with, as its manifest records them (the simulation's
    options only when thresholds are simulated)."""
    threshold = given["threshold"]
    if threshold is not None:
        table = _given(pl.DataFrame({GROUP: [0]}), given["odds_ratio"], threshold)
        given["threshold"] = table["threshold"].to_list()
        given.update(arl0=None, simulated_alarms=None, seed=None)
    else:
        given["arl0"] = float(given["arl0"])
    return given


def _read_manifest(store: Path) -> dict[str, Any] | None:
    """The store's manifest, or None for a new store (a missing or empty directory)."""
    if store.exists() and not store.is_dir():
        msg = f"the monitoring store {str(store)!r} is a file, not a directory"
        raise ValueError(msg)
    path = store / MANIFEST
    if not path.exists():
        if store.exists() and any(entry.name != LOCK for entry in store.iterdir()):
            msg = (
                f"{str(store)!r} is not a monitoring store (no {MANIFEST}) and is not empty: "
                "give a new or empty directory"
            )
            raise ValueError(msg)
        return None
    manifest: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    if manifest.get("format") != FORMAT:
        msg = (
            f"the monitoring store {str(store)!r} has format {manifest.get('format')!r}; "
            f"this version reads format {FORMAT}"
        )
        raise ValueError(msg)
    return manifest


def _check_same_options(store: Path, built: dict[str, Any], given: dict[str, Any]) -> None:
    """Raise ``ValueError`` when the options of this run differ from the store's."""
    differ = [name for name in built if built[name] != given.get(name)]
    if differ:
        shown = "; ".join(f"{n}: store {built[n]!r}, given {given.get(n)!r}" for n in differ)
        msg = (
            f"the monitoring store {str(store)!r} was built with other options ({shown}): "
            "update it with the same options, or start a new store"
        )
        raise ValueError(msg)


def _parts(store: Path, manifest: dict[str, Any] | None, kind: str) -> list[str]:
    """The paths of the store's parts of one kind (``statistics``, ``alarms``, ``state``)."""
    if manifest is None:
        return []
    return [str(store / name) for name in manifest["parts"][kind]]


def _read_state(store: Path, manifest: dict[str, Any] | None) -> pl.DataFrame | None:
    """The state table, or None for a store that has seen no row."""
    parts = _parts(store, manifest, "state")
    return pl.read_parquet(parts[0]) if parts else None


def _new_rows(
    lf: pl.LazyFrame,
    keys: list[str],
    time: str,
    state: pl.DataFrame | None,
    columns: list[str],
    spooled: Path,
) -> tuple[pl.LazyFrame, int]:
    """The plan of the rows of `lf` the store has not seen, and how many rows the log
    holds before the store's last seen time ``T`` (or with a null time) that the store
    has not seen.

    The log is read once: its rows from ``T`` on are streamed to the local file
    `spooled` (in the log's order), which the plan returned and the counts read. Rows
    after ``T`` are new. Of a group's rows at ``T`` (in the log's order), the first
    ``rows_at_last`` were seen by the last update: they are skipped, the others are
    new (one timestamp's rows, held only when a group holds more of them than the
    store saw). The rows before ``T`` are counted without being read (the log's length,
    less the rows from ``T`` on, less the rows the store has seen before ``T``).
    """
    rows = lf.select(columns)
    if state is None:
        rows.sink_parquet(spooled, compression="uncompressed")
        return pl.scan_parquet(spooled), 0
    ids = _ids(keys)
    groups = state.unique(ids, maintain_order=True)
    last = pl.lit(groups[f"{time}_last"].max(), groups.schema[f"{time}_last"])
    spool = rows.filter(pl.col(time) >= last).sink_parquet(
        spooled, compression="uncompressed", lazy=True
    )
    # One collection: the spool's pass and the log's length (its files' footers).
    length = pl.collect_all([spool, lf.select(pl.len())], engine="streaming")[1].item()
    recent = pl.scan_parquet(spooled)
    at = recent.filter(pl.col(time) == last)
    counts = (at.group_by(keys).agg(pl.len()) if keys else at.select(pl.len())).collect()
    at_last = groups.filter(pl.col(f"{time}_last") == last).select(*ids, "rows_at_last")
    counts = _with_ids(counts, keys).join(at_last, on=ids, how="left", nulls_equal=True)
    new = recent.filter(pl.col(time) > last)
    if (counts["len"] > counts["rows_at_last"].fill_null(0)).any():
        position = pl.int_range(pl.len()).over(ids)  # in the log's order
        unseen = (
            _with_ids(at.collect(), keys)
            .with_columns(position.alias(_POSITION))
            .join(at_last, on=ids, how="left", nulls_equal=True, maintain_order="left")
            .filter(pl.col(_POSITION) >= pl.col("rows_at_last").fill_null(0))
            .select(columns)
        )
        new = pl.concat([unseen.lazy(), new])
    seen_before = int(groups["rows_seen"].sum()) - int(at_last["rows_at_last"].sum())
    read = int(recent.select(pl.len()).collect().item())
    return new, int(length) - read - seen_before


def _raise_late(late: int, state: pl.DataFrame, time: str) -> None:
    """Refuse late rows (rows before the store's last seen time that it has not seen)."""
    last = state.select(pl.col(f"{time}_last").max().cast(pl.String)).item()
    msg = (
        f"invalid calibration data: column {time!r}: {late} rows of the log are older than "
        f"the store's last seen time {last} (or have a null time) and are not in the store; "
        "late rows would change the charts' past: rebuild the store from the whole log "
        "(a new --store directory), or drop them from the log"
    )
    raise CalibrationDataError(msg)


def _thresholds(
    rows: pl.LazyFrame,
    groups: pl.DataFrame,
    state: pl.DataFrame | None,
    prepared: Any,
    options: dict[str, Any],
) -> pl.DataFrame:
    """Per (group, chart) of the new `rows` (`groups`: ``GROUP`` and the keys): the
    store's threshold, or for a group new to the store the given threshold or one
    simulated from the group's rows of this update (read then: the simulation draws
    from at most ``SAMPLE_ROWS`` of them a group)."""
    keys: list[str] = options["by"]
    known = pl.DataFrame(
        schema={GROUP: pl.Int64, "odds_ratio": pl.Float64, "threshold": pl.Float64}
    )
    if state is not None:
        kept = state.select(*_ids(keys), "odds_ratio", "threshold")
        known = _with_ids(groups, keys).join(kept, on=_ids(keys), nulls_equal=True)
        known = known.select(GROUP, "odds_ratio", "threshold")
    new = groups.join(known, on=GROUP, how="anti")
    if not new.height:
        return known
    if options["threshold"] is not None:
        made = _given(new.select(GROUP), options["odds_ratio"], options["threshold"])
    else:
        made = thresholds_for(
            rows.with_columns(pl.lit(True).alias(REF)),
            prepared.problem,
            keys,
            new,
            options["odds_ratio"],
            options["arl0"],
            options["simulated_alarms"],
            options["seed"],
        )
    return pl.concat([known, made.select(known.columns)])


def _ids(keys: list[str]) -> list[str]:
    """The columns naming a group in the store: the keys, or ``GROUP`` (0) without keys."""
    return keys or [GROUP]


def _with_ids(frame: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """`frame` with the group's number 0 when there are no keys (one group)."""
    return frame if keys else frame.with_columns(pl.lit(0, pl.Int64).alias(GROUP))


def _new_state(
    seen: pl.DataFrame,
    named: pl.DataFrame,
    end: pl.DataFrame,
    thresholds: pl.DataFrame,
    alarms: pl.DataFrame,
    state: pl.DataFrame | None,
    keys: list[str],
    time: str,
) -> pl.DataFrame:
    """The state after this update: the groups of the new rows (`named`: ``GROUP`` and
    the keys; `seen`: per ``GROUP``, its last time, the rows at it and the rows) with
    their end state, and the other groups of the old `state` as they were."""
    ids, last = _ids(keys), f"{time}_last"
    fired = (
        _with_ids(alarms, keys)
        .group_by([*ids, "odds_ratio"])
        .agg(pl.col(time).max().alias("last_alarm"))
    )
    charts = (
        end.join(thresholds, on=[GROUP, "odds_ratio"])
        .join(seen, on=GROUP)
        .join(named, on=GROUP)
        .join(fired, on=[*ids, "odds_ratio"], how="left", nulls_equal=True)
    )
    columns = [*ids, "odds_ratio", "threshold", *CHART_STATE, "last_alarm", last]
    columns += ["rows_at_last", "rows_seen"]
    if state is None:
        return charts.select(columns).sort([*ids, "odds_ratio"])
    old = state.rename({c: f"{c}_old" for c in state.columns if c not in [*ids, "odds_ratio"]})
    charts = charts.join(old, on=[*ids, "odds_ratio"], how="left", nulls_equal=True)
    continued = pl.col(last) == pl.col(f"{last}_old")
    charts = charts.with_columns(
        pl.coalesce("last_alarm", "last_alarm_old").alias("last_alarm"),
        pl.when(continued)
        .then(pl.col("rows_at_last") + pl.col("rows_at_last_old"))
        .otherwise("rows_at_last")
        .alias("rows_at_last"),
        (pl.col("rows_seen") + pl.col("rows_seen_old").fill_null(0)).alias("rows_seen"),
    ).select(columns)
    untouched = state.join(charts.select(ids).unique(), on=ids, how="anti", nulls_equal=True)
    return pl.concat([untouched.select(columns), charts]).sort([*ids, "odds_ratio"])


def _write_part(store: Path, kind: str, frame: pl.DataFrame, generation: int) -> str:
    """Write `frame` as a new part of `kind` (through a temporary name); its relative path."""
    (store / kind).mkdir(parents=True, exist_ok=True)
    name = f"{kind}/part-{generation:06d}-{secrets.token_hex(4)}.parquet"
    with atomic_path(store / name) as temporary:
        frame.write_parquet(temporary)
    return name


def _commit(
    store: Path,
    manifest: dict[str, Any] | None,
    options: dict[str, Any],
    written: dict[str, pl.DataFrame | None],
) -> None:
    """Write the new parts, then the manifest naming them (the update's one commit),
    then remove the parts no manifest names (an old state, a failed update's)."""
    store.mkdir(parents=True, exist_ok=True)
    generation = 0 if manifest is None else int(manifest["generation"]) + 1
    parts: dict[str, list[str]] = {"statistics": [], "alarms": [], "state": []}
    if manifest is not None:
        parts = {kind: list(names) for kind, names in manifest["parts"].items()}
    for kind, frame in written.items():
        if frame is None:
            continue
        name = _write_part(store, kind, frame, generation)
        parts[kind] = [name] if kind == "state" else [*parts[kind], name]
    new = {"format": FORMAT, "generation": generation, "options": options, "parts": parts}
    write_text(store / MANIFEST, json.dumps(new, indent=2) + "\n")
    named = {name for names in parts.values() for name in names}
    for kind in parts:
        for path in (store / kind).glob("*.parquet") if (store / kind).is_dir() else []:
            if f"{kind}/{path.name}" not in named:
                path.unlink(missing_ok=True)


def update_monitor_store(
    data: pl.DataFrame | pl.LazyFrame,
    path: str | Path,
    prob: str,
    label: str,
    *,
    by: Keys = None,
    time: str,
    every: str = "1d",
    n_bins: int = 15,
    weight: str | None = None,
    odds_ratio: float | Sequence[float] = (0.5, 2.0),
    arl0: float = 10_000.0,
    threshold: float | Sequence[float] | None = None,
    simulated_alarms: int = 200,
    seed: int = 0,
) -> pl.DataFrame:
    """Update a monitoring store from the rows of a log it has not seen; return the new alarms.

    Parameters
    ----------
    data
        DataFrame or LazyFrame of the whole log (a scan: only the rows from the
        store's last seen time on are read).
    path
        The store's directory: created on the first update, which fixes its options.
    prob
        Name of the column holding the probability of the positive class.
    label
        Name of the 0/1 (or boolean) outcome column.
    by
        Group-key column names (a model, a segment): one pair of charts and one
        window table per group.
    time
        Name of a Date or Datetime column ordering the rows.
    every
        The windows of the statistics table, a Polars duration (``"1d"``).
    n_bins
        Uniform bins of the statistics table (its ECE).
    weight
        Name of an optional column of non-negative row weights.
    odds_ratio, arl0, threshold, simulated_alarms, seed
        The charts and their thresholds, as :func:`polars_calib.monitor`. A group's
        threshold is fixed by the update that first sees it (simulated from its rows
        of that update, or `threshold`) and kept.

    Returns
    -------
    DataFrame
        The alarms among the rows read by this update, as :func:`polars_calib.monitor`
        gives them (empty when nothing is new: a rerun changes nothing).

    Raises
    ------
    CalibrationDataError
        As :func:`polars_calib.monitor` (a missing or mistyped column, refused rows,
        null times), and rows older than the store's last seen time that it has not
        seen (late rows), with their count. The store is then left as it was.
    ValueError
        Options other than those the store was built with, or a directory that is not
        a store.
    FileExistsError
        Another update holds the store's lock (``update.lock`` in its directory): the
        message names it, its owner and its age, and the store is left as it was.

    Notes
    -----
    The rows read are those at or after the store's last seen time ``T``; of a
    group's rows at ``T`` (in the log's order), as many as the store saw are skipped.
    Each chart continues from its end state, so the alarms and the window table are
    those of a full recomputation over the log (see ``docs/monitoring.md``, "The store
    and the daily job"). An update holds the store's lock, writes new files and
    replaces the manifest last: a failure leaves the store as it was, and a second
    update at the same time is refused. Its memory holds a batch of rows and a few
    numbers per group, bin and chart, not the day's rows (the rows at ``T`` are held
    only when some of them are new; simulated thresholds hold at most 65,536 rows'
    ``(p, w)`` of each group new to the store, a sample of its rows in this update
    above that, as :func:`cusum_thresholds`). The log is read once: its rows from
    ``T`` on are streamed to a temporary parquet file (the system's temporary
    directory, about 25 bytes a row), which the update then reads, and which is
    removed after.

    See Also
    --------
    monitor_store_alarms, monitor_store_windows, monitor

    Examples
    --------
    >>> import tempfile
    >>> from datetime import date
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> log = pl.DataFrame({
    ...     "model": ["a", "b"] * 6,
    ...     "day": [date(2026, 3, d) for d in (1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3)],
    ...     "p": [0.1, 0.2] * 6,
    ...     "y": [0, 0, 1, 0, 0, 0, 1, 0, 1, 0, 1, 1],
    ... })
    >>> store = tempfile.mkdtemp()
    >>> before = log.filter(pl.col("day") < date(2026, 3, 3))  # the log on March 3rd
    >>> pc.update_monitor_store(before, store, "p", "y", by="model", time="day", threshold=2.0)
    shape: (0, 6)
    ┌───────┬──────┬────────────┬───────────┬───────────┬───────────┐
    │ model ┆ day  ┆ odds_ratio ┆ statistic ┆ threshold ┆ run_start │
    │ ---   ┆ ---  ┆ ---        ┆ ---       ┆ ---       ┆ ---       │
    │ str   ┆ date ┆ f64        ┆ f64       ┆ f64       ┆ date      │
    ╞═══════╪══════╪════════════╪═══════════╪═══════════╪═══════════╡
    └───────┴──────┴────────────┴───────────┴───────────┴───────────┘
    >>> pc.update_monitor_store(log, store, "p", "y", by="model", time="day", threshold=2.0)
    shape: (1, 6)
    ┌───────┬────────────┬────────────┬───────────┬───────────┬────────────┐
    │ model ┆ day        ┆ odds_ratio ┆ statistic ┆ threshold ┆ run_start  │
    │ ---   ┆ ---        ┆ ---        ┆ ---       ┆ ---       ┆ ---        │
    │ str   ┆ date       ┆ f64        ┆ f64       ┆ f64       ┆ date       │
    ╞═══════╪════════════╪════════════╪═══════════╪═══════════╪════════════╡
    │ a     ┆ 2026-03-03 ┆ 2.0        ┆ 2.296038  ┆ 2.0       ┆ 2026-03-01 │
    └───────┴────────────┴────────────┴───────────┴───────────┴────────────┘
    >>> pc.update_monitor_store(log, store, "p", "y", by="model", time="day", threshold=2.0).height
    0
    """
    keys = [by] if isinstance(by, (str, pl.Expr)) else list(by) if by is not None else []
    if not all(isinstance(key, str) for key in keys):
        msg = f"`by` must be column names for a store, got {by!r}"
        raise TypeError(msg)
    ratios = check_options(odds_ratio, arl0, simulated_alarms)
    every, n_bins = check_every(every), check_n_bins(n_bins)
    options = _options(
        {
            "prob": prob,
            "label": label,
            "by": keys,
            "time": time,
            "every": every,
            "n_bins": n_bins,
            "weight": weight,
            "odds_ratio": ratios,
            "arl0": arl0,
            "threshold": threshold,
            "simulated_alarms": simulated_alarms,
            "seed": seed,
        }
    )
    store = Path(path)
    _read_manifest(store)  # a file, or another directory: refused before the lock is made
    with _locked(store):
        manifest = _read_manifest(store)
        if manifest is not None:
            _check_same_options(store, manifest["options"], options)
        return _update(data.lazy(), store, manifest, options)


@contextmanager
def _locked(store: Path) -> Iterator[None]:
    """Hold the store's lock (:data:`LOCK`) for one update; ``FileExistsError`` naming it,
    its owner and its age when another update holds it.

    The lock is a file created with ``O_CREAT | O_EXCL`` (an atomic test-and-create,
    also on a network file system that supports it), holding the owner's process id,
    host and start time; it is removed when the update ends, whatever the outcome.
    A killed update leaves it behind: see ``docs/monitoring.md``, "Two updates at once".
    """
    store.mkdir(parents=True, exist_ok=True)
    lock = store / LOCK
    try:
        descriptor = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        raise FileExistsError(_held(store, lock)) from None
    try:
        owner = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            file.write(json.dumps(owner) + "\n")
        yield
    finally:
        lock.unlink(missing_ok=True)


def _held(store: Path, lock: Path) -> str:
    """The message for a lock another update holds: its path, owner and age."""
    try:
        owner = json.loads(lock.read_text(encoding="utf-8"))
        who = f"process {owner['pid']} on {owner['host']}, started {owner['started']}"
        started = datetime.fromisoformat(owner["started"])
    except (OSError, ValueError, KeyError, TypeError):  # being written, or not ours
        who = "an unknown owner"
        try:
            started = datetime.fromtimestamp(lock.stat().st_mtime, timezone.utc)
        except OSError:  # removed since: the other update ended
            started = datetime.now(timezone.utc)
    if started.tzinfo is None:
        started = started.replace(tzinfo=timezone.utc)
    age = max(datetime.now(timezone.utc) - started, timedelta(0))
    return (
        f"the monitoring store {str(store)!r} is locked by another update: {str(lock)!r} "
        f"is held by {who} ({_duration(age)} ago); run one update at a time, and if no "
        "update is running (a killed job left the lock), remove that file"
    )


def _duration(age: timedelta) -> str:
    """`age` in words: seconds, minutes, hours or days."""
    seconds = int(age.total_seconds())
    for unit, size in (("day", 86_400), ("hour", 3_600), ("minute", 60)):
        if seconds >= size:
            count = seconds // size
            return f"{count} {unit}{'s' if count > 1 else ''}"
    return f"{seconds} s"


def _alarm_schema(schema: pl.Schema, keys: list[str], time: str) -> pl.Schema:
    """The columns of the alarms (those of :func:`polars_calib.monitor`)."""
    out = pl.Schema([(key, schema[key]) for key in [*keys, time]])
    for name in ("odds_ratio", "statistic", "threshold"):
        out[name] = pl.Float64()
    out["run_start"] = schema[time]
    return out


def _update(
    lf: pl.LazyFrame, store: Path, manifest: dict[str, Any] | None, options: dict[str, Any]
) -> pl.DataFrame:
    """Read the new rows, continue the charts, and commit the new parts."""
    keys: list[str] = options["by"]
    time, prob, label = options["time"], options["prob"], options["label"]
    weight: str | None = options["weight"]
    _, _, schema = _lazy(lf, prob, label, keys or None, weight, time, None)  # the schema's checks
    if not (schema[time] == pl.Date or isinstance(schema[time], pl.Datetime)):
        msg = (
            f"invalid calibration data: column {time!r} holds {schema[time]}, but a store's "
            "`time` must be a Date or Datetime column (its windows are calendar windows)"
        )
        raise CalibrationDataError(msg)
    state = _read_state(store, manifest)
    columns: list[str] = list(
        dict.fromkeys([*keys, time, prob, label, *([weight] if weight else [])])
    )
    with tempfile.TemporaryDirectory(prefix="polars-calib-store-") as directory:
        # The log read once: its rows from the last seen time on streamed to one local
        # file, which the counts and the two passes below read (one footer, not all).
        spooled = Path(directory) / "recent.parquet"
        new, late = _new_rows(lf, keys, time, state, columns, spooled)
        if state is not None and late > 0:
            _raise_late(late, state, time)
        return _continued(new, store, manifest, options, state, schema)


def _continued(
    new: pl.LazyFrame,
    store: Path,
    manifest: dict[str, Any] | None,
    options: dict[str, Any],
    state: pl.DataFrame | None,
    schema: pl.Schema,
) -> pl.DataFrame:
    """Continue the charts over the `new` rows, and commit the new parts."""
    keys: list[str] = options["by"]
    time, prob, label = options["time"], options["prob"], options["label"]
    weight: str | None = options["weight"]
    # The statistics table first: it counts the refused rows, which raise (and are
    # counted again for the message only then), and it names the groups of the new rows.
    by = {"by": keys or None, "time": time, "every": options["every"], "weight": weight}
    statistics = bin_statistics(
        new, prob, label, n_bins=options["n_bins"], metrics=WINDOW_METRICS, **by
    ).collect(engine="streaming")
    if statistics.is_empty():
        if manifest is None:
            _commit(store, manifest, options, {})
        return pl.DataFrame(schema=_alarm_schema(schema, keys, time))
    validate_statistics(statistics, new, prob, label, **by)
    if statistics[time].null_count():
        _raise_null_times(new, time)
    groups = _groups(statistics, keys)
    prepared, _, _ = _lazy(new, prob, label, keys or None, weight, time, None)
    thresholds = _thresholds(new, groups, state, prepared, options)
    start = None
    if state is not None:
        start = _with_ids(groups, keys).join(state, on=_ids(keys), nulls_equal=True)
        start = start.select(GROUP, "odds_ratio", *CHART_STATE)
    ratios: list[float] = options["odds_ratio"]
    matrix, given = chart_arrays(groups.height, ratios, thresholds, start)
    charts = run_charts(new, groups, keys, time, prepared.problem, ratios, matrix, given)
    dtype = schema[time]
    alarms = (
        charts.alarms(dtype)
        .join(groups, on=GROUP, maintain_order="left")
        .sort(GROUP, TIME, "odds_ratio", maintain_order=True)  # ties: raised first, first
        .select(
            *keys, pl.col(TIME).alias(time), "odds_ratio", "statistic", "threshold", "run_start"
        )
    )
    end = charts.end_state(dtype).join(
        thresholds.select(GROUP, "odds_ratio"), on=[GROUP, "odds_ratio"]
    )
    written: dict[str, pl.DataFrame | None] = {
        "statistics": statistics,
        "alarms": alarms,
        "state": _new_state(
            _seen(charts, dtype, time), groups, end, thresholds, alarms, state, keys, time
        ),
    }
    _commit(store, manifest, options, written)
    return alarms


def _groups(statistics: pl.DataFrame, keys: list[str]) -> Groups:
    """The groups of the new rows (those of their statistics table), numbered ``GROUP``
    (0, 1, ... in the order of their keys, nulls first), as the charts number them."""
    if not keys:
        return pl.DataFrame({GROUP: [0]}, schema={GROUP: pl.Int64})
    groups = statistics.select(keys).unique().sort(keys, nulls_last=False)
    return groups.with_columns(pl.int_range(pl.len(), dtype=pl.Int64).alias(GROUP))


def _raise_null_times(new: pl.LazyFrame, time: str) -> None:
    """Raise :class:`CalibrationDataError` counting the new rows with a null time."""
    nulls, rows = new.select(pl.col(time).null_count(), pl.len()).collect().row(0)
    msg = f"invalid calibration data: column {time!r}: time null in {nulls} of {rows} rows"
    raise CalibrationDataError(msg)


def _seen(charts: Charts, dtype: pl.DataType, time: str) -> pl.DataFrame:
    """Per group the charts were fed: its last time, the rows at that time, the rows."""
    seen = pl.DataFrame(
        {
            GROUP: np.arange(len(charts.rows), dtype=np.int64),
            f"{time}_last": charts.last,
            "rows_at_last": charts.at_last,
            "rows_seen": charts.rows,
        }
    )
    return seen.filter(pl.col("rows_seen") > 0).with_columns(from_physical(f"{time}_last", dtype))


def monitor_store_alarms(path: str | Path) -> pl.DataFrame:
    """Read every alarm a monitoring store has found, in the order of :func:`polars_calib.monitor`.

    Parameters
    ----------
    path
        The store's directory (see :func:`update_monitor_store`).

    Returns
    -------
    DataFrame
        One row per (group, alarm): the keys, the time, ``odds_ratio``, ``statistic``,
        ``threshold`` and ``run_start``, sorted by keys, time and odds ratio.

    See Also
    --------
    update_monitor_store, monitor_store_windows

    Examples
    --------
    >>> import tempfile
    >>> from datetime import date
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> log = pl.DataFrame({
    ...     "model": ["a", "b"] * 6,
    ...     "day": [date(2026, 3, d) for d in (1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3)],
    ...     "p": [0.1, 0.2] * 6,
    ...     "y": [0, 0, 1, 0, 0, 0, 1, 0, 1, 0, 1, 1],
    ... })
    >>> store = tempfile.mkdtemp()
    >>> _ = pc.update_monitor_store(log, store, "p", "y", by="model", time="day", threshold=2.0)
    >>> pc.monitor_store_alarms(store)
    shape: (1, 6)
    ┌───────┬────────────┬────────────┬───────────┬───────────┬────────────┐
    │ model ┆ day        ┆ odds_ratio ┆ statistic ┆ threshold ┆ run_start  │
    │ ---   ┆ ---        ┆ ---        ┆ ---       ┆ ---       ┆ ---        │
    │ str   ┆ date       ┆ f64        ┆ f64       ┆ f64       ┆ date       │
    ╞═══════╪════════════╪════════════╪═══════════╪═══════════╪════════════╡
    │ a     ┆ 2026-03-03 ┆ 2.0        ┆ 2.296038  ┆ 2.0       ┆ 2026-03-01 │
    └───────┴────────────┴────────────┴───────────┴───────────┴────────────┘
    """
    store = Path(path)
    manifest = _stored(store)
    keys: list[str] = manifest["options"]["by"]
    time: str = manifest["options"]["time"]
    parts = _parts(store, manifest, "alarms")
    if not parts:  # a store that has seen no row
        return pl.DataFrame()
    return pl.read_parquet(parts).sort([*keys, time, "odds_ratio"], maintain_order=True)


def _stored(store: Path) -> dict[str, Any]:
    """The manifest of an existing store; ``ValueError`` when `store` is none."""
    manifest = _read_manifest(store) if store.is_dir() else None
    if manifest is None:
        msg = f"{str(store)!r} is not a monitoring store (no {MANIFEST})"
        raise ValueError(msg)
    return manifest


def monitor_store_windows(
    path: str | Path,
    *,
    reference: tuple[date | datetime, date | datetime] | None = None,
    confidence: float = 0.95,
) -> pl.DataFrame:
    """Finish the per-window metrics of a monitoring store from its statistics table.

    Parameters
    ----------
    path
        The store's directory (see :func:`update_monitor_store`).
    reference
        A ``(start, end)`` pair of dates or datetimes: the reference period of
        control limits, as in :func:`polars_calib.monitor_windows` (the windows that lie
        in ``[start, end)``; a store holds no row, so no row-level expression). None:
        the metrics alone.
    confidence
        With `reference`: the level of the O/E ratio's interval.

    Returns
    -------
    DataFrame
        Without `reference`, one row per group and window that holds rows: the keys,
        the time (the window's start), ``count``, ``refused``, ``mean_predicted``,
        ``observed``, ``ece`` and ``spiegelhalter_z``: the table of
        :func:`polars_calib.summary` (``time=``, ``every=``, the store's bins) over every
        row the store has seen. With `reference`, the table of
        :func:`polars_calib.monitor_windows` over those rows (``limits="sigma"``): every
        window of the span, the O/E ratio, control limits and alert flags.

    See Also
    --------
    update_monitor_store, monitor_store_alarms, monitor_windows

    Examples
    --------
    >>> import tempfile
    >>> from datetime import date
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> log = pl.DataFrame({
    ...     "model": ["a", "b"] * 6,
    ...     "day": [date(2026, 3, d) for d in (1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3)],
    ...     "p": [0.1, 0.2] * 6,
    ...     "y": [0, 0, 1, 0, 0, 0, 1, 0, 1, 0, 1, 1],
    ... })
    >>> store = tempfile.mkdtemp()
    >>> _ = pc.update_monitor_store(log, store, "p", "y", by="model", time="day", threshold=2.0)
    >>> pc.monitor_store_windows(store).select("model", "day", "count", "observed", "ece")
    shape: (6, 5)
    ┌───────┬────────────┬───────┬──────────┬─────┐
    │ model ┆ day        ┆ count ┆ observed ┆ ece │
    │ ---   ┆ ---        ┆ ---   ┆ ---      ┆ --- │
    │ str   ┆ date       ┆ i64   ┆ f64      ┆ f64 │
    ╞═══════╪════════════╪═══════╪══════════╪═════╡
    │ a     ┆ 2026-03-01 ┆ 2     ┆ 0.5      ┆ 0.4 │
    │ a     ┆ 2026-03-02 ┆ 2     ┆ 0.5      ┆ 0.4 │
    │ a     ┆ 2026-03-03 ┆ 2     ┆ 1.0      ┆ 0.9 │
    │ b     ┆ 2026-03-01 ┆ 2     ┆ 0.0      ┆ 0.2 │
    │ b     ┆ 2026-03-02 ┆ 2     ┆ 0.0      ┆ 0.2 │
    │ b     ┆ 2026-03-03 ┆ 2     ┆ 0.5      ┆ 0.3 │
    └───────┴────────────┴───────┴──────────┴─────┘
    """
    store = Path(path)
    manifest = _stored(store)
    keys: list[str] = manifest["options"]["by"]
    parts = _parts(store, manifest, "statistics")
    if not parts:
        return pl.DataFrame()
    options = manifest["options"]
    stats = pl.read_parquet(parts)
    table = metrics_from_statistics(stats, by=[*keys, options["time"]], metrics=WINDOW_METRICS)
    if reference is None:
        return table
    weighted = options["weight"] is not None
    windows = windows_with_limits(
        table.lazy(), keys, options["time"], options["every"], reference, confidence, weighted
    )
    return windows.collect()
