//! The interact `prompt` (spec §4.8): an agent loop over the scrape's live browser session.
//! Each step reads a snapshot of the page (title, URL, visible text, and its interactive
//! elements numbered, the numbers written into the page as `data-fc-ref`), asks the
//! language model for one action as JSON (click, type, press, scroll, navigate, wait, or
//! answer), and performs it in the page, where the live view shows it. The loop ends with
//! the model's answer, after [`MAX_STEPS`] steps, or at the request's timeout; `output` is
//! the answer, `result` the final snapshot, `stdout` the steps taken.

use std::time::Duration;

use ractor::ActorRef;
use serde_json::{Value, json};
use tokio::time::Instant;

use crate::actors::browser::SessionMsg;
use crate::actors::browser::code::{CodeOutcome, Language};
use crate::llm::{Llm, Payer};

/// Most actions per prompt.
pub const MAX_STEPS: usize = 12;
/// Longest wait the model may ask for.
const MAX_WAIT_MS: u64 = 5_000;
/// Time for the page to react after an action.
const SETTLE: Duration = Duration::from_millis(300);

const TASK: &str = "You operate a web browser to do the user's task. Each turn you see the page \
(title, URL, visible text, and its interactive elements numbered [ref]) and the steps taken so far. \
Reply with one action as a JSON object: {\"action\": \"click\", \"ref\": N}, {\"action\": \"type\", \
\"ref\": N, \"text\": \"...\"}, {\"action\": \"press\", \"key\": \"Enter\"}, {\"action\": \"scroll\", \
\"direction\": \"down\"}, {\"action\": \"navigate\", \"url\": \"...\"}, {\"action\": \"wait\", \"ms\": N}, \
or {\"action\": \"answer\", \"text\": \"...\"} when the task is done or cannot be done.";

/// Reads the page and numbers its interactive elements.
const SNAPSHOT: &str = r#"(() => {
  const items = [];
  let n = 0;
  document.querySelectorAll('[data-fc-ref]').forEach(el => el.removeAttribute('data-fc-ref'));
  for (const el of document.querySelectorAll('a[href], button, input, select, textarea, [role=button], [role=link], [onclick]')) {
    const box = el.getBoundingClientRect();
    if (box.width === 0 && box.height === 0) continue;
    n += 1;
    el.setAttribute('data-fc-ref', String(n));
    const kind = el.getAttribute('role') || el.tagName.toLowerCase() + (el.type ? ':' + el.type : '');
    const name = (el.getAttribute('aria-label') || el.innerText || el.value || el.placeholder || el.name || el.title || '')
      .trim().replace(/\s+/g, ' ').slice(0, 80);
    items.push('[' + n + '] ' + kind + ' "' + name + '"');
    if (n >= 150) break;
  }
  const text = (document.body ? document.body.innerText : '').replace(/\n{3,}/g, '\n\n').slice(0, 4000);
  return 'Title: ' + document.title + '\nURL: ' + location.href + '\n\nText:\n' + text +
    '\n\nInteractive elements:\n' + items.join('\n');
})()"#;

/// What the loop produced.
#[derive(Debug, Default)]
pub struct AgentOutcome {
    /// The run as an interact answer shows it (`result` is the final snapshot).
    pub outcome: CodeOutcome,
    /// The model's answer.
    pub output: Option<String>,
}

/// Runs `prompt` in the session of `actor` until the model answers, for at most `timeout`.
pub async fn run(
    llm: &Llm,
    payer: &Payer,
    actor: &ActorRef<SessionMsg>,
    prompt: &str,
    timeout: Duration,
) -> AgentOutcome {
    let deadline = Instant::now() + timeout;
    let mut log: Vec<String> = Vec::new();
    let mut answer = None;
    let mut snapshot = String::new();
    let schema = json!({"type": "object", "properties": {
        "action": {"enum": ["click", "type", "press", "scroll", "navigate", "wait", "answer"]},
        "ref": {"type": "integer"}, "text": {"type": "string"}, "key": {"type": "string"},
        "url": {"type": "string"}, "direction": {"enum": ["up", "down"]}, "ms": {"type": "integer"},
    }, "required": ["action"]});
    for step in 1..=MAX_STEPS {
        snapshot = match exec(actor, SNAPSHOT, deadline).await {
            Ok(text) => text,
            Err(e) => return failed(log, snapshot, e),
        };
        let steps = if log.is_empty() { "(none)".to_owned() } else { log.join("\n") };
        let input = format!("Task: {prompt}\n\nSteps so far:\n{steps}\n\nPage now:\n{snapshot}");
        let chosen = match llm.structured(payer, TASK, &input, Some(&schema), deadline).await {
            Ok(found) => found.value,
            Err(crate::llm::LlmError::Timeout { .. }) if Instant::now() >= deadline => break,
            Err(e) => return failed(log, snapshot, format!("language model: {e}")),
        };
        let Some((line, script)) = action(&chosen) else {
            answer = Some(chosen.get("text").and_then(Value::as_str).unwrap_or_default().to_owned());
            log.push(format!("{step}. answer"));
            break;
        };
        log.push(format!("{step}. {line}"));
        if let Err(e) = exec(actor, &script, deadline).await {
            log.push(format!("   failed: {e}"));
        }
        tokio::time::sleep(SETTLE.min(deadline.saturating_duration_since(Instant::now()))).await;
    }
    if answer.is_some() {
        // The page as the answer left it.
        if let Ok(text) = exec(actor, SNAPSHOT, deadline).await {
            snapshot = text;
        }
    }
    let killed = answer.is_none() && Instant::now() >= deadline;
    let error = match (&answer, killed) {
        (Some(_), _) => None,
        (None, true) => Some("The task did not finish within the timeout.".to_owned()),
        (None, false) => Some(format!("The task did not finish within {MAX_STEPS} steps.")),
    };
    let outcome = CodeOutcome {
        stdout: log.join("\n"),
        result: snapshot,
        exit_code: i32::from(answer.is_none()),
        killed,
        error,
        ..CodeOutcome::default()
    };
    AgentOutcome { outcome, output: answer }
}

fn failed(log: Vec<String>, snapshot: String, error: String) -> AgentOutcome {
    let outcome = CodeOutcome {
        stdout: log.join("\n"),
        stderr: error.clone(),
        result: snapshot,
        exit_code: 1,
        error: Some(error),
        ..CodeOutcome::default()
    };
    AgentOutcome { outcome, output: None }
}

/// The step's description and the script that performs it; `None` for an answer.
fn action(chosen: &Value) -> Option<(String, String)> {
    let text = |key: &str| chosen.get(key).and_then(Value::as_str).unwrap_or_default().to_owned();
    let quoted = |s: &str| serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_owned());
    let number = chosen.get("ref").and_then(Value::as_u64).unwrap_or(0);
    let element = format!("document.querySelector('[data-fc-ref=\"{number}\"]')");
    Some(match chosen.get("action").and_then(Value::as_str).unwrap_or("answer") {
        "click" => (
            format!("click [{number}]"),
            format!(
                "(() => {{ const el = {element}; if (!el) throw new Error('no element [{number}]'); el.scrollIntoView(); el.click(); }})()"
            ),
        ),
        "type" => {
            let value = quoted(&text("text"));
            (
                format!("type {value} into [{number}]"),
                format!(
                    "(() => {{ const el = {element}; if (!el) throw new Error('no element [{number}]'); el.focus(); el.value = {value}; el.dispatchEvent(new Event('input', {{bubbles: true}})); el.dispatchEvent(new Event('change', {{bubbles: true}})); }})()"
                ),
            )
        }
        "press" => {
            let key = quoted(&text("key"));
            (
                format!("press {key}"),
                format!(
                    "(() => {{ const el = document.activeElement || document.body; for (const type of ['keydown', 'keyup']) el.dispatchEvent(new KeyboardEvent(type, {{key: {key}, bubbles: true}})); if ({key} === 'Enter' && el.form) el.form.requestSubmit(); }})()"
                ),
            )
        }
        "scroll" => {
            let sign = if text("direction") == "up" { "-" } else { "" };
            (
                format!("scroll {}", if sign.is_empty() { "down" } else { "up" }),
                format!("window.scrollBy(0, {sign}window.innerHeight * 0.8)"),
            )
        }
        "navigate" => {
            let url = quoted(&text("url"));
            (format!("navigate to {url}"), format!("location.href = {url}"))
        }
        "wait" => {
            let ms = chosen.get("ms").and_then(Value::as_u64).unwrap_or(1_000).min(MAX_WAIT_MS);
            (format!("wait {ms} ms"), format!("new Promise(done => setTimeout(done, {ms}))"))
        }
        _ => return None,
    })
}

/// Runs `script` in the page; its value as text.
async fn exec(actor: &ActorRef<SessionMsg>, script: &str, deadline: Instant) -> Result<String, String> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err("out of time".to_owned());
    }
    let call = actor
        .call(
            |reply| SessionMsg::Execute {
                code: script.to_owned(),
                language: Language::Node,
                timeout: left,
                reply,
            },
            Some(left + Duration::from_secs(5)),
        )
        .await;
    match call {
        Ok(ractor::rpc::CallResult::Success(Ok(outcome))) => match outcome.error {
            None => Ok(outcome.result),
            Some(error) => Err(error),
        },
        Ok(ractor::rpc::CallResult::Success(Err(why))) => Err(format!("the browser session ended: {why}")),
        _ => Err("the browser session stopped".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_become_scripts() {
        let (line, script) =
            action(&json!({"action": "type", "ref": 3, "text": "a \"quoted\" word"})).expect("action");
        assert_eq!(line, r#"type "a \"quoted\" word" into [3]"#);
        assert!(script.contains(r#"el.value = "a \"quoted\" word""#), "{script}");
        assert!(action(&json!({"action": "answer", "text": "done"})).is_none());
        let (_, wait) = action(&json!({"action": "wait", "ms": 60000})).expect("wait");
        assert!(wait.contains("5000"), "{wait}");
    }
}
