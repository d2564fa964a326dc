//! The one way out of the sandbox of a code run: a Unix socket, bound into the sandbox for
//! the run (`process::sandbox`), on which every connection reaches the session's page and
//! nothing else. A WebSocket handshake is carried to the page behind the page guard
//! ([`super::cdp_bridge`]); `GET /json` and `/json/list` list that page alone, as Chromium's
//! own endpoint would, so DevTools clients that look for their target find it; anything
//! else is answered 404. The door closes when the run ends (it is dropped).

use std::path::{Path, PathBuf};
use std::time::Duration;

use bytes::Bytes;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;
use tokio::net::unix::OwnedReadHalf;

use super::cdp;
use super::cdp_bridge::{self, Guard};
use crate::process::sandbox::{self, DEVTOOLS_PORT};

/// Longest a client may take to send its request's head, and its largest size.
const HEAD_TIME: Duration = Duration::from_secs(10);
const MAX_HEAD: usize = 16 << 10;

/// A run's door to its session's page.
#[derive(Debug)]
pub struct Door {
    socket: PathBuf,
    serving: tokio::task::JoinHandle<()>,
    _dir: tempfile::TempDir,
}

impl Door {
    /// Opens a door to the page whose DevTools endpoint is `endpoint` and whose address is
    /// `page_url`.
    pub fn open(endpoint: &str, page_url: &str) -> Result<Self, String> {
        let dir = tempfile::tempdir().map_err(|e| format!("a directory for the sandbox's socket: {e}"))?;
        let socket = dir.path().join("devtools.sock");
        let listener = sandbox::bind_socket(dir.path(), &socket)?;
        let page = Page { endpoint: endpoint.to_owned(), url: page_url.to_owned() };
        let serving = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let page = page.clone();
                tokio::spawn(async move {
                    if let Err(e) = page.answer(stream).await {
                        tracing::debug!(error = %e, "a sandboxed run's DevTools connection ended");
                    }
                });
            }
        });
        Ok(Self { socket, serving, _dir: dir })
    }

    /// The socket, to bind into the sandbox.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// The page's DevTools address as the code inside the sandbox reaches it.
    pub fn inside_url(endpoint: &str) -> String {
        format!("ws://127.0.0.1:{DEVTOOLS_PORT}/devtools/page/{}", target_of(endpoint))
    }
}

impl Drop for Door {
    fn drop(&mut self) {
        self.serving.abort();
    }
}

/// The page's target id: the last part of its DevTools endpoint.
fn target_of(endpoint: &str) -> &str {
    endpoint.rsplit('/').next().unwrap_or_default()
}

#[derive(Debug, Clone)]
struct Page {
    endpoint: String,
    url: String,
}

impl Page {
    /// Answers one connection from inside the sandbox.
    async fn answer(&self, stream: UnixStream) -> Result<(), String> {
        let (mut reading, mut writing) = stream.into_split();
        let (head, early) = tokio::time::timeout(HEAD_TIME, cdp::read_head(&mut reading, MAX_HEAD))
            .await
            .map_err(|_| "no request in time".to_owned())??;
        let request_line = head.lines().next().unwrap_or_default().to_owned();
        let path = request_line.split(' ').nth(1).unwrap_or_default();
        let upgrade = cdp::header_of(&head, "upgrade").is_some_and(|u| u.eq_ignore_ascii_case("websocket"));
        let key = cdp::header_of(&head, "sec-websocket-key").filter(|_| upgrade);
        let answer = match (key, path) {
            (Some(key), _) => {
                let bridge = cdp_bridge::open(&self.endpoint, &key, Guard::Page).await?;
                let accept = format!(
                    "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
                     Sec-WebSocket-Accept: {}\r\n\r\n",
                    bridge.accept
                );
                writing.write_all(accept.as_bytes()).await.map_err(|e| e.to_string())?;
                tokio::spawn(bridge.from_client.run(client_bytes(reading, early)));
                let mut frames = bridge.to_client;
                while let Some(frame) = frames.recv().await {
                    writing.write_all(&frame).await.map_err(|e| e.to_string())?;
                }
                return Ok(());
            }
            (None, "/json" | "/json/list") => {
                let target = target_of(&self.endpoint);
                let list = json!([{
                    "id": target,
                    "type": "page",
                    "url": self.url,
                    "webSocketDebuggerUrl": Door::inside_url(&self.endpoint),
                }]);
                response("200 OK", &list.to_string())
            }
            (None, _) => response("404 Not Found", "Only the session's page is reachable from here."),
        };
        writing.write_all(answer.as_bytes()).await.map_err(|e| e.to_string())
    }
}

/// An HTTP answer that closes the connection.
fn response(status: &str, body: &str) -> String {
    format!(
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// The client's bytes after its handshake: those read with the head, then the rest.
fn client_bytes(
    reading: OwnedReadHalf,
    early: Vec<u8>,
) -> impl futures::Stream<Item = std::io::Result<Bytes>> + Unpin {
    let first = futures::stream::iter((!early.is_empty()).then(|| Ok(Bytes::from(early))));
    let rest = futures::stream::unfold(reading, |mut reading| async move {
        let mut chunk = vec![0u8; 64 << 10];
        match reading.read(&mut chunk).await {
            Ok(0) | Err(_) => None,
            Ok(n) => {
                chunk.truncate(n);
                Some((Ok(Bytes::from(chunk)), reading))
            }
        }
    });
    Box::pin(futures::StreamExt::chain(first, rest))
}
