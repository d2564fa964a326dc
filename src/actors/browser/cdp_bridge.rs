//! A client's DevTools connection carried to a session's page or browser through the guard
//! ([`super::cdp`]'s page rules, [`super::cdp_scope`]'s view of the session's context).
//! The same bridge serves the API's `cdpUrl` (the client's bytes come from the HTTP
//! request's body) and code run in the sandbox (they come from a Unix socket).
//!
//! The handshake goes to the browser with the client's key, so the browser's
//! `Sec-WebSocket-Accept` is right for the client too. Then bytes flow both ways: every
//! command the client sends is judged, refused commands are answered with a DevTools error
//! and never reach the browser, and what the browser sends is split at frame boundaries
//! only (so an answer of the guard is never written into the middle of a frame) and, for
//! the whole browser, cut to the session's context.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use futures::{Stream, StreamExt};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::mpsc;

use super::cdp::{self, FrameError, MAX_CLIENT_FRAME, Verdict};
use super::cdp_scope::{Scope, ToBrowser, ToClient};

/// Longest the browser's side of the handshake may take.
pub const HANDSHAKE: Duration = Duration::from_secs(10);
/// Largest handshake answer read from the browser.
const MAX_HANDSHAKE: usize = 16 << 10;
/// Largest frame passed from the browser (a full-page screenshot fits).
const MAX_BROWSER_FRAME: usize = 256 << 20;

/// What the guard of one connection holds.
#[derive(Debug, Clone)]
pub enum Guard {
    /// The page endpoint: each command judged alone.
    Page,
    /// The browser endpoint: commands and events seen through the session's context.
    Browser(Arc<Mutex<Scope>>),
}

impl Guard {
    /// The guard of the whole browser, showing the client the browser `context` whose
    /// first page is `target`.
    pub fn browser(context: String, target: String) -> Self {
        Self::Browser(Arc::new(Mutex::new(Scope::new(context, target))))
    }

    fn judge_client(&self, message: &[u8]) -> ToBrowser {
        match self {
            Self::Page => match cdp::judge(message) {
                Verdict::Pass => ToBrowser::Pass,
                Verdict::Refuse(answer) => ToBrowser::Answer(answer),
            },
            Self::Browser(scope) => {
                scope.lock().unwrap_or_else(PoisonError::into_inner).judge_client(message)
            }
        }
    }

    /// Judges the browser's frame `frame` (whole).
    fn judge_browser(&self, frame: &[u8]) -> ToClient {
        let Self::Browser(scope) = self else { return ToClient::Pass };
        match cdp::frame(frame, MAX_BROWSER_FRAME) {
            Ok(f) if f.fin && f.opcode == 1 => {
                scope.lock().unwrap_or_else(PoisonError::into_inner).judge_browser(&f.payload)
            }
            _ => ToClient::Pass,
        }
    }
}

/// An open bridge: the browser's accept value for the client's handshake, the frames to
/// write to the client, and the side that takes the client's bytes ([`FromClient::run`]).
#[derive(Debug)]
pub struct Bridge {
    /// `Sec-WebSocket-Accept` for the client.
    pub accept: String,
    /// Frames for the client, in order; ends when the browser's side does.
    pub to_client: mpsc::Receiver<Bytes>,
    /// Where the client's bytes go.
    pub from_client: FromClient,
}

/// The client's side of a bridge.
#[derive(Debug)]
pub struct FromClient {
    to_browser: OwnedWriteHalf,
    refusals: mpsc::Sender<Vec<u8>>,
    guard: Guard,
}

/// Opens `endpoint` (a DevTools WebSocket address of the browser) with the client's `key`
/// behind `guard`, within [`HANDSHAKE`].
pub async fn open(endpoint: &str, key: &str, guard: Guard) -> Result<Bridge, String> {
    let (upstream, accept, early) = tokio::time::timeout(HANDSHAKE, connect(endpoint, key))
        .await
        .unwrap_or_else(|_| Err("the browser did not answer the handshake in time".into()))?;
    let (from_browser, to_browser) = upstream.into_split();
    let (to_client, frames) = mpsc::channel::<Bytes>(64);
    let (refusals, refused) = mpsc::channel::<Vec<u8>>(64);
    tokio::spawn(browser_to_client(from_browser, early, to_client, refused, guard.clone()));
    Ok(Bridge { accept, to_client: frames, from_client: FromClient { to_browser, refusals, guard } })
}

/// Connects to the endpoint and makes the handshake; returns the connection, the browser's
/// accept value and any bytes that followed the handshake answer.
async fn connect(endpoint: &str, key: &str) -> Result<(TcpStream, String, Vec<u8>), String> {
    let url = url::Url::parse(endpoint).map_err(|e| format!("{endpoint}: {e}"))?;
    let host = url.host_str().ok_or("no host")?;
    let port = url.port_or_known_default().ok_or("no port")?;
    let mut stream = TcpStream::connect((host, port)).await.map_err(|e| e.to_string())?;
    let (head, early) =
        cdp::handshake(&mut stream, url.path(), &format!("{host}:{port}"), key, "", MAX_HANDSHAKE).await?;
    if !head.starts_with("HTTP/1.1 101") {
        return Err(format!("the browser answered {}", head.lines().next().unwrap_or_default()));
    }
    let accept =
        cdp::header_of(&head, "sec-websocket-accept").ok_or("no Sec-WebSocket-Accept in the answer")?;
    Ok((stream, accept, early))
}

/// Passes the browser's frames to the client whole, with the refusal answers between them.
async fn browser_to_client(
    mut from_browser: OwnedReadHalf,
    early: Vec<u8>,
    to_client: mpsc::Sender<Bytes>,
    mut refused: mpsc::Receiver<Vec<u8>>,
    guard: Guard,
) {
    let mut buf = early;
    let mut chunk = vec![0u8; 64 << 10];
    loop {
        loop {
            match cdp::frame_len(&buf, MAX_BROWSER_FRAME) {
                Ok(len) => {
                    let rest = buf.split_off(len);
                    let frame = std::mem::replace(&mut buf, rest);
                    let out = match guard.judge_browser(&frame) {
                        ToClient::Pass => frame,
                        ToClient::Rewrite(text) => cdp::text_frame(&text),
                        ToClient::Drop => continue,
                    };
                    if to_client.send(Bytes::from(out)).await.is_err() {
                        return;
                    }
                }
                Err(FrameError::Incomplete) => break,
                Err(FrameError::TooLarge) => return,
            }
        }
        tokio::select! {
            read = from_browser.read(&mut chunk) => match read {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            },
            answer = refused.recv() => {
                let Some(frame) = answer else { return };
                if to_client.send(Bytes::from(frame)).await.is_err() {
                    return;
                }
            }
        }
    }
}

impl FromClient {
    /// Judges the client's frames, read from `payload`, and passes the allowed ones to the
    /// browser as they came. Fragmented or binary messages end the connection (DevTools
    /// commands are whole texts).
    pub async fn run<S, E>(mut self, mut payload: S)
    where
        S: Stream<Item = Result<Bytes, E>> + Unpin,
    {
        let mut buf: Vec<u8> = Vec::new();
        while let Some(Ok(chunk)) = payload.next().await {
            buf.extend_from_slice(&chunk);
            loop {
                let frame = match cdp::frame(&buf, MAX_CLIENT_FRAME) {
                    Ok(frame) => frame,
                    Err(FrameError::Incomplete) => break,
                    Err(FrameError::TooLarge) => return,
                };
                let to_browser = &mut self.to_browser;
                let sent = match (frame.fin, frame.opcode) {
                    (true, 1) => match self.guard.judge_client(&frame.payload) {
                        ToBrowser::Pass => to_browser.write_all(&buf[..frame.len]).await,
                        ToBrowser::Rewrite(text) => {
                            to_browser.write_all(&cdp::client_text_frame(&text)).await
                        }
                        ToBrowser::Answer(answer) => {
                            if self.refusals.send(cdp::text_frame(&answer)).await.is_err() {
                                return;
                            }
                            Ok(())
                        }
                    },
                    // Close, ping, pong.
                    (true, 8..=10) => to_browser.write_all(&buf[..frame.len]).await,
                    _ => return,
                };
                if sent.is_err() {
                    return;
                }
                buf.drain(..frame.len);
            }
        }
        let _ = self.to_browser.shutdown().await;
    }
}
