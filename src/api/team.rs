//! Team endpoints (contract §12): credit and token usage (current month and history), the
//! queue and concurrency of the team's work. Numbers are real: a team without a credit plan
//! is unlimited, reported as `planCredits: null`, `unlimited: true` and the largest integer
//! JSON clients read exactly.

use std::sync::Arc;

use actix_web::{HttpRequest, HttpResponse, web};
use serde_json::{Value, json};

use super::error::ApiError;
use super::{AppState, Authenticated};
use base64::Engine as _;

use crate::model::{JobId, time};
use crate::teams::{self as ledger, Month};

/// Tokens per credit (contract §14.7).
const TOKENS_PER_CREDIT: u64 = 15;
/// What "unlimited" remaining credits read as: 2^53 - 1.
const UNLIMITED: u64 = 9_007_199_254_740_991;

/// Registers the routes.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/v2/team/credit-usage").route(web::get().to(credit_usage)))
        .service(web::resource("/v2/team/credit-usage/historical").route(web::get().to(credit_history)))
        .service(web::resource("/v2/team/token-usage").route(web::get().to(token_usage)))
        .service(web::resource("/v2/team/token-usage/historical").route(web::get().to(token_history)))
        .service(web::resource("/v2/team/queue-status").route(web::get().to(queue_status)))
        .service(web::resource("/v2/concurrency-check").route(web::get().to(concurrency_check)))
        .service(web::resource("/v2/team/activity").route(web::get().to(activity)));
}

/// Endpoints an activity record can name (spec §4.11).
pub const ACTIVITY_ENDPOINTS: &[&str] = &[
    "scrape",
    "crawl",
    "batch_scrape",
    "search",
    "extract",
    "llmstxt",
    "deep_research",
    "map",
    "agent",
    "browser",
    "interact",
];
/// How far back the activity log reaches.
const ACTIVITY_WINDOW_MS: u64 = 24 * 3_600_000;

/// Notes that `auth`'s team started job `id` at `endpoint` (without a target for
/// zero-data-retention work).
pub async fn note_activity(
    state: &AppState,
    auth: &Authenticated,
    endpoint: &'static str,
    id: JobId,
    target: Option<String>,
) -> Result<(), ApiError> {
    let (teams, team) = (Arc::clone(&state.runtime.services().teams), auth.team.clone());
    state.off_worker(async move { Ok(teams.note_activity(&team, endpoint, id, target.as_deref())?) }).await
}

/// A synchronous job (scrape, parse) let in under its team's limits: credits checked, a
/// concurrency slot held until this is dropped, the activity noted.
#[derive(Debug)]
pub struct Admitted {
    /// The job's id.
    pub id: JobId,
    /// Time spent waiting for the slot, when the team was at its limit.
    pub queued_ms: Option<u64>,
    _slot: crate::teams::Admission,
}

/// Lets a synchronous job of `auth`'s team in (waiting for a slot when the team is busy).
pub async fn admit(
    state: &AppState,
    auth: &Authenticated,
    endpoint: &'static str,
    target: Option<String>,
) -> Result<Admitted, ApiError> {
    let (teams, team, id) =
        (Arc::clone(&state.runtime.services().teams), auth.team.clone(), state.jobs.new_id());
    state
        .off_worker(async move {
            teams.require(&team, 1).await?;
            let slot = teams.admit(&team).await;
            let queued_ms = slot.waited.map(|w| u64::try_from(w.as_millis()).unwrap_or(u64::MAX));
            teams.note_activity(&team, endpoint, id, target.as_deref())?;
            Ok(Admitted { id, queued_ms, _slot: slot })
        })
        .await
}

fn encode_cursor((at, id): (u64, JobId)) -> String {
    let mut raw = at.to_be_bytes().to_vec();
    raw.extend_from_slice(id.as_bytes());
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(raw)
}

fn decode_cursor(text: &str) -> Option<(u64, JobId)> {
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(text).ok()?;
    if raw.len() != 24 {
        return None;
    }
    let mut at = [0u8; 8];
    at.copy_from_slice(&raw[..8]);
    Some((u64::from_be_bytes(at), JobId::from_bytes(&raw[8..])?))
}

async fn activity(
    req: HttpRequest,
    state: web::Data<AppState>,
    auth: Authenticated,
) -> Result<HttpResponse, ApiError> {
    let (mut endpoint, mut limit, mut cursor) = (None, 50usize, None);
    for (key, value) in url::form_urlencoded::parse(req.query_string().as_bytes()) {
        match key.as_ref() {
            "endpoint" => {
                if !ACTIVITY_ENDPOINTS.contains(&value.as_ref()) {
                    return Err(ApiError::bad_request(format!(
                        "`endpoint` must be one of {} (got `{value}`)",
                        ACTIVITY_ENDPOINTS.join(", ")
                    )));
                }
                endpoint = Some(value.into_owned());
            }
            "limit" => {
                limit = value.parse().ok().filter(|l| (1..=100).contains(l)).ok_or_else(|| {
                    ApiError::bad_request(format!("`limit` must be an integer from 1 to 100 (got `{value}`)"))
                })?;
            }
            "cursor" => {
                cursor =
                    Some(decode_cursor(&value).ok_or_else(|| {
                        ApiError::bad_request("`cursor` is not a cursor this server issued")
                    })?);
            }
            _ => {}
        }
    }
    let since = time::now_ms().saturating_sub(ACTIVITY_WINDOW_MS);
    let teams = std::sync::Arc::clone(&state.runtime.services().teams);
    let team = auth.team.clone();
    let page = web::block(move || teams.activity_page(&team, endpoint.as_deref(), since, cursor, limit))
        .await
        .map_err(|e| ApiError::new(crate::model::Code::Unknown, e.to_string()))??;
    let data: Vec<Value> = page
        .records
        .iter()
        .map(|r| json!({"id": r.id, "endpoint": r.endpoint, "api_version": "v2", "created_at": time::iso_ms(r.created_ms), "target": r.target}))
        .collect();
    Ok(HttpResponse::Ok().json(json!({
        "success": true,
        "data": data,
        "cursor": page.next.map(encode_cursor),
        "has_more": page.next.is_some(),
    })))
}

/// (remaining, plan, period start, period end) in units of `scale` per credit, over every
/// node.
async fn usage(
    state: &AppState,
    auth: &Authenticated,
    scale: u64,
) -> Result<(u64, Option<u64>, String, String), ApiError> {
    let (teams, team) = (Arc::clone(&state.runtime.services().teams), auth.team.clone());
    state
        .off_worker(async move {
            let month = ledger::month_of(time::now_ms());
            let (start, end) = ledger::month_bounds(month);
            let plan = teams.plan(&team).credits;
            let remaining = match plan {
                Some(plan) => {
                    plan.saturating_sub(teams.used_everywhere(&team, month).await?).saturating_mul(scale)
                }
                None => UNLIMITED,
            };
            Ok((remaining, plan.map(|p| p.saturating_mul(scale)), time::iso_ms(start), time::iso_ms(end)))
        })
        .await
}

async fn credit_usage(state: web::Data<AppState>, auth: Authenticated) -> Result<HttpResponse, ApiError> {
    let (remaining, plan, start, end) = usage(&state, &auth, 1).await?;
    Ok(HttpResponse::Ok().json(json!({"success": true, "data": {
        "remainingCredits": remaining, "planCredits": plan, "unlimited": plan.is_none(),
        "billingPeriodStart": start, "billingPeriodEnd": end,
    }})))
}

/// Tokens, as the contract counts them: 15 to a credit, so what is left is the credits left
/// at 15 tokens each. The tokens the team's model calls really used are in
/// `/v2/team/token-usage/historical`.
async fn token_usage(state: web::Data<AppState>, auth: Authenticated) -> Result<HttpResponse, ApiError> {
    let (remaining, plan, start, end) = usage(&state, &auth, TOKENS_PER_CREDIT).await?;
    Ok(HttpResponse::Ok().json(json!({"success": true, "data": {
        "remainingTokens": remaining, "planTokens": plan, "unlimited": plan.is_none(),
        "billingPeriodStart": start, "billingPeriodEnd": end,
    }})))
}

/// The last months' use, newest first, as `{startDate, endDate, <field>}`.
async fn history(
    state: &AppState,
    auth: &Authenticated,
    req: &HttpRequest,
    field: &'static str,
) -> Result<Value, ApiError> {
    /// The history's query: one series per key, or one for the team.
    #[derive(serde::Deserialize)]
    struct HistoryQuery {
        #[serde(rename = "byApiKey", default)]
        by_api_key: bool,
    }
    let by_key = super::body::query::<HistoryQuery>(req.query_string())?.by_api_key;
    if by_key && field == "creditsUsed" {
        return Err(ApiError::not_available(
            "byApiKey",
            "credits are recorded per team; language-model tokens per key (token-usage/historical)",
        ));
    }
    let (teams, team) = (Arc::clone(&state.runtime.services().teams), auth.team.clone());
    state
        .off_worker(async move {
            let mut month: Month = ledger::month_of(time::now_ms());
            let mut periods = Vec::new();
            for _ in 0..ledger::HISTORY_MONTHS {
                let (start, end) = ledger::month_bounds(month);
                let (start, end) = (time::iso_ms(start), time::iso_ms(end));
                if field == "creditsUsed" {
                    let used = teams.used_everywhere(&team, month).await?;
                    periods.push(json!({"startDate": start, "endDate": end, field: used}));
                } else if by_key {
                    for (key, used) in teams.tokens_everywhere(&team, month).await?.1 {
                        periods.push(json!({"startDate": start, "endDate": end, "apiKey": key, field: used}));
                    }
                } else {
                    let (used, _) = teams.tokens_everywhere(&team, month).await?;
                    periods.push(json!({"startDate": start, "endDate": end, field: used}));
                }
                month = ledger::previous_month(month);
            }
            Ok(json!({"success": true, "periods": periods}))
        })
        .await
}

async fn credit_history(
    req: HttpRequest,
    state: web::Data<AppState>,
    auth: Authenticated,
) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(history(&state, &auth, &req, "creditsUsed").await?))
}

async fn token_history(
    req: HttpRequest,
    state: web::Data<AppState>,
    auth: Authenticated,
) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(history(&state, &auth, &req, "tokensUsed").await?))
}

/// The team's pages in flight and waiting, on every node of a cluster.
async fn queue_status(state: web::Data<AppState>, auth: Authenticated) -> Result<HttpResponse, ApiError> {
    let (teams, team) = (Arc::clone(&state.runtime.services().teams), auth.team.clone());
    let (active, waiting, max) =
        state.off_worker(async move { Ok(teams.load_everywhere(&team).await) }).await?;
    let teams = &state.runtime.services().teams;
    Ok(HttpResponse::Ok().json(json!({
        "success": true,
        "jobsInQueue": active + waiting,
        "activeJobsInQueue": active,
        "waitingJobsInQueue": waiting,
        "maxConcurrency": max,
        "mostRecentSuccess": teams.last_success_ms(&auth.team).map(time::iso_ms),
    })))
}

async fn concurrency_check(
    state: web::Data<AppState>,
    auth: Authenticated,
) -> Result<HttpResponse, ApiError> {
    let (teams, team) = (Arc::clone(&state.runtime.services().teams), auth.team.clone());
    let (active, _, max) = state.off_worker(async move { Ok(teams.load_everywhere(&team).await) }).await?;
    Ok(HttpResponse::Ok().json(json!({"success": true, "concurrency": active, "maxConcurrency": max})))
}
