//! Extract and agent jobs through the real server and a stand-in model server: pages
//! given or found in the search index, values merged, status, credits and tokens, cancel,
//! a job that survives a restart, and the refusals without a model.

use std::time::Duration;

use serde_json::{Value, json};

use crate::common::openai::{Behaviour, FakeModel};
use crate::common::searchsite::FakeSearxng;
use crate::common::{FixtureSite, TestServer, assert_error, wait_for};

async fn finished(app: &TestServer, path: &str) -> Value {
    wait_for(path, Duration::from_secs(30), || async {
        let (status, body) = app.request(reqwest::Method::GET, path, None).await;
        assert_eq!(status, 200, "{body}");
        (body["status"] != "processing").then_some(body)
    })
    .await
}

#[tokio::test]
async fn extract_merges_the_values_of_every_page() {
    let (site, model) = (FixtureSite::start(), FakeModel::start(Behaviour::default()));
    model.queue(&[r#"{"topics": ["tomatoes"]}"#, r#"{"topics": ["tomatoes", "compost"]}"#]);
    let app = model.server().settings(|s| s.llm.job_ttl_secs = 3_600).start().await;
    let schema =
        json!({"type": "object", "properties": {"topics": {"type": "array", "items": {"type": "string"}}}});
    let body = json!({"urls": [site.url("/article"), site.url("/short-post"), "not a url"], "prompt": "the topics", "schema": schema});
    let before = ferrocrawl::model::time::now_ms();
    let (status, started) = app.request(reqwest::Method::POST, "/v2/extract", Some(&body)).await;
    let after = ferrocrawl::model::time::now_ms();
    assert_eq!(status, 200, "{started}");
    assert_eq!(started["invalidURLs"], json!(["not a url"]));
    let id = started["id"].as_str().expect("id").to_owned();
    let done = finished(&app, &format!("/v2/extract/{id}")).await;
    assert_eq!(done["status"], "completed", "{done}");
    let mut topics: Vec<String> = serde_json::from_value(done["data"]["topics"].clone()).expect("topics");
    topics.sort();
    assert_eq!(topics, ["compost", "tomatoes"], "merged without repeats: {done}");
    assert_eq!(done["sources"]["topics"].as_array().map(Vec::len), Some(2), "{done}");
    assert_eq!(done["tokensUsed"], 240, "two calls of 120 tokens: {done}");
    assert_eq!(done["creditsUsed"], 16, "15 tokens a credit, rounded up: {done}");
    // Kept for `llm.job_ttl_secs` after it was accepted.
    let kept = |ms: u64| ferrocrawl::model::time::iso_ms(ms + 3_600_000);
    let expires = done["expiresAt"].as_str().expect("expiresAt");
    assert!((kept(before).as_str()..=kept(after).as_str()).contains(&expires), "{done}");
    // The task the model got carries the prompt.
    let task = model.requests()[0]["messages"][0]["content"].as_str().unwrap_or_default().to_owned();
    assert!(task.contains("What to extract: the topics"), "{task}");
    // Another team does not see it; an agent id route does not serve it.
    let (status, _) = app.request(reqwest::Method::GET, &format!("/v2/agent/{id}"), None).await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn a_prompt_alone_reads_the_pages_the_index_finds() {
    let (site, model) = (FixtureSite::start(), FakeModel::start(Behaviour::default()));
    let app = model.server().start().await;
    let (status, _) = app.scrape(json!({"url": site.url("/article")})).await;
    assert_eq!(status, 200);
    wait_for("the page in the index", Duration::from_secs(20), || async {
        let (_, found) = app
            .request(reqwest::Method::POST, "/v2/search", Some(&json!({"query": "tomatoes gardener"})))
            .await;
        (found["data"]["web"].as_array().is_some_and(|w| !w.is_empty())).then_some(())
    })
    .await;
    let body = json!({"prompt": "What do tomatoes need from a gardener?"});
    let (status, started) = app.request(reqwest::Method::POST, "/v2/agent", Some(&body)).await;
    assert_eq!(status, 200, "{started}");
    let id = started["id"].as_str().expect("id").to_owned();
    let done = finished(&app, &format!("/v2/agent/{id}")).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["model"], "spark-1-pro");
    assert_eq!(done["sources"], json!({"title": [site.url("/article")]}), "{done}");
    assert_eq!(done["data"]["title"], "Growing Tomatoes at Home", "{done}");
}

#[tokio::test]
async fn a_job_survives_a_restart_and_can_be_cancelled() {
    let site = FixtureSite::start();
    let slow = FakeModel::start(Behaviour { delay: Some(Duration::from_secs(30)), ..Behaviour::default() });
    let app = slow.server().start().await;
    let body = json!({"urls": [site.url("/article")], "prompt": "the title"});
    let (_, started) = app.request(reqwest::Method::POST, "/v2/extract", Some(&body)).await;
    let id = started["id"].as_str().expect("id").to_owned();
    let data = app.stop();
    let model = FakeModel::start(Behaviour::default());
    let app = model.server_on(data).start().await;
    let done = finished(&app, &format!("/v2/extract/{id}")).await;
    assert_eq!(done["status"], "completed", "run again after the restart: {done}");
    assert_eq!(done["data"]["title"], "Growing Tomatoes at Home");
    // Cancelling.
    let stuck = slow.server().start().await;
    let (_, started) = stuck
        .request(
            reqwest::Method::POST,
            "/v2/agent",
            Some(&json!({"prompt": "x", "urls": [site.url("/article")]})),
        )
        .await;
    let id = started["id"].as_str().expect("id").to_owned();
    let (status, cancelled) = stuck.request(reqwest::Method::DELETE, &format!("/v2/agent/{id}"), None).await;
    assert_eq!((status, cancelled), (200, json!({"success": true})));
    let (_, body) = stuck.request(reqwest::Method::GET, &format!("/v2/agent/{id}"), None).await;
    assert_eq!(body["status"], "failed", "{body}");
    assert_eq!(body["error"], "The job was cancelled.");
}

/// A server stopped while a job's page is still being read runs the job again on its next
/// start, reading the page anew.
#[tokio::test]
async fn a_job_stopped_mid_read_runs_again_after_the_restart() {
    let (site, model) = (FixtureSite::start(), FakeModel::start(Behaviour::default()));
    let app = model.server().start().await;
    let body = json!({"urls": [site.url("/slow")], "prompt": "the text"});
    let (_, started) = app.request(reqwest::Method::POST, "/v2/extract", Some(&body)).await;
    let id = started["id"].as_str().expect("id").to_owned();
    wait_for("the page read to begin", Duration::from_secs(10), || async {
        (site.hits("/slow") > 0).then_some(())
    })
    .await;
    let data = app.stop();
    let app = model.server_on(data).start().await;
    let done = finished(&app, &format!("/v2/extract/{id}")).await;
    assert_eq!(done["status"], "completed", "run again after the restart: {done}");
    assert_eq!(site.hits("/slow"), 2, "the page is read again by the restarted server");
}

#[tokio::test]
async fn requests_are_checked() {
    let model = FakeModel::start(Behaviour::default());
    let app = model.server().start().await;
    let post = |body: Value, path: &'static str| {
        let app = &app;
        async move { app.request(reqwest::Method::POST, path, Some(&body)).await }
    };
    assert!(
        assert_error(&post(json!({}), "/v2/extract").await, 400, "BAD_REQUEST")
            .contains("`urls` or `prompt`")
    );
    assert!(
        assert_error(&post(json!({"urls": []}), "/v2/agent").await, 400, "BAD_REQUEST").contains("`prompt`")
    );
    let bad_schema = json!({"prompt": "x", "schema": {"type": 3}});
    assert!(assert_error(&post(bad_schema, "/v2/extract").await, 400, "BAD_REQUEST").contains("`schema`"));
    let bad_model = json!({"prompt": "x", "model": "gpt"});
    assert!(assert_error(&post(bad_model, "/v2/agent").await, 400, "BAD_REQUEST").contains("`model`"));
    let plain = TestServer::start().await;
    let got = plain.request(reqwest::Method::POST, "/v2/extract", Some(&json!({"prompt": "x"}))).await;
    assert!(assert_error(&got, 400, "FEATURE_NOT_AVAILABLE").contains("llm.base_url"));
}

#[tokio::test]
async fn job_events_reach_the_webhook() {
    let site = FixtureSite::start();
    let hooks = crate::common::Receiver::start();
    let model = FakeModel::start(Behaviour::default());
    let fast_delivery = |s: &mut ferrocrawl::config::Settings| s.webhooks.poll_ms = 100;
    let app = model.server().settings(fast_delivery).start().await;
    let webhook = json!({"url": hooks.url, "metadata": {"run": "7"}});
    let body = json!({"urls": [site.url("/article")], "prompt": "the title", "webhook": webhook});
    let (status, started) = app.request(reqwest::Method::POST, "/v2/extract", Some(&body)).await;
    assert_eq!(status, 200, "{started}");
    let id = started["id"].as_str().expect("id").to_owned();
    let events = hooks.wait_for(2, Duration::from_secs(30)).await;
    let kinds: Vec<&str> = events.iter().map(|e| e.body["type"].as_str().unwrap_or_default()).collect();
    assert_eq!(kinds, ["extract.started", "extract.completed"]);
    for event in &events {
        assert_eq!((&event.body["id"], &event.body["metadata"]), (&json!(id), &json!({"run": "7"})));
    }
    assert_eq!(events[1].body["data"][0]["title"], "Growing Tomatoes at Home", "{}", events[1].body);

    // An agent's events, filtered: only its cancellation.
    let slow = FakeModel::start(Behaviour { delay: Some(Duration::from_secs(30)), ..Behaviour::default() });
    let stuck = slow.server().settings(fast_delivery).start().await;
    let webhook = json!({"url": hooks.url, "events": ["agent.cancelled"]});
    let body = json!({"prompt": "x", "urls": [site.url("/article")], "webhook": webhook});
    let (status, started) = stuck.request(reqwest::Method::POST, "/v2/agent", Some(&body)).await;
    assert_eq!(status, 200, "{started}");
    let agent = started["id"].as_str().expect("id").to_owned();
    let (status, _) = stuck.request(reqwest::Method::DELETE, &format!("/v2/agent/{agent}"), None).await;
    assert_eq!(status, 200);
    let events = hooks.wait_for(3, Duration::from_secs(30)).await;
    assert_eq!(
        (events[2].body["type"].as_str(), events[2].body["id"].as_str()),
        (Some("agent.cancelled"), Some(agent.as_str()))
    );

    // Each kind of job names its own events.
    let wrong = json!({"prompt": "x", "webhook": {"url": hooks.url, "events": ["page"]}});
    let got = app.request(reqwest::Method::POST, "/v2/extract", Some(&wrong)).await;
    assert!(assert_error(&got, 400, "BAD_REQUEST").contains("started, completed, failed"));
}

#[tokio::test]
async fn a_site_pattern_reads_the_pages_under_its_path() {
    let site = crate::common::CrawlSite::start(0);
    let model = FakeModel::start(Behaviour::default());
    let app = model.server().start().await;
    let body = json!({"urls": [site.url("/blog/*")], "prompt": "What do the blog posts say?"});
    let (status, started) = app.request(reqwest::Method::POST, "/v2/extract", Some(&body)).await;
    assert_eq!(status, 200, "{started}");
    let id = started["id"].as_str().expect("id").to_owned();
    let done = finished(&app, &format!("/v2/extract/{id}")).await;
    assert_eq!(done["status"], "completed", "{done}");
    let read: Vec<String> = model.requests().iter().map(|r| r["messages"].to_string()).collect();
    assert!(read.len() >= 3, "the blog's pages: {}", read.len());
    for title in ["Post one", "Post two"] {
        assert!(read.iter().any(|m| m.contains(title)), "{title} was read");
    }
    assert!(
        !read.iter().any(|m| m.contains("About the site") || m.contains("Documentation index")),
        "only pages under /blog/"
    );
}

#[tokio::test]
async fn web_search_adds_the_pages_the_web_provider_finds() {
    let (site, model) = (FixtureSite::start(), FakeModel::start(Behaviour::default()));
    let searx = FakeSearxng::answering(vec![site.url("/short-post")]);
    let searx_url = searx.url.clone();
    let app = model
        .server()
        .settings(move |s| {
            s.search.providers = vec!["local".into(), "searxng".into()];
            s.search.searxng_url = searx_url;
        })
        .start()
        .await;
    let extract = |body: Value| {
        let app = &app;
        async move {
            let (status, started) = app.request(reqwest::Method::POST, "/v2/extract", Some(&body)).await;
            assert_eq!(status, 200, "{started}");
            let id = started["id"].as_str().expect("id").to_owned();
            finished(app, &format!("/v2/extract/{id}")).await
        }
    };
    // Without web search, the given page is all that is read and the web is not asked.
    let given = json!({"urls": [site.url("/article")], "prompt": "the title", "showSources": true});
    let done = extract(given.clone()).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["sources"], json!({"title": [site.url("/article")]}), "{done}");
    assert!(searx.asked().is_empty(), "the web provider was asked: {:?}", searx.asked());
    // With it, the web provider's page is read as well, after the given one.
    let mut with_web = given;
    with_web["enableWebSearch"] = json!(true);
    let done = extract(with_web.clone()).await;
    assert_eq!(done["status"], "completed", "{done}");
    let read: Vec<&str> =
        done["sources"]["title"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    assert!(read.contains(&site.url("/short-post").as_str()), "the web's page was read: {done}");
    let asked = searx.asked();
    assert!(!asked.is_empty(), "the web provider was asked");
    assert!(asked.iter().all(|q| q.contains(&("q".into(), "title".into()))), "the prompt's words: {asked:?}");

    // A server with no web provider says so.
    let local_only = model.server().start().await;
    let (status, started) = local_only.request(reqwest::Method::POST, "/v2/extract", Some(&with_web)).await;
    assert_eq!(status, 200, "{started}");
    let id = started["id"].as_str().expect("id").to_owned();
    let done = finished(&local_only, &format!("/v2/extract/{id}")).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert!(done["warning"].as_str().unwrap_or_default().contains("no web search provider"), "{done}");
}
