"""False alarms and detection delays of the CUSUM pair against fixed-window tests (issue 26).

For a target in-control ARL0 ``A`` per chart (two charts, R = 0.5 and R = 2):

false alarms  calibrated streams (``p ~ Beta(2, 5)``, ``y ~ Bernoulli(p)``, numpy's own
              generator, not the package's draws) through ``pc.monitor`` with the
              thresholds of ``pc.cusum_thresholds`` (reference: 5,000 rows of the same
              distribution): the observed ARL0 of each chart, rows / alarms (target:
              within 10% of ``A``), and the time the thresholds took
delays        streams shifted from their first row (the odds x 2 or x 0.5): the rows to
              the first alarm of either chart (zero-state delay), median and mean, the
              streams censored at ``--length`` rows counted at it
windows       Spiegelhalter's z on consecutive windows of 100 and 1,000 rows, alarming
              when |z| exceeds the critical value that gives the pair's false-alarm
              rate (one alarm every A / 2 rows: a window alarms falsely with
              probability n / (A / 2)); its delay is the end of the first alarming window

speed         (``--speed``) the issue's targets: the thresholds of 100 groups (2,000
              reference rows each, ARL0 10,000) at several ``simulated_alarms`` (best of
              3: wall and CPU seconds, the standard error, the rows walked per chart); and
              both CUSUMs and the O - E chart per model (100 models, rows in random time
              order) against a plain ``cum_sum().over("model", order_by="ts")``, side by
              side in one process, best of 5: three ``over(order_by=)``, one ``over`` of
              a struct of the three, and ``.over("model")`` on a log sorted by model and
              time (the sort not counted, then counted); and the frame functions' one
              ordering of the rows (keys, then time; ties in the frame's order): the
              stable multi-column sort they used against the per-group sort of row
              numbers they use now

    python bench/monitoring.py           # ARL0 10,000: thresholds from 1,000 simulated
                                         # alarms, 20M calibrated rows, 1,000 streams a cell
    python bench/monitoring.py --small   # 400 simulated alarms, 2M rows, 100 streams
    python bench/monitoring.py --speed --rows 10000000   # the speed targets at 10M rows

It prints a Markdown table. Nothing here is a test: the figures are simulations.

store         ``--store``: the daily update of ``pc.update_monitor_store`` for one day of
              new rows (100 models) against ``pc.summary`` of those rows alone (the
              windows' metrics), with 1 and 100 days of history in the log and the
              store (one parquet file a day; the update scans them all; the history
              built one update a day), side by side in one process, best of 5, wall
              and CPU time. Target: the update <= 2x the summary, whatever the history.
              Beside them, what a user would write instead of a store: the summary and
              both CUSUM charts of the day's rows as expressions (rows held, no restarts).

    python bench/monitoring.py --store           # 100k and 1M rows a day
    python bench/monitoring.py --store --small   # 100k rows a day

memory        ``--memory``: peak RSS of ``pc.monitor`` (thresholds given) on a parquet log of
              1M, 4M and 16M rows (``--small``: 1M and 4M), 100 models, in time order and
              shuffled, a subprocess per case, beside ``pl.read_parquet`` of the log; with
              ``--baseline PATH`` also the package found at ``PATH`` (an older checkout).
              Target: memory flat as the rows grow.

              ``--simulated``: simulated thresholds instead (no ``threshold=``): peak
              RSS of ``pc.cusum_thresholds`` and of ``pc.monitor`` on a log of 10 models
              (each above ``SAMPLE_ROWS`` reference rows from 2M rows on), in time order.

    python bench/monitoring.py --memory --baseline /path/to/old/checkout
    python bench/monitoring.py --memory --store --sizes 4000000,16000000   # a store's update
    python bench/monitoring.py --memory --simulated --sizes 2000000,16000000
"""

from __future__ import annotations

import argparse
import math
import shutil
import tempfile
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from statistics import NormalDist

import numpy as np
import polars as pl

import polars_calib as pc

RATIOS = (0.5, 2.0)


def stream(rng: np.random.Generator, streams: int, length: int, shift: float) -> pl.DataFrame:
    """`streams` logs of `length` rows, the odds multiplied by `shift` from the first row."""
    p = rng.beta(2.0, 5.0, streams * length)
    odds = shift * p / (1.0 - p)
    y = (rng.random(p.size) < odds / (1.0 + odds)).astype(np.int64)
    ids = np.repeat(np.arange(streams), length)
    return pl.DataFrame({"stream": ids, "t": np.tile(np.arange(length), streams), "p": p, "y": y})


def thresholds(rng: np.random.Generator, arl0: float, alarms: int) -> tuple[list[float], float]:
    """The pair's thresholds from 5,000 reference rows, and the seconds they took."""
    reference = stream(rng, 1, 5_000, 1.0)
    start = time.perf_counter()
    table = pc.cusum_thresholds(reference, "p", "y", arl0=arl0, simulated_alarms=alarms)
    return table["threshold"].to_list(), time.perf_counter() - start


def false_alarms(
    rng: np.random.Generator, h: list[float], streams: int, length: int
) -> list[float]:
    """Observed ARL0 of each chart: rows / alarms on calibrated streams."""
    log = stream(rng, streams, length, 1.0)
    found = pc.monitor(log, "p", "y", by="stream", time="t", odds_ratio=RATIOS, threshold=h)
    counts = [found.filter(pl.col("odds_ratio") == r).height for r in RATIOS]
    return [log.height / max(count, 1) for count in counts]


def cusum_delays(
    rng: np.random.Generator, h: list[float], shift: float, streams: int, length: int
) -> np.ndarray:
    """Rows to the first alarm of either chart (1-based), censored at `length`: before
    its first alarm a chart needs no restart, so the expressions find it."""
    log = stream(rng, streams, length, shift)
    charts = [
        pc.cusum("p", "y", odds_ratio=ratio).over("stream", order_by="t") > limit
        for ratio, limit in zip(RATIOS, h)
    ]
    alarmed = log.filter(pl.any_horizontal(charts))
    first = alarmed.group_by("stream").agg(pl.col("t").min() + 1)
    delays = np.full(streams, length, dtype=np.float64)
    delays[first["stream"].to_numpy()] = first["t"].to_numpy()
    return delays


def window_delays(
    rng: np.random.Generator, window: int, arl0: float, shift: float, streams: int, length: int
) -> tuple[np.ndarray, float]:
    """Rows to the end of the first window whose |z| alarms, censored at `length`; and the
    observed in-control ARL of the test (rows / alarms), both at the pair's rate."""
    level = window / (arl0 / 2.0)
    critical = NormalDist().inv_cdf(1.0 - level / 2.0)
    result = []
    for factor in (shift, 1.0):
        log = stream(rng, streams, length, factor).with_columns(w=pl.col("t") // window)
        z = log.group_by("stream", "w").agg(z=pc.spiegelhalter_z("p", "y"), n=pl.len())
        result.append(z.filter(pl.col("n") == window, pl.col("z").abs() > critical))
    shifted, calm = result
    first = shifted.group_by("stream").agg((pl.col("w").min() + 1) * window)
    delays = np.full(streams, length, dtype=np.float64)
    delays[first["stream"].to_numpy()] = first["w"].to_numpy()
    return delays, streams * (length // window * window) / max(calm.height, 1)


def day_of_log(rng: np.random.Generator, day: int, rows: int) -> pl.DataFrame:
    """One day of a log: 100 models, timestamps in order (ties), calibrated."""
    p = rng.beta(2.0, 5.0, rows)
    start = datetime(2026, 1, 1) + timedelta(days=day)
    seconds = np.sort(rng.integers(0, 86_400, rows))
    return pl.DataFrame(
        {
            "model": rng.integers(0, 100, rows),
            "seconds": seconds,
            "p": p,
            "y": (rng.random(rows) < p).astype(np.int8),
        }
    ).select("model", (pl.lit(start) + pl.duration(seconds="seconds")).alias("ts"), "p", "y")


def store_speed(rng: np.random.Generator, sizes: list[int], repeats: int = 5) -> None:
    """The daily update against the summary of the new rows, at 1 and 100 days of history.

    Side by side in one process, best of `repeats`, the cases interleaved: wall time, and
    the process's CPU time (steadier on a machine shared with other jobs). The history
    is built as a daily job builds it, one update a day. Beside the issue's reference
    (the summary alone), what a user would write instead of a store: the summary and
    both CUSUM charts of the day's rows (`pc.cusum(...).over("model", order_by="ts")`,
    the day's rows held in memory, no restarts, no store).
    """
    options = {"by": "model", "time": "ts", "threshold": 15.0}  # few alarms: a quick history
    metrics = ["ece", "spiegelhalter_z"]
    print(
        "| history | summary of the day, s (CPU) | summary and both charts by hand, s (CPU) "
        "| update, s (CPU) | update / summary (CPU) | update / by hand (CPU) |"
    )
    print("|---|---|---|---|---|---|")
    for rows in sizes:
        for history in (1, 100):
            root = Path(tempfile.mkdtemp())
            logs, store = root / "logs", root / "store"
            logs.mkdir()
            for day in range(history):
                day_of_log(rng, day, rows).write_parquet(logs / f"day-{day:04d}.parquet")
                pc.update_monitor_store(
                    pl.scan_parquet(logs / "*.parquet"), store, "p", "y", **options
                )
            new = logs / f"day-{history:04d}.parquet"
            day_of_log(rng, history, rows).write_parquet(new)
            copy = root / "copy"

            def summary() -> None:
                day = pl.scan_parquet(new)
                pc.summary(
                    day, "p", "y", by="model", time="ts", every="1d", metrics=metrics
                ).collect()

            def by_hand() -> None:
                day = pl.scan_parquet(new)
                charts = [
                    pc.cusum("p", "y", odds_ratio=r).over("model", order_by="ts").alias(f"r{r}")
                    for r in (0.5, 2.0)
                ]
                pl.collect_all(
                    [
                        pc.summary(
                            day, "p", "y", by="model", time="ts", every="1d", metrics=metrics
                        ),
                        day.select(charts),
                    ]
                )

            def update() -> None:
                pc.update_monitor_store(
                    pl.scan_parquet(logs / "*.parquet"), copy, "p", "y", **options
                )

            def fresh() -> None:  # each update from the store of yesterday
                shutil.rmtree(copy, ignore_errors=True)
                shutil.copytree(store, copy)

            (a, a_cpu), (h, h_cpu), (b, b_cpu) = best_interleaved(
                repeats, [(summary, None), (by_hand, None), (update, fresh)]
            )
            print(
                f"| {history} days of {rows:,} rows | {a:.3f} ({a_cpu:.3f}) "
                f"| {h:.3f} ({h_cpu:.3f}) | {b:.3f} ({b_cpu:.3f}) "
                f"| {b / a:.2f} ({b_cpu / a_cpu:.2f}) | {b / h:.2f} ({b_cpu / h_cpu:.2f}) |"
            )
            shutil.rmtree(root, ignore_errors=True)


def best_interleaved(
    runs: int, cases: list[tuple[Callable[[], None], Callable[[], None] | None]]
) -> list[tuple[float, float]]:
    """The best wall and CPU times of each case, the cases interleaved in each run (a
    case's `before`, when given, runs untimed before it)."""
    times: list[list[tuple[float, float]]] = [[] for _ in cases]
    for _ in range(runs):
        for i, (case, before) in enumerate(cases):
            if before is not None:
                before()
            start, cpu = time.perf_counter(), time.process_time()
            case()
            times[i].append((time.perf_counter() - start, time.process_time() - cpu))
    return [(min(t[0] for t in ts), min(t[1] for t in ts)) for ts in times]


def best_of(runs: int, cases: dict[str, Callable[[], object]]) -> dict[str, float]:
    """The best time of each case over `runs` rounds, the cases interleaved in each."""
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(runs):
        for name, case in cases.items():
            start = time.perf_counter()
            case()
            times[name].append(time.perf_counter() - start)
    return {name: min(values) for name, values in times.items()}


def threshold_speed(rng: np.random.Generator, groups: int, alarms: list[int]) -> None:
    """Seconds (wall and CPU, best of 3) for the thresholds of `groups` groups (2,000
    reference rows each), the mean relative standard error and rows walked per chart."""
    p = rng.beta(2.0, 5.0, groups * 2_000)
    y = (rng.random(p.size) < p).astype(np.int64)
    df = pl.DataFrame({"g": np.repeat(np.arange(groups), 2_000), "p": p, "y": y})
    print(f"| simulated_alarms | {groups} groups, s | CPU s | arl0_se / arl0 | rows per chart |")
    print("|---|---|---|---|---|")
    for count in alarms:
        wall = cpu = math.inf
        for _ in range(3):
            start, start_cpu = time.perf_counter(), time.process_time()
            table = pc.cusum_thresholds(df, "p", "y", by="g", simulated_alarms=count)
            wall = min(wall, time.perf_counter() - start)
            cpu = min(cpu, time.process_time() - start_cpu)
        relative = float((table["arl0_se"] / table["arl0"]).mean())
        rows = float(table["rows_simulated"].mean())
        print(f"| {count} | {wall:.1f} | {cpu:.1f} | {relative:.1%} | {rows:,.0f} |")


def chart_speed(rng: np.random.Generator, rows: int, models: int = 100) -> None:
    """The three charts per model against a plain ``cum_sum`` over the same window."""
    p = rng.beta(2.0, 5.0, rows)
    log = pl.DataFrame(
        {
            "model": rng.integers(0, models, rows),
            "ts": rng.permutation(rows),
            "p": p,
            "y": (rng.random(rows) < p).astype(np.int64),
        }
    )
    ordered = log.sort("model", "ts")
    charts = {
        "up": pc.cusum("p", "y", odds_ratio=2.0),
        "down": pc.cusum("p", "y", odds_ratio=0.5),
        "oe": pc.observed_minus_expected("p", "y"),
    }
    each = [chart.over("model", order_by="ts").alias(name) for name, chart in charts.items()]
    struct = pl.struct(chart.alias(name) for name, chart in charts.items())
    cases: dict[str, Callable[[], object]] = {
        "plain cum_sum, over(order_by=)": lambda: (
            log.lazy().select(pl.col("p").cum_sum().over("model", order_by="ts")).collect()
        ),
        "one CUSUM, over(order_by=)": lambda: log.lazy().select(each[0]).collect(),
        "three charts, three over(order_by=)": lambda: log.lazy().select(each).collect(),
        "three charts, one over(order_by=) of a struct": lambda: (
            log.lazy().select(struct.over("model", order_by="ts").alias("s")).unnest("s").collect()
        ),
        "three charts, over('model') on a sorted log": lambda: (
            ordered.lazy()
            .select(chart.over("model").alias(name) for name, chart in charts.items())
            .collect()
        ),
        "three charts, over('model') after log.sort('model', 'ts') (sort counted)": lambda: (
            log.sort("model", "ts", maintain_order=True)
            .lazy()
            .select(chart.over("model").alias(name) for name, chart in charts.items())
            .collect()
        ),
        "pc.monitor, thresholds given (few alarms)": lambda: pc.monitor(
            log, "p", "y", by="model", time="ts", threshold=12.0
        ),
        **duckdb_charts(log),
    }
    times = best_of(5, cases)
    plain = times["plain cum_sum, over(order_by=)"]
    print(f"\n| {rows:,} rows, {models} models (best of 5) | seconds | x plain |")
    print("|---|---|---|")
    for name, seconds in times.items():
        print(f"| {name} | {seconds:.2f} | {seconds / plain:.2f} |")
    if "DuckDB: plain running sum" in times:
        ratio = times["DuckDB: three charts by hand"] / times["DuckDB: plain running sum"]
        print(f"\nDuckDB: the three charts by hand / its plain running sum: {ratio:.2f}")


DUCKDB_WINDOW = "WINDOW w AS (PARTITION BY model ORDER BY ts ROWS UNBOUNDED PRECEDING)"

DUCKDB_CHARTS = f"""
WITH c AS (
    SELECT
        sum(y * ln(2) - ln(1 + p)) OVER w AS up,
        sum(y * ln(0.5) - ln(1 - 0.5 * p)) OVER w AS down,
        sum(y - p) OVER w AS oe,
        model, ts
    FROM log {DUCKDB_WINDOW}
)
SELECT up - least(0, min(up) OVER w), down - least(0, min(down) OVER w), oe
FROM c {DUCKDB_WINDOW}
"""


def duckdb_charts(log: pl.DataFrame) -> dict[str, Callable[[], object]]:
    """The same pair in DuckDB SQL when it is installed (not a dependency): a plain running
    sum per model against the three charts by hand (no checks; the running minimum of a
    running sum is a second window), each fetched whole as Arrow."""
    try:
        import duckdb
    except ImportError:
        return {}
    con = duckdb.connect()
    con.register("log", log.to_arrow())
    plain = f"SELECT sum(p) OVER w FROM log {DUCKDB_WINDOW}"
    return {
        "DuckDB: plain running sum": lambda: con.sql(plain).arrow(),
        "DuckDB: three charts by hand": lambda: con.sql(DUCKDB_CHARTS).arrow(),
    }


MEMORY_RUN = """
import json, sys, time
import polars as pl
import polars_calib as pc
def status(field):  # kB; VmHWM is the peak RSS of this process (not inherited from its parent)
    with open("/proc/self/status") as lines:
        return next(int(line.split()[1]) for line in lines if line.startswith(field))
path, case = sys.argv[1], sys.argv[2]
before = status("VmRSS:")
start = time.perf_counter()
if case == "read":
    rows = pl.read_parquet(path).height
elif case == "store":  # a first update: every row is new (a store needs a Datetime)
    import tempfile
    log = pl.scan_parquet(path).with_columns(pl.col("ts").cast(pl.Datetime("ms")))
    options = dict(by="model", time="ts", threshold=5.0)
    rows = pc.update_monitor_store(log, tempfile.mkdtemp(), "p", "y", **options).height
elif case == "plot":  # the CUSUM charts of every model (Altair), decimated
    chart = pc.plot_cusum(pl.scan_parquet(path), "p", "y", by="model", time="ts", threshold=5.0)
    rows = chart.data.height  # the rows drawn
elif case == "cusum_thresholds":  # simulated from every row (no reference=)
    rows = pl.scan_parquet(path).calib.cusum_thresholds("p", "y", by="model").collect().height
else:  # "monitor" (thresholds given) or "simulated" (thresholds simulated from every row)
    given = dict(threshold=5.0) if case == "monitor" else {}
    plan = pl.scan_parquet(path).calib.monitor("p", "y", by="model", time="ts", **given)
    rows = plan.collect().height
print(json.dumps({"peak": status("VmHWM:"), "import": before,
                  "seconds": time.perf_counter() - start, "rows": rows, "package": pc.__file__}))
"""


def memory_log(
    rng: np.random.Generator, rows: int, path: Path, shuffled: bool, models: int = 100
) -> None:
    """A log of `rows` rows of `models` models, in time order (or shuffled); the first
    tenth of the models have their odds doubled in the second half."""
    model = rng.integers(0, models, rows)
    p = rng.beta(2.0, 5.0, rows)
    odds = np.where((model < models // 10) & (np.arange(rows) >= rows // 2), 2.0, 1.0) * p / (1 - p)
    log = pl.DataFrame(
        {
            "model": pl.Series(model).cast(pl.String),
            "ts": np.arange(rows, dtype=np.int64) // 10,
            "p": p,
            "y": (rng.random(rows) < odds / (1 + odds)).astype(np.int8),
        }
    )
    if shuffled:
        log = log.sample(fraction=1.0, shuffle=True, seed=1)
    log.write_parquet(path, row_group_size=1 << 17)


def memory(
    rng: np.random.Generator, sizes: list[int], baseline: str | None, case: str = "monitor"
) -> None:
    """Peak RSS of ``pc.monitor`` (`case` ``"store"``: of a store's update; ``"plot"``:
    of ``pc.plot_cusum``; both in time order only; ``"simulated"``: of
    ``pc.cusum_thresholds`` and ``pc.monitor`` with simulated thresholds, 10 models, in
    time order) on a parquet log (a subprocess per case, one after the other), with
    `baseline` (a checkout's path) as "before"."""
    import json
    import os
    import subprocess
    import sys

    runs = ["cusum_thresholds", "simulated"] if case == "simulated" else [case]

    here = str(Path(__file__).resolve().parents[1])
    versions = {"this": here, **({"baseline": baseline} if baseline else {})}
    counted = "rows drawn" if case == "plot" else "alarms"
    print(f"| rows | log | version | peak RSS (MB) | over import (MB) | seconds | {counted} |")
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as directory:
        for rows in sizes:
            for shuffled in (False, True) if case == "monitor" else (False,):
                path = Path(directory) / "log.parquet"
                memory_log(rng, rows, path, shuffled, 10 if case == "simulated" else 100)
                order = "shuffled" if shuffled else "time order"
                versions_and_runs = [
                    *((version, where, run) for run in runs for version, where in versions.items()),
                    ("read_parquet", here, "read"),
                ]
                for version, where, run in versions_and_runs:
                    # The package from `where`: PYTHONPATH, run from the log's directory
                    # (python -c puts the working directory first on sys.path).
                    env = {**os.environ, "PYTHONPATH": where}
                    done = subprocess.run(
                        [sys.executable, "-c", MEMORY_RUN, str(path), run],
                        env=env,
                        cwd=directory,
                        capture_output=True,
                        text=True,
                        check=True,
                    )
                    got = json.loads(done.stdout)
                    assert got["package"].startswith(where), got["package"]
                    peak, base = got["peak"] / 1024, got["import"] / 1024
                    print(
                        f"| {rows:,} | {order}{'' if len(runs) == 1 else ', ' + run} "
                        f"| {version} | {peak:.0f} | {peak - base:.0f} "
                        f"| {got['seconds']:.1f} | {got['rows']:,} |",
                        flush=True,
                    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arl0", type=float, default=10_000.0)
    parser.add_argument("--small", action="store_true", help="few streams: a quick check")
    parser.add_argument("--speed", action="store_true", help="the issue's speed targets")
    parser.add_argument("--rows", type=int, default=2_000_000, help="rows of --speed's log")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--store", action="store_true", help="the daily update of a store")
    parser.add_argument("--memory", action="store_true", help="peak RSS of pc.monitor")
    parser.add_argument("--plot", action="store_true", help="with --memory: of pc.plot_cusum")
    parser.add_argument(
        "--baseline", metavar="PATH", help="with --memory: a checkout to compare (PYTHONPATH)"
    )
    parser.add_argument("--sizes", help="with --memory: the logs' rows, comma-separated")
    parser.add_argument(
        "--simulated", action="store_true", help="with --memory: simulated thresholds"
    )
    args = parser.parse_args()
    if args.memory:
        sizes = [1_000_000, 4_000_000] if args.small else [1_000_000, 4_000_000, 16_000_000]
        sizes = [int(size) for size in args.sizes.split(",")] if args.sizes else sizes
        case = "store" if args.store else "plot" if args.plot else "monitor"
        case = "simulated" if args.simulated else case
        memory(np.random.default_rng(args.seed), sizes, args.baseline, case)
        return
    if args.store:
        sizes = [100_000] if args.small else [100_000, 1_000_000]
        store_speed(np.random.default_rng(args.seed), sizes)
        return
    rng = np.random.default_rng(args.seed)
    if args.speed:
        threshold_speed(rng, 100, [50, 100, 200, 400])
        chart_speed(rng, args.rows)
        return
    arl0 = args.arl0
    calm_streams, alarms, shifted_streams = (40, 400, 100) if args.small else (400, 1000, 1000)
    h, seconds = thresholds(rng, arl0, alarms)
    observed = false_alarms(rng, h, calm_streams, int(5 * arl0))
    print(
        f"ARL0 target {arl0:,.0f} per chart; thresholds {h[0]:.3f} (R = 0.5), {h[1]:.3f} "
        f"(R = 2) from {alarms} simulated alarms in {seconds:.1f} s"
    )
    print(
        f"observed ARL0: {observed[0]:,.0f} (R = 0.5), {observed[1]:,.0f} (R = 2), "
        f"{calm_streams * 5 * arl0:,.0f} rows each\n"
    )
    length = int(arl0)
    print("| shift | CUSUM pair, median (mean) | window 100 | window 1,000 |")
    print("|---|---|---|---|")
    for shift in (2.0, 0.5):
        cusum = cusum_delays(rng, h, shift, shifted_streams, length)
        cells = [f"{np.median(cusum):,.0f} ({cusum.mean():,.0f})"]
        for window in (100, 1000):
            delays, calm = window_delays(rng, window, arl0, shift, shifted_streams, length)
            cells.append(f"{np.median(delays):,.0f} ({delays.mean():,.0f}); ARL0 {calm:,.0f}")
        print(f"| odds x {shift:g} | " + " | ".join(cells) + " |")
    print(
        f"\nDelays in rows from the change (censored at {length:,}); "
        f"{shifted_streams} streams per cell; window ARL0: rows per false alarm."
    )


if __name__ == "__main__":
    main()
