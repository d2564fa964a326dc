//! The routes of the OpenAPI document that are not built from handler annotations: job
//! status pages, cancel and error lists, the team's usage views, files, the live view,
//! the cluster view, metrics and the document itself. Each gets its parameters and a
//! response schema that says what a client may rely on (the `success` flag and the
//! fields the SDKs read); every operation of the document also gets the error envelope
//! as its `default` response, so any error status is described.

use serde_json::{Map, Value, json};

/// A path parameter named `name`.
fn path_param(name: &str, doc: &str) -> Value {
    json!({"name": name, "in": "path", "required": true, "schema": {"type": "string"}, "description": doc})
}

/// An optional query parameter.
fn query(name: &str, schema: Value, doc: &str) -> Value {
    json!({"name": name, "in": "query", "required": false, "schema": schema, "description": doc})
}

/// A JSON object with `success` and the given properties (all required).
fn success_with(props: Value) -> Value {
    let mut properties = Map::new();
    properties.insert("success".into(), json!({"type": "boolean"}));
    let mut required = vec![json!("success")];
    if let Value::Object(more) = props {
        for (k, v) in more {
            required.push(json!(k.clone()));
            properties.insert(k, v);
        }
    }
    json!({"type": "object", "required": required, "properties": properties})
}

/// As [`success_with`], and the properties of `optional`, which may be missing.
fn success_with_optional(props: Value, optional: Value) -> Value {
    let mut schema = success_with(props);
    if let (Some(properties), Value::Object(more)) = (schema["properties"].as_object_mut(), optional) {
        properties.extend(more);
    }
    schema
}

fn json_response(description: &str, schema: Value) -> Value {
    json!({"description": description, "content": {"application/json": {"schema": schema}}})
}

fn operation(summary: &str, params: Vec<Value>, ok: Value, secured: bool) -> Value {
    let mut op = json!({"summary": summary, "parameters": params, "responses": {"200": ok}});
    if secured {
        op["security"] = json!([{"bearer": []}]);
    }
    op
}

/// Adds the routes above to `doc`, then the error envelope as every operation's
/// `default` response (and UUID ids).
pub fn add(doc: &mut Value) {
    let id = || path_param("id", "Job id");
    let list = |item: Value| json!({"type": "array", "items": item});
    let object = json!({"type": "object"});
    let job_status = json!({"$ref": "#/components/schemas/JobStatus"});
    doc["components"]["schemas"]["JobStatus"] = success_with(json!({
        "status": {"type": "string", "enum": ["scraping", "completed", "failed", "cancelled"]},
        "completed": {"type": "integer", "minimum": 0},
        "total": {"type": "integer", "minimum": 0},
        "creditsUsed": {"type": "integer", "minimum": 0},
        "data": list(object.clone()),
    }));
    let pages = || {
        vec![
            id(),
            query("skip", json!({"type": "integer", "minimum": 0}), "Documents to skip"),
            query("limit", json!({"type": "integer", "minimum": 1, "maximum": 1000}), "Documents per page"),
        ]
    };
    let cancelled = json_response("Cancelled", success_with(json!({"status": {"type": "string"}})));
    let errors = json_response(
        "Failed pages and robots.txt refusals",
        success_with(
            json!({"errors": list(object.clone()), "robotsBlocked": list(json!({"type": "string"}))}),
        ),
    );
    let usage = |field: &str| {
        json_response(
            "Usage this period",
            success_with(json!({"data": {"type": "object", "required": [field]}})),
        )
    };
    let history = json_response("Usage per period", success_with(json!({"periods": list(object.clone())})));
    // A webhook: its URL, or the object with its URL.
    let strings = json!({"type": "object", "additionalProperties": {"type": "string"}});
    doc["components"]["schemas"]["Webhook"] = json!({"oneOf": [
        {"type": "string", "format": "uri"},
        {"type": "object", "required": ["url"], "additionalProperties": false, "properties": {
            "url": {"type": "string", "format": "uri"},
            "headers": strings,
            "metadata": strings,
            "events": {"type": "array", "items": {"type": "string", "enum": ["started", "page", "completed", "failed"]}},
        }},
    ]});
    for request in ["CrawlRequest", "BatchScrapeRequest"] {
        doc["components"]["schemas"][request]["properties"]["webhook"] =
            json!({"$ref": "#/components/schemas/Webhook"});
    }
    for param in doc["paths"]["/v2/crawl/{id}"]["get"]["parameters"].as_array_mut().into_iter().flatten() {
        if param["name"] == "limit" {
            param["schema"] = json!({"type": "integer", "minimum": 1, "maximum": 1000});
        }
    }
    let paths = &mut doc["paths"];
    paths["/v2/crawl/{id}"]["delete"] = operation("Cancel a crawl", vec![id()], cancelled.clone(), true);
    paths["/v2/crawl/{id}/errors"]["get"] = operation("A crawl's errors", vec![id()], errors.clone(), true);
    let active = json_response("Running crawls", success_with(json!({"crawls": list(object.clone())})));
    paths["/v2/crawl/active"]["get"] = operation("The team's running crawls", vec![], active.clone(), true);
    paths["/v2/crawl/ongoing"]["get"] = operation("The team's running crawls", vec![], active, true);
    paths["/v2/batch/scrape/{id}"]["get"] =
        operation("A batch's status and documents", pages(), json_response("Status", job_status), true);
    paths["/v2/batch/scrape/{id}"]["delete"] = operation("Cancel a batch", vec![id()], cancelled, true);
    paths["/v2/batch/scrape/{id}/errors"]["get"] = operation("A batch's errors", vec![id()], errors, true);
    paths["/v2/team/credit-usage"]["get"] =
        operation("Credits left", vec![], usage("remainingCredits"), true);
    paths["/v2/team/token-usage"]["get"] = operation("Tokens left", vec![], usage("remainingTokens"), true);
    // Credits are recorded per team: a series per key is refused there.
    let per_team =
        query("byApiKey", json!({"type": "boolean", "enum": [false]}), "Only false: credits are per team");
    paths["/v2/team/credit-usage/historical"]["get"] =
        operation("Credits used per month", vec![per_team], history.clone(), true);
    let per_key = query("byApiKey", json!({"type": "boolean"}), "One series per API key");
    paths["/v2/team/token-usage/historical"]["get"] =
        operation("Tokens used per month", vec![per_key], history, true);
    paths["/v2/team/queue-status"]["get"] = operation(
        "The team's jobs in the queue",
        vec![],
        json_response(
            "Queue",
            success_with(json!({
                "jobsInQueue": {"type": "integer"},
                "activeJobsInQueue": {"type": "integer"},
                "waitingJobsInQueue": {"type": "integer"},
                "maxConcurrency": {"type": "integer"},
            })),
        ),
        true,
    );
    paths["/v2/concurrency-check"]["get"] = operation(
        "The team's pages in flight and its limit",
        vec![],
        json_response(
            "Concurrency",
            success_with(json!({"concurrency": {"type": "integer"}, "maxConcurrency": {"type": "integer"}})),
        ),
        true,
    );
    paths["/v2/team/activity"]["get"] = operation(
        "What the team started in the last day",
        vec![
            query(
                "endpoint",
                json!({"type": "string", "enum": super::team::ACTIVITY_ENDPOINTS}),
                "Only this endpoint",
            ),
            query("limit", json!({"type": "integer", "minimum": 1, "maximum": 100}), "Records per page"),
            query(
                "cursor",
                json!({"type": "string", "pattern": "^[A-Za-z0-9_-]{32}$"}),
                "From a previous page",
            ),
        ],
        json_response(
            "Activity",
            success_with(json!({"data": list(object.clone()), "has_more": {"type": "boolean"}})),
        ),
        true,
    );
    paths["/v2/crawl/params-preview"]["post"] = operation(
        "Crawl options proposed for a prompt (by the language model, or read by rules without one)",
        vec![],
        json_response(
            "Proposed options",
            success_with_optional(json!({"data": object.clone()}), json!({"warning": {"type": "string"}})),
        ),
        true,
    );
    paths["/v2/support/docs-search"]["post"] = operation(
        "A question about this server answered from its documentation",
        vec![],
        json_response(
            "Answer",
            success_with_optional(
                json!({
                    "requestId": {"type": "string"}, "answer": {"type": "string"},
                    "evidence": list(json!({"type": "object", "properties": {
                        "pathOrUrl": {"type": "string"}, "reason": {"type": "string"}}})),
                    "usage": object.clone(), "durationMs": {"type": "integer"},
                }),
                json!({"warning": {"type": "string"}}),
            ),
        ),
        true,
    );
    let job_started = json_response("Job accepted", success_with(json!({"id": {"type": "string"}})));
    let job_state = json_response(
        "The job's state; `data` once completed",
        success_with_optional(
            json!({"status": {"type": "string", "enum": ["processing", "completed", "failed", "cancelled"]}}),
            json!({
                "data": {}, "error": {"type": "string"}, "warning": {"type": "string"}, "sources": object.clone(),
                "expiresAt": {"type": "string"}, "creditsUsed": {"type": "integer"}, "tokensUsed": {"type": "integer"},
            }),
        ),
    );
    paths["/v2/extract"]["post"] =
        operation("Extract structured data from pages (a job)", vec![], job_started.clone(), true);
    paths["/v2/extract/{id}"]["get"] =
        operation("An extract job's state", vec![id()], job_state.clone(), true);
    paths["/v2/agent"]["post"] =
        operation("Research a prompt across pages (a job)", vec![], job_started, true);
    paths["/v2/agent/{id}"]["get"] = operation("An agent job's state", vec![id()], job_state, true);
    paths["/v2/agent/{id}"]["delete"] = operation(
        "Cancel an agent job",
        vec![id()],
        json_response(
            "Whether it was running",
            json!({"type": "object", "properties": {"success": {"type": "boolean"}}}),
        ),
        true,
    );
    let binary = |mime: &str, what: &str| json!({"description": what, "content": {mime: {"schema": {"type": "string", "format": "binary"}}}});
    paths["/v2/files/{name}"]["get"] = operation(
        "A screenshot or PDF of a scrape (a signed link)",
        vec![
            path_param("name", "File name"),
            query("expires", json!({"type": "integer"}), "Link expiry"),
            query("signature", json!({"type": "string"}), "Link signature"),
        ],
        binary("application/octet-stream", "The file"),
        false,
    );
    let token = || path_param("token", "Live view token");
    paths["/v2/live/{token}"]["get"] =
        operation("The live view of a browser session", vec![token()], binary("text/html", "Page"), false);
    paths["/v2/live/{token}/frame"]["get"] =
        operation("The session's current frame", vec![token()], binary("image/jpeg", "Frame"), false);
    paths["/v2/live/{token}/stream"]["get"] = operation(
        "The session's screen as a stream of JPEG frames (streamWebView sessions)",
        vec![token()],
        binary("multipart/x-mixed-replace", "Frames, each a part"),
        false,
    );
    paths["/v2/live/{token}/input"]["post"] = operation(
        "A click, key or typed text in the session",
        vec![token()],
        json!({"description": "Sent"}),
        false,
    );
    // Answered with 204 and no body (its request body: `openapi_bodies`).
    paths["/v2/live/{token}/input"]["post"]["responses"] = json!({"204": {"description": "Sent"}});
    paths["/v2/cdp/{token}"]["get"] = operation(
        "A session's DevTools browser WebSocket (its cdpUrl, for Playwright connectOverCDP or \
         Puppeteer connect): the session's own context only; page commands pass, others are refused",
        vec![path_param("token", "Interactive live-view token")],
        binary("application/octet-stream", "101 Switching Protocols, then DevTools messages"),
        false,
    );
    paths["/v2/cdp/{token}/page"]["get"] = operation(
        "A session's page as a DevTools WebSocket: page commands pass, others are refused",
        vec![path_param("token", "Interactive live-view token")],
        binary("application/octet-stream", "101 Switching Protocols, then DevTools messages"),
        false,
    );
    paths["/v2/cluster"]["get"] = operation(
        "Members of the cluster (admin teams)",
        vec![],
        json_response(
            "Members",
            success_with(json!({"clustered": {"type": "boolean"}, "members": list(object.clone())})),
        ),
        true,
    );
    paths["/v2/cluster/members/{name}"]["delete"] = operation(
        "Forget a member that is down and gone for good, here and on every live member (admin teams)",
        vec![path_param("name", "Node name")],
        json_response(
            "Forgotten",
            success_with(json!({
                "forgotten": {"type": "string"},
                "forgottenBy": list(json!({"type": "string"})),
                "notForgottenBy": list(object),
                "majority": {"type": "boolean"},
            })),
        ),
        true,
    );
    let by_id = paths["/v2/browser/{sessionId}"]["delete"].clone();
    paths["/v2/interact/{sessionId}"]["delete"] = by_id;
    let execute = paths["/v2/browser/{sessionId}/execute"]["post"].clone();
    paths["/v2/interact/{sessionId}/execute"]["post"] = execute;
    for method in ["get", "post"] {
        let same = paths["/v2/browser"][method].clone();
        paths["/v2/interact"][method] = same;
    }
    let ended = paths["/v2/browser/{sessionId}"]["delete"]["responses"]["200"].clone();
    for base in ["/v2/browser", "/v2/interact"] {
        paths[base]["delete"] =
            operation("End a browser session named in the body", vec![], ended.clone(), true);
        paths[base]["delete"]["requestBody"] = json!({"required": true, "content": {"application/json": {"schema": {
            "type": "object", "required": ["id"], "additionalProperties": false,
            "properties": {"id": {"type": "string", "description": "The session id"}}
        }}}});
    }
    paths["/metrics"]["get"] =
        operation("Prometheus metrics", vec![], binary("text/plain", "Metrics, text format"), false);
    paths["/v2/openapi.json"]["get"] =
        operation("This document", vec![], json_response("OpenAPI 3", json!({"type": "object"})), false);
    paths["/"]["get"] = operation(
        "The service's name",
        vec![],
        json_response("Name", json!({"type": "object", "required": ["message"]})),
        false,
    );
    add_default_errors(doc);
}

/// Every operation's `default` response: the error envelope; and job and scrape ids (the
/// `id` path parameters) are UUIDs.
fn add_default_errors(doc: &mut Value) {
    let envelope = json_response("An error", json!({"$ref": "#/components/schemas/ErrorBody"}));
    let Some(paths) = doc["paths"].as_object_mut() else { return };
    for item in paths.values_mut() {
        let Some(ops) = item.as_object_mut() else { continue };
        for op in ops.values_mut() {
            if let Some(responses) = op.get_mut("responses").and_then(Value::as_object_mut) {
                responses.entry("default").or_insert_with(|| envelope.clone());
            }
            let params = op.get_mut("parameters").and_then(Value::as_array_mut);
            for param in params.into_iter().flatten() {
                if param["in"] == "path" && param["name"] == "id" {
                    param["schema"] = json!({"type": "string", "format": "uuid"});
                }
            }
        }
    }
}

/// The methods each path template allows (`GET, DELETE`), for the `Allow` header of 405s.
pub fn methods(doc: &Value) -> std::collections::HashMap<String, String> {
    let Some(paths) = doc["paths"].as_object() else { return Default::default() };
    paths
        .iter()
        .map(|(path, item)| {
            let methods: Vec<String> = item
                .as_object()
                .map(|ops| ops.keys().map(|m| m.to_ascii_uppercase()).collect())
                .unwrap_or_default();
            (path.clone(), methods.join(", "))
        })
        .collect()
}
