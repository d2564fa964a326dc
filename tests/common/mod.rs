//! Test harness: the real server on an ephemeral port with a temporary data directory
//! ([`TestServer`]), a local fixture web site ([`site::FixtureSite`]), a TLS site, a forward
//! proxy, and the real binary as a child process ([`process::Binary`]). Everything listens
//! on 127.0.0.1; nothing reaches the internet.

#![allow(dead_code)]

pub mod crawlsite;
pub mod docpages;
pub mod hostile;
pub mod jspages;
pub mod openai;
pub mod process;
pub mod proxy;
pub mod receiver;
pub mod searchsite;
pub mod site;
pub mod tls;

pub use crawlsite::CrawlSite;
pub use proxy::ProxyServer;
pub use receiver::Receiver;
pub use site::FixtureSite;
pub use tls::TlsSite;

use std::net::TcpListener;
use std::path::PathBuf;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ferrocrawl::config::Settings;
use ferrocrawl::model::TeamId;
use ferrocrawl::store::Store;
use serde_json::Value;
use tempfile::TempDir;
use tokio::sync::oneshot;

/// The key of team `default` in every test server.
pub const KEY: &str = "test-key-default";

/// A running ferrocrawl server.
pub struct TestServer {
    /// `http://127.0.0.1:PORT`
    pub base: String,
    data: Option<TempDir>,
    client: reqwest::Client,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

/// How to start a [`TestServer`].
pub struct Builder {
    settings: Settings,
    keys: Vec<(String, String)>,
    data: TempDir,
}

impl Builder {
    /// Changes settings before start.
    pub fn settings(mut self, f: impl FnOnce(&mut Settings)) -> Self {
        f(&mut self.settings);
        self
    }

    /// Adds an API key for `team`.
    pub fn key(mut self, team: &str, key: &str) -> Self {
        self.keys.push((team.to_owned(), key.to_owned()));
        self
    }

    /// Starts the server and waits until it answers.
    pub async fn start(self) -> TestServer {
        ferrocrawl::scrape::engine::http::install_crypto_provider();
        {
            let store = Store::open(self.data.path()).expect("open store");
            for (team, key) in &self.keys {
                store.keys.add(&TeamId::parse(team).expect("team"), Some(key)).expect("add key");
            }
            store.flush().expect("flush");
        }
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        let (tx, rx) = oneshot::channel::<()>();
        let settings = self.settings;
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("runtime");
            let served = runtime.block_on(ferrocrawl::serve(listener, settings, async {
                let _ = rx.await;
            }));
            if let Err(e) = served {
                panic!("ferrocrawl::serve failed: {e} ({e:?})");
            }
        });
        let server = TestServer {
            base,
            data: Some(self.data),
            client: reqwest::Client::builder().no_proxy().build().expect("client"),
            shutdown: Some(tx),
            thread: Some(thread),
        };
        server.wait_ready().await;
        server
    }
}

/// Settings used by tests: private targets allowed (fixtures live on loopback), one worker.
pub fn test_settings(data: &std::path::Path) -> Settings {
    let mut settings = Settings::defaults_with_data_dir(data);
    settings.security.allow_private_targets = true;
    settings.server.workers = 1;
    // The server runs in the test program: the sandbox of interact code runs the product's.
    settings.browser.sandbox_exe = Some(env!("CARGO_BIN_EXE_ferrocrawl").into());
    settings
}

impl TestServer {
    /// A builder with test settings and the `default` team's key.
    pub fn builder() -> Builder {
        Self::builder_on(tempfile::tempdir().expect("tempdir"))
    }

    /// A builder on an existing data directory (a server stopped before, or a fixture).
    pub fn builder_on(data: TempDir) -> Builder {
        Builder { settings: test_settings(data.path()), keys: vec![("default".into(), KEY.into())], data }
    }

    /// Starts a server with test settings.
    pub async fn start() -> Self {
        Self::builder().start().await
    }

    async fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let response = self.client.get(format!("{}/health", self.base)).send().await;
            if response.is_ok_and(|r| r.status().is_success()) {
                return;
            }
            assert!(Instant::now() < deadline, "server did not start");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Sends a request with the default key.
    pub async fn request(&self, method: reqwest::Method, path: &str, body: Option<&Value>) -> (u16, Value) {
        self.request_as(KEY, method, path, body).await
    }

    /// Sends a request with `key`.
    pub async fn request_as(
        &self,
        key: &str,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
    ) -> (u16, Value) {
        let mut req = self.client.request(method, format!("{}{path}", self.base)).bearer_auth(key);
        if let Some(b) = body {
            req = req.json(b);
        }
        let resp = req.send().await.expect("request");
        decode(resp).await
    }

    /// POST /v2/scrape with the default key.
    pub async fn scrape(&self, body: Value) -> (u16, Value) {
        self.request(reqwest::Method::POST, "/v2/scrape", Some(&body)).await
    }

    /// POST with a raw body and content type.
    pub async fn post_raw(&self, path: &str, body: impl Into<reqwest::Body>) -> (u16, Value) {
        let resp = self
            .client
            .post(format!("{}{path}", self.base))
            .bearer_auth(KEY)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .expect("request");
        decode(resp).await
    }

    /// Starts a crawl; returns its id.
    pub async fn start_crawl(&self, body: Value) -> String {
        let (status, reply) = self.request(reqwest::Method::POST, "/v2/crawl", Some(&body)).await;
        assert_eq!(status, 200, "crawl not started: {reply}");
        assert_eq!(reply["success"], true, "{reply}");
        reply["id"].as_str().expect("id").to_owned()
    }

    /// Polls `GET {path}` until the job leaves `scraping`, then returns the final status
    /// with every document (following `next`).
    pub async fn wait_job(&self, path: &str, limit: Duration) -> Value {
        self.wait_job_as(KEY, path, limit).await
    }

    /// [`Self::wait_job`] with another team's key.
    pub async fn wait_job_as(&self, key: &str, path: &str, limit: Duration) -> Value {
        let deadline = Instant::now() + limit;
        loop {
            let (status, body) = self.request_as(key, reqwest::Method::GET, path, None).await;
            assert_eq!(status, 200, "{body}");
            if body["status"] != "scraping" {
                return self.collect_pages(key, body).await;
            }
            assert!(Instant::now() < deadline, "job still running after {limit:?}: {body}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Follows `next` links, appending their documents to `first`'s.
    pub async fn collect_pages(&self, key: &str, mut first: Value) -> Value {
        let mut next = first["next"].as_str().map(str::to_owned);
        let mut guard = 0;
        while let Some(url) = next {
            guard += 1;
            assert!(guard < 10_000, "endless next links");
            let resp = self.client.get(&url).bearer_auth(key).send().await.expect("next");
            let (status, page) = decode(resp).await;
            assert_eq!(status, 200, "{page}");
            let more = page["data"].as_array().cloned().unwrap_or_default();
            first["data"].as_array_mut().expect("data").extend(more);
            next = page["next"].as_str().map(str::to_owned);
        }
        first
    }

    /// A plain client.
    pub fn client(&self) -> &reqwest::Client {
        &self.client
    }

    /// The data directory.
    pub fn data_dir(&self) -> PathBuf {
        self.data.as_ref().map(|d| d.path().to_path_buf()).unwrap_or_default()
    }

    /// Stops the server gracefully and hands over its data directory for inspection.
    pub fn stop(mut self) -> TempDir {
        self.shutdown_now();
        self.data.take().expect("data directory")
    }

    fn shutdown_now(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// An actix-web fixture server on its own thread, stopped on drop.
pub struct ActixThread {
    handle: actix_web::dev::ServerHandle,
    thread: Option<JoinHandle<()>>,
}

impl ActixThread {
    /// Serves the routes `configure` registers on `listener` with `workers` threads.
    pub fn spawn(
        listener: TcpListener,
        workers: usize,
        configure: impl Fn(&mut actix_web::web::ServiceConfig) + Send + Clone + 'static,
    ) -> Self {
        let (tx, rx) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(move || {
            actix_web::rt::System::new().block_on(async move {
                let server =
                    actix_web::HttpServer::new(move || actix_web::App::new().configure(configure.clone()))
                        .workers(workers)
                        .disable_signals()
                        .shutdown_timeout(1)
                        .listen(listener)
                        .expect("listen")
                        .run();
                tx.send(server.handle()).expect("handle");
                let _ = server.await;
            });
        });
        let handle = rx.recv().expect("server handle");
        Self { handle, thread: Some(thread) }
    }
}

impl Drop for ActixThread {
    fn drop(&mut self) {
        let handle = self.handle.clone();
        let _ = std::thread::spawn(move || actix_web::rt::System::new().block_on(handle.stop(false))).join();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Reads a response as (status, JSON); a non-JSON body fails the test.
pub async fn decode(resp: reqwest::Response) -> (u16, Value) {
    let status = resp.status().as_u16();
    let text = resp.text().await.expect("body");
    let value = serde_json::from_str(&text).unwrap_or_else(|_| panic!("non-JSON body ({status}): {text}"));
    (status, value)
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.shutdown_now();
    }
}

/// Polls `probe` every 25 ms until it yields a value and returns it; fails the test, naming
/// `what`, when `limit` passes first. For conditions the server reaches in its own time.
pub async fn wait_for<T, F, Fut>(what: &str, limit: Duration, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + limit;
    loop {
        if let Some(value) = probe().await {
            return value;
        }
        assert!(Instant::now() < deadline, "{what}: not within {limit:?}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// Asserts an error envelope with `status` and `code`; returns the message.
pub fn assert_error(got: &(u16, Value), status: u16, code: &str) -> String {
    let (s, body) = got;
    assert_eq!(*s, status, "status of {body}");
    assert_eq!(body["success"], false, "{body}");
    assert_eq!(body["code"], code, "{body}");
    body["error"].as_str().expect("error text").to_owned()
}
