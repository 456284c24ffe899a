//! Reading memcheck's XML reports (`--xml=yes`) and judging them.
//!
//! Every error must be an uninitialised-value error ("Conditional jump or
//! move depends on uninitialised value(s)" or "Use of uninitialised value")
//! whose innermost frame in this workspace is one of the [`SITES`]: the
//! places where the library deliberately turns a secret into a public
//! answer. Frames of Rust's standard library (inlined slice indexing) and
//! of `subtle`'s `Choice` to `bool` conversion may sit inside that frame;
//! anything else (the `aes`, `sha1`, `sha2` crates, the library's own
//! constant-time code, the harness) is a failure. Sites are named by their
//! source text, not line numbers, and resolved against the sources as they
//! were when this program (and so, in `run.sh`, the library) was built,
//! so a moved line still matches and a changed one fails loudly.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// A deliberate declassification in the library.
pub struct Site {
    /// Source file, relative to the workspace root.
    pub file: &'static str,
    /// The file's text when this program was built (so, in `run.sh`, the
    /// same text the library under test was built from).
    pub source: &'static str,
    /// Text of the line (trimmed, exact substring).
    pub text: &'static str,
    /// Why revealing this value is intended.
    pub why: &'static str,
    /// Whether memcheck must report it: the compiler is free to compute an
    /// answer without a branch (then the harness declassifies it).
    pub required: bool,
}

const OPENER_RS: &str = include_str!("../../src/record/opener.rs");
const TLS_AEAD_RS: &str = include_str!("../../src/record/tls_aead.rs");
const HMAC_RS: &str = include_str!("../../src/primitives/hmac.rs");

/// The declassification sites. Each required one must be reached: a site
/// that memcheck never reports means the secrets were not marked.
pub const SITES: &[Site] = &[
    Site {
        file: "src/record/opener.rs",
        source: OPENER_RS,
        text: "if ok != usize::MAX {",
        why: "MAC-then-encrypt: the single accept/reject decision of open",
        required: true,
    },
    Site {
        file: "src/record/opener.rs",
        source: OPENER_RS,
        text: "Ok(&mut buf[offset..offset + data_len])",
        why: "after acceptance: the plaintext length is the output (slice bounds check)",
        required: true,
    },
    Site {
        file: "src/record/tls_aead.rs",
        source: TLS_AEAD_RS,
        text: "Ok(&mut buf[..data_len])",
        why: "TlsAead, after acceptance: the plaintext length is the output (slice bounds check)",
        required: true,
    },
    Site {
        file: "src/record/opener.rs",
        source: OPENER_RS,
        text: "if !bool::from(tag[..m].ct_eq(&buf[end..])) {",
        why: "encrypt-then-MAC: the MAC decision (over IV and ciphertext, public on the wire)",
        required: true,
    },
    Site {
        file: "src/record/opener.rs",
        source: OPENER_RS,
        text: "if good != usize::MAX {",
        why: "encrypt-then-MAC: the padding decision, after authentication",
        required: true,
    },
    Site {
        file: "src/primitives/hmac.rs",
        source: HMAC_RS,
        text: "if bool::from(expected.as_bytes().ct_eq(tag)) {",
        why: "HmacKey::verify: its answer",
        required: false,
    },
];

struct Frame {
    ip: String,
    func: String,
    dir: String,
    file: String,
    line: u32,
}

impl Frame {
    fn path(&self) -> PathBuf {
        Path::new(&self.dir).join(&self.file)
    }

    fn show(&self) -> String {
        if self.file.is_empty() {
            format!("{} {} (no debug info)", self.ip, self.func)
        } else {
            format!(
                "{} {} ({}:{})",
                self.ip,
                self.func,
                self.path().display(),
                self.line
            )
        }
    }
}

struct Report {
    unique: String,
    kind: String,
    what: String,
    stack: Vec<Frame>,
}

fn tag<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    let open = format!("<{name}>");
    let close = format!("</{name}>");
    let start = text.find(&open)? + open.len();
    let end = start + text[start..].find(&close)?;
    Some(&text[start..end])
}

fn blocks<'a>(text: &'a str, name: &str) -> Vec<&'a str> {
    let open = format!("<{name}>");
    let close = format!("</{name}>");
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(s) = rest.find(&open) {
        let body = &rest[s + open.len()..];
        let Some(e) = body.find(&close) else { break };
        out.push(&body[..e]);
        rest = &body[e + close.len()..];
    }
    out
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}

fn parse(xml: &str) -> (Vec<Report>, BTreeMap<String, u64>) {
    let mut reports = Vec::new();
    for e in blocks(xml, "error") {
        let what = tag(e, "what")
            .or_else(|| tag(e, "xwhat").and_then(|x| tag(x, "text")))
            .unwrap_or("");
        // The first stack is where the error happened (a second one, with
        // --track-origins, is where the value came from).
        let stack = tag(e, "stack").unwrap_or("");
        let frames = blocks(stack, "frame")
            .into_iter()
            .map(|f| Frame {
                ip: tag(f, "ip").unwrap_or("").to_string(),
                func: unescape(tag(f, "fn").unwrap_or("???")),
                dir: unescape(tag(f, "dir").unwrap_or("")),
                file: unescape(tag(f, "file").unwrap_or("")),
                line: tag(f, "line").and_then(|l| l.parse().ok()).unwrap_or(0),
            })
            .collect();
        reports.push(Report {
            unique: tag(e, "unique").unwrap_or("").to_string(),
            kind: tag(e, "kind").unwrap_or("").to_string(),
            what: unescape(what),
            stack: frames,
        });
    }
    let mut counts = BTreeMap::new();
    if let Some(ec) = tag(xml, "errorcounts") {
        for pair in blocks(ec, "pair") {
            if let (Some(c), Some(u)) = (tag(pair, "count"), tag(pair, "unique")) {
                counts.insert(u.to_string(), c.parse().unwrap_or(1));
            }
        }
    }
    (reports, counts)
}

/// A resolved site: absolute path and line numbers.
struct Resolved {
    path: PathBuf,
    lines: Vec<u32>,
    hits: u64,
}

fn resolve(root: &Path) -> Result<Vec<Resolved>, String> {
    SITES
        .iter()
        .map(|site| {
            let path = root.join(site.file);
            let lines: Vec<u32> = site
                .source
                .lines()
                .enumerate()
                .filter(|(_, l)| l.contains(site.text))
                .map(|(i, _)| i as u32 + 1)
                .collect();
            if lines.is_empty() {
                return Err(format!(
                    "declassification site {:?} is no longer in {}: update ct-check's SITES",
                    site.text, site.file
                ));
            }
            Ok(Resolved {
                path,
                lines,
                hits: 0,
            })
        })
        .collect()
}

fn is_std(f: &Frame) -> bool {
    f.dir.starts_with("/rustc/")
        || f.dir.contains("/library/core/")
        || f.dir.contains("/library/std/")
}

/// `subtle`'s `impl From<Choice> for bool`, inlined into a site.
fn is_choice_to_bool(f: &Frame) -> bool {
    f.dir.contains("/subtle-") && f.func.contains("From<subtle::Choice>")
}

pub fn main(files: &[String]) -> ExitCode {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf();
    let mut sites = match resolve(&root) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("ct-check analyze: {e}");
            return ExitCode::FAILURE;
        }
    };
    // Reports grouped by where they happened (innermost frame), so one
    // site reached from many call paths is listed once.
    let mut allowed: BTreeMap<String, u64> = BTreeMap::new();
    let mut unexpected: BTreeMap<String, (u64, String)> = BTreeMap::new();
    for file in files {
        let xml = match std::fs::read_to_string(file) {
            Ok(x) => x,
            Err(e) => {
                eprintln!("ct-check analyze: {file}: {e}");
                return ExitCode::FAILURE;
            }
        };
        if !xml.contains("</valgrindoutput>") {
            eprintln!("ct-check analyze: {file}: incomplete report (did valgrind crash?)");
            return ExitCode::FAILURE;
        }
        let (reports, counts) = parse(&xml);
        for r in &reports {
            let count = counts.get(&r.unique).copied().unwrap_or(1);
            let uninit = r.kind == "UninitCondition" || r.kind == "UninitValue";
            // The innermost frame in this workspace, and whether only
            // tolerated frames sit inside it.
            let mut inner_ok = true;
            let mut site = None;
            for f in &r.stack {
                if f.path().starts_with(&root) {
                    site = Some(f);
                    break;
                }
                if !(is_std(f) || is_choice_to_bool(f)) {
                    inner_ok = false;
                }
            }
            let matched = site.filter(|_| uninit && inner_ok).and_then(|f| {
                sites
                    .iter_mut()
                    .zip(SITES)
                    .find(|(s, _)| s.path == f.path() && s.lines.contains(&f.line))
            });
            match matched {
                Some((s, info)) => {
                    s.hits += count;
                    let key = format!(
                        "{}:{} ({}): {}",
                        info.file,
                        site.unwrap().line,
                        info.why,
                        r.what
                    );
                    *allowed.entry(key).or_default() += count;
                }
                None => {
                    let top = r.stack.first().map(Frame::show).unwrap_or_default();
                    let key = format!("{}: {} at {top}", r.kind, r.what);
                    let stack: Vec<String> = r
                        .stack
                        .iter()
                        .take_while(|f| !f.func.contains("__rust_begin_short_backtrace"))
                        .map(|f| format!("    {}", f.show()))
                        .collect();
                    let entry = unexpected.entry(key).or_insert((0, stack.join("\n")));
                    entry.0 += count;
                }
            }
        }
    }
    for (key, count) in &allowed {
        println!("declassified ({count}x) at {key}");
    }
    for (key, (count, stack)) in &unexpected {
        println!("UNEXPECTED ({count}x) {key}\n{stack}");
    }
    let (allowed, unexpected) = (allowed.len(), unexpected.len());
    let mut missing = 0;
    for (s, info) in sites.iter().zip(SITES) {
        if s.hits == 0 && info.required {
            missing += 1;
            println!(
                "NOT REACHED: declassification site {}:{:?} ({:?}) was never reported: \
                 the secrets were not marked, or the site moved",
                info.file, s.lines, info.text
            );
        }
    }
    println!(
        "ct-check analyze: {} report(s), {allowed} error site(s) at declassification points, \
         {unexpected} unexpected, {missing} declassification site(s) not reached",
        files.len()
    );
    if unexpected == 0 && missing == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
