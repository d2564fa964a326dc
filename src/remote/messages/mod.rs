//! The messages between nodes, one module a channel ([`crate::cluster::Channel`]). Each
//! request and answer is a serde enum, postcard-encoded inside the cluster's versioned
//! envelope; errors cross as their HTTP status, code and message.
//!
//! **The promise** (see [`super::compat`]): a node reads and writes its own release's
//! protocol and the previous release's. These types are the wire: a change of one is a new
//! protocol version, and the tests of this module pin the bytes a node of the previous
//! release sends and reads.

pub mod http;
pub mod jobs;
pub mod teams;
pub mod tunnel;

use serde::{Deserialize, Serialize};

/// Encodes a request or an answer.
pub fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    crate::cluster::to_bytes(value)
}

/// Decodes a request or an answer.
pub fn decode<T: for<'de> Deserialize<'de>>(bytes: &[u8]) -> Result<T, String> {
    postcard::from_bytes(bytes).map_err(|e| format!("unreadable request or answer: {e}"))
}

#[cfg(test)]
mod tests;
