//! A node stopped gracefully (SIGTERM, as in a rolling upgrade) while other nodes' crawls
//! have pages on its sites: the pages its stop cuts short are not failures of the pages;
//! they go to the sites' next owner, and every crawl returns every page exactly once.

use std::collections::BTreeSet;

use crate::cluster::{CrawlElsewhere, call, crawl_on_another_nodes_site, finished_crawl};

#[tokio::test]
async fn a_sites_node_stopped_mid_crawl_leaves_no_page_failed() {
    use crate::common::crawlsite::HUB_LEN;
    let site = crate::common::CrawlSite::start(60);
    let CrawlElsewhere { mut nodes, owner, entry, key, path, .. } =
        crawl_on_another_nodes_site(&site, 4).await;

    // Stopped with pages of the crawl running and waiting at its site's actor.
    let (status, log) = nodes[owner].process.take().expect("owner").terminate();
    assert!(status.success(), "{log}");
    let landed = finished_crawl(&entry, &key, &path).await;
    let (_, errors) = call(&entry, &key, reqwest::Method::GET, &format!("{path}/errors"), None).await;
    let expected: BTreeSet<String> = (0..HUB_LEN).map(|n| site.url(&format!("/hub/{n}"))).collect();
    assert_eq!(landed, expected, "every page exactly once; errors: {errors}");
    assert_eq!(errors["errors"], serde_json::json!([]), "{errors}");
}
