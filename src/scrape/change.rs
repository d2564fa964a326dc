//! Change tracking: compare this scrape's Markdown (and, in json mode, what the model
//! extracted from it) with the team's previous scrape of the same URL and tag, then make
//! this scrape the new baseline (unless nothing may be stored).
//! A page on its own is `visible`; how a crawl reached it can make it `hidden`, which the
//! crawl decides when it settles the page (`actors::settle`).

use serde_json::{Map, Value, json};

use crate::extract::diff::{self, Comparison};
use crate::model::document::{ChangeStatus, Visibility};
use crate::model::{ChangeTracking, ChangeTrackingSpec, TeamId, time};
use crate::store::{Baseline, HistoryStore, StoreError};

/// What a scrape is compared by.
#[derive(Debug)]
pub struct Current<'a> {
    /// Its Markdown.
    pub markdown: &'a str,
    /// What the json mode extracted, when it is on.
    pub extracted: Option<&'a Value>,
    /// The HTTP status.
    pub status: u16,
}

/// Compares and records. `store` is false for zero-data-retention requests, which are
/// compared with the existing baseline but leave no trace.
pub fn track(
    history: &HistoryStore,
    team: &TeamId,
    url: &str,
    spec: &ChangeTrackingSpec,
    current: &Current<'_>,
    store: bool,
) -> Result<ChangeTracking, StoreError> {
    let (markdown, status) = (current.markdown, current.status);
    let tag = spec.tag.as_deref();
    let json = match current.extracted {
        Some(now) => {
            let text = serde_json::to_vec(now)?;
            let before = if store {
                history.swap_extracted(team, url, tag, &text)?
            } else {
                history.extracted(team, url, tag)?
            };
            let before = before.and_then(|b| serde_json::from_slice::<Value>(&b).ok());
            Some(changed_fields(before.as_ref(), now))
        }
        None => None,
    };
    let baseline = Baseline { markdown: markdown.to_owned(), scraped_ms: time::now_ms() };
    let previous =
        if store { history.swap(team, url, tag, &baseline)? } else { history.get(team, url, tag)? };
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
        json,
    })
}

/// The top-level fields whose value differs between `before` and `now`, as
/// `{field: {previous, current}}` (every field, with `previous` null, when there is no
/// earlier extraction; a value that is not an object is the field `value`).
pub fn changed_fields(before: Option<&Value>, now: &Value) -> Value {
    let as_map = |v: Option<&Value>| match v {
        Some(Value::Object(map)) => map.clone(),
        Some(Value::Null) | None => Map::new(),
        Some(other) => Map::from_iter([("value".to_owned(), other.clone())]),
    };
    let (before, now) = (as_map(before), as_map(Some(now)));
    let mut out = Map::new();
    for key in before.keys().chain(now.keys()) {
        let (previous, current) =
            (before.get(key).unwrap_or(&Value::Null), now.get(key).unwrap_or(&Value::Null));
        if previous != current && !out.contains_key(key) {
            out.insert(key.clone(), json!({"previous": previous, "current": current}));
        }
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_changed_fields_are_reported() {
        let before = json!({"price": 10, "name": "Widget", "gone": true});
        let now = json!({"price": 12, "name": "Widget", "new": "x"});
        assert_eq!(
            changed_fields(Some(&before), &now),
            json!({"price": {"previous": 10, "current": 12}, "gone": {"previous": true, "current": null},
                   "new": {"previous": null, "current": "x"}})
        );
        assert_eq!(changed_fields(None, &json!({"a": 1})), json!({"a": {"previous": null, "current": 1}}));
    }
}
