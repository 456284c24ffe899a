//! A strict reader for the known-answer files in `vectors/`.
//!
//! Format (NIST CAVP `.rsp` files and this project's `.txt` transcriptions):
//!
//! - `Name = value` lines (spaces around `=` optional); consecutive ones form
//!   a record, and records are separated by blank lines;
//! - `# ...` comment lines, skipped anywhere (they do not end a record);
//! - `[...]` section header lines (`[ENCRYPT]`, `[L=20]`, `[L = 32]`); a
//!   header ends the current record and applies to the records after it; a
//!   header alone is not a record;
//! - a trailing `\r` (CRLF files) is stripped.
//!
//! Anything else is a parse error. Strictness is the point: every attribute of
//! a record must be taken (or explicitly ignored) by the test, otherwise the
//! record panics when dropped, so a misspelled attribute name in a file or in
//! a test cannot silently skip a check. Duplicate attribute names within one
//! record are an error. Every panic names `file:line`.

use std::path::Path;

/// One attribute: `name = value` on line `line`.
#[derive(Debug)]
struct Attr {
    name: String,
    value: String,
    line: usize,
    taken: bool,
}

/// One record: the consecutive `Name = value` lines between blank lines.
#[derive(Debug)]
pub struct Record {
    /// Display name of the file (`vectors/HMAC.rsp`).
    file: String,
    /// Line number (1-based) of the record's first attribute.
    line: usize,
    /// Text inside the most recent `[...]` header, trimmed.
    section: Option<String>,
    attrs: Vec<Attr>,
}

impl Record {
    /// The text inside the most recent `[...]` header before this record,
    /// trimmed (`"ENCRYPT"`, `"L=20"`, `"L = 32"`), or `None` if the file has
    /// no header before it.
    pub fn section(&self) -> Option<&str> {
        self.section.as_deref()
    }

    /// Whether the record has an attribute `name` (taken or not).
    pub fn has(&self, name: &str) -> bool {
        self.attrs.iter().any(|a| a.name == name)
    }

    /// Consumes attribute `name` as hex (either case; `""` is empty).
    /// Panics, naming `file:line`, if it is missing, already taken, or not
    /// an even number of hex digits.
    pub fn take_hex(&mut self, name: &str) -> Vec<u8> {
        let (value, at) = self.take(name);
        match decode_hex(&value) {
            Ok(bytes) => bytes,
            Err(why) => panic!("{at}: attribute `{name}`: {why}: {value:?}"),
        }
    }

    /// Consumes attribute `name` as a string (trimmed).
    pub fn take_str(&mut self, name: &str) -> String {
        self.take(name).0
    }

    /// Consumes attribute `name` as a `usize`: decimal, or `0x`-prefixed hex.
    pub fn take_usize(&mut self, name: &str) -> usize {
        let (value, at) = self.take(name);
        match parse_uint(&value).map(usize::try_from) {
            Ok(Ok(n)) => n,
            Ok(Err(_)) => panic!("{at}: attribute `{name}`: does not fit in usize: {value:?}"),
            Err(why) => panic!("{at}: attribute `{name}`: {why}: {value:?}"),
        }
    }

    /// Consumes attribute `name` as a `u64`: decimal, or `0x`-prefixed hex.
    pub fn take_u64(&mut self, name: &str) -> u64 {
        let (value, at) = self.take(name);
        match parse_uint(&value) {
            Ok(n) => n,
            Err(why) => panic!("{at}: attribute `{name}`: {why}: {value:?}"),
        }
    }

    /// Consumes attribute `name` without using it (it must exist).
    pub fn ignore(&mut self, name: &str) {
        self.take(name);
    }

    /// `vectors/FILE:LINE` of the record's first line.
    pub fn location(&self) -> String {
        format!("{}:{}", self.file, self.line)
    }

    /// Marks `name` taken; returns its value and `file:line`.
    fn take(&mut self, name: &str) -> (String, String) {
        let location = self.location();
        let Some(attr) = self.attrs.iter_mut().find(|a| a.name == name) else {
            let names: Vec<&str> = self.attrs.iter().map(|a| a.name.as_str()).collect();
            panic!("{location}: record has no attribute `{name}` (it has: {names:?})");
        };
        let at = format!("{}:{}", self.file, attr.line);
        assert!(!attr.taken, "{at}: attribute `{name}` taken twice");
        attr.taken = true;
        (attr.value.clone(), at)
    }
}

impl Drop for Record {
    fn drop(&mut self) {
        if std::thread::panicking() {
            return;
        }
        let left: Vec<String> = self
            .attrs
            .iter()
            .filter(|a| !a.taken)
            .map(|a| format!("`{}` (line {})", a.name, a.line))
            .collect();
        if !left.is_empty() {
            panic!(
                "{}: attribute(s) never checked (take or ignore them): {}",
                self.location(),
                left.join(", ")
            );
        }
    }
}

/// Calls `f` on every record of `vectors/<file>` (relative to
/// `CARGO_MANIFEST_DIR`); returns the number of records visited. Panics if
/// the file cannot be read or parsed, or has zero records.
pub fn for_each_record(file: &str, f: impl FnMut(&mut Record)) -> usize {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("vectors")
        .join(file);
    visit(&path, format!("vectors/{file}"), f)
}

/// [`for_each_record`] on any path (shown as given in panic messages).
pub fn for_each_record_in_path(path: &Path, f: impl FnMut(&mut Record)) -> usize {
    visit(path, path.display().to_string(), f)
}

fn visit(path: &Path, display: String, mut f: impl FnMut(&mut Record)) -> usize {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) => panic!("{display}: cannot read {}: {e}", path.display()),
    };
    let records = parse(&text, &display);
    assert!(!records.is_empty(), "{display}: no records");
    let count = records.len();
    for mut record in records {
        f(&mut record);
        // `record` is dropped here: unconsumed attributes panic.
    }
    count
}

fn parse(text: &str, file: &str) -> Vec<Record> {
    let mut records = Vec::new();
    let mut section: Option<String> = None;
    let mut current: Option<Record> = None;
    for (index, raw) in text.split('\n').enumerate() {
        let lineno = index + 1;
        let line = raw.strip_suffix('\r').unwrap_or(raw).trim();
        if line.is_empty() {
            records.extend(current.take());
            continue;
        }
        if line.starts_with('#') {
            continue;
        }
        if let Some(rest) = line.strip_prefix('[') {
            let Some(inner) = rest.strip_suffix(']') else {
                panic!("{file}:{lineno}: unterminated section header: {line:?}");
            };
            records.extend(current.take());
            section = Some(inner.trim().to_owned());
            continue;
        }
        let Some((name, value)) = line.split_once('=') else {
            panic!(
                "{file}:{lineno}: expected `Name = value`, `# comment`, `[section]` or a blank line: {line:?}"
            );
        };
        let (name, value) = (name.trim(), value.trim());
        assert!(
            !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
            "{file}:{lineno}: bad attribute name {name:?}"
        );
        let record = current.get_or_insert_with(|| Record {
            file: file.to_owned(),
            line: lineno,
            section: section.clone(),
            attrs: Vec::new(),
        });
        if let Some(previous) = record.attrs.iter().find(|a| a.name == name) {
            panic!(
                "{file}:{lineno}: duplicate attribute `{name}` in one record (first on line {})",
                previous.line
            );
        }
        record.attrs.push(Attr {
            name: name.to_owned(),
            value: value.to_owned(),
            line: lineno,
            taken: false,
        });
    }
    records.extend(current.take());
    records
}

fn decode_hex(s: &str) -> Result<Vec<u8>, &'static str> {
    if !s.len().is_multiple_of(2) {
        return Err("odd number of hex digits");
    }
    fn nibble(c: u8) -> Result<u8, &'static str> {
        match c {
            b'0'..=b'9' => Ok(c - b'0'),
            b'a'..=b'f' => Ok(c - b'a' + 10),
            b'A'..=b'F' => Ok(c - b'A' + 10),
            _ => Err("not a hex digit"),
        }
    }
    s.as_bytes()
        .chunks_exact(2)
        .map(|pair| Ok((nibble(pair[0])? << 4) | nibble(pair[1])?))
        .collect()
}

fn parse_uint(s: &str) -> Result<u64, &'static str> {
    let (digits, radix) = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => (hex, 16),
        None => (s, 10),
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return Err("not an unsigned integer (decimal or 0x-hex)");
    }
    u64::from_str_radix(digits, radix).map_err(|_| "integer out of range")
}
