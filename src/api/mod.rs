//! The HTTP front door (actix-web): one module per resource, authentication, the error
//! envelope, strict request bodies with validation, and the OpenAPI document. Handlers are
//! thin: parse and validate, make one call into the service layer, answer its view. This
//! module never names the store (a test checks the sources), and whatever reads or writes
//! it runs on the services' runtime through [`AppState::off_worker`], never on an HTTP
//! worker thread.

pub mod actions;
pub mod auth;
pub mod batch;
pub mod body;
pub mod browser;
pub mod cdp;
pub mod cluster;
pub mod crawl;
pub mod crawl_body;
pub mod crawl_prompt;
mod envelope;
pub mod error;
pub mod files;
pub mod formats;
pub mod forward;
pub mod health;
pub mod interact;
pub mod interact_agent;
pub mod job_view;
pub mod llm_jobs;
pub mod map;
pub mod observe;
pub mod openapi;
mod openapi_bodies;
mod openapi_links;
pub mod openapi_routes;
pub mod options;
pub mod parse;
pub mod request_id;
pub mod scrape;
pub mod search;
pub mod support;
pub mod target;
pub mod team;
pub mod tunnel;
pub mod webhook;

use std::sync::Arc;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceFactory, ServiceRequest, ServiceResponse};
use actix_web::middleware::{ErrorHandlers, Logger};
use actix_web::{App, HttpRequest, HttpResponse, web};

pub use auth::Authenticated;
pub use error::ApiError;

use crate::actors::Runtime;
use crate::config::Settings;
use crate::model::Code;
use crate::scrape::Scraper;

/// What handlers share.
#[derive(Debug, Clone)]
pub struct AppState {
    /// Validated settings.
    pub settings: Arc<Settings>,
    /// The scrape pipeline.
    pub scraper: Scraper,
    /// The actor tree running crawls and batches.
    pub runtime: Runtime,
    /// Crawls and batches: start, read, cancel.
    pub jobs: crate::service::JobService,
    /// The runtime the services run on (the HTTP workers have their own).
    pub services_runtime: tokio::runtime::Handle,
    /// The search providers of `search.providers`, in order, made once.
    pub search_providers: Arc<[Arc<dyn crate::search::Provider>]>,
    /// Extract and agent jobs.
    pub llm_jobs: crate::service::llm_jobs::LlmJobs,
}

impl AppState {
    /// Runs `work` on the services' runtime and waits for it: anything that reads or writes
    /// the store runs there, never on an HTTP worker thread.
    pub async fn off_worker<T: Send + 'static>(
        &self,
        work: impl std::future::Future<Output = Result<T, ApiError>> + Send + 'static,
    ) -> Result<T, ApiError> {
        // The request's span (its id) goes along, so the work's log lines carry it too.
        let work = tracing::Instrument::in_current_span(work);
        self.services_runtime.spawn(work).await.map_err(|e| ApiError::new(Code::Unknown, e.to_string()))?
    }
}

/// What an application built by [`create_app`] serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Surface {
    /// The API (and `/metrics`, unless `metrics.listen` moves it).
    Api,
    /// `/metrics` alone, for the address of `metrics.listen`.
    Metrics,
}

/// Builds the application; used by `serve` and by the tests.
pub fn create_app(
    state: web::Data<AppState>,
    openapi: web::Data<openapi::OpenApiJson>,
    surface: Surface,
) -> App<
    impl ServiceFactory<
        ServiceRequest,
        Config = (),
        Response = ServiceResponse<impl MessageBody>,
        Error = actix_web::Error,
        InitError = (),
    >,
> {
    let max_body = state.settings.server.max_request_bytes;
    let metrics_here = match surface {
        Surface::Api => state.settings.metrics.listen.is_empty(),
        Surface::Metrics => true,
    };
    let api = surface == Surface::Api;
    let routes: [fn(&mut web::ServiceConfig); 16] = [
        health::configure,
        openapi::configure,
        scrape::configure,
        crawl_prompt::configure,
        crawl::configure,
        batch::configure,
        map::configure,
        search::configure,
        parse::configure,
        team::configure,
        files::configure,
        interact::configure,
        cdp::configure,
        cluster::configure,
        support::configure,
        llm_jobs::configure,
    ];
    // Metrics recorded from the first request on.
    let _ = observe::recorder();
    App::new()
        .app_data(state)
        .app_data(openapi)
        .configure(|cfg| configure_data(cfg, max_body))
        .wrap(ErrorHandlers::new().default_handler(envelope::envelope_errors))
        .wrap(Logger::new("%r %s %Dms").exclude("/health").exclude("/ready"))
        .wrap(actix_web::middleware::from_fn(observe::observe))
        .configure(|cfg| {
            if metrics_here {
                observe::configure(cfg);
            }
            if api {
                routes.iter().for_each(|configure| configure(cfg));
            }
        })
        .default_service(web::to(not_found))
}

/// Extractor settings whose failures must still produce the JSON envelope.
fn configure_data(cfg: &mut web::ServiceConfig, max_body: usize) {
    cfg.app_data(web::PayloadConfig::new(max_body))
        .app_data(
            web::PathConfig::default().error_handler(|err, _| {
                ApiError::bad_request(format!("Invalid path parameter: {err}")).into()
            }),
        )
        .app_data(
            web::QueryConfig::default().error_handler(|err, _| {
                ApiError::bad_request(format!("Invalid query parameter: {err}")).into()
            }),
        )
        .app_data(web::JsonConfig::default().limit(max_body).error_handler(|err, _| {
            ApiError::new(Code::InvalidJson, format!("Bad request, malformed JSON: {err}")).into()
        }));
}

async fn not_found(req: HttpRequest) -> HttpResponse {
    use actix_web::ResponseError;
    ApiError::new(Code::NotFound, format!("Not found: {} {}", req.method(), req.path())).error_response()
}
