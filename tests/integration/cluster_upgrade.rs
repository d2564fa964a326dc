//! A cluster upgraded one node at a time: a node of the oldest protocol version this build
//! still speaks joins nodes of this version, and the two write to each other in the older
//! one, so jobs cross between them as before the upgrade. Sites are placed as the oldest
//! live member places them (by origin before version 9, by host since).

use std::time::Duration;

use crate::cluster::{Node, call, crawl_under_way, finished_crawl, one_host_two_sites, owner_of, site_owner};
use crate::common::wait_for;

#[tokio::test]
async fn a_node_of_the_previous_protocol_version_works_beside_this_one() {
    use crate::common::crawlsite::HUB_LEN;
    let oldest = ferrocrawl::cluster::OLDEST_PROTOCOL_VERSION;
    let ours = ferrocrawl::cluster::PROTOCOL_VERSION;
    assert!(oldest < ours, "this build speaks one version only");
    let site = crate::common::CrawlSite::start(20);
    let origin = format!("http://site.localhost:{}/", site.port);
    // A name for the old node under which it owns the site: the crawl's pages cross. While
    // a node of a version before 9 is a member, sites are placed by origin.
    let old_name = (0..)
        .map(|n| format!("old{n}"))
        .find(|name| owner_of(&["a", name], &origin) == *name)
        .expect("a name");
    let mut names = ["a", old_name.as_str()];
    names.sort_unstable();
    let a = Node::start("a", None, &[]);
    let version = oldest.to_string();
    let old = Node::start(
        &old_name,
        Some(&a.cluster_addr),
        &[("TEST_FERROCRAWL_PROTOCOL_VERSION", version.as_str())],
    );
    for node in [&a, &old] {
        node.wait_live(&names, Duration::from_secs(20)).await;
    }
    // Each side says which version it speaks to the other: the older one.
    let view = a.view().await;
    let member = |view: &serde_json::Value, name: &str| {
        view["members"]
            .as_array()
            .expect("members")
            .iter()
            .find(|m| m["name"] == name)
            .cloned()
            .expect("member")
    };
    assert_eq!(member(&view, &old_name)["protocolVersion"], oldest, "{view}");
    assert_eq!(member(&view, "a")["protocolVersion"], ours, "{view}");
    assert_eq!(member(&old.view().await, "a")["protocolVersion"], oldest);

    // A crawl taken by the new node, its site fetched by the old one.
    let (entry, key) = (a.base().to_owned(), a.key.clone());
    let path = crawl_under_way(&entry, &key, &site, 4, 2).await;
    let landed = finished_crawl(&entry, &key, &path).await;
    let expected: std::collections::BTreeSet<String> =
        (0..HUB_LEN).map(|n| site.url(&format!("/hub/{n}"))).collect();
    assert_eq!(landed, expected, "every page exactly once");
    let served = member(&old.view().await, &old_name)["domains"].as_u64();
    assert_eq!(served, Some(1), "the old node ran the site's actor");
    // A node of an older version cannot read a batch: each call to it went on its own.
    let traffic = &a.view().await["traffic"];
    assert!(traffic["calls"].as_u64() >= Some(HUB_LEN as u64), "{traffic}");
    assert_eq!(traffic["messages"], traffic["calls"], "{traffic}");

    // A member forgotten through this node: the old node cannot read the request, and is
    // named as not told.
    let gone = Node::start("gone", Some(&a.cluster_addr), &[]);
    let mut with_gone = vec!["a", "gone", old_name.as_str()];
    with_gone.sort_unstable();
    a.wait_live(&with_gone, Duration::from_secs(20)).await;
    gone.process.expect("gone").kill9();
    a.wait_live(&names, Duration::from_secs(20)).await;
    let (status, forgotten) =
        call(&entry, &key, reqwest::Method::DELETE, "/v2/cluster/members/gone", None).await;
    assert_eq!(status, 200, "{forgotten}");
    assert_eq!(forgotten["forgottenBy"], serde_json::json!(["a"]), "{forgotten}");
    assert_eq!(forgotten["notForgottenBy"][0]["node"], old_name, "{forgotten}");

    // Sites were placed by origin beside the old node; by host once it has left.
    assert_eq!(a.view().await["sitesPlacedBy"], "origin");
    let mut old = old;
    old.process.take().expect("old node").kill9();
    a.wait_live(&["a"], Duration::from_secs(20)).await;
    assert_eq!(a.view().await["sitesPlacedBy"], "host");
}

/// A browser session on a node of protocol version 7 (before DevTools connections were
/// carried between nodes): its `cdpUrl` reached through a node of this version answers 503
/// naming the session's node, and works on that node itself.
#[tokio::test]
async fn a_cdp_url_of_an_older_node_through_this_one_names_that_node() {
    let a = Node::start("a", None, &[]);
    let old = Node::start("old", Some(&a.cluster_addr), &[("TEST_FERROCRAWL_PROTOCOL_VERSION", "7")]);
    for node in [&a, &old] {
        node.wait_live(&["a", "old"], Duration::from_secs(20)).await;
    }
    let (status, made) = crate::cluster::call(
        old.base(),
        &old.key,
        reqwest::Method::POST,
        "/v2/browser",
        Some(&serde_json::json!({})),
    )
    .await;
    assert_eq!(status, 200, "{made}");
    let url = made["cdpUrl"].as_str().expect("cdpUrl");
    let through_a = url.replace(&old.base().replace("http://", ""), &a.base().replace("http://", ""));
    let path = format!("/v2/cdp/{}", through_a.rsplit('/').next().expect("token"));
    let client = reqwest::Client::builder().no_proxy().build().expect("client");
    let refused = client
        .get(format!("{}{path}", a.base()))
        .header("upgrade", "websocket")
        .header("connection", "Upgrade")
        .header("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ==")
        .header("sec-websocket-version", "13")
        .send()
        .await
        .expect("answer");
    assert_eq!(refused.status(), 503);
    let body: serde_json::Value = refused.json().await.expect("json");
    assert_eq!(body["code"], "NODE_UNAVAILABLE", "{body}");
    assert!(body["error"].as_str().is_some_and(|e| e.contains("`old`")), "{body}");
    assert!(crate::browser_sessions::Cdp::connect(url).await.is_ok(), "direct on its own node");
}

/// The last step of a rolling upgrade, mid-crawl: the last node of a version before 9 is
/// stopped and started again on this build, on its data directory and address. Sites,
/// placed by origin until then (two sites of one host on two nodes), are placed by host
/// from then on, as both nodes say; the two sites end on one node, and both crawls return
/// every page exactly once.
#[tokio::test]
async fn sites_are_placed_by_host_once_the_last_older_node_is_upgraded() {
    use crate::common::crawlsite::HUB_LEN;
    // A name for the old node under which, placed by origin, it holds one site and `a` the other.
    let (_site, origins, old_name) = one_host_two_sites(150, "up");
    let mut names = ["a", old_name.as_str()];
    names.sort_unstable();
    let a = Node::start("a", None, &[]);
    let mut old = Node::start(&old_name, Some(&a.cluster_addr), &[("TEST_FERROCRAWL_PROTOCOL_VERSION", "8")]);
    for node in [&a, &old] {
        node.wait_live(&names, Duration::from_secs(20)).await;
    }
    assert_eq!(a.view().await["sitesPlacedBy"], "origin");

    let (entry, key) = (a.base().to_owned(), a.key.clone());
    let mut paths = Vec::new();
    for origin in &origins {
        let body = serde_json::json!({"url": format!("{origin}hub/0"), "sitemap": "skip", "crawlEntireDomain": true, "maxConcurrency": 2});
        let (status, started) = call(&entry, &key, reqwest::Method::POST, "/v2/crawl", Some(&body)).await;
        assert_eq!(status, 200, "{started}");
        paths.push(format!("/v2/crawl/{}", started["id"].as_str().expect("id")));
    }
    for path in &paths {
        wait_for("a few pages of each crawl", Duration::from_secs(30), || async {
            let (_, status) = call(&entry, &key, reqwest::Method::GET, path, None).await;
            (status["completed"].as_u64() >= Some(4)).then_some(())
        })
        .await;
    }

    // The old node is upgraded: stopped, and started on this build.
    old.process.take().expect("old node").kill9();
    old.restart(&a.cluster_addr);
    for node in [&a, &old] {
        node.wait_live(&names, Duration::from_secs(20)).await;
        let placed = || async { (node.view().await["sitesPlacedBy"] == "host").then_some(()) };
        wait_for("placement by host", Duration::from_secs(20), placed).await;
    }
    for (origin, path) in origins.iter().zip(&paths) {
        let expected: std::collections::BTreeSet<String> =
            (0..HUB_LEN).map(|n| format!("{origin}hub/{n}")).collect();
        assert_eq!(finished_crawl(&entry, &key, path).await, expected, "every page of {origin} exactly once");
    }
    let holder = site_owner(&names, &origins[0]);
    let view = a.view().await;
    let domains = |name: &str| {
        view["members"]
            .as_array()
            .expect("members")
            .iter()
            .find(|m| m["name"] == name)
            .map(|m| m["domains"].clone())
    };
    assert_eq!(domains(&holder), Some(serde_json::json!(2)), "both sites on the host's owner: {view}");
}
