//! The browser's only way out: a forward proxy on loopback that every Chromium context is
//! told to use (loopback included). It resolves each host through the outbound address
//! policy and connects to the address it checked, so pages, redirects, sub-resources and
//! scripts of a rendered page obey the same SSRF rules as the HTTP engine, with no DNS
//! rebinding gap. `CONNECT` requests are tunnelled; plain HTTP requests are forwarded one
//! per connection (`Connection: close`), which keeps the proxy free of HTTP framing.
//!
//! A refused plain-HTTP request gets a 403 carrying [`BLOCKED_HEADER`], so a refused main
//! document can be told apart from a site's own 403.
//!
//! A second instance serves contexts that asked for the enhanced proxy (`proxy: enhanced`):
//! it checks every target the same way, then goes through the operator's proxy (`CONNECT`
//! for tunnels, absolute-form requests for plain HTTP, its credentials from its URL).

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

use super::super::guard::{AddressPolicy, ResolveError};

/// Response header marking a request the proxy refused.
pub const BLOCKED_HEADER: &str = "x-ferrocrawl-blocked";

/// Largest request head accepted.
const MAX_HEAD: usize = 64 * 1024;

/// A running proxy; stops when dropped.
#[derive(Debug)]
pub struct GuardProxy {
    address: SocketAddr,
    task: JoinHandle<()>,
}

/// The operator's proxy a [`GuardProxy`] sends checked requests through.
#[derive(Debug, Clone)]
struct Upstream {
    host: String,
    port: u16,
    /// `Proxy-Authorization` value, from the URL's user and password.
    authorization: Option<String>,
}

impl Upstream {
    fn of(url: &url::Url) -> Option<Self> {
        use base64::Engine as _;
        let authorization = (!url.username().is_empty()).then(|| {
            let user = percent_decode(url.username());
            let password = percent_decode(url.password().unwrap_or_default());
            format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
            )
        });
        Some(Self { host: url.host_str()?.to_owned(), port: url.port_or_known_default()?, authorization })
    }

    fn authorization_header(&self) -> String {
        self.authorization.as_ref().map(|a| format!("Proxy-Authorization: {a}\r\n")).unwrap_or_default()
    }
}

fn percent_decode(text: &str) -> String {
    percent_encoding::percent_decode_str(text).decode_utf8_lossy().into_owned()
}

impl GuardProxy {
    /// Starts a proxy on an ephemeral loopback port; with `upstream`, what it lets through
    /// goes through that proxy.
    pub async fn start(policy: Arc<AddressPolicy>, upstream: Option<&url::Url>) -> std::io::Result<Self> {
        let upstream = match upstream {
            Some(url) => Some(Upstream::of(url).ok_or_else(|| {
                std::io::Error::new(std::io::ErrorKind::InvalidInput, "the enhanced proxy URL has no host")
            })?),
            None => None,
        };
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let address = listener.local_addr()?;
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else { continue };
                let policy = Arc::clone(&policy);
                let upstream = upstream.clone();
                tokio::spawn(async move {
                    if let Err(e) = serve(stream, &policy, upstream.as_ref()).await {
                        tracing::trace!(error = %e, "browser proxy connection ended");
                    }
                });
            }
        });
        Ok(Self { address, task })
    }

    /// The proxy as Chromium's `proxyServer` wants it.
    pub fn server(&self) -> String {
        format!("http://{}", self.address)
    }
}

impl Drop for GuardProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The request line and headers of one proxied request.
struct Head {
    method: String,
    target: String,
    version: String,
    headers: Vec<(String, String)>,
}

async fn serve(mut client: TcpStream, policy: &AddressPolicy, via: Option<&Upstream>) -> std::io::Result<()> {
    let (raw, rest) = read_head(&mut client).await?;
    let Some(head) = parse_head(&raw) else {
        return refuse(&mut client, 400, "malformed proxy request").await;
    };
    if head.method.eq_ignore_ascii_case("CONNECT") {
        let Some((host, port)) = split_authority(&head.target, 443) else {
            return refuse(&mut client, 400, "bad CONNECT target").await;
        };
        let opened = match via {
            None => connect(policy, &host, port).await,
            Some(via) => tunnel(policy, via, &host, port).await,
        };
        let mut upstream = match opened {
            Ok(s) => s,
            Err(e) => return refuse(&mut client, status_of(&e), &e.to_string()).await,
        };
        client.write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n").await?;
        upstream.write_all(&rest).await?;
        tokio::io::copy_bidirectional(&mut client, &mut upstream).await?;
        return Ok(());
    }
    let Ok(url) = url::Url::parse(&head.target) else {
        return refuse(&mut client, 400, "proxy requests need an absolute URL").await;
    };
    if url.scheme() != "http" {
        return refuse(&mut client, 400, "only http URLs are forwarded").await;
    }
    let host = url.host_str().unwrap_or_default().to_owned();
    let port = url.port_or_known_default().unwrap_or(80);
    let opened = match via {
        None => connect(policy, &host, port).await,
        Some(via) => checked_upstream(policy, via, &host, port).await,
    };
    let mut upstream = match opened {
        Ok(s) => s,
        Err(e) => return refuse(&mut client, status_of(&e), &e.to_string()).await,
    };
    // Origin form to the site; absolute form, with the credentials, to the operator's proxy.
    let target = match (via, url.query()) {
        (Some(_), _) => head.target.clone(),
        (None, Some(q)) => format!("{}?{q}", url.path()),
        (None, None) => url.path().to_owned(),
    };
    let mut out = format!("{} {target} {}\r\n", head.method, head.version);
    out.push_str(&via.map(Upstream::authorization_header).unwrap_or_default());
    for (name, value) in &head.headers {
        let lower = name.to_ascii_lowercase();
        if matches!(lower.as_str(), "connection" | "proxy-connection" | "proxy-authorization" | "keep-alive")
        {
            continue;
        }
        out.push_str(&format!("{name}: {value}\r\n"));
    }
    out.push_str("Connection: close\r\n\r\n");
    upstream.write_all(out.as_bytes()).await?;
    upstream.write_all(&rest).await?;
    let (mut client_read, mut client_write) = client.split();
    let (mut up_read, mut up_write) = upstream.split();
    // The answer ends when the site closes its side; the request body (if any) flows meanwhile.
    tokio::select! {
        r = tokio::io::copy(&mut up_read, &mut client_write) => { r?; }
        _ = tokio::io::copy(&mut client_read, &mut up_write) => {
            tokio::io::copy(&mut up_read, &mut client_write).await?;
        }
    }
    client_write.shutdown().await
}

/// Reads until the end of the head; returns the head and any bytes after it.
async fn read_head(stream: &mut TcpStream) -> std::io::Result<(Vec<u8>, Vec<u8>)> {
    let mut buf = Vec::with_capacity(2048);
    let mut chunk = [0u8; 4096];
    loop {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let rest = buf.split_off(end + 4);
            return Ok((buf, rest));
        }
        if buf.len() > MAX_HEAD {
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "request head too large"));
        }
    }
}

fn parse_head(raw: &[u8]) -> Option<Head> {
    let text = std::str::from_utf8(raw).ok()?;
    let mut lines = text.split("\r\n");
    let mut parts = lines.next()?.split(' ');
    let (method, target, version) = (parts.next()?, parts.next()?, parts.next()?);
    let headers = lines
        .filter(|l| !l.is_empty())
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned()))
        .collect();
    Some(Head { method: method.to_owned(), target: target.to_owned(), version: version.to_owned(), headers })
}

/// `host:port` (IPv6 in brackets) of a CONNECT target.
fn split_authority(authority: &str, default_port: u16) -> Option<(String, u16)> {
    let url = url::Url::parse(&format!("http://{authority}/")).ok()?;
    let host = url.host_str()?.trim_start_matches('[').trim_end_matches(']').to_owned();
    Some((host, url.port().unwrap_or(default_port)))
}

/// Connects to the first permitted address of `host`.
async fn connect(policy: &AddressPolicy, host: &str, port: u16) -> Result<TcpStream, ResolveError> {
    let addresses = policy.resolve(host, port).await?;
    let mut last = String::new();
    for address in addresses {
        match TcpStream::connect(address).await {
            Ok(stream) => {
                let _ = stream.set_nodelay(true);
                return Ok(stream);
            }
            Err(e) => last = e.to_string(),
        }
    }
    Err(ResolveError::NotFound { host: host.to_owned(), detail: last })
}

/// Connects to the operator's proxy (exempt from the address policy: it may live on a
/// private network).
async fn to_upstream(via: &Upstream) -> Result<TcpStream, ResolveError> {
    let stream = TcpStream::connect((via.host.as_str(), via.port)).await.map_err(|e| {
        ResolveError::NotFound { host: via.host.clone(), detail: format!("the enhanced proxy: {e}") }
    })?;
    let _ = stream.set_nodelay(true);
    Ok(stream)
}

/// A connection to the operator's proxy for a request to `host:port`, once the policy
/// allows that target.
async fn checked_upstream(
    policy: &AddressPolicy,
    via: &Upstream,
    host: &str,
    port: u16,
) -> Result<TcpStream, ResolveError> {
    policy.resolve(host, port).await?;
    to_upstream(via).await
}

/// A tunnel to `host:port`, checked against the policy, through the operator's proxy.
async fn tunnel(
    policy: &AddressPolicy,
    via: &Upstream,
    host: &str,
    port: u16,
) -> Result<TcpStream, ResolveError> {
    let mut stream = checked_upstream(policy, via, host, port).await?;
    let failed = |detail: String| ResolveError::NotFound { host: host.to_owned(), detail };
    let authority = if host.contains(':') { format!("[{host}]:{port}") } else { format!("{host}:{port}") };
    let hello =
        format!("CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n{}\r\n", via.authorization_header());
    stream.write_all(hello.as_bytes()).await.map_err(|e| failed(e.to_string()))?;
    let (answer, rest) = read_head(&mut stream).await.map_err(|e| failed(e.to_string()))?;
    let status = String::from_utf8_lossy(&answer).split(' ').nth(1).unwrap_or_default().to_owned();
    if status != "200" || !rest.is_empty() {
        return Err(failed(format!("the enhanced proxy answered {status} to CONNECT")));
    }
    Ok(stream)
}

fn status_of(error: &ResolveError) -> u16 {
    match error {
        ResolveError::Blocked { .. } => 403,
        ResolveError::NotFound { .. } => 502,
    }
}

async fn refuse(client: &mut TcpStream, status: u16, message: &str) -> std::io::Result<()> {
    let marker = if status == 403 { format!("{BLOCKED_HEADER}: 1\r\n") } else { String::new() };
    let reply = format!(
        "HTTP/1.1 {status} {}\r\n{marker}Content-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{message}",
        if status == 403 { "Forbidden" } else { "Bad Gateway" },
        message.len()
    );
    client.write_all(reply.as_bytes()).await?;
    client.shutdown().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads_and_authorities_parse() {
        let head =
            parse_head(b"GET http://a.test/x?y=1 HTTP/1.1\r\nHost: a.test\r\nX-A: b\r\n\r\n").expect("head");
        assert_eq!((head.method.as_str(), head.target.as_str()), ("GET", "http://a.test/x?y=1"));
        assert_eq!(head.headers.len(), 2);
        assert_eq!(split_authority("example.com:8443", 443), Some(("example.com".into(), 8443)));
        assert_eq!(split_authority("[::1]:443", 443), Some(("::1".into(), 443)));
        assert!(parse_head(b"garbage").is_none());
    }

    /// Sends `request` to a guard going through `upstream` (private targets allowed or not);
    /// the connection and the guard's answer head.
    async fn ask(allow_private: bool, upstream: &url::Url, request: &[u8]) -> (TcpStream, Vec<u8>) {
        let policy = Arc::new(AddressPolicy::new(allow_private, &[]));
        let guard = GuardProxy::start(policy, Some(upstream)).await.expect("start");
        let mut client = TcpStream::connect(guard.address).await.expect("connect");
        client.write_all(request).await.expect("send");
        let (answer, _) = read_head(&mut client).await.expect("answer");
        // An accepted connection is served by a task of its own, past the guard's end.
        (client, answer)
    }

    #[tokio::test]
    async fn tunnels_go_through_the_operators_proxy_with_its_credentials() {
        // The operator's proxy: accepts one CONNECT, then echoes what the tunnel carries.
        let upstream = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let upstream_url =
            url::Url::parse(&format!("http://user:p%40s+s@{}", upstream.local_addr().expect("addr")))
                .expect("url");
        let seen = tokio::spawn(async move {
            let (mut stream, _) = upstream.accept().await.expect("accept");
            let (head, _) = read_head(&mut stream).await.expect("head");
            stream.write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n").await.expect("answer");
            let mut echoed = [0u8; 4];
            stream.read_exact(&mut echoed).await.expect("tunnel");
            stream.write_all(&echoed).await.expect("echo");
            String::from_utf8(head).expect("text")
        });
        let (mut client, answer) =
            ask(true, &upstream_url, b"CONNECT 127.0.0.1:9 HTTP/1.1\r\nHost: 127.0.0.1:9\r\n\r\n").await;
        assert!(answer.starts_with(b"HTTP/1.1 200"), "{}", String::from_utf8_lossy(&answer));
        client.write_all(b"ping").await.expect("through");
        let mut back = [0u8; 4];
        client.read_exact(&mut back).await.expect("back");
        assert_eq!(&back, b"ping");
        let head = seen.await.expect("upstream");
        assert!(head.starts_with("CONNECT 127.0.0.1:9 HTTP/1.1"), "{head}");
        let credentials = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, "user:p@s+s");
        assert!(head.contains(&format!("Proxy-Authorization: Basic {credentials}")), "{head}");

        // A target the policy refuses never reaches the operator's proxy.
        let (_, answer) = ask(false, &upstream_url, b"CONNECT 10.0.0.1:443 HTTP/1.1\r\n\r\n").await;
        assert!(answer.starts_with(b"HTTP/1.1 403"), "{}", String::from_utf8_lossy(&answer));
    }
}
