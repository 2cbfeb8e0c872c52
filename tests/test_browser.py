"""The built book, read in a real browser: headless Chromium opens every page.

Every ``.html`` file of the tests' book build (``_build/tests/_build/html``) is opened (the
Sphinx-generated ``genindex.html`` and ``search.html`` included: a reader reaches both from every
page; only ``_static/`` and ``_sources/`` are left out, since they hold assets, not pages). The book
is served by a local ``http.server`` on 127.0.0.1 and Chromium runs with no network: every host name
other than 127.0.0.1 fails to resolve, so a page that needs anything from outside shows it here.

On every page the test waits for MathJax to finish typesetting and fails on

- TeX left as text (``$$``, ``\\(``, ``\\[``, ``\\begin{``, a TeX command outside code), a math
  element that MathJax did not typeset, or a MathJax error node (``mjx-merror``);
- an image that does not load (``img.complete`` and ``naturalWidth > 0``);
- a broken internal link: every ``<a href>`` to a local page must point to an existing file, and
  its ``#fragment`` to an element id on that page;
- a JavaScript error (uncaught exceptions, rejected promises, ``console.error``, failed
  resource loads) other than the documented ones in ``ALLOWED_JS_ERRORS``.

Every page is measured at 1280 and at 390 CSS pixels (a laptop, a phone): nothing (figure,
table, output area, display equation, the explorer) may be wider than the text column unless
it scrolls inside a box of its own that fits, and at 1280 px a table must fit the column
outright (its words wrap; only a phone scrolls it), unless it is wide on purpose (the example
grade sheet, in a div ``rc-wide-table``); an inline formula is whole in its box or scrolls in
it (never cut off, never a scroll bar with nothing to scroll); every figure is shown at no less than
90% of its natural size (the figures are drawn as wide as the column, book.plotting.WIDTH); the
status page's claims tables (each chapter's group opened for the measurement) have no column
narrower than its longest word at 1280 px; and the skip chapter's explorer must redraw its curve
when each of its controls moves. The search page's
snippets must show no raw TeX.

Accessibility: axe-core (the copy selenium-axe-python bundles: nothing is fetched) runs on every
page of the book in light mode, every rule, and in dark mode, the rules that depend on colours
(``AXE_COLOUR_RULES``: the page, its structure and its names are the same in both modes), and of
the student edition in light mode (its dark mode is the book's: the same theme and stylesheet,
whose colours the book's dark pass checks on the same pages with the solutions in); its results
are printed per page (pytest -rP) and written to ``_build/tests/_build/axe.json``, and a violation
of impact "serious" or "critical" fails. Every table has header cells; every image has alt text, and
a figure's is the description its SVG carries (``book.plotting.alt_text``, read from the figure's
drawing); the explorer works from the keyboard alone (Tab to each slider, a visible focus ring,
the arrow keys move it and the curve follows).

It saves a screenshot of every page in light mode, and of every chapter in dark mode too, to
``_build/tests/_build/screenshots/`` (and of every chapter at 390 px, in its ``w390/``). In dark
mode figure images must sit on a light backing: the figures are drawn in mid-grey ink on a
transparent background, and pydata-sphinx-theme (under sphinx-book-theme) gives content images a
white background in dark mode; the test guards it.

Two Chromiums do the work at once (``BROWSERS``, one per core of the test machine), each taking
the next pass (the book in light mode, in dark mode, at 390 px; the student edition in light mode)
when it is free. Runs when Chromium, chromedriver and selenium are installed; skips
with the reason otherwise.
Selenium is given the driver's path, so selenium-manager never downloads anything.
"""

from __future__ import annotations

import functools
import html.parser
import os
import re
import shutil
import tempfile
import threading
import time
import urllib.parse
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from booktools import BUILD
from booktools.toc import toc_files

CHROMIUM = next(
    (
        p
        for p in (
            os.environ.get("CHROMIUM"),
            shutil.which("chromium"),
            shutil.which("chromium-browser"),
            shutil.which("google-chrome"),
        )
        if p
    ),
    None,
)
CHROMEDRIVER = os.environ.get("CHROMEDRIVER") or shutil.which("chromedriver")

# JavaScript errors we accept, each with the reason. A message matching any pattern is allowed.
# Add an entry only with a reason; the test reports every allowed message it met (pytest -rP shows
# them).
ALLOWED_JS_ERRORS: dict[str, str] = {
    # (none: sphinx-thebe's config script, which Sphinx 7.4 wrote twice into every page and whose
    # second copy threw "Identifier 'THEBE_JS_URL' has already been declared", is now written
    # once: tools/booktools/ext/bookext.py removes repeated inline scripts)
}

# TeX that must never reach the reader as text (outside code blocks and MathJax output)
RAW_TEX = re.compile(
    r"\$\$|\\\(|\\\)|\\\[|\\\]|\\begin\{|\\end\{|\\(?:frac|sum|lVert|rVert|mathbb|mathbf|operatorname"
    r"|res|SA|SAN|LN|softmax|sqrt|top|left|right|alpha|beta|gamma|lambda|sigma|le|ge|cdots|dots)\b"
)

SCREENSHOTS = BUILD / "screenshots"
PAGE_TIMEOUT = 60  # seconds for a page to load and typeset


def _pages(html_dir: Path) -> list[Path]:
    return sorted(
        p
        for p in html_dir.rglob("*.html")
        if p.relative_to(html_dir).parts[0] not in ("_static", "_sources")
    )


def _is_chapter(rel: str) -> bool:
    return rel.startswith("chapters/")


class _Ids(html.parser.HTMLParser):
    """Every id (and <a name>) in a page: the targets a #fragment may name."""

    def __init__(self):
        super().__init__()
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        for k, v in attrs:
            if v and (k == "id" or (k == "name" and tag == "a")):
                self.ids.add(v)


@functools.cache
def _ids(path: Path) -> frozenset[str]:
    parser = _Ids()
    parser.feed(path.read_text(errors="replace"))
    return frozenset(parser.ids)


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def html_dir(built_book):
    return built_book / "html"


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def _serve(directory):
    """Serve ``directory`` over http on 127.0.0.1 at a free port: yields the base URL."""
    httpd = ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_Quiet, directory=str(directory))
    )
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(scope="module")
def server(html_dir):
    """The built book over http on 127.0.0.1, at a free port."""
    yield from _serve(html_dir)


def _start_browser():
    """A headless Chromium with no network, collecting JavaScript errors from the first script
    on; skips the test (with the reason) when Chromium, chromedriver or selenium is missing."""
    if not CHROMIUM or not CHROMEDRIVER:
        pytest.skip(
            "Chromium and chromedriver are not installed (Debian: "
            "apt-get install chromium chromium-driver)"
        )
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        pytest.skip("selenium is not installed (pip install -r requirements.txt)")
    profile = tempfile.mkdtemp(prefix="rankcollapse-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        "--disable-extensions",
        "--hide-scrollbars",
        "--force-device-scale-factor=1",
        "--window-size=1280,900",
        f"--user-data-dir={profile}",
        # no network: every host but the local server fails to resolve
        "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
    ):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # a Service with the driver's path: selenium never runs selenium-manager (which would download)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(PAGE_TIMEOUT)
    driver.set_script_timeout(PAGE_TIMEOUT)
    # collect uncaught errors, rejected promises and console.error from the first script on
    driver.execute_cdp_cmd(
        "Page.addScriptToEvaluateOnNewDocument",
        {
            "source": """
        window.__errors = [];
        window.addEventListener('error', e => window.__errors.push('uncaught: ' + (e.message || e.type)
            + (e.filename ? ' (' + e.filename + ':' + e.lineno + ')' : '')), true);
        window.addEventListener('unhandledrejection', e => window.__errors.push('unhandled rejection: '
            + (e.reason && (e.reason.stack || e.reason.message) || e.reason)));
        const _error = console.error.bind(console);
        console.error = (...a) => { window.__errors.push('console.error: ' + a.map(String).join(' ')); _error(...a); };
    """  # noqa: E501
        },
    )
    driver.rankcollapse_profile = profile
    return driver


def _stop_browser(driver) -> None:
    driver.quit()
    shutil.rmtree(driver.rankcollapse_profile, ignore_errors=True)


@pytest.fixture(scope="module")
def browser():
    driver = _start_browser()
    yield driver
    _stop_browser(driver)


# --------------------------------------------------------------------------- one page

_WAIT_FOR_PAGE = """
const done = arguments[arguments.length - 1];
(async () => {
  const errors = [];
  // images: load every one now (no lazy loading), then wait for all to settle
  for (const img of document.images) { img.loading = 'eager'; }
  await Promise.all(Array.from(document.images).map(img => img.complete ? null :
      new Promise(r => { img.addEventListener('load', r); img.addEventListener('error', r); })));
  // MathJax: loaded (deferred) on pages with math; wait until it has typeset the page
  const hasMathJax = Array.from(document.scripts).some(s => /mathjax|tex-(chtml|svg|mml)/i.test(s.src));
  if (hasMathJax) {
    const t0 = Date.now();
    while (!(window.MathJax && MathJax.startup && MathJax.startup.promise) && Date.now() - t0 < 30000) {
      await new Promise(r => setTimeout(r, 100));
    }
    if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
      try { await MathJax.startup.promise; } catch (e) { errors.push('MathJax: ' + e); }
    } else {
      errors.push('MathJax did not start within 30 s');
    }
  }
  done({hasMathJax, errors});
})();
"""  # noqa: E501


def _wait(browser):
    """Wait for the page's images and MathJax (:data:`_WAIT_FOR_PAGE`). Headless Chromium now and
    then stalls in this wait on a loaded 2-core machine (a script timeout on a page that loads in a
    second otherwise: seen in 2 of 6 runs on this session's machine, and gone on a rerun): the page
    is reloaded once and waited for again, with a warning in pytest's summary; a page that stalls
    twice fails."""
    import warnings

    from selenium.common.exceptions import TimeoutException

    try:
        return browser.execute_async_script(_WAIT_FOR_PAGE)
    except TimeoutException:
        warnings.warn(
            f"{browser.current_url}: the wait for images and MathJax timed out; reloaded once",
            stacklevel=2,
        )
        browser.refresh()
        return browser.execute_async_script(_WAIT_FOR_PAGE)


_INSPECT = r"""
const out = {rawTex: [], untypeset: [], merror: [], images: [], links: [], errors: window.__errors || []};
const skip = el => el.closest('pre, code, script, style, textarea, mjx-container, .highlight, .cell_input, .output, .cell_output, kbd, samp');
const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
const rawTex = new RegExp(arguments[0]);
for (let n = walker.nextNode(); n; n = walker.nextNode()) {
  const el = n.parentElement;
  if (!el || skip(el)) continue;
  const m = n.textContent.match(rawTex);
  if (m) out.rawTex.push(n.textContent.trim().slice(0, 120));
}
// Sphinx wraps every formula in span.math / div.math; MathJax must have replaced its text
for (const el of document.querySelectorAll('span.math, div.math')) {
  if (!el.querySelector('mjx-container')) out.untypeset.push(el.textContent.trim().slice(0, 120));
}
for (const el of document.querySelectorAll('mjx-merror')) {
  out.merror.push((el.getAttribute('data-mjx-error') || el.textContent).slice(0, 120));
}
for (const img of document.images) {
  if (!(img.complete && img.naturalWidth > 0)) out.images.push(img.getAttribute('src'));
}
for (const a of document.querySelectorAll('a[href]')) out.links.push(a.href);
// accessibility: a table with no header cell; every image's alt text (figures: read from the figure)
out.headless = Array.from(document.querySelectorAll('article table'))
  .filter(t => !t.querySelector('th')).map(t => t.textContent.trim().slice(0, 80));
out.alts = Array.from(document.querySelectorAll('article img'))
  .map(img => [img.getAttribute('src'), img.getAttribute('alt')]);
// what a chapter page must show: typeset formulas, numbered figures whose image loaded,
// theorem/definition/proof boxes (sphinx-proof's div.proof)
out.shown = {
  math: document.querySelectorAll('mjx-container').length,
  figures: Array.from(document.querySelectorAll('figure')).filter(f => {
    const img = f.querySelector('img');
    return img && img.complete && img.naturalWidth > 0 && f.querySelector('figcaption .caption-number');
  }).length,
  boxes: document.querySelectorAll('div.proof').length,
};
// code boxes whose lines do not fit (a horizontal scroll bar hides the end of a line)
out.overflowing = Array.from(document.querySelectorAll('div.cell_input div.highlight pre'))
  .filter(p => p.scrollWidth > p.clientWidth + 1)
  .map(p => p.textContent.split('\n').reduce((a, b) => (b.length > a.length ? b : a)).slice(0, 100));
return out;
"""  # noqa: E501

WIDTHS = (1280, 390)  # a laptop window and a phone, in CSS pixels
PHONE_HEIGHT = 844

# What may not be wider than the text column unless it scrolls inside its own box, and how
# large each figure is shown against its natural size. The column is the article's content box.
_LAYOUT = r"""
const article = document.querySelector('article.bd-article') || document.querySelector('main');
const box = article.getBoundingClientRect();
const pad = parseFloat(getComputedStyle(article).paddingLeft) + parseFloat(getComputedStyle(article).paddingRight);
const column = {left: box.left + parseFloat(getComputedStyle(article).paddingLeft), width: article.clientWidth - pad};
column.right = column.left + column.width;
const scrolls = el => ['auto', 'scroll'].includes(getComputedStyle(el).overflowX);
const fits = r => r.left >= column.left - 1 && r.right <= column.right + 1;
const out = {column: column.width, wide: [], figures: [], pageScroll: document.documentElement.scrollWidth - window.innerWidth};
// the status page's claims: each chapter's group (<details>) opened for the measurements, closed
// again at the end
const closed = [...article.querySelectorAll('details.rc-claims-chapter')].filter(d => !d.open);
for (const d of closed) d.open = true;
const describe = el => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') +
  (el.className && typeof el.className === 'string' ? '.' + el.className.trim().split(/\s+/).join('.') : '') +
  ' "' + (el.textContent || el.getAttribute('src') || '').trim().slice(0, 50) + '"';
const selectors = 'figure, figure img, table, div.cell_output, div.cell_output pre, div.math, ' +
  'mjx-container[display="true"], .rc-explorer, .rc-explorer svg, article img';
for (const el of article.querySelectorAll(selectors)) {
  const r = el.getBoundingClientRect();
  if (r.width === 0 || fits(r)) continue;
  // wider than the column: fine only inside a box of its own that fits the column and scrolls
  let ok = false;
  for (let a = el; a && a !== article; a = a.parentElement) {
    if (scrolls(a) && fits(a.getBoundingClientRect())) { ok = true; break; }
  }
  if (!ok) out.wide.push(describe(el) + ' is ' + Math.round(r.width) + ' px wide, ' +
                         'the column ' + Math.round(column.width) + ' px');
}
// a table must fit the column outright at the desktop width (scrolling is for a phone): its
// narrowest layout (min-content), with room for a classic scroll bar (this browser hides its own,
// a reader's may take 12 px of the column)
out.tables = [];
out.nTables = 0;
for (const t of article.querySelectorAll('table')) {
  if (t.closest('.rc-wide-table') || t.getBoundingClientRect().width === 0) continue;
  out.nTables += 1;
  const kept = t.style.width;
  t.style.width = 'min-content';
  const narrowest = t.getBoundingClientRect().width;
  t.style.width = kept;
  if (narrowest > column.width - 12)
    out.tables.push(describe(t) + ' needs ' + Math.round(narrowest) + ' px at the least, the column ' +
                    Math.round(column.width) + ' px');
}
// an inline formula is either whole in its box, or scrolls in it: never cut off, and never a
// scroll bar with nothing to scroll (MathJax's hidden MathML or a glyph's overhang)
out.math = [];
out.nMath = 0;
for (const s of article.querySelectorAll('span.math')) {
  const m = s.querySelector('mjx-math');
  if (!m || s.getBoundingClientRect().width === 0) continue;  // not typeset, or in a closed dropdown
  out.nMath += 1;
  const shown = s.getBoundingClientRect().width, ink = m.getBoundingClientRect().width;
  if (ink > shown + 1 && !scrolls(s))
    out.math.push(describe(s) + ' is cut off: ' + Math.round(ink) + ' px in a box of ' + Math.round(shown));
  else if (scrolls(s) && s.scrollWidth > s.clientWidth && ink <= s.clientWidth)
    out.math.push(describe(s) + ' has a scroll bar with nothing to scroll');
}
for (const img of article.querySelectorAll('figure img')) {
  if (!img.naturalWidth) continue;
  out.figures.push({src: img.getAttribute('src'), natural: img.naturalWidth,
                    shown: img.getBoundingClientRect().width});
}
// the claims tables (issue 43): no column narrower than its longest word, each word measured in
// its own font (formulas left out: MathJax's boxes do not break anyway)
out.claimColumns = [];
out.nClaimTables = 0;
const ctx = document.createElement('canvas').getContext('2d');
const fonts = new Map();
const fontOf = el => { if (!fonts.has(el)) fonts.set(el, getComputedStyle(el).font); return fonts.get(el); };
for (const t of article.querySelectorAll('table.rc-claims-table')) {
  out.nClaimTables += 1;
  const worst = [];
  for (const row of t.rows) {
    [...row.cells].forEach((cell, i) => {
      const cs = getComputedStyle(cell);
      const room = cell.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
      const walk = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
      for (let n = walk.nextNode(); n; n = walk.nextNode()) {
        if (n.parentElement.closest('mjx-container, .math')) continue;
        ctx.font = fontOf(n.parentElement);
        for (const w of n.textContent.split(/\s+/)) {
          const need = ctx.measureText(w).width;
          if (need > room + 0.5 && (!worst[i] || need - room > worst[i].over))
            worst[i] = {over: need - room, word: w, room: Math.round(room), need: Math.round(need)};
        }
      }
    });
  }
  worst.forEach((w, i) => { if (w) out.claimColumns.push(describe(t).slice(0, 40) + ': column ' + (i + 1) +
    ' is ' + w.room + ' px wide, its word "' + w.word + '" ' + w.need + ' px'); });
}
for (const d of closed) d.open = false;
return out;
"""  # noqa: E501

# The explorer: move each control and read the measured curve before and after.
_MOVE_EXPLORER = r"""
const root = document.querySelector('.rc-explorer');
if (!root) return null;
const curve = () => root.querySelector('path.rc-measured').getAttribute('d');
const changes = {};
for (const input of root.querySelectorAll('input[type=range]')) {
  const before = curve(), old = input.value;
  input.value = String(+input.value === +input.min ? +input.max : +input.min);
  input.dispatchEvent(new Event('input', {bubbles: true}));
  changes[input.name] = {before, after: curve(), from: old, to: input.value};
  input.value = old;
  input.dispatchEvent(new Event('input', {bubbles: true}));
}
return changes;
"""


_FIGURE_BACKING = """
return Array.from(document.querySelectorAll('figure img, .figure img, img.glue-figure, .cell_output img'))
  .map(img => [img.getAttribute('src'), getComputedStyle(img).backgroundColor]);
"""  # noqa: E501


def _screenshot(driver, path: Path, width: int = 1280) -> None:
    """A full-page PNG: the viewport made as tall as the page, then one shot (DevTools protocol).

    (Plain Selenium shoots only the viewport; ``captureBeyondViewport`` alone sometimes shoots a
    half-laid-out page, with the theme's sidebars moving.)
    """
    import base64

    size = driver.execute_cdp_cmd("Page.getLayoutMetrics", {})["cssContentSize"]
    height = min(int(size["height"]), 16000)
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
    )
    try:
        driver.execute_async_script(
            "const done = arguments[0];"
            "requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(done, 200)));"
        )
        shot = driver.execute_cdp_cmd("Page.captureScreenshot", {"format": "png"})
    finally:
        driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(base64.b64decode(shot["data"]))


def _set_mode(driver, mode: str) -> None:
    """pydata-sphinx-theme's light/dark switch: localStorage 'mode', read on every page load."""
    driver.execute_script(
        "localStorage.setItem('mode', arguments[0]); localStorage.setItem('theme', arguments[0]);",
        mode,
    )


def _check_links(html_dir: Path, base: str, page_rel: str, links: list[str]) -> list[str]:
    problems = []
    for href in links:
        url = urllib.parse.urlsplit(href)
        if not href.startswith(base + "/"):
            continue  # external (launch buttons, repository, DOIs), mailto:, javascript:
        target_rel = urllib.parse.unquote(url.path).lstrip("/")
        target = html_dir / target_rel
        if target.is_dir():
            target = target / "index.html"
        if not target.is_file():
            problems.append(f"{page_rel}: link to missing {target_rel}")
            continue
        fragment = urllib.parse.unquote(url.fragment)
        if fragment and target.suffix == ".html" and fragment not in _ids(target):
            problems.append(f"{page_rel}: link to {target_rel}#{fragment}: no such anchor")
    return problems


_REDIRECT = re.compile(r'<meta[^>]+http-equiv="refresh"[^>]+content="\d+;\s*url=([^"]+)"', re.I)


# --------------------------------------------------------------------------- accessibility

AXE_FAILING = (
    "serious",
    "critical",
)  # the impacts that fail the test; "minor" and "moderate" are reported
AXE_REPORT = BUILD / "axe.json"
# axe-core's result, reduced to what the report shows: each violated rule, its impact, its help
# text, how many elements (the first five named by their CSS selector) and what axe says of the
# first (for a contrast: the two colours and the ratio). No preload: axe would fetch the theme's
# stylesheets again and resolve their @import against the page (a 404 in the console), for a rule
# (css-orientation-lock) that has nothing to find here.
_AXE_RUN = """
const done = arguments[arguments.length - 1];
const only = arguments[0];
axe.run(document, Object.assign({resultTypes: ['violations'], preload: false},
                                only ? {runOnly: {type: 'rule', values: only}} : {}))
  .then(r => done(r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help, count: v.nodes.length,
                                           nodes: v.nodes.slice(0, 5).map(n => n.target.join(' ')),
                                           says: ((n => n.any.concat(n.all, n.none)[0] || {})(v.nodes[0])).message || ''}))))
  .catch(e => done([{id: 'axe-error', impact: 'critical', help: String(e), count: 1, nodes: []}]));
"""  # noqa: E501


# The rules whose result can depend on the colour theme. Light and dark mode are one page, one
# DOM and one stylesheet whose colour variables differ: every other rule (names, roles, labels,
# structure, ARIA) finds the same in both, and the light pass runs them all; the dark pass runs
# these (over the book's 18 pages, every rule took 28 s and these two 23 s: color-contrast is
# most of axe's work).
AXE_COLOUR_RULES = ("color-contrast", "link-in-text-block")


def _axe(browser, only: tuple[str, ...] | None = None) -> list[dict]:
    """axe-core's violations on the open page (``only``: these rules alone). The script is
    selenium-axe-python's bundled copy of axe-core (no network), injected into the page."""
    from selenium_axe_python import Axe

    Axe(browser).inject()
    return browser.execute_async_script(_AXE_RUN, list(only) if only else None)


def _axe_lines(results: dict) -> list[str]:
    """One line per page and mode: its violations by rule, impact and count, or "none"."""
    lines = []
    for (rel, mode), violations in sorted(results.items()):
        found = ", ".join(f"{v['id']} ({v['impact']}, {v['count']})" for v in violations) or "none"
        lines.append(f"{rel} ({mode}): {found}")
    return lines


def _alt_problems(html_dir: Path, rel: str, alts: list) -> list[str]:
    """Images with no alt text, and figures whose alt text is not the description their SVG
    carries (what book.glue_figure wrote from book.plotting.alt_text: not a placeholder)."""
    from booktools.ext.a11y import svg_description

    problems = []
    for src, alt in alts:
        if not (alt or "").strip():
            problems.append(f"{rel}: image {src} has no alt text")
            continue
        path = (html_dir / rel).parent / urllib.parse.unquote(src or "")
        if path.suffix == ".svg" and svg_description(path) != alt:
            problems.append(
                f"{rel}: image {src}'s alt text is not its SVG's description: {alt[:80]!r}"
            )
    return problems


def _allowed(message: str) -> bool:
    return any(re.search(pattern, message) for pattern in ALLOWED_JS_ERRORS)


def _empty_found() -> dict:
    return {
        "pages": [],
        "math": [],
        "images": [],
        "links": [],
        "js": [],
        "dark": [],
        "allowed_js": [],
        "shown": {},
        "overflow": [],
        "wide": [],
        "small_figures": [],
        "figures": {},
        "columns": {},
        "explorer": {},
        "measured": {},
        "axe": {},
        "tables": [],
        "alt": [],
        "nFigures": 0,
        "claim_columns": [],
        "nClaimTables": 0,
    }


def _merge(found: dict, more: dict) -> None:
    """Add what one job found to the whole report (lists joined, tables merged, counts summed)."""
    for key, value in more.items():
        if key == "measured":
            for width, counts in value.items():
                found[key][width] = [a + b for a, b in zip(found[key].get(width, (0, 0)), counts)]
        elif isinstance(value, dict):
            found[key].update(value)
        else:
            found[key] += value


def _book_first_visit(browser, server) -> dict:
    """A reader's first visit (nothing in localStorage yet): the landing page's errors."""
    found = _empty_found()
    browser.get(server + "/intro.html")
    _wait(browser)
    found["js"] += [
        f"intro.html (first visit): {e['message']}"
        for e in browser.get_log("browser")
        if e["level"] == "SEVERE" and not _allowed(e["message"])
    ]
    return found


def _book_in_mode(browser, html_dir, server, pages, mode) -> dict:
    """Every page in ``mode`` (light or dark): what is wrong with it, axe-core's violations, a
    screenshot; in light mode also the layout at 1280 px (the window's width: see _layout)."""
    from selenium.webdriver.support.wait import WebDriverWait

    found = _empty_found()
    browser.get(server + "/intro.html")
    _set_mode(browser, mode)  # kept in localStorage for every later page of the site
    for rel in pages:
        browser.get_log("browser")  # drop what earlier pages logged
        browser.get(server + "/" + rel)
        redirect = _REDIRECT.search((html_dir / rel).read_text(errors="replace"))
        if redirect:  # index.html: a meta refresh to the landing page; check where it lands
            target = urllib.parse.urljoin(server + "/" + rel, redirect.group(1))
            # arrived, and the page it landed on loaded (the address changes before its body
            # exists)
            WebDriverWait(browser, PAGE_TIMEOUT).until(
                lambda d: (
                    d.current_url.split("#")[0] == target
                    and d.execute_script("return document.readyState") == "complete"
                )
            )
            found["links"] += _check_links(html_dir, server, rel, [target])
        waited = _wait(browser)
        seen = browser.execute_script(_INSPECT, RAW_TEX.pattern)
        found["axe"][(rel, mode)] = _axe(browser, None if mode == "light" else AXE_COLOUR_RULES)
        messages = list(seen["errors"]) + list(waited["errors"])
        messages += [
            f"{e['level']}: {e['message']}"
            for e in browser.get_log("browser")
            if e["level"] == "SEVERE"
        ]
        for m in dict.fromkeys(messages):
            (found["allowed_js"] if _allowed(m) else found["js"]).append(f"{rel} ({mode}): {m}")
        if mode == "light":
            found["pages"].append(rel)
            found["math"] += [f"{rel}: raw TeX: {t!r}" for t in seen["rawTex"]]
            found["math"] += [f"{rel}: not typeset: {t!r}" for t in seen["untypeset"]]
            found["math"] += [f"{rel}: MathJax error: {t!r}" for t in seen["merror"]]
            found["images"] += [f"{rel}: image did not load: {src}" for src in seen["images"]]
            found["links"] += _check_links(html_dir, server, rel, seen["links"])
            found["shown"][rel] = seen["shown"]
            found["overflow"] += [f"{rel}: {line!r}" for line in seen["overflowing"]]
            found["tables"] += [
                f"{rel}: a table without header cells: {t!r}" for t in seen["headless"]
            ]
            found["alt"] += _alt_problems(html_dir, rel, seen["alts"])
            found["nFigures"] += len(seen["alts"])
            _layout(browser, rel, WIDTHS[0], found)
        else:
            if browser.execute_script("return document.documentElement.dataset.theme") != "dark":
                found["dark"].append(f"{rel}: the theme did not switch to dark mode")
            for src, background in browser.execute_script(_FIGURE_BACKING):
                if background in ("rgba(0, 0, 0, 0)", "transparent"):
                    found["dark"].append(f"{rel}: figure {src} has no backing in dark mode")
        if mode == "light" or _is_chapter(rel):
            _screenshot(
                browser,
                SCREENSHOTS / mode / (rel.removesuffix(".html").replace("/", "__") + ".png"),
            )
    return found


def _layout(browser, rel: str, width: int, found: dict) -> None:
    """On the open page, at ``width`` CSS pixels (the window's own at WIDTHS[0], 1280 x 900; a
    phone's emulated otherwise, the page loaded again): what is wider than the column, how large
    figures are shown, whether the explorer answers its controls."""
    layout = browser.execute_script(_LAYOUT)
    found["columns"][(rel, width)] = layout["column"]
    found["wide"] += [f"{rel} at {width} px: {w}" for w in layout["wide"]]
    if width >= 1280:
        found["wide"] += [f"{rel} at {width} px: {t}" for t in layout["tables"]]
    found["wide"] += [f"{rel} at {width} px: {m}" for m in layout["math"]]
    if width >= 1280:
        found["claim_columns"] += [f"{rel} at {width} px: {c}" for c in layout["claimColumns"]]
        found["nClaimTables"] += layout["nClaimTables"]
    _merge(found, {"measured": {width: (layout["nTables"], layout["nMath"])}})
    if layout["pageScroll"] > 1:
        found["wide"].append(
            f"{rel} at {width} px: the page itself scrolls sideways by {layout['pageScroll']} px"
        )
    for fig in layout["figures"]:
        found["figures"][(rel, width, fig["src"])] = fig
        if fig["shown"] < 0.9 * fig["natural"]:
            found["small_figures"].append(
                f"{rel} at {width} px: {fig['src']} shown at "
                f"{fig['shown'] / fig['natural']:.0%} of its natural size ({fig['natural']} px)"
            )
    moved = browser.execute_script(_MOVE_EXPLORER)
    if moved is not None:
        found["explorer"][(rel, width)] = moved


def _book_on_a_phone(browser, server, pages, width) -> dict:
    """Every page at a phone's ``width`` (light mode): the layout, and each chapter's screenshot."""
    found = _empty_found()
    browser.get(server + "/intro.html")
    _set_mode(browser, "light")
    try:
        for rel in pages:
            # per page: the screenshot below resets the emulated size when it is done
            browser.execute_cdp_cmd(
                "Emulation.setDeviceMetricsOverride",
                {"width": width, "height": PHONE_HEIGHT, "deviceScaleFactor": 1, "mobile": False},
            )
            browser.get(server + "/" + rel)
            _wait(browser)
            _layout(browser, rel, width, found)
            if _is_chapter(rel):
                _screenshot(
                    browser,
                    SCREENSHOTS
                    / f"w{width}"
                    / (rel.removesuffix(".html").replace("/", "__") + ".png"),
                    width=width,
                )
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    return found


def _run_jobs(browsers, jobs) -> list:
    """Run ``jobs`` (functions of a browser) on the ``browsers``, each browser in a thread of its
    own taking the next job when it is free (the longest are listed first); the results in the
    jobs' order. Selenium waits on a socket, so the browsers work at once, one core each."""
    import queue

    todo = queue.Queue()
    for i, job in enumerate(jobs):
        todo.put((i, job))
    results, errors = [None] * len(jobs), []
    seconds = [None] * len(jobs)

    def work(driver):
        while True:
            try:
                i, job = todo.get_nowait()
            except queue.Empty:
                return
            start = time.monotonic()
            try:
                results[i] = job(driver)
                seconds[i] = round(time.monotonic() - start, 1)
            except BaseException as error:  # noqa: BLE001  (raised in the test below)
                errors.append(error)
                return

    threads = [threading.Thread(target=work, args=(b,)) for b in browsers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return results, seconds


BROWSERS = 2  # Chromiums at once (the test machine's 2 cores)


@pytest.fixture(scope="module")
def visits(browser, html_dir, server, student_book, student_server):
    """Every page of the book and of its student edition opened in every way the tests below
    read, by BROWSERS Chromiums at once: the book in light mode (checks, axe, layout at 1280 px,
    screenshot), in dark mode (axe, the theme, each figure's backing, chapters' screenshots) and
    at 390 px (layout, chapters' screenshots); the student edition in light mode (see
    `_student_in_light_mode`). Returns ``{"book": report, "student": report}``."""
    shutil.rmtree(SCREENSHOTS, ignore_errors=True)
    pages = [p.relative_to(html_dir).as_posix() for p in _pages(html_dir)]
    student_pages = [p.relative_to(student_book).as_posix() for p in _pages(student_book)]
    jobs = [
        lambda b: _book_in_mode(b, html_dir, server, pages, "light"),
        lambda b: _book_in_mode(b, html_dir, server, pages, "dark"),
        lambda b: _student_in_light_mode(b, student_book, student_server, student_pages),
        lambda b: _book_on_a_phone(b, server, pages, WIDTHS[1]),
    ]
    others = [_start_browser() for _ in range(BROWSERS - 1)]
    try:
        first = _book_first_visit(browser, server)
        (book_light, book_dark, student_light, phone), seconds = _run_jobs([browser, *others], jobs)
    finally:
        for driver in others:
            _stop_browser(driver)
    browser.get(server + "/intro.html")  # the later tests' browser: light mode, the window's size
    _set_mode(browser, "light")
    book = _empty_found()
    for found in (first, book_light, book_dark, phone):
        _merge(book, found)
    student = {"pages": student_pages, **student_light}  # its problems and axe's violations
    names = ("book, light", "book, dark", "student, light", "book, 390 px")
    print("browser passes (s):", dict(zip(names, seconds)))  # pytest -rP shows it
    return {"book": book, "student": student}


@pytest.fixture(scope="module")
def report(visits):
    """What is wrong with the book's pages (see `visits`)."""
    return visits["book"]


# --------------------------------------------------------------------------- the tests


@pytest.mark.build
def test_every_page_is_checked(report, html_dir):
    assert len(report["pages"]) == len(_pages(html_dir))
    for f in toc_files():
        assert f.removesuffix(".md") + ".html" in report["pages"], f


@pytest.mark.build
def test_chapter_pages_show_math_figures_and_theorem_boxes(report):
    """What the screenshots must show on every chapter page, counted in the rendered page."""
    chapters = {rel: shown for rel, shown in report["shown"].items() if _is_chapter(rel)}
    assert len(chapters) == len([f for f in toc_files() if f.startswith("chapters/")])
    empty = [
        f"{rel}: no {what}"
        for rel, shown in chapters.items()
        for what, n in shown.items()
        if n == 0
    ]
    assert not empty, "\n".join(empty)


# what the report collects per kind of problem, and what the test of that kind asserts
PAGE_PROBLEMS = {
    "math": "math is typeset: no raw TeX, no untypeset formula, no MathJax error",
    "images": "every image loads",
    "links": "internal links and anchors resolve",
    "dark": "figures are readable in dark mode",
    "overflow": "code fits its box on a 1280-pixel window (80-character lines, _static/book.css)",
    "tables": "every table has header cells",
    "alt": (
        "every image has alt text, and a figure's is the one its SVG carries "
        "(book.plotting.alt_text)"
    ),
}


@pytest.mark.build
@pytest.mark.parametrize("problem", PAGE_PROBLEMS)
def test_pages_have_no(report, problem):
    assert not report[problem], f"{PAGE_PROBLEMS[problem]}, except:\n" + "\n".join(report[problem])


@pytest.mark.build
def test_every_figure_was_checked_for_its_alt_text(report):
    """The alt-text check had figures to check (the chapters' glued figures)."""
    assert report["nFigures"] >= 20, report["nFigures"]


@pytest.mark.build
def test_axe_finds_no_serious_or_critical_violation(report, student_report):
    """axe-core on every page of the book in light and dark mode, and of the student edition in
    light mode (see the module's note): the results per page are printed (pytest -rP) and
    written to _build/tests/_build/axe.json; a violation of impact serious or critical fails."""
    import json

    results = {
        **report["axe"],
        **{(f"student/{rel}", mode): v for (rel, mode), v in student_report["axe"].items()},
    }
    assert len(results) == 2 * len(report["pages"]) + len(student_report["pages"])
    AXE_REPORT.write_text(
        json.dumps({f"{rel} ({mode})": v for (rel, mode), v in sorted(results.items())}, indent=1)
    )
    print("\n".join(_axe_lines(results)))
    failing = {
        key: [v for v in violations if v["impact"] in AXE_FAILING]
        for key, violations in results.items()
    }
    failing = {key: v for key, v in failing.items() if v}
    details = [
        f"{rel} ({mode}): {v['id']} ({v['impact']}): {v['help']}; {v['count']} element(s): "
        + "; ".join(v["nodes"])
        + f"; {v['says']}"
        for (rel, mode), vs in sorted(failing.items())
        for v in vs
    ]
    assert not failing, (
        f"{len(failing)} page(s) with serious or critical violations:\n" + "\n".join(details)
    )


@pytest.mark.build
def test_axe_catches_violations(browser):
    """A control: an image without alt text (critical) and grey on grey text (serious) are found."""
    import urllib.parse as up

    page = (
        '<html lang="en"><head><title>t</title></head><body><main><h1>t</h1>'
        '<img src="data:image/gif;base64,R0lGODlhAQABAAAAACw=">'
        '<p style="color:#777;background:#888">faint</p></main></body></html>'
    )
    browser.get("data:text/html," + up.quote(page))
    found = {v["id"]: v["impact"] for v in _axe(browser)}
    assert found.get("image-alt") == "critical" and found.get("color-contrast") == "serious", found


@pytest.mark.build
def test_the_explorer_works_from_the_keyboard(browser, server):
    """The skip chapter's explorer from the keyboard alone: Tab reaches each slider in turn (its
    focus visible), the arrow keys move it, and the curve and the sentence below it follow."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    browser.get(server + "/chapters/skip.html")
    _wait(browser)
    # a focusable mark just before the explorer: Tab from there is what a reader's Tab does
    browser.execute_script("""
        const root = document.querySelector('.rc-explorer');
        const mark = document.createElement('span'); mark.tabIndex = 0; mark.id = 'rc-test-mark';
        root.parentNode.insertBefore(mark, root); mark.focus();""")
    state = (
        "const r = document.querySelector('.rc-explorer'), a = document.activeElement, "
        "s = getComputedStyle(a);"
        "return {name: a.name || a.id, "
        "curve: r.querySelector('path.rc-measured').getAttribute('d'),"
        "note: r.querySelector('.rc-note').textContent, text: a.getAttribute('aria-valuetext'),"
        "ring: s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) > 0 "
        "|| s.boxShadow !== 'none'};"
    )
    for name, key in (
        ("depth", Keys.ARROW_LEFT),
        ("scale", Keys.ARROW_LEFT),
        ("strength", Keys.ARROW_RIGHT),
    ):
        ActionChains(browser).send_keys(Keys.TAB).perform()
        before = browser.execute_script(state)
        assert before["name"] == name, f"Tab reached {before['name']!r}, not the {name} slider"
        assert before["ring"], f"the {name} slider shows no focus ring"
        ActionChains(browser).send_keys(key).perform()
        after = browser.execute_script(state)
        assert after["curve"] != before["curve"] and after["note"] != before["note"], (
            f"{name}: nothing moved"
        )
        assert after["text"] and after["text"] != before["text"], (
            f"{name}: its spoken value did not follow"
        )


@pytest.mark.build
def test_nothing_is_wider_than_the_column_unless_it_scrolls_in_its_own_box(report):
    """At 1280 and 390 px: no figure, table, output area or display equation runs past the
    text column, unless it sits in a box of its own that fits and scrolls (_static/book.css)."""
    assert report["columns"], "no page was measured"
    for width, (tables, formulas) in report[
        "measured"
    ].items():  # the checks had something to check
        assert tables > 20 and formulas > 500, (width, tables, formulas)
    assert not report["wide"], "\n".join(report["wide"])


@pytest.mark.build
def test_no_column_of_the_claims_tables_is_narrower_than_its_longest_word(report):
    """Issue 43, part 4: the status page's claims (a table per chapter, measured with every
    chapter's group open) at 1280 px: each column at least as wide as its longest word (the
    earlier single table broke "checked" into "che / cke / d")."""
    from booktools.toc import toc_notebooks

    assert report["nClaimTables"] == len(toc_notebooks()), report["nClaimTables"]
    assert not report["claim_columns"], "\n".join(report["claim_columns"])


@pytest.mark.build
def test_figures_are_shown_at_their_natural_size(report):
    """Every figure at no less than 90% of its natural size, at both widths; and at least at the
    scale the legibility check of book.plotting assumed (its 9-point minimum is then what shows)."""
    import rankbook as book

    assert report["figures"], "no figure was found on any page"
    assert not report["small_figures"], "\n".join(report["small_figures"])
    column_px = book.plotting.COLUMN_INCHES * 96
    for (rel, width, src), fig in report["figures"].items():
        assumed = min(1.0, column_px / fig["natural"])
        assert fig["shown"] >= assumed * fig["natural"] - 1, (rel, width, src, fig)


@pytest.mark.build
def test_the_column_is_as_wide_as_the_figures_are_drawn(report):
    """book.plotting draws figures 7 inches wide for a column at least that wide at 1280 px."""
    import rankbook as book

    widths = {
        w for (rel, width), w in report["columns"].items() if width == 1280 and _is_chapter(rel)
    }
    print("text column at 1280 px:", sorted(widths))
    assert widths and min(widths) >= book.plotting.WIDTH * 96 - 1, widths


@pytest.mark.build
def test_the_explorer_responds_to_its_controls(report):
    """The skip chapter's explorer: moving each slider redraws the measured curve."""
    pages = {rel for rel, _ in report["explorer"]}
    assert "chapters/skip.html" in pages, f"no explorer found (pages with one: {sorted(pages)})"
    for (rel, width), moved in report["explorer"].items():
        assert set(moved) == {"depth", "scale", "strength"}, moved
        for name, change in moved.items():
            assert change["after"] != change["before"], (
                f"{rel} at {width} px: moving {name} changed nothing"
            )


@pytest.mark.build
def test_no_javascript_errors(report):
    for message in report["allowed_js"]:  # shown with pytest -rP
        print("allowed:", message)
    assert not report["js"], "\n".join(report["js"])


@pytest.mark.build
def test_screenshots_saved(report):
    for rel in report["pages"]:
        name = rel.removesuffix(".html").replace("/", "__") + ".png"
        assert (SCREENSHOTS / "light" / name).stat().st_size > 0
        if _is_chapter(rel):
            assert (SCREENSHOTS / "dark" / name).stat().st_size > 0


@pytest.mark.build
def test_the_checks_catch_problems(browser):
    """A control: on a page with raw TeX, untypeset math and a missing image, the checks fire."""
    import urllib.parse as up

    page = (
        '<html><body><p>$$x^2$$ and \\(y\\)</p><span class="math">\\(z\\)</span>'
        '<img src="data:image/png;base64,broken"><a href="#nowhere">a</a>'
        '<div class="cell_input"><div class="highlight"><pre style="width:300px;overflow:auto">'
        + "x" * 200
        + "</pre></div></div></body></html>"
    )
    browser.get("data:text/html," + up.quote(page))
    browser.execute_async_script(_WAIT_FOR_PAGE)
    seen = browser.execute_script(_INSPECT, RAW_TEX.pattern)
    assert (
        len(seen["rawTex"]) == 2 and seen["untypeset"] == ["\\(z\\)"] and len(seen["images"]) == 1
    )
    assert seen["overflowing"] == ["x" * 100]


@pytest.mark.build
def test_search_snippets_show_no_raw_tex(browser, server):
    """The search page's snippets are cut from the pages' text, where formulas are TeX until
    MathJax runs: _static/search-math.js turns them into plain text first."""
    from selenium.webdriver.support.wait import WebDriverWait

    browser.get(server + "/search.html?q=residual")
    WebDriverWait(browser, PAGE_TIMEOUT).until(
        lambda d: len(d.find_elements("css selector", "#search-results li p.context")) >= 3
    )
    snippets = browser.execute_script(
        "return Array.from(document.querySelectorAll('#search-results li p.context'))"
        ".map(p => p.textContent)"
    )
    raw = [t[:160] for t in snippets if RAW_TEX.search(t)]
    assert not raw, "\n".join(raw)


@pytest.mark.build
def test_the_link_check_catches_broken_links(html_dir):
    base = "http://127.0.0.1:1"
    problems = _check_links(
        html_dir,
        base,
        "control",
        [
            base + "/intro.html",
            base + "/intro.html#no-such-anchor",
            base + "/no-such-page.html",
            "https://example.org/not-checked",
        ],
    )
    assert len(problems) == 2, problems


# --------------------------------------------------------------------------- the student edition

_STUDENT_PAGE = """
return {solutions: document.querySelectorAll('.solution, [class*="solution"], details.dropdown .solution').length,
        guide: Array.from(document.querySelectorAll('a[href]')).filter(a => /instructors/.test(a.href)).map(a => a.href),
        exercises: document.querySelectorAll('.exercise').length,
        images: Array.from(document.images).filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src),
        links: Array.from(document.querySelectorAll('a[href]')).map(a => a.href),
        errors: window.__errors || []};
"""  # noqa: E501


@pytest.fixture(scope="module")
def student_server(student_book):
    """The student edition over http on 127.0.0.1, at a free port."""
    yield from _serve(student_book)


def _student_in_light_mode(browser, student_book, student_server, pages) -> dict:
    """Every page of the student edition in light mode: what is wrong with it (see the test below)
    and axe-core's violations."""
    found = {"problems": [], "axe": {}}
    problems = found["problems"]
    browser.get(student_server + "/intro.html")
    _set_mode(browser, "light")
    for rel in pages:
        browser.get_log("browser")
        browser.get(student_server + "/" + rel)
        waited = _wait(browser)
        found["axe"][(rel, "light")] = _axe(browser)
        seen = browser.execute_script(_STUDENT_PAGE)
        if seen["solutions"]:
            problems.append(f"{rel}: {seen['solutions']} solution element(s)")
        problems += [f"{rel}: link to the guide {href}" for href in seen["guide"]]
        problems += [f"{rel}: image did not load: {src}" for src in seen["images"]]
        problems += [
            f"{rel}: {m}" for m in list(seen["errors"]) + list(waited["errors"]) if not _allowed(m)
        ]
        problems += [
            f"{rel}: {e['message']}"
            for e in browser.get_log("browser")
            if e["level"] == "SEVERE" and not _allowed(e["message"])
        ]
        problems += _check_links(student_book, student_server, rel, seen["links"])
        if _is_chapter(rel) and seen["exercises"] == 0:
            problems.append(f"{rel}: no exercise shown")
    return found


@pytest.fixture(scope="module")
def student_report(visits):
    """What is wrong with the student edition's pages, and axe-core's violations (see `visits`)."""
    return visits["student"]


@pytest.mark.build
def test_the_student_edition_in_the_browser(student_report):
    """Every page of the student edition (booktools.edition) opens with no solution element, no
    link to the instructor's guide, no JavaScript error, every image loaded and every internal
    link resolved; each chapter still shows its exercises. Checked in light mode (the pages are
    the book's, checked in full above, in both modes), as axe-core is (the test above)."""
    pages = student_report["pages"]
    assert "instructors.html" not in pages and "chapters/paths.html" in pages
    assert not student_report["problems"], "\n".join(student_report["problems"])
