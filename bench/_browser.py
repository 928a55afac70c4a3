"""The explorer's pages timed in headless Chromium (Debian's /usr/bin/chromium through Python
playwright), each against a static page in the same browser as the floor.

A page counts as rendered at the first animation frame after its trial rows are in the DOM
(a MutationObserver notes when; the same observer times the static floor, a plain HTML file of
50 trial rows served from loopback). Views are timed in turn (floor, run page, filtered views),
`repeat` rounds, each navigation on a fresh page of one browser; medians are printed with their
ratio to the floor and to the target.
"""

from __future__ import annotations

import http.server
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

from agentenv_explorer.headless import CHROMIUM, FLAGS

RUN_PAGE_TARGET_MS = 250.0
FILTER_TARGET_MS = 100.0

#: Notes when trial rows first appear (`window.__rendered`, ms since navigation start).
OBSERVE = """
window.__rendered = null;
new MutationObserver((_, obs) => {
  if (window.__rendered === null && document.querySelector('[data-testid=trial-row]')) {
    obs.disconnect();
    requestAnimationFrame(() => { window.__rendered = performance.now(); });
  }
}).observe(document, { childList: true, subtree: true });
"""

#: Changes the hash and resolves with the ms until the filtered rows are rendered.
FILTER = """
(hash) => new Promise((resolve) => {
  const status = new URLSearchParams(hash.split('?')[1] || '').get('status') || '';
  const offset = new URLSearchParams(hash.split('?')[1] || '').get('offset') || '0';
  const t0 = performance.now();
  const done = () => {
    const sel = document.querySelector('[data-testid=status-filter]');
    const pager = document.querySelector('[data-testid=pager]');
    return sel && sel.value === status && document.querySelector('[data-testid=trial-row]') &&
      (!pager || pager.dataset.offset === offset);
  };
  const obs = new MutationObserver(() => {
    if (done()) { obs.disconnect(); requestAnimationFrame(() => resolve(performance.now() - t0)); }
  });
  obs.observe(document.body, { childList: true, subtree: true });
  location.hash = hash;
})
"""


def static_floor(folder: Path) -> str:
    """A static page of 50 trial rows on a loopback HTTP server (a thread); its URL."""
    rows = "".join(
        f'<tr data-testid="trial-row"><td><a href="#">ti-{i:05d}</a></td><td>task-{i % 10}</td>'
        f"<td>{i // 10}</td><td>passed</td><td>0.50s</td><td></td></tr>"
        for i in range(50)
    )
    (folder / "index.html").write_text(
        "<!doctype html><html><head><meta charset=utf-8><title>floor</title></head><body>"
        f"<main><h1>Run</h1><table><tbody>{rows}</tbody></table></main></body></html>"
    )

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, directory=str(folder), **kwargs)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}/index.html"


def start_explorer(home: Path) -> tuple[subprocess.Popen, str]:
    """`agent-env up --port 0 --json` over `home`'s stores; (process, its page's URL with the
    token it printed: `<base>/?token=...`, to which a view's `#/...` is appended)."""
    exe = shutil.which("agent-env", path=str(Path(sys.executable).parent)) or "agent-env"
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_ENV_")}
    env["AGENT_ENV_HOME"] = str(home)
    (home / ".agentenv").mkdir(exist_ok=True)
    (home / ".agentenv" / "config.toml").touch()  # every local default: the home's stores
    proc = subprocess.Popen(
        [exe, "up", "--port", "0", "--json"],
        cwd=home,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    line = proc.stdout.readline()
    if not line:
        raise SystemExit(f"agent-env up did not start: {proc.stderr.read()[-2000:]}")
    info = json.loads(line)
    return proc, info["url"]


def _load(browser: Any, url: str) -> float:
    page = browser.new_page(viewport={"width": 1280, "height": 900}, bypass_csp=True)
    try:
        page.add_init_script(OBSERVE)
        page.goto(url)
        page.wait_for_function("window.__rendered !== null", timeout=60_000)
        return float(page.evaluate("window.__rendered"))
    finally:
        page.close()


def _filtered(browser: Any, url: str, hashes: list[str]) -> list[float]:
    page = browser.new_page(viewport={"width": 1280, "height": 900}, bypass_csp=True)
    try:
        page.add_init_script(OBSERVE)
        page.goto(url)
        page.wait_for_function("window.__rendered !== null", timeout=60_000)
        return [float(page.evaluate(FILTER, h)) for h in hashes]
    finally:
        page.close()


def measure(home: Path, run_id: str, trials: int, repeat: int = 7) -> dict[str, float]:
    """Median ms of each view over `repeat` interleaved rounds; printed as it goes."""
    from playwright.sync_api import sync_playwright

    views = {
        "status=failed": f"#/run/{run_id}?offset=0&status=failed",
        "status=passed": f"#/run/{run_id}?offset=0&status=passed",
        "middle page": f"#/run/{run_id}?offset={trials // 2}&status=",
    }
    took: dict[str, list[float]] = {"static floor": [], "run page": [], **{k: [] for k in views}}
    proc, page_url = start_explorer(home)
    processes = 2  # agent-env up, and Chromium (its own helper processes not counted apart)
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as pw:
        floor = static_floor(Path(tmp))
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=FLAGS)
        try:
            run_url = f"{page_url}#/run/{run_id}"
            _load(browser, run_url)  # the first view computes the finished run's counts
            for _ in range(repeat):
                took["static floor"].append(_load(browser, floor))
                took["run page"].append(_load(browser, run_url))
                for name, ms in zip(
                    views, _filtered(browser, run_url, list(views.values())), strict=True
                ):
                    took[name].append(ms)
        finally:
            browser.close()
            proc.terminate()
            proc.wait(timeout=30)
    medians = {k: statistics.median(v) for k, v in took.items()}
    base_ms = medians["static floor"]
    print(f"  in Chromium, {repeat} interleaved rounds ({processes} processes started):")
    print(f"  {'view':<28} {'median':>9} {'min':>8} {'max':>8} {'x floor':>8} {'x target':>9}")
    for name, values in took.items():
        target = (
            RUN_PAGE_TARGET_MS
            if name == "run page"
            else FILTER_TARGET_MS
            if name in views
            else None
        )
        ratio = f"{medians[name] / target:>8.2f}x" if target else f"{'':>9}"
        print(
            f"  {name:<28} {medians[name]:>7.1f}ms {min(values):>6.1f}ms {max(values):>6.1f}ms "
            f"{medians[name] / base_ms:>7.2f}x {ratio}"
        )
    print(
        f"  targets: run page <= {RUN_PAGE_TARGET_MS:.0f} ms, each filtered view <= "
        f"{FILTER_TARGET_MS:.0f} ms"
    )
    return medians
