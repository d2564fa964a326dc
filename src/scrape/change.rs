//! Change tracking: compare this scrape's Markdown with the team's previous scrape of the
//! same URL and tag, then make this scrape the new baseline (unless nothing may be stored).
//! A page on its own is `visible`; how a crawl reached it can make it `hidden`, which the
//! crawl decides when it settles the page (`actors::settle`).

use crate::extract::diff::{self, Comparison};
use crate::model::document::{ChangeStatus, Visibility};
use crate::model::{ChangeTracking, ChangeTrackingSpec, TeamId, time};
use crate::store::{Baseline, HistoryStore, StoreError};

/// Compares and records. `store` is false for zero-data-retention requests, which are
/// compared with the existing baseline but leave no trace.
pub fn track(
    history: &HistoryStore,
    team: &TeamId,
    url: &str,
    spec: &ChangeTrackingSpec,
    markdown: &str,
    status: u16,
    store: bool,
) -> Result<ChangeTracking, StoreError> {
    let tag = spec.tag.as_deref();
    let current = Baseline { markdown: markdown.to_owned(), scraped_ms: time::now_ms() };
    let previous =
        if store { history.swap(team, url, tag, &current)? } else { history.get(team, url, tag)? };
    let (change_status, diff) = match &previous {
        _ if status == 404 => (ChangeStatus::Removed, None),
        None => (ChangeStatus::New, None),
        Some(before) => match diff::compare(&before.markdown, markdown) {
            Comparison::Same => (ChangeStatus::Same, None),
            Comparison::Changed { diff } => (ChangeStatus::Changed, Some(diff)),
        },
    };
    Ok(ChangeTracking {
        previous_scrape_at: previous.map(|p| time::iso_ms(p.scraped_ms)),
        change_status,
        visibility: Visibility::Visible,
        diff: if spec.git_diff { diff } else { None },
    })
}
