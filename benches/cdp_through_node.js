// DevTools round trips and screenshots over a browser session's cdpUrl, directly on the
// session's node and through another node of the cluster (carried by `src/api/tunnel.rs`).
// Two nodes from cluster/local.sh on API ports 3401 and 3402; sessions are made on the
// second; prints medians. Needs playwright-core (scripts/test installs it under
// target/sdk-node):
//
//   CLUSTER_DIR=$(mktemp -d) DETACH=1 API_PORT=3401 cluster/local.sh 2
//   KEY=$(cat $CLUSTER_DIR/api-key) NODE_PATH=target/sdk-node/node_modules node benches/cdp_through_node.js
//   CLUSTER_DIR=... cluster/local.sh stop
const { chromium } = require("playwright-core");
const med = (a) => { const s = [...a].sort((x, y) => x - y); return s[Math.floor(s.length / 2)]; };
async function run(url, label) {
  const browser = await chromium.connectOverCDP(url);
  const page = browser.contexts()[0].pages()[0];
  await page.setContent("<h1>bench</h1><p>" + "text ".repeat(2000) + "</p>");
  const rt = [];
  for (let i = 0; i < 200; i++) { const t = process.hrtime.bigint(); await page.evaluate("1 + 1"); rt.push(Number(process.hrtime.bigint() - t) / 1e6); }
  const shots = [];
  let bytes = 0;
  for (let i = 0; i < 20; i++) { const t = process.hrtime.bigint(); bytes = (await page.screenshot()).length; shots.push(Number(process.hrtime.bigint() - t) / 1e6); }
  console.log(`${label}: evaluate round trip median ${med(rt).toFixed(2)} ms (p90 ${[...rt].sort((a,b)=>a-b)[179].toFixed(2)}), screenshot (${bytes} B) median ${med(shots).toFixed(1)} ms`);
  await browser.close();
}
(async () => {
  const h = { Authorization: "Bearer " + process.env.KEY, "Content-Type": "application/json" };
  for (const round of [1, 2]) {
    const made = await (await fetch("http://127.0.0.1:3402/v2/browser", { method: "POST", headers: h, body: "{}" })).json();
    await run(made.cdpUrl, `round ${round} direct (n2)`);
    const made2 = await (await fetch("http://127.0.0.1:3402/v2/browser", { method: "POST", headers: h, body: "{}" })).json();
    await run(made2.cdpUrl.replace("127.0.0.1:3402", "127.0.0.1:3401"), `round ${round} through n1`);
  }
  process.exit(0);
})().catch((e) => { console.error(e); process.exit(1); });
