//! Secrets this server keeps for itself in the data directory (the `meta` tree), made on
//! first use: 32 random bytes per name. They survive restarts, so links signed with them
//! stay valid, and never leave the server.

use super::{Result, StoreError};

/// Key prefix of secrets in the `meta` tree.
const PREFIX: &str = "secret/";

/// The secret called `name`, generated and stored the first time it is asked for. Two
/// processes asking at once agree on one value (compare-and-swap).
pub(super) fn get_or_create(meta: &sled::Tree, name: &str) -> Result<[u8; 32]> {
    let key = format!("{PREFIX}{name}");
    if let Some(existing) = meta.get(&key)? {
        return to_array(&existing);
    }
    let mut fresh = [0u8; 32];
    getrandom::fill(&mut fresh).map_err(|e| StoreError::Db(sled::Error::Io(std::io::Error::other(e))))?;
    match meta.compare_and_swap(&key, None::<&[u8]>, Some(&fresh[..]))? {
        Ok(()) => {
            meta.flush()?;
            Ok(fresh)
        }
        Err(conflict) => to_array(conflict.current.as_deref().unwrap_or_default()),
    }
}

fn to_array(bytes: &[u8]) -> Result<[u8; 32]> {
    bytes.try_into().map_err(|_| {
        StoreError::Db(sled::Error::Unsupported(format!("a stored secret has {} bytes, not 32", bytes.len())))
    })
}
