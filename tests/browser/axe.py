"""axe-core in the browser tests: the WCAG 2.0 and 2.1 A and AA rules, run on a page of the site or
on a lesson's outputs in JupyterLab.

axe-core is fetched once with ``npm pack``, pinned by its integrity hash, the way the site's own
JavaScript is (`course_tools.authoring.site.fetch_packages`), into ``build/test-vendor/``; the
tests inject it into the page, so nothing is loaded from the internet while they run.

Besides axe's violations, every text node whose contrast axe could not decide ("needs review": a
background it cannot see through, such as a gradient, an image or an overlapping element) is
measured here from the colours the browser computed, and fails below 4.5:1 (3:1 for large text).
"""

from __future__ import annotations

from functools import cache
from typing import Any

from lab_browser import ROOT

from course_tools.authoring.site import VendorPackage, fetch_packages

AXE = VendorPackage(
    "axe-core",
    "4.14.1",
    "sha512-FHfa+lmNjQZfJz1q8wKqIDwC6DExcHt/pkjNQb09a3NPjCKg2rhu5qb2S4r76ASyFNNtuFooJpZe37OgudVGtQ==",
    "MPL-2.0",
    ".",
    ("axe.min.js",),
    "axe-core",
)
WCAG_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]


@cache
def axe_source() -> str:
    """axe-core's script, fetched the first time (needs npm and its registry once)."""
    static = fetch_packages((AXE,), ROOT / "build" / "test-vendor")
    return (static / AXE.target / "axe.min.js").read_text(encoding="utf-8")


_RUN_JS = """async ([context, tags]) => {
    // Colours in the middle of a transition (the page has just changed scheme) are not the
    // page's: end every finite animation first.
    for (const animation of document.getAnimations()) {
        try { animation.finish(); } catch (endless) { /* an infinite one: left running */ }
    }
    const result = await axe.run(context || document, {runOnly: {type: 'tag', values: tags},
                                                       resultTypes: ['violations', 'incomplete']});
    const nodes = (rule) => rule.nodes.map(n => ({target: n.target.join(' '),
        html: n.html.slice(0, 160), summary: (n.failureSummary || '').slice(0, 300)}));
    return {
        violations: result.violations.map(r => ({id: r.id, help: r.help, nodes: nodes(r)})),
        contrast_review: result.incomplete.filter(r => r.id === 'color-contrast')
            .flatMap(r => r.nodes.map(n => n.target.join(' '))),
    };
}"""

# The contrast of an element's text against the first opaque background behind it, from the
# browser's computed colours (blending translucent layers on the way up); null when an image or a
# gradient lies behind it, which only a person can judge.
_CONTRAST_JS = """(selector) => {
    const el = document.querySelector(selector);
    if (!el) return null;
    const parse = (c) => { const m = c.match(/[\\d.]+/g); if (!m) return null;
        return [+m[0], +m[1], +m[2], m.length > 3 ? +m[3] : 1]; };
    const over = (top, bottom) => [0, 1, 2].map(i => top[i] * top[3] + bottom[i] * (1 - top[3]));
    let layers = [];
    for (let node = el; node; node = node.parentElement) {
        const style = getComputedStyle(node);
        if (style.backgroundImage !== 'none') return null;
        const bg = parse(style.backgroundColor);
        if (bg && bg[3] > 0) { layers.push(bg); if (bg[3] >= 1) break; }
    }
    let back = [255, 255, 255];
    for (const layer of layers.reverse()) back = over(layer, [...back, 1]);
    const fg = parse(getComputedStyle(el).color);
    const text = over(fg, [...back, 1]);
    const lum = (c) => { const [r, g, b] = c.map(v => { v /= 255;
        return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); });
        return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
    const [a, b] = [lum(text), lum(back)].sort((x, y) => y - x);
    const size = parseFloat(getComputedStyle(el).fontSize);
    const bold = parseInt(getComputedStyle(el).fontWeight) >= 700;
    const large = size >= 24 || (bold && size >= 18.66);
    return {ratio: (a + 0.05) / (b + 0.05), needed: large ? 3 : 4.5};
}"""


def axe_problems(page: Any, context: Any = None) -> list[str]:
    """What axe finds on ``page`` (or in ``context``, an axe context such as
    ``{"include": [...], "exclude": [...]}``) under the WCAG A and AA rules, one line per node,
    and the "needs review" contrast nodes whose measured contrast is too low; [] when none."""
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.add_script_tag(content=axe_source())
    found = page.evaluate(_RUN_JS, [context, WCAG_AA])
    problems = [
        f"{rule['id']} ({rule['help']}): {node['target']}: {node['html']}"
        + (f" -- {node['summary']}" if node["summary"] else "")
        for rule in found["violations"]
        for node in rule["nodes"]
    ]
    for target in found["contrast_review"]:
        measured = page.evaluate(_CONTRAST_JS, target)
        if measured is not None and measured["ratio"] < measured["needed"]:
            problems.append(
                f"color-contrast (measured, axe could not decide): {target}: "
                f"{measured['ratio']:.2f}:1, needs {measured['needed']}:1"
            )
    return problems
