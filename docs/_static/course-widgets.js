// Loaded on pages with widgets, after require.js and before the widget manager (embed-amd.js).
(function () {
  "use strict";
  // The widget manager's bundles load their fonts from beside their own module's URL, which
  // require.js derives from the module's name ("@jupyter-widgets/controls"): beside the page,
  // where there is nothing. Map the names to the vendored folder, where the fonts are.
  var assets = new URL("vendor/html-manager/", document.currentScript.src).href;
  var paths = { "@jupyter-widgets/html-manager/dist": assets.slice(0, -1) };
  ["base", "base7", "controls", "controls7", "html-manager", "output"].forEach(function (name) {
    paths["@jupyter-widgets/" + name] = assets + name;
  });
  window.require.config({ paths: paths });
  window.__jupyter_widgets_assets_path__ = assets;

  // The widget manager typesets widget labels with the MathJax 2 call MathJax.Hub.Queue; the site
  // uses MathJax 3, which has no Hub. Once MathJax 3 is on the page (its script is deferred, so it
  // has run by DOMContentLoaded), give it that one call, done with MathJax 3's typesetPromise.
  document.addEventListener("DOMContentLoaded", function () {
    var mathjax = window.MathJax;
    if (!mathjax || mathjax.Hub || !mathjax.version) return;
    mathjax.Hub = {
      Queue: function (job) {
        var element = Array.isArray(job) ? job[2] : undefined;
        var typeset = function () {
          return mathjax.typesetPromise ? mathjax.typesetPromise(element ? [element] : undefined) : null;
        };
        if (mathjax.startup && mathjax.startup.promise) mathjax.startup.promise.then(typeset);
        else typeset();
      },
    };
  });
})();
