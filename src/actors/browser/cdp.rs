//! The guard on a session's DevTools connection (`cdpUrl`): WebSocket frames split out of
//! the byte streams both ways, and the commands a client may send to the session's page.
//! The page's own DevTools endpoint can do more than a caller of this service may: read
//! the server's files (`Page.navigate` to `file:`, `DOM.setFileInputFiles`), write them
//! (download behaviour), reach other targets of the browser, or turn TLS checks off. So
//! every command the client sends is read, and passed on only when its domain is one a page
//! automation library uses and the command is not one of those; a refused command gets a
//! DevTools error answer naming it. What the browser sends back passes unchanged.

/// A WebSocket frame found at the start of a buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// The final frame of its message.
    pub fin: bool,
    /// 0 continuation, 1 text, 2 binary, 8 close, 9 ping, 10 pong.
    pub opcode: u8,
    /// The payload, unmasked.
    pub payload: Vec<u8>,
    /// Bytes the frame took in the buffer.
    pub len: usize,
}

/// Largest frame accepted from a client (a command with a large argument fits).
pub const MAX_CLIENT_FRAME: usize = 16 << 20;

/// Why a buffer does not start with an acceptable frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrameError {
    /// More bytes are needed.
    Incomplete,
    /// The frame is over the size limit.
    TooLarge,
}

/// A frame's header: final flag, opcode, masking key, where the payload starts, its length.
struct Header {
    fin: bool,
    opcode: u8,
    mask: Option<[u8; 4]>,
    start: usize,
    length: usize,
}

fn header(buf: &[u8], limit: usize) -> Result<Header, FrameError> {
    let [first, second, ..] = *buf else { return Err(FrameError::Incomplete) };
    let extended = |range: std::ops::Range<usize>| -> Result<u64, FrameError> {
        let bytes = buf.get(range).ok_or(FrameError::Incomplete)?;
        Ok(bytes.iter().fold(0u64, |n, b| (n << 8) | u64::from(*b)))
    };
    let (length, mut start) = match second & 0x7f {
        126 => (extended(2..4)?, 4),
        127 => (extended(2..10)?, 10),
        n => (u64::from(n), 2),
    };
    let length = usize::try_from(length).ok().filter(|n| *n <= limit).ok_or(FrameError::TooLarge)?;
    let mask = if second & 0x80 != 0 {
        let key = buf.get(start..start + 4).ok_or(FrameError::Incomplete)?;
        start += 4;
        Some([key[0], key[1], key[2], key[3]])
    } else {
        None
    };
    Ok(Header { fin: first & 0x80 != 0, opcode: first & 0x0f, mask, start, length })
}

/// How many bytes the whole frame at the start of `buf` takes (its payload not copied).
pub fn frame_len(buf: &[u8], limit: usize) -> Result<usize, FrameError> {
    let h = header(buf, limit)?;
    let end = h.start + h.length;
    if buf.len() < end { Err(FrameError::Incomplete) } else { Ok(end) }
}

/// Reads the frame at the start of `buf` (unmasking its payload when masked); `limit`
/// bounds the payload.
pub fn frame(buf: &[u8], limit: usize) -> Result<Frame, FrameError> {
    let h = header(buf, limit)?;
    let body = buf.get(h.start..h.start + h.length).ok_or(FrameError::Incomplete)?;
    let payload = match h.mask {
        Some(key) => body.iter().enumerate().map(|(i, b)| b ^ key[i % 4]).collect(),
        None => body.to_vec(),
    };
    Ok(Frame { fin: h.fin, opcode: h.opcode, payload, len: h.start + h.length })
}

/// An unmasked text frame (what a server sends) holding `text`.
pub fn text_frame(text: &str) -> Vec<u8> {
    encode(text.as_bytes(), None)
}

/// A masked text frame (what a client sends) holding `text`.
pub fn client_text_frame(text: &str) -> Vec<u8> {
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
    encode(text.as_bytes(), Some(nanos.to_le_bytes()))
}

fn encode(bytes: &[u8], mask: Option<[u8; 4]>) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len() + 14);
    out.push(0x81);
    let masked = if mask.is_some() { 0x80 } else { 0 };
    match bytes.len() {
        n @ 0..=125 => out.push(masked | n as u8),
        n @ 126..=0xffff => {
            out.push(masked | 126);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            out.push(masked | 127);
            out.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    match mask {
        Some(key) => {
            out.extend_from_slice(&key);
            out.extend(bytes.iter().enumerate().map(|(i, b)| b ^ key[i % 4]));
        }
        None => out.extend_from_slice(bytes),
    }
    out
}

/// Domains a client may use on its session's page.
const DOMAINS: &[&str] = &[
    "Accessibility",
    "Animation",
    "Audits",
    "CSS",
    "Console",
    "DOM",
    "DOMDebugger",
    "DOMSnapshot",
    "DOMStorage",
    "Debugger",
    "Emulation",
    "HeapProfiler",
    "IndexedDB",
    "Input",
    "Inspector",
    "LayerTree",
    "Log",
    "Network",
    "Overlay",
    "Page",
    "Performance",
    "PerformanceTimeline",
    "Profiler",
    "Runtime",
    "Schema",
];

/// Commands of those domains that reach beyond the page.
const REFUSED: &[&str] = &[
    "DOM.setFileInputFiles",
    "Network.loadNetworkResource",
    // Interception could rewrite a request's address past the checks.
    "Network.setRequestInterception",
    "Network.continueInterceptedRequest",
    "Network.setBypassServiceWorker",
    "Page.setDownloadBehavior",
    "Page.addCompilationCache",
    "Page.produceCompilationCache",
];

/// Commands of other domains that are harmless and that clients send on connecting.
const ALSO_ALLOWED: &[&str] = &["Browser.getVersion", "Target.setAutoAttach", "Target.getTargetInfo"];

/// Whether command `method` with `params` may go to the page; else why not.
pub fn allowed(method: &str, params: Option<&serde_json::Value>) -> Result<(), String> {
    let domain = method.split('.').next().unwrap_or_default();
    let known = DOMAINS.contains(&domain) || ALSO_ALLOWED.contains(&method);
    if !known || REFUSED.contains(&method) {
        return Err(format!("`{method}` is not available on this session's DevTools connection"));
    }
    if method == "Target.getTargetInfo" && params.and_then(|p| p.get("targetId")).is_some() {
        return Err("`Target.getTargetInfo` of another target is not available on this connection".to_owned());
    }
    if method == "Page.navigate" {
        let url = params.and_then(|p| p.get("url")).and_then(serde_json::Value::as_str).unwrap_or_default();
        let scheme = url.split(':').next().unwrap_or_default().to_ascii_lowercase();
        if !matches!(scheme.as_str(), "http" | "https") && url != "about:blank" {
            return Err(format!("`Page.navigate` to `{url}`: only http, https and about:blank"));
        }
    }
    Ok(())
}

/// What to do with one complete client message.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Send it on to the page.
    Pass,
    /// Answer the client with this DevTools error message instead.
    Refuse(String),
}

/// Judges a text message from the client: a DevTools command `{id, method, params,
/// sessionId?}`.
pub fn judge(message: &[u8]) -> Verdict {
    let Ok(command) = serde_json::from_slice::<serde_json::Value>(message) else {
        return Verdict::Refuse(error_answer(None, None, "the message is not a DevTools command (JSON)"));
    };
    let method = command.get("method").and_then(serde_json::Value::as_str).unwrap_or_default();
    match allowed(method, command.get("params")) {
        Ok(()) => Verdict::Pass,
        Err(why) => Verdict::Refuse(error_answer(command.get("id"), command.get("sessionId"), &why)),
    }
}

fn error_answer(id: Option<&serde_json::Value>, session: Option<&serde_json::Value>, why: &str) -> String {
    let mut answer = serde_json::json!({"id": id.cloned().unwrap_or(serde_json::Value::Null), "error": {"code": -32000, "message": why}});
    if let Some(session) = session {
        answer["sessionId"] = session.clone();
    }
    answer.to_string()
}

/// Sends a WebSocket handshake for `path` on `host` with `key` (and the header lines
/// `extra`, each ending in CRLF) and reads the answer's head, at most `max` bytes; returns
/// it and the bytes read after it.
pub async fn handshake(
    stream: &mut tokio::net::TcpStream,
    path: &str,
    host: &str,
    key: &str,
    extra: &str,
    max: usize,
) -> Result<(String, Vec<u8>), String> {
    let hello = format!(
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n{extra}\r\n"
    );
    use tokio::io::AsyncWriteExt;
    stream.write_all(hello.as_bytes()).await.map_err(|e| e.to_string())?;
    read_head(stream, max).await
}

/// Reads an HTTP head (request or answer) from `stream`, at most `max` bytes; returns it
/// and the bytes read after it.
pub async fn read_head<R: tokio::io::AsyncRead + Unpin>(
    stream: &mut R,
    max: usize,
) -> Result<(String, Vec<u8>), String> {
    use tokio::io::AsyncReadExt;
    let mut read = Vec::new();
    loop {
        if let Some(at) = read.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&read[..at + 4]).into_owned();
            return Ok((head, read[at + 4..].to_vec()));
        }
        if read.len() > max {
            return Err("the head is too long".into());
        }
        let mut chunk = [0u8; 4096];
        let n = stream.read(&mut chunk).await.map_err(|e| e.to_string())?;
        if n == 0 {
            return Err("the other end closed the connection".into());
        }
        read.extend_from_slice(&chunk[..n]);
    }
}

/// The value of header `name` in an HTTP answer's `head`.
pub fn header_of(head: &str, name: &str) -> Option<String> {
    head.lines()
        .find_map(|l| l.split_once(':').filter(|(n, _)| n.trim().eq_ignore_ascii_case(name)))
        .map(|(_, v)| v.trim().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn masked(text: &str) -> Vec<u8> {
        let key = [1u8, 2, 3, 4];
        let mut out = vec![0x81];
        let n = text.len();
        if n < 126 {
            out.push(0x80 | n as u8);
        } else {
            out.push(0x80 | 126);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
        out.extend_from_slice(&key);
        out.extend(text.bytes().enumerate().map(|(i, b)| b ^ key[i % 4]));
        out
    }

    #[test]
    fn frames_are_split_and_unmasked() {
        let long = "x".repeat(300);
        let mut buf = masked("{\"id\":1}");
        buf.extend(masked(&long));
        let first = frame(&buf, MAX_CLIENT_FRAME).expect("first");
        assert_eq!((first.fin, first.opcode, first.payload.as_slice()), (true, 1, &b"{\"id\":1}"[..]));
        let second = frame(&buf[first.len..], MAX_CLIENT_FRAME).expect("second");
        assert_eq!(second.payload, long.as_bytes());
        assert_eq!(first.len + second.len, buf.len());
        assert_eq!(frame(&buf[..first.len - 1], MAX_CLIENT_FRAME), Err(FrameError::Incomplete));
        assert_eq!(frame(&buf[first.len..], 100), Err(FrameError::TooLarge));
        let sent = text_frame(&long);
        assert_eq!(frame(&sent, MAX_CLIENT_FRAME).expect("server frame").payload, long.as_bytes());
        let from_client = client_text_frame(&long);
        assert_eq!(from_client[1] & 0x80, 0x80, "a client's frame is masked");
        assert_eq!(frame(&from_client, MAX_CLIENT_FRAME).expect("client frame").payload, long.as_bytes());
        assert_eq!(frame_len(&sent, usize::MAX), Ok(sent.len()));
        assert_eq!(frame_len(&sent[..200], usize::MAX), Err(FrameError::Incomplete));
    }

    #[test]
    fn only_page_commands_pass() {
        assert_eq!(
            judge(br#"{"id":1,"method":"Runtime.evaluate","params":{"expression":"1"}}"#),
            Verdict::Pass
        );
        assert_eq!(
            judge(br#"{"id":2,"method":"Page.navigate","params":{"url":"https://example.com/"}}"#),
            Verdict::Pass
        );
        for refused in [
            r#"{"id":3,"method":"Page.navigate","params":{"url":"file:///etc/passwd"}}"#,
            r#"{"id":4,"method":"Browser.close"}"#,
            r#"{"id":5,"method":"Target.createTarget","params":{"url":"about:blank"}}"#,
            r#"{"id":6,"method":"DOM.setFileInputFiles","params":{"files":["/etc/passwd"]}}"#,
            r#"{"id":7,"method":"Security.setIgnoreCertificateErrors","params":{"ignore":true}}"#,
            r#"{"id":8,"method":"Page.setDownloadBehavior","params":{"behavior":"allow"}}"#,
            r#"{"id":9,"method":"Target.getTargetInfo","params":{"targetId":"ABC"}}"#,
            r#"{"id":10,"method":"Network.setRequestInterception","params":{"patterns":[]}}"#,
        ] {
            match judge(refused.as_bytes()) {
                Verdict::Refuse(answer) => {
                    let answer: serde_json::Value = serde_json::from_str(&answer).expect("json");
                    let sent: serde_json::Value = serde_json::from_str(refused).expect("json");
                    assert_eq!(answer["id"], sent["id"], "{answer}");
                    assert!(answer["error"]["message"].as_str().is_some_and(|m| m.contains('`')), "{answer}");
                }
                Verdict::Pass => panic!("{refused} passed"),
            }
        }
        assert!(matches!(judge(b"not json"), Verdict::Refuse(_)));
    }
}
