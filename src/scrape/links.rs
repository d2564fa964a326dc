//! Capability links to stored files (screenshots, PDFs): `/v2/files/{id}.{ext}` with an
//! expiry and an HMAC-SHA256 signature over the file name and that expiry, made with a
//! server secret from the data directory. Such a link opens without an API key until the
//! file expires, like the links Firecrawl returns, so it can go into an `<img>` tag or to
//! another tool; a changed name, expiry or signature is refused. The file endpoint still
//! serves the owning team's bearer token without a signature.

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

/// Name of the signing key among the store's secrets.
pub const KEY_NAME: &str = "file-links";

/// What a signed link's check found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkCheck {
    /// Genuine and not expired.
    Valid,
    /// Genuine but past its expiry.
    Expired,
    /// Not made by this server for this file and expiry.
    Forged,
}

/// Signs and checks file links.
#[derive(Clone)]
pub struct FileLinks {
    key: [u8; 32],
}

impl std::fmt::Debug for FileLinks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FileLinks { key: <secret> }")
    }
}

impl FileLinks {
    /// Links signed with `key`.
    pub fn new(key: [u8; 32]) -> Self {
        Self { key }
    }

    fn mac(&self, name: &str, expires_secs: u64) -> Hmac<Sha256> {
        let mut mac =
            <Hmac<Sha256> as KeyInit>::new_from_slice(&self.key).expect("HMAC takes any key length");
        mac.update(name.as_bytes());
        mac.update(b"\n");
        mac.update(expires_secs.to_string().as_bytes());
        mac
    }

    /// The query string (`expires=...&signature=...`) that opens file `name` until
    /// `expires_secs` (Unix seconds).
    pub fn query(&self, name: &str, expires_secs: u64) -> String {
        let signature = hex::encode(self.mac(name, expires_secs).finalize().into_bytes());
        format!("expires={expires_secs}&signature={signature}")
    }

    /// Checks a link's signature (in constant time) and expiry at `now_secs`.
    pub fn check(&self, name: &str, expires_secs: u64, signature: &str, now_secs: u64) -> LinkCheck {
        let Ok(given) = hex::decode(signature) else { return LinkCheck::Forged };
        if self.mac(name, expires_secs).verify_slice(&given).is_err() {
            return LinkCheck::Forged;
        }
        if expires_secs <= now_secs { LinkCheck::Expired } else { LinkCheck::Valid }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_open_only_their_file_until_they_expire() {
        let links = FileLinks::new([7; 32]);
        let query = links.query("abc.png", 2_000);
        let signature = query.split("signature=").nth(1).expect("signature");
        assert_eq!(links.check("abc.png", 2_000, signature, 1_000), LinkCheck::Valid);
        assert_eq!(links.check("abc.png", 2_000, signature, 2_000), LinkCheck::Expired);
        assert_eq!(links.check("abd.png", 2_000, signature, 1_000), LinkCheck::Forged);
        assert_eq!(links.check("abc.png", 3_000, signature, 1_000), LinkCheck::Forged, "a later expiry");
        assert_eq!(links.check("abc.png", 2_000, "00", 1_000), LinkCheck::Forged);
        assert_eq!(links.check("abc.png", 2_000, "zz", 1_000), LinkCheck::Forged);
        let other = FileLinks::new([8; 32]);
        assert_eq!(
            other.check("abc.png", 2_000, signature, 1_000),
            LinkCheck::Forged,
            "another server's key"
        );
    }
}
