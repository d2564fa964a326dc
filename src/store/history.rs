//! Change-tracking baselines: for each team, URL and tag, the Markdown of the most recent
//! scrape and when it happened, and (in a tree of its own, as plain JSON) what the json
//! mode extracted from it last. Histories of different tags (and the untagged one) are
//! independent, and teams never see each other's.

use serde::{Deserialize, Serialize};

use super::quarantine::Quarantine;
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

codec::records!(Baseline => 1);

/// Typed access to the `change_history` tree.
#[derive(Debug, Clone)]
pub struct HistoryStore {
    tree: sled::Tree,
    extracted: sled::Tree,
    q: Quarantine,
}

impl HistoryStore {
    pub(super) fn new(tree: sled::Tree, extracted: sled::Tree, q: Quarantine) -> Self {
        Self { tree, extracted, q }
    }

    /// Replaces the last extraction of the json mode (JSON text) and returns the one it
    /// replaced.
    pub fn swap_extracted(
        &self,
        team: &TeamId,
        url: &str,
        tag: Option<&str>,
        json: &[u8],
    ) -> Result<Option<Vec<u8>>> {
        Ok(self.extracted.insert(Self::key(team, url, tag), json)?.map(|v| v.to_vec()))
    }

    /// The last extraction of the json mode, without replacing it.
    pub fn extracted(&self, team: &TeamId, url: &str, tag: Option<&str>) -> Result<Option<Vec<u8>>> {
        Ok(self.extracted.get(Self::key(team, url, tag))?.map(|v| v.to_vec()))
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
        let key = Self::key(team, url, tag);
        let Some(previous) = self.tree.insert(key, codec::encode(next)?)? else { return Ok(None) };
        match codec::decode(&previous) {
            Ok(baseline) => Ok(Some(baseline)),
            // The replaced value is kept in quarantine, not lost.
            Err(e) => self.q.keep(&self.tree, &key, &previous, &e).map(|()| None),
        }
    }

    /// The current baseline without replacing it.
    pub fn get(&self, team: &TeamId, url: &str, tag: Option<&str>) -> Result<Option<Baseline>> {
        self.q.get(&self.tree, &Self::key(team, url, tag))
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
        assert_eq!(store.history.swap_extracted(&a, "u", None, b"{}").expect("swap"), None);
        assert_eq!(store.history.extracted(&a, "u", None).expect("get").as_deref(), Some(&b"{}"[..]));
        assert_eq!(store.history.extracted(&b, "u", None).expect("get"), None);
    }
}
