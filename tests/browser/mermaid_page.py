"""Render many Mermaid diagrams in one headless-Chromium page and read back what was drawn.

The page loads the npm package's ``mermaid.min.js`` from disk, renders each diagram with
``mermaid.render`` one after the other, keeps each SVG in the page (so a screenshot shows
them all) and writes a JSON summary into ``<pre id="result">``: per diagram the error
Mermaid raised (if any), every gantt bar (``rect.task``: id, class, x, width), every
milestone, and the sequence diagram's message and note texts.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

from chromium_page import Page, load, need_mermaid

_SCRIPT = r"""
const diagrams = JSON.parse(document.getElementById("diagrams").textContent);
const out = {};
mermaid.initialize({startOnLoad: false, securityLevel: "strict"});
(async () => {
  for (const [name, text] of Object.entries(diagrams)) {
    const box = document.createElement("section");
    const title = document.createElement("h2");
    title.textContent = name;
    box.appendChild(title);
    document.body.appendChild(box);
    const entry = {error: null, bars: [], milestones: [], messages: [], notes: [], height: 0};
    try {
      const ident = "d" + Object.keys(out).length;
      const {svg} = await mermaid.render(ident, text);
      box.insertAdjacentHTML("beforeend", svg);
      const root = box.querySelector("svg");
      entry.height = root.getBoundingClientRect().height;
      if (root.querySelector(".error-icon, .error-text")) entry.error = "Mermaid drew its error picture";
      for (const rect of root.querySelectorAll("rect.task")) {
        const item = {
          id: rect.id,
          cls: rect.getAttribute("class"),
          x: parseFloat(rect.getAttribute("x")),
          width: parseFloat(rect.getAttribute("width")),
          fill: getComputedStyle(rect).fill,
        };
        (/milestone/.test(item.cls) ? entry.milestones : entry.bars).push(item);
      }
      for (const t of root.querySelectorAll("text.messageText")) entry.messages.push(t.textContent);
      for (const t of root.querySelectorAll("text.noteText")) entry.notes.push(t.textContent);
    } catch (error) {
      entry.error = String(error && error.message ? error.message : error);
    }
    out[name] = entry;
  }
  document.getElementById("result").textContent = JSON.stringify(out);
})();
"""

_RESULT = re.compile(r'<pre id="result">(.*?)</pre>', re.DOTALL)


def page_html(diagrams: dict[str, str]) -> str:
    """The page text (mermaid.min.js referenced by file URI)."""
    mermaid_js = need_mermaid().resolve().as_uri()
    payload = json.dumps(diagrams).replace("</", "<\\/")
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<script src='{mermaid_js}'></script></head><body>"
        f'<script type="application/json" id="diagrams">{payload}</script>'
        '<pre id="result"></pre>'
        f"<script>{_SCRIPT}</script></body></html>"
    )


def render_all(diagrams: dict[str, str], folder: Path) -> tuple[dict[str, Any], Page]:
    """Render every diagram in one browser; (per-name summary, the page) ."""
    page = folder / "diagrams.html"
    page.write_text(page_html(diagrams), encoding="utf-8")
    loaded = load(page)
    found = _RESULT.search(loaded.dom)
    if found is None or not found.group(1).strip():
        msg = f"the page wrote no result; console: {loaded.console}"
        raise AssertionError(msg)
    return json.loads(html.unescape(found.group(1))), loaded
