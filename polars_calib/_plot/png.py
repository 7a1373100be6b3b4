"""Charts written to PNG files: Altair through vl-convert, matplotlib through Agg."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, TypeGuard

from polars_calib._core.files import atomic_path
from polars_calib._plot.common import require

__all__ = ["save_png"]

if TYPE_CHECKING:
    import altair as alt
    from matplotlib.figure import Figure

    AltairChart = alt.VConcatChart | alt.HConcatChart | alt.LayerChart


def save_png(
    chart: AltairChart | alt.LayerChart | alt.FacetChart | Figure,
    path: str | Path,
    *,
    scale: float = 2.0,
) -> Path:
    """Write a diagram from :func:`plot_reliability` to a PNG file.

    Parameters
    ----------
    chart
        An Altair chart (exported with ``vl-convert-python``) or a matplotlib
        ``Figure`` (rendered with the Agg backend): a diagram of
        :func:`plot_reliability`, any other chart of the package
        (:func:`plot_metric_over_time`, :func:`plot_quantile_reliability`,
        :func:`plot_pit_histogram`) or a forest plot of :func:`polars_calib.plot_audit`.
    path
        Where to write the image; parent directories must exist. It is written
        under a temporary name beside `path`, then renamed (no partial image).
    scale
        Resolution multiplier: 2 doubles Altair's pixel size, and gives 200 dpi
        for matplotlib.

    Returns
    -------
    Path
        The path written.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> import polars as pl
    >>> import polars_calib as pc
    >>> table = pl.DataFrame({
    ...     "bin": [0, 1], "lower": [0.0, 0.5], "upper": [0.5, 1.0], "count": [40, 60],
    ...     "mean_predicted": [0.3, 0.7], "observed": [0.25, 0.75],
    ...     "observed_lower": [0.14, 0.63], "observed_upper": [0.40, 0.84],
    ... })
    >>> figure = pc.plot_reliability(table, backend="matplotlib")
    >>> with tempfile.TemporaryDirectory() as directory:
    ...     written = pc.save_png(figure, Path(directory) / "diagram.png")
    ...     written.stat().st_size > 0
    True
    """
    if not isinstance(scale, (int, float)) or isinstance(scale, bool) or scale <= 0:
        msg = f"`scale` must be a positive number, got {scale!r}"
        raise ValueError(msg)
    path = Path(path)
    if _is_figure(chart):
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        FigureCanvasAgg(chart)  # render off-screen, whatever pyplot's backend is
        with atomic_path(path) as temporary:
            chart.savefig(temporary, format="png", dpi=100 * scale)
        return path
    if _is_altair(chart):
        require("vl_convert", "Saving an Altair chart as PNG")
        with atomic_path(path) as temporary:
            chart.save(str(temporary), format="png", scale_factor=scale)
        return path
    msg = f"`chart` must be an Altair chart or a matplotlib Figure, got {type(chart).__name__}"
    raise TypeError(msg)


def _is_figure(chart: object) -> TypeGuard[Figure]:
    return hasattr(chart, "savefig")


def _is_altair(chart: object) -> TypeGuard[AltairChart | alt.LayerChart]:
    return hasattr(chart, "to_dict") and hasattr(chart, "save")
