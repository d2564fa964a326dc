//! The real `ferrocrawl` binary as a child process: started with `serve --port 0` on a data
//! directory, its address read from its log, its output collected, and stopped with SIGTERM
//! (graceful) or SIGKILL (crash); and what its database holds on disk at a given moment,
//! read from a copy made while it is frozen ([`Binary::disk_now`]).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Path of the built binary.
pub fn binary_path() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_ferrocrawl"))
}

/// Runs the binary to completion with `args` and extra environment.
pub fn run(args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(binary_path()).args(args).envs(env.iter().copied()).output().expect("run ferrocrawl")
}

/// A running server process.
pub struct Binary {
    child: Child,
    /// `http://127.0.0.1:PORT`
    pub base: String,
    /// Its data directory.
    pub data: PathBuf,
    stdout: Arc<Mutex<String>>,
    stderr: Arc<Mutex<String>>,
    readers: Vec<std::thread::JoinHandle<()>>,
}

fn collect(
    stream: impl std::io::Read + Send + 'static,
    into: Arc<Mutex<String>>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines().map_while(Result::ok) {
            let mut text = into.lock().expect("lock");
            text.push_str(&line);
            text.push('\n');
        }
    })
}

impl Binary {
    /// Starts `ferrocrawl serve --port 0 --data DATA` with private targets allowed.
    pub fn serve(data: &Path, env: &[(&str, &str)]) -> Self {
        Self::serve_with(data, &[], env)
    }

    /// The key the server made for team `default` at its first start (`DATA/api-key`).
    pub fn key(&self) -> String {
        std::fs::read_to_string(self.data.join("api-key")).expect("key").trim().to_owned()
    }

    /// POSTs `body` to `path` with the server's own key: the status and the JSON answer.
    pub async fn post(&self, path: &str, body: &serde_json::Value) -> (u16, serde_json::Value) {
        let client = reqwest::Client::builder().no_proxy().build().expect("client");
        let sent = client.post(format!("{}{path}", self.base)).bearer_auth(self.key()).json(body).send();
        super::decode(sent.await.expect("post")).await
    }

    /// [`Binary::serve`] with more command-line arguments (`--cluster-listen`, `--join`).
    pub fn serve_with(data: &Path, args: &[&str], env: &[(&str, &str)]) -> Self {
        let mut child = Command::new(binary_path())
            .args(["serve", "--port", "0", "--data"])
            .arg(data)
            .args(args)
            .env("FERROCRAWL_SECURITY__ALLOW_PRIVATE_TARGETS", "true")
            .env("FERROCRAWL_SERVER__WORKERS", "1")
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn ferrocrawl");
        let stdout = Arc::new(Mutex::new(String::new()));
        let stderr = Arc::new(Mutex::new(String::new()));
        let readers = vec![
            collect(child.stdout.take().expect("stdout"), Arc::clone(&stdout)),
            collect(child.stderr.take().expect("stderr"), Arc::clone(&stderr)),
        ];
        let deadline = Instant::now() + Duration::from_secs(30);
        let base = loop {
            let log = stderr.lock().expect("lock").clone();
            if let Some(addr) = log
                .lines()
                .filter(|l| l.contains("ferrocrawl is listening"))
                .find_map(|l| l.split("address=").nth(1))
                .and_then(|rest| rest.split_whitespace().next())
            {
                break format!("http://{addr}");
            }
            if let Ok(Some(status)) = child.try_wait() {
                panic!("ferrocrawl exited with {status}: {log}");
            }
            assert!(Instant::now() < deadline, "ferrocrawl did not start: {log}");
            std::thread::sleep(Duration::from_millis(20));
        };
        Self { child, base, data: data.to_path_buf(), stdout, stderr, readers }
    }

    /// Everything it printed on stdout so far.
    pub fn stdout(&self) -> String {
        self.stdout.lock().expect("lock").clone()
    }

    /// Everything it logged so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().expect("lock").clone()
    }

    /// Sends SIGTERM and waits for the exit.
    pub fn terminate(mut self) -> (ExitStatus, String) {
        let pid = self.child.id().to_string();
        Command::new("kill").args(["-TERM", &pid]).status().expect("kill -TERM");
        let status = self.wait(Duration::from_secs(30));
        // The readers end when the pipes close: then everything the process wrote is in.
        let deadline = Instant::now() + Duration::from_secs(10);
        while !self.readers.iter().all(std::thread::JoinHandle::is_finished) {
            assert!(Instant::now() < deadline, "the process's output never ended: {}", self.stderr());
            std::thread::sleep(Duration::from_millis(10));
        }
        (status, self.stderr())
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends `signal` (e.g. `STOP`, `CONT`) to the process.
    pub fn signal(&self, signal: &str) {
        let pid = self.child.id().to_string();
        Command::new("kill").args([&format!("-{signal}"), &pid]).status().expect("kill");
    }

    /// What a kill -9 now would leave of the server's database, opened: the process is
    /// frozen (SIGSTOP, every thread stopped) while its `db` directory is copied, then
    /// thawed. The copy holds what the server had written to its files (sled writes what it
    /// holds every 500 ms, and at an explicit flush), which is what a kill keeps, so a
    /// test can wait until something is on the disk instead of for a time.
    pub fn disk_now(&self) -> DiskCopy {
        let dir = tempfile::tempdir().expect("tempdir");
        {
            let _frozen = Frozen::new(self.child.id());
            copy_dir(&self.data.join("db"), &dir.path().join("db"));
        }
        let store = ferrocrawl::store::Store::open(dir.path()).expect("open the copy of the database");
        DiskCopy { store, _dir: dir }
    }

    /// SIGKILL: the process dies without any chance to clean up.
    pub fn kill9(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    fn wait(&mut self, limit: Duration) -> ExitStatus {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("ferrocrawl did not exit after SIGTERM: {}", self.stderr());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// A copy of a server's database ([`Binary::disk_now`]), open.
pub struct DiskCopy {
    /// The copy's store (dropped before its directory).
    pub store: ferrocrawl::store::Store,
    _dir: tempfile::TempDir,
}

/// A process stopped (SIGSTOP) until this is dropped (SIGCONT).
struct Frozen(String);

impl Frozen {
    /// Stops process `pid` and waits until every thread of it is stopped: one in the middle
    /// of a write finishes the write first.
    fn new(pid: u32) -> Self {
        let frozen = Self(pid.to_string());
        Command::new("kill").args(["-STOP", &frozen.0]).status().expect("kill -STOP");
        let deadline = Instant::now() + Duration::from_secs(10);
        while !all_threads_stopped(pid) {
            assert!(Instant::now() < deadline, "process {pid} did not stop");
            std::thread::sleep(Duration::from_millis(1));
        }
        frozen
    }
}

impl Drop for Frozen {
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-CONT", &self.0]).status();
    }
}

/// Whether every thread of `pid` is in the stopped state (`T` in `/proc/PID/task/*/stat`).
fn all_threads_stopped(pid: u32) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return false };
    tasks.filter_map(Result::ok).all(|task| {
        let stat = std::fs::read_to_string(task.path().join("stat")).unwrap_or_default();
        // The state follows the command name, which is in parentheses and may hold spaces.
        let state = stat.rsplit_once(')').and_then(|(_, rest)| rest.trim_start().chars().next());
        matches!(state, Some('T' | 't'))
    })
}

/// Copies the directory tree `from` to `to`.
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create the copy's directory");
    for entry in std::fs::read_dir(from).expect("read the database directory") {
        let entry = entry.expect("directory entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy a database file");
        }
    }
}

/// How long a dropped server is given to stop by itself before it is killed.
const STOP_ON_DROP: Duration = Duration::from_secs(5);

impl Drop for Binary {
    /// Stops the server as an operator would (SIGTERM, after SIGCONT in case a test froze
    /// it), killing it only if it has not stopped within [`STOP_ON_DROP`]: a server killed
    /// at the end of a test leaves its browsers' helpers writing into the test's data
    /// directory after it was removed.
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let pid = self.child.id().to_string();
            for signal in ["-CONT", "-TERM"] {
                let _ = Command::new("kill").args([signal, &pid]).status();
            }
            let deadline = Instant::now() + STOP_ON_DROP;
            while matches!(self.child.try_wait(), Ok(None)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
