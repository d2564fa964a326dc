//! Structured output from any chat-completions server, including local ones without
//! function calling or JSON modes:
//!
//! 1. ask with `response_format: json_schema` (the caller's schema, normalised as OpenAI's
//!    structured output wants it); a server that refuses it is asked with `json_object`,
//!    then with a plain prompt, and the weakest mode it needed is remembered for the next
//!    calls;
//! 2. read the first JSON value of the answer (code fences and prose around it allowed);
//! 3. validate it against the caller's schema as the model was given it (`jsonschema`;
//!    remote `$ref`s are not fetched), and when it is not JSON or not valid, ask once more
//!    with what was wrong.
//!
//! Whatever had to be repaired, or still fails validation, is said in the warnings.

use serde_json::{Map, Value};
use tokio::time::Instant;

use super::{LlmError, Message, Payer, Shape, Tier, Usage};
use crate::llm::Llm;

/// Most places in an answer where a JSON value is tried.
const MAX_STARTS: usize = 32;
/// Validation errors quoted back to the model or in a warning.
const MAX_ERRORS: usize = 8;

/// A value the model produced.
#[derive(Debug, Clone)]
pub struct Structured {
    /// The value.
    pub value: Value,
    /// Tokens used, over every attempt.
    pub usage: Usage,
    /// What had to be repaired, or what is still wrong.
    pub warnings: Vec<String>,
}

/// A compiled caller's schema.
pub type Checker = jsonschema::Validator;

/// Compiles `schema`, or says why it is not a usable JSON Schema.
pub fn compile(schema: &Value) -> Result<Checker, String> {
    if let Some(object) = schema.as_object()
        && object.get("type").and_then(Value::as_str) == Some("object")
        && object.get("properties").and_then(Value::as_object).is_none_or(Map::is_empty)
        && object.get("additionalProperties") == Some(&Value::Bool(true))
    {
        return Err(
            "an object schema needs `properties` (additionalProperties alone cannot be extracted)".to_owned()
        );
    }
    jsonschema::validator_for(schema).map_err(|e| e.to_string())
}

/// `schema` as OpenAI's structured output accepts it: `additionalProperties` dropped from
/// objects that list `properties`, and `required` entries that are not properties pruned.
pub fn normalise(schema: &Value) -> Value {
    match schema {
        Value::Object(object) => {
            let mut out = Map::new();
            let properties = object.get("properties").and_then(Value::as_object);
            for (key, value) in object {
                match key.as_str() {
                    "additionalProperties" if properties.is_some() => {}
                    "required" => {
                        let kept: Vec<Value> = value
                            .as_array()
                            .into_iter()
                            .flatten()
                            .filter(|name| {
                                name.as_str().is_some_and(|n| properties.is_some_and(|p| p.contains_key(n)))
                            })
                            .cloned()
                            .collect();
                        out.insert(key.clone(), Value::Array(kept));
                    }
                    _ => {
                        out.insert(key.clone(), normalise(value));
                    }
                }
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(normalise).collect()),
        other => other.clone(),
    }
}

/// The first JSON object or array in `text`.
pub fn first_json(text: &str) -> Option<Value> {
    text.match_indices(['{', '['])
        .take(MAX_STARTS)
        .find_map(|(at, _)| serde_json::Deserializer::from_str(&text[at..]).into_iter::<Value>().next()?.ok())
}

/// Why `value` does not satisfy `checker`, as short lines; empty when it does.
pub fn problems(checker: &Checker, value: &Value) -> Vec<String> {
    checker
        .iter_errors(value)
        .take(MAX_ERRORS)
        .map(|e| {
            let at = e.instance_path().to_string();
            format!("at `{}`: {e}", if at.is_empty() { "/" } else { &at })
        })
        .collect()
}

impl Llm {
    /// A JSON value for `task` (a system prompt) over `input` (the user message), valid
    /// against `schema` when one is given.
    pub async fn structured(
        &self,
        payer: &Payer,
        task: &str,
        input: &str,
        schema: Option<&Value>,
        deadline: Instant,
    ) -> Result<Structured, LlmError> {
        // Checked against what the model was asked for: the schema as normalised.
        let normalised = schema.map(normalise);
        let checker = match normalised.as_ref().map(compile).transpose() {
            Ok(checker) => checker,
            Err(e) => return Err(LlmError::BadReply(format!("the schema does not compile: {e}"))),
        };
        let mut usage = Usage::default();
        let mut mode = if schema.is_some() { self.mode() } else { self.mode().max(1) };
        loop {
            let (shape, how) = match (mode, &normalised) {
                (0, Some(s)) => (Shape::JsonSchema(s.clone()), String::new()),
                (0 | 1, _) => (Shape::JsonObject, with_schema(schema)),
                _ => (Shape::Text, with_schema(schema) + PLAIN),
            };
            let mut messages = vec![Message::system(format!("{task}{how}")), Message::user(input)];
            let first = match self.call(payer, Tier::Main, messages.clone(), shape.clone(), deadline).await {
                Err(LlmError::Unsupported(why)) if mode < 2 => {
                    tracing::info!(mode, why, "the model server refused a structured-output mode");
                    mode += 1;
                    self.settle_mode(mode);
                    continue;
                }
                other => other?,
            };
            usage.add(first.usage.unwrap_or_default());
            let complaint = match first_json(&first.text) {
                None => "Your answer contained no JSON value.".to_owned(),
                Some(value) => match checker.as_ref().map(|c| problems(c, &value)).unwrap_or_default() {
                    errors if errors.is_empty() => return Ok(Structured { value, usage, warnings: vec![] }),
                    errors => format!("Your JSON does not match the schema: {}.", errors.join("; ")),
                },
            };
            messages.push(Message::assistant(first.text));
            messages
                .push(Message::user(format!("{complaint} Answer again with only the corrected JSON value.")));
            let second = self.call(payer, Tier::Main, messages, shape, deadline).await?;
            usage.add(second.usage.unwrap_or_default());
            let Some(value) = first_json(&second.text) else {
                return Err(LlmError::BadReply("the model answered twice without a JSON value".to_owned()));
            };
            let errors = checker.as_ref().map(|c| problems(c, &value)).unwrap_or_default();
            let warning = if errors.is_empty() {
                format!("The model's first answer was repaired ({})", complaint.trim_end_matches('.'))
            } else {
                format!(
                    "The extracted JSON still does not match the schema after a retry: {}",
                    errors.join("; ")
                )
            };
            return Ok(Structured { value, usage, warnings: vec![warning] });
        }
    }
}

const PLAIN: &str = "\nAnswer with the JSON value alone: no prose, no explanation.";

fn with_schema(schema: Option<&Value>) -> String {
    match schema {
        Some(schema) => format!("\nAnswer in JSON matching this JSON Schema:\n{schema}"),
        None => "\nAnswer in JSON.".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_first_json_value_is_found() {
        assert_eq!(first_json("```json\n{\"a\": 1}\n```"), Some(json!({"a": 1})));
        assert_eq!(first_json("Sure! Here it is: [1, 2] and more"), Some(json!([1, 2])));
        assert_eq!(first_json("{broken {\"b\": true}"), Some(json!({"b": true})));
        assert_eq!(first_json("no json here"), None);
    }

    #[test]
    fn schemas_are_normalised_and_checked() {
        let schema = json!({"type": "object", "properties": {"a": {"type": "string"}},
            "required": ["a", "ghost"], "additionalProperties": false});
        let n = normalise(&schema);
        assert_eq!(n["required"], json!(["a"]));
        assert!(n.get("additionalProperties").is_none());
        let checker = compile(&n).expect("compiles");
        assert!(problems(&checker, &json!({"a": "x"})).is_empty());
        let wrong = problems(&checker, &json!({"a": 3}));
        assert_eq!(wrong.len(), 1);
        assert!(wrong[0].contains("/a"), "{wrong:?}");
        assert!(compile(&json!({"type": "object", "additionalProperties": true})).is_err());
        assert!(compile(&json!({"type": 12})).is_err());
    }
}
