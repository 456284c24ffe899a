//! Comparing traces: one distinct trace per outcome within a class, and
//! outcomes parting only at an allowed declassification site, which is
//! named by file and line from the binary's debug info.

use std::collections::HashMap;
use std::process::Command;

use super::ptrace::{Trace, Tracer};

/// Where two traces first differ.
pub struct Divergence {
    /// Index of the first differing step.
    pub step: usize,
    /// RIP of the last common step (the branch, for a control-flow split).
    pub last_common: Option<u64>,
    /// RIP at the first differing step in each trace (`None`: it ended).
    pub rips: (Option<u64>, Option<u64>),
    /// Same RIP, different memory address.
    pub address_only: bool,
}

pub fn first_divergence(a: &Trace, b: &Trace) -> Option<Divergence> {
    if a.hash == b.hash && a.stream == b.stream {
        return None;
    }
    let (sa, sb) = (a.step_starts(), b.step_starts());
    let mut step = 0;
    loop {
        let ia = sa
            .get(step)
            .map(|&i| &a.stream[i..i + 2 + a.stream[i + 1] as usize]);
        let ib = sb
            .get(step)
            .map(|&i| &b.stream[i..i + 2 + b.stream[i + 1] as usize]);
        if ia != ib {
            let last_common = step.checked_sub(1).map(|s| a.stream[sa[s]]);
            let rips = (ia.map(|x| x[0]), ib.map(|x| x[0]));
            return Some(Divergence {
                step,
                last_common,
                address_only: rips.0.is_some() && rips.0 == rips.1,
                rips,
            });
        }
        ia?;
        step += 1;
    }
}

/// One source location of an address (innermost inlined frame first).
#[derive(Clone, Debug)]
pub struct Frame {
    pub function: String,
    pub file: String,
    pub line: u32,
}

/// Resolves child addresses to source with `addr2line` (binutils) on the
/// executable, caching each answer.
pub struct Symbolizer {
    cache: HashMap<u64, Vec<Frame>>,
}

impl Symbolizer {
    pub fn new() -> Self {
        Symbolizer {
            cache: HashMap::new(),
        }
    }

    pub fn frames(&mut self, tracer: &Tracer, addr: u64) -> Vec<Frame> {
        if let Some(f) = self.cache.get(&addr) {
            return f.clone();
        }
        let offset = addr.wrapping_sub(tracer.load_base);
        let out = Command::new("addr2line")
            .args(["-f", "-i", "-C", "-e"])
            .arg(tracer.exe())
            .arg(format!("{offset:#x}"))
            .output();
        let mut frames = Vec::new();
        if let Ok(out) = out {
            let text = String::from_utf8_lossy(&out.stdout);
            let lines: Vec<&str> = text.lines().collect();
            for pair in lines.chunks(2) {
                let [function, loc] = pair else { break };
                let (file, line) = loc.rsplit_once(':').unwrap_or((loc, "0"));
                let line = line.split_whitespace().next().unwrap_or("0");
                frames.push(Frame {
                    function: function.to_string(),
                    file: file.to_string(),
                    line: line.parse().unwrap_or(0),
                });
            }
        }
        self.cache.insert(addr, frames.clone());
        frames
    }

    /// `0x... in function at file:line`, and the innermost frame of
    /// this repository it was inlined into if the first is not one.
    pub fn describe(&mut self, tracer: &Tracer, addr: u64) -> String {
        let frames = self.frames(tracer, addr);
        let offset = addr.wrapping_sub(tracer.load_base);
        let mut s = format!("{addr:#x}");
        let Some(first) = frames.first().filter(|f| f.function != "??") else {
            return s + " (outside the executable's code: a shared library or the vDSO)";
        };
        let ours = |f: &Frame| !short_path(&f.file).starts_with('/');
        s += &format!(
            " (ELF {offset:#x}) in {} at {}:{}",
            first.function,
            short_path(&first.file),
            first.line
        );
        if !ours(first)
            && let Some(f) = frames.iter().find(|f| ours(f))
        {
            s += &format!(
                ", inlined into {} at {}:{}",
                f.function,
                short_path(&f.file),
                f.line
            );
        }
        s
    }
}

/// The path from the repository root on, for files of this repository.
pub fn short_path(file: &str) -> &str {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .and_then(|p| p.to_str())
        .unwrap_or("/");
    file.strip_prefix(root)
        .map(|f| f.trim_start_matches('/'))
        .unwrap_or(file)
}

/// A declassification site: a line in a source file (matched on the end
/// of the path) and the lines after it that belong to the same statement.
#[derive(Clone, Debug)]
pub struct Site {
    pub file: &'static str,
    pub line: u32,
    pub span: u32,
}

impl Site {
    /// The site at the line of `source` (the file's text) containing
    /// `needle`; panics if the text is gone, so a moved site cannot go
    /// unchecked.
    pub fn find(file: &'static str, source: &str, needle: &str, span: u32) -> Site {
        let mut hits = source
            .lines()
            .enumerate()
            .filter(|(_, l)| l.contains(needle));
        let (i, _) = hits
            .next()
            .unwrap_or_else(|| panic!("{file}: `{needle}` not found"));
        assert!(hits.next().is_none(), "{file}: `{needle}` twice");
        Site {
            file,
            line: i as u32 + 1,
            span,
        }
    }

    pub fn matches(&self, f: &Frame) -> bool {
        f.file.ends_with(self.file) && f.line >= self.line && f.line <= self.line + self.span
    }
}
