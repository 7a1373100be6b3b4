"""Writing files safely: through a temporary name, and never over an input.

Every file the package writes (a saved calibrator, the HTML page, a PNG chart, the
command line's tables and its streamed parquet) goes through :func:`atomic_path`:
the writer fills a temporary file beside the final one (same directory, so the same
file system), which is renamed over the final name only once the write has
finished. A write that fails or is killed leaves the previous file as it was, and no
half-written file under the final name; the temporary file is removed on failure
(a killed process may leave one, named ``.NAME.XXXXXXXX.tmp``).
A directory of outputs is replaced whole (:func:`replaced_directory`): its new
files are written to a new directory beside it, which then takes its place.

:func:`overwritten_input` tells whether an output would replace an input file,
comparing files (device and inode, through symbolic and hard links), not path
strings.
"""

from __future__ import annotations

import glob
import os
import secrets
import shutil
from collections.abc import Callable, Collection, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = [
    "atomic_path",
    "check_replaceable",
    "foreign_entries",
    "input_files",
    "overwritten_input",
    "replaced_directory",
    "write_text",
]


def _resolved(path: str | Path) -> Path:
    """The file `path` names, through symbolic links (a link's target is what is replaced)."""
    return Path(os.path.realpath(path))


def _reserve(final: Path, make: Callable[[Path], None], suffix: str = "tmp") -> Path:
    """Create a new hidden entry beside `final` with `make`, under a name no one holds."""
    while True:
        candidate = final.with_name(f".{final.name}.{secrets.token_hex(4)}.{suffix}")
        try:
            make(candidate)
        except FileExistsError:
            continue
        return candidate


def _new_file(path: Path) -> None:
    """Create an empty file (mode 0o666 less the umask, as a plain ``open`` would)."""
    os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666))


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside `path`; rename it to `path` when the block succeeds.

    The temporary file exists (empty) when the block starts, so that a writer
    keeps its permissions; when the block raises (or is interrupted) it is removed,
    and `path` is left as it was. Writing through a symbolic link replaces its target.

    Parameters
    ----------
    path
        The final file; its parent directory must exist.

    Yields
    ------
    Path
        The temporary file to write.
    """
    final = _resolved(path)
    temporary = _reserve(final, _new_file)
    try:
        yield temporary
        os.replace(temporary, final)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def write_text(path: str | Path, text: str) -> Path:
    """Write `text` to `path` (UTF-8) atomically and return `path` as a Path."""
    with atomic_path(path) as temporary:
        temporary.write_text(text, encoding="utf-8")
    return Path(path)


def foreign_entries(directory: str | Path, owned: Collection[str]) -> list[str]:
    """Return the sorted names in `directory` that are not in `owned` (none if it is absent)."""
    final = _resolved(directory)
    if not final.is_dir():
        return []
    return sorted(name for name in os.listdir(final) if name not in owned)


def check_replaceable(directory: str | Path, owned: Collection[str]) -> None:
    """Refuse a directory that :func:`replaced_directory` cannot replace whole.

    Raises
    ------
    ValueError
        `directory` is a file, or holds entries not in `owned`.
    """
    final = _resolved(directory)
    if final.exists() and not final.is_dir():
        msg = f"{str(directory)!r} is a file, not a directory"
        raise ValueError(msg)
    foreign = foreign_entries(final, owned)
    if foreign:
        shown = ", ".join(repr(name) for name in foreign[:3])
        more = f" and {len(foreign) - 3} more" if len(foreign) > 3 else ""
        msg = (
            f"{str(directory)!r} holds files this command does not write ({shown}{more}): "
            "it is replaced whole, so give a new or empty directory"
        )
        raise ValueError(msg)


@contextmanager
def replaced_directory(directory: str | Path, owned: Collection[str]) -> Iterator[Path]:
    """Yield a new empty directory that replaces `directory` whole when the block succeeds.

    The new directory is made beside `directory` (its parents created as needed);
    on success the old one is renamed aside, the new one takes its name, and the old
    one is deleted. A block that raises removes the new directory and leaves the old
    one untouched.

    Parameters
    ----------
    directory
        The directory to replace (or create).
    owned
        The names the old directory may hold: anything else in it (a file the
        writer does not own) raises before anything is written.

    Raises
    ------
    ValueError
        `directory` is a file, holds entries not in `owned`, or holds the working
        directory.
    """
    final = _resolved(directory)
    check_replaceable(directory, owned)
    if Path.cwd().resolve().is_relative_to(final):
        msg = f"{str(directory)!r} holds the working directory: it cannot be replaced"
        raise ValueError(msg)
    final.parent.mkdir(parents=True, exist_ok=True)
    staging = _reserve(final, lambda path: path.mkdir())
    try:
        yield staging
        _swap(staging, final)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _swap(staging: Path, final: Path) -> None:
    """Put `staging` at `final`'s name; the old `final` is renamed aside, then deleted."""
    if not final.exists():
        os.rename(staging, final)
        return
    # Two renames (POSIX has no exchange of two directories): between them `final`
    # is absent, and the old outputs are still whole under the aside name.
    aside = _reserve(final, lambda path: _rename_to_new(final, path), suffix="old")
    try:
        os.rename(staging, final)
    except BaseException:
        os.rename(aside, final)
        raise
    shutil.rmtree(aside, ignore_errors=True)


def _rename_to_new(source: Path, path: Path) -> None:
    """Rename `source` to `path`, which must not exist (a rename would replace an empty one)."""
    if os.path.lexists(path):
        raise FileExistsError(path)
    os.rename(source, path)


def input_files(source: str | Path) -> list[Path]:
    """Return the files an input names: a file, a glob's matches, or a directory's files."""
    text = str(source)
    if glob.has_magic(text):
        return [Path(name) for name in glob.glob(text, recursive=True) if os.path.isfile(name)]
    path = Path(text)
    if path.is_dir():
        return [entry for entry in path.rglob("*") if entry.is_file()]
    return [path] if path.is_file() else []


def overwritten_input(
    output: str | Path, inputs: Iterable[str | Path], *, directory: bool = False
) -> str | None:
    """Return the input that writing `output` would replace or write into, else None.

    Files are compared, not path strings: `output` names an input when it is the
    same file (the same path, a symbolic link to it, or a hard link), when it lies
    inside an input directory, or, for an output `directory` (replaced whole),
    when it holds an input file or a link to one.

    Parameters
    ----------
    output
        The file (or, with `directory`, the directory) to be written.
    inputs
        The inputs, as the command line names them: files, globs or directories.
    directory
        Whether `output` is a directory replaced whole.

    Returns
    -------
    str or None
        The input (as given) that the write would replace, or None.
    """
    target = _resolved(output)
    written = [target]
    if directory and target.is_dir():
        written += list(target.iterdir())
    identities = {_identity(path) for path in written} - {None}
    for source in inputs:
        root = _resolved(source)
        if not glob.has_magic(str(source)) and root.is_dir() and target.is_relative_to(root):
            return str(source)
        files = input_files(source)
        if directory and any(_resolved(file).is_relative_to(target) for file in files):
            return str(source)
        if any(_identity(file) in identities for file in files):
            return str(source)
    return None


def _identity(path: Path) -> tuple[int, int] | None:
    """The file a path names (device, inode), through symbolic links; None if absent."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_dev, stat.st_ino
