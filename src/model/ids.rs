//! Identifiers: job ids are UUIDv7 (time-ordered, so sled keys sort by creation) and teams
//! are named by short strings chosen by the operator.

use std::fmt;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// The id of a scrape, crawl or batch job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct JobId(Uuid);

impl JobId {
    /// A fresh time-ordered id.
    pub fn new() -> Self {
        Self(Uuid::now_v7())
    }

    /// A fresh time-ordered id carrying `tag` (the accepting node's, in a cluster) in its
    /// last four bytes, so any node can tell which node owns the job.
    pub fn tagged(tag: u32) -> Self {
        let mut bytes = *Uuid::now_v7().as_bytes();
        bytes[12..].copy_from_slice(&tag.to_be_bytes());
        Self(Uuid::from_bytes(bytes))
    }

    /// The tag of an id made by [`JobId::tagged`] (any other id has a random one).
    pub fn tag(&self) -> u32 {
        let bytes = self.0.as_bytes();
        u32::from_be_bytes([bytes[12], bytes[13], bytes[14], bytes[15]])
    }

    /// Parses a job id from a path segment; `None` when it is not a UUID.
    pub fn parse(text: &str) -> Option<Self> {
        Uuid::parse_str(text).ok().map(Self)
    }

    /// The id stored as 16 bytes; `None` for any other length.
    pub fn from_bytes(bytes: &[u8]) -> Option<Self> {
        Uuid::from_slice(bytes).ok().map(Self)
    }

    /// The 16 big-endian bytes used as a sled key.
    pub fn as_bytes(&self) -> &[u8; 16] {
        self.0.as_bytes()
    }
}

impl Default for JobId {
    fn default() -> Self {
        Self::new()
    }
}

impl JobId {
    /// The smallest id (all zero bits), a range bound.
    pub fn nil() -> Self {
        Self(Uuid::nil())
    }
}

impl fmt::Display for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.hyphenated().fmt(f)
    }
}

/// The team an API key belongs to; every job and result is owned by one team.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct TeamId(String);

impl TeamId {
    /// Longest accepted team name.
    pub const MAX_LEN: usize = 64;

    /// Validates a team name: 1..=64 characters of `[A-Za-z0-9_.-]`.
    pub fn parse(name: &str) -> Result<Self, String> {
        let ok_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.');
        if name.is_empty() || name.len() > Self::MAX_LEN || !name.chars().all(ok_char) {
            return Err(format!(
                "team name `{name}` must be 1 to {} characters of letters, digits, `_`, `-` or `.`",
                Self::MAX_LEN
            ));
        }
        Ok(Self(name.to_owned()))
    }

    /// The team's name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for TeamId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_ids_round_trip_and_sort_by_time() {
        let tagged = JobId::tagged(0xDEAD_BEEF);
        assert_eq!(tagged.tag(), 0xDEAD_BEEF);
        assert_eq!(JobId::parse(&tagged.to_string()), Some(tagged), "still a UUID");
        let a = JobId::new();
        let b = JobId::new();
        assert!(a.as_bytes() <= b.as_bytes());
        assert_eq!(JobId::parse(&a.to_string()), Some(a));
        assert_eq!(JobId::parse("not-a-uuid"), None);
    }

    #[test]
    fn team_names_are_checked() {
        assert!(TeamId::parse("default").is_ok());
        assert!(TeamId::parse("team-2.prod_x").is_ok());
        assert!(TeamId::parse("").is_err());
        assert!(TeamId::parse("a b").is_err());
        assert!(TeamId::parse(&"x".repeat(65)).is_err());
    }
}
