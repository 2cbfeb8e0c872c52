/* Search results without raw TeX.

   Sphinx's search (searchtools.js) shows a snippet of each page it finds, taken from the text of
   the page's HTML. There a formula is still its TeX source (MathJax typesets it only in the
   browser), so snippets read "\lVert\res(X)\rVert". Before the snippets are made, this replaces
   every formula in the fetched page by a plain-text reading of it: commands become the symbols
   they stand for (or go), braces go. Loaded on every page (Jupyter Book adds _static/*.js); it
   acts only where the search is. */
(function () {
  const SYMBOLS = {
    lVert: "‖", rVert: "‖", Vert: "‖", lvert: "|", rvert: "|", le: "≤", leq: "≤", ge: "≥", geq: "≥",
    ne: "≠", approx: "≈", sim: "∼", to: "→", infty: "∞", cdot: "·", cdots: "⋯", dots: "…", ldots: "…",
    times: "×", sum: "∑", prod: "∏", sqrt: "√", top: "ᵀ", in: "∈", alpha: "α", beta: "β", gamma: "γ",
    delta: "δ", Delta: "Δ", varepsilon: "ε", epsilon: "ε", kappa: "κ", lambda: "λ", mu: "μ", nu: "ν",
    rho: "ρ", sigma: "σ", tau: "τ", pi: "π", res: "res", SA: "SA", SAN: "SAN", LN: "LN", softmax: "softmax",
    log: "log", exp: "exp", max: "max", min: "min", tanh: "tanh", sinh: "sinh", quad: " ", qquad: " ",
  };
  function plain(tex) {
    return tex
      .replace(/^\\\(|\\\)$|^\\\[|\\\]$|^\$+|\$+$/g, "")
      .replace(/\\(?:mathbf|mathrm|mathbb|operatorname|text|textrm|boldsymbol)\s*\{([^{}]*)\}/g, "$1")
      .replace(/\\frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}/g, "($1)/($2)")
      .replace(/\\([A-Za-z]+)/g, (m, name) => (name in SYMBOLS ? SYMBOLS[name] : ""))
      .replace(/\\[,;:!]/g, " ")
      .replace(/[{}]/g, "")
      .replace(/\s+/g, " ")
      .trim();
  }
  function patch() {
    if (typeof Search === "undefined" || !Search.htmlToText || Search.htmlToText.rankcollapse) return;
    const original = Search.htmlToText;
    const withoutTex = (htmlString, anchor) => {
      const doc = new DOMParser().parseFromString(htmlString, "text/html");
      for (const el of doc.querySelectorAll("span.math, div.math")) el.textContent = " " + plain(el.textContent) + " ";
      return original(doc.documentElement.outerHTML, anchor);
    };
    withoutTex.rankcollapse = true;
    Search.htmlToText = withoutTex;
  }
  patch();
  document.addEventListener("DOMContentLoaded", patch);
})();
