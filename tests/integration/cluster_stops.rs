//! A node stopped gracefully (SIGTERM, as in a rolling upgrade) while other nodes' crawls
//! have pages on its sites: the pages its stop cuts short are not failures of the pages;
//! they go to the sites' next owner, and every crawl returns every page exactly once.

use std::collections::BTreeSet;
use std::time::Duration;

use crate::cluster::{Node, call, crawl_under_way, finished_crawl, site_owner};

#[tokio::test]
async fn a_sites_node_stopped_mid_crawl_leaves_no_page_failed() {
    use crate::common::crawlsite::HUB_LEN;
    let site = crate::common::CrawlSite::start(60);
    let names = ["a", "b", "c"];
    let a = Node::start("a", None, &[]);
    let b = Node::start("b", Some(&a.cluster_addr), &[]);
    let c = Node::start("c", Some(&a.cluster_addr), &[]);
    let mut nodes = [a, b, c];
    for node in &nodes {
        node.wait_live(&names, Duration::from_secs(20)).await;
    }
    let origin = format!("http://site.localhost:{}/", site.port);
    let owner = names.iter().position(|n| *n == site_owner(&names, &origin)).expect("owner");
    let accepting = (owner + 1) % 3;
    let (entry, key) = (nodes[accepting].base().to_owned(), nodes[accepting].key.clone());
    let path = crawl_under_way(&entry, &key, &site, 4, 6).await;

    // Stopped with pages of the crawl running and waiting at its site's actor.
    let (status, log) = nodes[owner].process.take().expect("owner").terminate();
    assert!(status.success(), "{log}");
    let landed = finished_crawl(&entry, &key, &path).await;
    let (_, errors) = call(&entry, &key, reqwest::Method::GET, &format!("{path}/errors"), None).await;
    let expected: BTreeSet<String> = (0..HUB_LEN).map(|n| site.url(&format!("/hub/{n}"))).collect();
    assert_eq!(landed, expected, "every page exactly once; errors: {errors}");
    assert_eq!(errors["errors"], serde_json::json!([]), "{errors}");
}
