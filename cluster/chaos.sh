#!/usr/bin/env bash
# Chaos rounds on a 3-node cluster on this machine: during crawls of several sites and a
# batch, node n2 is killed with SIGKILL and started again, and node n3 is frozen with
# SIGSTOP for 10 s; then every job must finish with each page exactly once, no request may
# reach a robots.txt-disallowed path, and no site may see more concurrent requests than
# `crawl.domain_concurrency` or requests closer together than `crawl.domain_min_interval_ms`,
# as the sites' own nginx access logs (with $msec) tell.
#
#   cluster/chaos.sh [ROUNDS]        # default 1 round; prints one result line per round
#
# Needs nginx (Debian's nginx-light), python3 and the crawl benchmark's site generator
# (../shared/bench/crawl). Everything listens on 127.0.0.x; SITES sites (default 6) of
# PAGES pages (default 300) each, on 127.0.0.2.. port 8090, answering after LATENCY_MS (20).
# Env: NODE_BIN (target/release/ferrocrawl), NODE_BINS (a binary per node, e.g. the previous
# release for n2 only: "new old new"; see local.sh), DOMAIN_CONCURRENCY (2), INTERVAL_MS (10), FAULTS
# (1; 0 runs the rounds without faults, as a reference; `cut` cuts the network instead:
# see below), NODES (3; the faults need 3),
# MARGIN_MS (the server's crawl.domain_interval_margin_ms, 3, when unset), HOPS (10): each
# site also answers /away/1../away/HOPS with a redirect to a page of the next site, and the
# batch asks for them, so every site also gets requests sent by the node of another site
# (a redirect hop), which must keep to its spacing like its own.
# CRAWLS (1): crawls of each site, started through the nodes in turn, so that jobs on
# several nodes want one site at once (as when a cut puts them on both sides).
# OTHER_PAGES (20): each site is also served on port 8091 (a second site of the same host,
# as http:// and https:// of one host are), and the batch asks for that many of its pages
# there: the host's limits hold for both its sites together (the access logs of both
# ports are read as one host's).
# NGINX_CPUS / NODE_CPUS (taskset lists, e.g. 1 and 0) pin the sites and the nodes to
# cores of their own, so a site's clock is not held up by the nodes sharing its core.
# CAPTURE (1 when tcpdump can run here, i.e. as root with tcpdump installed; 0 turns it off)
# also records every request as it crosses loopback and adds the spacing seen there, in
# microseconds, free of nginx's millisecond stamps and event loop: wire_min_gap_ms and
# wire_gaps_under_interval. Spacing is judged on the wire (what reaches the site's socket);
# nginx stamps a request when its event loop gets to it, which on a busy core can be
# milliseconds later (cluster/README.md).
# FAULTS=cut: n3's cluster traffic with n1 and n2 is dropped for CUT_S seconds (10), as by
# a network that loses every packet, while all three keep running and can reach the sites:
# each side sees the other go silent, and only the side with most members may fetch (two
# live actors of one site would show as spacing or concurrency broken on the wire). The
# script runs itself in a network namespace of its own (unshare, iproute2: nothing outside
# it is touched), the nodes' cluster ports on 127.0.1.1..3 so that `ip rule` can drop what
# passes between two of them; cut_in_touch tells whether n3 still fetched during the cut
# (it must not: false). FAULTS=partial cuts n3 off n1 only: n2 still hears both, and each
# of n1 and n3 sees the other silent while it sees n2. FAULTS=oneway drops only what n3
# sends to n1 and n2: n3 still receives their packets (but none of its answers, its TCP
# acknowledgements among them, gets through).
# KEEP_LOGS=DIR keeps the nodes' logs of every round that lost a page in DIR/roundN/.
# FAULTS=restart: n2 and then n3 are stopped with SIGTERM and started again as soon as each
# has exited, one after the other, as in a rolling upgrade (a graceful stop hands the sites
# over; detect_s is how long n1 took to see n2 go). With UPGRADE_BIN, each comes back on that
# binary: a rolling upgrade from the build of NODE_BINS (e.g. the previous release:
# NODE_BINS="old old old" UPGRADE_BIN=new FAULTS=restart), the crawls accepted by n1, still
# on the old build, fetched by nodes of both.
# The politeness benchmark of many sites is the same script without faults:
#   SITES=30 LATENCY_MS=50 FAULTS=0 NODES=1 OTHER_PAGES=0 cluster/chaos.sh 3   (and NODES=3)
set -euo pipefail
faults=${FAULTS:-1}
cut_from="1 2"; both_ways=1
[[ $faults == partial ]] && { faults=cut; cut_from=1; }
[[ $faults == oneway ]] && { faults=cut; both_ways=0; }
if [[ $faults == cut && -z ${CHAOS_NETNS:-} ]]; then
  ns=(unshare -n); [[ $(id -u) == 0 ]] || ns=(unshare -rn)
  exec "${ns[@]}" env CHAOS_NETNS=1 "$0" "$@"
fi
cd "$(dirname "$0")/.."
if [[ $faults == cut ]]; then
  ip link set lo up
  # Rules before the `local` table's lookup can drop loopback traffic.
  ip rule del pref 0 lookup local && ip rule add pref 100 lookup local
  export CLUSTER_IPS="127.0.1.1 127.0.1.2 127.0.1.3"
fi
capture=${CAPTURE:-}
if [[ -z $capture ]]; then
  capture=0
  [[ $(id -u) == 0 ]] && command -v tcpdump >/dev/null && capture=1
fi
rounds=${1:-1}
sites=${SITES:-6}; pages=${PAGES:-300}; latency=${LATENCY_MS:-20}
conc=${DOMAIN_CONCURRENCY:-2}; interval=${INTERVAL_MS:-10}; nodes=${NODES:-3}; crawls=${CRAWLS:-1}
[[ $faults == 0 || $nodes == 3 ]] || { echo "the faults need NODES=3" >&2; exit 2; }
bench=../shared/bench/crawl
work=$(mktemp -d)
chmod 755 "$work"   # nginx workers read the sites
export CLUSTER_DIR=$work/cluster DETACH=1 API_PORT=${API_PORT:-3401} CLUSTER_PORT=${CLUSTER_PORT:-5001}
export FERROCRAWL_SECURITY__ALLOW_PRIVATE_TARGETS=true FERROCRAWL_LOG__LEVEL=${LOG_LEVEL:-warn}
export FERROCRAWL_CRAWL__DOMAIN_CONCURRENCY=$conc FERROCRAWL_CRAWL__DOMAIN_MIN_INTERVAL_MS=$interval
export FERROCRAWL_CLUSTER__DOWN_AFTER_MS=2000
[[ -z ${MARGIN_MS:-} ]] || export FERROCRAWL_CRAWL__DOMAIN_INTERVAL_MARGIN_MS=$MARGIN_MS
nginx_pids=()
cleanup() {
  # A round that stopped half-way leaves its capture running.
  [[ -z ${capture_pid:-} ]] || kill -INT "$capture_pid" 2>/dev/null || true
  [[ -z ${holders_pid:-} ]] || kill "$holders_pid" 2>/dev/null || true
  cluster/local.sh stop >/dev/null 2>&1 || true
  for p in "${nginx_pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

for s in $(seq 2 $((sites + 1))); do
  python3 "$bench/site/gen_site.py" "$work/site$s" -n "$pages" --base-url "http://127.0.0.$s:8090" >/dev/null
done
# Redirects from each site to distinct pages of the next one (HOPS of them).
hops=${HOPS:-10}
other=${OTHER_PAGES:-20}
for s in $(seq 2 $((sites + 1))); do
  t=$(( s == sites + 1 ? 2 : s + 1 ))
  awk -v t="$t" -v hops="$hops" '{ sub(/;$/, "", $2) }
    $2 ~ /^\// && $2 != "/" && $2 !~ /^\/go\// && !seen[$2]++ && n < hops { printf "/away/%d http://127.0.0.%d:8090%s;\n", ++n, t, $2 }' \
    "$work/site$t/redirects.map" >"$work/away$s.map"
  cat "$work/away$s.map" >>"$work/site$s/redirects.map"
  # Pages the batch asks of the host's second site (port 8091).
  (cd "$work/site$s/www" && find . -name '*.html' ! -name index.html ! -path '*/private/*' | sort | awk -v n="$other" 'NR <= n' | cut -c2-) \
    >"$work/other$s.txt"
done

# Runs a command on the cores given by the variable named first, or anywhere when unset.
pinned() { local cpus=${!1:-}; shift; if [[ -n $cpus ]]; then taskset -c "$cpus" "$@"; else "$@"; fi; }
nginx_pin=()
[[ -z ${NGINX_CPUS:-} ]] || nginx_pin=(taskset -c "$NGINX_CPUS")

node_api() { echo "http://127.0.0.1:$((API_PORT + $1 - 1))"; }
# How many live members node $1 counts (0 when it does not answer).
live_seen_by() {
  curl -sf "${auth[@]}" "$(node_api "$1")/v2/cluster" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["live"]))' 2>/dev/null || echo 0
}
# Seconds from $1 until n1 counts two live members (a node gone), or empty.
until_seen_down() {
  for _ in $(seq 200); do
    live=$(live_seen_by 1)
    if [[ $live == 2 ]]; then python3 -c "print(f'{$(date +%s.%N) - $1:.2f}')"; return; fi
    sleep 0.05
  done
}
# Adds or deletes (`cut_net add|del`) the rules that drop every packet between n3's cluster
# address and n1's and n2's (n1's only with FAULTS=partial), both ways (from n3 only with
# FAULTS=oneway).
cut_net() {
  for peer in $cut_from; do
    ip rule "$1" pref $((10 + peer)) from 127.0.1.3 to 127.0.1.$peer blackhole
    [[ $both_ways == 0 ]] || ip rule "$1" pref $((20 + peer)) from 127.0.1.$peer to 127.0.1.3 blackhole
  done
}

initial_bins=${NODE_BINS:-}
for round in $(seq 1 "$rounds"); do
  export NODE_BINS=$initial_bins   # each round starts on the builds given (UPGRADE_BIN changes them)
  rm -rf "$CLUSTER_DIR"
  nginx_pids=()
  for s in $(seq 2 $((sites + 1))); do
    for port in 8090 8091; do
      rm -f "$work/access$s-$port.log"
      BIND=127.0.0.$s "${nginx_pin[@]}" "$bench/site/serve.sh" "$work/site$s" $port "$latency" "$work/access$s-$port.log" >"$work/nginx$s-$port.out" 2>&1 &
      nginx_pids+=($!)
    done
  done
  for s in $(seq 2 $((sites + 1))); do
    for port in 8090 8091; do
      for _ in $(seq 100); do curl -sf -o /dev/null "http://127.0.0.$s:$port/robots.txt" && break; sleep 0.1; done
      curl -sf -o /dev/null "http://127.0.0.$s:$port/robots.txt" || { cat "$work/nginx$s-$port.out" >&2; exit 1; }
    done
  done
  # The check requests above are not the crawl's.
  for s in $(seq 2 $((sites + 1))); do : >"$work/access$s-8090.log"; : >"$work/access$s-8091.log"; done
  capture_pid=""
  if [[ $capture == 1 ]]; then
    # Requests only: packets to the sites' port whose payload starts with "GET ".
    tcpdump -i lo -n -s 400 -w "$work/wire.pcap" \
      '(tcp dst port 8090 or tcp dst port 8091) and (tcp[((tcp[12:1] & 0xf0) >> 2):4] = 0x47455420)' 2>/dev/null &
    capture_pid=$!
    # Which node holds each connection to the sites: sampled, to name the sender of a
    # close pair on the wire.
    (while :; do
      # (a pid file may be removed between the test and the read: a node restarting)
      for f in "$CLUSTER_DIR"/n*/pid; do pid=$(cat "$f" 2>/dev/null) && echo "node $(basename "$(dirname "$f")") $pid"; done
      ss -tnpH '( dport = :8090 or dport = :8091 )' 2>/dev/null
      sleep 0.2
    done >"$work/holders.txt") &
    holders_pid=$!
    sleep 0.5
  fi
  pinned NODE_CPUS cluster/local.sh "$nodes" >/dev/null
  key=$(cat "$CLUSTER_DIR/api-key")
  auth=(-H "Authorization: Bearer $key")
  # The crawls start once every node sees all the others (the cluster's start is not a fault).
  for n in $(seq "$nodes"); do
    for _ in $(seq 300); do
      live=$(live_seen_by "$n")
      [[ $live == "$nodes" ]] && break
      sleep 0.1
    done
    [[ $live == "$nodes" ]] || { echo "round $round: n$n sees $live live members of $nodes after 30 s; the nodes' logs end:" >&2; tail -n 5 "$CLUSTER_DIR"/n*/log >&2; exit 1; }
  done
  # CRAWLS crawls per site, on the nodes in turn; a batch of every site's home page.
  # Sent all at once (a crawl sent late would count as slow).
  sent=$(date +%s.%N)
  jobs=(); sending=()
  for s in $(seq 2 $((sites + 1))); do
    for c in $(seq 0 $((crawls - 1))); do
      node=$(( ((s + c) % nodes) + 1 ))
      curl -sf "${auth[@]}" -H 'content-type: application/json' -o "$work/started$s-$c.json" \
        -d "{\"url\":\"http://127.0.0.$s:8090/\",\"crawlEntireDomain\":true,\"maxConcurrency\":8}" \
        "$(node_api $node)/v2/crawl" &
      sending+=($!)
    done
  done
  for p in "${sending[@]}"; do
    wait "$p" || { echo "round $round: a crawl could not be started (curl exit $?); the nodes' logs end:" >&2; tail -n 3 "$CLUSTER_DIR"/n*/log >&2; exit 1; }
  done
  for s in $(seq 2 $((sites + 1))); do
    for c in $(seq 0 $((crawls - 1))); do
      jobs+=("crawl $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$work/started$s-$c.json")")
    done
  done
  urls=$(python3 -c "import json; print(json.dumps(['http://127.0.0.%d:8090/' % s for s in range(2, $sites + 2)]
    + ['http://127.0.0.%d:8090/away/%d' % (s, k) for s in range(2, $sites + 2) for k in range(1, $hops + 1)]
    + ['http://127.0.0.%d:8091%s' % (s, p.strip()) for s in range(2, $sites + 2) for p in open('$work/other%d.txt' % s)]))")
  id=$(curl -sf "${auth[@]}" -H 'content-type: application/json' -d "{\"urls\":$urls}" \
    "$(node_api 1)/v2/batch/scrape" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
  jobs+=("batch/scrape $id")
  started=$(date +%s.%N)

  # The faults (FAULTS=0 runs the same round without them, as a reference).
  detect=""; in_touch=""
  if [[ $faults == 1 ]]; then
    sleep 2
    kill -KILL "$(cat "$CLUSTER_DIR/n2/pid")"
    detect=$(until_seen_down "$(date +%s.%N)")
    kill -STOP "$(cat "$CLUSTER_DIR/n3/pid")"
    sleep 10
    kill -CONT "$(cat "$CLUSTER_DIR/n3/pid")"
    rm -f "$CLUSTER_DIR/n2/pid"
    pinned NODE_CPUS cluster/local.sh 3 >/dev/null 2>&1   # starts n2 again (n1 and n3 are running)
  elif [[ $faults == restart ]]; then
    sleep 2
    for n in 2 3; do
      pid=$(cat "$CLUSTER_DIR/n$n/pid"); stopped=$(date +%s.%N)
      kill -TERM "$pid"
      [[ $n == 2 ]] && detect=$(until_seen_down "$stopped")
      while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
      rm -f "$CLUSTER_DIR/n$n/pid"
      if [[ -n ${UPGRADE_BIN:-} ]]; then   # it comes back on the new build
        read -r -a node_bins <<<"${NODE_BINS:-}"
        for i in 0 1 2; do node_bins[i]=${node_bins[i]:-${NODE_BIN:-target/release/ferrocrawl}}; done
        node_bins[n - 1]=$UPGRADE_BIN
        export NODE_BINS="${node_bins[*]}"
      fi
      pinned NODE_CPUS cluster/local.sh 3 >/dev/null 2>&1   # starts it again (the others are running)
      for _ in $(seq 300); do [[ $(live_seen_by 1) == 3 ]] && break; sleep 0.1; done
    done
  elif [[ $faults == cut ]]; then
    sleep 2
    cut_at=$(date +%s.%N)
    cut_net add
    detect=$(until_seen_down "$cut_at")
    # n3, cut off, must stop fetching: asked once n1 and n2 have seen it go.
    sleep 1
    in_touch=$(curl -sf "${auth[@]}" "$(node_api 3)/v2/cluster" | python3 -c 'import json,sys; print(str(json.load(sys.stdin)["inTouch"]).lower())' 2>/dev/null || echo unknown)
    sleep "$(python3 -c "print(max(0, $cut_at + ${CUT_S:-10} - $(date +%s.%N)))")"
    cut_net del
  fi

  # Every job finishes; each page once.
  result=$(python3 - "$key" "$API_PORT" "$sent" "$work" "$sites" "$conc" "$interval" "$hops" "${jobs[@]}" <<'PY'
import json, os, re, sys, time, urllib.request
from urllib.parse import urljoin
key, port, started, work, sites, conc, interval, hops, *jobs = sys.argv[1:]
sites, conc, interval, hops = int(sites), int(conc), int(interval), int(hops)
def get(url):
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {key}"})
    return json.load(urllib.request.urlopen(req, timeout=30))
lost = dup = pages = 0
def pages_of(s):
    """The URLs of site `s`'s pages outside robots.txt's /private/."""
    www = f"{work}/site{s}/www"
    return {f"http://127.0.0.{s}:8090/" + os.path.relpath(os.path.join(root, name), www).removesuffix("index.html")
            for root, _, files in os.walk(www) for name in files
            if name.endswith(".html") and not os.path.relpath(root, www).startswith("private")}
crawled = {}  # site -> [(job, URLs of its documents)]
def broken_links(s, known={}):
    """The 404 links (`removed-page-N`) of site `s`'s pages outside robots.txt's /private/."""
    if s not in known:
        www, want = f"{work}/site{s}/www", set()
        for root, _, files in os.walk(www):
            for name in files:
                rel = os.path.relpath(os.path.join(root, name), www)
                if not name.endswith(".html") or rel.startswith("private/"):
                    continue
                url = f"http://127.0.0.{s}:8090/" + (rel.removesuffix("index.html"))
                for href in re.findall(r'href="([^"]*removed-page[^"]*)"', open(os.path.join(root, name)).read()):
                    want.add(urljoin(url, href))
        known[s] = want
    return known[s]
deadline = time.time() + 600
for job in jobs:
    kind, jid = job.split()
    while True:
        try:
            status = get(f"http://127.0.0.1:{port}/v2/{kind}/{jid}")
        except Exception:
            status = {"status": "scraping"}
        if status["status"] != "scraping":
            break
        if time.time() > deadline:
            raise SystemExit(f"job {jid} did not finish")
        time.sleep(0.5)
    docs = status.get("data", [])
    nxt = status.get("next")
    while nxt:
        page = get(nxt); docs += page.get("data", []); nxt = page.get("next")
    landed = [d["metadata"]["url"] for d in docs]
    dup += len(landed) - len(set(landed))
    pages += len(landed)
    if kind == "batch/scrape":
        # Every URL of the batch lands once (a home page, a redirect's page of the next
        # site, or a page of a host's second site).
        asked = sites * (hops + 1) + sum(1 for s in range(2, sites + 2) for _ in open(f"{work}/other{s}.txt"))
        missing = asked - len(set(landed))
        if missing > 0:
            lost += missing
            print(f"batch {jid}: {missing} pages missing; errors: {get(f'http://127.0.0.1:{port}/v2/batch/scrape/{jid}/errors')}", file=sys.stderr)
    if kind == "crawl":
        site = status.get("data", [{}])[0].get("metadata", {}).get("sourceURL", "") if docs else ""
        s = site.split("127.0.0.")[1].split(":")[0] if "127.0.0." in site else None
        if s is None:
            lost += 1
            continue
        manifest = json.load(open(f"{work}/site{s}/manifest.json"))
        found = {d["metadata"]["url"] for d in docs if d["metadata"].get("statusCode") == 200}
        if len(found) < manifest["reachable_pages"]:
            lost += manifest["reachable_pages"] - len(found)
            print(f"crawl {jid}: {manifest['reachable_pages'] - len(found)} pages missing: "
                  f"{sorted(pages_of(s) - found)}; errors: {get(f'http://127.0.0.1:{port}/v2/crawl/{jid}/errors')}",
                  file=sys.stderr)
        # (a page linked both as `dir` and `dir/` lands once, under whichever came first)
        crawled.setdefault(s, []).append((jid, {url.rstrip("/") for url in landed}))
        # Each broken link lands once too, as its 404.
        gone = broken_links(s) - {d["metadata"]["url"] for d in docs if d["metadata"].get("statusCode") == 404}
        if gone:
            lost += len(gone)
            print(f"crawl {jid}: {len(gone)} broken links missing: {sorted(gone)}; "
                  f"errors: {get(f'http://127.0.0.1:{port}/v2/crawl/{jid}/errors')}", file=sys.stderr)
# The crawls of one site return the same documents: what one returned, another missed.
for s, runs in crawled.items():
    every = set().union(*(urls for _, urls in runs))
    for jid, urls in runs:
        if every - urls:
            lost += len(every - urls)
            print(f"crawl {jid}: {len(every - urls)} documents another crawl of its site returned are missing: "
                  f"{sorted(every - urls)}; errors: {get(f'http://127.0.0.1:{port}/v2/crawl/{jid}/errors')}",
                  file=sys.stderr)
finished = time.time() - float(started)
# Politeness, from each host's access logs (both its sites): "status uri bytes msec request_time".
worst_conc, worst_gap, robots, gaps, short = 0, float("inf"), 0, 0, 0
# nginx may log a request's end one event-loop turn (~1 ms) after it sent the response, so
# the count is also given for overlaps longer than 1 ms.
worst_conc_1ms = 0
for s in range(2, sites + 2):
    spans, spans_raw = [], []
    lines = [line for port in (8090, 8091) for line in open(f"{work}/access{s}-{port}.log")]
    for line in lines:
        st, uri, _, end, took = line.split()
        if uri.startswith("/private/"):
            robots += 1
        # Whole milliseconds (nginx's resolution): a start computed in floating point as
        # end - took can land a hair before another request's equal end and count as overlap.
        end, took = round(float(end) * 1000), round(float(took) * 1000)
        spans.append((end - took, end, st, line.strip()))
    spans.sort()
    spans_raw = [raw for *_, raw in spans]
    events = sorted([(a, 1, i) for i, (a, _, _, _) in enumerate(spans)] + [(b, -1, i) for i, (_, b, _, _) in enumerate(spans)],
                    key=lambda e: (e[0], e[1]))
    open_now = set()
    for _, d, i in events:
        if d > 0:
            open_now.add(i)
        else:
            open_now.discard(i)
        if len(open_now) > conc and len(open_now) > worst_conc:
            # Which requests overlapped, for the operator (stderr).
            at = spans[i][0] / 1000 - float(started)
            print(f"site 127.0.0.{s}: {len(open_now)} at once, {at:+.3f} s:", file=sys.stderr)
            for j in sorted(open_now):
                print(f"  {spans_raw[j]}", file=sys.stderr)
        worst_conc = max(worst_conc, len(open_now))
    events = sorted([(a, 1) for a, _, _, _ in spans] + [(b - 1, -1) for _, b, _, _ in spans])
    now = 0
    for _, d in events:
        now += d
        worst_conc_1ms = max(worst_conc_1ms, now)
    # Every request counts, redirect hops too: the site's pace spaces each as it leaves.
    starts = [(a, raw) for a, _, _, raw in spans]
    for (a, raw_a), (b, raw_b) in zip(starts, starts[1:]):
        if (b - a) / 1000 < worst_gap:
            closest = (s, a, b, raw_a, raw_b)
        worst_gap = min(worst_gap, (b - a) / 1000)
        gaps += 1
        short += (b - a) < interval
if worst_gap < interval / 1000:
    # The two closest fetches of a site, in seconds after the round's first job was sent.
    site, a, b, raw_a, raw_b = closest
    print(f"closest fetches: 127.0.0.{site} at {a / 1000 - float(started):+.3f} s and "
          f"{b / 1000 - float(started):+.3f} s:\n  {raw_a}\n  {raw_b}", file=sys.stderr)
print(f"lost={lost} duplicated={dup} robots_violations={robots} max_site_concurrency={worst_conc} over_1ms={worst_conc_1ms} "
      f"min_gap_ms={worst_gap * 1000:.1f} gaps_under_interval={short}/{gaps} finished_s={finished:.1f} pages={pages} "
      f"pages_per_s={pages / finished:.0f}")
PY
)
  wire=""
  if [[ -n $capture_pid ]]; then
    sleep 0.5; kill -INT "$capture_pid"; wait "$capture_pid" 2>/dev/null || true
    kill "$holders_pid" 2>/dev/null; wait "$holders_pid" 2>/dev/null || true
    wire=$(tcpdump -r "$work/wire.pcap" -tt -n -A 2>/dev/null | python3 -c '
import collections, re, sys
interval, started = float(sys.argv[1]), float(sys.argv[2])
node_of_pid, holder = {}, {}
for line in open(sys.argv[3]):
    if line.startswith("node "):
        if len(parts := line.split()) == 3:  # a pid file being rewritten reads empty
            node_of_pid[parts[2]] = parts[1]
    elif (m := re.search(r"(127\.0\.0\.1:\d+)\s+127\.0\.0\.\d+:809[01].*pid=(\d+)", line)):
        holder[m.group(1).replace(":", ".")] = node_of_pid.get(m.group(2), "pid " + m.group(2))
sent, head = collections.defaultdict(list), None
for line in sys.stdin:
    m = re.match(r"^(\d+\.\d+) IP (\S+) > (127\.0\.0\.\d+)\.809[01]", line)
    if m:
        head = (float(m.group(1)) * 1000, m.group(3), m.group(2))
    elif head and "GET " in line:
        sent[head[1]].append((head[0], head[2], line[line.index("GET "):].split(" HTTP")[0]))
        head = None
pairs = [(b[0] - a[0], site, a, b) for site, times in sent.items() for a, b in zip(sorted(times), sorted(times)[1:])]
gaps = [p[0] for p in pairs]
for gap, site, a, b in sorted(pairs)[:3]:
    if gap < interval:
        print(f"close on the wire: {site} {gap:.2f} ms apart at {a[0] / 1000 - started:+.3f} s: "
              f"{a[2]} from {holder.get(a[1], a[1])}, then {b[2]} from {holder.get(b[1], b[1])}", file=sys.stderr)
print(f"wire_min_gap_ms={min(gaps, default=0):.2f} wire_gaps_under_interval={sum(g < interval for g in gaps)}/{len(gaps)}")
' "$interval" "$started" "$work/holders.txt")
  fi
  echo "round=$round detect_s=${detect:-none}${in_touch:+ cut_in_touch=$in_touch} $result${wire:+ $wire}"
  cluster/local.sh stop >/dev/null
  # With KEEP_LOGS=DIR, the nodes' logs of a round that lost a page are kept there.
  if [[ -n ${KEEP_LOGS:-} && $result != *"lost=0 "* ]]; then
    mkdir -p "$KEEP_LOGS/round$round"
    for n in "$CLUSTER_DIR"/n*; do cp "$n/log" "$KEEP_LOGS/round$round/$(basename "$n").log" 2>/dev/null || true; done
  fi
  for p in "${nginx_pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  sleep 1
done
