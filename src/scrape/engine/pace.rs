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
//! turn from the site's pace ([`Pace::poll_write_turn`], found by host with [`of_host`])
//! in the poll that writes the request.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, LazyLock, Mutex, OnceLock, PoisonError, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use futures::future::BoxFuture;
use tokio::time::{Instant, Sleep};
use url::Url;

/// How long after a turn is lent to a node of protocol version 5 the request may reach the
/// site: the answer's way back across the cluster network and the other node's write.
pub const LENT_ALLOWANCE: Duration = Duration::from_millis(10);

/// Longest the site's own requests wait for a turn lent with its place (to a node of
/// version 6) to come back: the hop's request is written before its answer, so counting
/// the turn as taken when it comes back keeps the interval whatever the hop's way took.
/// A node that never gives it back (it went down) holds the site up this long at most.
pub const LENT_HOLD: Duration = Duration::from_secs(2);

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
        let state = Mutex::new(State { interval, last, written: last, lent: 0, lent_at: None });
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
    /// the answer has crossed the cluster network. With `held` (a node of version 6 or
    /// later, which gives the place back when the hop's answer is in, and from version 12
    /// says when the hop's request was written), the site's own requests wait until the
    /// turn is given back (dropped: when the other node says the request was written, else
    /// with the place; [`LENT_HOLD`] at most) and count it as taken then; else the turn
    /// counts as taken [`LENT_ALLOWANCE`] from now.
    pub async fn lend_turn(self: &Arc<Self>, url: &Url, held: bool) -> Lending {
        let place = self.before_request(url).await;
        let mut wait = None;
        std::future::poll_fn(|cx| self.poll_write_turn(cx, &mut wait)).await;
        let lending = |turn| Lending { place, turn };
        if self.interval().is_zero() {
            return lending(Slot::free());
        }
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        if held {
            state.lent += 1;
            state.lent_at = Some(now);
            return lending(Slot::holding(LentTurn(Arc::clone(self))));
        }
        // Never earlier than a turn another request took meanwhile.
        let at = Some(now + LENT_ALLOWANCE);
        (state.last, state.written) = (state.last.max(at), state.written.max(at));
        lending(Slot::free())
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

    /// Takes the turn kept in `turn` (the latest release, or the latest write) when it is
    /// due, counting it as taken now; else says when it will be.
    fn take_turn(&self, turn: fn(&mut State) -> &mut Option<Instant>) -> Result<(), Instant> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let (now, gap) = (Instant::now(), self.gap(&state));
        if state.lent > 0 && state.lent_at.is_some_and(|at| now < at + LENT_HOLD) {
            // A lent turn is out: looked at again in a moment (it comes back when the other
            // node's hop has its answer).
            return Err(now + Duration::from_millis(1));
        }
        let taken = turn(&mut state);
        match taken.map(|at| at + gap) {
            Some(due) if due > now => Err(due),
            _ => {
                *taken = Some(now);
                Ok(())
            }
        }
    }

    /// Ready when a request to the site may be written (an interval and its margin after
    /// the one written before), and counts it as written; else waits on `wait`, a timer
    /// kept by the caller between polls.
    pub fn poll_write_turn(&self, cx: &mut Context<'_>, wait: &mut Option<Pin<Box<Sleep>>>) -> Poll<()> {
        loop {
            let Err(at) = self.take_turn(|state| &mut state.written) else {
                *wait = None;
                return Poll::Ready(());
            };
            let timer = wait.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(at)));
            timer.as_mut().reset(at);
            if timer.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
        }
    }

    /// The request whose turn was taken last has its first bytes out: the next turn counts
    /// from now, if that is later than when the turn was taken.
    pub fn wrote_now(&self) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.written = state.written.max(Some(Instant::now()));
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
            let Err(at) = self.take_turn(|state| &mut state.last) else { return slot };
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
mod tests {
    use super::*;

    #[test]
    fn the_sites_of_one_host_share_its_pace_within_one_engines_scope() {
        let (scope, other) = (new_scope(), new_scope());
        let first = Pace::of_site(scope, "shared-host.test", Duration::ZERO, Duration::ZERO);
        let second = Pace::of_site(scope, "shared-host.test", Duration::ZERO, Duration::ZERO);
        assert!(Arc::ptr_eq(&first, &second), "two sites of the host, one pace");
        let elsewhere = Pace::of_site(other, "shared-host.test", Duration::ZERO, Duration::ZERO);
        assert!(!Arc::ptr_eq(&first, &elsewhere), "another engine (another server) keeps its own");
        assert!(of_host(scope, "shared-host.test").is_some_and(|p| Arc::ptr_eq(&p, &first)));
        drop((first, second));
        assert!(of_host(scope, "shared-host.test").is_none(), "gone with its last site");
    }

    const HOUR: Duration = Duration::from_secs(3600);

    fn page(host: &str) -> Url {
        Url::parse(&format!("http://{host}/a")).unwrap()
    }

    #[tokio::test]
    async fn requests_to_the_site_go_an_interval_and_its_margin_apart() {
        let pace = Pace::new("site.test", Duration::from_millis(40), Duration::from_millis(20));
        let site = page("site.test");
        let start = Instant::now();
        let _ = pace.before_request(&site).await;
        let _ = pace.before_request(&site).await;
        assert!(start.elapsed() >= Duration::from_millis(60), "{:?}", start.elapsed());
        // Two waiting at once take turns.
        let _ = tokio::join!(pace.before_request(&site), pace.before_request(&site));
        assert!(start.elapsed() >= Duration::from_millis(180), "{:?}", start.elapsed());
    }

    #[tokio::test]
    async fn a_hop_to_another_site_keeps_to_that_sites_pace() {
        let from = Pace::new("hop-from.test", Duration::ZERO, Duration::ZERO);
        let to = Pace::new("hop-to.test", HOUR, Duration::ZERO);
        let (elsewhere, nowhere) = (page("hop-to.test"), page("hop-nowhere.test"));
        assert!(!spaces(&elsewhere), "outside a site's actor nothing is spaced");
        PACE.scope(Arc::clone(&from), async {
            assert!(spaces(&elsewhere) && !spaces(&nowhere));
            let waited = tokio::time::timeout(Duration::from_millis(300), before_request(&elsewhere)).await;
            assert!(waited.is_err(), "the other site's turn was taken when its pace started");
            tokio::time::timeout(Duration::from_secs(10), before_request(&nowhere))
                .await
                .expect("a site with no actor here is not held");
        })
        .await;
        drop(to);
    }

    #[tokio::test]
    async fn a_hop_to_a_site_another_node_holds_waits_for_the_turn_that_node_lends() {
        let from = Pace::new("lend-from.test", Duration::ZERO, Duration::ZERO);
        let local = Pace::new("lend-local.test", Duration::ZERO, Duration::ZERO);
        // The "other node": the pace of its actor of `lend-remote.test`, held in a site
        // actor there and reached through `elsewhere` (a call across the cluster in a node).
        let remote = Pace::new("lend-remote-elsewhere.test", Duration::from_millis(200), Duration::ZERO);
        let asked = Arc::new(Mutex::new(Vec::new()));
        let (lender, seen) = (Arc::clone(&remote), Arc::clone(&asked));
        from.elsewhere(Arc::new(move |url: &Url| {
            let host = url.host_str()?.to_owned();
            seen.lock().unwrap().push(host.clone());
            let lender = Arc::clone(&lender);
            let url = page("lend-remote-elsewhere.test");
            Some(Box::pin(async move {
                let lending = lender.lend_turn(&url, false).await;
                (host != "lend-refused.test").then_some(Borrowed::new(lending.place, None))
            }) as BoxFuture<'static, Option<Borrowed>>)
        }));
        PACE.scope(Arc::clone(&from), async {
            assert!(before_request(&page("lend-from.test")).await.is_some(), "its own site");
            assert!(before_request(&page("lend-local.test")).await.is_some(), "a site whose actor is here");
            let start = Instant::now();
            assert!(before_request(&page("lend-remote.test")).await.is_some());
            assert!(before_request(&page("lend-remote.test")).await.is_some());
            // The remote pace started 200 ms before its first lent turn at the latest, and
            // the second turn came an interval after the first.
            assert!(start.elapsed() >= Duration::from_millis(200), "{:?}", start.elapsed());
            assert!(
                before_request(&page("lend-refused.test")).await.is_none(),
                "a turn not had stops the request"
            );
        })
        .await;
        assert_eq!(*asked.lock().unwrap(), ["lend-remote.test", "lend-remote.test", "lend-refused.test"]);
        drop(local);
    }

    #[tokio::test]
    async fn a_sites_requests_in_flight_keep_to_its_limit_redirect_hops_included() {
        let from = Pace::new("limit-from.test", Duration::ZERO, Duration::ZERO);
        let to = Pace::new("limit-to.test", Duration::ZERO, Duration::ZERO);
        to.limit(2);
        let site = page("limit-to.test");
        // One request of the site's own actor, and a redirect hop from another site's fetch.
        let own = to.before_request(&site).await;
        let hop = PACE.scope(Arc::clone(&from), before_request(&site)).await.expect("the hop goes");
        // A third, a hop too, waits until one of them has its answer.
        let (third_from, third_site) = (Arc::clone(&from), site.clone());
        let third = tokio::spawn(PACE.scope(third_from, async move { before_request(&third_site).await }));
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(!third.is_finished(), "a third request while two are in flight");
        drop(own);
        let third =
            tokio::time::timeout(Duration::from_secs(10), third).await.expect("goes once one is answered");
        assert!(third.expect("task").is_some());
        // A site without a limit takes no place.
        let free = PACE.scope(Arc::clone(&from), before_request(&page("limit-from.test"))).await;
        assert!(free.is_some());
        drop(hop);
    }

    #[tokio::test]
    async fn a_turn_lent_with_its_place_holds_the_sites_requests_until_it_comes_back() {
        let pace = Pace::new("held.test", Duration::from_millis(50), Duration::ZERO);
        let site = page("held.test");
        let lent = pace.lend_turn(&site, true).await;
        let (own_pace, own_site) = (Arc::clone(&pace), site.clone());
        let own = tokio::spawn(async move {
            let _ = own_pace.before_request(&own_site).await;
            Instant::now()
        });
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(!own.is_finished(), "the site's own request waits while the lent turn is out");
        let back = Instant::now();
        drop(lent);
        let went = tokio::time::timeout(Duration::from_secs(10), own).await.expect("goes").expect("task");
        assert!(went >= back + Duration::from_millis(50), "an interval after the turn came back");
    }

    #[tokio::test]
    async fn a_turn_lent_with_its_place_comes_back_when_the_hop_is_written_and_the_place_later() {
        let pace = Pace::new("written.test", Duration::from_millis(50), Duration::ZERO);
        pace.limit(2);
        let site = page("written.test");
        let Lending { place, turn } = pace.lend_turn(&site, true).await;
        let (own_pace, own_site) = (Arc::clone(&pace), site.clone());
        let own = tokio::spawn(async move {
            let own_place = own_pace.before_request(&own_site).await;
            (Instant::now(), own_place)
        });
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(!own.is_finished(), "the site's own request waits while the lent turn is out");
        let written = Instant::now();
        drop(turn);
        let (went, own_place) =
            tokio::time::timeout(Duration::from_secs(10), own).await.expect("goes").expect("task");
        assert!(went >= written + Duration::from_millis(50), "an interval after the hop was written");
        // The hop still holds its place: a third request waits for one of the two.
        let third = tokio::time::timeout(Duration::from_millis(300), pace.before_request(&site)).await;
        assert!(third.is_err(), "two places of two are taken");
        drop((place, own_place));
    }

    #[tokio::test]
    async fn the_next_write_turn_counts_from_when_the_request_was_out() {
        let pace = Pace::new("stamp.test", Duration::from_millis(100), Duration::ZERO);
        let mut wait = None;
        std::future::poll_fn(|cx| pace.poll_write_turn(cx, &mut wait)).await;
        // The thread that took the turn is held up before its bytes go out.
        tokio::time::sleep(Duration::from_millis(60)).await;
        let out = Instant::now();
        pace.wrote_now();
        std::future::poll_fn(|cx| pace.poll_write_turn(cx, &mut wait)).await;
        assert!(out.elapsed() >= Duration::from_millis(100), "an interval after the first was out");
    }

    #[tokio::test]
    async fn only_a_hop_sent_through_the_paced_client_waits_to_tell_its_write() {
        let from = Pace::new("proxied-from.test", Duration::ZERO, Duration::ZERO);
        from.elsewhere(Arc::new(|_: &Url| {
            let on_write: OnWrite = Box::new(|| {});
            Some(Box::pin(async move { Some(Borrowed::new(Slot::free(), Some(on_write))) })
                as BoxFuture<'static, Option<Borrowed>>)
        }));
        let (scope, url) = (from.scope, page("proxied-to.test"));
        PACE.scope(Arc::clone(&from), async {
            let direct = before_request(&url).await.expect("a turn");
            assert!(borrows(scope, "proxied-to.test") && spaces(&url), "waits for its write");
            drop(direct);
            assert!(!borrows(scope, "proxied-to.test"), "a hop gone unwritten leaves nothing waiting");
            let proxied = before_proxied_request(&url).await.expect("a turn");
            assert!(!borrows(scope, "proxied-to.test"), "a proxied hop is not written here");
            drop(proxied);
        })
        .await;
    }

    #[tokio::test]
    async fn a_borrowed_turn_hears_of_one_write_to_its_host() {
        let scope = new_scope();
        let told = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let turn = |told: &Arc<std::sync::atomic::AtomicUsize>| {
            let told = Arc::clone(told);
            let on_write: OnWrite = Box::new(move || {
                told.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            });
            Borrowed::new(Slot::free(), Some(on_write))
        };
        let first = borrowed(scope, "borrowed.test", turn(&told));
        let second = borrowed(scope, "borrowed.test", turn(&told));
        assert!(
            borrows(scope, "borrowed.test")
                && !borrows(scope, "other.test")
                && !borrows(new_scope(), "borrowed.test")
        );
        wrote(scope, "other.test");
        assert_eq!(told.load(std::sync::atomic::Ordering::SeqCst), 0, "a write to another host tells none");
        wrote(scope, "borrowed.test");
        assert_eq!(told.load(std::sync::atomic::Ordering::SeqCst), 1, "one write, one turn told");
        // A turn dropped unwritten (its hop failed before writing) is never told.
        drop(second);
        wrote(scope, "borrowed.test");
        assert_eq!(told.load(std::sync::atomic::Ordering::SeqCst), 1);
        assert!(!borrows(scope, "borrowed.test"), "none waits any more");
        drop(first);
    }

    #[tokio::test]
    async fn other_hosts_pass_and_a_crawl_delay_widens_the_interval() {
        let pace = Pace::new("site.test", Duration::ZERO, Duration::from_secs(60));
        let (site, other) = (page("site.test"), page("other.test"));
        let soon = |request| tokio::time::timeout(Duration::from_secs(10), request);
        let _ = soon(pace.before_request(&site)).await.expect("no interval, no wait (nor margin)");
        let _ = soon(pace.before_request(&site)).await.expect("no interval, no wait (nor margin)");
        pace.widen(HOUR);
        let _ = soon(pace.before_request(&other)).await.expect("another host does not wait");
        let waited = tokio::time::timeout(Duration::from_millis(300), pace.before_request(&site)).await;
        assert!(waited.is_err(), "the site's next request waits for the widened interval");
    }
}
