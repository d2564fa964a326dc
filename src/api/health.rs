//! Unauthenticated service endpoints: `/health` for load balancers and `GET /` naming the
//! service.

use actix_web::{HttpResponse, web};
use serde::Serialize;
use utoipa::ToSchema;

/// Registers the routes.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/health").route(web::get().to(health)))
        .service(web::resource("/").route(web::get().to(root)));
}

/// Health of this node.
#[derive(Debug, Serialize, ToSchema)]
pub struct Health {
    /// `ok` when the node serves requests.
    pub status: &'static str,
    /// The server's version.
    pub version: &'static str,
}

/// Liveness check.
#[utoipa::path(get, path = "/health", responses((status = 200, description = "Serving", body = Health)))]
pub async fn health() -> HttpResponse {
    HttpResponse::Ok().json(Health { status: "ok", version: env!("CARGO_PKG_VERSION") })
}

async fn root() -> HttpResponse {
    HttpResponse::Ok().json(serde_json::json!({
        "message": "ferrocrawl API",
        "documentation_url": "/v2/openapi.json",
    }))
}
