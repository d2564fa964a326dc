//! A hostile web site on 127.0.0.1: what the open web throws at a crawler on purpose or by
//! accident. A 300 MB page, a gzip bomb that inflates to 4 GiB, a page sent at one byte a
//! second, a redirect loop, a response with 2,000 headers, a sitemap index that lists itself
//! above an endless tree of child indexes, and a page of invalid UTF-8. It speaks raw HTTP/1.1
//! over TCP (a thread per connection) so that it can misbehave below what a web framework
//! allows, and it produces its large bodies lazily, stopping when the client hangs up: what it
//! sent tells a test where the client stopped reading.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Size of the oversized page.
pub const HUGE_BYTES: u64 = 300 << 20;
/// What the gzip bomb inflates to.
pub const BOMB_BYTES: u64 = 4 << 30;

#[derive(Default)]
struct State {
    hits: Mutex<HashMap<String, usize>>,
    /// Body bytes produced per path before the client went away (for the bomb: inflated).
    produced: Mutex<HashMap<String, u64>>,
}

/// A running hostile site.
pub struct HostileSite {
    /// Its port on 127.0.0.1.
    pub port: u16,
    state: Arc<State>,
}

impl HostileSite {
    /// Starts the site.
    pub fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let state = Arc::new(State::default());
        let shared = Arc::clone(&state);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let state = Arc::clone(&shared);
                std::thread::spawn(move || serve(stream, &state));
            }
        });
        Self { port, state }
    }

    /// `http://127.0.0.1:PORT{path}`
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// Requests received for paths starting with `prefix`.
    pub fn hits(&self, prefix: &str) -> usize {
        self.state
            .hits
            .lock()
            .expect("lock")
            .iter()
            .filter(|(p, _)| p.starts_with(prefix))
            .map(|(_, n)| n)
            .sum()
    }

    /// Body bytes `path` produced before its client stopped reading (inflated bytes for the
    /// bomb). Waits until the response has ended.
    pub fn produced(&self, path: &str) -> u64 {
        for _ in 0..200 {
            if let Some(n) = self.state.produced.lock().expect("lock").get(path) {
                return *n;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("{path} never finished sending");
    }
}

fn serve(stream: TcpStream, state: &State) {
    let Ok(read_half) = stream.try_clone() else { return };
    let mut reader = BufReader::new(read_half);
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() {
        return;
    }
    let path = line.split_whitespace().nth(1).unwrap_or("/").to_owned();
    loop {
        let mut header = String::new();
        match reader.read_line(&mut header) {
            Ok(0) | Err(_) => return,
            Ok(_) if header.trim().is_empty() => break,
            Ok(_) => {}
        }
    }
    *state.hits.lock().expect("lock").entry(path.clone()).or_insert(0) += 1;
    let produced = respond(&path, stream);
    if let Some(n) = produced {
        state.produced.lock().expect("lock").insert(path, n);
    }
}

/// Writes the response for `path`; returns the body bytes produced for the lazy bodies.
fn respond(path: &str, mut out: TcpStream) -> Option<u64> {
    const HTML: &str = "Content-Type: text/html; charset=utf-8\r\nConnection: close\r\n";
    match path {
        "/huge" => {
            let _ = write!(out, "HTTP/1.1 200 OK\r\n{HTML}\r\n");
            let chunk = "<p>filler text of a page that never seems to end</p>\n".repeat(1200);
            Some(endless(&mut out, chunk.as_bytes(), HUGE_BYTES))
        }
        "/bomb" => {
            let _ = write!(out, "HTTP/1.1 200 OK\r\n{HTML}Content-Encoding: gzip\r\n\r\n");
            let mut gz = flate2::write::GzEncoder::new(out, flate2::Compression::best());
            let zeros = vec![0u8; 1 << 20];
            Some(endless(&mut gz, &zeros, BOMB_BYTES))
        }
        "/trickle" => {
            let _ = write!(out, "HTTP/1.1 200 OK\r\n{HTML}\r\n");
            Some(endless_slowly(&mut out))
        }
        "/loop/a" | "/loop/b" => {
            let next = if path == "/loop/a" { "/loop/b" } else { "/loop/a" };
            let _ = write!(
                out,
                "HTTP/1.1 302 Found\r\nLocation: {next}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            );
            None
        }
        "/headers" => {
            let mut head = String::from("HTTP/1.1 200 OK\r\n");
            for i in 0..2000 {
                head.push_str(&format!("X-Filler-{i}: value {i}\r\n"));
            }
            let body = "<html><body><p>A page behind two thousand headers.</p></body></html>";
            let _ = write!(out, "{head}{HTML}Content-Length: {}\r\n\r\n{body}", body.len());
            None
        }
        "/invalid-utf8" => {
            let mut body = b"<html><body><p>Before the bytes ".to_vec();
            body.extend_from_slice(&[0xff, 0xfe, 0xc3, 0x28, 0xa0, 0xa1]);
            body.extend_from_slice(b" and after the bytes.</p></body></html>");
            let _ = write!(out, "HTTP/1.1 200 OK\r\n{HTML}Content-Length: {}\r\n\r\n", body.len());
            let _ = out.write_all(&body);
            None
        }
        "/robots.txt" => {
            let _ = write!(out, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
            None
        }
        _ if path.starts_with("/pages/") => {
            let port = out.local_addr().map(|a| a.port()).unwrap_or(0);
            let body = format!(
                "<?xml version=\"1.0\"?><urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\
                 <url><loc>http://127.0.0.1:{port}/page{}</loc></url></urlset>",
                path.trim_start_matches("/pages").trim_end_matches(".xml")
            );
            let _ = write!(out, "HTTP/1.1 200 OK\r\nContent-Type: application/xml\r\nConnection: close\r\n");
            let _ = write!(out, "Content-Length: {}\r\n\r\n{body}", body.len());
            None
        }
        _ if path == "/sitemap.xml" || path.starts_with("/maps/") => {
            let _ = write!(out, "HTTP/1.1 200 OK\r\nContent-Type: application/xml\r\nConnection: close\r\n");
            let port = out.local_addr().map(|a| a.port()).unwrap_or(0);
            let body = sitemap_index(port, path);
            let _ = write!(out, "Content-Length: {}\r\n\r\n{body}", body.len());
            None
        }
        _ => {
            let body = format!("<html><body><p>Page {path} of the hostile site.</p></body></html>");
            let _ = write!(out, "HTTP/1.1 200 OK\r\n{HTML}Content-Length: {}\r\n\r\n{body}", body.len());
            None
        }
    }
}

/// A sitemap index listing itself, two child indexes (`/maps/N.xml` lists `2N+1` and `2N+2`,
/// without end) and a sitemap of one page.
fn sitemap_index(port: u16, path: &str) -> String {
    let n: u64 = path.trim_start_matches("/maps/").trim_end_matches(".xml").parse().unwrap_or(0);
    let site = format!("http://127.0.0.1:{port}");
    let children =
        [2 * n + 1, 2 * n + 2].map(|c| format!("<sitemap><loc>{site}/maps/{c}.xml</loc></sitemap>"));
    format!(
        "<?xml version=\"1.0\"?><sitemapindex xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\
         <sitemap><loc>{site}{path}</loc></sitemap>{}<sitemap><loc>{site}/pages/{n}.xml</loc></sitemap>\
         </sitemapindex>",
        children.concat()
    )
}

/// Writes `chunk` until `total` bytes or until the client goes away; returns the bytes written.
fn endless(out: &mut impl Write, chunk: &[u8], total: u64) -> u64 {
    let mut sent = 0u64;
    while sent < total {
        if out.write_all(chunk).is_err() {
            break;
        }
        sent += chunk.len() as u64;
    }
    let _ = out.flush();
    sent
}

/// One byte a second, for at most two minutes or until the client goes away.
fn endless_slowly(out: &mut TcpStream) -> u64 {
    let mut sent = 0;
    for byte in b"<html><body><p>".iter().chain([b'x'; 105].iter()) {
        if out.write_all(&[*byte]).and_then(|()| out.flush()).is_err() {
            break;
        }
        sent += 1;
        std::thread::sleep(Duration::from_secs(1));
    }
    sent
}
