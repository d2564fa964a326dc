//! `[llm]`: the language-model server every model feature talks to, through the OpenAI
//! chat-completions protocol (Ollama, vLLM, llama.cpp's server, LM Studio, hosted APIs).
//! Without `base_url` the features that need a model answer `FEATURE_NOT_AVAILABLE`.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// `[llm]`
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LlmSettings {
    /// The server's base URL including its version path, e.g. `http://127.0.0.1:11434/v1`;
    /// empty: no model.
    pub base_url: String,
    /// Bearer token sent to the server, when it wants one.
    pub api_key: String,
    /// File holding the token instead (first line), so it stays out of the config.
    pub api_key_file: Option<PathBuf>,
    /// Model name sent with every call.
    pub model: String,
    /// Model for summaries and the cleaning pass; empty: `model`.
    pub cheap_model: String,
    /// Longest one call may take, ms.
    pub timeout_ms: u64,
    /// Calls in flight across the server at most; more wait, served round-robin by team.
    pub max_concurrency: usize,
    /// Input tokens per call at most (estimated with the cl100k tokenizer); longer page
    /// text is cut, with a warning.
    pub max_input_tokens: usize,
    /// Output tokens asked for at most (`max_tokens`).
    pub max_output_tokens: usize,
    /// How long an extract or agent job and its result are kept after it was accepted,
    /// seconds.
    pub job_ttl_secs: u64,
}

impl Default for LlmSettings {
    fn default() -> Self {
        Self {
            base_url: String::new(),
            api_key: String::new(),
            api_key_file: None,
            model: String::new(),
            cheap_model: String::new(),
            timeout_ms: 60_000,
            max_concurrency: 4,
            max_input_tokens: 12_000,
            max_output_tokens: 2_048,
            job_ttl_secs: 86_400,
        }
    }
}

impl LlmSettings {
    /// Whether a model server is configured.
    pub fn enabled(&self) -> bool {
        !self.base_url.trim().is_empty()
    }

    /// Checks the settings: the key at fault and why.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        if self.job_ttl_secs == 0 {
            return Err(("llm.job_ttl_secs", "must be at least 1".to_owned()));
        }
        if !self.enabled() {
            return Ok(());
        }
        let url = url::Url::parse(self.base_url.trim())
            .map_err(|e| ("llm.base_url", format!("is not a URL: {e}")))?;
        let fail = |key, reason: &str| Err((key, reason.to_owned()));
        if !matches!(url.scheme(), "http" | "https") {
            return fail("llm.base_url", "must be an http or https URL");
        }
        if self.model.trim().is_empty() {
            return fail("llm.model", "must name the model when llm.base_url is set");
        }
        if self.max_concurrency == 0 {
            return fail("llm.max_concurrency", "must be at least 1");
        }
        if self.max_input_tokens < 256 {
            return fail("llm.max_input_tokens", "must be at least 256");
        }
        if self.max_output_tokens < 16 {
            return fail("llm.max_output_tokens", "must be at least 16");
        }
        if self.timeout_ms == 0 {
            return fail("llm.timeout_ms", "must be at least 1");
        }
        Ok(())
    }

    /// The bearer token: `api_key`, or the first line of `api_key_file`.
    pub fn token(&self) -> Result<String, String> {
        match &self.api_key_file {
            Some(path) => std::fs::read_to_string(path)
                .map(|text| text.lines().next().unwrap_or_default().trim().to_owned())
                .map_err(|e| format!("llm.api_key_file {}: {e}", path.display())),
            None => Ok(self.api_key.trim().to_owned()),
        }
    }

    /// How long a model job is kept after it was accepted, ms.
    pub fn job_ttl_ms(&self) -> u64 {
        self.job_ttl_secs.saturating_mul(1000)
    }

    /// The model for summaries and cleaning.
    pub fn cheap(&self) -> &str {
        if self.cheap_model.trim().is_empty() { &self.model } else { &self.cheap_model }
    }
}
