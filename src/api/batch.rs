//! Batch scrape (spec §4.2, contract §6): many URLs as one asynchronous job with the crawl's
//! durability and the site actors' politeness, but no link following. Invalid URLs are
//! skipped and listed (`ignoreInvalidURLs`, the default) or fail the request naming them.

use actix_web::{HttpRequest, HttpResponse, web};
use serde::Serialize;
use serde_json::{Map, Value};

use super::error::ApiError;
use super::job_view;
use super::options::ScrapeOptionsBody;
use super::{AppState, Authenticated, body, target};
use crate::model::JobKind;
use crate::service::{JobUrl, NewBatch, batch_url};

/// Most URLs in one batch request.
pub const MAX_BATCH_URLS: usize = 100_000;

/// Keys of a batch body besides the scrape options.
pub const BATCH_KEYS: &[&str] = &["urls", "webhook", "maxConcurrency", "ignoreInvalidURLs", "appendToId"];

/// Registers the routes.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/v2/batch/scrape").route(web::post().to(start)))
        .service(
            web::resource("/v2/batch/scrape/{id}")
                .route(web::get().to(status))
                .route(web::delete().to(cancel)),
        )
        .service(web::resource("/v2/batch/scrape/{id}/errors").route(web::get().to(errors)));
}

/// Every key a batch request accepts.
pub fn accepted_keys() -> Vec<&'static str> {
    let mut keys = BATCH_KEYS.to_vec();
    keys.extend_from_slice(body::field_names::<ScrapeOptionsBody>());
    keys
}

/// Answer to a started batch.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StartedBatch {
    /// Always true.
    pub success: bool,
    /// The job id.
    pub id: String,
    /// Where to poll its status.
    pub url: String,
    /// URLs that were skipped (only with `ignoreInvalidURLs`).
    #[serde(rename = "invalidURLs", skip_serializing_if = "Option::is_none")]
    pub invalid_urls: Option<Vec<String>>,
}

/// The URLs of a request, split into valid (de-duplicated) and invalid ones.
struct Urls {
    valid: Vec<JobUrl>,
    invalid: Vec<(usize, String, String)>,
}

fn parse_urls(value: Option<Value>) -> Result<Urls, ApiError> {
    let list = match value {
        Some(Value::Array(list)) if !list.is_empty() => list,
        Some(Value::Array(_)) => return Err(ApiError::bad_request("`urls` must hold at least one URL")),
        None | Some(Value::Null) => return Err(ApiError::bad_request("`urls` is required")),
        Some(_) => return Err(ApiError::bad_request("`urls` must be an array of URLs")),
    };
    if list.len() > MAX_BATCH_URLS {
        return Err(ApiError::bad_request(format!("`urls` holds more than {MAX_BATCH_URLS} URLs")));
    }
    let mut seen = std::collections::HashSet::new();
    let mut urls = Urls { valid: Vec::new(), invalid: Vec::new() };
    for (i, item) in list.into_iter().enumerate() {
        let text = match item {
            Value::String(s) => s,
            other => {
                urls.invalid.push((i, other.to_string(), "is not a string".into()));
                continue;
            }
        };
        match target::parse_str(&text) {
            Ok(url) => {
                let entry = batch_url(&url);
                if seen.insert(entry.key.clone()) {
                    urls.valid.push(entry);
                }
            }
            Err(reason) => urls.invalid.push((i, text, reason)),
        }
    }
    Ok(urls)
}

fn take_bool(map: &mut Map<String, Value>, key: &str) -> Result<Option<bool>, ApiError> {
    match map.remove(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(b)),
        Some(_) => Err(ApiError::bad_request(format!("`{key}` must be a boolean"))),
    }
}

/// Start a batch scrape.
#[utoipa::path(
    post,
    path = "/v2/batch/scrape",
    request_body(content = inline(Object), description = "`urls` plus the batch keys and the fields of ScrapeOptions (see the BatchScrapeRequest schema)"),
    responses(
        (status = 200, description = "Batch started", body = StartedBatch),
        (status = 400, description = "Invalid request (names the invalid URLs)", body = super::error::ErrorBody),
        (status = 404, description = "appendToId is not a batch of the team", body = super::error::ErrorBody)
    ),
    security(("bearer" = []))
)]
pub async fn start(
    req: HttpRequest,
    state: web::Data<AppState>,
    auth: Authenticated,
    bytes: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    let mut map = body::object(&bytes)?;
    body::reject_unknown(&mut map, &[BATCH_KEYS, body::field_names::<ScrapeOptionsBody>()], "")?;
    let urls = parse_urls(map.remove("urls"))?;
    let ignore_invalid = take_bool(&mut map, "ignoreInvalidURLs")?.unwrap_or(true);
    let webhook =
        map.remove("webhook").filter(|w| !w.is_null()).map(|w| super::webhook::parse(&w)).transpose()?;
    if let Some(webhook) = &webhook {
        super::webhook::check_allowed(webhook, state.scraper.engine().policy())?;
    }
    let max_concurrency = match map.remove("maxConcurrency") {
        None | Some(Value::Null) => None,
        Some(v) => Some(
            v.as_u64()
                .filter(|n| (1..=u64::from(u32::MAX)).contains(n))
                .ok_or_else(|| ApiError::bad_request("`maxConcurrency` must be a positive integer"))?
                as u32,
        ),
    };
    let append_to = match map.remove("appendToId") {
        None | Some(Value::Null) => None,
        Some(Value::String(id)) => Some(id),
        Some(_) => return Err(ApiError::bad_request("`appendToId` must be a job id")),
    };
    let scrape = ScrapeOptionsBody::from_map(map, "")?.validate(auth.caller(), "")?;
    if !urls.invalid.is_empty() && !ignore_invalid {
        let named: Vec<String> =
            urls.invalid.iter().map(|(i, url, why)| format!("`urls[{i}]` ({url}) {why}")).collect();
        return Err(ApiError::bad_request(format!("Invalid URLs: {}", named.join("; "))));
    }
    if urls.valid.is_empty() {
        return Err(ApiError::bad_request("No valid URLs provided"));
    }
    let invalid_urls = ignore_invalid.then(|| urls.invalid.iter().map(|(_, url, _)| url.clone()).collect());
    let append_to = append_to.map(|id| super::scrape::parse_job_id(&id)).transpose()?;
    let request =
        NewBatch { team: auth.team.clone(), urls: urls.valid, scrape, webhook, max_concurrency, append_to };
    let jobs = state.jobs.clone();
    let started = state.off_worker(async move { Ok(jobs.start_batch(request).await?) }).await?;
    let url = format!("{}/v2/batch/scrape/{}", job_view::public_base(&req, &state), started.id);
    Ok(HttpResponse::Ok().json(StartedBatch { success: true, id: started.id.to_string(), url, invalid_urls }))
}

/// Status of a batch, with a page of results.
pub async fn status(
    req: HttpRequest,
    state: web::Data<AppState>,
    auth: Authenticated,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    job_view::status_of(&req, &state, &auth, &path, JobKind::Batch).await
}

/// Cancel a batch.
pub async fn cancel(
    state: web::Data<AppState>,
    auth: Authenticated,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    job_view::cancel_of(&state, &auth, &path, JobKind::Batch).await
}

/// URLs of a batch that failed.
pub async fn errors(
    state: web::Data<AppState>,
    auth: Authenticated,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    job_view::errors_of(&state, &auth, &path, JobKind::Batch).await
}
