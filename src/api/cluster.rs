//! `GET /v2/cluster`: the operator's view of the cluster: this node (and whether it is in
//! touch with the others), every member it knows with its state, and how many sites, jobs
//! and interact sessions each holds. `DELETE /v2/cluster/members/{name}`: a member that is
//! down and gone for good is forgotten by this node and every live member. Keys of
//! teams with `admin = true` only (the `default` team's by default).

use actix_web::{HttpResponse, web};
use serde_json::json;

use super::error::ApiError;
use super::{AppState, Authenticated};
use crate::model::Code;
use crate::remote::members;

/// Registers the route.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/v2/cluster").route(web::get().to(view)));
    cfg.service(web::resource("/v2/cluster/members/{name}").route(web::delete().to(forget)));
}

fn admin_only(auth: &Authenticated) -> Result<(), ApiError> {
    match auth.flags.admin {
        true => Ok(()),
        false => Err(ApiError::new(Code::Forbidden, "The cluster's operations need a key of an admin team.")),
    }
}

/// Forgets a member that is down and gone for good, here and on every live member.
async fn forget(
    state: web::Data<AppState>,
    auth: Authenticated,
    name: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    admin_only(&auth)?;
    let Some(cluster) = &state.runtime.services().cluster else {
        return Err(ApiError::new(Code::NotFound, "This node is not part of a cluster."));
    };
    let name = name.into_inner();
    cluster.forget(&name)?;
    let mut forgotten_by = vec![cluster.name().to_owned()];
    let mut not_told = Vec::new();
    for (member, answer) in members::forget_everywhere(cluster, &name).await {
        match answer {
            Ok(()) => forgotten_by.push(member),
            Err(error) => not_told.push(json!({"node": member, "error": error})),
        }
    }
    Ok(HttpResponse::Ok().json(json!({
        "success": true,
        "forgotten": name,
        "forgottenBy": forgotten_by,
        "notForgottenBy": not_told,
        "majority": cluster.majority(),
    })))
}

async fn view(state: web::Data<AppState>, auth: Authenticated) -> Result<HttpResponse, ApiError> {
    admin_only(&auth)?;
    let runtime = &state.runtime;
    let own = runtime.counts().await;
    let Some(cluster) = &runtime.services().cluster else {
        return Ok(HttpResponse::Ok().json(json!({
            "success": true,
            "clustered": false,
            "node": null,
            "members": [{"name": null, "state": "self", "domains": own.sites, "jobs": own.jobs, "sessions": own.sessions}],
        })));
    };
    let views = cluster.members();
    let counts = members::counts(cluster, &views, own).await;
    let members: Vec<serde_json::Value> = views
        .iter()
        .zip(counts)
        .map(|(m, counts)| {
            json!({
                "name": m.name,
                "address": m.address,
                "state": m.state,
                "lastHeardMs": m.last_heard_ms,
                "protocolVersion": m.protocol_version,
                "domains": counts.map(|c| c.sites),
                "jobs": counts.map(|c| c.jobs),
                "sessions": counts.map(|c| c.sessions),
            })
        })
        .collect();
    Ok(HttpResponse::Ok().json(json!({
        "success": true,
        "clustered": true,
        "node": cluster.name(),
        "protocolVersion": cluster.versions().own,
        // False while this node sends no request to any site: a member it counts as live has
        // not answered lately, it woke from a pause and waits for the members' answers, or
        // it sees fewer than half of the members that may be running (`keep_majority`).
        "inTouch": cluster.in_touch(),
        // False while it sees fewer than half of the members that may be running (a split:
        // the other side fetches), or has met none and its seeds may be running.
        "majority": cluster.majority(),
        "live": *cluster.live(),
        // Addresses of members an operator forgot (DELETE /v2/cluster/members/{name}), until
        // a node answers from one again.
        "forgotten": cluster.forgotten(),
        // Sites are placed by host (kept in the answer for tools that read it).
        "sitesPlacedBy": "host",
        "traffic": cluster.traffic(),
        "members": members,
    })))
}
