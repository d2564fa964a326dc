//! Browser sessions made without a scrape (contract §13): `POST /v2/browser` opens a blank
//! tab as a session (its lifetimes, live view and profile as asked), `GET /v2/browser`
//! lists the team's sessions, live and destroyed, on every node of a cluster, and
//! `POST /v2/browser/{sessionId}/execute` runs code (or an agent prompt) in one. Ending a session (`DELETE`) and the live view are
//! shared with scrape sessions in [`super::interact`]; every route also answers under
//! `/v2/interact`.

use std::time::Duration;

use actix_web::{HttpRequest, HttpResponse, web};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::error::ApiError;
use super::interact::{admit, adopt, carry_out, on_session_node, validate};
use super::{AppState, Authenticated, body};
use crate::actors::browser::{BrowserMsg, Found, Limits, Listed, Opened, SessionKey};
use crate::model::{Code, time};

/// Body of `POST /v2/browser`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct CreateBody {
    ttl: Option<Value>,
    activity_ttl: Option<Value>,
    stream_web_view: Option<bool>,
    /// Accepted; sessions are not recorded (no `replay` route).
    #[allow(dead_code)]
    record_session: Option<bool>,
    #[allow(dead_code)]
    profile: Option<Value>,
    #[allow(dead_code)]
    integration: Option<String>,
    #[allow(dead_code)]
    origin: Option<String>,
}

/// The keys the body of `POST /v2/browser` may have (for the API document).
pub fn create_keys() -> &'static [&'static str] {
    body::field_names::<CreateBody>()
}

/// What `POST /v2/browser` answers.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Created {
    success: bool,
    id: String,
    cdp_url: String,
    live_view_url: String,
    interactive_live_view_url: String,
    expires_at: String,
}

/// One session of `GET /v2/browser`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct SessionEntry {
    id: String,
    status: &'static str,
    cdp_url: String,
    live_view_url: String,
    interactive_live_view_url: String,
    stream_web_view: bool,
    created_at: String,
    last_activity: String,
}

/// Seconds in `value` (a whole number in `range`), or `default`, naming `field` when invalid.
fn seconds(
    value: Option<&Value>,
    field: &str,
    range: std::ops::RangeInclusive<u64>,
    default: u64,
) -> Result<u64, ApiError> {
    match value {
        None | Some(Value::Null) => Ok(default),
        Some(v) => v.as_u64().filter(|s| range.contains(s)).ok_or_else(|| {
            ApiError::bad_request(format!(
                "Invalid value for `{field}`: a whole number of seconds from {} to {}",
                range.start(),
                range.end()
            ))
        }),
    }
}

/// Open a browser session without a scrape.
#[utoipa::path(
    post,
    path = "/v2/browser",
    request_body(content = inline(Object), description = "`ttl` (30..3600 s, default 600; at most browser.session_max_secs), `activityTtl` (10..3600 s, default 300), `streamWebView` (default true), `recordSession` (accepted, not recorded), `profile` `{name, saveChanges}`, `integration`, `origin`"),
    responses(
        (status = 200, description = "`{success, id, cdpUrl, liveViewUrl, interactiveLiveViewUrl, expiresAt}`"),
        (status = 400, description = "Invalid request", body = super::error::ErrorBody),
        (status = 402, description = "Not enough credits for a session", body = super::error::ErrorBody),
        (status = 429, description = "Too many sessions", body = super::error::ErrorBody),
        (status = 502, description = "The browser failed", body = super::error::ErrorBody),
        (status = 503, description = "No Chromium on this server", body = super::error::ErrorBody)
    ),
    security(("bearer" = []))
)]
pub async fn create(
    state: web::Data<AppState>,
    auth: Authenticated,
    bytes: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    let bytes: &[u8] = if bytes.iter().all(u8::is_ascii_whitespace) { b"{}" } else { &bytes };
    let mut map = body::object(bytes)?;
    body::reject_unknown(&mut map, &[body::field_names::<CreateBody>()], "")?;
    let profile = super::actions::profile(map.remove("profile").unwrap_or(Value::Null), "")?;
    let parsed: CreateBody = body::typed(Value::Object(map), "")?;
    let max_life = state.settings.browser.session_max_secs;
    let ttl = seconds(parsed.ttl.as_ref(), "ttl", 30..=3600, 600)?.min(max_life);
    let idle = seconds(parsed.activity_ttl.as_ref(), "activityTtl", 10..=3600, 300)?;
    state
        .scraper
        .browser()
        .available()
        .map_err(|e| ApiError::new(Code::BrowserUnavailable, e.to_string()))?;
    let team = auth.team.clone();
    admit(&state, &team).await?;
    let (scraper, who, name) =
        (state.scraper.clone(), team.clone(), profile.as_ref().map(|p| p.name.clone()));
    let tab = state
        .off_worker(async move {
            scraper.open_blank(&who, name.as_deref()).await.map_err(|e| {
                ApiError::new(Code::BrowserFailed, format!("Opening the browser session failed: {e}"))
            })
        })
        .await?;
    let id = state.runtime.services().new_id();
    let opened = Box::new(Opened {
        team: team.clone(),
        scrape_id: id,
        standalone: true,
        tab,
        save_profile: profile.filter(|p| p.save_changes).map(|p| p.name),
        limits: Limits {
            ttl: Some(Duration::from_secs(ttl)),
            idle: Some(Duration::from_secs(idle)),
            stream_web_view: parsed.stream_web_view.unwrap_or(true),
        },
    });
    let view = adopt(&state, opened, "browser").await?;
    let base = state.scraper.public_base();
    Ok(HttpResponse::Ok().json(Created {
        success: true,
        id: view.session_id,
        cdp_url: super::cdp::url(base, &view.control_token),
        live_view_url: format!("{base}/v2/live/{}", view.view_token),
        interactive_live_view_url: format!("{base}/v2/live/{}", view.control_token),
        expires_at: time::iso_ms(time::now_ms().saturating_add(ttl.saturating_mul(1000))),
    }))
}

/// Query of `GET /v2/browser`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ListQuery {
    status: Option<String>,
}

/// List the team's browser sessions.
#[utoipa::path(
    get,
    path = "/v2/browser",
    params(("status" = Option<String>, Query, description = "`active` or `destroyed` (default: both)")),
    responses(
        (status = 200, description = "`{success, sessions: [{id, status, cdpUrl, liveViewUrl, interactiveLiveViewUrl, streamWebView, createdAt, lastActivity}]}`"),
        (status = 400, description = "Invalid `status`", body = super::error::ErrorBody)
    ),
    security(("bearer" = []))
)]
pub async fn list(
    state: web::Data<AppState>,
    auth: Authenticated,
    request: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let query: ListQuery = body::query(request.query_string())?;
    let wanted = match query.status.as_deref() {
        None => None,
        Some("active") => Some(true),
        Some("destroyed") => Some(false),
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "Invalid value for `status`: `{other}` is not one of active, destroyed"
            )));
        }
    };
    let team = auth.team.clone();
    let all = state.runtime.browser_call(|reply| BrowserMsg::List(team, reply)).await?;
    let base = state.scraper.public_base();
    let sessions: Vec<SessionEntry> = all
        .into_iter()
        .filter(|s| wanted.is_none_or(|active| s.active == active))
        .map(|s: Listed| SessionEntry {
            status: if s.active { "active" } else { "destroyed" },
            cdp_url: super::cdp::url(base, &s.control_token),
            live_view_url: format!("{base}/v2/live/{}", s.view_token),
            interactive_live_view_url: format!("{base}/v2/live/{}", s.control_token),
            stream_web_view: s.stream_web_view,
            created_at: time::iso_ms(s.created_ms),
            last_activity: time::iso_ms(s.last_activity_ms),
            id: s.id,
        })
        .collect();
    // In a cluster, the sessions other nodes hold (each session lives where its Chromium is).
    let mut sessions: Vec<Value> =
        sessions.into_iter().filter_map(|s| serde_json::to_value(s).ok()).collect();
    let mut missing = Vec::new();
    for (node, answer) in super::forward::to_every_node(&state, &request).await {
        match answer {
            Ok((200, body)) => {
                let theirs: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                sessions.extend(theirs["sessions"].as_array().cloned().unwrap_or_default());
            }
            _ => missing.push(node),
        }
    }
    // Newest first (ISO times of one format sort as text).
    sessions.sort_by(|a, b| b["createdAt"].as_str().cmp(&a["createdAt"].as_str()));
    let mut answer = serde_json::json!({"success": true, "sessions": sessions});
    if !missing.is_empty() {
        answer["warning"] = Value::String(format!(
            "Nodes that did not answer (their sessions are not listed): {}.",
            missing.join(", ")
        ));
    }
    Ok(HttpResponse::Ok().json(answer))
}

/// Run code in a browser session.
#[utoipa::path(
    post,
    path = "/v2/browser/{sessionId}/execute",
    params(("sessionId" = String, Path, description = "The session id")),
    request_body(content = inline(Object), description = "`code` (1..100000 characters) or `prompt`, `language` (node, python, bash; default node), `timeout` (1..300 s, default 30)"),
    responses(
        (status = 200, description = "`{success, sessionId, cdpUrl, liveViewUrl, interactiveLiveViewUrl, stdout, result, stderr, exitCode, killed, error?}`"),
        (status = 400, description = "Invalid request or language not enabled", body = super::error::ErrorBody),
        (status = 404, description = "No session of the caller's team", body = super::error::ErrorBody),
        (status = 410, description = "The session was destroyed", body = super::error::ErrorBody),
        (status = 502, description = "The browser failed", body = super::error::ErrorBody)
    ),
    security(("bearer" = []))
)]
pub async fn execute(
    state: web::Data<AppState>,
    auth: Authenticated,
    request: HttpRequest,
    path: web::Path<String>,
    bytes: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    if let Some(answer) = on_session_node(&state, &request, &bytes, &path).await {
        return answer;
    }
    if body::object(&bytes)?.contains_key("existingSessionId") {
        return Err(ApiError::bad_request("Unrecognized key in body: `existingSessionId`"));
    }
    let work = validate(&state, &auth.team, &bytes)?;
    let key = SessionKey::Session(path.into_inner());
    let view = match state.runtime.browser_call(|reply| BrowserMsg::Find(key, reply)).await? {
        Some((owner, Found::Active(view))) if owner == auth.team.as_str() => view,
        Some((owner, Found::Destroyed)) if owner == auth.team.as_str() => {
            return Err(ApiError::new(Code::SessionDestroyed, "This browser session was already destroyed."));
        }
        _ => return Err(ApiError::new(Code::NotFound, "Browser session not found.")),
    };
    carry_out(&state, &auth, view, work).await
}
