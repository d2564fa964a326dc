//! Calls between nodes carried many to a message. A page
//! fetched on its site's node is one request and one answer; as a ractor call of its own,
//! each crossed a dozen actor mailboxes and task wake-ups inside ractor_cluster on each
//! side, which cost more CPU than the page's bytes. Here:
//!
//! - **requests** to a peer are queued and sent in `Frame::Requests` messages (casts to
//!   its agent);
//! - **answers** wait on the answering node, per calling node, until the caller collects
//!   them with a `Frame::Collect` call. The answering node holds that call until it has an
//!   answer (up to a heartbeat, then answers it empty), and the caller collects again at
//!   once while it has calls outstanding;
//! - each way, a peer is sent at most one message per [`SPACING`]: what comes sooner waits
//!   for the rest of it and goes with whatever else came meanwhile. A call made after a
//!   quiet moment goes at once (it costs what it did as a call of its own); under load a
//!   call waits up to [`SPACING`] each way, and a message carries all the requests or
//!   answers of that time (a crawl at 2 500 pages a second: some five pages a message).
//!
//! A call whose peer's session ends (the node was killed, judged down and disconnected, or
//! came back through a new session) fails at once, as a ractor call through that session
//! would: its caller sends it again. Call ids start at a random number, so a restarted
//! node's calls are never matched with answers kept for its previous run.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use ractor::{ActorRef, RpcReplyPort};
use serde_bytes::{ByteBuf, Bytes};
use tokio::sync::oneshot;

use super::agent::Shared;
use super::wire::{AgentMsg, Frame, Item, OwnedReply, Reply, Versions, open, seal_as};

/// Least time between two messages to a peer one way, while there is more to send.
const SPACING: Duration = Duration::from_millis(2);

/// When the next message to a peer (one way) may go.
#[derive(Debug, Default)]
struct Spacing {
    last: Option<Instant>,
    /// A send is scheduled for the end of the spacing.
    scheduled: bool,
}

/// What to do with something to send.
#[derive(Debug, PartialEq, Eq)]
enum Send {
    /// Send it now.
    Now,
    /// Schedule a send after this long (nothing is scheduled yet).
    After(Duration),
    /// A send is scheduled: it goes with that one.
    Scheduled,
}

impl Spacing {
    /// Something is to be sent at `now`; a send now is counted as made.
    fn next(&mut self, now: Instant) -> Send {
        if self.scheduled {
            return Send::Scheduled;
        }
        match self.last.map(|last| now.saturating_duration_since(last)) {
            Some(since) if since < SPACING => {
                self.scheduled = true;
                Send::After(SPACING - since)
            }
            _ => {
                self.last = Some(now);
                Send::Now
            }
        }
    }

    /// The scheduled send runs at `now`.
    fn fire(&mut self, now: Instant) {
        self.scheduled = false;
        self.last = Some(now);
    }
}

/// What a call's waiter is sent: the message its answer came in and where the answer lies
/// in it, or why the call failed on the other node. Dropped unsent when the call is lost
/// with its peer's session.
pub(crate) type Answered = Result<(Arc<Vec<u8>>, Range<usize>), String>;

/// This node's calls to its peers, and its answers to theirs.
#[derive(Debug)]
pub(crate) struct Batches {
    next_id: AtomicU64,
    /// Calls to each peer, by its name.
    calling: Mutex<HashMap<String, Calling>>,
    /// Answers waiting to be collected, by the calling node's name.
    answering: Mutex<HashMap<String, Outbox>>,
    /// Most bytes of requests or answers put in one message (one item may be larger: it
    /// goes alone, as it would have as a call of its own).
    max_batch_bytes: usize,
    /// Messages this node sent with batches (request batches and collections).
    pub messages: AtomicU64,
}

/// Calls to one peer.
#[derive(Debug)]
struct Calling {
    /// The ractor session (node id) the peer's agent is reached through.
    session: u64,
    actor: ActorRef<AgentMsg>,
    version: u32,
    pending: HashMap<u64, oneshot::Sender<Answered>>,
    queued: Vec<Item>,
    spacing: Spacing,
    collecting: bool,
}

impl Calling {
    fn new(session: u64, actor: &ActorRef<AgentMsg>, version: u32) -> Self {
        Self {
            session,
            actor: actor.clone(),
            version,
            pending: HashMap::new(),
            queued: Vec::new(),
            spacing: Spacing::default(),
            collecting: false,
        }
    }
}

/// Answers to one calling node, waiting for its collection.
#[derive(Debug)]
struct Outbox {
    ready: Vec<(u64, Result<ByteBuf, String>)>,
    /// Its collection waiting for an answer: the reply port, its version, since when.
    parked: Option<(RpcReplyPort<Vec<u8>>, u32, Instant)>,
    last_collect: Instant,
    spacing: Spacing,
}

impl Outbox {
    fn new() -> Self {
        Self { ready: Vec::new(), parked: None, last_collect: Instant::now(), spacing: Spacing::default() }
    }

    /// The waiting collection and the answers it takes, when it may go now.
    fn take(&mut self, max_bytes: usize) -> Option<Collection> {
        if self.ready.is_empty() {
            return None;
        }
        let (port, version, _) = self.parked.take()?;
        Some((port, version, take_fitting(&mut self.ready, max_bytes, answer_size)))
    }
}

/// The mutex's guard, also after a panic while it was held (what it guards stays usable).
pub(super) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Takes from the front of `items` what fits in `max_bytes` (at least one item).
fn take_fitting<T>(items: &mut Vec<T>, max_bytes: usize, size: impl Fn(&T) -> usize) -> Vec<T> {
    let mut total = 0;
    let count = items
        .iter()
        .position(|item| {
            total += size(item);
            total > max_bytes
        })
        .unwrap_or(items.len())
        .max(1)
        .min(items.len());
    items.drain(..count).collect()
}

fn answer_size(answer: &(u64, Result<ByteBuf, String>)) -> usize {
    answer.1.as_ref().map_or_else(String::len, |b| b.len())
}

impl Batches {
    /// Batches of at most `max_batch_bytes` (besides single larger items).
    pub(crate) fn new(max_batch_bytes: usize) -> Self {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64)
            ^ (u64::from(std::process::id()) << 40);
        Self {
            next_id: AtomicU64::new(seed),
            calling: Mutex::default(),
            answering: Mutex::default(),
            max_batch_bytes,
            messages: AtomicU64::new(0),
        }
    }

    /// Queues a call of `body` for `channel` of peer `node` (its agent `actor`, speaking
    /// `version`); the receiver gets the answer. `forget` it when the caller stops waiting.
    pub(crate) fn call(
        self: &Arc<Self>,
        shared: &Arc<Shared>,
        node: &str,
        actor: &ActorRef<AgentMsg>,
        version: u32,
        channel: u8,
        body: Vec<u8>,
    ) -> (u64, oneshot::Receiver<Answered>) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        let session = actor.get_id().node();
        let (flush, collect) = {
            let mut calling = lock(&self.calling);
            let peer =
                calling.entry(node.to_owned()).or_insert_with(|| Calling::new(session, actor, version));
            if peer.session != session {
                // The peer came back through another session: what went through the old
                // one is lost (its waiters are dropped: the callers send again).
                *peer = Calling::new(session, actor, version);
            }
            peer.version = version;
            peer.pending.insert(id, tx);
            peer.queued.push(Item { id, channel, body });
            let flush = match peer.spacing.next(Instant::now()) {
                Send::Now => Some((std::mem::take(&mut peer.queued), peer.actor.clone())),
                Send::After(wait) => {
                    let (batches, shared, node) = (Arc::clone(self), Arc::clone(shared), node.to_owned());
                    tokio::spawn(async move {
                        tokio::time::sleep(wait).await;
                        batches.flush(&shared, &node, session);
                    });
                    None
                }
                Send::Scheduled => None,
            };
            (flush, !std::mem::replace(&mut peer.collecting, true))
        };
        if let Some((items, actor)) = flush {
            self.send(&shared.name, node, session, &actor, version, items);
        }
        if collect {
            let (batches, shared, node) = (Arc::clone(self), Arc::clone(shared), node.to_owned());
            tokio::spawn(async move { batches.collect(&shared, &node, session).await });
        }
        (id, rx)
    }

    /// The caller of call `id` to `node` stopped waiting (it timed out).
    pub(crate) fn forget(&self, node: &str, id: u64) {
        if let Some(peer) = lock(&self.calling).get_mut(node) {
            peer.pending.remove(&id);
        }
    }

    /// The ractor session with node id `session` ended: the calls that went through it are
    /// lost (their waiters are dropped).
    pub(crate) fn session_ended(&self, session: u64) {
        lock(&self.calling).retain(|_, peer| peer.session != session);
    }

    /// Sends what is queued for `node` (through `session`): its spacing has passed.
    fn flush(&self, shared: &Shared, node: &str, session: u64) {
        let (items, actor, version) = {
            let mut calling = lock(&self.calling);
            let Some(peer) = calling.get_mut(node).filter(|p| p.session == session) else { return };
            peer.spacing.fire(Instant::now());
            (std::mem::take(&mut peer.queued), peer.actor.clone(), peer.version)
        };
        self.send(&shared.name, node, session, &actor, version, items);
    }

    /// Sends `items` to `node`'s agent `actor` (through `session`) from `name`.
    fn send(
        &self,
        name: &str,
        node: &str,
        session: u64,
        actor: &ActorRef<AgentMsg>,
        version: u32,
        items: Vec<Item>,
    ) {
        let mut items = items;
        while !items.is_empty() {
            let batch = take_fitting(&mut items, self.max_batch_bytes, |item| item.body.len());
            let ids: Vec<u64> = batch.iter().map(|item| item.id).collect();
            let sealed = seal_as(version, name, &Frame::Requests(batch));
            self.messages.fetch_add(1, Ordering::Relaxed);
            if actor.cast(AgentMsg::Cast(sealed)).is_err() {
                // The session is gone: these calls fail now rather than at their timeout.
                if let Some(peer) = lock(&self.calling).get_mut(node).filter(|p| p.session == session) {
                    for id in ids {
                        peer.pending.remove(&id);
                    }
                }
            }
        }
    }

    /// Collects `node`'s answers while calls to it are outstanding.
    async fn collect(&self, shared: &Shared, node: &str, session: u64) {
        // Longer than the other node holds a collection (a heartbeat or two).
        let timeout = shared.down_after + 4 * shared.heartbeat;
        loop {
            let (actor, version) = {
                let calling = lock(&self.calling);
                let Some(peer) = calling.get(node).filter(|p| p.session == session) else { return };
                (peer.actor.clone(), peer.version)
            };
            self.messages.fetch_add(1, Ordering::Relaxed);
            let answer =
                super::agent::call_sealed(&shared.name, version, &actor, &Frame::Collect, timeout).await;
            let mut calling = lock(&self.calling);
            let Some(peer) = calling.get_mut(node).filter(|p| p.session == session) else { return };
            match answer.and_then(|sealed| read_answers(sealed, shared.versions)) {
                Ok((sealed, answers)) => {
                    let sealed = Arc::new(sealed);
                    for (id, answer) in answers {
                        if let Some(waiter) = peer.pending.remove(&id) {
                            let _ = waiter.send(answer.map(|range| (Arc::clone(&sealed), range)));
                        }
                    }
                }
                Err(reason) => {
                    // Not answered (the node is frozen, gone or unreadable): its calls fail
                    // now, so their callers send them again.
                    tracing::debug!(node, error = %reason, "collecting answers from a node failed");
                    peer.pending.clear();
                }
            }
            if peer.pending.is_empty() {
                peer.collecting = false;
                return;
            }
        }
    }

    /// Answers requests `items` of node `from` with this node's handlers, each on its own task; the answers wait for `from`'s collection.
    pub(crate) fn requests(self: &Arc<Self>, shared: &Arc<Shared>, from: String, items: Vec<Item>) {
        for Item { id, channel, body } in items {
            let handler = shared.handlers.read().ok().and_then(|h| h.get(&channel).cloned());
            let (batches, shared, from) = (Arc::clone(self), Arc::clone(shared), from.clone());
            tokio::spawn(async move {
                let result = match handler {
                    Some(handler) => handler.handle(from.clone(), body).await,
                    None => Err(format!("nothing serves channel {channel} on this node yet")),
                };
                batches.answered(&shared.name, &from, id, result);
            });
        }
    }

    /// Call `id` of node `from` is answered: sent when `from`'s collection waits and the
    /// spacing allows.
    fn answered(self: &Arc<Self>, name: &str, from: &str, id: u64, result: Result<Vec<u8>, String>) {
        let send = {
            let mut answering = lock(&self.answering);
            let outbox = answering.entry(from.to_owned()).or_insert_with(Outbox::new);
            outbox.ready.push((id, result.map(ByteBuf::from)));
            self.ready_to_send(outbox, name, from)
        };
        reply(name, send);
    }

    /// Node `from` collects its answers (in `version`): answered when it has some and the
    /// spacing allows, else held until then.
    pub(crate) fn collected(
        self: &Arc<Self>,
        name: &str,
        from: &str,
        version: u32,
        port: RpcReplyPort<Vec<u8>>,
    ) {
        let (earlier, send) = {
            let mut answering = lock(&self.answering);
            let outbox = answering.entry(from.to_owned()).or_insert_with(Outbox::new);
            outbox.last_collect = Instant::now();
            let earlier = outbox.parked.replace((port, version, Instant::now()));
            (earlier, self.ready_to_send(outbox, name, from))
        };
        // A collection replaced by a newer one is answered empty.
        if let Some((port, v, _)) = earlier {
            reply(name, Some((port, v, Vec::new())));
        }
        reply(name, send);
    }

    /// What `outbox` sends now, when its collection waits with answers ready; schedules the
    /// send for the end of the spacing when it may not go yet.
    fn ready_to_send(self: &Arc<Self>, outbox: &mut Outbox, name: &str, from: &str) -> Option<Collection> {
        if outbox.ready.is_empty() || outbox.parked.is_none() {
            return None;
        }
        match outbox.spacing.next(Instant::now()) {
            Send::Now => outbox.take(self.max_batch_bytes),
            Send::After(wait) => {
                let (batches, name, from) = (Arc::clone(self), name.to_owned(), from.to_owned());
                tokio::spawn(async move {
                    tokio::time::sleep(wait).await;
                    let send = {
                        let mut answering = lock(&batches.answering);
                        answering.get_mut(&from).and_then(|outbox| {
                            outbox.spacing.fire(Instant::now());
                            outbox.take(batches.max_batch_bytes)
                        })
                    };
                    reply(&name, send);
                });
                None
            }
            Send::Scheduled => None,
        }
    }

    /// On each heartbeat: collections held over `hold` are answered empty (the caller
    /// collects again), and the answers of a node that stopped collecting for `forget_after`
    /// (gone, restarted, or no longer waiting) are dropped.
    pub(crate) fn tick(&self, name: &str, hold: Duration, forget_after: Duration) {
        let now = Instant::now();
        let mut due = Vec::new();
        {
            let mut answering = lock(&self.answering);
            for outbox in answering.values_mut() {
                if outbox.parked.as_ref().is_some_and(|(_, _, since)| now.duration_since(*since) >= hold) {
                    due.extend(outbox.parked.take());
                }
            }
            answering.retain(|_, outbox| {
                outbox.parked.is_some() || now.duration_since(outbox.last_collect) < forget_after
            });
        }
        for (port, version, _) in due {
            reply(name, Some((port, version, Vec::new())));
        }
    }
}

/// A collection's reply port, its version, and the answers it takes.
type Collection = (RpcReplyPort<Vec<u8>>, u32, Vec<(u64, Result<ByteBuf, String>)>);

/// Sends a collection's answers, if any are to go.
fn reply(name: &str, send: Option<Collection>) {
    if let Some((port, version, answers)) = send {
        let _ = port.send(seal_as(version, name, &OwnedReply::Answers(answers)));
    }
}

/// The answers in a collection's reply, each as where its bytes lie in the message.
#[allow(clippy::type_complexity)]
fn read_answers(
    sealed: Vec<u8>,
    versions: Versions,
) -> Result<(Vec<u8>, Vec<(u64, Result<Range<usize>, String>)>), String> {
    let answers = match open::<Reply<&Bytes>>(&sealed, versions) {
        Ok((_, Reply::Answers(answers), _)) => answers
            .into_iter()
            .map(|(id, answer)| (id, answer.map(|bytes| super::wire::range_in(&sealed, bytes))))
            .collect(),
        Ok(_) => return Err("unexpected answer to a collection".to_owned()),
        Err(e) => return Err(e.to_string()),
    };
    Ok((sealed, answers))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_waits_for_the_spacing_only_after_another() {
        let start = Instant::now();
        let mut spacing = Spacing::default();
        // After a quiet moment: at once.
        assert_eq!(spacing.next(start), Send::Now);
        // Soon after: scheduled for the rest of the spacing, once.
        let soon = start + Duration::from_micros(500);
        assert_eq!(spacing.next(soon), Send::After(SPACING - Duration::from_micros(500)));
        assert_eq!(spacing.next(soon), Send::Scheduled);
        spacing.fire(start + SPACING);
        // Counted from the scheduled send.
        assert!(matches!(spacing.next(start + SPACING + Duration::from_micros(100)), Send::After(_)));
        spacing.fire(start + 2 * SPACING);
        assert_eq!(spacing.next(start + 3 * SPACING), Send::Now);
    }

    #[test]
    fn batches_take_what_fits_and_at_least_one() {
        let mut items = vec![3usize, 4, 5, 100, 1];
        assert_eq!(take_fitting(&mut items, 8, |n| *n), vec![3, 4]);
        assert_eq!(take_fitting(&mut items, 8, |n| *n), vec![5]);
        // Larger than a batch: alone.
        assert_eq!(take_fitting(&mut items, 8, |n| *n), vec![100]);
        assert_eq!(take_fitting(&mut items, 8, |n| *n), vec![1]);
        assert!(take_fitting(&mut items, 8, |n| *n).is_empty());
    }

    #[test]
    fn answers_are_read_where_they_lie_in_the_message() {
        let page = ByteBuf::from(vec![7u8; 30_000]);
        let reply =
            OwnedReply::Answers(vec![(41, Ok(page.clone())), (42, Err("gone".into())), (43, Ok(page))]);
        let versions = Versions { own: 14, oldest: 13 };
        let sealed = seal_as(13, "n2", &reply);
        let (sealed, answers) = read_answers(sealed, versions).expect("answers");
        assert_eq!(answers.len(), 3);
        let (id, Ok(range)) = &answers[0] else { panic!("not an answer: {answers:?}") };
        assert_eq!((*id, sealed[range.clone()].len()), (41, 30_000));
        assert!(sealed[range.clone()].iter().all(|b| *b == 7));
        assert_eq!(answers[1], (42, Err("gone".to_owned())));
        assert!(matches!(&answers[2], (43, Ok(r)) if r.len() == 30_000 && r.start > range.end));
    }
}
