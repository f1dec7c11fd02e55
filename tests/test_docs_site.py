"""The built documentation site, as people read it: mkdocs builds it (strict), Python's
http.server serves it on 127.0.0.1, and headless Chromium (Debian's `chromium`) opens the pages.
The diagrams page and the tutorial show their rendered diagrams (each image loads: naturalWidth
> 0, and is graphviz's drawing, shown at its own size), no code block cuts a line, and no name in a table's first column
is broken across lines, and no table is wider than the text column. The parts page lists every built-in part, and the search index has them.

Chromium runs a probe page served beside the site: it opens a page in a same-origin iframe,
measures it with the DOM and writes the result into its own DOM, which `--dump-dom` prints."""

from __future__ import annotations

import functools
import http.server
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from hwspec.cli import docsgen
from tests.test_docs_parts import shipped_parts

ROOT = Path(__file__).resolve().parent.parent

pytestmark = [
    pytest.mark.consumer,
    pytest.mark.skipif(importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("material") is None,
                       reason="mkdocs and its Material theme are not installed (pip install -e '.[docs]')"),
]

needs_chromium = pytest.mark.skipif(shutil.which("chromium") is None,
                                    reason="Debian's chromium is not installed (apt-get install chromium)")
needs_dot = pytest.mark.skipif(shutil.which("dot") is None,
                               reason="graphviz's dot is not installed (apt-get install graphviz): the diagrams are placeholders")

PROBE = """<!doctype html>
<html><body><pre id="result">pending</pre>
<iframe id="page" src="PAGE" width="1280" height="900"></iframe>
<script>
const frame = document.getElementById("page");
frame.addEventListener("load", async () => {
  const doc = frame.contentDocument;
  const images = [...doc.querySelectorAll("article img")];
  await Promise.all(images.map(i => i.complete ? null : new Promise(done => { i.onload = i.onerror = done; })));
  const style = e => frame.contentWindow.getComputedStyle(e);
  const cut = [...doc.querySelectorAll("article pre, article pre > code")].filter(e =>
    e.scrollWidth > e.clientWidth && !["auto", "scroll"].includes(style(e).overflowX)
    && !(e.tagName === "CODE" && ["auto", "scroll"].includes(style(e.parentElement).overflowX)));
  const tableCode = [...doc.querySelectorAll("article table code")];
  document.getElementById("result").textContent = JSON.stringify({
    title: doc.title,
    images: images.map(i => ({src: i.getAttribute("src"), naturalWidth: i.naturalWidth, shownWidth: i.width,
                              paragraphOverflow: style(i.closest("p")).overflowX})),
    codeBlocks: doc.querySelectorAll("article pre > code").length,
    cutCode: cut.map(e => e.textContent.slice(0, 80)),
    tableNames: doc.querySelectorAll("article table td:first-child code").length,
    brokenNames: [...doc.querySelectorAll("article table td:first-child code")]
      .filter(e => e.getClientRects().length > 1).map(e => e.textContent),
    wideTables: [...doc.querySelectorAll("article table")]
      .filter(t => t.getBoundingClientRect().width > doc.querySelector("article").getBoundingClientRect().width + 1)
      .map(t => t.querySelector("tr").textContent.trim().slice(0, 80)),
    tableCodeBreaking: tableCode.filter(e => style(e).wordBreak !== "normal" || style(e).overflowWrap !== "normal")
      .map(e => e.textContent),
  });
});
</script></body></html>
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    site = tmp_path_factory.mktemp("docs") / "site"
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)], cwd=ROOT,
                            env={**os.environ, "NO_MKDOCS_2_WARNING": "1"}, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return site


@pytest.fixture(scope="module")
def served(site: Path) -> Iterator[str]:
    """The site on http://127.0.0.1:<a free port>/, for as long as the module's tests run."""
    handler = functools.partial(QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # the base class names its argument `format`
        pass


def chromium(tmp_path: Path, *arguments: str) -> subprocess.CompletedProcess:
    """Headless Debian Chromium with a profile of its own, nothing fetched but what it is given."""
    return subprocess.run(
        ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={tmp_path / 'chromium-profile'}", *arguments],
        capture_output=True, text=True, timeout=120)


def measured(site: Path, base: str, page: str, tmp_path: Path) -> dict:
    """What the probe measures on `page` (a site path such as `/diagrams/`) in Chromium."""
    probe = site / f"probe-{tmp_path.name}.html"
    probe.write_text(PROBE.replace("PAGE", page))
    result = chromium(tmp_path, "--virtual-time-budget=30000", "--window-size=1400,1000", "--dump-dom", f"{base}/{probe.name}")
    found = re.search(r'<pre id="result">(.*?)</pre>', result.stdout, re.DOTALL)
    assert found and found.group(1) != "pending", (result.stdout[-2000:], result.stderr[-2000:])
    import html

    return json.loads(html.unescape(found.group(1)))


@needs_chromium
@needs_dot
@pytest.mark.parametrize(("page", "images"), [
    ("/diagrams/", ["gb200-tray/topology.svg", "aws-p5-48xlarge/topology.svg", "aws-p5-48xlarge/topology-fabric.svg",
                    "gb200-nvl72/cluster.svg"]),
    ("/tutorial/", ["my-node/topology.svg"]),
])
def test_chromium_shows_the_pages_rendered_diagrams(site, served, tmp_path, page, images):
    result = measured(site, served, page, tmp_path)
    shown = [(image["src"].split("images/diagrams/", 1)[1], image["naturalWidth"] > 0,
              image["shownWidth"] == image["naturalWidth"], image["paragraphOverflow"]) for image in result["images"]]
    # each loads, at its own size (not shrunk to the column), in a paragraph that scrolls sideways
    assert shown == [(image, True, True, "auto") for image in images], result["images"]
    for image in images:  # graphviz's drawing, not the placeholder
        svg = (site / "images" / "diagrams" / image).read_text()
        assert "<!-- Generated by graphviz" in svg and docsgen.PLACEHOLDER_SVG not in svg, image
    assert result["cutCode"] == [], result["cutCode"]


@needs_chromium
@pytest.mark.parametrize(("page", "tables_fit"), [
    ("/tutorial/", True), ("/diagrams/", True), ("/reference/fields/", True), ("/reference/parts/", True), ("/internals/", True),
    ("/estimates/", False),  # its tables of model figures have a column per model: they scroll sideways
])
def test_chromium_shows_every_code_line_whole_and_every_name_in_a_table_on_one_line(site, served, tmp_path, page, tables_fit):
    result = measured(site, served, page, tmp_path)
    assert result["codeBlocks"] + result["tableNames"] > 0, result
    assert result["cutCode"] == [], result["cutCode"]
    assert result["brokenNames"] == [], result["brokenNames"]
    assert result["tableCodeBreaking"] == [], result["tableCodeBreaking"][:10]
    if tables_fit:  # a table fits the column: no description out of sight
        assert result["wideTables"] == [], result["wideTables"]


@needs_chromium
def test_chromium_screenshots_the_diagrams_page(site, served, tmp_path):
    """A picture to look at (kept under the test's tmp_path): Chromium renders the page to PNG."""
    shot = tmp_path / "diagrams.png"
    result = chromium(tmp_path, "--virtual-time-budget=30000", "--window-size=1280,2400", f"--screenshot={shot}",
                      f"{served}/diagrams/")
    assert shot.exists() and shot.read_bytes().startswith(b"\x89PNG"), result.stderr[-2000:]


def test_the_built_parts_page_and_the_search_index_have_every_part(site):
    """Every part in the package's parts files is an anchored heading of the rendered page, and
    the site's search (mkdocs' search index) finds it by name."""
    page = (site / "reference" / "parts" / "index.html").read_text()
    index = json.loads((site / "search" / "search_index.json").read_text())
    indexed = {entry["location"] for entry in index["docs"]}
    names = [name for section in shipped_parts().values() for name in section]
    assert len(names) >= 60
    for name in names:
        assert f'id="{name}"' in page, name
        assert f"reference/parts/#{name}" in indexed, name
    assert any(entry["title"] == "epyc-7r13" for entry in index["docs"])


def test_the_built_internals_page_has_the_python_api_in_place_of_its_marker(site):
    page = (site / "internals" / "index.html").read_text()
    assert docsgen.MODEL_REFERENCE_MARKER not in page
    for name in ("platform", "gpu", "nic", "cluster", "node_specs", "cluster_specs"):
        assert f'id="{name}"' in page, name
    assert "<td><code>bus</code></td>" in page
