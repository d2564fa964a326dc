//! Job store behaviour: exactly-once settlement, the seen-set and limit, ordering, paging
//! and deletion.

use super::*;
use crate::model::time;
use crate::store::Store;

fn record(limit: u64) -> JobRecord {
    JobRecord {
        kind: JobKind::Crawl,
        team: "t".into(),
        url: "http://a.test/".into(),
        options: CrawlOptions { limit, ..Default::default() },
        status: JobStatus::Scraping,
        created_ms: time::now_ms(),
        expires_ms: time::now_ms() + 60_000,
        finished_ms: None,
        error: None,
    }
}

fn entry(path: &str, depth: u32) -> NewEntry {
    NewEntry {
        key: format!("a.test{path}"),
        entry: QueueEntry { url: format!("http://a.test{path}"), depth },
    }
}

#[test]
fn pages_settle_exactly_once_and_enqueue_their_links() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path()).expect("open");
    let jobs = &store.jobs;
    let id = JobId::new();
    let first = jobs.create(id, &record(10), [entry("/", 0)], None).expect("create");
    assert_eq!(first, 1);
    assert_eq!(
        jobs.queued(id, 0, 10).expect("queued"),
        vec![(0, QueueEntry { url: "http://a.test/".into(), depth: 0 })]
    );
    let links = [entry("/a", 1), entry("/b", 1), entry("/", 1)];
    let doc = sled::IVec::from(&b"{\"markdown\":\"root\"}"[..]);
    let done = Settlement::new(Outcome::Page { document: Some(&doc), credits: 1 }, &links);
    let settled = jobs.settle(id, 0, 10, done).expect("settle");
    let added = settled.added().expect("first time");
    assert_eq!(added.iter().map(|(s, _)| *s).collect::<Vec<_>>(), vec![1, 2], "the root was already seen");
    assert_eq!(
        jobs.settle(id, 0, 10, done).expect("settle"),
        Settled::Repeated,
        "a second completion is ignored"
    );
    let c = jobs.counters(id).expect("counters");
    assert_eq!((c.enqueued, c.completed, c.credits, c.pending()), (3, 1, 1, 2));
    assert_eq!(jobs.pages(id, 0, 10, usize::MAX).expect("pages").len(), 1);
    assert_eq!(jobs.queued(id, 0, 10).expect("queued").len(), 2);
}

#[test]
fn the_limit_counts_unique_urls() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path()).expect("open");
    let id = JobId::new();
    store.jobs.create(id, &record(2), [entry("/", 0)], None).expect("create");
    let links = [entry("/a", 1), entry("/b", 1), entry("/c", 1)];
    let doc = sled::IVec::from(&b"{}"[..]);
    let done = Settlement::new(Outcome::Page { document: Some(&doc), credits: 1 }, &links);
    let settled = store.jobs.settle(id, 0, 2, done).expect("ok");
    assert_eq!(settled.added().expect("settled").len(), 1);
    assert_eq!(store.jobs.counters(id).expect("c").enqueued, 2);
}

#[test]
fn failures_and_robots_blocks_are_listed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path()).expect("open");
    let id = JobId::new();
    store.jobs.create(id, &record(10), [entry("/", 0), entry("/private", 0)], None).expect("create");
    let err = ErrorEntry {
        id: "x".into(),
        at_ms: 1,
        url: "http://a.test/".into(),
        code: "SCRAPE_TIMEOUT".into(),
        error: "slow".into(),
    };
    let next = [entry("/next", 1)];
    let failed_with_links = Settlement::new(Outcome::Failed(&err), &next);
    store.jobs.settle(id, 0, 10, failed_with_links).expect("fail");
    store
        .jobs
        .settle(id, 1, 10, Settlement::new(Outcome::Blocked("http://a.test/private"), &[]))
        .expect("block");
    let (errors, blocked) = store.jobs.errors(id).expect("errors");
    assert_eq!(errors, vec![err]);
    assert_eq!(blocked, vec!["http://a.test/private".to_owned()]);
    let c = store.jobs.counters(id).expect("c");
    assert_eq!((c.failed, c.blocked, c.completed, c.pending()), (1, 1, 0, 1));
    assert_eq!(
        store.jobs.queued(id, 0, 10).expect("queued")[0].1.url,
        "http://a.test/next",
        "a failed start page still leads on"
    );
}

#[test]
fn jobs_do_not_see_each_other_and_delete_cleanly() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path()).expect("open");
    let (a, b) = (JobId::new(), JobId::new());
    store.jobs.create(a, &record(10), [entry("/", 0)], None).expect("a");
    store.jobs.create(b, &record(10), [entry("/", 0), entry("/x", 0)], None).expect("b");
    assert_eq!(store.jobs.queued(a, 0, 10).expect("q").len(), 1);
    store.jobs.delete(b).expect("delete");
    assert!(store.jobs.record(b).expect("r").is_none());
    assert!(store.jobs.queued(b, 0, 10).expect("q").is_empty());
    assert_eq!(store.jobs.queued(a, 0, 10).expect("q").len(), 1);
    assert_eq!(store.jobs.all().expect("all").len(), 1);
}

#[test]
fn terminal_statuses_stick() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path()).expect("open");
    let id = JobId::new();
    store.jobs.create(id, &record(10), [], None).expect("create");
    store.jobs.finish(id, JobStatus::Cancelled, 5, None, None).expect("cancel");
    let r = store.jobs.finish(id, JobStatus::Completed, 6, None, None).expect("complete").expect("record");
    assert_eq!((r.status, r.finished_ms), (JobStatus::Cancelled, Some(5)));
}

#[test]
fn pages_are_cut_by_size() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path()).expect("open");
    let id = JobId::new();
    let first: Vec<NewEntry> = (0..5).map(|i| entry(&format!("/{i}"), 0)).collect();
    store.jobs.create(id, &record(10), first.clone(), None).expect("create");
    for seq in 0..5 {
        let doc = sled::IVec::from(&[b'x'; 100][..]);
        let done = Settlement::new(Outcome::Page { document: Some(&doc), credits: 1 }, &[]);
        store.jobs.settle(id, seq, 10, done).expect("settle");
    }
    assert_eq!(store.jobs.pages(id, 0, 100, 250).expect("pages").len(), 3);
    assert_eq!(store.jobs.pages(id, 3, 100, usize::MAX).expect("pages").len(), 2);
    assert_eq!(store.jobs.pages(id, 0, 2, usize::MAX).expect("pages").len(), 2);
}

#[test]
fn a_batch_settles_together_and_skips_duplicates() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path()).expect("open");
    let id = JobId::new();
    store.jobs.create(id, &record(10), [entry("/", 0), entry("/a", 0)], None).expect("create");
    let doc = sled::IVec::from(&b"{}"[..]);
    let page = Outcome::Page { document: Some(&doc), credits: 1 };
    let links = [entry("/b", 1)];
    let batch = [
        (0, Settlement::new(page, &links)),
        (1, Settlement::new(page, &links)),
        (0, Settlement::new(page, &[])),
    ];
    let results = store.jobs.settle_batch(id, 10, &batch).expect("batch");
    assert_eq!(
        results.iter().map(|r| r.added().map(Vec::len)).collect::<Vec<_>>(),
        vec![Some(1), Some(0), None]
    );
    let c = store.jobs.counters(id).expect("c");
    assert_eq!((c.completed, c.enqueued, c.credits), (2, 3, 2));
}

/// A page that redirected onto a URL the job already has is dropped; one that landed on a
/// new URL claims it, so a later link to that URL is not followed.
#[test]
fn a_redirect_onto_a_known_page_is_not_kept_twice() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path()).expect("open");
    let id = JobId::new();
    let first = [entry("/", 0), entry("/go/a", 0), entry("/go/b", 0), entry("/c", 0)];
    store.jobs.create(id, &record(10), first.clone(), None).expect("create");
    let doc = sled::IVec::from(&b"{}"[..]);
    let page = Outcome::Page { document: Some(&doc), credits: 1 };
    let onto_root = Settlement { lands_on: Some("a.test/"), ..Settlement::new(page, &[]) };
    let onto_new = Settlement { lands_on: Some("a.test/b"), ..Settlement::new(page, &[]) };
    let links = [entry("/b", 1)];
    let batch =
        [(0, Settlement::new(page, &[])), (1, onto_root), (2, onto_new), (3, Settlement::new(page, &links))];
    let results = store.jobs.settle_batch(id, 10, &batch).expect("batch");
    let none = Vec::new;
    assert_eq!(
        results,
        vec![Settled::Done(none()), Settled::Duplicate(none()), Settled::Done(none()), Settled::Done(none())]
    );
    let c = store.jobs.counters(id).expect("c");
    assert_eq!((c.completed, c.credits, c.enqueued, c.pending()), (3, 3, 3, 0), "the link to /b was claimed");
    assert_eq!(store.jobs.pages(id, 0, 10, usize::MAX).expect("pages").len(), 3);
}

#[test]
fn appending_reopens_a_finished_batch() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path()).expect("open");
    let id = JobId::new();
    let mut batch = record(1);
    batch.kind = JobKind::Batch;
    store.jobs.create(id, &batch, [entry("/a", 0)], None).expect("create");
    let doc = sled::IVec::from(&b"{}"[..]);
    store
        .jobs
        .settle(id, 0, 1, Settlement::new(Outcome::Page { document: Some(&doc), credits: 1 }, &[]))
        .expect("settle");
    store.jobs.finish(id, JobStatus::Completed, 5, None, None).expect("complete");
    let added = store.jobs.append(id, [entry("/a", 0), entry("/b", 0)]).expect("append");
    assert_eq!(added, 1, "a URL already in the batch is not added again");
    let r = store.jobs.record(id).expect("r").expect("record");
    assert_eq!((r.status, r.finished_ms, r.options.limit), (JobStatus::Scraping, None, 3));
    assert_eq!(store.jobs.queued(id, 0, 10).expect("q")[0].1.url, "http://a.test/b");
}

#[test]
fn a_long_list_is_queued_in_steps_in_order_once_each() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path()).expect("open");
    let id = JobId::new();
    let n = 3 * CREATE_CHUNK + 7;
    // Every URL twice, the second time in a later step.
    let urls = (0..n).chain(0..n).map(|i| entry(&format!("/{i}"), 0));
    let queued = store.jobs.create(id, &record(n as u64 - 5), urls, None).expect("create");
    assert_eq!(queued, n - 5, "duplicates and URLs past the limit are not queued");
    let all = store.jobs.queued(id, 0, 2 * n).expect("queued");
    assert_eq!(all.len(), n - 5);
    assert!(
        all.iter().enumerate().all(|(i, (seq, e))| *seq == i as u64 && e.url == format!("http://a.test/{i}"))
    );
    assert_eq!(store.jobs.counters(id).expect("counters").enqueued, (n - 5) as u64);
    assert!(store.jobs.record(id).expect("record").is_some());

    // Appending in steps: only what is new is added, and the limit grows by what was sent.
    let mut batch = record(1);
    batch.kind = JobKind::Batch;
    let b = JobId::new();
    store.jobs.create(b, &batch, [entry("/0", 0)], None).expect("create");
    let more = (0..2 * CREATE_CHUNK + 1).map(|i| entry(&format!("/{i}"), 0));
    assert_eq!(store.jobs.append(b, more).expect("append"), 2 * CREATE_CHUNK);
    assert_eq!(store.jobs.counters(b).expect("counters").enqueued, 2 * CREATE_CHUNK as u64 + 1);
}

#[test]
fn urls_left_by_a_creation_a_crash_cut_short_are_removed_on_open() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (kept, unborn) = (JobId::new(), JobId::new());
    {
        let store = Store::open(dir.path()).expect("open");
        store.jobs.create(kept, &record(10), [entry("/a", 0), entry("/b", 0)], None).expect("create");
        // What the steps before the record leave behind: queue and seen entries, no record.
        let jobs = &store.jobs;
        unwrap_tx((&jobs.seen, &jobs.queue).transaction(|(seen, queue)| {
            enqueue_tx(unborn, &mut Counters::default(), 10, &[entry("/x", 0), entry("/y", 0)], seen, queue)
        }))
        .expect("steps");
        assert_eq!(jobs.queued(unborn, 0, 10).expect("q").len(), 2);
        store.flush().expect("flush");
    }
    let store = Store::open(dir.path()).expect("reopen");
    assert!(store.jobs.queued(unborn, 0, 10).expect("q").is_empty(), "the unborn job's URLs are gone");
    assert_eq!(store.jobs.queued(kept, 0, 10).expect("q").len(), 2, "the real job is untouched");
    assert!(!store.jobs.has_queued(unborn).expect("q"));
    let added = store.jobs.create(unborn, &record(10), [entry("/x", 0)], None).expect("create");
    assert_eq!(added, 1, "its seen-set is gone too");
}
