//! Authentication: `Authorization: Bearer <key>` is looked up (by hash) among the API keys and
//! maps the request to a team with its plan flags. Handlers take [`Authenticated`] as an
//! argument; a missing or unknown key answers 401 in the error envelope.

use futures::future::LocalBoxFuture;

use actix_web::dev::Payload;
use actix_web::{FromRequest, HttpRequest, http::header, web};

use super::AppState;
use super::error::ApiError;
use crate::config::TeamSettings;
use crate::model::{Code, TeamId};

/// The team a request acts for.
#[derive(Debug, Clone)]
pub struct Authenticated {
    /// The team.
    pub team: TeamId,
    /// Its plan flags.
    pub flags: TeamSettings,
    /// The key's label in usage reports (see [`crate::teams::key_label`]).
    pub key: String,
    /// Whether the server has a language model.
    pub model: bool,
}

impl Authenticated {
    /// The caller description used by option validation.
    pub fn caller(&self) -> super::options::Caller<'_> {
        super::options::Caller {
            team: self.team.as_str(),
            flags: &self.flags,
            model: self.model,
            key: &self.key,
        }
    }

    /// Who pays for language-model calls made for this request.
    pub fn payer(&self) -> crate::llm::Payer {
        crate::llm::Payer { team: self.team.clone(), key: Some(self.key.clone()) }
    }
}

impl FromRequest for Authenticated {
    type Error = ApiError;
    type Future = LocalBoxFuture<'static, Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let req = req.clone();
        Box::pin(async move { authenticate(&req).await })
    }
}

async fn authenticate(req: &HttpRequest) -> Result<Authenticated, ApiError> {
    let state = req
        .app_data::<web::Data<AppState>>()
        .ok_or_else(|| ApiError::new(Code::Unknown, "application state missing"))?;
    let header = req
        .headers()
        .get(header::AUTHORIZATION)
        .ok_or_else(|| ApiError::new(Code::Unauthorized, "Unauthorized: Token missing"))?;
    let text =
        header.to_str().map_err(|_| ApiError::new(Code::Unauthorized, "Unauthorized: Invalid token"))?;
    // Like Firecrawl: the token is the word after the scheme.
    let token = text.split_whitespace().nth(1).filter(|_| {
        text.split_whitespace().next().is_some_and(|scheme| scheme.eq_ignore_ascii_case("bearer"))
    });
    let token = token.ok_or_else(|| ApiError::new(Code::Unauthorized, "Unauthorized: Token missing"))?;
    // A key unknown here is looked up on the other nodes of a cluster.
    // Job-creating requests count against the team's request rate (the cluster's, at the
    // team's owner).
    let teams = std::sync::Arc::clone(&state.runtime.services().teams);
    let token = token.to_owned();
    let key = crate::teams::key_label(&token);
    // A request another node passed on was counted there.
    let post = req.method() == actix_web::http::Method::POST && !super::forward::passed_on(req);
    let team = state
        .off_worker(async move {
            let team = teams
                .authenticate(&token)
                .await?
                .ok_or_else(|| ApiError::new(Code::Unauthorized, "Unauthorized: Invalid token"))?;
            if post {
                teams.check_rate_everywhere(&team).await.map_err(ApiError::rate_limited)?;
            }
            Ok(team)
        })
        .await?;
    let flags = state.settings.team(team.as_str());
    Ok(Authenticated { team, flags, key, model: state.settings.llm.enabled() })
}
