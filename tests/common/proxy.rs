//! A forward HTTP proxy stand-in: it receives absolute-form requests (`GET http://host/path`)
//! as a real proxy would and answers them itself with a page naming the requested URL, so a
//! test can tell a proxied fetch from a direct one. It records the URL of every request.

use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use actix_web::{HttpRequest, HttpResponse, web};

/// A running proxy.
pub struct ProxyServer {
    /// `http://127.0.0.1:PORT`
    pub url: String,
    targets: Arc<Mutex<Vec<String>>>,
    _server: super::ActixThread,
}

impl ProxyServer {
    /// Starts the proxy.
    pub fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let targets = Arc::new(Mutex::new(Vec::new()));
        let seen = web::Data::from(Arc::clone(&targets));
        let server = super::ActixThread::spawn(listener, 1, move |cfg| {
            cfg.app_data(seen.clone()).default_service(web::to(answer));
        });
        Self { url, targets, _server: server }
    }

    /// Requests the proxy received.
    pub fn requests(&self) -> usize {
        self.targets().len()
    }

    /// The URLs it was asked for, in order.
    pub fn targets(&self) -> Vec<String> {
        self.targets.lock().expect("lock").clone()
    }
}

async fn answer(req: HttpRequest, seen: web::Data<Mutex<Vec<String>>>) -> HttpResponse {
    let target = req.uri().to_string();
    seen.lock().expect("lock").push(target.clone());
    HttpResponse::Ok()
        .content_type("text/html")
        .body(format!("<html><body><h1>Served through the proxy</h1><p>Proxied request for {target} succeeded.</p></body></html>"))
}
