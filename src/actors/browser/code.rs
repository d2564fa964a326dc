//! Running a caller's code against a session's live page. `node`: JavaScript evaluated in
//! the page itself (promises awaited, `console` captured, the last expression's value as
//! the result). `python` and `bash`: a process in a sandbox of its own
//! ([`crate::process::sandbox`]) whose environment names the page's DevTools address
//! (`CDP_URL`, the session's page behind the guard, through the run's
//! [`super::devtools_door`]) and the page's address (`PAGE_URL`). A timeout stops the work
//! (the page's script is terminated, the sandbox and everything in it killed) and sets
//! `killed`.

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chromiumoxide::Page;
use chromiumoxide::cdp::js_protocol::runtime::{
    ConsoleApiCalledType, EventConsoleApiCalled, RemoteObject, TerminateExecutionParams,
};
use futures::StreamExt;
use serde::Serialize;
use tokio::io::AsyncReadExt;

use super::devtools_door::Door;
use crate::process::sandbox::{Limits, Sandbox};
use crate::scrape::engine::browser::actions;

/// Exit code reported when the timeout stopped the work (as `timeout(1)` does).
pub const TIMEOUT_EXIT: i32 = 124;
/// Output kept per stream; the rest is cut.
const OUTPUT_CAP: usize = 1 << 20;
/// How long console events may trail the evaluation's reply when the page cannot be asked
/// to mark their end (its script was terminated), and the longest wait for that mark.
const CONSOLE_TRAIL: Duration = Duration::from_millis(30);
const CONSOLE_FLUSH_LIMIT: Duration = Duration::from_secs(3);
/// A console line written after the code's own: once it is seen, every earlier line is too
/// (the page's console events arrive in order). Never part of the output.
const CONSOLE_MARK: &str = "\u{1}ferrocrawl:console-flushed";

/// A language `code` may be written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    /// JavaScript in the page.
    Node,
    /// Python 3, in the sandbox.
    Python,
    /// bash, in the sandbox.
    Bash,
}

impl Language {
    /// Parses a `language` value.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "node" => Some(Self::Node),
            "python" => Some(Self::Python),
            "bash" => Some(Self::Bash),
            _ => None,
        }
    }

    /// The name used in requests and configuration.
    pub fn name(self) -> &'static str {
        match self {
            Self::Node => "node",
            Self::Python => "python",
            Self::Bash => "bash",
        }
    }
}

/// What running the code produced.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CodeOutcome {
    /// Standard output (console.log/info/debug for node).
    pub stdout: String,
    /// Standard error (console.warn/error and the uncaught exception for node).
    pub stderr: String,
    /// The last expression's value (node); empty otherwise.
    pub result: String,
    /// 0 on success.
    pub exit_code: i32,
    /// Stopped by the timeout.
    pub killed: bool,
    /// What went wrong, when something did.
    pub error: Option<String>,
}

impl CodeOutcome {
    fn timed_out(stdout: String, stderr: String, timeout: Duration) -> Self {
        Self {
            stdout,
            stderr,
            exit_code: TIMEOUT_EXIT,
            killed: true,
            error: Some(format!(
                "the code ran longer than its timeout of {} s and was stopped",
                timeout.as_secs()
            )),
            ..Self::default()
        }
    }
}

/// Runs JavaScript `code` in `page`.
pub async fn run_node(page: &Page, code: &str, timeout: Duration) -> CodeOutcome {
    let console = match page.event_listener::<EventConsoleApiCalled>().await {
        Ok(listener) => listener,
        Err(e) => return failure(format!("listening to the console failed: {e}")),
    };
    let output = Arc::new(Mutex::new((String::new(), String::new())));
    let sink = Arc::clone(&output);
    let flushed = Arc::new(tokio::sync::Notify::new());
    let seen_mark = Arc::clone(&flushed);
    let collector = tokio::spawn(async move {
        let mut console = console;
        while let Some(event) = console.next().await {
            let line = event.args.iter().map(console_text).collect::<Vec<_>>().join(" ");
            if line == CONSOLE_MARK {
                seen_mark.notify_one();
                continue;
            }
            let mut out = sink.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let to_stderr = matches!(
                event.r#type,
                ConsoleApiCalledType::Error
                    | ConsoleApiCalledType::Warning
                    | ConsoleApiCalledType::Assert
                    | ConsoleApiCalledType::Trace
            );
            let stream = if to_stderr { &mut out.1 } else { &mut out.0 };
            append(stream, &line);
        }
    });
    let evaluated = tokio::time::timeout(timeout, actions::evaluate(page, code)).await;
    if evaluated.is_err() {
        let _ = page.execute(TerminateExecutionParams::default()).await;
        tokio::time::sleep(CONSOLE_TRAIL).await;
    } else {
        // Wait for the code's console lines however busy the machine is: they are all in
        // once the mark written after them has arrived.
        let mark = format!("console.debug({})", serde_json::Value::from(CONSOLE_MARK));
        let wait = flushed.notified();
        if actions::evaluate(page, &mark).await.is_ok() {
            let _ = tokio::time::timeout(CONSOLE_FLUSH_LIMIT, wait).await;
        } else {
            tokio::time::sleep(CONSOLE_TRAIL).await;
        }
    }
    collector.abort();
    let (stdout, mut stderr) =
        std::mem::take(&mut *output.lock().unwrap_or_else(std::sync::PoisonError::into_inner));
    match evaluated {
        Err(_) => CodeOutcome::timed_out(stdout, stderr, timeout),
        Ok(Ok(value)) => {
            let result = match value.value {
                serde_json::Value::String(s) => s,
                serde_json::Value::Null if value.kind == "undefined" => String::new(),
                other => other.to_string(),
            };
            CodeOutcome { stdout, stderr, result, ..CodeOutcome::default() }
        }
        Ok(Err(message)) => {
            append(&mut stderr, &format!("Uncaught {message}"));
            CodeOutcome { stdout, stderr, exit_code: 1, error: Some(message), ..CodeOutcome::default() }
        }
    }
}

/// Runs `code` with `language`'s interpreter in `sandbox`, the page whose DevTools endpoint
/// is `devtools` (and whose address is `page_url`) reachable from inside.
pub async fn run_process(
    sandbox: Option<&Sandbox>,
    language: Language,
    code: &str,
    devtools: &str,
    page_url: &str,
    timeout: Duration,
) -> CodeOutcome {
    let (program, flag) = match language {
        Language::Python => ("python3", "-c"),
        Language::Bash => ("bash", "-c"),
        Language::Node => return failure("node code runs in the page, not in a subprocess".into()),
    };
    let Some(sandbox) = sandbox else {
        return failure(format!("{program} code runs only in a sandbox, which this server did not set up"));
    };
    let door = match Door::open(devtools, page_url) {
        Ok(door) => door,
        Err(e) => return failure(e),
    };
    let cdp_url = Door::inside_url(devtools);
    let env = [("CDP_URL", cdp_url.as_str()), ("PAGE_URL", page_url)];
    let limits = Limits::for_timeout(timeout.as_secs());
    let mut command = sandbox.command(&[program, flag, code], door.socket(), &env, limits);
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => return failure(format!("could not start the sandbox: {e}")),
    };
    let mut group = Group(child.id().and_then(|id| rustix::process::Pid::from_raw(id as i32)));
    let stdout = tokio::spawn(read_capped(child.stdout.take()));
    let stderr = tokio::spawn(read_capped(child.stderr.take()));
    let status = tokio::time::timeout(timeout, child.wait()).await;
    if status.is_err() {
        // The whole group: a shell's children would otherwise keep the pipes open.
        group.kill();
        let _ = child.wait().await;
    }
    group.0 = None;
    let stdout = stdout.await.unwrap_or_default();
    let stderr = stderr.await.unwrap_or_default();
    match status {
        Err(_) => CodeOutcome::timed_out(stdout, stderr, timeout),
        Ok(Err(e)) => {
            CodeOutcome { stdout, stderr, exit_code: 1, error: Some(e.to_string()), ..CodeOutcome::default() }
        }
        Ok(Ok(status)) => {
            let exit_code = status.code().unwrap_or(1);
            let error = (exit_code != 0).then(|| format!("{program} exited with code {exit_code}"));
            CodeOutcome { stdout, stderr, exit_code, error, ..CodeOutcome::default() }
        }
    }
}

/// The sandbox's process group, killed when the run is abandoned half-way (its session
/// ended while the code ran): with bubblewrap goes every process inside, so no child of the
/// code outlives the session.
struct Group(Option<rustix::process::Pid>);

impl Group {
    fn kill(&mut self) {
        if let Some(pid) = self.0.take() {
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.kill();
    }
}

fn failure(message: String) -> CodeOutcome {
    CodeOutcome { exit_code: 1, error: Some(message), ..CodeOutcome::default() }
}

/// Reads a stream to its end, keeping at most [`OUTPUT_CAP`] bytes.
async fn read_capped<R: tokio::io::AsyncRead + Unpin>(stream: Option<R>) -> String {
    let Some(stream) = stream else { return String::new() };
    let mut kept = Vec::new();
    let mut limited = stream.take(OUTPUT_CAP as u64);
    let _ = limited.read_to_end(&mut kept).await;
    // Drain the rest so the writer never blocks on a full pipe.
    let mut rest = limited.into_inner();
    let _ = tokio::io::copy(&mut rest, &mut tokio::io::sink()).await;
    String::from_utf8_lossy(&kept).into_owned()
}

fn append(stream: &mut String, line: &str) {
    if stream.len() + line.len() < OUTPUT_CAP {
        stream.push_str(line);
        stream.push('\n');
    }
}

/// How `console.log` would print one argument.
fn console_text(arg: &RemoteObject) -> String {
    match &arg.value {
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
        None => arg.description.clone().unwrap_or_else(|| "undefined".into()),
    }
}
