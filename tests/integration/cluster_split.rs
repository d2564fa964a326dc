//! A split cluster: a node that sees most of the members fall silent at once (as across a
//! network cut, which SIGSTOP stands in for: their connections stay open and say nothing)
//! sends no request to any site until it sees them again, since they may be fetching its
//! sites meanwhile; nodes that are killed (nothing listens at their address any more) do
//! not stop the survivors, nor do members an operator forgot (machines gone for good).

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::cluster::{Node, call, finished_crawl, three_nodes};

/// A member's state in `node`'s view.
async fn state_of(node: &Node, member: &str) -> String {
    let view = node.view().await;
    let members = view["members"].as_array().cloned().unwrap_or_default();
    let found = members.iter().find(|m| m["name"] == member).cloned().unwrap_or(Value::Null);
    found["state"].as_str().unwrap_or_default().to_owned()
}

/// Waits (20 s at most) until `node` is in touch, or out of it, as `wanted`.
async fn until_in_touch(node: &Node, wanted: bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let view = node.view().await;
        if view["inTouch"] == wanted {
            return view;
        }
        assert!(Instant::now() < deadline, "inTouch never became {wanted}: {view}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `GET /ready` on `node` (no key).
async fn ready(node: &Node) -> (u16, Value) {
    let resp = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client")
        .get(format!("{}/ready", node.base()))
        .send()
        .await
        .expect("ready");
    crate::common::decode(resp).await
}

/// Starts a batch of `paths` of `site` through `node`: its status path.
async fn batch(node: &Node, site: &crate::common::CrawlSite, paths: &[&str]) -> String {
    let urls: Vec<String> = paths.iter().map(|p| site.url(p)).collect();
    let body = json!({"urls": urls, "maxAge": 0});
    let (status, started) =
        call(node.base(), &node.key, reqwest::Method::POST, "/v2/batch/scrape", Some(&body)).await;
    assert_eq!(status, 200, "{started}");
    format!("/v2/batch/scrape/{}", started["id"].as_str().expect("id"))
}

/// Waits for the batch of `paths` at `path` to complete, read through `node` (every page
/// of `next` read), and checks each page landed once.
async fn each_page_once(node: &Node, site: &crate::common::CrawlSite, path: &str, paths: &[&str]) {
    let landed = finished_crawl(node.base(), &node.key, path).await;
    assert_eq!(landed.len(), paths.len(), "{landed:?}");
    assert_eq!(landed, paths.iter().map(|p| site.url(p)).collect(), "every page, once");
}

#[tokio::test]
async fn a_node_cut_off_from_most_members_fetches_nothing_until_it_sees_them_again() {
    let site = crate::common::CrawlSite::start(0);
    let mut nodes = three_nodes(&[], &[]).await;

    // b and c fall silent together: a is one of three members that may all be running.
    for node in &nodes[1..] {
        node.process.as_ref().expect("running").signal("STOP");
    }
    nodes[0].wait_live(&["a"], Duration::from_secs(10)).await;
    let view = until_in_touch(&nodes[0], false).await;
    assert_eq!(view["majority"], false, "{view}");
    assert_eq!(state_of(&nodes[0], "b").await, "down", "{view}");
    // A load balancer that asks `/ready` sends new work elsewhere meanwhile.
    let (status, readiness) = ready(&nodes[0]).await;
    assert_eq!((status, readiness["status"].as_str()), (503, Some("unready")), "{readiness}");
    assert!(readiness["reasons"][0].as_str().is_some_and(|r| r.contains("not in touch")), "{readiness}");
    let waiting = batch(&nodes[0], &site, &["/hub/0", "/hub/1"]).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (_, status) = call(nodes[0].base(), &nodes[0].key, reqwest::Method::GET, &waiting, None).await;
    assert_eq!(
        (status["status"].as_str(), status["completed"].as_u64()),
        (Some("scraping"), Some(0)),
        "{status}"
    );
    assert!(site.requests().is_empty(), "requests from the minority: {:?}", site.requests());

    // They answer again: a is in the majority, and the batch that waited finishes.
    for node in &nodes[1..] {
        node.process.as_ref().expect("running").signal("CONT");
    }
    for node in &nodes {
        node.wait_live(&["a", "b", "c"], Duration::from_secs(20)).await;
    }
    each_page_once(&nodes[0], &site, &waiting, &["/hub/0", "/hub/1"]).await;
    let (status, readiness) = ready(&nodes[0]).await;
    assert_eq!((status, &readiness), (200, &json!({"status": "ready"})));

    // b and c killed: nothing listens at their addresses, so they are not running and a,
    // the one member left that may be, goes on alone.
    for node in &mut nodes[1..] {
        node.process.take().expect("running").kill9();
    }
    nodes[0].wait_live(&["a"], Duration::from_secs(10)).await;
    let view = until_in_touch(&nodes[0], true).await;
    assert_eq!(view["majority"], true, "{view}");
    for member in ["b", "c"] {
        assert_eq!(state_of(&nodes[0], member).await, "stopped", "{view}");
    }
    let alone = batch(&nodes[0], &site, &["/hub/2"]).await;
    each_page_once(&nodes[0], &site, &alone, &["/hub/2"]).await;
}

/// A node started while cut off from its cluster (its seed accepts connections and says
/// nothing, as across a cut) has met no member: it fetches nothing alone. A node whose seed
/// refuses (nothing listens there) is all there is of its cluster, and fetches.
#[tokio::test]
async fn a_node_that_cannot_hear_its_seed_fetches_nothing_alone() {
    let site = crate::common::CrawlSite::start(0);
    // The kernel completes connections to this socket; nothing ever answers on them.
    let mute = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let mute_addr = mute.local_addr().expect("addr").to_string();
    let cut = Node::start("c", Some(&mute_addr), &[]);
    assert_eq!(until_in_touch(&cut, false).await["majority"], false);
    let waiting = batch(&cut, &site, &["/hub/0"]).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (_, status) = call(cut.base(), &cut.key, reqwest::Method::GET, &waiting, None).await;
    assert_eq!(
        (status["status"].as_str(), status["completed"].as_u64()),
        (Some("scraping"), Some(0)),
        "{status}"
    );
    assert!(
        site.requests().is_empty(),
        "requests from a node that met none of its cluster: {:?}",
        site.requests()
    );

    let nobody = format!("127.0.0.1:{}", crate::cluster::free_port());
    let first = Node::start("d", Some(&nobody), &[]);
    until_in_touch(&first, true).await;
    let alone = batch(&first, &site, &["/hub/1"]).await;
    each_page_once(&first, &site, &alone, &["/hub/1"]).await;
}

/// `DELETE /v2/cluster/members/{name}` on `node`.
async fn forget(node: &Node, name: &str) -> (u16, Value) {
    let path = format!("/v2/cluster/members/{name}");
    call(node.base(), &node.key, reqwest::Method::DELETE, &path, None).await
}

/// Members whose machines are gone for good (off: silent, never refusing a connection) are
/// forgotten through any node, by every live member: the survivor of a cluster that lost
/// most of its machines fetches again, and a forgotten node that comes back joins as any
/// node does.
#[tokio::test]
async fn members_gone_for_good_are_forgotten_and_the_survivor_fetches_again() {
    let site = crate::common::CrawlSite::start(0);
    let mut nodes = three_nodes(&[], &[]).await;
    let (a, b, c) = (&nodes[0], &nodes[1], &nodes[2]);
    // Only a member that is down, and not the node itself, is forgotten.
    crate::common::assert_error(&forget(c, "b").await, 409, "CONFLICT");
    crate::common::assert_error(&forget(c, "c").await, 409, "CONFLICT");
    crate::common::assert_error(&forget(c, "nobody").await, 404, "NOT_FOUND");

    // a's machine is gone: forgotten through c, and by b, which c tells.
    a.process.as_ref().expect("running").signal("STOP");
    for node in [b, c] {
        node.wait_live(&["b", "c"], Duration::from_secs(10)).await;
    }
    let (status, forgotten) = forget(c, "a").await;
    assert_eq!(status, 200, "{forgotten}");
    assert_eq!(forgotten["forgottenBy"], json!(["c", "b"]), "{forgotten}");
    for node in [b, c] {
        let view = node.view().await;
        assert_eq!(state_of(node, "a").await, "", "{} still lists a: {view}", node.name);
        assert_eq!(view["forgotten"], json!([a.cluster_addr]), "{view}");
    }

    // b's too. Alone with a silent b, c holds no majority (of two, the lower-named holds
    // it); once b is forgotten, c is all there is of its cluster and fetches.
    b.process.as_ref().expect("running").signal("STOP");
    c.wait_live(&["c"], Duration::from_secs(10)).await;
    let view = until_in_touch(c, false).await;
    assert_eq!(view["majority"], false, "{view}");
    let metric = |name: &'static str| crate::cluster::metric(c.base(), name);
    assert_eq!((metric("cluster_majority").await, metric("cluster_in_touch").await), (0.0, 0.0));
    let waiting = batch(c, &site, &["/hub/0", "/hub/1"]).await;
    let (status, forgotten) = forget(c, "b").await;
    assert_eq!(status, 200, "{forgotten}");
    assert_eq!(
        (&forgotten["forgottenBy"], &forgotten["majority"]),
        (&json!(["c"]), &json!(true)),
        "{forgotten}"
    );
    each_page_once(c, &site, &waiting, &["/hub/0", "/hub/1"]).await;
    assert_eq!((metric("cluster_majority").await, metric("cluster_members").await), (1.0, 0.0));

    // The forgets are kept on disk: c, killed and started again with the silent a as its
    // only seed, still leaves a out and fetches alone (counting a again, it would wait).
    let seed = a.cluster_addr.clone();
    nodes[2].process.take().expect("c").kill9();
    nodes[2].restart(&seed);
    let (a, b, c) = (&nodes[0], &nodes[1], &nodes[2]);
    let view = until_in_touch(c, true).await;
    assert_eq!((&view["majority"], &view["live"]), (&json!(true), &json!(["c"])), "{view}");
    let after_restart = batch(c, &site, &["/hub/2"]).await;
    each_page_once(c, &site, &after_restart, &["/hub/2"]).await;

    // Back after all: met again, the members are as before.
    for node in [a, b] {
        node.process.as_ref().expect("running").signal("CONT");
    }
    for node in &nodes {
        node.wait_live(&["a", "b", "c"], Duration::from_secs(20)).await;
    }
    let view = nodes[2].view().await;
    assert_eq!(view["forgotten"], json!([]), "{view}");
}
