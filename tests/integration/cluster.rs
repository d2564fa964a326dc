//! Several real `ferrocrawl serve` processes on loopback joined into one cluster: they meet
//! through one seed, a node killed with SIGKILL or frozen with SIGSTOP is out within the
//! configured time and back when it returns, and a node of another protocol version or
//! with another secret never joins.

use std::net::TcpListener;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::decode;
use crate::common::process::Binary;

const SECRET: &str = "cluster-test-secret-0123456789";
/// The key every test node knows, of team `default`.
const SHARED_KEY: &str = "fc-cluster-test-shared-key";

/// A free port on 127.0.0.1 (bound and released; the node binds it right after), below
/// the kernel's ephemeral range: a port the kernel picked could be handed out again, to a
/// connection's local end or another test's listener, before the node binds it.
pub(crate) fn free_port() -> u16 {
    const FIRST: u16 = 20_000;
    const COUNT: u16 = 12_000;
    let mut seed = [0u8; 2];
    getrandom::fill(&mut seed).expect("random");
    let start = u16::from_le_bytes(seed) % COUNT;
    (0..COUNT)
        .map(|i| FIRST + (start + i) % COUNT)
        .find(|port| TcpListener::bind(("127.0.0.1", *port)).is_ok())
        .expect("a free port")
}

/// A node of a test cluster.
pub(crate) struct Node {
    pub(crate) name: String,
    pub(crate) cluster_addr: String,
    pub(crate) process: Option<Binary>,
    pub(crate) key: String,
    pub(crate) data: tempfile::TempDir,
}

impl Node {
    /// Starts node `name` with its own data directory, joining `seed` when given.
    pub(crate) fn start(name: &str, seed: Option<&str>, env: &[(&str, &str)]) -> Self {
        Self::start_with_keys(name, seed, env, &[])
    }

    /// [`Node::start`] with more keys in this node's data directory only: `(team, key)`.
    pub(crate) fn start_with_keys(
        name: &str,
        seed: Option<&str>,
        env: &[(&str, &str)],
        keys: &[(&str, &str)],
    ) -> Self {
        let data = tempfile::tempdir().expect("tempdir");
        for (team, key) in keys {
            let dir = data.path().to_str().expect("utf8").to_owned();
            let out = crate::common::process::run(
                &["keys", "create", "--team", team, "--key", key, "--data", &dir],
                &[],
            );
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        }
        Self::start_in(name, data, format!("127.0.0.1:{}", free_port()), seed, env)
    }

    /// [`Node::start`] with its cluster port at `cluster_addr`.
    pub(crate) fn start_at(
        name: &str,
        cluster_addr: String,
        seed: Option<&str>,
        env: &[(&str, &str)],
    ) -> Self {
        Self::start_in(name, tempfile::tempdir().expect("tempdir"), cluster_addr, seed, env)
    }

    fn start_in(
        name: &str,
        data: tempfile::TempDir,
        cluster_addr: String,
        seed: Option<&str>,
        env: &[(&str, &str)],
    ) -> Self {
        ferrocrawl::scrape::engine::http::install_crypto_provider();
        let mut node = Node { name: name.to_owned(), cluster_addr, process: None, key: String::new(), data };
        node.launch(seed, env);
        node
    }

    fn launch(&mut self, seed: Option<&str>, env: &[(&str, &str)]) {
        let mut args = vec!["--cluster-listen", self.cluster_addr.as_str()];
        if let Some(seed) = seed {
            args.extend(["--join", seed]);
        }
        // Every node knows the operator's key (the keys of a cluster are the same everywhere).
        if self.key.is_empty() {
            let data = self.data.path().to_str().expect("utf8").to_owned();
            let out = crate::common::process::run(
                &["keys", "create", "--team", "default", "--key", SHARED_KEY, "--data", &data],
                &[],
            );
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        }
        let mut vars = vec![
            ("FERROCRAWL_CLUSTER__NODE_NAME", self.name.as_str()),
            ("FERROCRAWL_CLUSTER__SECRET", SECRET),
            ("FERROCRAWL_CLUSTER__HEARTBEAT_MS", "200"),
            ("FERROCRAWL_CLUSTER__DOWN_AFTER_MS", "1500"),
        ];
        vars.extend_from_slice(env);
        self.process = Some(Binary::serve_with(self.data.path(), &args, &vars));
        self.key = SHARED_KEY.to_owned();
    }

    /// Starts the node again on its data directory and cluster address.
    pub(crate) fn restart(&mut self, seed: &str) {
        self.launch(Some(seed), &[]);
    }

    /// [`Node::restart`] joining `seed` when given, with settings `env`.
    pub(crate) fn restart_with(&mut self, seed: Option<&str>, env: &[(&str, &str)]) {
        self.launch(seed, env);
    }

    pub(crate) fn base(&self) -> &str {
        &self.process.as_ref().expect("running").base
    }

    /// `GET /v2/cluster` on this node.
    pub(crate) async fn view(&self) -> Value {
        let client = reqwest::Client::builder().no_proxy().build().expect("client");
        let resp = client
            .get(format!("{}/v2/cluster", self.base()))
            .bearer_auth(&self.key)
            .send()
            .await
            .expect("cluster view");
        let (status, body) = decode(resp).await;
        assert_eq!(status, 200, "{body}");
        body
    }

    /// The live members this node sees, sorted.
    pub(crate) async fn live(&self) -> Vec<String> {
        let view = self.view().await;
        view["live"].as_array().expect("live").iter().map(|v| v.as_str().expect("name").to_owned()).collect()
    }

    /// The warnings and errors this node logged, to explain a failed check.
    pub(crate) fn warnings(&self) -> String {
        let log = self.process.as_ref().map(Binary::stderr).unwrap_or_default();
        log.lines().filter(|l| l.contains("WARN") || l.contains("ERROR")).collect::<Vec<_>>().join("\n")
    }

    /// Waits until this node sees exactly `members` live.
    pub(crate) async fn wait_live(&self, members: &[&str], limit: Duration) -> Duration {
        let started = Instant::now();
        let want: Vec<String> = members.iter().map(|m| (*m).to_owned()).collect();
        loop {
            let live = self.live().await;
            if live == want {
                return started.elapsed();
            }
            assert!(
                started.elapsed() < limit,
                "{} sees {live:?}, not {want:?}; its warnings:\n{}",
                self.name,
                self.warnings()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// Sends a request with `key` to `base`.
pub(crate) async fn call(
    base: &str,
    key: &str,
    method: reqwest::Method,
    path: &str,
    body: Option<&Value>,
) -> (u16, Value) {
    let client = reqwest::Client::builder().no_proxy().build().expect("client");
    let mut req = client.request(method, format!("{base}{path}")).bearer_auth(key);
    if let Some(body) = body {
        req = req.json(body);
    }
    decode(req.send().await.expect("request")).await
}

#[tokio::test]
async fn nodes_meet_through_one_seed_and_notice_a_lost_node() {
    let a = Node::start("a", None, &[]);
    let b = Node::start("b", Some(&a.cluster_addr), &[]);
    let mut c = Node::start("c", Some(&a.cluster_addr), &[]);
    let all = ["a", "b", "c"];
    for node in [&a, &b, &c] {
        node.wait_live(&all, Duration::from_secs(20)).await;
    }
    // b and c met through a alone (transitive connections).
    let view = b.view().await;
    let members = view["members"].as_array().expect("members");
    assert_eq!(members.len(), 3, "{view}");
    assert!(
        members.iter().all(|m| m["jobs"].is_u64() && m["domains"].is_u64()),
        "counts of every node: {view}"
    );
    assert_eq!(view["node"], "b");
    assert_eq!(view["protocolVersion"], ferrocrawl::remote::compat::PROTOCOL);

    // SIGKILL: out within the configured time (1.5 s here), back after a restart.
    c.process.take().expect("c").kill9();
    let gone = a.wait_live(&["a", "b"], Duration::from_secs(10)).await;
    b.wait_live(&["a", "b"], Duration::from_secs(10)).await;
    assert!(gone < Duration::from_secs(5), "a dead node left after {gone:?}");
    c.restart(&a.cluster_addr);
    for node in [&a, &b, &c] {
        node.wait_live(&all, Duration::from_secs(20)).await;
    }

    // SIGSTOP: a frozen node keeps its connections open but stops answering.
    b.process.as_ref().expect("b").signal("STOP");
    let frozen = a.wait_live(&["a", "c"], Duration::from_secs(10)).await;
    assert!(frozen < Duration::from_secs(5), "a frozen node left after {frozen:?}");
    b.process.as_ref().expect("b").signal("CONT");
    // Woken, b does not judge the others down for its own pause, and sends nothing to any
    // site for `down_after_ms` (1.5 s here): the others count it as a member again first.
    let woke = Instant::now();
    let back_in_touch = loop {
        let view = b.view().await;
        let live: Vec<&str> =
            view["live"].as_array().expect("live").iter().filter_map(Value::as_str).collect();
        assert!(live.contains(&"a") && live.contains(&"c"), "b judged the others down for its pause: {view}");
        if view["inTouch"] == true {
            break woke.elapsed();
        }
        assert!(woke.elapsed() < Duration::from_secs(20), "b never got back in touch: {view}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(back_in_touch >= Duration::from_millis(1200), "b was in touch {back_in_touch:?} after waking");
    for node in [&a, &b, &c] {
        node.wait_live(&all, Duration::from_secs(20)).await;
        assert_eq!(node.view().await["inTouch"], true);
    }
}

#[tokio::test]
async fn a_node_with_another_secret_never_joins() {
    let a = Node::start("a", None, &[]);
    let outsider = Node::start(
        "x",
        Some(&a.cluster_addr),
        &[("FERROCRAWL_CLUSTER__SECRET", "some-other-secret-987654321")],
    );
    // Give the handshake time to fail; neither side may list the other.
    let deadline = Instant::now() + Duration::from_secs(3);
    while Instant::now() < deadline {
        assert_eq!(a.live().await, vec!["a".to_owned()]);
        assert_eq!(outsider.live().await, vec!["x".to_owned()]);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A node of a protocol version this build does not speak (older than the previous
/// release's), or of a newer build that no longer speaks this one, is refused at join; each
/// side's log names the other's version.
#[tokio::test]
async fn a_node_of_another_protocol_version_is_refused() {
    let ours = ferrocrawl::remote::compat::PROTOCOL;
    let too_old = ferrocrawl::remote::compat::PREVIOUS - 1;
    let a = Node::start("a", None, &[]);
    let outsiders: Vec<(u32, Node)> = [(too_old, too_old, "p"), (ours + 1, ours + 1, "n")]
        .into_iter()
        .map(|(theirs, oldest, name)| {
            let (version, oldest) = (theirs.to_string(), oldest.to_string());
            let env = [
                ("TEST_FERROCRAWL_PROTOCOL_VERSION", version.as_str()),
                ("TEST_FERROCRAWL_OLDEST_PROTOCOL_VERSION", oldest.as_str()),
            ];
            (theirs, Node::start(name, Some(&a.cluster_addr), &env))
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(10);
    for (theirs, outsider) in &outsiders {
        loop {
            let a_log = a.process.as_ref().expect("a").stderr();
            let o_log = outsider.process.as_ref().expect("outsider").stderr();
            if a_log.contains(&format!("protocol version {theirs};"))
                && o_log.contains(&format!("protocol version {ours};"))
            {
                break;
            }
            assert!(Instant::now() < deadline, "no refusal naming both versions:\n{a_log}\n---\n{o_log}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(outsider.live().await, vec![outsider.name.clone()]);
    }
    assert_eq!(a.live().await, vec!["a".to_owned()]);
}

#[tokio::test]
async fn a_node_needs_a_secret_and_a_valid_address() {
    let data = tempfile::tempdir().expect("tempdir");
    let clustered = [
        "serve",
        "--port",
        "0",
        "--data",
        data.path().to_str().expect("utf8"),
        "--cluster-listen",
        "127.0.0.1:0",
    ];
    let out = crate::common::process::run(&clustered, &[]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("cluster.secret"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = crate::common::process::run(
        &["serve", "--port", "0", "--data", data.path().to_str().expect("utf8"), "--join", "127.0.0.1:9"],
        &[],
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("cluster.seeds"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // TLS needs its three files, and files that hold what they should.
    let missing = data.path().join("missing.pem");
    let missing = missing.to_str().expect("utf8");
    for (env, named) in [
        (vec![("FERROCRAWL_CLUSTER__TLS_CERT", missing)], "cluster.tls_key"),
        (
            vec![
                ("FERROCRAWL_CLUSTER__TLS_CERT", missing),
                ("FERROCRAWL_CLUSTER__TLS_KEY", missing),
                ("FERROCRAWL_CLUSTER__TLS_CA", missing),
            ],
            "cluster.tls_cert",
        ),
    ] {
        let mut env = env;
        env.push(("FERROCRAWL_CLUSTER__SECRET", SECRET));
        let out = crate::common::process::run(&clustered, &env);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && stderr.contains(named), "{named}: {stderr}");
    }
}

/// A job lives on the node that accepted it; any node answers its status, errors and cancel
/// by asking that node, and says which node is missing when it is down; killed with
/// SIGKILL mid-job, the owner finishes the job when it comes back, every page once.
#[tokio::test]
async fn any_node_answers_for_a_job_and_names_a_missing_owner() {
    let site = crate::common::CrawlSite::start(100);
    let a = Node::start("a", None, &[]);
    let mut b = Node::start("b", Some(&a.cluster_addr), &[]);
    for node in [&a, &b] {
        node.wait_live(&["a", "b"], Duration::from_secs(20)).await;
    }
    let key = &a.key;
    let urls: Vec<String> = (0..30).map(|n| site.url(&format!("/chain/{n}"))).collect();
    let body = serde_json::json!({"urls": urls.clone(), "maxConcurrency": 1});
    let (status, started) = call(b.base(), key, reqwest::Method::POST, "/v2/batch/scrape", Some(&body)).await;
    assert_eq!(status, 200, "{started}");
    let id = started["id"].as_str().expect("id").to_owned();
    let path = format!("/v2/batch/scrape/{id}");

    // The owner is b; a answers the same by asking it.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (status, via_a) = call(a.base(), key, reqwest::Method::GET, &path, None).await;
        assert_eq!(status, 200, "{via_a}");
        if via_a["completed"].as_u64().unwrap_or(0) >= 2 {
            assert_eq!(via_a["status"], "scraping");
            assert!(via_a["data"].as_array().is_some_and(|d| !d.is_empty()), "documents come along: {via_a}");
            break;
        }
        assert!(Instant::now() < deadline, "no progress seen through a: {via_a}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (status, errors) = call(a.base(), key, reqwest::Method::GET, &format!("{path}/errors"), None).await;
    assert_eq!((status, errors["success"].as_bool()), (200, Some(true)), "{errors}");
    let (status, missing) = call(
        a.base(),
        key,
        reqwest::Method::GET,
        &format!("/v2/batch/scrape/{}", ferrocrawl::model::JobId::new()),
        None,
    )
    .await;
    assert_eq!(status, 404, "{missing}");

    // The owner down: other nodes name it.
    b.process.take().expect("b").kill9();
    a.wait_live(&["a"], Duration::from_secs(10)).await;
    let (status, unavailable) = call(a.base(), key, reqwest::Method::GET, &path, None).await;
    assert_eq!((status, unavailable["code"].as_str()), (503, Some("NODE_UNAVAILABLE")), "{unavailable}");
    assert!(unavailable["error"].as_str().expect("error").contains("`b`"), "{unavailable}");

    // Back with its data directory: the job resumes where it stopped and ends with every
    // page exactly once, read through a.
    b.restart(&a.cluster_addr);
    a.wait_live(&["a", "b"], Duration::from_secs(20)).await;
    let landed = finished_crawl(a.base(), key, &path).await;
    assert_eq!(landed, urls.iter().cloned().collect::<std::collections::BTreeSet<_>>(), "every page, once");

    // A cancel through a reaches a job of b.
    let body = serde_json::json!({"urls": urls, "maxConcurrency": 1, "maxAge": 0});
    let (status, started) = call(b.base(), key, reqwest::Method::POST, "/v2/batch/scrape", Some(&body)).await;
    assert_eq!(status, 200, "{started}");
    let path = format!("/v2/batch/scrape/{}", started["id"].as_str().expect("id"));
    let (status, cancelled) = call(a.base(), key, reqwest::Method::DELETE, &path, None).await;
    assert_eq!(status, 200, "{cancelled}");
    let (_, after) = call(b.base(), key, reqwest::Method::GET, &path, None).await;
    assert_eq!(after["status"], "cancelled", "{after}");
}

/// Nodes `a`, `b` and `c` (`a` with `keys`, `(team, key)`), joined through `a`, once each
/// sees all three live.
pub(crate) async fn three_nodes(env: &[(&str, &str)], keys: &[(&str, &str)]) -> Vec<Node> {
    let mut nodes = vec![Node::start_with_keys("a", None, env, keys)];
    let seed = nodes[0].cluster_addr.clone();
    nodes.push(Node::start("b", Some(&seed), env));
    nodes.push(Node::start("c", Some(&seed), env));
    for node in &nodes {
        node.wait_live(&["a", "b", "c"], Duration::from_secs(20)).await;
    }
    nodes
}

/// The node among `nodes` that owns `key` (the cluster's own placement rule).
pub(crate) fn owner_of(nodes: &[&str], key: &str) -> String {
    let names: Vec<String> = nodes.iter().map(|n| (*n).to_owned()).collect();
    ferrocrawl::cluster::place::owner(&names, key).expect("owner").to_owned()
}

/// A site served on two ports (two sites of one host) answering after `latency_ms`, its two
/// origins, and a name (`PREFIX{n}`) for a node beside `a` under which placement by origin
/// would put the two sites on different nodes.
pub(crate) fn one_host_two_sites(
    latency_ms: u64,
    prefix: &str,
) -> (crate::common::CrawlSite, [String; 2], String) {
    let mut site = crate::common::CrawlSite::start(latency_ms);
    let other = site.listen_again();
    let origins =
        [format!("http://site.localhost:{}/", site.port), format!("http://site.localhost:{other}/")];
    let name = (0..)
        .map(|n| format!("{prefix}{n}"))
        .find(|name| owner_of(&["a", name], &origins[0]) != owner_of(&["a", name], &origins[1]))
        .expect("a name");
    (site, origins, name)
}

/// The node among `nodes` (all of this build) that owns site `origin`: the owner of its host.
pub(crate) fn site_owner(nodes: &[&str], origin: &str) -> String {
    owner_of(nodes, ferrocrawl::cluster::place::host_of_origin(origin))
}

/// A crawl accepted by one node is fetched by the node that owns its site; when that node
/// is killed mid-crawl its pages go to the site's next owner and the crawl still returns
/// every page exactly once.
#[tokio::test]
async fn a_crawl_is_fetched_by_its_sites_node_and_survives_losing_it() {
    use crate::common::crawlsite::HUB_LEN;
    let site = crate::common::CrawlSite::start(60);
    let CrawlElsewhere { mut nodes, owner: owner_index, accepting, entry, key, path } =
        crawl_on_another_nodes_site(&site, 2).await;
    let (names, owner) = (["a", "b", "c"], nodes[owner_index].name.clone());

    // The site's actor runs on its owner, not on the node that took the crawl.
    let view = nodes[accepting].view().await;
    let domains = |name: &str| {
        view["members"].as_array().expect("members").iter().find(|m| m["name"] == name).expect("member")["domains"]
            .as_u64()
    };
    assert_eq!(domains(&owner), Some(1), "the owner runs the site's actor: {view}");
    assert_eq!(domains(names[accepting]), Some(0), "the crawl's node does not: {view}");
    // The pages crossed the cluster, as the crawl's node counts.
    let calls = metric(&entry, "cluster_calls_total").await;
    assert!(calls >= 6.0, "{calls} calls between nodes");
    // And the messages that carried them (batches and collections of answers).
    let messages = metric(&entry, "cluster_messages_total").await;
    assert!(messages >= 1.0, "{calls} calls in {messages} messages");

    // Kill the site's node mid-crawl.
    nodes[owner_index].process.take().expect("owner").kill9();
    let landed = finished_crawl(&entry, &key, &path).await;
    let expected: std::collections::BTreeSet<String> =
        (0..HUB_LEN).map(|n| site.url(&format!("/hub/{n}"))).collect();
    let (_, errors) = call(&entry, &key, reqwest::Method::GET, &format!("{path}/errors"), None).await;
    assert_eq!(landed, expected, "every page exactly once; errors: {errors}");
}

/// Three nodes and a crawl accepted by a node that does not own the crawl's site.
pub(crate) struct CrawlElsewhere {
    pub(crate) nodes: [Node; 3],
    /// Which of `nodes` owns the site.
    pub(crate) owner: usize,
    /// Which took the crawl.
    pub(crate) accepting: usize,
    pub(crate) entry: String,
    pub(crate) key: String,
    /// The crawl's status path.
    pub(crate) path: String,
}

/// Starts nodes a, b and c, and a crawl of `site`'s hub (`concurrency` pages at once)
/// through the node after the site's owner; returns once six pages are done.
pub(crate) async fn crawl_on_another_nodes_site(
    site: &crate::common::CrawlSite,
    concurrency: u32,
) -> CrawlElsewhere {
    let names = ["a", "b", "c"];
    let a = Node::start("a", None, &[]);
    let b = Node::start("b", Some(&a.cluster_addr), &[]);
    let c = Node::start("c", Some(&a.cluster_addr), &[]);
    let nodes = [a, b, c];
    for node in &nodes {
        node.wait_live(&names, Duration::from_secs(20)).await;
    }
    let origin = format!("http://site.localhost:{}/", site.port);
    let owner = names.iter().position(|n| *n == site_owner(&names, &origin)).expect("owner");
    let accepting = (owner + 1) % 3;
    let (entry, key) = (nodes[accepting].base().to_owned(), nodes[accepting].key.clone());
    let path = crawl_under_way(&entry, &key, site, concurrency, 6).await;
    CrawlElsewhere { nodes, owner, accepting, entry, key, path }
}

/// The sum of every series of the metric `name` on the node at `base` (`/metrics`).
pub(crate) async fn metric(base: &str, name: &str) -> f64 {
    let client = reqwest::Client::builder().no_proxy().build().expect("client");
    let text = client.get(format!("{base}/metrics")).send().await.expect("metrics").text().await;
    text.expect("text")
        .lines()
        .filter(|l| l.strip_prefix(name).is_some_and(|rest| rest.starts_with([' ', '{'])))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// Starts a crawl of `site`'s hub through `entry` (at most `concurrency` pages at once) and
/// returns its status path once `pages` pages are done.
pub(crate) async fn crawl_under_way(
    entry: &str,
    key: &str,
    site: &crate::common::CrawlSite,
    concurrency: u32,
    pages: u64,
) -> String {
    let body = serde_json::json!({"url": site.url("/hub/0"), "sitemap": "skip", "crawlEntireDomain": true, "maxConcurrency": concurrency});
    let (status, started) = call(entry, key, reqwest::Method::POST, "/v2/crawl", Some(&body)).await;
    assert_eq!(status, 200, "{started}");
    let path = format!("/v2/crawl/{}", started["id"].as_str().expect("id"));
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (_, status) = call(entry, key, reqwest::Method::GET, &path, None).await;
        if status["completed"].as_u64().unwrap_or(0) >= pages {
            return path;
        }
        assert!(Instant::now() < deadline, "no progress: {status}");
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
}

/// Waits (a minute at most) for the crawl at `path` to complete, and returns the landing
/// URLs of all its documents (every page of `next` read).
pub(crate) async fn finished_crawl(entry: &str, key: &str, path: &str) -> std::collections::BTreeSet<String> {
    let deadline = Instant::now() + Duration::from_secs(60);
    let done = loop {
        let (status, body) = call(entry, key, reqwest::Method::GET, path, None).await;
        assert_eq!(status, 200, "{body}");
        if body["status"] != "scraping" {
            break body;
        }
        assert!(Instant::now() < deadline, "the crawl did not finish: {body}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(done["status"], "completed", "{done}");
    let mut docs = done["data"].as_array().cloned().unwrap_or_default();
    let mut next = done["next"].as_str().map(str::to_owned);
    while let Some(url) = next {
        let client = reqwest::Client::builder().no_proxy().build().expect("client");
        let (_, page) = decode(client.get(&url).bearer_auth(key).send().await.expect("next")).await;
        docs.extend(page["data"].as_array().cloned().unwrap_or_default());
        next = page["next"].as_str().map(str::to_owned);
    }
    crate::crawl::landing_urls(&docs)
}

/// A browser session lives where its Chromium runs (the node that ran the scrape); any
/// node passes interact calls, the live view and the session's end to it.
#[tokio::test]
async fn interact_and_the_live_view_work_through_any_node() {
    let site = crate::common::FixtureSite::start();
    let a = Node::start("a", None, &[]);
    let b = Node::start("b", Some(&a.cluster_addr), &[]);
    for node in [&a, &b] {
        node.wait_live(&["a", "b"], Duration::from_secs(20)).await;
    }
    let key = &a.key;
    let body = serde_json::json!({"url": site.url("/js/interactive"), "waitFor": 10});
    let (status, scraped) = call(a.base(), key, reqwest::Method::POST, "/v2/scrape", Some(&body)).await;
    assert_eq!(status, 200, "{scraped}");
    let id = scraped["data"]["metadata"]["scrapeId"].as_str().expect("scrapeId").to_owned();
    let path = format!("/v2/scrape/{id}/interact");

    // Made through b, on a (where the scrape's page state is); its state is there for a
    // call through either node.
    let code = serde_json::json!({"code": "window.marker = 'kept'; document.title"});
    let (status, first) = call(b.base(), key, reqwest::Method::POST, &path, Some(&code)).await;
    assert_eq!((status, first["success"].as_bool()), (200, Some(true)), "{first}");
    let session = first["sessionId"].as_str().expect("sessionId").to_owned();
    let members = b.view().await["members"].clone();
    let on = |name: &str| {
        members.as_array().expect("members").iter().find(|m| m["name"] == name).map(|m| m["sessions"].clone())
    };
    assert_eq!((on("a"), on("b")), (Some(1.into()), Some(0.into())), "{members}");
    let code = serde_json::json!({"code": "[window.marker]"});
    let (status, again) = call(a.base(), key, reqwest::Method::POST, &path, Some(&code)).await;
    assert_eq!((status, again["result"].as_str()), (200, Some(r#"["kept"]"#)), "{again}");
    assert_eq!(again["sessionId"], session.as_str());

    // The live view through b: its page and a frame of the page.
    let live = first["liveViewUrl"].as_str().expect("liveViewUrl");
    let live = &live[live.find("/v2/live/").expect("live path")..];
    let client = reqwest::Client::builder().no_proxy().build().expect("client");
    for (suffix, kind) in [("", "text/html"), ("/frame", "image/jpeg")] {
        let resp = client.get(format!("{}{live}{suffix}", b.base())).send().await.expect("live view");
        let content_type =
            resp.headers().get("content-type").and_then(|v| v.to_str().ok()).map(str::to_owned);
        assert_eq!(resp.status().as_u16(), 200, "{live}{suffix}");
        assert!(content_type.is_some_and(|t| t.starts_with(kind)), "{live}{suffix}");
        assert!(!resp.bytes().await.expect("body").is_empty());
    }

    // Ended through b by its id; the scrape's session is then gone on every node.
    let (status, ended) =
        call(b.base(), key, reqwest::Method::DELETE, &format!("/v2/browser/{session}"), None).await;
    assert_eq!((status, ended["success"].as_bool()), (200, Some(true)), "{ended}");
    let (status, after) = call(b.base(), key, reqwest::Method::POST, &path, Some(&code)).await;
    assert_eq!((status, after["code"].as_str()), (410, Some("SESSION_DESTROYED")), "{after}");
    let resp = client.get(format!("{}{live}", b.base())).send().await.expect("live view");
    assert_eq!(resp.status().as_u16(), 404);
}

/// `existingSessionId` may name a session on another node than the scrape's: the scrape's
/// node checks the scrape, the session's node runs the code, and the scrape keeps using
/// that session (and ends it) through any node.
#[tokio::test]
async fn a_scrape_uses_a_session_held_by_another_node() {
    let site = crate::common::FixtureSite::start();
    let a = Node::start_with_keys("a", None, &[], &[("other", "fc-other-team-key-1")]);
    let b = Node::start("b", Some(&a.cluster_addr), &[]);
    for node in [&a, &b] {
        node.wait_live(&["a", "b"], Duration::from_secs(20)).await;
    }
    let key = &a.key;
    let body = serde_json::json!({"url": site.url("/js/interactive"), "waitFor": 10});
    let scrape_on = |node: &Node| {
        let base = node.base().to_owned();
        let body = body.clone();
        async move {
            let (status, scraped) = call(&base, key, reqwest::Method::POST, "/v2/scrape", Some(&body)).await;
            assert_eq!(status, 200, "{scraped}");
            scraped["data"]["metadata"]["scrapeId"].as_str().expect("scrapeId").to_owned()
        }
    };
    let (on_a, on_b) = (scrape_on(&a).await, scrape_on(&b).await);
    let code = serde_json::json!({"code": "window.marker = 'from b'; 1"});
    let (status, made) =
        call(a.base(), key, reqwest::Method::POST, &format!("/v2/scrape/{on_b}/interact"), Some(&code)).await;
    assert_eq!(status, 200, "{made}");
    let session = made["sessionId"].as_str().expect("sessionId").to_owned();

    // a's scrape in b's session, asked through either node.
    let path = format!("/v2/scrape/{on_a}/interact");
    for node in [&b, &a] {
        let code = serde_json::json!({"code": "[window.marker]", "existingSessionId": session});
        let (status, used) = call(node.base(), key, reqwest::Method::POST, &path, Some(&code)).await;
        assert_eq!((status, used["result"].as_str()), (200, Some(r#"["from b"]"#)), "{used}");
        assert_eq!(used["sessionId"], session.as_str());
    }
    // Without existingSessionId the scrape keeps that session; no other was made.
    let code = serde_json::json!({"code": "[window.marker]"});
    let (status, kept) = call(b.base(), key, reqwest::Method::POST, &path, Some(&code)).await;
    assert_eq!((status, kept["sessionId"].as_str()), (200, Some(session.as_str())), "{kept}");
    let members = a.view().await["members"].clone();
    let sessions: Vec<Value> =
        members.as_array().expect("members").iter().map(|m| m["sessions"].clone()).collect();
    assert_eq!(sessions.iter().filter_map(Value::as_u64).sum::<u64>(), 1, "{members}");

    // Another team's key may not use a's scrape (checked on a) even with b's session.
    let (status, other) =
        call(a.base(), "fc-other-team-key-1", reqwest::Method::POST, &path, Some(&code)).await;
    assert_eq!(status, 403, "{other}");

    // Ending the scrape's session through a ends b's session.
    let (status, ended) = call(a.base(), key, reqwest::Method::DELETE, &path, None).await;
    assert_eq!((status, ended["success"].as_bool()), (200, Some(true)), "{ended}");
    let (status, after) =
        call(a.base(), key, reqwest::Method::POST, &format!("/v2/scrape/{on_b}/interact"), Some(&code)).await;
    assert_eq!((status, after["code"].as_str()), (410, Some("SESSION_DESTROYED")), "{after}");
}

/// A team's concurrency limit and request rate hold for the cluster as a whole: two
/// batches of one team, accepted by two nodes, never have more pages in flight together
/// than the team's limit, and POSTs through three nodes share one rate.
#[tokio::test]
async fn a_teams_concurrency_and_rate_hold_for_the_whole_cluster() {
    let site = crate::common::CrawlSite::start(150);
    let env = [
        ("FERROCRAWL_LIMITS__TEAM_CONCURRENCY", "2"),
        ("FERROCRAWL_CRAWL__DOMAIN_CONCURRENCY", "10"),
        ("FERROCRAWL_CRAWL__DOMAIN_MIN_INTERVAL_MS", "0"),
        ("FERROCRAWL_LIMITS__REQUESTS_PER_MINUTE", "5"),
    ];
    let a = Node::start("a", None, &env);
    let b = Node::start("b", Some(&a.cluster_addr), &env);
    let c = Node::start("c", Some(&a.cluster_addr), &env);
    for node in [&a, &b, &c] {
        node.wait_live(&["a", "b", "c"], Duration::from_secs(20)).await;
    }
    let key = &a.key;
    let mut paths = Vec::new();
    for (node, half) in [(&a, 0), (&b, 1)] {
        let urls: Vec<String> = (0..12).map(|n| site.url(&format!("/chain/{}", n * 2 + half))).collect();
        let body = serde_json::json!({"urls": urls});
        let (status, started) =
            call(node.base(), key, reqwest::Method::POST, "/v2/batch/scrape", Some(&body)).await;
        assert_eq!(status, 200, "{started}");
        paths.push(format!("/v2/batch/scrape/{}", started["id"].as_str().expect("id")));
    }
    for path in &paths {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let (status, job) = call(c.base(), key, reqwest::Method::GET, path, None).await;
            assert_eq!(status, 200, "{job}");
            if job["status"] == "completed" {
                assert_eq!(job["completed"].as_u64(), Some(12), "{job}");
                break;
            }
            assert!(Instant::now() < deadline, "the batch did not finish: {job}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    let most = site.max_in_flight();
    assert!((1..=2).contains(&most), "{most} pages of the team in flight at once (limit 2)");

    // Five POSTs a minute for the team, whichever nodes they go through: 2 were the
    // batches, so three more pass and the next is refused.
    let mut answers = Vec::new();
    for round in 0..5 {
        let node = [&a, &b, &c][round % 3];
        let body = serde_json::json!({"url": site.url("/chain/0")});
        let (status, _) = call(node.base(), key, reqwest::Method::POST, "/v2/scrape", Some(&body)).await;
        answers.push(status);
    }
    assert_eq!(answers, [200, 200, 200, 429, 429], "one rate for the team across three nodes");
}

/// A browser profile is kept by one node of the cluster: saved through one node, it is the
/// one a scrape through any other node starts from.
#[tokio::test]
async fn a_profile_saved_through_one_node_is_used_by_every_node() {
    let site = crate::common::FixtureSite::start();
    let a = Node::start("a", None, &[]);
    let b = Node::start("b", Some(&a.cluster_addr), &[]);
    let c = Node::start("c", Some(&a.cluster_addr), &[]);
    for node in [&a, &b, &c] {
        node.wait_live(&["a", "b", "c"], Duration::from_secs(20)).await;
    }
    let visit = |save: bool| serde_json::json!({"url": site.url("/js/memory"), "profile": {"name": "shop", "saveChanges": save}});
    let markdown = |body: &Value| body["data"]["markdown"].as_str().unwrap_or_default().to_owned();
    let (status, first) =
        call(a.base(), &a.key, reqwest::Method::POST, "/v2/scrape", Some(&visit(true))).await;
    assert_eq!(status, 200, "{first}");
    assert!(markdown(&first).contains("first visit"), "{first}");
    for node in [&b, &c, &a] {
        let (status, again) =
            call(node.base(), &a.key, reqwest::Method::POST, "/v2/scrape", Some(&visit(false))).await;
        assert_eq!(status, 200, "{again}");
        assert!(markdown(&again).contains("returning visitor, theme dark"), "through {}: {again}", node.name);
    }
}
