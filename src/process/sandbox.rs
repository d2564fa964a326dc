//! The sandbox of code a caller runs on this server (interact `python` and `bash`), built
//! with bubblewrap (Debian's `bubblewrap`), never by hand. Each run gets:
//!
//! - an empty root holding only `/usr` (and its `/bin`, `/lib` links) read-only, of `/etc`
//!   only the linker's cache and the links of `/etc/alternatives`, a fresh `/proc` and
//!   `/dev`, and a small `/tmp` of its own: no data directory, no home;
//! - a cleared environment (the page's addresses, `PATH`, `HOME`, `LANG`);
//! - new namespaces of every kind (no further user namespaces inside), no capabilities, a
//!   session of its own, and the user `nobody` when the server runs as root;
//! - a network of its own with only its loopback, where `127.0.0.1:`[`DEVTOOLS_PORT`]
//!   leads to the session's page behind the DevTools guard: this binary, started inside as
//!   `ferrocrawl sandbox-exec` ([`run_inside`]), relays that port to a Unix socket the
//!   server binds into the sandbox for the run;
//! - limits on CPU time, memory, processes, file size and open files ([`Limits`]);
//! - an end with its first process: killing bubblewrap ends every process inside, however
//!   they detached (one PID namespace, ended with its first process).
//!
//! [`Sandbox::probe`] builds a sandbox once at start: a server configured for these
//! languages refuses to start where bubblewrap is missing or cannot make its namespaces,
//! rather than running code without one.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;

/// The port inside the sandbox that leads to the session's DevTools connection.
pub const DEVTOOLS_PORT: u16 = 9222;
/// Where the run's DevTools socket is inside the sandbox.
const INSIDE_SOCKET: &str = "/run/ferrocrawl/devtools.sock";
/// Where this binary is inside the sandbox.
const INSIDE_EXE: &str = "/run/ferrocrawl/ferrocrawl";
/// The user code runs as when the server runs as root (`nobody`).
const NOBODY: u32 = 65534;
/// Places bubblewrap is looked for.
const BWRAP: [&str; 2] = ["/usr/bin/bwrap", "/bin/bwrap"];

/// What one run may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// CPU seconds of each process.
    pub cpu_secs: u64,
    /// Address space of each process, bytes.
    pub memory: u64,
    /// Processes at once.
    pub processes: u64,
    /// Largest file written, bytes; also the size of `/tmp`.
    pub file_size: u64,
    /// Open files of each process.
    pub open_files: u64,
}

impl Limits {
    /// The limits of a run given `timeout_secs`: CPU time a second over it, 2 GiB of
    /// address space, 64 processes, 64 MiB files and `/tmp`, 256 open files.
    pub fn for_timeout(timeout_secs: u64) -> Self {
        Self {
            cpu_secs: timeout_secs + 1,
            memory: 2 << 30,
            processes: 64,
            file_size: 64 << 20,
            open_files: 256,
        }
    }
}

/// A working bubblewrap, and this binary to run inside it.
#[derive(Debug, Clone)]
pub struct Sandbox {
    bwrap: PathBuf,
    exe: PathBuf,
    as_nobody: bool,
}

impl Sandbox {
    /// Finds bubblewrap and builds one sandbox running `exe` (this binary), to know it
    /// works here; the error says why not.
    pub async fn probe(exe: PathBuf) -> Result<Self, String> {
        let bwrap = BWRAP.iter().map(PathBuf::from).find(|p| p.is_file()).ok_or(
            "bubblewrap is not installed (apt-get install bubblewrap): python and bash code run only in its sandbox",
        )?;
        if !exe.is_file() {
            return Err(format!("the program to run inside the sandbox is missing: {}", exe.display()));
        }
        let sandbox = Self { bwrap, exe, as_nobody: rustix::process::geteuid().is_root() };
        let dir = tempfile::tempdir().map_err(|e| format!("a directory for the sandbox's socket: {e}"))?;
        let socket = dir.path().join("devtools.sock");
        let _listener = bind_socket(dir.path(), &socket)?;
        let mut command = sandbox.command(&["true"], &socket, &[], Limits::for_timeout(10));
        command.stdout(Stdio::null()).stderr(Stdio::piped());
        let out = command.output().await.map_err(|e| format!("could not start bubblewrap: {e}"))?;
        if !out.status.success() {
            let why = String::from_utf8_lossy(&out.stderr).trim().to_owned();
            return Err(format!(
                "bubblewrap could not build a sandbox here ({why}); it needs user namespaces \
                 (kernel.unprivileged_userns_clone, user.max_user_namespaces)"
            ));
        }
        Ok(sandbox)
    }

    /// The command running `program` (its name and arguments) inside a new sandbox, with
    /// `devtools` (a Unix socket) reachable inside at [`DEVTOOLS_PORT`] and `env` set.
    /// The caller makes it a process group of its own and kills it to end the run.
    pub fn command(
        &self,
        program: &[&str],
        devtools: &Path,
        env: &[(&str, &str)],
        limits: Limits,
    ) -> tokio::process::Command {
        let mut command = tokio::process::Command::new(&self.bwrap);
        command.args([
            "--unshare-all",
            "--unshare-user",
            "--disable-userns",
            "--cap-drop",
            "ALL",
            "--die-with-parent",
            "--new-session",
            "--clearenv",
        ]);
        let path = "/usr/local/bin:/usr/bin:/bin";
        for (name, value) in [("PATH", path), ("HOME", "/tmp"), ("TMPDIR", "/tmp"), ("LANG", "C.UTF-8")]
            .into_iter()
            .chain(env.iter().copied())
        {
            command.args(["--setenv", name, value]);
        }
        command.args(["--ro-bind", "/usr", "/usr"]);
        for (link, target) in
            [("/bin", "usr/bin"), ("/sbin", "usr/sbin"), ("/lib", "usr/lib"), ("/lib64", "usr/lib64")]
        {
            command.args(["--symlink", target, link]);
        }
        command
            .args(["--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache"])
            .args(["--ro-bind-try", "/etc/alternatives", "/etc/alternatives"])
            .args(["--proc", "/proc", "--dev", "/dev"])
            .args(["--size", &limits.file_size.to_string(), "--tmpfs", "/tmp"])
            .args(["--dir", "/run/ferrocrawl"])
            .arg("--ro-bind")
            .arg(&self.exe)
            .arg(INSIDE_EXE)
            .arg("--bind")
            .arg(devtools)
            .arg(INSIDE_SOCKET)
            .args(["--chdir", "/tmp", "--", INSIDE_EXE, "sandbox-exec"])
            .args(limits.arguments())
            .arg("--")
            .args(program);
        if self.as_nobody {
            command.uid(NOBODY).gid(NOBODY);
        }
        command
    }
}

/// Binds the run's DevTools socket at `socket` in `dir`, both open to the sandbox's user
/// (the directory can be passed through, not listed).
pub fn bind_socket(dir: &Path, socket: &Path) -> Result<tokio::net::UnixListener, String> {
    use std::os::unix::fs::PermissionsExt;
    let listener =
        tokio::net::UnixListener::bind(socket).map_err(|e| format!("the sandbox's socket: {e}"))?;
    for (path, mode) in [(dir, 0o711), (socket, 0o777)] {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
            .map_err(|e| format!("the sandbox's socket: {e}"))?;
    }
    Ok(listener)
}

impl Limits {
    fn arguments(self) -> Vec<String> {
        let Self { cpu_secs, memory, processes, file_size, open_files } = self;
        [("cpu", cpu_secs), ("memory", memory), ("processes", processes), ("file-size", file_size)]
            .into_iter()
            .chain([("open-files", open_files)])
            .map(|(name, value)| format!("--{name}={value}"))
            .collect()
    }
}

/// Inside the sandbox (`ferrocrawl sandbox-exec`): relays [`DEVTOOLS_PORT`] to the run's
/// socket, runs `program` within `limits` and returns its exit code (128 and the signal's
/// number when a signal ended it, 127 when it could not start).
pub fn run_inside(limits: Limits, program: &[String]) -> i32 {
    let Some((name, args)) = program.split_first() else { return 127 };
    match TcpListener::bind(("127.0.0.1", DEVTOOLS_PORT)) {
        Ok(listener) => {
            std::thread::spawn(move || {
                for client in listener.incoming().flatten() {
                    std::thread::spawn(move || relay(client));
                }
            });
        }
        Err(e) => eprintln!("ferrocrawl: the DevTools port is not available: {e}"),
    }
    let mut command = std::process::Command::new(name);
    command.args(args);
    // SAFETY: the closure only makes `setrlimit` calls, which are async-signal-safe and
    // allocate nothing.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut command, move || limits.apply());
    }
    match command.status() {
        Ok(status) => status.code().or(status.signal().map(|s| 128 + s)).unwrap_or(1),
        Err(e) => {
            eprintln!("ferrocrawl: could not start {name}: {e}");
            127
        }
    }
}

impl Limits {
    /// Sets the limits on this process (and what it starts).
    fn apply(self) -> std::io::Result<()> {
        use rustix::process::{Resource, Rlimit, setrlimit};
        let both = |value: u64| Rlimit { current: Some(value), maximum: Some(value) };
        for (resource, value) in [
            (Resource::Cpu, self.cpu_secs),
            (Resource::As, self.memory),
            (Resource::Nproc, self.processes),
            (Resource::Fsize, self.file_size),
            (Resource::Nofile, self.open_files),
            (Resource::Core, 0),
        ] {
            setrlimit(resource, both(value))?;
        }
        Ok(())
    }
}

/// One connection to the DevTools port, carried to the run's socket and back.
fn relay(client: TcpStream) {
    let Ok(server) = UnixStream::connect(INSIDE_SOCKET) else { return };
    let (Ok(client_in), Ok(server_in)) = (client.try_clone(), server.try_clone()) else { return };
    let up = std::thread::spawn(move || copy(client_in, server_in, |s| s.shutdown(Shutdown::Write)));
    copy(server, client, |c| c.shutdown(Shutdown::Write));
    let _ = up.join();
}

/// Copies `from` into `to` until `from` ends, then closes `to`'s writing side.
fn copy<R: Read, W: Write>(mut from: R, mut to: W, close: impl FnOnce(&W) -> std::io::Result<()>) {
    let _ = std::io::copy(&mut from, &mut to);
    let _ = close(&to);
}
