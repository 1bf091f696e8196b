"""The documentation site builds with warnings as errors, and every public name has its page.

The site is built once, as README.md's command builds it (the gallery runs every example in its
quick mode), through Sphinx's Python API, from a copy of docs/, examples/ and README.md in a
temporary directory: the build writes generated pages next to its sources.
"""
import importlib
import inspect
import io
import re
import shutil
from pathlib import Path

import pytest
from sklearn.base import BaseEstimator

from sphinx.application import Sphinx

import okl

pytestmark = pytest.mark.repository          # builds the repository's docs/ and examples/
ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted(p.stem for p in (ROOT / "examples").glob("*.py"))


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    src = tmp_path_factory.mktemp("src")
    shutil.copytree(ROOT / "docs", src / "docs",
                    ignore=shutil.ignore_patterns("_build", "generated", "auto_examples",
                                                  "sg_execution_times.rst"))
    shutil.copytree(ROOT / "examples", src / "examples")
    shutil.copy(ROOT / "README.md", src / "README.md")
    out = tmp_path_factory.mktemp("html")
    warnings = io.StringIO()
    app = Sphinx(srcdir=src / "docs", confdir=src / "docs", outdir=out,
                 doctreedir=out / ".doctrees", buildername="html",
                 status=None, warning=warnings,
                 freshenv=True, warningiserror=True, keep_going=True)
    app.build()
    assert app.statuscode == 0, warnings.getvalue()
    return out


def test_the_index_links_every_part(site):
    index = (site / "index.html").read_text()
    for page in ("getting-started.html", "guide/index.html", "algorithms.html", "api.html",
                 "auto_examples/index.html", "benchmarks.html", "changelog.html"):
        assert f'href="{page}' in index, page


def test_an_estimator_page_documents_its_methods(site):
    page = (site / "generated" / "okl.OnlineKernelRegressor.html").read_text()
    for text in ("partial_fit", "learn_one", "predict_one", "References", "algorithms.html"):
        assert text in page, text


def test_every_public_name_has_a_page(site):
    estimators = [name for name in okl.__all__ if inspect.isclass(getattr(okl, name))
                  and issubclass(getattr(okl, name), BaseEstimator)]
    assert len(estimators) >= 5
    for name in okl.__all__:
        assert (site / "generated" / f"okl.{name}.html").is_file(), name
    for module in ("stream", "evaluation", "pipeline", "distributed"):
        for name in importlib.import_module(f"okl.{module}").__all__:
            assert (site / "generated" / f"okl.{module}.{name}.html").is_file(), (module, name)


def test_the_algorithm_contract_renders_its_equations_as_math(site):
    page = (site / "algorithms.html").read_text()
    assert page.count('class="math') >= 25
    assert 'id="section-4-3"' in page          # the anchors docstrings and links point to


def test_the_gallery_shows_every_example_with_its_figures(site):
    gallery = (site / "auto_examples" / "index.html").read_text()
    assert len(EXAMPLES) >= 5
    for name in EXAMPLES:
        assert f"{name}.html" in gallery, name
        page = (site / "auto_examples" / f"{name}.html").read_text()
        figures = re.findall(r'<img [^>]*src="(\.\./_images/sphx_glr_[^"]+\.png)"', page)
        assert figures, f"{name}: no figure"
        for figure in figures:
            assert (site / "auto_examples" / figure).stat().st_size > 10_000, figure
