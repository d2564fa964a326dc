//! `GET /v2/files/{id}.{ext}`: screenshots and PDFs produced by the browser, served to the
//! team that made them (anyone else gets 404) until they expire with their result.

use actix_web::{HttpResponse, web};

use super::error::ApiError;
use super::{AppState, Authenticated};
use crate::model::{Code, JobId};

/// Registers the route.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/v2/files/{name}").route(web::get().to(get_file)));
}

async fn get_file(
    state: web::Data<AppState>,
    auth: Authenticated,
    name: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let missing = || ApiError::new(Code::NotFound, "File not found.");
    let stem = name.split('.').next().unwrap_or_default();
    let id = JobId::parse(stem).ok_or_else(missing)?;
    let file = state.scraper.stored_file(id, &auth.team)?.ok_or_else(missing)?;
    Ok(HttpResponse::Ok()
        .content_type(file.mime)
        .insert_header(("Cache-Control", "private, max-age=3600"))
        .body(file.bytes))
}
