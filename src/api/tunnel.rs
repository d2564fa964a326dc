//! DevTools connections (`cdpUrl`) and live-view screen streams of a browser session
//! another node of the cluster holds: which to carry there, and the client's side of them.
//! What crosses, and how the session's node answers, is `remote::tunnel`.

use actix_web::http::StatusCode;
use actix_web::web::Payload;
use actix_web::{HttpRequest, HttpResponse};

use super::AppState;
use super::error::ApiError;
use crate::cluster::{Cluster, Holder};
use crate::model::Code;
use crate::remote::tunnel::{self, NotOpened};

/// The node holding `token`'s session when that is another node (`Ok(None)`: here, or this
/// node is alone, or the request was passed on).
fn node_of(
    state: &AppState,
    request: &HttpRequest,
    token: &str,
) -> Result<Option<(Cluster, String)>, ApiError> {
    let Some(tag) = crate::actors::browser::registry::tag_of_token(token) else { return Ok(None) };
    let Some(cluster) = super::forward::cluster_for(state, request) else { return Ok(None) };
    match cluster.holder_of_tag(tag) {
        Holder::Here => Ok(None),
        Holder::There(node) => Ok(Some((cluster.clone(), node))),
        Holder::Down(node) => Err(super::forward::unavailable(&node)),
    }
}

/// Connects the client of `request` (a WebSocket handshake with `key` for `token`'s
/// session) to the session's node when that is another node: the answer to give the
/// client, or the client's `payload` back when the session is here (or this node is alone,
/// or the request was passed on).
pub async fn through_node_of(
    state: &AppState,
    request: &HttpRequest,
    payload: Payload,
    token: &str,
    key: &str,
) -> Result<Result<HttpResponse, ApiError>, Payload> {
    let (cluster, node) = match node_of(state, request, token) {
        Ok(Some(there)) => there,
        Ok(None) => return Err(payload),
        Err(e) => return Ok(Err(e)),
    };
    let opened = match tunnel::open(&cluster, &node, request.path(), Some(key)).await {
        Ok(opened) => opened,
        Err(not) => return Ok(Ok(refusal(not))),
    };
    // The request's body lives on this HTTP worker's thread.
    actix_web::rt::spawn(tunnel::client_to_node(cluster.clone(), node.clone(), opened.id, payload));
    Ok(Ok(HttpResponse::SwitchingProtocols()
        .upgrade("websocket")
        .insert_header(("sec-websocket-accept", opened.value))
        .streaming(tunnel::from_node(cluster, node, opened.id, opened.early))))
}

/// The live view's screen stream (`request`, for `token`'s session) from the session's node
/// when that is another node; `None` when the session is here (or this node is alone, or
/// the request was passed on).
pub async fn stream_from_node_of(
    state: &AppState,
    request: &HttpRequest,
    token: &str,
) -> Option<Result<HttpResponse, ApiError>> {
    let (cluster, node) = match node_of(state, request, token) {
        Ok(there) => there?,
        Err(e) => return Some(Err(e)),
    };
    Some(Ok(match tunnel::open(&cluster, &node, request.path(), None).await {
        Ok(opened) => HttpResponse::Ok()
            .content_type(opened.value)
            .insert_header(("Cache-Control", "no-store"))
            .streaming(tunnel::from_node(cluster, node, opened.id, Vec::new())),
        Err(not) => refusal(not),
    }))
}

/// The answer for a client whose tunnel was not opened: the endpoint's own, when it
/// refused, else the error of the session's node.
fn refusal(not: NotOpened) -> HttpResponse {
    use actix_web::ResponseError;
    match not {
        NotOpened::Refused(status, body) => {
            HttpResponse::build(StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY))
                .content_type("application/json")
                .body(body)
        }
        NotOpened::Node(e) => super::forward::node_error(e, Code::BrowserFailed).error_response(),
    }
}
