"""Sphinx configuration of okl's documentation site.

Build (offline, warnings are errors):
    python -m sphinx -W --keep-going -b html docs docs/_build/html
"""
import os
import re
import tempfile
from importlib.metadata import version as _version

project = "okl"
author = "the okl developers"
copyright = "the okl developers"
release = _version("okl")
version = release

extensions = [
    "myst_parser",
    "numpydoc",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx_gallery.gen_gallery",
    "matplotlib.sphinxext.plot_directive",
]

root_doc = "index"
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
exclude_patterns = ["_build", "auto_examples/*.ipynb", "auto_examples/*.py",
                    "auto_examples/*.zip", "auto_examples/*.json"]
templates_path = ["_templates"]

# Every cross-reference must resolve; the few third-party types docstrings name
# are listed here (no intersphinx: the build never touches the network).
nitpicky = True
nitpick_ignore_regex = [
    ("py:class", r"(numpy|np|scipy|sklearn|pandas|river|dask|distributed)\..*"),
    ("py:class", r"(array-like|sparse matrix|ndarray|callable|optional|default.*|of shape.*)"),
]
default_role = "literal"          # `name` in a docstring is code, as in scikit-learn

# ---- MyST: the markdown files of docs/ render as they do on GitHub ---------------------------
myst_enable_extensions = ["dollarmath", "colon_fence"]
myst_fence_as_directive = ["math"]      # ```math fences: math on GitHub and here
myst_heading_anchors = 3


def _raw_anchors_to_targets(app, docname, source):
    """`<a id="x"></a>` (GitHub's anchors in docs/*.md) becomes the MyST target `(x)=`."""
    source[0] = re.sub(r'^<a id="([^"]+)"></a>\s*$', r"(\1)=", source[0], flags=re.M)


def setup(app):
    app.connect("source-read", _raw_anchors_to_targets)


# ---- API reference -------------------------------------------------------------------------
autosummary_generate = True
autosummary_imported_members = False
autodoc_typehints = "none"
autodoc_default_options = {"inherited-members": False}
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
numpydoc_validation_checks = set()

# ---- Gallery: examples/ run in their quick modes; the figures are their own output ----------
_figures = tempfile.mkdtemp(prefix="okl-gallery-")     # the PNGs the scripts write themselves


def _quick_argv(gallery_conf, script_vars):
    """Command-line arguments of each example in the gallery: its quick mode."""
    name = os.path.splitext(os.path.basename(script_vars["src_file"]))[0]
    argv = ["--quick", "--out", os.path.join(_figures, name + ".png")]
    if name == "shen_dietterich_drift":
        argv += ["--out-features", os.path.join(_figures, name + "_features.png")]
    return argv


sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"\.py$",          # run every example
    "reset_argv": _quick_argv,
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    "plot_gallery": "True",
    "matplotlib_animations": False,
    "show_memory": False,
    "min_reported_time": 1,
}

# ---- Plots of the getting-started page (the demo) --------------------------------------------
plot_include_source = True
plot_html_show_source_link = False
plot_html_show_formats = False
plot_formats = [("png", 100)]

# ---- HTML ----------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"okl {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "header_links_before_dropdown": 6,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": [],
}
html_sidebars = {"index": [], "changelog": [], "benchmarks": []}
html_static_path = []
html_show_sourcelink = False
