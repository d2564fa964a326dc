//! Extract and agent jobs (`POST /v2/extract`, `POST /v2/agent`; contract §11): asynchronous
//! jobs that gather pages (the URLs given, or the best search results for the prompt when
//! none are), scrape each within the team's concurrency limit, have the language model
//! extract what the prompt and schema ask for from every page, and merge the pages' values
//! into one. The job's record is written before the answer, and a job found unfinished at
//! start runs again, so an accepted job is never lost. Billing follows the contract:
//! at least 20 credits must be left to start; the job costs one credit per 15 tokens used.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use url::Url;

use super::JobError;
use super::read::blocking;
use crate::actors::Runtime;
use crate::actors::events::{self, Job};
use crate::llm::{Llm, Payer, tokens};
use crate::model::{EventKind, JobId, MapOptions, ScrapeOptions, TeamId, WebhookSpec, time};
use crate::scrape::ScrapeJob;
use crate::search::{Provider, SearchRequest};
use crate::store::StoreError;
use crate::store::llm_jobs::LlmJobRecord;

/// Credits a team must have left to start a job.
pub const MIN_CREDITS: u64 = 20;
/// Tokens per credit.
const TOKENS_PER_CREDIT: u64 = 15;
/// Pages gathered at most.
pub const MAX_PAGES: usize = 10;
/// Pages scraped and extracted at once.
const PARALLEL: usize = 4;
/// Links a `…/*` URL's map collects, and the time it may take.
const MAP_LINKS: usize = 500;
const MAP_TIMEOUT_MS: u64 = 30_000;
/// Time a job may take unless its request says.
const DEFAULT_TIMEOUT_MS: u64 = 300_000;

/// Which job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// `POST /v2/extract`
    Extract,
    /// `POST /v2/agent`
    Agent,
}

impl Kind {
    /// Its name (the activity endpoint too).
    pub fn name(self) -> &'static str {
        match self {
            Self::Extract => "extract",
            Self::Agent => "agent",
        }
    }
}

/// A validated request.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LlmJobRequest {
    /// Which job.
    pub kind: Kind,
    /// Pages to read; empty: found by searching for the prompt.
    pub urls: Vec<String>,
    /// What to extract, in words.
    pub prompt: Option<String>,
    /// Extra instructions for the model.
    pub system_prompt: Option<String>,
    /// JSON Schema of the result.
    pub schema: Option<Value>,
    /// How pages are scraped.
    pub scrape: ScrapeOptions,
    /// Also search for the prompt when URLs are given.
    pub web_search: bool,
    /// Stop gathering once this many credits are used (agent `maxCredits`).
    pub max_credits: Option<u64>,
    /// The agent model name asked for, echoed in the status.
    pub model: Option<String>,
    /// Time the job may take (ms).
    pub timeout_ms: Option<u64>,
    /// Where its events go (`extract.started`…, `agent.cancelled`).
    #[serde(default)]
    pub webhook: Option<WebhookSpec>,
}

/// Extract and agent jobs of this node.
#[derive(Clone)]
pub struct LlmJobs {
    runtime: Runtime,
    providers: Arc<[Arc<dyn Provider>]>,
}

impl std::fmt::Debug for LlmJobs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmJobs").finish_non_exhaustive()
    }
}

/// What a job produced.
struct Outcome {
    value: Value,
    sources: Vec<(String, Vec<String>)>,
    warnings: Vec<String>,
    tokens: u64,
}

impl LlmJobs {
    /// The jobs of the node running `runtime`, gathering pages with `providers` when a
    /// request gives no URLs.
    pub fn new(runtime: Runtime, providers: Arc<[Arc<dyn Provider>]>) -> Self {
        Self { runtime, providers }
    }

    /// Accepts a job for `payer`: checks the credits, keeps the request, starts it.
    pub async fn start(&self, payer: Payer, request: LlmJobRequest) -> Result<JobId, JobError> {
        let services = self.runtime.services();
        services.teams.require(&payer.team, MIN_CREDITS).await?;
        let id = services.new_id();
        let now = time::now_ms();
        let record = LlmJobRecord {
            kind: request.kind.name().to_owned(),
            team: payer.team.as_str().to_owned(),
            key: payer.key.clone(),
            request_json: serde_json::to_vec(&request).map_err(StoreError::from)?,
            status: "processing".to_owned(),
            result_json: Vec::new(),
            error: None,
            sources: Vec::new(),
            warnings: Vec::new(),
            created_ms: now,
            expires_ms: now.saturating_add(services.settings.llm.job_ttl_ms()),
            credits: 0,
            tokens: 0,
        };
        let (put, store, webhook) = (record.clone(), services.store.clone(), request.webhook.clone());
        blocking(move || {
            store.llm_jobs.put(id, &put)?;
            notify(&store, id, &put, webhook.as_ref(), EventKind::Started, Ok(&[]));
            Ok(())
        })
        .await?;
        let target = request.urls.first().map(String::as_str);
        services.teams.note_activity(&payer.team, request.kind.name(), id, target)?;
        self.spawn(id, record);
        Ok(id)
    }

    /// Job `id` of `team`.
    pub async fn get(&self, id: JobId, team: &TeamId) -> Result<Option<LlmJobRecord>, JobError> {
        let (store, team) = (self.runtime.services().store.clone(), team.clone());
        blocking(move || Ok(store.llm_jobs.get(id, Some(&team))?)).await
    }

    /// Cancels job `id` of `team`; whether it was still running.
    pub async fn cancel(&self, id: JobId, team: &TeamId) -> Result<bool, JobError> {
        let Some(record) = self.get(id, team).await? else { return Err(JobError::NotFound) };
        if record.status != "processing" {
            return Ok(false);
        }
        let store = self.runtime.services().store.clone();
        let cancelled = LlmJobRecord { status: "cancelled".to_owned(), ..record };
        blocking(move || {
            if cancelled.kind == Kind::Agent.name() {
                let webhook = request_of(&cancelled).and_then(|r| r.webhook);
                notify(&store, id, &cancelled, webhook.as_ref(), EventKind::Cancelled, Ok(&[]));
            }
            Ok(store.llm_jobs.put(id, &cancelled)?)
        })
        .await?;
        Ok(true)
    }

    /// Runs again every job a stopped process left unfinished.
    pub fn resume(&self) -> Result<usize, StoreError> {
        let unfinished = self.runtime.services().store.llm_jobs.unfinished()?;
        let count = unfinished.len();
        for (id, record) in unfinished {
            self.spawn(id, record);
        }
        Ok(count)
    }

    fn spawn(&self, id: JobId, record: LlmJobRecord) {
        let jobs = self.clone();
        tokio::spawn(async move {
            // A server that stops ends the job where it is, its outcome unwritten (a read
            // the stop cuts short is not the job's failure): it runs again on the next start.
            let outcome = tokio::select! {
                biased;
                () = jobs.runtime.stopping() => return,
                outcome = jobs.run(&record) => outcome,
            };
            let services = jobs.runtime.services();
            let (store, teams) = (services.store.clone(), std::sync::Arc::clone(&services.teams));
            // The result is written (and flushed) off the async workers.
            let written = blocking(move || {
                finish(&store, &teams, id, &record.team, outcome);
                Ok(())
            });
            if let Err(e) = written.await {
                tracing::warn!(error = %e, job = %id, "an extract job's result was not stored");
            }
        });
    }

    async fn run(&self, record: &LlmJobRecord) -> Result<Outcome, String> {
        let request: LlmJobRequest =
            serde_json::from_slice(&record.request_json).map_err(|e| format!("unreadable request: {e}"))?;
        let services = self.runtime.services();
        let llm = services.scraper.llm().cloned().ok_or("no language model is configured (llm.base_url)")?;
        let team = TeamId::parse(&record.team).map_err(|e| e.clone())?;
        let payer = Payer { team: team.clone(), key: record.key.clone() };
        let timeout = Duration::from_millis(request.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS));
        let deadline = tokio::time::Instant::now() + timeout;
        let mut warnings = Vec::new();
        let urls = self.gather(&team, &request, &mut warnings).await;
        if urls.is_empty() {
            return Err(
                "no pages to read: give `urls`, or a prompt that the search index can answer".to_owned()
            );
        }
        let task = task_of(&request);
        let scrape = &request.scrape;
        let extracted: Vec<_> =
            futures::stream::iter(
                urls.into_iter().map(|url| {
                    let (llm, payer, task) = (llm.clone(), payer.clone(), task.clone());
                    let schema = request.schema.clone();
                    async move {
                        (url.clone(), self.page(&llm, &payer, &url, scrape, &task, schema, deadline).await)
                    }
                }),
            )
            .buffered(PARALLEL)
            .collect()
            .await;
        let (mut values, mut sources, mut tokens) = (Vec::new(), Vec::new(), 0u64);
        for (url, result) in extracted {
            match result {
                Ok((value, used, notes)) => {
                    tokens += used;
                    warnings.extend(notes);
                    if request.max_credits.is_some_and(|max| tokens.div_ceil(TOKENS_PER_CREDIT) > max) {
                        warnings.push(format!("Stopped at {url}: maxCredits reached."));
                        break;
                    }
                    values.push(value);
                    sources.push(url);
                }
                Err(e) => warnings.push(format!("{url}: {e}")),
            }
        }
        if values.is_empty() {
            return Err(format!("no page could be read: {}", warnings.join("; ")));
        }
        let sources = sources_of(&values, &sources);
        Ok(Outcome { value: merge(values), sources, warnings, tokens })
    }

    /// The pages to read: the request's URLs (a `…/*` one standing for the site's pages
    /// under its path), then search results for the prompt ([`Self::searched`]), without
    /// repeats.
    async fn gather(
        &self,
        team: &TeamId,
        request: &LlmJobRequest,
        warnings: &mut Vec<String>,
    ) -> Vec<String> {
        let mut urls: Vec<String> = Vec::new();
        for url in &request.urls {
            if url.ends_with("/*") {
                urls.extend(self.expand(team, url, request, warnings).await);
            } else {
                urls.push(url.clone());
            }
        }
        let given = !urls.is_empty();
        urls.extend(self.searched(request, given, warnings).await);
        let mut seen = std::collections::HashSet::new();
        urls.retain(|u| seen.insert(u.clone()));
        urls.truncate(MAX_PAGES);
        urls
    }

    /// Search results for the request's prompt: from the first provider that finds any
    /// when no URL is `given`; with web search asked for, from the first web provider that
    /// finds any too (and the local index's when no URL is given).
    async fn searched(
        &self,
        request: &LlmJobRequest,
        given: bool,
        warnings: &mut Vec<String>,
    ) -> Vec<String> {
        let Some(prompt) = request.prompt.as_deref().filter(|_| !given || request.web_search) else {
            return Vec::new();
        };
        let words = crate::search::docs::keywords(prompt).join(" ");
        let Ok(query) = crate::search::query::parse(&words) else { return Vec::new() };
        let search = SearchRequest::web(words, query, MAX_PAGES);
        if !request.web_search {
            return self.found(self.providers.iter(), &search, warnings).await;
        }
        let mut urls = Vec::new();
        if !given {
            let local = self.providers.iter().filter(|p| !p.reaches_web());
            urls = self.found(local, &search, warnings).await;
        }
        let web: Vec<_> = self.providers.iter().filter(|p| p.reaches_web()).collect();
        if web.is_empty() {
            warnings.push(
                "enableWebSearch: no web search provider is configured (search.providers names none but local)."
                    .into(),
            );
        }
        urls.extend(self.found(web.into_iter(), &search, warnings).await);
        urls
    }

    /// The web results of the first of `providers` that finds any; a failing one is named
    /// in `warnings`.
    async fn found<'p>(
        &self,
        providers: impl Iterator<Item = &'p Arc<dyn Provider>>,
        search: &SearchRequest,
        warnings: &mut Vec<String>,
    ) -> Vec<String> {
        for provider in providers {
            match provider.search(search).await {
                Ok(found) if !found.web.is_empty() => return found.web.into_iter().map(|r| r.url).collect(),
                Ok(_) => {}
                Err(e) => warnings.push(format!("search provider {} failed: {e}", provider.name())),
            }
        }
        Vec::new()
    }

    /// One page scraped (within the team's concurrency limit) and extracted: the value, the
    /// tokens used, and warnings.
    /// The pages `pattern` (`https://site/path/*`) stands for: the site's map under that
    /// path, those whose address or title share the most words with the prompt first.
    async fn expand(
        &self,
        team: &TeamId,
        pattern: &str,
        request: &LlmJobRequest,
        warnings: &mut Vec<String>,
    ) -> Vec<String> {
        let Ok(start) = Url::parse(pattern.trim_end_matches('*')) else { return Vec::new() };
        let options = MapOptions::site(MAP_LINKS, MAP_TIMEOUT_MS, request.scrape.clone());
        let links = match crate::actors::map::map(&self.runtime, team, &start, &options).await {
            Ok(links) => links,
            Err(e) => {
                warnings.push(format!("{pattern}: the site could not be mapped ({e})."));
                return Vec::new();
            }
        };
        let words = request.prompt.as_deref().map(crate::search::docs::keywords).unwrap_or_default();
        let hits = |link: &crate::actors::map::MapLink| {
            let text = format!("{} {}", link.url, link.title.as_deref().unwrap_or_default()).to_lowercase();
            words.iter().filter(|w| text.contains(w.as_str())).count()
        };
        let mut ranked: Vec<(usize, usize, String)> =
            links.iter().enumerate().map(|(i, link)| (hits(link), i, link.url.clone())).collect();
        // Most words first; the map's own order among equals.
        ranked.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        ranked.into_iter().take(MAX_PAGES).map(|(_, _, url)| url).collect()
    }

    #[allow(clippy::too_many_arguments)]
    async fn page(
        &self,
        llm: &Llm,
        payer: &Payer,
        url: &str,
        options: &ScrapeOptions,
        task: &str,
        schema: Option<Value>,
        deadline: tokio::time::Instant,
    ) -> Result<(Value, u64, Vec<String>), String> {
        let services = self.runtime.services();
        let parsed = Url::parse(url).map_err(|e| e.to_string())?;
        let admission = services.teams.admit(&payer.team).await;
        let job = ScrapeJob {
            id: services.new_id(),
            team: payer.team.clone(),
            url: parsed,
            source_url: url.to_owned(),
            options: ScrapeOptions { zero_data_retention: false, ..options.clone() },
            queued_ms: admission.waited.map(|w| u64::try_from(w.as_millis()).unwrap_or(u64::MAX)),
        };
        let page = services.scraper.scrape_page(&job, false).await.map_err(|e| e.to_string())?;
        drop(admission);
        let markdown = page.document.markdown.unwrap_or_default();
        let limit = llm.settings().max_input_tokens.saturating_sub(1_000).max(256);
        let (text, was_cut) = tokens::cut_off_worker(markdown, limit).await;
        let mut notes = Vec::new();
        if was_cut {
            notes.push(format!("{url} was cut to {limit} tokens (cl100k estimate) for the language model."));
        }
        let input = crate::llm::prompts::page(url, page.document.metadata.title.as_deref(), &text);
        let found = llm
            .structured(payer, task, &input, schema.as_ref(), deadline)
            .await
            .map_err(|e| e.to_string())?;
        notes.extend(found.warnings.into_iter().map(|w| format!("{url}: {w}")));
        Ok((found.value, found.usage.total(), notes))
    }
}

/// Records how job `id` of `team` ended, unless it was cancelled meanwhile: its result
/// (charging its credits) or why it failed.
fn finish(
    store: &crate::store::Store,
    teams: &crate::teams::Teams,
    id: JobId,
    team: &str,
    outcome: Result<Outcome, String>,
) {
    let Ok(Some(current)) = store.llm_jobs.get(id, None) else { return };
    if current.status != "processing" {
        return; // cancelled meanwhile
    }
    let finished = match outcome {
        Ok(done) => {
            let credits = done.tokens.div_ceil(TOKENS_PER_CREDIT).max(1);
            if let Ok(team) = TeamId::parse(team)
                && let Err(e) = teams.charge(&team, credits)
            {
                tracing::warn!(error = %e, "credits of an extract job not recorded");
            }
            LlmJobRecord {
                status: "completed".to_owned(),
                result_json: serde_json::to_vec(&done.value).unwrap_or_default(),
                sources: done.sources,
                warnings: done.warnings,
                credits,
                tokens: done.tokens,
                ..current
            }
        }
        Err(error) => LlmJobRecord { status: "failed".to_owned(), error: Some(error), ..current },
    };
    // The event first: a crash before the record is written runs the job again (its end
    // is reported twice, never not at all).
    let webhook = request_of(&finished).and_then(|r| r.webhook);
    match &finished.error {
        Some(error) => notify(store, id, &finished, webhook.as_ref(), EventKind::Failed, Err(error)),
        None => {
            let result = serde_json::value::RawValue::from_string(result_of(&finished).to_string()).ok();
            let data: Vec<&serde_json::value::RawValue> = result.iter().map(|r| r.as_ref()).collect();
            notify(store, id, &finished, webhook.as_ref(), EventKind::Completed, Ok(&data));
        }
    }
    if let Err(e) = store.llm_jobs.put(id, &finished) {
        tracing::warn!(error = %e, job = %id, "an extract job's result was not stored");
    }
}

/// Queues job `id`'s `kind` event for its webhook, if it has one that wants it: with `data`,
/// or failed with an error.
fn notify(
    store: &crate::store::Store,
    id: JobId,
    record: &LlmJobRecord,
    webhook: Option<&WebhookSpec>,
    kind: EventKind,
    outcome: Result<&[&serde_json::value::RawValue], &str>,
) {
    let Some(spec) = webhook else { return };
    let job = Job { outbox: &store.outbox, id, team: &record.team, spec, kind: &record.kind };
    let (success, data, error) = match outcome {
        Ok(data) => (true, data.to_vec(), None),
        Err(error) => (false, Vec::new(), Some(error)),
    };
    let queued = events::event(&job, kind, success, data, error).and_then(|event| match event {
        Some(event) => store.outbox.push(&event),
        None => Ok(()),
    });
    if let Err(e) = queued {
        tracing::warn!(error = %e, job = %id, "an extract job's event was not queued");
    }
}

/// The instructions for every page of a job.
fn task_of(request: &LlmJobRequest) -> String {
    let mut task = crate::llm::prompts::EXTRACT.to_owned();
    if let Some(system) = &request.system_prompt {
        task = format!("{system}\n{task}");
    }
    if let Some(prompt) = &request.prompt {
        task.push_str(&format!("\nWhat to extract: {prompt}"));
    }
    if request.schema.is_none() {
        task.push_str("\nAnswer with a JSON object.");
    }
    task
}

/// The pages' values as one: objects merged key by key (arrays joined without repeats,
/// the first non-null scalar kept), arrays joined, otherwise the first value.
pub fn merge(values: Vec<Value>) -> Value {
    let mut iter = values.into_iter();
    let Some(mut merged) = iter.next() else { return Value::Null };
    for value in iter {
        merged = merge_two(merged, value);
    }
    merged
}

fn merge_two(a: Value, b: Value) -> Value {
    match (a, b) {
        (Value::Object(mut a), Value::Object(b)) => {
            for (key, value) in b {
                let joined = match a.remove(&key) {
                    Some(existing) => merge_two(existing, value),
                    None => value,
                };
                a.insert(key, joined);
            }
            Value::Object(a)
        }
        (Value::Array(mut a), Value::Array(b)) => {
            for item in b {
                if !a.contains(&item) {
                    a.push(item);
                }
            }
            Value::Array(a)
        }
        (Value::Null, b) => b,
        (a, _) => a,
    }
}

/// For each top-level field of the values (`data` for values that are not objects), the
/// URLs of the pages whose value gave it something other than null.
fn sources_of(values: &[Value], urls: &[String]) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    let mut add = |field: &str, url: &String| match out.iter_mut().find(|(f, _)| f == field) {
        Some((_, list)) => list.push(url.clone()),
        None => out.push((field.to_owned(), vec![url.clone()])),
    };
    for (value, url) in values.iter().zip(urls) {
        match value {
            Value::Object(map) => {
                map.iter().filter(|(_, v)| !v.is_null()).for_each(|(field, _)| add(field, url));
            }
            Value::Null => {}
            _ => add("data", url),
        }
    }
    out
}

/// The status answer's data: the merged result of a completed job.
pub fn result_of(record: &LlmJobRecord) -> Value {
    serde_json::from_slice(&record.result_json).unwrap_or(Value::Null)
}

/// The request a job was started with.
pub fn request_of(record: &LlmJobRecord) -> Option<LlmJobRequest> {
    serde_json::from_slice(&record.request_json).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_of_pages_merge() {
        let merged = merge(vec![
            json!({"name": "Acme", "products": ["a", "b"], "ceo": null, "address": {"city": "Paris"}}),
            json!({"name": "Other", "products": ["b", "c"], "ceo": "Ann", "address": {"zip": "75001"}}),
        ]);
        assert_eq!(
            merged,
            json!({"name": "Acme", "products": ["a", "b", "c"], "ceo": "Ann", "address": {"city": "Paris", "zip": "75001"}})
        );
        assert_eq!(merge(vec![json!([1]), json!([1, 2])]), json!([1, 2]));
        assert_eq!(merge(Vec::new()), Value::Null);
        let urls = ["a".to_owned(), "b".to_owned()];
        let sources = sources_of(&[json!({"x": 1, "y": null}), json!({"x": 2, "y": 3})], &urls);
        assert_eq!(sources, [("x".to_owned(), urls.to_vec()), ("y".to_owned(), vec!["b".to_owned()])]);
    }
}
