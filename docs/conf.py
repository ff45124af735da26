"""Sphinx configuration of the weakkernels documentation site (``make docs``).

The site builds offline (no intersphinx, no remote assets) with warnings as
errors (``-W`` in the Makefile): the user guide (MyST markdown), the API
reference (autosummary + numpydoc over the package's docstrings), the gallery
(sphinx-gallery runs ``examples/plot_*.py`` at build time) and the benchmark
pages, whose tables are drawn from the result files they name
(``benchmarks/pages.py``'s renderers, expanded in :func:`_expand_tables`).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import weakkernels

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT / "benchmarks"))  # pages.py: the table renderers

project = "weakkernels"
author = "the weakkernels developers"
copyright = "the weakkernels developers"
release = version = weakkernels.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    "myst_parser",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "fidelity.md", "sg_execution_times.rst",
                    "auto_examples/sg_execution_times.rst",
                    "auto_examples/*.ipynb", "auto_examples/*.py",
                    "auto_examples/*.zip", "auto_examples/*.md5",
                    "auto_examples/*.json"]
templates_path = ["_templates"]
myst_heading_anchors = 3
suppress_warnings = ["myst.header"]

# API reference: one page per public name, its members listed by numpydoc
autosummary_generate = True
autodoc_default_options = {"members": False, "inherited-members": False}
autodoc_typehints = "none"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

# The gallery: every examples/plot_*.py runs at build time (small data, one
# thread), its figures embedded in its page.
sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    "abort_on_example_error": True,
    "only_warn_on_example_error": False,
    "show_memory": False,
    # the timings page would load jQuery and DataTables from a CDN
    "write_computation_times": False,
    "image_scrapers": ("matplotlib",),
    "matplotlib_animations": False,
    "reset_modules": ("matplotlib",),
}
# a subset of the gallery (the docs test's fast build): WK_GALLERY_FILTER=regex
if os.environ.get("WK_GALLERY_FILTER"):
    sphinx_gallery_conf["filename_pattern"] = os.environ["WK_GALLERY_FILTER"]

html_theme = "pydata_sphinx_theme"
html_title = "weakkernels"
html_static_path = []
html_theme_options = {
    "navigation_with_keys": False,
    "show_prev_next": True,
    "header_links_before_dropdown": 6,
    "icon_links": [],
    "footer_start": ["copyright"],
    "footer_end": [],
}
html_show_sourcelink = False
html_copy_source = False


def _expand_tables(app, docname, source):
    """Replace each ``<!-- table ... -->`` directive of a benchmark page by the
    table its renderer draws from the result file it names."""
    if docname.startswith("benchmarks/"):
        import pages

        source[0] = pages.expand(source[0])


def setup(app):
    app.connect("source-read", _expand_tables)
