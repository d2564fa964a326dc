//! What the browser supervisor, its session actors and the API share about interact
//! sessions: a session's public face ([`SessionView`]), how one is named ([`SessionKey`]) and
//! found ([`Found`]), what a live-view token grants ([`LiveAccess`]), how long a session ran
//! and what it cost ([`Ended`]), and its tokens.

use ractor::ActorRef;

use super::session::SessionMsg;
use crate::model::JobId;

/// Credits per hour of session time (contract §14.7).
pub const CREDITS_PER_HOUR: u64 = 120;
/// The least a session costs.
pub const MIN_CREDITS: u64 = 2;
/// Credits per hour of a session an agent `prompt` ran in.
pub const PROMPTED_CREDITS_PER_HOUR: u64 = 420;
/// The least such a session costs.
pub const PROMPTED_MIN_CREDITS: u64 = 7;

/// Credits billed for a session that lasted `duration_ms` (`prompted`: an agent prompt ran
/// in it).
pub fn credits_for(duration_ms: u64, prompted: bool) -> u64 {
    let (rate, least) = if prompted {
        (PROMPTED_CREDITS_PER_HOUR, PROMPTED_MIN_CREDITS)
    } else {
        (CREDITS_PER_HOUR, MIN_CREDITS)
    };
    duration_ms.saturating_mul(rate).div_ceil(3_600_000).max(least)
}

/// A live session as its owner sees it.
#[derive(Debug, Clone)]
pub struct SessionView {
    /// The session's own id.
    pub session_id: String,
    /// The scrape job it was made for.
    pub scrape_id: JobId,
    /// The actor running its code.
    pub actor: ActorRef<SessionMsg>,
    /// Token of the read-only live view.
    pub view_token: String,
    /// Token of the interactive live view.
    pub control_token: String,
}

/// A session's lifetimes and live view as its request set them; `None`: the server's
/// `browser.session_max_secs` and `browser.session_idle_secs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Longest life.
    pub ttl: Option<std::time::Duration>,
    /// Longest time without a request.
    pub idle: Option<std::time::Duration>,
    /// Whether the live view streams.
    pub stream_web_view: bool,
}

impl Default for Limits {
    fn default() -> Self {
        Self { ttl: None, idle: None, stream_web_view: true }
    }
}

/// A session as `GET /v2/browser` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// Its id.
    pub id: String,
    /// Live (else destroyed).
    pub active: bool,
    /// Token of the read-only live view.
    pub view_token: String,
    /// Token of the interactive live view.
    pub control_token: String,
    /// Whether the live view streams.
    pub stream_web_view: bool,
    /// When it was made (ms since the epoch).
    pub created_ms: u64,
    /// Its last request (ms since the epoch).
    pub last_activity_ms: u64,
}

/// How a session ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ended {
    /// From creation to destruction.
    pub duration_ms: u64,
    /// What it cost.
    pub credits: u64,
    /// Whether closing its tab (and saving its profile) was handed to its actor: false when
    /// there was nothing left to close because its actor or its browser had already died.
    pub cleanup_queued: bool,
}

/// Which session a request names.
#[derive(Debug, Clone)]
pub enum SessionKey {
    /// By its scrape job.
    Scrape(JobId),
    /// By session id.
    Session(String),
}

/// A session's state as found by its scrape id.
#[derive(Debug, Clone)]
pub enum Found {
    /// Running.
    Active(SessionView),
    /// Destroyed (a POST is answered 410).
    Destroyed,
}

/// What a live-view token grants: the session's actor, which owns its page and takes
/// frame and input requests ([`SessionMsg::Frame`], [`SessionMsg::Input`]).
#[derive(Debug, Clone)]
pub struct LiveAccess {
    /// The session's actor.
    pub session: ActorRef<SessionMsg>,
    /// Whether input may be sent.
    pub interactive: bool,
    /// Whether the screen streams (`streamWebView`); else the view asks for frames.
    pub stream: bool,
}

/// A random token of 32 hex digits; in a cluster the first 8 are this node's tag (see
/// [`tag_of_token`]), the other 24 random.
pub fn token(tag: Option<u32>) -> String {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("the system's random source");
    if let Some(tag) = tag {
        bytes[..4].copy_from_slice(&tag.to_be_bytes());
    }
    hex::encode(bytes)
}

/// The node tag a live-view token starts with (random for a token made alone).
pub fn tag_of_token(token: &str) -> Option<u32> {
    let bytes = hex::decode(token.get(..8)?).ok()?;
    Some(u32::from_be_bytes(bytes.try_into().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_bill_by_the_hour_with_a_minimum() {
        assert_eq!(credits_for(0, false), 2);
        assert_eq!(credits_for(60_000, false), 2);
        assert_eq!(credits_for(3_600_000, false), 120);
        assert_eq!(credits_for(3_600_001, false), 121);
        assert_eq!(credits_for(60_000, true), 7);
        assert_eq!(credits_for(3_600_000, true), 420);
        assert_ne!(token(None), token(None));
        assert_eq!(token(None).len(), 32);
        let tagged = token(Some(0xdead_beef));
        assert_eq!(tag_of_token(&tagged), Some(0xdead_beef));
        assert_ne!(tagged, token(Some(0xdead_beef)), "the rest stays random");
        assert_eq!(tag_of_token("xyz"), None);
    }
}
