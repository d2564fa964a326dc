//! Value encoding for sled, and the rule that keeps data directories readable across
//! upgrades.
//!
//! Every typed record is stored as `[TAG, version]` followed by its postcard payload.
//! postcard is positional: a payload only decodes with the exact field list it was written
//! with, so the version says which list that was. A record type implements [`Record`]: its
//! current [`Record::VERSION`], and in [`Record::upgrade`] a decoder for every older
//! version a **release** wrote (the old definitions are kept, frozen, in `store::legacy`).
//!
//! **The promise:** a release opens the data directory of every earlier release. Formats of
//! the commits between two releases are not kept: a record changed twice before a release
//! changes its version once. Caches that can be made again are dropped on a change of
//! their format instead of decoded (`store::migrate`).
//!
//! **How to add a field without breaking a data directory.**
//! - Options that grow with the API (`ScrapeOptions`, `CrawlOptions` and what they hold) are
//!   stored as JSON inside their record ([`json`]), with `#[serde(default)]`: a new field
//!   needs a default that reproduces the behaviour from before the field existed, and then
//!   no version changes. Never rename a stored JSON field without `#[serde(alias)]`.
//! - Any other record: if the last release wrote its current version, copy that definition
//!   into `store::legacy` under the old version's module, raise `VERSION`, and decode the old
//!   version in `upgrade` (usually: decode the frozen type, convert); if the change since the
//!   last release already raised it, change the new version in place. A release adds a
//!   frozen data-directory fixture of its own (`tests/fixtures/datadir/`).
//! - A new tree or a change of layout that needs rewriting records raises
//!   `store::SCHEMA_VERSION` with a step in `store::migrate`.
//!
//! Raw values (a job id, a URL, a JSON document) have fixed forms and no tag. JSON payloads
//! such as result documents travel inside records as bytes.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// First byte of every typed record.
pub(crate) const TAG: u8 = 0xFC;

/// Why a stored value could not be decoded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CodecError {
    /// The payload does not match the type of its version.
    #[error("{0}")]
    Postcard(#[from] postcard::Error),
    /// A JSON field inside the record is damaged.
    #[error("JSON inside the record: {0}")]
    Json(#[from] serde_json::Error),
    /// The value has no version tag.
    #[error("the record has no version tag")]
    Untagged,
    /// Written by a version this build does not know (a newer build, or damage).
    #[error("record version {found} is unknown to this build (it writes version {current})")]
    UnknownVersion {
        /// Version found.
        found: u8,
        /// Version this build writes.
        current: u8,
    },
}

/// A typed, versioned record.
pub(crate) trait Record: Serialize + DeserializeOwned {
    /// The version this build writes.
    const VERSION: u8;

    /// Decodes the payload of an older `version`; every version a release wrote must be
    /// handled here.
    fn upgrade(version: u8, _payload: &[u8]) -> Result<Self, CodecError> {
        Err(CodecError::UnknownVersion { found: version, current: Self::VERSION })
    }
}

/// Encodes a record with its version tag.
pub(crate) fn encode<T: Record>(value: &T) -> Result<Vec<u8>, CodecError> {
    let mut out = vec![TAG, T::VERSION];
    postcard::to_io(value, &mut out)?;
    Ok(out)
}

/// Decodes a record of any version this build knows.
pub(crate) fn decode<T: Record>(bytes: &[u8]) -> Result<T, CodecError> {
    match bytes {
        [TAG, version, payload @ ..] if *version == T::VERSION => Ok(postcard::from_bytes(payload)?),
        [TAG, version, payload @ ..] => T::upgrade(*version, payload),
        _ => Err(CodecError::Untagged),
    }
}

macro_rules! records {
    ($($ty:ty => $version:expr),+ $(,)?) => {
        $(impl $crate::store::codec::Record for $ty { const VERSION: u8 = $version; })+
    };
}
pub(crate) use records;

// Credits used in a month (the ledger's value).
records!(u64 => 1);

/// `#[serde(with = "codec::json")]`: a field stored as JSON bytes inside a postcard record,
/// so its type may grow (see the module doc).
pub(crate) mod json {
    use super::*;

    /// Writes `value` as JSON bytes.
    pub(crate) fn serialize<T: Serialize, S: Serializer>(value: &T, s: S) -> Result<S::Ok, S::Error> {
        let bytes = serde_json::to_vec(value).map_err(serde::ser::Error::custom)?;
        s.serialize_bytes(&bytes)
    }

    /// Reads JSON bytes back.
    pub(crate) fn deserialize<'de, T: DeserializeOwned, D: Deserializer<'de>>(d: D) -> Result<T, D::Error> {
        let bytes: Vec<u8> = serde_bytes_compat::deserialize(d)?;
        serde_json::from_slice(&bytes).map_err(serde::de::Error::custom)
    }

    mod serde_bytes_compat {
        use super::*;

        /// Byte strings as postcard writes them (a length and the bytes).
        pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
            struct Bytes;
            impl<'de> serde::de::Visitor<'de> for Bytes {
                type Value = Vec<u8>;
                fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                    f.write_str("bytes")
                }
                fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<Vec<u8>, E> {
                    Ok(v.to_vec())
                }
                fn visit_byte_buf<E: serde::de::Error>(self, v: Vec<u8>) -> Result<Vec<u8>, E> {
                    Ok(v)
                }
                fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<u8>, A::Error> {
                    let mut out = Vec::new();
                    while let Some(b) = seq.next_element()? {
                        out.push(b);
                    }
                    Ok(out)
                }
            }
            d.deserialize_bytes(Bytes)
        }
    }

    // `Deserialize` is used through the visitor above.
    #[allow(unused_imports)]
    use Deserialize as _;
}

/// A fixed-size digest used as a key for variable-length identities (URLs, tokens).
pub(crate) fn digest(parts: &[&[u8]]) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    for part in parts {
        // Length-prefix each part so ("ab","c") and ("a","bc") differ.
        hasher.update((part.len() as u64).to_be_bytes());
        hasher.update(part);
    }
    hasher.finalize().into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Now {
        a: u32,
        b: String,
    }

    #[derive(Serialize)]
    struct Then {
        a: u32,
    }

    impl Record for Now {
        const VERSION: u8 = 2;
        fn upgrade(version: u8, payload: &[u8]) -> Result<Self, CodecError> {
            match version {
                1 => {
                    let a: u32 = postcard::from_bytes(payload)?;
                    Ok(Now { a, b: "default".into() })
                }
                found => Err(CodecError::UnknownVersion { found, current: 2 }),
            }
        }
    }

    #[test]
    fn records_carry_their_version_and_old_versions_are_upgraded() {
        let now = Now { a: 7, b: "x".into() };
        let bytes = encode(&now).expect("encode");
        assert_eq!(&bytes[..2], &[TAG, 2]);
        assert_eq!(decode::<Now>(&bytes).expect("decode"), now);
        let mut old = vec![TAG, 1];
        old.extend(postcard::to_allocvec(&Then { a: 5 }).expect("old"));
        assert_eq!(decode::<Now>(&old).expect("upgrade"), Now { a: 5, b: "default".into() });
        assert!(matches!(decode::<Now>(&[TAG, 9, 0]), Err(CodecError::UnknownVersion { found: 9, .. })));
        assert!(matches!(decode::<Now>(&[1, 2, 3]), Err(CodecError::Untagged)));
    }

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct WithJson {
        n: u8,
        #[serde(with = "json")]
        options: serde_json::Value,
    }
    records!(WithJson => 1);

    #[test]
    fn json_fields_round_trip_inside_postcard() {
        let value = WithJson { n: 1, options: serde_json::json!({"limit": 3, "paths": ["a"]}) };
        let bytes = encode(&value).expect("encode");
        assert_eq!(decode::<WithJson>(&bytes).expect("decode"), value);
    }
}
