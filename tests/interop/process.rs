//! Process control for the interop tests: peers started with captured
//! output, in their own process group, under `timeout -s KILL` when the
//! host has it (so they die even if the test binary is killed), and killed
//! on drop. Plus temporary directories and loopback ports.

use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// The longest any peer process may live.
pub const PROCESS_LIFETIME: Duration = Duration::from_secs(60);

/// Whether `program` runs (`program args...` exits successfully).
pub fn tool_runs(program: &str, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A running peer with its output captured.
pub struct Proc {
    name: String,
    child: Child,
    stdin: Option<ChildStdin>,
    output: Arc<Mutex<Vec<u8>>>,
}

impl Proc {
    /// Starts `program args` in `dir` with extra environment `env`.
    pub fn spawn(
        name: &str,
        program: &str,
        args: &[String],
        env: &[(String, String)],
        dir: &Path,
    ) -> std::io::Result<Proc> {
        let mut cmd = if tool_runs("timeout", &["--version"]) {
            let mut c = Command::new("timeout");
            c.arg("-s")
                .arg("KILL")
                .arg(PROCESS_LIFETIME.as_secs().to_string())
                .arg(program);
            c
        } else {
            Command::new(program)
        };
        cmd.args(args)
            .current_dir(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn()?;
        let output = Arc::new(Mutex::new(Vec::new()));
        let stdout = child.stdout.take().unwrap();
        let stderr = child.stderr.take().unwrap();
        for mut pipe in [Box::new(stdout) as Box<dyn Read + Send>, Box::new(stderr)] {
            let output = Arc::clone(&output);
            thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while let Ok(n) = pipe.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    output.lock().unwrap().extend_from_slice(&buf[..n]);
                }
            });
        }
        Ok(Proc {
            name: name.to_string(),
            stdin: child.stdin.take(),
            child,
            output,
        })
    }

    /// Writes to the process's standard input.
    pub fn write_stdin(&mut self, data: &[u8]) -> Result<(), String> {
        let stdin = self.stdin.as_mut().ok_or("stdin closed")?;
        stdin
            .write_all(data)
            .and_then(|()| stdin.flush())
            .map_err(|e| format!("{}: writing stdin: {e}", self.name))
    }

    /// Everything printed so far (stdout and stderr interleaved).
    pub fn output(&self) -> String {
        String::from_utf8_lossy(&self.output.lock().unwrap()).into_owned()
    }

    /// Whether the output contains `needle`.
    pub fn printed(&self, needle: &str) -> bool {
        self.output().contains(needle)
    }

    /// Whether the process has exited.
    pub fn exited(&mut self) -> bool {
        !matches!(self.child.try_wait(), Ok(None))
    }

    /// Waits until the output contains `needle`, the process exits, or
    /// `timeout` passes.
    pub fn wait_printed(&mut self, needle: &str, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            if self.printed(needle) {
                return true;
            }
            if self.exited() || Instant::now() > deadline {
                return self.printed(needle);
            }
            thread::sleep(Duration::from_millis(5));
        }
    }

    /// Kills the process group and reaps the process.
    pub fn stop(&mut self) {
        self.stdin = None;
        // The group is ours: the child leads it (process_group(0)).
        let _ = Command::new("kill")
            .arg("-KILL")
            .arg("--")
            .arg(format!("-{}", self.child.id()))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A directory under the system temporary directory, removed on drop.
pub struct TempDir {
    path: PathBuf,
}

impl TempDir {
    /// A new empty directory named after `prefix`.
    pub fn new(prefix: &str) -> std::io::Result<TempDir> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("{prefix}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path)?;
        Ok(TempDir { path })
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// Makes a self-signed RSA-2048 certificate and key (`cert.pem`,
/// `key.pem`) in `dir` with `openssl req -x509`.
pub fn make_rsa_certificate(dir: &Path) -> Result<(PathBuf, PathBuf), String> {
    let cert = dir.join("cert.pem");
    let key = dir.join("key.pem");
    let out = Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
        ])
        .args(["-subj", "/CN=localhost", "-keyout"])
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("openssl req: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "openssl req failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok((cert, key))
}
