"""Sphinx configuration of the course's website; `make site` builds it (see
course_tools/authoring/site.py). The pages are the committed notebooks with their saved outputs:
nothing is executed.

The source folder is the course folder itself (``sphinx-build -c docs . OUT``), so that the
notebooks' links to each other (``01_what_is_a_pytree.ipynb``, ``../exercises/...``) resolve as
they do in Jupyter; `include_patterns` picks the pages: every notebook in ``notebooks/`` and
``exercises/`` and the pages in ``docs/``. ``solutions/`` is never read.
"""

from __future__ import annotations

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(DOCS / "_ext"))

from course_tools.authoring.site import SITE_PAGES, site_repository, vendor_static

project = "pytree-course"
author = "the pytree-course authors"
copyright = "the pytree-course authors, Apache-2.0"
html_title = "pytree-course: JAX pytrees, hands on"

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx_copybutton",
    "course_site",
]
root_doc = "docs/index"
include_patterns = list(SITE_PAGES)
# Folders Sphinx need not walk (only include_patterns decide what is a page).
exclude_patterns = [".*", "build", "*.egg-info", "**/.ipynb_checkpoints", "solutions"]

# Markdown (pages and notebook cells): `$...$` math is used in the lessons.
myst_enable_extensions = ["dollarmath"]

# `[text](page.md#a-heading)` links resolve to headings up to level 3 as GitHub reads them: the
# pages in docs/ are read there too, from README.md's links.
myst_heading_anchors = 3
# Show the prose exactly as the notebooks have it (no curly quotes), as nbval and the tests read it.
smartquotes = False

# Notebooks: render the committed outputs, run nothing. (They hold no error outputs: a cell that
# shows an error prints it, course_lib/_shown_errors.py.)
nb_execution_mode = "off"
nb_merge_streams = True
nb_custom_formats = {".ipynb": ["course_site.site_notebook", {}, False]}

# Everything a page loads is served by the site (fetched once from npm: vendor_static).
html_static_path = ["_static", str(vendor_static(ROOT))]
# The start page is docs/index.html; index.html at the top of the site sends the browser there.
html_extra_path = ["_root"]
nb_ipywidgets_js = {
    "vendor/requirejs/require.js": {},
    # Where the widget manager finds its fonts, and MathJax 3 for its labels.
    "course-widgets.js": {},
    # about:blank/ as the CDN: a widget module that is not bundled is never fetched from outside.
    "vendor/html-manager/embed-amd.js": {"data-jupyter-widgets-cdn": "about:blank/"},
}
mathjax_path = "vendor/mathjax/tex-mml-chtml.js"
html_css_files = ["course.css"]
# docs/_templates/search-button-field.html replaces the theme's search button: its
# accessible name is the text it shows.
templates_path = ["_templates"]

# The API page: docstrings as reST with `name` as a code reference; the examples in them are the
# doctests that `make test` runs.
default_role = "py:obj"
autodoc_member_order = "groupwise"
autodoc_typehints = "signature"

# The repository that the Binder and Colab links of the lesson and exercise pages open
# (course_site): $COURSE_REPOSITORY_URL, which `site.build` sets from its argument, else
# [project.urls] Repository in pyproject.toml (`site_repository`). Empty: no launch links.
_repository = site_repository(ROOT)
course_repository_url = "" if _repository is None else _repository.url

html_theme = "sphinx_book_theme"
html_theme_options = {
    "use_download_button": True,
    "use_fullscreen_button": False,
    "use_repository_button": False,
    "show_toc_level": 2,
    "navigation_with_keys": False,
    # pydata-sphinx-theme fills an unset navbar_persistent with its search field, and with it
    # draws its own top bar above the book theme's: a second search box on wide screens, and a
    # hidden copy of the menu button that comes first in the page, which both themes' scripts
    # take for the menu button (`querySelector(".primary-toggle")`), so that the visible one did
    # nothing. Empty, there is no such bar; the search field stays in the sidebar and the search
    # button in the article's header.
    "navbar_persistent": [],
}
# Light or dark as the reader's system says (without it, the theme logs a console error on a
# first visit, when the browser has no stored choice).
html_context = {"default_mode": "auto"}
# _sources/notebooks/01_....ipynb is the committed notebook itself: the "download" link.
html_sourcelink_suffix = ""
html_last_updated_fmt = None
