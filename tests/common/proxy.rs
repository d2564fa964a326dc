//! A forward HTTP proxy stand-in: it receives absolute-form requests (`GET http://host/path`)
//! as a real proxy would and answers them itself with a page naming the requested URL, so a
//! test can tell a proxied fetch from a direct one.

use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use actix_web::{HttpRequest, HttpResponse, web};

/// A running proxy.
pub struct ProxyServer {
    /// `http://127.0.0.1:PORT`
    pub url: String,
    requests: Arc<AtomicUsize>,
    _server: super::ActixThread,
}

impl ProxyServer {
    /// Starts the proxy.
    pub fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let requests = Arc::new(AtomicUsize::new(0));
        let counter = web::Data::from(Arc::clone(&requests));
        let server = super::ActixThread::spawn(listener, 1, move |cfg| {
            cfg.app_data(counter.clone()).default_service(web::to(answer));
        });
        Self { url, requests, _server: server }
    }

    /// Requests the proxy received.
    pub fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }
}

async fn answer(req: HttpRequest, counter: web::Data<AtomicUsize>) -> HttpResponse {
    counter.fetch_add(1, Ordering::SeqCst);
    let target = req.uri().to_string();
    HttpResponse::Ok()
        .content_type("text/html")
        .body(format!("<html><body><h1>Served through the proxy</h1><p>Proxied request for {target} succeeded.</p></body></html>"))
}
