//! Change-tracking baselines: for each team, URL and tag, the Markdown of the most recent
//! scrape and when it happened. Histories of different tags (and the untagged one) are
//! independent, and teams never see each other's.

use serde::{Deserialize, Serialize};

use super::{Result, codec};
use crate::model::TeamId;

/// The previous scrape a new one is compared with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Baseline {
    /// Its Markdown.
    pub markdown: String,
    /// When it was scraped (epoch ms).
    pub scraped_ms: u64,
}

/// Typed access to the `change_history` tree.
#[derive(Debug, Clone)]
pub struct HistoryStore {
    tree: sled::Tree,
}

impl HistoryStore {
    pub(super) fn new(tree: sled::Tree) -> Self {
        Self { tree }
    }

    fn key(team: &TeamId, url: &str, tag: Option<&str>) -> [u8; 32] {
        let tag_part: &[u8] = match tag {
            Some(t) => t.as_bytes(),
            None => b"\0untagged",
        };
        codec::digest(&[b"history", team.as_str().as_bytes(), url.as_bytes(), tag_part])
    }

    /// Replaces the baseline and returns the one it replaced, in one atomic step.
    pub fn swap(
        &self,
        team: &TeamId,
        url: &str,
        tag: Option<&str>,
        next: &Baseline,
    ) -> Result<Option<Baseline>> {
        let previous = self.tree.insert(Self::key(team, url, tag), codec::encode(next)?)?;
        previous.map(|bytes| codec::decode(&bytes)).transpose().map_err(Into::into)
    }

    /// The current baseline without replacing it.
    pub fn get(&self, team: &TeamId, url: &str, tag: Option<&str>) -> Result<Option<Baseline>> {
        let bytes = self.tree.get(Self::key(team, url, tag))?;
        bytes.map(|b| codec::decode(&b)).transpose().map_err(Into::into)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    #[test]
    fn tags_and_teams_have_separate_histories() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        let a = TeamId::parse("a").expect("team");
        let b = TeamId::parse("b").expect("team");
        let first = Baseline { markdown: "one".into(), scraped_ms: 1 };
        let second = Baseline { markdown: "two".into(), scraped_ms: 2 };
        assert_eq!(store.history.swap(&a, "u", None, &first).expect("swap"), None);
        assert_eq!(store.history.swap(&a, "u", None, &second).expect("swap"), Some(first.clone()));
        assert_eq!(store.history.get(&a, "u", Some("t")).expect("get"), None);
        assert_eq!(store.history.get(&b, "u", None).expect("get"), None);
        assert_eq!(store.history.get(&a, "u", None).expect("get"), Some(second));
    }
}
