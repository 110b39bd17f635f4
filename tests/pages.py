"""Checks of a rendered report page, shared by the unit tests (pages rendered from saved runs)
and the shipped-scenario integration test (pages of fresh runs on the lab).

A page is checked as a reader sees it: in headless Chromium, where every <img> must load and
decode, and in the words its plots draw (every text artist of every figure, captured as it
is saved), where a passing test must never be "FAILED".
"""

from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

from netrun.report.plots import png

#: The window a report page must fit without sideways scrolling (issue 36).
WIDTH = 1400
#: Chromium's flags for a headless check that touches nothing outside its own profile.
CHROMIUM_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
    "--allow-file-access-from-files", "--virtual-time-budget=10000", "--disable-quic",
    f"--window-size={WIDTH},1000", "--hide-scrollbars",
)  # fmt: skip
#: Runs in the page once it has loaded: what each image did, and the page's visible text.
_PROBE = """<script>
window.addEventListener("load", () => {
  const imgs = Array.from(document.images).map(i => ({
    alt: i.alt, complete: i.complete, width: i.naturalWidth, height: i.naturalHeight}));
  const out = document.createElement("pre");
  out.id = "netrun-check";
  const wide = Array.from(document.querySelectorAll(".scroll"))
    .filter(d => d.scrollWidth > d.clientWidth + 1)
    .map(d => d.innerText.slice(0, 120));
  out.textContent = JSON.stringify({imgs: imgs, text: document.body.innerText,
    width: document.documentElement.scrollWidth, wide: wide});
  document.body.appendChild(out);
});
</script>"""
_RESULT = re.compile(r'<pre id="netrun-check">(.*?)</pre>', re.S)
_DATA_URI = re.compile(r'<img alt="([^"]*)" src="data:image/png;base64,([^"]+)"')
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def chromium() -> str | None:
    """The Chromium binary (Debian's `chromium`), or None when it is not installed."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


def in_browser(page: Path, binary: str, timeout: float = 90) -> dict[str, Any]:
    """Load ``page`` (with a probe script added) in headless Chromium; returns the probe's
    {"imgs": [{alt, complete, width, height}], "text": visible text}."""
    with tempfile.TemporaryDirectory(prefix="netrun-chromium-") as tmp:
        probe = Path(tmp) / "page.html"
        probe.write_text(page.read_text().replace("</body>", _PROBE + "</body>", 1))
        run = subprocess.run(
            [binary, *CHROMIUM_FLAGS, "--dump-dom", f"--user-data-dir={tmp}/profile",
             probe.as_uri()],
            capture_output=True, text=True, timeout=timeout,
        )  # fmt: skip
    found = _RESULT.search(run.stdout)
    assert found, f"chromium ran no probe (exit {run.returncode}): {run.stderr[-2000:]}"
    text = found.group(1).replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    result: dict[str, Any] = json.loads(text)
    return result


def screenshot(page: Path, binary: str, png: Path, height: int = 2400, timeout: float = 90) -> Path:
    """The page as a WIDTH-pixel window shows its top ``height`` pixels, as a PNG to look at."""
    with tempfile.TemporaryDirectory(prefix="netrun-chromium-") as tmp:
        flags = [f for f in CHROMIUM_FLAGS if not f.startswith("--window-size")]
        subprocess.run(
            [binary, *flags, f"--window-size={WIDTH},{height}", f"--screenshot={png}",
             f"--user-data-dir={tmp}/profile", page.as_uri()],
            capture_output=True, text=True, timeout=timeout,
        )  # fmt: skip
    return png


def overflow(result: dict[str, Any]) -> list[str]:
    """What scrolls sideways in a WIDTH-pixel window: the page, or a table's box."""
    page = [f"the page is {result['width']} px wide"] if result.get("width", 0) > WIDTH else []
    return page + [f"a table scrolls sideways: {text!r}" for text in result.get("wide", [])]


def broken_images(result: dict[str, Any]) -> list[str]:
    """The images Chromium could not load or decode."""
    return [i["alt"] for i in result["imgs"] if not i["complete"] or not i["width"]]


def inlined_pngs(html: str) -> dict[str, bytes]:
    """alt -> the bytes of each inlined PNG (without a browser)."""
    return {alt: base64.b64decode(data) for alt, data in _DATA_URI.findall(html)}


def passing(doc: dict[str, Any]) -> set[str]:
    """The tests whose every repeat passed."""
    names = {str(t["name"]) for t in doc["tests"]}
    return names - {str(t["name"]) for t in doc["tests"] if t["status"] != "ok"}


@contextmanager
def figure_texts() -> Iterator[dict[str, list[str]]]:
    """Inside the block, every figure saved is also recorded: file name -> its texts."""
    seen: dict[str, list[str]] = {}
    real = png.save

    def record(fig: Any, path: Path) -> Path:
        from matplotlib.text import Text

        seen[Path(path).name] = [t.get_text() for t in fig.findobj(Text) if t.get_text()]
        return real(fig, path)

    with mock.patch.object(png, "save", record):
        yield seen
