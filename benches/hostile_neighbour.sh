#!/usr/bin/env bash
# One hostile host does not starve the rest. One `ferrocrawl serve` crawls the crawl
# benchmark's 10 000-page site (already served at SITE_URL) alone, then again while it also
# crawls a site of 120 machine-made pages of 2.4 to 5 MB each (nested <div>, <ul><li>,
# tables, and <li> with a nested <ul> at every level, 50 000 to 200 000 levels), served by
# nginx on 127.0.0.1:8081. Both crawls send maxAge 0, so every page is fetched, converted and
# cached as in a first crawl. Alone and beside alternate, RUNS times each; printed are the normal
# crawl's pages per second each time, the slowest of its status reads (GET /v2/crawl/ID,
# polled every 0.1 s) and the ratio of the medians.
#
#   [BIN=BINARY] benches/hostile_neighbour.sh SITE_URL [RUNS]     e.g. http://127.0.0.1:8080/ 3
#
# Needs: the crawl harness (../shared/bench/crawl: site/gen_site.py, site/serve.sh, nginx),
# cargo build --release, python3.
set -euo pipefail
cd "$(dirname "$0")/.."
site_url=${1:?SITE_URL}
runs=${2:-3}
bin=${BIN:-target/release/ferrocrawl}
harness=${HARNESS:-../shared/bench/crawl}
work=$(mktemp -d)
chmod 755 "$work"   # nginx's workers run unprivileged
cleanup() { kill "$server" "$deep_nginx" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

python3 - "$work/deep" <<'EOF'
import os, sys
root = sys.argv[1]
os.makedirs(f"{root}/www/d", exist_ok=True)
open(f"{root}/redirects.map", "w").close()
shapes = [("<div>", "</div>", 200_000), ("<ul><li>", "</li></ul>", 64_000),
          ("<table><tr><td>", "</td></tr></table>", 64_000), ("<li>", "</ul></li>", 50_000)]
n = 120
with open(f"{root}/www/index.html", "w") as f:
    f.write("<html><body>" + "".join(f'<a href="/d/{i}.html">deep {i}</a> ' for i in range(n)) + "</body></html>")
for i in range(n):
    open_tag, close_tag, depth = shapes[i % len(shapes)]
    if open_tag == "<li>":
        body = "".join(f"<li>w{j}<ul>" for j in range(depth)) + close_tag * depth
    else:
        body = "".join(f"{open_tag}w{j} " for j in range(depth)) + close_tag * depth
    with open(f"{root}/www/d/{i}.html", "w") as f:
        f.write(f'<html><body><a href="/d/{(i + 1) % n}.html">next</a>{body}</body></html>')
EOF
bash "$harness/site/serve.sh" "$work/deep" 8081 >/dev/null 2>&1 &
deep_nginx=$!

port=$((20000 + RANDOM % 10000))
FERROCRAWL_SECURITY__ALLOW_PRIVATE_TARGETS=true "$bin" serve --port "$port" --data "$work/data" \
  >"$work/log" 2>&1 &
server=$!
for _ in $(seq 100); do curl -sf "localhost:$port/health" >/dev/null && break; sleep 0.1; done

python3 - "$port" "$(cat "$work/data/api-key")" "$site_url" "$runs" <<'EOF'
import json, statistics, sys, time, urllib.request
port, key, site, runs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
base = f"http://localhost:{port}"

def call(method, path, body=None):
    req = urllib.request.Request(base + path, method=method, data=json.dumps(body).encode() if body else None,
                                 headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    with urllib.request.urlopen(req) as r:
        return json.load(r)

def start(url):
    return call("POST", "/v2/crawl", {"url": url, "limit": 100000, "crawlEntireDomain": True,
                                      "sitemap": "skip", "scrapeOptions": {"formats": ["markdown"], "maxAge": 0}})["id"]

def wait(job):
    """The job's final status, and the slowest of the status reads that waited for it."""
    slowest = 0.0
    while True:
        t = time.monotonic()
        s = call("GET", f"/v2/crawl/{job}?limit=1")
        slowest = max(slowest, time.monotonic() - t)
        if s["status"] != "scraping":
            return s, slowest
        time.sleep(0.1)

rates = {"alone": [], "beside": []}
for _ in range(runs):
    for mode in ("alone", "beside"):
        deep = start("http://127.0.0.1:8081/") if mode == "beside" else None
        while deep:  # the deep crawl is in full swing before the normal one starts
            d = call("GET", f"/v2/crawl/{deep}?limit=1")
            if d["status"] != "scraping" or d["completed"] >= 4:
                break
            time.sleep(0.1)
        before = call("GET", f"/v2/crawl/{deep}?limit=1")["completed"] if deep else 0
        t0 = time.monotonic()
        done, slowest = wait(start(site))
        elapsed = time.monotonic() - t0
        extra = f", slowest status read {slowest * 1000:.0f} ms"
        if deep:
            d = call("GET", f"/v2/crawl/{deep}?limit=1")
            extra += f" (the deep crawl did {d['completed'] - before} pages meanwhile)"
            if d["status"] == "scraping":
                call("DELETE", f"/v2/crawl/{deep}")
            time.sleep(1)
        rates[mode].append(done["completed"] / elapsed)
        print(f"{mode:6} {done['completed']} pages in {elapsed:.2f} s = {rates[mode][-1]:.0f} pages/s{extra}", flush=True)
alone, beside = statistics.median(rates["alone"]), statistics.median(rates["beside"])
print(f"median alone {alone:.0f} pages/s, beside the deep site {beside:.0f} pages/s: {beside / alone:.1%}")
EOF
