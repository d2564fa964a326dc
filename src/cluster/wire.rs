//! What crosses between nodes. ractor_cluster carries ractor messages between processes; ours
//! is one message type, [`AgentMsg`], sent to each node's agent (see `agent`), holding a
//! postcard [`Envelope`]: the sender's protocol version first, so a node can always read
//! the version even when it cannot read the rest, then the frame. Requests of the layers
//! above (fetching a page on the node that owns its site, reading a job on the node that
//! owns it) are opaque bytes here, encoded by their own module.

use ractor::message::{BoxedDowncastErr, SerializedMessage};
use ractor::{Message, RpcReplyPort};
use serde::{Deserialize, Serialize};

/// Version of the node-to-node protocol this build speaks (the newest; see also
/// [`OLDEST_PROTOCOL_VERSION`]). Nodes whose versions do not overlap this build's are
/// refused when they meet (both log the other's version). 2: site handover (`Release`
/// requests, pages answered `Moved`), which a node of version 1 could not read. 3: team
/// slots, rates and browser profiles kept by one node each, requests passed on to a
/// session's node, pages sent in their stored form, and peers named in hello answers (a
/// version-2 node could not answer them, and a team owned by one would get no slots). 4:
/// scrape options carry the language-model formats and `onlyCleanContent`. 5: a redirect hop
/// to a site another node owns asks that node for a turn of the site's pace (`Turn`). 6:
/// calls carried many to a message (`Frame::Requests`, `Frame::Collect`; see `batch`), and
/// redirect hops lent a place among a site's requests in flight with its turn (`TurnHeld`,
/// `Return`). 7: nodes report their credit totals to each team's owner, which answers credit
/// checks for the others (`Charged`, `UsedBeyond` on the teams channel). 8: DevTools
/// connections and screen streams carried to a browser session's node (the `Tunnel`
/// channel). 9: sites placed by host, not origin, once every live member speaks 9
/// (`place::BY_HOST_SINCE`; no message changed). 10: a page sent to its site's node takes
/// its team's concurrency slot there, while its request is out (`FetchAdmitted`). 11: nodes
/// report their token totals to each team's owner, which answers token reports for the
/// others (`TokensUsed`, `TokensBeyond` on the teams channel). 12: a redirect hop tells the
/// node that lent its turn when its request is written (`Written`), so the site's own
/// requests wait for the write, not for the hop's answer; and at a membership change what
/// nodes that are down reported is passed on to each team's owner (`Relayed`). 13: a member
/// an operator forgets is forgotten by every live member it is told to (`Forget`), and a
/// page is cached on the node that owns its site (`Cached`, `Cache`).
pub const PROTOCOL_VERSION: u32 = 13;

/// The oldest version this build still speaks, so a cluster is upgraded one node at a
/// time: to a node of an older version it writes in that version (and sends it nothing
/// that version lacks: no `Turn` to a node of version 4, no batch to one older than 6).
/// Versions 4 to 13 differ only by messages a node of an older version is never sent.
pub const OLDEST_PROTOCOL_VERSION: u32 = 4;

// Byte fields are written as bytes (`serde_bytes`), not as sequences of numbers: the same
// postcard encoding, without a serializer call per byte of every page that crosses.

/// What every message between nodes starts with. Read borrowing from the received bytes
/// (the body is not copied out); written by [`seal`] without building one.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Envelope<'a> {
    /// The sender's [`PROTOCOL_VERSION`].
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

/// The version this process speaks: [`PROTOCOL_VERSION`], or in debug builds the value of
/// `TEST_FERROCRAWL_PROTOCOL_VERSION`, so a test can start a node of "another build".
pub fn spoken_version() -> u32 {
    static VERSION: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *VERSION.get_or_init(|| {
        let test = std::env::var("TEST_FERROCRAWL_PROTOCOL_VERSION").ok().and_then(|v| v.parse().ok());
        test.filter(|_| cfg!(debug_assertions)).unwrap_or(PROTOCOL_VERSION)
    })
}

/// The oldest version this process speaks: [`OLDEST_PROTOCOL_VERSION`], or in debug builds
/// the value of `TEST_FERROCRAWL_OLDEST_PROTOCOL_VERSION` (a test's node of a build that no
/// longer speaks this one); never above [`spoken_version`].
pub fn oldest_version() -> u32 {
    static VERSION: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    let oldest = *VERSION.get_or_init(|| {
        let test = std::env::var("TEST_FERROCRAWL_OLDEST_PROTOCOL_VERSION").ok().and_then(|v| v.parse().ok());
        test.filter(|_| cfg!(debug_assertions)).unwrap_or(OLDEST_PROTOCOL_VERSION)
    });
    oldest.min(spoken_version())
}

/// Whether this process reads and writes messages of `version`.
pub fn speaks(version: u32) -> bool {
    (oldest_version()..=spoken_version()).contains(&version)
}

/// Encodes `value` into a vector of exactly its size: a page's answer is written once,
/// not copied again each time a growing vector doubles.
pub fn to_bytes<T: Serialize + ?Sized>(value: &T) -> Vec<u8> {
    let size = postcard::experimental::serialized_size(value).unwrap_or_default();
    postcard::to_extend(value, Vec::with_capacity(size)).unwrap_or_default()
}

/// Encodes `value` inside an envelope from `from`: the bytes of an [`Envelope`] whose body
/// is `value`'s encoding, written in place (a byte field is its length, then the bytes)
/// rather than encoded apart and copied in.
pub(crate) fn seal<T: Serialize>(from: &str, value: &T) -> Vec<u8> {
    seal_as(spoken_version(), from, value)
}

/// [`seal`] in protocol version `version` (one this process speaks: the version of the
/// node it writes to).
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
    #[error(
        "node `{from}` speaks protocol version {theirs}; this node speaks {} to {}",
        oldest_version(),
        spoken_version()
    )]
    Version {
        /// The sender.
        from: String,
        /// Its version.
        theirs: u32,
    },
}

/// Opens an envelope: the sender and its content (which may borrow from `bytes`).
pub(crate) fn open<'a, T: Deserialize<'a>>(bytes: &'a [u8]) -> Result<(String, T), OpenError> {
    open_versioned(bytes).map(|(from, value, _)| (from, value))
}

/// [`open`], with the version the envelope was written in (one this process speaks).
pub(crate) fn open_versioned<'a, T: Deserialize<'a>>(bytes: &'a [u8]) -> Result<(String, T, u32), OpenError> {
    let envelope: Envelope<'_> = postcard::from_bytes(bytes).map_err(|_| OpenError::Garbled)?;
    if !speaks(envelope.version) {
        return Err(OpenError::Version { from: envelope.from.to_owned(), theirs: envelope.version });
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

    #[test]
    fn byte_fields_encode_as_a_sequence_of_bytes_would() {
        // The encoding nodes of this protocol version exchange does not depend on whether a
        // field is written as bytes or as a sequence of u8.
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
        let envelope = Envelope { version: spoken_version(), from: "n1", body: &body };
        assert_eq!(seal("n1", &reply), postcard::to_allocvec(&envelope).expect("envelope"));
        assert_eq!(to_bytes(&reply), body);
        let sealed = seal("n1", &reply);
        let (from, opened): (String, Reply<&serde_bytes::Bytes>) = open(&sealed).expect("open");
        assert_eq!(from, "n1");
        // Read in place: the answer's bytes are a slice of the message.
        let Reply::App(Ok(bytes)) = opened else { panic!("not an answer: {opened:?}") };
        assert_eq!(bytes.len(), 70_000);
        assert!(sealed.as_ptr_range().contains(&bytes.as_ptr()));
    }

    #[test]
    fn messages_are_the_bytes_the_previous_release_sent_and_read() {
        // The envelope and reply as the previous release (protocol 4) defined them: owned.
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
        }
        let page = serde_bytes::ByteBuf::from(b"a page".repeat(5_000));
        let previous = |reply: &PreviousReply| {
            let body = postcard::to_allocvec(reply).expect("body");
            postcard::to_allocvec(&PreviousEnvelope { version: spoken_version(), from: "old".into(), body })
                .expect("envelope")
        };
        // What this build sends, the previous one sent.
        assert_eq!(
            seal("old", &OwnedReply::App(Ok(page.clone()))),
            previous(&PreviousReply::App(Ok(page.clone())))
        );
        assert_eq!(seal("old", &OwnedReply::Pong), previous(&PreviousReply::Pong));
        // What the previous one sent, this build reads, in place.
        let hello = PreviousReply::Hello { address: "h:1".into(), peers: vec!["p:2".into()] };
        let (_, opened): (String, OwnedReply) = open(&previous(&hello)).expect("hello");
        assert!(matches!(opened, Reply::Hello { address, peers } if address == "h:1" && peers == ["p:2"]));
        let sent = previous(&PreviousReply::App(Ok(page.clone())));
        let (from, opened): (String, Reply<&serde_bytes::Bytes>) = open(&sent).expect("answer");
        assert_eq!(from, "old");
        assert!(matches!(opened, Reply::App(Ok(bytes)) if bytes.as_ref() == page.as_slice()));
        let envelope: PreviousEnvelope =
            postcard::from_bytes(&seal("new", &Frame::Ping)).expect("previous reads");
        assert_eq!(envelope.from, "new");
    }

    #[test]
    fn a_node_of_the_oldest_version_spoken_is_read_and_written_to_in_its_version() {
        let old = OLDEST_PROTOCOL_VERSION;
        let sealed = seal_as(old, "old", &Frame::Ping);
        let (from, frame, version): (String, Frame, u32) = open_versioned(&sealed).expect("open");
        assert_eq!((from.as_str(), version), ("old", old));
        assert!(matches!(frame, Frame::Ping));
        // Written in that version: the envelope an old node checks starts with it.
        let envelope: Envelope<'_> = postcard::from_bytes(&sealed).expect("envelope");
        assert_eq!(envelope.version, old);
        // Older than that is refused.
        let older = seal_as(old - 1, "older", &Frame::Ping);
        assert_eq!(
            open::<Frame>(&older).unwrap_err(),
            OpenError::Version { from: "older".into(), theirs: old - 1 }
        );
    }

    #[test]
    fn envelopes_carry_the_version_first() {
        let sealed = seal("a", &Frame::Ping);
        let (from, frame): (String, Frame) = open(&sealed).expect("open");
        assert_eq!(from, "a");
        assert!(matches!(frame, Frame::Ping));
        let future =
            postcard::to_allocvec(&Envelope { version: 99, from: "z", body: &[1, 2, 3] }).expect("encode");
        assert_eq!(open::<Frame>(&future).unwrap_err(), OpenError::Version { from: "z".into(), theirs: 99 });
        assert_eq!(open::<Frame>(&[0xff, 0xff]).unwrap_err(), OpenError::Garbled);
    }
}
