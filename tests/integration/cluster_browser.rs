//! Browser sessions made without a scrape in a cluster of real child processes: a session
//! lives on the node that made it (where its Chromium is), runs code and ends through any
//! node (its id names its node), and every node lists the team's sessions of all nodes.

use std::time::Duration;

use reqwest::Method;
use serde_json::json;

use crate::cluster::{Node, call};

#[tokio::test]
async fn sessions_are_listed_and_driven_through_any_node() {
    let a = Node::start("a", None, &[]);
    let b = Node::start("b", Some(&a.cluster_addr), &[]);
    for node in [&a, &b] {
        node.wait_live(&["a", "b"], Duration::from_secs(20)).await;
    }
    let (status, made) = call(b.base(), &b.key, Method::POST, "/v2/browser", Some(&json!({}))).await;
    assert_eq!(status, 200, "{made}");
    let id = made["id"].as_str().expect("id").to_owned();
    assert!(made["cdpUrl"].as_str().is_some_and(|u| u.contains(&b.base().replace("http://", ""))), "{made}");

    let code = json!({"code": "window.kept = 'on b'; 6 * 7"});
    let path = format!("/v2/browser/{id}/execute");
    let (status, ran) = call(a.base(), &a.key, Method::POST, &path, Some(&code)).await;
    assert_eq!((status, ran["result"].as_str()), (200, Some("42")), "{ran}");

    for node in [&a, &b] {
        let (status, listed) =
            call(node.base(), &node.key, Method::GET, "/v2/browser?status=active", None).await;
        assert_eq!(status, 200, "{listed}");
        let ids: Vec<&str> = listed["sessions"]
            .as_array()
            .expect("sessions")
            .iter()
            .filter_map(|s| s["id"].as_str())
            .collect();
        assert_eq!(ids, [id.as_str()], "listed through {}: {listed}", node.name);
    }

    let (status, ended) = call(a.base(), &a.key, Method::DELETE, &format!("/v2/browser/{id}"), None).await;
    assert_eq!((status, ended["success"].as_bool()), (200, Some(true)), "{ended}");
    let (status, _) = call(a.base(), &a.key, Method::POST, &path, Some(&code)).await;
    assert_eq!(status, 410);
    let (_, listed) = call(a.base(), &a.key, Method::GET, "/v2/browser?status=destroyed", None).await;
    assert_eq!(listed["sessions"][0]["id"], id.as_str(), "{listed}");
}
