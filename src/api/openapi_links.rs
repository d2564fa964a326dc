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

/// An operation that takes the id another one answers with: its method, and its path
/// after the starting operation's, where the one path parameter (`{id}`) is what the id
/// fills.
type Taker = (&'static str, &'static str);

/// An operation that starts something (always a `POST`), and the operations that take
/// what it started.
struct Start {
    path: &'static str,
    /// Where its answer holds the id (a JSON pointer into the body).
    id_at: &'static str,
    takers: &'static [Taker],
}

/// What takes a crawl's or batch's id: its status, errors and cancel.
const JOB: &[Taker] = &[("get", "/{id}"), ("get", "/{id}/errors"), ("delete", "/{id}")];
/// What takes a browser session's id (under both of its prefixes): execute and end.
const SESSION: &[Taker] = &[("post", "/{sessionId}/execute"), ("delete", "/{sessionId}")];

/// The links of the document; also a scrape's stored result and its interact session, and
/// a model job's status (and an agent's cancel).
const LINKS: &[Start] = &[
    Start { path: "/v2/crawl", id_at: "/id", takers: JOB },
    Start { path: "/v2/batch/scrape", id_at: "/id", takers: JOB },
    Start { path: "/v2/browser", id_at: "/id", takers: SESSION },
    Start { path: "/v2/interact", id_at: "/id", takers: SESSION },
    Start {
        path: "/v2/scrape",
        id_at: "/data/metadata/scrapeId",
        takers: &[("get", "/{id}"), ("post", "/{id}/interact"), ("delete", "/{id}/interact")],
    },
    Start { path: "/v2/extract", id_at: "/id", takers: &[("get", "/{id}")] },
    Start { path: "/v2/agent", id_at: "/id", takers: &[("get", "/{id}"), ("delete", "/{id}")] },
];

/// The path parameter of `suffix` (the name between its braces).
fn parameter(suffix: &str) -> &str {
    suffix.split_once('{').and_then(|(_, rest)| rest.split_once('}')).map_or("", |(name, _)| name)
}

/// Names every operation of `doc` and adds the [`LINKS`] to the starting operations'
/// `200` answers.
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
    for Start { path, id_at, takers } in LINKS {
        let mut to = Map::new();
        for (method, suffix) in *takers {
            let id = operation_id(method, &format!("{path}{suffix}"));
            to.insert(
                id.clone(),
                json!({"operationId": id, "parameters": {parameter(suffix): format!("$response.body#{id_at}")}}),
            );
        }
        let answer = &mut doc["paths"][*path]["post"]["responses"]["200"];
        if answer.is_object() {
            answer["links"] = Value::Object(to);
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
        let mut linked = 0;
        for Start { path, takers, .. } in LINKS {
            let answer = &doc["paths"][*path]["post"]["responses"]["200"];
            for (target_method, suffix) in *takers {
                let (target_path, parameter) = (format!("{path}{suffix}"), parameter(suffix));
                let id = operation_id(target_method, &target_path);
                let link = &answer["links"][&id];
                assert_eq!(link["operationId"], json!(id), "POST {path}");
                let target = &doc["paths"][&target_path][*target_method];
                let params = target["parameters"].as_array().expect("parameters");
                assert!(
                    params.iter().any(|p| p["name"] == json!(parameter) && p["in"] == json!("path")),
                    "{target_method} {target_path} takes `{parameter}`"
                );
                linked += 1;
            }
        }
        assert_eq!(linked, 16);
    }
}
