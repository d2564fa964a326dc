//! The language-model features in a cluster of real child processes: an extract job
//! accepted by one node is read through another (passed to its owner by the id's tag), the
//! tokens a team used are summed over the nodes that made the calls (and still counted
//! while the node that made them is down), and an agent is
//! cancelled through another node than its owner, which tells its webhook; a crawl's model
//! formats are made by the node of its site, and the prompt-reading routes answer on any
//! node.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

use crate::cluster::{Node, call, finished_crawl, metric, owner_of, site_owner};
use crate::common::openai::{Behaviour, FakeModel};
use crate::common::{FixtureSite, wait_for};

/// The fixture site and a stand-in model answering normally, with the model's address.
fn site_and_model() -> (FixtureSite, FakeModel, String) {
    let model = FakeModel::start(Behaviour::default());
    let url = model.url();
    (FixtureSite::start(), model, url)
}

/// What a node needs to call the stand-in model at `url`.
fn model_env(url: &str) -> [(&'static str, &str); 2] {
    [("FERROCRAWL_LLM__BASE_URL", url), ("FERROCRAWL_LLM__MODEL", "test-model")]
}

#[tokio::test]
async fn model_jobs_and_token_use_hold_for_the_whole_cluster() {
    let (site, model, url) = site_and_model();
    let env = model_env(&url);
    let a = Node::start("a", None, &env);
    let b = Node::start("b", Some(&a.cluster_addr), &env);
    for node in [&a, &b] {
        node.wait_live(&["a", "b"], Duration::from_secs(20)).await;
    }
    let body = json!({"urls": [site.url("/article")], "prompt": "the title"});
    let (status, started) = call(a.base(), &a.key, Method::POST, "/v2/extract", Some(&body)).await;
    assert_eq!(status, 200, "{started}");
    let path = format!("/v2/extract/{}", started["id"].as_str().expect("id"));
    let done = wait_for("the job through the other node", Duration::from_secs(30), || async {
        let (status, body) = call(b.base(), &b.key, Method::GET, &path, None).await;
        assert_eq!(status, 200, "{body}");
        (body["status"] == "completed").then_some(body)
    })
    .await;
    assert_eq!(done["data"]["title"], "Growing Tomatoes at Home", "{done}");
    // A summary scraped through b: its call is made where the site's actor lives.
    let scrape = json!({"url": site.url("/short-post"), "formats": ["summary"]});
    let (status, scraped) = call(b.base(), &b.key, Method::POST, "/v2/scrape", Some(&scrape)).await;
    assert_eq!(status, 200, "{scraped}");
    assert!(scraped["data"]["summary"].as_str().is_some_and(|s| s.starts_with("A page about")), "{scraped}");
    let calls = model.requests().len() as u64;
    for node in [&a, &b] {
        let (_, history) =
            call(node.base(), &node.key, Method::GET, "/v2/team/token-usage/historical", None).await;
        assert_eq!(
            history["periods"][0]["tokensUsed"],
            calls * 120,
            "every node's calls, asked on {}: {history}",
            node.name
        );
    }
}

/// The tokens a team's model calls used through a node stay in the team's report while
/// that node is down: the team's owner keeps the totals each node reported, as for credits.
#[tokio::test]
async fn token_use_through_a_node_still_counts_while_it_is_down() {
    let (site, model, url) = site_and_model();
    let env = model_env(&url);
    let names = ["a", "b", "c"];
    let mut nodes = crate::cluster::three_nodes(&env, &[]).await;
    // An extract job's model calls are made by the node that accepted it: not the team's
    // owner; a third node reads the report.
    let owner = owner_of(&names, "team:default");
    let spender = nodes.iter().position(|n| n.name != owner).expect("spender");
    let checker =
        nodes.iter().position(|n| n.name != owner && n.name != nodes[spender].name).expect("checker");
    let body = json!({"urls": [site.url("/article")], "prompt": "the title"});
    let spending = &nodes[spender];
    let (status, started) =
        call(spending.base(), &spending.key, Method::POST, "/v2/extract", Some(&body)).await;
    assert_eq!(status, 200, "{started}");
    let path = format!("/v2/extract/{}", started["id"].as_str().expect("id"));
    wait_for("the extract job", Duration::from_secs(30), || async {
        let (_, body) = call(spending.base(), &spending.key, Method::GET, &path, None).await;
        (body["status"] == "completed").then_some(())
    })
    .await;
    let calls = model.requests().len() as u64;
    assert!(calls > 0);
    assert_eq!(metric(spending.base(), "llm_calls_total").await, calls as f64, "the calls were made there");
    let used = json!(calls * 120);
    let history = |node: &Node, query: &'static str| {
        let (base, key) = (node.base().to_owned(), node.key.clone());
        async move {
            let path = format!("/v2/team/token-usage/historical{query}");
            let (status, body) = call(&base, &key, Method::GET, &path, None).await;
            assert_eq!(status, 200, "{body}");
            body
        }
    };
    wait_for("the tokens counted through the third node", Duration::from_secs(10), || async {
        (history(&nodes[checker], "").await["periods"][0]["tokensUsed"] == used).then_some(())
    })
    .await;

    nodes[spender].process.take().expect("spender").kill9();
    let mut live: Vec<&str> = names.iter().copied().filter(|n| *n != nodes[spender].name).collect();
    live.sort_unstable();
    for node in nodes.iter().filter(|n| n.process.is_some()) {
        node.wait_live(&live, Duration::from_secs(10)).await;
    }
    for node in nodes.iter().filter(|n| n.process.is_some()) {
        let report = history(node, "").await;
        assert_eq!(
            report["periods"][0]["tokensUsed"], used,
            "the down node's tokens, on {}: {report}",
            node.name
        );
        let by_key = history(node, "?byApiKey=true").await;
        let rows = by_key["periods"].as_array().cloned().unwrap_or_default();
        let this_month = &rows[0]["startDate"];
        let per_key: u64 = rows
            .iter()
            .filter(|r| &r["startDate"] == this_month)
            .filter_map(|r| r["tokensUsed"].as_u64())
            .sum();
        assert_eq!(json!(per_key), used, "every key's part, on {}: {by_key}", node.name);
    }
}

/// An agent job accepted by one node is cancelled through another: the cancel is passed to
/// the owner, which reports it to the job's webhook.
#[tokio::test]
async fn an_agent_is_cancelled_through_another_node_and_its_webhook_told() {
    let site = FixtureSite::start();
    let hooks = crate::common::Receiver::start();
    let slow = FakeModel::start(Behaviour { delay: Some(Duration::from_secs(30)), ..Behaviour::default() });
    let url = slow.url();
    let env = [
        ("FERROCRAWL_LLM__BASE_URL", url.as_str()),
        ("FERROCRAWL_LLM__MODEL", "test-model"),
        ("FERROCRAWL_WEBHOOKS__POLL_MS", "100"),
    ];
    let a = Node::start("a", None, &env);
    let b = Node::start("b", Some(&a.cluster_addr), &env);
    for node in [&a, &b] {
        node.wait_live(&["a", "b"], Duration::from_secs(20)).await;
    }
    let body = json!({"prompt": "the title", "urls": [site.url("/article")], "webhook": {"url": hooks.url}});
    let (status, started) = call(a.base(), &a.key, Method::POST, "/v2/agent", Some(&body)).await;
    assert_eq!(status, 200, "{started}");
    let path = format!("/v2/agent/{}", started["id"].as_str().expect("id"));
    let (status, running) = call(b.base(), &b.key, Method::GET, &path, None).await;
    assert_eq!((status, running["status"].as_str()), (200, Some("processing")), "{running}");
    let (status, cancelled) = call(b.base(), &b.key, Method::DELETE, &path, None).await;
    assert_eq!((status, cancelled), (200, json!({"success": true})));
    let events = hooks.wait_for(2, Duration::from_secs(30)).await;
    let kinds: Vec<&str> = events.iter().map(|e| e.body["type"].as_str().unwrap_or_default()).collect();
    assert_eq!(kinds, ["agent.started", "agent.cancelled"]);
    let (_, after) = call(a.base(), &a.key, Method::GET, &path, None).await;
    assert_eq!(after["error"], "The job was cancelled.", "{after}");
}

/// A crawl with a model format, accepted by the node that does not own its site: every
/// page carries its summary, made by the site's node; crawl options from a prompt and
/// documentation answers come from whichever node is asked.
#[tokio::test]
async fn a_crawls_model_formats_are_made_where_its_site_is_fetched() {
    let site = crate::common::CrawlSite::start(0);
    let model = FakeModel::start(Behaviour::default());
    let url = model.url();
    let env = model_env(&url);
    let names = ["a", "b"];
    let a = Node::start("a", None, &env);
    let b = Node::start("b", Some(&a.cluster_addr), &env);
    for node in [&a, &b] {
        node.wait_live(&names, Duration::from_secs(20)).await;
    }
    let owner = site_owner(&names, &format!("http://site.localhost:{}/", site.port));
    let (fetching, accepting) = if owner == "a" { (&a, &b) } else { (&b, &a) };
    let body = json!({"url": site.url("/hub/0"), "sitemap": "skip", "crawlEntireDomain": true, "limit": 4,
        "scrapeOptions": {"formats": ["markdown", "summary"]}});
    let (status, started) =
        call(accepting.base(), &accepting.key, Method::POST, "/v2/crawl", Some(&body)).await;
    assert_eq!(status, 200, "{started}");
    let path = format!("/v2/crawl/{}", started["id"].as_str().expect("id"));
    let landed = finished_crawl(accepting.base(), &accepting.key, &path).await;
    assert_eq!(landed.len(), 4, "{landed:?}");
    let (_, done) = call(fetching.base(), &fetching.key, Method::GET, &path, None).await;
    let docs = done["data"].as_array().cloned().unwrap_or_default();
    assert_eq!(docs.len(), 4, "{done}");
    for doc in &docs {
        let title = doc["metadata"]["title"].as_str().unwrap_or_default();
        assert_eq!(doc["summary"], json!(format!("A page about {title}.")), "{doc}");
    }
    let calls = "llm_calls_total";
    assert_eq!(metric(fetching.base(), calls).await, 4.0, "the site's node made the calls");
    assert_eq!(metric(accepting.base(), calls).await, 0.0, "the crawl's node made none");

    // Crawl options from a prompt, and a documentation question, through either node (the
    // same evidence from both; which section ranks first is the single-node test's concern).
    let mut evidence = Vec::new();
    for node in [&a, &b] {
        let preview = json!({"url": site.url("/"), "prompt": "the /hub section, 7 pages"});
        let (status, answer) =
            call(node.base(), &node.key, Method::POST, "/v2/crawl/params-preview", Some(&preview)).await;
        assert_eq!(status, 200, "{answer}");
        assert_eq!(
            (&answer["data"]["includePaths"], &answer["data"]["limit"]),
            (&json!(["^/hub(/.*)?$"]), &json!(7)),
            "{answer}"
        );
        let question = json!({"question": "Which setting limits the calls in flight to the language model?"});
        let (status, answer) =
            call(node.base(), &node.key, Method::POST, "/v2/support/docs-search", Some(&question)).await;
        assert_eq!(status, 200, "{answer}");
        assert!(answer["evidence"][0]["pathOrUrl"].is_string(), "{answer}");
        evidence.push(answer["evidence"].clone());
        let said: &Value = &answer["answer"];
        assert!(said.as_str().is_some_and(|s| s.starts_with("According to the documentation")), "{answer}");
    }
    assert_eq!(evidence[0], evidence[1], "both nodes answer from the same documentation");
}
