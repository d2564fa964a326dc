//! Calls between nodes carried many to a message: requests made together to one node share
//! messages, and every caller still gets its own answer; a node killed with calls waiting
//! fails them at once, so they are sent again.

use std::collections::BTreeSet;

use crate::cluster::{Node, call, finished_crawl};
use crate::common::decode;

/// What node `node` sent other nodes so far: calls and the messages that carried them.
async fn traffic(node: &Node) -> (u64, u64) {
    let view = node.view().await;
    let traffic = &view["traffic"];
    (traffic["calls"].as_u64().expect("calls"), traffic["messages"].as_u64().expect("messages"))
}

#[tokio::test]
async fn calls_made_together_share_messages_and_each_gets_its_own_answer() {
    let site = crate::common::CrawlSite::start(100);
    let (a, b) = crate::cluster_spacing::a_and_b(&[], &[]).await;
    let key = &a.key;
    // Four jobs owned by b, each with pages of its own.
    let mut jobs = Vec::new();
    for job in 0..4 {
        let urls: BTreeSet<String> = (0..5).map(|n| site.url(&format!("/chain/{}", job * 10 + n))).collect();
        let body = serde_json::json!({"urls": urls, "maxConcurrency": 5});
        let (status, started) =
            call(b.base(), key, reqwest::Method::POST, "/v2/batch/scrape", Some(&body)).await;
        assert_eq!(status, 200, "{started}");
        let path = format!("/v2/batch/scrape/{}", started["id"].as_str().expect("id"));
        assert_eq!(finished_crawl(b.base(), key, &path).await, urls);
        jobs.push((path, urls));
    }

    // 120 reads through a at once: each is a call from a to b.
    let (calls_before, messages_before) = traffic(&a).await;
    let via_a = a.base();
    // One client for all (building a client loads its TLS roots: a hundred built in this one
    // task held back the requests already connected until the node timed them out).
    let client = reqwest::Client::builder().no_proxy().build().expect("client");
    let reads = (0..120).map(|n| {
        let (path, urls) = &jobs[n % jobs.len()];
        let read = client.get(format!("{via_a}{path}")).bearer_auth(key);
        async move {
            let (status, body) = decode(read.send().await.expect("request")).await;
            (status, body, urls)
        }
    });
    for (status, body, urls) in futures::future::join_all(reads).await {
        assert_eq!(status, 200, "{body}");
        // Its own job's pages, not another read's.
        let docs = body["data"].as_array().cloned().expect("data");
        assert_eq!(&crate::crawl::landing_urls(&docs), urls, "{body}");
    }
    let (calls_after, messages_after) = traffic(&a).await;
    let (calls, messages) = (calls_after - calls_before, messages_after - messages_before);
    assert!(calls >= 120, "every read asked b: {calls} calls");
    // Each call alone would be one message (and one reply); together they share them.
    assert!(messages < calls, "{calls} calls in {messages} messages");
}
