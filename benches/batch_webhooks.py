#!/usr/bin/env python3
"""Batch scrape throughput and webhook delivery lag of a ferrocrawl server.

Serves the crawl bench's synthetic site with nginx on loopback, starts `ferrocrawl serve`
(fresh data directory, team concurrency 50) and a webhook receiver in this process, then
runs RUNS batches of PAGES URLs one after another. For each batch it reports pages/s (POST
to status `completed`, polled every 20 ms) and, for its `batch_scrape.completed` event, the
delay from the moment the event happened (`X-Service-Event-Time`) to its arrival at the
receiver. Page events are measured the same way.

    benches/batch_webhooks.py --harness PATH/TO/bench/crawl [--pages 1000] [--runs 5]

Only 127.0.0.1 is used. Needs nginx-light (see the harness README).
"""

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

KEY = "fc-batch-bench-key"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def now_ms() -> float:
    return time.time() * 1000.0


class Receiver:
    """Webhook receiver: records (arrival ms, event time ms, type, job id) per event."""

    def __init__(self):
        self.events = []
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                arrived = now_ms()
                event = json.loads(body)
                happened = float(self.headers.get("X-Service-Event-Time", "nan"))
                with receiver.lock:
                    receiver.events.append((arrived, happened, event["type"], event["id"]))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *_):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def of(self, job: str):
        with self.lock:
            return [e for e in self.events if e[3] == job]


def call(base: str, method: str, path: str, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(f"{base}{path}", data=data, method=method)
    req.add_header("Authorization", f"Bearer {KEY}")
    req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req, timeout=120) as resp:
        return json.loads(resp.read())


def wait_until(check, timeout_s: float, what: str):
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.02)
    sys.exit(f"timed out waiting for {what}")


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def site_urls(site: Path, base: str, pages: int):
    www = site / "www"
    paths = sorted(
        "/" + str(p.relative_to(www)).removesuffix("index.html")
        for p in www.rglob("*.html")
        if "private" not in p.parts
    )
    if len(paths) < pages:
        sys.exit(f"the site has {len(paths)} pages, fewer than --pages {pages}")
    return [base + p for p in paths[:pages]]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--harness", required=True, type=Path, help="the crawl bench folder (site/gen_site.py, site/serve.sh)")
    ap.add_argument("--bin", default="target/release/ferrocrawl", type=Path)
    ap.add_argument("--work", default=Path("/dev/shm/ferrocrawl-batch-bench"), type=Path)
    ap.add_argument("--pages", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--concurrency", type=int, default=50, help="team concurrency (and per-site, per-job caps)")
    ap.add_argument("--latency-ms", type=int, default=0, help="delay nginx adds to every response")
    args = ap.parse_args()

    work = args.work
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    site_port = free_port()
    site = work / "site"
    subprocess.run(
        [sys.executable, args.harness / "site/gen_site.py", site, "-n", str(max(args.pages, 1000) + 100),
         "--base-url", f"http://127.0.0.1:{site_port}"],
        check=True, stdout=subprocess.DEVNULL,
    )
    procs = []
    try:
        procs.append(subprocess.Popen([args.harness / "site/serve.sh", site, str(site_port), str(args.latency_ms)]))
        data = work / "data"
        subprocess.run([args.bin, "keys", "create", "--team", "bench", "--key", KEY, "--data", data],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        config = work / "bench.toml"
        c = args.concurrency
        config.write_text(
            f"[security]\nallow_private_targets = true\n"
            f"[crawl]\nmax_concurrency = {c}\ndomain_concurrency = {c}\n"
            f"[limits]\nteam_concurrency = {c}\n"
            f"[log]\nlevel = \"warn\"\n"
            f"[teams.bench]\nwebhook_secret = \"bench-secret-0123456789\"\n"
        )
        api_port = free_port()
        procs.append(subprocess.Popen([args.bin, "--config", config, "serve", "--port", str(api_port), "--data", data]))
        base = f"http://127.0.0.1:{api_port}"

        def healthy():
            try:
                return urllib.request.urlopen(f"{base}/health", timeout=1).status == 200
            except OSError:
                return False

        wait_until(healthy, 30, "the server")
        wait_until(lambda: healthy_site(site_port), 30, "nginx")
        hooks = Receiver()
        urls = site_urls(site, f"http://127.0.0.1:{site_port}", args.pages)
        rows = []
        page_lags = []
        for run in range(1, args.runs + 1):
            started = time.time()
            job = call(base, "POST", "/v2/batch/scrape", {"urls": urls, "formats": ["markdown"],
                                                          "webhook": {"url": hooks.url}})["id"]
            status = wait_until(
                lambda: (s := call(base, "GET", f"/v2/batch/scrape/{job}?limit=1"))["status"] != "scraping" and s,
                600, "the batch")
            seconds = time.time() - started
            completed = wait_until(
                lambda: [e for e in hooks.of(job) if e[2] == "batch_scrape.completed"], 600, "batch_scrape.completed")
            arrived, happened, _, _ = completed[0]
            page_lags += [a - h for a, h, t, _ in hooks.of(job) if t == "batch_scrape.page"]
            rows.append((run, status["completed"], seconds, status["completed"] / seconds, arrived - happened))
            print(f"run {run}: {status['completed']}/{status['total']} pages in {seconds:.2f}s, "
                  f"{status['completed'] / seconds:.0f} pages/s, completed webhook after {arrived - happened:.1f} ms",
                  file=sys.stderr)
    finally:
        for p in reversed(procs):
            p.terminate()
            p.wait()

    lags = [r[4] for r in rows]
    rates = [r[3] for r in rows]
    print(f"| runs | pages/batch | concurrency | pages/s median (min-max) | completed lag p50 / p99 ms "
          f"| page lag p50 / p99 ms |")
    print("|---|---|---|---|---|---|")
    print(f"| {len(rows)} | {args.pages} | {args.concurrency} | {percentile(rates, 50):.0f} "
          f"({min(rates):.0f}-{max(rates):.0f}) | {percentile(lags, 50):.1f} / {percentile(lags, 99):.1f} "
          f"| {percentile(page_lags, 50):.1f} / {percentile(page_lags, 99):.1f} |")


def healthy_site(port: int) -> bool:
    try:
        return urllib.request.urlopen(f"http://127.0.0.1:{port}/robots.txt", timeout=1).status == 200
    except OSError:
        return False


if __name__ == "__main__":
    os.environ.setdefault("NGINX_WORKERS", "1")
    main()
