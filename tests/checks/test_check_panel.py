"""A check's result as a notebook shows it: one object, an HTML panel and the same plain text.

The panel says its verdict in a word and with an icon, sets `code` as code and keeps the theme's
text colour on a faint tint of the verdict's colour; the plain text is what nbval compares and what
a terminal prints.
"""

from __future__ import annotations

import re
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import jax
import pytest
from IPython.core.formatters import format_display_data
from test_checks_lesson01 import count_leaves, count_params, leaf_paths

from course_lib.checks import _selfcheck, check
from course_lib.checks._panel import _COLOURS, CheckPanel, Row

pytestmark = pytest.mark.usefixtures("fresh_checks")


class _Text(HTMLParser):
    """The text a reader of an HTML fragment gets, and the text inside its ``code`` elements."""

    def __init__(self) -> None:
        super().__init__()
        self.text, self._in_code = "", 0
        self.code: list[str] = []

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        self._in_code += tag == "code"

    def handle_endtag(self, tag: str) -> None:
        self._in_code -= tag == "code"

    def handle_data(self, data: str) -> None:
        self.text += data
        if self._in_code:
            self.code.append(data)


def _read(fragment: str) -> _Text:
    parser = _Text()
    parser.feed(fragment)
    parser.text = parser.text.strip()
    return parser


def test_a_notebook_gets_both_forms_and_a_terminal_the_same_text(
    shown: list[Any], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """IPython's formatter, which writes a notebook's output, gives the text/plain that nbval
    compares: the very text a terminal prints for the same check."""
    check("01.count_params", count_leaves, strict=False)
    [panel] = shown
    bundle, _ = format_display_data(panel)
    assert set(bundle) == {"text/plain", "text/html"}
    monkeypatch.setattr(_selfcheck, "in_notebook", lambda: False)
    _selfcheck.reset_hints()
    check("01.count_params", count_leaves, strict=False)
    assert capsys.readouterr().out == bundle["text/plain"] + "\n"
    assert bundle["text/plain"].startswith("01.count_params: incorrect (0/2 points); ")


@pytest.mark.parametrize(
    ("answer", "word", "icon"),
    [(count_params, "Passed", "✓"), (count_leaves, "Incorrect", "✗")],
)
def test_the_panel_says_its_verdict_in_a_word_and_an_icon(
    answer: Any, word: str, icon: str, shown: list[Any]
) -> None:
    check("01.count_params", answer, strict=False)
    [panel] = shown
    page = panel._repr_html_()
    read = _read(page).text
    assert read.startswith(f"{icon} {word} 01.count_params"), read
    assert re.search(r'<span aria-hidden="true">[^<]+</span>', page)  # the word is what is read
    assert 'role="status"' in page


def test_not_attempted_sets_its_names_as_code(shown: list[Any]) -> None:
    def stub(tree: Any) -> Any:
        raise NotImplementedError

    check("01.count_params", stub, strict=False)
    [panel] = shown
    read = _read(panel._repr_html_())
    assert "`" not in read.text and "`" in repr(panel)
    assert read.code == ["01.count_params", "count_params", "NotImplementedError"]
    assert read.text.startswith("… Not attempted yet 01.count_params")


def test_the_html_escapes_what_it_shows_and_its_text_reads_as_the_plain_form() -> None:
    panel = CheckPanel(
        exercise="01.x",
        tone="flagged",
        word="flagged, it does not count",
        points="0/1 point",
        rows=(
            Row(text="called `a < b` where <b>x</b> was\nexpected"),
            Row(label="input", text="{'a': <f32>}", code=True),
        ),
    )
    assert repr(panel) == (
        "01.x: flagged, it does not count (0/1 point)\n"
        "  called `a < b` where <b>x</b> was\n  expected\n"
        "  input: {'a': <f32>}"
    )
    read = _read(panel._repr_html_())
    assert "<b>" not in panel._repr_html_().replace("&lt;b&gt;", "")
    assert read.code == ["01.x", "a < b", "{'a': <f32>}"]
    assert read.text.startswith("⚠ Flagged, it does not count 01.x (0/1 point)"), read.text
    for line in repr(panel).replace("`", "").splitlines()[1:]:  # each line under the header
        assert line.strip().lower() in read.text.lower(), line


def test_a_long_input_is_cut_between_words_and_shown_whole_one_key_away(shown: list[Any]) -> None:
    """An input longer than its line: the plain text cuts it at a space, an ellipsis and the
    brackets it leaves open after the last word, within 100 columns; the panel shows that line as
    the summary of a disclosure, which a keyboard opens and a screen reader reads as a button,
    with the whole input inside."""

    def paths_of_small_trees(tree: Any) -> list[str]:  # wrong from the third leaf on
        return leaf_paths(tree) if len(jax.tree.leaves(tree)) < 3 else []

    check("01.leaf_paths", paths_of_small_trees, strict=False)
    [panel] = shown
    whole = panel.rows[-1].text
    line = repr(panel).splitlines()[-1]
    assert line.startswith("  input: ") and len(line) <= 100 < len("  input: " + whole), line
    shown_input = line.removeprefix("  input: ")
    kept, ellipsis, closing = shown_input.rpartition(" …")
    assert ellipsis and closing and set(closing) <= set(")]}"), line
    assert whole.startswith(kept) and whole[len(kept)] == " ", (kept, whole)
    page = panel._repr_html_()
    disclosure = re.search(r"<details[^>]*><summary[^>]*>(.*?)</summary>(.*?)</details>", page)
    assert disclosure is not None, page
    summary, inside = (_read(part).text for part in disclosure.groups())
    assert summary == f"Input: {shown_input}" and inside == whole
    short = CheckPanel(
        exercise="01.x",
        tone="incorrect",
        word="incorrect",
        rows=(Row(label="input", text="[f32[2]]", code=True),),
    )
    assert "<details" not in short._repr_html_()  # a line that fits is shown as it is


def _styles(page: str) -> list[dict[str, str]]:
    """The inline style of each element of ``page``, as a dict of its rules."""
    found = []
    for style in re.findall(r'style="([^"]*)"', page):
        rules = (rule.split(":", 1) for rule in style.split(";") if ":" in rule)
        found.append({name.strip(): value.strip() for name, value in rules})
    return found


def test_lines_wrap_at_spaces_and_keep_their_line_breaks(shown: list[Any]) -> None:
    """Each line of the panel breaks between words (only a word longer than the line is cut), and
    a message's own line breaks stay."""
    check("01.count_params", count_leaves, strict=False)
    [panel] = shown
    box, *lines = _styles(panel._repr_html_())
    assert len(lines) == 1 + len(panel.rows)  # the header and each row
    for rules in lines:
        assert rules["white-space"] == "pre-wrap", rules
        assert (rules["word-break"], rules["overflow-wrap"]) == ("normal", "break-word"), rules
    assert "white-space" not in box  # the line breaks between the parts are not shown


# --- contrast in JupyterLab's light and dark themes -------------------------------------------

THEMES = Path(sys.prefix) / "share/jupyter/lab/themes/@jupyterlab"


def _theme(name: str) -> dict[str, str]:
    css = (THEMES / f"theme-{name}-extension/index.css").read_text()
    return dict(re.findall(r"(--[\w-]+):\s*([^;}]+)", css))


def _colour(value: str, variables: dict[str, str]) -> tuple[float, float, float, float]:
    """An RGBA colour (0-255, alpha 0-1) from a CSS value: a variable, hex, rgba() or a name."""
    value = value.strip()
    variable = re.fullmatch(r"var\((--[\w-]+)(?:,\s*(.+))?\)", value)
    if variable:
        name, fallback = variable.groups()
        return _colour(variables.get(name) or fallback, variables)
    if value == "white":
        return (255, 255, 255, 1)
    if value.startswith("#"):
        digits = value[1:]
        if len(digits) == 3:
            digits = "".join(d * 2 for d in digits)
        r, g, b = (int(digits[i : i + 2], 16) for i in (0, 2, 4))
        return (r, g, b, 1)
    parts = [float(p) for p in re.findall(r"[\d.]+", value)]
    return (parts[0], parts[1], parts[2], parts[3] if len(parts) > 3 else 1)


def _over(top: tuple[float, ...], below: tuple[float, ...], share: float) -> tuple[float, ...]:
    return tuple(share * t + (1 - share) * b for t, b in zip(top[:3], below[:3], strict=True))


def _luminance(rgb: tuple[float, ...]) -> float:
    def channel(c: float) -> float:
        c /= 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(c) for c in rgb[:3])
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def _contrast(one: tuple[float, ...], two: tuple[float, ...]) -> float:
    light, dark = sorted((_luminance(one), _luminance(two)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


@pytest.mark.parametrize("theme", ["light", "dark"])
@pytest.mark.parametrize("tone", sorted(_COLOURS))
def test_the_text_keeps_its_contrast_on_each_tint(theme: str, tone: str) -> None:
    """The panel's words keep the theme's text colour; its background is the theme's with the
    tone's colour mixed in at the share the panel names: at least 4.5:1 in both themes."""
    variables = _theme(theme)
    page = CheckPanel(exercise="01.x", tone=tone, word="x")._repr_html_()  # type: ignore[arg-type]
    mix = re.search(r"color-mix\(in srgb, .+? (\d+)%, transparent\)", page)
    assert mix is not None, page
    share = float(mix.group(1))
    assert "color:" not in page  # no text colour of its own: the theme's
    page_bg = _colour(variables["--jp-layout-color0"], variables)
    text = _colour(variables["--jp-content-font-color1"], variables)
    text_rgb = _over(text, page_bg, text[3])
    tint = _over(_colour(_COLOURS[tone], variables), page_bg, share / 100)  # type: ignore[index]
    assert _contrast(text_rgb, tint) >= 4.5
