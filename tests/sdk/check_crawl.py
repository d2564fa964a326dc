"""The official Firecrawl Python SDK's crawl, status paging, errors, active list, cancel and
map against a ferrocrawl server. Run by the integration tests with SDK_API_URL, SDK_API_KEY
and SDK_SITE (the local crawl site) set; exits non-zero on the first failed assertion."""

import os
import sys
import time

from firecrawl import Firecrawl

from crawl_steps import listed_and_cancelled

api_url = os.environ["SDK_API_URL"]
key = os.environ["SDK_API_KEY"]
site = os.environ["SDK_SITE"]

app = Firecrawl(api_key=key, api_url=api_url)

# Blocking crawl: polls until done and follows `next` for every page.
job = app.crawl(site + "/", limit=50, sitemap="include", poll_interval=1, timeout=120)
assert job.status == "completed", job
paths = sorted(doc.metadata_typed.source_url.replace(site, "") for doc in job.data)
assert "/" in paths and "/orphan" in paths and "/blog/post-1" in paths, paths
assert not any(p.startswith("/private/") for p in paths), paths
assert job.completed == len(job.data) == job.total, (job.completed, len(job.data), job.total)
assert job.credits_used == job.completed, job.credits_used
assert job.expires_at is not None
assert all(doc.markdown for doc in job.data if doc.metadata_typed.status_code == 200)

# Started, polled (auto-paginating), and its errors listed.
started = app.start_crawl(site + "/", limit=50, sitemap="include")
for _ in range(600):
    status = app.get_crawl_status(started.id)
    if status.status != "scraping":
        break
    time.sleep(0.1)
assert status.status == "completed" and len(status.data) == job.completed, status
errors = app.get_crawl_errors(started.id)
assert len(errors.robots_blocked) == 2, errors

# Started, listed as active, cancelled.
listed_and_cancelled(site, app, app, app, [app])

links = app.map(site + "/", limit=100)
urls = [link.url for link in links.links]
assert site + "/orphan" in urls and site + "/" in urls, urls

print("sdk crawl ok")
sys.exit(0)
