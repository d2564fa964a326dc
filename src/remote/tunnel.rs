//! DevTools connections (`cdpUrl`) and live-view screen streams of a browser session
//! another node of the cluster holds, both sides. A session lives where its Chromium runs;
//! behind a load balancer (`server.public_url`) its `cdpUrl` may reach any node. That node
//! opens the connection on the session's node (over the cluster's `Tunnel` channel) and
//! carries its bytes both ways: the session's node connects to its own API, as a request
//! passed on (see [`super::http`]), with the client's WebSocket key, so its own `/v2/cdp/…`
//! endpoint checks the token and guards every command exactly as for a client of its own;
//! the asking node answers the client's handshake with that endpoint's accept value and
//! then only moves bytes: what the client sends is written there in order (one call at a
//! time, so a slow session holds the client back), and the session's node is asked for
//! what its endpoint sent (each ask waits up to [`READ_WAIT`] for bytes). A live view's
//! screen stream is carried the same way, one way: the session's node GETs it from its own
//! API and its body is read as the asking node asks. A tunnel neither end uses for [`IDLE`]
//! is closed (its other node died). Each call goes in a cluster message of its own (not in
//! a batch, whose spacing would add milliseconds to every DevTools round trip).
//!
//! The API decides what to carry (`api::tunnel`); this module carries it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::future::BoxFuture;
use futures::{Stream, StreamExt};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};

use super::http::NodeError;
use super::messages::tunnel::{Request, Response};
use super::messages::{decode, encode};
use crate::cluster::{Channel, Cluster};

/// Longest the session's node may take to open the connection.
const OPEN_TIMEOUT: Duration = Duration::from_secs(15);
/// Longest one write or read call may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a read waits for bytes before answering that there are none yet.
const READ_WAIT: Duration = Duration::from_secs(1);
/// Most bytes one read answers with.
const READ_MAX: usize = 1 << 20;
/// A tunnel neither end used for this long is closed.
const IDLE: Duration = Duration::from_secs(30);
/// Largest handshake answer (head and error body) read from the endpoint.
const MAX_HEAD: usize = 64 << 10;

/// A tunnel the session's node opened: its id, the endpoint's `Sec-WebSocket-Accept` (for
/// a screen stream, its content type), and the bytes that came after its handshake answer.
#[derive(Debug)]
pub struct Opened {
    /// The tunnel's id on the session's node.
    pub id: u64,
    /// The accept value, or the content type.
    pub value: String,
    /// Bytes already read.
    pub early: Vec<u8>,
}

/// Why a tunnel was not opened.
#[derive(Debug)]
pub enum NotOpened {
    /// The endpoint answered without switching protocols: its status and body (JSON).
    Refused(u16, Vec<u8>),
    /// The session's node failed or did not answer.
    Node(NodeError),
}

/// Opens on `node` a tunnel to the DevTools endpoint at `path` with the client's WebSocket
/// `key`, or (without a key) to the screen stream at `path`.
pub async fn open(cluster: &Cluster, node: &str, path: &str, key: Option<&str>) -> Result<Opened, NotOpened> {
    let request = match key {
        Some(key) => Request::Open { path: path.to_owned(), key: key.to_owned() },
        None => Request::Get { path: path.to_owned() },
    };
    match ask(cluster, node, &request, OPEN_TIMEOUT).await.map_err(NotOpened::Node)? {
        Response::Opened(id, value, early) => Ok(Opened { id, value, early }),
        Response::Refused(status, body) => Err(NotOpened::Refused(status, body)),
        _ => Err(NotOpened::Node(NodeError::Failed {
            node: node.to_owned(),
            reason: "unexpected answer".into(),
        })),
    }
}

/// What the session's node sends through tunnel `id`, after `first`; the tunnel is closed
/// when it ends or the client leaves.
pub fn from_node(
    cluster: Cluster,
    node: String,
    id: u64,
    first: Vec<u8>,
) -> impl Stream<Item = Result<Bytes, std::convert::Infallible>> {
    let first = (!first.is_empty()).then(|| Bytes::from(first));
    futures::stream::unfold((cluster, node, first), move |(cluster, node, first)| async move {
        if let Some(bytes) = first {
            return Some((Ok(bytes), (cluster, node, None)));
        }
        loop {
            match ask(&cluster, &node, &Request::Read(id), READ_WAIT + CALL_TIMEOUT).await {
                Ok(Response::Bytes(bytes)) if bytes.is_empty() => continue,
                Ok(Response::Bytes(bytes)) => return Some((Ok(Bytes::from(bytes)), (cluster, node, None))),
                _ => {
                    let _ = ask(&cluster, &node, &Request::Close(id), CALL_TIMEOUT).await;
                    return None;
                }
            }
        }
    })
}

/// Writes the client's bytes (`from_client`) on the session's node through tunnel `id`, in
/// order; closes the tunnel when the client is gone.
pub async fn client_to_node<E>(
    cluster: Cluster,
    node: String,
    id: u64,
    mut from_client: impl Stream<Item = Result<Bytes, E>> + Unpin,
) {
    while let Some(Ok(chunk)) = from_client.next().await {
        match ask(&cluster, &node, &Request::Write(id, chunk.to_vec()), CALL_TIMEOUT).await {
            Ok(Response::Done) => {}
            _ => break,
        }
    }
    let _ = ask(&cluster, &node, &Request::Close(id), CALL_TIMEOUT).await;
}

async fn ask(
    cluster: &Cluster,
    node: &str,
    request: &Request,
    timeout: Duration,
) -> Result<Response, NodeError> {
    let answer = cluster
        .call_alone(node, Channel::Tunnel, encode(request), timeout)
        .await
        .map_err(|e| NodeError::of(node, e))?;
    decode(&answer).map_err(|reason| NodeError::Failed { node: node.to_owned(), reason })
}

/// One connection to this node's own API, carried for another node.
#[derive(Debug)]
struct Tunnel {
    source: Source,
    /// The node it is carried for.
    node: String,
    used: Mutex<Instant>,
}

/// What a tunnel carries.
enum Source {
    /// A DevTools WebSocket connection, both ways.
    Socket(tokio::sync::Mutex<OwnedReadHalf>, tokio::sync::Mutex<OwnedWriteHalf>),
    /// A streamed answer's body, one way.
    Body(tokio::sync::Mutex<reqwest::Response>),
}

impl std::fmt::Debug for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Socket(..) => "Socket",
            Self::Body(_) => "Body",
        })
    }
}

impl Tunnel {
    fn touch(&self) {
        *self.used.lock().unwrap_or_else(PoisonError::into_inner) = Instant::now();
    }

    fn idle(&self) -> bool {
        self.used.lock().unwrap_or_else(PoisonError::into_inner).elapsed() > IDLE
    }

    /// What came since the last read: bytes (none within [`READ_WAIT`]), or `None` once
    /// the connection or body has ended.
    async fn read(&self) -> Option<Vec<u8>> {
        match &self.source {
            Source::Socket(reader, _) => {
                let mut buf = vec![0u8; READ_MAX];
                match tokio::time::timeout(READ_WAIT, reader.lock().await.read(&mut buf)).await {
                    Err(_) => Some(Vec::new()),
                    Ok(Ok(n)) if n > 0 => {
                        buf.truncate(n);
                        Some(buf)
                    }
                    Ok(_) => None,
                }
            }
            // A chunk not complete when the wait ends stays in the body for the next read.
            Source::Body(body) => match tokio::time::timeout(READ_WAIT, body.lock().await.chunk()).await {
                Err(_) => Some(Vec::new()),
                Ok(Ok(Some(bytes))) => Some(bytes.to_vec()),
                Ok(_) => None,
            },
        }
    }
}

/// Serves other nodes' tunnels to this node's API.
#[derive(Debug)]
pub struct Handler(Arc<Tunnels>);

impl Handler {
    /// Tunnels to this node's API at `address` (`host:port`).
    pub fn new(address: String) -> Result<Arc<Self>, String> {
        let client = reqwest::Client::builder().no_proxy().build().map_err(|e| e.to_string())?;
        let tunnels =
            Tunnels { address, client, tunnels: Mutex::new(HashMap::new()), next: AtomicU64::new(1) };
        Ok(Arc::new(Self(Arc::new(tunnels))))
    }
}

/// The tunnels this node carries for others, to its API at `address`.
#[derive(Debug)]
struct Tunnels {
    address: String,
    /// For streamed answers.
    client: reqwest::Client,
    tunnels: Mutex<HashMap<u64, Arc<Tunnel>>>,
    next: AtomicU64,
}

/// Shows how many tunnels this node carries (`cluster_tunnels_open` on `/metrics`).
fn counted(tunnels: &HashMap<u64, Arc<Tunnel>>) {
    metrics::gauge!("cluster_tunnels_open").set(tunnels.len() as f64);
}

impl Tunnels {
    fn tunnel(&self, id: u64, from: &str) -> Option<Arc<Tunnel>> {
        let mut tunnels = self.tunnels.lock().unwrap_or_else(PoisonError::into_inner);
        tunnels.retain(|_, t| !t.idle());
        counted(&tunnels);
        tunnels.get(&id).filter(|t| t.node == from).cloned()
    }

    fn close(&self, id: u64, from: &str) {
        let mut tunnels = self.tunnels.lock().unwrap_or_else(PoisonError::into_inner);
        if tunnels.get(&id).is_some_and(|t| t.node == from) {
            tunnels.remove(&id);
            counted(&tunnels);
        }
    }

    async fn answer(self: Arc<Self>, from: String, request: Request) -> Result<Response, String> {
        match request {
            Request::Open { path, key } => self.open(from, &path, &key).await,
            Request::Get { path } => self.get(from, &path).await,
            Request::Write(id, bytes) => {
                let Some(tunnel) = self.tunnel(id, &from) else { return Ok(Response::Ended) };
                let Source::Socket(_, writer) = &tunnel.source else { return Ok(Response::Ended) };
                tunnel.touch();
                let written = writer.lock().await.write_all(&bytes).await;
                tunnel.touch();
                Ok(if written.is_ok() { Response::Done } else { Response::Ended })
            }
            Request::Read(id) => {
                let Some(tunnel) = self.tunnel(id, &from) else { return Ok(Response::Ended) };
                tunnel.touch();
                let read = tunnel.read().await;
                tunnel.touch();
                Ok(match read {
                    Some(bytes) => Response::Bytes(bytes),
                    None => {
                        self.close(id, &from);
                        Response::Ended
                    }
                })
            }
            Request::Close(id) => {
                self.close(id, &from);
                Ok(Response::Done)
            }
        }
    }

    /// Opens `path` on this node's API as a request passed on, with the client's `key`.
    async fn open(self: &Arc<Self>, from: String, path: &str, key: &str) -> Result<Response, String> {
        if !path.starts_with("/v2/cdp/") || !plain(path) || !plain(key) || key.len() > 64 {
            return Err("not a DevTools address".into());
        }
        let opened = tokio::time::timeout(OPEN_TIMEOUT, async {
            let mut stream = TcpStream::connect(&self.address).await.map_err(|e| e.to_string())?;
            let (name, secret) = super::http::passed_on_header();
            let marked = format!("{name}: {secret}\r\n");
            let (head, rest) = crate::actors::browser::cdp::handshake(
                &mut stream,
                path,
                &self.address,
                key,
                &marked,
                MAX_HEAD,
            )
            .await?;
            Ok::<_, String>((stream, head, rest))
        })
        .await
        .map_err(|_| "the endpoint did not answer in time".to_owned())??;
        let (mut stream, head, mut rest) = opened;
        let status: u16 = head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(502);
        let header = |name: &str| crate::actors::browser::cdp::header_of(&head, name);
        if status != 101 {
            // The endpoint's error: its body, as long as it says (bounded).
            let length = header("content-length").and_then(|v| v.parse::<usize>().ok()).unwrap_or(0);
            let length = length.min(MAX_HEAD);
            while rest.len() < length {
                let mut chunk = [0u8; 4096];
                match tokio::time::timeout(CALL_TIMEOUT, stream.read(&mut chunk)).await {
                    Ok(Ok(n)) if n > 0 => rest.extend_from_slice(&chunk[..n]),
                    _ => break,
                }
            }
            rest.truncate(length);
            return Ok(Response::Refused(status, rest));
        }
        let accept = header("sec-websocket-accept").ok_or("no Sec-WebSocket-Accept in the answer")?;
        let (reader, writer) = stream.into_split();
        let source = Source::Socket(tokio::sync::Mutex::new(reader), tokio::sync::Mutex::new(writer));
        Ok(Response::Opened(self.register(from, source), accept, rest))
    }

    /// GETs `path` (a live view's screen stream) from this node's API as a request passed
    /// on; its body is read as the other node asks.
    async fn get(self: &Arc<Self>, from: String, path: &str) -> Result<Response, String> {
        if !path.starts_with("/v2/live/") || !path.ends_with("/stream") || !plain(path) {
            return Err("not a live view's stream".into());
        }
        let (name, secret) = super::http::passed_on_header();
        let request = self.client.get(format!("http://{}{path}", self.address)).header(name, secret);
        let response = tokio::time::timeout(OPEN_TIMEOUT, request.send())
            .await
            .map_err(|_| "the live view did not answer in time".to_owned())?
            .map_err(|e| e.to_string())?;
        let status = response.status().as_u16();
        if status != 200 {
            let body = response.bytes().await.map_err(|e| e.to_string())?;
            return Ok(Response::Refused(status, body[..body.len().min(MAX_HEAD)].to_vec()));
        }
        let content_type = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("application/octet-stream")
            .to_owned();
        let source = Source::Body(tokio::sync::Mutex::new(response));
        Ok(Response::Opened(self.register(from, source), content_type, Vec::new()))
    }

    /// Keeps a new tunnel for node `from`; returns its id. It is closed once idle, even if
    /// no other tunnel is used again.
    fn register(self: &Arc<Self>, from: String, source: Source) -> u64 {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let tunnel = Arc::new(Tunnel { source, node: from, used: Mutex::new(Instant::now()) });
        {
            let mut tunnels = self.tunnels.lock().unwrap_or_else(PoisonError::into_inner);
            tunnels.insert(id, Arc::clone(&tunnel));
            counted(&tunnels);
        }
        let (tunnels, tunnel) = (Arc::clone(self), Arc::downgrade(&tunnel));
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(IDLE / 2).await;
                match tunnel.upgrade() {
                    // Closed already.
                    None => return,
                    Some(t) if t.idle() => {
                        let mut open = tunnels.tunnels.lock().unwrap_or_else(PoisonError::into_inner);
                        if open.get(&id).is_some_and(|o| Arc::ptr_eq(o, &t)) {
                            open.remove(&id);
                            counted(&open);
                        }
                        return;
                    }
                    Some(_) => {}
                }
            }
        });
        id
    }
}

/// Whether `s` is one non-empty run of visible ASCII (no spaces or line ends).
fn plain(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_graphic())
}

impl crate::cluster::Handler for Handler {
    fn handle(&self, from: String, request: Vec<u8>) -> BoxFuture<'static, Result<Vec<u8>, String>> {
        let me = Arc::clone(&self.0);
        Box::pin(async move {
            let request: Request = decode(&request)?;
            let response = me.answer(from, request).await?;
            Ok(encode(&response))
        })
    }
}
