"""MkDocs hooks of the documentation site (mkdocs.yml).

* **The changelog as a page.** The pages of ``docs/`` link to ``../CHANGELOG.md``, which
  works on a forge and in a clone but lies outside the site. The site gets the changelog
  as its page ``changelog.md``, and those links point to it. Any other link out of
  ``docs/`` stays broken, and ``mkdocs build --strict`` fails on it.
* **Doctest examples as code.** The pages' ``>>>`` examples outside fenced blocks (run by
  ``pytest --doctest-glob='*.md'``) would render as a paragraph: the site shows each run of
  them, up to the next blank line, as a ``pycon`` code block.
* **Sphinx roles as links.** The docstrings' ``:func:`polars_calib.ece``` roles, which
  mkdocstrings shows as text, become cross-references to the API reference (a name not
  under ``polars_calib`` is looked up there); one that names no documented object stays as code.
  ``:math:`` roles and ``.. math::`` blocks show their LaTeX source as code (no math
  renderer: the site loads nothing from the network); ``.. warning::`` becomes a warning box.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

ROOT = Path(__file__).parent
OUTSIDE = {"CHANGELOG.md": "changelog.md"}
"""Files of the repository outside ``docs/`` that the site holds: path -> page."""

LINK = re.compile(r"(\]\()([^)\s#]+)")


def on_files(files: Files, config: Any) -> Files:
    """Add the repository's files listed in :data:`OUTSIDE` as pages of the site."""
    for path, page in OUTSIDE.items():
        files.append(File.generated(config, page, abs_src_path=str(ROOT / path)))
    return files


def on_page_markdown(markdown: str, page: Page, config: Any, files: Files) -> str:
    """Fence the page's doctest examples; point its links out of ``docs/`` into the site."""
    return fence_doctests(relink(markdown, posixpath.dirname(page.file.src_uri)))


FENCE = re.compile(r"^\s*(```|~~~)")
PROMPT = re.compile(r"^( *)>>> ")


def fence_doctests(markdown: str) -> str:
    """Put each run of ``>>>`` examples outside a fenced block into a ``pycon`` block.

    A run starts at a ``>>>`` line after a blank line and ends before the next blank line,
    as a doctest block in reStructuredText. Indented runs (under a list item) get the
    list's four-space indent.
    """
    out: list[str] = []
    lines = markdown.split("\n")
    fenced = False
    index = 0
    while index < len(lines):
        line = lines[index]
        if FENCE.match(line):
            fenced = not fenced
        prompt = PROMPT.match(line)
        if fenced or not prompt or (index and lines[index - 1].strip()):
            out.append(line)
            index += 1
            continue
        end = index
        while end < len(lines) and lines[end].strip():
            end += 1
        indent = " " * 4 if prompt[1] else ""
        width = len(prompt[1])
        out.append(f"{indent}```pycon")
        out += [indent + run[width:] for run in lines[index:end]]
        out.append(f"{indent}```")
        index = end
    return "\n".join(out)


def relink(markdown: str, folder: str) -> str:
    """Point the links of a page in `folder` to a file of :data:`OUTSIDE` at its page."""

    def page_link(match: re.Match[str]) -> str:
        target = match[2]
        if re.match(r"[a-z]+:", target):
            return match[0]
        # the target, relative to the repository (the docs are under docs/)
        resolved = posixpath.normpath(posixpath.join("docs", folder, target))
        if resolved not in OUTSIDE:
            return match[0]
        return match[1] + posixpath.relpath(OUTSIDE[resolved], folder or ".")

    return LINK.sub(page_link, markdown)


ROLE = re.compile(
    r":(?:py:)?(?:func|class|meth|attr|data|obj|exc|mod):<code>(?P<short>~?)(?P<name>[\w.]+)"
    r"(?P<call>\(\))?</code>"
)
"""A Sphinx role in the HTML of a docstring (its target as code)."""


def on_page_content(html: str, page: Page, config: Any, files: Files) -> str:
    """Turn the docstrings' Sphinx roles into cross-references that autorefs resolves."""

    def reference(match: re.Match[str]) -> str:
        name = match["name"]
        identifier = name if name.startswith("polars_calib") else f"polars_calib.{name}"
        shown = (name.rsplit(".", 1)[-1] if match["short"] else name) + (match["call"] or "")
        # `optional`: a target that is not documented stays as code, without a warning
        return f'<autoref identifier="{identifier}" optional><code>{shown}</code></autoref>'

    html = ROLE.sub(reference, html)
    html = html.replace(":math:<code>", "<code>").replace("<p>.. math::</p>\n", "")
    html = DISPLAY_MATH.sub(r'<div class="highlight"><pre><code>\1</code></pre></div>', html)
    return WARNING.sub(
        r'<div class="admonition warning"><p class="admonition-title">Warning</p><p>\1</p></div>',
        html,
    )


DISPLAY_MATH = re.compile(r"<p>\.\. math:: (.*?)</p>", re.S)
WARNING = re.compile(r"<p>\.\. warning::\s*(.*?)</p>", re.S)
