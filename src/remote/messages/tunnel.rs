//! The `Tunnel` channel: a DevTools connection or a live view's screen stream of a browser
//! session another node holds, carried through this node call by call.

use serde::{Deserialize, Serialize};

/// What a node asks the session's node.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Request {
    /// Open `path` (`/v2/cdp/…`) on that node's API with the client's WebSocket `key`.
    Open {
        /// The path.
        path: String,
        /// The client's `Sec-WebSocket-Key`.
        key: String,
    },
    /// Write the client's bytes.
    Write(u64, #[serde(with = "serde_bytes")] Vec<u8>),
    /// What the endpoint sent since the last read.
    Read(u64),
    /// The client left.
    Close(u64),
    /// GET `path` (`/v2/live/…/stream`) on that node's API, its body read as it comes.
    Get {
        /// The path.
        path: String,
    },
}

/// The answers.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Response {
    /// The endpoint accepted: the tunnel's id, its `Sec-WebSocket-Accept` (for a `Get`, its
    /// content type), and bytes that came after its handshake answer.
    Opened(u64, String, #[serde(with = "serde_bytes")] Vec<u8>),
    /// The endpoint answered without switching protocols: its status and body (JSON).
    Refused(u16, #[serde(with = "serde_bytes")] Vec<u8>),
    /// Bytes the endpoint sent (none yet when empty).
    Bytes(#[serde(with = "serde_bytes")] Vec<u8>),
    /// The connection is closed.
    Ended,
    /// Written, or closed.
    Done,
}
