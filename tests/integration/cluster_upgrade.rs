//! A cluster upgraded one node at a time: a node of the previous release's protocol joins
//! nodes of this one, and the two write to each other in the older version, so jobs,
//! sites and members' news cross between them as they do between nodes of one release.

use std::time::Duration;

use crate::cluster::{Node, call, crawl_under_way, finished_crawl, site_owner};

#[tokio::test]
async fn a_node_of_the_previous_protocol_version_works_beside_this_one() {
    use crate::common::crawlsite::HUB_LEN;
    let previous = ferrocrawl::remote::compat::PREVIOUS;
    let ours = ferrocrawl::remote::compat::PROTOCOL;
    assert!(previous < ours, "this release speaks its own protocol and the previous one");
    let site = crate::common::CrawlSite::start(20);
    let origin = format!("http://site.localhost:{}/", site.port);
    // A name for the old node under which it owns the site: the crawl's pages cross.
    let old_name = (0..)
        .map(|n| format!("old{n}"))
        .find(|name| site_owner(&["a", name], &origin) == *name)
        .expect("a name");
    let mut names = ["a", old_name.as_str()];
    names.sort_unstable();
    let a = Node::start("a", None, &[]);
    let version = previous.to_string();
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
    assert_eq!(member(&view, &old_name)["protocolVersion"], previous, "{view}");
    assert_eq!(member(&view, "a")["protocolVersion"], ours, "{view}");
    assert_eq!(member(&old.view().await, "a")["protocolVersion"], previous);

    // A crawl taken by the new node, its site fetched by the old one.
    let (entry, key) = (a.base().to_owned(), a.key.clone());
    let path = crawl_under_way(&entry, &key, &site, 4, 2).await;
    let landed = finished_crawl(&entry, &key, &path).await;
    let expected: std::collections::BTreeSet<String> =
        (0..HUB_LEN).map(|n| site.url(&format!("/hub/{n}"))).collect();
    assert_eq!(landed, expected, "every page exactly once");
    let served = member(&old.view().await, &old_name)["domains"].as_u64();
    assert_eq!(served, Some(1), "the old node ran the site's actor");
    assert_eq!(a.view().await["sitesPlacedBy"], "host");

    // A member forgotten through this node is forgotten by the old node too.
    let gone = Node::start("gone", Some(&a.cluster_addr), &[]);
    let mut with_gone = vec!["a", "gone", old_name.as_str()];
    with_gone.sort_unstable();
    a.wait_live(&with_gone, Duration::from_secs(20)).await;
    gone.process.expect("gone").kill9();
    a.wait_live(&names, Duration::from_secs(20)).await;
    let (status, forgotten) =
        call(&entry, &key, reqwest::Method::DELETE, "/v2/cluster/members/gone", None).await;
    assert_eq!(status, 200, "{forgotten}");
    let mut by = vec!["a".to_owned(), old_name.clone()];
    by.sort_unstable();
    let mut told: Vec<String> = forgotten["forgottenBy"]
        .as_array()
        .expect("forgottenBy")
        .iter()
        .map(|n| n.as_str().expect("name").to_owned())
        .collect();
    told.sort_unstable();
    assert_eq!(told, by, "{forgotten}");
    assert_eq!(forgotten["notForgottenBy"], serde_json::json!([]), "{forgotten}");
}
