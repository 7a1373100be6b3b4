"""Recalibration speed (issue 13): fitting Platt per group, and applying a calibrator to a scan.

Two measurements, each side by side in one run, each case in its own process (peak
memory is the process's maximum resident set), started when the CPUs are idle:

fit    Platt per group on ``--rows`` rows (default 10M) in memory, ``--groups`` groups
       (default 100): ``pc.fit_calibrator(df, "p", "y", method="platt", by="g")``
       (its full-data passes: one computing the problem's columns, one selecting the
       start's subsample of about 200,000 rows (a predicate on the row index), then
       the largest ``iterations``, the first of which also checks the groups) against
       the loop a user writes today: ``df.partition_by("g")``
       then scikit-learn's ``LogisticRegression(penalty=None)`` on ``logit(p)`` per group;
       and, with no target, isotonic regression per group on the same data against
       ``partition_by`` + ``IsotonicRegression(out_of_bounds="clip")`` (best of 2 each).
apply  a per-group Platt calibrator applied to a parquet scan of ``--apply-rows`` rows
       (default 100M, written once to ``--dir``), streamed to parquet:
       ``scan.with_columns(p_cal=cal.expr("p")).sink_parquet(...)`` against the same
       query without the column, ``scan.sink_parquet(...)``, and against the same query
       with a column as cheap as any and as incompressible as ours
       (``1 - pl.col("p")``): the cost of writing one more Float64 column, apart from
       computing ours. Two inputs: a minimal one (g Int32, p Float64; ``--groups``
       groups, random doubles: the new column doubles the bytes written) and a
       prediction log with the schema of ``examples/data/predictions.parquet`` (ts,
       request_id, model, segment, p, y, sex, age_band, region), calibrated per model.
       Targets: at most 1.5x the time, peak memory at most 1 GB.

Each timing is the fastest of a few runs (the fit: 3, the scikit-learn loop: 1, each
apply query: 2). Run ``python bench/recalibration.py`` on an idle machine (a few minutes;
about 4 GB of disk for the two 100M-row inputs); ``--rows 20000 --apply-rows 100000
--groups 10`` is a seconds-long smoke run. Prints a markdown table for
``docs/performance.md``. Nothing here is a test: timings vary by machine.
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's package
from benchmark import _wait_idle  # the same idle wait as the other benchmarks

import polars_calib as pc

EPS = 2.220446049250313e-16
CHUNK = 10_000_000


def make_frame(rows: int, groups: int, seed: int) -> pl.DataFrame:
    """Probabilities whose miscalibration changes sign, per group a different distortion."""
    rng = np.random.default_rng(seed)
    g = rng.integers(0, groups, rows, dtype=np.int32)
    p = rng.random(rows)
    slope = 0.6 + 0.8 * (g / max(groups - 1, 1))  # each group its own Platt map
    logit = np.log(p) - np.log1p(-p)
    rate = 1.0 / (1.0 + np.exp(-(slope * logit + 0.1)))
    y = (rng.random(rows) < rate).astype(np.int8)
    return pl.DataFrame({"g": g, "p": p, "y": y})


def _write_once(target: Path, rows: int, make: Callable[[int, int, int], pl.DataFrame]) -> Path:
    """Parquet files of up to 10M rows each in `target`, `make(size, part, first_row)`
    each, written once (a ``_complete`` marker says they are all there)."""
    done = target / "_complete"
    if done.exists():
        return target
    target.mkdir(parents=True, exist_ok=True)
    for i, start in enumerate(range(0, rows, CHUNK)):
        make(min(CHUNK, rows - start), i, start).write_parquet(target / f"part-{i:03d}.parquet")
    done.touch()
    return target


def write_scan(directory: Path, rows: int, groups: int) -> Path:
    """The minimal apply input: parquet files of up to 10M rows (g, p) each, written once."""
    return _write_once(
        directory / f"apply_{rows}_{groups}",
        rows,
        lambda size, i, _: make_frame(size, groups, seed=100 + i).drop("y"),
    )


MODELS = ("baseline", "candidate")


def make_log(rows: int, seed: int, first_id: int = 0) -> pl.DataFrame:
    """Rows with the schema of ``examples/data/predictions.parquet``: ts, request_id,
    model, segment, p, y, sex, age_band, region (strings of few values, as a log holds)."""
    rng = np.random.default_rng(seed)
    seconds = np.sort(rng.integers(0, 30 * 86_400, rows))
    model = rng.integers(0, len(MODELS), rows)
    p = rng.random(rows)
    slope = np.where(model == 0, 0.7, 1.3)  # each model its own miscalibration
    logit = np.log(p) - np.log1p(-p)
    y = (rng.random(rows) < 1.0 / (1.0 + np.exp(-(slope * logit + 0.1)))).astype(np.int8)

    def labels(values: tuple[str, ...], index: np.ndarray) -> pl.Series:
        return pl.Series(np.array(values, dtype=object)[index], dtype=pl.String)

    return pl.DataFrame(
        {
            "ts": pl.Series(np.datetime64("2024-03-01", "us") + seconds.astype("timedelta64[s]")),
            "request_id": np.arange(first_id, first_id + rows, dtype=np.int64) // 2,
            "model": labels(MODELS, model),
            "segment": labels(("A", "B", "C"), rng.integers(0, 3, rows)),
            "p": p,
            "y": y,
            "sex": labels(("F", "M"), rng.integers(0, 2, rows)),
            "age_band": labels(("18-29", "30-49", "50-64", "65+"), rng.integers(0, 4, rows)),
            "region": labels(("north", "south", "west"), rng.integers(0, 3, rows)),
        }
    )


def write_log(directory: Path, rows: int) -> Path:
    """The realistic apply input: a prediction log of `rows` rows, written once."""
    return _write_once(
        directory / f"log_{rows}",
        rows,
        lambda size, i, start: make_log(size, seed=200 + i, first_id=start),
    )


def fitted(directory: Path, realistic: bool, groups: int) -> Path:
    """The apply benchmark's calibrator (Platt per model on a 1M-row log, or per g on
    1M minimal rows), fitted once and saved."""
    path = directory / ("platt_log.json" if realistic else f"platt_{groups}.json")
    if not path.exists():
        if realistic:
            cal = pc.fit_calibrator(
                make_log(1_000_000, seed=1), "p", "y", method="platt", by="model"
            )
        else:
            train = make_frame(1_000_000, groups, seed=1)
            cal = pc.fit_calibrator(train, "p", "y", method="platt", by="g")
        cal.save(path)
    return path


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _timed(run: object, repeats: int = 1) -> float:
    """The fastest of `repeats` runs, each started when the CPUs are idle (the machine
    may be shared: the minimum is the run least disturbed)."""
    best = math.inf
    for _ in range(repeats):
        _wait_idle(limit=10.0)
        start = time.perf_counter()
        run()  # type: ignore[operator]
        best = min(best, time.perf_counter() - start)
    return best


def worker(case: str, rows: int, groups: int, directory: Path) -> dict[str, float]:
    if case in ("polars_isotonic", "sklearn_isotonic"):
        df = make_frame(rows, groups, seed=0)
        if case == "polars_isotonic":
            return {
                "seconds": _timed(
                    lambda: pc.fit_calibrator(df, "p", "y", method="isotonic", by="g"), repeats=2
                ),
                "peak_mb": _peak_mb(),
            }
        from sklearn.isotonic import IsotonicRegression

        def isotonic_loop() -> None:
            for part in df.partition_by("g"):
                IsotonicRegression(out_of_bounds="clip", y_min=0.0, y_max=1.0).fit(
                    part["p"].to_numpy(), part["y"].to_numpy()
                )

        return {"seconds": _timed(isotonic_loop, repeats=2), "peak_mb": _peak_mb()}
    if case in ("polars_fit", "sklearn_loop"):
        df = make_frame(rows, groups, seed=0)
        if case == "polars_fit":
            result: dict[str, float] = {}

            def fit() -> None:
                cal = pc.fit_calibrator(df, "p", "y", method="platt", by="g")
                # Computing the columns, selecting the subsample, then the steps.
                result["passes"] = 2 + float(cal.params["iterations"].max())  # type: ignore[arg-type]

            seconds = _timed(fit, repeats=3)
            return {"seconds": seconds, "peak_mb": _peak_mb(), **result}

        from sklearn.linear_model import LogisticRegression

        def loop() -> None:
            for part in df.partition_by("g"):
                p = np.clip(part["p"].to_numpy(), EPS, 1 - EPS)
                x = (np.log(p) - np.log1p(-p))[:, None]
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    LogisticRegression(penalty=None).fit(x, part["y"].to_numpy())

        return {"seconds": _timed(loop), "peak_mb": _peak_mb()}

    # Apply cases: "plain" (the scan written back), "extra" (plus a column as cheap as an
    # expression gets and as incompressible as ours: 1 - p), "apply" (plus our column);
    # "log_*": the same three on a prediction log (calibrated per model).
    # The calibrator is fitted and saved beforehand (`fitted`): the peak memory measured
    # here is the query's (and the interpreter's), not the training data's.
    realistic = case.startswith("log_")
    kind = case.removeprefix("log_")
    source = write_log(directory, rows) if realistic else write_scan(directory, rows, groups)
    cal = pc.load_calibrator(fitted(directory, realistic, groups))
    out = directory / f"out_{case}.parquet"
    scan = pl.scan_parquet(source / "*.parquet")
    added = {
        "plain": [],
        "extra": [(1.0 - pl.col("p")).alias("p_cal")],
        "apply": [cal.expr("p").alias("p_cal")],
    }[kind]
    query = scan.with_columns(added) if added else scan
    _timed(lambda: scan.select(pl.len()).collect())  # page cache warm
    seconds = _timed(lambda: query.sink_parquet(out, engine="streaming"), repeats=2)
    written = out.stat().st_size / 1e6
    out.unlink(missing_ok=True)
    return {"seconds": seconds, "peak_mb": _peak_mb(), "written_mb": written}


def measure(case: str, rows: int, groups: int, directory: Path) -> dict[str, float]:
    command = [
        sys.executable,
        __file__,
        "--worker",
        case,
        "--rows",
        str(rows),
        "--groups",
        str(groups),
        "--dir",
        str(directory),
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=7200)
    if done.returncode != 0:
        print(done.stderr[-2000:], file=sys.stderr)
        return {"seconds": math.nan, "peak_mb": math.nan}
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000, help="fit: rows (default 10M)")
    parser.add_argument(
        "--apply-rows",
        type=int,
        default=100_000_000,
        help="apply: rows of the scanned file (default 100M)",
    )
    parser.add_argument("--groups", type=int, default=100, help="groups (default 100)")
    parser.add_argument(
        "--dir",
        type=Path,
        default=Path("/tmp/polars_calib_bench"),
        help="where the scanned parquet file is written (kept for reruns)",
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    if args.worker:
        print(json.dumps(worker(args.worker, args.rows, args.groups, args.dir)))
        return

    fit = measure("polars_fit", args.rows, args.groups, args.dir)
    loop = measure("sklearn_loop", args.rows, args.groups, args.dir)
    isotonic = measure("polars_isotonic", args.rows, args.groups, args.dir)
    isotonic_loop = measure("sklearn_isotonic", args.rows, args.groups, args.dir)
    apply: dict[str, dict[str, float]] = {}
    for prefix, write in (
        ("", lambda: write_scan(args.dir, args.apply_rows, args.groups)),
        ("log_", lambda: write_log(args.dir, args.apply_rows)),
    ):
        write()
        fitted(args.dir, prefix == "log_", args.groups)
        for kind in ("plain", "extra", "apply"):
            apply[prefix + kind] = measure(prefix + kind, args.apply_rows, args.groups, args.dir)
    print(f"Platt per group, {args.rows:,} rows x {args.groups} groups, in memory:\n")
    print("| contender | seconds | full-data passes | peak MB |\n|---|---:|---:|---:|")
    print(
        f'| `pc.fit_calibrator(method="platt", by="g")` | {fit["seconds"]:.2f} | '
        f"{fit.get('passes', math.nan):.0f} | {fit['peak_mb']:.0f} |"
    )
    print(
        f"| `partition_by` + `LogisticRegression` per group | {loop['seconds']:.2f} | | "
        f"{loop['peak_mb']:.0f} |"
    )
    print(f"\nspeed-up: {loop['seconds'] / fit['seconds']:.1f}x (target >= 8x)\n")
    print(
        f"Isotonic per group, the same data (no target): "
        f'`pc.fit_calibrator(method="isotonic", by="g")` {isotonic["seconds"]:.2f} s, '
        f"{isotonic['peak_mb']:.0f} MB; `partition_by` + `IsotonicRegression` per group "
        f"{isotonic_loop['seconds']:.2f} s, {isotonic_loop['peak_mb']:.0f} MB: "
        f"{isotonic['seconds'] / isotonic_loop['seconds']:.2f}x\n"
    )
    for prefix, title, column in (
        ("", f"a minimal parquet scan (g Int32, p Float64; {args.groups} groups)", "g"),
        (
            "log_",
            (
                "a prediction log (ts, request_id, model, segment, p, y, sex, age_band, "
                "region: the schema of examples/data/predictions.parquet; 2 models)"
            ),
            "model",
        ),
    ):
        plain, extra, applied = (apply[prefix + k] for k in ("plain", "extra", "apply"))
        print(
            f"Applying a per-{column} Platt calibrator to {title}, {args.apply_rows:,} rows, "
            "streamed to parquet:\n"
        )
        print("| query | seconds | x plain | written MB | peak MB |\n|---|---:|---:|---:|---:|")
        for label, result in (
            ("`scan.sink_parquet(out)`", plain),
            (
                '`scan.with_columns(p_cal=1 - pl.col("p")).sink_parquet(out)` (any new column)',
                extra,
            ),
            ('`scan.with_columns(p_cal=cal.expr("p")).sink_parquet(out)`', applied),
        ):
            print(
                f"| {label} | {result['seconds']:.2f} | "
                f"{result['seconds'] / plain['seconds']:.2f} | "
                f"{result.get('written_mb', math.nan):.0f} | {result['peak_mb']:.0f} |"
            )
        print(
            f"\nratio: {applied['seconds'] / plain['seconds']:.2f}x (target <= 1.5x; peak "
            f"memory target <= 1024 MB); of a new column alone: "
            f"{extra['seconds'] / plain['seconds']:.2f}x; ours over that: "
            f"{applied['seconds'] / extra['seconds']:.2f}x\n"
        )


if __name__ == "__main__":
    main()
