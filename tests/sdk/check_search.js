// The official Firecrawl JavaScript SDK's search against a ferrocrawl server answering from
// its own index. Run by the integration tests with SDK_API_URL, SDK_API_KEY and SDK_SITE
// (the search site's docs host) set, and NODE_PATH pointing at the SDK; exits non-zero on
// the first failed assertion.
const assert = require("node:assert/strict");
const sdk = require("@mendable/firecrawl-js");

const Firecrawl = sdk.Firecrawl || sdk.default;
const site = process.env.SDK_SITE;
const app = new Firecrawl({ apiKey: process.env.SDK_API_KEY, apiUrl: process.env.SDK_API_URL });

async function main() {
  for (const path of ["/guide/install", "/guide/configure"]) {
    await app.scrape(site + path, { formats: ["markdown"] });
  }
  // Indexing runs apart from the scrape: the pages are searchable within a moment.
  let found;
  for (let i = 0; i < 100; i++) {
    found = await app.search("quokka install cargo", { limit: 5 });
    if (found.web && found.web.length) break;
    await new Promise((done) => setTimeout(done, 200));
  }
  assert.equal(found.web[0].url, site + "/guide/install");
  assert.equal(found.web[0].title, "Installing the Quokka toolkit");

  const scraped = await app.search("configuring", { limit: 3, scrapeOptions: { formats: ["markdown"] } });
  assert.ok((scraped.web[0].markdown || "").includes("toml files"), JSON.stringify(scraped.web[0]));

  const images = await app.search("diagram", { sources: ["images"], limit: 3 });
  assert.equal(images.images[0].imageWidth, 800);

  await assert.rejects(app.search("site:", { limit: 3 }), /site:/);
  console.log("sdk search ok");
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
