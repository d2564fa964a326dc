//! `ferrocrawl store check`: reads every value of every tree of a data directory with the
//! type it is stored as, and lists the records held in quarantine. Nothing is changed.

use super::codec::{self, CodecError, Record};
use super::jobs::{self, Counters, ErrorEntry, JobRecord, QueueEntry};
use super::outbox::{self, Delivery};
use super::quarantine::QuarantinedRecord;
use super::{Result, Store, trees};

/// A value that did not decode.
#[derive(Debug, Clone)]
pub struct Failure {
    /// Its tree.
    pub tree: String,
    /// Its key, hex-encoded.
    pub key: String,
    /// Why.
    pub error: String,
}

/// What a check found.
#[derive(Debug, Default)]
pub struct Report {
    /// Each tree with the number of values read.
    pub trees: Vec<(String, usize)>,
    /// Values that did not decode.
    pub failures: Vec<Failure>,
    /// Records in quarantine.
    pub quarantined: Vec<QuarantinedRecord>,
}

impl Report {
    /// Whether every value decodes and nothing is in quarantine.
    pub fn is_clean(&self) -> bool {
        self.failures.is_empty() && self.quarantined.is_empty()
    }
}

fn typed<T: Record>(bytes: &[u8]) -> std::result::Result<(), CodecError> {
    codec::decode::<T>(bytes).map(drop)
}

fn json(bytes: &[u8]) -> std::result::Result<(), CodecError> {
    serde_json::from_slice::<serde::de::IgnoredAny>(bytes).map(drop).map_err(CodecError::from)
}

/// How the values of the tree called `name` are read.
fn reader(name: &str) -> fn(&[u8]) -> std::result::Result<(), CodecError> {
    match name {
        trees::API_KEYS => typed::<super::keys::KeyRecord>,
        trees::SCRAPES => |b| {
            let record: super::ScrapeRecord = codec::decode(b)?;
            json(&record.document_json)
        },
        trees::PAGE_CACHE => typed::<super::page_cache::StoredPage>,
        trees::CHANGE_HISTORY => typed::<super::Baseline>,
        trees::TEAMS => typed::<super::teams::TeamRecord>,
        trees::LEDGER | trees::TOKENS => typed::<u64>,
        trees::LLM_JOBS => typed::<super::llm_jobs::LlmJobRecord>,
        trees::REPORTS => typed::<super::reports::Report>,
        trees::ACTIVITY => typed::<super::activity::ActivityRecord>,
        trees::FILES => typed::<super::files::StoredFile>,
        trees::PROFILES => typed::<super::profiles::ProfileState>,
        trees::REPLAYS => |b| {
            let record: super::replays::ReplayRecord = codec::decode(b)?;
            serde_json::from_slice::<crate::model::ScrapeOptions>(&record.options_json)
                .map(drop)
                .map_err(CodecError::from)
        },
        trees::BROWSER_SESSIONS => typed::<super::browser_sessions::SessionRecord>,
        trees::QUARANTINE => typed::<QuarantinedRecord>,
        jobs::trees::JOBS => typed::<JobRecord>,
        jobs::trees::COUNTERS => typed::<Counters>,
        jobs::trees::QUEUE => typed::<QueueEntry>,
        jobs::trees::ERRORS => typed::<ErrorEntry>,
        outbox::trees::OUTBOX => typed::<Delivery>,
        jobs::trees::PAGES | outbox::trees::BODIES | trees::CHANGE_EXTRACTED => json,
        jobs::trees::BLOCKED => {
            |b| std::str::from_utf8(b).map(drop).map_err(|e| CodecError::Json(serde::de::Error::custom(e)))
        }
        trees::IDEMPOTENCY => |b| match b.len() {
            16 => Ok(()),
            n => Err(CodecError::Json(serde::de::Error::custom(format!("a job id of {n} bytes")))),
        },
        trees::INDEX_BACKLOG | trees::INDEX_HELD => |b| match b.len() {
            32 => Ok(()),
            n => Err(CodecError::Json(serde::de::Error::custom(format!("a cache key of {n} bytes")))),
        },
        // Keys only (the seen-set), the store's own facts, sled's default tree.
        _ => |_| Ok(()),
    }
}

/// Reads every value of every tree of `store`.
pub fn run(store: &Store) -> Result<Report> {
    let mut report = Report::default();
    for name in store.db.tree_names() {
        let name = String::from_utf8_lossy(&name).into_owned();
        let tree = store.db.open_tree(&name)?;
        let read = reader(&name);
        let mut count = 0;
        for item in tree.iter() {
            let (key, value) = item?;
            count += 1;
            if let Err(e) = read(&value) {
                report.failures.push(Failure {
                    tree: name.clone(),
                    key: hex::encode(&key),
                    error: e.to_string(),
                });
            }
        }
        report.trees.push((name, count));
    }
    report.quarantined = store.quarantine.list()?;
    Ok(report)
}
