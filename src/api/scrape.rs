//! `POST /v2/scrape` (scrape one URL synchronously) and `GET /v2/scrape/{id}` (a stored
//! result of the caller's team).

use actix_web::{HttpResponse, web};
use serde::Serialize;
use utoipa::ToSchema;

use super::error::{ApiError, ErrorBody};
use super::options::ScrapeOptionsBody;
use super::{AppState, Authenticated, body, target};
use crate::model::{Code, Document, JobId};
use crate::scrape::ScrapeJob;

/// Registers the routes.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/v2/scrape").route(web::post().to(scrape)))
        .service(web::resource("/v2/scrape/{id}").route(web::get().to(get_scrape)));
}

/// Top-level keys of a scrape body besides the scrape options.
pub const SCRAPE_KEYS: &[&str] = &["url"];

/// A successful scrape.
#[derive(Debug, Serialize, ToSchema)]
pub struct ScrapeResponse {
    /// Always true.
    pub success: bool,
    /// The result.
    #[schema(value_type = Object)]
    pub data: Document,
}

/// Scrape one URL.
#[utoipa::path(
    post,
    path = "/v2/scrape",
    request_body(content = inline(Object), description = "`url` plus the fields of ScrapeOptions (see the ScrapeRequest schema)"),
    responses(
        (status = 200, description = "The page", body = ScrapeResponse),
        (status = 400, description = "Invalid request, unavailable option or blocked URL", body = ErrorBody),
        (status = 401, description = "Missing or invalid API key", body = ErrorBody),
        (status = 403, description = "Permission not enabled for the team", body = ErrorBody),
        (status = 404, description = "SCRAPE_NO_CACHED_DATA / SCRAPE_LOCKDOWN_CACHE_MISS", body = ErrorBody),
        (status = 408, description = "SCRAPE_TIMEOUT", body = ErrorBody),
        (status = 502, description = "The target failed (SCRAPE_SITE_ERROR, SCRAPE_SSL_ERROR)", body = ErrorBody)
    ),
    security(("bearer" = []))
)]
pub async fn scrape(
    state: web::Data<AppState>,
    auth: Authenticated,
    bytes: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    let mut map = body::object(&bytes)?;
    body::reject_unknown(&mut map, &[SCRAPE_KEYS, body::field_names::<ScrapeOptionsBody>()], "")?;
    let (url, source_url) = target::parse(map.remove("url"), "url")?;
    let options = ScrapeOptionsBody::from_map(map, "")?.validate(auth.caller(), "")?;
    let target = (!options.zero_data_retention).then(|| source_url.clone());
    let admitted = super::team::admit(&state, &auth, "scrape", target).await?;
    let (id, queued_ms) = (admitted.id, admitted.queued_ms);
    let job = ScrapeJob { id, team: auth.team, url, source_url, options, queued_ms };
    let quiet = job.options.zero_data_retention;
    let started = std::time::Instant::now();
    let (scraper, teams) = (state.scraper.clone(), std::sync::Arc::clone(&state.runtime.services().teams));
    let (job, result) = state
        .off_worker(async move {
            let result = scraper.scrape(&job).await;
            drop(admitted);
            let charge = match &result {
                Ok(doc) => u64::from(doc.metadata.credits_used),
                // A lockdown miss still costs a credit (spec §2.1).
                Err(crate::scrape::ScrapeError::LockdownMiss) => 1,
                Err(_) => 0,
            };
            teams.charge(&job.team, charge)?.reported().await;
            Ok((job, result))
        })
        .await?;
    match &result {
        Ok(doc) if quiet => {
            tracing::info!(scrape_id = %job.id, status = doc.metadata.status_code, elapsed_ms = started.elapsed().as_millis() as u64, "scrape done")
        }
        Ok(doc) => {
            tracing::info!(scrape_id = %job.id, url = %job.url, status = doc.metadata.status_code, elapsed_ms = started.elapsed().as_millis() as u64, "scrape done")
        }
        // Zero-data-retention and lockdown requests never log their URL.
        Err(e) if quiet => tracing::info!(scrape_id = %job.id, error = %e, "scrape failed"),
        Err(e) => tracing::info!(scrape_id = %job.id, url = %job.url, error = %e, "scrape failed"),
    }
    let document = result?;
    Ok(HttpResponse::Ok().json(ScrapeResponse { success: true, data: document }))
}

/// A stored scrape result of the caller's team.
#[utoipa::path(
    get,
    path = "/v2/scrape/{id}",
    params(("id" = String, Path, description = "The scrape id (metadata.scrapeId)")),
    responses(
        (status = 200, description = "The stored result", body = ScrapeResponse),
        (status = 400, description = "The id is not a UUID", body = ErrorBody),
        (status = 404, description = "Unknown, expired or another team's id", body = ErrorBody)
    ),
    security(("bearer" = []))
)]
pub async fn get_scrape(
    state: web::Data<AppState>,
    auth: Authenticated,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let id = parse_job_id(&path)?;
    let scraper = state.scraper.clone();
    let document = state
        .off_worker(async move { Ok(scraper.stored(id, &auth.team)?) })
        .await?
        .ok_or_else(ApiError::job_not_found)?;
    Ok(HttpResponse::Ok().json(ScrapeResponse { success: true, data: document }))
}

/// Parses a job id path segment.
pub fn parse_job_id(text: &str) -> Result<JobId, ApiError> {
    JobId::parse(text).ok_or_else(|| {
        ApiError::new(Code::InvalidJobId, format!("Invalid job ID format: `{text}` is not a UUID"))
    })
}

/// The JSON key set a scrape request accepts (for the OpenAPI consistency test).
pub fn accepted_keys() -> Vec<&'static str> {
    let mut keys: Vec<&'static str> = SCRAPE_KEYS.to_vec();
    keys.extend_from_slice(body::field_names::<ScrapeOptionsBody>());
    keys
}
