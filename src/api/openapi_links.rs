//! Operation ids and links of the OpenAPI document. Every operation is named from its
//! method and path (`getCrawlById`), so the names are unique by construction, as client
//! generators need them; and an operation that starts something (a crawl, a batch, a
//! scrape, a model job, a browser session) links to those that read, drive or end it with
//! the id it answers with, so a tool following the document (a generated client, a
//! stateful test) knows where the id goes.

use serde_json::{Map, Value, json};

/// The operation id of `method` on `path`: the method, then each segment of the path after
/// `/v2` in camel case, a `{param}` read as `By` and its name (`GET /` is `getRoot`).
fn operation_id(method: &str, path: &str) -> String {
    let mut id = method.to_ascii_lowercase();
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).skip_while(|s| *s == "v2").collect();
    if segments.is_empty() {
        id.push_str("Root");
    }
    for segment in segments {
        let (prefix, name) = match segment.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
            Some(param) => ("By", param),
            None => ("", segment),
        };
        id.push_str(prefix);
        for word in name.split(|c: char| !c.is_ascii_alphanumeric()).filter(|w| !w.is_empty()) {
            let mut chars = word.chars();
            if let Some(first) = chars.next() {
                id.push(first.to_ascii_uppercase());
                id.push_str(chars.as_str());
            }
        }
    }
    id
}

/// An operation that takes the id another one answers with: its method, its path, and the
/// path parameter the id fills.
type Taker = (&'static str, &'static str, &'static str);

/// An operation that starts something, and the operations that take what it started.
struct Start {
    method: &'static str,
    path: &'static str,
    /// Where its answer holds the id (a JSON pointer into the body).
    id_at: &'static str,
    takers: &'static [Taker],
}

/// The links of the document.
const LINKS: &[Start] = &[
    Start {
        method: "post",
        path: "/v2/crawl",
        id_at: "/id",
        takers: &[
            ("get", "/v2/crawl/{id}", "id"),
            ("get", "/v2/crawl/{id}/errors", "id"),
            ("delete", "/v2/crawl/{id}", "id"),
        ],
    },
    Start {
        method: "post",
        path: "/v2/batch/scrape",
        id_at: "/id",
        takers: &[
            ("get", "/v2/batch/scrape/{id}", "id"),
            ("get", "/v2/batch/scrape/{id}/errors", "id"),
            ("delete", "/v2/batch/scrape/{id}", "id"),
        ],
    },
    Start {
        method: "post",
        path: "/v2/scrape",
        id_at: "/data/metadata/scrapeId",
        takers: &[
            ("get", "/v2/scrape/{id}", "id"),
            ("post", "/v2/scrape/{id}/interact", "id"),
            ("delete", "/v2/scrape/{id}/interact", "id"),
        ],
    },
    Start { method: "post", path: "/v2/extract", id_at: "/id", takers: &[("get", "/v2/extract/{id}", "id")] },
    Start {
        method: "post",
        path: "/v2/agent",
        id_at: "/id",
        takers: &[("get", "/v2/agent/{id}", "id"), ("delete", "/v2/agent/{id}", "id")],
    },
    Start {
        method: "post",
        path: "/v2/browser",
        id_at: "/id",
        takers: &[
            ("post", "/v2/browser/{sessionId}/execute", "sessionId"),
            ("delete", "/v2/browser/{sessionId}", "sessionId"),
        ],
    },
    Start {
        method: "post",
        path: "/v2/interact",
        id_at: "/id",
        takers: &[
            ("post", "/v2/interact/{sessionId}/execute", "sessionId"),
            ("delete", "/v2/interact/{sessionId}", "sessionId"),
        ],
    },
];

/// Names every operation of `doc` and adds the links of [`LINKS`] to the starting
/// operations' `200` answers.
pub(super) fn add(doc: &mut Value) {
    if let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) {
        for (path, item) in paths.iter_mut() {
            let Some(operations) = item.as_object_mut() else { continue };
            for (method, operation) in operations.iter_mut() {
                if let Some(operation) = operation.as_object_mut() {
                    operation.insert("operationId".into(), json!(operation_id(method, path)));
                }
            }
        }
    }
    for Start { method, path, id_at, takers } in LINKS {
        let mut links = Map::new();
        for (target_method, target_path, parameter) in *takers {
            let id = operation_id(target_method, target_path);
            links.insert(
                id.clone(),
                json!({"operationId": id, "parameters": {*parameter: format!("$response.body#{id_at}")}}),
            );
        }
        let answer = &mut doc["paths"][*path][*method]["responses"]["200"];
        if answer.is_object() {
            answer["links"] = Value::Object(links);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_read_from_the_method_and_path() {
        assert_eq!(operation_id("get", "/v2/crawl/{id}"), "getCrawlById");
        assert_eq!(operation_id("get", "/v2/team/credit-usage/historical"), "getTeamCreditUsageHistorical");
        assert_eq!(operation_id("delete", "/v2/browser/{sessionId}"), "deleteBrowserBySessionId");
        assert_eq!(operation_id("get", "/v2/openapi.json"), "getOpenapiJson");
        assert_eq!(operation_id("get", "/"), "getRoot");
        assert_eq!(operation_id("get", "/health"), "getHealth");
    }

    #[test]
    fn every_operation_has_an_id_of_its_own_and_every_link_leads_somewhere() {
        let doc = super::super::openapi::document(true);
        let mut ids = std::collections::HashSet::new();
        for (path, item) in doc["paths"].as_object().expect("paths") {
            for (method, operation) in item.as_object().expect("operations") {
                let id =
                    operation["operationId"].as_str().unwrap_or_else(|| panic!("{method} {path}: no id"));
                assert!(ids.insert(id.to_owned()), "{method} {path}: `{id}` twice");
            }
        }
        let mut links = 0;
        for Start { method, path, takers, .. } in LINKS {
            let answer = &doc["paths"][*path][*method]["responses"]["200"];
            for (target_method, target_path, parameter) in *takers {
                let id = operation_id(target_method, target_path);
                let link = &answer["links"][&id];
                assert_eq!(link["operationId"], json!(id), "{method} {path}");
                let target = &doc["paths"][*target_path][*target_method];
                let params = target["parameters"].as_array().expect("parameters");
                assert!(
                    params.iter().any(|p| p["name"] == json!(parameter) && p["in"] == json!("path")),
                    "{target_method} {target_path} takes `{parameter}`"
                );
                links += 1;
            }
        }
        assert_eq!(links, 16);
    }
}
