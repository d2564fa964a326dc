//! The one error shape of the API: `{"success": false, "error": "...", "code": "..."}` with
//! the HTTP status fixed by the code table. Every layer's error converts into [`ApiError`]
//! through [`ErrorCode`], and actix's own failures (bad JSON, unknown routes, wrong methods,
//! oversized bodies) are rewritten into the same envelope (`api::envelope`).

use std::fmt;

use actix_web::body::BoxBody;
use actix_web::http::{StatusCode, header};
use actix_web::{HttpResponse, ResponseError};
use serde::Serialize;

use crate::model::{Code, ErrorCode};

/// An error answered to an API client.
#[derive(Debug, Clone)]
pub struct ApiError {
    code: Code,
    message: String,
    retry_after_secs: Option<u64>,
}

/// The wire envelope of an error.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ErrorBody {
    /// Always false.
    pub success: bool,
    /// Human-readable explanation naming the offending field where there is one.
    pub error: String,
    /// Machine-readable code.
    pub code: String,
    /// The request's id (its `X-Request-Id`), to find it in the server's log.
    #[serde(rename = "requestId", skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
}

impl ApiError {
    /// An error with `code` and `message`.
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        Self { code, message: message.into(), retry_after_secs: None }
    }

    /// 429 telling the client to come back after `wait`.
    pub fn rate_limited(wait: std::time::Duration) -> Self {
        let secs = wait.as_secs_f64().ceil().max(1.0) as u64;
        Self {
            code: Code::RateLimited,
            message: format!("Rate limit exceeded. Retry after {secs} seconds."),
            retry_after_secs: Some(secs),
        }
    }

    /// 400 naming a field.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(Code::BadRequest, message)
    }

    /// 400 for an option whose capability this build lacks.
    pub fn not_available(option: &str, reason: &str) -> Self {
        Self::new(Code::FeatureNotAvailable, format!("`{option}` is not available on this server: {reason}"))
    }

    /// 404 for a job that does not exist for this team.
    pub fn job_not_found() -> Self {
        Self::new(Code::NotFound, "Job not found")
    }

    /// The code.
    pub fn code(&self) -> Code {
        self.code
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.message, self.code.as_str())
    }
}

impl<E: std::error::Error + ErrorCode> From<E> for ApiError {
    fn from(err: E) -> Self {
        let code = err.code();
        if code.status() >= 500 {
            tracing::error!(error = %err, code = code.as_str(), "request failed");
        }
        Self { code, message: err.to_string(), retry_after_secs: None }
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        StatusCode::from_u16(self.code.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }

    fn error_response(&self) -> HttpResponse<BoxBody> {
        let mut response = HttpResponse::build(self.status_code());
        if let Some(secs) = self.retry_after_secs {
            response.insert_header((header::RETRY_AFTER, secs.to_string()));
        }
        response.json(ErrorBody {
            success: false,
            error: self.message.clone(),
            code: self.code.as_str().to_owned(),
            request_id: super::request_id::current(),
        })
    }
}
