//! API requests for state that lives in another node's process, both sides: a browser
//! session (interact, live view) exists where its Chromium runs, and a scrape's page state
//! where the scrape ran. Their ids carry that node's tag, so any node can pass such a
//! request on: it goes over the cluster's `Http` channel to the node of the tag, which
//! answers it with its own API (the same handlers, keys and checks), and the answer comes
//! back as it was. A request passed on once is never passed on again, so two nodes with
//! different views of the members cannot bounce it between them, and is not counted twice
//! against the team's request rate: it carries [`FORWARDED`] with a secret of the answering
//! process (random at start, never leaves it), which no client can forge. One exception: a
//! call about a scrape of one node in a browser session of another (`existingSessionId`)
//! goes to the scrape's node, which checks the scrape, then on to the session's node,
//! marked as checked ([`VOUCHED`]); that node holds the session and passes it no further.
//!
//! The API's handlers decide what to pass on (`api::forward`); this module carries it.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;

use super::messages::http::{Answer, Passed};
use super::messages::{decode, encode};
use crate::cluster::{Channel, Cluster, ClusterError};

/// Marks a request another node passed on.
pub const FORWARDED: &str = "x-ferrocrawl-forwarded";
/// On a passed-on request: the scrape whose owner node checked the caller's right to it
/// (its id), for a request that runs on another node than the scrape's.
pub const VOUCHED: &str = "x-ferrocrawl-vouched-scrape";
/// Request headers passed on with the request.
pub const REQUEST_HEADERS: [&str; 4] = ["authorization", "content-type", "accept", "x-request-id"];
/// Answer headers passed back.
const ANSWER_HEADERS: [&str; 4] = ["content-type", "cache-control", "referrer-policy", "retry-after"];
/// Longest a passed-on request may take: interact code runs up to 300 s.
const TIMEOUT: Duration = Duration::from_secs(330);

/// Why a request passed on to another node got no answer of that node's API.
#[derive(Debug, Clone, thiserror::Error)]
pub enum NodeError {
    /// The node is down, or did not answer.
    #[error("node `{0}` is not reachable")]
    Unreachable(String),
    /// The node failed the call (it answered with a failure).
    #[error("node `{node}`: {reason}")]
    Failed {
        /// The node.
        node: String,
        /// What it said.
        reason: String,
    },
}

impl NodeError {
    /// A failed call to `node`, as the asker sees it.
    pub fn of(node: &str, error: ClusterError) -> Self {
        match error {
            ClusterError::Call { reason, .. } => Self::Failed { node: node.to_owned(), reason },
            _ => Self::Unreachable(node.to_owned()),
        }
    }
}

/// The secret marking requests this process passes to its own API for another node.
fn secret() -> &'static str {
    static SECRET: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    SECRET.get_or_init(|| crate::actors::browser::registry::token(None))
}

/// The header marking a request as passed on by another node, with its value.
pub fn passed_on_header() -> (&'static str, &'static str) {
    (FORWARDED, secret())
}

/// Whether a request's [`FORWARDED`] header (`value`) marks it as passed on by another node
/// through this process.
pub fn is_passed_on(value: Option<&[u8]>) -> bool {
    value.is_some_and(|v| v == secret().as_bytes())
}

/// Passes `request` to `node` and returns its answer.
pub async fn pass(cluster: &Cluster, node: &str, request: &Passed) -> Result<Answer, NodeError> {
    let answer = cluster
        .call(node, Channel::Http, encode(request), TIMEOUT)
        .await
        .map_err(|e| NodeError::of(node, e))?;
    decode(&answer).map_err(|reason| NodeError::Failed { node: node.to_owned(), reason })
}

/// `request` (a read of the caller's own things) answered by every other live node: each
/// node's name with its answer.
pub async fn to_every_node(cluster: &Cluster, request: &Passed) -> Vec<(String, Result<Answer, NodeError>)> {
    let others: Vec<String> =
        cluster.live().iter().filter(|name| name.as_str() != cluster.name()).cloned().collect();
    let asks = others.into_iter().map(|node| async move {
        let answer = pass(cluster, &node, request).await;
        (node, answer)
    });
    futures::future::join_all(asks).await
}

/// The headers among `names` that `get` finds, as name and value.
pub fn kept(names: &[&str], get: impl Fn(&str) -> Option<String>) -> Vec<(String, String)> {
    names.iter().filter_map(|name| Some(((*name).to_owned(), get(name)?))).collect()
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
            let passed: Passed = decode(&request)?;
            if !passed.path.starts_with('/') {
                return Err("not a path".into());
            }
            let method = reqwest::Method::from_bytes(passed.method.as_bytes()).map_err(|e| e.to_string())?;
            let mut outgoing =
                client.request(method, format!("{base}{}", passed.path)).header(FORWARDED, secret());
            // The vouch comes from a member of the cluster, never from a client (the asking
            // side adds it; a client's own is never among the headers passed on).
            let wanted = |name: &str| REQUEST_HEADERS.contains(&name) || name == VOUCHED;
            for (name, value) in passed.headers.iter().filter(|(n, _)| wanted(n)) {
                outgoing = outgoing.header(name, value);
            }
            let response = outgoing.body(passed.body).send().await.map_err(|e| e.to_string())?;
            let status = response.status().as_u16();
            let headers =
                kept(&ANSWER_HEADERS, |name| response.headers().get(name)?.to_str().ok().map(str::to_owned));
            let body = response.bytes().await.map_err(|e| e.to_string())?.to_vec();
            Ok(encode(&Answer { status, headers, body }))
        })
    }
}
