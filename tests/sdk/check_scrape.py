"""The official Firecrawl Python SDK against a ferrocrawl server.

Run by the integration tests with FERROCRAWL_URL_UNDER_TEST, SDK_API_KEY and SITE set.
Exits non-zero (with the failing assertion) when the SDK cannot use the server.
"""

import os
import sys

from firecrawl import Firecrawl
from firecrawl.v2.utils.error_handler import BadRequestError, UnauthorizedError

api_url = os.environ["SDK_API_URL"]
key = os.environ["SDK_API_KEY"]
site = os.environ["SDK_SITE"]

app = Firecrawl(api_key=key, api_url=api_url)

doc = app.scrape(site + "/article", formats=["markdown", "html", "links"])
assert "# Growing Tomatoes at Home" in doc.markdown, doc.markdown
assert "Popular posts" not in doc.markdown, doc.markdown
assert "Varieties compared" in doc.html
assert site + "/news" in doc.links, doc.links
meta = doc.metadata_typed
assert meta.title == "Growing Tomatoes at Home", meta
assert meta.status_code == 200, meta
assert meta.proxy_used == "basic", meta
assert meta.source_url == site + "/article", meta
assert meta.scrape_id, meta
assert meta.credits_used == 1, meta

# Options the SDK sends with its own defaults (maxAge, fastMode, ...) are accepted.
doc = app.scrape(site + "/article", formats=["markdown"], only_main_content=False, timeout=20000)
assert "Popular posts" in doc.markdown
assert doc.metadata_typed.cache_state == "hit", doc.metadata_typed

doc = app.scrape(site + "/missing", formats=["markdown"])
assert doc.metadata_typed.status_code == 404

try:
    app.scrape(site + "/article", formats=["markdown"], timeout=10)
    raise AssertionError("a 10 ms timeout must be refused")
except BadRequestError as err:
    assert "timeout" in str(err), err

try:
    Firecrawl(api_key="fc-wrong", api_url=api_url).scrape(site + "/article")
    raise AssertionError("a wrong key must be refused")
except UnauthorizedError:
    pass

print("sdk ok")
sys.exit(0)
