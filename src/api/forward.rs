//! API requests for state another node holds (a browser session, a scrape's page state):
//! which to pass on, and the answer given back as it came. What crosses, and how the node
//! of the state answers, is `remote::http`.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse};

use super::AppState;
use super::error::ApiError;
use crate::cluster::{Cluster, Holder};
use crate::model::Code;
use crate::remote::http::{self, NodeError, REQUEST_HEADERS, VOUCHED};
use crate::remote::messages::http::{Answer, Passed};

/// Whether `request` was passed on by another node (through this process's handler).
pub fn passed_on(request: &HttpRequest) -> bool {
    http::is_passed_on(request.headers().get(http::FORWARDED).map(|v| v.as_bytes()))
}

/// The scrape id a passed-on `request` carries as checked by the scrape's own node.
pub fn vouched_for(request: &HttpRequest) -> Option<&str> {
    passed_on(request).then(|| request.headers().get(VOUCHED)?.to_str().ok()).flatten()
}

/// Answers `request` on the node whose ids carry `tag` when that is another node: `None`
/// when it is this one (or this node is alone, or the request was passed on already).
pub async fn to_node_of(
    state: &AppState,
    request: &HttpRequest,
    body: &[u8],
    tag: u32,
) -> Option<Result<HttpResponse, ApiError>> {
    if passed_on(request) {
        return None;
    }
    pass(state, request, body, tag, None).await
}

/// Like [`to_node_of`], from the node of scrape `scrape`, which has checked the caller's
/// right to it, to the node of `tag` where the request must run (a browser session held
/// there): passed on even when the request came from another node, and marked as
/// checked. The node of `tag` passes it on no further, as its state is there.
pub async fn vouched_to_node_of(
    state: &AppState,
    request: &HttpRequest,
    body: &[u8],
    tag: u32,
    scrape: &str,
) -> Option<Result<HttpResponse, ApiError>> {
    pass(state, request, body, tag, Some(scrape)).await
}

async fn pass(
    state: &AppState,
    request: &HttpRequest,
    body: &[u8],
    tag: u32,
    vouched: Option<&str>,
) -> Option<Result<HttpResponse, ApiError>> {
    let cluster = state.runtime.services().cluster.as_ref()?;
    let node = match cluster.holder_of_tag(tag) {
        Holder::Here => return None,
        Holder::There(node) => node,
        Holder::Down(node) => return Some(Err(unavailable(&node))),
    };
    let passed = passed(request, body, vouched);
    Some(http::pass(cluster, &node, &passed).await.map(response_of).map_err(|e| node_error(e, Code::Unknown)))
}

/// `request` (a read of the caller's own things, such as `GET /v2/browser`) answered by
/// every other live node: each node's name with its status and body. Empty when this node
/// is alone or the request was passed on already.
pub async fn to_every_node(
    state: &AppState,
    request: &HttpRequest,
) -> Vec<(String, Result<(u16, Vec<u8>), ApiError>)> {
    let Some(cluster) = state.runtime.services().cluster.as_ref().filter(|_| !passed_on(request)) else {
        return Vec::new();
    };
    let answers = http::to_every_node(cluster, &passed(request, &[], None)).await;
    answers
        .into_iter()
        .map(|(node, answer)| {
            (node, answer.map(|a| (a.status, a.body)).map_err(|e| node_error(e, Code::Unknown)))
        })
        .collect()
}

/// `request` as it is passed on: its method, path and query, the headers passed on (a
/// client's own vouch never among them), the vouch of `vouched`, and `body`.
fn passed(request: &HttpRequest, body: &[u8], vouched: Option<&str>) -> Passed {
    let mut headers =
        http::kept(&REQUEST_HEADERS, |name| request.headers().get(name)?.to_str().ok().map(str::to_owned));
    if let Some(scrape) = vouched {
        headers.push((VOUCHED.to_owned(), scrape.to_owned()));
    }
    let path = request.uri().path_and_query().map_or_else(|| request.path().to_owned(), |p| p.to_string());
    Passed { method: request.method().to_string(), path, headers, body: body.to_vec() }
}

/// Another node's answer, as this node gives it.
fn response_of(answer: Answer) -> HttpResponse {
    let mut response =
        HttpResponse::build(StatusCode::from_u16(answer.status).unwrap_or(StatusCode::BAD_GATEWAY));
    for (name, value) in answer.headers {
        response.insert_header((name, value));
    }
    response.body(answer.body)
}

/// A failed call to another node as the client's error: `code` when the node answered with
/// a failure, else 503 (it is down or did not answer).
pub(super) fn node_error(error: NodeError, code: Code) -> ApiError {
    match error {
        NodeError::Failed { .. } => ApiError::new(code, error.to_string()),
        NodeError::Unreachable(node) => unavailable(&node),
    }
}

/// 503: `node`, holding a session or scrape, is down.
pub(super) fn unavailable(node: &str) -> ApiError {
    ApiError::new(
        Code::NodeUnavailable,
        format!(
            "Node `{node}`, which holds this browser session or scrape, is not reachable; retry when it is back."
        ),
    )
}

/// The cluster this node is part of, unless `request` was passed on by another node.
pub(super) fn cluster_for<'s>(state: &'s AppState, request: &HttpRequest) -> Option<&'s Cluster> {
    state.runtime.services().cluster.as_ref().filter(|_| !passed_on(request))
}
