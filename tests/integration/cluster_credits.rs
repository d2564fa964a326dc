//! A team's credits across a cluster: a key made on one node works on every node, the
//! credits hold for the cluster as a whole, what a node spent still counts while it is
//! down (the team's owner keeps every node's reported total, on its disk too), also when
//! it goes down with the team's owner (the next owner has a copy), or reported while the
//! owner was down (the node that heard it passes it on to the owner), also when the owner
//! and then its next owner go down (the next owner passes the owner's report on) or both
//! at once (the third node had a copy of each report), and a node of the previous protocol
//! version, which reports nothing, is counted too. A team's queue, as
//! `/v2/team/queue-status` shows it, is the whole cluster's through any node.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::cluster::{Node, call, owner_of, site_owner, three_nodes};
use crate::common::wait_for;

/// A key created on one node works on every node, and a team's credits hold for the
/// cluster as a whole: 5 credits are 5 scrapes, whichever nodes they go through.
#[tokio::test]
async fn keys_and_credits_hold_for_the_whole_cluster() {
    let site = crate::common::FixtureSite::start();
    let plan = [("FERROCRAWL_TEAMS__SMALL__CREDITS", "5")];
    let a = Node::start_with_keys("a", None, &plan, &[("small", "fc-small-team-key-1")]);
    let b = Node::start("b", Some(&a.cluster_addr), &plan);
    let c = Node::start("c", Some(&a.cluster_addr), &plan);
    let nodes = [&a, &b, &c];
    for node in nodes {
        node.wait_live(&["a", "b", "c"], Duration::from_secs(20)).await;
    }
    let key = "fc-small-team-key-1";
    let (status, unknown) =
        call(b.base(), "fc-nobody-knows-this", reqwest::Method::GET, "/v2/team/credit-usage", None).await;
    assert_eq!(status, 401, "{unknown}");
    let spent = scrapes(&nodes, key, &site.url("/article"), 9).await;
    assert_eq!(spent, (5, 4), "5 credits, 5 scrapes across three nodes");
    let (status, usage) = call(c.base(), key, reqwest::Method::GET, "/v2/team/credit-usage", None).await;
    assert_eq!(status, 200, "{usage}");
    assert_eq!(usage["data"]["remainingCredits"].as_u64(), Some(0), "{usage}");
}

/// Credits left as `node` reports them (`GET /v2/team/credit-usage`).
async fn remaining(node: &Node, key: &str) -> Option<u64> {
    let (status, usage) = call(node.base(), key, reqwest::Method::GET, "/v2/team/credit-usage", None).await;
    assert_eq!(status, 200, "{usage}");
    usage["data"]["remainingCredits"].as_u64()
}

/// The credits of team `small` that other nodes reported to `node` (its own copies of their
/// totals, by node), as its disk holds them now: what a kill -9 would leave. A node keeps
/// what it heard on its disk too, and its disk is the one place that shows it while the
/// nodes that reported answer for themselves. sled writes what it holds every 500 ms, so a
/// report shows there within half a second of reaching the node.
fn reports_on_disk(node: &Node) -> BTreeMap<String, u64> {
    let disk = node.process.as_ref().expect("a running node").disk_now();
    let reports = disk.store.reports.since(0).expect("read the reports");
    // Ledger 0 is the credits' (1 the tokens').
    let credits = reports.into_iter().filter(|(key, _)| key.ledger == 0 && key.team == "small");
    credits.map(|(key, report)| (key.node, report.total)).collect()
}

/// Waits until `node`'s disk holds each of `reports` (a node's name and the total it
/// reported) as [`reports_on_disk`] reads it.
async fn wait_for_reports_on_disk(node: &Node, reports: &[(&str, u64)]) {
    let what = format!("the reports {reports:?} on the disk of {}", node.name);
    wait_for(&what, Duration::from_secs(20), || async {
        let kept = reports_on_disk(node);
        reports.iter().all(|(from, total)| kept.get(*from) == Some(total)).then_some(())
    })
    .await;
}

/// Scrapes through `nodes` in turn, `rounds` times: (done, refused for want of credits).
async fn scrapes(nodes: &[&Node], key: &str, url: &str, rounds: usize) -> (usize, usize) {
    let (mut done, mut refused) = (0, 0);
    for round in 0..rounds {
        let node = nodes[round % nodes.len()];
        let body = serde_json::json!({"url": url, "maxAge": 0});
        let (status, answer) = call(node.base(), key, reqwest::Method::POST, "/v2/scrape", Some(&body)).await;
        match status {
            200 => done += 1,
            402 => refused += 1,
            other => panic!("scrape {round} through {}: {other} {answer}", node.name),
        }
    }
    (done, refused)
}

/// A node that spent a team's credits is killed: what it spent still counts, so the team
/// cannot spend it again through the others (the team's owner keeps what it reported).
#[tokio::test]
async fn credits_spent_through_a_node_still_count_while_it_is_down() {
    let site = crate::common::FixtureSite::start();
    let plan = [("FERROCRAWL_TEAMS__SMALL__CREDITS", "5")];
    let key = "fc-small-team-key-2";
    let mut nodes = three_nodes(&plan, &[("small", key)]).await;
    // The spender is not the team's owner; the third node checks.
    let owner = owner_of(&["a", "b", "c"], "team:small");
    let spender = nodes.iter().position(|n| n.name != owner).expect("spender");
    let checker =
        nodes.iter().position(|n| n.name != owner && n.name != nodes[spender].name).expect("checker");
    let owner = nodes.iter().position(|n| n.name == owner).expect("owner");
    assert_eq!(scrapes(&[&nodes[spender]], key, &site.url("/article"), 3).await, (3, 0));
    // Every node has met the key (remembered once found).
    let deadline = Instant::now() + Duration::from_secs(10);
    while remaining(&nodes[checker], key).await != Some(2) || remaining(&nodes[owner], key).await != Some(2) {
        assert!(Instant::now() < deadline, "the spent credits are not seen through the others");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    nodes[spender].process.take().expect("spender").kill9();
    let mut live: Vec<&str> = [&nodes[owner], &nodes[checker]].iter().map(|n| n.name.as_str()).collect();
    live.sort_unstable();
    for node in [&nodes[owner], &nodes[checker]] {
        node.wait_live(&live, Duration::from_secs(10)).await;
    }
    assert_eq!(remaining(&nodes[checker], key).await, Some(2), "the down node's spending is still counted");
    let others = [&nodes[checker], &nodes[owner]];
    assert_eq!(scrapes(&others, key, &site.url("/article"), 4).await, (2, 2), "2 credits were left");
}

/// Three nodes `a`, `b`, `c` with settings `plan` and `key` of team `small`, and the
/// places among them of the team's owner, its next owner (the node that takes the team
/// over when the owner goes down) and the third.
async fn owner_next_and_third(plan: &[(&str, &str)], key: &str) -> (Vec<Node>, [usize; 3]) {
    let names = ["a", "b", "c"];
    let nodes = three_nodes(plan, &[("small", key)]).await;
    let owner = owner_of(&names, "team:small");
    let rest: Vec<&str> = names.into_iter().filter(|n| *n != owner).collect();
    let next = owner_of(&rest, "team:small");
    let at = |name: &str| nodes.iter().position(|n| n.name == name).expect("node");
    let (owner, next) = (at(&owner), at(&next));
    let third = (0..3).find(|i| *i != owner && *i != next).expect("third");
    (nodes, [owner, next, third])
}

/// Kills `nodes[gone]` and waits until the two nodes `left` see each other, and only each
/// other, live.
async fn kill_leaving(nodes: &mut [Node], gone: usize, left: [usize; 2]) {
    nodes[gone].process.take().expect("a running node").kill9();
    let mut live = left.map(|i| nodes[i].name.as_str());
    live.sort_unstable();
    for i in left {
        nodes[i].wait_live(&live, Duration::from_secs(10)).await;
    }
}

/// The team's owner goes down together with a node that spent the team's credits: the
/// team's next owner had a copy of what each of them spent, kept across a restart of its
/// own, so the credits stay spent.
#[tokio::test]
async fn the_next_owner_counts_what_the_owner_and_a_spender_spent_when_both_go_down() {
    let site = crate::common::FixtureSite::start();
    let plan = [("FERROCRAWL_TEAMS__SMALL__CREDITS", "5")];
    let key = "fc-small-team-key-5";
    let names = ["a", "b", "c"];
    let (mut nodes, [owner, next, spender]) = owner_next_and_third(&plan, key).await;
    assert_eq!(scrapes(&[&nodes[owner]], key, &site.url("/article"), 1).await, (1, 0));
    assert_eq!(scrapes(&[&nodes[spender]], key, &site.url("/article"), 2).await, (2, 0));
    assert_eq!(remaining(&nodes[next], key).await, Some(2), "the next owner has met the key");
    // The copies reach it within 50 ms of the charges; once they are on its disk, a kill
    // and a restart, and the membership changes they make, keep them.
    let reported = [(nodes[owner].name.as_str(), 1), (nodes[spender].name.as_str(), 2)];
    wait_for_reports_on_disk(&nodes[next], &reported).await;
    let seed = nodes[spender].cluster_addr.clone();
    nodes[next].process.take().expect("next owner").kill9();
    nodes[next].restart_with(Some(&seed), &plan);
    for node in &nodes {
        node.wait_live(&names, Duration::from_secs(20)).await;
    }

    for gone in [owner, spender] {
        nodes[gone].process.take().expect("node").kill9();
    }
    the_survivor_counts_both(&nodes[next], key, &site).await;
}

/// A node spends a team's credits while the team's owner is down (its report goes to the
/// node owning the team meanwhile), then goes down itself once the owner is back: the node
/// that heard the report passes it on to the owner, so the credits stay spent.
#[tokio::test]
async fn an_owner_that_was_down_when_a_spender_reported_counts_it_once_the_spender_is_down() {
    let site = crate::common::FixtureSite::start();
    let plan = [("FERROCRAWL_TEAMS__SMALL__CREDITS", "5")];
    let key = "fc-small-team-key-6";
    let names = ["a", "b", "c"];
    let (mut nodes, [owner, next, spender]) = owner_next_and_third(&plan, key).await;
    // Every node meets the key while all are up.
    for node in &nodes {
        assert_eq!(remaining(node, key).await, Some(5));
    }
    kill_leaving(&mut nodes, owner, [next, spender]).await;
    // Spent while the owner is down: reported to the next owner, the team's owner meanwhile.
    assert_eq!(scrapes(&[&nodes[spender]], key, &site.url("/article"), 3).await, (3, 0));
    let seed = nodes[next].cluster_addr.clone();
    nodes[owner].restart_with(Some(&seed), &plan);
    for node in &nodes {
        node.wait_live(&names, Duration::from_secs(20)).await;
    }
    kill_leaving(&mut nodes, spender, [owner, next]).await;
    // Passed on at the membership change, within a call.
    let deadline = Instant::now() + Duration::from_secs(10);
    while remaining(&nodes[owner], key).await != Some(2) {
        assert!(Instant::now() < deadline, "the owner does not count what the down node spent");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let both = [&nodes[owner], &nodes[next]];
    assert_eq!(scrapes(&both, key, &site.url("/article"), 4).await, (2, 2), "2 credits were left");
}

/// Three nodes with a team of 5 credits (`key`), of which its owner spent 2 and its next
/// owner 1, seen through the third node; the places of the three as
/// [`owner_next_and_third`] gives them.
async fn owner_and_next_spent(key: &str) -> (crate::common::FixtureSite, Vec<Node>, [usize; 3]) {
    let site = crate::common::FixtureSite::start();
    let plan = [("FERROCRAWL_TEAMS__SMALL__CREDITS", "5")];
    let (nodes, [owner, next, third]) = owner_next_and_third(&plan, key).await;
    assert_eq!(scrapes(&[&nodes[owner]], key, &site.url("/article"), 2).await, (2, 0));
    assert_eq!(scrapes(&[&nodes[next]], key, &site.url("/article"), 1).await, (1, 0));
    assert_eq!(remaining(&nodes[third], key).await, Some(2), "the third node has met the key");
    (site, nodes, [owner, next, third])
}

/// Once `survivor` is the only live node, it counts the 3 credits the two down nodes
/// spent: 2 left, 2 scrapes pass and 2 are refused.
async fn the_survivor_counts_both(survivor: &Node, key: &str, site: &crate::common::FixtureSite) {
    survivor.wait_live(&[survivor.name.as_str()], Duration::from_secs(10)).await;
    assert_eq!(remaining(survivor, key).await, Some(2), "what the two down nodes spent still counts");
    assert_eq!(scrapes(&[survivor], key, &site.url("/article"), 4).await, (2, 2), "2 credits were left");
}

/// The team's owner, having spent credits itself, goes down, and then its next owner (the
/// team's owner meanwhile): the next owner passes the first owner's report on to the third
/// node at the first change, so the survivor counts what both spent. The third node joins
/// after the owner spent, so it never had a copy of the owner's report of its own: it has
/// it only as passed on.
#[tokio::test]
async fn an_owner_and_its_next_owner_going_down_one_after_the_other_leave_their_spending_counted() {
    let site = crate::common::FixtureSite::start();
    let plan = [("FERROCRAWL_TEAMS__SMALL__CREDITS", "5")];
    let key = "fc-small-team-key-7";
    let names = ["a", "b", "c"];
    let owner_name = owner_of(&names, "team:small");
    let rest: Vec<&str> = names.into_iter().filter(|n| *n != owner_name).collect();
    let next_name = owner_of(&rest, "team:small");
    let third_name = rest.into_iter().find(|n| *n != next_name).expect("third");
    let owner = Node::start_with_keys(&owner_name, None, &plan, &[("small", key)]);
    let next = Node::start(&next_name, Some(&owner.cluster_addr), &plan);
    let mut two = [owner_name.as_str(), next_name.as_str()];
    two.sort_unstable();
    for node in [&owner, &next] {
        node.wait_live(&two, Duration::from_secs(20)).await;
    }
    assert_eq!(scrapes(&[&owner], key, &site.url("/article"), 2).await, (2, 0));
    // The next owner has the owner's copy before the third node is there.
    wait_for_reports_on_disk(&next, &[(owner_name.as_str(), 2)]).await;
    let third = Node::start(third_name, Some(&owner.cluster_addr), &plan);
    for node in [&owner, &next, &third] {
        node.wait_live(&names, Duration::from_secs(20)).await;
    }
    assert_eq!(scrapes(&[&next], key, &site.url("/article"), 1).await, (1, 0));
    assert_eq!(remaining(&third, key).await, Some(2), "the third node has met the key");

    let (mut nodes, [owner, next, third]) = (vec![owner, next, third], [0, 1, 2]);
    kill_leaving(&mut nodes, owner, [next, third]).await;
    assert_eq!(remaining(&nodes[third], key).await, Some(2), "the next owner counts the owner's copy");
    // The next owner passes the owner's report on to the third node, the team's next owner
    // now, as the membership changes; the third has had the next owner's own copy since its
    // charge.
    wait_for_reports_on_disk(&nodes[third], &[(owner_name.as_str(), 2), (next_name.as_str(), 1)]).await;
    nodes[next].process.take().expect("next owner").kill9();
    the_survivor_counts_both(&nodes[third], key, &site).await;
}

/// The team's owner and its next owner, both having spent credits, go down at once (one
/// membership change, as when `chaos.sh` kills one node and freezes another): the third
/// node, the team's second next owner, had a copy of what each reported, so the survivor
/// counts what both spent.
#[tokio::test]
async fn an_owner_and_its_next_owner_going_down_at_once_leave_their_spending_counted() {
    let key = "fc-small-team-key-10";
    let (site, mut nodes, [owner, next, third]) = owner_and_next_spent(key).await;
    // The copies reach the third node within 50 ms of the charges.
    let reported = [(nodes[owner].name.as_str(), 2), (nodes[next].name.as_str(), 1)];
    wait_for_reports_on_disk(&nodes[third], &reported).await;
    for gone in [owner, next] {
        nodes[gone].process.take().expect("node").kill9();
    }
    the_survivor_counts_both(&nodes[third], key, &site).await;
}

/// The team's owner restarts while a node that spent the team's credits is down: it reads
/// that node's report back from its disk, so the credits stay spent.
#[tokio::test]
async fn an_owner_restarted_while_a_spender_is_down_still_counts_its_spending() {
    let site = crate::common::FixtureSite::start();
    let plan = [("FERROCRAWL_TEAMS__SMALL__CREDITS", "5")];
    let key = "fc-small-team-key-4";
    // A name for the spender under which node "a" owns the team.
    let spender_name = (0..)
        .map(|n| format!("b{n}"))
        .find(|name| owner_of(&["a", name], "team:small") == "a")
        .expect("a name");
    let mut owner = Node::start_with_keys("a", None, &plan, &[("small", key)]);
    let spender = Node::start_with_keys(&spender_name, Some(&owner.cluster_addr), &plan, &[("small", key)]);
    let mut names = ["a", spender_name.as_str()];
    names.sort_unstable();
    for node in [&owner, &spender] {
        node.wait_live(&names, Duration::from_secs(20)).await;
    }
    assert_eq!(scrapes(&[&spender], key, &site.url("/article"), 3).await, (3, 0));
    let deadline = Instant::now() + Duration::from_secs(10);
    while remaining(&owner, key).await != Some(2) {
        assert!(Instant::now() < deadline, "the owner does not count the spender's credits");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let mut spender = spender;
    spender.process.take().expect("spender").kill9();
    owner.wait_live(&["a"], Duration::from_secs(10)).await;
    owner.process.take().expect("owner").kill9();
    owner.restart_with(None, &plan);
    owner.wait_live(&["a"], Duration::from_secs(20)).await;
    assert_eq!(
        remaining(&owner, key).await,
        Some(2),
        "the down node's spending is counted after the restart"
    );
    assert_eq!(scrapes(&[&owner], key, &site.url("/article"), 4).await, (2, 2), "2 credits were left");
}

/// A node of the previous protocol version reports nothing to a team's owner: the owner
/// (a node of this version) asks it at every check, and it asks every node, so the team's
/// credits still hold across the two.
#[tokio::test]
async fn credits_hold_beside_a_node_of_the_previous_protocol_version() {
    let site = crate::common::FixtureSite::start();
    let key = "fc-small-team-key-3";
    // A name for the old node under which this version's node owns the team.
    let old_name = (0..)
        .map(|n| format!("old{n}"))
        .find(|name| owner_of(&["a", name], "team:small") == "a")
        .expect("a name");
    let mut names = ["a", old_name.as_str()];
    names.sort_unstable();
    let plan = ("FERROCRAWL_TEAMS__SMALL__CREDITS", "4");
    let a = Node::start_with_keys("a", None, &[plan], &[("small", key)]);
    let version = ferrocrawl::remote::compat::PREVIOUS.to_string();
    let old = Node::start(
        &old_name,
        Some(&a.cluster_addr),
        &[plan, ("TEST_FERROCRAWL_PROTOCOL_VERSION", &version)],
    );
    for node in [&a, &old] {
        node.wait_live(&names, Duration::from_secs(20)).await;
    }
    let spent = scrapes(&[&old, &old, &a], key, &site.url("/article"), 6).await;
    assert_eq!(spent, (4, 2), "4 credits, 4 scrapes across the two versions");
    assert_eq!((remaining(&a, key).await, remaining(&old, key).await), (Some(0), Some(0)));
}

/// A batch accepted by one node, its site held by another: the team's pages in flight are
/// held where their requests go out (the site's node), and `/v2/team/queue-status` through
/// the third node, which holds none of them, shows them all: the same queue whichever
/// node a load balancer picks. The team's limit holds throughout.
#[tokio::test]
async fn a_teams_queue_is_the_whole_clusters_through_any_node() {
    let site = crate::common::CrawlSite::start(200);
    let env =
        [("FERROCRAWL_LIMITS__TEAM_CONCURRENCY", "2"), ("FERROCRAWL_CRAWL__DOMAIN_MIN_INTERVAL_MS", "0")];
    let names = ["a", "b", "c"];
    let a = Node::start("a", None, &env);
    let b = Node::start("b", Some(&a.cluster_addr), &env);
    let c = Node::start("c", Some(&a.cluster_addr), &env);
    let nodes = [&a, &b, &c];
    for node in nodes {
        node.wait_live(&names, Duration::from_secs(20)).await;
    }
    // The batch goes through one node that does not hold the site, and the queue is read
    // through the other.
    let owner = site_owner(&names, &site.url("/"));
    let others: Vec<&Node> = nodes.into_iter().filter(|n| n.name != owner).collect();
    let (entry, reader) = (others[0], others[1]);
    let urls: Vec<String> = (0..10).map(|n| site.url(&format!("/chain/{n}"))).collect();
    let body = serde_json::json!({"urls": urls});
    let (status, started) =
        call(entry.base(), &a.key, reqwest::Method::POST, "/v2/batch/scrape", Some(&body)).await;
    assert_eq!(status, 200, "{started}");
    let path = format!("/v2/batch/scrape/{}", started["id"].as_str().expect("id"));
    let (mut most_active, mut most_queued) = (0, 0);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (status, queue) =
            call(reader.base(), &a.key, reqwest::Method::GET, "/v2/team/queue-status", None).await;
        assert_eq!(status, 200, "{queue}");
        assert_eq!(queue["maxConcurrency"], 2, "{queue}");
        let active = queue["activeJobsInQueue"].as_u64().unwrap_or(0);
        assert!(active <= 2, "{active} of the team's pages in flight (limit 2): {queue}");
        most_active = most_active.max(active);
        most_queued = most_queued.max(queue["jobsInQueue"].as_u64().unwrap_or(0));
        let (_, job) = call(reader.base(), &a.key, reqwest::Method::GET, &path, None).await;
        if job["status"] == "completed" {
            assert_eq!(job["completed"], 10, "{job}");
            break;
        }
        assert!(Instant::now() < deadline, "the batch did not finish: {job}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(most_active, 2, "the reading node saw the team's pages in flight elsewhere");
    assert!(most_queued >= most_active, "in the queue: {most_queued}");
    let (_, check) = call(reader.base(), &a.key, reqwest::Method::GET, "/v2/concurrency-check", None).await;
    assert_eq!(check["maxConcurrency"], 2, "{check}");
    assert!(site.max_in_flight() <= 2, "{} at once at the site (team limit 2)", site.max_in_flight());
}
