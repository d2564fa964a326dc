//! A site's politeness holds across nodes: its concurrency limit while it moves to a node
//! that joins, and its spacing for requests other nodes send it (a redirect hop from a
//! site one node owns to a site another node owns waits for the turn the second node's
//! actor of that site lends, so the site sees its interval between all its requests,
//! whichever node sent them). Redirect hops into a site take one of its places among the
//! requests in flight, on its own node or lent by it.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::cluster::{Node, call, crawl_under_way, finished_crawl, one_host_two_sites, site_owner};

/// Interval between two requests to a site, on every node.
const INTERVAL_MS: u64 = 300;

/// A host `PREFIX{n}.localhost` whose site node `owner` owns among `names`.
fn host_owned_by(prefix: &str, names: &[&str], owner: &str, port: u16) -> String {
    (0..)
        .map(|n| format!("{prefix}{n}.localhost"))
        .find(|host| site_owner(names, &format!("http://{host}:{port}/")) == owner)
        .expect("a host")
}

/// Nodes `a` (settings `a_env`) and `b` (`b_env`), joined, once each sees both live.
pub(crate) async fn a_and_b(a_env: &[(&str, &str)], b_env: &[(&str, &str)]) -> (Node, Node) {
    let a = Node::start("a", None, a_env);
    let b = Node::start("b", Some(&a.cluster_addr), b_env);
    for node in [&a, &b] {
        node.wait_live(&["a", "b"], Duration::from_secs(20)).await;
    }
    (a, b)
}

/// Starts a batch scrape of `urls` through `entry`; returns its status path.
async fn batch(entry: &str, key: &str, urls: &[String]) -> String {
    let body = json!({"urls": urls, "formats": ["markdown"]});
    let (status, started) = call(entry, key, reqwest::Method::POST, "/v2/batch/scrape", Some(&body)).await;
    assert_eq!(status, 200, "{started}");
    format!("/v2/batch/scrape/{}", started["id"].as_str().expect("id"))
}

/// Waits (a minute at most) for the batch at `path` to complete and returns its documents.
async fn finished(entry: &str, key: &str, path: &str) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (status, body) = call(entry, key, reqwest::Method::GET, path, None).await;
        assert_eq!(status, 200, "{body}");
        if body["status"] == "completed" {
            return body["data"].as_array().cloned().unwrap_or_default();
        }
        assert!(Instant::now() < deadline, "the batch did not finish: {body}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_redirect_hop_to_a_site_of_another_node_keeps_that_sites_interval() {
    let site = crate::common::CrawlSite::start(0);
    let names = ["a", "b"];
    let interval = INTERVAL_MS.to_string();
    let env = [("FERROCRAWL_CRAWL__DOMAIN_MIN_INTERVAL_MS", interval.as_str())];
    let (a, _b) = a_and_b(&env, &env).await;
    // Pages of `from` (owned by a) redirect to `to` (owned by b), which b also crawls itself.
    let from = host_owned_by("from", &names, "a", site.port);
    let to = host_owned_by("to", &names, "b", site.port);
    let direct: Vec<String> = (0..8).map(|n| format!("http://{to}:{}/p/{n}", site.port)).collect();
    let hops: Vec<String> =
        (0..6).map(|n| format!("http://{from}:{}/away/{to}/p/{}", site.port, 100 + n)).collect();
    let (entry, key) = (a.base().to_owned(), a.key.clone());
    let (direct_job, hop_job) = tokio::join!(batch(&entry, &key, &direct), batch(&entry, &key, &hops));
    let (direct_docs, hop_docs) =
        tokio::join!(finished(&entry, &key, &direct_job), finished(&entry, &key, &hop_job));
    assert_eq!(direct_docs.len(), 8);
    assert_eq!(hop_docs.len(), 6);
    for doc in &hop_docs {
        let landed = doc["metadata"]["url"].as_str().unwrap_or_default();
        assert!(landed.contains(&format!("{to}:")), "the hop landed on the other site: {doc}");
        assert_eq!(doc["metadata"]["statusCode"], 200, "{doc}");
    }

    let mut seen = site.requests_to(&to);
    let hopped = seen.iter().filter(|(path, _)| path.starts_with("/p/10")).count();
    assert_eq!(hopped, 6, "every hop reached the site: {seen:?}");
    seen.sort_by_key(|(_, at)| *at);
    // Received times are read after the request crossed this process's scheduler; a few
    // milliseconds of that are allowed for.
    let least = Duration::from_millis(INTERVAL_MS - 20);
    for pair in seen.windows(2) {
        let gap = pair[1].1 - pair[0].1;
        assert!(gap >= least, "{} came {gap:?} after {} (interval {INTERVAL_MS} ms)", pair[1].0, pair[0].0);
    }
}

/// A redirect hop into a site of another node holds that site's turn only until the hop's
/// request is written, not until its answer: while a slow hop is being answered, the
/// site's own requests go on beside it, still an interval apart and within the site's
/// `domain_concurrency`; so also when the site's node is of the previous release.
#[tokio::test]
async fn a_slow_redirect_hop_holds_the_other_sites_turn_only_until_it_is_written() {
    assert_eq!(
        slow_hops_beside_own_requests(None).await,
        2,
        "the site's own requests went on beside a slow hop"
    );
    let previous = ferrocrawl::remote::compat::PREVIOUS.to_string();
    assert_eq!(
        slow_hops_beside_own_requests(Some(&previous)).await,
        2,
        "a site's node of the previous release lets them go on too"
    );
}

/// Crawls twelve pages of a site held by node `b` and, through node `a`, three pages of
/// another site that redirect to slow pages of the first (`b` speaking protocol
/// `lender_version`, if given); checks that every page came once and the site saw its
/// interval between all its requests; returns the most requests the site served at once.
async fn slow_hops_beside_own_requests(lender_version: Option<&str>) -> usize {
    let site = crate::common::CrawlSite::start(0);
    let names = ["a", "b"];
    let interval = INTERVAL_MS.to_string();
    let env = [
        ("FERROCRAWL_CRAWL__DOMAIN_MIN_INTERVAL_MS", interval.as_str()),
        ("FERROCRAWL_CRAWL__DOMAIN_CONCURRENCY", "2"),
    ];
    let mut lender_env = env.to_vec();
    lender_env.extend(lender_version.map(|v| ("TEST_FERROCRAWL_PROTOCOL_VERSION", v)));
    let (a, _b) = a_and_b(&env, &lender_env).await;
    let from = host_owned_by("wfrom", &names, "a", site.port);
    let to = host_owned_by("wto", &names, "b", site.port);
    // b's own pages of `to` answer at once; the hops from `from` (on a) land on slow pages.
    let direct: Vec<String> = (0..12).map(|n| format!("http://{to}:{}/p/{n}", site.port)).collect();
    let hops: Vec<String> =
        (0..3).map(|n| format!("http://{from}:{}/away/{to}/slow/{n}", site.port)).collect();
    let (entry, key) = (a.base().to_owned(), a.key.clone());
    // The hops start once b's actor of `to` is at work (its first request is out): a hop
    // into a site with no actor on its node is not held by anything there.
    let direct_job = batch(&entry, &key, &direct).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    while site.requests_to(&to).is_empty() {
        assert!(Instant::now() < deadline, "b's actor of the site never sent a request");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let hop_job = batch(&entry, &key, &hops).await;
    let (direct_docs, hop_docs) =
        tokio::join!(finished(&entry, &key, &direct_job), finished(&entry, &key, &hop_job));
    assert_eq!((direct_docs.len(), hop_docs.len()), (12, 3));
    for doc in &hop_docs {
        assert_eq!(doc["metadata"]["title"], "Slow", "the hop landed on the slow page: {doc}");
    }
    let mut seen = site.requests_to(&to);
    assert_eq!(seen.iter().filter(|(path, _)| path.starts_with("/slow/")).count(), 3, "{seen:?}");
    seen.sort_by_key(|(_, at)| *at);
    let least = Duration::from_millis(INTERVAL_MS - 20);
    for pair in seen.windows(2) {
        let gap = pair[1].1 - pair[0].1;
        assert!(gap >= least, "{} came {gap:?} after {} (interval {INTERVAL_MS} ms)", pair[1].0, pair[0].0);
    }
    site.max_in_flight_at(&to)
}

/// Pages of one site that redirect to another site, which is crawled meanwhile: the hops
/// and the other site's own requests together keep to its `crawl.domain_concurrency`, with
/// the other site's actor on the same node as the hops' and on another node.
#[tokio::test]
async fn redirect_hops_into_a_site_keep_to_its_concurrency_limit() {
    let site = crate::common::CrawlSite::start(250);
    let names = ["a", "b"];
    let env = [("FERROCRAWL_CRAWL__DOMAIN_CONCURRENCY", "1")];
    let (a, _b) = a_and_b(&env, &env).await;
    let from = host_owned_by("cfrom", &names, "a", site.port);
    let (entry, key) = (a.base().to_owned(), a.key.clone());
    // The target site held by a itself (hops from a's own site), then by b.
    for owner in ["a", "b"] {
        let to = host_owned_by(&format!("cto{owner}"), &names, owner, site.port);
        let direct: Vec<String> = (0..6).map(|n| format!("http://{to}:{}/p/{n}", site.port)).collect();
        let hops: Vec<String> =
            (0..6).map(|n| format!("http://{from}:{}/away/{to}/p/{}", site.port, 100 + n)).collect();
        let (direct_job, hop_job) = tokio::join!(batch(&entry, &key, &direct), batch(&entry, &key, &hops));
        let (direct_docs, hop_docs) =
            tokio::join!(finished(&entry, &key, &direct_job), finished(&entry, &key, &hop_job));
        assert_eq!((direct_docs.len(), hop_docs.len()), (6, 6));
        let hopped = site.requests_to(&to).iter().filter(|(path, _)| path.starts_with("/p/10")).count();
        assert_eq!(hopped, 6, "every hop reached the site");
        assert_eq!(site.max_in_flight_at(&to), 1, "requests at once at a site held by {owner} (limit 1)");
    }
}

/// When a node joins and takes over a site mid-crawl, the site's old actor lets it go
/// before the new one starts a request: the site never sees more requests at once than
/// `crawl.domain_concurrency`, and the crawl still returns every page exactly once.
#[tokio::test]
async fn a_site_that_moves_to_a_joining_node_keeps_its_concurrency_limit() {
    use crate::common::crawlsite::HUB_LEN;
    let site = crate::common::CrawlSite::start(300);
    let origin = format!("http://site.localhost:{}/", site.port);
    // A name for the joining node under which it owns the site.
    let joiner = (0..)
        .map(|n| format!("j{n}"))
        .find(|name| site_owner(&["a", name], &origin) == *name)
        .expect("a name");
    let env = [("FERROCRAWL_CRAWL__DOMAIN_CONCURRENCY", "2")];
    let a = Node::start("a", None, &env);
    a.wait_live(&["a"], Duration::from_secs(20)).await;
    let (entry, key) = (a.base().to_owned(), a.key.clone());
    let path = crawl_under_way(&entry, &key, &site, 8, 4).await;

    // The joining node owns the site once it is a member: the site moves mid-crawl.
    let b = Node::start(&joiner, Some(&a.cluster_addr), &env);
    let mut members = ["a", joiner.as_str()];
    members.sort_unstable();
    b.wait_live(&members, Duration::from_secs(20)).await;
    let landed = finished_crawl(&entry, &key, &path).await;
    let expected: std::collections::BTreeSet<String> =
        (0..HUB_LEN).map(|n| site.url(&format!("/hub/{n}"))).collect();
    assert_eq!(landed, expected, "every page exactly once");
    assert!(
        site.max_in_flight() <= 2,
        "the site saw {} requests at once across the move (limit 2)",
        site.max_in_flight()
    );
    let view = b.view().await;
    let served_by_joiner = view["members"]
        .as_array()
        .expect("members")
        .iter()
        .any(|m| m["name"] == joiner.as_str() && m["domains"].as_u64() == Some(1));
    assert!(served_by_joiner, "the joining node took the site: {view}");
}

/// Two sites of one host (two ports) that placement by origin would give to two nodes
/// are held by one node, the host's owner, where they share its pace: the host never sees
/// more requests at once than `crawl.domain_concurrency`, from whichever node each crawl
/// was accepted.
#[tokio::test]
async fn the_sites_of_one_host_are_held_by_one_node_and_keep_its_limit() {
    // A second node's name under which the two origins, placed by origin, would be apart.
    let (site, origins, second) = one_host_two_sites(60, "h");
    let mut names = ["a", second.as_str()];
    names.sort_unstable();
    let env = [("FERROCRAWL_CRAWL__DOMAIN_CONCURRENCY", "1")];
    let a = Node::start("a", None, &env);
    let b = Node::start(&second, Some(&a.cluster_addr), &env);
    for node in [&a, &b] {
        node.wait_live(&names, Duration::from_secs(20)).await;
    }
    let crawl = |origin: &str| json!({"url": format!("{origin}chain/0"), "limit": 12, "sitemap": "skip", "crawlEntireDomain": true, "maxConcurrency": 5});
    // One crawl accepted by each node.
    let mut paths = Vec::new();
    for (node, origin) in [(&a, &origins[0]), (&b, &origins[1])] {
        let (status, started) =
            call(node.base(), &a.key, reqwest::Method::POST, "/v2/crawl", Some(&crawl(origin))).await;
        assert_eq!(status, 200, "{started}");
        paths.push((node.base().to_owned(), format!("/v2/crawl/{}", started["id"].as_str().expect("id"))));
    }
    for (entry, path) in &paths {
        assert_eq!(finished_crawl(entry, &a.key, path).await.len(), 12, "every page of {path}");
    }
    assert_eq!(site.max_in_flight_at("site.localhost"), 1, "one request at a time to the host");
    // Both sites' actors were on the host's owner.
    let holder = site_owner(&names, &origins[0]);
    let view = a.view().await;
    let held =
        view["members"].as_array().expect("members").iter().find(|m| m["name"] == holder.as_str()).cloned();
    assert_eq!(held.map(|m| m["domains"].clone()), Some(json!(2)), "{view}");
}
