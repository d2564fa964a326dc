//! Unauthenticated service endpoints: `/health` (the process serves) and `/ready` (it
//! should be sent new work) for load balancers and orchestrators, and `GET /` naming the
//! service.

use actix_web::{HttpResponse, web};
use serde::Serialize;
use utoipa::ToSchema;

use super::AppState;

/// Registers the routes.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/health").route(web::get().to(health)))
        .service(web::resource("/ready").route(web::get().to(ready)))
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

/// Whether this node should be sent new work.
#[derive(Debug, Serialize, ToSchema)]
pub struct Readiness {
    /// `ready`, or `unready` (with `reasons`).
    pub status: &'static str,
    /// Why new work is better sent to another node now; empty when ready.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub reasons: Vec<String>,
}

/// Readiness check: 503 while the data disk is short of space (new jobs are refused) or,
/// in a cluster, while this node is not in touch with most of its members (it fetches
/// nothing for crawls and batches then: their pages wait until it is back in touch). A
/// load balancer that routes by it sends clients to the nodes that do the work.
#[utoipa::path(get, path = "/ready", responses(
    (status = 200, description = "Takes new work", body = Readiness),
    (status = 503, description = "New work is better sent elsewhere; `reasons` says why", body = Readiness),
))]
pub async fn ready(state: web::Data<AppState>) -> HttpResponse {
    let services = state.runtime.services();
    let mut reasons = Vec::new();
    if services.store.space.is_short() {
        reasons.push(
            "the data disk has less free space than `storage.min_free_mb`: new jobs are refused".to_owned(),
        );
    }
    if let Some(cluster) = &services.cluster
        && !cluster.in_touch()
    {
        reasons.push(format!(
            "node `{}` is not in touch with most of the cluster's members (GET /v2/cluster): \
             the pages of crawls and batches wait here until it is",
            cluster.name()
        ));
    }
    if reasons.is_empty() {
        HttpResponse::Ok().json(Readiness { status: "ready", reasons })
    } else {
        HttpResponse::ServiceUnavailable().json(Readiness { status: "unready", reasons })
    }
}

async fn root() -> HttpResponse {
    HttpResponse::Ok().json(serde_json::json!({
        "message": "ferrocrawl API",
        "documentation_url": "/v2/openapi.json",
    }))
}
