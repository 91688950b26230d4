"""What a learner waits for on the JupyterLite site (build/lite, made by `make lite`).

Serves build/lite on 127.0.0.1, counting every byte it sends, and opens a lesson in a fresh
Chromium profile (empty cache and browser storage: a first visit), then prints

- the site's size on disk, and how much of it is Pyodide (static/pyodide);
- the bytes of that cold load, until the first cell's output is on the page, and their share
  of the site;
- the seconds from opening the page to an idle kernel, and to the output of the lesson's
  first cell that imports the course (numpy, sympy, matplotlib, attnlib); then the same for
  a second visit in the same profile (files come from the browser's cache).

The machine's load average is printed before and after: on a shared machine the seconds
say little alone; compare two sites under the same load with ``--site`` (for example a copy
of build/lite with the official matplotlib wheel and no preloading) and read the ratio.

Usage: .venv/bin/python benchmarks/lite.py [--lesson notebooks/03_scoring.ipynb]
       [--site build/lite]
(needs `make lite` and `make test-browser`'s packages; Debian's /usr/bin/chromium).
"""

import argparse
import functools
import http.server
import os
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SITE = ROOT / "build" / "lite"
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]
IDLE = ".jp-NotebookPanel:visible .jp-Notebook-ExecutionIndicator[data-status='idle']"


class Counter:
    def __init__(self):
        self.bytes = 0
        self.lock = threading.Lock()

    def add(self, n):
        with self.lock:
            self.bytes += n


def handler_class(counter):
    class Handler(http.server.SimpleHTTPRequestHandler):
        extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map}
        extensions_map.update({".wasm": "application/wasm", ".mjs": "text/javascript"})

        def copyfile(self, source, outputfile):
            while chunk := source.read(1 << 16):
                outputfile.write(chunk)
                counter.add(len(chunk))

        def log_message(self, *args):
            pass

    return Handler


def folder_size(path):
    return sum(p.stat().st_size for p in Path(path).rglob("*") if p.is_file())


def visit(context, base, lesson, counter):
    """Open the lesson; return (s to idle kernel, s to the first import cell's output, bytes)."""
    page = context.new_page()
    page.set_default_timeout(300_000)
    start_bytes = counter.bytes
    t0 = time.perf_counter()
    page.goto(f"{base}/lab/index.html?path={lesson}")
    page.wait_for_selector(IDLE)
    t_idle = time.perf_counter() - t0
    cells = page.locator(".jp-CodeCell")
    first = next(i for i in range(cells.count()) if "import attnlib" in cells.nth(i).inner_text())
    cells.nth(first).locator(".cm-content").click()
    page.keyboard.press("Shift+Enter")
    cells.nth(first).locator(".jp-InputPrompt", has_text="[1]").wait_for()
    page.wait_for_selector(IDLE)
    t_output = time.perf_counter() - t0
    page.close()
    return t_idle, t_output, counter.bytes - start_bytes


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lesson", default="notebooks/03_scoring.ipynb")
    parser.add_argument("--site", type=Path, default=SITE, help="the site to serve (build/lite)")
    args = parser.parse_args(argv)
    site = args.site
    if not (site / "jupyter-lite.json").exists():
        print(f"no site in {site}: run `make lite` first")
        return 1
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"load average before: {load} ({os.cpu_count()} cores)")
    from playwright.sync_api import sync_playwright

    counter = Counter()
    handler = functools.partial(handler_class(counter), directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    size, pyodide = folder_size(site), folder_size(site / "static" / "pyodide")
    print(f"site: {size / 1e6:.1f} MB on disk, of which Pyodide {pyodide / 1e6:.1f} MB")
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            context = browser.new_context()
            cold = visit(context, base, args.lesson, counter)
            warm = visit(context, base, args.lesson, counter)
            browser.close()
    finally:
        server.shutdown()
    for name, (t_idle, t_output, sent) in (("cold", cold), ("second", warm)):
        print(
            f"{name} load of {args.lesson}: {sent / 1e6:.1f} MB sent "
            f"({sent / size:.2f} of the site), kernel idle after {t_idle:.1f} s, "
            f"first cell's output after {t_output:.1f} s"
        )
    print(f"second load / cold load, time to first output: {warm[1] / cold[1]:.2f}")
    print(f"load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
