//! ferrocrawl: a self-hosted web content extraction service that speaks the Firecrawl v2
//! HTTP API, so the official SDKs and the tools built on them work against it unchanged.
//!
//! Its modules stand in layers, each using only the layers below it (checked by a test,
//! which also checks that this list and README's match the code):
//!
//! 1. [`cli`]: the command line;
//! 2. [`api`]: actix-web handlers, authentication, validation, the JSON error envelope;
//! 3. [`remote`]: what crosses between the nodes of a cluster, and what it means;
//! 4. [`service`]: the job service the API and the command line share;
//! 5. [`actors`]: the actor tree (jobs, sites, webhooks, browser sessions, the janitor);
//! 6. [`scrape`]: the one-page pipeline (cache → engine → extraction → formats);
//! 7. [`documents`]: office files and PDFs turned into the same result as a page;
//! 8. [`extract`], [`search`]: pure HTML transforms, no I/O; search providers and index;
//! 9. [`cluster`], [`llm`], [`process`], [`teams`]: the cluster's transport; the language
//!    model; the process's plumbing; team policy;
//! 10. [`store`]: sled persistence, the only module that touches the database;
//! 11. [`config`], [`crawl`]: settings; pure crawl decisions;
//! 12. [`model`], `xml`: shared types; XML helpers.
//!
//! The actor tree, and the cluster's actors beside it:
//!
//! ```text
//! Root supervisor
//!  ├─ JobSupervisor ── CrawlJob(id) ...
//!  ├─ SiteSupervisor ── Site(origin) ...
//!  ├─ WebhookDispatcher
//!  ├─ BrowserSupervisor ── BrowserSession(scrape) ...
//!  └─ Janitor
//! Indexer
//! In a cluster: NodeServer (ractor_cluster), Agent
//! ```
//!
//! [`serve`] runs the server on a listener the caller bound, until a shutdown future
//! resolves; the command line and the integration tests both use it.

#![warn(missing_docs, unreachable_pub, missing_debug_implementations)]

pub mod actors;
pub mod api;
pub mod cli;
pub mod cluster;
pub mod config;
pub mod crawl;
pub mod documents;
pub mod extract;
pub mod llm;
pub mod model;
pub mod process;
pub mod remote;
pub mod scrape;
pub mod search;
pub mod service;
pub mod store;
pub mod teams;
mod xml;

use std::future::Future;
use std::net::TcpListener;
use std::path::Path;
use std::sync::Arc;

use actix_web::{HttpServer, web};

use config::Settings;
use model::TeamId;
use store::{NewKey, Store};

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    /// The data directory could not be opened.
    #[error(transparent)]
    Store(#[from] store::StoreError),
    /// Writing the bootstrap key file failed.
    #[error("could not write {path}: {source}")]
    KeyFile {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The HTTP engine could not be built from the settings.
    #[error("could not set up the HTTP engine: {0}")]
    Engine(String),
    /// The HTTP server failed.
    #[error("server error: {0}")]
    Io(#[from] std::io::Error),
    /// The actor system could not start.
    #[error(transparent)]
    Actors(#[from] actors::RuntimeError),
    /// The node could not join its cluster.
    #[error(transparent)]
    Cluster(#[from] cluster::ClusterError),
    /// Code languages that run in the sandbox are configured, and it cannot be built here.
    #[error("browser.code_languages lists {languages}, which run only in a sandbox: {why}")]
    Sandbox {
        /// The languages.
        languages: String,
        /// Why the sandbox cannot be built.
        why: String,
    },
}

/// Name of the team that gets the first key.
pub const BOOTSTRAP_TEAM: &str = "default";
/// File (in the data directory) holding the first key.
pub const API_KEY_FILE: &str = "api-key";

/// Serves the API on `listener` until `shutdown` resolves, then stops accepting requests,
/// lets running ones finish, and flushes the database.
pub async fn serve(
    listener: TcpListener,
    settings: Settings,
    shutdown: impl Future<Output = ()>,
) -> Result<(), StartupError> {
    let settings = Arc::new(settings);
    let sandbox = code_sandbox(&settings).await?;
    let store = Store::open_with(&settings.storage)?;
    if let Some(key) = bootstrap_key(&store, &settings.storage.data_dir)? {
        // Printed once, on first start: the operator's way in.
        println!(
            "Created API key for team `{}`: {}\nIt is also saved in {}",
            key.team,
            key.value,
            settings.storage.data_dir.join(API_KEY_FILE).display()
        );
    }
    let address = listener.local_addr()?;
    let reachable = match address.ip() {
        ip if ip.is_unspecified() => {
            std::net::SocketAddr::new(std::net::Ipv4Addr::LOCALHOST.into(), address.port())
        }
        _ => address,
    };
    let mut scraper = scrape::Scraper::new(store.clone(), Arc::clone(&settings))
        .map_err(StartupError::Engine)?
        .with_public_base(&format!("http://{reachable}"));
    if settings.search.index && !settings.storage.scratch {
        scraper = scraper.with_index(start_index(&store, &settings).await?);
    }
    let joined = match settings.cluster.enabled() {
        true => {
            let versions = remote::compat::versions();
            let cluster =
                cluster::Cluster::start(&settings.cluster, store.forgotten_members(), versions).await?;
            Some(remote::Joined::new(cluster, &store))
        }
        false => None,
    };
    let nodes = joined.as_ref().map(|joined| Arc::clone(&joined.teams) as Arc<dyn teams::TeamNodes>);
    let teams = Arc::new(teams::Teams::new(Arc::clone(&settings), store.clone(), nodes));
    if let Some(joined) = &joined {
        // Before any job resumes: the team limits it passes are the cluster's.
        joined.serve_teams(Arc::clone(&teams));
        scraper = joined.scraper(scraper, &store);
    }
    let services = actors::Services::new(scraper.clone(), store.clone(), Arc::clone(&settings), teams)
        .with_sandbox(sandbox);
    let services = match &joined {
        Some(joined) => joined.services(services),
        None => services,
    };
    let runtime = actors::Runtime::start(services).await?;
    let jobs = match &joined {
        Some(joined) => joined.jobs(runtime.clone()),
        None => service::JobService::new(runtime.clone()),
    };
    if let Some(joined) = &joined {
        joined.serve(jobs.clone(), &reachable.to_string()).map_err(StartupError::Engine)?;
    }
    let search_providers: Arc<[Arc<dyn search::Provider>]> =
        search::providers(&settings, scraper.search_index().map(|h| Arc::clone(&h.index))).into();
    let llm_jobs = service::llm_jobs::LlmJobs::new(runtime.clone(), Arc::clone(&search_providers));
    match llm_jobs.resume() {
        Ok(0) => {}
        Ok(n) => tracing::info!(jobs = n, "extract and agent jobs resumed"),
        Err(e) => tracing::warn!(error = %e, "extract and agent jobs could not be resumed"),
    }
    let state = web::Data::new(api::AppState {
        settings: Arc::clone(&settings),
        scraper,
        runtime: runtime.clone(),
        jobs,
        services_runtime: tokio::runtime::Handle::current(),
        search_providers,
        llm_jobs,
    });
    let openapi = web::Data::new(api::openapi::OpenApiJson::build(
        &settings.browser.code_languages,
        settings.llm.enabled(),
    ));
    let workers = match settings.server.workers {
        0 => std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get),
        n => n,
    };
    let state_for_metrics = (state.clone(), openapi.clone());
    let server = HttpServer::new(move || api::create_app(state.clone(), openapi.clone(), api::Surface::Api))
        .workers(workers)
        .disable_signals()
        .shutdown_timeout(settings.server.shutdown_grace_secs)
        .listen(listener)?
        .run();
    tracing::info!(%address, workers, "ferrocrawl is listening");
    let metrics_server = match settings.metrics.listen.as_str() {
        "" => None,
        addr => {
            let (state, openapi) = state_for_metrics;
            let server = HttpServer::new(move || {
                api::create_app(state.clone(), openapi.clone(), api::Surface::Metrics)
            })
            .workers(1)
            .disable_signals()
            .bind(addr)?
            .run();
            tracing::info!(address = addr, "metrics are served on their own address");
            Some(server)
        }
    };
    let metrics_handle = metrics_server.as_ref().map(actix_web::dev::Server::handle);
    if let Some(server) = metrics_server {
        tokio::spawn(server);
    }
    let handle = server.handle();
    let watched = runtime.clone();
    let stopper = async move {
        let failed = tokio::select! {
            () = shutdown => false,
            () = watched.ended() => true,
        };
        if failed {
            tracing::error!("the actor tree stopped; shutting the server down");
        } else {
            tracing::info!("shutting down: finishing running requests");
        }
        if let Some(metrics) = metrics_handle {
            metrics.stop(true).await;
        }
        handle.stop(true).await;
        failed
    };
    let (result, failed) = tokio::join!(server, stopper);
    let (raised, refused) = process::priority::raise_idle_threads();
    tracing::debug!(
        raised,
        refused,
        "background threads put back in the normal scheduling class for the stop"
    );
    runtime.shutdown().await;
    if let Some(index) = runtime.services().scraper.search_index() {
        index.shutdown().await;
    }
    if let Some(cluster) = &runtime.services().cluster {
        cluster.stop().await;
    }
    store.flush()?;
    tracing::info!("stopped; data flushed");
    result.map_err(StartupError::Io)?;
    if failed {
        return Err(StartupError::Actors(actors::RuntimeError::Actors(
            "a supervisor kept failing; see the log".into(),
        )));
    }
    Ok(())
}

/// The sandbox of interact code, when the settings let code run outside the page
/// (`python`, `bash`): built once here, so a server that cannot build one refuses to start.
async fn code_sandbox(settings: &Settings) -> Result<Option<process::sandbox::Sandbox>, StartupError> {
    let outside: Vec<&str> =
        settings.browser.code_languages.iter().map(String::as_str).filter(|l| *l != "node").collect();
    if outside.is_empty() {
        return Ok(None);
    }
    let refused = |why: String| StartupError::Sandbox { languages: outside.join(" and "), why };
    let exe = match &settings.browser.sandbox_exe {
        Some(exe) => exe.clone(),
        None => std::env::current_exe().map_err(|e| refused(format!("this program's path: {e}")))?,
    };
    process::sandbox::Sandbox::probe(exe).await.map(Some).map_err(refused)
}

/// Opens the search index in the data directory and starts its indexer; an empty index
/// beside a filled page cache (a data directory of an earlier release) is filled from the
/// cache in the background.
async fn start_index(
    store: &Store,
    settings: &Arc<Settings>,
) -> Result<search::indexer::IndexHandle, StartupError> {
    let dir = settings.storage.data_dir.join(search::INDEX_DIR);
    let index = Arc::new(
        search::SearchIndex::open(&dir).map_err(|e| StartupError::Engine(format!("search index: {e}")))?,
    );
    if index.pages() == 0 && !store.cache.is_empty() {
        // Every cached page is indexed: what waited in the backlog too.
        if let Err(e) = store.index_backlog.clear() {
            tracing::warn!(error = %e, "the search index's backlog could not be cleared");
        }
        fill_index_in_background(store, &index, settings);
    }
    let (cache, limits) = (store.cache.clone(), documents::Limits::of(&settings.documents));
    let build: search::backlog::Builder =
        Arc::new(move |key| scrape::reindex::entry_of(&cache, key, &limits));
    search::indexer::IndexHandle::start(
        index,
        settings.search.index_queue,
        store.index_backlog.clone(),
        build,
    )
    .await
    .map_err(|e| StartupError::Engine(format!("search indexer: {e}")))
}

/// Indexes the page cache into an empty search index on a thread of the idle class, so
/// pages cached before the index existed (an upgrade) or before it was set aside become
/// searchable without `ferrocrawl index rebuild`; the server answers meanwhile.
fn fill_index_in_background(store: &Store, index: &Arc<search::SearchIndex>, settings: &Arc<Settings>) {
    let (store, index, settings) = (store.clone(), Arc::clone(index), Arc::clone(settings));
    let spawned = std::thread::Builder::new().name("ferrocrawl-reindex".into()).spawn(move || {
        process::priority::lower(process::priority::Priority::Idle);
        match scrape::reindex::fill(&store, &index, &settings) {
            Ok(pages) => tracing::info!(pages, "the search index was filled from the page cache"),
            Err(e) => tracing::warn!(error = %e, "filling the search index from the page cache failed"),
        }
    });
    if let Err(e) = spawned {
        tracing::warn!(error = %e, "the search index is not filled from the page cache");
    }
}

/// Creates the first key when the store has none, writing it to `data_dir/api-key` (0600).
pub fn bootstrap_key(store: &Store, data_dir: &Path) -> Result<Option<NewKey>, StartupError> {
    if !store.keys.is_empty() {
        return Ok(None);
    }
    let team = TeamId::parse(BOOTSTRAP_TEAM).map_err(|e| StartupError::Engine(e.clone()))?;
    let key = store.keys.add(&team, None)?;
    let path = data_dir.join(API_KEY_FILE);
    write_secret(&path, &key.value)
        .map_err(|source| StartupError::KeyFile { path: path.display().to_string(), source })?;
    Ok(Some(key))
}

fn write_secret(path: &Path, value: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file =
        std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(path)?;
    writeln!(file, "{value}")?;
    file.sync_all()
}
