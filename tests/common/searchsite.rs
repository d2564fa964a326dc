//! Fixtures of the search tests: a small site of pages on two hosts (`docs.localhost`,
//! `blog.localhost`, both loopback) with titles, descriptions, dates, images with sizes and
//! a text file; and a stand-in for SearXNG that speaks its JSON API (`/search?q=…&format=json&pageno=N`)
//! with recorded answers: pages of results, an error status, or an answer too late.

use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix_web::{HttpRequest, HttpResponse, web};
use serde_json::json;

/// The pages of the site: `(host, path)`.
pub const PAGES: [(&str, &str); 6] = [
    ("docs.localhost", "/guide/install"),
    ("docs.localhost", "/guide/configure"),
    ("docs.localhost", "/notes.txt"),
    ("blog.localhost", "/posts/release"),
    ("blog.localhost", "/posts/old"),
    ("blog.localhost", "/posts/gallery"),
];

fn html(title: &str, head: &str, body: &str) -> HttpResponse {
    HttpResponse::Ok().content_type("text/html; charset=utf-8").body(format!(
        "<!DOCTYPE html><html lang=\"en\"><head><title>{title}</title>{head}</head><body><main><article><h1>{title}</h1>{body}<p>This paragraph gives the page enough words to count as content for the extractor, whatever else it says.</p></article></main></body></html>"
    ))
}

async fn page(req: HttpRequest) -> HttpResponse {
    let host = req.connection_info().host().split(':').next().unwrap_or_default().to_owned();
    match (host.as_str(), req.path()) {
        ("docs.localhost", "/guide/install") => html(
            "Installing the Quokka toolkit",
            r#"<meta name="description" content="How to install Quokka with cargo.">"#,
            r#"<p>Quokka installation takes three steps with cargo and a compiler.</p>
               <p><img src="/img/diagram.png" alt="architecture diagram" width="800" height="600">
               <img src="/img/logo.png" alt="quokka logo" width="64" height="64"></p>"#,
        ),
        ("docs.localhost", "/guide/configure") => html(
            "Configuring Quokka",
            r#"<meta name="description" content="Settings of the Quokka toolkit.">"#,
            "<p>Configure quokka with toml files; every setting has a default.</p>",
        ),
        ("docs.localhost", "/notes.txt") => HttpResponse::Ok()
            .content_type("text/plain")
            .body("Quokka notes in plain text: wombats and numbats."),
        ("blog.localhost", "/posts/release") => html(
            "Quokka 2.0 released",
            r#"<meta property="og:type" content="article"><meta property="og:image" content="/img/release.png"><meta property="article:published_time" content="2026-11-20T10:00:00Z">"#,
            "<p>The new quokka is faster than ever, and its release notes list every change.</p>",
        ),
        ("blog.localhost", "/posts/old") => html(
            "An old quokka announcement",
            r#"<meta property="og:type" content="article"><meta property="article:published_time" content="2020-01-01T08:00:00Z">"#,
            "<p>Years ago the quokka project announced its first version.</p>",
        ),
        ("blog.localhost", "/posts/gallery") => html(
            "Marsupial gallery",
            "",
            r#"<p>Photographs of wallabies and kangaroos.</p><p><img src="/img/wallaby.jpg" alt="a wallaby at dawn" width="1024" height="768"></p>"#,
        ),
        _ => HttpResponse::NotFound().content_type("text/html").body("<p>no such page</p>"),
    }
}

/// The search site.
pub struct SearchSite {
    /// Its port.
    pub port: u16,
    _server: super::ActixThread,
}

impl SearchSite {
    /// Starts the site.
    pub fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let server = super::ActixThread::spawn(listener, 1, |cfg| {
            cfg.default_service(web::to(page));
        });
        Self { port, _server: server }
    }

    /// `http://{host}:PORT{path}`
    pub fn url(&self, host: &str, path: &str) -> String {
        format!("http://{host}:{}{path}", self.port)
    }

    /// Every page's URL.
    pub fn urls(&self) -> Vec<String> {
        PAGES.iter().map(|(host, path)| self.url(host, path)).collect()
    }
}

/// How the SearXNG stand-in answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Ten results a page, three pages, then nothing.
    Pages,
    /// HTTP 500.
    Failing,
    /// After this long.
    Late(Duration),
}

struct State {
    mode: Mode,
    /// The only web results, when set (instead of recorded ones on example hosts).
    answers: Option<Vec<String>>,
    asked: Mutex<Vec<Vec<(String, String)>>>,
}

async fn searx(req: HttpRequest, state: web::Data<State>) -> HttpResponse {
    let params: Vec<(String, String)> =
        url::form_urlencoded::parse(req.query_string().as_bytes()).into_owned().collect();
    state.asked.lock().expect("lock").push(params.clone());
    let get = |name: &str| params.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()).unwrap_or_default();
    match state.mode {
        Mode::Failing => return HttpResponse::InternalServerError().body("engine exploded"),
        Mode::Late(wait) => tokio::time::sleep(wait).await,
        Mode::Pages => {}
    }
    if req.path() != "/search" || get("format") != "json" {
        return HttpResponse::Forbidden().body("format not allowed");
    }
    let pageno: usize = get("pageno").parse().unwrap_or(1);
    let category = get("categories");
    if let Some(answers) = &state.answers {
        let results: Vec<serde_json::Value> = (pageno == 1)
            .then_some(answers)
            .into_iter()
            .flatten()
            .map(|url| json!({"url": url, "title": "Found on the web", "content": "A result", "engine": "recorded"}))
            .collect();
        return HttpResponse::Ok().json(json!({"query": get("q"), "results": results}));
    }
    let results: Vec<serde_json::Value> = if pageno > 3 {
        Vec::new()
    } else {
        (0..10)
            .map(|i| {
                let n = (pageno - 1) * 10 + i;
                let host = if n.is_multiple_of(2) { "www.example.com" } else { "docs.example.org" };
                match category.as_str() {
                    "images" => json!({"url": format!("https://{host}/gallery/{n}"), "title": format!("Picture {n}"),
                        "img_src": format!("https://{host}/img/{n}.jpg"), "resolution": "640x480"}),
                    "news" => json!({"url": format!("https://{host}/news/{n}"), "title": format!("News {n}"),
                        "content": format!("Story number {n}"), "publishedDate": "2026-11-20T10:00:00"}),
                    _ => json!({"url": format!("https://{host}/page/{n}"), "title": format!("Result {n} for {}", get("q")),
                        "content": format!("Snippet {n}"), "engine": "recorded"}),
                }
            })
            .collect()
    };
    HttpResponse::Ok().json(
        json!({"query": get("q"), "number_of_results": 30, "results": results, "unresponsive_engines": []}),
    )
}

/// A running SearXNG stand-in.
pub struct FakeSearxng {
    /// Its base URL.
    pub url: String,
    state: Arc<State>,
    _server: super::ActixThread,
}

impl FakeSearxng {
    /// Starts one answering in `mode`.
    pub fn start(mode: Mode) -> Self {
        Self::serve(State { mode, answers: None, asked: Mutex::new(Vec::new()) })
    }

    /// Starts one whose web search finds `urls` (one page of them) for any query.
    pub fn answering(urls: Vec<String>) -> Self {
        Self::serve(State { mode: Mode::Pages, answers: Some(urls), asked: Mutex::new(Vec::new()) })
    }

    fn serve(state: State) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let state = Arc::new(state);
        let data = web::Data::from(Arc::clone(&state));
        let server = super::ActixThread::spawn(listener, 1, move |cfg| {
            cfg.app_data(data.clone()).default_service(web::to(searx));
        });
        Self { url, state, _server: server }
    }

    /// The query parameters of every request so far.
    pub fn asked(&self) -> Vec<Vec<(String, String)>> {
        self.state.asked.lock().expect("lock").clone()
    }
}
