//! Value encoding for sled: postcard, a compact serde format. Records keep to what postcard
//! can round-trip (no `skip_serializing_if`, no untagged enums); JSON-shaped payloads such
//! as result documents travel inside a record as JSON bytes.

use serde::Serialize;
use serde::de::DeserializeOwned;

/// Encodes a record.
pub(crate) fn encode<T: Serialize>(value: &T) -> Result<Vec<u8>, postcard::Error> {
    postcard::to_allocvec(value)
}

/// Decodes a record.
pub(crate) fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, postcard::Error> {
    postcard::from_bytes(bytes)
}

/// Removes the records of `tree` that `expired` says are gone, and those that no longer
/// decode; returns how many.
pub(crate) fn purge<T: DeserializeOwned>(
    tree: &sled::Tree,
    expired: impl Fn(&T) -> bool,
) -> sled::Result<usize> {
    let mut removed = 0;
    for item in tree.iter() {
        let (key, value) = item?;
        if decode::<T>(&value).map_or(true, |record| expired(&record)) && tree.remove(&key)?.is_some() {
            removed += 1;
        }
    }
    Ok(removed)
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
