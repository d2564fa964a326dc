//! A stand-in for a language-model server speaking the OpenAI chat-completions protocol
//! (`POST /v1/chat/completions`), with scripted answers: it reads the task from the system
//! message and answers from the page in the user message (a summary naming the title, the
//! title as extracted JSON, quotes of which one is invented, the Markdown without its
//! cookie lines), or the next of the answers a test queued. What it supports is set per
//! test: `json_schema` and `json_object` response formats (refused with a 400 naming the
//! format otherwise), streaming its answers although asked not to, leaving `usage` out,
//! answering late, and a first answer of 429 with `Retry-After`. Every request is kept.

use std::collections::VecDeque;
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix_web::{HttpRequest, HttpResponse, web};
use serde_json::{Value, json};

/// What the stand-in supports and how it misbehaves.
#[derive(Debug, Clone)]
pub struct Behaviour {
    /// Accepts `response_format: json_schema`.
    pub json_schema: bool,
    /// Accepts `response_format: json_object`.
    pub json_object: bool,
    /// Answers as an event stream (`text/event-stream`) although `stream` is false.
    pub streams: bool,
    /// Reports `usage`.
    pub usage: bool,
    /// Answers after this long.
    pub delay: Option<Duration>,
    /// The first request gets 429 with `Retry-After` of this many seconds.
    pub rate_limit_first: Option<u64>,
}

impl Default for Behaviour {
    fn default() -> Self {
        Self {
            json_schema: true,
            json_object: true,
            streams: false,
            usage: true,
            delay: None,
            rate_limit_first: None,
        }
    }
}

struct State {
    behaviour: Behaviour,
    queued: Mutex<VecDeque<String>>,
    requests: Mutex<Vec<Value>>,
    headers: Mutex<Vec<Option<String>>>,
}

/// The running stand-in.
pub struct FakeModel {
    /// Its port.
    pub port: u16,
    state: Arc<State>,
    _server: super::ActixThread,
}

impl FakeModel {
    /// Starts a stand-in that behaves as `behaviour` says.
    pub fn start(behaviour: Behaviour) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let state = Arc::new(State {
            behaviour,
            queued: Mutex::default(),
            requests: Mutex::default(),
            headers: Mutex::default(),
        });
        let data = web::Data::from(Arc::clone(&state));
        let server = super::ActixThread::spawn(listener, 2, move |cfg| {
            cfg.app_data(data.clone())
                .route("/v1/chat/completions", web::post().to(complete))
                .default_service(web::to(|| async {
                    HttpResponse::NotFound().json(json!({"error": "no route"}))
                }));
        });
        Self { port, state, _server: server }
    }

    /// A test server whose language model is this stand-in (model `test-model`).
    pub fn server(&self) -> super::Builder {
        self.server_on(tempfile::tempdir().expect("tempdir"))
    }

    /// [`FakeModel::server`] on an existing data directory.
    pub fn server_on(&self, data: tempfile::TempDir) -> super::Builder {
        let url = self.url();
        super::TestServer::builder_on(data).settings(move |s| {
            s.llm.base_url = url;
            s.llm.model = "test-model".into();
        })
    }

    /// The base URL to configure (`llm.base_url`).
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// Queues answers given, in order, before the scripted ones.
    pub fn queue(&self, answers: &[&str]) {
        self.state.queued.lock().expect("lock").extend(answers.iter().map(|a| (*a).to_owned()));
    }

    /// Every request body received.
    pub fn requests(&self) -> Vec<Value> {
        self.state.requests.lock().expect("lock").clone()
    }

    /// The `response_format.type` of every request (`none` without one).
    pub fn formats_asked(&self) -> Vec<String> {
        self.requests()
            .iter()
            .map(|r| r.pointer("/response_format/type").and_then(Value::as_str).unwrap_or("none").to_owned())
            .collect()
    }

    /// The `Authorization` header of every request.
    pub fn authorizations(&self) -> Vec<Option<String>> {
        self.state.headers.lock().expect("lock").clone()
    }
}

async fn complete(req: HttpRequest, body: web::Json<Value>, state: web::Data<State>) -> HttpResponse {
    let body = body.into_inner();
    let auth = req.headers().get("authorization").and_then(|v| v.to_str().ok()).map(str::to_owned);
    let first = {
        let mut requests = state.requests.lock().expect("lock");
        requests.push(body.clone());
        state.headers.lock().expect("lock").push(auth);
        requests.len() == 1
    };
    let b = &state.behaviour;
    if let Some(wait) = b.delay {
        tokio::time::sleep(wait).await;
    }
    if first && let Some(secs) = b.rate_limit_first {
        return HttpResponse::TooManyRequests()
            .insert_header(("Retry-After", secs.to_string()))
            .json(json!({"error": {"message": "rate limit reached", "type": "rate_limit"}}));
    }
    if body.get("stream") != Some(&Value::Bool(false)) {
        return HttpResponse::BadRequest().json(json!({"error": {"message": "stream must be false here"}}));
    }
    match body.pointer("/response_format/type").and_then(Value::as_str) {
        Some("json_schema") if !b.json_schema => {
            return HttpResponse::BadRequest()
                .json(json!({"error": {"message": "response_format type json_schema is not supported"}}));
        }
        Some("json_object") if !b.json_object => {
            return HttpResponse::BadRequest().json(
                json!({"error": {"message": "response_format json_object is unsupported by this model"}}),
            );
        }
        _ => {}
    }
    let message = |role: &str| {
        body["messages"]
            .as_array()
            .and_then(|m| m.iter().find(|m| m["role"] == role))
            .and_then(|m| m["content"].as_str())
            .unwrap_or_default()
            .to_owned()
    };
    let (system, user) = (message("system"), message("user"));
    let queued = state.queued.lock().expect("lock").pop_front();
    let text = queued.unwrap_or_else(|| scripted(&system, &user));
    let usage = json!({"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120});
    if b.streams {
        let mut out = String::new();
        for piece in text.as_bytes().chunks(7) {
            let chunk = json!({"choices": [{"delta": {"content": String::from_utf8_lossy(piece)}}]});
            out.push_str(&format!("data: {chunk}\n\n"));
        }
        if b.usage {
            out.push_str(&format!("data: {}\n\n", json!({"choices": [], "usage": usage})));
        }
        out.push_str("data: [DONE]\n\n");
        return HttpResponse::Ok().content_type("text/event-stream").body(out);
    }
    let mut answer = json!({"id": "chatcmpl-1", "object": "chat.completion", "model": body["model"],
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]});
    if b.usage {
        answer["usage"] = usage;
    }
    HttpResponse::Ok().json(answer)
}

/// The page's title, from the `Title:` line the server puts before the page.
fn title(user: &str) -> String {
    user.lines().find_map(|l| l.strip_prefix("Title: ")).unwrap_or("untitled").to_owned()
}

/// The sentences of the page's prose lines (not the URL and title lines, headings,
/// tables or lists).
fn sentences(user: &str) -> Vec<String> {
    user.lines()
        .filter(|l| {
            l.starts_with(char::is_alphabetic) && !l.starts_with("URL: ") && !l.starts_with("Title: ")
        })
        .flat_map(|l| l.split_inclusive(". ").map(|s| s.trim().to_owned()).collect::<Vec<_>>())
        .filter(|s| s.len() > 10)
        .collect()
}

/// An answer made from the request, by task.
fn scripted(system: &str, user: &str) -> String {
    if system.contains("clean Markdown") {
        return user.lines().filter(|l| !l.to_lowercase().contains("cookie")).collect::<Vec<_>>().join("\n");
    }
    if system.contains("summarise") {
        return format!("A page about {}.", title(user));
    }
    if system.contains("find passages") {
        let request = user.rsplit("Request: ").next().unwrap_or_default().to_lowercase();
        let found = sentences(user)
            .into_iter()
            .find(|s| request.split_whitespace().any(|w| w.len() > 3 && s.to_lowercase().contains(w)))
            .unwrap_or_default();
        return json!({"quotes": [found, "A sentence the page never said."]}).to_string();
    }
    if system.contains("questions about ferrocrawl") {
        let first = user.split("\n").nth(1).unwrap_or_default();
        return json!({"answer": format!("According to the documentation: {first}"), "sources": [1]})
            .to_string();
    }
    if system.contains("answer questions") {
        let question = user.rsplit("Question: ").next().unwrap_or_default();
        return format!("About {}: {question}", title(user));
    }
    if system.contains("operate a web browser") {
        return browse(user).to_string();
    }
    if system.contains("request for a web crawl") {
        let request = user.rsplit("Request: ").next().unwrap_or_default();
        if request.contains("broken") {
            return json!({"includePaths": ["[unclosed"]}).to_string();
        }
        let paths: Vec<String> = request
            .split_whitespace()
            .filter(|w| w.starts_with('/'))
            .map(|w| format!("^{}(/.*)?$", w.trim_end_matches([',', '.'])))
            .collect();
        let limit = request.split_whitespace().find_map(|w| w.parse::<u64>().ok());
        return json!({"includePaths": paths, "limit": limit, "allowSubdomains": null}).to_string();
    }
    if system.contains("extract structured data") {
        return format!("```json\n{}\n```", json!({"title": title(user)}));
    }
    "I do not know this task.".to_owned()
}

/// One step of the browsing agent: type "quokka" into the text box, press Enter, then
/// answer with the page's line about the search.
fn browse(user: &str) -> Value {
    let steps = user
        .split("Steps so far:\n")
        .nth(1)
        .and_then(|s| s.split("\n\nPage now:").next())
        .unwrap_or_default();
    let box_ref = user
        .lines()
        .find(|l| l.contains("] input:text"))
        .and_then(|l| l.trim_start_matches('[').split(']').next())
        .and_then(|n| n.parse::<u64>().ok());
    if steps == "(none)" {
        return json!({"action": "type", "ref": box_ref, "text": "quokka"});
    }
    if !steps.contains("press") {
        return json!({"action": "press", "key": "Enter"});
    }
    let found = user.lines().find(|l| l.contains("Searched for")).unwrap_or("nothing found");
    json!({"action": "answer", "text": found.trim()})
}
