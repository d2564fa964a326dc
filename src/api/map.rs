//! `POST /v2/map`: a site's URLs from its start page and sitemaps (contract §8), as
//! `{url, title?, description?}` objects.

use actix_web::{HttpResponse, web};
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa::ToSchema;

use super::crawl_body;
use super::error::ApiError;
use super::options::ScrapeOptionsBody;
use super::{AppState, Authenticated, body, target};
use crate::actors::map;
use crate::model::crawl::{DEFAULT_MAP_LIMIT, MAX_MAP_LIMIT};
use crate::model::{Code, JobId, MapOptions};

/// Default time budget of a map.
const DEFAULT_MAP_TIMEOUT_MS: u64 = 60_000;

/// Registers the route.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/v2/map").route(web::post().to(map_site)));
}

/// A map request on the wire (besides `url`).
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(as = MapOptions)]
pub struct MapBody {
    /// Keep links whose URL or title mentions these words, best matches first.
    pub search: Option<String>,
    /// `skip`, `include` (default) or `only`.
    pub sitemap: Option<String>,
    /// Keep subdomains of the site (default true).
    pub include_subdomains: Option<bool>,
    /// Drop query strings (default true).
    pub ignore_query_parameters: Option<bool>,
    /// Most links (1 to 100000, default 5000).
    #[schema(minimum = 1, maximum = 100000)]
    pub limit: Option<u64>,
    /// Time budget in ms (default 60000).
    #[schema(minimum = 1000, maximum = 300000)]
    pub timeout: Option<u64>,
    /// Emulated location for the page fetch (read as a scrape's, once the page is known).
    #[schema(value_type = Option<crate::api::options::LocationBody>)]
    pub location: Option<Value>,
    /// Headers for the page fetch.
    pub headers: Option<std::collections::BTreeMap<String, String>>,
    /// Use an index of earlier results when there is one (this server has none).
    pub use_index: Option<bool>,
    /// Fetch the start page fresh instead of from the cache.
    pub ignore_cache: Option<bool>,
    /// Keep only links under the start URL's path (default true).
    pub filter_by_path: Option<bool>,
    /// Regexes a link must match one of.
    pub include_paths: Option<Vec<String>>,
    /// Regexes that drop a link.
    pub exclude_paths: Option<Vec<String>>,
    /// Accepted for crawler-option compatibility; map reads one page.
    pub max_discovery_depth: Option<u32>,
    /// Same as `filterByPath: false`.
    pub crawl_entire_domain: Option<bool>,
    /// Keep links to other sites.
    pub allow_external_links: Option<bool>,
    /// Same as `includeSubdomains`.
    pub allow_subdomains: Option<bool>,
    /// Map does not read robots.txt; accepted for crawler-option compatibility (enterprise).
    pub ignore_robots_txt: Option<bool>,
    /// As above (enterprise).
    pub robots_user_agent: Option<String>,
    /// Collapse www/scheme/trailing-slash/index variants (default true).
    #[serde(rename = "deduplicateSimilarURLs")]
    pub deduplicate_similar_urls: Option<bool>,
    /// Match patterns on the full URL.
    #[serde(rename = "regexOnFullURL")]
    pub regex_on_full_url: Option<bool>,
    /// A crawl's pause between pages (seconds): checked as a crawl's, and of no effect on
    /// a map, which reads one page (the answer's warning says so).
    #[schema(minimum = 0, maximum = 60)]
    pub delay: Option<f64>,
    /// Threat scanning (not available on this server).
    #[schema(value_type = Option<Object>)]
    pub threat_protection: Option<Value>,
    /// Audit label.
    #[schema(value_type = Option<Object>)]
    pub audit_metadata: Option<Value>,
    /// Mock fixture name (not available on this server).
    pub use_mock: Option<String>,
    /// Client label sent by the SDKs.
    pub origin: Option<String>,
    /// Integration label sent by the SDKs.
    pub integration: Option<String>,
}

/// Every key a map request accepts.
pub fn accepted_keys() -> Vec<&'static str> {
    let mut keys = vec!["url"];
    keys.extend_from_slice(body::field_names::<MapBody>());
    keys
}

/// Map a site.
#[utoipa::path(
    post,
    path = "/v2/map",
    request_body(content = inline(Object), description = "`url` plus the fields of MapOptions (see the MapRequest schema)"),
    responses(
        (status = 200, description = "The site's URLs"),
        (status = 400, description = "Invalid request", body = super::error::ErrorBody),
        (status = 408, description = "MAP_TIMEOUT", body = super::error::ErrorBody)
    ),
    security(("bearer" = []))
)]
pub async fn map_site(
    state: web::Data<AppState>,
    auth: Authenticated,
    bytes: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    let mut map = body::object(&bytes)?;
    body::reject_unknown(&mut map, &[&["url"], body::field_names::<MapBody>()], "")?;
    let (url, _) = target::parse(map.remove("url"), "url")?;
    let body: MapBody = body::typed(Value::Object(map), "")?;
    let delay_given = body.delay.is_some();
    let options = body.validate(&auth)?;
    let (runtime, team, target) = (state.runtime.clone(), auth.team.clone(), url.clone());
    let links = state
        .off_worker(async move {
            let teams = &runtime.services().teams;
            teams.require(&team, 1).await?;
            let links = map::map(&runtime, &team, &target, &options).await?;
            teams.charge(&team, 1)?.reported().await;
            Ok(links)
        })
        .await?;
    let id = JobId::new();
    super::team::note_activity(&state, &auth, "map", id, Some(url.to_string())).await?;
    let warnings: Vec<&str> = [
        (links.len() <= 1).then_some(
            "Few links found: try the site's home page, or set filterByPath false to map the whole domain.",
        ),
        delay_given.then_some("`delay` has no effect on a map: it reads one page."),
    ]
    .into_iter()
    .flatten()
    .collect();
    let mut reply = json!({"success": true, "id": id.to_string(), "links": links, "creditsUsed": 1});
    if !warnings.is_empty() {
        reply["warning"] = Value::String(warnings.join(" "));
    }
    Ok(HttpResponse::Ok().json(reply))
}

impl MapBody {
    fn validate(self, auth: &Authenticated) -> Result<MapOptions, ApiError> {
        super::options::refuse_hosted(
            self.threat_protection.as_ref(),
            self.use_mock.as_deref(),
            self.audit_metadata.as_ref(),
            "",
        )?;
        crawl_body::delay_ms_of(self.delay)?;
        if (self.ignore_robots_txt == Some(true) || self.robots_user_agent.is_some())
            && !auth.flags.enterprise
        {
            return Err(ApiError::new(
                Code::Forbidden,
                "robots.txt options are available on enterprise plans only",
            ));
        }
        let limit = self.limit.unwrap_or(DEFAULT_MAP_LIMIT as u64);
        if !(1..=MAX_MAP_LIMIT as u64).contains(&limit) {
            return Err(ApiError::bad_request(format!("`limit` must be between 1 and {MAX_MAP_LIMIT}")));
        }
        let timeout_ms = self.timeout.unwrap_or(DEFAULT_MAP_TIMEOUT_MS);
        if !(1_000..=300_000).contains(&timeout_ms) {
            return Err(ApiError::bad_request("`timeout` must be between 1000 and 300000 milliseconds"));
        }
        let sitemap = crawl_body::sitemap_mode(self.sitemap.as_deref())?;
        let (include_paths, exclude_paths) =
            crawl_body::path_patterns(self.include_paths, self.exclude_paths)?;
        let mut page = serde_json::Map::new();
        if let Some(location) = self.location {
            page.insert("location".into(), location);
        }
        if let Some(headers) = self.headers {
            page.insert("headers".into(), serde_json::to_value(headers).unwrap_or_default());
        }
        if self.ignore_cache == Some(true) {
            page.insert("maxAge".into(), Value::from(0));
        }
        page.insert("formats".into(), json!([]));
        page.insert("timeout".into(), Value::from(timeout_ms));
        let scrape = ScrapeOptionsBody::from_map(page, "")?.validate(auth.caller(), "")?;
        Ok(MapOptions {
            search: self.search.filter(|s| !s.trim().is_empty()),
            sitemap,
            include_subdomains: self.include_subdomains.or(self.allow_subdomains).unwrap_or(true),
            ignore_query_parameters: self.ignore_query_parameters.unwrap_or(true),
            filter_by_path: self.filter_by_path.unwrap_or(true) && !self.crawl_entire_domain.unwrap_or(false),
            limit: limit as usize,
            timeout_ms,
            scrape,
            allow_external_links: self.allow_external_links.unwrap_or(false),
            include_paths,
            exclude_paths,
            regex_on_full_url: self.regex_on_full_url.unwrap_or(false),
            deduplicate_similar_urls: self.deduplicate_similar_urls.unwrap_or(true),
        })
    }
}
