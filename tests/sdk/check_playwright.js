// Playwright (playwright-core, no browser of its own) driving a ferrocrawl browser session
// through its `cdpUrl` with `connectOverCDP`, as Firecrawl's browser sessions are used. Run
// by the integration tests with SDK_API_URL, SDK_API_KEY and SDK_SITE (the fixture site) set
// and NODE_PATH pointing at the installed modules; exits non-zero on the first failed
// assertion.
const assert = require("node:assert/strict");
const { chromium } = require("playwright-core");

const api = process.env.SDK_API_URL;
const site = process.env.SDK_SITE;

async function call(method, path, body) {
  const response = await fetch(api + path, {
    method,
    headers: { Authorization: "Bearer " + process.env.SDK_API_KEY, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await response.json();
  assert.equal(response.status, 200, JSON.stringify(json));
  return json;
}

async function main() {
  const mine = await call("POST", "/v2/browser", {});
  // Another session in the same Chromium: the connection must not show it.
  const other = await call("POST", "/v2/browser", {});
  await call("POST", `/v2/browser/${other.id}/execute`, { code: "location.href = 'about:blank#other'" });

  const browser = await chromium.connectOverCDP(mine.cdpUrl);
  const contexts = browser.contexts();
  assert.equal(contexts.length, 1, "one context");
  const pages = contexts[0].pages();
  assert.equal(pages.length, 1, "the session's page only: " + pages.map((p) => p.url()).join(", "));
  const page = pages[0];

  await page.goto(site + "/article");
  assert.equal(await page.title(), "Growing Tomatoes at Home");
  const seen = await call("POST", `/v2/browser/${mine.id}/execute`, { code: "location.pathname" });
  assert.equal(seen.result, "/article", "the session shows the page Playwright opened: " + JSON.stringify(seen));

  // A new page opens in the session's context and works like the first.
  const second = await contexts[0].newPage();
  await second.goto(site + "/js/late");
  assert.ok((await second.content()).includes("village hall"));
  await second.close();

  // What reaches beyond the page stays refused.
  await assert.rejects(page.goto("file:///etc/passwd"), /file:\/\/\/etc\/passwd|not available|only http/);

  // Disconnecting leaves the session running.
  await browser.close();
  const after = await call("POST", `/v2/browser/${mine.id}/execute`, { code: "6 * 7" });
  assert.equal(after.result, "42", JSON.stringify(after));
  const otherStill = await call("POST", `/v2/browser/${other.id}/execute`, { code: "location.hash" });
  assert.equal(otherStill.result, "#other", "the other session was left alone: " + JSON.stringify(otherStill));
  console.log("playwright ok");
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
