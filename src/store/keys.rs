//! API keys: only a SHA-256 hash of each key is stored, mapped to its team. A leaked
//! database does not leak usable keys.

use serde::{Deserialize, Serialize};

use super::quarantine::Quarantine;
use super::{Result, codec};
use crate::model::{TeamId, time};

/// What is stored for one key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyRecord {
    /// The team the key authenticates as.
    pub team: String,
    /// When the key was added.
    pub created_ms: u64,
}

codec::records!(KeyRecord => 1);

/// A key that was just created (the only time its value is known).
#[derive(Debug, Clone)]
pub struct NewKey {
    /// The secret to hand to the user.
    pub value: String,
    /// Its team.
    pub team: TeamId,
}

/// Typed access to the `api_keys` tree.
#[derive(Debug, Clone)]
pub struct KeyStore {
    tree: sled::Tree,
    q: Quarantine,
}

impl KeyStore {
    pub(super) fn new(tree: sled::Tree, q: Quarantine) -> Self {
        Self { tree, q }
    }

    fn key_of(value: &str) -> [u8; 32] {
        digest_of(value)
    }

    /// The team of the key whose digest is `digest` (see [`digest_of`]).
    pub fn team_of_digest(&self, digest: &[u8; 32]) -> Result<Option<TeamId>> {
        let record: Option<KeyRecord> = self.q.get(&self.tree, digest)?;
        Ok(record.and_then(|r| TeamId::parse(&r.team).ok()))
    }

    /// Whether no key exists yet.
    pub fn is_empty(&self) -> bool {
        self.tree.is_empty()
    }

    /// Adds `value` (or a freshly generated key) for `team`; replaces an identical key's team.
    pub fn add(&self, team: &TeamId, value: Option<&str>) -> Result<NewKey> {
        let value = value.map_or_else(generate_key, str::to_owned);
        let record = KeyRecord { team: team.as_str().to_owned(), created_ms: time::now_ms() };
        self.tree.insert(Self::key_of(&value), codec::encode(&record)?)?;
        self.tree.flush()?;
        Ok(NewKey { value, team: team.clone() })
    }

    /// The team of a presented key, if the key is known.
    pub fn team_of(&self, value: &str) -> Result<Option<TeamId>> {
        let record: Option<KeyRecord> = self.q.get(&self.tree, &Self::key_of(value))?;
        Ok(record.and_then(|r| TeamId::parse(&r.team).ok()))
    }
}

/// The digest a key is stored under (and asked for between nodes): the key itself is never
/// kept or sent.
pub fn digest_of(value: &str) -> [u8; 32] {
    codec::digest(&[b"api-key", value.as_bytes()])
}

/// A new random key: `fc-` and 32 hex digits (128 bits from the OS generator).
pub fn generate_key() -> String {
    let mut bytes = [0u8; 16];
    // The OS random source failing is unrecoverable for key generation.
    getrandom::fill(&mut bytes).expect("the operating system's random source is available");
    format!("fc-{}", hex::encode(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    #[test]
    fn keys_map_to_teams_and_are_stored_hashed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        assert!(store.keys.is_empty());
        let team = TeamId::parse("acme").expect("team");
        let generated = store.keys.add(&team, None).expect("add");
        assert!(generated.value.starts_with("fc-") && generated.value.len() == 35);
        store.keys.add(&team, Some("chosen-key")).expect("add");
        assert_eq!(store.keys.team_of("chosen-key").expect("get"), Some(team.clone()));
        assert_eq!(store.keys.team_of(&generated.value).expect("get"), Some(team));
        assert_eq!(store.keys.team_of("nope").expect("get"), None);
        store.flush().expect("flush");
        let raw = std::fs::read_dir(dir.path().join("db")).expect("dir");
        for entry in raw.flatten() {
            if entry.path().is_file() {
                let bytes = std::fs::read(entry.path()).expect("read");
                let hay = String::from_utf8_lossy(&bytes);
                assert!(!hay.contains("chosen-key"), "key stored in clear in {:?}", entry.path());
            }
        }
    }
}
