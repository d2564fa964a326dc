//! The one-page pipeline shared by scrape, batch and crawl: options → cache → engine →
//! extraction → formats. [`Scraper::scrape`] runs it within the request's time budget,
//! serving from or filling the page cache as the options allow, and stores the result for
//! later retrieval unless the request asked for zero data retention.

pub mod cache;
pub mod change;
pub mod credits;
pub mod document;
pub mod engine;
pub mod links;
mod llm_formats;
mod pool;
pub mod profiles;
pub mod reindex;
mod rendering;
pub mod shared_cache;
pub mod upload;

use std::sync::Arc;
use std::time::Duration;

use url::Url;

use crate::config::Settings;
use crate::model::{
    CacheState, Code, Document, Engine, ErrorCode, JobId, ProxyMode, ProxyUsed, ScrapeOptions, TeamId, time,
};
use crate::store::replays::UnreplayableIds;
use crate::store::{CachedPage, Store, StoreError};
use engine::browser::{BrowserError, BrowserPool};
use engine::http::is_refusal_status;
use engine::{FetchError, FetchRequest, HttpEngine};

/// One scrape to perform.
#[derive(Debug, Clone)]
pub struct ScrapeJob {
    /// Its id (`metadata.scrapeId`).
    pub id: JobId,
    /// The team it is done for.
    pub team: TeamId,
    /// The URL to fetch.
    pub url: Url,
    /// The URL as the caller wrote it.
    pub source_url: String,
    /// Validated options.
    pub options: ScrapeOptions,
    /// How long the request waited for the team's concurrency limit, when it did (ms).
    pub queued_ms: Option<u64>,
}

/// Why a scrape produced no document.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ScrapeError {
    /// `minAge` and nothing suitable cached.
    #[error("no cached data matches this request (minAge)")]
    NoCachedData,
    /// `lockdown` and the page is not cached.
    #[error("the page is not in the cache and lockdown forbids fetching it")]
    LockdownMiss,
    /// The time budget ran out.
    #[error("the scrape did not finish within {ms} ms")]
    Timeout {
        /// The budget.
        ms: u64,
    },
    /// Fetching failed.
    #[error(transparent)]
    Fetch(#[from] FetchError),
    /// The target served a file type this build cannot convert.
    #[error("the target served {0}, which this server cannot convert")]
    UnsupportedFile(String),
    /// The target served a document that could not be read.
    #[error(transparent)]
    Document(crate::documents::DocError),
    /// The browser could not serve the request.
    #[error(transparent)]
    Browser(BrowserError),
    /// Storage failed.
    #[error("storage error: {0}")]
    Store(#[from] StoreError),
    /// The language model failed a format that needs it.
    #[error("language model: {0}")]
    Model(#[from] crate::llm::LlmError),
    /// A worker task died.
    #[error("internal error: {0}")]
    Internal(String),
}

impl From<document::BuildError> for ScrapeError {
    fn from(e: document::BuildError) -> Self {
        match e {
            document::BuildError::Unsupported(media) => Self::UnsupportedFile(media),
            document::BuildError::Document(e) => Self::Document(e),
        }
    }
}

impl ErrorCode for ScrapeError {
    fn code(&self) -> Code {
        match self {
            Self::NoCachedData => Code::ScrapeNoCachedData,
            Self::LockdownMiss => Code::ScrapeLockdownCacheMiss,
            Self::Timeout { .. } => Code::ScrapeTimeout,
            Self::Fetch(FetchError::Blocked { .. }) => Code::UrlBlocked,
            Self::Fetch(FetchError::Dns { .. }) => Code::ScrapeDnsResolution,
            Self::Fetch(FetchError::Tls(_)) => Code::ScrapeSslError,
            Self::Fetch(_) => Code::ScrapeSiteError,
            Self::UnsupportedFile(_) => Code::ScrapeUnsupportedFile,
            Self::Document(_) => Code::DocumentUnreadable,
            Self::Browser(e) => match e {
                BrowserError::Unavailable(_) => Code::BrowserUnavailable,
                BrowserError::Blocked { .. } => Code::UrlBlocked,
                BrowserError::Dns { .. } => Code::ScrapeDnsResolution,
                BrowserError::Action { .. } => Code::ScrapeActionError,
                BrowserError::Navigation(_) => Code::ScrapeSiteError,
                _ => Code::BrowserFailed,
            },
            Self::Model(_) => Code::LlmFailed,
            Self::Store(_) | Self::Internal(_) => Code::Unknown,
        }
    }
}

/// Runs scrapes.
#[derive(Debug, Clone)]
pub struct Scraper {
    engine: HttpEngine,
    browser: BrowserPool,
    store: Store,
    settings: Arc<Settings>,
    public_base: Arc<str>,
    unreplayable: Arc<UnreplayableIds>,
    links: links::FileLinks,
    /// Where profiles live when not in this node's store (a cluster).
    profiles: Option<Arc<dyn profiles::ProfileKeeper>>,
    /// Where pages of sites another node owns are cached (a cluster).
    pages: Option<Arc<dyn shared_cache::PageKeeper>>,
    /// Where stored pages go to be searchable, when the server keeps an index.
    index: Option<crate::search::indexer::IndexHandle>,
    /// The language model, when one is configured.
    llm: Option<crate::llm::Llm>,
}

/// Where an interact session can find a scrape's page state.
#[derive(Debug, Clone)]
pub enum ReplayLookup {
    /// No such scrape (or it expired).
    Unknown,
    /// The scrape exists but kept no context (zero data retention); `team` owns it.
    Unavailable {
        /// Owner.
        team: String,
    },
    /// The context.
    Found(Box<crate::store::replays::Replay>),
}

/// A page and where it came from.
#[derive(Debug)]
struct Sourced {
    page: CachedPage,
    final_url: Url,
    cache_state: Option<CacheState>,
    cached_at: Option<String>,
    retry_after: Option<Duration>,
    output: Option<rendering::BrowserOutput>,
}

/// A page retrieved by [`Scraper::retrieve`] and waiting for [`Scraper::convert`].
#[derive(Debug)]
pub struct Retrieved {
    sourced: Sourced,
    warnings: Vec<String>,
    deadline: tokio::time::Instant,
}

impl Retrieved {
    /// The HTTP status the target answered with.
    pub fn status(&self) -> u16 {
        self.sourced.page.status
    }

    /// `Retry-After` of a 429/503 answer.
    pub fn retry_after(&self) -> Option<Duration> {
        self.sourced.retry_after
    }
}

/// A page scraped for a crawl or batch: its document, the links it reveals, and the
/// target's request to slow down, if any.
#[derive(Debug, Clone)]
pub struct PageResult {
    /// The result document.
    pub document: Document,
    /// Every absolute link of the page.
    pub links: Vec<String>,
    /// `Retry-After` of a 429/503 answer.
    pub retry_after: Option<Duration>,
}

impl Scraper {
    /// A scraper over `store` with `settings`.
    /// Files it stores are linked under `settings.server.public_url`, or the configured
    /// address until [`Scraper::with_public_base`] says where the server listens.
    pub fn new(store: Store, settings: Arc<Settings>) -> Result<Self, String> {
        let engine = HttpEngine::new(&settings)?;
        let browser = BrowserPool::new(&settings, engine.shared_policy());
        let public_base = match settings.public_url() {
            Some(base) => base.into(),
            None => format!("http://{}:{}", settings.server.host, settings.server.port).into(),
        };
        let key = store.secret(links::KEY_NAME).map_err(|e| format!("file link key: {e}"))?;
        let links = links::FileLinks::new(key);
        let llm = crate::llm::Llm::from_settings(&settings.llm, store.clone())?;
        Ok(Self {
            engine,
            browser,
            store,
            settings,
            public_base,
            unreplayable: Arc::default(),
            links,
            profiles: None,
            pages: None,
            index: None,
            llm,
        })
    }

    /// The language model, when one is configured.
    pub fn llm(&self) -> Option<&crate::llm::Llm> {
        self.llm.as_ref()
    }

    /// Links stored files under `base` (the address the server listens on), unless a
    /// public URL is configured.
    #[must_use]
    pub fn with_public_base(mut self, base: &str) -> Self {
        if self.settings.public_url().is_none() {
            self.public_base = base.trim_end_matches('/').into();
        }
        self
    }

    /// The HTTP engine (for its address policy).
    pub fn engine(&self) -> &HttpEngine {
        &self.engine
    }

    /// The browser pool.
    pub fn browser(&self) -> &BrowserPool {
        &self.browser
    }

    /// Scrapes one page within its time budget and stores the result.
    pub async fn scrape(&self, job: &ScrapeJob) -> Result<Document, ScrapeError> {
        let mut document = self.scrape_page(job, false).await?.document;
        if job.options.zero_data_retention {
            self.unreplayable.remember(job.id, &job.team);
        } else if self.keep(job.id, &job.team, &mut document)? {
            let ttl_ms = self.settings.storage.result_ttl_secs.saturating_mul(1000);
            self.store.replays.put(job.id, &job.team, job.url.as_str(), &job.options, ttl_ms)?;
        }
        Ok(document)
    }

    /// Keeps a scrape's result for `GET /v2/scrape/{id}`, unless the data disk is short of
    /// space: then the caller still gets it, told that it was not kept. Whether it was kept.
    pub(crate) fn keep(&self, id: JobId, team: &TeamId, document: &mut Document) -> Result<bool, StoreError> {
        if let Err(full) = self.store.space.ensure() {
            document.add_warning(&format!(
                "This result was not stored ({full}); GET /v2/scrape/{id} will not find it."
            ));
            return Ok(false);
        }
        let ttl_ms = self.settings.storage.result_ttl_secs.saturating_mul(1000);
        self.store.scrapes.put(id, team, document, ttl_ms)?;
        Ok(true)
    }

    /// The replay context of scrape `id`, for an interact session.
    pub fn replay_context(&self, id: JobId) -> Result<ReplayLookup, StoreError> {
        if let Some(replay) = self.store.replays.get(id)? {
            return Ok(ReplayLookup::Found(Box::new(replay)));
        }
        Ok(match self.unreplayable.team_of(id) {
            Some(team) => ReplayLookup::Unavailable { team },
            None => ReplayLookup::Unknown,
        })
    }

    /// The base of the URLs of our own pages and files.
    pub fn public_base(&self) -> &str {
        &self.public_base
    }

    /// A stored file (screenshot, PDF) of `team`.
    pub fn stored_file(
        &self,
        id: JobId,
        team: &TeamId,
    ) -> Result<Option<crate::store::files::StoredFile>, StoreError> {
        Ok(self.store.files.get(id)?.filter(|f| f.team == team.as_str()))
    }

    /// The stored file a signed link names (`name` is `{id}.{ext}`), when the link is
    /// genuine and unexpired; otherwise what is wrong with it.
    pub fn linked_file(
        &self,
        name: &str,
        expires_secs: u64,
        signature: &str,
    ) -> Result<Result<Option<crate::store::files::StoredFile>, links::LinkCheck>, StoreError> {
        let check = self.links.check(name, expires_secs, signature, time::now_ms() / 1000);
        if check != links::LinkCheck::Valid {
            return Ok(Err(check));
        }
        let id = name.split('.').next().and_then(JobId::parse);
        Ok(Ok(match id {
            Some(id) => self.store.files.get(id)?,
            None => None,
        }))
    }

    /// A stored result of `team`.
    pub fn stored(&self, id: JobId, team: &TeamId) -> Result<Option<Document>, StoreError> {
        self.store.scrapes.get(id, team)
    }

    /// Scrapes one page within its time budget without storing a result record (crawl and
    /// batch pages are stored with their job); `discover` also returns the page's links.
    pub async fn scrape_page(&self, job: &ScrapeJob, discover: bool) -> Result<PageResult, ScrapeError> {
        let page = self.retrieve(job).await?;
        self.convert(job, page, discover).await
    }

    /// Offers every page it stores to `index` (the local search index).
    #[must_use]
    pub fn with_index(mut self, index: crate::search::indexer::IndexHandle) -> Self {
        self.index = Some(index);
        self
    }

    /// Reads and saves browser profiles through `keeper` (a cluster's nodes).
    #[must_use]
    pub fn with_profiles(mut self, keeper: Arc<dyn profiles::ProfileKeeper>) -> Self {
        self.profiles = Some(keeper);
        self
    }

    /// Reads and fills the cache of the node that owns each page's site (a cluster's).
    #[must_use]
    pub fn with_pages(mut self, keeper: Arc<dyn shared_cache::PageKeeper>) -> Self {
        self.pages = Some(keeper);
        self
    }

    /// The local search index, when the server keeps one.
    pub fn search_index(&self) -> Option<&crate::search::indexer::IndexHandle> {
        self.index.as_ref()
    }

    /// The first half of [`Scraper::scrape_page`]: the page from the cache or the target,
    /// not yet converted, so a crawl can free the site's slot before the CPU work starts.
    /// The time budget starts here and covers [`Scraper::convert`] too.
    ///
    /// Counted in the `scrapes_total` metric (engine, cache state, outcome code) and timed in
    /// `scrape_retrieve_seconds` (engine, cache state).
    pub async fn retrieve(&self, job: &ScrapeJob) -> Result<Retrieved, ScrapeError> {
        let ms = job.options.timeout_ms;
        let started = tokio::time::Instant::now();
        let deadline = started + Duration::from_millis(ms);
        let mut warnings = Vec::new();
        let sourced = tokio::time::timeout_at(deadline, self.source(job, &mut warnings))
            .await
            .map_err(|_| ScrapeError::Timeout { ms })
            .and_then(|sourced| sourced);
        let (engine, cache, outcome) = match &sourced {
            Ok(s) => (
                if s.page.rendered { "chromium" } else { "http" },
                if matches!(s.cache_state, Some(CacheState::Hit)) { "hit" } else { "miss" },
                "ok",
            ),
            Err(e) => ("none", "miss", e.code().as_str()),
        };
        metrics::counter!("scrapes_total", "engine" => engine, "cache" => cache, "outcome" => outcome)
            .increment(1);
        metrics::histogram!("scrape_retrieve_seconds", "engine" => engine, "cache" => cache)
            .record(started.elapsed().as_secs_f64());
        Ok(Retrieved { sourced: sourced?, warnings, deadline })
    }

    /// The second half of [`Scraper::scrape_page`]: extraction and formats.
    pub async fn convert(
        &self,
        job: &ScrapeJob,
        page: Retrieved,
        discover: bool,
    ) -> Result<PageResult, ScrapeError> {
        let ms = job.options.timeout_ms;
        let produced = self.produce(job, page.sourced, page.warnings, discover, page.deadline);
        tokio::time::timeout_at(page.deadline, produced).await.map_err(|_| ScrapeError::Timeout { ms })?
    }

    /// Fetches a URL as-is (robots.txt, sitemaps): no cache, no extraction.
    pub async fn fetch_raw(&self, url: &Url, timeout: Duration) -> Result<engine::Fetched, ScrapeError> {
        let request = FetchRequest {
            url,
            headers: &[],
            mobile: false,
            languages: &[],
            verify_tls: false,
            via_proxy: false,
        };
        let ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
        tokio::time::timeout(timeout, self.engine.fetch(&request))
            .await
            .map_err(|_| ScrapeError::Timeout { ms })?
            .map_err(Into::into)
    }

    async fn produce(
        &self,
        job: &ScrapeJob,
        sourced: Sourced,
        mut warnings: Vec<String>,
        discover: bool,
        deadline: tokio::time::Instant,
    ) -> Result<PageResult, ScrapeError> {
        let options = &job.options;
        let (mut built, mut sourced) = self.build(job, sourced, discover).await?;
        if built.placeholder && !sourced.page.rendered && sourced.output.is_none() {
            // Served HTML whose content is a stand-in for what its scripts build.
            if let Some(rendered) = self.render_placeholder(job, &mut warnings, deadline).await {
                let page = self.page_of(job, rendered.fetched, rendered.engine);
                sourced = Sourced {
                    final_url: Url::parse(&page.final_url).unwrap_or_else(|_| job.url.clone()),
                    page,
                    output: rendered.output,
                    ..sourced
                };
                (built, sourced) = self.build(job, sourced, discover).await?;
            }
        }
        let retry_after = sourced.retry_after;
        let output = sourced.output.take();
        let engine = if sourced.page.rendered { Engine::Chromium } else { Engine::Http };
        let proxy_used = if sourced.page.via_proxy { ProxyUsed::Stealth } else { ProxyUsed::Basic };
        let status = sourced.page.status;
        let (cache_state, cached_at) = (sourced.cache_state, sourced.cached_at);
        let pdf_pages = built.pdf_pages;
        let mut doc = built.document;
        if let Some(index) = &self.index
            && options.may_write_cache()
            && (200..300).contains(&status)
            && !matches!(cache_state, Some(CacheState::Hit))
        {
            let page = &sourced.page;
            let now = || {
                crate::search::page::indexed(&doc, page.content_type.as_deref(), &page.body, page.fetched_ms)
            };
            // When many pages wait already: built again from the page cache, later.
            index.offer(now, || cache::key(&job.url, &job.options));
        }
        let extracted = if options.need_model() {
            llm_formats::apply(self.llm.as_ref(), job, &mut doc, &mut warnings, deadline).await?
        } else {
            None
        };
        if let Some(spec) = &options.formats.change_tracking {
            if options.zero_data_retention {
                warnings.push("change tracking keeps no history for zero-data-retention requests; compared with the stored baseline only".to_owned());
            }
            let markdown = doc.markdown.as_deref().unwrap_or_default();
            let url = cache::canonical(&job.url);
            let current = change::Current { markdown, extracted: extracted.as_ref(), status };
            let tracked = change::track(
                &self.store.history,
                &job.team,
                &url,
                spec,
                &current,
                !options.zero_data_retention,
            )?;
            doc.change_tracking = Some(tracked);
        }
        if let Some(output) = output {
            self.attach(job, &mut doc, output)?;
        }
        let meta = &mut doc.metadata;
        meta.engine = Some(engine);
        meta.scrape_id = Some(job.id.to_string());
        meta.proxy_used = proxy_used;
        meta.cache_state = cache_state;
        meta.cached_at = cached_at;
        meta.credits_used = credits::for_page(options, proxy_used, pdf_pages);
        meta.concurrency_limited = job.queued_ms.is_some();
        meta.concurrency_queue_duration_ms = job.queued_ms;
        warnings.extend(doc.warning.take());
        if !warnings.is_empty() {
            doc.warning = Some(warnings.join(" "));
        }
        Ok(PageResult { document: doc, links: built.links, retry_after })
    }

    /// Converts a sourced page on the blocking pool; hands the page back for a second
    /// attempt.
    async fn build(
        &self,
        job: &ScrapeJob,
        sourced: Sourced,
        discover: bool,
    ) -> Result<(document::Built, Sourced), ScrapeError> {
        let mut options = job.options.clone();
        // The model reads the page as Markdown, asked for or not (dropped again after).
        options.formats.markdown |= options.need_model();
        let source_url = job.source_url.clone();
        let limits = crate::documents::Limits::of(&self.settings.documents);
        let size = sourced.page.body.len();
        pool::convert(size, move || {
            let input = document::PageInput {
                source_url: &source_url,
                final_url: &sourced.final_url,
                status: sourced.page.status,
                content_type: sourced.page.content_type.as_deref(),
                body: &sourced.page.body,
            };
            let built = document::build(&input, &options, discover, &limits);
            built.map(|built| (built, sourced)).map_err(ScrapeError::from)
        })
        .await?
    }

    /// A freshly fetched page as the cache keeps it, written to the cache when the options
    /// allow and the answer is a success (error pages are fetched again next time).
    fn page_of(&self, job: &ScrapeJob, fetched: engine::Fetched, engine: Engine) -> CachedPage {
        let page = CachedPage {
            final_url: fetched.final_url.to_string(),
            status: fetched.status,
            content_type: fetched.content_type,
            body: fetched.body,
            fetched_ms: time::now_ms(),
            via_proxy: fetched.via_proxy,
            rendered: engine == Engine::Chromium,
        };
        if job.options.may_write_cache() && (200..300).contains(&page.status) && !self.store.space.is_short()
        {
            let key = cache::key(&job.url, &job.options);
            if self.cache_elsewhere(&job.url, key, &page) {
                return page;
            }
            let put = move |cache: &crate::store::PageCache, page: &CachedPage| {
                if let Err(e) = cache.put(key, page) {
                    tracing::warn!(error = %e, "page not cached");
                }
            };
            if pool::is_heavy(page.body.len()) {
                let (cache, copy) = (self.store.cache.clone(), page.clone());
                pool::spawn_heavy(move || put(&cache, &copy));
            } else {
                put(&self.store.cache, &page);
            }
        }
        page
    }

    /// The page: from the cache when allowed and fresh enough, else from the target.
    async fn source(&self, job: &ScrapeJob, warnings: &mut Vec<String>) -> Result<Sourced, ScrapeError> {
        let options = &job.options;
        let key = cache::key(&job.url, options);
        if options.may_read_cache() {
            let cached =
                self.cached(&job.url, key).await?.filter(|p| cache::is_usable(p, options, time::now_ms()));
            if let Some(page) = cached {
                let final_url = Url::parse(&page.final_url).unwrap_or_else(|_| job.url.clone());
                let cached_at = Some(time::iso_ms(page.fetched_ms));
                return Ok(Sourced {
                    page,
                    final_url,
                    cache_state: Some(CacheState::Hit),
                    cached_at,
                    retry_after: None,
                    output: None,
                });
            }
            if options.lockdown {
                return Err(ScrapeError::LockdownMiss);
            }
            if options.min_age_ms.is_some() {
                return Err(ScrapeError::NoCachedData);
            }
        }
        let rendering::FetchedPage { fetched, engine, output } = self.fetch_page(job, warnings).await?;
        let retry_after = fetched.retry_after;
        let final_url = fetched.final_url.clone();
        let page = self.page_of(job, fetched, engine);
        let cache_state = options.may_read_cache().then_some(CacheState::Miss);
        Ok(Sourced { page, final_url, cache_state, cached_at: None, retry_after, output })
    }

    /// Fetches over HTTP according to the proxy mode.
    async fn fetch(
        &self,
        job: &ScrapeJob,
        warnings: &mut Vec<String>,
    ) -> Result<engine::Fetched, ScrapeError> {
        let options = &job.options;
        let languages = options.location.as_ref().map(|l| l.languages.as_slice()).unwrap_or_default();
        let direct = FetchRequest {
            url: &job.url,
            headers: &options.headers,
            mobile: options.mobile,
            languages,
            verify_tls: !options.skip_tls_verification,
            via_proxy: false,
        };
        let proxied = FetchRequest { via_proxy: true, ..direct.clone() };
        let has_proxy = self.engine.has_proxy();
        match options.proxy {
            ProxyMode::Basic => Ok(self.engine.fetch(&direct).await?),
            ProxyMode::Enhanced if has_proxy => Ok(self.engine.fetch(&proxied).await?),
            ProxyMode::Enhanced => {
                warnings.push(
                    "No enhanced proxy is configured on this server; the page was fetched directly."
                        .to_owned(),
                );
                Ok(self.engine.fetch(&direct).await?)
            }
            ProxyMode::Auto => {
                let first = self.engine.fetch(&direct).await;
                let retry = has_proxy
                    && match &first {
                        Ok(f) => is_refusal_status(f.status),
                        Err(e) => e.worth_proxy_retry(),
                    };
                if !retry {
                    return Ok(first?);
                }
                match (self.engine.fetch(&proxied).await, first) {
                    (Ok(second), Ok(first)) if is_refusal_status(second.status) => Ok(first),
                    (Ok(second), _) => Ok(second),
                    (Err(_), Ok(first)) => Ok(first),
                    (Err(e), Err(_)) => Err(e.into()),
                }
            }
        }
    }
}
