"""Shared set-up for running array-api-extra's own test suite with ``bcoo_array``
as a backend: used by ``interop/run_array_api_extra.py`` (the full run) and
``interop/test_array_api_extra_suite.py`` (the CI-sized subset).

No code of array-api-extra is kept in this repository. Its ``tests/`` folder is
copied at run time into a temporary directory, from a git repository of
array-api-extra at the pinned revision (``git archive PINNED_REVISION tests``),
or from a plain folder that holds the tests (e.g. the ``array_api_extra/tests``
folder that the installed wheel ships). Next to it go a ``pytest.ini`` with the
suite's own pytest settings, the plugin ``_xpx_plugin.py`` (the bcoo_array
backend) and, where ``typing_extensions`` is not installed, a one-function shim
of it (the suite only imports ``typing_extensions.override``).
"""

from __future__ import annotations

import importlib.util
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import warnings
from collections import Counter
from pathlib import Path

#: Revision of data-apis/array-api-extra whose tests/ are run: main at
#: "deps: Update pixi tool constraint to >=0.76.1 (#945)", 2026-08-22, the
#: newest commit of the mirror. The installed package is 0.11.5; the mirror's
#: newest tag, v0.11.1, has tests for the pre-refactor layout
#: (``array_api_extra._lib._utils``), which the 0.11.x wheels no longer have,
#: so they cannot even be collected. The tests at this revision are those the
#: 0.11.5 wheel ships (``array_api_extra/tests``) minus the ``nanmean`` tests
#: (a 0.11.5 function) and the ``Backend.MPARRAY`` markers; with NumPy they
#: all pass against 0.11.5.
PINNED_REVISION = "693b257ed3903045fcd5f5fc0cb8d0f07f783581"
PINNED_DESCRIPTION = "main, 'deps: Update pixi tool constraint to >=0.76.1 (#945)', 2026-08-22"

#: The array-api-extra git mirror on this project's machines.
DEFAULT_SOURCE = Path("/work/.mirror/data-apis+array-api-extra/repo")
#: Environment variable naming another source (git repository or tests folder).
SOURCE_ENV = "BCOO_XPX_SOURCE"

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent
PLUGIN = HERE / "_xpx_plugin.py"

BACKENDS = ("numpy", "sparse", "bcoo_array")
OUTCOMES = ("passed", "failed", "error", "skipped", "xfailed", "xpassed")

#: The suite's own [tool.pytest.ini_options] (array-api-extra's pyproject.toml
#: at the pinned revision), minus --showlocals (long reports) and
#: log_cli_level; ``thread_unsafe`` is pytest-run-parallel's marker, declared
#: here because that plugin is not installed and --strict-markers is on.
PYTEST_INI = """\
[pytest]
addopts = -ra --strict-markers --strict-config
filterwarnings = error
markers =
    skip_xp_backend(library, /, *, reason=None): Skip test for a specific backend
    xfail_xp_backend(library, /, *, reason=None, strict=None): Xfail test for a specific backend
    thread_unsafe: pytest-run-parallel marker (plugin not installed)
minversion = 6.0
testpaths = tests
xfail_strict = true
"""

TYPING_EXTENSIONS_SHIM = '''\
"""Stand-in for typing_extensions (not installed): the suite imports only ``override``."""


def override(method):
    return method
'''


class SourceError(RuntimeError):
    """The array-api-extra tests cannot be found at the given source."""


def installed_tests() -> Path | None:
    """The installed array-api-extra's folder when its wheel ships ``tests/main/`` (0.11.5 does), else None."""
    spec = importlib.util.find_spec("array_api_extra")
    if spec is None or not spec.submodule_search_locations:
        return None
    root = Path(next(iter(spec.submodule_search_locations)))
    return root if (root / "tests" / "main" / "conftest.py").is_file() else None


def default_source() -> Path:
    """``$BCOO_XPX_SOURCE``, else the git mirror (pinned revision), else the installed wheel's tests.

    The wheel's tests are the pinned revision's plus the ``nanmean`` tests and
    ``Backend.MPARRAY`` markers of 0.11.5 (see ``PINNED_REVISION``): a fresh
    clone (CI) runs the suite without network access beyond the package
    registry.
    """
    if os.environ.get(SOURCE_ENV):
        return Path(os.environ[SOURCE_ENV])
    if DEFAULT_SOURCE.exists():
        return DEFAULT_SOURCE
    return installed_tests() or DEFAULT_SOURCE


def _git(source: Path, *args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(source), *args], capture_output=True, check=False, **kwargs)


def _git_root(source: Path) -> bool:
    """Whether ``source`` is the top of a git repository (bare or with a work tree)."""
    if not source.is_dir() or shutil.which("git") is None:
        return False
    bare = _git(source, "rev-parse", "--is-bare-repository", text=True)
    if bare.returncode != 0:
        return False
    if bare.stdout.strip() == "true":
        return True
    top = _git(source, "rev-parse", "--show-toplevel", text=True)
    return top.returncode == 0 and Path(top.stdout.strip()).resolve() == source.resolve()


def prepare(source: Path, dest: Path, revision: str = PINNED_REVISION) -> str:
    """Put array-api-extra's ``tests/`` and the harness files into ``dest``.

    Returns a one-line description of what was copied. Raises ``SourceError``
    with the reason when ``source`` has no usable tests.
    """
    source = Path(source).expanduser()
    dest.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(dest / "tests", ignore_errors=True)  # a kept folder (--keep) is refreshed
    if not source.exists():
        raise SourceError(
            f"{source} does not exist: pass a clone of https://github.com/data-apis/array-api-extra "
            f"(git clone https://github.com/data-apis/array-api-extra; the runner extracts tests/ at "
            f"{PINNED_REVISION}) or a folder holding its tests/ (--source PATH, or ${SOURCE_ENV})"
        )
    if _git_root(source):
        commit = _git(source, "rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}", text=True)
        if commit.returncode != 0:
            raise SourceError(
                f"revision {revision} is not in the git repository {source}; "
                f"fetch it (git -C {source} fetch origin) or pass --revision"
            )
        sha = commit.stdout.strip()
        archive = _git(source, "archive", "--format=tar", sha, "tests")
        if archive.returncode != 0:
            raise SourceError(f"git archive {sha} tests failed in {source}: {archive.stderr.decode(errors='replace')}")
        with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
            tar.extractall(dest, filter="data")
        if sha != PINNED_REVISION:
            warnings.warn(
                f"array-api-extra tests at {sha}, not at the pinned revision {PINNED_REVISION}; "
                "results may differ",
                stacklevel=2,
            )
        described = f"{source} at {sha}"
    elif (source / "tests" / "main" / "conftest.py").is_file():
        shutil.copytree(source / "tests", dest / "tests", ignore=shutil.ignore_patterns("__pycache__"))
        described = f"{source / 'tests'} (a folder; revision not checked)"
    elif (source / "main" / "conftest.py").is_file():
        shutil.copytree(source, dest / "tests", ignore=shutil.ignore_patterns("__pycache__"))
        described = f"{source} (a folder; revision not checked)"
    else:
        raise SourceError(
            f"{source} is neither a git repository of array-api-extra nor a folder with its "
            "tests (tests/main/conftest.py or main/conftest.py)"
        )
    if not (dest / "tests" / "main" / "conftest.py").is_file():
        raise SourceError(
            f"no tests/main/conftest.py in the tests taken from {described}: the harness needs the "
            f"tests/main/ layout of array-api-extra's main branch (the pinned {PINNED_REVISION[:12]}); "
            "v0.11.1 and older keep tests/conftest.py and import modules that 0.11.5 no longer has"
        )
    (dest / "pytest.ini").write_text(PYTEST_INI)
    shutil.copy(PLUGIN, dest / "_xpx_plugin.py")
    shutil.copy(HERE / "_xp_plugin_common.py", dest / "_xp_plugin_common.py")  # the plugin's Recorder
    if importlib.util.find_spec("typing_extensions") is None:
        shim = dest / "_shim"
        shim.mkdir(exist_ok=True)
        (shim / "typing_extensions.py").write_text(TYPING_EXTENSIONS_SHIM)
    return described


def build_command(
    dest: Path,
    results: Path,
    *,
    backends: tuple[str, ...] | list[str] = BACKENDS,
    like_sparse: str = "none",
    xfail_file: Path | None = None,
    selection: list[str] | None = None,
    extra: list[str] | None = None,
) -> list[str]:
    """The pytest command line, run with ``cwd=dest``."""
    return [
        sys.executable,
        "-m",
        "pytest",
        *(selection or ["tests/main"]),
        "-c",
        str(dest / "pytest.ini"),
        "--rootdir",
        str(dest),
        "-p",
        "no:cacheprovider",
        "-p",
        "_xpx_plugin",
        f"--xpx-backends={','.join(backends)}",
        f"--xpx-like-sparse={like_sparse}",
        f"--xpx-results={results}",
        *([f"--xpx-xfail-file={xfail_file}"] if xfail_file else []),
        *(extra or []),
    ]


def build_env(
    dest: Path, x64: bool = True, bcoo_path: Path | None = None, auto_densify: bool = False
) -> dict[str, str]:
    """``JAX_ENABLE_X64``; ``PYTHONPATH``: the suite folder (the plugin), the shim,
    and ``bcoo_path`` (a folder holding the ``bcoo_array`` package; default this
    repository); ``BCOO_ARRAY_AUTO_DENSIFY`` unset (the default, so results do not
    depend on the caller's environment) or ``1`` with ``auto_densify``."""
    env = dict(os.environ)
    env["JAX_ENABLE_X64"] = "1" if x64 else "0"
    env.pop("BCOO_ARRAY_AUTO_DENSIFY", None)
    if auto_densify:
        env["BCOO_ARRAY_AUTO_DENSIFY"] = "1"
    paths = [str(dest), str(bcoo_path or REPO_ROOT)]
    if (dest / "_shim").is_dir():
        paths.insert(1, str(dest / "_shim"))
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    # The caller's pytest settings must not leak into the suite's run.
    env.pop("PYTEST_ADDOPTS", None)
    env.pop("PYTEST_PLUGINS", None)
    return env


def read_results(results: Path) -> list[dict]:
    """The plugin's JSON lines, one file or one per pytest-xdist worker (a partial file of a running suite is
    fine)."""
    from _xp_plugin_common import read_records

    return read_records(results)


def count(rows: list[dict], backends: tuple[str, ...] | list[str] = BACKENDS) -> dict[str, Counter]:
    counts = {b: Counter() for b in backends}
    for r in rows:
        counts.setdefault(r["backend"], Counter())[r["outcome"]] += 1
    return counts


def format_counts(counts: dict[str, Counter]) -> str:
    width = max(len(b) for b in counts) if counts else 8
    head = f"{'backend':<{width}} " + " ".join(f"{o:>8}" for o in OUTCOMES) + f" {'total':>8}"
    lines = [head]
    for backend, c in counts.items():
        lines.append(
            f"{backend:<{width}} " + " ".join(f"{c.get(o, 0):>8}" for o in OUTCOMES) + f" {sum(c.values()):>8}"
        )
    return "\n".join(lines)
