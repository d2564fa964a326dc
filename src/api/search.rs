//! `POST /v2/search` (spec §4.7, contract §9): the request checked field by field, the
//! providers asked in order ([`crate::search::run`]), each result scraped when
//! `scrapeOptions` asks for formats (in parallel, each under the team's concurrency
//! limit), credits as the contract prices them, and an activity record.

use std::time::Duration;

use actix_web::{HttpResponse, web};
use futures::future::join_all;
use serde_json::{Map, Value, json};

use super::error::ApiError;
use super::options::ScrapeOptionsBody;
use super::{AppState, Authenticated, body};
use crate::model::{Code, ErrorCode, ScrapeOptions};
use crate::scrape::ScrapeJob;
use crate::search::{self, Category, Found, SearchRequest, Source, Tbs, query};

/// Every key a search request accepts.
const KEYS: &[&str] = &[
    "query",
    "limit",
    "sources",
    "categories",
    "includeDomains",
    "excludeDomains",
    "tbs",
    "filter",
    "lang",
    "country",
    "location",
    "safe",
    "timeout",
    "ignoreInvalidURLs",
    "asyncScraping",
    "highlights",
    "enterprise",
    "scrapeOptions",
    "threatProtection",
    "origin",
    "integration",
];

/// The keys the body may have (for the API document).
pub fn accepted_keys() -> &'static [&'static str] {
    KEYS
}

/// Registers the route.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/v2/search").route(web::post().to(search_route)));
}

/// The enterprise option asked (`enterprise`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Enterprise {
    None,
    Anon,
    Zdr,
}

/// A checked request: what the providers see, and what this route does with their results.
struct Checked {
    request: SearchRequest,
    timeout: Duration,
    ignore_invalid: bool,
    enterprise: Enterprise,
    scrape: Option<ScrapeOptions>,
}

/// Search the web (or this server's index) and optionally scrape each result.
#[utoipa::path(
    post,
    path = "/v2/search",
    request_body(content = inline(Object), description = "`query` (1..500 characters, with the operators of the spec), `limit` (1..100 per source), `sources`, `categories`, `includeDomains` or `excludeDomains`, `tbs`, `lang`, `country`, `location`, `timeout`, `ignoreInvalidURLs`, `enterprise`, `scrapeOptions`"),
    responses(
        (status = 200, description = "`{success, data: {web?, images?, news?}, id, creditsUsed, warning?}`"),
        (status = 400, description = "Invalid request, naming the field or the query operator", body = super::error::ErrorBody),
        (status = 402, description = "Not enough credits", body = super::error::ErrorBody),
        (status = 403, description = "`enterprise` not enabled for the team", body = super::error::ErrorBody),
        (status = 408, description = "The providers did not answer within `timeout`", body = super::error::ErrorBody)
    ),
    security(("bearer" = []))
)]
pub async fn search_route(
    state: web::Data<AppState>,
    auth: Authenticated,
    bytes: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    let mut map = body::object(&bytes)?;
    body::reject_unknown(&mut map, &[KEYS], "")?;
    let checked = check(map, &auth)?;
    let teams = std::sync::Arc::clone(&state.runtime.services().teams);
    {
        let (teams, team) = (std::sync::Arc::clone(&teams), auth.team.clone());
        state.off_worker(async move { Ok(teams.require(&team, 1).await?) }).await?;
    }
    let providers = std::sync::Arc::clone(&state.search_providers);
    let request = checked.request.clone();
    let (mut found, mut warnings) = state
        .off_worker(async move {
            tokio::time::timeout(checked.timeout, async { Ok(search::run(&providers, &request).await) })
                .await
                .map_err(|_| {
                    ApiError::new(Code::SearchTimeout, "The search did not finish within `timeout`.")
                })?
        })
        .await?;
    if checked.ignore_invalid {
        drop_invalid(&mut found);
    }
    let results = found.web.len() + found.images.len() + found.news.len();
    let per_ten = if checked.enterprise == Enterprise::Zdr { 10 } else { 2 };
    let mut credits = u64::try_from(results.div_ceil(10)).unwrap_or(u64::MAX) * per_ten;
    let id = state.jobs.new_id();
    let mut data = Map::new();
    let wants = |s| checked.request.sources.contains(&s);
    let mut web_items: Vec<Value> = positioned(&found.web);
    let mut news_items: Vec<Value> = positioned(&found.news);
    if let Some(options) = &checked.scrape {
        let scraped =
            scrape_all(&state, &auth, options, web_items.iter_mut().chain(news_items.iter_mut())).await?;
        credits += scraped;
    }
    if wants(Source::Web) {
        data.insert("web".into(), Value::Array(web_items));
    }
    if wants(Source::Images) {
        data.insert("images".into(), Value::Array(positioned(&found.images)));
    }
    if wants(Source::News) {
        data.insert("news".into(), Value::Array(news_items));
    }
    {
        let team = auth.team.clone();
        let charge = credits;
        let teams = std::sync::Arc::clone(&teams);
        state
            .off_worker(async move {
                teams.charge(&team, charge)?.reported().await;
                Ok(())
            })
            .await?;
    }
    let target = (checked.enterprise == Enterprise::None).then(|| checked.request.raw.clone());
    super::team::note_activity(&state, &auth, "search", id, target).await?;
    if results == 0 && warnings.is_empty() {
        warnings.push("No results found.".to_owned());
    }
    let warning = if warnings.is_empty() { Value::Null } else { Value::String(warnings.join(" ")) };
    Ok(HttpResponse::Ok().json(json!({
        "success": true,
        "data": data,
        "warning": warning,
        "id": id.to_string(),
        "creditsUsed": credits,
    })))
}

/// Results as JSON objects with their 1-based `position`.
fn positioned<T: serde::Serialize>(items: &[T]) -> Vec<Value> {
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let mut value = serde_json::to_value(item).unwrap_or_default();
            value["position"] = Value::from(i + 1);
            value
        })
        .collect()
}

/// Drops results whose URL the scrape endpoint would refuse.
fn drop_invalid(found: &mut Found) {
    let valid = |url: &str| super::target::parse_str(url).is_ok();
    found.web.retain(|r| valid(&r.url));
    found.news.retain(|r| valid(&r.url));
    found.images.retain(|r| valid(&r.url) && valid(&r.image_url));
}

/// Scrapes every item's `url` with `options`, merging the document's fields into it; the
/// credits the pages cost.
async fn scrape_all(
    state: &AppState,
    auth: &Authenticated,
    options: &ScrapeOptions,
    items: impl Iterator<Item = &mut Value>,
) -> Result<u64, ApiError> {
    let items: Vec<&mut Value> = items.collect();
    let jobs = items.iter().map(|item| {
        let url = item["url"].as_str().unwrap_or_default().to_owned();
        let (scraper, teams, team) =
            (state.scraper.clone(), std::sync::Arc::clone(&state.runtime.services().teams), auth.team.clone());
        let (options, id) = (options.clone(), state.jobs.new_id());
        state.off_worker(async move {
            let Ok(parsed) = super::target::parse_str(&url) else {
                return Ok((None, 0));
            };
            let slot = teams.admit(&team).await;
            let queued_ms = slot.waited.map(|w| u64::try_from(w.as_millis()).unwrap_or(u64::MAX));
            let job = ScrapeJob { id, team, url: parsed, source_url: url, options, queued_ms };
            let result = scraper.scrape(&job).await;
            drop(slot);
            Ok(match result {
                Ok(document) => {
                    let credits = u64::from(document.metadata.credits_used);
                    (Some(serde_json::to_value(document).unwrap_or_default()), credits)
                }
                Err(e) => (Some(json!({"metadata": {"url": job.source_url, "sourceURL": job.source_url, "statusCode": e.code().status(), "error": e.to_string()}})), 0),
            })
        })
    });
    let done = join_all(jobs).await;
    let mut credits = 0;
    for (item, outcome) in items.into_iter().zip(done) {
        let (document, cost) = outcome?;
        credits += cost;
        if let (Some(Value::Object(fields)), Value::Object(target)) = (document, item) {
            for (key, value) in fields {
                // The result's own title, description and position stay.
                target.entry(key).or_insert(value);
            }
        }
    }
    Ok(credits)
}

fn bad(message: impl Into<String>) -> ApiError {
    ApiError::bad_request(message)
}

fn check(mut map: Map<String, Value>, auth: &Authenticated) -> Result<Checked, ApiError> {
    let raw = match map.remove("query") {
        Some(Value::String(q)) if !q.trim().is_empty() && q.chars().count() <= 500 => q,
        Some(Value::String(_)) => return Err(bad("Invalid value for `query`: 1 to 500 characters")),
        None | Some(Value::Null) => return Err(bad("`query` is required")),
        Some(_) => return Err(bad("Invalid value for `query`: a string")),
    };
    let query = query::parse(&raw).map_err(|e| bad(format!("Invalid search operator in `query`: {e}")))?;
    let limit = match map.remove("limit") {
        None | Some(Value::Null) => 10,
        Some(v) => v
            .as_u64()
            .filter(|n| (1..=100).contains(n))
            .ok_or_else(|| bad("Invalid value for `limit`: a whole number from 1 to 100"))?,
    };
    let sources = sources(map.remove("sources"))?;
    let categories = categories(map.remove("categories"))?;
    let include_domains = domains(map.remove("includeDomains"), "includeDomains")?;
    let exclude_domains = domains(map.remove("excludeDomains"), "excludeDomains")?;
    if !include_domains.is_empty() && !exclude_domains.is_empty() {
        return Err(bad("`includeDomains` and `excludeDomains` cannot be used together"));
    }
    let tbs = match map.remove("tbs") {
        None | Some(Value::Null) => Tbs::default(),
        Some(Value::String(t)) => tbs(&t, crate::model::time::now_ms())?,
        Some(_) => return Err(bad("Invalid value for `tbs`: a string such as qdr:w or sbd:1,qdr:m")),
    };
    let text = |map: &mut Map<String, Value>, key: &str| -> Result<Option<String>, ApiError> {
        match map.remove(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(bad(format!("Invalid value for `{key}`: a string"))),
        }
    };
    let location = text(&mut map, "location")?.filter(|l| !l.trim().is_empty());
    let country = match text(&mut map, "country")? {
        Some(c) if c.len() == 2 && c.chars().all(|c| c.is_ascii_alphabetic()) => c.to_ascii_lowercase(),
        Some(_) => return Err(bad("Invalid value for `country`: an ISO country code such as US or DE")),
        None => match location.as_deref().and_then(crate::search::location::country_of) {
            Some(country) => country.to_owned(),
            None if location.is_some() => String::new(),
            None => "us".to_owned(),
        },
    };
    let language = match text(&mut map, "lang")? {
        Some(l) if !l.is_empty() && l.len() <= 8 => {
            l.split(['-', '_']).next().unwrap_or_default().to_ascii_lowercase()
        }
        Some(_) => return Err(bad("Invalid value for `lang`: a language code such as en or de")),
        None => crate::search::location::language_of(&country).to_owned(),
    };
    // Labels and a filter this server has no use for, still of their type.
    for key in ["filter", "origin", "integration"] {
        let _ = text(&mut map, key)?;
    }
    let flag = |map: &mut Map<String, Value>, key: &str| -> Result<bool, ApiError> {
        match map.remove(key) {
            None | Some(Value::Null) => Ok(false),
            Some(Value::Bool(b)) => Ok(b),
            Some(_) => Err(bad(format!("Invalid value for `{key}`: true or false"))),
        }
    };
    let safe = flag(&mut map, "safe")?;
    let ignore_invalid = flag(&mut map, "ignoreInvalidURLs")?;
    if flag(&mut map, "asyncScraping")? {
        return Err(ApiError::not_available(
            "asyncScraping",
            "results are scraped before the answer on this server; leave it false",
        ));
    }
    let _ = flag(&mut map, "highlights")?;
    let timeout = match map.remove("timeout") {
        None | Some(Value::Null) => 60_000,
        Some(v) => v
            .as_u64()
            .filter(|t| (1_000..=300_000).contains(t))
            .ok_or_else(|| bad("Invalid value for `timeout`: milliseconds from 1000 to 300000"))?,
    };
    let enterprise = enterprise(map.remove("enterprise"), auth)?;
    super::options::refuse_hosted(map.get("threatProtection"), None, None, "")?;
    let scrape = match map.remove("scrapeOptions") {
        None | Some(Value::Null) => None,
        Some(Value::Object(options)) => {
            let mut options = options;
            let wants_formats =
                options.get("formats").and_then(Value::as_array).is_some_and(|f| !f.is_empty());
            if enterprise == Enterprise::Zdr {
                options.insert("zeroDataRetention".into(), Value::Bool(true));
            }
            let checked = ScrapeOptionsBody::from_map(options, "scrapeOptions.")?
                .validate(auth.caller(), "scrapeOptions.")?;
            wants_formats.then_some(checked)
        }
        Some(_) => return Err(bad("Invalid value for `scrapeOptions`: an object")),
    };
    let request = SearchRequest {
        raw,
        query,
        limit: usize::try_from(limit).unwrap_or(10),
        sources,
        categories,
        include_domains,
        exclude_domains,
        tbs,
        language,
        country,
        location,
        safe,
        team: Some(auth.team.as_str().to_owned()),
    };
    Ok(Checked { request, timeout: Duration::from_millis(timeout), ignore_invalid, enterprise, scrape })
}

/// A list given as strings or as objects with a `type`.
fn kinds(value: Option<Value>, key: &str) -> Result<Vec<String>, ApiError> {
    match value {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .into_iter()
            .map(|item| match item {
                Value::String(s) => Ok(s.to_ascii_lowercase()),
                Value::Object(o) => o
                    .get("type")
                    .and_then(Value::as_str)
                    .map(str::to_ascii_lowercase)
                    .ok_or_else(|| bad(format!("Invalid value in `{key}`: each entry needs a `type`"))),
                _ => Err(bad(format!("Invalid value in `{key}`: a name or an object with a `type`"))),
            })
            .collect(),
        Some(_) => Err(bad(format!("Invalid value for `{key}`: an array"))),
    }
}

fn sources(value: Option<Value>) -> Result<Vec<Source>, ApiError> {
    let mut out = Vec::new();
    for kind in kinds(value, "sources")? {
        let Some(source) = Source::parse(&kind) else {
            return Err(bad(format!("Invalid value in `sources`: `{kind}` is not one of web, images, news")));
        };
        if !out.contains(&source) {
            out.push(source);
        }
    }
    Ok(if out.is_empty() { vec![Source::Web] } else { out })
}

fn categories(value: Option<Value>) -> Result<Vec<Category>, ApiError> {
    kinds(value, "categories")?
        .into_iter()
        .map(|kind| match kind.as_str() {
            "github" => Ok(Category::Github),
            "research" => Ok(Category::Research),
            "pdf" => Ok(Category::Pdf),
            other => Err(bad(format!(
                "Invalid value in `categories`: `{other}` is not one of github, research, pdf"
            ))),
        })
        .collect()
}

fn domains(value: Option<Value>, key: &str) -> Result<Vec<String>, ApiError> {
    let Some(value) = value.filter(|v| !v.is_null()) else {
        return Ok(Vec::new());
    };
    let items =
        value.as_array().ok_or_else(|| bad(format!("Invalid value for `{key}`: an array of hostnames")))?;
    items
        .iter()
        .map(|item| {
            let host = item.as_str().map(str::trim).unwrap_or_default();
            let plain = !host.is_empty()
                && host.len() <= 253
                && host.chars().all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-');
            if plain {
                Ok(host.to_ascii_lowercase())
            } else {
                Err(bad(format!(
                    "Invalid value in `{key}`: `{host}` is not a bare hostname (no protocol, no path)"
                )))
            }
        })
        .collect()
}

fn enterprise(value: Option<Value>, auth: &Authenticated) -> Result<Enterprise, ApiError> {
    let mut chosen = Enterprise::None;
    for kind in kinds(value, "enterprise")? {
        chosen = match kind.as_str() {
            "default" => chosen,
            "anon" if chosen != Enterprise::Zdr => Enterprise::Anon,
            "zdr" | "anon" => Enterprise::Zdr,
            other => {
                return Err(bad(format!("Invalid value in `enterprise`: `{other}` is not one of anon, zdr")));
            }
        };
    }
    if chosen != Enterprise::None && !auth.flags.search_enterprise {
        return Err(ApiError::new(
            Code::Forbidden,
            format!(
                "`enterprise` search is not enabled for team `{}`; ask the operator to set teams.{}.search_enterprise",
                auth.team.as_str(),
                auth.team.as_str()
            ),
        ));
    }
    Ok(chosen)
}

/// `tbs`: `qdr:h|d|w|m|y`, `sbd:1`, `cdr:1,cd_min:MM/DD/YYYY,cd_max:MM/DD/YYYY`, combined
/// with commas; times relative to `now_ms`.
fn tbs(text: &str, now_ms: u64) -> Result<Tbs, ApiError> {
    let now = i64::try_from(now_ms).unwrap_or(i64::MAX);
    let invalid = |part: &str| {
        bad(format!(
            "Invalid value for `tbs`: `{part}` is not one of qdr:h/d/w/m/y, sbd:1, cdr:1, cd_min:MM/DD/YYYY, cd_max:MM/DD/YYYY"
        ))
    };
    let mut out = Tbs::default();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (key, value) = part.split_once(':').ok_or_else(|| invalid(part))?;
        match key {
            "qdr" => {
                let hour = 3_600_000;
                let span = match value {
                    "h" => hour,
                    "d" => 24 * hour,
                    "w" => 7 * 24 * hour,
                    "m" => 31 * 24 * hour,
                    "y" => 366 * 24 * hour,
                    _ => return Err(invalid(part)),
                };
                out.since_ms = Some(now - span);
                out.range = value.chars().next();
            }
            "sbd" if value == "1" => out.by_date = true,
            "sbd" if value == "0" => {}
            "cdr" if value == "1" => {}
            "cd_min" | "cd_max" => {
                let (m, rest) = value.split_once('/').ok_or_else(|| invalid(part))?;
                let (d, y) = rest.split_once('/').ok_or_else(|| invalid(part))?;
                let iso = format!("{y:0>4}-{m:0>2}-{d:0>2}");
                let day = search::page::parse_date(&iso).ok_or_else(|| invalid(part))?;
                if key == "cd_min" {
                    out.since_ms = Some(day);
                } else {
                    out.until_ms = Some(day + 86_400_000 - 1);
                }
            }
            _ => return Err(invalid(part)),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_filters_combine() {
        let now = 10 * 86_400_000;
        let t = tbs("sbd:1,qdr:w", now).expect("valid");
        assert_eq!((t.by_date, t.since_ms, t.range), (true, Some(3 * 86_400_000), Some('w')));
        let t = tbs("cdr:1,cd_min:01/02/1970,cd_max:1/3/1970", now).expect("valid");
        assert_eq!((t.since_ms, t.until_ms), (Some(86_400_000), Some(3 * 86_400_000 - 1)));
        for wrong in ["qdr:x", "when:now", "cd_min:2024-01-01", "sbd:2"] {
            assert!(tbs(wrong, now).is_err(), "{wrong}");
        }
    }
}
