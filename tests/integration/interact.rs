//! Interact sessions with real Chromium: the state machine of spec §3 (created in the
//! scrape's page state, reused, destroyed, 410 after), who may use a session (403/404),
//! `existingSessionId`, why one cannot be made (409, 429, 402), code in node with timeouts
//! (python and bash: `sandbox.rs`), the live view (also during a run), idle closing, `cleanupQueued`, and
//! profiles shared with scrapes.

use std::time::Duration;

use ferrocrawl::config::TeamSettings;
use reqwest::Method;
use serde_json::{Value, json};

use crate::common::{FixtureSite, TestServer, assert_error, wait_for};

/// Scrapes `url` with `extra` options and returns the scrape id.
pub(crate) async fn scrape_id(app: &TestServer, url: String, extra: Value) -> String {
    let mut body = json!({"url": url});
    body.as_object_mut().expect("object").extend(extra.as_object().cloned().unwrap_or_default());
    let (status, got) = app.scrape(body).await;
    assert_eq!(status, 200, "{got}");
    got["data"]["metadata"]["scrapeId"].as_str().expect("scrapeId").to_owned()
}

pub(crate) async fn run(app: &TestServer, id: &str, body: Value) -> (u16, Value) {
    app.request(Method::POST, &format!("/v2/scrape/{id}/interact"), Some(&body)).await
}

async fn node(app: &TestServer, id: &str, code: &str) -> Value {
    let (status, got) = run(app, id, json!({"code": code})).await;
    assert_eq!(status, 200, "{got}");
    got
}

#[tokio::test]
async fn a_session_follows_the_state_machine() {
    let site = FixtureSite::start();
    let app = TestServer::builder().key("other", "other-key").start().await;
    let id = scrape_id(
        &app,
        site.url("/js/interactive"),
        json!({"actions": [{"type": "click", "selector": "#more"}]}),
    )
    .await;

    // Created in the scrape's page state: its click is replayed.
    let first =
        node(&app, &id, "console.log('hello', 42); document.querySelectorAll('#list li').length").await;
    assert_eq!(first["success"], true, "{first}");
    assert_eq!((first["result"].as_str(), first["stdout"].as_str()), (Some("1"), Some("hello 42\n")));
    assert_eq!(first["exitCode"], 0);
    assert!(first["liveViewUrl"].as_str().is_some_and(|u| u.contains("/v2/live/")), "{first}");
    let session = first["sessionId"].as_str().expect("sessionId").to_owned();

    // Reused: state set by one call is there for the next.
    node(&app, &id, "window.marker = 'kept'; document.getElementById('more').click()").await;
    let again = node(&app, &id, "[window.marker, document.querySelectorAll('#list li').length]").await;
    assert_eq!(again["result"], r#"["kept",2]"#, "{again}");
    assert_eq!(again["sessionId"], session.as_str());

    // Failing code: exit code 1, the error, stderr.
    let thrown = node(&app, &id, "console.error('about to fail'); throw new Error('nope')").await;
    assert_eq!((thrown["success"].as_bool(), thrown["exitCode"].as_i64()), (Some(false), Some(1)));
    assert!(thrown["error"].as_str().unwrap_or_default().contains("nope"), "{thrown}");
    assert!(thrown["stderr"].as_str().unwrap_or_default().contains("about to fail"), "{thrown}");

    // A runaway script is stopped; the session survives it.
    let (status, looped) = run(&app, &id, json!({"code": "while (true) {}", "timeout": 1})).await;
    assert_eq!(status, 200, "{looped}");
    assert_eq!(
        (looped["killed"].as_bool(), looped["success"].as_bool()),
        (Some(true), Some(false)),
        "{looped}"
    );
    assert_eq!(node(&app, &id, "window.marker").await["result"], "kept");

    // Other teams and unknown jobs.
    let path = format!("/v2/scrape/{id}/interact");
    let theirs = app.request_as("other-key", Method::POST, &path, Some(&json!({"code": "1"}))).await;
    assert_error(&theirs, 403, "FORBIDDEN");
    let (status, _) = app.request_as("other-key", Method::DELETE, &path, None).await;
    assert_eq!(status, 404, "another team cannot end it");
    let unknown = run(&app, "0192b2f0-0000-7000-8000-000000000000", json!({"code": "1"})).await;
    assert_eq!(unknown.0, 404, "{}", unknown.1);

    // Destroyed: duration and credits, then 410.
    let (status, ended) = app.request(Method::DELETE, &path, None).await;
    assert_eq!(status, 200, "{ended}");
    assert!(ended["sessionDurationMs"].as_u64().is_some_and(|ms| ms > 0), "{ended}");
    assert_eq!(ended["creditsBilled"], 2);
    let gone = run(&app, &id, json!({"code": "1"})).await;
    assert_error(&gone, 410, "SESSION_DESTROYED");
    let (status, _) = app.request(Method::DELETE, &path, None).await;
    assert_eq!(status, 404);
    let (status, _) = app.request(Method::DELETE, &format!("/v2/browser/{session}"), None).await;
    assert_eq!(status, 404, "already ended");
}

#[tokio::test]
async fn sessions_end_by_session_id_and_when_idle() {
    let site = FixtureSite::start();
    let app = TestServer::builder().settings(|s| s.browser.session_idle_secs = 2).start().await;
    let first = scrape_id(&app, site.url("/article"), json!({"waitFor": 10})).await;
    let session = node(&app, &first, "document.title").await["sessionId"].as_str().expect("id").to_owned();
    let (status, ended) = app.request(Method::DELETE, "/v2/browser", Some(&json!({"id": session}))).await;
    assert_eq!((status, ended["success"].as_bool()), (200, Some(true)), "{ended}");

    let second = scrape_id(&app, site.url("/article"), json!({})).await;
    let created = node(&app, &second, "document.title").await;
    let session = created["sessionId"].as_str().expect("id").to_owned();
    // The live view (which does not count as activity) closes with the session.
    let view = created["liveViewUrl"].as_str().expect("live view").to_owned();
    let client = reqwest::Client::builder().no_proxy().build().expect("client");
    wait_for("the idle session closes", Duration::from_secs(15), || async {
        let status = client.get(&view).send().await.expect("live view").status();
        (status == 404).then_some(())
    })
    .await;
    let gone = run(&app, &second, json!({"code": "1"})).await;
    assert_error(&gone, 410, "SESSION_DESTROYED");
    let (status, _) = app.request(Method::DELETE, &format!("/v2/interact/{session}"), None).await;
    assert_eq!(status, 404, "the idle session is already gone");
}

#[tokio::test]
async fn sessions_that_cannot_be_made() {
    let site = FixtureSite::start();
    let app = TestServer::builder()
        .key("poor", "poor-key")
        .settings(|s| {
            s.browser.max_sessions = 1;
            s.teams.insert("poor".into(), TeamSettings { credits: Some(1), ..Default::default() });
        })
        .start()
        .await;
    let zdr = scrape_id(&app, site.url("/article"), json!({"zeroDataRetention": true})).await;
    assert_error(&run(&app, &zdr, json!({"code": "1"})).await, 409, "REPLAY_CONTEXT_UNAVAILABLE");

    let a = scrape_id(&app, site.url("/article"), json!({})).await;
    let b = scrape_id(&app, site.url("/guides/soil"), json!({})).await;
    node(&app, &a, "1").await;
    assert_error(&run(&app, &b, json!({"code": "1"})).await, 429, "TOO_MANY_SESSIONS");

    let (status, scraped) = app
        .request_as("poor-key", Method::POST, "/v2/scrape", Some(&json!({"url": site.url("/article")})))
        .await;
    assert_eq!(status, 200, "{scraped}");
    let theirs = scraped["data"]["metadata"]["scrapeId"].as_str().expect("id");
    let path = format!("/v2/scrape/{theirs}/interact");
    let got = app.request_as("poor-key", Method::POST, &path, Some(&json!({"code": "1"}))).await;
    assert_eq!(got.0, 402, "{}", got.1);

    let prompt = run(&app, &a, json!({"prompt": "click the button"})).await;
    assert_error(&prompt, 503, "FEATURE_NOT_AVAILABLE");
    let python = run(&app, &a, json!({"code": "print(1)", "language": "python"})).await;
    let msg = assert_error(&python, 400, "FEATURE_NOT_AVAILABLE");
    assert!(msg.contains("language"), "{msg}");
    for (body, field) in [
        (json!({"code": "1", "timeout": 301}), "timeout"),
        (json!({"code": ""}), "code"),
        (json!({"code": "1", "language": "ruby"}), "language"),
        (json!({"code": "1", "prompt": "x"}), "prompt"),
        (json!({"code": "1", "colour": "red"}), "colour"),
    ] {
        let (status, got) = run(&app, &a, body).await;
        assert_eq!(status, 400, "{got}");
        assert!(got["error"].as_str().unwrap_or_default().contains(field), "{field}: {got}");
    }
}

#[tokio::test]
async fn the_live_view_shows_frames_and_forwards_clicks() {
    let site = FixtureSite::start();
    let app = TestServer::start().await;
    let id = scrape_id(&app, site.url("/js/interactive"), json!({"waitFor": 10})).await;
    let created = node(&app, &id, "1").await;
    let view = created["liveViewUrl"].as_str().expect("live view").to_owned();
    let control = created["interactiveLiveViewUrl"].as_str().expect("interactive view").to_owned();

    // The page, opened in a browser, shows frames of the session.
    let (status, watched) = app
        .scrape(json!({
            "url": view,
            "actions": [
                {"type": "wait", "milliseconds": 1500},
                {"type": "executeJavascript", "script": "const s = document.getElementById('screen'); return [Number(s.dataset.frames || 0), s.naturalWidth]"}
            ]
        }))
        .await;
    assert_eq!(status, 200, "{watched}");
    let seen = &watched["data"]["actions"]["javascriptReturns"][0]["value"];
    assert!(seen[0].as_u64().is_some_and(|n| n >= 1) && seen[1] == 1920, "frames shown: {seen}");

    let client = reqwest::Client::builder().no_proxy().build().expect("client");
    let frame = client.get(format!("{view}/frame")).send().await.expect("frame");
    assert_eq!(frame.headers()["content-type"], "image/jpeg");
    assert!(frame.bytes().await.expect("bytes").starts_with(&[0xFF, 0xD8]), "a JPEG");

    // Clicks go through the interactive view only.
    let spot = node(
        &app,
        &id,
        "const r = document.getElementById('more').getBoundingClientRect(); [(r.left + r.width / 2) / innerWidth, (r.top + r.height / 2) / innerHeight]",
    )
    .await;
    let spot: Vec<f64> = serde_json::from_str(spot["result"].as_str().expect("result")).expect("fractions");
    let click = json!({"type": "click", "x": spot[0], "y": spot[1]});
    let refused = client.post(format!("{view}/input")).json(&click).send().await.expect("input");
    assert_eq!(refused.status(), 403);
    let accepted = client.post(format!("{control}/input")).json(&click).send().await.expect("input");
    assert_eq!(accepted.status(), 204);
    assert_eq!(node(&app, &id, "document.querySelectorAll('#list li').length").await["result"], "1");

    let (status, _) = app.request(Method::DELETE, &format!("/v2/scrape/{id}/interact"), None).await;
    assert_eq!(status, 200);
    let after = client.get(&view).send().await.expect("view");
    assert_eq!(after.status(), 404, "the link expired with the session");
}

#[tokio::test]
async fn sessions_share_profiles_with_scrapes() {
    let site = FixtureSite::start();
    let app = TestServer::start().await;
    let saving = json!({"profile": {"name": "garden", "saveChanges": true}});
    let id = scrape_id(&app, site.url("/js/memory"), saving).await;
    // The cookie the scrape saved is in the session's page...
    let seen = node(&app, &id, "document.cookie").await;
    assert!(seen["result"].as_str().unwrap_or_default().contains("visited=yes"), "{seen}");
    // ...and what the session changes is saved when it ends.
    node(&app, &id, "localStorage.setItem('theme', 'light'); 'ok'").await;
    let (status, ended) = app.request(Method::DELETE, &format!("/v2/scrape/{id}/interact"), None).await;
    assert_eq!((status, ended["cleanupQueued"].as_bool()), (200, Some(true)), "{ended}");
    // The session's actor saves the profile as it closes, after answering.
    let reading = json!({"url": site.url("/js/memory"), "profile": {"name": "garden", "saveChanges": false}, "maxAge": 0});
    wait_for("the session's profile is saved", Duration::from_secs(20), || async {
        let (_, later) = app.scrape(reading.clone()).await;
        later["data"]["markdown"]
            .as_str()
            .is_some_and(|t| t.contains("returning visitor, theme light"))
            .then_some(())
    })
    .await;
}

#[tokio::test]
async fn a_dead_browser_ends_its_session_with_502() {
    let site = FixtureSite::start();
    let app = TestServer::start().await;
    let id = scrape_id(&app, site.url("/js/interactive"), json!({"waitFor": 10})).await;
    node(&app, &id, "1").await;
    assert!(crate::browser::kill_browsers_of(&app.data_dir()) > 0);
    let (status, got) =
        run(&app, &id, json!({"code": "await new Promise((r) => setTimeout(r, 5000)); 1"})).await;
    assert_eq!((status, got["code"].as_str()), (502, Some("BROWSER_ERROR")), "{got}");
    let gone = run(&app, &id, json!({"code": "1"})).await;
    assert_error(&gone, 410, "SESSION_DESTROYED");
    // A new scrape gets a new browser and a new session.
    let fresh = scrape_id(&app, site.url("/js/interactive"), json!({"waitFor": 10})).await;
    assert_eq!(node(&app, &fresh, "document.title").await["result"], "Interactive");
}

/// `existingSessionId` runs the code in the team's named session, which then serves the
/// scrape that named it; another team's or an unknown session is 404, a destroyed one 410.
#[tokio::test]
async fn existing_session_id_runs_in_the_named_session() {
    let site = FixtureSite::start();
    let app = TestServer::builder().key("other", "other-key").start().await;
    let a = scrape_id(&app, site.url("/js/interactive"), json!({"waitFor": 10})).await;
    let made = node(&app, &a, "window.marker = 'made for a'; location.pathname").await;
    let session = made["sessionId"].as_str().expect("sessionId").to_owned();

    // Another scrape of the team runs in the named session, not in a new one of its own.
    let b = scrape_id(&app, site.url("/article"), json!({})).await;
    let named =
        run(&app, &b, json!({"code": "[window.marker, location.pathname]", "existingSessionId": session}))
            .await;
    assert_eq!(named.0, 200, "{}", named.1);
    assert_eq!(named.1["result"], r#"["made for a","/js/interactive"]"#, "{}", named.1);
    assert_eq!(named.1["sessionId"], session.as_str());
    // ...which is now that scrape's session.
    let again = node(&app, &b, "window.marker").await;
    assert_eq!(
        (again["result"].as_str(), again["sessionId"].as_str()),
        (Some("made for a"), Some(session.as_str()))
    );
    let (status, _) = app.request(Method::GET, &format!("/v2/scrape/{b}"), None).await;
    assert_eq!(status, 200);

    // Not the team's, or no such session: 404; the other team's scrape stays theirs.
    let (status, scraped) = app
        .request_as("other-key", Method::POST, "/v2/scrape", Some(&json!({"url": site.url("/article")})))
        .await;
    assert_eq!(status, 200, "{scraped}");
    let theirs = scraped["data"]["metadata"]["scrapeId"].as_str().expect("id").to_owned();
    let path = format!("/v2/scrape/{theirs}/interact");
    let body = json!({"code": "window.marker", "existingSessionId": session});
    let refused = app.request_as("other-key", Method::POST, &path, Some(&body)).await;
    assert_eq!(assert_error(&refused, 404, "NOT_FOUND"), "Browser session not found.");
    let unknown =
        run(&app, &b, json!({"code": "1", "existingSessionId": "0192b2f0-0000-7000-8000-000000000000"}))
            .await;
    assert_error(&unknown, 404, "NOT_FOUND");
    let across = run(&app, &theirs, json!({"code": "1", "existingSessionId": session})).await;
    assert_error(&across, 403, "FORBIDDEN");
    for bad in [json!(""), json!(7), json!(["x"])] {
        let (status, got) = run(&app, &b, json!({"code": "1", "existingSessionId": bad})).await;
        assert_eq!(status, 400, "{got}");
        assert!(got["error"].as_str().unwrap_or_default().contains("existingSessionId"), "{got}");
    }

    // Destroyed: 410 by name.
    let (status, _) = app.request(Method::DELETE, &format!("/v2/browser/{session}"), None).await;
    assert_eq!(status, 200);
    let gone = run(&app, &a, json!({"code": "1", "existingSessionId": session})).await;
    assert_error(&gone, 410, "SESSION_DESTROYED");
}

/// `cleanupQueued` says whether ending the session left its tab to close: true for a live
/// session, false when its browser had died and there was nothing left to close.
#[tokio::test]
async fn cleanup_queued_says_whether_there_was_a_tab_to_close() {
    let site = FixtureSite::start();
    let app = TestServer::start().await;
    let first = scrape_id(&app, site.url("/article"), json!({"waitFor": 10})).await;
    node(&app, &first, "1").await;
    let (status, ended) = app.request(Method::DELETE, &format!("/v2/scrape/{first}/interact"), None).await;
    assert_eq!(status, 200, "{ended}");
    assert_eq!(
        (ended["cleanupQueued"].as_bool(), ended["creditsBilled"].as_u64()),
        (Some(true), Some(2)),
        "{ended}"
    );

    let second = scrape_id(&app, site.url("/article"), json!({"waitFor": 10})).await;
    let session = node(&app, &second, "1").await["sessionId"].as_str().expect("id").to_owned();
    assert!(crate::browser::kill_browsers_of(&app.data_dir()) > 0);
    let data = app.data_dir();
    wait_for("the killed browsers are gone", Duration::from_secs(10), || async {
        crate::browser::browsers_of(&data).is_empty().then_some(())
    })
    .await;
    let (status, ended) = app.request(Method::DELETE, &format!("/v2/browser/{session}"), None).await;
    assert_eq!(status, 200, "{ended}");
    assert_eq!(ended["cleanupQueued"], false, "nothing was left to close: {ended}");
    assert_eq!(ended["creditsBilled"], 2, "the session is billed all the same: {ended}");
}

/// Frames come from the session's actor while a run of the session is in progress.
#[tokio::test]
async fn the_live_view_stays_live_during_a_run() {
    let site = FixtureSite::start();
    let app = TestServer::start().await;
    let id = scrape_id(&app, site.url("/js/interactive"), json!({"waitFor": 10})).await;
    let view = node(&app, &id, "1").await["liveViewUrl"].as_str().expect("live view").to_owned();
    let client = reqwest::Client::builder().no_proxy().build().expect("client");
    let running = run(&app, &id, json!({"code": "await new Promise((r) => setTimeout(r, 6000)); 'done'"}));
    tokio::pin!(running);
    // A frame or two could come before the run starts; three in a row cannot all.
    let frames = async {
        for _ in 0..3 {
            let frame = client.get(format!("{view}/frame")).send().await.expect("frame");
            assert_eq!(frame.status(), 200);
            assert!(frame.bytes().await.expect("bytes").starts_with(&[0xFF, 0xD8]), "a JPEG");
        }
    };
    tokio::select! {
        () = frames => {}
        (status, got) = &mut running => panic!("the run ({status}: {got}) ended before three frames came"),
    }
    let (status, got) = running.await;
    assert_eq!((status, got["result"].as_str()), (200, Some("done")), "{got}");
}

#[tokio::test]
async fn a_prompt_is_carried_out_by_the_model_in_the_page() {
    let site = FixtureSite::start();
    let model = crate::common::openai::FakeModel::start(crate::common::openai::Behaviour::default());
    let app = model.server().start().await;
    let id = scrape_id(&app, site.url("/js/interactive"), json!({"formats": ["markdown"]})).await;
    let prompt = "Search the page for quokka and tell me what it says";
    let (status, got) = run(&app, &id, json!({"prompt": prompt, "timeout": 60})).await;
    assert_eq!(status, 200, "{got}");
    assert_eq!(got["success"], true, "{got}");
    assert_eq!(got["output"], "Searched for quokka", "{got}");
    let steps = got["stdout"].as_str().unwrap_or_default();
    assert!(
        steps.contains("1. type \"quokka\" into [")
            && steps.contains("2. press \"Enter\"")
            && steps.contains("3. answer"),
        "{steps}"
    );
    assert!(
        got["result"].as_str().unwrap_or_default().contains("Searched for quokka"),
        "the final snapshot: {got}"
    );
    // The page really changed: code in the same session sees it.
    let after = node(&app, &id, "document.getElementById('result').textContent").await;
    assert_eq!(after["result"], "Searched for quokka");
    assert_eq!(model.requests().len(), 3, "one model call per step");
    // A session an agent worked in is billed at the agent's rate (420 an hour, at least 7).
    let (status, ended) = app.request(Method::DELETE, &format!("/v2/scrape/{id}/interact"), None).await;
    assert_eq!(status, 200, "{ended}");
    assert_eq!(ended["creditsBilled"], 7, "{ended}");
}
