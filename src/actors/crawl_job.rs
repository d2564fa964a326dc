//! `CrawlJob`: one actor per running crawl or batch. It keeps at most `maxConcurrency`
//! requests in flight (one, spaced by `delay`, when a delay is set), and as many pages
//! again being converted once their response is in, hands each URL to its
//! site's [`Site`](super::site::Site) actor, and settles every answer in one store
//! transaction: result or error stored, queue entry removed, and for crawls the links that
//! pass the scope rules enqueued. The frontier, seen-set and results live in the store, so
//! the actor holds only what is in flight, and a restarted actor simply resumes the queue.
//! A job with a [tap](super::tap) hands each committed page to its reader in this process
//! (and stores the document only when the tap keeps documents).
//! A page that fails is recorded as data; it never fails the actor.
//!
//! A crawl that tracks changes (and follows links as well as sitemaps) needs to know which
//! pages links no longer reach, to report them `hidden` (see [`settle`]): it holds the
//! sitemap's URLs back until following links from the start URL has run out of pages, then
//! queues those the links did not reach, marked [`settle::SITEMAP_ONLY`]. Such a crawl
//! fetches linked pages first, also under a `limit`.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use ractor::{Actor, ActorProcessingErr, ActorRef};
use tokio::task::JoinHandle;
use url::Url;

use super::Services;
use super::fetch::{FetchOutcome, FetchTask};
use super::settle::{self, LinkMemo, Pending};
use super::sites::Sites;
use super::tap::Tap;
use crate::crawl::keys::KeyRules;
use crate::crawl::scope::{Scope, ScopeOptions};
use crate::model::{CrawlOptions, JobId, JobStatus, SitemapMode, TeamId};
use crate::store::jobs::{JobKind, JobRecord, JobStore, NewEntry, QueueEntry};

/// Sitemap URLs enqueued per transaction.
const DISCOVERY_CHUNK: usize = 1024;

/// Messages of a [`CrawlJob`].
#[derive(Debug)]
pub enum CrawlJobMsg {
    /// Start what the limits allow.
    Pump,
    /// A page's response is in; it no longer counts against `maxConcurrency`.
    Retrieved(u64),
    /// A page is done.
    Settled {
        /// Its queue sequence number.
        seq: u64,
        /// Its queue entry.
        entry: QueueEntry,
        /// What happened.
        outcome: FetchOutcome,
    },
    /// URLs found in sitemaps.
    Discovered(Vec<String>),
    /// Sitemap discovery finished.
    DiscoveryDone,
    /// Commit the finished pages waiting in the buffer.
    Commit,
    /// Stop now: the caller cancelled.
    Cancel,
    /// Fail on purpose (tests of supervision).
    #[cfg(test)]
    Panic,
}

/// Arguments of a [`CrawlJob`].
#[derive(Debug, Clone)]
pub struct CrawlJobArgs {
    /// The job.
    pub id: JobId,
    /// Where its state lives.
    pub jobs: JobStore,
    /// Shared services.
    pub services: Services,
    /// The site actors.
    pub sites: Sites,
}

/// Mutable state of a [`CrawlJob`].
#[derive(Debug)]
pub struct CrawlJobState {
    id: JobId,
    jobs: JobStore,
    services: Services,
    sites: Sites,
    record: JobRecord,
    team: TeamId,
    scope: Option<Scope>,
    rules: KeyRules,
    in_flight: HashMap<u64, JoinHandle<()>>,
    /// Pages of `in_flight` whose response is in and which are being converted.
    converting: HashSet<u64>,
    cursor: u64,
    max_in_flight: usize,
    delay: Option<Duration>,
    next_dispatch: Instant,
    pump_scheduled: bool,
    discovering: bool,
    /// The sitemap discovery task, while it runs.
    discovery: Option<JoinHandle<()>>,
    /// Sitemap URLs wait until links are followed to the end (change-tracking crawls).
    links_first: bool,
    /// Following links has run out of pages (in this run of the actor).
    links_done: bool,
    /// Sitemap URLs held back until then.
    sitemap_backlog: Vec<String>,
    finished: bool,
    buffer: Vec<Pending>,
    memo: LinkMemo,
    commit_scheduled: bool,
    /// Where finished documents go in this process, when someone here reads them.
    tap: Option<Tap>,
}

/// The per-job actor.
#[derive(Debug)]
pub struct CrawlJob;

impl Actor for CrawlJob {
    type Msg = CrawlJobMsg;
    type State = CrawlJobState;
    type Arguments = CrawlJobArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<CrawlJobMsg>,
        args: CrawlJobArgs,
    ) -> Result<CrawlJobState, ActorProcessingErr> {
        let record = args.jobs.record(args.id)?.ok_or("the job's record is missing")?;
        let team = TeamId::parse(&record.team)?;
        let options = &record.options;
        let delay = options.delay_ms.filter(|d| *d > 0).map(Duration::from_millis);
        let max_in_flight = match delay {
            Some(_) => 1,
            None => {
                options.max_concurrency.unwrap_or_else(|| default_concurrency(&args.services, &team)).max(1)
                    as usize
            }
        };
        let start = Url::parse(&record.url)?;
        let scope = match record.kind {
            JobKind::Crawl => Some(Scope::new(&start, scope_options(options))?),
            JobKind::Batch => None,
        };
        let discovering = record.kind == JobKind::Crawl
            && options.sitemap != SitemapMode::Skip
            && !record.status.is_terminal();
        let tap = args.services.taps.get(args.id);
        let links_first = record.kind == JobKind::Crawl
            && options.sitemap == SitemapMode::Include
            && options.scrape.formats.change_tracking.is_some()
            && !super::discovery::is_sitemap_url(&start);
        let mut state = CrawlJobState {
            id: args.id,
            jobs: args.jobs,
            services: args.services,
            sites: args.sites,
            rules: KeyRules {
                ignore_query: options.ignore_query_parameters,
                similar: options.deduplicate_similar_urls,
            },
            record,
            team,
            scope,
            in_flight: HashMap::new(),
            converting: HashSet::new(),
            cursor: 0,
            max_in_flight,
            delay,
            next_dispatch: Instant::now(),
            pump_scheduled: false,
            discovering,
            discovery: None,
            links_first,
            links_done: false,
            sitemap_backlog: Vec::new(),
            finished: false,
            buffer: Vec::new(),
            memo: LinkMemo::default(),
            commit_scheduled: false,
            tap,
        };
        if state.discovering {
            let limit = state.record.options.limit;
            let sites = state.sites.clone();
            let (job, id) = (myself.clone(), state.id);
            // The job hears `Discovered` and then `DiscoveryDone`, or nothing when it was
            // cancelled meanwhile.
            state.discovery = Some(tokio::spawn(async move {
                let Some(urls) = super::discovery::discover(&sites, id, &start, limit).await else { return };
                if !urls.is_empty() {
                    let _ = job.cast(CrawlJobMsg::Discovered(urls));
                }
                let _ = job.cast(CrawlJobMsg::DiscoveryDone);
            }));
        }
        Ok(state)
    }

    async fn post_start(
        &self,
        myself: ActorRef<CrawlJobMsg>,
        state: &mut CrawlJobState,
    ) -> Result<(), ActorProcessingErr> {
        if state.record.status.is_terminal() {
            myself.stop(Some("already finished".into()));
            return Ok(());
        }
        pump(&myself, state).await
    }

    async fn handle(
        &self,
        myself: ActorRef<CrawlJobMsg>,
        msg: CrawlJobMsg,
        state: &mut CrawlJobState,
    ) -> Result<(), ActorProcessingErr> {
        if state.finished {
            return Ok(());
        }
        match msg {
            CrawlJobMsg::Pump => state.pump_scheduled = false,
            CrawlJobMsg::Retrieved(seq) => {
                if state.in_flight.contains_key(&seq) {
                    state.converting.insert(seq);
                }
                start_delay(state);
            }
            CrawlJobMsg::Settled { seq, entry, outcome } => {
                state.in_flight.remove(&seq);
                if !state.converting.remove(&seq) {
                    // No response (robots.txt, a failed lookup): the delay starts now.
                    start_delay(state);
                }
                let mut memo = std::mem::take(&mut state.memo);
                let pending = settle::prepare(&rules(state), &mut memo, seq, &entry, outcome);
                state.memo = memo;
                if let Some(pending) = pending? {
                    state.buffer.push(pending);
                }
                if state.buffer.len() >= settle::GROUP_MAX || state.in_flight.is_empty() {
                    commit(state).await?;
                } else if !state.commit_scheduled && !state.buffer.is_empty() {
                    state.commit_scheduled = true;
                    myself.send_after(settle::GROUP_WINDOW, || CrawlJobMsg::Commit);
                }
            }
            CrawlJobMsg::Commit => {
                state.commit_scheduled = false;
                commit(state).await?;
            }
            CrawlJobMsg::Discovered(urls) => {
                if state.links_first && !state.links_done {
                    state.sitemap_backlog.extend(urls);
                } else {
                    enqueue_sitemap_urls(state, &urls)?;
                }
            }
            CrawlJobMsg::DiscoveryDone => {
                state.discovering = false;
                state.discovery = None;
            }
            CrawlJobMsg::Cancel => {
                finish(&myself, state, JobStatus::Cancelled).await?;
                return Ok(());
            }
            #[cfg(test)]
            CrawlJobMsg::Panic => panic!("crawl job asked to fail"),
        }
        pump(&myself, state).await
    }

    async fn post_stop(
        &self,
        _: ActorRef<CrawlJobMsg>,
        state: &mut CrawlJobState,
    ) -> Result<(), ActorProcessingErr> {
        for (_, handle) in state.in_flight.drain() {
            handle.abort();
        }
        if let Some(discovery) = state.discovery.take() {
            discovery.abort();
        }
        Ok(())
    }
}

fn scope_options(options: &CrawlOptions) -> ScopeOptions {
    ScopeOptions {
        include_paths: options.include_paths.clone(),
        exclude_paths: options.exclude_paths.clone(),
        regex_on_full_url: options.regex_on_full_url,
        crawl_entire_domain: options.crawl_entire_domain,
        allow_external_links: options.allow_external_links,
        allow_subdomains: options.allow_subdomains,
    }
}

/// With a `delay`, the next page waits that long from the last response.
fn start_delay(state: &mut CrawlJobState) {
    if let Some(delay) = state.delay {
        state.next_dispatch = Instant::now() + delay;
    }
}

/// How often a job paused for want of disk space looks again.
const SPACE_RECHECK: Duration = Duration::from_secs(1);

/// Pages that may be started now: requests in flight stay within `maxConcurrency`, and
/// pages being converted within as many again, so a site that answers faster than pages
/// convert does not pile up responses in memory.
fn room(state: &CrawlJobState) -> usize {
    room_for(state.in_flight.len(), state.converting.len(), state.max_in_flight)
}

fn room_for(in_flight: usize, converting: usize, max: usize) -> usize {
    let requests = in_flight.saturating_sub(converting);
    max.saturating_sub(requests).min((2 * max).saturating_sub(in_flight))
}

/// Starts pages up to the concurrency limit; completes the job when nothing is left.
async fn pump(myself: &ActorRef<CrawlJobMsg>, state: &mut CrawlJobState) -> Result<(), ActorProcessingErr> {
    if state.services.store.space.is_short() {
        // The data disk is short of space: no new page until it is freed (`store::space`).
        if !state.pump_scheduled {
            state.pump_scheduled = true;
            tracing::warn!(job = %state.id, "job paused: the data directory's disk is short of space");
            myself.send_after(SPACE_RECHECK, || CrawlJobMsg::Pump);
        }
        return Ok(());
    }
    while room(state) > 0 {
        let now = Instant::now();
        if state.delay.is_some() && now < state.next_dispatch {
            if !state.pump_scheduled {
                state.pump_scheduled = true;
                myself.send_after(state.next_dispatch - now, || CrawlJobMsg::Pump);
            }
            break;
        }
        // Entries below the cursor are in flight or settled; newer ones get higher numbers.
        let fresh = state.jobs.queued(state.id, state.cursor, room(state))?;
        if fresh.is_empty() {
            break;
        }
        for (seq, entry) in fresh {
            state.cursor = state.cursor.max(seq + 1);
            dispatch(myself, state, seq, entry);
        }
        if state.delay.is_some() {
            break;
        }
    }
    let drained =
        state.in_flight.is_empty() && state.buffer.is_empty() && !state.jobs.has_queued(state.id)?;
    if drained && state.links_first && !state.links_done {
        // Links have reached every page they reach: now the sitemap's other pages.
        state.links_done = true;
        let backlog = std::mem::take(&mut state.sitemap_backlog);
        if !backlog.is_empty() {
            enqueue_sitemap_urls(state, &backlog)?;
            return Box::pin(pump(myself, state)).await;
        }
    }
    if drained && !state.discovering {
        finish(myself, state, JobStatus::Completed).await?;
    }
    Ok(())
}

/// Queues the sitemap's URLs that pass the crawl's scope, marked as reached only through
/// the sitemap when the crawl followed links first.
fn enqueue_sitemap_urls(state: &mut CrawlJobState, urls: &[String]) -> Result<(), ActorProcessingErr> {
    let depth = if state.links_first { settle::SITEMAP_ONLY } else { 0 };
    let rules = rules(state);
    let entries: Vec<NewEntry> = urls.iter().filter_map(|u| settle::admit(&rules, u, depth)).collect();
    // One transaction per chunk: a sled transaction holds its writes in memory, and a
    // sitemap can list 100 000 URLs. A crash between chunks is harmless: discovery runs
    // again on resume and the seen-set drops what is queued.
    for chunk in entries.chunks(DISCOVERY_CHUNK) {
        state.jobs.enqueue(state.id, state.record.options.limit, chunk)?;
    }
    Ok(())
}

fn dispatch(myself: &ActorRef<CrawlJobMsg>, state: &mut CrawlJobState, seq: u64, entry: QueueEntry) {
    let options = &state.record.options;
    let task = FetchTask {
        job: state.id,
        team: state.team.clone(),
        scrape_id: JobId::new(),
        url: entry.url.clone(),
        options: options.scrape.clone(),
        respect_robots: state.record.kind == JobKind::Crawl && !options.ignore_robots_txt,
        robots_agent: options.robots_user_agent.clone(),
        discover: state.record.kind == JobKind::Crawl,
        queued_ms: None,
    };
    let sites = state.sites.clone();
    let teams = std::sync::Arc::clone(&state.services.teams);
    let myself = myself.clone();
    let handle = tokio::spawn(async move {
        // The team's concurrency limit covers every page of every job of the team.
        let outcome = sites
            .fetch(task, Some(&teams), || {
                let _ = myself.cast(CrawlJobMsg::Retrieved(seq));
            })
            .await;
        let _ = myself.cast(CrawlJobMsg::Settled { seq, entry, outcome });
    });
    state.in_flight.insert(seq, handle);
}

/// The crawl's rules for settling pages.
/// Fetches in flight for a job whose request set no `maxConcurrency`.
fn default_concurrency(services: &Services, team: &TeamId) -> u32 {
    match services.settings.crawl.max_concurrency {
        0 => services.teams.plan(team).concurrency,
        n => n,
    }
}

fn rules(state: &CrawlJobState) -> settle::Rules<'_> {
    settle::Rules {
        scope: state.scope.as_ref(),
        keys: state.rules,
        options: &state.record.options,
        kind: state.record.kind,
        tap: state.tap.as_ref(),
    }
}

/// Writes the buffered pages in one transaction, then hands them to the job's tap.
async fn commit(state: &mut CrawlJobState) -> Result<(), ActorProcessingErr> {
    let done = settle::commit(&state.jobs, state.id, &state.record, &mut state.buffer)?;
    if done.events {
        state.services.webhooks.notify_one();
    }
    state.services.teams.charge(&state.team, done.credits)?;
    if let Some(tap) = &state.tap {
        for document in done.tapped {
            tap.send(document).await;
        }
    }
    Ok(())
}

async fn finish(
    myself: &ActorRef<CrawlJobMsg>,
    state: &mut CrawlJobState,
    status: JobStatus,
) -> Result<(), ActorProcessingErr> {
    // Pages fetched before the end are results too.
    commit(state).await?;
    state.finished = true;
    for (_, handle) in state.in_flight.drain() {
        handle.abort();
    }
    if let Some(discovery) = state.discovery.take() {
        discovery.abort();
    }
    if status == JobStatus::Cancelled {
        state.sites.cancel(state.id);
    }
    let record = super::events::end(&state.jobs, state.id, status, None)?;
    state.services.webhooks.notify_one();
    if let Some(record) = record {
        tracing::info!(job = %state.id, status = record.status.as_str(), "job finished");
    }
    myself.stop(None);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::room_for;

    #[test]
    fn requests_and_conversions_have_separate_bounds() {
        assert_eq!(room_for(0, 0, 4), 4, "an idle job starts maxConcurrency pages");
        assert_eq!(room_for(4, 0, 4), 0, "four requests in flight: no fifth");
        assert_eq!(room_for(4, 3, 4), 3, "responses being converted free their request slots");
        assert_eq!(room_for(6, 4, 4), 2);
        assert_eq!(room_for(8, 4, 4), 0, "at most maxConcurrency pages wait for conversion");
        assert_eq!(room_for(8, 8, 4), 0);
        assert_eq!(room_for(7, 7, 4), 1);
    }
}
