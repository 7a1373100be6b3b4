"""Every fenced ``python`` block of the docs runs, as the README's do.

The ``>>>`` examples of ``docs/**/*.md`` are doctests (``--doctest-glob='*.md'``), which
check their output. The other ```` ```python ```` blocks hold code a reader copies, often
after a page's ``>>>`` examples that define its names: each page with such blocks runs
here, its examples and blocks in page order in one namespace (checking the examples'
output is the doctests' job), in a temporary directory where ``examples/`` is the
repository's, so the bundled log is at ``examples/data/predictions.parquet`` and what a
block writes lands in the temporary directory.

A block that cannot run here (a cluster, a user's own files) has the line
``<!-- not run: REASON -->`` right above its fence in the page: it shows as a skipped
test giving the page, line and reason, and there may be at most :data:`MAX_NOT_RUN`.
"""

from __future__ import annotations

import ast
import doctest
import inspect
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import HAS_PLOT

ROOT = Path(__file__).parent.parent
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.rglob("*.md"))

FENCE = re.compile(r"^```(?P<lang>\S*)\n(?P<code>.*?)^```[ \t]*$", re.S | re.M)
"""A fenced block (found in order, so a closing fence never opens one)."""

MARKER = re.compile(r"<!-- not run: (.*?) -->")
"""The note that the block below it is not run, and why."""

MAX_NOT_RUN = 3
"""How many blocks of all the docs may be marked not run (the cluster examples)."""


@dataclass(frozen=True)
class Step:
    """One piece of a page's code: a fenced block or a doctest example."""

    line: int
    """Its first line in the page, from 1."""
    source: str
    raises: bool = False
    """A doctest example whose expected output is a traceback."""
    not_run: str | None = None
    """The reason given by the block's ``<!-- not run: ... -->`` marker."""


def page_steps(text: str) -> list[Step]:
    """The code of a page in order, up to its last fenced block that is not a doctest.

    A page without such blocks gives no steps: its doctests run it already.
    """
    lines = text.splitlines()
    blocks = []
    for match in FENCE.finditer(text):
        if match["lang"] not in ("python", "py") or match["code"].lstrip().startswith(">>>"):
            continue  # another language, or doctest examples (the doctest run checks them)
        line = text.count("\n", 0, match.start()) + 1
        marker = MARKER.fullmatch(lines[line - 2].strip()) if line > 1 else None
        reason = marker.group(1).strip() if marker else None
        blocks.append(Step(line + 1, match["code"], not_run=reason))
    if not blocks:
        return []
    examples = [
        Step(example.lineno + 1, example.source, raises=example.exc_msg is not None)
        for example in doctest.DocTestParser().get_examples(text)
        if example.lineno + 1 < blocks[-1].line
    ]
    return sorted(blocks + examples, key=lambda step: step.line)


def run_steps(steps: list[Step], name: str) -> int:
    """Run the steps in one namespace (the current directory is the reader's); count them.

    A failing step raises with ``name:line`` in its traceback.
    """
    namespace: dict[str, object] = {"__name__": "__main__"}
    ran = 0
    for step in steps:
        if step.not_run is not None:
            continue
        code = compile(step.source, f"{name}:{step.line}", "exec")
        if step.raises:
            with pytest.raises(Exception):  # noqa: B017  (the doctest checks which)
                exec(code, namespace)
        else:
            exec(code, namespace)
        ran += 1
    return ran


def _name(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


STEPS = {_name(page): page_steps(page.read_text()) for page in PAGES}
SLOW_PAGES = {"docs/html-report.md", "docs/plots.md"}
"""Pages whose code takes over 5 s of CPU (a page with bootstrap replicates and PNGs)."""
RUN = [
    pytest.param(name, marks=[pytest.mark.slow] if name in SLOW_PAGES else [])
    for name, steps in STEPS.items()
    if any(not step.not_run for step in steps)
]
NOT_RUN = [
    pytest.param(f"{name}:{step.line}", step, id=f"{name}:{step.line}")
    for name, steps in STEPS.items()
    for step in steps
    if step.not_run
]


@pytest.mark.parametrize("name", RUN)
def test_page_code_runs(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    steps = STEPS[name]
    if not HAS_PLOT and any(re.search(r"\bplot|save_png", step.source) for step in steps):
        pytest.skip("needs the plot extra (altair, vl-convert)")
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    monkeypatch.chdir(tmp_path)
    assert run_steps(steps, name) > 0


@pytest.mark.parametrize(("where", "step"), NOT_RUN)
def test_block_marked_not_run(where: str, step: Step) -> None:
    compile(step.source, where, "exec")  # still Python
    pytest.skip(f"{where}: not run: {step.not_run}")


def test_not_run_markers_are_few_and_explained() -> None:
    markers = [
        (name, marker) for name in STEPS for marker in MARKER.finditer((ROOT / name).read_text())
    ]
    assert all(marker.group(1).strip() for _, marker in markers), "a marker without a reason"
    # every marker sits right above a block: none is lost when the page changes
    assert len(markers) == len(NOT_RUN), [f"{name}: {m.group(0)}" for name, m in markers]
    assert len(NOT_RUN) <= MAX_NOT_RUN


PAGE = """\
Text.

>>> import math
>>> root = math.sqrt(16)
>>> 1 / 0
Traceback (most recent call last):
ZeroDivisionError: division by zero

```python
seen = [root]
```

<!-- not run: needs a cluster -->
```python
raise RuntimeError("not to be run")
```

```python
>>> seen.append(2)
```

```python
seen.append(3)
```

>>> after = 1 / 0
"""


def test_runner_keeps_page_order_and_honours_markers() -> None:
    steps = page_steps(PAGE)
    assert [step.line for step in steps] == [3, 4, 5, 10, 15, 19, 23]
    assert [step.raises for step in steps] == [False, False, True, False, False, False, False]
    assert steps[4].not_run == "needs a cluster"
    assert run_steps(steps, "page.md") == 6  # the example after the last block is left out
    assert page_steps("no code\n\n>>> 1 / 0\n") == []
    with pytest.raises(NameError, match="root"):
        run_steps([step for step in steps if step.line != 4], "page.md")


INLINE_CODE = re.compile(r"``(.+?)``|`([^`]+)`", re.S)


def api_mentions(text: str) -> list[tuple[str, str]]:
    """``pc.NAME(ARGS)`` in the page's inline code and plain fenced blocks: (NAME, ARGS).

    Signatures (``pc.ece(prob, label, *, n_bins=15)``) and calls (``pc.ece("p", "y")``)
    alike; the runnable code is checked by running it.
    """
    spans = [match["code"] for match in FENCE.finditer(text) if not match["lang"]]
    prose = FENCE.sub("", text)
    spans += [a or b for a, b in INLINE_CODE.findall(prose)]
    mentions = []
    for span in spans:
        for start in re.finditer(r"\bpc\.(\w+)\(", span):
            depth = 0
            for end in range(start.end() - 1, len(span)):
                depth += {"(": 1, ")": -1}.get(span[end], 0)
                if depth == 0:
                    mentions.append((start.group(1), span[start.end() : end]))
                    break
    return mentions


def mention_problems(name: str, args: str) -> list[str]:
    """How ``pc.NAME(ARGS)`` disagrees with the function: a signature's parameters, kinds
    and defaults; a call's keywords and number of positional arguments."""
    import polars_calib as pc

    function = getattr(pc, name, None)
    if function is None:
        return [f"pc.{name} does not exist"]
    real = inspect.signature(function).parameters
    if re.search(r"(^|,)\s*\*\s*,", args):  # a signature: it has a bare `*`
        return signature_problems(name, args, real)
    try:
        call = ast.parse(f"f({args})", mode="eval").body
    except SyntaxError:
        return []  # an elided sketch (`kernel=, ...`), not code
    assert isinstance(call, ast.Call)
    takes_any = any(p.kind is p.VAR_KEYWORD for p in real.values())
    positional = [
        p for p in real.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    problems = [
        f"pc.{name}() takes no {keyword.arg}="
        for keyword in call.keywords
        if keyword.arg is not None and keyword.arg not in real and not takes_any
    ]
    if len(call.args) > len(positional) and not any(
        p.kind is p.VAR_POSITIONAL for p in real.values()
    ):
        problems.append(f"pc.{name}() takes {len(positional)} positional arguments")
    return problems


def signature_problems(name: str, args: str, real: Mapping[str, inspect.Parameter]) -> list[str]:
    """How a documented signature differs from the function's (a subset may be shown)."""
    args = re.sub(r",\s*\.\.\.\s*$", "", args)  # `...`: and more parameters
    documented = ast.parse(f"def f({args}): pass").body[0]
    assert isinstance(documented, ast.FunctionDef)
    arguments = documented.args
    problems = []
    shown = [(arg, False) for arg in arguments.posonlyargs + arguments.args]
    shown += [(arg, True) for arg in arguments.kwonlyargs]
    defaults = dict(
        zip(
            [arg.arg for arg in arguments.posonlyargs + arguments.args][::-1],
            arguments.defaults[::-1],
        )
    )
    defaults.update(
        (arg.arg, default)
        for arg, default in zip(arguments.kwonlyargs, arguments.kw_defaults)
        if default
    )
    for arg, keyword_only in shown:
        parameter = real.get(arg.arg)
        if parameter is None:
            problems.append(f"pc.{name} has no parameter {arg.arg}")
            continue
        if keyword_only != (parameter.kind is parameter.KEYWORD_ONLY):
            problems.append(f"pc.{name}: {arg.arg} is {parameter.kind.description}")
        default = defaults.get(arg.arg)
        if default is None:
            if parameter.default is not parameter.empty:
                problems.append(f"pc.{name}: {arg.arg} has a default, {parameter.default!r}")
        elif not isinstance(default, ast.Constant) or default.value is not Ellipsis:
            value = ast.literal_eval(default)
            if parameter.default is parameter.empty or value != parameter.default:
                problems.append(
                    f"pc.{name}: {arg.arg}={value!r} documented, "
                    f"the default is {parameter.default!r}"
                )
    return problems


def test_documented_signatures_and_calls_match_the_code() -> None:
    problems = [
        f"{name}: {problem}"
        for name in STEPS
        for function, args in api_mentions((ROOT / name).read_text())
        for problem in mention_problems(function, args)
    ]
    assert not problems, "\n".join(problems)


LINK = re.compile(r"\]\(([^)\s]+)\)")
"""The target of a markdown link."""


def anchors(text: str) -> set[str]:
    """The anchors of a page's headings, as GitHub makes them."""
    headings = re.findall(r"^#+ (.+)$", FENCE.sub("", text), re.M)
    return {
        re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-") for heading in headings
    }


def test_relative_links_resolve() -> None:
    broken = []
    for name in STEPS:
        page = ROOT / name
        for target in LINK.findall(page.read_text()):
            if re.match(r"[a-z]+:", target):
                continue  # https:, mailto:
            path, _, anchor = target.partition("#")
            linked = page.parent / path if path else page
            if not linked.exists():
                broken.append(f"{name}: {target} (no such file)")
            elif anchor and linked.suffix == ".md" and anchor not in anchors(linked.read_text()):
                broken.append(f"{name}: {target} (no such heading)")
    assert not broken, "\n".join(broken)


HEAVY = ("--html", "audit")
"""Commands left out of the console check: a page with replicates, an audit (each over
10 s of CPU; tests/test_cli.py and tests/test_html_report.py run them). Their output in
the docs is a file size or nothing."""


def console_sessions(text: str) -> list[tuple[int, list[str], list[str]]]:
    """The ``$ polars-calib ...`` commands of a page's console blocks, with the lines shown
    after each: (line in the page, the command's words, the output lines)."""
    sessions: list[tuple[int, list[str], list[str]]] = []
    for match in FENCE.finditer(text):
        if match["lang"] not in ("console", "") or not match["code"].startswith("$ "):
            continue
        first = text.count("\n", 0, match.start()) + 2
        for offset, line in enumerate(match["code"].splitlines()):
            if line.startswith("$ "):
                sessions.append((first + offset, shlex.split(line[2:]), []))
            else:
                sessions[-1][2].append(line)
    return sessions


@pytest.mark.slow
def test_console_examples_print_what_the_docs_show(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The command line's output in the docs, line for line (stdout and stderr together:
    the order in which a terminal shows them is not checked), and its exit codes."""
    from polars_calib.cli import main

    # The logs the pages' commands read: the bundled example, and the regression page's
    # interval log (the 800-row log of tests/test_regression_report.py).
    from test_regression_report import forms_log, gaussian_log

    (tmp_path / "examples").symlink_to(ROOT / "examples")
    forms_log(gaussian_log()).write_parquet(tmp_path / "intervals.parquet")
    monkeypatch.chdir(tmp_path)
    checked, code = 0, None
    for name in STEPS:
        for line, words, shown in console_sessions((ROOT / name).read_text()):
            where = f"{name}:{line}"
            if words[0] == "polars-calib" and not set(HEAVY) & set(words):
                assert ">" not in words, where  # every line it prints is shown
                code = main(words[1:])
                printed = capsys.readouterr()
                got = (printed.out + printed.err).splitlines()
                assert sorted(got) == sorted(shown), where
                checked += 1
                continue
            if words == ["echo", "$?"]:
                assert code is not None, f"{where}: the exit code of which command?"
                assert shown == [str(code)], where
            elif words[0] == "ls" and HAS_PLOT:
                listed = sorted(path.name for path in Path(words[1]).iterdir())
                assert listed == sorted(" ".join(shown).split()), where
            code = None  # `echo $?` tells of the command right above it
    assert checked >= 5


def test_every_pc_name_in_the_docs_exists() -> None:
    import polars_calib as pc

    missing = [
        f"{name}: pc.{attribute}"
        for name in STEPS
        for attribute in sorted(set(re.findall(r"\bpc\.(\w+)", (ROOT / name).read_text())))
        if not hasattr(pc, attribute)
    ]
    assert not missing, "\n".join(missing)
