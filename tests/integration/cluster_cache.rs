//! The page cache across a cluster: a page is cached on the node that owns its site (where
//! a crawl fetches it), so a scrape through any node finds what a scrape through another
//! node fetched, also one that may only be answered from the cache (`lockdown`).

use std::time::Duration;

use serde_json::{Value, json};

use crate::cluster::{Node, call, site_owner};
use crate::common::wait_for;

async fn scrape(node: &Node, body: &Value) -> (u16, Value) {
    call(node.base(), &node.key, reqwest::Method::POST, "/v2/scrape", Some(body)).await
}

#[tokio::test]
async fn a_page_scraped_through_one_node_is_in_the_cache_of_every_node() {
    let site = crate::common::CrawlSite::start(0);
    let (a, b) = crate::cluster_spacing::a_and_b(&[], &[]).await;
    let owner = site_owner(&["a", "b"], &site.url("/"));
    let (owns, other) = if owner == "a" { (&a, &b) } else { (&b, &a) };

    // Scraped through the node that does not own the site: cached on the site's node.
    let url = site.url("/hub/1");
    let (status, first) = scrape(other, &json!({"url": url})).await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["data"]["metadata"]["cacheState"], "miss", "{first}");
    // Only from the cache, through either node: both find it (the site's node takes the
    // page a moment after the scrape answered).
    for node in [owns, other] {
        let found = wait_for("the page in the cache", Duration::from_secs(10), || async {
            let (status, body) = scrape(node, &json!({"url": url, "lockdown": true})).await;
            (status == 200).then_some(body)
        })
        .await;
        assert_eq!(found["data"]["metadata"]["cacheState"], "hit", "through {}: {found}", node.name);
    }
    assert_eq!(site.hits("/hub/1"), 1, "the page was fetched once");
}
