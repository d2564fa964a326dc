//! The browser's only way out: a forward proxy on loopback that every Chromium context is
//! told to use (loopback included). It resolves each host through the outbound address
//! policy and connects to the address it checked, so pages, redirects, sub-resources and
//! scripts of a rendered page obey the same SSRF rules as the HTTP engine, with no DNS
//! rebinding gap. `CONNECT` requests are tunnelled; plain HTTP requests are forwarded one
//! per connection (`Connection: close`), which keeps the proxy free of HTTP framing.
//!
//! A refused plain-HTTP request gets a 403 carrying [`BLOCKED_HEADER`], so a refused main
//! document can be told apart from a site's own 403.

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

impl GuardProxy {
    /// Starts a proxy on an ephemeral loopback port.
    pub async fn start(policy: Arc<AddressPolicy>) -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let address = listener.local_addr()?;
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else { continue };
                let policy = Arc::clone(&policy);
                tokio::spawn(async move {
                    if let Err(e) = serve(stream, &policy).await {
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

async fn serve(mut client: TcpStream, policy: &AddressPolicy) -> std::io::Result<()> {
    let (raw, rest) = read_head(&mut client).await?;
    let Some(head) = parse_head(&raw) else {
        return refuse(&mut client, 400, "malformed proxy request").await;
    };
    if head.method.eq_ignore_ascii_case("CONNECT") {
        let Some((host, port)) = split_authority(&head.target, 443) else {
            return refuse(&mut client, 400, "bad CONNECT target").await;
        };
        let mut upstream = match connect(policy, &host, port).await {
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
    let mut upstream = match connect(policy, &host, port).await {
        Ok(s) => s,
        Err(e) => return refuse(&mut client, status_of(&e), &e.to_string()).await,
    };
    let path = match url.query() {
        Some(q) => format!("{}?{q}", url.path()),
        None => url.path().to_owned(),
    };
    let mut out = format!("{} {path} {}\r\n", head.method, head.version);
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
}
