"""Where the command line finds Matrix Market files: one lookup shared by ``demo`` and ``bench``.

A command-line argument is either a path to a ``.mtx`` / ``.mtx.gz`` file or
the name of a matrix in a matrix folder (``cage11``, ``cage11.mtx``,
``cage11.mtx.gz``). Folders are searched in this order:

1. ``$BCOO_ARRAY_MATRICES`` (one folder, or several separated by ``os.pathsep``);
2. ``shared/data/matrices`` in the current directory and in each of its parents
   (so ``../shared/data/matrices`` beside a checkout is found from inside it);
3. ``shared/data/matrices`` beside the source tree of an editable install.

Nothing is searched under ``site-packages`` after a regular install: there,
point ``BCOO_ARRAY_MATRICES`` at the folder or pass a path.
"""

from __future__ import annotations

import os
from pathlib import Path

#: Environment variable naming the folder(s) of Matrix Market files.
MATRICES_ENV = "BCOO_ARRAY_MATRICES"
_SUFFIXES = ("", ".mtx", ".mtx.gz")


def matrix_dirs() -> list[Path]:
    """The folders searched for matrix names, in order (only those that exist).

    Returns
    -------
    list of pathlib.Path
        Existing folders, without duplicates: ``$BCOO_ARRAY_MATRICES``, then
        ``shared/data/matrices`` in the working directory and its parents,
        then beside an editable install's source tree.
    """
    found: list[Path] = []
    env = os.environ.get(MATRICES_ENV, "")
    candidates = [Path(p).expanduser() for p in env.split(os.pathsep) if p]
    cwd = Path.cwd().resolve()
    candidates += [d / "shared" / "data" / "matrices" for d in (cwd, *cwd.parents)]
    # bcoo_array/cli/data.py: parents[2] is the source checkout in an editable install.
    source = Path(__file__).resolve().parents[2]
    if (source / "pyproject.toml").is_file():
        candidates += [source / "shared" / "data" / "matrices", source.parent / "shared" / "data" / "matrices"]
    for c in candidates:
        c = c.resolve()
        if c.is_dir() and c not in found:
            found.append(c)
    return found


def find_matrix(spec: str | os.PathLike) -> Path:
    """The Matrix Market file named by ``spec``: a path, or a name in ``matrix_dirs``.

    Parameters
    ----------
    spec : str or os.PathLike
        A file path, or a matrix name with or without ``.mtx`` / ``.mtx.gz``.

    Returns
    -------
    pathlib.Path
        An existing file.

    Raises
    ------
    FileNotFoundError
        If ``spec`` is neither a file nor a name in any searched folder; the
        message lists the folders searched and names ``BCOO_ARRAY_MATRICES``.
    """
    path = Path(spec).expanduser()
    if path.is_file():
        return path
    dirs = matrix_dirs()
    for d in dirs:
        for suffix in _SUFFIXES:
            cand = d / f"{spec}{suffix}"
            if cand.is_file():
                return cand
    where = ", ".join(str(d) for d in dirs) or "no matrix folder found"
    raise FileNotFoundError(
        f"no matrix file {str(spec)!r}: not a path, and not a name in the matrix folders ({where}); "
        f"pass a path to a .mtx/.mtx.gz file or set {MATRICES_ENV} to the folder that holds it")


def default_matrices(names=("cage11", "bcsstk16")) -> list[Path]:
    """The files of ``names`` found in ``matrix_dirs`` (those that are missing are left out)."""
    out = []
    for name in names:
        try:
            out.append(find_matrix(name))
        except FileNotFoundError:
            pass
    return out
