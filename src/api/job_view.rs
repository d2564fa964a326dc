//! The status view of a crawl or batch (`GET /v2/crawl/{id}`, contract §7.2): counts,
//! credits, times, a page of finished documents, and `next` — an absolute URL built from the
//! configured public URL or the request's (forwarded) scheme and host — present only while
//! more finished documents remain beyond this page.

use actix_web::{HttpRequest, HttpResponse};
use serde::Serialize;
use serde_json::json;
use serde_json::value::RawValue;

use super::error::ApiError;
use super::scrape::parse_job_id;
use super::{AppState, Authenticated};
use crate::model::{JobId, JobKind, JobStatus, time};
use crate::service::{self, JobPage};

/// Path segment of a job kind.
fn path_of(kind: JobKind) -> &'static str {
    match kind {
        JobKind::Crawl => "crawl",
        JobKind::Batch => "batch/scrape",
    }
}

/// `GET /v2/{crawl|batch/scrape}/{id}`.
pub async fn status_of(
    req: &HttpRequest,
    state: &AppState,
    auth: &Authenticated,
    id: &str,
    kind: JobKind,
) -> Result<HttpResponse, ApiError> {
    let id = parse_job_id(id)?;
    let paging = paging(req)?;
    let wanted = service::Paging { skip: paging.skip, limit: paging.limit, max_bytes: MAX_PAGE_BYTES };
    let (jobs, team) = (state.jobs.clone(), auth.team.clone());
    let page = state.off_worker(async move { Ok(jobs.page(&team, id, kind, wanted).await?) }).await?;
    Ok(status(req, state, path_of(kind), id, &page, paging))
}

/// `DELETE /v2/{crawl|batch/scrape}/{id}`: cancels; a finished job is a conflict.
pub async fn cancel_of(
    state: &AppState,
    auth: &Authenticated,
    id: &str,
    kind: JobKind,
) -> Result<HttpResponse, ApiError> {
    let (jobs, team, id) = (state.jobs.clone(), auth.team.clone(), parse_job_id(id)?);
    state.off_worker(async move { Ok(jobs.cancel(&team, id, kind).await?) }).await?;
    Ok(HttpResponse::Ok().json(json!({"success": true, "status": "cancelled"})))
}

#[derive(Serialize)]
struct ErrorItem {
    id: String,
    timestamp: String,
    url: String,
    code: String,
    error: String,
}

/// `GET /v2/{crawl|batch/scrape}/{id}/errors`: failed pages and robots-blocked URLs.
pub async fn errors_of(
    state: &AppState,
    auth: &Authenticated,
    id: &str,
    kind: JobKind,
) -> Result<HttpResponse, ApiError> {
    let (jobs, team, id) = (state.jobs.clone(), auth.team.clone(), parse_job_id(id)?);
    let found = state.off_worker(async move { Ok(jobs.errors(&team, id, kind).await?) }).await?;
    let errors: Vec<ErrorItem> = found
        .failed
        .into_iter()
        .map(|e| ErrorItem {
            id: e.id,
            timestamp: time::iso_ms(e.at_ms),
            url: e.url,
            code: e.code,
            error: e.error,
        })
        .collect();
    Ok(HttpResponse::Ok()
        .json(json!({"success": true, "errors": errors, "robotsBlocked": found.robots_blocked})))
}

/// Default documents per status page.
pub const DEFAULT_PAGE_SIZE: usize = 100;
/// Largest page size a caller may ask for.
pub const MAX_PAGE_SIZE: usize = 1000;
/// A page stops growing past this many bytes of documents.
pub const MAX_PAGE_BYTES: usize = 10 * 1024 * 1024;

/// Paging parameters of a status request.
#[derive(Debug, Clone, Copy)]
pub struct Paging {
    /// Documents to skip.
    pub skip: u64,
    /// Page size.
    pub limit: usize,
    /// Whether the caller set the page size (kept in `next`).
    pub explicit_limit: bool,
}

/// Reads `skip` and `limit` from the query string, naming a bad one.
pub fn paging(req: &HttpRequest) -> Result<Paging, ApiError> {
    let mut paging = Paging { skip: 0, limit: DEFAULT_PAGE_SIZE, explicit_limit: false };
    for (key, value) in url::form_urlencoded::parse(req.query_string().as_bytes()) {
        match key.as_ref() {
            "skip" => {
                paging.skip = value.parse().map_err(|_| {
                    ApiError::bad_request(format!(
                        "Invalid pagination: `skip` must be a non-negative integer (got `{value}`)"
                    ))
                })?;
            }
            "limit" => {
                let limit: usize = value.parse().map_err(|_| {
                    ApiError::bad_request(format!(
                        "Invalid pagination: `limit` must be an integer (got `{value}`)"
                    ))
                })?;
                if !(1..=MAX_PAGE_SIZE).contains(&limit) {
                    return Err(ApiError::bad_request(format!(
                        "Invalid pagination: `limit` must be between 1 and {MAX_PAGE_SIZE}"
                    )));
                }
                paging.limit = limit;
                paging.explicit_limit = true;
            }
            _ => {}
        }
    }
    Ok(paging)
}

/// The base URL clients should use to reach this server.
pub fn public_base(req: &HttpRequest, state: &AppState) -> String {
    match state.settings.public_url() {
        Some(base) => base.to_owned(),
        None => {
            let info = req.connection_info();
            format!("{}://{}", info.scheme(), info.host())
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct StatusBody<'a> {
    success: bool,
    status: &'static str,
    completed: u64,
    total: u64,
    credits_used: u64,
    expires_at: String,
    created_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    completed_at: Option<String>,
    duration: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    next: Option<String>,
    data: Vec<&'a RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    warning: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a str>,
}

/// Builds the status response of job `id` (`path` is `crawl` or `batch/scrape`).
fn status(
    req: &HttpRequest,
    state: &AppState,
    path: &str,
    id: JobId,
    page: &JobPage,
    paging: Paging,
) -> HttpResponse {
    let (record, counters) = (&page.job, &page.counts);
    let data: Vec<&RawValue> = page
        .documents
        .iter()
        .filter_map(|doc| std::str::from_utf8(doc.as_bytes()).ok())
        .filter_map(|text| serde_json::from_str::<&RawValue>(text).ok())
        .collect();
    let shown = paging.skip.saturating_add(page.documents.len() as u64);
    let next = (shown < counters.completed).then(|| {
        let mut url = format!("{}/v2/{path}/{id}?skip={shown}", public_base(req, state));
        if paging.explicit_limit {
            url.push_str(&format!("&limit={}", paging.limit));
        }
        url
    });
    let end_ms = record.finished_ms.unwrap_or_else(time::now_ms);
    let warning = (counters.blocked > 0).then(|| {
        format!(
            "{} page(s) were not crawled because robots.txt disallows them; see /errors",
            counters.blocked
        )
    });
    let failed = record.status == JobStatus::Failed && counters.completed == 0;
    let body = StatusBody {
        success: !failed,
        status: record.status.as_str(),
        completed: counters.completed,
        total: counters.completed + counters.pending(),
        credits_used: counters.credits,
        expires_at: time::iso_ms(record.expires_ms),
        created_at: time::iso_ms(record.created_ms),
        completed_at: record.finished_ms.map(time::iso_ms),
        duration: end_ms.saturating_sub(record.created_ms) as f64 / 1000.0,
        next,
        data,
        warning,
        error: if failed { record.error.as_deref() } else { None },
    };
    HttpResponse::Ok().json(body)
}
