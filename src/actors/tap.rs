//! Result taps: a job whose finished pages go straight to a reader in the same process.
//!
//! The command-line crawl writes every page to a folder. Storing each document only to
//! read it back costs a serialization, a store write (and its share of node splits and log
//! writes) and a parse per page, so such a job hands its documents over a bounded channel
//! instead, and keeps them in the store as well only when asked. A page is handed over
//! once its settlement is committed, so the reader sees each page exactly once, in the
//! order the job's counters count them. A tap lives in this process only: a job resumed
//! after a restart has none and stores its pages as usual.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::mpsc;

use crate::model::{Document, JobId};

/// Pages a tap holds before the job waits for its reader.
const CAPACITY: usize = 256;

/// The sending side of a job's tap.
#[derive(Debug, Clone)]
pub struct Tap {
    sender: mpsc::Sender<Document>,
    keep: bool,
}

impl Tap {
    /// Whether the documents are stored too.
    pub fn keeps_documents(&self) -> bool {
        self.keep
    }

    /// Hands a committed page to the reader, waiting while the reader is behind (so memory
    /// stays bounded). A reader that has gone away is not an error of the job.
    pub async fn send(&self, document: Document) {
        let _ = self.sender.send(document).await;
    }
}

/// The open taps, by job.
#[derive(Debug, Clone, Default)]
pub struct Taps(Arc<Mutex<HashMap<JobId, Tap>>>);

impl Taps {
    /// Opens a tap for `job`, before the job is submitted. Its pages arrive on the
    /// receiver, which ends once the job has no actor any more (finished, failed or given
    /// up on: the job supervisor closes the tap then). With `keep` the job stores its
    /// documents as well.
    pub fn open(&self, job: JobId, keep: bool) -> mpsc::Receiver<Document> {
        let (sender, receiver) = mpsc::channel(CAPACITY);
        self.map().insert(job, Tap { sender, keep });
        receiver
    }

    /// The job's tap, if one is open.
    pub fn get(&self, job: JobId) -> Option<Tap> {
        self.map().get(&job).cloned()
    }

    /// Closes the job's tap; the receiver ends once the job's actor, which holds a copy,
    /// has ended too.
    pub fn close(&self, job: JobId) {
        self.map().remove(&job);
    }

    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<JobId, Tap>> {
        // The map stays consistent whatever a panicking holder was doing.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
