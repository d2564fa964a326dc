//! Batch scrape (spec §4.2, contract §6): many URLs as one asynchronous job with the crawl's
//! durability and the site actors' politeness, but no link following. Invalid URLs are
//! skipped and listed (`ignoreInvalidURLs`, the default) or fail the request naming them.

use actix_web::web::Bytes;
use actix_web::{HttpRequest, HttpResponse, web};
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::error::ApiError;
use super::job_view;
use super::options::ScrapeOptionsBody;
use super::{AppState, Authenticated, body, target};
use crate::model::JobKind;
use crate::service::{JobUrl, JobUrls, NewBatch, batch_url};

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

/// The `urls` of a request, left in its body: read once here to validate and count them,
/// and again as they are queued, so that 100 000 URLs are never all held as values.
#[derive(Debug)]
struct RequestUrls {
    raw: Bytes,
    /// Different valid URLs.
    count: usize,
}

impl RequestUrls {
    /// The items of the list, each as its JSON text (a slice of the body).
    fn items(&self) -> Result<Vec<&RawValue>, serde_json::Error> {
        serde_json::from_slice(&self.raw)
    }
}

impl JobUrls for RequestUrls {
    fn entries(&self) -> Box<dyn Iterator<Item = JobUrl> + '_> {
        // Read once already: the list is valid JSON.
        let items = self.items().unwrap_or_default();
        Box::new(items.into_iter().filter_map(|item| read_url(item).ok()))
    }

    fn count(&self) -> usize {
        self.count
    }
}

/// One item of `urls`: the URL as it is queued, or the item and why it is refused.
fn read_url(item: &RawValue) -> Result<JobUrl, (String, String)> {
    let text = item.get();
    if !text.starts_with('"') {
        return Err((text.to_owned(), "is not a string".into()));
    }
    let url: String = serde_json::from_str(text).map_err(|e| (text.to_owned(), e.to_string()))?;
    match target::parse_str(&url) {
        Ok(parsed) => Ok(batch_url(&parsed)),
        Err(reason) => Err((url, reason)),
    }
}

/// The URLs of a request: how many different valid ones, the first, and the invalid ones.
struct Urls {
    source: RequestUrls,
    count: usize,
    first: String,
    invalid: Vec<(usize, String, String)>,
}

fn parse_urls(raw: Option<Bytes>) -> Result<Urls, ApiError> {
    let raw = raw.filter(|r| &r[..] != b"null").ok_or_else(|| ApiError::bad_request("`urls` is required"))?;
    let mut source = RequestUrls { raw, count: 0 };
    let items = source.items().map_err(|_| ApiError::bad_request("`urls` must be an array of URLs"))?;
    if items.is_empty() {
        return Err(ApiError::bad_request("`urls` must hold at least one URL"));
    }
    if items.len() > MAX_BATCH_URLS {
        return Err(ApiError::bad_request(format!("`urls` holds more than {MAX_BATCH_URLS} URLs")));
    }
    // Identities as digests: the set is one more pass over up to 100 000 URLs.
    let mut seen = std::collections::HashSet::new();
    let (mut count, mut first, mut invalid) = (0, None, Vec::new());
    for (i, item) in items.into_iter().enumerate() {
        match read_url(item) {
            Ok(url) => {
                if seen.insert(digest(&url.key)) {
                    count += 1;
                    first.get_or_insert(url.entry.url);
                }
            }
            Err((text, reason)) => invalid.push((i, text, reason)),
        }
    }
    source.count = count;
    Ok(Urls { source, count, first: first.unwrap_or_default(), invalid })
}

/// A 128-bit digest of a URL's identity.
fn digest(key: &str) -> [u8; 16] {
    use sha2::Digest;
    let full = sha2::Sha256::digest(key.as_bytes());
    let mut out = [0u8; 16];
    out.copy_from_slice(&full[..16]);
    out
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
    bytes: Bytes,
) -> Result<HttpResponse, ApiError> {
    let (mut map, urls) = body::object_keeping(&bytes, "urls")?;
    body::reject_unknown(&mut map, &[BATCH_KEYS, body::field_names::<ScrapeOptionsBody>()], "")?;
    let urls = parse_urls(urls)?;
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
    if urls.count == 0 {
        return Err(ApiError::bad_request("No valid URLs provided"));
    }
    let invalid_urls = ignore_invalid.then(|| urls.invalid.iter().map(|(_, url, _)| url.clone()).collect());
    let append_to = append_to.map(|id| super::scrape::parse_job_id(&id)).transpose()?;
    let request = NewBatch {
        team: auth.team.clone(),
        urls: Box::new(urls.source),
        count: urls.count,
        first_url: urls.first,
        scrape,
        webhook,
        max_concurrency,
        append_to,
    };
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
