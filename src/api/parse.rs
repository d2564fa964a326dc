//! `POST /v2/parse` (a file uploaded as `multipart/form-data`, with optional `options` JSON,
//! becomes a scrape result) and `GET /v2/parse/formats` (the file types it accepts). The file
//! is read as it streams in and refused with 413 as soon as it passes the limit.

use actix_multipart::{Field, Multipart};
use actix_web::{HttpRequest, HttpResponse, web};
use futures::StreamExt;
use serde_json::{Map, Value, json};

use super::error::{ApiError, ErrorBody};
use super::options::ScrapeOptionsBody;
use super::scrape::ScrapeResponse;
use super::{AppState, Authenticated, body};
use crate::documents::DocKind;
use crate::model::{Code, ProxyMode, ScrapeOptions};
use crate::scrape::upload::Upload;

/// Largest upload.
pub const MAX_UPLOAD_BYTES: usize = 50 << 20;
/// Largest `options` field.
const MAX_OPTIONS_BYTES: usize = 1 << 20;
/// Extensions accepted, besides the document kinds: HTML.
const HTML_EXTENSIONS: [&str; 3] = ["html", "htm", "xhtml"];
/// Document kinds accepted, in the order `/v2/parse/formats` lists them.
const DOCUMENTS: [DocKind; 8] = [
    DocKind::Pdf,
    DocKind::Docx,
    DocKind::Doc,
    DocKind::Odt,
    DocKind::Rtf,
    DocKind::Xlsx,
    DocKind::Xls,
    DocKind::Ods,
];

/// Registers the routes.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/v2/parse").route(web::post().to(parse)))
        .service(web::resource("/v2/parse/formats").route(web::get().to(formats)));
}

/// Every accepted extension, with the dot.
fn supported_extensions() -> Vec<String> {
    HTML_EXTENSIONS
        .iter()
        .copied()
        .chain(DOCUMENTS.iter().map(|k| k.extension()))
        .map(|e| format!(".{e}"))
        .collect()
}

/// The file types `/v2/parse` accepts.
#[utoipa::path(
    get,
    path = "/v2/parse/formats",
    responses((status = 200, description = "Accepted extensions and media types", body = Object)),
    security(("bearer" = []))
)]
pub async fn formats(_auth: Authenticated) -> HttpResponse {
    let mut list: Vec<Value> = vec![
        json!({"extensions": [".html", ".htm", ".xhtml"], "mimeTypes": ["text/html", "application/xhtml+xml"]}),
    ];
    list.extend(
        DOCUMENTS
            .iter()
            .map(|k| json!({"extensions": [format!(".{}", k.extension())], "mimeTypes": [k.media_type()]})),
    );
    HttpResponse::Ok().json(json!({"success": true, "formats": list, "maxFileSizeBytes": MAX_UPLOAD_BYTES}))
}

/// Parse an uploaded file.
#[utoipa::path(
    post,
    path = "/v2/parse",
    request_body(content = inline(Object), content_type = "multipart/form-data", description = "`file` (the document, with a file name) and optional `options` (JSON text of ScrapeOptions)"),
    responses(
        (status = 200, description = "The document", body = ScrapeResponse),
        (status = 400, description = "Missing file, bad options, PARSE_UNSUPPORTED_OPTIONS, UNSUPPORTED_FILE_TYPE", body = ErrorBody),
        (status = 413, description = "The file is larger than 50 MB", body = ErrorBody),
        (status = 422, description = "The file is corrupt, encrypted or unpacks too large", body = ErrorBody)
    ),
    security(("bearer" = []))
)]
pub async fn parse(
    state: web::Data<AppState>,
    auth: Authenticated,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let form = read_form(Multipart::new(req.headers(), payload)).await?;
    let (file_name, content_type, bytes) = form.file.ok_or_else(|| {
        ApiError::bad_request("Missing file upload. Send the document in the `file` field.")
    })?;
    let options = match form.options {
        Some(text) => parse_options(&text, &auth)?,
        None => ScrapeOptions::default(),
    };
    check_type(&file_name, content_type.as_deref(), &bytes)?;
    let target = (!options.zero_data_retention).then(|| file_name.clone());
    let admitted = super::team::admit(&state, &auth, "parse", target).await?;
    let (id, queued_ms) = (admitted.id, admitted.queued_ms);
    let upload = Upload { id, team: auth.team.clone(), file_name, content_type, bytes, options, queued_ms };
    let (scraper, teams, team) =
        (state.scraper.clone(), std::sync::Arc::clone(&state.runtime.services().teams), auth.team.clone());
    let result = state
        .off_worker(async move {
            let result = scraper.parse_upload(upload).await;
            drop(admitted);
            let charge = result.as_ref().map_or(0, |doc| u64::from(doc.metadata.credits_used));
            teams.charge(&team, charge)?.reported().await;
            Ok(result)
        })
        .await?;
    Ok(HttpResponse::Ok().json(ScrapeResponse { success: true, data: result? }))
}

/// The fields of the form.
#[derive(Default)]
struct Form {
    /// File name, part Content-Type, bytes.
    file: Option<(String, Option<String>, Vec<u8>)>,
    options: Option<String>,
}

async fn read_form(mut multipart: Multipart) -> Result<Form, ApiError> {
    let mut form = Form::default();
    while let Some(field) = multipart.next().await {
        let field =
            field.map_err(|e| ApiError::bad_request(format!("Send the file as multipart/form-data: {e}")))?;
        match field.name().unwrap_or_default() {
            "file" => {
                let name = field
                    .content_disposition()
                    .and_then(|cd| cd.get_filename())
                    .map(str::to_owned)
                    .filter(|n| !n.is_empty())
                    .ok_or_else(|| {
                        ApiError::bad_request("`file` needs a file name (filename=… in its part)")
                    })?;
                let content_type = field.content_type().map(|m| m.essence_str().to_owned());
                let bytes = read_field(field, MAX_UPLOAD_BYTES, "file").await?;
                form.file = Some((name, content_type, bytes));
            }
            "options" => {
                let bytes = read_field(field, MAX_OPTIONS_BYTES, "options").await?;
                let text = String::from_utf8(bytes)
                    .map_err(|_| ApiError::bad_request("`options` must be UTF-8 JSON text"))?;
                form.options = Some(text);
            }
            other => {
                return Err(ApiError::bad_request(format!(
                    "unknown form field `{other}`; send `file` and `options`"
                )));
            }
        }
    }
    Ok(form)
}

/// Reads a field, refusing it as soon as it passes `max` bytes.
async fn read_field(mut field: Field, max: usize, name: &str) -> Result<Vec<u8>, ApiError> {
    let mut out = Vec::new();
    while let Some(chunk) = field.next().await {
        let chunk = chunk.map_err(|e| ApiError::bad_request(format!("reading `{name}` failed: {e}")))?;
        if out.len() + chunk.len() > max {
            return Err(ApiError::new(
                Code::PayloadTooLarge,
                format!("`{name}` is larger than {} MB", max >> 20),
            ));
        }
        out.extend_from_slice(&chunk);
    }
    Ok(out)
}

/// Validates the `options` JSON as scrape options, minus what makes no sense for a file.
fn parse_options(text: &str, auth: &Authenticated) -> Result<ScrapeOptions, ApiError> {
    let mut map: Map<String, Value> = body::object(text.as_bytes())
        .map_err(|e| ApiError::bad_request(format!("`options` must be a JSON object: {}", e.message())))?;
    body::reject_unknown(&mut map, &[body::field_names::<ScrapeOptionsBody>()], "options.")?;
    let options = ScrapeOptionsBody::from_map(map, "options.")?.validate(auth.caller(), "options.")?;
    let refused = |field: &str| {
        ApiError::new(
            Code::ParseUnsupportedOptions,
            format!("`options.{field}` is not supported when parsing a file"),
        )
    };
    if !options.actions.is_empty() {
        return Err(refused("actions"));
    }
    let formats = &options.formats;
    if formats.screenshot.is_some() || formats.branding || formats.change_tracking.is_some() {
        return Err(refused("formats"));
    }
    if formats.raw_base64 {
        return Err(ApiError::bad_request("`options.formats`: rawBase64 is not available for uploads"));
    }
    if options.wait_for_ms > 0 {
        return Err(refused("waitFor"));
    }
    if options.location.is_some() {
        return Err(refused("location"));
    }
    if options.mobile {
        return Err(refused("mobile"));
    }
    if options.proxy == ProxyMode::Enhanced {
        return Err(refused("proxy"));
    }
    Ok(options)
}

/// Refuses files that are neither HTML nor a supported document.
fn check_type(file_name: &str, content_type: Option<&str>, bytes: &[u8]) -> Result<(), ApiError> {
    if crate::documents::detect(content_type, Some(file_name), bytes).is_some() {
        return Ok(());
    }
    let ext = file_name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).unwrap_or_default();
    if HTML_EXTENSIONS.contains(&ext.as_str()) || DocKind::from_extension(&ext).is_some() {
        return Ok(());
    }
    Err(ApiError::new(
        Code::UnsupportedFileType,
        format!("unsupported file type `{file_name}`; supported: {}", supported_extensions().join(", ")),
    ))
}
