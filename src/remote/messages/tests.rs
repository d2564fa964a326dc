//! The bytes of every message as a node of release 0.2.0 (protocol 13) writes it, kept in
//! `protocol-13.txt` (one sample of each request and answer, written by that release): this
//! release writes the same bytes for the same values, and reads them back into the same
//! values. A change that fails here changes the wire, which needs a new protocol version
//! and a [`super::super::compat::Feature`].

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::jobs::{Request, Response};
use super::{decode, encode};
use crate::actors::NodeCounts;
use crate::actors::fetch::{DocumentOutcome, FetchOutcome, FetchTask};
use crate::actors::stored::StoredPage;
use crate::model::{Code, CrawlOptions, Document, JobId, JobKind, JobStatus, ScrapeOptions, TeamId};
use crate::store::CachedPage;
use crate::store::jobs::{Counters, ErrorEntry, JobRecord};

/// The bytes protocol 13 writes for the sample `name`.
pub(super) fn previous(name: &str) -> Vec<u8> {
    let line = include_str!("protocol-13.txt")
        .lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no sample `{name}` in protocol-13.txt"));
    hex::decode(line).expect("hex")
}

/// `value` is written as protocol 13 writes sample `name`, and what protocol 13 writes is
/// read back into a value written the same again.
pub(super) fn same_as_previous<T: Serialize + DeserializeOwned>(name: &str, value: &T) {
    let bytes = previous(name);
    assert_eq!(hex::encode(encode(value)), hex::encode(&bytes), "{name} is written as protocol 13 writes it");
    let read: T = decode(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(encode(&read), bytes, "{name} is read as protocol 13 wrote it");
}

fn id(n: u8) -> JobId {
    JobId::parse(&format!("0190b4a2-7c3e-7000-8000-0000000000{n:02x}")).expect("id")
}

fn task() -> FetchTask {
    FetchTask {
        job: id(1),
        team: TeamId::parse("team-a").expect("team"),
        scrape_id: id(2),
        url: "http://site.localhost:8080/a?b=c".into(),
        options: ScrapeOptions::default(),
        respect_robots: true,
        robots_agent: Some("bot".into()),
        discover: true,
        queued_ms: Some(12),
    }
}

fn record() -> JobRecord {
    JobRecord {
        kind: JobKind::Crawl,
        team: "team-a".into(),
        url: "http://site.localhost/".into(),
        options: CrawlOptions::default(),
        status: JobStatus::Scraping,
        created_ms: 1_700_000_000_000,
        expires_ms: 1_700_086_400_000,
        finished_ms: Some(1_700_000_100_000),
        error: Some("boom".into()),
    }
}

fn document() -> Document {
    let mut document = Document { markdown: Some("# Hello".into()), ..Document::default() };
    document.metadata.url = "http://site.localhost/a".into();
    document.metadata.credits_used = 1;
    document
}

fn cached() -> CachedPage {
    CachedPage {
        final_url: "http://site.localhost/a".into(),
        status: 200,
        content_type: Some("text/html".into()),
        body: b"<p>hi</p>".to_vec(),
        fetched_ms: 1_700_000_000_000,
        via_proxy: false,
        rendered: true,
    }
}

#[test]
fn requests_of_the_jobs_channel_are_protocol_13s() {
    let team = || "team-a".to_owned();
    let origin = || "http://site.localhost:80/".to_owned();
    let hop = || "http://site.localhost/x".to_owned();
    let samples = [
        ("req.counts", Request::Counts),
        ("req.fetch", Request::Fetch(Box::new(task()))),
        ("req.cancel_job", Request::CancelJob(id(3))),
        ("req.sitemaps", Request::Sitemaps(origin())),
        ("req.document", Request::Document { job: id(1), url: "http://site.localhost/sitemap.xml".into() }),
        ("req.page", Request::Page { team: team(), id: id(1), kind: JobKind::Batch, paging: (5, 10, 1000) }),
        ("req.errors", Request::Errors { team: team(), id: id(1), kind: JobKind::Crawl }),
        ("req.cancel", Request::Cancel { team: team(), id: id(1), kind: JobKind::Crawl }),
        ("req.active", Request::Active { team: team(), kind: JobKind::Batch }),
        ("req.release", Request::Release(origin())),
        ("req.turn", Request::Turn(hop())),
        ("req.turn_held", Request::TurnHeld(hop())),
        ("req.return", Request::Return(77)),
        ("req.fetch_admitted", Request::FetchAdmitted(Box::new(task()))),
        ("req.written", Request::Written(78)),
        ("req.forget", Request::Forget("n3".into())),
        ("req.cached", Request::Cached([7u8; 32])),
        ("req.cache", Request::Cache { key: [9u8; 32], page: Box::new(cached()) }),
    ];
    for (name, request) in samples {
        same_as_previous(name, &request);
    }
}

#[test]
fn answers_of_the_jobs_channel_are_protocol_13s() {
    let stored = StoredPage::of(&document(), vec!["http://a/".into(), "http://b/".into()]).expect("stored");
    let counts = Counters { next_seq: 9, enqueued: 8, completed: 7, failed: 1, blocked: 0, credits: 7 };
    let failure = ErrorEntry {
        id: "x".into(),
        at_ms: 5,
        url: "http://u/".into(),
        code: "SCRAPE_TIMEOUT".into(),
        error: "late".into(),
    };
    let samples = [
        ("resp.counts", Response::Counts(NodeCounts { sites: 3, jobs: 2, sessions: 1 })),
        ("resp.sitemaps", Response::Sitemaps(vec!["http://s/sitemap.xml".into()])),
        (
            "resp.document.fetched",
            Response::Document(DocumentOutcome::Fetched { status: 200, body: b"<urlset/>".to_vec() }),
        ),
        ("resp.document.failed", Response::Document(DocumentOutcome::Failed("nope".into()))),
        ("resp.document.cancelled", Response::Document(DocumentOutcome::Cancelled)),
        (
            "resp.page",
            Response::Page {
                job: Box::new(record()),
                counts,
                documents: vec![serde_bytes::ByteBuf::from(b"{\"a\":1}".to_vec())],
            },
        ),
        ("resp.errors", Response::Errors { failed: vec![failure], robots_blocked: vec!["http://r/".into()] }),
        ("resp.done", Response::Done),
        ("resp.active", Response::Active(vec![(id(1), record())])),
        (
            "resp.failed",
            Response::Failed { status: 404, code: "NOT_FOUND".into(), message: "Job not found".into() },
        ),
        ("resp.moved", Response::moved()),
        ("resp.stored", Response::Stored(Box::new(stored))),
        ("resp.lent", Response::Lent(41)),
        ("resp.cached_page.some", Response::CachedPage(Some(Box::new(cached())))),
        ("resp.cached_page.none", Response::CachedPage(None)),
    ];
    for (name, response) in samples {
        same_as_previous(name, &response);
    }
    assert!(decode::<Response>(&previous("resp.moved")).expect("moved").is_moved());
}

#[test]
fn page_outcomes_cross_as_protocol_13s_json() {
    let samples = [
        (
            "outcome.page",
            FetchOutcome::Page { document: Box::new(document()), links: vec!["http://a/".into()] },
        ),
        (
            "outcome.failed",
            FetchOutcome::Failed { code: Code::Unknown, error: "site actor stopped before answering".into() },
        ),
        ("outcome.blocked", FetchOutcome::Blocked),
        ("outcome.cancelled", FetchOutcome::Cancelled),
        ("outcome.moved", FetchOutcome::Moved),
    ];
    for (name, outcome) in samples {
        let json = serde_json::to_vec(&outcome).expect("json");
        assert_eq!(String::from_utf8_lossy(&json), String::from_utf8_lossy(&previous(name)), "{name}");
        let read: FetchOutcome = serde_json::from_slice(&previous(name)).expect("read");
        assert_eq!(serde_json::to_vec(&read).expect("again"), json, "{name} read back");
        same_as_previous(&format!("resp.fetched.{name}"), &Response::Fetched(json));
    }
}

#[test]
fn requests_and_answers_of_the_teams_channel_are_protocol_13s() {
    use super::teams::{Request, Response};
    use crate::store::profiles::{ProfileState, StoredCookie};
    use crate::store::reports::{Report, ReportKey};
    use crate::teams::Grant;

    let state = || {
        let cookie = StoredCookie {
            name: "c".into(),
            value: "v".into(),
            domain: ".a".into(),
            path: "/".into(),
            expires: Some(1_900_000_000),
            secure: true,
            http_only: false,
        };
        let local = [("http://a".to_owned(), vec![("k".to_owned(), "v".to_owned())])];
        ProfileState { cookies: vec![cookie], local_storage: local.into_iter().collect() }
    };
    let t = || "team-a".to_owned();
    let key = ReportKey { ledger: 1, team: t(), month: 202_612, node: "n2".into() };
    let report = Report { total: 55, by_key: vec![("fc-…abc".into(), 55)] };
    let requests = [
        ("treq.key_team", Request::KeyTeam([3u8; 32])),
        ("treq.used", Request::Used(t(), 202_612)),
        ("treq.tokens", Request::Tokens(t(), 202_612)),
        ("treq.slots", Request::Slots { team: t(), held: 3, want: 4 }),
        ("treq.rate", Request::Rate(t())),
        ("treq.profile", Request::Profile { team: t(), name: "p".into() }),
        ("treq.save_profile", Request::SaveProfile { team: t(), name: "p".into(), state: state() }),
        ("treq.charged", Request::Charged { team: t(), month: 202_612, total: 9 }),
        ("treq.used_beyond", Request::UsedBeyond(t(), 202_612)),
        ("treq.load", Request::Load(t())),
        (
            "treq.tokens_used",
            Request::TokensUsed { team: t(), month: 202_612, total: 90, by_key: vec![("k".into(), 90)] },
        ),
        ("treq.tokens_beyond", Request::TokensBeyond(t(), 202_612)),
        ("treq.relayed", Request::Relayed(vec![(key, report)])),
    ];
    for (name, request) in requests {
        same_as_previous(name, &request);
    }
    let responses = [
        ("tresp.key_team", Response::KeyTeam(Some(t()))),
        ("tresp.key_team_none", Response::KeyTeam(None)),
        ("tresp.used", Response::Used(12)),
        ("tresp.tokens", Response::Tokens(120, vec![("k".into(), 120)])),
        ("tresp.slots", Response::Slots(Grant { grant: 2, keep: 5 })),
        ("tresp.rate_none", Response::Rate(None)),
        ("tresp.rate_some", Response::Rate(Some(1500))),
        ("tresp.profile", Response::Profile(Some(state()))),
        ("tresp.saved", Response::Saved),
        ("tresp.noted", Response::Noted),
        ("tresp.load", Response::Load(3, 4)),
    ];
    for (name, response) in responses {
        same_as_previous(name, &response);
    }
}

#[test]
fn messages_of_the_http_and_tunnel_channels_are_protocol_13s() {
    use super::http::{Answer, Passed};
    use super::tunnel::{Request, Response};

    let passed = Passed {
        method: "POST".into(),
        path: "/v2/scrape/x/interact?y=1".into(),
        headers: vec![("authorization".into(), "Bearer k".into())],
        body: b"{\"code\":\"1\"}".to_vec(),
    };
    same_as_previous("http.passed", &passed);
    let headers = vec![("content-type".into(), "application/json".into())];
    same_as_previous("http.answer", &Answer { status: 201, headers, body: b"{}".to_vec() });
    let requests = [
        ("tun.open", Request::Open { path: "/v2/cdp/abc".into(), key: "dGhlIHNhbXBsZSBub25jZQ==".into() }),
        ("tun.write", Request::Write(5, b"\x81\x05hello".to_vec())),
        ("tun.read", Request::Read(5)),
        ("tun.close", Request::Close(5)),
        ("tun.get", Request::Get { path: "/v2/live/abc/stream".into() }),
    ];
    for (name, request) in requests {
        same_as_previous(name, &request);
    }
    let responses = [
        ("tunr.opened", Response::Opened(5, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=".into(), b"early".to_vec())),
        ("tunr.refused", Response::Refused(404, b"{\"success\":false}".to_vec())),
        ("tunr.bytes", Response::Bytes(b"data".to_vec())),
        ("tunr.ended", Response::Ended),
        ("tunr.done", Response::Done),
    ];
    for (name, response) in responses {
        same_as_previous(name, &response);
    }
}
