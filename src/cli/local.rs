//! Jobs run from the command line (`ferrocrawl crawl`, `ferrocrawl map`; and `search` and
//! `index rebuild` over a data directory): the same actor
//! tree and store as the server, in-process, with the results written to a folder — one
//! Markdown file per page and an `index.jsonl` line for each — as they complete, under a
//! progress bar. The job hands its pages over through a tap (`actors::tap`) rather than
//! the store, which keeps them only when `--data` names it.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;
use tokio::sync::mpsc;
use url::Url;

use crate::actors::map::MapLink;
use crate::actors::{Runtime, Services};
use crate::config::Settings;
use crate::crawl::scope::{self, ScopeOptions};
use crate::model::{CrawlOptions, Document, JobId, JobStatus, MapOptions, ScrapeOptions, TeamId};
use crate::scrape::Scraper;
use crate::service::{JobService, NewCrawl};
use crate::store::Store;

/// How often the progress bar is refreshed.
const TICK: Duration = Duration::from_millis(250);

/// Team that command-line jobs run as.
const LOCAL_TEAM: &str = "local";

/// What `ferrocrawl crawl` was asked to do.
#[derive(Debug, Clone)]
pub struct CrawlCommand {
    /// Start URL.
    pub url: Url,
    /// Most pages.
    pub limit: u64,
    /// Include patterns.
    pub include: Vec<String>,
    /// Exclude patterns.
    pub exclude: Vec<String>,
    /// Output folder.
    pub out: PathBuf,
    /// Fetches in flight (for the crawl and per site).
    pub concurrency: Option<u32>,
    /// Follow links outside the start path.
    pub entire_domain: bool,
    /// Show a progress bar.
    pub progress: bool,
}

/// What a finished command-line crawl did.
#[derive(Debug, Clone, Copy)]
pub struct CrawlSummary {
    /// Pages written.
    pub pages: u64,
    /// Pages that failed.
    pub failed: u64,
    /// URLs robots.txt kept us from.
    pub blocked: u64,
    /// Wall time.
    pub elapsed: Duration,
}

/// Opens the store and starts the actor tree for a command.
async fn start(settings: Settings) -> anyhow::Result<Runtime> {
    let settings = Arc::new(settings);
    let store = Store::open_with(&settings.storage).context("opening the data directory")?;
    let scraper = Scraper::new(store.clone(), Arc::clone(&settings)).map_err(anyhow::Error::msg)?;
    let teams = Arc::new(crate::teams::Teams::new(Arc::clone(&settings), store.clone(), None));
    Ok(Runtime::start(Services::new(scraper, store, settings, teams)).await?)
}

/// Crawls and writes the results to `cmd.out`.
pub async fn crawl(mut settings: Settings, cmd: CrawlCommand) -> anyhow::Result<CrawlSummary> {
    if let Some(n) = cmd.concurrency {
        settings.crawl.max_concurrency = n.max(1);
        settings.crawl.domain_concurrency = n.max(1);
        settings.limits.team_concurrency = n.max(1);
    }
    scope::validate_patterns(&ScopeOptions {
        include_paths: cmd.include.clone(),
        exclude_paths: cmd.exclude.clone(),
        ..Default::default()
    })?;
    std::fs::create_dir_all(&cmd.out).with_context(|| format!("creating {}", cmd.out.display()))?;
    // A store named with `--data` keeps the documents; a temporary one only counts them.
    let keep_documents = !settings.storage.scratch;
    let runtime = start(settings).await?;
    let options = CrawlOptions {
        include_paths: cmd.include,
        exclude_paths: cmd.exclude,
        limit: cmd.limit,
        crawl_entire_domain: cmd.entire_domain,
        // A one-off crawl gains nothing from filling the shared page cache.
        scrape: ScrapeOptions { max_age_ms: 0, store_in_cache: false, ..ScrapeOptions::default() },
        ..CrawlOptions::default()
    };
    let started = Instant::now();
    let team = TeamId::parse(LOCAL_TEAM).map_err(anyhow::Error::msg)?;
    let jobs = JobService::new(runtime.clone());
    // The pages go to the tap, opened before the job can finish a page.
    let id = JobId::new();
    let pages = runtime.services().taps.open(id, keep_documents);
    let request = NewCrawl { team, url: cmd.url.clone(), options, idempotency_key: None };
    let id = jobs.start_crawl_as(id, request).await?.id;
    let summary = write_results(&runtime, id, pages, &cmd.out, cmd.progress, started).await;
    runtime.shutdown().await;
    summary
}

fn bar(progress: bool) -> ProgressBar {
    if !progress {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new_spinner();
    let style = ProgressStyle::with_template("{spinner} {elapsed_precise} {msg}")
        .unwrap_or_else(|_| ProgressStyle::default_spinner());
    bar.set_style(style);
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

/// Writes one page: its Markdown file and its `index.jsonl` line.
fn write_page(out: &Path, index: &mut impl Write, n: u64, doc: &Document) -> anyhow::Result<()> {
    let file = format!("{n:06}.md");
    std::fs::write(out.join(&file), doc.markdown.as_deref().unwrap_or_default())?;
    let meta = &doc.metadata;
    let line = json!({
        "url": meta.url, "sourceURL": meta.source_url, "title": meta.title,
        "statusCode": meta.status_code, "engine": meta.engine, "file": file,
    });
    writeln!(index, "{line}")?;
    Ok(())
}

/// Writes each page the job hands over, until the job ends.
async fn write_results(
    runtime: &Runtime,
    id: JobId,
    mut pages: mpsc::Receiver<Document>,
    out: &Path,
    progress: bool,
    started: Instant,
) -> anyhow::Result<CrawlSummary> {
    let jobs = runtime.services().store.jobs.clone();
    let mut index = std::io::BufWriter::new(std::fs::File::create(out.join("index.jsonl"))?);
    let bar = bar(progress);
    let mut written = 0u64;
    let mut shown = Instant::now();
    loop {
        // The tap ends once the job's actor has ended, after handing over every page; the
        // timeout keeps the bar ticking while a slow site sends nothing.
        let ended = match tokio::time::timeout(TICK, pages.recv()).await {
            Ok(Some(doc)) => {
                written += 1;
                write_page(out, &mut index, written, &doc)?;
                false
            }
            Ok(None) => true,
            Err(_) => false,
        };
        if !ended && shown.elapsed() < TICK {
            continue;
        }
        shown = Instant::now();
        let counters = jobs.counters(id)?;
        let secs = started.elapsed().as_secs_f64().max(0.001);
        bar.set_message(format!(
            "{written} pages, {} queued, {} errors, {:.0} pages/s",
            counters.pending(),
            counters.failed + counters.blocked,
            written as f64 / secs
        ));
        if !ended {
            continue;
        }
        index.flush()?;
        bar.finish_and_clear();
        let record = jobs.record(id)?.context("the job vanished")?;
        if record.status == JobStatus::Failed {
            bail!("the crawl failed: {}", record.error.unwrap_or_default());
        }
        return Ok(CrawlSummary {
            pages: written,
            failed: counters.failed,
            blocked: counters.blocked,
            elapsed: started.elapsed(),
        });
    }
}

/// Maps a site and returns its links.
pub async fn map(
    settings: Settings,
    url: &Url,
    limit: usize,
    search: Option<String>,
) -> anyhow::Result<Vec<MapLink>> {
    let runtime = start(settings).await?;
    let scrape = ScrapeOptions { max_age_ms: 0, ..ScrapeOptions::default() };
    let options = MapOptions { search, ..MapOptions::site(limit, 60_000, scrape) };
    let team = TeamId::parse(LOCAL_TEAM).map_err(anyhow::Error::msg)?;
    let links = crate::actors::map::map(&runtime, &team, url, &options).await;
    runtime.shutdown().await;
    Ok(links?)
}

/// `ferrocrawl search`: the configured providers, the local one reading the data
/// directory's index as last committed (a running server may hold it open).
pub async fn search(
    settings: &Settings,
    query: &str,
    limit: usize,
    sources: &[crate::search::Source],
) -> anyhow::Result<crate::search::Found> {
    let request = crate::search::SearchRequest::simple(query, limit, sources).map_err(anyhow::Error::msg)?;
    let dir = settings.storage.data_dir.join(crate::search::INDEX_DIR);
    let index = match dir.exists() {
        true => Some(Arc::new(crate::search::SearchIndex::open_read_only(&dir)?)),
        false => None,
    };
    let providers = crate::search::providers(settings, index);
    let (found, warnings) = crate::search::run(&providers, &request).await;
    for warning in warnings {
        eprintln!("warning: {warning}");
    }
    Ok(found)
}

/// `ferrocrawl index rebuild`: the data directory's search index made again from its page
/// cache (the server must be stopped); returns how many pages it holds.
pub fn rebuild_index(settings: &Settings) -> anyhow::Result<usize> {
    let store =
        Store::open_with(&settings.storage).context("opening the data directory (is the server stopped?)")?;
    let dir = settings.storage.data_dir.join(crate::search::INDEX_DIR);
    let index = crate::search::SearchIndex::open(&dir)
        .context("opening the search index (is the server stopped?)")?;
    crate::scrape::reindex::rebuild(&store, &index, settings)
}
