//! A throw-away OpenSSH `sshd` on loopback for the live SSH tests: its own
//! temporary host key, `Ciphers` and `MACs` restricted to one suite, `-D -e`
//! (no daemon, log on stderr to a file), killed and cleaned up on drop.

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use cbc_hmac::ssh::SshSuite;

/// A running sshd, killed on drop.
pub struct Sshd {
    child: Child,
    /// Its temporary directory: host key and `sshd.log`.
    pub dir: PathBuf,
    /// The loopback port it listens on.
    pub port: u16,
}

impl Sshd {
    /// What sshd has logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("sshd.log")).unwrap_or_default()
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Where sshd is installed, if it is.
pub fn sshd_path() -> Option<PathBuf> {
    ["/usr/sbin/sshd", "/usr/local/sbin/sshd", "/sbin/sshd"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
}

/// Makes an unencrypted ed25519 key pair at `path` (and `path.pub`).
pub fn keygen(path: &Path) -> Result<(), String> {
    let out = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(path)
        .output()
        .map_err(|e| format!("ssh-keygen not runnable ({e})"))?;
    if !out.status.success() {
        return Err(format!(
            "ssh-keygen failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(())
}

/// Starts sshd for one suite (`curve25519-sha256`, `ssh-ed25519` host
/// key, the suite's cipher and MAC only), with `extra` sshd options
/// (`Name=value`) before those, so they win (sshd keeps the first value
/// given); `tag` keeps the directories of one run apart.
/// `Err` says why not.
pub fn start_sshd(
    sshd: &Path,
    suite: SshSuite,
    tag: &str,
    extra: &[String],
) -> Result<Sshd, String> {
    let dir = std::env::temp_dir().join(format!("cbc-hmac-sshd-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| format!("temp dir: {e}"))?;
    // sshd's privilege separation directory.
    let _ = std::fs::create_dir_all("/run/sshd");
    let key = dir.join("host_ed25519");
    keygen(&key)?;
    let port = super::ports::free_tcp_port();
    let log = std::fs::File::create(dir.join("sshd.log")).map_err(|e| e.to_string())?;
    let mut cmd = Command::new(sshd);
    for option in extra {
        cmd.args(["-o", option]);
    }
    cmd.args(["-D", "-e", "-f", "/dev/null", "-h"])
        .arg(&key)
        .args(["-p", &port.to_string()])
        .args(["-o", "ListenAddress=127.0.0.1"])
        .args(["-o", "KexAlgorithms=curve25519-sha256"])
        .args(["-o", "HostKeyAlgorithms=ssh-ed25519"])
        .args(["-o", &format!("Ciphers={}", suite.cipher_name())])
        .args(["-o", &format!("MACs={}", suite.mac_name())])
        .args([
            "-o",
            "PidFile=none",
            "-o",
            "UsePAM=no",
            "-o",
            "StrictModes=no",
        ]);
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .map_err(|e| format!("cannot start {} ({e})", sshd.display()))?;
    let mut server = Sshd { child, dir, port };
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(Some(status)) = server.child.try_wait() {
            return Err(format!("sshd exited ({status}): {}", server.log().trim()));
        }
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            // That probe connection is one sshd drops; a fresh one follows.
            return Ok(server);
        }
        if Instant::now() > until {
            return Err("sshd did not listen within 10 s".into());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}
