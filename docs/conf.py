"""Sphinx configuration of okl's documentation site.

Build (offline, warnings are errors):
    python -m sphinx -W --keep-going -b html docs docs/_build/html
"""
import os
import re
import tempfile
from importlib.metadata import version as _version

from docutils import nodes
from sphinx.domains.python import PyXRefRole
from sphinx.util.math import get_node_equation_number

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
default_role = "code-or-link"     # `name` in a docstring: a link to its API page, else code
smartquotes_action = "qe"          # quotes and ellipses, but --quick stays two hyphens
toc_object_entries_show_parents = "hide"

# ---- MyST: the markdown files of docs/ render as they do on GitHub ---------------------------
myst_enable_extensions = ["dollarmath", "colon_fence"]
myst_fence_as_directive = ["math"]      # ```math fences: math on GitHub and here
myst_heading_anchors = 3


def _raw_anchors_to_targets(app, docname, source):
    """`<a id="x"></a>` (GitHub's anchors in docs/*.md) becomes the MyST target `(x)=`."""
    source[0] = re.sub(r'^<a id="([^"]+)"></a>\s*$', r"(\1)=", source[0], flags=re.M)


# Docstrings write formulas in plain text, as docs/algorithms.md does: `|y - f(x)|`, `||f||_K`, and
# fitted attributes such as `n_features_in_`. Outside literals, `|` and a trailing `_` are text here,
# never rST substitutions or hyperlink references.
_LITERAL = re.compile(r"(``.+?``|`[^`]+`_{0,2}|:[\w:]+:`[^`]+`)")
_MARKUP = re.compile(r"\||(?<=\w)_(?![\w`])")


# "docs/algorithms.md, section 4.3" in a docstring links to that section; "docs/budget.md" to the page
_CITATION = re.compile(r"docs/(\w+)\.md(, sections? (\d+)(?:\.(\d+))?(?:-\d+(?:\.\d+)?)?)?")


def _link_citation(match):
    page, where, section, subsection = match.groups()
    if not section:
        return f":doc:`{match.group(0)} </{page}>`"
    label = f"section-{section}" + (f"-{subsection}" if subsection else "")
    return f":ref:`{match.group(0)} <{label}>`"


def _escape_plain_text(line):
    parts = _LITERAL.split(line)
    for i in range(0, len(parts), 2):          # the even parts lie outside literals and roles
        parts[i] = _CITATION.sub(_link_citation, _MARKUP.sub(lambda m: "\\" + m.group(0), parts[i]))
    return "".join(parts)


def _plain_text_formulas(app, what, name, obj, options, lines):
    literal_indent = None                     # inside a literal block: its parent's indentation
    for i, line in enumerate(lines):
        stripped = line.lstrip()
        indent = len(line) - len(stripped)
        if literal_indent is not None:
            if not stripped or indent > literal_indent:
                continue
            literal_indent = None
        if stripped.startswith(".. ") or stripped.endswith("::"):
            literal_indent = indent           # a directive or a literal block: leave its body as is
        if stripped.startswith((">>>", "...", ".. ")) or not stripped:
            continue
        lines[i] = _escape_plain_text(line)


class _CodeOrLink(PyXRefRole):
    """The default role: `partial_fit`, `okl.kernels` link to their pages; `lam`, `X.var()` are code."""

    def run(self):
        self.name = "py:obj"
        return super().run()

    def result_nodes(self, document, env, node, is_ref):
        node["okl_code_or_link"] = True
        return [node], []


def _code_if_unresolved(app, env, node, contnode):
    """A `name` that is no documented object stays code (explicit roles still must resolve)."""
    return contnode if node.get("okl_code_or_link") else None


# ---- Math: MathML written at build time, which browsers render with no script -----------------
# The site reads offline: no MathJax from a CDN (nor any other script from outside the site).
html_math_renderer = "mathml"


def _mathml(latex, display):
    from latex2mathml.converter import convert
    return convert(latex.strip(), display=display)


def _visit_math(self, node):
    self.body.append(f'<span class="math notranslate">{_mathml(node.astext(), "inline")}</span>')
    raise nodes.SkipNode


def _visit_math_block(self, node):
    self.body.append(self.starttag(node, "div", CLASS="math notranslate"))
    if node["number"]:
        self.body.append(f'<span class="eqno">({get_node_equation_number(self, node)})')
        self.add_permalink_ref(node, "Link to this equation")
        self.body.append("</span>")
    self.body.append(_mathml(node.astext(), "block") + "</div>\n")
    raise nodes.SkipNode


def setup(app):
    app.add_html_math_renderer("mathml", (_visit_math, None), (_visit_math_block, None))
    app.add_role("code-or-link", _CodeOrLink(innernodeclass=nodes.literal))
    app.connect("missing-reference", _code_if_unresolved)
    app.connect("source-read", _raw_anchors_to_targets)
    app.connect("autodoc-skip-member", _skip_scikit_learn_members)
    app.connect("autodoc-process-docstring", _plain_text_formulas, priority=600)  # after numpydoc


# ---- API reference -------------------------------------------------------------------------
autosummary_generate = True
autosummary_imported_members = False
autosummary_ignore_module_all = False   # a module's __all__ lists its public names
autodoc_typehints = "none"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
numpydoc_validation_checks = set()
suppress_warnings = [
    "config.cache",      # sphinx_gallery_conf holds a function: the environment is not cached
    "ref.citation",      # numpydoc's References entries that the text does not cite by number
]


def _skip_scikit_learn_members(app, what, name, obj, skip, options):
    """Members inherited from scikit-learn (set_*_request, ...) are documented there."""
    module = getattr(obj, "__module__", None) or ""
    return True if module.startswith("sklearn") else None

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
    "write_computation_times": False,      # its pages load DataTables from a CDN
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
    "navbar_persistent": ["search-button"],
    "header_links_before_dropdown": 7,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": [],
}
html_sidebars = {page: [] for page in ("index", "getting-started", "algorithms", "benchmarks", "changelog")}
html_static_path = []
html_show_sourcelink = False
