//! `GET /v2/files/{id}.{ext}`: screenshots and PDFs produced by the browser, until they
//! expire with their result. A link as the API returns it carries `expires` and
//! `signature` and opens without an API key (a capability link, see
//! `scrape::links`); without them the file is served to its own team's key only. Anything
//! else is refused without content: a changed link 403, an expired link or someone else's
//! file 404. Nothing lists files.

use actix_web::{HttpRequest, HttpResponse, web};
use serde::Deserialize;

use super::error::ApiError;
use super::{AppState, Authenticated};
use crate::model::{Code, JobId};
use crate::scrape::links::LinkCheck;

/// Registers the route.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/v2/files/{name}").route(web::get().to(get_file)));
}

/// The signed part of a file link.
#[derive(Debug, Deserialize)]
struct LinkQuery {
    expires: Option<u64>,
    signature: Option<String>,
}

async fn get_file(
    state: web::Data<AppState>,
    auth: Result<Authenticated, ApiError>,
    name: web::Path<String>,
    request: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let link: LinkQuery = super::body::query(request.query_string())?;
    let missing = || ApiError::new(Code::NotFound, "File not found.");
    let scraper = state.scraper.clone();
    let name = name.into_inner();
    let file = match (link.expires, link.signature) {
        (Some(expires), Some(signature)) => {
            let found =
                state.off_worker(async move { Ok(scraper.linked_file(&name, expires, &signature)?) }).await?;
            match found {
                Ok(file) => file,
                Err(LinkCheck::Expired) => {
                    return Err(ApiError::new(Code::NotFound, "This file link has expired."));
                }
                Err(_) => return Err(ApiError::new(Code::Forbidden, "This file link is not valid.")),
            }
        }
        _ => {
            let auth = auth?;
            let id = JobId::parse(name.split('.').next().unwrap_or_default()).ok_or_else(missing)?;
            state.off_worker(async move { Ok(scraper.stored_file(id, &auth.team)?) }).await?
        }
    };
    let file = file.ok_or_else(missing)?;
    Ok(HttpResponse::Ok()
        .content_type(file.mime)
        .insert_header(("Cache-Control", "private, max-age=3600"))
        .body(file.bytes))
}
