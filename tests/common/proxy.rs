//! A forward HTTP proxy stand-in: it receives absolute-form requests (`GET http://host/path`)
//! as a real proxy would and answers them itself with a page naming the requested URL, so a
//! test can tell a proxied fetch from a direct one.

use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::JoinHandle;

use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};

/// A running proxy.
pub struct ProxyServer {
    /// `http://127.0.0.1:PORT`
    pub url: String,
    requests: Arc<AtomicUsize>,
    handle: actix_web::dev::ServerHandle,
    thread: Option<JoinHandle<()>>,
}

impl ProxyServer {
    /// Starts the proxy.
    pub fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let requests = Arc::new(AtomicUsize::new(0));
        let counter = web::Data::from(Arc::clone(&requests));
        let (tx, rx) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(move || {
            actix_web::rt::System::new().block_on(async move {
                let server = HttpServer::new(move || {
                    App::new().app_data(counter.clone()).default_service(web::to(answer))
                })
                .workers(1)
                .disable_signals()
                .shutdown_timeout(1)
                .listen(listener)
                .expect("listen")
                .run();
                tx.send(server.handle()).expect("handle");
                let _ = server.await;
            });
        });
        let handle = rx.recv().expect("handle");
        Self { url, requests, handle, thread: Some(thread) }
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

impl Drop for ProxyServer {
    fn drop(&mut self) {
        let handle = self.handle.clone();
        let _ = std::thread::spawn(move || actix_web::rt::System::new().block_on(handle.stop(false))).join();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
