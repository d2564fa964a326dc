//! The HTTP engine: fetches one URL with reqwest over rustls, following redirects itself
//! so that every hop passes the address policy, reading at most the configured number of
//! body bytes, and classifying failures into the contract's error kinds. Requests to a
//! site whose pace spaces them go through [`super::paced`]'s client instead, which holds
//! them to the interval where they are written.

use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{self, HeaderMap, HeaderName, HeaderValue};
use reqwest::{Client, redirect};
use url::Url;

use super::guard::{AddressPolicy, GuardedResolver, ResolveError};
use super::paced::{Answer, PacedClient, PacedError, redirect_of};
use crate::config::Settings;

/// One fetch to perform.
#[derive(Debug, Clone)]
pub struct FetchRequest<'a> {
    /// The URL (http or https).
    pub url: &'a Url,
    /// Caller headers; they override ours.
    pub headers: &'a [(String, String)],
    /// Use the mobile User-Agent.
    pub mobile: bool,
    /// Preferred languages for Accept-Language.
    pub languages: &'a [String],
    /// Verify the target's TLS certificate.
    pub verify_tls: bool,
    /// Go through the enhanced proxy.
    pub via_proxy: bool,
}

/// A fetched response.
#[derive(Debug, Clone)]
pub struct Fetched {
    /// URL after redirects.
    pub final_url: Url,
    /// HTTP status of the last hop.
    pub status: u16,
    /// Content-Type of the last hop.
    pub content_type: Option<String>,
    /// Body bytes (decompressed).
    pub body: Vec<u8>,
    /// Whether the enhanced proxy fetched it.
    pub via_proxy: bool,
    /// How long the target asked us to wait (`Retry-After`), if it did.
    pub retry_after: Option<Duration>,
}

/// Why a fetch failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FetchError {
    /// The target (or a redirect hop) is an address the policy refuses.
    #[error("{host} is a private or reserved address; requests to it are not allowed")]
    Blocked {
        /// The refused host.
        host: String,
    },
    /// DNS resolution failed.
    #[error("DNS resolution failed for {host}")]
    Dns {
        /// The host.
        host: String,
    },
    /// The TLS handshake failed.
    #[error("TLS error: {0}")]
    Tls(String),
    /// Connecting or talking to the target failed.
    #[error("could not load the page: {0}")]
    Connect(String),
    /// The server closed the connection before its answer was complete (most often a
    /// kept-alive connection it closed as the request went out on it).
    #[error("could not load the page: the server closed the connection before answering: {0}")]
    Closed(String),
    /// The body is larger than allowed.
    #[error("the response body is larger than {limit} bytes")]
    TooLarge {
        /// The limit.
        limit: usize,
    },
    /// Redirects did not end.
    #[error("more than {max} redirects")]
    TooManyRedirects {
        /// The limit.
        max: usize,
    },
    /// A redirect pointed somewhere unusable.
    #[error("redirect to an unusable location: {0}")]
    BadRedirect(String),
    /// The enhanced proxy was asked for but none is configured.
    #[error("no enhanced proxy is configured")]
    NoProxy,
    /// A request or redirect hop not sent: this node lost touch with its cluster (see
    /// [`super::pace::Pace::guard`]), or the turn of a site another node owns could not
    /// be had.
    #[error("the request was not sent: this node lost touch with its cluster")]
    Interrupted,
}

impl FetchError {
    /// Whether a retry through the enhanced proxy might succeed.
    pub fn worth_proxy_retry(&self) -> bool {
        matches!(self, Self::Connect(_) | Self::Closed(_) | Self::Tls(_))
    }
}

/// Whether a status suggests the target refused a direct client (retry via proxy).
pub fn is_refusal_status(status: u16) -> bool {
    matches!(status, 401 | 403 | 407 | 429 | 503)
}

#[derive(Debug, Clone)]
struct Clients {
    verify: Client,
    insecure: Client,
}

/// The reqwest-based fetcher.
#[derive(Debug, Clone)]
pub struct HttpEngine {
    direct: Clients,
    proxied: Option<Clients>,
    /// For the requests a site's pace spaces (see [`super::paced`]).
    paced: PacedClient,
    /// The scope of this engine's paces (see [`super::pace::new_scope`]).
    pace_scope: u64,
    policy: Arc<AddressPolicy>,
    user_agent: HeaderValue,
    mobile_user_agent: HeaderValue,
    max_body: usize,
    max_redirects: usize,
}

/// Makes ring the process-wide rustls provider (idempotent).
pub fn install_crypto_provider() {
    // Fails only when a provider is already installed, which is what we want.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

impl HttpEngine {
    /// Builds the clients for `settings`.
    pub fn new(settings: &Settings) -> Result<Self, String> {
        install_crypto_provider();
        let security = &settings.security;
        let proxy_url = settings.enhanced_proxy().map(Url::parse).transpose().map_err(|e| e.to_string())?;
        let policy =
            Arc::new(AddressPolicy::new(security.allow_private_targets, &security.allowed_private_hosts));
        // The operator's own proxy may live on a private network: the proxied clients may
        // resolve its name to a private address. They resolve no other name (the proxy
        // resolves the targets, which are checked against `policy` first), and the proxy's
        // host is no exempt target.
        let mut with_proxy = security.allowed_private_hosts.clone();
        with_proxy.extend(proxy_url.as_ref().and_then(Url::host_str).map(str::to_owned));
        let proxy_policy = Arc::new(AddressPolicy::new(security.allow_private_targets, &with_proxy));
        let build = |insecure: bool, proxy: Option<&Url>| -> Result<Client, String> {
            let resolving = if proxy.is_some() { &proxy_policy } else { &policy };
            let mut builder = Client::builder()
                .redirect(redirect::Policy::none())
                .no_proxy()
                .dns_resolver(GuardedResolver::new(Arc::clone(resolving)))
                .tls_danger_accept_invalid_certs(insecure)
                .pool_idle_timeout(Duration::from_secs(30));
            if let Some(proxy) = proxy {
                builder = builder.proxy(reqwest::Proxy::all(proxy.as_str()).map_err(|e| e.to_string())?);
            }
            builder.build().map_err(|e| e.to_string())
        };
        let direct = Clients { verify: build(false, None)?, insecure: build(true, None)? };
        let proxied = match &proxy_url {
            Some(p) => Some(Clients { verify: build(false, Some(p))?, insecure: build(true, Some(p))? }),
            None => None,
        };
        let header = |v: &str| HeaderValue::from_str(v).map_err(|e| format!("user agent: {e}"));
        let pace_scope = super::pace::new_scope();
        Ok(Self {
            direct,
            proxied,
            paced: PacedClient::new(&policy, pace_scope)?,
            pace_scope,
            user_agent: header(&settings.scrape.user_agent)?,
            mobile_user_agent: header(&settings.scrape.mobile_user_agent)?,
            policy,
            max_body: settings.scrape.max_body_bytes,
            max_redirects: settings.scrape.max_redirects,
        })
    }

    /// The scope of the sites' paces this engine's requests keep to: a site's actor makes
    /// its pace in it ([`super::pace::Pace::of_site`]).
    pub fn pace_scope(&self) -> u64 {
        self.pace_scope
    }

    /// Whether an enhanced proxy is configured.
    pub fn has_proxy(&self) -> bool {
        self.proxied.is_some()
    }

    /// The address policy in force, shared (for the browser engine's proxy).
    pub fn shared_policy(&self) -> Arc<AddressPolicy> {
        Arc::clone(&self.policy)
    }

    /// The address policy in force.
    pub fn policy(&self) -> &AddressPolicy {
        &self.policy
    }

    /// Fetches `req.url`, following redirects hop by hop.
    pub async fn fetch(&self, req: &FetchRequest<'_>) -> Result<Fetched, FetchError> {
        let clients =
            if req.via_proxy { self.proxied.as_ref().ok_or(FetchError::NoProxy)? } else { &self.direct };
        let client = if req.verify_tls { &clients.verify } else { &clients.insecure };
        let headers = self.headers_for(req);
        let mut url = req.url.clone();
        let mut hops = 0;
        // A GET the server closed its connection on unanswered is sent once more: a server
        // may close a kept-alive connection just as a request goes out on it.
        let mut sent_again = false;
        loop {
            self.check_target(&url, req.via_proxy).await?;
            // The site's place for this request, held until its answer is read.
            let slot = if req.via_proxy {
                super::pace::before_proxied_request(&url).await
            } else {
                super::pace::before_request(&url).await
            };
            if slot.is_none() || !super::pace::may_continue() {
                return Err(FetchError::Interrupted);
            }
            let answer = if !req.via_proxy && super::pace::spaces(&url) {
                self.paced.get(&url, &headers, req.verify_tls, self.max_body).await.map_err(classify_paced)
            } else {
                get(client, &url, &headers, self.max_body).await
            };
            drop(slot);
            let answer = match answer {
                Err(FetchError::Closed(_)) if !sent_again => {
                    sent_again = true;
                    continue;
                }
                answer => answer?,
            };
            if let Some(location) = redirect_of(answer.status, &answer.headers) {
                hops += 1;
                if hops > self.max_redirects {
                    return Err(FetchError::TooManyRedirects { max: self.max_redirects });
                }
                url = next_hop(&url, location)?;
                continue;
            }
            let retry_after = answer.headers.get(header::RETRY_AFTER).and_then(parse_retry_after);
            let content_type =
                answer.headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).map(str::to_owned);
            return Ok(Fetched {
                final_url: url,
                status: answer.status,
                content_type,
                body: answer.body,
                via_proxy: req.via_proxy,
                retry_after,
            });
        }
    }

    /// POSTs `body` as JSON to `url` (webhook delivery): certificate checked, no redirect
    /// followed, the address policy applied. Returns the status.
    pub async fn post_json(
        &self,
        url: &Url,
        headers: &[(String, String)],
        body: Vec<u8>,
        timeout: Duration,
    ) -> Result<u16, FetchError> {
        self.check_target(url, false).await?;
        let mut map = HeaderMap::new();
        map.insert(header::USER_AGENT, self.user_agent.clone());
        for (name, value) in headers {
            if let (Ok(n), Ok(v)) = (HeaderName::from_bytes(name.as_bytes()), HeaderValue::from_str(value)) {
                map.insert(n, v);
            }
        }
        map.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let response =
            self.direct.verify.post(url.clone()).headers(map).body(body).timeout(timeout).send().await;
        let response = response.map_err(classify)?;
        Ok(response.status().as_u16())
    }

    /// Every hop: scheme, IP literals, and (through a proxy, which resolves names itself)
    /// an explicit resolution of the name.
    async fn check_target(&self, url: &Url, via_proxy: bool) -> Result<(), FetchError> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(FetchError::BadRedirect(url.to_string()));
        }
        self.policy.check_literal(url).map_err(|host| FetchError::Blocked { host })?;
        if via_proxy && matches!(url.host(), Some(url::Host::Domain(_))) {
            let host = url.host_str().unwrap_or_default();
            self.policy.resolve(host, url.port_or_known_default().unwrap_or(80)).await.map_err(
                |e| match e {
                    ResolveError::Blocked { host } => FetchError::Blocked { host },
                    ResolveError::NotFound { host, .. } => FetchError::Dns { host },
                },
            )?;
        }
        Ok(())
    }

    fn headers_for(&self, req: &FetchRequest<'_>) -> HeaderMap {
        let mut map = HeaderMap::new();
        let ua = if req.mobile { &self.mobile_user_agent } else { &self.user_agent };
        map.insert(header::USER_AGENT, ua.clone());
        map.insert(
            header::ACCEPT,
            HeaderValue::from_static("text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"),
        );
        let language = accept_language(req.languages);
        if let Ok(value) = HeaderValue::from_str(&language) {
            map.insert(header::ACCEPT_LANGUAGE, value);
        }
        for (name, value) in req.headers {
            // Names and values were validated when the request was accepted.
            if let (Ok(n), Ok(v)) = (HeaderName::from_bytes(name.as_bytes()), HeaderValue::from_str(value)) {
                map.insert(n, v);
            }
        }
        map
    }
}

/// A `Retry-After` value: seconds, or an HTTP date (capped at one hour).
pub fn parse_retry_after(value: &HeaderValue) -> Option<Duration> {
    let text = value.to_str().ok()?.trim();
    let wait = match text.parse::<u64>() {
        Ok(seconds) => Duration::from_secs(seconds),
        Err(_) => httpdate::parse_http_date(text)
            .ok()?
            .duration_since(std::time::SystemTime::now())
            .unwrap_or_default(),
    };
    Some(wait.min(Duration::from_secs(3600)))
}

/// `Accept-Language` for the given preference list (`en-US,en;q=0.9` when empty).
pub fn accept_language(languages: &[String]) -> String {
    if languages.is_empty() {
        return "en-US,en;q=0.9".to_owned();
    }
    let mut out = String::new();
    for (i, lang) in languages.iter().take(9).enumerate() {
        if i > 0 {
            let q = 10 - i;
            out.push_str(&format!(",{lang};q=0.{q}"));
        } else {
            out.push_str(lang);
        }
    }
    out
}

fn next_hop(current: &Url, location: &HeaderValue) -> Result<Url, FetchError> {
    let text = String::from_utf8_lossy(location.as_bytes());
    let next = current.join(text.trim()).map_err(|_| FetchError::BadRedirect(text.to_string()))?;
    if !matches!(next.scheme(), "http" | "https") {
        return Err(FetchError::BadRedirect(next.to_string()));
    }
    Ok(next)
}

/// GETs `url` with reqwest; the body is read unless the answer redirects.
async fn get(client: &Client, url: &Url, headers: &HeaderMap, limit: usize) -> Result<Answer, FetchError> {
    let mut response = client.get(url.clone()).headers(headers.clone()).send().await.map_err(classify)?;
    let status = response.status().as_u16();
    let headers = std::mem::take(response.headers_mut());
    let body = if redirect_of(status, &headers).is_some() {
        Vec::new()
    } else {
        read_capped(response, limit).await?
    };
    Ok(Answer { status, headers, body })
}

async fn read_capped(mut response: reqwest::Response, limit: usize) -> Result<Vec<u8>, FetchError> {
    if response.content_length().is_some_and(|len| len > limit as u64) {
        return Err(FetchError::TooLarge { limit });
    }
    // Content-Length is a hint (compressed bodies grow), so it only sizes the first buffer.
    let hint = response.content_length().map_or(16 * 1024, |len| len as usize);
    let mut body = Vec::with_capacity(hint.min(limit));
    while let Some(chunk) = response.chunk().await.map_err(classify)? {
        if body.len() + chunk.len() > limit {
            return Err(FetchError::TooLarge { limit });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// Maps a reqwest error to our kinds by looking through its source chain.
fn classify(err: reqwest::Error) -> FetchError {
    classify_source(&err)
}

/// Whether hyper gave up on a request the server never answered on a connection it
/// closed: cut off mid-answer, or the connection gone (closed or dropped) before the
/// request could go out. Such a request is sent again once on a new connection.
fn unanswered(e: &hyper::Error) -> bool {
    e.is_incomplete_message() || e.is_closed() || e.is_canceled()
}

/// Our kind of the error `err`, from its source chain.
fn classify_source(err: &dyn std::error::Error) -> FetchError {
    let mut source: Option<&(dyn std::error::Error + 'static)> = err.source();
    while let Some(cause) = source {
        if cause.downcast_ref::<hyper::Error>().is_some_and(unanswered) {
            return FetchError::Closed(detail_of(err));
        }
        if let Some(resolve) = cause.downcast_ref::<ResolveError>() {
            return match resolve {
                ResolveError::Blocked { host } => FetchError::Blocked { host: host.clone() },
                ResolveError::NotFound { host, .. } => FetchError::Dns { host: host.clone() },
            };
        }
        if cause.downcast_ref::<rustls::Error>().is_some() {
            return FetchError::Tls(cause.to_string());
        }
        // io::Error hides its payload from `source()` (and may nest); look inside it.
        let mut inner = cause.downcast_ref::<std::io::Error>().and_then(std::io::Error::get_ref);
        while let Some(payload) = inner {
            if payload.downcast_ref::<rustls::Error>().is_some() {
                return FetchError::Tls(payload.to_string());
            }
            if payload.is::<super::paced::OutOfTouch>() {
                return FetchError::Interrupted;
            }
            inner = payload.downcast_ref::<std::io::Error>().and_then(std::io::Error::get_ref);
        }
        source = cause.source();
    }
    FetchError::Connect(detail_of(err))
}

/// `err` with its root cause.
fn detail_of(err: &dyn std::error::Error) -> String {
    match err.source() {
        Some(cause) => format!("{err}: {}", root_cause(cause)),
        None => err.to_string(),
    }
}

/// Maps a paced request's error to our kinds.
fn classify_paced(err: PacedError) -> FetchError {
    match err {
        PacedError::TooLarge(limit) => FetchError::TooLarge { limit },
        PacedError::Body(detail) => FetchError::Connect(detail),
        PacedError::Transport(err) => classify_source(&err),
    }
}

fn root_cause<'a>(mut err: &'a (dyn std::error::Error + 'static)) -> &'a (dyn std::error::Error + 'static) {
    while let Some(next) = err.source() {
        err = next;
    }
    err
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_language_orders_preferences() {
        assert_eq!(accept_language(&[]), "en-US,en;q=0.9");
        let langs = vec!["de-DE".to_owned(), "de".to_owned(), "en".to_owned()];
        assert_eq!(accept_language(&langs), "de-DE,de;q=0.9,en;q=0.8");
    }

    #[test]
    fn retry_after_in_seconds_or_as_a_date() {
        assert_eq!(parse_retry_after(&HeaderValue::from_static("7")), Some(Duration::from_secs(7)));
        assert_eq!(parse_retry_after(&HeaderValue::from_static("999999")), Some(Duration::from_secs(3600)));
        let soon = httpdate::fmt_http_date(std::time::SystemTime::now() + Duration::from_secs(30));
        let wait = parse_retry_after(&HeaderValue::from_str(&soon).expect("header")).expect("date");
        assert!(wait <= Duration::from_secs(30) && wait >= Duration::from_secs(28), "{wait:?}");
        assert_eq!(parse_retry_after(&HeaderValue::from_static("soon")), None);
    }

    /// A one-thread server answering `/start` with a redirect to `/next`; counts requests.
    fn redirecting_server() -> (String, Arc<std::sync::atomic::AtomicUsize>) {
        use std::io::{BufRead, BufReader, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        let seen = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = Arc::clone(&seen);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let mut line = String::new();
                // Requests are counted, not connections opened without one.
                if BufReader::new(&stream).read_line(&mut line).unwrap_or(0) == 0 {
                    continue;
                }
                counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let answer = if line.contains("/start") {
                    "HTTP/1.1 301 Moved\r\nLocation: /next\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                } else {
                    "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
                };
                let _ = (&stream).write_all(answer.as_bytes());
            }
        });
        (base, seen)
    }

    /// An engine allowed to reach loopback.
    fn loopback_engine() -> HttpEngine {
        let mut settings = Settings::defaults_with_data_dir("x");
        settings.security.allow_private_targets = true;
        HttpEngine::new(&settings).expect("engine")
    }

    /// A plain GET of `url`, TLS unverified.
    fn plain(url: &Url) -> FetchRequest<'_> {
        FetchRequest { url, headers: &[], mobile: false, languages: &[], verify_tls: false, via_proxy: false }
    }

    #[tokio::test]
    async fn a_redirect_chain_stops_when_it_may_not_continue() {
        let engine = loopback_engine();
        let (base, seen) = redirecting_server();
        let port = Url::parse(&base).expect("base").port().expect("port");
        let url = Url::parse(&format!("{base}/start")).expect("url");
        let followed = engine.fetch(&plain(&url)).await.expect("followed");
        assert_eq!((followed.status, followed.final_url.path()), (200, "/next"));
        assert_eq!(seen.load(std::sync::atomic::Ordering::SeqCst), 2);
        // In touch for the first request, out of touch by the time of the hop: the guard of
        // the site's pace (a host of its own, no interval) says so.
        let url = Url::parse(&format!("http://redirect-guard.localhost:{port}/start")).expect("url");
        let request = plain(&url);
        let guarded = |may: Arc<dyn Fn() -> bool + Send + Sync>| {
            let pace =
                super::super::pace::Pace::new("redirect-guard.localhost", Duration::ZERO, Duration::ZERO);
            pace.guard(may);
            pace
        };
        let asked = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let first_only = guarded({
            let asked = Arc::clone(&asked);
            Arc::new(move || asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0)
        });
        let stopped = super::super::pace::PACE.scope(first_only, engine.fetch(&request)).await;
        assert!(matches!(stopped, Err(FetchError::Interrupted)), "{stopped:?}");
        assert_eq!(seen.load(std::sync::atomic::Ordering::SeqCst), 3, "the next hop was never sent");
        let never = guarded(Arc::new(|| false));
        let stopped = super::super::pace::PACE.scope(never, engine.fetch(&request)).await;
        assert!(matches!(stopped, Err(FetchError::Interrupted)), "{stopped:?}");
        assert_eq!(seen.load(std::sync::atomic::Ordering::SeqCst), 3, "not even the first request went out");
    }

    #[tokio::test]
    async fn a_spaced_request_is_not_written_once_the_node_is_out_of_touch() {
        use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
        let engine = loopback_engine();
        let (base, seen) = redirecting_server();
        let port = Url::parse(&base).expect("base").port().expect("port");
        // A host of its own (no other test's pace), with an interval: fetched through the
        // paced client, whose connections ask the pace's guard as they write.
        let host = "out-of-touch.localhost";
        let pace = super::super::pace::Pace::of_site(
            engine.pace_scope(),
            host,
            Duration::from_millis(1),
            Duration::ZERO,
        );
        let in_touch = Arc::new(AtomicBool::new(true));
        pace.guard({
            let in_touch = Arc::clone(&in_touch);
            Arc::new(move || in_touch.load(SeqCst))
        });
        let url = Url::parse(&format!("http://{host}:{port}/next")).expect("url");
        let request = plain(&url);
        let fetch = || super::super::pace::PACE.scope(Arc::clone(&pace), engine.fetch(&request));
        let fetched = fetch().await.expect("fetched while in touch");
        assert_eq!((fetched.status, seen.load(SeqCst)), (200, 1));
        // Let go by the fetch (its guard asked as the request leaves answered in touch),
        // refused at the socket.
        in_touch.store(false, SeqCst);
        let stopped = fetch().await;
        assert!(matches!(stopped, Err(FetchError::Interrupted)), "{stopped:?}");
        assert_eq!(seen.load(SeqCst), 1, "the refused request reached the site");
    }

    /// A server answering one request per connection, kept alive, and closing each
    /// connection unanswered when a second request comes on it. Counts requests answered.
    fn one_answer_per_connection_server() -> (String, Arc<std::sync::atomic::AtomicUsize>) {
        use std::io::{BufRead, BufReader, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        let answered = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = Arc::clone(&answered);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let counter = Arc::clone(&counter);
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(&stream);
                    let mut line = String::new();
                    // The first request's head, up to its blank line.
                    while reader.read_line(&mut line).unwrap_or(0) > 0 && line != "\r\n" {
                        line.clear();
                    }
                    counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let answer = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\nok";
                    let _ = (&stream).write_all(answer.as_bytes());
                    // The next request's first line, then the connection closed unanswered.
                    line.clear();
                    let _ = reader.read_line(&mut line);
                });
            }
        });
        (base, answered)
    }

    #[tokio::test]
    async fn a_kept_alive_connection_closed_unanswered_is_sent_again_on_a_new_one() {
        let engine = loopback_engine();
        let (base, answered) = one_answer_per_connection_server();
        let port = Url::parse(&base).expect("base").port().expect("port");
        let url = Url::parse(&format!("{base}/page")).expect("url");
        for round in 1..=3 {
            let fetched = engine.fetch(&plain(&url)).await.expect("fetched despite the closed connection");
            assert_eq!((fetched.status, fetched.body.as_slice()), (200, &b"ok"[..]));
            assert_eq!(answered.load(std::sync::atomic::Ordering::SeqCst), round);
        }
        // The same through the client of paced sites (a host of its own with an interval).
        let host = "closing.localhost";
        let pace = super::super::pace::Pace::of_site(
            engine.pace_scope(),
            host,
            Duration::from_millis(1),
            Duration::ZERO,
        );
        let url = Url::parse(&format!("http://{host}:{port}/page")).expect("url");
        for round in 4..=6 {
            let request = plain(&url);
            let fetch = super::super::pace::PACE.scope(Arc::clone(&pace), engine.fetch(&request));
            let fetched = fetch.await.expect("fetched despite the closed connection");
            assert_eq!(fetched.status, 200);
            assert_eq!(answered.load(std::sync::atomic::Ordering::SeqCst), round);
        }
    }

    #[test]
    fn redirects_resolve_relative_locations() {
        let base = Url::parse("http://a.test/x/y").expect("url");
        let next = next_hop(&base, &HeaderValue::from_static("../z?q=1")).expect("hop");
        assert_eq!(next.as_str(), "http://a.test/z?q=1");
        assert!(next_hop(&base, &HeaderValue::from_static("file:///etc/passwd")).is_err());
    }
}
