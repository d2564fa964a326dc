"""The official Firecrawl Python SDK against a three-node ferrocrawl cluster, one client per
node: a job started through one node is polled, paged (`next`), listed, inspected for
errors and cancelled through the others. Run by the integration tests with SDK_API_URLS
(the nodes' URLs, space-separated), SDK_API_KEY and SDK_SITE (the local crawl site) set;
exits non-zero on the first failed assertion."""

import os
import sys
import time

from firecrawl import Firecrawl

from crawl_steps import listed_and_cancelled

urls = os.environ["SDK_API_URLS"].split()
key = os.environ["SDK_API_KEY"]
site = os.environ["SDK_SITE"]
assert len(urls) == 3, urls
a, b, c = (Firecrawl(api_key=key, api_url=url) for url in urls)


def paths(docs):
    return sorted(doc.metadata_typed.source_url.replace(site, "") for doc in docs)


def until_done(get, job_id):
    for _ in range(1200):
        status = get(job_id)
        if status.status != "scraping":
            return status
        time.sleep(0.1)
    raise AssertionError(f"job {job_id} did not finish: {status}")


# A blocking crawl through a: polled and paged through a.
job = a.crawl(site + "/", limit=50, sitemap="include", poll_interval=1, timeout=120)
assert job.status == "completed", job
crawled = paths(job.data)
assert "/" in crawled and "/orphan" in crawled and "/blog/post-1" in crawled, crawled
assert not any(p.startswith("/private/") for p in crawled), crawled
assert job.completed == len(job.data) == job.total, (job.completed, len(job.data), job.total)

# The same crawl started through b, polled and paged through c (whose `next` links the
# SDK follows), its errors read through a.
started = b.start_crawl(site + "/", limit=50, sitemap="include")
status = until_done(c.get_crawl_status, started.id)
assert status.status == "completed", status
assert paths(status.data) == crawled, (paths(status.data), crawled)
assert status.credits_used == status.completed, status
errors = a.get_crawl_errors(started.id)
assert len(errors.robots_blocked) == 2, errors

# A crawl started through c: listed as active through a, cancelled through b, seen
# cancelled through all three.
listed_and_cancelled(site, c, a, b, [a, b, c])

# A batch started through a, polled through b; every page once.
pages = [site + f"/chain/{n}" for n in range(12)]
batch = a.start_batch_scrape(pages, formats=["markdown"])
done = until_done(b.get_batch_scrape_status, batch.id)
assert done.status == "completed", done
landed = sorted(doc.metadata_typed.source_url for doc in done.data)
assert landed == sorted(pages), landed
assert all(doc.markdown for doc in done.data)

print("sdk cluster ok")
sys.exit(0)
