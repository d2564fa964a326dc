//! `GET /v2/cluster`: the operator's view of the cluster: this node (and whether it is in
//! touch with the others), every member it knows with its state, and how many sites, jobs
//! and interact sessions each holds. Keys of
//! teams with `admin = true` only (the `default` team's by default).

use std::time::Duration;

use actix_web::{HttpResponse, web};
use serde_json::json;

use super::error::ApiError;
use super::{AppState, Authenticated};
use crate::actors::remote::{self, Request, Response};
use crate::cluster::Channel;
use crate::model::Code;

/// Registers the route.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/v2/cluster").route(web::get().to(members)));
}

async fn members(state: web::Data<AppState>, auth: Authenticated) -> Result<HttpResponse, ApiError> {
    if !auth.flags.admin {
        return Err(ApiError::new(Code::Forbidden, "The cluster view needs a key of an admin team."));
    }
    let runtime = &state.runtime;
    let own = runtime.counts().await;
    let Some(cluster) = &runtime.services().cluster else {
        return Ok(HttpResponse::Ok().json(json!({
            "success": true,
            "clustered": false,
            "node": null,
            "members": [{"name": null, "state": "self", "domains": own.domains, "jobs": own.jobs, "sessions": own.sessions}],
        })));
    };
    let views = cluster.members();
    let asks = views.iter().map(|m| async move {
        if m.state != "up" {
            return None;
        }
        let answer = cluster
            .call(&m.name, Channel::Jobs, remote::encode(&Request::Counts), Duration::from_secs(2))
            .await
            .ok()?;
        match remote::decode(&answer).ok()? {
            Response::Counts(counts) => Some(counts),
            _ => None,
        }
    });
    let counts = futures::future::join_all(asks).await;
    let members: Vec<serde_json::Value> = views
        .iter()
        .zip(counts)
        .map(|(m, counts)| {
            let counts = if m.state == "self" { Some(own) } else { counts };
            json!({
                "name": m.name,
                "address": m.address,
                "state": m.state,
                "lastHeardMs": m.last_heard_ms,
                "protocolVersion": m.protocol_version,
                "domains": counts.map(|c| c.domains),
                "jobs": counts.map(|c| c.jobs),
                "sessions": counts.map(|c| c.sessions),
            })
        })
        .collect();
    Ok(HttpResponse::Ok().json(json!({
        "success": true,
        "clustered": true,
        "node": cluster.name(),
        "protocolVersion": crate::cluster::spoken_version(),
        // False while this node sends no request to any site: a member it counts as live has
        // not answered lately, it woke from a pause and waits for the members' answers, or
        // it sees fewer than half of the members that may be running (`keep_majority`).
        "inTouch": cluster.in_touch(),
        // False while it sees fewer than half of the members that may be running (a split:
        // the other side fetches), or has met none and its seeds may be running.
        "majority": cluster.majority(),
        "live": *cluster.live(),
        // "host" once every live member speaks protocol version 9; "origin" before.
        "sitesPlacedBy": if cluster.sites_by_host() { "host" } else { "origin" },
        "traffic": cluster.traffic(),
        "members": members,
    })))
}
