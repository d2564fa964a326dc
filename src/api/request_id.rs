//! Every request's id: its `X-Request-Id` when the client sent a usable one (1 to 128
//! visible ASCII characters), else a new UUID. It is kept in the request's extensions and,
//! while the request is answered, in a task-local, so an error envelope built anywhere
//! inside a handler can name it (`requestId`).

use std::sync::Arc;

use actix_web::dev::ServiceRequest;

/// The request id header.
pub const REQUEST_ID_HEADER: &str = "x-request-id";

tokio::task_local! {
    /// The id of the request being answered (for error envelopes built inside handlers).
    static REQUEST_ID: Arc<str>;
}

/// A request's id, kept in its extensions.
#[derive(Debug, Clone)]
pub struct RequestId(pub Arc<str>);

/// The id of the request this task is answering, if any.
pub fn current() -> Option<String> {
    REQUEST_ID.try_with(|id| id.to_string()).ok()
}

/// Runs `answering` (the request's handling) with `id` as the current request's id.
pub async fn scope<F: std::future::Future>(id: Arc<str>, answering: F) -> F::Output {
    REQUEST_ID.scope(id, answering).await
}

/// The client's id when usable, else a new one.
pub fn of(request: &ServiceRequest) -> Arc<str> {
    let given = request
        .headers()
        .get(REQUEST_ID_HEADER)
        .and_then(|v| v.to_str().ok())
        .filter(|v| (1..=128).contains(&v.len()) && v.bytes().all(|b| b.is_ascii_graphic()));
    match given {
        Some(id) => Arc::from(id),
        None => Arc::from(uuid::Uuid::now_v7().to_string()),
    }
}
