//! Strict JSON request bodies. A body must be a JSON object; keys the endpoint does not
//! know are rejected with a 400 naming them (Firecrawl's schemas are strict too), except
//! internal `__`-prefixed keys the official clients may forward; type errors name the
//! path of the offending field (`formats[1].type`). Query strings are read the same way
//! ([`query`]), naming the failing parameter.

use std::collections::BTreeMap;

use actix_web::web::Bytes;
use serde::Deserialize;
use serde::de::{self, DeserializeOwned, Deserializer, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::error::ApiError;
use crate::model::Code;

/// Parses `bytes` as a JSON object.
pub fn object(bytes: &[u8]) -> Result<Map<String, Value>, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::bad_request("Request body is empty; send a JSON object"));
    }
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(mut map)) => {
            map.values_mut().for_each(whole_numbers);
            Ok(map)
        }
        Ok(_) => Err(ApiError::bad_request("Request body must be a JSON object")),
        Err(e) => Err(ApiError::new(Code::InvalidJson, format!("Bad request, malformed JSON: {e}"))),
    }
}

/// Parses `bytes` as a JSON object like [`object`], except that the value of `kept` is left
/// as it is in the body (a slice of `bytes`, not yet read): a list of 100 000 URLs costs no
/// copy until it is read.
pub fn object_keeping(bytes: &Bytes, kept: &str) -> Result<(Map<String, Value>, Option<Bytes>), ApiError> {
    let Ok(raw) = serde_json::from_slice::<BTreeMap<String, &RawValue>>(bytes) else {
        // Not a JSON object: the plain reading says what is wrong.
        object(bytes)?;
        return Err(ApiError::bad_request("Request body must be a JSON object"));
    };
    let mut map = Map::new();
    let mut slice = None;
    for (key, value) in raw {
        if key == kept {
            slice = Some(bytes.slice_ref(value.get().as_bytes()));
            continue;
        }
        let mut value = serde_json::from_str(value.get()).map_err(|e| {
            ApiError::new(Code::InvalidJson, format!("Bad request, malformed JSON in `{key}`: {e}"))
        })?;
        whole_numbers(&mut value);
        map.insert(key, value);
    }
    Ok((map, slice))
}

/// Rewrites the numbers of `value` written with a fraction of zero (`30.0`, as Python's
/// `json` writes a float) as the whole numbers they are, as JSON Schema counts them: a
/// field of whole seconds or milliseconds takes them (a fraction proper is still refused).
fn whole_numbers(value: &mut Value) {
    match value {
        Value::Number(n) if n.is_f64() => {
            let Some(f) = n.as_f64() else { return };
            if f.fract() != 0.0 {
                return;
            }
            // Within the integers an f64 holds exactly.
            const EXACT: f64 = 9_007_199_254_740_992.0;
            if (0.0..=EXACT).contains(&f) {
                *value = Value::from(f as u64);
            } else if (-EXACT..0.0).contains(&f) {
                *value = Value::from(f as i64);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(whole_numbers),
        Value::Object(fields) => fields.values_mut().for_each(whole_numbers),
        _ => {}
    }
}

/// Drops internal `__` keys (forwarded by some clients, meaningless here) and rejects any
/// other key outside `allowed`.
pub fn reject_unknown(
    map: &mut Map<String, Value>,
    allowed: &[&[&str]],
    prefix: &str,
) -> Result<(), ApiError> {
    map.retain(|k, _| !k.starts_with("__"));
    let mut unknown: Vec<&str> =
        map.keys().map(String::as_str).filter(|k| !allowed.iter().any(|set| set.contains(k))).collect();
    if unknown.is_empty() {
        return Ok(());
    }
    unknown.sort_unstable();
    let names: Vec<String> = unknown.iter().map(|k| format!("`{prefix}{k}`")).collect();
    Err(ApiError::bad_request(format!(
        "Unrecognized key in body: {}. Check the v2 API reference at /v2/openapi.json",
        names.join(", ")
    )))
}

/// Deserializes `value` into `T`, naming the failing field (under `prefix`) on error.
pub fn typed<T: DeserializeOwned>(value: Value, prefix: &str) -> Result<T, ApiError> {
    serde_path_to_error::deserialize(value).map_err(|err| {
        let mut path = err.path().to_string();
        // An unknown key is the object's fault: the object is named, not the key (which the
        // message names, and which may be empty).
        if let Some(serde_path_to_error::Segment::Map { key }) = err.path().iter().next_back()
            && err.inner().to_string().starts_with("unknown field")
        {
            path.truncate(path.len() - key.len());
            path = path.strip_suffix('.').filter(|p| !p.is_empty()).unwrap_or(".").to_owned();
        }
        let field = match (prefix.is_empty(), path.as_str()) {
            (_, ".") => prefix.trim_end_matches('.').to_owned(),
            (true, p) => p.to_owned(),
            (false, p) => format!("{prefix}{p}"),
        };
        let inner = err.into_inner();
        if field.is_empty() {
            ApiError::bad_request(format!("Invalid request body: {inner}"))
        } else {
            ApiError::bad_request(format!("Invalid value for `{field}`: {inner}"))
        }
    })
}

/// Reads the query string `query` into `T`, naming the failing parameter on error.
pub fn query<T: DeserializeOwned>(query: &str) -> Result<T, ApiError> {
    let pairs = serde_urlencoded::Deserializer::new(url::form_urlencoded::parse(query.as_bytes()));
    serde_path_to_error::deserialize(pairs).map_err(|err| {
        let path = err.path().to_string();
        let inner = err.into_inner();
        match path.as_str() {
            "." => ApiError::bad_request(format!("Invalid query: {inner}")),
            field => ApiError::bad_request(format!("Invalid value for query parameter `{field}`: {inner}")),
        }
    })
}

/// Reads an optional nested object (`#[serde(default, deserialize_with = "body::object_only")]`)
/// from a JSON object or `null` only: serde's derived structs also take an array, read
/// field by field in order (`"location": ["US", ["en"]]`), which no client means. The
/// object's own fields are read as usual, so an error still names the one that failed.
pub fn object_only<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    deserializer: D,
) -> Result<Option<T>, D::Error> {
    struct Nested<T>(std::marker::PhantomData<T>);
    impl<'de, T: Deserialize<'de>> Visitor<'de> for Nested<T> {
        type Value = Option<T>;

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("an object")
        }

        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
            deserializer.deserialize_map(self)
        }

        fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
            T::deserialize(de::value::MapAccessDeserializer::new(map)).map(Some)
        }
    }
    deserializer.deserialize_option(Nested(std::marker::PhantomData))
}

/// The field names a `#[derive(Deserialize)]` struct accepts (not for `flatten` structs).
pub fn field_names<'de, T: Deserialize<'de>>() -> &'static [&'static str] {
    struct Probe<'a>(&'a mut &'static [&'static str]);

    #[derive(Debug)]
    struct Stop;
    impl std::fmt::Display for Stop {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("field-name probe")
        }
    }
    impl std::error::Error for Stop {}
    impl de::Error for Stop {
        fn custom<M: std::fmt::Display>(_: M) -> Self {
            Stop
        }
    }

    impl<'de> Deserializer<'de> for Probe<'_> {
        type Error = Stop;
        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Stop> {
            Err(Stop)
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Stop> {
            *self.0 = fields;
            Err(Stop)
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
            option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
            ignored_any
        }
    }

    let mut fields: &'static [&'static str] = &[];
    let _ = T::deserialize(Probe(&mut fields));
    fields
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_with_a_zero_fraction_are_whole() {
        let map = object(br#"{"ttl": 2068.0, "x": 0.5, "list": [1.0, -3.0, 2.5], "big": 1e300, "n": -0.0}"#)
            .expect("object");
        assert_eq!(
            Value::Object(map),
            serde_json::json!({"ttl": 2068, "x": 0.5, "list": [1, -3, 2.5], "big": 1e300, "n": 0})
        );
    }

    #[derive(Debug, Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    #[allow(dead_code)]
    struct Sample {
        only_main_content: Option<bool>,
        timeout: Option<u64>,
    }

    #[test]
    fn probes_field_names() {
        assert_eq!(field_names::<Sample>(), &["onlyMainContent", "timeout"]);
    }

    #[test]
    fn unknown_keys_are_named() {
        let mut map = object(br#"{"timeout": 1, "maxDepth": 2, "__experimental_x": 1}"#).expect("object");
        let err = reject_unknown(&mut map, &[field_names::<Sample>()], "").unwrap_err();
        assert!(err.message().contains("`maxDepth`"), "{}", err.message());
        assert!(!err.message().contains("__experimental"));
        let mut map = object(br#"{"timeout": 1, "__experimental_x": 1}"#).expect("object");
        reject_unknown(&mut map, &[field_names::<Sample>()], "").expect("internal keys pass");
        assert!(!map.contains_key("__experimental_x"), "and are dropped before typing");
    }

    #[test]
    fn type_errors_name_the_field() {
        let err = typed::<Sample>(serde_json::json!({"timeout": "soon"}), "").unwrap_err();
        assert!(err.message().contains("`timeout`"), "{}", err.message());
        let err = typed::<Sample>(serde_json::json!({"timeout": -1}), "scrapeOptions.").unwrap_err();
        assert!(err.message().contains("`scrapeOptions.timeout`"), "{}", err.message());
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Outer {
        #[serde(default, deserialize_with = "object_only")]
        inner: Option<Sample>,
    }

    #[test]
    fn nested_objects_are_read_from_objects_only() {
        let read = typed::<Outer>(serde_json::json!({"inner": {"timeout": 5}}), "").expect("an object");
        assert_eq!(read.inner.and_then(|s| s.timeout), Some(5));
        assert!(typed::<Outer>(serde_json::json!({"inner": null}), "").expect("null").inner.is_none());
        assert!(typed::<Outer>(serde_json::json!({}), "").expect("absent").inner.is_none());
        let err = typed::<Outer>(serde_json::json!({"inner": [true, 5]}), "").unwrap_err();
        assert!(
            err.message().contains("`inner`") && err.message().contains("an object"),
            "{}",
            err.message()
        );
        let err = typed::<Outer>(serde_json::json!({"inner": {"timeout": "soon"}}), "").unwrap_err();
        assert!(err.message().contains("`inner.timeout`"), "{}", err.message());
        // An unknown key names its object, even when the key is empty.
        for key in ["", "zone"] {
            let err = typed::<Outer>(serde_json::json!({"inner": {key: 1}}), "").unwrap_err();
            assert!(
                err.message().starts_with("Invalid value for `inner`: unknown field"),
                "{}",
                err.message()
            );
            let err = typed::<Outer>(serde_json::json!({"inner": {key: 1}}), "scrapeOptions.").unwrap_err();
            assert!(err.message().contains("`scrapeOptions.inner`: unknown field"), "{}", err.message());
        }
        let err = typed::<Sample>(serde_json::json!({"zone": 1}), "").unwrap_err();
        assert!(err.message().starts_with("Invalid request body: unknown field `zone`"), "{}", err.message());
    }

    #[test]
    fn malformed_json_has_its_own_code() {
        assert_eq!(object(b"{nope").unwrap_err().code(), Code::InvalidJson);
        assert_eq!(object(b"[1]").unwrap_err().code(), Code::BadRequest);
        assert_eq!(object(b"  ").unwrap_err().code(), Code::BadRequest);
    }
}
