"""Steps the SDK crawl checks share (`check_crawl.py` on one server, `check_cluster.py`
across a cluster's nodes): each takes the clients to use for each call, the same one or
one per node."""


def listed_and_cancelled(site, start, lister, canceller, readers):
    """A crawl started through `start` is listed as active through `lister`, cancelled
    through `canceller`, and read as cancelled through each of `readers`."""
    started = start.start_crawl(site + "/chain/0", limit=60, crawl_entire_domain=True, max_concurrency=1, sitemap="skip")
    active = lister.get_active_crawls()
    assert any(job.id == started.id for job in active.crawls), active
    assert canceller.cancel_crawl(started.id) is True
    for app in readers:
        status = app.get_crawl_status(started.id)
        assert status.status == "cancelled", status
