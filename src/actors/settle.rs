//! From fetch outcomes to stored results. A finished page becomes a [`Pending`] settlement
//! (document serialized, discovered links filtered through the crawl's scope); the job
//! commits pending settlements in groups, because every sled transaction costs synchronous
//! log writes — one commit per page would make the disk the crawl's speed limit. A crash
//! before a commit loses nothing: uncommitted pages are still queued and are fetched again.
//!
//! Change tracking's `visibility` is decided here. A crawl that tracks changes follows links
//! first and reads the pages only its sitemaps list after (see `crawl_job`); those pages, and
//! the pages reached by links from them, are queued with [`SITEMAP_ONLY`] in their depth and
//! come out `hidden`: following links from the start URL (within the crawl's scope, depth and
//! limit) did not reach them, so they are no longer discoverable by links. Every other page
//! is `visible`.

use std::time::Duration;

use url::Url;

use super::events::{self, PageReport};
use super::fetch::FetchOutcome;
use super::stored::PageLinks;
use super::tap::Tap;
use crate::crawl::keys::{self, KeyRules};
use crate::crawl::scope::{Rejection, Scope};
use crate::model::document::Visibility;
use crate::model::{Code, CrawlOptions, Document, JobId, SitemapMode, time};
use crate::store::jobs::{
    ErrorEntry, JobKind, JobRecord, NewEntry, Outcome, QueueEntry, Settled, Settlement,
};
use crate::store::outbox::NewEvent;
use crate::store::{JobStore, StoreError};

/// Most pages committed together.
pub(super) const GROUP_MAX: usize = 64;
/// Longest a finished page waits for its group.
pub(super) const GROUP_WINDOW: Duration = Duration::from_millis(20);

/// The bit of a queue entry's depth that marks a page the crawl reached only through its
/// sitemaps, not by links from the start URL; the other bits count link hops as usual (from
/// the sitemap, whose pages are 0). Pages linked from such a page inherit it.
pub(super) const SITEMAP_ONLY: u32 = 1 << 31;

/// Link hops of a queue entry of depth `depth` (for `maxDiscoveryDepth`).
pub(super) fn hops(depth: u32) -> u32 {
    depth & !SITEMAP_ONLY
}

/// Whether a queue entry of depth `depth` was reached only through the sitemaps.
pub(super) fn sitemap_only(depth: u32) -> bool {
    depth & SITEMAP_ONLY != 0
}

/// What decides how a page is settled.
#[derive(Debug, Clone, Copy)]
pub(super) struct Rules<'a> {
    /// The crawl's scope (none for batches).
    pub(super) scope: Option<&'a Scope>,
    /// URL identity rules.
    pub(super) keys: KeyRules,
    /// The job's options.
    pub(super) options: &'a CrawlOptions,
    /// Crawl or batch.
    pub(super) kind: JobKind,
    /// Where finished documents go besides (or instead of) the store.
    pub(super) tap: Option<&'a Tap>,
}

/// A settled page waiting for its group commit.
#[derive(Debug)]
pub(super) struct Pending {
    seq: u64,
    outcome: Owned,
    links: Vec<NewEntry>,
    /// Seen-set key of the URL a crawled page redirected to (see `Settlement::lands_on`).
    lands_on: Option<String>,
}

#[derive(Debug)]
enum Owned {
    /// A finished page: its JSON when the store keeps it, and the document itself when it
    /// goes to the job's tap.
    Page {
        stored: Option<sled::IVec>,
        tapped: Option<Box<Document>>,
        credits: u64,
    },
    Failed(ErrorEntry),
    Blocked(String),
}

/// Links a job has already considered. Navigation and footer links repeat on every page;
/// remembering them (up to a bound, so memory stays flat) spares parsing, scope checks and
/// seen-set lookups. Forgetting is safe: the seen-set in the store is the real dedup.
#[derive(Debug, Default)]
pub(super) struct LinkMemo {
    seen: std::collections::HashSet<String, foldhash::fast::RandomState>,
}

impl LinkMemo {
    const CAPACITY: usize = 65_536;

    /// Whether `link` is new to the memo (and remembers it).
    fn first_time(&mut self, link: &str) -> bool {
        if self.seen.contains(link) {
            return false;
        }
        if self.seen.len() >= Self::CAPACITY {
            self.seen.clear();
        }
        self.seen.insert(link.to_owned());
        true
    }
}

/// The queue entry for a discovered URL, when the crawl's scope admits it.
pub(super) fn admit(rules: &Rules<'_>, raw: &str, depth: u32) -> Option<NewEntry> {
    let url = Url::parse(raw).ok()?;
    let url = keys::normalize(&url, rules.keys);
    rules.scope?.check(&url).ok()?;
    Some(NewEntry { key: keys::key(&url, rules.keys), entry: QueueEntry { url: url.to_string(), depth } })
}

/// The settlement of queue entry `seq` (`None` for a cancelled fetch: it stays queued),
/// counted in the `pages_settled_total` metric by job kind and outcome.
pub(super) fn prepare(
    rules: &Rules<'_>,
    memo: &mut LinkMemo,
    seq: u64,
    entry: &QueueEntry,
    outcome: FetchOutcome,
) -> Result<Option<Pending>, serde_json::Error> {
    let pending = settlement(rules, memo, seq, entry, outcome)?;
    if let Some(pending) = &pending {
        let outcome = match &pending.outcome {
            Owned::Page { .. } => "page",
            Owned::Failed(_) => "failed",
            Owned::Blocked(_) => "robots_blocked",
        };
        metrics::counter!("pages_settled_total", "kind" => rules.kind.label(), "outcome" => outcome)
            .increment(1);
    }
    Ok(pending)
}

fn settlement(
    rules: &Rules<'_>,
    memo: &mut LinkMemo,
    seq: u64,
    entry: &QueueEntry,
    outcome: FetchOutcome,
) -> Result<Option<Pending>, serde_json::Error> {
    let failure = |code: Code, error: String| ErrorEntry {
        id: JobId::new().to_string(),
        at_ms: time::now_ms(),
        url: entry.url.clone(),
        code: code.as_str().to_owned(),
        error,
    };
    let pending = |outcome, links| Some(Pending { seq, outcome, links, lands_on: None });
    // A page from another node is stored as it came, unless it must be changed (a hidden
    // sitemap-only page's change tracking) or handed to a reader in this process.
    let outcome = match outcome {
        FetchOutcome::Stored(page) if rules.tap.is_some() || (page.tracked && sitemap_only(entry.depth)) => {
            FetchOutcome::Stored(page).parsed()
        }
        other => other,
    };
    Ok(match outcome {
        FetchOutcome::Cancelled => None,
        // Only when a page kept moving between nodes past every resend (see `fetch_via_site`).
        FetchOutcome::Moved => pending(
            Owned::Failed(failure(Code::Unknown, "the site kept moving between nodes".into())),
            Vec::new(),
        ),
        FetchOutcome::Blocked => pending(Owned::Blocked(entry.url.clone()), Vec::new()),
        FetchOutcome::Failed { code, error } => pending(Owned::Failed(failure(code, error)), Vec::new()),
        // This node's own site actors could not take the page (they stop with the node, or
        // start again after a failure).
        FetchOutcome::NotTaken(error) => pending(Owned::Failed(failure(Code::Unknown, error)), Vec::new()),
        FetchOutcome::Page { mut document, links } => {
            if sitemap_only(entry.depth)
                && let Some(tracked) = &mut document.change_tracking
            {
                tracked.visibility = Visibility::Hidden;
            }
            let url = document.metadata.url.clone();
            let credits = document.metadata.credits_used;
            let stored = match rules.tap.is_none_or(Tap::keeps_documents) {
                true => Some(sled::IVec::from(super::stored::stored_form(&document)?)),
                false => None,
            };
            let tapped = rules.tap.map(|_| document);
            let page = Landed { url, credits, stored, tapped, links: PageLinks::Each(links) };
            landed(rules, memo, seq, entry, page, failure)
        }
        FetchOutcome::Stored(page) => {
            let super::stored::StoredPage { document, url, credits, links, .. } = *page;
            let page = Landed { url, credits, stored: Some(document.into_stored()), tapped: None, links };
            landed(rules, memo, seq, entry, page, failure)
        }
    })
}

/// A page that landed, as settling needs it.
struct Landed {
    /// Where it landed (`metadata.url`).
    url: String,
    credits: u32,
    /// Its stored form, when the store keeps it.
    stored: Option<sled::IVec>,
    /// The document, for a reader in this process.
    tapped: Option<Box<Document>>,
    links: PageLinks,
}

/// The settlement of a landed page: its document and the new entries from its links, or
/// a denial when it landed outside the crawl's scope.
fn landed(
    rules: &Rules<'_>,
    memo: &mut LinkMemo,
    seq: u64,
    entry: &QueueEntry,
    page: Landed,
    failure: impl Fn(Code, String) -> ErrorEntry,
) -> Option<Pending> {
    let options = rules.options;
    let follow = rules.kind == JobKind::Crawl
        && options.sitemap != SitemapMode::Only
        && options.max_discovery_depth.is_none_or(|max| hops(entry.depth) < max);
    let new: Vec<NewEntry> = if follow {
        page.links
            .iter()
            .filter(|l| memo.first_time(l))
            .filter_map(|l| admit(rules, l, entry.depth + 1))
            .collect()
    } else {
        Vec::new()
    };
    if let Some(reason) = rules.scope.and_then(|scope| rejection(scope, seq, &entry.url, &page.url)) {
        return Some(Pending {
            seq,
            outcome: Owned::Failed(failure(Code::CrawlDenial, reason)),
            links: new,
            lands_on: None,
        });
    }
    let lands_on = match rules.kind {
        JobKind::Crawl => landing_key(rules.keys, &entry.url, &page.url),
        JobKind::Batch => None,
    };
    let outcome = Owned::Page { stored: page.stored, tapped: page.tapped, credits: u64::from(page.credits) };
    Some(Pending { seq, outcome, links: new, lands_on })
}

/// The seen-set key of `landed` when a page requested as `requested` ended up there after
/// redirects (a crawl keeps one page per landing URL).
fn landing_key(rules: KeyRules, requested: &str, landed: &str) -> Option<String> {
    let landed = keys::key(&Url::parse(landed).ok()?, rules);
    let requested = keys::key(&Url::parse(requested).ok()?, rules);
    (landed != requested).then_some(landed)
}

/// What a commit did.
#[derive(Debug, Default)]
pub(super) struct Committed {
    /// Webhook events were queued.
    pub(super) events: bool,
    /// Credits the pages settled now cost.
    pub(super) credits: u64,
    /// Documents for the job's tap, of the pages settled now, in settlement order.
    pub(super) tapped: Vec<Document>,
}

/// Commits and empties `buffer`, with a page event per finished page when the job's
/// webhook wants them.
pub(super) fn commit(
    jobs: &JobStore,
    id: JobId,
    record: &JobRecord,
    buffer: &mut Vec<Pending>,
) -> Result<Committed, StoreError> {
    if buffer.is_empty() {
        return Ok(Committed::default());
    }
    let page_events = events::page_events_wanted(&record.options);
    let mut events: Vec<Option<NewEvent>> = Vec::with_capacity(buffer.len());
    for p in buffer.iter() {
        let unstored;
        let report = match &p.outcome {
            Owned::Page { stored: Some(json), .. } => PageReport::Done(json),
            // A page that only went to the tap is serialized for its event alone.
            Owned::Page { tapped: Some(document), .. } if page_events => {
                unstored = super::stored::stored_form(document)?;
                PageReport::Done(&unstored)
            }
            Owned::Page { .. } | Owned::Blocked(_) => {
                events.push(None);
                continue;
            }
            Owned::Failed(entry) => PageReport::Failed { url: &entry.url, error: &entry.error },
        };
        events.push(events::page(jobs, id, record, report)?);
    }
    let batch: Vec<(u64, Settlement<'_>)> = buffer
        .iter()
        .zip(&events)
        .map(|(p, event)| {
            let outcome = match &p.outcome {
                Owned::Page { stored, credits, .. } => {
                    Outcome::Page { document: stored.as_ref(), credits: *credits }
                }
                Owned::Failed(entry) => Outcome::Failed(entry),
                Owned::Blocked(url) => Outcome::Blocked(url),
            };
            let settlement = Settlement {
                outcome,
                links: &p.links,
                lands_on: p.lands_on.as_deref(),
                event: event.as_ref(),
            };
            (p.seq, settlement)
        })
        .collect();
    let results = jobs.settle_batch(id, record.options.limit, &batch)?;
    drop(batch);
    // Only pages kept now are billed and handed over (a duplicate completion after a
    // restart, or a page that redirected onto one the crawl has, is neither).
    let mut done = Committed::default();
    for ((p, settled), event) in buffer.drain(..).zip(&results).zip(&events) {
        if !matches!(settled, Settled::Done(_)) {
            continue;
        }
        done.events |= event.is_some();
        if let Owned::Page { credits, tapped, .. } = p.outcome {
            done.credits += credits;
            done.tapped.extend(tapped.map(|d| *d));
        }
    }
    Ok(done)
}

/// Why a fetched page is not kept: the start page failing the include/exclude patterns, or a
/// page that redirected out of the crawl's scope.
fn rejection(scope: &Scope, seq: u64, url: &str, final_url: &str) -> Option<String> {
    let requested = Url::parse(url).ok()?;
    if seq == 0 {
        return scope
            .check_patterns(&requested)
            .err()
            .map(|r| format!("the start URL does not match the crawl's path rules ({r:?})"));
    }
    let landed = Url::parse(final_url).ok()?;
    if landed.as_str() == requested.as_str() {
        return None;
    }
    match scope.check(&landed) {
        Ok(()) | Err(Rejection::Scheme) => None,
        Err(r) => Some(format!("redirected to {landed}, outside the crawl's scope ({r:?})")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::actors::tap::Taps;
    use crate::model::EventKind;
    use crate::store::Store;

    /// A page that goes only to the tap is not stored, yet its page event carries it.
    #[test]
    fn a_tapped_page_is_not_stored_but_its_event_has_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        let record = events::tests::record(vec![EventKind::Page]);
        let id = JobId::new();
        let entry = QueueEntry { url: "http://a.test/".into(), depth: 0 };
        let first = [NewEntry { key: entry.url.clone(), entry: entry.clone() }];
        store.jobs.create(id, &record, first.clone(), None).expect("create");
        let taps = Taps::default();
        let _reader = taps.open(id, false);
        let tap = taps.get(id).expect("open tap");
        let rules = Rules {
            scope: None,
            keys: KeyRules { ignore_query: false, similar: false },
            options: &record.options,
            kind: JobKind::Batch,
            tap: Some(&tap),
        };
        let mut document = Document { markdown: Some("tapped words".into()), ..Document::default() };
        document.metadata.url = entry.url.clone();
        let outcome = FetchOutcome::Page { document: Box::new(document), links: Vec::new() };
        let pending = prepare(&rules, &mut LinkMemo::default(), 0, &entry, outcome).expect("prepare");
        let mut buffer: Vec<Pending> = pending.into_iter().collect();

        let done = commit(&store.jobs, id, &record, &mut buffer).expect("commit");
        assert_eq!(done.tapped.len(), 1, "handed to the tap");
        assert!(done.events, "a page event was queued");
        assert_eq!(store.jobs.counters(id).expect("counters").completed, 1);
        assert!(store.jobs.pages(id, 0, 10, usize::MAX).expect("pages").is_empty(), "not stored");
        let (key, _) = store.jobs.outbox().head_of(id).expect("outbox").expect("an event");
        let body = store.jobs.outbox().body(key).expect("body").expect("stored body");
        let body: serde_json::Value = serde_json::from_slice(&body).expect("json");
        assert_eq!(body["data"][0]["markdown"], "tapped words");
    }

    /// A page reached only through the sitemap is `hidden` and hands the mark on to the
    /// pages it links; its depth counts hops from the sitemap for `maxDiscoveryDepth`.
    /// Pages from this node (a document) and from another (its stored form) settle alike.
    #[test]
    fn sitemap_only_pages_are_hidden_and_mark_their_links() {
        use crate::crawl::scope::{Scope, ScopeOptions};
        use crate::model::document::{ChangeStatus, ChangeTracking};

        let start = Url::parse("http://a.test/").expect("url");
        let scope = Scope::new(&start, ScopeOptions::default()).expect("scope");
        let options = CrawlOptions { max_discovery_depth: Some(2), ..Default::default() };
        let rules = Rules {
            scope: Some(&scope),
            keys: KeyRules { ignore_query: false, similar: false },
            options: &options,
            kind: JobKind::Crawl,
            tap: None,
        };
        for remote in [false, true] {
            let settled = |depth: u32| {
                let mut document = Document { markdown: Some("words".into()), ..Document::default() };
                document.metadata.url = "http://a.test/page".into();
                document.change_tracking = Some(ChangeTracking {
                    previous_scrape_at: None,
                    change_status: ChangeStatus::New,
                    visibility: Visibility::Visible,
                    diff: None,
                    json: None,
                });
                let links = vec!["http://a.test/next".to_owned()];
                let outcome = match remote {
                    true => FetchOutcome::Stored(Box::new(
                        crate::actors::stored::StoredPage::of(&document, links).expect("stored form"),
                    )),
                    false => FetchOutcome::Page { document: Box::new(document), links },
                };
                let entry = QueueEntry { url: "http://a.test/page".into(), depth };
                prepare(&rules, &mut LinkMemo::default(), 5, &entry, outcome)
                    .expect("prepare")
                    .expect("settled")
            };
            let stored = |p: &Pending| match &p.outcome {
                Owned::Page { stored: Some(json), .. } => String::from_utf8(json.to_vec()).expect("utf-8"),
                other => panic!("not a stored page: {other:?}"),
            };

            let linked = settled(1);
            assert!(stored(&linked).contains(r#""visibility":"visible""#), "{}", stored(&linked));
            assert_eq!(linked.links[0].entry.depth, 2);

            let only = settled(SITEMAP_ONLY | 1);
            assert!(stored(&only).contains(r#""visibility":"hidden""#), "{}", stored(&only));
            assert_eq!(only.links[0].entry.depth, SITEMAP_ONLY | 2, "its links are marked too");
            assert!(settled(SITEMAP_ONLY | 2).links.is_empty(), "maxDiscoveryDepth counts hops only");
            assert_eq!((hops(SITEMAP_ONLY | 7), sitemap_only(7)), (7, false));
        }
    }
}
