"""What the course's website adds to Sphinx and myst-nb: how a course notebook is read for its
page, and the Binder and Colab links of the lesson and exercise pages.

The notebook files are never changed; each page's "download" link serves the committed file.
Only the copy that myst-nb renders is adjusted, by `site_notebook`:

* the navigation cell's "Contents" link goes to the site's start page instead of README.md;
* the "Open in Colab" badge (`make navigation` adds one when the course has a repository) is left
  out: its image would load from outside the site, and the page has its own Colab link;
* each ``### Pitfall N: ...`` heading gets the label ``pitfall-N`` (`pitfall_anchor`), which the
  pitfall index links (and which gives every pitfall a stable address, ``...html#pitfall-N``),
  and a main index entry "Pitfall N", which the site's search ranks first for that query;
* a code cell whose source is hidden in Jupyter (``jupyter.source_hidden``) gets the
  ``hide-input`` tag, myst-nb's equivalent (it ignores ``source_hidden``), or, when it shows
  nothing (the setup cell where the course is installed), ``remove-cell``;
* under each widget a line says that it is live in Jupyter: the page renders the widget from the
  state saved in the notebook, and without a kernel nothing answers when it is moved;
* a picture's text alternative becomes its ``<img>``'s ``alt``: the ``alt`` that IPython keeps in
  an image output's metadata (`course_lib.viz`'s drawings write their description there) goes to
  the cell's ``mystnb.image.alt``, where myst-nb reads it; a plot drawn in the lesson's own code has
  it in its cell's metadata already (`image_alt` says which one a cell gets).

The launch links (`course_tools.authoring.site.launch_links`, which takes them from
`course_tools.authoring.launch`) go into the theme's launch menu, the rocket at the top of the page,
for the repository that ``course_repository_url`` in ``docs/conf.py`` names; there are none when
it is empty.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import nbformat
from nbformat import NotebookNode
from sphinx.application import Sphinx

from course_tools.authoring.launch import parse_repository, with_badge
from course_tools.authoring.navigation import is_navigation, pitfall_anchor, pitfall_headings
from course_tools.authoring.site import image_alt, launch_links

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_NOTE = (
    '<p class="course-widget-note">Live in Jupyter: this widget needs a running kernel. Here it '
    "shows the state saved with the notebook, and moving it changes nothing; open the notebook "
    "with <code>make lab</code> to use it.</p>"
)
START_PAGE = "../docs/index.md"


def _with_pitfall_labels(markdown: str) -> str:
    lines = []
    for line in markdown.splitlines():
        for number, _ in pitfall_headings(line):
            # A main index entry: a search for "Pitfall 17" finds this heading first (Sphinx's
            # search drops a query's bare numbers from its full-text terms).
            lines += ["", "```{index} !Pitfall " + str(number), "```", ""]
            lines += [f"({pitfall_anchor(number)})="]
        lines.append(line)
    return "\n".join(lines)


def _widget_note() -> NotebookNode:
    return nbformat.v4.new_output("display_data", data={"text/html": WIDGET_NOTE})


def site_notebook(text: str) -> NotebookNode:
    """Read a course notebook as its page shows it (see the module docstring); myst-nb's reader."""
    nb = nbformat.reads(text, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            if is_navigation(cell):
                cell.source = cell.source.replace("](../README.md)", f"]({START_PAGE})")
            cell.source = _with_pitfall_labels(with_badge(cell.source, None))
        elif cell.cell_type == "code":
            if cell.metadata.get("jupyter", {}).get("source_hidden"):
                tags = cell.metadata.setdefault("tags", [])
                tags.append("hide-input" if cell.get("outputs") else "remove-cell")
            alt = image_alt(cell)
            if alt:
                cell.metadata.setdefault("mystnb", {}).setdefault("image", {})["alt"] = alt
            outputs = []
            for output in cell.get("outputs", []):
                outputs.append(output)
                if WIDGET_VIEW in output.get("data", {}):
                    outputs.append(_widget_note())
            cell.outputs = outputs
    return nb


def _add_launch_links(
    app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any
) -> None:
    """Put the page's launch links in sphinx-book-theme's launch menu, as its own
    ``launch_buttons`` option would (that one writes Binder addresses of another form)."""
    if pagename not in app.env.all_docs:
        return  # the search page, the index
    url = app.config.course_repository_url
    path = Path(app.env.doc2path(pagename, False)).as_posix()
    links = launch_links(parse_repository(url) if url else None, path)
    if not links:
        return
    icons = {"Binder": "_static/images/logo_binder.svg", "Colab": "_static/images/logo_colab.png"}
    buttons = [
        {
            "type": "link",
            "text": text,
            "tooltip": f"Launch on {text}",
            "icon": icons[text],
            "url": href,
        }
        for text, href in links
    ]
    context["header_buttons"].append(
        {
            "type": "group",
            "tooltip": "Launch interactive content",
            "icon": "fas fa-rocket",
            "buttons": buttons,
            "label": "launch-buttons",
        }
    )


def _drop_namedtuple_field_docs(
    app: Sphinx, what: str, name: str, obj: Any, options: Any, lines: list[str]
) -> None:
    """The states' NamedTuple fields have only Python's own "Alias for field number N"."""
    text = [line for line in lines if line.strip()]
    if len(text) == 1 and re.fullmatch(r"Alias for field number \d+", text[0].strip()):
        lines.clear()


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_config_value("course_repository_url", "", "html", types=[str])
    app.connect("autodoc-process-docstring", _drop_namedtuple_field_docs)
    # After the theme's prep_header_buttons (500), before its own buttons: the menu comes first.
    app.connect("html-page-context", _add_launch_links, priority=501)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
