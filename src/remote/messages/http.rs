//! The `Http` channel: an API request passed on to the node that holds what it is about (a
//! browser session, a scrape's page state), and that node's answer, as they were.

use serde::{Deserialize, Serialize};

/// A request passed on to another node.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Passed {
    /// The HTTP method.
    pub method: String,
    /// Path and query, e.g. `/v2/live/…/frame`.
    pub path: String,
    /// The headers passed on with it.
    pub headers: Vec<(String, String)>,
    /// The body.
    #[serde(with = "serde_bytes")]
    pub body: Vec<u8>,
}

/// That node's answer.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Answer {
    /// The HTTP status.
    pub status: u16,
    /// The headers passed back.
    pub headers: Vec<(String, String)>,
    /// The body.
    #[serde(with = "serde_bytes")]
    pub body: Vec<u8>,
}
