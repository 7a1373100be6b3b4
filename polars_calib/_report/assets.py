"""The page's fixed parts: its styles, its security policy and its two small scripts."""

__all__ = ["EMBED_SCRIPT", "GLOBALS", "POLICY", "SORT_SCRIPT", "STYLE"]

STYLE = """
:root { color-scheme: light; --ink: #1b1b1b; --muted: #555; --rule: #d0d0d0; --band: #f4f6f8; }
* { box-sizing: border-box; }
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif;
       color: var(--ink); margin: 0 auto; padding: 1.5rem 2rem 3rem; max-width: 1280px; }
h1 { font-size: 1.7rem; margin: 0 0 .5rem; }
h2 { font-size: 1.3rem; margin: 2.2rem 0 .6rem; border-bottom: 1px solid var(--rule);
     padding-bottom: .2rem; }
h3 { font-size: 1.05rem; margin: 1.4rem 0 .4rem; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .15rem 1.2rem;
           margin: .6rem 0; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; }
nav ul { display: flex; flex-wrap: wrap; gap: .3rem 1.2rem; list-style: none; padding: 0;
         margin: .8rem 0; }
a { color: #0b57d0; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; margin: .4rem 0 1rem; }
caption { text-align: left; color: var(--muted); padding: .3rem 0; caption-side: top; }
th, td { padding: .25rem .7rem; border-bottom: 1px solid var(--rule); text-align: left;
         white-space: nowrap; }
th { background: var(--band); font-weight: 600; }
td.num, th.num { text-align: right; }
th button { all: inherit; cursor: pointer; padding: 0; }
th button::after { content: " \\2195"; color: #999; }
th[aria-sort=ascending] button::after { content: " \\2191"; color: var(--ink); }
th[aria-sort=descending] button::after { content: " \\2193"; color: var(--ink); }
tbody tr:nth-child(even) { background: #fafafa; }
figure { margin: 1rem 0 2rem; }
figcaption { color: var(--muted); margin-top: .3rem; max-width: 60rem; }
.chart { overflow-x: auto; min-height: 2rem; }
.chart svg { max-width: 100%; height: auto; }
.muted { color: var(--muted); }
footer { margin-top: 3rem; color: var(--muted); font-size: .9rem; }
@media print {
  body { max-width: none; padding: 0; font-size: 11pt; }
  nav, th button::after { display: none; }
  figure, table, .facts { break-inside: avoid; }
  h2 { break-after: avoid; }
  .scroll, .chart { overflow: visible; }
  a { color: inherit; text-decoration: none; }
}
/* Vega-Embed's chart box and Vega-Tooltip's tooltip (their own style elements are off:
   the page's policy allows no style but this one). */
.vega-embed { position: relative; display: inline-block; box-sizing: border-box; }
#vg-tooltip-element { visibility: hidden; padding: 8px; position: fixed; z-index: 1000;
  font-family: sans-serif; font-size: 11px; border-radius: 3px;
  box-shadow: 2px 2px 4px rgba(0, 0, 0, 0.1); background-color: rgba(255, 255, 255, 0.95);
  border: 1px solid #d9d9d9; color: black; }
#vg-tooltip-element.visible { visibility: visible; }
#vg-tooltip-element h2 { margin-top: 0; margin-bottom: 10px; font-size: 13px; }
#vg-tooltip-element table { border-spacing: 0; margin: 0; }
#vg-tooltip-element table tr { border: none; }
#vg-tooltip-element table tr td { overflow: hidden; text-overflow: ellipsis; padding-top: 2px;
  padding-bottom: 2px; border: none; }
#vg-tooltip-element table tr td.key { color: #808080; max-width: 150px; text-align: right;
  padding-right: 4px; }
#vg-tooltip-element table tr td.value { display: block; max-width: 300px; max-height: 7em;
  text-align: left; }
"""

# No network: every fetch, image, font or frame from elsewhere is refused by the browser.
# Only the page's own scripts and style run, allowed by their hashes (filled in when the
# page is written): no other inline script, event handler or style element, and no
# `eval` (Vega runs its expressions with its interpreter, EMBED_SCRIPT's `ast: true`).
POLICY = (
    "default-src 'none'; script-src {scripts}; style-src {style}; "
    "img-src data: blob:; base-uri 'none'; form-action 'none'"
)

SORT_SCRIPT = """
document.querySelectorAll("table.sortable").forEach(function (table) {
  table.querySelectorAll("thead th").forEach(function (th) {
    var button = th.querySelector("button");
    if (!button) return;
    button.addEventListener("click", function () {
      var ascending = th.getAttribute("aria-sort") !== "ascending";
      table.querySelectorAll("thead th").forEach(function (h) { h.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
      var column = th.cellIndex, numeric = th.classList.contains("num");
      var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
      rows.sort(function (a, b) {
        var x = a.cells[column].getAttribute("data-value");
        var y = b.cells[column].getAttribute("data-value");
        if (x === "" || y === "") return (x === "") - (y === "");  // empty cells last
        var order = numeric ? parseFloat(x) - parseFloat(y) : x.localeCompare(y);
        return ascending ? order : -order;
      });
      rows.forEach(function (row) { body.appendChild(row); });
    });
  });
});
"""

EMBED_SCRIPT = """
document.querySelectorAll("[data-spec]").forEach(function (element) {
  var spec = JSON.parse(document.getElementById(element.getAttribute("data-spec")).textContent);
  // ast: Vega's expression interpreter, not generated code (the policy forbids eval);
  // no style elements of Vega-Embed's or Vega-Tooltip's own (the page's style has theirs).
  var options = {
    renderer: "svg", actions: false, ast: true, defaultStyle: false,
    tooltip: { disableDefaultStyle: true }
  };
  vegaEmbed(element, spec, options)
    .then(function () { element.setAttribute("data-rendered", "true"); })
    .catch(function (error) {
      element.textContent = "This chart could not be drawn: " + error;
      console.error(error);
    });
});
"""


# The bundle's snippet: Vega-Embed as a global for the page's own script.
GLOBALS = "window.vegaEmbed = vegaEmbed; window.vega = vega; window.vegaLite = vegaLite;"
