//! The language model behind every model feature (formats `json`, `summary`, `question`,
//! `highlights`, `onlyCleanContent`, crawl prompts, extract and agent jobs, docs search):
//! one OpenAI chat-completions client ([`openai`]) behind the [`ChatModel`] trait, shared
//! by the whole server through [`Llm`], which
//!
//! - lets at most `llm.max_concurrency` calls run, the others waiting in a queue served
//!   round-robin by team ([`gate`]), so one team's crawl cannot starve another's scrape;
//! - retries once after a 429, waiting what `Retry-After` asks when it fits the deadline;
//! - records the tokens each call used for its team and API key (the server's own estimate
//!   when the model server leaves `usage` out);
//! - asks for structured output the strongest way the server accepts ([`structured`]).

pub mod gate;
pub mod openai;
pub mod pretokenize;
pub mod prompts;
mod ranks;
pub mod structured;
pub mod tokens;

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::Value;
use tokio::time::Instant;

pub use crate::config::LlmSettings;

use crate::model::TeamId;
use crate::store::Store;

/// Who a call is made for: its team, and the API key's label when known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Payer {
    /// The team.
    pub team: TeamId,
    /// The key's label (see [`crate::teams::key_label`]).
    pub key: Option<String>,
}

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// `system`, `user` or `assistant`.
    pub role: &'static str,
    /// Its text.
    pub content: String,
}

impl Message {
    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Self { role: "system", content: content.into() }
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Self { role: "user", content: content.into() }
    }

    /// An assistant message (the model's earlier answer, for a retry).
    pub fn assistant(content: impl Into<String>) -> Self {
        Self { role: "assistant", content: content.into() }
    }
}

/// What the answer must look like, as `response_format` asks for it.
#[derive(Debug, Clone, PartialEq)]
pub enum Shape {
    /// Free text (no `response_format`).
    Text,
    /// Any JSON object (`json_object`).
    JsonObject,
    /// JSON valid against this schema (`json_schema`, strict off).
    JsonSchema(Value),
}

/// The model tier: the main model, or the cheaper one for summaries and cleaning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tier {
    /// `llm.model`
    Main,
    /// `llm.cheap_model` (or `llm.model`)
    Cheap,
}

/// One chat-completions call.
#[derive(Debug, Clone)]
pub struct ChatRequest {
    /// Model name.
    pub model: String,
    /// The conversation.
    pub messages: Vec<Message>,
    /// `max_tokens`.
    pub max_tokens: usize,
    /// `response_format`.
    pub shape: Shape,
}

/// Tokens a call used.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// Prompt tokens.
    pub input: u64,
    /// Completion tokens.
    pub output: u64,
}

impl Usage {
    /// Both together.
    pub fn total(&self) -> u64 {
        self.input + self.output
    }

    /// Adds `other` in.
    pub fn add(&mut self, other: Usage) {
        self.input += other.input;
        self.output += other.output;
    }
}

/// The model's answer.
#[derive(Debug, Clone)]
pub struct ChatReply {
    /// The message text.
    pub text: String,
    /// Tokens, when the server reported them.
    pub usage: Option<Usage>,
}

/// Why a call gave no answer.
#[derive(Debug, Clone, thiserror::Error)]
pub enum LlmError {
    /// No model server is configured.
    #[error("no language model is configured (llm.base_url)")]
    NotConfigured,
    /// The server refused the requested `response_format`.
    #[error("the model server does not support this response format: {0}")]
    Unsupported(String),
    /// No answer within the time allowed.
    #[error("the model server did not answer within {ms} ms")]
    Timeout {
        /// The time allowed.
        ms: u64,
    },
    /// 429 and no time left to wait for it to pass.
    #[error("the model server is rate limiting requests")]
    RateLimited {
        /// What `Retry-After` asked for.
        retry_after: Option<Duration>,
    },
    /// Another HTTP error.
    #[error("the model server answered HTTP {status}: {message}")]
    Http {
        /// Status code.
        status: u16,
        /// Its error message.
        message: String,
    },
    /// The server could not be reached.
    #[error("the model server could not be reached: {0}")]
    Transport(String),
    /// An answer that is not a chat completion.
    #[error("the model server's answer could not be read: {0}")]
    BadReply(String),
}

/// A chat-completions server.
pub trait ChatModel: Send + Sync + fmt::Debug {
    /// Sends one request; `timeout` bounds the whole exchange.
    fn chat<'a>(
        &'a self,
        request: &'a ChatRequest,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<ChatReply, LlmError>>;
}

/// The server's language model: client, fair queue, usage records.
#[derive(Clone)]
pub struct Llm {
    inner: Arc<Inner>,
}

struct Inner {
    settings: LlmSettings,
    model: Arc<dyn ChatModel>,
    gate: gate::FairGate,
    store: Store,
    /// The strongest structured-output mode the server accepted last (see [`structured`]).
    mode: AtomicU8,
}

impl fmt::Debug for Llm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Llm").field("model", &self.inner.settings.model).finish_non_exhaustive()
    }
}

impl Llm {
    /// The model of `settings` (None when `llm.base_url` is empty); usage goes to `store`.
    pub fn from_settings(settings: &LlmSettings, store: Store) -> Result<Option<Self>, String> {
        if !settings.enabled() {
            return Ok(None);
        }
        let client = openai::OpenAi::new(settings)?;
        tokens::warm_in_background();
        Ok(Some(Self::with_model(settings, Arc::new(client), store)))
    }

    /// `model` serving calls with `settings`' limits.
    pub fn with_model(settings: &LlmSettings, model: Arc<dyn ChatModel>, store: Store) -> Self {
        Self {
            inner: Arc::new(Inner {
                settings: settings.clone(),
                model,
                gate: gate::FairGate::new(settings.max_concurrency),
                store,
                mode: AtomicU8::new(0),
            }),
        }
    }

    /// The settings.
    pub fn settings(&self) -> &LlmSettings {
        &self.inner.settings
    }

    /// One call for `payer`, finished by `deadline`: waits its turn, retries once after a
    /// 429 when `Retry-After` fits the time left, and records the tokens used.
    pub async fn call(
        &self,
        payer: &Payer,
        tier: Tier,
        messages: Vec<Message>,
        shape: Shape,
        deadline: Instant,
    ) -> Result<ChatReply, LlmError> {
        let settings = &self.inner.settings;
        let model = match tier {
            Tier::Main => settings.model.clone(),
            Tier::Cheap => settings.cheap().to_owned(),
        };
        let request = ChatRequest { model, messages, max_tokens: settings.max_output_tokens, shape };
        let waited = Instant::now();
        let _permit = tokio::time::timeout_at(deadline, self.inner.gate.enter(payer.team.as_str()))
            .await
            .map_err(|_| LlmError::Timeout { ms: ms_between(waited, deadline) })?;
        metrics::histogram!("llm_queue_seconds").record(waited.elapsed().as_secs_f64());
        let mut retried = false;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let allowed = left.min(Duration::from_millis(settings.timeout_ms));
            if allowed.is_zero() {
                return Err(LlmError::Timeout { ms: settings.timeout_ms });
            }
            let started = Instant::now();
            let answer = self.inner.model.chat(&request, allowed).await;
            let outcome = match &answer {
                Ok(_) => "ok",
                Err(LlmError::RateLimited { .. }) => "rate_limited",
                Err(LlmError::Timeout { .. }) => "timeout",
                Err(_) => "error",
            };
            metrics::counter!("llm_calls_total", "outcome" => outcome).increment(1);
            metrics::histogram!("llm_call_seconds").record(started.elapsed().as_secs_f64());
            match answer {
                Ok(mut reply) => {
                    let usage = reply.usage.unwrap_or_else(|| tokens::estimate(&request, &reply.text));
                    reply.usage = Some(usage);
                    self.record(payer, usage);
                    return Ok(reply);
                }
                Err(LlmError::RateLimited { retry_after }) if !retried => {
                    let wait = retry_after.unwrap_or(Duration::from_secs(1));
                    if Instant::now() + wait >= deadline {
                        return Err(LlmError::RateLimited { retry_after });
                    }
                    tokio::time::sleep(wait).await;
                    retried = true;
                }
                Err(e) => return Err(e),
            }
        }
    }

    fn record(&self, payer: &Payer, usage: Usage) {
        metrics::counter!("llm_tokens_total", "kind" => "input").increment(usage.input);
        metrics::counter!("llm_tokens_total", "kind" => "output").increment(usage.output);
        let now = crate::model::time::now_ms();
        if let Err(e) = self.inner.store.tokens.add(&payer.team, payer.key.as_deref(), usage.total(), now) {
            tracing::warn!(error = %e, "token use not recorded");
        }
    }

    /// The structured-output mode to try first (0 `json_schema`, 1 `json_object`, 2 plain).
    fn mode(&self) -> u8 {
        self.inner.mode.load(Ordering::Relaxed)
    }

    /// Remembers that the server refused every mode below `mode`.
    fn settle_mode(&self, mode: u8) {
        self.inner.mode.fetch_max(mode, Ordering::Relaxed);
    }
}

fn ms_between(from: Instant, to: Instant) -> u64 {
    u64::try_from(to.saturating_duration_since(from).as_millis()).unwrap_or(u64::MAX)
}
