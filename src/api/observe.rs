//! What an operator watches a running server with.
//!
//! - **Request ids**: every request gets one: its `X-Request-Id` when the client sent a
//!   usable one (1 to 128 visible ASCII characters), else a new UUID. It is returned on every
//!   response, errors included (also as `requestId` in the JSON error envelope), and every log
//!   line of the request carries it (a tracing span around the handler).
//! - **Metrics**: `GET /metrics` serves the Prometheus text format, recorded through the
//!   `metrics` facade and rendered by `metrics-exporter-prometheus`. Requests are counted by
//!   route template (never the raw path: no id, URL or key becomes a label), method and
//!   status, with a latency histogram; scrapes by engine, cache state and outcome, with their
//!   retrieval time; pages settled by job kind and outcome; jobs started and finished by
//!   kind and status; credits charged; webhook deliveries by result and their lag. Read when
//!   scraped: the webhook outbox's events, live site actors, running jobs and their
//!   frontiers (pages waiting or in flight), browser sessions, the browser pool (processes,
//!   tabs it holds, tabs open, callers waiting), cluster members and the calls and bytes
//!   sent to other nodes, pages cut short by their deadline, the store's bytes on disk, the
//!   disk's free space (and whether it is below its floor), the process's resident memory
//!   and open file descriptors.

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::middleware::Next;
use actix_web::{HttpMessage, HttpResponse, web};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use tracing::Instrument;

use super::AppState;
use super::request_id::{self, REQUEST_ID_HEADER, RequestId};

/// Latency buckets (seconds) of the request histogram: a cached scrape answers in
/// milliseconds, a crawl page or a browser scrape in seconds.
const BUCKETS: [f64; 14] =
    [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0];

/// The process's metrics recorder, installed on first use (`None` when another recorder
/// was installed first).
pub fn recorder() -> Option<&'static PrometheusHandle> {
    static HANDLE: OnceLock<Option<PrometheusHandle>> = OnceLock::new();
    HANDLE
        .get_or_init(|| {
            let recorder = PrometheusBuilder::new()
                .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), &BUCKETS)
                .ok()?
                .build_recorder();
            let handle = recorder.handle();
            metrics::set_global_recorder(recorder).ok()?;
            Some(handle)
        })
        .as_ref()
}

/// Middleware: gives the request its id, answers within its span, records its metrics.
pub async fn observe(
    request: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let id = request_id::of(&request);
    request.extensions_mut().insert(RequestId(Arc::clone(&id)));
    let method = request.method().to_string();
    let span = tracing::info_span!("request", request_id = %id, method = %method, path = %request.path());
    let started = Instant::now();
    let answered = request_id::scope(Arc::clone(&id), next.call(request).instrument(span)).await;
    let mut response = answered?;
    let route = response.request().match_pattern().unwrap_or_else(|| "unmatched".to_owned());
    let status = response.status().as_u16().to_string();
    let seconds = started.elapsed().as_secs_f64();
    metrics::counter!("http_requests_total", "route" => route.clone(), "method" => method.clone(), "status" => status)
        .increment(1);
    metrics::histogram!("http_request_duration_seconds", "route" => route, "method" => method)
        .record(seconds);
    if let Ok(value) = HeaderValue::from_str(&id) {
        response.headers_mut().insert(HeaderName::from_static(REQUEST_ID_HEADER), value);
    }
    Ok(response)
}

/// `GET /metrics`: the Prometheus text format, with the gauges read now; with
/// `metrics.require_key`, only for a valid API key.
async fn metrics_text(
    state: web::Data<AppState>,
    auth: Option<super::Authenticated>,
) -> Result<HttpResponse, super::error::ApiError> {
    if state.settings.metrics.require_key && auth.is_none() {
        return Err(super::error::ApiError::new(
            crate::model::Code::Unauthorized,
            "Unauthorized: /metrics needs an API key on this server (metrics.require_key)",
        ));
    }
    let counts = state.runtime.counts().await;
    let (running, frontier) = state.runtime.jobs_and_frontier().await;
    metrics::gauge!("domain_actors").set(counts.sites as f64);
    metrics::gauge!("jobs_running").set(running as f64);
    metrics::gauge!("frontier_pages").set(frontier as f64);
    metrics::gauge!("browser_sessions").set(counts.sessions as f64);
    if let Some(cluster) = &state.runtime.services().cluster {
        metrics::gauge!("cluster_members_live").set(cluster.live().len() as f64);
        // What an operator alerts on: a node that sends no request to any site.
        metrics::gauge!("cluster_in_touch").set(f64::from(u8::from(cluster.in_touch())));
        metrics::gauge!("cluster_majority").set(f64::from(u8::from(cluster.majority())));
        let members = cluster.members();
        for state in ["up", "down", "stopped"] {
            let count = members.iter().filter(|m| m.state == state).count();
            metrics::gauge!("cluster_members", "state" => state).set(count as f64);
        }
        let traffic = cluster.traffic();
        metrics::counter!("cluster_calls_total").absolute(traffic.calls);
        metrics::counter!("cluster_messages_total").absolute(traffic.messages);
        metrics::counter!("cluster_bytes_total", "direction" => "out").absolute(traffic.bytes_out);
        metrics::counter!("cluster_bytes_total", "direction" => "in").absolute(traffic.bytes_in);
    }
    let browser = state.scraper.browser().load().await;
    metrics::gauge!("browser_processes").set(browser.browsers as f64);
    metrics::gauge!("browser_tabs_capacity").set(browser.capacity as f64);
    metrics::gauge!("browser_tabs_busy").set(browser.busy as f64);
    metrics::gauge!("browser_tabs_waiting").set(browser.waiting as f64);
    metrics::gauge!("browser_tabs_shelved").set(browser.shelved as f64);
    metrics::counter!("browser_tabs_reused_total").absolute(browser.reused);
    metrics::counter!("pages_cut_short_total").absolute(crate::process::cancel::cut_short_total());
    metrics::gauge!("webhook_outbox_events").set(state.runtime.services().store.outbox.len() as f64);
    let store = state.runtime.services().store.clone();
    if let Ok(Ok(bytes)) = tokio::task::spawn_blocking(move || store.size_on_disk()).await {
        metrics::gauge!("store_disk_bytes").set(bytes as f64);
    }
    let space = &state.runtime.services().store.space;
    metrics::gauge!("store_disk_free_bytes").set(space.free_bytes() as f64);
    metrics::gauge!("store_short_of_space").set(if space.is_short() { 1.0 } else { 0.0 });
    if let Some(rss) = process_rss_bytes() {
        metrics::gauge!("process_resident_memory_bytes").set(rss as f64);
    }
    if let Ok(fds) = std::fs::read_dir("/proc/self/fd") {
        metrics::gauge!("process_open_fds").set(fds.count() as f64);
    }
    let text = recorder().map(PrometheusHandle::render).unwrap_or_default();
    Ok(HttpResponse::Ok().content_type("text/plain; version=0.0.4; charset=utf-8").body(text))
}

/// This process's resident memory, from `/proc/self/status`.
fn process_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Registers `/metrics`.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/metrics").route(web::get().to(metrics_text)));
}
