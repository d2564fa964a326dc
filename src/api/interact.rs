//! Interact sessions over HTTP (spec §3, §4.8–4.10): `POST /v2/scrape/{id}/interact` runs
//! code in the scrape's live page (creating the session on first use, or in the team's
//! session named by `existingSessionId`), `DELETE` on the same path or on
//! `/v2/browser/{sessionId}` (or `/v2/browser` with `{id}`) ends it and reports its duration,
//! cost and whether its clean-up was queued, and `/v2/live/{token}` serves the live view,
//! whose frames and input are messages to the session's actor. Every `/v2/browser` route
//! also answers under `/v2/interact`, as the contract lists.

use std::time::Duration;

use actix_web::{HttpRequest, HttpResponse, web};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::error::ApiError;
use super::scrape::parse_job_id;
use super::{AppState, Authenticated, body, forward};
use crate::actors::browser::code::{CodeOutcome, Language};
use crate::actors::browser::live::{self, InputError};
use crate::actors::browser::{
    AdoptError, BrowserMsg, Found, LiveAccess, Opened, SessionKey, SessionMsg, SessionView, UseError,
    registry,
};
use crate::model::{Code, JobId, TeamId};
use crate::scrape::ReplayLookup;

/// Registers the routes.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/v2/scrape/{id}/interact")
            .route(web::post().to(interact))
            .route(web::delete().to(stop_interact)),
    );
    for base in ["/v2/browser", "/v2/interact"] {
        cfg.service(
            web::resource(base)
                .route(web::post().to(super::browser::create))
                .route(web::get().to(super::browser::list))
                .route(web::delete().to(delete_by_body)),
        )
        .service(web::resource(format!("{base}/{{sessionId}}")).route(web::delete().to(delete_session)))
        .service(
            web::resource(format!("{base}/{{sessionId}}/execute"))
                .route(web::post().to(super::browser::execute)),
        );
    }
    cfg.service(web::resource("/v2/live/{token}").route(web::get().to(live_page)))
        .service(web::resource("/v2/live/{token}/frame").route(web::get().to(live_frame)))
        .service(web::resource("/v2/live/{token}/stream").route(web::get().to(live_stream)))
        .service(web::resource("/v2/live/{token}/input").route(web::post().to(live_input)));
}

/// Body of `POST /v2/scrape/{id}/interact`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct InteractBody {
    code: Option<String>,
    prompt: Option<String>,
    language: Option<String>,
    timeout: Option<Value>,
    #[allow(dead_code)]
    origin: Option<String>,
    #[allow(dead_code)]
    integration: Option<String>,
    existing_session_id: Option<String>,
}

/// The keys the body of an interact call may have (for the API document; a session's
/// `execute` takes them all but `existingSessionId`).
pub fn accepted_keys() -> &'static [&'static str] {
    body::field_names::<InteractBody>()
}

/// What `POST .../interact` and `POST /v2/browser/{id}/execute` answer.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct InteractResponse {
    success: bool,
    session_id: String,
    cdp_url: String,
    live_view_url: String,
    interactive_live_view_url: String,
    stdout: String,
    result: String,
    stderr: String,
    exit_code: i32,
    killed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    /// The agent's answer (with `prompt` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    output: Option<String>,
}

impl InteractResponse {
    /// The answer for `outcome` in session `view`, its links under `base`.
    pub(super) fn new(base: &str, view: SessionView, outcome: CodeOutcome, output: Option<String>) -> Self {
        Self {
            success: outcome.exit_code == 0 && !outcome.killed,
            session_id: view.session_id,
            cdp_url: super::cdp::url(base, &view.control_token),
            live_view_url: format!("{base}/v2/live/{}", view.view_token),
            interactive_live_view_url: format!("{base}/v2/live/{}", view.control_token),
            stdout: outcome.stdout,
            result: outcome.result,
            stderr: outcome.stderr,
            exit_code: outcome.exit_code,
            killed: outcome.killed,
            error: outcome.error,
            output,
        }
    }
}

/// What ending a session answers.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct EndResponse {
    success: bool,
    session_duration_ms: u64,
    credits_billed: u64,
    cleanup_queued: bool,
}

/// A validated interact request.
pub(super) struct Work {
    code: String,
    /// The agent's task, instead of code.
    pub(super) prompt: Option<String>,
    language: Language,
    pub(super) timeout: Duration,
    /// The team's session to run in, instead of the scrape's own.
    session: Option<String>,
}

pub(super) fn validate(state: &AppState, team: &TeamId, bytes: &[u8]) -> Result<Work, ApiError> {
    let mut map = body::object(bytes)?;
    body::reject_unknown(&mut map, &[body::field_names::<InteractBody>()], "")?;
    let body: InteractBody = body::typed(Value::Object(map), "")?;
    let session = match body.existing_session_id {
        Some(id) if id.trim().is_empty() || id.len() > 128 => {
            return Err(ApiError::bad_request(
                "Invalid value for `existingSessionId`: a session id (sessionId of an interact response)",
            ));
        }
        other => other,
    };
    let timeout = match &body.timeout {
        None => 30,
        Some(v) => v.as_u64().filter(|t| (1..=300).contains(t)).ok_or_else(|| {
            ApiError::bad_request("Invalid value for `timeout`: a whole number of seconds from 1 to 300")
        })?,
    };
    let code = match (body.code, body.prompt) {
        (Some(_), Some(_)) => return Err(ApiError::bad_request("Send either `code` or `prompt`, not both")),
        (None, None) => return Err(ApiError::bad_request("Send `code` (or `prompt`)")),
        (None, Some(prompt)) => {
            if prompt.is_empty() || prompt.chars().count() > 10_000 {
                return Err(ApiError::bad_request("Invalid value for `prompt`: 1 to 10000 characters"));
            }
            if state.scraper.llm().is_none() {
                return Err(ApiError::new(
                    Code::AgentUnavailable,
                    "`prompt` needs a language model; the operator sets llm.base_url to enable it (or send `code`)",
                ));
            }
            let timeout = Duration::from_secs(timeout);
            return Ok(Work {
                code: String::new(),
                prompt: Some(prompt),
                language: Language::Node,
                timeout,
                session,
            });
        }
        (Some(code), None) => code,
    };
    if code.is_empty() || code.chars().count() > 100_000 {
        return Err(ApiError::bad_request("Invalid value for `code`: 1 to 100000 characters"));
    }
    let name = body.language.as_deref().unwrap_or("node");
    let language = Language::parse(name).ok_or_else(|| {
        ApiError::bad_request(format!(
            "Invalid value for `language`: `{name}` is not one of python, node, bash"
        ))
    })?;
    if let Err(why) = state.settings.team_may_run(team.as_str(), language.name()) {
        return Err(ApiError::not_available("language", &format!("`{name}` code is {why}")));
    }
    Ok(Work { code, prompt: None, language, timeout: Duration::from_secs(timeout), session })
}

/// Run code in a scrape's live browser session (created on first use).
#[utoipa::path(
    post,
    path = "/v2/scrape/{id}/interact",
    params(("id" = String, Path, description = "The scrape id (metadata.scrapeId)")),
    request_body(content = inline(Object), description = "`code` (1..100000 characters) or `prompt`, `language` (node, python, bash; default node), `timeout` (1..300 s, default 30), `existingSessionId` (run in this live session of the team; it becomes the scrape's session when the scrape has none)"),
    responses(
        (status = 200, description = "`{success, sessionId, liveViewUrl, interactiveLiveViewUrl, stdout, result, stderr, exitCode, killed, error?}`"),
        (status = 400, description = "Invalid request or language not enabled", body = super::error::ErrorBody),
        (status = 402, description = "Not enough credits for a session", body = super::error::ErrorBody),
        (status = 403, description = "Another team's scrape", body = super::error::ErrorBody),
        (status = 404, description = "Unknown scrape, or `existingSessionId` names no session of the team", body = super::error::ErrorBody),
        (status = 409, description = "The scrape's replay context is unavailable", body = super::error::ErrorBody),
        (status = 410, description = "The session was destroyed", body = super::error::ErrorBody),
        (status = 429, description = "Too many sessions", body = super::error::ErrorBody),
        (status = 502, description = "The browser failed", body = super::error::ErrorBody),
        (status = 503, description = "No Chromium, or `prompt` (no language model)", body = super::error::ErrorBody)
    ),
    security(("bearer" = []))
)]
pub async fn interact(
    state: web::Data<AppState>,
    auth: Authenticated,
    request: HttpRequest,
    path: web::Path<String>,
    bytes: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    let id = parse_job_id(&path)?;
    if let Some(answer) = forward::to_node_of(&state, &request, &bytes, id.tag()).await {
        return answer;
    }
    let work = validate(&state, &auth.team, &bytes)?;
    if let Some((session, tag)) = session_elsewhere(&state, &request, id, work.session.as_deref()).await? {
        // Checked here, where the scrape's state is; run there, where the session's Chromium is.
        check_scrape(&state, &auth.team, id).await?;
        let body = with_session(&bytes, &session)?;
        if let Some(answer) = forward::vouched_to_node_of(&state, &request, &body, tag, &id.to_string()).await
        {
            let answer = answer?;
            if answer.status().is_success() {
                let _ = state.runtime.browser_cast(BrowserMsg::BindElsewhere { scrape: id, session }).await;
            }
            return Ok(answer);
        }
    }
    state
        .scraper
        .browser()
        .available()
        .map_err(|e| ApiError::new(Code::BrowserUnavailable, e.to_string()))?;
    let checked = forward::vouched_for(&request) == Some(path.as_str());
    let view = match &work.session {
        Some(session) => named_session(&state, &auth.team, id, session.clone(), checked).await?,
        None => session_for(&state, &auth.team, id).await?,
    };
    carry_out(&state, &auth, view, work).await
}

/// Runs `work` (code, or an agent prompt) in session `view` and answers with its outcome;
/// the session's idle clock restarts before and after.
pub(super) async fn carry_out(
    state: &AppState,
    auth: &Authenticated,
    view: SessionView,
    work: Work,
) -> Result<HttpResponse, ApiError> {
    let _ = state.runtime.browser_cast(BrowserMsg::Touch(view.session_id.clone())).await;
    let (outcome, output) = match (&work.prompt, state.scraper.llm()) {
        (Some(prompt), Some(llm)) => {
            let _ = state.runtime.browser_cast(BrowserMsg::Prompted(view.session_id.clone())).await;
            let done =
                super::interact_agent::run(llm, &auth.payer(), &view.actor, prompt, work.timeout).await;
            (done.outcome, done.output)
        }
        _ => (run_code(&view, work).await?, None),
    };
    let _ = state.runtime.browser_cast(BrowserMsg::Touch(view.session_id.clone())).await;
    Ok(HttpResponse::Ok().json(InteractResponse::new(state.scraper.public_base(), view, outcome, output)))
}

/// Runs the request's code in the session.
pub(super) async fn run_code(view: &SessionView, work: Work) -> Result<CodeOutcome, ApiError> {
    let call = view
        .actor
        .call(
            |reply| SessionMsg::Execute {
                code: work.code,
                language: work.language,
                timeout: work.timeout,
                reply,
            },
            Some(work.timeout + Duration::from_secs(15)),
        )
        .await;
    let failed = match call {
        Ok(ractor::rpc::CallResult::Success(Ok(outcome))) => return Ok(outcome),
        Ok(ractor::rpc::CallResult::Success(Err(why))) => format!("The browser session ended: {why}."),
        _ => "The browser session stopped while running the code.".to_owned(),
    };
    // The session's browser died (its actor stops itself once the run is over) or its actor
    // stopped: once the actor has, the browser actor has its end in hand before any later
    // request (so the next call on it is 410, not a second 502; one that comes while the
    // actor is still stopping finds it ended too).
    let _ = view.actor.wait(Some(SESSION_STOP_WAIT)).await;
    Err(ApiError::new(Code::BrowserFailed, failed))
}

/// Longest a request whose session's actor stopped waits for it to finish stopping.
const SESSION_STOP_WAIT: Duration = Duration::from_secs(2);

fn forbidden() -> ApiError {
    ApiError::new(Code::Forbidden, "This scrape job belongs to another team.")
}

fn session_not_found() -> ApiError {
    ApiError::new(Code::NotFound, "Browser session not found.")
}

fn session_destroyed() -> ApiError {
    ApiError::new(Code::SessionDestroyed, "The browser session of this scrape was already destroyed.")
}

/// The team's live session `session`, for a request on scrape `id` (which must be the
/// team's, checked here unless the scrape's own node did: `scrape_checked`): the session
/// need not have been made for this scrape, and becomes this scrape's session when the
/// scrape has no live one.
async fn named_session(
    state: &AppState,
    team: &TeamId,
    id: JobId,
    session: String,
    scrape_checked: bool,
) -> Result<SessionView, ApiError> {
    let key = SessionKey::Session(session.clone());
    let made_for_this_scrape = matches!(
        state.runtime.browser_call(|reply| BrowserMsg::Find(key, reply)).await?,
        Some((owner, Found::Active(view))) if owner == team.as_str() && view.scrape_id == id
    );
    if !made_for_this_scrape && !scrape_checked {
        check_scrape(state, team, id).await?;
    }
    let team = team.clone();
    let used =
        state.runtime.browser_call(|reply| BrowserMsg::Use { session, scrape: id, team, reply }).await?;
    used.map_err(|e| match e {
        UseError::NotFound => session_not_found(),
        UseError::Destroyed => {
            ApiError::new(Code::SessionDestroyed, "This browser session was already destroyed.")
        }
    })
}

/// Where scrape `id`'s page state is kept (read off the HTTP workers).
async fn replay_of(state: &AppState, id: JobId) -> Result<ReplayLookup, ApiError> {
    let scraper = state.scraper.clone();
    state.off_worker(async move { Ok(scraper.replay_context(id)?) }).await
}

/// The live session of scrape `id`, created in the scrape's page state on first use.
async fn session_for(state: &AppState, team: &TeamId, id: JobId) -> Result<SessionView, ApiError> {
    match state.runtime.browser_call(|reply| BrowserMsg::Find(SessionKey::Scrape(id), reply)).await? {
        Some((owner, _)) if owner != team.as_str() => return Err(forbidden()),
        Some((_, Found::Active(view))) => return Ok(view),
        Some((_, Found::Destroyed)) => return Err(session_destroyed()),
        None => {}
    }
    let replay = match replay_of(state, id).await? {
        ReplayLookup::Unknown => return Err(ApiError::job_not_found()),
        ReplayLookup::Unavailable { team: owner } if owner != team.as_str() => return Err(forbidden()),
        ReplayLookup::Found(replay) if replay.team != team.as_str() => return Err(forbidden()),
        ReplayLookup::Unavailable { .. } => {
            return Err(ApiError::new(
                Code::ReplayUnavailable,
                "The scrape's replay context is unavailable (zero data retention); scrape again and retry.",
            ));
        }
        ReplayLookup::Found(replay) => replay,
    };
    admit(state, team).await?;
    let (scraper, who, context) = (state.scraper.clone(), team.clone(), replay.clone());
    let tab = state
        .off_worker(async move {
            scraper.open_replay(&context, &who).await.map_err(|e| {
                ApiError::new(Code::BrowserFailed, format!("Re-creating the scrape's page failed: {e}"))
            })
        })
        .await?;
    let save_profile = replay.options.profile.as_ref().filter(|p| p.save_changes).map(|p| p.name.clone());
    let opened = Box::new(Opened {
        team: team.clone(),
        scrape_id: id,
        standalone: false,
        tab,
        save_profile,
        limits: crate::actors::browser::Limits::default(),
    });
    adopt(state, opened, "interact").await
}

fn session_limit() -> ApiError {
    ApiError::new(Code::SessionLimit, "The maximum of concurrent browser sessions is reached.")
}

/// Whether `team` may open one more session: credits for its least cost, and room under
/// `browser.max_sessions`.
pub(super) async fn admit(state: &AppState, team: &TeamId) -> Result<(), ApiError> {
    let (teams, who) = (std::sync::Arc::clone(&state.runtime.services().teams), team.clone());
    state.off_worker(async move { Ok(teams.require(&who, registry::MIN_CREDITS).await?) }).await?;
    if state.runtime.browser_call(BrowserMsg::Live).await? >= state.settings.browser.max_sessions {
        return Err(session_limit());
    }
    Ok(())
}

/// Makes a session of `opened` and notes it in the team's activity under `endpoint`.
pub(super) async fn adopt(
    state: &AppState,
    opened: Box<Opened>,
    endpoint: &'static str,
) -> Result<SessionView, ApiError> {
    let (team, id) = (opened.team.clone(), opened.scrape_id);
    let view = state.runtime.browser_call(|reply| BrowserMsg::Adopt(opened, reply)).await?;
    let view = view.map_err(|AdoptError::Limit| session_limit())?;
    let teams = std::sync::Arc::clone(&state.runtime.services().teams);
    state.off_worker(async move { Ok(teams.note_activity(&team, endpoint, id, None)?) }).await?;
    Ok(view)
}

/// End a scrape's browser session.
#[utoipa::path(
    delete,
    path = "/v2/scrape/{id}/interact",
    params(("id" = String, Path, description = "The scrape id")),
    responses(
        (status = 200, description = "`{success, sessionDurationMs, creditsBilled, cleanupQueued}`"),
        (status = 404, description = "No live session of the caller's team", body = super::error::ErrorBody)
    ),
    security(("bearer" = []))
)]
pub async fn stop_interact(
    state: web::Data<AppState>,
    auth: Authenticated,
    request: HttpRequest,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let id = parse_job_id(&path)?;
    if let Some(answer) = forward::to_node_of(&state, &request, &[], id.tag()).await {
        return answer;
    }
    if let Some((_, tag)) = session_elsewhere(&state, &request, id, None).await?
        && let Some(answer) = forward::vouched_to_node_of(&state, &request, &[], tag, &id.to_string()).await
    {
        return answer;
    }
    end(&state, SessionKey::Scrape(id), auth.team).await
}

/// The session on another node that a call about scrape `id` (of this node) is for: the
/// one `existingSessionId` names, or else, when the scrape has no session here, the one an
/// earlier call bound it to. With that node's tag. `None` when the session is here (or
/// the call was passed on to run here already).
async fn session_elsewhere(
    state: &AppState,
    request: &HttpRequest,
    id: JobId,
    named: Option<&str>,
) -> Result<Option<(String, u32)>, ApiError> {
    let Some(cluster) = state.runtime.services().cluster.as_ref() else {
        return Ok(None);
    };
    if forward::vouched_for(request).is_some() {
        return Ok(None);
    }
    let session = match named {
        Some(session) => session.to_owned(),
        None => {
            if state
                .runtime
                .browser_call(|reply| BrowserMsg::Find(SessionKey::Scrape(id), reply))
                .await?
                .is_some()
            {
                return Ok(None);
            }
            match state.runtime.browser_call(|reply| BrowserMsg::Elsewhere(id, reply)).await? {
                Some(session) => session,
                None => return Ok(None),
            }
        }
    };
    let Some(tag) = JobId::parse(&session).map(|s| s.tag()) else {
        return Ok(None);
    };
    Ok((!matches!(cluster.holder_of_tag(tag), crate::cluster::Holder::Here)).then_some((session, tag)))
}

/// Whether scrape `id` is the team's: 404 when unknown, 403 when another team's.
async fn check_scrape(state: &AppState, team: &TeamId, id: JobId) -> Result<(), ApiError> {
    match replay_of(state, id).await? {
        ReplayLookup::Unknown => Err(ApiError::job_not_found()),
        ReplayLookup::Unavailable { team: owner } if owner != team.as_str() => Err(forbidden()),
        ReplayLookup::Found(replay) if replay.team != team.as_str() => Err(forbidden()),
        ReplayLookup::Unavailable { .. } | ReplayLookup::Found(_) => Ok(()),
    }
}

/// The interact body `bytes` with `existingSessionId` set to `session`.
fn with_session(bytes: &[u8], session: &str) -> Result<Vec<u8>, ApiError> {
    let mut map = body::object(bytes)?;
    map.insert("existingSessionId".to_owned(), Value::String(session.to_owned()));
    serde_json::to_vec(&map).map_err(|e| ApiError::new(Code::Unknown, e.to_string()))
}

/// End a browser session by its id.
#[utoipa::path(
    delete,
    path = "/v2/browser/{sessionId}",
    params(("sessionId" = String, Path, description = "The session id (sessionId of an interact response)")),
    responses(
        (status = 200, description = "`{success, sessionDurationMs, creditsBilled, cleanupQueued}`"),
        (status = 404, description = "No live session of the caller's team", body = super::error::ErrorBody)
    ),
    security(("bearer" = []))
)]
pub async fn delete_session(
    state: web::Data<AppState>,
    auth: Authenticated,
    request: HttpRequest,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    if let Some(answer) = on_session_node(&state, &request, &[], &path).await {
        return answer;
    }
    end(&state, SessionKey::Session(path.into_inner()), auth.team).await
}

/// Passes a request about browser session `session` to the node that holds it (its id
/// carries the node's tag); `None` when that is this node.
pub(super) async fn on_session_node(
    state: &AppState,
    request: &HttpRequest,
    body: &[u8],
    session: &str,
) -> Option<Result<HttpResponse, ApiError>> {
    let id = JobId::parse(session)?;
    forward::to_node_of(state, request, body, id.tag()).await
}

async fn delete_by_body(
    state: web::Data<AppState>,
    auth: Authenticated,
    request: HttpRequest,
    bytes: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct DeleteBody {
        id: String,
    }
    let mut map = body::object(&bytes)?;
    body::reject_unknown(&mut map, &[&["id"]], "")?;
    let parsed: DeleteBody = body::typed(Value::Object(map), "")?;
    if let Some(answer) = on_session_node(&state, &request, &bytes, &parsed.id).await {
        return answer;
    }
    end(&state, SessionKey::Session(parsed.id), auth.team).await
}

async fn end(state: &AppState, key: SessionKey, team: TeamId) -> Result<HttpResponse, ApiError> {
    let ended = state.runtime.browser_call(|reply| BrowserMsg::End(key, team, reply)).await?;
    let ended = ended.ok_or_else(session_not_found)?;
    Ok(HttpResponse::Ok().json(EndResponse {
        success: true,
        session_duration_ms: ended.duration_ms,
        credits_billed: ended.credits,
        cleanup_queued: ended.cleanup_queued,
    }))
}

pub(super) async fn access(state: &AppState, token: &str) -> Result<LiveAccess, ApiError> {
    let token = token.to_owned();
    state.runtime.browser_call(|reply| BrowserMsg::Access(token, reply)).await?.ok_or_else(live_ended)
}

/// A live-view request: answered by the node holding the session (its token starts with
/// that node's tag), or here, with the access the token grants.
enum Live {
    There(HttpResponse),
    Here(LiveAccess),
}

async fn live(state: &AppState, request: &HttpRequest, body: &[u8], token: &str) -> Result<Live, ApiError> {
    if let Some(tag) = registry::tag_of_token(token)
        && let Some(answer) = forward::to_node_of(state, request, body, tag).await
    {
        return answer.map(Live::There);
    }
    access(state, token).await.map(Live::Here)
}

async fn live_page(
    state: web::Data<AppState>,
    request: HttpRequest,
    token: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let access = match live(&state, &request, &[], &token).await? {
        Live::There(answer) => return Ok(answer),
        Live::Here(access) => access,
    };
    Ok(HttpResponse::Ok()
        .content_type("text/html; charset=utf-8")
        .insert_header(("Cache-Control", "no-store"))
        .insert_header(("Referrer-Policy", "no-referrer"))
        .body(live::page_html(&token, access.interactive, access.stream)))
}

async fn live_frame(
    state: web::Data<AppState>,
    request: HttpRequest,
    token: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let access = match live(&state, &request, &[], &token).await? {
        Live::There(answer) => return Ok(answer),
        Live::Here(access) => access,
    };
    let jpeg = ask_session(&access, SessionMsg::Frame, LIVE_CALL).await?.map_err(browser_failed)?;
    Ok(HttpResponse::Ok().content_type("image/jpeg").insert_header(("Cache-Control", "no-store")).body(jpeg))
}

/// The screen as `multipart/x-mixed-replace` JPEG frames (an `<img>` shows it), from the
/// current frame on; from the node holding the session when that is another one
/// ([`super::tunnel`]).
async fn live_stream(
    state: web::Data<AppState>,
    request: HttpRequest,
    token: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    use futures::StreamExt;
    if let Some(answer) = super::tunnel::stream_from_node_of(&state, &request, &token).await {
        return answer;
    }
    let access = access(&state, &token).await?;
    if !access.stream {
        return Err(ApiError::new(
            Code::NotFound,
            "This session's live view does not stream (streamWebView false).",
        ));
    }
    let current = ask_session(&access, SessionMsg::Frame, LIVE_CALL).await?.map_err(browser_failed)?;
    let frames = ask_session(&access, SessionMsg::Watch, LIVE_CALL).await?.map_err(browser_failed)?;
    let part = |jpeg: &[u8]| {
        let mut out =
            format!("--frame\r\nContent-Type: image/jpeg\r\nContent-Length: {}\r\n\r\n", jpeg.len())
                .into_bytes();
        out.extend_from_slice(jpeg);
        out.extend_from_slice(b"\r\n");
        web::Bytes::from(out)
    };
    let first = part(&current);
    let rest = futures::stream::unfold(frames, move |mut frames| async move {
        loop {
            match frames.recv().await {
                Ok(jpeg) => return Some((part(&jpeg), frames)),
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return None,
            }
        }
    });
    let body = futures::stream::once(async move { first }).chain(rest).map(Ok::<_, std::convert::Infallible>);
    Ok(HttpResponse::Ok()
        .content_type("multipart/x-mixed-replace; boundary=frame")
        .insert_header(("Cache-Control", "no-store"))
        .streaming(body))
}

async fn live_input(
    state: web::Data<AppState>,
    request: HttpRequest,
    token: web::Path<String>,
    bytes: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    let access = match live(&state, &request, &bytes, &token).await? {
        Live::There(answer) => return Ok(answer),
        Live::Here(access) => access,
    };
    if !access.interactive {
        return Err(ApiError::new(Code::Forbidden, "This live view is read-only."));
    }
    let map = body::object(&bytes)?;
    let input: live::Input = body::typed(Value::Object(map), "")?;
    input.validate().map_err(input_error)?;
    ask_session(&access, |reply| SessionMsg::Input(input, reply), LIVE_CALL).await?.map_err(input_error)?;
    Ok(HttpResponse::NoContent().finish())
}

/// Asks the session's actor (live view, DevTools connection) and waits at most `limit`;
/// an actor that is gone or does not answer means the session ended.
pub(super) async fn ask_session<T: Send + 'static>(
    access: &LiveAccess,
    message: impl FnOnce(ractor::RpcReplyPort<T>) -> SessionMsg,
    limit: Duration,
) -> Result<T, ApiError> {
    match access.session.call(message, Some(limit)).await {
        Ok(ractor::rpc::CallResult::Success(answer)) => Ok(answer),
        _ => Err(live_ended()),
    }
}

fn browser_failed(why: String) -> ApiError {
    ApiError::new(Code::BrowserFailed, why)
}

/// Longest a live-view request waits for the session's actor.
const LIVE_CALL: Duration = Duration::from_secs(15);

fn live_ended() -> ApiError {
    ApiError::new(Code::NotFound, "This live view has ended or never existed.")
}

fn input_error(e: InputError) -> ApiError {
    match e {
        InputError::Invalid(why) => ApiError::bad_request(why),
        InputError::Browser(why) => ApiError::new(Code::BrowserFailed, why),
    }
}
