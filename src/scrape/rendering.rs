//! The browser side of the pipeline: which engine serves a scrape (Chromium when the request
//! needs it, or when the HTTP result looks built by JavaScript), and how browser output
//! (screenshots, action results, branding, a saved profile) becomes part of the document.
//! Images and PDFs are stored as files of ours under `/v2/files/`, or inlined as `data:`
//! URLs for zero-data-retention requests, which write nothing.

use std::time::Duration;

use base64::Engine as _;
use tokio::time::Instant;

use super::engine::Fetched;
use super::engine::browser::render::RawActionResults;
use super::engine::browser::{BrowserError, RenderRequest, Shot, Tab};
use super::engine::js_shell::looks_js_rendered;
use super::{ScrapeError, ScrapeJob, Scraper};
use crate::model::document::ActionResults;
use crate::model::{Document, Engine, ProxyMode, ScrapeOptions, TeamId};
use crate::store::profiles::ProfileState;
use crate::store::replays::Replay;
use url::Url;

/// Time kept back from the scrape's budget so a slow page ends with a clear error.
const DEADLINE_MARGIN: Duration = Duration::from_millis(250);

/// What the browser produced besides the page.
#[derive(Debug, Default)]
pub(super) struct BrowserOutput {
    screenshot: Option<Shot>,
    actions: RawActionResults,
    branding: Option<serde_json::Value>,
}

/// A fetched page, the engine that produced it and the browser's extra output.
pub(super) struct FetchedPage {
    pub(super) fetched: Fetched,
    pub(super) engine: Engine,
    pub(super) output: Option<BrowserOutput>,
}

impl Scraper {
    /// Fetches the page: in the browser when the request needs one, over HTTP otherwise
    /// (rendered afterwards when it looks built by JavaScript).
    pub(super) async fn fetch_page(
        &self,
        job: &ScrapeJob,
        warnings: &mut Vec<String>,
    ) -> Result<FetchedPage, ScrapeError> {
        let options = &job.options;
        if options.prefers_browser() {
            match self.browser.available() {
                Ok(()) => return self.render(job, warnings).await,
                Err(e) if options.wants_browser_output() => return Err(ScrapeError::Browser(e)),
                Err(_) => warnings.push(
                    "This server has no Chromium (Debian package `chromium`), so the page was fetched over HTTP without browser emulation, waitFor or profile."
                        .to_owned(),
                ),
            }
        }
        let fetched = self.fetch(job, warnings).await?;
        let shell = looks_js_rendered(fetched.content_type.as_deref(), &fetched.body);
        if shell && self.settings.browser.auto_render && self.browser.available().is_ok() {
            match self.render(job, warnings).await {
                Ok(rendered) => return Ok(rendered),
                Err(e) => warnings.push(format!(
                    "The page looks built by JavaScript but rendering it failed ({e}); this is the HTML as served."
                )),
            }
        }
        Ok(FetchedPage { fetched, engine: Engine::Http, output: None })
    }

    /// Renders a page whose served HTML turned out to be a placeholder (its content nearly
    /// empty or a loading notice), when automatic rendering is on and Chromium is here.
    /// `None` keeps the served page: no browser, or rendering failed or ran out of time
    /// (said in `warnings`).
    pub(super) async fn render_placeholder(
        &self,
        job: &ScrapeJob,
        warnings: &mut Vec<String>,
        deadline: Instant,
    ) -> Option<FetchedPage> {
        if !self.settings.browser.auto_render || self.browser.available().is_err() {
            return None;
        }
        let mut notes = Vec::new();
        let rendered =
            tokio::time::timeout_at(deadline - DEADLINE_MARGIN, self.render(job, &mut notes)).await;
        warnings.append(&mut notes);
        match rendered {
            Ok(Ok(page)) => Some(page),
            Ok(Err(e)) => {
                warnings.push(format!(
                    "The page's content looks filled in by JavaScript but rendering it failed ({e}); this is the HTML as served."
                ));
                None
            }
            Err(_) => {
                warnings.push(
                    "The page's content looks filled in by JavaScript but rendering it did not finish in time; this is the HTML as served."
                        .to_owned(),
                );
                None
            }
        }
    }

    /// Renders the page in Chromium.
    async fn render(&self, job: &ScrapeJob, warnings: &mut Vec<String>) -> Result<FetchedPage, ScrapeError> {
        let options = &job.options;
        let profile = match &options.profile {
            Some(p) => self.load_profile(&job.team, &p.name, warnings).await?,
            None => None,
        };
        let budget = Duration::from_millis(options.timeout_ms).saturating_sub(DEADLINE_MARGIN);
        let request = self.render_request(&job.url, options, profile.as_ref(), Instant::now() + budget);
        // Like an HTTP fetch: the site's turn, and (in a cluster) still in touch.
        // The site's place is held while the page loads.
        let slot = super::engine::pace::before_request(&job.url).await;
        if slot.is_none() || !super::engine::pace::may_continue() {
            return Err(ScrapeError::Fetch(super::engine::http::FetchError::Interrupted));
        }
        let rendered = self.browser.render(&request).await.map_err(ScrapeError::Browser);
        drop(slot);
        let rendered = rendered?;
        if let (Some(state), Some(p)) = (&rendered.profile, &options.profile) {
            if options.zero_data_retention {
                warnings.push("Profiles are not saved for zero-data-retention requests.".to_owned());
            } else {
                self.save_profile(&job.team, &p.name, state, warnings).await?;
            }
        }
        let output = BrowserOutput {
            screenshot: rendered.screenshot,
            actions: rendered.actions,
            branding: rendered.branding,
        };
        if rendered.not_html {
            // A PDF or other file: its bytes come from a plain fetch.
            let fetched = self.fetch(job, warnings).await?;
            return Ok(FetchedPage { fetched, engine: Engine::Http, output: Some(output) });
        }
        let fetched = Fetched {
            final_url: rendered.final_url,
            status: rendered.status,
            content_type: Some("text/html; charset=utf-8".to_owned()),
            body: rendered.html.into_bytes(),
            via_proxy: options.proxy == ProxyMode::Enhanced && self.browser.has_enhanced_proxy(),
            retry_after: None,
        };
        Ok(FetchedPage { fetched, engine: Engine::Chromium, output: Some(output) })
    }

    /// How Chromium should render `url` with `options`, starting from `profile`.
    fn render_request<'a>(
        &'a self,
        url: &'a Url,
        options: &'a ScrapeOptions,
        profile: Option<&'a ProfileState>,
        deadline: Instant,
    ) -> RenderRequest<'a> {
        let scrape = &self.settings.scrape;
        RenderRequest {
            url,
            headers: &options.headers,
            mobile: options.mobile,
            location: options.location.as_ref(),
            block_ads: options.block_ads,
            wait_for_ms: options.wait_for_ms,
            actions: &options.actions,
            screenshot: options.formats.screenshot,
            branding: options.formats.branding,
            user_agent: if options.mobile { &scrape.mobile_user_agent } else { &scrape.user_agent },
            profile,
            save_profile: options.profile.as_ref().is_some_and(|p| p.save_changes),
            smart_wait_max: Duration::from_millis(self.settings.browser.smart_wait_max_ms),
            deadline,
            skip_tls_verification: options.skip_tls_verification,
            enhanced: options.proxy == ProxyMode::Enhanced,
        }
    }

    /// Opens a tab in the state scrape `replay` left its page (for an interact session):
    /// the same emulation, profile, navigation, wait and actions.
    pub async fn open_replay(&self, replay: &Replay, team: &TeamId) -> Result<Tab, ScrapeError> {
        let url = Url::parse(&replay.url)
            .map_err(|e| ScrapeError::Browser(BrowserError::Navigation(format!("stored URL: {e}"))))?;
        let options = &replay.options;
        let profile = match &options.profile {
            Some(p) => self.load_profile(team, &p.name, &mut Vec::new()).await?,
            None => None,
        };
        let budget = Duration::from_millis(options.timeout_ms).saturating_sub(DEADLINE_MARGIN);
        let request = self.render_request(&url, options, profile.as_ref(), Instant::now() + budget);
        self.browser.replay(&request).await.map_err(ScrapeError::Browser)
    }

    /// Opens a blank tab for a browser session made without a scrape (`POST /v2/browser`),
    /// with the team's profile `profile` when named.
    pub async fn open_blank(&self, team: &TeamId, profile: Option<&str>) -> Result<Tab, ScrapeError> {
        let state = match profile {
            Some(name) => self.load_profile(team, name, &mut Vec::new()).await?,
            None => None,
        };
        let user_agent = &self.settings.scrape.user_agent;
        self.browser.blank(user_agent, state.as_ref()).await.map_err(ScrapeError::Browser)
    }

    /// Puts browser output into the document.
    pub(super) fn attach(
        &self,
        job: &ScrapeJob,
        doc: &mut Document,
        output: BrowserOutput,
    ) -> Result<(), ScrapeError> {
        if let Some(shot) = output.screenshot {
            doc.screenshot = Some(self.file_url(job, shot.mime, shot.bytes)?);
        }
        if job.options.formats.branding {
            doc.branding = output.branding;
        }
        let raw = output.actions;
        let results = ActionResults {
            screenshots: raw
                .screenshots
                .into_iter()
                .map(|s| self.file_url(job, s.mime, s.bytes))
                .collect::<Result<_, _>>()?,
            scrapes: raw.scrapes,
            javascript_returns: raw.javascript_returns,
            pdfs: raw
                .pdfs
                .into_iter()
                .map(|p| self.file_url(job, "application/pdf", p))
                .collect::<Result<_, _>>()?,
        };
        let any = !(results.screenshots.is_empty()
            && results.scrapes.is_empty()
            && results.javascript_returns.is_empty()
            && results.pdfs.is_empty());
        if any {
            doc.actions = Some(results);
        }
        Ok(())
    }

    /// A URL for `bytes`: a signed link to a file of ours, or a `data:` URL when nothing
    /// may be stored (zero data retention, or the data disk short of space).
    fn file_url(&self, job: &ScrapeJob, mime: &str, bytes: Vec<u8>) -> Result<String, ScrapeError> {
        if job.options.zero_data_retention || self.store.space.is_short() {
            let encoded = base64::engine::general_purpose::STANDARD.encode(&bytes);
            return Ok(format!("data:{mime};base64,{encoded}"));
        }
        let ttl_secs = self.settings.storage.result_ttl_secs.max(self.settings.crawl.job_ttl_secs);
        let expires_ms = crate::model::time::now_ms().saturating_add(ttl_secs.saturating_mul(1000));
        let id = self.store.files.put(&job.team, mime, bytes, expires_ms)?;
        let extension = match mime {
            "image/png" => "png",
            "image/jpeg" => "jpg",
            "application/pdf" => "pdf",
            _ => "bin",
        };
        // A capability link: it opens without an API key until the file expires.
        let name = format!("{id}.{extension}");
        let query = self.links.query(&name, expires_ms / 1000);
        Ok(format!("{}/v2/files/{name}?{query}", self.public_base))
    }
}
