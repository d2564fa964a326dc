//! Requests for state that lives in another node's process: a browser session (interact,
//! live view) exists where its Chromium runs, and a scrape's page state where the scrape
//! ran. Their ids carry that node's tag (see `crate::model::JobId::tagged` and
//! `registry::token`), so any node can pass such a request on: the request goes over the
//! cluster's `Http` channel to the node of the tag, which answers it with its own API
//! (the same handlers, keys and checks), and the answer comes back as it was. A request
//! passed on once is never passed on again, so two nodes with different views of the
//! members cannot bounce it between them, and is not counted twice against the team's
//! request rate: it carries `x-ferrocrawl-forwarded` with a secret of the answering process
//! (random at start, never leaves it), which no client can forge. One exception: a call
//! about a scrape of one node in a browser session of another (`existingSessionId`) goes
//! to the scrape's node, which checks the scrape, then on to the session's node, marked
//! as checked ([`vouched_to_node_of`]); that node holds the session and passes it no further.

use std::sync::Arc;
use std::time::Duration;

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse};
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

use super::AppState;
use super::error::ApiError;
use crate::cluster::{Channel, ClusterError, Holder};
use crate::model::Code;

/// Marks a request another node passed on.
pub const FORWARDED: &str = "x-ferrocrawl-forwarded";
/// On a passed-on request: the scrape whose owner node checked the caller's right to it
/// (its id), for a request that runs on another node than the scrape's ([`vouched_for`]).
const VOUCHED: &str = "x-ferrocrawl-vouched-scrape";
/// Request headers passed on with the request.
const REQUEST_HEADERS: [&str; 4] = ["authorization", "content-type", "accept", "x-request-id"];
/// Answer headers passed back.
const ANSWER_HEADERS: [&str; 4] = ["content-type", "cache-control", "referrer-policy", "retry-after"];
/// Longest a passed-on request may take: interact code runs up to 300 s.
const TIMEOUT: Duration = Duration::from_secs(330);

/// A request passed on to another node.
#[derive(Debug, Serialize, Deserialize)]
struct Passed {
    method: String,
    /// Path and query, e.g. `/v2/live/…/frame`.
    path: String,
    headers: Vec<(String, String)>,
    #[serde(with = "serde_bytes")]
    body: Vec<u8>,
}

/// That node's answer.
#[derive(Debug, Serialize, Deserialize)]
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    #[serde(with = "serde_bytes")]
    body: Vec<u8>,
}

/// The secret marking requests this process passes to its own API for another node.
fn secret() -> &'static str {
    static SECRET: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    SECRET.get_or_init(|| crate::actors::browser::registry::token(None))
}

/// The header marking a request as passed on by another node, with its value.
pub(super) fn passed_on_header() -> (&'static str, &'static str) {
    (FORWARDED, secret())
}

/// Whether `request` was passed on by another node (through this process's handler).
pub fn passed_on(request: &HttpRequest) -> bool {
    request.headers().get(FORWARDED).is_some_and(|v| v.as_bytes() == secret().as_bytes())
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
    Some(pass_to(cluster, request, body, &node, vouched).await.map(|answer| {
        let mut response =
            HttpResponse::build(StatusCode::from_u16(answer.status).unwrap_or(StatusCode::BAD_GATEWAY));
        for (name, value) in answer.headers {
            response.insert_header((name, value));
        }
        response.body(answer.body)
    }))
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
    let others: Vec<String> =
        cluster.live().iter().filter(|name| name.as_str() != cluster.name()).cloned().collect();
    let asks = others.into_iter().map(|node| async move {
        let answer = pass_to(cluster, request, &[], &node, None).await.map(|a| (a.status, a.body));
        (node, answer)
    });
    futures::future::join_all(asks).await
}

/// Passes `request` to `node` and returns its answer.
async fn pass_to(
    cluster: &crate::cluster::Cluster,
    request: &HttpRequest,
    body: &[u8],
    node: &str,
    vouched: Option<&str>,
) -> Result<Answer, ApiError> {
    let node = node.to_owned();
    // A client's own `x-ferrocrawl-vouched-scrape` is never among the headers passed on.
    let mut headers =
        kept(&REQUEST_HEADERS, |name| request.headers().get(name)?.to_str().ok().map(str::to_owned));
    if let Some(scrape) = vouched {
        headers.push((VOUCHED.to_owned(), scrape.to_owned()));
    }
    let path = request.uri().path_and_query().map_or_else(|| request.path().to_owned(), |p| p.to_string());
    let passed = Passed { method: request.method().to_string(), path, headers, body: body.to_vec() };
    let bytes = postcard::to_allocvec(&passed).map_err(|e| ApiError::new(Code::Unknown, e.to_string()))?;
    let answer = cluster
        .call(&node, Channel::Http, bytes, TIMEOUT)
        .await
        .map_err(|e| node_error(&node, e, Code::Unknown))?;
    postcard::from_bytes(&answer).map_err(|e| ApiError::new(Code::Unknown, format!("node `{node}`: {e}")))
}

/// The headers among `names` that `get` finds, as name and value.
fn kept(names: &[&str], get: impl Fn(&str) -> Option<String>) -> Vec<(String, String)> {
    names.iter().filter_map(|name| Some(((*name).to_owned(), get(name)?))).collect()
}

/// A failed call to `node` as the client's error: `code` when the node answered with a
/// failure, else 503 (it is down or did not answer).
pub(super) fn node_error(node: &str, error: ClusterError, code: Code) -> ApiError {
    match error {
        ClusterError::Call { reason, .. } => ApiError::new(code, format!("node `{node}`: {reason}")),
        _ => unavailable(node),
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

/// Answers requests other nodes pass on, with this node's own API at `base`.
#[derive(Debug)]
pub struct Handler {
    client: reqwest::Client,
    base: String,
}

impl Handler {
    /// A handler sending requests to this node's API at `base` (`http://host:port`).
    pub fn new(base: String) -> Result<Arc<Self>, String> {
        let client =
            reqwest::Client::builder().no_proxy().timeout(TIMEOUT).build().map_err(|e| e.to_string())?;
        Ok(Arc::new(Self { client, base }))
    }
}

impl crate::cluster::Handler for Handler {
    fn handle(&self, _from: String, request: Vec<u8>) -> BoxFuture<'static, Result<Vec<u8>, String>> {
        let (client, base) = (self.client.clone(), self.base.clone());
        Box::pin(async move {
            let passed: Passed = postcard::from_bytes(&request).map_err(|e| e.to_string())?;
            if !passed.path.starts_with('/') {
                return Err("not a path".into());
            }
            let method = reqwest::Method::from_bytes(passed.method.as_bytes()).map_err(|e| e.to_string())?;
            let mut outgoing =
                client.request(method, format!("{base}{}", passed.path)).header(FORWARDED, secret());
            // The vouch comes from a member of the cluster, never from a client (see `pass`).
            let wanted = |name: &str| REQUEST_HEADERS.contains(&name) || name == VOUCHED;
            for (name, value) in passed.headers.iter().filter(|(n, _)| wanted(n)) {
                outgoing = outgoing.header(name, value);
            }
            let response = outgoing.body(passed.body).send().await.map_err(|e| e.to_string())?;
            let status = response.status().as_u16();
            let headers =
                kept(&ANSWER_HEADERS, |name| response.headers().get(name)?.to_str().ok().map(str::to_owned));
            let body = response.bytes().await.map_err(|e| e.to_string())?.to_vec();
            postcard::to_allocvec(&Answer { status, headers, body }).map_err(|e| e.to_string())
        })
    }
}
