//! A local site to crawl, served on 127.0.0.1 under several host names (`site.localhost`,
//! `www.site.localhost`, `b.site.localhost`, `other.localhost`, which resolve to loopback
//! without DNS): robots.txt with a disallowed section and a sitemap index pointing at a
//! gzipped sitemap, a blog and docs with nested depth, duplicate and query variants of the
//! same pages, a redirect, a 404 link, slow pages (`/slow/N`), an orphan page only the sitemap knows, a long chain
//! of pages, a subdomain and an "external" host; `maps.localhost` and `manymaps.localhost`
//! are sites made of sitemaps (an index of [`MAPS_PARTS`] or [`MANY_MAPS_PARTS`] sitemaps of
//! one page each); `news.localhost` is a site whose sitemap lists `/a`, `/b` and `/c` while its
//! home page links `/a` and `/b`, or only `/a` once [`CrawlSite::unlink_b`] was called. It records every request with its time and the most requests it ever
//! served at once, optionally answering each after a delay.

use std::io::Write;
use std::net::TcpListener;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix_web::{HttpRequest, HttpResponse, web};

/// Pages of the `/chain/N` sequence.
pub const CHAIN_LEN: usize = 60;
/// Pages of the `/hub/N` sequence, where `/go/N` redirects to `/hub/N`.
pub const HUB_LEN: usize = 40;
/// Sitemaps in the index of `maps.localhost`.
pub const MAPS_PARTS: usize = 3;
/// Sitemaps in the index of `manymaps.localhost`.
pub const MANY_MAPS_PARTS: usize = 40;
/// How long a `/slow/N` page takes to answer, on top of the site's delay.
pub const SLOW_MS: u64 = 1500;

#[derive(Default)]
struct State {
    requests: Mutex<Vec<(String, String, std::time::Instant)>>,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    /// Requests being served and the most at once, by host.
    hosts: Mutex<std::collections::HashMap<String, (usize, usize)>>,
    delay_ms: AtomicU64,
    b_unlinked: std::sync::atomic::AtomicBool,
}

/// A running crawl fixture.
pub struct CrawlSite {
    /// Port on 127.0.0.1.
    pub port: u16,
    state: Arc<State>,
    _server: super::ActixThread,
    /// Servers of the same site on other ports ([`CrawlSite::listen_again`]).
    others: Vec<super::ActixThread>,
}

impl CrawlSite {
    /// Starts the site (answering after `delay_ms` per request).
    pub fn start(delay_ms: u64) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let state = Arc::new(State::default());
        state.delay_ms.store(delay_ms, Ordering::SeqCst);
        let server = serve(listener, &state);
        Self { port, state, _server: server, others: Vec::new() }
    }

    /// Serves the same site (the same pages, counted together) on another port too, as
    /// another origin of the same host; returns the port.
    pub fn listen_again(&mut self) -> u16 {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        self.others.push(serve(listener, &self.state));
        port
    }

    /// `http://site.localhost:PORT{path}`
    pub fn url(&self, path: &str) -> String {
        format!("http://site.localhost:{}{path}", self.port)
    }

    /// Every request so far as `host path` (host without port).
    pub fn requests(&self) -> Vec<String> {
        self.state.requests.lock().expect("lock").iter().map(|(h, p, _)| format!("{h} {p}")).collect()
    }

    /// Requests for `path` on any host.
    pub fn hits(&self, path: &str) -> usize {
        self.state.requests.lock().expect("lock").iter().filter(|(_, p, _)| p == path).count()
    }

    /// Start times of requests whose path begins with `prefix`.
    pub fn starts(&self, prefix: &str) -> Vec<std::time::Instant> {
        self.state
            .requests
            .lock()
            .expect("lock")
            .iter()
            .filter(|(_, p, _)| p.starts_with(prefix))
            .map(|(_, _, t)| *t)
            .collect()
    }

    /// Requests to `host` as (path, time received), in order.
    pub fn requests_to(&self, host: &str) -> Vec<(String, std::time::Instant)> {
        self.state
            .requests
            .lock()
            .expect("lock")
            .iter()
            .filter(|(h, _, _)| h == host)
            .map(|(_, p, t)| (p.clone(), *t))
            .collect()
    }

    /// From now on the home page of `news.localhost` no longer links `/b`.
    pub fn unlink_b(&self) {
        self.state.b_unlinked.store(true, Ordering::SeqCst);
    }

    /// The most requests served at the same time.
    pub fn max_in_flight(&self) -> usize {
        self.state.max_in_flight.load(Ordering::SeqCst)
    }

    /// The most requests to `host` served at the same time.
    pub fn max_in_flight_at(&self, host: &str) -> usize {
        self.state.hosts.lock().expect("lock").get(host).map_or(0, |(_, most)| *most)
    }
}

fn serve(listener: TcpListener, state: &Arc<State>) -> super::ActixThread {
    let data = web::Data::from(Arc::clone(state));
    super::ActixThread::spawn(listener, 2, move |cfg| {
        cfg.app_data(data.clone()).default_service(web::to(handle));
    })
}

fn page(title: &str, body: &str, links: &[&str]) -> HttpResponse {
    let anchors: String = links.iter().map(|l| format!("<li><a href=\"{l}\">{l}</a></li>")).collect();
    HttpResponse::Ok().content_type("text/html; charset=utf-8").body(format!(
        "<!DOCTYPE html><html><head><title>{title}</title></head><body><nav><ul>{anchors}</ul></nav><main><article><h1>{title}</h1><p>{body} This paragraph gives the page enough words to count as content for the extractor.</p></article></main></body></html>"
    ))
}

struct InFlight<'a>(&'a State, String);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
        if let Some((now, _)) = self.0.hosts.lock().expect("lock").get_mut(&self.1) {
            *now -= 1;
        }
    }
}

async fn handle(req: HttpRequest, state: web::Data<State>) -> HttpResponse {
    let host = req.connection_info().host().split(':').next().unwrap_or_default().to_owned();
    let path = match req.query_string() {
        "" => req.path().to_owned(),
        q => format!("{}?{q}", req.path()),
    };
    state.requests.lock().expect("lock").push((host.clone(), path.clone(), std::time::Instant::now()));
    let now = state.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    state.max_in_flight.fetch_max(now, Ordering::SeqCst);
    {
        let mut hosts = state.hosts.lock().expect("lock");
        let (now, most) = hosts.entry(host.clone()).or_default();
        *now += 1;
        *most = (*most).max(*now);
    }
    let _guard = InFlight(&state, host.clone());
    let delay = state.delay_ms.load(Ordering::SeqCst);
    if delay > 0 {
        tokio::time::sleep(Duration::from_millis(delay)).await;
    }
    let port = req.app_config().local_addr().port();
    match host.as_str() {
        "b.site.localhost" => return page("Shop", "The subdomain shop.", &["/shop/item"]),
        // A site that asks for a second between requests.
        "polite.localhost" if req.path() == "/robots.txt" => {
            return HttpResponse::Ok().content_type("text/plain").body("User-agent: *\nCrawl-delay: 1\n");
        }
        "polite.localhost" => {
            let n: usize = req.path().trim_start_matches("/p/").parse().unwrap_or(0);
            let next = format!("/p/{}", n + 1);
            return page("Polite", "A page of a site with a crawl delay.", &[&next]);
        }
        "other.localhost" => return page("Elsewhere", "Another site entirely.", &[]),
        "maps.localhost" => return sitemap_site(&host, port, MAPS_PARTS, req.path()),
        "news.localhost" => return news_site(port, req.path(), state.b_unlinked.load(Ordering::SeqCst)),
        "manymaps.localhost" => return sitemap_site(&host, port, MANY_MAPS_PARTS, req.path()),
        _ => {}
    }
    match req.path() {
        "/robots.txt" => HttpResponse::Ok().content_type("text/plain").body(format!(
            "User-agent: *\nDisallow: /private/\n\nSitemap: http://site.localhost:{port}/sitemap.xml\n"
        )),
        "/sitemap.xml" => HttpResponse::Ok().content_type("application/xml").body(format!(
            "<?xml version=\"1.0\"?><sitemapindex xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\"><sitemap><loc>http://site.localhost:{port}/sitemaps/pages.xml.gz</loc></sitemap></sitemapindex>"
        )),
        "/sitemaps/pages.xml.gz" => {
            let xml = format!(
                "<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\"><url><loc>http://site.localhost:{port}/orphan</loc></url><url><loc>http://site.localhost:{port}/blog/post-1</loc></url><url><loc>http://site.localhost:{port}/private/from-sitemap</loc></url></urlset>"
            );
            let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            enc.write_all(xml.as_bytes()).expect("gzip");
            HttpResponse::Ok().content_type("application/gzip").body(enc.finish().expect("gzip"))
        }
        "/" | "/index.html" => {
            let sub = format!("http://b.site.localhost:{port}/shop");
            let ext = format!("http://other.localhost:{port}/elsewhere");
            let www = format!("http://www.site.localhost:{port}/about");
            page(
                "Home",
                "Welcome to the fixture site.",
                &["/blog/", "/blog", "/blog/index.html", "/docs/", "/about", &www, "/private/secret", "/missing-link", &sub, &ext,
                  "mailto:someone@example.com", "/logo.png", "/blog/post-1?ref=home", "/blog/post-1#comments"],
            )
        }
        "/blog/" | "/blog" | "/blog/index.html" => page("Blog", "All posts.", &["/blog/post-1", "/blog/post-2", "/blog/post-3", "/"]),
        "/blog/post-1" => page("Post one", "First post.", &["/blog/post-2", "/blog/"]),
        "/blog/post-2" => page("Post two", "Second post.", &["/blog/post-3", "/blog/"]),
        "/blog/post-3" => HttpResponse::MovedPermanently().insert_header(("Location", "/blog/post-3-final")).finish(),
        "/blog/post-3-final" => page("Post three", "Third post, after a redirect.", &["/blog/"]),
        "/docs/" => page("Docs", "Documentation index.", &["/docs/a"]),
        "/docs/a" => page("Docs A", "Level one.", &["/docs/a/deep"]),
        "/docs/a/deep" => page("Docs deep", "Level two.", &["/docs/a/deep/deeper"]),
        "/docs/a/deep/deeper" => page("Docs deeper", "Level three.", &[]),
        "/about" => page("About", "About the site.", &["/", "/files/manual.pdf"]),
        // A PDF that is not one: the page fails and is listed in the errors.
        "/files/manual.pdf" => HttpResponse::Ok().content_type("application/pdf").body(&b"%PDF-1.4 not really"[..]),
        "/flaky" => {
            // The first request is told to come back in a second.
            let seen = state.requests.lock().expect("lock").iter().filter(|(_, p, _)| p == "/flaky").count();
            if seen == 1 {
                HttpResponse::TooManyRequests().insert_header(("Retry-After", "1")).body("slow down")
            } else {
                page("Flaky", "Served once the client waited.", &[])
            }
        }
        "/orphan" => page("Orphan", "Only the sitemap links here.", &[]),
        p if p.starts_with("/private/") => page("Private", "Robots may not read this.", &[]),
        // Each hub page links to the next two and, through a redirect, to the third: every
        // redirect lands on a page that is also linked directly.
        p if p.starts_with("/hub/") => {
            let n: usize = p.trim_start_matches("/hub/").parse().unwrap_or(usize::MAX);
            if n >= HUB_LEN {
                return HttpResponse::NotFound().content_type("text/html").body("<p>no such hub</p>");
            }
            let links: Vec<String> = [(n + 1, "hub"), (n + 2, "hub"), (n + 3, "go")]
                .into_iter()
                .filter(|&(k, _)| k < HUB_LEN)
                .map(|(k, kind)| format!("/{kind}/{k}"))
                .collect();
            let links: Vec<&str> = links.iter().map(String::as_str).collect();
            page(&format!("Hub {n}"), &format!("Hub page number {n}."), &links)
        }
        p if p.starts_with("/go/") => HttpResponse::MovedPermanently()
            .insert_header(("Location", format!("/hub/{}", p.trim_start_matches("/go/"))))
            .finish(),
        // A redirect to another host of this server: `/away/HOST/PATH` → `http://HOST:PORT/PATH`.
        p if p.starts_with("/away/") => {
            let rest = p.trim_start_matches("/away/");
            let (to, path) = rest.split_once('/').unwrap_or((rest, ""));
            HttpResponse::Found().insert_header(("Location", format!("http://{to}:{port}/{path}"))).finish()
        }
        p if p.starts_with("/p/") => page("Page", "A plain page of a site.", &[]),
        p if p.starts_with("/slow/") => {
            tokio::time::sleep(Duration::from_millis(SLOW_MS)).await;
            page("Slow", "A page answered after a while.", &[])
        }
        p if p.starts_with("/chain/") => {
            let n: usize = p.trim_start_matches("/chain/").parse().unwrap_or(usize::MAX);
            if n >= CHAIN_LEN {
                return HttpResponse::NotFound().content_type("text/html").body("<p>end of chain</p>");
            }
            let next = format!("/chain/{}", n + 1);
            let after = format!("/chain/{}", n + 2);
            page(&format!("Chain {n}"), &format!("Link number {n} of the chain."), &[&next, &after])
        }
        _ => HttpResponse::NotFound().content_type("text/html").body("<p>no such page</p>"),
    }
}

/// A site made of sitemaps: `/sitemap.xml` indexes `parts` sitemaps, `/sitemaps/part-K.xml`
/// lists `/page/K`; robots.txt names no sitemap and sets no delay.
fn sitemap_site(host: &str, port: u16, parts: usize, path: &str) -> HttpResponse {
    let xml = |body: String| HttpResponse::Ok().content_type("application/xml").body(body);
    if path == "/robots.txt" {
        return HttpResponse::Ok().content_type("text/plain").body("User-agent: *\nAllow: /\n");
    }
    if path == "/sitemap.xml" {
        let entries: String = (0..parts)
            .map(|k| format!("<sitemap><loc>http://{host}:{port}/sitemaps/part-{k}.xml</loc></sitemap>"))
            .collect();
        return xml(format!(
            "<?xml version=\"1.0\"?><sitemapindex xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">{entries}</sitemapindex>"
        ));
    }
    if let Some(k) = path.strip_prefix("/sitemaps/part-").and_then(|p| p.strip_suffix(".xml")) {
        return xml(format!(
            "<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\"><url><loc>http://{host}:{port}/page/{k}</loc></url></urlset>"
        ));
    }
    page("Mapped", "A page its sitemaps list.", &[])
}

/// `news.localhost`: the sitemap lists `/a`, `/b` and `/c`; the home page links `/a` and,
/// unless `b_unlinked`, `/b`.
fn news_site(port: u16, path: &str, b_unlinked: bool) -> HttpResponse {
    match path {
        "/robots.txt" => HttpResponse::Ok().content_type("text/plain").body("User-agent: *\nAllow: /\n"),
        "/sitemap.xml" => {
            let urls: String = ["a", "b", "c"]
                .iter()
                .map(|p| format!("<url><loc>http://news.localhost:{port}/{p}</loc></url>"))
                .collect();
            HttpResponse::Ok().content_type("application/xml").body(format!(
                "<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">{urls}</urlset>"
            ))
        }
        "/" if b_unlinked => page("News", "The front page.", &["/a"]),
        "/" => page("News", "The front page.", &["/a", "/b"]),
        "/a" | "/b" | "/c" => page(&format!("Story {}", &path[1..]), "A story of the day.", &[]),
        _ => HttpResponse::NotFound().content_type("text/html").body("<p>no such page</p>"),
    }
}
