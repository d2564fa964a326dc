//! `POST /v2/extract`, `GET /v2/extract/{id}`, `POST /v2/agent`, `GET` and
//! `DELETE /v2/agent/{id}` (contract §11): requests checked field by field and handed to
//! the extract/agent job service; status answers shaped as the SDKs read them. Jobs live
//! on the node that accepted them; another node passes a status or cancel request there.

use actix_web::{HttpRequest, HttpResponse, web};
use serde::Deserialize;
use serde_json::{Value, json};

use super::auth::Authenticated;
use super::error::ApiError;
use super::options::{ScrapeOptionsBody, refuse_hosted};
use super::{AppState, body, formats, forward, target};
use crate::model::{EventKind, WebhookSpec, time};
use crate::service::llm_jobs::{self, Kind, LlmJobRequest};

/// Registers the routes.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/v2/extract").route(web::post().to(start_extract)))
        .service(web::resource("/v2/extract/{id}").route(web::get().to(status)))
        .service(web::resource("/v2/agent").route(web::post().to(start_agent)))
        .service(
            web::resource("/v2/agent/{id}").route(web::get().to(status)).route(web::delete().to(cancel)),
        );
}

/// `POST /v2/extract` on the wire.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ExtractBody {
    urls: Option<Vec<Value>>,
    prompt: Option<Value>,
    system_prompt: Option<String>,
    schema: Option<Value>,
    #[allow(dead_code)] // accepted as the SDKs send it
    limit: Option<u64>,
    #[allow(dead_code)] // accepted as the SDKs send it
    ignore_sitemap: Option<bool>,
    #[allow(dead_code)] // accepted as the SDKs send it
    include_subdomains: Option<bool>,
    #[allow(dead_code)] // accepted as the SDKs send it
    allow_external_links: Option<bool>,
    enable_web_search: Option<bool>,
    scrape_options: Option<Value>,
    #[allow(dead_code)] // accepted as the SDKs send it; sources are always listed
    show_sources: Option<bool>,
    ignore_invalid_urls: Option<bool>,
    webhook: Option<Value>,
    #[allow(dead_code)] // accepted as the SDKs send it
    agent: Option<Value>,
    timeout: Option<u64>,
    #[allow(dead_code)] // accepted as the SDKs send it
    url_trace: Option<bool>,
    threat_protection: Option<Value>,
    #[allow(dead_code)]
    origin: Option<String>,
    #[allow(dead_code)]
    integration: Option<String>,
}

/// The keys an extract body may have (for the API document).
pub fn extract_keys() -> &'static [&'static str] {
    body::field_names::<ExtractBody>()
}

/// `POST /v2/agent` on the wire.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct AgentBody {
    prompt: Option<Value>,
    urls: Option<Vec<Value>>,
    schema: Option<Value>,
    max_credits: Option<u64>,
    #[allow(dead_code)] // accepted as the SDKs send it
    strict_constrain_to_urls: Option<bool>,
    model: Option<String>,
    webhook: Option<Value>,
    threat_protection: Option<Value>,
    audit_metadata: Option<Value>,
    #[allow(dead_code)]
    origin: Option<String>,
    #[allow(dead_code)]
    integration: Option<String>,
}

/// The keys an agent body may have (for the API document).
pub fn agent_keys() -> &'static [&'static str] {
    body::field_names::<AgentBody>()
}

fn need_model(state: &AppState, what: &str) -> Result<(), ApiError> {
    match state.scraper.llm() {
        Some(_) => Ok(()),
        None => Err(ApiError::not_available(what, formats::NO_MODEL)),
    }
}

fn schema_of(value: Option<Value>) -> Result<Option<Value>, ApiError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(schema @ Value::Object(_)) => {
            crate::llm::structured::compile(&schema)
                .map_err(|e| ApiError::bad_request(format!("`schema` is not a usable JSON Schema: {e}")))?;
            Ok(Some(schema))
        }
        Some(_) => Err(ApiError::bad_request("`schema` must be a JSON Schema object")),
    }
}

/// The URLs: valid ones, and the invalid ones when they may be skipped.
fn urls_of(list: Option<Vec<Value>>, skip_invalid: bool) -> Result<(Vec<String>, Vec<String>), ApiError> {
    let list = list.unwrap_or_default();
    if list.len() > llm_jobs::MAX_PAGES {
        return Err(ApiError::bad_request(format!("`urls` may hold at most {} URLs", llm_jobs::MAX_PAGES)));
    }
    let (mut valid, mut invalid) = (Vec::new(), Vec::new());
    for (i, value) in list.into_iter().enumerate() {
        match target::parse(Some(value.clone()), &format!("urls[{i}]")) {
            Ok((url, _)) => valid.push(url.to_string()),
            Err(_) if skip_invalid => invalid.push(value.as_str().unwrap_or_default().to_owned()),
            Err(e) => return Err(e),
        }
    }
    Ok((valid, invalid))
}

/// The job's webhook, whose `events` may name `allowed`, checked against the address
/// policy like a crawl's.
fn webhook_of(
    state: &AppState,
    webhook: Option<&Value>,
    allowed: &[EventKind],
) -> Result<Option<WebhookSpec>, ApiError> {
    let Some(value) = webhook.filter(|w| !w.is_null()) else { return Ok(None) };
    let spec = super::webhook::parse_for(value, allowed)?;
    super::webhook::check_allowed(&spec, state.scraper.engine().policy())?;
    Ok(Some(spec))
}

async fn start_extract(
    state: web::Data<AppState>,
    auth: Authenticated,
    bytes: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    need_model(&state, "POST /v2/extract")?;
    let mut map = body::object(&bytes)?;
    map.retain(|key, _| !key.starts_with("__"));
    let body: ExtractBody = body::typed(Value::Object(map), "")?;
    refuse_hosted(body.threat_protection.as_ref(), None, None, "")?;
    let webhook = webhook_of(&state, body.webhook.as_ref(), EventKind::EXTRACT)?;
    let (urls, invalid) = urls_of(body.urls, body.ignore_invalid_urls.unwrap_or(true))?;
    let prompt = formats::prompt(body.prompt, "prompt")?;
    if urls.is_empty() && prompt.is_none() {
        return Err(ApiError::bad_request("either `urls` or `prompt` is required"));
    }
    let scrape = scrape_options(&auth, body.scrape_options)?;
    let request_body = LlmJobRequest {
        kind: Kind::Extract,
        urls,
        prompt,
        system_prompt: body.system_prompt,
        schema: schema_of(body.schema)?,
        scrape,
        web_search: body.enable_web_search.unwrap_or(false),
        max_credits: None,
        model: None,
        timeout_ms: body.timeout.map(|t| t.saturating_mul(1000)),
        webhook,
    };
    let id = start(&state, &auth, request_body).await?;
    let mut answer = json!({"success": true, "id": id, "urlTrace": []});
    if !invalid.is_empty() {
        answer["invalidURLs"] = json!(invalid);
    }
    Ok(HttpResponse::Ok().json(answer))
}

async fn start_agent(
    state: web::Data<AppState>,
    auth: Authenticated,
    bytes: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    need_model(&state, "POST /v2/agent")?;
    let body: AgentBody = body::typed(Value::Object(body::object(&bytes)?), "")?;
    refuse_hosted(body.threat_protection.as_ref(), None, body.audit_metadata.as_ref(), "")?;
    let webhook = webhook_of(&state, body.webhook.as_ref(), EventKind::AGENT)?;
    let prompt = formats::prompt(body.prompt, "prompt")?
        .ok_or_else(|| ApiError::bad_request("`prompt` is required"))?;
    let model = match body.model.as_deref() {
        None => "spark-1-pro".to_owned(),
        Some(m @ ("spark-1-pro" | "spark-1-mini" | "spark-2")) => m.to_owned(),
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "`model` must be spark-1-pro, spark-1-mini or spark-2 (got `{other}`)"
            )));
        }
    };
    let (urls, _) = urls_of(body.urls, false)?;
    let request = LlmJobRequest {
        kind: Kind::Agent,
        urls,
        prompt: Some(prompt),
        system_prompt: None,
        schema: schema_of(body.schema)?,
        scrape: scrape_options(&auth, None)?,
        web_search: false,
        max_credits: body.max_credits,
        model: Some(model),
        timeout_ms: None,
        webhook,
    };
    let id = start(&state, &auth, request).await?;
    Ok(HttpResponse::Ok().json(json!({"success": true, "id": id})))
}

fn scrape_options(
    auth: &Authenticated,
    value: Option<Value>,
) -> Result<crate::model::ScrapeOptions, ApiError> {
    let prefix = "scrapeOptions.";
    match value {
        None | Some(Value::Null) => ScrapeOptionsBody::default().validate(auth.caller(), prefix),
        Some(Value::Object(mut map)) => {
            body::reject_unknown(&mut map, &[body::field_names::<ScrapeOptionsBody>()], prefix)?;
            let mut options = ScrapeOptionsBody::from_map(map, prefix)?.validate(auth.caller(), prefix)?;
            options.formats.markdown = true;
            Ok(options)
        }
        Some(_) => Err(ApiError::bad_request("`scrapeOptions` must be an object")),
    }
}

async fn start(state: &AppState, auth: &Authenticated, request: LlmJobRequest) -> Result<String, ApiError> {
    let (jobs, payer) = (state.llm_jobs.clone(), auth.payer());
    let id = state.off_worker(async move { Ok(jobs.start(payer, request).await?) }).await?;
    Ok(id.to_string())
}

/// The job id of the path, or the answer of the node that owns the job when that is
/// another node.
async fn here(
    state: &AppState,
    request: &HttpRequest,
    path: &str,
) -> Result<Result<crate::model::JobId, HttpResponse>, ApiError> {
    let id = super::scrape::parse_job_id(path)?;
    match forward::to_node_of(state, request, &[], id.tag()).await {
        Some(answer) => Ok(Err(answer?)),
        None => Ok(Ok(id)),
    }
}

async fn status(
    state: web::Data<AppState>,
    auth: Authenticated,
    request: HttpRequest,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let id = match here(&state, &request, &path).await? {
        Ok(id) => id,
        Err(answer) => return Ok(answer),
    };
    let agent = request.path().starts_with("/v2/agent");
    let (jobs, team) = (state.llm_jobs.clone(), auth.team.clone());
    let record = state.off_worker(async move { Ok(jobs.get(id, &team).await?) }).await?;
    let record = record
        .filter(|r| (r.kind == "agent") == agent)
        .ok_or_else(|| ApiError::from(crate::service::JobError::NotFound))?;
    let job = llm_jobs::request_of(&record);
    let done = record.status == "completed";
    // The SDKs know no cancelled agent: it reads as failed, saying why.
    let (status, error) = match (agent, record.status.as_str()) {
        (true, "cancelled") => ("failed", Some("The job was cancelled.".to_owned())),
        (_, status) => (status, record.error.clone()),
    };
    let mut answer = json!({
        "success": status != "failed",
        "status": status,
        "expiresAt": time::iso_ms(record.expires_ms),
        "creditsUsed": record.credits,
        "tokensUsed": record.tokens,
        "data": if done { llm_jobs::result_of(&record) } else { Value::Null },
    });
    if let Some(error) = error {
        answer["error"] = Value::String(error);
    }
    if !record.warnings.is_empty() {
        answer["warning"] = Value::String(record.warnings.join(" "));
    }
    if done {
        let sources: serde_json::Map<String, Value> =
            record.sources.iter().map(|(field, urls)| (field.clone(), json!(urls))).collect();
        answer["sources"] = Value::Object(sources);
    }
    if let Some(model) = job.and_then(|j| j.model) {
        answer["model"] = Value::String(model);
    }
    Ok(HttpResponse::Ok().json(answer))
}

async fn cancel(
    state: web::Data<AppState>,
    auth: Authenticated,
    request: HttpRequest,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let id = match here(&state, &request, &path).await? {
        Ok(id) => id,
        Err(answer) => return Ok(answer),
    };
    let (jobs, team) = (state.llm_jobs.clone(), auth.team.clone());
    let cancelled = state.off_worker(async move { Ok(jobs.cancel(id, &team).await?) }).await?;
    Ok(HttpResponse::Ok().json(json!({"success": cancelled})))
}
