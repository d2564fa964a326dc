//! actix's own failures (bad JSON, unknown routes, wrong methods, oversized bodies) in the
//! API's one error envelope ([`super::error::ErrorBody`]), keeping their status; a 405 also
//! names the methods the route takes (`Allow`, from the OpenAPI document).

use actix_web::HttpResponse;
use actix_web::body::{EitherBody, MessageBody};
use actix_web::dev::ServiceResponse;
use actix_web::http::{StatusCode, header};
use actix_web::middleware::ErrorHandlerResponse;

use super::error::ErrorBody;
use crate::model::Code;

/// Error-status responses that are not already JSON (actix's own 404, 405, 413, extractor
/// errors) get our envelope, keeping their status.
pub(super) fn envelope_errors<B: MessageBody + 'static>(
    res: ServiceResponse<B>,
) -> actix_web::Result<ErrorHandlerResponse<B>> {
    let is_json = res
        .response()
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if is_json {
        return Ok(ErrorHandlerResponse::Response(res.map_into_left_body()));
    }
    let status = res.status();
    let (code, message) = match status {
        StatusCode::NOT_FOUND => {
            (Code::NotFound, format!("Not found: {} {}", res.request().method(), res.request().path()))
        }
        StatusCode::METHOD_NOT_ALLOWED => (
            Code::MethodNotAllowed,
            format!("Method {} is not allowed on {}", res.request().method(), res.request().path()),
        ),
        StatusCode::PAYLOAD_TOO_LARGE => (Code::PayloadTooLarge, "Request body is too large".to_owned()),
        s if s.is_client_error() => (Code::BadRequest, extractor_message(&res)),
        _ => (Code::Unknown, "Internal server error".to_owned()),
    };
    let request_id = actix_web::HttpMessage::extensions(res.request())
        .get::<super::request_id::RequestId>()
        .map(|id| id.0.to_string());
    let body = ErrorBody { success: false, error: message, code: code.as_str().to_owned(), request_id };
    let allow = (status == StatusCode::METHOD_NOT_ALLOWED)
        .then(|| {
            let doc = res.request().app_data::<actix_web::web::Data<super::openapi::OpenApiJson>>()?;
            Some(doc.allowed(&res.request().match_pattern()?)?.to_owned())
        })
        .flatten();
    let (req, _) = res.into_parts();
    let mut response = HttpResponse::build(status);
    if let Some(allow) = allow {
        response.insert_header((header::ALLOW, allow));
    }
    let response = response.json(body).map_into_right_body::<B>();
    let response: HttpResponse<EitherBody<B>> = response;
    Ok(ErrorHandlerResponse::Response(ServiceResponse::new(req, response)))
}

fn extractor_message<B>(res: &ServiceResponse<B>) -> String {
    match res.response().error() {
        Some(err) => format!("Bad request: {err}"),
        None => "Bad request".to_owned(),
    }
}
