//! Requests between nodes of a cluster, as this node's actors answer them: the cluster
//! module carries bytes; this module says what they mean. Each request and answer is a
//! serde enum encoded with postcard inside the cluster's versioned envelope.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

use super::Runtime;

/// What one node asks another.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Request {
    /// How much this node holds.
    Counts,
}

/// The answers.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Response {
    /// See [`Request::Counts`].
    Counts(NodeCounts),
}

/// How much a node holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeCounts {
    /// Live site actors.
    pub domains: usize,
    /// Running job actors.
    pub jobs: usize,
    /// Interact sessions.
    pub sessions: usize,
}

/// Encodes a request or an answer.
pub fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    postcard::to_allocvec(value).unwrap_or_default()
}

/// Decodes a request or an answer.
pub fn decode<T: for<'de> Deserialize<'de>>(bytes: &[u8]) -> Result<T, String> {
    postcard::from_bytes(bytes).map_err(|e| format!("unreadable request or answer: {e}"))
}

/// Answers other nodes' requests with this node's actors.
#[derive(Debug, Clone)]
pub struct RemoteHandler {
    runtime: Runtime,
}

impl RemoteHandler {
    /// A handler over `runtime`.
    pub fn new(runtime: Runtime) -> Arc<Self> {
        Arc::new(Self { runtime })
    }

    async fn answer(&self, request: Request) -> Result<Response, String> {
        match request {
            Request::Counts => Ok(Response::Counts(self.runtime.counts().await)),
        }
    }
}

impl crate::cluster::Handler for RemoteHandler {
    fn handle(&self, _from: String, request: Vec<u8>) -> BoxFuture<'static, Result<Vec<u8>, String>> {
        let this = self.clone();
        Box::pin(async move {
            let request: Request = decode(&request)?;
            this.answer(request).await.map(|r| encode(&r))
        })
    }
}
