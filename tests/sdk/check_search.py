"""The official Firecrawl Python SDK's search against a ferrocrawl server answering from its
own index. Run by the integration tests with SDK_API_URL, SDK_API_KEY and SDK_SITE (the
search site's docs host) set; exits non-zero on the first failed assertion."""

import os
import time

from firecrawl import Firecrawl
from firecrawl.v2.types import ScrapeOptions

api_url = os.environ["SDK_API_URL"]
key = os.environ["SDK_API_KEY"]
site = os.environ["SDK_SITE"]

app = Firecrawl(api_key=key, api_url=api_url)
for path in ("/guide/install", "/guide/configure"):
    app.scrape(site + path, formats=["markdown"])

# Indexing runs apart from the scrape: the pages are searchable within a moment.
for _ in range(100):
    found = app.search("quokka install cargo", limit=5)
    if found.web:
        break
    time.sleep(0.2)
assert found.web and found.web[0].url == site + "/guide/install", found
assert found.web[0].title == "Installing the Quokka toolkit", found.web[0]

scraped = app.search("configuring", limit=3, scrape_options=ScrapeOptions(formats=["markdown"]))
assert scraped.web and "toml files" in (scraped.web[0].markdown or ""), scraped.web

images = app.search("diagram", sources=["images"], limit=3)
assert images.images and images.images[0].image_width == 800, images

try:
    app.search("site:", limit=3)
except Exception as error:  # the SDK raises on 400
    assert "site:" in str(error), error
else:
    raise AssertionError("a malformed operator was accepted")

print("sdk search ok")
