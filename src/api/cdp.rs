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
//! Then bytes flow both ways through the guard ([`crate::actors::browser::cdp_bridge`]).
//!
//! In a cluster, a token of a session another node holds is carried there ([`super::tunnel`]).

use actix_web::{HttpRequest, HttpResponse, web};

use super::AppState;
use super::error::ApiError;
use crate::actors::browser::SessionMsg;
use crate::actors::browser::cdp_bridge::{self, Guard, HANDSHAKE};
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
        (devtools.browser, Guard::browser(devtools.context, devtools.target))
    } else {
        (devtools.page, Guard::Page)
    };
    let bridge = cdp_bridge::open(&endpoint, &key, guard).await.map_err(|e| {
        ApiError::new(Code::BrowserFailed, format!("Connecting to the session's page failed: {e}"))
    })?;
    // The request's body lives on this HTTP worker's thread.
    actix_web::rt::spawn(bridge.from_client.run(payload));
    let body = futures::stream::unfold(bridge.to_client, |mut rx| async move {
        rx.recv().await.map(|bytes| (Ok::<_, std::convert::Infallible>(bytes), rx))
    });
    Ok(HttpResponse::SwitchingProtocols()
        .upgrade("websocket")
        .insert_header(("sec-websocket-accept", bridge.accept))
        .streaming(body))
}
