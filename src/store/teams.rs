//! Team records kept in the database (what the operator sets with the command line rather
//! than in the configuration): the secret that signs webhook deliveries and the monthly
//! credit plan.

use serde::{Deserialize, Serialize};

use super::quarantine::Quarantine;
use super::{Result, codec};
use crate::model::TeamId;

/// What is stored for a team.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TeamRecord {
    /// HMAC-SHA256 key for webhook signatures.
    pub webhook_secret: Option<String>,
    /// Monthly credits: `None` = as configured, `Some(None)` = unlimited, `Some(Some(n))` = n.
    pub credits: Option<Option<u64>>,
}

codec::records!(TeamRecord => 1);

/// Typed access to the `teams` tree.
#[derive(Debug, Clone)]
pub struct TeamStore {
    tree: sled::Tree,
    q: Quarantine,
}

impl TeamStore {
    pub(super) fn new(tree: sled::Tree, q: Quarantine) -> Self {
        Self { tree, q }
    }

    /// The team's record (empty when none was stored).
    pub fn get(&self, team: &TeamId) -> Result<TeamRecord> {
        Ok(self.q.get(&self.tree, team.as_str().as_bytes())?.unwrap_or_default())
    }

    /// Sets the monthly credit plan (`None`: unlimited).
    pub fn set_credits(&self, team: &TeamId, credits: Option<u64>) -> Result<()> {
        let mut record = self.get(team)?;
        record.credits = Some(credits);
        self.tree.insert(team.as_str(), codec::encode(&record)?)?;
        self.tree.flush()?;
        Ok(())
    }

    /// The secret that signs the team's webhook deliveries: the stored one, else
    /// `configured` (from the team's settings), else a new one, generated and stored now.
    /// Every team therefore signs every delivery, as on Firecrawl.
    pub fn webhook_secret(&self, team: &TeamId, configured: Option<&str>) -> Result<String> {
        loop {
            let current = self.tree.get(team.as_str())?;
            let mut record = match &current {
                Some(bytes) => {
                    match self.q.read::<TeamRecord>(&self.tree, team.as_str().as_bytes(), bytes)? {
                        Some(record) => record,
                        // Quarantined: the team starts again from an empty record.
                        None => continue,
                    }
                }
                None => TeamRecord::default(),
            };
            if let Some(secret) = record.webhook_secret {
                return Ok(secret);
            }
            if let Some(secret) = configured {
                return Ok(secret.to_owned());
            }
            let secret = new_webhook_secret();
            record.webhook_secret = Some(secret.clone());
            let swapped =
                self.tree.compare_and_swap(team.as_str(), current, Some(codec::encode(&record)?))?;
            if swapped.is_ok() {
                self.tree.flush()?;
                return Ok(secret);
            }
            // Another writer got there first: read what it stored.
        }
    }

    /// Sets the webhook secret.
    pub fn set_webhook_secret(&self, team: &TeamId, secret: &str) -> Result<()> {
        let mut record = self.get(team)?;
        record.webhook_secret = Some(secret.to_owned());
        self.tree.insert(team.as_str(), codec::encode(&record)?)?;
        self.tree.flush()?;
        Ok(())
    }
}

/// A new random webhook secret (`whsec-` and 32 hex digits).
pub fn new_webhook_secret() -> String {
    super::keys::generate_key().replacen("fc-", "whsec-", 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    #[test]
    fn secrets_are_per_team() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        let a = TeamId::parse("a").expect("team");
        assert_eq!(store.teams.get(&a).expect("get").webhook_secret, None);
        store.teams.set_webhook_secret(&a, "s3cret").expect("set");
        assert_eq!(store.teams.get(&a).expect("get").webhook_secret.as_deref(), Some("s3cret"));
        assert_eq!(store.teams.get(&TeamId::parse("b").expect("team")).expect("get"), TeamRecord::default());
    }

    #[test]
    fn every_team_gets_a_lasting_secret_unless_one_is_configured() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        let (a, b) = (TeamId::parse("a").expect("team"), TeamId::parse("b").expect("team"));
        assert_eq!(store.teams.webhook_secret(&a, Some("from-config")).expect("secret"), "from-config");
        let made = store.teams.webhook_secret(&b, None).expect("secret");
        assert!(made.starts_with("whsec-") && made.len() > 30, "{made}");
        assert_eq!(store.teams.webhook_secret(&b, None).expect("again"), made, "kept");
        assert_eq!(store.teams.webhook_secret(&b, Some("from-config")).expect("stored wins"), made);
        store.teams.set_webhook_secret(&b, "replaced-secret-value").expect("set");
        assert_eq!(store.teams.webhook_secret(&b, None).expect("replaced"), "replaced-secret-value");
    }
}
