//! `GET /v2/cdp/{token}`: a browser session's DevTools connection (its `cdpUrl`). The
//! token is the session's interactive live-view token, so the address is the credential,
//! as for the live view. Two endpoints:
//!
//! - `/v2/cdp/{token}` is a browser endpoint, for Playwright's `connectOverCDP` and
//!   Puppeteer's `connect`: the handshake goes to Chromium's browser endpoint, and the
//!   guard of [`crate::actors::browser::cdp_scope`] shows the client the session's own
//!   context only (its pages, new pages it opens, their sessions);
//! - `/v2/cdp/{token}/page` is the session's page itself, for clients that drive one page
//!   (raw DevTools clients, `chrome-remote-interface`).
//!
//! Then bytes flow both ways through the guard: every command the client sends is judged
//! ([`crate::actors::browser::cdp`]'s page rules, plus the browser endpoint's scope),
//! refused commands are answered with a DevTools error and never reach the browser, and
//! what the browser sends is split at frame boundaries only (so an answer of the guard is
//! never written into the middle of a frame) and, on the browser endpoint, cut to the
//! session's context.
//!
//! In a cluster, a token of a session another node holds is carried there ([`super::tunnel`]).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use actix_web::web::Bytes;
use actix_web::{HttpRequest, HttpResponse, web};
use futures::StreamExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc;

use super::AppState;
use super::error::ApiError;
use crate::actors::browser::SessionMsg;
use crate::actors::browser::cdp::{self, FrameError, MAX_CLIENT_FRAME, Verdict};
use crate::actors::browser::cdp_scope::{Scope, ToBrowser, ToClient};
use crate::model::Code;

/// Registers the route.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/v2/cdp/{token}").route(web::get().to(connect)))
        .service(web::resource("/v2/cdp/{token}/page").route(web::get().to(connect)));
}

/// The `cdpUrl` of the session whose interactive live-view token is `token`, on the server
/// at `base` (`http://…` becomes `ws://…`, `https://…` `wss://…`).
pub fn url(base: &str, token: &str) -> String {
    let base = match base.split_once("://") {
        Some(("https", rest)) => format!("wss://{rest}"),
        Some((_, rest)) => format!("ws://{rest}"),
        None => format!("ws://{base}"),
    };
    format!("{base}/v2/cdp/{token}")
}

/// Longest the browser's side of the handshake may take.
const HANDSHAKE: Duration = Duration::from_secs(10);
/// Largest handshake answer read from the browser.
const MAX_HANDSHAKE: usize = 16 << 10;
/// Largest frame passed from the browser (a full-page screenshot fits).
const MAX_BROWSER_FRAME: usize = 256 << 20;

/// What the guard of one connection holds.
#[derive(Debug, Clone)]
enum Guard {
    /// The page endpoint: each command judged alone.
    Page,
    /// The browser endpoint: commands and events seen through the session's context.
    Browser(Arc<Mutex<Scope>>),
}

impl Guard {
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

    /// Judges the browser's frame `frame` (whole, `len` bytes).
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

async fn connect(
    state: web::Data<AppState>,
    request: HttpRequest,
    token: web::Path<String>,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let whole_browser = !request.path().ends_with("/page");
    let header = |name: &str| request.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
    let upgrade = header("upgrade").is_some_and(|u| u.eq_ignore_ascii_case("websocket"));
    let key = header("sec-websocket-key").filter(|_| upgrade).ok_or_else(|| {
        ApiError::bad_request("This is a DevTools WebSocket address: connect with a WebSocket (CDP) client")
    })?;
    // A session of another node: its connection is carried there.
    let payload = match super::tunnel::through_node_of(&state, &request, payload, &token, &key).await {
        Ok(answer) => return answer,
        Err(payload) => payload,
    };
    let access = super::interact::access(&state, &token).await?;
    if !access.interactive {
        return Err(ApiError::new(
            Code::Forbidden,
            "A read-only live-view token gives no DevTools connection.",
        ));
    }
    let devtools = super::interact::ask_session(&access, SessionMsg::Endpoint, HANDSHAKE).await?;
    let (endpoint, guard) = if whole_browser {
        let scope = Scope::new(devtools.context, devtools.target);
        (devtools.browser, Guard::Browser(Arc::new(Mutex::new(scope))))
    } else {
        (devtools.page, Guard::Page)
    };
    let (upstream, accept, early) = tokio::time::timeout(HANDSHAKE, open(&endpoint, &key))
        .await
        .unwrap_or_else(|_| Err("the browser did not answer the handshake in time".into()))
        .map_err(|e| {
            ApiError::new(Code::BrowserFailed, format!("Connecting to the session's page failed: {e}"))
        })?;
    let (from_browser, to_browser) = upstream.into_split();
    let (to_client, from_proxy) = mpsc::channel::<Bytes>(64);
    let (refusals, refused) = mpsc::channel::<Vec<u8>>(64);
    tokio::spawn(browser_to_client(from_browser, early, to_client, refused, guard.clone()));
    // The request's body lives on this HTTP worker's thread.
    actix_web::rt::spawn(client_to_browser(payload, to_browser, refusals, guard));
    let body = futures::stream::unfold(from_proxy, |mut rx| async move {
        rx.recv().await.map(|bytes| (Ok::<_, std::convert::Infallible>(bytes), rx))
    });
    Ok(HttpResponse::SwitchingProtocols()
        .upgrade("websocket")
        .insert_header(("sec-websocket-accept", accept))
        .streaming(body))
}

/// Opens the page's endpoint with the client's key; returns the connection, the browser's
/// `Sec-WebSocket-Accept` (right for the client too, as the key is the client's) and any
/// bytes that followed the handshake answer.
async fn open(endpoint: &str, key: &str) -> Result<(TcpStream, String, Vec<u8>), String> {
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
    mut from_browser: tokio::net::tcp::OwnedReadHalf,
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

/// Judges the client's frames and passes the allowed ones to the browser as they came.
/// Fragmented or binary messages end the connection (DevTools commands are whole texts).
async fn client_to_browser(
    mut payload: web::Payload,
    mut to_browser: tokio::net::tcp::OwnedWriteHalf,
    refusals: mpsc::Sender<Vec<u8>>,
    guard: Guard,
) {
    let mut buf: Vec<u8> = Vec::new();
    while let Some(Ok(chunk)) = payload.next().await {
        buf.extend_from_slice(&chunk);
        loop {
            let frame = match cdp::frame(&buf, MAX_CLIENT_FRAME) {
                Ok(frame) => frame,
                Err(FrameError::Incomplete) => break,
                Err(FrameError::TooLarge) => return,
            };
            let sent = match (frame.fin, frame.opcode) {
                (true, 1) => match guard.judge_client(&frame.payload) {
                    ToBrowser::Pass => to_browser.write_all(&buf[..frame.len]).await,
                    ToBrowser::Rewrite(text) => to_browser.write_all(&cdp::client_text_frame(&text)).await,
                    ToBrowser::Answer(answer) => {
                        if refusals.send(cdp::text_frame(&answer)).await.is_err() {
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
    let _ = to_browser.shutdown().await;
}
