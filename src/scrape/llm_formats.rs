//! The formats a language model produces from a page's Markdown: `onlyCleanContent`
//! first (the other formats read the cleaned text), then `json`, `summary`, `question`,
//! `query` and `highlights`, asked concurrently through the server's model queue, within
//! the scrape's deadline. The page is cut at `llm.max_input_tokens` (with a warning);
//! quotes and highlights the model did not copy verbatim from the page are dropped (with a
//! warning). A model that fails fails the scrape with `LLM_ERROR` (or `SCRAPE_TIMEOUT`).

use serde_json::{Value, json};
use tokio::time::Instant;

use super::{ScrapeError, ScrapeJob};
use crate::llm::{Llm, LlmError, Message, Payer, Shape, Tier, prompts, tokens};
use crate::model::{Document, JsonSpec};

/// Tokens kept free of the page in each call, for the instructions and the question.
const PROMPT_RESERVE: usize = 1_000;

/// Produces the model formats `job` asks for into `doc`; returns what change tracking's
/// json mode extracted, when it is on.
pub(super) async fn apply(
    llm: Option<&Llm>,
    job: &ScrapeJob,
    doc: &mut Document,
    warnings: &mut Vec<String>,
    deadline: Instant,
) -> Result<Option<Value>, ScrapeError> {
    let options = &job.options;
    let formats = &options.formats;
    let Some(llm) = llm else {
        warnings.push(
            "The language-model formats were skipped: this server has no language model (llm.base_url)."
                .to_owned(),
        );
        if !formats.markdown {
            doc.markdown = None;
        }
        return Ok(None);
    };
    let payer = Payer { team: job.team.clone(), key: options.payer_key.clone() };
    let mut markdown = doc.markdown.take().unwrap_or_default();
    if options.only_clean_content {
        markdown = clean(llm, &payer, markdown, warnings, deadline).await?;
    }
    let limit = llm.settings().max_input_tokens.saturating_sub(PROMPT_RESERVE).max(256);
    let (text, was_cut) = tokens::cut_off_worker(markdown.clone(), limit).await;
    if was_cut {
        warnings.push(format!(
            "The page was cut to {limit} tokens (cl100k estimate) for the language model (llm.max_input_tokens)."
        ));
    }
    let page = prompts::page(job.url.as_str(), doc.metadata.title.as_deref(), &text);
    let summary = async {
        if !formats.summary {
            return Ok(None);
        }
        let messages = vec![Message::system(prompts::SUMMARY), Message::user(page.as_str())];
        let reply = llm.call(&payer, Tier::Cheap, messages, Shape::Text, deadline).await?;
        Ok::<_, LlmError>(Some(reply.text.trim().to_owned()))
    };
    let extracted = extract(llm, &payer, &page, formats.json.as_ref(), deadline);
    let tracked_spec = formats.change_tracking.as_ref().and_then(|c| c.json.as_ref());
    let tracked = extract(llm, &payer, &page, tracked_spec, deadline);
    let question = formats.question.as_deref().or(formats
        .query
        .as_ref()
        .filter(|q| !q.direct_quote)
        .map(|q| q.prompt.as_str()));
    let answer = async {
        let Some(question) = question else { return Ok::<_, LlmError>(None) };
        let messages = vec![
            Message::system(prompts::QUESTION),
            Message::user(format!("{page}\n\nQuestion: {question}")),
        ];
        let reply = llm.call(&payer, Tier::Main, messages, Shape::Text, deadline).await?;
        Ok(Some(reply.text.trim().to_owned()))
    };
    let quote_request = formats.query.as_ref().filter(|q| q.direct_quote).map(|q| q.prompt.as_str());
    let direct = quotes(llm, &payer, &page, quote_request, deadline);
    let highlights = quotes(llm, &payer, &page, formats.highlights.as_deref(), deadline);
    let (summary, extracted, tracked, answer, direct, highlights) =
        tokio::join!(summary, extracted, tracked, answer, direct, highlights);
    doc.summary = summary?;
    if let Some(found) = extracted? {
        warnings.extend(found.warnings);
        doc.json = Some(found.value);
    }
    doc.answer = answer?;
    if let Some(kept) = direct? {
        warnings.extend(unquoted(kept.1, "quoted answer"));
        doc.answer = Some(kept.0.join("\n\n"));
    }
    if let Some(kept) = highlights? {
        warnings.extend(unquoted(kept.1, "highlights"));
        doc.highlights = Some(kept.0.join("\n\n"));
    }
    let tracked = tracked?.map(|found| {
        warnings.extend(found.warnings);
        found.value
    });
    if formats.markdown {
        doc.markdown = Some(markdown);
    }
    Ok(tracked)
}

/// What `spec` asks for, extracted from `page`.
async fn extract(
    llm: &Llm,
    payer: &Payer,
    page: &str,
    spec: Option<&JsonSpec>,
    deadline: Instant,
) -> Result<Option<crate::llm::structured::Structured>, LlmError> {
    let Some(spec) = spec else { return Ok(None) };
    let task = match &spec.prompt {
        Some(prompt) => format!("{}\nWhat to extract: {prompt}", prompts::EXTRACT),
        None => prompts::EXTRACT.to_owned(),
    };
    let schema = spec.schema_value();
    llm.structured(payer, &task, page, schema.as_ref(), deadline).await.map(Some)
}

/// Verbatim passages of `page` answering `request`, and how many the model gave that were
/// not verbatim.
async fn quotes(
    llm: &Llm,
    payer: &Payer,
    page: &str,
    request: Option<&str>,
    deadline: Instant,
) -> Result<Option<(Vec<String>, usize)>, LlmError> {
    let Some(request) = request else { return Ok(None) };
    let schema = json!({"type": "object", "properties": {"quotes": {"type": "array", "items": {"type": "string"}}},
        "required": ["quotes"]});
    let input = format!("{page}\n\nRequest: {request}");
    let found = llm.structured(payer, prompts::QUOTES, &input, Some(&schema), deadline).await?;
    let given: Vec<String> = found
        .value
        .get("quotes")
        .and_then(Value::as_array)
        .map(|list| list.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default();
    Ok(Some(prompts::verbatim(page, &given)))
}

fn unquoted(dropped: usize, what: &str) -> Option<String> {
    (dropped > 0).then(|| {
        format!("{dropped} passage(s) the model gave for the {what} were not verbatim text of the page and were dropped.")
    })
}

/// The cleaning pass: the Markdown without residual boilerplate, or as it was (with a
/// warning) when it is longer than the model may write back.
async fn clean(
    llm: &Llm,
    payer: &Payer,
    markdown: String,
    warnings: &mut Vec<String>,
    deadline: Instant,
) -> Result<String, LlmError> {
    let limit = llm.settings().max_output_tokens;
    let size = if markdown.len() <= limit {
        0
    } else {
        // Counted on the blocking pool: a long page takes milliseconds.
        let text = markdown.clone();
        tokio::task::spawn_blocking(move || tokens::count(&text)).await.unwrap_or(usize::MAX)
    };
    if size > limit {
        warnings.push(format!(
            "onlyCleanContent was skipped: the Markdown ({size} tokens) is longer than the cleaning \
             model's output limit ({limit} tokens, llm.max_output_tokens); the original Markdown is kept."
        ));
        return Ok(markdown);
    }
    let messages = vec![Message::system(prompts::CLEAN), Message::user(markdown)];
    let reply = llm.call(payer, Tier::Cheap, messages, Shape::Text, deadline).await?;
    Ok(unfenced(reply.text.trim()).to_owned())
}

/// `text` without one code fence around all of it (```markdown … ```).
fn unfenced(text: &str) -> &str {
    let Some(rest) = text.strip_prefix("```") else { return text };
    let Some(body) = rest.strip_suffix("```") else { return text };
    body.split_once('\n').map_or(body, |(lang, body)| if lang.contains(' ') { rest } else { body }).trim()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fence_around_everything_is_removed() {
        assert_eq!(unfenced("```markdown\n# Title\n\nText\n```"), "# Title\n\nText");
        assert_eq!(unfenced("# Title\n\n```rust\ncode\n```"), "# Title\n\n```rust\ncode\n```");
    }
}
