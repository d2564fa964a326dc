//! Crawl endpoints (spec §4.3–4.5, contract §7): start, status with paging, cancel, errors,
//! and the team's active crawls. The work itself runs in the actor tree; these handlers
//! validate, submit, and read the job's stored state.

use actix_web::{HttpRequest, HttpResponse, web};
use serde::Serialize;
use serde_json::json;

use super::crawl_body::{self, CrawlBody};
use super::error::ApiError;
use super::job_view;
use super::{AppState, Authenticated, body, target};
use crate::model::{JobId, JobKind, time};
use crate::service::{Job, NewCrawl};

/// Registers the routes (the fixed paths before `{id}`).
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/v2/crawl").route(web::post().to(start)))
        .service(web::resource("/v2/crawl/active").route(web::get().to(active)))
        .service(web::resource("/v2/crawl/ongoing").route(web::get().to(active)))
        .service(web::resource("/v2/crawl/{id}").route(web::get().to(status)).route(web::delete().to(cancel)))
        .service(web::resource("/v2/crawl/{id}/errors").route(web::get().to(errors)));
}

/// Keys of a crawl body besides the crawl options.
pub const CRAWL_KEYS: &[&str] = &["url"];

/// Every key a crawl request accepts.
pub fn accepted_keys() -> Vec<&'static str> {
    let mut keys = CRAWL_KEYS.to_vec();
    keys.extend_from_slice(body::field_names::<CrawlBody>());
    keys
}

/// Answer to a started job.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct StartedJob {
    /// Always true.
    pub success: bool,
    /// The job id.
    pub id: String,
    /// Where to poll its status.
    pub url: String,
}

/// Start a crawl.
#[utoipa::path(
    post,
    path = "/v2/crawl",
    request_body(content = inline(Object), description = "`url` plus the fields of CrawlOptions (see the CrawlRequest schema)"),
    responses(
        (status = 200, description = "Crawl started", body = StartedJob),
        (status = 400, description = "Invalid request", body = super::error::ErrorBody),
        (status = 403, description = "Option not enabled for the team", body = super::error::ErrorBody),
        (status = 409, description = "Idempotency key already used", body = super::error::ErrorBody)
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
    body::reject_unknown(&mut map, &[CRAWL_KEYS, body::field_names::<CrawlBody>()], "")?;
    let (url, _) = target::parse(map.remove("url"), "url")?;
    super::crawl_prompt::apply(&state, &auth, url.as_str(), &mut map).await?;
    let options = crawl_body::parse(map, auth.caller())?;
    if let Some(webhook) = &options.webhook {
        super::webhook::check_allowed(webhook, state.scraper.engine().policy())?;
    }
    let idempotency_key =
        req.headers().get("x-idempotency-key").and_then(|v| v.to_str().ok()).map(str::to_owned);
    let request = NewCrawl { team: auth.team.clone(), url, options, idempotency_key };
    let jobs = state.jobs.clone();
    let started = state.off_worker(async move { Ok(jobs.start_crawl(request).await?) }).await?;
    let url = format!("{}/v2/crawl/{}", job_view::public_base(&req, &state), started.id);
    Ok(HttpResponse::Ok().json(StartedJob { success: true, id: started.id.to_string(), url }))
}

/// Status of a crawl, with a page of results.
#[utoipa::path(
    get,
    path = "/v2/crawl/{id}",
    params(
        ("id" = String, Path, description = "Crawl id"),
        ("skip" = Option<u64>, Query, description = "Documents to skip"),
        ("limit" = Option<usize>, Query, description = "Documents per page (1 to 1000, default 100)")
    ),
    responses((status = 200, description = "Status and documents"), (status = 404, description = "Unknown crawl", body = super::error::ErrorBody)),
    security(("bearer" = []))
)]
pub async fn status(
    req: HttpRequest,
    state: web::Data<AppState>,
    auth: Authenticated,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    job_view::status_of(&req, &state, &auth, &path, JobKind::Crawl).await
}

/// Cancel a crawl.
pub async fn cancel(
    state: web::Data<AppState>,
    auth: Authenticated,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    job_view::cancel_of(&state, &auth, &path, JobKind::Crawl).await
}

/// Pages of a crawl that failed, and URLs robots.txt kept it from.
pub async fn errors(
    state: web::Data<AppState>,
    auth: Authenticated,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    job_view::errors_of(&state, &auth, &path, JobKind::Crawl).await
}

/// The team's running crawls.
pub async fn active(state: web::Data<AppState>, auth: Authenticated) -> Result<HttpResponse, ApiError> {
    let (jobs, team) = (state.jobs.clone(), auth.team.clone());
    let active = state.off_worker(async move { Ok(jobs.active(&team, JobKind::Crawl).await?) }).await?;
    let crawls: Vec<serde_json::Value> = active.iter().map(|a| active_view(a.id, &a.job)).collect();
    Ok(HttpResponse::Ok().json(json!({"success": true, "crawls": crawls})))
}

fn active_view(id: JobId, r: &Job) -> serde_json::Value {
    let o = &r.options;
    json!({
        "id": id.to_string(),
        "teamId": r.team,
        "url": r.url,
        "created_at": time::iso_ms(r.created_ms),
        "options": {
            "includePaths": o.include_paths,
            "excludePaths": o.exclude_paths,
            "limit": o.limit,
            "maxDiscoveryDepth": o.max_discovery_depth,
            "crawlEntireDomain": o.crawl_entire_domain,
            "allowExternalLinks": o.allow_external_links,
            "allowSubdomains": o.allow_subdomains,
            "ignoreRobotsTxt": o.ignore_robots_txt,
            "sitemap": match o.sitemap { crate::model::SitemapMode::Skip => "skip", crate::model::SitemapMode::Include => "include", crate::model::SitemapMode::Only => "only" },
            "deduplicateSimilarURLs": o.deduplicate_similar_urls,
            "ignoreQueryParameters": o.ignore_query_parameters,
            "regexOnFullURL": o.regex_on_full_url,
            "delay": o.delay_ms.map(|d| d as f64 / 1000.0),
            "maxConcurrency": o.max_concurrency,
            "scrapeOptions": {
                "formats": super::formats::names(&o.scrape.formats),
                "onlyMainContent": o.scrape.only_main_content,
                "includeTags": o.scrape.include_tags,
                "excludeTags": o.scrape.exclude_tags,
                "timeout": o.scrape.timeout_ms,
                "maxAge": o.scrape.max_age_ms,
                "mobile": o.scrape.mobile,
            },
        }
    })
}
