"""The documentation site (mkdocs.yml): its API reference, its strict build, and a browser
opening it from disk with no network.

The site is MkDocs with the Material theme; ``docs/reference/`` holds the API reference,
generated from the docstrings by mkdocstrings (``::: polars_calib.NAME`` lines). The build
needs the docs extra (``pip install -e '.[docs]'``); the browser test needs Chromium.
"""

from __future__ import annotations

import html
import inspect
import os
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

import polars_calib as pc
from polars_calib._metrics.namespace import ExprCalibNamespace
from polars_calib._namespaces import DataFrameCalibNamespace, LazyFrameCalibNamespace
from test_html_report import CHROMIUM, FLAGS

ROOT = Path(__file__).parents[1]
REFERENCE = ROOT / "docs" / "reference"
DIRECTIVE = re.compile(r"^::: polars_calib\.(\w+)[ \t]*$", re.M)
"""A reference page's ``::: polars_calib.NAME`` line: a public name's entry."""


def documented_names() -> Counter[str]:
    """How often each public name has an entry in the reference pages."""
    return Counter(
        name for page in REFERENCE.glob("*.md") for name in DIRECTIVE.findall(page.read_text())
    )


def test_reference_documents_every_public_name_once() -> None:
    documented = documented_names()
    missing = sorted(set(pc.__all__) - set(documented))
    twice = sorted(name for name, count in documented.items() if count > 1)
    unknown = sorted(set(documented) - set(pc.__all__))
    assert not missing, f"not in docs/reference/*.md: {missing}"
    assert not twice, f"more than once in docs/reference/*.md: {twice}"
    assert not unknown, f"not in polars_calib.__all__: {unknown}"


def public_callables() -> Iterator[tuple[str, object]]:
    """The public functions and classes, their public methods, and the namespaces'."""
    for name in pc.__all__:
        value = getattr(pc, name)
        if inspect.isfunction(value) or inspect.isclass(value):
            yield name, value
            if inspect.isclass(value):
                for member, method in vars(value).items():
                    if not member.startswith("_") and inspect.isfunction(method):
                        yield f"{name}.{member}", method
    for namespace in (ExprCalibNamespace, DataFrameCalibNamespace, LazyFrameCalibNamespace):
        for member, method in inspect.getmembers(namespace, inspect.isfunction):
            if not member.startswith("_"):
                yield f"{namespace.__name__}.{member}", method


SECTION = re.compile(r"^([ \t]*)(\S[^\n]*)\n\1-{3,}[ \t]*$", re.M)
"""A numpydoc section heading, its underline at the same indent."""


def test_docstring_sections_sit_at_the_margin() -> None:
    """A section heading indented past the docstring's margin is not a section: the API
    reference would show its parameters as a block of text (a stray line at a lower
    indent, such as code pasted into a docstring, shifts the margin)."""
    indented = [
        f"{name}: {match[2]!r}"
        for name, value in public_callables()
        for match in SECTION.finditer(inspect.getdoc(value) or "")
        if match[1]
    ]
    assert not indented, "\n".join(indented)


# --------------------------------------------------------------------------
# The built site, in a browser
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site as `mkdocs build --strict` writes it (any warning fails the build)."""
    for module in ("mkdocs", "material", "mkdocstrings_handlers.python"):
        pytest.importorskip(module, reason="the docs extra is not installed")
    where = tmp_path_factory.mktemp("site")
    # Not -q: it silences the warnings that --strict counts, and the build would pass.
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(where)]
    result = subprocess.run(
        command,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert result.returncode == 0, result.stderr[-4_000:]
    return where


REMOTE_HTML = re.compile(
    r"<(?:script|img|iframe)\b[^>]*\bsrc=[\"']?(?:https?:)?//"
    r"|<link\b[^>]*\bhref=[\"']?(?:https?:)?//",
    re.I,
)
"""A page loading a script, style sheet, font, image or frame from the network."""
REMOTE_CSS = re.compile(r"@import|url\(\s*[\"']?(?:https?:)?//", re.I)


@pytest.mark.slow
def test_site_builds_strictly_and_loads_nothing_from_the_network(site: Path) -> None:
    pages = sorted(site.rglob("*.html"))
    assert {"index.html", "reference/metrics.html", "changelog.html"} <= {
        page.relative_to(site).as_posix() for page in pages
    }
    remote = [
        f"{path.relative_to(site)}: {match[0]}"
        for path in [*pages, *site.rglob("*.css")]
        for match in (REMOTE_CSS if path.suffix == ".css" else REMOTE_HTML).finditer(
            path.read_text(encoding="utf-8")
        )
    ]
    assert not remote, "\n".join(remote[:20])
    # The docstrings' Sphinx roles are links (`mce` says "see :func:`ece`"), their math and
    # warning directives code and a warning box: no reStructuredText markup shows.
    metrics = (site / "reference" / "metrics.html").read_text(encoding="utf-8")
    assert re.search(
        r'<a class="autorefs autorefs-internal"[^>]* href="#polars_calib\.ece"', metrics
    )
    markup = re.compile(r":[a-z]+:<code>|<p>\.\. [a-z]+::")
    shown = [page.name for page in pages if markup.search(page.read_text(encoding="utf-8"))]
    assert not shown, shown
    assert (site / "search" / "search_index.js").exists()  # the index, for file:// pages


def chromium_dom(url: str, profile: Path, budget_ms: int) -> str:
    """The DOM of `url` after `budget_ms` of virtual time, with no console message."""
    assert CHROMIUM is not None
    flags = [flag for flag in FLAGS if not flag.startswith("--virtual-time-budget")]
    result = subprocess.run(
        [
            CHROMIUM,
            *flags,
            f"--virtual-time-budget={budget_ms}",
            f"--user-data-dir={profile}",
            "--dump-dom",
            url,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2_000:]
    console = [line for line in result.stderr.splitlines() if ":CONSOLE" in line]
    assert console == [], "\n".join(console)
    return result.stdout


def text_of(dom: str) -> str:
    """The text of an HTML page, whitespace collapsed."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", dom)).split())


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (apt-get install chromium)")
def test_chromium_opens_the_site_from_disk_and_searches_it(site: Path, tmp_path: Path) -> None:
    home = chromium_dom((site / "index.html").as_uri(), tmp_path / "profile", 3_000)
    assert "polars_calib user guide" in text_of(home)
    assert 'href="reference/metrics.html"' in home  # the navigation holds the reference

    api = text_of(chromium_dom((site / "reference/metrics.html").as_uri(), tmp_path / "p", 3_000))
    assert "polars_calib.ece" in api  # the public path, not the private module's
    signature = re.search(r"ece\((.*?)\) -> pl\.Expr", api)
    assert signature, api[:2_000]
    shown = [part.split(":")[0].strip() for part in signature[1].split(",") if part.strip()]
    expected = []
    for parameter in inspect.signature(pc.ece).parameters.values():
        if parameter.kind is parameter.KEYWORD_ONLY and "*" not in expected:
            expected.append("*")
        expected.append(parameter.name)
    assert shown == expected
    summary = (pc.ece.__doc__ or "").splitlines()[0]
    assert f"-> pl.Expr {summary} Parameters: Name Type Description Default" in api

    # Search runs in a web worker: over file://, the vendored shim starts it in an iframe.
    url = (site / "index.html").as_uri() + "?q=brier"
    found = chromium_dom(url, tmp_path / "profile", 10_000)
    results = re.findall(r'class="md-search-result__item"', found)
    assert re.search(r"md-search-result__meta\">\d+ matching documents", found), found[-2_000:]
    assert len(results) >= 3
    assert 'href="metrics/brier.html' in found
