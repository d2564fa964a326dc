//! Requests to a paced site, spaced at the moment they are written to the socket.
//!
//! A site whose crawl sets an interval (`crawl.domain_min_interval_ms`, or a robots.txt
//! crawl-delay) has its requests released by its [`Pace`] an interval apart. Released is
//! not written: a request goes from the fetching task to the connection's task, and on a
//! machine short of CPU that task may run several milliseconds late while the next request
//! goes out on time, closer to the one before than the site allows. So requests to paced
//! sites go through this client, whose connections ask the site's pace again at the first
//! write of each request and wait there: the turn is taken in the same poll that writes.
//! A redirect hop into a site another node of the cluster holds goes through this client
//! too, with a turn that node lent: as its first bytes are out, the connection tells the
//! borrowed turn ([`pace::wrote`]), and the lending node counts its turn as taken then.
//!
//! The client speaks HTTP/1.1 only (one request at a time per connection, so the first
//! write after a response is a new request's), over rustls for `https`, through our own
//! connector, which resolves names with the address policy ([`AddressPolicy`]) as the
//! main client's resolver does. Bodies are asked compressed and decompressed here.

use std::error::Error;
use std::io::{self, Read as _};
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::Bytes;
use futures::future::BoxFuture;
use http_body_util::{BodyExt, Empty};
use hyper::Uri;
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::rt::{Read, ReadBufCursor, Write};
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::{Connected, Connection};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use tokio::net::TcpStream;
use tokio::time::Sleep;
use url::Url;

use super::guard::AddressPolicy;
use super::pace;

type BoxError = Box<dyn Error + Send + Sync>;
type Connector = Paced<HttpsConnector<Dial>>;

/// The encodings asked for, each decoded by [`decode`].
const ACCEPT_ENCODING: &str = "gzip, deflate, br, zstd";

/// An answer's head and, unless it redirects, its body.
#[derive(Debug)]
pub struct Answer {
    /// Status code.
    pub status: u16,
    /// Its headers.
    pub headers: HeaderMap,
    /// The body, decompressed (empty for a redirect).
    pub body: Vec<u8>,
}

/// Where an answer with `status` and `headers` redirects to, if it does.
pub fn redirect_of(status: u16, headers: &HeaderMap) -> Option<&HeaderValue> {
    headers.get(header::LOCATION).filter(|_| (300..400).contains(&status))
}

/// Why a paced request failed, before [`super::http`] classifies it.
#[derive(Debug, thiserror::Error)]
pub enum PacedError {
    /// Connecting, writing or reading failed (the source tells why).
    #[error("{0}")]
    Transport(#[from] hyper_util::client::legacy::Error),
    /// The body is larger than allowed.
    #[error("the response body is larger than {0} bytes")]
    TooLarge(usize),
    /// Reading or decoding the body failed.
    #[error("{0}")]
    Body(String),
}

/// Clients for paced sites: certificates checked, and not.
#[derive(Clone, Debug)]
pub struct PacedClient {
    verify: Client<Connector, Empty<Bytes>>,
    insecure: Client<Connector, Empty<Bytes>>,
}

impl PacedClient {
    /// Clients connecting where `policy` allows, whose connections keep to the paces of
    /// `scope` (see [`pace::new_scope`]).
    pub fn new(policy: &Arc<AddressPolicy>, scope: u64) -> Result<Self, String> {
        let build = |verify: bool| -> Result<Client<Connector, Empty<Bytes>>, String> {
            let https = HttpsConnectorBuilder::new()
                .with_tls_config(tls_config(verify)?)
                .https_or_http()
                .enable_http1()
                .wrap_connector(Dial { policy: Arc::clone(policy) });
            Ok(Client::builder(TokioExecutor::new())
                .pool_idle_timeout(Duration::from_secs(30))
                .pool_timer(TokioTimer::new())
                .build(Paced(https, scope)))
        };
        Ok(Self { verify: build(true)?, insecure: build(false)? })
    }

    /// GETs `url` with `headers`; the body is read (at most `limit` bytes, decompressed)
    /// unless the answer redirects.
    pub async fn get(
        &self,
        url: &Url,
        headers: &HeaderMap,
        verify_tls: bool,
        limit: usize,
    ) -> Result<Answer, PacedError> {
        let uri: Uri = url.as_str().parse().map_err(|e| PacedError::Body(format!("{e}")))?;
        let mut request =
            hyper::Request::get(uri).body(Empty::new()).map_err(|e| PacedError::Body(e.to_string()))?;
        *request.headers_mut() = headers.clone();
        request
            .headers_mut()
            .entry(header::ACCEPT_ENCODING)
            .or_insert(HeaderValue::from_static(ACCEPT_ENCODING));
        let client = if verify_tls { &self.verify } else { &self.insecure };
        let response = client.request(request).await?;
        let (head, mut body) = response.into_parts();
        let status = head.status.as_u16();
        if redirect_of(status, &head.headers).is_some() {
            return Ok(Answer { status, headers: head.headers, body: Vec::new() });
        }
        let declared = head.headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse().ok());
        if declared.is_some_and(|len: usize| len > limit) {
            return Err(PacedError::TooLarge(limit));
        }
        let mut bytes = Vec::with_capacity(declared.unwrap_or(16 * 1024).min(limit));
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| PacedError::Body(e.to_string()))?;
            if let Ok(data) = frame.into_data() {
                if bytes.len() + data.len() > limit {
                    return Err(PacedError::TooLarge(limit));
                }
                bytes.extend_from_slice(&data);
            }
        }
        let encoding = head.headers.get(header::CONTENT_ENCODING).and_then(|v| v.to_str().ok());
        let body = match encoding {
            Some(encoding) => decode(encoding, &bytes, limit)?,
            None => bytes,
        };
        Ok(Answer { status, headers: head.headers, body })
    }
}

/// `bytes` decoded from `encoding`, at most `limit` bytes of it; an encoding not asked
/// for is passed through as it came.
fn decode(encoding: &str, bytes: &[u8], limit: usize) -> Result<Vec<u8>, PacedError> {
    let reader: Box<dyn io::Read + '_> = match encoding.trim().to_ascii_lowercase().as_str() {
        "gzip" | "x-gzip" => Box::new(flate2::read::MultiGzDecoder::new(bytes)),
        "deflate" => Box::new(flate2::read::ZlibDecoder::new(bytes)),
        "br" => Box::new(brotli_decompressor::Decompressor::new(bytes, 4096)),
        "zstd" => {
            Box::new(zstd::stream::read::Decoder::new(bytes).map_err(|e| PacedError::Body(e.to_string()))?)
        }
        _ => return Ok(bytes.to_vec()),
    };
    let mut out = Vec::with_capacity(bytes.len().saturating_mul(4).min(limit));
    reader
        .take(limit as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| PacedError::Body(format!("the {encoding} body could not be decoded: {e}")))?;
    if out.len() > limit {
        return Err(PacedError::TooLarge(limit));
    }
    Ok(out)
}

/// TLS settings: the platform's verifier, or none at all (`skipTlsVerification`).
fn tls_config(verify: bool) -> Result<rustls::ClientConfig, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("tls: {e}"))?;
    let verifier: Arc<dyn ServerCertVerifier> = if verify {
        Arc::new(rustls_platform_verifier::Verifier::new(provider).map_err(|e| format!("tls: {e}"))?)
    } else {
        Arc::new(AnyCertificate(provider))
    };
    Ok(builder.dangerous().with_custom_certificate_verifier(verifier).with_no_client_auth())
}

/// Accepts any certificate; signatures are still checked to be well formed by name.
#[derive(Debug)]
struct AnyCertificate(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        _: &[u8],
        _: &CertificateDer<'_>,
        _: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Ok(HandshakeSignatureValid::assertion())
    }

    fn verify_tls13_signature(
        &self,
        _: &[u8],
        _: &CertificateDer<'_>,
        _: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Ok(HandshakeSignatureValid::assertion())
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// Opens TCP connections to the addresses the policy allows (names resolved by the
/// policy; address literals were checked before the request).
#[derive(Clone, Debug)]
struct Dial {
    policy: Arc<AddressPolicy>,
}

impl tower_service::Service<Uri> for Dial {
    type Response = TokioIo<TcpStream>;
    type Error = BoxError;
    type Future = BoxFuture<'static, Result<Self::Response, BoxError>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let policy = Arc::clone(&self.policy);
        Box::pin(async move {
            let host = uri.host().ok_or("the URL has no host")?;
            let bare = host.trim_start_matches('[').trim_end_matches(']');
            let port = uri.port_u16().unwrap_or(if uri.scheme_str() == Some("https") { 443 } else { 80 });
            let addresses = match bare.parse::<IpAddr>() {
                Ok(ip) => vec![SocketAddr::new(ip, port)],
                Err(_) => policy.resolve(bare, port).await?,
            };
            let mut failed = None;
            for address in addresses {
                match TcpStream::connect(address).await {
                    Ok(stream) => {
                        stream.set_nodelay(true)?;
                        return Ok(TokioIo::new(stream));
                    }
                    Err(e) => failed = Some(e),
                }
            }
            Err(failed.map_or_else(|| BoxError::from("no address to connect to"), BoxError::from))
        })
    }
}

/// A connector whose connections are [`PacedStream`]s of a scope's paces.
#[derive(Clone, Debug)]
struct Paced<C>(C, u64);

impl<C> tower_service::Service<Uri> for Paced<C>
where
    C: tower_service::Service<Uri>,
    C::Future: Send + 'static,
{
    type Response = PacedStream<C::Response>;
    type Error = C::Error;
    type Future = BoxFuture<'static, Result<Self::Response, C::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), C::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let (host, scope) = (uri.host().unwrap_or_default().to_owned(), self.1);
        let connecting = self.0.call(uri);
        Box::pin(async move {
            Ok(PacedStream {
                inner: connecting.await?,
                scope,
                host,
                starting: true,
                stamp: Stamp::Nothing,
                wait: None,
            })
        })
    }
}

/// A connection that waits for its site's turn before the first write of each request.
#[derive(Debug)]
pub struct PacedStream<T> {
    inner: T,
    /// The scope of the paces it keeps to.
    scope: u64,
    host: String,
    /// Whether the next write starts a request (none written since the last read).
    starting: bool,
    /// What hears of the request's first bytes going out.
    stamp: Stamp,
    wait: Option<Pin<Box<Sleep>>>,
}

impl<T> PacedStream<T> {
    /// Ready when the write may go: at once within a request, else when the site's pace
    /// gives the turn (taken then); an error when the pace's guard refuses the request.
    fn turn(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.starting {
            match pace::of_host(self.scope, &self.host) {
                Some(pace) => {
                    let writing = ready!(pace.poll_write_start(cx, &mut self.wait));
                    if !pace.may_write() {
                        return Poll::Ready(Err(io::Error::other(OutOfTouch)));
                    }
                    self.stamp = Stamp::Pace(writing);
                }
                None => self.stamp = Stamp::Borrowed,
            }
            self.starting = false;
        }
        Poll::Ready(Ok(()))
    }

    /// After a write: once a request's first bytes are out, its site's pace or the turn
    /// borrowed for it hears so.
    fn written(&mut self, wrote: &Poll<io::Result<usize>>) {
        if !matches!(wrote, Poll::Ready(Ok(n)) if *n > 0) {
            return;
        }
        match std::mem::replace(&mut self.stamp, Stamp::Nothing) {
            Stamp::Pace(writing) => writing.wrote(),
            Stamp::Borrowed => pace::wrote(self.scope, &self.host),
            Stamp::Nothing => {}
        }
    }
}

/// What hears of a request's first bytes going out on a paced connection.
#[derive(Debug)]
enum Stamp {
    /// None (the request's bytes are already going out).
    Nothing,
    /// The request's write turn of its site's pace on this node, taken as the write was
    /// let go: the site's next write waits until these bytes are out and counts from then
    /// (a thread held up between the turn and the write, or after the bytes left, would
    /// otherwise bring the two requests closer on the wire than the turns were).
    Pace(pace::Writing),
    /// A turn another node lent for the request (see [`pace::wrote`]).
    Borrowed,
}

/// A request its site's pace refused to write (see [`pace::Pace::guard`]).
#[derive(Debug, thiserror::Error)]
#[error("this node lost touch with its cluster; the request was not written")]
pub struct OutOfTouch;

impl<T: Read + Unpin> Read for PacedStream<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        let read = Pin::new(&mut self.inner).poll_read(cx, buf);
        if read.is_ready() {
            self.starting = true;
        }
        read
    }
}

impl<T: Write + Unpin> Write for PacedStream<T> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        ready!(self.turn(cx))?;
        let wrote = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.written(&wrote);
        wrote
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        ready!(self.turn(cx))?;
        let wrote = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.written(&wrote);
        wrote
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

impl<T: Connection> Connection for PacedStream<T> {
    fn connected(&self) -> Connected {
        self.inner.connected()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader, Write as _};
    use std::sync::Mutex;
    use std::time::Instant;

    /// A keep-alive server on loopback that notes when each request's head arrives and
    /// answers `hello` gzip-compressed.
    fn noting_server() -> (u16, Arc<Mutex<Vec<Instant>>>) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let noted = Arc::clone(&seen);
        let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gzip.write_all(b"hello").expect("gzip");
        let body = gzip.finish().expect("gzip");
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (noted, body) = (Arc::clone(&noted), body.clone());
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
                    let mut writer = stream;
                    let mut line = String::new();
                    while reader.read_line(&mut line).unwrap_or(0) > 0 {
                        noted.lock().expect("noted").push(Instant::now());
                        while line != "\r\n" {
                            line.clear();
                            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                                return;
                            }
                        }
                        line.clear();
                        let head = format!(
                            "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: {}\r\n\r\n",
                            body.len()
                        );
                        let _ = writer.write_all(head.as_bytes()).and_then(|()| writer.write_all(&body));
                    }
                });
            }
        });
        (port, seen)
    }

    #[tokio::test]
    async fn requests_let_go_together_are_written_an_interval_apart() {
        let (port, seen) = noting_server();
        let policy = Arc::new(AddressPolicy::new(true, &[]));
        let scope = pace::new_scope();
        let client = PacedClient::new(&policy, scope).expect("client");
        let host = "write-turns.localhost";
        let pace = pace::Pace::of_site(scope, host, Duration::from_millis(150), Duration::ZERO);
        let url = Url::parse(&format!("http://{host}:{port}/")).expect("url");
        let headers = HeaderMap::new();
        let get = || client.get(&url, &headers, false, 1 << 20);
        // Three at once, none of them waiting for the release turn: only the connections'
        // write turns space them.
        let (a, b, c) = tokio::join!(get(), get(), get());
        for answer in [a, b, c] {
            let answer = answer.expect("answer");
            assert_eq!((answer.status, answer.body.as_slice()), (200, b"hello".as_slice()));
        }
        let seen = seen.lock().expect("seen").clone();
        assert_eq!(seen.len(), 3);
        let mut gaps: Vec<Duration> = seen.windows(2).map(|w| w[1].duration_since(w[0])).collect();
        gaps.sort();
        // Written 150 ms apart; read by the server's threads with some jitter of their own.
        assert!(gaps[0] >= Duration::from_millis(120), "requests reached the site {gaps:?} apart");
        drop(pace);
    }

    #[test]
    fn bodies_are_decoded_within_the_limit() {
        let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gzip.write_all(&[b'a'; 10_000]).expect("gzip");
        let gzip = gzip.finish().expect("gzip");
        assert_eq!(decode("gzip", &gzip, 10_000).expect("decoded").len(), 10_000);
        assert!(matches!(decode("gzip", &gzip, 9_999), Err(PacedError::TooLarge(9_999))));
        let zstd = zstd::stream::encode_all(&b"zstd body"[..], 1).expect("zstd");
        assert_eq!(decode("zstd", &zstd, 100).expect("decoded"), b"zstd body");
        let mut br = Vec::new();
        brotli::BrotliCompress(&mut &b"brotli body"[..], &mut br, &Default::default()).expect("br");
        assert_eq!(decode("br", &br, 100).expect("decoded"), b"brotli body");
        assert_eq!(decode("identity", b"as is", 100).expect("passed"), b"as is");
        assert!(matches!(decode("gzip", b"not gzip", 100), Err(PacedError::Body(_))));
    }
}
