//! Job events as webhook deliveries (contract §5): `{kind}.started`, `{kind}.page` (one per
//! finished page; `success: false` with the error for a failed one), `{kind}.completed`
//! (also after a cancel, with `data: []`) and `{kind}.failed`, where kind is `crawl` or
//! `batch_scrape` (extract and agent jobs build theirs with [`event`]). Each gets its own
//! `webhookId` and echoes the caller's metadata. An event is only built when the job has a
//! webhook that wants it.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::value::RawValue;

use crate::model::{CrawlOptions, EventKind, JobId, WebhookSpec, time};
use crate::store::jobs::{JobKind, JobRecord};
use crate::store::outbox::{Delivery, NewEvent, Outbox};
use crate::store::{JobStore, StoreError};

/// What a page event reports.
#[derive(Debug, Clone, Copy)]
pub enum PageReport<'a> {
    /// The stored document's JSON.
    Done(&'a [u8]),
    /// The URL that failed and why.
    Failed {
        /// Source URL.
        url: &'a str,
        /// Error text.
        error: &'a str,
    },
}

#[derive(Serialize)]
struct Body<'a> {
    success: bool,
    #[serde(rename = "type")]
    kind: String,
    id: String,
    #[serde(rename = "webhookId")]
    webhook_id: String,
    data: Vec<&'a RawValue>,
    metadata: BTreeMap<&'a str, &'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a str>,
}

fn prefix(kind: JobKind) -> &'static str {
    match kind {
        JobKind::Crawl => "crawl",
        JobKind::Batch => "batch_scrape",
    }
}

fn build(
    jobs: &JobStore,
    id: JobId,
    record: &JobRecord,
    kind: EventKind,
    success: bool,
    data: Vec<&RawValue>,
    error: Option<&str>,
) -> Result<Option<NewEvent>, StoreError> {
    let Some(spec) = record.options.webhook.as_ref() else { return Ok(None) };
    let about = Job { outbox: jobs.outbox(), id, team: &record.team, spec, kind: prefix(record.kind) };
    event(&about, kind, success, data, error)
}

/// The job an event reports on, for [`event`].
#[derive(Debug, Clone, Copy)]
pub struct Job<'a> {
    /// The outbox the event goes to (for its sequence number).
    pub outbox: &'a Outbox,
    /// The job.
    pub id: JobId,
    /// Its team.
    pub team: &'a str,
    /// Its webhook.
    pub spec: &'a WebhookSpec,
    /// The events' prefix: `crawl`, `batch_scrape`, `extract`, `agent`.
    pub kind: &'a str,
}

/// The `{job.kind}.{kind}` event of `job`, when its webhook wants that kind.
pub fn event(
    job: &Job<'_>,
    kind: EventKind,
    success: bool,
    data: Vec<&RawValue>,
    error: Option<&str>,
) -> Result<Option<NewEvent>, StoreError> {
    if !job.spec.wants(kind) {
        return Ok(None);
    }
    let webhook_id = JobId::new().to_string();
    let body = Body {
        success,
        kind: format!("{}.{}", job.kind, kind.as_str()),
        id: job.id.to_string(),
        webhook_id: webhook_id.clone(),
        data,
        metadata: job.spec.metadata.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect(),
        error,
    };
    let now = time::now_ms();
    Ok(Some(NewEvent {
        seq: job.outbox.next_seq()?,
        delivery: Delivery {
            webhook_id,
            job: job.id,
            team: job.team.to_owned(),
            url: job.spec.url.clone(),
            headers: job.spec.headers.clone(),
            created_ms: now,
            attempts: 0,
            next_attempt_ms: now,
        },
        body: serde_json::to_vec(&body)?,
    }))
}

/// `{kind}.started`.
pub fn started(jobs: &JobStore, id: JobId, record: &JobRecord) -> Result<Option<NewEvent>, StoreError> {
    build(jobs, id, record, EventKind::Started, true, Vec::new(), None)
}

/// `{kind}.completed` for a job that completed or was cancelled, `{kind}.failed` otherwise.
pub fn ended(
    jobs: &JobStore,
    id: JobId,
    record: &JobRecord,
    failed: Option<&str>,
) -> Result<Option<NewEvent>, StoreError> {
    match failed {
        None => build(jobs, id, record, EventKind::Completed, true, Vec::new(), None),
        Some(error) => build(jobs, id, record, EventKind::Failed, false, Vec::new(), Some(error)),
    }
}

/// Ends job `id` with `status` (and `error` for a failure), queuing its `completed` or
/// `failed` event in the same step. A job that already ended is left as it was.
pub fn end(
    jobs: &JobStore,
    id: JobId,
    status: crate::model::JobStatus,
    error: Option<&str>,
) -> Result<Option<JobRecord>, StoreError> {
    let Some(record) = jobs.record(id)? else { return Ok(None) };
    if record.status.is_terminal() {
        return Ok(Some(record));
    }
    let event = ended(jobs, id, &record, error.filter(|_| status == crate::model::JobStatus::Failed))?;
    let ended = jobs.finish(id, status, time::now_ms(), error, event.as_ref())?;
    metrics::counter!("jobs_finished_total", "kind" => record.kind.label(), "status" => status.as_str())
        .increment(1);
    Ok(ended)
}

/// Whether the job's webhook wants an event per page.
pub fn page_events_wanted(options: &CrawlOptions) -> bool {
    options.webhook.as_ref().is_some_and(|s| s.wants(EventKind::Page))
}

/// `{kind}.page`.
pub fn page(
    jobs: &JobStore,
    id: JobId,
    record: &JobRecord,
    report: PageReport<'_>,
) -> Result<Option<NewEvent>, StoreError> {
    if !page_events_wanted(&record.options) {
        return Ok(None);
    }
    match report {
        PageReport::Done(document) => {
            let raw: &RawValue = serde_json::from_slice(document)?;
            build(jobs, id, record, EventKind::Page, true, vec![raw], None)
        }
        PageReport::Failed { url, error } => {
            let stub = serde_json::to_string(&serde_json::json!({"metadata": {"sourceURL": url}}))?;
            let raw = RawValue::from_string(stub)?;
            build(jobs, id, record, EventKind::Page, false, vec![&raw], Some(error))
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::model::{CrawlOptions, JobStatus, WebhookSpec};
    use crate::store::Store;

    /// A running batch whose webhook wants `events` (all when empty).
    pub(in crate::actors) fn record(events: Vec<EventKind>) -> JobRecord {
        JobRecord {
            kind: JobKind::Batch,
            team: "t".into(),
            url: "http://a.test/".into(),
            options: CrawlOptions {
                webhook: Some(WebhookSpec {
                    url: "http://hooks.test/in".into(),
                    metadata: vec![("run".into(), "42".into())],
                    events,
                    ..Default::default()
                }),
                ..Default::default()
            },
            status: JobStatus::Scraping,
            created_ms: 0,
            expires_ms: 0,
            finished_ms: None,
            error: None,
        }
    }

    #[test]
    fn event_bodies_follow_the_contract() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        let id = JobId::new();
        let r = record(Vec::new());
        let done =
            page(&store.jobs, id, &r, PageReport::Done(br#"{"markdown":"hi"}"#)).expect("ok").expect("event");
        let body: serde_json::Value = serde_json::from_slice(&done.body).expect("json");
        assert_eq!(body["type"], "batch_scrape.page");
        assert_eq!(body["success"], true);
        assert_eq!(body["id"], id.to_string());
        assert_eq!(body["data"], serde_json::json!([{"markdown": "hi"}]));
        assert_eq!(body["metadata"], serde_json::json!({"run": "42"}));
        assert_eq!(body["webhookId"], done.delivery.webhook_id);
        let failed = page(&store.jobs, id, &r, PageReport::Failed { url: "http://a.test/x", error: "boom" })
            .expect("ok")
            .expect("event");
        let body: serde_json::Value = serde_json::from_slice(&failed.body).expect("json");
        assert_eq!((body["success"].as_bool(), body["error"].as_str()), (Some(false), Some("boom")));
        assert_eq!(body["data"][0]["metadata"]["sourceURL"], "http://a.test/x");
        let end = ended(&store.jobs, id, &r, None).expect("ok").expect("event");
        let body: serde_json::Value = serde_json::from_slice(&end.body).expect("json");
        assert_eq!(
            (body["type"].as_str(), &body["data"]),
            (Some("batch_scrape.completed"), &serde_json::json!([]))
        );
        assert_ne!(end.delivery.webhook_id, failed.delivery.webhook_id);
    }

    #[test]
    fn the_filter_and_missing_webhooks_build_nothing() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        let only_completed = record(vec![EventKind::Completed]);
        assert!(started(&store.jobs, JobId::new(), &only_completed).expect("ok").is_none());
        let mut none = only_completed.clone();
        none.options.webhook = None;
        assert!(ended(&store.jobs, JobId::new(), &none, None).expect("ok").is_none());
    }
}
