//! Running a Python peer (an independent implementation from PyPI) as a
//! line-oriented JSON filter, for the cross-checks.
// Each cross-check binary uses a subset.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

/// A running `python3 tests/cross/<script>`.
pub struct Peer {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Peer {
    /// Starts the script, or says why not (printed as `SKIPPED: ...` by
    /// the caller) when python3 or the module `module` is missing.
    pub fn start(script: &str, module: &str) -> Result<Peer, String> {
        let probe = Command::new("python3")
            .args(["-c", &format!("import {module}")])
            .output();
        match probe {
            Err(e) => return Err(format!("python3 not runnable ({e})")),
            Ok(out) if !out.status.success() => {
                return Err(format!(
                    "python3 lacks the `{module}` module ({})",
                    String::from_utf8_lossy(&out.stderr)
                        .lines()
                        .last()
                        .unwrap_or("")
                ));
            }
            Ok(_) => {}
        }
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/cross")
            .join(script);
        let mut child = Command::new("python3")
            .arg(&path)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", path.display()))?;
        let stdin = child.stdin.take().expect("piped");
        let stdout = BufReader::new(child.stdout.take().expect("piped"));
        Ok(Peer {
            child,
            stdin,
            stdout,
        })
    }

    /// Sends one request line, returns the response line.
    pub fn ask(&mut self, request: &str) -> String {
        writeln!(self.stdin, "{request}").expect("peer stdin");
        self.stdin.flush().expect("peer stdin");
        let mut line = String::new();
        self.stdout.read_line(&mut line).expect("peer stdout");
        assert!(!line.is_empty(), "peer exited on {request}");
        line
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The string value of `"key": "..."` in a flat JSON object line.
pub fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let at = line.find(&format!("\"{key}\": "))? + key.len() + 4;
    let rest = &line[at..];
    if let Some(s) = rest.strip_prefix('"') {
        s.split('"').next()
    } else {
        rest.split([',', '}']).next().map(str::trim)
    }
}

/// Lower-case hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Bytes from hex.
pub fn unhex(s: &str) -> Vec<u8> {
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).expect("hex"))
        .collect()
}

const B64URL: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// base64url without padding (RFC 7515 section 2).
pub fn b64url(bytes: &[u8]) -> String {
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let mut n = 0u32;
        for (i, &b) in chunk.iter().enumerate() {
            n |= (b as u32) << (16 - 8 * i);
        }
        for i in 0..=chunk.len() {
            out.push(B64URL[(n >> (18 - 6 * i)) as usize & 63] as char);
        }
    }
    out
}

/// Decodes base64url without padding; `None` on a bad character or length.
pub fn unb64url(s: &str) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let (mut acc, mut bits) = (0u32, 0);
    for c in s.bytes() {
        let v = B64URL.iter().position(|&x| x == c)? as u32;
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    (bits < 6).then_some(out)
}
