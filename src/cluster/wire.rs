//! What crosses between nodes. ractor_cluster carries ractor messages between processes; ours
//! is one message type, [`AgentMsg`], sent to each node's agent (see `agent`), holding a
//! postcard [`Envelope`]: the sender's protocol version first, so a node can always read
//! the version even when it cannot read the rest, then the frame. Requests of the layers
//! above (fetching a page on the node that owns its site, reading a job on the node that
//! owns it) are opaque bytes here, encoded by their own module (`remote::messages`).
//!
//! **The promise:** a node speaks its own release's protocol version and the previous
//! release's, so a cluster is upgraded one node at a time; which versions those are, and
//! what each brought, is `remote::compat`'s (given to this module as [`Versions`]).

use ractor::message::{BoxedDowncastErr, SerializedMessage};
use ractor::{Message, RpcReplyPort};
use serde::{Deserialize, Serialize};

/// The protocol versions a node speaks: its own, in which it greets every node, and the
/// oldest it still reads and writes, so a cluster is upgraded one node at a time. Which
/// versions those are, and what each brought, the layers above decide (`remote::compat`):
/// this module only carries the version, writes to each peer in the version the two share,
/// and refuses an envelope of a version outside the range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Versions {
    /// The version this node speaks.
    pub own: u32,
    /// The oldest version it still speaks (never above `own`).
    pub oldest: u32,
}

impl Versions {
    /// Whether this process reads and writes messages of `version`.
    pub fn speaks(self, version: u32) -> bool {
        (self.oldest..=self.own).contains(&version)
    }
}

// Byte fields are written as bytes (`serde_bytes`), not as sequences of numbers: the same
// postcard encoding, without a serializer call per byte of every page that crosses.

/// What every message between nodes starts with. Read borrowing from the received bytes
/// (the body is not copied out); written by [`seal`] without building one.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Envelope<'a> {
    /// The sender's protocol version (see [`Versions`]).
    pub version: u32,
    /// The sender's node name.
    pub from: &'a str,
    /// A [`Frame`] or [`Reply`], postcard-encoded, readable when `version` matches.
    #[serde(with = "serde_bytes")]
    pub body: &'a [u8],
}

/// A request to another node's agent.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) enum Frame {
    /// First contact: who is calling and from where.
    Hello {
        /// The caller's cluster address.
        address: String,
    },
    /// Are you there?
    Ping,
    /// A request of a layer above, for the handler serving `channel` (see [`super::Channel`]).
    App {
        /// Which handler.
        channel: u8,
        /// The request.
        #[serde(with = "serde_bytes")]
        body: Vec<u8>,
    },
    /// Requests of the layers above, many to a message (a cast: answered by collections).
    Requests(Vec<Item>),
    /// The answers ready for the caller; held until one is (up to a heartbeat or two).
    Collect,
}

/// One request of a [`Frame::Requests`] batch.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Item {
    /// The caller's id of the call, given back with its answer.
    pub id: u64,
    /// Which handler.
    pub channel: u8,
    /// The request.
    #[serde(with = "serde_bytes")]
    pub body: Vec<u8>,
}

/// An agent's answer, its handler's bytes held as `B`: owned when sent ([`OwnedReply`]),
/// borrowed from the received message when a call's answer is read.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) enum Reply<B> {
    /// First contact answered.
    Hello {
        /// The answering node's cluster address.
        address: String,
        /// The cluster addresses of its live peers (for the caller to meet).
        peers: Vec<String>,
    },
    /// Here.
    Pong,
    /// The handler's answer, or why it failed.
    App(Result<B, String>),
    /// Answers to a caller's batched requests, by call id (see [`Frame::Collect`]).
    Answers(Vec<(u64, Result<B, String>)>),
}

/// A reply as sent, and as hellos and pings are read.
pub(crate) type OwnedReply = Reply<serde_bytes::ByteBuf>;

/// Encodes `value` into a vector of exactly its size: a page's answer is written once,
/// not copied again each time a growing vector doubles.
pub fn to_bytes<T: Serialize + ?Sized>(value: &T) -> Vec<u8> {
    let size = postcard::experimental::serialized_size(value).unwrap_or_default();
    postcard::to_extend(value, Vec::with_capacity(size)).unwrap_or_default()
}

/// Encodes `value` inside an envelope from `from` in protocol version `version` (one this
/// process speaks: the version of the node it writes to): the bytes of an [`Envelope`]
/// whose body is `value`'s encoding, written in place (a byte field is its length, then the
/// bytes) rather than encoded apart and copied in.
pub(crate) fn seal_as<T: Serialize>(version: u32, from: &str, value: &T) -> Vec<u8> {
    let size = postcard::experimental::serialized_size(value).unwrap_or_default();
    let head = (version, from, size as u64);
    let head_size = postcard::experimental::serialized_size(&head).unwrap_or_default();
    let sealed = postcard::to_extend(&head, Vec::with_capacity(head_size + size));
    sealed.and_then(|sealed| postcard::to_extend(value, sealed)).unwrap_or_default()
}

/// Where `inner`, a slice read in place from `outer` (a byte field of a received
/// message), lies in it: so an answer is kept as its message and a range, not copied out.
pub(crate) fn range_in(outer: &[u8], inner: &[u8]) -> std::ops::Range<usize> {
    let start = inner.as_ptr() as usize - outer.as_ptr() as usize;
    start..start + inner.len()
}

/// Why an envelope could not be opened.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OpenError {
    /// Not an envelope at all.
    #[error("unreadable message from another node")]
    Garbled,
    /// From a node of another protocol version.
    #[error("node `{from}` speaks protocol version {theirs}; this node speaks {} to {}", ours.oldest, ours.own)]
    Version {
        /// The sender.
        from: String,
        /// Its version.
        theirs: u32,
        /// The versions this node speaks.
        ours: Versions,
    },
}

/// Opens an envelope of a version among `ours`: the sender, its content (which may borrow
/// from `bytes`) and the version it was written in.
pub(crate) fn open<'a, T: Deserialize<'a>>(
    bytes: &'a [u8],
    ours: Versions,
) -> Result<(String, T, u32), OpenError> {
    let envelope: Envelope<'_> = postcard::from_bytes(bytes).map_err(|_| OpenError::Garbled)?;
    if !ours.speaks(envelope.version) {
        return Err(OpenError::Version { from: envelope.from.to_owned(), theirs: envelope.version, ours });
    }
    let value = postcard::from_bytes(envelope.body).map_err(|_| OpenError::Garbled)?;
    Ok((envelope.from.to_owned(), value, envelope.version))
}

/// Messages of a node's agent. `Call` and `Cast` cross nodes (as bytes); the others are
/// the agent's own timers and reports, sent only within its process.
#[derive(Debug)]
pub(crate) enum AgentMsg {
    /// A request expecting an answer: an envelope holding a [`Frame`]; the answer is an
    /// envelope holding a [`Reply`].
    Call(Vec<u8>, RpcReplyPort<Vec<u8>>),
    /// A message expecting no answer: an envelope holding a [`Frame`] (a batch of requests).
    Cast(Vec<u8>),
    /// Time to check on the peers.
    Tick,
    /// A peer answered a hello or ping (or failed to).
    Heard(super::agent::Heard),
}

impl Message for AgentMsg {
    fn serializable() -> bool {
        true
    }

    fn serialize(self) -> Result<SerializedMessage, BoxedDowncastErr> {
        match self {
            Self::Call(args, reply) => {
                Ok(SerializedMessage::Call { variant: "call".into(), args, reply, metadata: None })
            }
            Self::Cast(args) => Ok(SerializedMessage::Cast { variant: "cast".into(), args, metadata: None }),
            // Local messages never leave the process.
            Self::Tick | Self::Heard(_) => Err(BoxedDowncastErr),
        }
    }

    fn deserialize(message: SerializedMessage) -> Result<Self, BoxedDowncastErr> {
        match message {
            SerializedMessage::Call { variant, args, reply, .. } if variant == "call" => {
                Ok(Self::Call(args, reply))
            }
            SerializedMessage::Cast { variant, args, .. } if variant == "cast" => Ok(Self::Cast(args)),
            _ => Err(BoxedDowncastErr),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A node of protocol 14 that still speaks 13.
    const OURS: Versions = Versions { own: 14, oldest: 13 };

    #[test]
    fn byte_fields_encode_as_a_sequence_of_bytes_would() {
        // The encoding nodes exchange does not depend on whether a field is written as
        // bytes or as a sequence of u8.
        #[derive(Serialize)]
        struct AsSeq {
            body: Vec<u8>,
        }
        let body: Vec<u8> = (0..=255).cycle().take(1000).collect();
        let envelope = Envelope { version: 3, from: "n", body: &body };
        let as_bytes = postcard::to_allocvec(&envelope).expect("bytes");
        let plain = postcard::to_allocvec(&(3u32, "n", AsSeq { body })).expect("seq");
        assert_eq!(as_bytes, plain);
    }

    #[test]
    fn sealing_in_place_writes_the_envelope_of_the_encoded_value() {
        let reply = OwnedReply::App(Ok(serde_bytes::ByteBuf::from(vec![7u8; 70_000])));
        let body = postcard::to_allocvec(&reply).expect("body");
        let envelope = Envelope { version: OURS.own, from: "n1", body: &body };
        assert_eq!(seal_as(OURS.own, "n1", &reply), postcard::to_allocvec(&envelope).expect("envelope"));
        assert_eq!(to_bytes(&reply), body);
        let sealed = seal_as(OURS.own, "n1", &reply);
        let (from, opened, _): (String, Reply<&serde_bytes::Bytes>, u32) = open(&sealed, OURS).expect("open");
        assert_eq!(from, "n1");
        // Read in place: the answer's bytes are a slice of the message.
        let Reply::App(Ok(bytes)) = opened else { panic!("not an answer: {opened:?}") };
        assert_eq!(bytes.len(), 70_000);
        assert!(sealed.as_ptr_range().contains(&bytes.as_ptr()));
    }

    #[test]
    fn envelopes_and_replies_are_the_bytes_the_previous_release_sent_and_read() {
        // The envelope and reply as release 0.2.0 (protocol 13) defined them.
        #[derive(Serialize, Deserialize)]
        struct PreviousEnvelope {
            version: u32,
            from: String,
            #[serde(with = "serde_bytes")]
            body: Vec<u8>,
        }
        #[derive(Serialize, Deserialize)]
        enum PreviousReply {
            Hello { address: String, peers: Vec<String> },
            Pong,
            App(Result<serde_bytes::ByteBuf, String>),
            Answers(Vec<(u64, Result<serde_bytes::ByteBuf, String>)>),
        }
        let page = serde_bytes::ByteBuf::from(b"a page".repeat(5_000));
        let previous = |reply: &PreviousReply| {
            let body = postcard::to_allocvec(reply).expect("body");
            postcard::to_allocvec(&PreviousEnvelope { version: 13, from: "old".into(), body })
                .expect("envelope")
        };
        // What this build sends a node of protocol 13, that node's release sent.
        assert_eq!(
            seal_as(13, "old", &OwnedReply::App(Ok(page.clone()))),
            previous(&PreviousReply::App(Ok(page.clone())))
        );
        assert_eq!(seal_as(13, "old", &OwnedReply::Pong), previous(&PreviousReply::Pong));
        let answers = vec![(7, Ok(page.clone())), (8, Err("failed".to_owned()))];
        assert_eq!(
            seal_as(13, "old", &OwnedReply::Answers(answers.clone())),
            previous(&PreviousReply::Answers(answers))
        );
        // What that release sent, this build reads, in place.
        let hello = PreviousReply::Hello { address: "h:1".into(), peers: vec!["p:2".into()] };
        let (_, opened, version): (String, OwnedReply, u32) = open(&previous(&hello), OURS).expect("hello");
        assert_eq!(version, 13);
        assert!(matches!(opened, Reply::Hello { address, peers } if address == "h:1" && peers == ["p:2"]));
        let sent = previous(&PreviousReply::App(Ok(page.clone())));
        let (from, opened, _): (String, Reply<&serde_bytes::Bytes>, u32) = open(&sent, OURS).expect("answer");
        assert_eq!(from, "old");
        assert!(matches!(opened, Reply::App(Ok(bytes)) if bytes.as_ref() == page.as_slice()));
        let envelope: PreviousEnvelope =
            postcard::from_bytes(&seal_as(13, "new", &Frame::Ping)).expect("previous reads");
        assert_eq!(envelope.from, "new");
    }

    #[test]
    fn a_node_of_the_oldest_version_spoken_is_read_and_written_to_in_its_version() {
        let sealed = seal_as(OURS.oldest, "old", &Frame::Ping);
        let (from, frame, version): (String, Frame, u32) = open(&sealed, OURS).expect("open");
        assert_eq!((from.as_str(), version), ("old", OURS.oldest));
        assert!(matches!(frame, Frame::Ping));
        // Written in that version: the envelope an old node checks starts with it.
        let envelope: Envelope<'_> = postcard::from_bytes(&sealed).expect("envelope");
        assert_eq!(envelope.version, OURS.oldest);
        // Older than that is refused, and so is a newer one.
        for theirs in [OURS.oldest - 1, OURS.own + 1] {
            let other = seal_as(theirs, "other", &Frame::Ping);
            assert_eq!(
                open::<Frame>(&other, OURS).unwrap_err(),
                OpenError::Version { from: "other".into(), theirs, ours: OURS }
            );
        }
        assert_eq!(open::<Frame>(&[0xff, 0xff], OURS).unwrap_err(), OpenError::Garbled);
    }
}
