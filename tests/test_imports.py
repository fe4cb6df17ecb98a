"""The lean core: ``import bcoo_array`` pulls in no optional library, and the CLI imports.

Each check runs in a fresh interpreter (``sys.executable``) with this
repository first on ``sys.path``, so modules imported by the test session
itself (hypothesis, pydata-sparse, ...) do not hide what the package imports.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: Optional (extras-only) or CLI-only libraries that ``import bcoo_array`` must not import.
NOT_IMPORTED = ("sparse", "numba", "llvmlite", "matplotlib", "array_api_compat", "click", "rich", "sklearn",
                "hypothesis")


def _run(args: list[str]) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True)


def test_import_bcoo_array_imports_no_optional_library():
    code = textwrap.dedent(f"""
        import sys
        import bcoo_array
        assert bcoo_array.__file__.startswith({str(ROOT)!r}), bcoo_array.__file__
        names = {NOT_IMPORTED!r}
        loaded = sorted(n for n in sys.modules if n.split(".")[0] in names)
        print("LOADED", loaded)
        sys.exit(1 if loaded else 0)
    """)
    proc = _run(["-c", code])
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_cli_package_imports():
    code = textwrap.dedent(f"""
        import bcoo_array.cli
        import bcoo_array.cli.bench
        import bcoo_array.cli.demo
        from bcoo_array.cli import main
        assert bcoo_array.cli.__file__.startswith({str(ROOT)!r}), bcoo_array.cli.__file__
        assert sorted(main.commands) == ["bench", "demo", "info"], sorted(main.commands)
        assert callable(bcoo_array.cli.demo.run) and callable(bcoo_array.cli.bench.run_case)
    """)
    proc = _run(["-c", code])
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_python_m_bcoo_array_help():
    proc = _run(["-m", "bcoo_array", "--help"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "demo" in proc.stdout and "bench" in proc.stdout
