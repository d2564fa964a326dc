//! The webhook outbox: events waiting for delivery. Keys are the job id then a sequence
//! number, so each job's events are a range in the order they happened, and the dispatcher
//! finds every job's next event with one seek per job. An event's delivery state (small) and
//! its body (possibly a whole document) live in two trees. Events of a job are written in
//! the same transaction as the change they report, so none is lost and none is invented.

use serde::{Deserialize, Serialize};
use sled::Transactional;
use sled::transaction::{ConflictableTransactionError, TransactionalTree};

use super::quarantine::Quarantine;
use super::{Result, StoreError, codec};
use crate::model::JobId;

/// Tree names of the outbox.
pub mod trees {
    /// Job id + sequence → [`super::Delivery`].
    pub const OUTBOX: &str = "webhook_outbox";
    /// Job id + sequence → event body.
    pub const BODIES: &str = "webhook_bodies";
}

/// Delivery state of one event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Delivery {
    /// `webhookId` of the event.
    pub webhook_id: String,
    /// The job it reports on.
    pub job: JobId,
    /// The job's team (whose secret signs it).
    pub team: String,
    /// Receiver URL.
    pub url: String,
    /// Extra headers.
    pub headers: Vec<(String, String)>,
    /// When the event happened (epoch ms).
    pub created_ms: u64,
    /// Attempts so far.
    pub attempts: u32,
    /// Not before (epoch ms).
    pub next_attempt_ms: u64,
}

codec::records!(Delivery => 1);

/// An event to add: its sequence number, delivery state and body.
#[derive(Debug, Clone)]
pub struct NewEvent {
    /// From [`Outbox::next_seq`].
    pub seq: u64,
    /// Delivery state.
    pub delivery: Delivery,
    /// JSON body.
    pub body: Vec<u8>,
}

/// Typed access to the outbox of one database.
#[derive(Debug, Clone)]
pub struct Outbox {
    db: sled::Db,
    pub(super) state: sled::Tree,
    pub(super) bodies: sled::Tree,
    q: Quarantine,
}

impl Outbox {
    /// Opens the outbox trees of `db`.
    pub fn open(db: &sled::Db, q: Quarantine) -> Result<Self> {
        Ok(Self {
            db: db.clone(),
            state: db.open_tree(trees::OUTBOX)?,
            bodies: db.open_tree(trees::BODIES)?,
            q,
        })
    }

    /// A new sequence number (increasing; gaps are harmless).
    pub fn next_seq(&self) -> Result<u64> {
        Ok(self.db.generate_id()?)
    }

    /// Adds an event outside any other change.
    pub fn push(&self, event: &NewEvent) -> Result<()> {
        let result: std::result::Result<(), sled::transaction::TransactionError<StoreError>> =
            (&self.state, &self.bodies).transaction(|(state, bodies)| push_tx(state, bodies, event));
        result.map_err(|e| match e {
            sled::transaction::TransactionError::Abort(e) => e,
            sled::transaction::TransactionError::Storage(e) => StoreError::Db(e),
        })
    }

    /// The next waiting event of every job that has one.
    pub fn heads(&self) -> Result<Vec<(EventKey, Delivery)>> {
        let mut out = Vec::new();
        let mut from = [0u8; 24];
        while let Some(item) = self.state.range(from..).next() {
            let (k, v) = item?;
            let key = EventKey::from_slice(&k);
            let Some(delivery) = self.q.read(&self.state, &k, &v)? else {
                // Quarantined: look again from the same place.
                continue;
            };
            out.push((key, delivery));
            // Seek past this job's range.
            match increment(&key.0[..16]) {
                Some(next) => {
                    from = [0u8; 24];
                    from[..16].copy_from_slice(&next);
                }
                None => break,
            }
        }
        Ok(out)
    }

    /// The next waiting event of `job`.
    pub fn head_of(&self, job: JobId) -> Result<Option<(EventKey, Delivery)>> {
        let lo = EventKey::new(job, 0);
        let hi = EventKey::new(job, u64::MAX);
        for item in self.state.range(lo.0..=hi.0) {
            let (k, v) = item?;
            if let Some(delivery) = self.q.read(&self.state, &k, &v)? {
                return Ok(Some((EventKey::from_slice(&k), delivery)));
            }
        }
        Ok(None)
    }

    /// An event's body.
    pub fn body(&self, key: EventKey) -> Result<Option<Vec<u8>>> {
        Ok(self.bodies.get(key.0)?.map(|b| b.to_vec()))
    }

    /// Records a failed attempt.
    pub fn reschedule(&self, key: EventKey, delivery: &Delivery) -> Result<()> {
        self.state.insert(key.0, codec::encode(delivery)?)?;
        Ok(())
    }

    /// Forgets a delivered (or abandoned) event.
    pub fn remove(&self, key: EventKey) -> Result<()> {
        self.state.remove(key.0)?;
        self.bodies.remove(key.0)?;
        Ok(())
    }

    /// Number of waiting events.
    pub fn len(&self) -> usize {
        self.state.len()
    }

    /// Whether nothing waits.
    pub fn is_empty(&self) -> bool {
        self.state.is_empty()
    }
}

/// Where an event sits: job id then sequence number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EventKey([u8; 24]);

impl EventKey {
    fn new(job: JobId, seq: u64) -> Self {
        let mut k = [0u8; 24];
        k[..16].copy_from_slice(job.as_bytes());
        k[16..].copy_from_slice(&seq.to_be_bytes());
        Self(k)
    }

    fn from_slice(bytes: &[u8]) -> Self {
        let mut k = [0u8; 24];
        let n = bytes.len().min(24);
        k[..n].copy_from_slice(&bytes[..n]);
        Self(k)
    }

    /// The job the event belongs to.
    pub fn job(&self) -> Option<JobId> {
        JobId::from_bytes(&self.0[..16])
    }
}

/// The big-endian successor of `bytes` (`None` when all bytes are 0xff).
fn increment(bytes: &[u8]) -> Option<[u8; 16]> {
    let mut out = [0u8; 16];
    out.copy_from_slice(bytes);
    for i in (0..16).rev() {
        if out[i] == 0xff {
            out[i] = 0;
        } else {
            out[i] += 1;
            return Some(out);
        }
    }
    None
}

/// Adds `event` inside a transaction over the two outbox trees.
pub(super) fn push_tx(
    state: &TransactionalTree,
    bodies: &TransactionalTree,
    event: &NewEvent,
) -> std::result::Result<(), ConflictableTransactionError<StoreError>> {
    let encoded =
        codec::encode(&event.delivery).map_err(|e| ConflictableTransactionError::Abort(e.into()))?;
    let key = EventKey::new(event.delivery.job, event.seq);
    state.insert(&key.0[..], encoded)?;
    bodies.insert(&key.0[..], event.body.as_slice())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    fn event(outbox: &Outbox, job: JobId, n: u8) -> NewEvent {
        NewEvent {
            seq: outbox.next_seq().expect("seq"),
            delivery: Delivery {
                webhook_id: format!("w{n}"),
                job,
                team: "t".into(),
                url: "http://hooks.test/".into(),
                headers: Vec::new(),
                created_ms: 1,
                attempts: 0,
                next_attempt_ms: 0,
            },
            body: vec![n],
        }
    }

    #[test]
    fn each_job_has_its_events_in_order() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        let (one, two) = (JobId::new(), JobId::new());
        let a1 = event(&store.outbox, one, 1);
        let b1 = event(&store.outbox, two, 2);
        let a2 = event(&store.outbox, one, 3);
        for e in [&a2, &b1, &a1] {
            store.outbox.push(e).expect("push");
        }
        let heads = store.outbox.heads().expect("heads");
        let mut names: Vec<&str> = heads.iter().map(|(_, d)| d.webhook_id.as_str()).collect();
        names.sort_unstable();
        assert_eq!(names, vec!["w1", "w2"], "one head per job, the oldest");
        let (key, first) = store.outbox.head_of(one).expect("head").expect("some");
        assert_eq!((first.webhook_id.as_str(), key.job()), ("w1", Some(one)));
        assert_eq!(store.outbox.body(key).expect("body"), Some(vec![1]));
        let mut later = first.clone();
        later.attempts = 3;
        store.outbox.reschedule(key, &later).expect("reschedule");
        assert_eq!(store.outbox.head_of(one).expect("h").expect("s").1.attempts, 3);
        store.outbox.remove(key).expect("remove");
        assert_eq!(store.outbox.head_of(one).expect("h").expect("s").1.webhook_id, "w3");
        assert_eq!(store.outbox.body(key).expect("body"), None);
        assert_eq!(store.outbox.len(), 2);
    }
}
