//! The cluster members an operator forgot (`DELETE /v2/cluster/members/{name}`), kept in the
//! `meta` tree so that a node restarted while they are still gone does not count them again
//! among the members that may be running (a forgotten seed would otherwise keep a node that
//! starts alone from fetching until that machine answered).

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::{Result, codec};

/// Key of the record in the `meta` tree.
const KEY: &str = "cluster/forgotten";

/// The cluster addresses (`host:port`) of the forgotten members.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Forgotten {
    addresses: Vec<String>,
}

codec::records!(Forgotten => 1);

/// Typed access to the forgotten members' record.
#[derive(Debug, Clone)]
pub struct ForgottenMembers {
    meta: sled::Tree,
}

impl ForgottenMembers {
    pub(super) fn new(meta: sled::Tree) -> Self {
        Self { meta }
    }

    /// The addresses kept, sorted (none when nothing was ever forgotten).
    pub fn load(&self) -> Result<Vec<String>> {
        match self.meta.get(KEY)? {
            Some(bytes) => Ok(codec::decode::<Forgotten>(&bytes)?.addresses),
            None => Ok(Vec::new()),
        }
    }

    /// Keeps `addresses` in place of what was kept, on disk before it returns.
    pub fn save(&self, addresses: &BTreeSet<String>) -> Result<()> {
        if addresses.is_empty() {
            self.meta.remove(KEY)?;
        } else {
            let addresses = addresses.iter().cloned().collect();
            self.meta.insert(KEY, codec::encode(&Forgotten { addresses })?)?;
        }
        self.meta.flush()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use crate::store::Store;

    fn set(addresses: &[&str]) -> BTreeSet<String> {
        addresses.iter().map(|a| (*a).to_owned()).collect()
    }

    #[test]
    fn forgotten_members_outlive_a_restart_until_met_again() {
        let dir = tempfile::tempdir().expect("tempdir");
        {
            let store = Store::open(dir.path()).expect("open");
            assert_eq!(store.forgotten_members().load().expect("load"), Vec::<String>::new());
            store.forgotten_members().save(&set(&["10.0.0.2:4901", "10.0.0.1:4901"])).expect("save");
        }
        let store = Store::open(dir.path()).expect("reopen");
        let found = store.forgotten_members().load().expect("load");
        assert_eq!(found, ["10.0.0.1:4901", "10.0.0.2:4901"]);
        store.forgotten_members().save(&set(&["10.0.0.2:4901"])).expect("save");
        assert_eq!(store.forgotten_members().load().expect("load"), ["10.0.0.2:4901"]);
        store.forgotten_members().save(&BTreeSet::new()).expect("save");
        assert_eq!(store.forgotten_members().load().expect("load"), Vec::<String>::new());
    }
}
