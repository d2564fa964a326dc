//! Spacing of a site's requests at the moment they leave: the last gate before the socket.
//!
//! A site's actor spaces the fetches it starts by `crawl.domain_min_interval_ms` (or the
//! robots.txt crawl-delay), but a fetch starts a little before its request is written, and
//! that little varies: a task waits for a worker, the page cache is read first. Two fetches
//! started an interval apart could reach the site closer together. And a fetch that meets a
//! redirect sends its next hop when the answer comes, which no dispatch schedule sees. So the
//! HTTP engine asks the site's [`Pace`] right before each request it writes to that site,
//! first or hop, and waits there until the interval since the site's previous request has
//! passed. The actor sets the pace around its fetches ([`PACE`]); a redirect from its site
//! to another keeps to the other site's pace when that site's actor is on this node, and in
//! a cluster, when the other site belongs to another node, to a turn that node lends from
//! its actor's pace ([`Pace::elsewhere`], [`Pace::lend_turn`]). Fetches outside a site's
//! actor (a single scrape, a webhook) have none.
//!
//! The sites of one host on a node (its `http://` and `https://` origins, or two ports)
//! share one pace ([`Pace::of_site`]): the host sees one site's spacing and concurrency.
//! Paces are kept per HTTP engine ([`new_scope`]), so servers sharing a process keep apart.
//!
//! The pace also keeps the site's `crawl.domain_concurrency` for every request from this
//! node, the actor's own and the redirect hops other sites' fetches send there (which the
//! actor does not dispatch): each takes a [`Slot`] before it goes and holds it until its
//! answer is read. A hop to a site another node holds takes a slot there: the node lends it
//! with the turn, gets the turn back when the hop's request is written (the hop goes
//! through the client of paced sites, whose connection tells the borrowed turn as it
//! writes; see [`Borrowed`], [`wrote`]), and the slot when the hop's answer is in.
//!
//! A request let go is not yet written, so a site with an interval is also held to it at
//! the socket: its requests go through [`super::paced`], whose connections take a second
//! turn from the site's pace ([`Pace::poll_write_start`], found by host with [`of_host`])
//! in the poll that writes the request. The next write turn waits until that request's
//! first bytes are out and counts from then ([`Writing`]): a thread held up between its
//! turn and its write, or in the write after the bytes left, cannot bring two requests
//! closer on the wire than the interval.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, LazyLock, Mutex, OnceLock, PoisonError, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use futures::future::BoxFuture;
use tokio::time::{Instant, Sleep};
use url::Url;

/// Longest the site's own requests wait for a turn lent with its place to come back: the
/// hop's request is written before its answer, so counting the turn as taken when it comes
/// back keeps the interval whatever the hop's way took. A node that never gives it back
/// (it went down) holds the site up this long at most.
pub const LENT_HOLD: Duration = Duration::from_secs(2);

/// Longest the site's next write turn waits for a request whose turn was taken on this node
/// to have its first bytes out (see [`Writing`]). A thread held up between the turn and the
/// write, or in the write itself after the bytes left, is held up milliseconds; a write
/// that cannot go (the site reads nothing) holds the site's other requests this long.
pub const WRITE_HOLD: Duration = Duration::from_millis(250);

/// Every live pace by scope (one per HTTP engine, so servers sharing a process keep apart)
/// and host: the latest one made for a host is the one its writes keep to.
static PACES: LazyLock<Mutex<HashMap<PaceKey, Weak<Pace>>>> = LazyLock::new(Mutex::default);

/// A pace's scope and host.
type PaceKey = (u64, String);

/// Paces made between sweeps of the dead ones out of [`PACES`].
const SWEEP_EVERY: usize = 1024;

/// A scope of its own for an HTTP engine's paces (scope 0 is [`Pace::new`]'s).
pub fn new_scope() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// The live pace of `host` in `scope`, if a site on that host has one on this node.
pub fn of_host(scope: u64, host: &str) -> Option<Arc<Pace>> {
    let paces = PACES.lock().unwrap_or_else(PoisonError::into_inner);
    paces.get(&(scope, host.to_owned())).and_then(Weak::upgrade)
}

tokio::task_local! {
    /// The pace of the site whose actor runs this fetch.
    pub static PACE: Arc<Pace>;
}

/// Whether a request may still be written (see [`Pace::guard`]).
pub type WriteGuard = Arc<dyn Fn() -> bool + Send + Sync>;

/// Asks the node that holds the site of a URL for a turn of that site's pace (see
/// [`Pace::elsewhere`]): `None` when no other node holds it; else resolves once the turn is
/// given, or to `None` when it could not be had (the request must not go out).
pub type Elsewhere = Arc<dyn Fn(&Url) -> Option<BoxFuture<'static, Option<Borrowed>>> + Send + Sync>;

/// Called once, as a request is written.
pub type OnWrite = Box<dyn FnOnce() + Send + Sync>;

/// A turn another node lent a redirect hop of this node: the place it holds among the
/// site's requests in flight there, and, when that node wants to hear it, what tells it
/// that the hop's request was written (it counts its turn as taken then, rather than when
/// the hop's answer is in).
pub struct Borrowed {
    place: Slot,
    on_write: Option<OnWrite>,
}

impl std::fmt::Debug for Borrowed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Borrowed")
            .field("place", &self.place)
            .field("told", &self.on_write.is_some())
            .finish()
    }
}

impl Borrowed {
    /// The turn, its `place` and what tells the lender of the write.
    pub fn new(place: Slot, on_write: Option<OnWrite>) -> Self {
        Self { place, on_write }
    }
}

/// What a request to a host with a borrowed turn calls as it is written.
struct WriteWatch(Mutex<Option<OnWrite>>);

/// Borrowed turns whose requests are not written yet, by scope and host: a request to the
/// host written on a paced connection tells one of them ([`wrote`]). Each hop asks for its
/// turn right before its request, and a request sent again asks again, so the writes and
/// the turns pair up one to one; which turn a write tells does not matter (the lender
/// counts its turns out, not which).
static BORROWED: LazyLock<Mutex<HashMap<u64, WaitingWrites>>> = LazyLock::new(Mutex::default);

/// Per host, the borrowed turns whose requests are not written yet, oldest first.
type WaitingWrites = HashMap<String, Vec<Weak<WriteWatch>>>;

/// Keeps `turn` among the borrowed turns of `host` in `scope` until its request is written
/// (its `on_write` is called then) or the place is dropped.
fn borrowed(scope: u64, host: &str, turn: Borrowed) -> Slot {
    let Some(on_write) = turn.on_write else { return turn.place };
    let watch = Arc::new(WriteWatch(Mutex::new(Some(on_write))));
    let mut borrowed = BORROWED.lock().unwrap_or_else(PoisonError::into_inner);
    let waiting = borrowed.entry(scope).or_default().entry(host.to_owned()).or_default();
    waiting.retain(|watch| watch.strong_count() > 0);
    waiting.push(Arc::downgrade(&watch));
    Slot::holding((turn.place, watch))
}

/// Whether a turn borrowed for a request to `host` in `scope` waits for its write.
fn borrows(scope: u64, host: &str) -> bool {
    let borrowed = BORROWED.lock().unwrap_or_else(PoisonError::into_inner);
    let waiting = borrowed.get(&scope).and_then(|hosts| hosts.get(host));
    waiting.is_some_and(|waiting| waiting.iter().any(|watch| watch.strong_count() > 0))
}

/// A request to `host` was written on a paced connection of `scope` that keeps no pace of
/// its own for the host: one borrowed turn waiting for its write, if any, is told.
pub fn wrote(scope: u64, host: &str) {
    let told = {
        let mut borrowed = BORROWED.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(hosts) = borrowed.get_mut(&scope) else { return };
        let Some(waiting) = hosts.get_mut(host) else { return };
        let mut told = None;
        while told.is_none() && !waiting.is_empty() {
            told = waiting.remove(0).upgrade();
        }
        if waiting.is_empty() {
            hosts.remove(host);
        }
        told
    };
    if let Some(on_write) =
        told.and_then(|watch| watch.0.lock().unwrap_or_else(PoisonError::into_inner).take())
    {
        on_write();
    }
}

/// A request's place among a site's requests in flight (its `domain_concurrency`), held
/// until the request's answer is read. Dropping it gives the place back (to another node,
/// for a place it lent).
#[must_use = "the place is given back when this is dropped"]
pub struct Slot {
    _held: Option<Box<dyn Send + Sync>>,
}

impl std::fmt::Debug for Slot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Slot").field("held", &self._held.is_some()).finish()
    }
}

impl Slot {
    /// No place taken: a site without a limit here.
    pub fn free() -> Self {
        Self { _held: None }
    }

    /// A place held by `held` until this is dropped.
    pub fn holding(held: impl Send + Sync + 'static) -> Self {
        Self { _held: Some(Box::new(held)) }
    }
}

/// One host's spacing between requests, shared by the actors of its sites on this node
/// (`http://` and `https://` of one host are two sites with one pace) and the fetches they
/// run.
pub struct Pace {
    /// The engine whose requests it spaces (see [`new_scope`]).
    scope: u64,
    host: String,
    /// Kept on top of the interval, when there is one.
    margin: Duration,
    state: Mutex<State>,
    /// Asked at each write turn; a request it refuses is not written.
    guard: OnceLock<WriteGuard>,
    /// Asked for the turn of a redirect hop to a site another node holds.
    elsewhere: OnceLock<Elsewhere>,
    /// The site's places for requests in flight (`domain_concurrency`), when limited.
    slots: OnceLock<Arc<tokio::sync::Semaphore>>,
}

impl std::fmt::Debug for Pace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pace").field("host", &self.host).field("margin", &self.margin).finish_non_exhaustive()
    }
}

#[derive(Debug)]
struct State {
    interval: Duration,
    /// When the site's latest request went out (or the pace started).
    last: Option<Instant>,
    /// When the site's latest request was written to its connection (or the pace started).
    written: Option<Instant>,
    /// Turns lent with their places and not given back yet, and when the latest was lent.
    lent: usize,
    lent_at: Option<Instant>,
    /// The request written on this node whose turn was taken last and whose first bytes
    /// are not out yet (its number and when its turn was taken), and how many were.
    writing: Option<(u64, Instant)>,
    writes: u64,
}

/// Which of a site's turns is taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Turn {
    /// A request let go (see [`Pace::before_request`]).
    Request,
    /// A request's write, lent to another node's redirect hop (see [`Pace::lend_turn`]).
    Lent,
    /// A request's write on this node, out when its [`Writing`] says so.
    Write,
}

/// A request's write turn taken on this node, its bytes not yet out: the site's next write
/// turn waits until they are (or [`WRITE_HOLD`]), so that on the wire the next request is
/// an interval after this one even when the thread writing it was held up after taking
/// the turn, or after the bytes left and before it could say so.
#[derive(Debug)]
pub struct Writing(Option<(Arc<Pace>, u64)>);

impl Writing {
    /// The request's first bytes are out: the next turn counts from now.
    pub fn wrote(mut self) {
        if let Some((pace, number)) = self.0.take() {
            pace.done_writing(number, true);
        }
    }
}

impl Drop for Writing {
    fn drop(&mut self) {
        if let Some((pace, number)) = self.0.take() {
            pace.done_writing(number, false);
        }
    }
}

/// A turn lent with its place: given back when dropped (see [`Pace::lend_turn`]).
struct LentTurn(Arc<Pace>);

/// What a site's pace lends another node's redirect hop (see [`Pace::lend_turn`]).
#[derive(Debug)]
pub struct Lending {
    /// The hop's place among the site's requests in flight, until its answer is in.
    pub place: Slot,
    /// The turn, out until the hop's request is written (free when not held).
    pub turn: Slot,
}

impl Drop for LentTurn {
    fn drop(&mut self) {
        let mut state = self.0.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.lent = state.lent.saturating_sub(1);
        let now = Some(Instant::now());
        (state.last, state.written) = (state.last.max(now), state.written.max(now));
    }
}

impl Pace {
    /// The pace of the site on `host`, `interval` (plus `margin` when the interval is not
    /// zero) apart, a new one (in scope 0).
    pub fn new(host: &str, interval: Duration, margin: Duration) -> Arc<Self> {
        Self::registered(0, host, interval, margin, false)
    }

    /// The pace of `host` in `scope`: the live one another site of the host has on this
    /// node (its sites share their host's pace and concurrency limit), else a new one,
    /// `interval` (plus `margin` when the interval is not zero) apart.
    pub fn of_site(scope: u64, host: &str, interval: Duration, margin: Duration) -> Arc<Self> {
        Self::registered(scope, host, interval, margin, true)
    }

    /// A new pace registered for `host` in `scope`, or with `reuse` the live one there.
    fn registered(scope: u64, host: &str, interval: Duration, margin: Duration, reuse: bool) -> Arc<Self> {
        let key = (scope, host.to_owned());
        let mut paces = PACES.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(live) = paces.get(&key).and_then(Weak::upgrade).filter(|_| reuse) {
            return live;
        }
        // Counted from the pace's start: a site actor that replaces another (the site came
        // back to this node, or the node lost touch with the others and claimed it again)
        // may start while the old one's last request is only just out.
        let last = Some(Instant::now());
        let state = Mutex::new(State {
            interval,
            last,
            written: last,
            lent: 0,
            lent_at: None,
            writing: None,
            writes: 0,
        });
        let pace = Arc::new(Self {
            scope,
            host: host.to_owned(),
            margin,
            state,
            guard: OnceLock::new(),
            elsewhere: OnceLock::new(),
            slots: OnceLock::new(),
        });
        paces.insert(key, Arc::downgrade(&pace));
        if paces.len().is_multiple_of(SWEEP_EVERY) {
            paces.retain(|_, pace| pace.strong_count() > 0);
        }
        pace
    }

    /// Sets what is asked as each request is written: in a cluster, whether this node is
    /// still in touch with the others. A request let go just before the process was frozen
    /// would otherwise be written as it wakes, while another node may already fetch the site.
    pub fn guard(&self, may_write: WriteGuard) {
        let _ = self.guard.set(may_write);
    }

    /// Limits the site's requests in flight from this node to `concurrency`, the actor's
    /// own and the redirect hops into the site alike.
    pub fn limit(&self, concurrency: usize) {
        let _ = self.slots.set(Arc::new(tokio::sync::Semaphore::new(concurrency.max(1))));
    }

    /// Takes a place among the site's requests in flight, waiting for one.
    async fn slot(&self) -> Slot {
        match self.slots.get().map(|slots| Arc::clone(slots).acquire_owned()) {
            Some(place) => place.await.map_or_else(|_| Slot::free(), Slot::holding),
            None => Slot::free(),
        }
    }

    /// Sets how a redirect hop from this site to a site held by another node of the cluster
    /// gets its turn: that node's actor of the site lends one ([`Pace::lend_turn`]), so the
    /// hop is spaced as that site's own requests are, whichever node sends it.
    pub fn elsewhere(&self, ask: Elsewhere) {
        let _ = self.elsewhere.set(ask);
    }

    /// Gives a request to the site that another node sends (a redirect hop there) its turn,
    /// as a request of this node takes it: when it is let go, then when it is written, with
    /// its place among the site's requests in flight. The other node writes it later, once
    /// the answer has crossed the cluster network, says when it was written, and gives the
    /// place back when the hop's answer is in: the site's own requests wait until the turn
    /// is given back (dropped: when the other node says the request was written, else with
    /// the place; [`LENT_HOLD`] at most) and count it as taken then.
    pub async fn lend_turn(self: &Arc<Self>, url: &Url) -> Lending {
        let place = self.before_request(url).await;
        let mut wait = None;
        std::future::poll_fn(|cx| self.poll_write_turn(cx, &mut wait)).await;
        let lending = |turn| Lending { place, turn };
        if self.interval().is_zero() {
            return lending(Slot::free());
        }
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.lent += 1;
        state.lent_at = Some(Instant::now());
        lending(Slot::holding(LentTurn(Arc::clone(self))))
    }

    /// Whether a request may be written now (see [`Pace::guard`]).
    pub fn may_write(&self) -> bool {
        self.guard.get().is_none_or(|may| may())
    }

    /// Whether requests to `url` are spaced by this pace (the site's, with an interval).
    pub fn spaces(&self, url: &Url) -> bool {
        url.host_str() == Some(self.host.as_str()) && !self.interval().is_zero()
    }

    /// The spacing now: the interval and, when there is one, the margin.
    fn gap(&self, state: &State) -> Duration {
        if state.interval.is_zero() { Duration::ZERO } else { state.interval + self.margin }
    }

    /// Takes a turn of kind `turn` when it is due, counting it as taken now; else says when
    /// it will be. A write turn also waits for a request written here to be out (see
    /// [`Writing`]); one of kind [`Turn::Write`] is such a request, numbered.
    fn take_turn(&self, turn: Turn) -> Result<u64, Instant> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let (now, gap) = (Instant::now(), self.gap(&state));
        if state.lent > 0 && state.lent_at.is_some_and(|at| now < at + LENT_HOLD) {
            // A lent turn is out: looked at again in a moment (it comes back when the other
            // node's hop has its answer).
            return Err(now + Duration::from_millis(1));
        }
        // A site without an interval keeps no writes apart.
        let held = !gap.is_zero() && turn != Turn::Request;
        if held && state.writing.is_some_and(|(_, at)| now < at + WRITE_HOLD) {
            // Looked at again in a moment: the write before is out within microseconds
            // unless its thread is held up.
            return Err(now + Duration::from_millis(1));
        }
        let taken = if turn == Turn::Request { &mut state.last } else { &mut state.written };
        if let Some(due) = taken.map(|at| at + gap).filter(|due| *due > now) {
            return Err(due);
        }
        *taken = Some(now);
        state.writes += 1;
        if held && turn == Turn::Write {
            state.writing = Some((state.writes, now));
        }
        Ok(state.writes)
    }

    /// Ready when a turn of kind `turn` is taken (see [`Pace::take_turn`]); else waits on
    /// `wait`, a timer kept by the caller between polls.
    fn poll_turn(&self, turn: Turn, cx: &mut Context<'_>, wait: &mut Option<Pin<Box<Sleep>>>) -> Poll<u64> {
        loop {
            let at = match self.take_turn(turn) {
                Ok(number) => {
                    *wait = None;
                    return Poll::Ready(number);
                }
                Err(at) => at,
            };
            let timer = wait.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(at)));
            timer.as_mut().reset(at);
            if timer.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
        }
    }

    /// Ready when a request to the site may be written (an interval and its margin after
    /// the one written before, which is out), and counts it as written; else waits on
    /// `wait`, a timer kept by the caller between polls. For a turn that is not written
    /// here (lent to another node's hop).
    pub fn poll_write_turn(&self, cx: &mut Context<'_>, wait: &mut Option<Pin<Box<Sleep>>>) -> Poll<()> {
        self.poll_turn(Turn::Lent, cx, wait).map(|_| ())
    }

    /// [`Pace::poll_write_turn`] for a request written here: ready with what to tell once
    /// its first bytes are out.
    pub fn poll_write_start(
        self: &Arc<Self>,
        cx: &mut Context<'_>,
        wait: &mut Option<Pin<Box<Sleep>>>,
    ) -> Poll<Writing> {
        self.poll_turn(Turn::Write, cx, wait).map(|number| Writing(Some((Arc::clone(self), number))))
    }

    /// The request written here numbered `number` has its first bytes out (`out`: the
    /// next turn counts from now, if later than its turn), or will never have them.
    fn done_writing(&self, number: u64, out: bool) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if state.writing.is_some_and(|(writing, _)| writing == number) {
            state.writing = None;
        }
        if out {
            state.written = state.written.max(Some(Instant::now()));
        }
    }

    /// The interval between two requests to the site (without the margin).
    pub fn interval(&self) -> Duration {
        self.state.lock().unwrap_or_else(PoisonError::into_inner).interval
    }

    /// Widens the interval (a robots.txt crawl-delay); it never narrows.
    pub fn widen(&self, interval: Duration) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.interval = state.interval.max(interval);
    }

    /// Waits until a request to `url` may go out (a place among the site's requests in
    /// flight, then its turn), and counts it as gone. Requests to other hosts (a redirect
    /// off the site) pass at once.
    pub async fn before_request(&self, url: &Url) -> Slot {
        if url.host_str() != Some(self.host.as_str()) {
            return Slot::free();
        }
        let slot = self.slot().await;
        loop {
            let Err(at) = self.take_turn(Turn::Request) else { return slot };
            // Another request may take the turn meanwhile; then this one waits again.
            tokio::time::sleep_until(at).await;
        }
    }
}

/// The pace a request to `url` keeps to, when a site's actor runs this fetch: its own
/// site's for a URL on it, else the pace of the URL's site when that site's actor lives on
/// this node (a redirect hop from one site to another is spaced as the other site's own
/// requests are).
fn pace_for(url: &Url) -> Option<Arc<Pace>> {
    let host = url.host_str()?;
    let current = PACE.try_with(Arc::clone).ok()?;
    if current.host == host { Some(current) } else { of_host(current.scope, host) }
}

/// Whether a request to `url` goes through the client of paced sites: its site has an
/// interval (see [`pace_for`]), or another node lent it a turn and waits to hear when it is
/// written.
pub fn spaces(url: &Url) -> bool {
    match pace_for(url) {
        Some(pace) => pace.spaces(url),
        None => url
            .host_str()
            .is_some_and(|host| PACE.try_with(|pace| borrows(pace.scope, host)).unwrap_or(false)),
    }
}

/// Whether a request of the running fetch may go out now: its site's pace's guard (in a
/// cluster, whether this node is still in touch with the others; see [`Pace::guard`]).
/// Asked as each request, first or redirect hop, leaves; a fetch outside a site's actor
/// always may.
pub fn may_continue() -> bool {
    PACE.try_with(|pace| pace.may_write()).unwrap_or(true)
}

/// Waits for the pace of `url`'s site before a request to it (see [`pace_for`]), or, for a
/// site another node of the cluster holds, for the turn that node lends
/// ([`Pace::elsewhere`]). The request's place among the site's requests in flight, to hold
/// until its answer is read; `None` when the turn could not be had: the request must not
/// go out. A borrowed turn waits to be told of the request's write by the client of paced
/// sites (see [`wrote`]).
pub async fn before_request(url: &Url) -> Option<Slot> {
    turn_for(url, true).await
}

/// [`before_request`] for a request sent through a proxy, not through the client of paced
/// sites: a turn borrowed for it hears of no write (it comes back with its place).
pub async fn before_proxied_request(url: &Url) -> Option<Slot> {
    turn_for(url, false).await
}

/// [`before_request`]; with `watched`, a borrowed turn waits to be told of the write.
async fn turn_for(url: &Url, watched: bool) -> Option<Slot> {
    if let Some(pace) = pace_for(url) {
        return Some(pace.before_request(url).await);
    }
    let ask = PACE.try_with(|pace| Some((pace.scope, pace.elsewhere.get()?(url)?))).ok().flatten();
    match (ask, url.host_str()) {
        (Some((scope, turn)), Some(host)) if watched => Some(borrowed(scope, host, turn.await?)),
        (Some((_, turn)), _) => Some(turn.await?.place),
        _ => Some(Slot::free()),
    }
}

#[cfg(test)]
mod tests;
