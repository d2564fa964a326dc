//! The data directory under damage: a record that does not decode fails its own job only
//! (quarantined, never deleted, listed by `ferrocrawl store check`), and the server, the
//! team's other jobs and its active list keep working.

use std::time::Duration;

use serde_json::json;

use crate::common::process::run;
use crate::common::{FixtureSite, TestServer, assert_error};

/// The database of a stopped server, opened directly (its lock is released a moment after
/// the server stops).
fn open_raw(data: &std::path::Path) -> sled::Db {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        match sled::Config::new().path(data.join("db")).segment_size(8 << 20).open() {
            Ok(db) => return db,
            Err(e) if std::time::Instant::now() < deadline => {
                let _ = e;
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(e) => panic!("sled: {e}"),
        }
    }
}

#[tokio::test]
async fn an_unreadable_job_record_fails_that_job_only() {
    let site = FixtureSite::start();
    let app = TestServer::start().await;
    let batch = |path: &str| json!({"urls": [site.url(path)]});
    let (_, good) = app.request(reqwest::Method::POST, "/v2/batch/scrape", Some(&batch("/article"))).await;
    let (_, bad) = app.request(reqwest::Method::POST, "/v2/batch/scrape", Some(&batch("/notes.txt"))).await;
    let (good, bad) =
        (good["id"].as_str().expect("id").to_owned(), bad["id"].as_str().expect("id").to_owned());
    app.wait_job(&format!("/v2/batch/scrape/{good}"), Duration::from_secs(30)).await;
    app.wait_job(&format!("/v2/batch/scrape/{bad}"), Duration::from_secs(30)).await;
    let data = app.stop();

    // Damage one job record on disk, as a failing disk or a bug would.
    {
        let db = open_raw(data.path());
        let jobs = db.open_tree("jobs").expect("jobs");
        let id = ferrocrawl::model::JobId::parse(&bad).expect("id");
        jobs.insert(id.as_bytes(), &[0xFC, 2, 0xFF, 0xFF, 0xFF, 0xFF][..]).expect("damage");
        db.flush().expect("flush");
    }
    let data_arg = data.path().to_str().expect("utf8").to_owned();

    let app = TestServer::builder_on(data).start().await;
    let got = app.request(reqwest::Method::GET, &format!("/v2/batch/scrape/{bad}"), None).await;
    let message = assert_error(&got, 500, "RECORD_QUARANTINED");
    assert!(message.contains("store check"), "{message}");
    let (status, done) = app.request(reqwest::Method::GET, &format!("/v2/batch/scrape/{good}"), None).await;
    assert_eq!((status, done["status"].as_str()), (200, Some("completed")), "{done}");
    let (status, active) = app.request(reqwest::Method::GET, "/v2/crawl/active", None).await;
    assert_eq!(status, 200, "{active}");
    // Still quarantined, not gone: the same answer again.
    let again = app.request(reqwest::Method::GET, &format!("/v2/batch/scrape/{bad}"), None).await;
    assert_error(&again, 500, "RECORD_QUARANTINED");
    let data = app.stop();

    let checked = run(&["store", "check", "--data", &data_arg], &[]);
    let out = String::from_utf8_lossy(&checked.stdout);
    assert!(!checked.status.success(), "a quarantined record makes the check fail: {out}");
    assert!(out.contains("QUARANTINED jobs"), "{out}");
    assert!(out.lines().filter(|l| l.starts_with("UNREADABLE")).count() == 0, "{out}");
    drop(data);
}
