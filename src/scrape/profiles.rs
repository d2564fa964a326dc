//! Where a scrape's browser profile is read and saved: this node's store, or in a cluster
//! the node that keeps the profile (a [`ProfileKeeper`], which the layer carrying messages
//! between nodes implements), so a profile saved through one node is the one every node's
//! Chromium starts from.

use futures::future::BoxFuture;

use super::{ScrapeError, Scraper};
use crate::model::TeamId;
use crate::store::profiles::ProfileState;

/// Keeps profiles somewhere other than this node's store.
pub trait ProfileKeeper: Send + Sync + std::fmt::Debug {
    /// The saved state of the team's profile `name`, if any.
    fn get<'a>(
        &'a self,
        team: &'a TeamId,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Option<ProfileState>, String>>;
    /// Saves the team's profile `name`.
    fn put<'a>(
        &'a self,
        team: &'a TeamId,
        name: &'a str,
        state: &'a ProfileState,
    ) -> BoxFuture<'a, Result<(), String>>;
}

impl Scraper {
    /// The team's profile `name`; when its keeper does not answer, this node's copy, and a
    /// warning saying so.
    pub(super) async fn load_profile(
        &self,
        team: &TeamId,
        name: &str,
        warnings: &mut Vec<String>,
    ) -> Result<Option<ProfileState>, ScrapeError> {
        if let Some(keeper) = &self.profiles {
            match keeper.get(team, name).await {
                Ok(state) => return Ok(state),
                Err(e) => warnings.push(format!(
                    "The node keeping profile `{name}` did not answer ({e}); this node's copy of it was used."
                )),
            }
        }
        Ok(self.store.profiles.get(team, name)?)
    }

    /// Saves the team's profile `name`; when its keeper does not answer, in this node's
    /// store, and a warning saying so.
    pub(super) async fn save_profile(
        &self,
        team: &TeamId,
        name: &str,
        state: &ProfileState,
        warnings: &mut Vec<String>,
    ) -> Result<(), ScrapeError> {
        if let Some(keeper) = &self.profiles {
            match keeper.put(team, name, state).await {
                Ok(()) => return Ok(()),
                Err(e) => warnings.push(format!(
                    "The node keeping profile `{name}` did not answer ({e}); the profile was saved on this node only."
                )),
            }
        }
        Ok(self.store.profiles.put(team, name, state)?)
    }
}
