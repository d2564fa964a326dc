//! Lending a turn: a redirect hop from a site this node owns to a site another node owns
//! takes its turn of that site's pace from the owner, both sides here. The owner's actor of
//! the site lends a turn and a place among its requests in flight ([`lend`]); the place is
//! held for the borrowing node until it says the hop has its answer (`Return`), and the
//! turn until it says the hop's request is written (`Written`), so the site's own requests
//! wait for the write, not for the hop's answer. What a borrower never returns frees itself
//! after [`LENT_FOR_AT_MOST`].

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, PoisonError};
use std::time::{Duration, Instant};

use url::Url;

use super::messages::decode;
use super::messages::encode;
use super::messages::jobs::{Request, Response};
use crate::cluster::{Channel, Cluster};
use crate::scrape::engine::pace::{self, Lending, Slot};

/// A lent turn is used when its answer came within this long of asking: the lender holds
/// its site's own requests for the hop at most [`pace::LENT_HOLD`], and the other half is
/// left for the write. A later one is given back and asked for again, up to [`TURN_ASKS`]
/// times.
const TURN_ANSWERED_WITHIN: Duration = Duration::from_millis(pace::LENT_HOLD.as_millis() as u64 / 2);
/// Times a redirect hop asks for a turn before its page is sent back to be fetched again.
const TURN_ASKS: usize = 5;
/// Longest a redirect hop waits for the turn another node lends (a site with a long
/// crawl-delay and many requests waiting may take this long).
const TURN_TIMEOUT: Duration = Duration::from_secs(300);
/// Longest a place lent to another node's hop is held without its return (the node may
/// have gone): the site has one place fewer until then.
const LENT_FOR_AT_MOST: Duration = Duration::from_secs(60);

/// Places and turns of this node's sites lent to other nodes' redirect hops: the last id
/// given, and each lending by id.
#[derive(Default)]
struct Lent {
    last_id: u64,
    places: HashMap<u64, Lending>,
}

static LENT: LazyLock<Mutex<Lent>> = LazyLock::new(Default::default);

fn lent() -> std::sync::MutexGuard<'static, Lent> {
    LENT.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The lender's side: a turn of the pace of `url`'s site for another node's redirect hop,
/// with a place among the site's requests in flight (kept until the hop returns it). `Done`
/// when this node has no actor of the site (nothing else sends the site requests from this
/// node); an error while this node is out of touch with its cluster (the site may be
/// another node's by now).
pub(super) async fn lend(scope: u64, url: &str) -> Result<Response, String> {
    let url = Url::parse(url).map_err(|e| e.to_string())?;
    let Some(pace) = url.host_str().and_then(|host| pace::of_host(scope, host)) else {
        return Ok(Response::Done);
    };
    let lending = pace.lend_turn(&url).await;
    if !pace.may_write() {
        return Err("out of touch with the cluster: no turn lent".into());
    }
    Ok(Response::Lent(keep(lending)))
}

/// Keeps `lending` (another node's hop's place and turn) until the place is returned
/// ([`give_back`]) or [`LENT_FOR_AT_MOST`] passes, and the turn until then or until the
/// hop's request is written ([`written`]); its id.
fn keep(lending: Lending) -> u64 {
    let id = {
        let mut lent = lent();
        lent.last_id += 1;
        let id = lent.last_id;
        lent.places.insert(id, lending);
        id
    };
    // Given back by then in any case (the other node may have gone).
    tokio::spawn(async move {
        tokio::time::sleep(LENT_FOR_AT_MOST).await;
        give_back(id);
    });
    id
}

/// The hop that held lent place `id` has its answer.
pub(super) fn give_back(id: u64) {
    let lending = lent().places.remove(&id);
    drop(lending);
}

/// The hop that holds lent place `id` has its request written: its turn is given back.
pub(super) fn written(id: u64) {
    let turn = lent().places.get_mut(&id).map(|lending| std::mem::replace(&mut lending.turn, Slot::free()));
    drop(turn);
}

/// A place another node lent this node's hop: returned when dropped.
struct BorrowedPlace {
    cluster: Cluster,
    node: String,
    id: u64,
}

impl BorrowedPlace {
    /// Tells the lender `request` about the lent place (best effort: what it lent frees
    /// itself in time).
    fn tell(&self, request: &Request) {
        let (cluster, node, request) = (self.cluster.clone(), self.node.clone(), encode(request));
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let timeout = Duration::from_secs(5);
                if let Err(e) = cluster.call_alone(&node, Channel::Jobs, request, timeout).await {
                    tracing::debug!(node = %node, error = %e, "a lender was not told of its lent turn (it frees itself)");
                }
            });
        }
    }
}

impl Drop for BorrowedPlace {
    fn drop(&mut self) {
        self.tell(&Request::Return(self.id));
    }
}

/// The borrower's side: how this node's site actors' redirect hops get their turn at sites
/// other nodes own (`Pace::elsewhere`): the owner of the hop's site lends one from its
/// actor's pace. A turn not had stops the hop (the page goes back to be fetched again
/// rather than reach a site unspaced): the owner did not answer, refused (it was out of
/// touch), or stopped being the site's owner before the turn came (it left the members,
/// frozen or gone: the site has another owner by then, whose pace the lent turn knows
/// nothing of).
pub(super) fn borrowed(cluster: Cluster) -> pace::Elsewhere {
    Arc::new(move |url: &Url| {
        let site = crate::actors::sites::origin_of(url)?.to_string();
        if cluster.owns_site(&site) {
            return None;
        }
        let (cluster, owner) = (cluster.clone(), cluster.site_owner(&site));
        cluster.version_of(&owner)?;
        let request = encode(&Request::TurnHeld(url.to_string()));
        Some(Box::pin(async move {
            for _ in 0..TURN_ASKS {
                let asked = Instant::now();
                let moved =
                    cluster.until_not(|live| cluster.site_owner_among(live, &site) == Some(owner.as_str()));
                let lent = tokio::select! {
                    answer = cluster.call_alone(&owner, Channel::Jobs, request.clone(), TURN_TIMEOUT) => match answer {
                        Ok(bytes) => match decode::<Response>(&bytes) {
                            Ok(Response::Done) => Some(pace::Borrowed::new(Slot::free(), None)),
                            Ok(Response::Lent(id)) => {
                                let place = Arc::new(BorrowedPlace { cluster: cluster.clone(), node: owner.clone(), id });
                                // The lender hears when the hop is written.
                                let told = Arc::clone(&place);
                                let on_write = Box::new(move || told.tell(&Request::Written(id))) as pace::OnWrite;
                                Some(pace::Borrowed::new(Slot::holding(place), Some(on_write)))
                            }
                            _ => None,
                        },
                        Err(e) => {
                            tracing::warn!(node = %owner, error = %e, "no turn for a redirect hop to a site of another node");
                            None
                        }
                    },
                    () = moved => None,
                };
                let lent = lent.filter(|_| cluster.site_owner(&site) == owner && cluster.in_touch())?;
                // The turn counts from when it was lent: an answer that took too long to
                // come leaves too little of it for the write (the lender's next request
                // may be close behind). It is given back, and asked for again.
                if asked.elapsed() <= TURN_ANSWERED_WITHIN {
                    return Some(lent);
                }
                tracing::debug!(node = %owner, "a lent turn came too late to use; asking again");
            }
            None
        }))
    })
}
