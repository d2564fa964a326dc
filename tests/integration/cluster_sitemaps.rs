//! A crawl's sitemap discovery across a cluster: the sitemaps robots.txt names are asked
//! of the node that owns the site, and each sitemap is read through it; when that node is
//! lost, or lets the site go to a joining node, before it answers, they are asked of the
//! site's next owner, so the pages only a sitemap lists are still crawled.

use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use actix_web::{HttpRequest, HttpResponse, web};

use crate::cluster::{Node, call, finished_crawl, site_owner, three_nodes};

/// A site whose robots.txt names a sitemap that lists `/hidden`, a page nothing links to;
/// one path (robots.txt, or the home page) is answered only once the test opens the gate.
struct GatedSite {
    base: String,
    state: Arc<Gate>,
    _server: crate::common::ActixThread,
}

struct Gate {
    gated: &'static str,
    open: AtomicBool,
    robots_reads: AtomicUsize,
    home_reads: AtomicUsize,
}

impl GatedSite {
    fn start(gated: &'static str) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let base = format!("http://127.0.0.1:{}", listener.local_addr().expect("addr").port());
        let state = Arc::new(Gate {
            gated,
            open: AtomicBool::new(false),
            robots_reads: AtomicUsize::new(0),
            home_reads: AtomicUsize::new(0),
        });
        let data = web::Data::from(Arc::clone(&state));
        let server = crate::common::ActixThread::spawn(listener, 2, move |cfg| {
            cfg.app_data(data.clone()).default_service(web::to(answer));
        });
        Self { base, state, _server: server }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Waits until robots.txt was asked for `reads` times.
    async fn wait_robots_reads(&self, reads: usize) {
        wait_reads(&self.state.robots_reads, reads, "robots.txt").await;
    }
}

/// Waits (a minute at most) until `counter` reaches `reads`.
async fn wait_reads(counter: &AtomicUsize, reads: usize, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while counter.load(Ordering::SeqCst) < reads {
        assert!(Instant::now() < deadline, "{what} was not read {reads} times");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn answer(req: HttpRequest, gate: web::Data<Gate>) -> HttpResponse {
    let base = format!("http://{}", req.connection_info().host());
    let html = |body: &str| {
        HttpResponse::Ok()
            .content_type("text/html")
            .body(format!("<html><body><main>{body}</main></body></html>"))
    };
    let counter = match req.path() {
        "/robots.txt" => Some(&gate.robots_reads),
        "/" => Some(&gate.home_reads),
        _ => None,
    };
    if let Some(counter) = counter {
        counter.fetch_add(1, Ordering::SeqCst);
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    while req.path() == gate.gated && !gate.open.load(Ordering::SeqCst) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    match req.path() {
        "/robots.txt" => {
            HttpResponse::Ok().content_type("text/plain").body(format!("User-agent: *\nAllow: /\n\nSitemap: {base}/maps/only.xml\n"))
        }
        "/maps/only.xml" => HttpResponse::Ok().content_type("application/xml").body(format!(
            "<?xml version=\"1.0\"?><urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\"><url><loc>{base}/hidden</loc></url></urlset>"
        )),
        "/" => html("<p>The home page of a site whose sitemap knows one more page.</p><a href=\"/a\">a</a>"),
        "/a" => html("<p>A page linked from the home page, with words enough to be content.</p>"),
        "/hidden" => html("<p>A page only the sitemap lists, with words enough to be content.</p>"),
        _ => HttpResponse::NotFound().body("not found"),
    }
}

/// The site's node is killed while it reads robots.txt for a crawl accepted by another
/// node: the crawl asks the site's next owner for the sitemaps robots.txt names, and still
/// returns the page only the sitemap lists (before, it took the lost question for a site
/// with no sitemaps).
#[tokio::test]
async fn a_crawl_reads_the_sitemaps_of_a_site_whose_node_was_lost() {
    let site = GatedSite::start("/robots.txt");
    let names = ["a", "b", "c"];
    let mut nodes = three_nodes(&[], &[]).await;
    let owner = site_owner(&names, &site.url("/"));
    let owner_index = names.iter().position(|n| *n == owner).expect("index");
    let accepting = (owner_index + 1) % 3;
    let (entry, key) = (nodes[accepting].base().to_owned(), nodes[accepting].key.clone());
    let body = serde_json::json!({"url": site.url("/"), "limit": 10});
    let (status, started) = call(&entry, &key, reqwest::Method::POST, "/v2/crawl", Some(&body)).await;
    assert_eq!(status, 200, "{started}");
    let path = format!("/v2/crawl/{}", started["id"].as_str().expect("id"));

    // The site's node reads robots.txt (held open), the crawl's sitemap question waiting.
    site.wait_robots_reads(1).await;
    nodes[owner_index].process.take().expect("owner").kill9();
    // The site's next owner reads it again; then robots.txt answers.
    site.wait_robots_reads(2).await;
    site.state.open.store(true, Ordering::SeqCst);

    let landed = finished_crawl(&entry, &key, &path).await;
    let expected: std::collections::BTreeSet<String> =
        ["/", "/a", "/hidden"].iter().map(|p| site.url(p)).collect();
    let (_, errors) = call(&entry, &key, reqwest::Method::GET, &format!("{path}/errors"), None).await;
    assert_eq!(landed, expected, "errors: {errors}; warnings:\n{}", nodes[accepting].warnings());
}

/// A sitemap read waiting at the site's node (behind the site's one request at a time, the
/// home page, held open) when a joining node takes the site over is answered that the site
/// moved, and read through the joining node: the crawl still returns the page only the
/// sitemap lists (before, the read was answered as failed and the sitemap skipped).
#[tokio::test]
async fn a_crawl_reads_a_sitemap_through_the_node_that_takes_its_site_over() {
    let site = GatedSite::start("/");
    let env = [("FERROCRAWL_CRAWL__DOMAIN_CONCURRENCY", "1")];
    let origin = site.url("/");
    // A name under which the joining node owns the site.
    let joining = (0..)
        .map(|n| format!("j{n}"))
        .find(|name| site_owner(&["a", "b", name], &origin) == *name)
        .expect("a name");
    let a = Node::start("a", None, &env);
    let b = Node::start("b", Some(&a.cluster_addr), &env);
    for node in [&a, &b] {
        node.wait_live(&["a", "b"], Duration::from_secs(20)).await;
    }
    let body = serde_json::json!({"url": origin, "limit": 10, "scrapeOptions": {"timeout": 15_000}});
    let (status, started) = call(a.base(), &a.key, reqwest::Method::POST, "/v2/crawl", Some(&body)).await;
    assert_eq!(status, 200, "{started}");
    let path = format!("/v2/crawl/{}", started["id"].as_str().expect("id"));
    wait_reads(&site.state.home_reads, 1, "the home page").await;

    // The joining node takes the site: a crawl through it makes its actor of the site claim
    // it. The old owner lets it go once its home page request runs out of time; the joining
    // node then reads robots.txt, and the home page is answered from then on.
    let c = Node::start(&joining, Some(&a.cluster_addr), &env);
    let mut all = vec!["a", "b", joining.as_str()];
    all.sort_unstable();
    for node in [&a, &b, &c] {
        node.wait_live(&all, Duration::from_secs(20)).await;
    }
    let body = serde_json::json!({"url": site.url("/a"), "limit": 1, "sitemap": "skip"});
    let (status, started) = call(c.base(), &c.key, reqwest::Method::POST, "/v2/crawl", Some(&body)).await;
    assert_eq!(status, 200, "{started}");
    site.wait_robots_reads(2).await;
    site.state.open.store(true, Ordering::SeqCst);

    let landed = finished_crawl(a.base(), &a.key, &path).await;
    let (_, errors) = call(a.base(), &a.key, reqwest::Method::GET, &format!("{path}/errors"), None).await;
    assert!(
        landed.contains(&site.url("/hidden")),
        "the sitemap's page is missing: {landed:?}; errors: {errors}; warnings:\n{}",
        a.warnings()
    );
}
