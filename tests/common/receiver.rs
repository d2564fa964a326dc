//! A local webhook receiver: records every POST (headers, raw body, arrival time) and can
//! play down — answering 503 — for a while or for a number of requests.

use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use actix_web::{HttpRequest, HttpResponse, web};
use serde_json::Value;

/// One received delivery.
#[derive(Debug, Clone)]
pub struct Received {
    /// Request headers (names lowercase).
    pub headers: Vec<(String, String)>,
    /// The raw body.
    pub raw: Vec<u8>,
    /// The body as JSON.
    pub body: Value,
    /// When it arrived.
    pub at: Instant,
}

impl Received {
    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

#[derive(Default)]
struct State {
    accepted: Mutex<Vec<Received>>,
    refused: AtomicUsize,
    refuse_next: AtomicUsize,
    down_until: Mutex<Option<Instant>>,
}

/// A running receiver.
pub struct Receiver {
    /// `http://127.0.0.1:PORT/hook`
    pub url: String,
    state: Arc<State>,
    _server: super::ActixThread,
}

impl Receiver {
    /// Starts the receiver.
    pub fn start() -> Self {
        Self::start_on(TcpListener::bind("127.0.0.1:0").expect("bind"))
    }

    /// Starts the receiver on `listener` (to come back on a known port).
    pub fn start_on(listener: TcpListener) -> Self {
        let url = format!("http://{}/hook", listener.local_addr().expect("addr"));
        let state = Arc::new(State::default());
        let data = web::Data::from(Arc::clone(&state));
        let server = super::ActixThread::spawn(listener, 1, move |cfg| {
            cfg.app_data(data.clone()).default_service(web::to(receive));
        });
        Self { url, state, _server: server }
    }

    /// Answers 503 to the next `n` deliveries.
    pub fn refuse_next(&self, n: usize) {
        self.state.refuse_next.store(n, Ordering::SeqCst);
    }

    /// Answers 503 for `span`.
    pub fn down_for(&self, span: Duration) {
        *self.state.down_until.lock().expect("lock") = Some(Instant::now() + span);
    }

    /// Deliveries answered 503 so far.
    pub fn refused(&self) -> usize {
        self.state.refused.load(Ordering::SeqCst)
    }

    /// Deliveries acknowledged so far, in arrival order.
    pub fn accepted(&self) -> Vec<Received> {
        self.state.accepted.lock().expect("lock").clone()
    }

    /// Waits until `n` deliveries were acknowledged.
    pub async fn wait_for(&self, n: usize, limit: Duration) -> Vec<Received> {
        let deadline = Instant::now() + limit;
        loop {
            let got = self.accepted();
            if got.len() >= n {
                return got;
            }
            let types: Vec<String> = got.iter().map(|r| r.body["type"].to_string()).collect();
            assert!(
                Instant::now() < deadline,
                "only {} of {n} deliveries after {limit:?}: {types:?}",
                got.len()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

async fn receive(req: HttpRequest, body: web::Bytes, state: web::Data<State>) -> HttpResponse {
    let down = state.down_until.lock().expect("lock").is_some_and(|until| Instant::now() < until);
    let refuse =
        state.refuse_next.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)).is_ok();
    if down || refuse {
        state.refused.fetch_add(1, Ordering::SeqCst);
        return HttpResponse::ServiceUnavailable().finish();
    }
    let headers = req
        .headers()
        .iter()
        .map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap_or("").to_owned()))
        .collect();
    let received = Received {
        headers,
        raw: body.to_vec(),
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
        at: Instant::now(),
    };
    state.accepted.lock().expect("lock").push(received);
    HttpResponse::Ok().finish()
}
