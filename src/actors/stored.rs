//! A page in the form the store keeps ([`StoredPage`]): how a page fetched on its site's
//! node reaches its job's node, already serialized, so the job's node neither reads nor
//! writes the document again. Its parts come in two forms: as the site's node has them, and
//! as the job's node reads them out of the message. Every page crosses, so the reading
//! side copies as little as it can: the stored document goes straight into the buffer the
//! store keeps (one copy out of the message, not one into a vector and another into the
//! store), and the page's links into one string (not an allocation per link). On the wire
//! both are what a `Vec<u8>` (as bytes) and a `Vec<String>` are, so nodes that read them
//! the plain way read them too.

use std::fmt;

use serde::de::{DeserializeSeed, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A page fetched on the node of its site, as the job's node needs it: the document
/// already serialized the way the store keeps it, and the few fields settling the page
/// looks at.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StoredPage {
    /// The result document, as stored (JSON).
    pub document: DocumentBytes,
    /// Its `metadata.url` (where the page landed).
    pub url: String,
    /// Its `metadata.creditsUsed`.
    pub credits: u32,
    /// Whether it carries change tracking (which a sitemap-only page hides).
    pub tracked: bool,
    /// Absolute links of the page.
    pub links: PageLinks,
}

impl StoredPage {
    /// The page of `document` and `links`.
    pub fn of(document: &crate::model::Document, links: Vec<String>) -> Result<Self, serde_json::Error> {
        Ok(Self {
            document: DocumentBytes::Written(stored_form(document)?),
            url: document.metadata.url.clone(),
            credits: document.metadata.credits_used,
            tracked: document.change_tracking.is_some(),
            links: PageLinks::Each(links),
        })
    }
}

/// The stored form of a result document, written into a buffer sized for its Markdown so
/// the serializer does not keep growing it.
pub(crate) fn stored_form(document: &crate::model::Document) -> Result<Vec<u8>, serde_json::Error> {
    let size = [&document.markdown, &document.html, &document.raw_html]
        .iter()
        .map(|s| s.as_ref().map_or(0, String::len))
        .sum::<usize>();
    let mut out = Vec::with_capacity(size + size / 8 + 2048);
    serde_json::to_writer(&mut out, document)?;
    Ok(out)
}

/// A page's document in the stored form (JSON).
#[derive(Clone)]
pub enum DocumentBytes {
    /// As written on the site's node.
    Written(Vec<u8>),
    /// As read on the job's node: the buffer the store keeps.
    Read(sled::IVec),
}

impl DocumentBytes {
    /// The buffer the store keeps (a copy only for a document written here).
    pub fn into_stored(self) -> sled::IVec {
        match self {
            Self::Written(bytes) => sled::IVec::from(bytes),
            Self::Read(bytes) => bytes,
        }
    }
}

impl std::ops::Deref for DocumentBytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Self::Written(bytes) => bytes,
            Self::Read(bytes) => bytes,
        }
    }
}

impl fmt::Debug for DocumentBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DocumentBytes({} bytes)", self.len())
    }
}

impl Serialize for DocumentBytes {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_bytes(self)
    }
}

impl<'de> Deserialize<'de> for DocumentBytes {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Bytes;
        impl<'de> Visitor<'de> for Bytes {
            type Value = DocumentBytes;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a document's bytes")
            }

            fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<Self::Value, E> {
                Ok(DocumentBytes::Read(sled::IVec::from(v)))
            }

            fn visit_byte_buf<E: serde::de::Error>(self, v: Vec<u8>) -> Result<Self::Value, E> {
                Ok(DocumentBytes::Read(sled::IVec::from(v)))
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0));
                while let Some(b) = seq.next_element::<u8>()? {
                    out.push(b);
                }
                Ok(DocumentBytes::Read(sled::IVec::from(out)))
            }
        }
        deserializer.deserialize_bytes(Bytes)
    }
}

/// A page's absolute links.
#[derive(Debug, Clone)]
pub enum PageLinks {
    /// As the site's node extracted them.
    Each(Vec<String>),
    /// As read on the job's node: the links one after another in `text`, each ending
    /// where `ends` says.
    Packed {
        /// The links' text.
        text: String,
        /// Where each link ends in `text`.
        ends: Vec<u32>,
    },
}

impl PageLinks {
    /// The links, in order.
    pub fn iter(&self) -> impl Iterator<Item = &str> {
        let (each, packed) = match self {
            Self::Each(links) => (Some(links.iter().map(String::as_str)), None),
            Self::Packed { text, ends } => {
                let starts = std::iter::once(0).chain(ends.iter().map(|&e| e as usize));
                let pieces = starts.zip(ends.iter().map(|&e| e as usize)).map(|(s, e)| &text[s..e]);
                (None, Some(pieces))
            }
        };
        each.into_iter().flatten().chain(packed.into_iter().flatten())
    }

    /// The links as strings of their own.
    pub fn into_vec(self) -> Vec<String> {
        match self {
            Self::Each(links) => links,
            packed @ Self::Packed { .. } => packed.iter().map(str::to_owned).collect(),
        }
    }
}

impl Serialize for PageLinks {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        match self {
            Self::Each(links) => serializer.collect_seq(links),
            Self::Packed { ends, .. } => {
                let mut seq = serializer.serialize_seq(Some(ends.len()))?;
                for link in self.iter() {
                    seq.serialize_element(link)?;
                }
                seq.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for PageLinks {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        /// Appends one link to the text.
        struct Append<'a>(&'a mut String);
        impl<'de> DeserializeSeed<'de> for Append<'_> {
            type Value = ();

            fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
                deserializer.deserialize_str(self)
            }
        }
        impl Visitor<'_> for Append<'_> {
            type Value = ();

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a link")
            }

            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<(), E> {
                self.0.push_str(v);
                Ok(())
            }
        }

        struct Links;
        impl<'de> Visitor<'de> for Links {
            type Value = PageLinks;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a list of links")
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let count = seq.size_hint().unwrap_or(0);
                let (mut text, mut ends) = (String::with_capacity(count * 48), Vec::with_capacity(count));
                while seq.next_element_seed(Append(&mut text))?.is_some() {
                    let end =
                        u32::try_from(text.len()).map_err(|_| serde::de::Error::custom("links too long"))?;
                    ends.push(end);
                }
                Ok(PageLinks::Packed { text, ends })
            }
        }
        deserializer.deserialize_seq(Links)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_forms_cross_as_the_plain_types_do() {
        let links = vec!["http://a.test/".to_owned(), String::new(), "http://a.test/ü?x=1".to_owned()];
        let document = br#"{"markdown":"words"}"#.to_vec();

        // Written as the plain types are, and read back whichever way.
        let plain =
            postcard::to_allocvec(&(serde_bytes::ByteBuf::from(document.clone()), &links)).expect("plain");
        let ours = postcard::to_allocvec(&(
            DocumentBytes::Written(document.clone()),
            PageLinks::Each(links.clone()),
        ))
        .expect("ours");
        assert_eq!(plain, ours);
        let (read, packed): (DocumentBytes, PageLinks) = postcard::from_bytes(&plain).expect("read");
        assert!(matches!(read, DocumentBytes::Read(_)));
        assert_eq!(&*read, &document[..]);
        assert!(matches!(packed, PageLinks::Packed { .. }));
        assert_eq!(packed.iter().collect::<Vec<_>>(), links.iter().map(String::as_str).collect::<Vec<_>>());
        // A packed list is written as it was read.
        assert_eq!(postcard::to_allocvec(&(read.clone(), &packed)).expect("again"), plain);
        assert_eq!(packed.into_vec(), links);
        assert_eq!(&read.into_stored()[..], &document[..]);

        // And through JSON (a page outcome carried as JSON).
        let json = serde_json::to_string(&(
            DocumentBytes::Written(document.clone()),
            PageLinks::Each(links.clone()),
        ))
        .expect("json");
        let (read, packed): (DocumentBytes, PageLinks) = serde_json::from_str(&json).expect("from json");
        assert_eq!((&*read, packed.into_vec()), (&document[..], links));
    }
}
