//! Crawl options from a prompt: `POST /v2/crawl/params-preview` (contract §7.6) and the
//! `prompt` of `POST /v2/crawl`. The language model proposes the options (a JSON object
//! checked against the options' schema); without a model, the preview falls back on the
//! rule-based reader of `crawl::prompt` and says so. Either way the proposal is validated
//! like a crawl body, and options the request gives explicitly win over the prompt's.

use std::time::Duration;

use actix_web::{HttpResponse, web};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::auth::Authenticated;
use super::error::ApiError;
use super::{AppState, body, crawl_body, formats, target};
use crate::model::Code;

/// The options a model may propose.
const PROPOSED: &[&str] = &[
    "includePaths",
    "excludePaths",
    "maxDiscoveryDepth",
    "limit",
    "crawlEntireDomain",
    "allowExternalLinks",
    "allowSubdomains",
    "ignoreQueryParameters",
    "deduplicateSimilarURLs",
    "sitemap",
    "delay",
];

const TASK: &str = "You turn a request for a web crawl into crawl options. includePaths and \
excludePaths are regular expressions matched against URL paths, e.g. ^/blog(/.*)?$ for the blog \
section. maxDiscoveryDepth counts link hops from the start page; limit is the most pages; delay is \
seconds between requests; sitemap is skip, include or only. Set only the options the request asks \
for and leave the others out.";

/// Registers the route (before `/v2/crawl/{id}`).
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/v2/crawl/params-preview").route(web::post().to(preview)));
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PreviewBody {
    url: Option<Value>,
    prompt: Option<Value>,
    #[allow(dead_code)]
    origin: Option<String>,
    #[allow(dead_code)]
    integration: Option<String>,
}

/// The keys the body may have (for the API document).
pub fn accepted_keys() -> &'static [&'static str] {
    body::field_names::<PreviewBody>()
}

/// The prompt of a request, required.
fn prompt_of(value: Option<Value>) -> Result<String, ApiError> {
    formats::prompt(value, "prompt")?.ok_or_else(|| ApiError::bad_request("`prompt` is required"))
}

async fn preview(
    state: web::Data<AppState>,
    auth: Authenticated,
    bytes: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    let request: PreviewBody = body::typed(Value::Object(body::object(&bytes)?), "")?;
    let (url, _) = target::parse(request.url, "url")?;
    let prompt = prompt_of(request.prompt)?;
    let (proposal, warning) = propose(&state, &auth, url.as_str(), &prompt).await?;
    crawl_body::parse(proposal.clone(), auth.caller()).map_err(|e| unusable(&e))?;
    let mut data = Map::from_iter([("url".to_owned(), Value::String(url.to_string()))]);
    data.extend(proposal);
    Ok(HttpResponse::Ok().json(json!({"success": true, "data": data, "warning": warning})))
}

/// Adds to a crawl body the options its `prompt` asks for, unless the body gives them
/// itself; the prompt is taken out. Without a model the body is left as it is (its
/// validation refuses the prompt, naming `llm.base_url`).
pub async fn apply(
    state: &AppState,
    auth: &Authenticated,
    url: &str,
    map: &mut Map<String, Value>,
) -> Result<(), ApiError> {
    if state.scraper.llm().is_none() || map.get("prompt").is_none_or(Value::is_null) {
        return Ok(());
    }
    let prompt = prompt_of(map.remove("prompt"))?;
    let (proposal, _) = propose(state, auth, url, &prompt).await?;
    for (key, value) in proposal {
        map.entry(key).or_insert(value);
    }
    Ok(())
}

/// The options `prompt` asks for, and a warning when they did not come from a model.
async fn propose(
    state: &AppState,
    auth: &Authenticated,
    url: &str,
    prompt: &str,
) -> Result<(Map<String, Value>, Option<String>), ApiError> {
    let Some(llm) = state.scraper.llm() else {
        return Ok((
            crate::crawl::prompt::options(prompt),
            Some(
                "These options come from the server's rule-based reading of the prompt: no language \
                  model is configured (llm.base_url)."
                    .to_owned(),
            ),
        ));
    };
    let schema = json!({"type": "object", "properties": {
        "includePaths": {"type": "array", "items": {"type": "string"}},
        "excludePaths": {"type": "array", "items": {"type": "string"}},
        "maxDiscoveryDepth": {"type": "integer", "minimum": 0},
        "limit": {"type": "integer", "minimum": 1},
        "crawlEntireDomain": {"type": "boolean"},
        "allowExternalLinks": {"type": "boolean"},
        "allowSubdomains": {"type": "boolean"},
        "ignoreQueryParameters": {"type": "boolean"},
        "deduplicateSimilarURLs": {"type": "boolean"},
        "sitemap": {"enum": ["skip", "include", "only"]},
        "delay": {"type": "number", "minimum": 0, "maximum": 60},
    }});
    let deadline = tokio::time::Instant::now() + Duration::from_millis(llm.settings().timeout_ms);
    let input = format!("Start URL: {url}\nRequest: {prompt}");
    let (llm, payer) = (llm.clone(), auth.payer());
    let found = state
        .off_worker(async move {
            llm.structured(&payer, TASK, &input, Some(&schema), deadline)
                .await
                .map_err(|e| ApiError::new(Code::LlmFailed, format!("language model: {e}")))
        })
        .await?;
    let proposal: Map<String, Value> = match found.value {
        Value::Object(map) => {
            map.into_iter().filter(|(k, v)| PROPOSED.contains(&k.as_str()) && !v.is_null()).collect()
        }
        _ => Map::new(),
    };
    let warning = (!found.warnings.is_empty()).then(|| found.warnings.join(" "));
    Ok((proposal, warning))
}

fn unusable(e: &ApiError) -> ApiError {
    ApiError::bad_request(format!(
        "The prompt could not be turned into valid crawl options ({}); try rephrasing it.",
        e.message()
    ))
}
