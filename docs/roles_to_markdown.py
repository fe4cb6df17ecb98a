"""Convert Sphinx roles in ``bcoo_array/`` docstrings to Markdown for mkdocstrings.

Usage (from the repository root)::

    python docs/roles_to_markdown.py

``:func:`x```, ``:meth:``, ``:class:``, ``:mod:``, ``:attr:``, ``:data:``,
``:obj:``, ``:exc:`` render as literal text in the mkdocs site. A role whose
target is a documented public name (fully qualified, or a bare name resolved
in the module's public namespace) becomes an autorefs cross-reference,
``[`x`][]`` or ``[`short`][bcoo_array.full.path]``; anything else (private
helpers, jax/numpy/scipy objects) becomes ``` ``x`` ```. Idempotent; run it
after merging code that adds roles (``tests/test_docs.py`` fails on them).
"""

import os
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.chdir(ROOT)
#: Sphinx roles, with an optional ``py:`` domain.
ROLE = re.compile(r":(?:py:)?(func|meth|class|mod|attr|data|obj|exc|ref):`([^`]+)`")

#: Modules (under bcoo_array/) whose bare names are those of the namespace.
PUBLIC_FILES = {
    "_array_base", "_array_object", "_scipy_methods", "_creation_functions", "_data_type_functions",
    "_elementwise_functions", "_indexing_functions", "_linear_algebra_functions", "_manipulation_functions",
    "_searching_functions", "_set_functions", "_sorting_functions", "_statistical_functions",
    "_utility_functions", "fft", "io", "_relayout", "_scipy_functions", "_info", "__init__",
}


def documented() -> set[str]:
    """The public names the API reference documents (as in tests/test_docs.py)."""
    import bcoo_array
    import bcoo_array.sharded

    names = {f"bcoo_array.{n}" for n in bcoo_array.__all__}
    for mod in (bcoo_array.linalg, bcoo_array.fft, bcoo_array.autodiff, bcoo_array.sharded):
        names |= {f"{mod.__name__}.{n}" for n in mod.__all__}
    names |= {f"bcoo_array.BCOOArray.{n}" for n in dir(bcoo_array.BCOOArray) if not n.startswith("_")}
    return names


def prefixes(path: pathlib.Path) -> list[str]:
    """Where a bare name in this file is looked up."""
    parts = path.relative_to("bcoo_array").with_suffix("").parts
    if parts[0] == "sharded":
        return ["bcoo_array.sharded."]
    if parts[0] == "linalg":
        return ["bcoo_array.linalg."]
    if parts[0] == "_convert":
        return ["bcoo_array."]
    if parts[0] == "fft":
        return ["bcoo_array.fft.", "bcoo_array."]
    if parts[0] in ("_array_base", "_array_object", "_scipy_methods"):
        return ["bcoo_array.BCOOArray.", "bcoo_array."]
    if len(parts) == 1 and parts[0] in PUBLIC_FILES:
        return ["bcoo_array."]
    return []


def convert(path: pathlib.Path, names: set[str]) -> int:
    pre = prefixes(path)

    def sub(m: re.Match) -> str:
        target = m.group(2).strip()
        tilde = target.startswith("~")
        t = target.lstrip("~")
        short = t.rsplit(".", 1)[-1]
        disp = short if tilde else t
        full = None
        if not t.startswith("."):
            if t.startswith("bcoo_array."):
                cands = [t]
            elif t.startswith("BCOOArray."):
                cands = ["bcoo_array." + t]
            elif t.startswith(("ShardedBCOOArray", "sharded.")):
                cands = ["bcoo_array.sharded." + t.removeprefix("sharded.")]
            else:
                cands = [p + t for p in pre]
            full = next((c for c in cands if c in names), None)
        if full:
            return f"[`{disp}`][]" if disp == full else f"[`{disp}`][{full}]"
        return f"``{short if tilde else disp}``"

    text = path.read_text()
    new, count = ROLE.subn(sub, text)
    if new != text:
        path.write_text(new)
    return count


def main() -> None:
    names = documented()
    total = sum(convert(p, names) for p in sorted(pathlib.Path("bcoo_array").rglob("*.py")))
    print(f"{total} roles converted")


if __name__ == "__main__":
    main()
