//! The OpenAI chat-completions protocol (`POST {llm.base_url}/chat/completions`), as
//! Ollama, vLLM, llama.cpp's server, LM Studio and the hosted APIs speak it. Streaming is
//! asked off; a server that streams anyway (`text/event-stream`) is read to the end and its
//! deltas joined. A 400/422 that names the response format is reported as
//! [`LlmError::Unsupported`] so the caller can fall back to a weaker mode. The URL is the
//! operator's own setting, so it is not held to the address policy that guards the pages
//! users ask for.

use std::time::Duration;

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{ChatModel, ChatReply, ChatRequest, LlmError, LlmSettings, Shape, Usage};

/// Largest answer read (bytes).
const MAX_REPLY_BYTES: usize = 8 << 20;

/// A chat-completions server.
#[derive(Debug)]
pub struct OpenAi {
    client: reqwest::Client,
    url: String,
    token: String,
}

#[derive(Debug, Deserialize)]
struct Completion {
    #[serde(default)]
    choices: Vec<Choice>,
    usage: Option<RawUsage>,
}

#[derive(Debug, Deserialize)]
struct Choice {
    message: Option<Said>,
    delta: Option<Said>,
}

#[derive(Debug, Deserialize)]
struct Said {
    content: Option<String>,
    refusal: Option<String>,
}

#[derive(Debug, Deserialize)]
struct RawUsage {
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
}

impl RawUsage {
    fn usage(&self) -> Option<Usage> {
        Some(Usage { input: self.prompt_tokens?, output: self.completion_tokens? })
    }
}

impl OpenAi {
    /// The server of `settings`.
    pub fn new(settings: &LlmSettings) -> Result<Self, String> {
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| format!("llm client: {e}"))?;
        let url = format!("{}/chat/completions", settings.base_url.trim().trim_end_matches('/'));
        Ok(Self { client, url, token: settings.token()? })
    }

    async fn send(&self, request: &ChatRequest) -> Result<ChatReply, LlmError> {
        let messages: Vec<Value> =
            request.messages.iter().map(|m| json!({"role": m.role, "content": m.content})).collect();
        let mut body = json!({
            "model": request.model,
            "messages": messages,
            "max_tokens": request.max_tokens,
            "temperature": 0,
            "stream": false,
        });
        match &request.shape {
            Shape::Text => {}
            Shape::JsonObject => body["response_format"] = json!({"type": "json_object"}),
            Shape::JsonSchema(schema) => {
                body["response_format"] = json!({"type": "json_schema", "json_schema": {
                    "name": "extraction", "schema": schema, "strict": false,
                }});
            }
        }
        let mut builder = self.client.post(&self.url).json(&body);
        if !self.token.is_empty() {
            builder = builder.bearer_auth(&self.token);
        }
        let response = builder.send().await.map_err(|e| LlmError::Transport(e.to_string()))?;
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        let streamed = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        let bytes = read_bounded(response).await?;
        if status == 429 {
            return Err(LlmError::RateLimited { retry_after });
        }
        if !(200..300).contains(&status) {
            let message = error_message(&bytes);
            if matches!(status, 400 | 422 | 501) && request.shape != Shape::Text && names_format(&message) {
                return Err(LlmError::Unsupported(message));
            }
            return Err(LlmError::Http { status, message });
        }
        if streamed { read_stream(&bytes) } else { read_completion(&bytes) }
    }
}

impl ChatModel for OpenAi {
    fn chat<'a>(
        &'a self,
        request: &'a ChatRequest,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<ChatReply, LlmError>> {
        Box::pin(async move {
            let ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
            tokio::time::timeout(timeout, self.send(request)).await.map_err(|_| LlmError::Timeout { ms })?
        })
    }
}

async fn read_bounded(mut response: reqwest::Response) -> Result<Vec<u8>, LlmError> {
    let mut bytes = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| LlmError::Transport(e.to_string()))? {
        if bytes.len() + chunk.len() > MAX_REPLY_BYTES {
            return Err(LlmError::BadReply(format!("the answer is larger than {MAX_REPLY_BYTES} bytes")));
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

/// Whether an error message is about the response format.
fn names_format(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    ["response_format", "json_schema", "json_object", "response format", "structured output", "grammar"]
        .iter()
        .any(|w| m.contains(w))
}

/// The message of an error answer: `{"error": {"message": …}}`, `{"error": "…"}`,
/// `{"detail": …}`, or the text itself.
fn error_message(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let parsed: Option<Value> = serde_json::from_slice(bytes).ok();
    let found = parsed.as_ref().and_then(|v| {
        v.pointer("/error/message")
            .or_else(|| v.get("error"))
            .or_else(|| v.get("detail"))
            .or_else(|| v.get("message"))
            .map(|m| m.as_str().map_or_else(|| m.to_string(), str::to_owned))
    });
    let mut message = found.unwrap_or_else(|| text.trim().to_owned());
    if message.len() > 500 {
        let mut end = 500;
        while !message.is_char_boundary(end) {
            end -= 1;
        }
        message.truncate(end);
    }
    message
}

fn read_completion(bytes: &[u8]) -> Result<ChatReply, LlmError> {
    let completion: Completion = serde_json::from_slice(bytes)
        .map_err(|e| LlmError::BadReply(format!("not a chat completion: {e}")))?;
    let said = completion
        .choices
        .into_iter()
        .next()
        .and_then(|c| c.message)
        .ok_or_else(|| LlmError::BadReply("the completion has no message".to_owned()))?;
    let text = match (said.content, said.refusal) {
        (Some(text), _) => text,
        (None, Some(refusal)) => return Err(LlmError::BadReply(format!("the model refused: {refusal}"))),
        (None, None) => return Err(LlmError::BadReply("the message has no content".to_owned())),
    };
    Ok(ChatReply { text, usage: completion.usage.as_ref().and_then(RawUsage::usage) })
}

/// A server-sent-events answer: `data: {chunk}` lines up to `data: [DONE]`.
fn read_stream(bytes: &[u8]) -> Result<ChatReply, LlmError> {
    let text = String::from_utf8_lossy(bytes);
    let (mut out, mut usage, mut chunks) = (String::new(), None, 0);
    for line in text.lines() {
        let Some(data) = line.strip_prefix("data:").map(str::trim) else { continue };
        if data == "[DONE]" {
            break;
        }
        let chunk: Completion = serde_json::from_str(data)
            .map_err(|e| LlmError::BadReply(format!("unreadable stream chunk: {e}")))?;
        chunks += 1;
        if let Some(said) = chunk.choices.into_iter().next().and_then(|c| c.delta.or(c.message)) {
            out.push_str(said.content.as_deref().unwrap_or_default());
        }
        if let Some(u) = chunk.usage.as_ref().and_then(RawUsage::usage) {
            usage = Some(u);
        }
    }
    if chunks == 0 {
        return Err(LlmError::BadReply("an empty event stream".to_owned()));
    }
    Ok(ChatReply { text: out, usage })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completions_and_streams_are_read() {
        let reply = read_completion(
            br#"{"choices":[{"message":{"role":"assistant","content":"hi"}}],"usage":{"prompt_tokens":3,"completion_tokens":1}}"#,
        )
        .expect("reply");
        assert_eq!(reply.text, "hi");
        assert_eq!(reply.usage, Some(Usage { input: 3, output: 1 }));
        let reply = read_completion(br#"{"choices":[{"message":{"content":"x"}}]}"#).expect("reply");
        assert_eq!(reply.usage, None);
        let stream = "data: {\"choices\":[{\"delta\":{\"content\":\"He\"}}]}\n\n\
                      data: {\"choices\":[{\"delta\":{\"content\":\"llo\"}}]}\n\ndata: [DONE]\n";
        assert_eq!(read_stream(stream.as_bytes()).expect("stream").text, "Hello");
        assert!(read_completion(br#"{"choices":[{"message":{"refusal":"no"}}]}"#).is_err());
        assert!(read_completion(b"<html>").is_err());
    }

    #[test]
    fn error_messages_are_found() {
        assert_eq!(error_message(br#"{"error":{"message":"bad response_format"}}"#), "bad response_format");
        assert_eq!(error_message(br#"{"error":"nope"}"#), "nope");
        assert_eq!(error_message(b"plain failure\n"), "plain failure");
        assert!(names_format("json_schema is not supported by this model"));
        assert!(!names_format("model not found"));
    }
}
