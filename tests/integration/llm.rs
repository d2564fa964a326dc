//! The language-model formats through the real server against a stand-in model server
//! speaking the OpenAI protocol (`common::openai`): `json` with a schema on a server with
//! and without structured output, an answer repaired, one still invalid, a timeout, a 429
//! with `Retry-After`, a streamed answer, missing usage; `summary`, `question`, `query`
//! (directQuote), `highlights` with invented quotes dropped, `onlyCleanContent`; the same
//! formats on crawl pages; credits and token usage; and the refusals without a model.

use std::time::Duration;

use serde_json::{Value, json};

use crate::common::openai::{Behaviour, FakeModel};
use crate::common::{FixtureSite, KEY, TestServer, assert_error};

const SCHEMA: &str =
    r#"{"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]}"#;

async fn server_with(model: &FakeModel, tune: impl FnOnce(&mut ferrocrawl::config::Settings)) -> TestServer {
    model
        .server()
        .settings(move |s| {
            s.llm.api_key = "model-secret".into();
            tune(s);
        })
        .start()
        .await
}

fn json_format() -> Value {
    json!({"type": "json", "schema": serde_json::from_str::<Value>(SCHEMA).expect("schema"), "prompt": "the title"})
}

async fn scrape_ok(app: &TestServer, body: Value) -> Value {
    let (status, answer) = app.scrape(body).await;
    assert_eq!(status, 200, "{answer}");
    answer["data"].clone()
}

#[tokio::test]
async fn json_is_extracted_with_the_schema_and_billed() {
    let (site, model) = (FixtureSite::start(), FakeModel::start(Behaviour::default()));
    let app = server_with(&model, |_| {}).await;
    let data = scrape_ok(&app, json!({"url": site.url("/article"), "formats": [json_format()]})).await;
    assert_eq!(data["json"], json!({"title": "Growing Tomatoes at Home"}), "{data}");
    assert!(data.get("markdown").is_none(), "markdown was not asked for: {data}");
    assert_eq!(data["metadata"]["creditsUsed"], 5);
    assert!(data.get("warning").is_none(), "{data}");
    let asked = model.requests();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0]["model"], "test-model");
    assert_eq!(asked[0]["response_format"]["type"], "json_schema");
    assert_eq!(asked[0]["response_format"]["json_schema"]["schema"]["required"], json!(["title"]));
    assert!(asked[0]["messages"][1]["content"].as_str().unwrap_or_default().contains("Tomatoes are among"));
    assert_eq!(model.authorizations()[0].as_deref(), Some("Bearer model-secret"));
    // The stand-in reported 120 tokens for the call.
    let (_, usage) = app.request(reqwest::Method::GET, "/v2/team/token-usage/historical", None).await;
    assert_eq!(usage["periods"][0]["tokensUsed"], 120, "{usage}");
    let (_, by_key) =
        app.request(reqwest::Method::GET, "/v2/team/token-usage/historical?byApiKey=true", None).await;
    let row = &by_key["periods"][0];
    assert_eq!(row["tokensUsed"], 120, "{by_key}");
    let label = row["apiKey"].as_str().expect("key label");
    assert!(label.ends_with(&KEY[KEY.len() - 6..]) && !label.contains(KEY), "{label}");
}

#[tokio::test]
async fn a_server_without_structured_output_is_asked_in_weaker_modes() {
    let site = FixtureSite::start();
    let model =
        FakeModel::start(Behaviour { json_schema: false, json_object: false, ..Behaviour::default() });
    let app = server_with(&model, |_| {}).await;
    let body = json!({"url": site.url("/article"), "formats": [json_format()], "maxAge": 0});
    let data = scrape_ok(&app, body.clone()).await;
    assert_eq!(data["json"]["title"], "Growing Tomatoes at Home", "{data}");
    assert_eq!(model.formats_asked(), ["json_schema", "json_object", "none"]);
    let plain = model.requests()[2]["messages"][0]["content"].as_str().unwrap_or_default().to_owned();
    assert!(plain.contains("\"title\"") && plain.contains("JSON value alone"), "{plain}");
    // The server remembers what the model server accepts.
    scrape_ok(&app, body).await;
    assert_eq!(model.formats_asked()[3..], ["none"]);
}

#[tokio::test]
async fn an_answer_that_is_not_json_is_repaired_once() {
    let (site, model) = (FixtureSite::start(), FakeModel::start(Behaviour::default()));
    model.queue(&["Sure! The title is Growing Tomatoes.", r#"{"title": "Growing Tomatoes at Home"}"#]);
    let app = server_with(&model, |_| {}).await;
    let data = scrape_ok(&app, json!({"url": site.url("/article"), "formats": [json_format()]})).await;
    assert_eq!(data["json"]["title"], "Growing Tomatoes at Home");
    let warning = data["warning"].as_str().unwrap_or_default();
    assert!(warning.contains("repaired"), "{data}");
    let retry = &model.requests()[1]["messages"];
    assert_eq!(retry.as_array().map(Vec::len), Some(4), "the retry carries the first answer: {retry}");
    assert!(retry[3]["content"].as_str().unwrap_or_default().contains("no JSON value"));
}

#[tokio::test]
async fn an_answer_invalid_twice_is_returned_with_the_errors() {
    let (site, model) = (FixtureSite::start(), FakeModel::start(Behaviour::default()));
    model.queue(&[r#"{"title": 5}"#, r#"{"title": 6}"#]);
    let app = server_with(&model, |_| {}).await;
    let data = scrape_ok(&app, json!({"url": site.url("/article"), "formats": [json_format()]})).await;
    assert_eq!(data["json"], json!({"title": 6}));
    let warning = data["warning"].as_str().unwrap_or_default();
    assert!(warning.contains("still does not match") && warning.contains("/title"), "{data}");
    let retry = model.requests()[1]["messages"][3]["content"].as_str().unwrap_or_default().to_owned();
    assert!(retry.contains("/title"), "the retry names the error: {retry}");
}

#[tokio::test]
async fn a_model_that_does_not_answer_in_time_fails_the_scrape() {
    let site = FixtureSite::start();
    let model = FakeModel::start(Behaviour { delay: Some(Duration::from_secs(5)), ..Behaviour::default() });
    let app = server_with(&model, |s| s.llm.timeout_ms = 300).await;
    let got = app.scrape(json!({"url": site.url("/article"), "formats": ["summary"]})).await;
    let message = assert_error(&got, 502, "LLM_ERROR");
    assert!(message.contains("300 ms"), "{message}");
}

#[tokio::test]
async fn a_429_is_waited_out_once() {
    let site = FixtureSite::start();
    let model = FakeModel::start(Behaviour { rate_limit_first: Some(1), ..Behaviour::default() });
    let app = server_with(&model, |_| {}).await;
    let started = std::time::Instant::now();
    let data = scrape_ok(&app, json!({"url": site.url("/article"), "formats": ["summary"]})).await;
    assert_eq!(data["summary"], "A page about Growing Tomatoes at Home.");
    assert_eq!(model.requests().len(), 2);
    assert!(started.elapsed() >= Duration::from_secs(1), "Retry-After was honoured");
}

#[tokio::test]
async fn streamed_answers_and_missing_usage_are_handled() {
    let site = FixtureSite::start();
    let model = FakeModel::start(Behaviour { streams: true, usage: false, ..Behaviour::default() });
    let app = server_with(&model, |_| {}).await;
    let data =
        scrape_ok(&app, json!({"url": site.url("/article"), "formats": ["markdown", "summary"]})).await;
    assert_eq!(data["summary"], "A page about Growing Tomatoes at Home.");
    assert!(data["markdown"].as_str().unwrap_or_default().contains("Tomatoes are among"));
    // Without usage in the answer, the server counts the tokens itself.
    let (_, usage) = app.request(reqwest::Method::GET, "/v2/team/token-usage/historical", None).await;
    let used = usage["periods"][0]["tokensUsed"].as_u64().unwrap_or_default();
    assert!(used > 100, "the page alone is over 100 tokens: {usage}");
}

#[tokio::test]
async fn questions_quotes_and_highlights_are_answered_from_the_page() {
    let (site, model) = (FixtureSite::start(), FakeModel::start(Behaviour::default()));
    let app = server_with(&model, |_| {}).await;
    let formats = json!([
        {"type": "question", "question": "How much fruit does a plant yield?"},
        {"type": "highlights", "query": "watering and sun"},
    ]);
    let data = scrape_ok(&app, json!({"url": site.url("/article"), "formats": formats})).await;
    assert_eq!(data["answer"], "About Growing Tomatoes at Home: How much fruit does a plant yield?");
    let highlights = data["highlights"].as_str().unwrap_or_default();
    assert!(highlights.contains("With enough sun, steady watering"), "{data}");
    assert!(!highlights.contains("never said"), "an invented quote was kept: {data}");
    assert!(data["warning"].as_str().unwrap_or_default().contains("not verbatim"), "{data}");
    assert_eq!(data["metadata"]["creditsUsed"], 9);
    let quote = json!([{"type": "query", "prompt": "Harvest timing", "mode": "directQuote"}]);
    let data = scrape_ok(&app, json!({"url": site.url("/article"), "formats": quote})).await;
    assert!(data["answer"].as_str().unwrap_or_default().starts_with("Harvest when the fruit"), "{data}");
}

#[tokio::test]
async fn only_clean_content_cleans_or_says_why_not() {
    let (site, model) = (FixtureSite::start(), FakeModel::start(Behaviour::default()));
    let app = server_with(&model, |_| {}).await;
    let body = json!({"url": site.url("/article"), "onlyMainContent": false, "blockAds": false, "onlyCleanContent": true});
    let data = scrape_ok(&app, body).await;
    let markdown = data["markdown"].as_str().unwrap_or_default();
    assert!(
        markdown.contains("Tomatoes are among") && !markdown.to_lowercase().contains("cookie"),
        "{markdown}"
    );
    let small = server_with(&model, |s| s.llm.max_output_tokens = 50).await;
    let body = json!({"url": site.url("/article"), "onlyMainContent": false, "blockAds": false, "onlyCleanContent": true});
    let data = scrape_ok(&small, body).await;
    assert!(data["markdown"].as_str().unwrap_or_default().to_lowercase().contains("cookie"));
    assert!(data["warning"].as_str().unwrap_or_default().contains("onlyCleanContent was skipped"), "{data}");
    let zdr = json!({"url": site.url("/article"), "onlyCleanContent": true, "zeroDataRetention": true});
    let message = assert_error(&app.scrape(zdr).await, 400, "BAD_REQUEST");
    assert!(message.contains("onlyCleanContent"), "{message}");
}

#[tokio::test]
async fn crawl_pages_carry_the_model_formats() {
    let (site, model) = (FixtureSite::start(), FakeModel::start(Behaviour::default()));
    let app = server_with(&model, |_| {}).await;
    let id = app
        .start_crawl(json!({"url": site.url("/article"), "limit": 2, "scrapeOptions": {"formats": ["summary", "markdown"]}}))
        .await;
    let done = app.wait_job(&format!("/v2/crawl/{id}"), Duration::from_secs(30)).await;
    let pages = done["data"].as_array().cloned().unwrap_or_default();
    assert!(!pages.is_empty(), "{done}");
    for page in &pages {
        assert!(page["summary"].as_str().unwrap_or_default().starts_with("A page about"), "{page}");
    }
}

#[tokio::test]
async fn without_a_model_the_formats_name_the_setting() {
    let site = FixtureSite::start();
    let app = TestServer::start().await;
    for format in [json_format(), json!("summary"), json!({"type": "highlights", "query": "x"})] {
        let got = app.scrape(json!({"url": site.url("/article"), "formats": [format]})).await;
        let message = assert_error(&got, 400, "FEATURE_NOT_AVAILABLE");
        assert!(message.contains("llm.base_url"), "{message}");
    }
}

#[tokio::test]
async fn crawl_options_come_from_the_prompt() {
    let model = FakeModel::start(Behaviour::default());
    let with_model = server_with(&model, |_| {}).await;
    let body = json!({"url": "https://example.com", "prompt": "the /blog section, 25 pages"});
    let (status, answer) =
        with_model.request(reqwest::Method::POST, "/v2/crawl/params-preview", Some(&body)).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["data"]["url"], "https://example.com/");
    assert_eq!(answer["data"]["includePaths"], json!(["^/blog(/.*)?$"]));
    assert_eq!(answer["data"]["limit"], 25);
    assert!(answer["data"].get("allowSubdomains").is_none(), "nulls are left out: {answer}");
    let broken = json!({"url": "https://example.com", "prompt": "something broken"});
    let got = with_model.request(reqwest::Method::POST, "/v2/crawl/params-preview", Some(&broken)).await;
    let message = assert_error(&got, 400, "BAD_REQUEST");
    assert!(message.contains("rephras") && message.contains("includePaths"), "{message}");
    // Without a model: the rule-based reading, said in the warning.
    let plain = TestServer::start().await;
    let body = json!({"url": "https://example.com", "prompt": "only /docs, skip /docs/old, at most 40 pages, no subdomains"});
    let (status, answer) =
        plain.request(reqwest::Method::POST, "/v2/crawl/params-preview", Some(&body)).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["data"]["includePaths"], json!(["^/docs(/.*)?$"]));
    assert_eq!(answer["data"]["excludePaths"], json!(["^/docs/old(/.*)?$"]));
    assert_eq!(answer["data"]["limit"], 40);
    assert_eq!(answer["data"]["allowSubdomains"], false);
    assert!(answer["warning"].as_str().unwrap_or_default().contains("llm.base_url"), "{answer}");
    let missing = plain
        .request(
            reqwest::Method::POST,
            "/v2/crawl/params-preview",
            Some(&json!({"url": "https://example.com"})),
        )
        .await;
    assert!(assert_error(&missing, 400, "BAD_REQUEST").contains("`prompt`"));
    // A crawl's prompt needs the model; explicit options win over it.
    let site = FixtureSite::start();
    // The start page answers slowly, so the crawl is still active when its options are read.
    let crawl = json!({"url": site.url("/slow"), "prompt": "/guides, 1 page", "limit": 3});
    let got = plain.request(reqwest::Method::POST, "/v2/crawl", Some(&crawl)).await;
    assert!(assert_error(&got, 400, "FEATURE_NOT_AVAILABLE").contains("llm.base_url"));
    let id = with_model.start_crawl(crawl).await;
    let (_, active) = with_model.request(reqwest::Method::GET, "/v2/crawl/active", None).await;
    let options = active["crawls"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["id"] == id.as_str()))
        .map(|c| c["options"].clone());
    let options = options.unwrap_or_else(|| panic!("the crawl is active: {active}"));
    assert_eq!(options["includePaths"], json!(["^/guides(/.*)?$"]), "the prompt's paths: {options}");
    assert_eq!(options["limit"], 3, "the explicit limit won over the prompt's 1: {options}");
}

#[tokio::test]
async fn documentation_questions_are_answered_with_evidence() {
    let plain = TestServer::start().await;
    let question = json!({"question": "Which setting limits the calls in flight to the language model?"});
    let (status, answer) =
        plain.request(reqwest::Method::POST, "/v2/support/docs-search", Some(&question)).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["evidence"][0]["pathOrUrl"], "config/default.toml#llm", "{answer}");
    assert!(answer["answer"].as_str().unwrap_or_default().contains("max_concurrency"), "{answer}");
    assert!(answer["warning"].as_str().unwrap_or_default().contains("extractive"), "{answer}");
    assert_eq!(answer["usage"]["totalTokens"], 0);
    assert!(answer["requestId"].as_str().is_some() && answer["durationMs"].is_u64());
    // The guides in docs/ are read too.
    let guide = json!({"question": "Which DevTools commands does the cdpUrl refuse?"});
    let (status, answer) =
        plain.request(reqwest::Method::POST, "/v2/support/docs-search", Some(&guide)).await;
    assert_eq!(status, 200, "{answer}");
    let cited = answer["evidence"][0]["pathOrUrl"].as_str().unwrap_or_default();
    assert!(cited.starts_with("docs/browser-sessions.md"), "{answer}");
    assert!(answer["answer"].as_str().unwrap_or_default().contains("setFileInputFiles"), "{answer}");
    let model = FakeModel::start(Behaviour::default());
    let app = server_with(&model, |_| {}).await;
    let (status, answer) =
        app.request(reqwest::Method::POST, "/v2/support/docs-search", Some(&question)).await;
    assert_eq!(status, 200, "{answer}");
    assert!(
        answer["answer"].as_str().unwrap_or_default().starts_with("According to the documentation"),
        "{answer}"
    );
    assert_eq!(answer["evidence"].as_array().map(Vec::len), Some(1), "{answer}");
    assert_eq!(answer["usage"]["totalTokens"], 120);
    let excerpts = model.requests()[0]["messages"][1]["content"].as_str().unwrap_or_default().to_owned();
    assert!(excerpts.starts_with("[1] config/default.toml#llm"), "{excerpts}");
    let empty =
        app.request(reqwest::Method::POST, "/v2/support/docs-search", Some(&json!({"question": ""}))).await;
    assert!(assert_error(&empty, 400, "BAD_REQUEST").contains("`question`"));
}

#[tokio::test]
async fn change_tracking_compares_what_the_model_extracted() {
    let (site, model) = (FixtureSite::start(), FakeModel::start(Behaviour::default()));
    model.queue(&[r#"{"price": 10, "name": "Widget"}"#, r#"{"price": 12, "name": "Widget"}"#]);
    let app = server_with(&model, |_| {}).await;
    let tracking = json!({"type": "changeTracking", "modes": ["json", "git-diff"], "prompt": "the price"});
    let body = json!({"url": site.url("/changing"), "formats": ["markdown", tracking]});
    let first = scrape_ok(&app, body.clone()).await;
    assert_eq!(first["changeTracking"]["changeStatus"], "new", "{first}");
    assert_eq!(first["changeTracking"]["json"]["price"], json!({"previous": null, "current": 10}));
    assert_eq!(first["metadata"]["creditsUsed"], 5);
    site.set_version(2);
    let second = scrape_ok(&app, body).await;
    assert_eq!(second["changeTracking"]["changeStatus"], "changed", "{second}");
    assert_eq!(second["changeTracking"]["json"], json!({"price": {"previous": 10, "current": 12}}));
    assert!(second["changeTracking"]["diff"].as_str().is_some(), "git-diff too: {second}");
    assert!(second.get("json").is_none(), "the json format was not asked for: {second}");
}

#[tokio::test]
async fn uploaded_files_get_the_model_formats_too() {
    let model = FakeModel::start(Behaviour::default());
    let app = server_with(&model, |_| {}).await;
    let docx = ferrocrawl::documents::samples::docx(
        r#"<w:p><w:r><w:t>Sow kale in early spring.</w:t></w:r></w:p>"#,
        "Seeds",
        "A gardener",
    );
    let options = json!({"formats": ["summary"]}).to_string();
    let parts = [("file", Some("seeds.docx"), None, &docx[..]), ("options", None, None, options.as_bytes())];
    let (status, body) = crate::parse::upload(&app, &parts).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["summary"], "A page about Seeds.", "{body}");
    assert!(body["data"].get("markdown").is_none(), "{body}");
    let page = model.requests()[0]["messages"][1]["content"].as_str().unwrap_or_default().to_owned();
    assert!(page.contains("Sow kale in early spring."), "{page}");
}

#[tokio::test]
async fn search_results_are_scraped_with_the_model_formats_and_the_key_file_is_read() {
    let (site, model) = (FixtureSite::start(), FakeModel::start(Behaviour::default()));
    let key_dir = tempfile::tempdir().expect("tempdir");
    let key_file = key_dir.path().join("model-key");
    std::fs::write(&key_file, "from-a-file\n").expect("write key");
    let app = server_with(&model, move |s| {
        s.llm.api_key = String::new();
        s.llm.api_key_file = Some(key_file);
    })
    .await;
    let (status, _) = app.scrape(json!({"url": site.url("/article")})).await;
    assert_eq!(status, 200);
    let found = crate::common::wait_for("the page in the index", Duration::from_secs(20), || async {
        let body = json!({"query": "tomatoes gardener", "scrapeOptions": {"formats": ["summary"]}});
        let (status, found) = app.request(reqwest::Method::POST, "/v2/search", Some(&body)).await;
        assert_eq!(status, 200, "{found}");
        found["data"]["web"].as_array().filter(|w| !w.is_empty()).cloned()
    })
    .await;
    assert_eq!(found[0]["summary"], "A page about Growing Tomatoes at Home.", "{found:?}");
    assert_eq!(model.authorizations()[0].as_deref(), Some("Bearer from-a-file"));
}
