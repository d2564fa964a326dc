#!/usr/bin/env python3
"""Browser scrape latency and throughput of a ferrocrawl server, beside plain HTTP.

Serves a JavaScript app shell (its content comes from a fetch) from this process on
loopback, starts `ferrocrawl serve` with a fresh data directory for each configuration, and
scrapes the page with `maxAge: 0` (no cache):

- browser, pool size 2 and 4 (4 tabs per browser): the shell is detected and rendered in
  Chromium (`metadata.engine` is checked); after a warm-up, REQUESTS sequential scrapes give
  the p50/p99 latency, then THROUGHPUT scrapes from pool×tabs client threads give pages/s;
- http: the same page with `browser.auto_render = false`, measured the same way.

    benches/browser_latency.py [--bin target/release/ferrocrawl] [--requests 100] [--throughput 200]
                               [--executable PATH]

`--executable` sets `browser.executable` (default: the server's own choice, Debian's
`chromium-headless-shell`, else `chromium`), e.g. `/usr/lib/chromium/chromium` to measure
the full browser.

Only 127.0.0.1 is used. Needs Debian's chromium.
"""

import argparse
import json
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

KEY = "fc-browser-bench-key"

SHELL = b"""<!DOCTYPE html><html><head><title>Shell</title></head><body>
<noscript>You need to enable JavaScript to run this app.</noscript><div id="root"></div>
<script>fetch('/api/content').then((r) => r.json()).then((d) => {
  document.getElementById('root').innerHTML = '<article><h1>' + d.title + '</h1><p>' + d.body + '</p></article>';
});</script></body></html>"""
CONTENT = json.dumps({"title": "Fetched headline", "body": "Seedlings need sixteen hours of light a day. " * 20}).encode()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve_site() -> str:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Headers and body go out in separate writes; without this, Nagle's algorithm and
        # delayed ACKs add 40 ms to every response.
        disable_nagle_algorithm = True

        def do_GET(self):
            body, kind = (CONTENT, "application/json") if self.path.startswith("/api/") else (SHELL, "text/html")
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}/app"


def scrape(base: str, url: str):
    req = urllib.request.Request(f"{base}/v2/scrape", data=json.dumps({"url": url, "maxAge": 0}).encode(), method="POST")
    req.add_header("Authorization", f"Bearer {KEY}")
    req.add_header("Content-Type", "application/json")
    started = time.perf_counter()
    with urllib.request.urlopen(req, timeout=120) as resp:
        body = json.loads(resp.read())
    return (time.perf_counter() - started) * 1000.0, body["data"]["metadata"]["engine"]


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def measure(args, work: Path, url: str, name: str, pool: int, auto_render: bool):
    data = work / name
    shutil.rmtree(data, ignore_errors=True)
    subprocess.run([args.bin, "keys", "create", "--team", "bench", "--key", KEY, "--data", data],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    config = work / f"{name}.toml"
    config.write_text(
        "[security]\nallow_private_targets = true\n"
        f"[browser]\npool_size = {pool}\ntabs_per_browser = 4\nauto_render = {'true' if auto_render else 'false'}\n"
        f"executable = {json.dumps(str(args.executable or ''))}\n"
        "[limits]\nteam_concurrency = 64\n[log]\nlevel = \"warn\"\n"
    )
    port = free_port()
    server = subprocess.Popen([args.bin, "--config", config, "serve", "--port", str(port), "--data", data])
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 30
        while True:
            try:
                if urllib.request.urlopen(f"{base}/health", timeout=1).status == 200:
                    break
            except OSError:
                if time.time() > deadline:
                    sys.exit("the server did not start")
                time.sleep(0.1)
        expected = "chromium" if auto_render else "http"
        clients = pool * 4
        # Warm-up: every browser of the pool started, pages opened once.
        with ThreadPoolExecutor(clients) as ex:
            for _, engine in ex.map(lambda _: scrape(base, url), range(clients * 2)):
                if engine != expected:
                    sys.exit(f"{name}: served by {engine}, expected {expected}")
        latencies = [scrape(base, url)[0] for _ in range(args.requests)]
        started = time.perf_counter()
        with ThreadPoolExecutor(clients) as ex:
            list(ex.map(lambda _: scrape(base, url), range(args.throughput)))
        rate = args.throughput / (time.perf_counter() - started)
    finally:
        server.terminate()
        server.wait()
    row = (name, pool if auto_render else "-", clients, percentile(latencies, 50), percentile(latencies, 99), rate)
    print(f"{name}: p50 {row[3]:.1f} ms, p99 {row[4]:.1f} ms, {rate:.1f} pages/s with {clients} clients", file=sys.stderr)
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default="target/release/ferrocrawl", type=Path)
    ap.add_argument("--work", default=Path("/dev/shm/ferrocrawl-browser-bench"), type=Path)
    ap.add_argument("--requests", type=int, default=100, help="sequential scrapes for the latency figures")
    ap.add_argument("--throughput", type=int, default=200, help="scrapes for the pages/s figure")
    ap.add_argument("--executable", type=Path, help="browser.executable (default: the server's choice)")
    args = ap.parse_args()
    work = args.work
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    url = serve_site()
    rows = [
        measure(args, work, url, "browser-pool-2", 2, True),
        measure(args, work, url, "browser-pool-4", 4, True),
        measure(args, work, url, "http", 2, False),
    ]
    print("| engine | pool | clients | latency p50 ms | latency p99 ms | pages/s |")
    print("|---|---|---|---|---|---|")
    for name, pool, clients, p50, p99, rate in rows:
        print(f"| {name} | {pool} | {clients} | {p50:.1f} | {p99:.1f} | {rate:.1f} |")


if __name__ == "__main__":
    main()
