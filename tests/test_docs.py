"""The documentation site (``mkdocs.yml``, ``docs/``).

* Every public name is in the API reference: the names of
  ``bcoo_array.__all__``, ``bcoo_array.linalg.__all__``,
  ``bcoo_array.fft.__all__``, ``bcoo_array.sharded.__all__`` and every public
  method or property of ``BCOOArray`` (the scipy.sparse ones included) are
  named by a ``::: path`` directive of ``docs/api/*.md`` or in the
  ``members:`` list of one.
* The site builds with ``mkdocs build --strict`` (when mkdocs is installed:
  the ``docs`` extra, ``pip install 'bcoo-array[docs]'``, or an executable
  named by ``$BCOO_MKDOCS``), every documented name has an anchor in the
  HTML, no Sphinx role (``:func:``, ...) is left as literal text and no
  ``bool`` annotation renders as the namespace's ``bool_`` dtype.
* The ``python`` code blocks of the guides (``docs/guides/*.md``) run, in
  order, one namespace per guide, with JAX's x64 mode on, and the ``>>>``
  examples of the package's docstrings run as doctests.
* Read statically with the docs' griffe extension (``docs/griffe_bcoo.py``),
  every public function, class and method has a docstring.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import jax
import pytest

import bcoo_array
import bcoo_array.accelerator
import bcoo_array.sharded

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
API_DIR = DOCS / "api"
GUIDES = sorted((DOCS / "guides").glob("*.md"))


def public_names() -> set[str]:
    """Every name the API reference must document, as a dotted path."""
    names = {f"bcoo_array.{n}" for n in bcoo_array.__all__} | {"bcoo_array.sharded"}
    for mod in (bcoo_array.linalg, bcoo_array.fft, bcoo_array.autodiff, bcoo_array.sharded, bcoo_array.accelerator):
        names |= {f"{mod.__name__}.{n}" for n in mod.__all__}
    names |= {f"bcoo_array.BCOOArray.{n}" for n in dir(bcoo_array.BCOOArray) if not n.startswith("_")}
    return names


_DIRECTIVE = re.compile(r"^:::\s+(\S+)\s*$")


def documented_names() -> dict[str, str]:
    """``path -> page`` for every ``::: path`` directive of the API pages and each entry of its
    ``members:`` list (``path.member``)."""
    found: dict[str, str] = {}
    for page in sorted(API_DIR.glob("*.md")):
        lines = page.read_text().splitlines()
        i = 0
        while i < len(lines):
            m = _DIRECTIVE.match(lines[i])
            i += 1
            if not m:
                continue
            path = m.group(1)
            found[path] = page.name
            # The indented YAML options block that follows; members: is a list of "- name" lines.
            in_members = False
            while i < len(lines) and (not lines[i].strip() or lines[i].startswith(" ")):
                text = lines[i].strip()
                if text.startswith("members:"):
                    in_members = True
                    inline = text.removeprefix("members:").strip()
                    if inline.startswith("["):
                        for name in inline.strip("[]").split(","):
                            found[f"{path}.{name.strip()}"] = page.name
                        in_members = False
                    elif inline:  # members: false / true
                        in_members = False
                elif in_members and text.startswith("- "):
                    found[f"{path}.{text[2:].strip()}"] = page.name
                elif text and not text.startswith("- "):
                    in_members = False
                i += 1
    return found


def test_api_reference_names_every_public_name():
    documented = documented_names()
    missing = sorted(public_names() - set(documented))
    assert not missing, f"{len(missing)} public names missing from docs/api/*.md:\n  " + "\n  ".join(missing)


def test_api_reference_names_exist():
    """Every directive names something that exists (a typo renders nothing)."""
    import importlib

    def exists(path: str) -> bool:
        parts = path.split(".")
        for k in range(len(parts), 0, -1):
            try:
                obj = importlib.import_module(".".join(parts[:k]))
            except ImportError:
                continue
            for attr in parts[k:]:
                if not hasattr(obj, attr):
                    return False
                obj = getattr(obj, attr)
            return True
        return False

    absent = sorted(p for p in documented_names() if not exists(p))
    assert not absent, "API pages document names that do not exist:\n  " + "\n  ".join(absent)


def test_no_sphinx_roles_in_the_package():
    """mkdocstrings renders docstrings as Markdown: ``:func:`x``` would show as literal text.
    ``python docs/roles_to_markdown.py`` converts them."""
    role = re.compile(r":(?:py:)?(?:func|meth|class|mod|attr|data|obj|exc):`[^`]+`")
    found = [f"{p.relative_to(ROOT)}:{n}: {m.group(0)}"
             for p in sorted((ROOT / "bcoo_array").rglob("*.py"))
             for n, line in enumerate(p.read_text().splitlines(), 1) for m in role.finditer(line)]
    assert not found, "Sphinx roles (run python docs/roles_to_markdown.py):\n  " + "\n  ".join(found)


def test_api_pages_are_in_the_nav():
    nav = (ROOT / "mkdocs.yml").read_text()
    absent = [p.name for p in API_DIR.glob("*.md") if f"api/{p.name}" not in nav]
    absent += [p.name for p in GUIDES if f"guides/{p.name}" not in nav]
    assert not absent, f"pages not in mkdocs.yml's nav: {absent}"


# --------------------------------------------------------------------------- the built site


def _mkdocs_command() -> list[str]:
    exe = os.environ.get("BCOO_MKDOCS")
    if exe:
        return [exe]
    pytest.importorskip("mkdocs", reason="the docs extra is not installed (pip install 'bcoo-array[docs]')")
    pytest.importorskip("mkdocstrings_handlers.python", reason="mkdocstrings[python] is not installed")
    return [sys.executable, "-m", "mkdocs"]


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    proc = subprocess.run([*_mkdocs_command(), "build", "--strict", "-f", str(ROOT / "mkdocs.yml"), "-d", str(out)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stdout}\n{proc.stderr}"
    return out


def _html(site: Path) -> dict[str, str]:
    return {str(p.relative_to(site)): p.read_text() for p in site.rglob("*.html")}


_ROLE = re.compile(r":(func|meth|class|mod|attr|data|obj|exc):")


def test_site_has_no_sphinx_roles(site):
    found = {page: sorted(set(m.group(0) for m in _ROLE.finditer(text))) for page, text in _html(site).items()}
    found = {k: v for k, v in found.items() if v}
    assert not found, f"literal Sphinx roles in the rendered site: {found}"


def test_cross_references_render_as_links(site):
    """A Markdown cross-reference autorefs could not resolve is left as ``[`name`][target]`` text."""
    left = {page: re.findall(r"</code>\]\[[\w.]*\]", text) for page, text in _html(site).items()}
    left = {k: v for k, v in left.items() if v}
    assert not left, f"unresolved cross-references: {left}"


def test_bool_annotations_render_as_bool(site):
    """``x: bool`` resolved to the namespace's ``bool`` dtype rendered as ``bool_``."""
    bad = {page: text.count('title="bcoo_array._dtypes.bool_"') for page, text in _html(site).items()}
    bad = {k: v for k, v in bad.items() if v}
    assert not bad, f"bool annotations rendered as bcoo_array's bool_ dtype: {bad}"


def test_every_public_name_has_an_anchor(site):
    html = "\n".join(_html(site).values())
    ids = set(re.findall(r'id="(bcoo_array[\w.]*)"', html))
    missing = sorted(public_names() - ids)
    assert not missing, f"{len(missing)} public names without a rendered entry:\n  " + "\n  ".join(missing)


def test_generated_functions_have_docstrings(site):
    """The element-wise functions and FFTs are made by factories; griffe must see their docstrings."""
    pages = _html(site)
    assert "Exponential of each element" in pages[os.path.join("api", "elementwise", "index.html")]
    assert "N-dimensional discrete Fourier transform" in pages[os.path.join("api", "fft", "index.html")]


def test_generator_scripts_are_not_published(site):
    assert not list(site.rglob("*.py"))


# --------------------------------------------------------------------------- executed examples


def python_blocks(page: Path) -> list[tuple[int, str]]:
    """``(line, code)`` of each fenced ```python block of a Markdown page."""
    blocks, lines, i = [], page.read_text().splitlines(), 0
    while i < len(lines):
        fence = re.match(r"^(\s*)(`{3,})\s*python\s*$", lines[i])
        i += 1
        if not fence:
            continue
        indent, ticks, start, body = fence.group(1), fence.group(2), i, []
        while i < len(lines) and lines[i].strip() != ticks:
            body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i])
            i += 1
        i += 1
        blocks.append((start + 1, textwrap.dedent("\n".join(body))))
    return blocks


@pytest.mark.parametrize("page", GUIDES, ids=[p.stem for p in GUIDES])
def test_guide_examples_run(page, monkeypatch, tmp_path):
    blocks = python_blocks(page)
    if not blocks:
        pytest.skip(f"{page.name} has no python blocks")
    monkeypatch.chdir(tmp_path)  # examples that write files write them here
    previous = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    try:
        namespace: dict = {"__name__": f"docs_{page.stem}"}
        for line, code in blocks:
            exec(compile(code, f"{page}:{line}", "exec"), namespace)  # noqa: S102 - the documentation's own code
    finally:
        jax.config.update("jax_enable_x64", previous)


def test_mkdocs_yml_excludes_scripts():
    assert "*.py" in (ROOT / "mkdocs.yml").read_text()


def test_docs_extra_builds_the_site():
    """The docs extra names what mkdocs.yml uses."""
    pyproject = (ROOT / "pyproject.toml").read_text()
    extra = pyproject.split("\ndocs = [", 1)[1].split("\n]", 1)[0]
    for package in ("mkdocs-material", "mkdocstrings[python]"):
        assert package in extra, f"{package} missing from the docs extra"


def test_griffe_sees_every_docstring():
    """Read statically as mkdocstrings reads it (with the docs' griffe extension), every public
    function, class and method has a docstring: generated functions and ``f.__doc__ = ...``
    assignments included."""
    griffe = pytest.importorskip("griffe")
    sys.path.insert(0, str(DOCS))
    try:
        from griffe_bcoo import BcooArrayDocs
    finally:
        sys.path.remove(str(DOCS))
    package = griffe.load("bcoo_array", search_paths=[str(ROOT)], allow_inspection=False,
                          extensions=griffe.load_extensions(BcooArrayDocs()))
    bare = []
    for path in sorted(public_names()):
        obj = package[path.removeprefix("bcoo_array.")] if path != "bcoo_array" else package
        target = obj.final_target if obj.is_alias else obj
        if target.kind in (griffe.Kind.FUNCTION, griffe.Kind.CLASS, griffe.Kind.MODULE) and not (
                target.docstring and target.docstring.value.strip()):
            bare.append(path)
    assert not bare, "public names griffe sees without a docstring:\n  " + "\n  ".join(bare)


def _modules_with_examples() -> list[str]:
    names = []
    for path in sorted((ROOT / "bcoo_array").rglob("*.py")):
        if ">>> " in path.read_text():
            rel = path.relative_to(ROOT).with_suffix("")
            parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
            names.append(".".join(parts))
    return names


@pytest.mark.parametrize("modname", _modules_with_examples())
def test_docstring_examples_run(modname):
    """The ``>>>`` examples of the package's docstrings (rendered on the API pages) run as doctests."""
    import doctest
    import importlib

    module = importlib.import_module(modname)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    tests = [t for t in finder.find(module, modname) if t.examples]
    assert tests
    for test in tests:
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} doctest examples failed in {modname}"
