//! `POST /v2/support/docs-search` (spec §2.11, §4.12): questions about this server answered
//! from its own documentation. The passages that best match the question are retrieved
//! from the documentation index (`search::docs`); the language model writes an answer
//! grounded in them and names the ones it used; without a model the best passage is the
//! answer (extractive), and `warning` says so. Every answer cites its passages in
//! `evidence`.

use std::time::{Duration, Instant};

use actix_web::{HttpResponse, web};
use serde::Deserialize;
use serde_json::{Value, json};

use super::auth::Authenticated;
use super::error::ApiError;
use super::{AppState, body};
use crate::llm::{Llm, Payer, Usage};
use crate::model::{Code, JobId};
use crate::search::docs::{self, Passage};

/// Longest question (characters).
const MAX_QUESTION_CHARS: usize = 2_000;
/// Passages retrieved per question.
const PASSAGES: usize = 5;
/// Characters of a passage quoted in an extractive answer.
const EXTRACT_CHARS: usize = 1_200;

const TASK: &str = "You answer questions about ferrocrawl, a self-hosted web scraping service, \
using only the numbered documentation excerpts the user gives. Answer concisely. If the excerpts \
do not answer the question, say that the documentation does not cover it. Return {\"answer\": \
\"...\", \"sources\": [numbers of the excerpts you used]}.";

/// Registers the route.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/v2/support/docs-search").route(web::post().to(docs_search)));
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Question {
    question: Option<Value>,
    #[allow(dead_code)]
    origin: Option<String>,
    #[allow(dead_code)]
    integration: Option<String>,
}

/// The keys the body may have (for the API document).
pub fn accepted_keys() -> &'static [&'static str] {
    body::field_names::<Question>()
}

async fn docs_search(
    state: web::Data<AppState>,
    auth: Authenticated,
    bytes: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    let started = Instant::now();
    let request: Question = body::typed(Value::Object(body::object(&bytes)?), "")?;
    let question = match request.question {
        Some(Value::String(q)) if !q.trim().is_empty() && q.chars().count() <= MAX_QUESTION_CHARS => q,
        _ => {
            return Err(ApiError::bad_request(format!(
                "`question` is required: a string of 1 to {MAX_QUESTION_CHARS} characters"
            )));
        }
    };
    let docs =
        docs::shared().map_err(|e| ApiError::new(Code::Unknown, format!("documentation index: {e}")))?;
    let found: Vec<(&'static Passage, Vec<String>)> = docs.find(&question, PASSAGES);
    let (answer, used, usage, warning) = match (state.scraper.llm(), found.is_empty()) {
        (_, true) => (
            "The documentation has no passage about this question.".to_owned(),
            Vec::new(),
            Usage::default(),
            None,
        ),
        (Some(llm), false) => grounded(&state, llm.clone(), auth.payer(), &question, &found).await?,
        (None, false) => {
            let best = found[0].0;
            (
                excerpt(&best.text),
                vec![0],
                Usage::default(),
                Some(
                    "An extractive answer (the best-matching passage): no language model is configured (llm.base_url)."
                        .to_owned(),
                ),
            )
        }
    };
    let evidence: Vec<Value> = used
        .iter()
        .filter_map(|&i| found.get(i))
        .map(|(p, words)| {
            json!({"pathOrUrl": p.path, "reason": format!("Matches {} of the question's words: {}", words.len(), words.join(", "))})
        })
        .collect();
    let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    let mut out = json!({
        "success": true,
        "requestId": JobId::new().to_string(),
        "answer": answer,
        "evidence": evidence,
        "usage": {"inputTokens": usage.input, "outputTokens": usage.output, "totalTokens": usage.total()},
        "durationMs": duration_ms,
    });
    if let Some(warning) = warning {
        out["warning"] = Value::String(warning);
    }
    Ok(HttpResponse::Ok().json(out))
}

/// The model's answer over the passages, and which it used (indexes into `found`).
async fn grounded(
    state: &AppState,
    llm: Llm,
    payer: Payer,
    question: &str,
    found: &[(&'static Passage, Vec<String>)],
) -> Result<(String, Vec<usize>, Usage, Option<String>), ApiError> {
    let mut input = String::new();
    for (i, (p, _)) in found.iter().enumerate() {
        input.push_str(&format!("[{}] {}\n{}\n\n", i + 1, p.path, p.text));
    }
    input.push_str(&format!("Question: {question}"));
    let schema = json!({"type": "object", "properties": {"answer": {"type": "string"},
        "sources": {"type": "array", "items": {"type": "integer"}}}, "required": ["answer"]});
    let deadline = tokio::time::Instant::now() + Duration::from_millis(llm.settings().timeout_ms);
    let reply = state
        .off_worker(async move {
            llm.structured(&payer, TASK, &input, Some(&schema), deadline)
                .await
                .map_err(|e| ApiError::new(Code::LlmFailed, format!("language model: {e}")))
        })
        .await?;
    let answer = reply.value.get("answer").and_then(Value::as_str).unwrap_or_default().trim().to_owned();
    let mut used: Vec<usize> = reply
        .value
        .get("sources")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(Value::as_u64)
                .filter_map(|n| usize::try_from(n).ok()?.checked_sub(1))
                .filter(|i| *i < found.len())
                .collect()
        })
        .unwrap_or_default();
    used.dedup();
    let mut warnings = reply.warnings;
    if used.is_empty() {
        warnings.push("The model named no excerpt; the evidence lists the passages it was given.".to_owned());
        used = (0..found.len()).collect();
    }
    let warning = (!warnings.is_empty()).then(|| warnings.join(" "));
    Ok((answer, used, reply.usage, warning))
}

/// The start of `text`, cut at a paragraph or word.
fn excerpt(text: &str) -> String {
    if text.len() <= EXTRACT_CHARS {
        return text.trim().to_owned();
    }
    let mut end = EXTRACT_CHARS;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let cut = &text[..end];
    let at = cut.rfind("\n\n").or_else(|| cut.rfind(' ')).unwrap_or(end);
    format!("{}…", cut[..at].trim_end())
}
