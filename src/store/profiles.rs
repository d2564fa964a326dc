//! Persistent browser profiles: the cookies and local storage a team saved under a profile
//! name, shared by its scrapes and interact sessions. Key: team, NUL, name.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::quarantine::Quarantine;
use super::{Result, codec};
use crate::model::TeamId;

/// One saved cookie.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredCookie {
    /// Name.
    pub name: String,
    /// Value.
    pub value: String,
    /// Domain (leading dot for domain cookies).
    pub domain: String,
    /// Path.
    pub path: String,
    /// Expiry in epoch seconds; `None` for session cookies.
    pub expires: Option<i64>,
    /// HTTPS only.
    pub secure: bool,
    /// Hidden from scripts.
    pub http_only: bool,
}

/// What a profile holds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProfileState {
    /// Cookies of every site visited.
    pub cookies: Vec<StoredCookie>,
    /// Local storage per origin, as (key, value) pairs.
    pub local_storage: BTreeMap<String, Vec<(String, String)>>,
}

codec::records!(ProfileState => 1);

/// Typed access to the profiles tree.
#[derive(Debug, Clone)]
pub struct ProfileStore {
    tree: sled::Tree,
    q: Quarantine,
}

impl ProfileStore {
    pub(super) fn new(tree: sled::Tree, q: Quarantine) -> Self {
        Self { tree, q }
    }

    fn key(team: &TeamId, name: &str) -> Vec<u8> {
        let mut key = team.as_str().as_bytes().to_vec();
        key.push(0);
        key.extend_from_slice(name.as_bytes());
        key
    }

    /// The saved state of a profile, if any.
    pub fn get(&self, team: &TeamId, name: &str) -> Result<Option<ProfileState>> {
        self.q.get(&self.tree, &Self::key(team, name))
    }

    /// Saves a profile's state.
    pub fn put(&self, team: &TeamId, name: &str, state: &ProfileState) -> Result<()> {
        self.tree.insert(Self::key(team, name), codec::encode(state)?)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    #[test]
    fn profiles_are_per_team_and_name() {
        let dir = tempfile::tempdir().expect("dir");
        let store = Store::open(dir.path()).expect("store");
        let (a, b) = (TeamId::parse("a").expect("a"), TeamId::parse("b").expect("b"));
        let mut state = ProfileState::default();
        state.local_storage.insert("http://x.test".into(), vec![("k".into(), "v".into())]);
        store.profiles.put(&a, "main", &state).expect("put");
        assert_eq!(store.profiles.get(&a, "main").expect("get"), Some(state));
        assert_eq!(store.profiles.get(&b, "main").expect("get"), None);
        assert_eq!(store.profiles.get(&a, "other").expect("get"), None);
    }
}
