//! The actor tree against a real local HTTP server and a real store: a job actor that
//! panics is restarted by its supervisor and the job still completes with every page once
//! (in the store, or through a tap); the janitor deletes what expired and nothing else; site
//! actors refuse a cancelled job's requests, one that is stopping is replaced at once, and
//! one let go to another node tells the crawls waiting for its sitemaps that it moved.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use ractor::rpc::CallResult;

use super::fetch::{DocumentOutcome, FetchOutcome, FetchTask};
use super::jobs::JobsMsg;
use super::site::SiteMsg;
use super::sites::{SitesMsg, origin_of};
use super::*;
use crate::model::{CrawlOptions, JobStatus, SitemapMode, time};
use crate::store::jobs::{JobKind, JobRecord, NewEntry, QueueEntry};

/// A tiny site: `/p/N` links to `/p/N+1`, each answer after `delay`.
async fn chain_site(delay: Duration) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else { return };
            tokio::spawn(async move {
                let mut buf = vec![0u8; 4096];
                let n = socket.read(&mut buf).await.unwrap_or(0);
                let request = String::from_utf8_lossy(&buf[..n]);
                let path = request.split_whitespace().nth(1).unwrap_or("/").to_owned();
                tokio::time::sleep(delay).await;
                let body = match path.strip_prefix("/p/").and_then(|n| n.parse::<u32>().ok()) {
                    Some(n) => format!(
                        "<html><body><main><p>Page number {n} of the chain, with enough words to be content.</p><a href=\"/p/{}\">next</a></main></body></html>",
                        n + 1
                    ),
                    None => "<p>not found</p>".to_owned(),
                };
                let status = if path.starts_with("/p/") { "200 OK" } else { "404 Not Found" };
                let response = format!(
                    "HTTP/1.1 {status}\r\ncontent-type: text/html\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = socket.write_all(response.as_bytes()).await;
            });
        }
    });
    base
}

async fn runtime(dir: &std::path::Path) -> Runtime {
    let mut settings = Settings::defaults_with_data_dir(dir);
    settings.security.allow_private_targets = true;
    let settings = Arc::new(settings);
    let store = Store::open(dir).expect("store");
    let scraper = Scraper::new(store.clone(), Arc::clone(&settings)).expect("scraper");
    Runtime::start(services(scraper, store, settings)).await.expect("runtime")
}

fn crawl_record(url: &str, limit: u64) -> JobRecord {
    JobRecord {
        kind: JobKind::Crawl,
        team: "t".into(),
        url: url.to_owned(),
        options: CrawlOptions {
            limit,
            sitemap: SitemapMode::Skip,
            crawl_entire_domain: true,
            max_concurrency: Some(1),
            ..Default::default()
        },
        status: JobStatus::Scraping,
        created_ms: time::now_ms(),
        expires_ms: time::now_ms() + 3_600_000,
        finished_ms: None,
        error: None,
    }
}

/// Submits a crawl of the chain site from `/p/0`, at most `limit` pages.
async fn submit_chain(rt: &Runtime, id: JobId, base: &str, limit: u64) {
    let start = format!("{base}/p/0");
    let first = [NewEntry { key: start.clone(), entry: QueueEntry { url: start.clone(), depth: 0 } }];
    rt.submit(id, &crawl_record(&start, limit), Box::new(first.to_vec()), false).await.expect("submit");
}

/// `n` pages, none of them twice.
fn assert_each_once(sources: &[String], n: usize) {
    let unique: BTreeSet<&String> = sources.iter().collect();
    assert_eq!(sources.len(), n, "{sources:?}");
    assert_eq!(unique.len(), n, "no page twice after the restart");
}

async fn wait_for(mut check: impl FnMut() -> bool, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A single node's services.
fn services(scraper: Scraper, store: Store, settings: Arc<Settings>) -> Services {
    let teams = Arc::new(crate::teams::Teams::new(Arc::clone(&settings), store.clone(), None));
    Services::new(scraper, store, settings, teams)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_supervisor_is_started_again_and_callers_get_the_new_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    let rt = runtime(dir.path()).await;
    let old = rt.supervisors().await.expect("supervisors").webhooks;
    old.cast(super::webhook::WebhookMsg::Fail).expect("cast");
    let deadline = Instant::now() + Duration::from_secs(30);
    let new = loop {
        let current = rt.supervisors().await.expect("supervisors").webhooks;
        if current.get_id() != old.get_id() {
            break current;
        }
        assert!(Instant::now() < deadline, "the failed supervisor was not replaced");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(old.get_status(), ractor::ActorStatus::Stopped);
    assert_eq!(new.get_status(), ractor::ActorStatus::Running);
    rt.shutdown().await;
    assert!(rt.supervisors().await.is_err(), "references handed out after the tree stopped");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_job_actor_is_restarted_and_the_job_completes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let base = chain_site(Duration::from_millis(20)).await;
    let rt = runtime(dir.path()).await;
    let id = JobId::new();
    submit_chain(&rt, id, &base, 12).await;
    let jobs = rt.services().store.jobs.clone();
    wait_for(|| jobs.counters(id).map(|c| c.completed >= 3).unwrap_or(false), "progress").await;

    let supervisors = rt.supervisors().await.expect("supervisors");
    supervisors.jobs.cast(JobsMsg::Crash(id)).expect("cast");
    wait_for(
        || jobs.record(id).ok().flatten().is_some_and(|r| r.status == JobStatus::Completed),
        "completion",
    )
    .await;

    let docs = jobs.pages(id, 0, 100, usize::MAX).expect("pages");
    let sources: Vec<String> = docs
        .iter()
        .map(|d| {
            serde_json::from_slice::<serde_json::Value>(d).expect("json")["metadata"]["sourceURL"]
                .as_str()
                .expect("src")
                .to_owned()
        })
        .collect();
    assert_each_once(&sources, 12);
    rt.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tapped_job_hands_each_page_over_once_across_a_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let base = chain_site(Duration::from_millis(20)).await;
    let rt = runtime(dir.path()).await;
    let id = JobId::new();
    let mut pages = rt.services().taps.open(id, false);
    submit_chain(&rt, id, &base, 12).await;

    let mut sources = Vec::new();
    for _ in 0..3 {
        let doc = tokio::time::timeout(Duration::from_secs(30), pages.recv()).await.expect("a page in time");
        sources.push(doc.expect("the tap is open").metadata.source_url);
    }
    let supervisors = rt.supervisors().await.expect("supervisors");
    supervisors.jobs.cast(JobsMsg::Crash(id)).expect("cast");
    // The tap ends once the job has finished.
    while let Some(doc) =
        tokio::time::timeout(Duration::from_secs(30), pages.recv()).await.expect("the tap ends in time")
    {
        sources.push(doc.metadata.source_url);
    }
    assert_each_once(&sources, 12);

    let jobs = &rt.services().store.jobs;
    let record = jobs.record(id).expect("record").expect("kept");
    assert_eq!(record.status, JobStatus::Completed);
    assert_eq!(jobs.counters(id).expect("counters").completed, 12);
    assert!(jobs.pages(id, 0, 100, usize::MAX).expect("pages").is_empty(), "documents went to the tap only");
    rt.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_janitor_deletes_only_what_expired() {
    let dir = tempfile::tempdir().expect("tempdir");
    let rt = runtime(dir.path()).await;
    let services = rt.services().clone();
    let now = time::now_ms();
    let (old, fresh) = (JobId::new(), JobId::new());
    let mut expired = crawl_record("http://a.test/", 5);
    expired.status = JobStatus::Completed;
    expired.expires_ms = now - 1;
    let mut current = expired.clone();
    current.expires_ms = now + 60_000;
    let entry = |u: &str| NewEntry { key: u.into(), entry: QueueEntry { url: u.into(), depth: 0 } };
    services.store.jobs.create(old, &expired, [entry("http://a.test/")], None).expect("create");
    services.store.jobs.create(fresh, &current, [entry("http://a.test/")], None).expect("create");
    let team = TeamId::parse("t").expect("team");
    let doc = crate::model::Document::default();
    services.store.scrapes.put(JobId::new(), &team, &doc, 0).expect("put");
    services.store.scrapes.put(JobId::new(), &team, &doc, 60_000).expect("put");

    let supervisors = rt.supervisors().await.expect("supervisors");
    let swept = janitor::sweep(&services, &supervisors.jobs, now + 1_000).expect("sweep");
    assert_eq!((swept.jobs, swept.scrapes), (1, 1));
    assert!(services.store.jobs.record(old).expect("r").is_none());
    assert!(services.store.jobs.queued(old, 0, 10).expect("q").is_empty());
    assert!(services.store.jobs.record(fresh).expect("r").is_some());
    assert_eq!(services.store.scrapes.len(), 1);
    rt.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_site_actors_exit_and_come_back() {
    let dir = tempfile::tempdir().expect("tempdir");
    let base = chain_site(Duration::ZERO).await;
    let mut settings = Settings::defaults_with_data_dir(dir.path());
    settings.security.allow_private_targets = true;
    settings.crawl.domain_idle_secs = 1;
    let settings = Arc::new(settings);
    let store = Store::open(dir.path()).expect("store");
    let scraper = Scraper::new(store.clone(), Arc::clone(&settings)).expect("scraper");
    let rt = Runtime::start(services(scraper, store, settings)).await.expect("runtime");
    let count = || async {
        let supervisors = rt.supervisors().await.expect("supervisors");
        match supervisors.sites.call(super::sites::SitesMsg::Count, None).await {
            Ok(ractor::rpc::CallResult::Success(n)) => n,
            other => panic!("{other:?}"),
        }
    };
    for round in 0..2 {
        let id = JobId::new();
        let start = format!("{base}/p/{round}0");
        let first = [NewEntry { key: start.clone(), entry: QueueEntry { url: start.clone(), depth: 0 } }];
        rt.submit(id, &crawl_record(&start, 3), Box::new(first.to_vec()), false).await.expect("submit");
        let jobs = rt.services().store.jobs.clone();
        wait_for(
            || jobs.record(id).ok().flatten().is_some_and(|r| r.status == JobStatus::Completed),
            "completion",
        )
        .await;
        assert_eq!(count().await, 1, "one site actor while the site is in use");
        let deadline = Instant::now() + Duration::from_secs(10);
        while count().await > 0 {
            assert!(Instant::now() < deadline, "the idle site actor did not exit");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    rt.shutdown().await;
}

/// A cancelled job's requests are refused, also by a site actor that starts after the
/// cancel; other jobs' requests go through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn site_actors_refuse_a_cancelled_jobs_requests() {
    let dir = tempfile::tempdir().expect("tempdir");
    let base = chain_site(Duration::ZERO).await;
    let rt = runtime(dir.path()).await;
    let supervisors = rt.supervisors().await.expect("supervisors");
    let (cancelled, other) = (JobId::new(), JobId::new());
    // No site actor exists yet: the supervisor remembers the cancel for the one it starts.
    supervisors.sites.cast(SitesMsg::CancelJob(cancelled)).expect("cast");
    let url = format!("{base}/p/1");
    let origin = origin_of(&url::Url::parse(&url).expect("url")).expect("origin");
    let site = match supervisors.sites.call(|r| SitesMsg::Lookup(origin, r), None).await {
        Ok(CallResult::Success(Ok(site))) => site,
        other => panic!("no site actor: {other:?}"),
    };
    // The outcome, or `None` when the request was stopped under way (its port closed).
    let read = |job: JobId| {
        let (site, url) = (site.clone(), url.clone());
        async move {
            let asked =
                site.call(|reply| SiteMsg::FetchDocument { job, url, timeout_ms: 5_000, reply }, None).await;
            match asked {
                Ok(CallResult::Success(outcome)) => Some(outcome),
                Ok(CallResult::SenderError) => None,
                other => panic!("the site actor did not answer {job}: {other:?}"),
            }
        }
    };
    assert!(matches!(read(cancelled).await, Some(DocumentOutcome::Cancelled)));
    assert!(matches!(read(other).await, Some(DocumentOutcome::Fetched { status: 200, .. })));
    // A cancel that reaches a running site actor holds for later requests too.
    supervisors.sites.cast(SitesMsg::CancelJob(other)).expect("cast");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !matches!(read(other).await, Some(DocumentOutcome::Cancelled)) {
        assert!(Instant::now() < deadline, "the cancel never reached the site actor");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A site actor that is stopping is never handed out: a request looked up in the moment
/// between its stop and its supervisor hearing of it reaches the site's next actor, and
/// the old actor's end does not make the supervisor forget the new one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopping_site_actor_is_replaced_at_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let base = chain_site(Duration::ZERO).await;
    let rt = runtime(dir.path()).await;
    let supervisors = rt.supervisors().await.expect("supervisors");
    let origin = origin_of(&url::Url::parse(&base).expect("url")).expect("origin");
    let lookup = || async {
        match supervisors.sites.call(|r| SitesMsg::Lookup(origin.clone(), r), None).await {
            Ok(CallResult::Success(Ok(site))) => site,
            other => panic!("no site actor: {other:?}"),
        }
    };
    for round in 0..50 {
        let old = lookup().await;
        // Stops taking messages at once; its supervisor hears of its end a moment later.
        old.drain().expect("drain");
        let next = lookup().await;
        assert_ne!(next.get_id(), old.get_id(), "round {round}: a stopping actor was handed out");
        let (reply, answer) = ractor::concurrency::oneshot();
        let read = SiteMsg::FetchDocument {
            job: JobId::new(),
            url: format!("{base}/p/{round}"),
            timeout_ms: 5_000,
            reply: reply.into(),
        };
        next.cast(read).expect("the new site actor takes the request");
        assert!(matches!(answer.await, Ok(DocumentOutcome::Fetched { status: 200, .. })));
        // Once the old actor's end is heard, the supervisor still knows the new one.
        old.wait(Some(Duration::from_secs(5))).await.expect("the old actor ends");
        tokio::time::sleep(Duration::from_millis(5)).await;
        assert_eq!(lookup().await.get_id(), next.get_id(), "round {round}: a third actor");
    }
    rt.shutdown().await;
}

/// A site actor let go to another node while its robots.txt is still being read tells the
/// crawls waiting on it that the site moved (they ask the site's new owner), rather than
/// answering that the site names no sitemaps, which made a crawl miss the pages only its
/// sitemaps list.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_site_let_go_tells_its_sitemap_askers_it_moved() {
    let dir = tempfile::tempdir().expect("tempdir");
    // robots.txt (like every page of the site) answers after a second.
    let base = chain_site(Duration::from_secs(1)).await;
    let rt = runtime(dir.path()).await;
    let supervisors = rt.supervisors().await.expect("supervisors");
    let origin = origin_of(&url::Url::parse(&base).expect("url")).expect("origin");
    let site = match supervisors.sites.call(|r| SitesMsg::Lookup(origin.clone(), r), None).await {
        Ok(CallResult::Success(Ok(site))) => site,
        other => panic!("no site actor: {other:?}"),
    };
    let (sitemaps, listed) = ractor::concurrency::oneshot();
    site.cast(SiteMsg::Sitemaps(sitemaps.into())).expect("cast");
    let (reply, read) = ractor::concurrency::oneshot();
    let job = JobId::new();
    let document =
        SiteMsg::FetchDocument { job, url: format!("{base}/p/1"), timeout_ms: 5_000, reply: reply.into() };
    site.cast(document).expect("cast");
    // Another node takes the site before robots.txt is in.
    let released = supervisors.sites.call(|r| SitesMsg::Release(origin.to_string(), r), None).await;
    assert!(matches!(released, Ok(CallResult::Success(()))), "{released:?}");
    assert_eq!(listed.await.expect("the sitemap asker is answered"), None);
    assert!(matches!(read.await, Ok(DocumentOutcome::Moved)), "the sitemap's reader is told it moved");
    rt.shutdown().await;
}

/// A page this node's site actors do not take (they are gone: the node is stopping) is not
/// failed: a job's fetch waits (it stops with the node, its page still queued), while an
/// answer to another node says at once that the page was not taken (that node sends it on).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_the_site_actors_do_not_take_is_not_failed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let rt = runtime(dir.path()).await;
    let (supervisor, handle) =
        Actor::spawn(None, super::sites::SiteSupervisor, rt.services().clone()).await.expect("spawn");
    supervisor.stop(None);
    handle.await.expect("stopped");
    let task = FetchTask {
        job: JobId::new(),
        team: crate::model::TeamId::parse("t").expect("team"),
        scrape_id: JobId::new(),
        url: "http://127.0.0.1:9/page".into(),
        options: Default::default(),
        respect_robots: false,
        robots_agent: None,
        discover: false,
        queued_ms: None,
    };
    let sites = super::sites::Sites::new(supervisor, None);
    let waited =
        tokio::time::timeout(Duration::from_millis(700), sites.fetch(task.clone(), None, || {})).await;
    assert!(waited.is_err(), "the job's page waits for the site actors: {waited:?}");
    let answered = tokio::time::timeout(Duration::from_secs(5), sites.here().fetch(task, None, || {})).await;
    assert!(matches!(answered, Ok(FetchOutcome::NotTaken(_))), "{answered:?}");
    rt.shutdown().await;
}
