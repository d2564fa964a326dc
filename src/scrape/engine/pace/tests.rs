//! Tests of a site's pace: turns, places, lent and borrowed turns, and write turns.

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
            let lending = lender.lend_turn(&url).await;
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
    let lent = pace.lend_turn(&site).await;
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
    let Lending { place, turn } = pace.lend_turn(&site).await;
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
async fn the_next_write_turn_waits_for_the_request_before_to_be_out_and_counts_from_then() {
    let pace = Pace::new("stamp.test", Duration::from_millis(100), Duration::ZERO);
    let mut wait = None;
    let first = std::future::poll_fn(|cx| pace.poll_write_start(cx, &mut wait)).await;
    // The thread that took the turn is held up: its bytes are out after the next turn
    // was due.
    let telling = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(150)).await;
        let out = Instant::now();
        first.wrote();
        out
    });
    let second = std::future::poll_fn(|cx| pace.poll_write_start(cx, &mut wait)).await;
    let out = telling.await.expect("told");
    assert!(out.elapsed() >= Duration::from_millis(100), "an interval after the first was out");
    // A request that goes unwritten (its connection failed) holds nothing up.
    drop(second);
    assert_eq!(pace.state.lock().expect("state").writing, None);
    // One never told holds the next write turn up to WRITE_HOLD.
    let third = std::future::poll_fn(|cx| pace.poll_write_start(cx, &mut wait)).await;
    let taken = Instant::now();
    let next = std::future::poll_fn(|cx| pace.poll_write_turn(cx, &mut wait));
    tokio::time::timeout(Duration::from_secs(5), next).await.expect("a turn after the hold");
    assert!(taken.elapsed() >= WRITE_HOLD, "held up while the third could still go out");
    drop(third);
    // A site without an interval holds no write for another.
    let free = Pace::new("free.test", Duration::ZERO, Duration::ZERO);
    let first = std::future::poll_fn(|cx| free.poll_write_start(cx, &mut wait)).await;
    let second = std::future::poll_fn(|cx| free.poll_write_start(cx, &mut wait));
    tokio::time::timeout(WRITE_HOLD / 2, second).await.expect("at once").wrote();
    first.wrote();
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
