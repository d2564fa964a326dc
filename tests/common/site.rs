//! A local fixture web site on 127.0.0.1 with the pages the scrape tests need: a page
//! with navigation, header, footer and a cookie banner around an article (with a table,
//! code and nested lists), redirects (one to a loopback address), a page linking to private
//! addresses, error statuses, encodings, compression, slow and
//! oversized responses, non-HTML types, a header echo, and a page whose content the test
//! changes. Every request is counted per path, so cache hits can be proven, and recorded
//! with the host it was asked of.

use std::collections::HashMap;
use std::io::Write;
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix_web::{HttpRequest, HttpResponse, web};

/// The article page: main content surrounded by boilerplate.
pub const ARTICLE: &str = r#"<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Growing Tomatoes at Home</title>
  <meta name="description" content="A practical guide to tomatoes.">
  <meta name="keywords" content="tomatoes, garden">
  <meta property="og:title" content="Tomato Guide">
  <meta property="og:image" content="/img/og.png">
  <meta name="twitter:card" content="summary">
  <meta property="article:tag" content="garden">
  <meta property="article:tag" content="food">
  <link rel="icon" href="/favicon.ico">
</head>
<body>
  <div id="cookie-banner" class="cookie-banner">We use cookies to improve your experience. <button>Accept all cookies</button></div>
  <header class="site-header"><a href="/">Garden Weekly</a>
    <nav><ul><li><a href="/news">News</a></li><li><a href="/shop">Shop</a></li><li><a href="/about">About us</a></li></ul></nav>
  </header>
  <main>
    <article>
      <h1>Growing Tomatoes at Home</h1>
      <p>Tomatoes are among the most rewarding plants a home gardener can grow. With enough sun, steady watering and a little patience, a single plant yields several kilograms of fruit over a summer.</p>
      <p>Read our <a href="/guides/soil">soil guide</a> before planting, and see the <a href="https://seeds.example.org/catalog">seed catalog</a> for varieties.</p>
      <h2>Varieties compared</h2>
      <table>
        <thead><tr><th>Variety</th><th>Days to harvest</th><th>Best for</th></tr></thead>
        <tbody>
          <tr><td>Cherry</td><td>60</td><td>Snacking</td></tr>
          <tr><td>Roma</td><td>75</td><td>Sauce</td></tr>
          <tr><td>Beefsteak</td><td>85</td><td>Slicing</td></tr>
        </tbody>
      </table>
      <h2>Watering schedule</h2>
      <pre><code class="language-python">def water(days):
    return [d for d in days if d % 2 == 0]</code></pre>
      <h2>Checklist</h2>
      <ul>
        <li>Prepare the bed
          <ul><li>Loosen the soil</li><li>Add compost</li></ul>
        </li>
        <li>Plant seedlings deep</li>
      </ul>
      <ol><li>Stake the plants</li><li>Prune the suckers</li></ol>
      <p><img src="/img/tomato.jpg" alt="Ripe tomatoes on the vine"></p>
      <p>Harvest when the fruit is fully colored and gives slightly under gentle pressure; flavor keeps developing for a day or two on the counter.</p>
    </article>
  </main>
  <aside class="sidebar"><h3>Popular posts</h3><ul><li><a href="/p/1">Ten lawn myths</a></li><li><a href="/p/2">Composting 101</a></li></ul></aside>
  <footer class="site-footer"><p>Copyright 2026 Garden Weekly. All rights reserved.</p><a href="/privacy">Privacy policy</a></footer>
</body>
</html>"#;

/// A short post (a few hundred characters of text) in the usual page chrome, with an
/// author box, comments, related posts and a newsletter box after it.
pub const SHORT_POST: &str = r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>First frost</title></head>
<body>
  <header><a href="/">Garden Weekly</a></header>
  <nav><a href="/news">News</a> <a href="/shop">Shop</a> <a href="/about">About us</a></nav>
  <div id="cookie" class="cookie cookie-banner">We use cookies to improve your experience. <button>Accept all</button></div>
  <main><article>
    <h1>First frost</h1>
    <p>The first frost arrived two weeks early this year, so cover the dahlias tonight.</p>
    <p>Lift the tubers once the leaves blacken and store them somewhere dry and cool.</p>
    <div class="author-box"><p>Ann Gardner has written about dahlias since 1998.</p></div>
  </article>
  <section id="comments"><h3>3 comments</h3><p>Mine froze already, thanks for the warning!</p></section>
  <div class="related-posts"><h3>Read next</h3><p>Twenty tulips for a sunny border.</p></div>
  <div class="newsletter"><p>Get the weekly letter in your inbox.</p><button>Subscribe</button></div>
  </main>
  <aside><h3>Popular posts</h3><a href="/p/1">Ten lawn myths</a></aside>
  <footer><p>Copyright 2026 Garden Weekly. All rights reserved.</p></footer>
</body></html>"#;

/// Counts and knobs shared with the handlers.
#[derive(Default)]
struct State {
    hits: Mutex<HashMap<String, usize>>,
    /// Every request as (host without port, path).
    requests: Mutex<Vec<(String, String)>>,
    version: Mutex<u32>,
    last_headers: Mutex<Vec<(String, String)>>,
}

/// A running fixture site.
pub struct FixtureSite {
    /// Its port on 127.0.0.1.
    pub port: u16,
    state: Arc<State>,
    _server: super::ActixThread,
}

impl FixtureSite {
    /// Starts the site.
    pub fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let state = Arc::new(State::default());
        let data = web::Data::from(Arc::clone(&state));
        let server = super::ActixThread::spawn(listener, 1, move |cfg| {
            cfg.app_data(data.clone()).default_service(web::to(handle));
        });
        Self { port, state, _server: server }
    }

    /// `http://127.0.0.1:PORT{path}`
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// Requests received for `path` so far.
    pub fn hits(&self, path: &str) -> usize {
        self.state.hits.lock().expect("lock").get(path).copied().unwrap_or(0)
    }

    /// Paths asked of `host` (the request's host name, without port), in order.
    pub fn requests_to(&self, host: &str) -> Vec<String> {
        let requests = self.state.requests.lock().expect("lock");
        requests.iter().filter(|(h, _)| h == host).map(|(_, path)| path.clone()).collect()
    }

    /// Sets the version the `/changing` page shows.
    pub fn set_version(&self, version: u32) {
        *self.state.version.lock().expect("lock") = version;
    }

    /// Headers of the last request to `/echo`.
    pub fn last_headers(&self) -> Vec<(String, String)> {
        self.state.last_headers.lock().expect("lock").clone()
    }
}

fn html(body: impl Into<String>) -> HttpResponse {
    HttpResponse::Ok().content_type("text/html; charset=utf-8").body(body.into())
}

async fn handle(req: HttpRequest, state: web::Data<State>) -> HttpResponse {
    let path = req.path().to_owned();
    *state.hits.lock().expect("lock").entry(path.clone()).or_insert(0) += 1;
    let host = req.connection_info().host().split(':').next().unwrap_or_default().to_owned();
    state.requests.lock().expect("lock").push((host, path.clone()));
    if let Some((content_type, body)) = super::jspages::page(&path) {
        return HttpResponse::Ok().content_type(content_type).body(body);
    }
    if let Some((content_type, body)) = super::docpages::page(&path) {
        return HttpResponse::Ok().content_type(content_type).body(body);
    }
    let port = req.app_config().local_addr().port();
    match path.as_str() {
        "/article" => html(ARTICLE),
        // Kept by a browser's HTTP cache for an hour.
        "/js/cached.txt" => HttpResponse::Ok()
            .content_type("text/plain")
            .insert_header(("Cache-Control", "public, max-age=3600"))
            .body("cached for an hour"),
        "/short-post" => html(SHORT_POST),
        "/redirect" => HttpResponse::Found().insert_header(("Location", "/article")).finish(),
        "/redirect-chain" => HttpResponse::MovedPermanently().insert_header(("Location", "/redirect")).finish(),
        "/redirect-loop" => HttpResponse::Found().insert_header(("Location", "/redirect-loop")).finish(),
        // Links from an exempt host (`localhost`) to private ones, and one to a page of its own.
        "/links-to-private" => html(format!(
            r#"<html><head><title>Links out</title></head><body><main><h1>Links out</h1>
            <p>Some of these pages live at private addresses a strict server never asks.</p><ul>
            <li><a href="/short-post">A post on this host</a></li>
            <li><a href="/to-private">A redirect to a loopback address</a></li>
            <li><a href="http://127.0.0.1:{port}/private/linked">A loopback address</a></li>
            <li><a href="http://private.localhost:{port}/private/named">A name of a loopback address</a></li>
            </ul></main></body></html>"#
        )),
        "/to-private" => HttpResponse::Found()
            .insert_header(("Location", format!("http://127.0.0.1:{port}/article")))
            .finish(),
        "/missing" => HttpResponse::NotFound()
            .content_type("text/html")
            .body("<html><head><title>Not here</title></head><body><h1>Page not found</h1><p>The page you asked for does not exist on this garden site.</p></body></html>"),
        "/server-error" => HttpResponse::InternalServerError().content_type("text/html").body("<p>Something broke on the server side of the garden.</p>"),
        "/latin1" => HttpResponse::Ok()
            .content_type("text/html; charset=ISO-8859-1")
            .body(&b"<html><body><p>Caf\xe9 cr\xe8me br\xfbl\xe9e for the garden party.</p></body></html>"[..]),
        "/meta-charset" => HttpResponse::Ok()
            .content_type("text/html")
            .body(&b"<html><head><meta charset=\"windows-1252\"></head><body><p>\x93Quoted\x94 prices in \x80 for the garden.</p></body></html>"[..]),
        "/gzip" => {
            let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            enc.write_all(b"<html><body><p>Compressed garden notes arrive intact.</p></body></html>").expect("gzip");
            HttpResponse::Ok()
                .content_type("text/html")
                .insert_header(("Content-Encoding", "gzip"))
                .body(enc.finish().expect("gzip"))
        }
        "/brotli" => {
            let mut out = Vec::new();
            {
                let mut w = brotli::CompressorWriter::new(&mut out, 4096, 5, 22);
                w.write_all(b"<html><body><p>Brotli garden notes arrive intact.</p></body></html>").expect("br");
            }
            HttpResponse::Ok().content_type("text/html").insert_header(("Content-Encoding", "br")).body(out)
        }
        "/slow" => {
            tokio::time::sleep(Duration::from_millis(3000)).await;
            html("<p>Finally here after a long wait.</p>")
        }
        "/big" => html(format!("<html><body>{}</body></html>", "<p>filler text for a very large page</p>".repeat(20_000))),
        "/data.json" => HttpResponse::Ok().content_type("application/json").body(r#"{"plants": ["tomato", "basil"]}"#),
        "/notes.txt" => HttpResponse::Ok().content_type("text/plain").body("Plain *notes*: water at dawn."),
        "/file.pdf" => HttpResponse::Ok().content_type("application/octet-stream").body(&b"%PDF-1.7\n%binary"[..]),
        "/image.png" => HttpResponse::Ok().content_type("image/png").body(&b"\x89PNG\r\n\x1a\n"[..]),
        "/echo" => {
            let headers: Vec<(String, String)> = req
                .headers()
                .iter()
                .map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap_or("").to_owned()))
                .collect();
            *state.last_headers.lock().expect("lock") = headers.clone();
            let rows: String = headers.iter().map(|(k, v)| format!("<li>{k}: {v}</li>")).collect();
            html(format!("<html><body><h1>Request headers</h1><ul>{rows}</ul></body></html>"))
        }
        "/changing" => {
            let v = *state.version.lock().expect("lock");
            html(format!(
                "<html><body><article><h1>Daily prices</h1><p>Tomatoes cost {v} euros per kilogram at the garden market today.</p><p>Basil is unchanged at two euros.</p></article></body></html>"
            ))
        }
        "/direct-refused" => HttpResponse::Forbidden().content_type("text/html").body("<p>Access denied to robots.</p>"),
        _ => HttpResponse::NotFound().content_type("text/html").body("<p>no such fixture</p>"),
    }
}
