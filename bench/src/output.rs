//! Printing results: readable text in the style of `gnutls-cli
//! --benchmark-ciphers`, or one JSON object per line.

use std::io::{self, Write};

use cbc_hmac::Backend;

use crate::measure::Measurement;

/// The three sections, printed in this order for each payload size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Section {
    /// Record seal and open per cipher-MAC combination.
    Combinations,
    /// HMAC per hash function.
    Macs,
    /// AES-CBC encrypt and decrypt per key size.
    Ciphers,
}

impl Section {
    /// The `section` value of the JSON lines.
    pub fn key(self) -> &'static str {
        match self {
            Section::Combinations => "combination",
            Section::Macs => "mac",
            Section::Ciphers => "cipher",
        }
    }

    fn title(self) -> &'static str {
        match self {
            Section::Combinations => "cipher-MAC combinations",
            Section::Macs => "MAC algorithms",
            Section::Ciphers => "ciphers",
        }
    }
}

/// One finished measurement.
#[derive(Clone, Copy, Debug)]
pub struct Row<'a> {
    /// Its section.
    pub section: Section,
    /// What was measured: `AES-128-CBC-SHA1`, `HMAC-SHA1`, `AES-128-CBC`.
    pub name: &'a str,
    /// `seal`, `open`, `mac`, `encrypt` or `decrypt`.
    pub direction: &'a str,
    /// Payload bytes per operation.
    pub payload: usize,
    /// The timing.
    pub measurement: Measurement,
}

/// Writes rows to `out` as text or JSON lines.
pub struct Reporter<W: Write> {
    out: W,
    json: bool,
    backend: Backend,
    in_section: bool,
}

impl<W: Write> Reporter<W> {
    /// A reporter for measurements on `backend`.
    pub fn new(out: W, json: bool, backend: Backend) -> Self {
        Reporter {
            out,
            json,
            backend,
            in_section: false,
        }
    }

    /// The first line of a text report: the backend.
    pub fn start(&mut self) -> io::Result<()> {
        if self.json {
            return Ok(());
        }
        writeln!(self.out, "Backend: {}", self.backend)?;
        self.out.flush()
    }

    /// A section header (text only), after a blank line if a section came
    /// before.
    pub fn section(&mut self, section: Section, payload: usize) -> io::Result<()> {
        if self.json {
            return Ok(());
        }
        if self.in_section {
            writeln!(self.out)?;
        }
        self.in_section = true;
        writeln!(
            self.out,
            "Checking {}, payload size: {payload}",
            section.title()
        )?;
        self.out.flush()
    }

    /// One result line.
    pub fn row(&mut self, row: &Row<'_>) -> io::Result<()> {
        let m = &row.measurement;
        if self.json {
            writeln!(
                self.out,
                "{{\"section\":{},\"name\":{},\"direction\":{},\"payload\":{},\"backend\":{},\
                 \"bytes\":{},\"seconds\":{:.6},\"gb_per_s\":{:.6},\"ops\":{}}}",
                json_string(row.section.key()),
                json_string(row.name),
                json_string(row.direction),
                row.payload,
                json_string(self.backend.name()),
                m.bytes(row.payload),
                m.seconds,
                m.gb_per_s(row.payload),
                m.ops,
            )?;
        } else {
            // The MAC section names the hash alone, as gnutls-cli does.
            let label = match row.section {
                Section::Macs => row.name.trim_start_matches("HMAC-").to_string(),
                _ => format!("{} {}", row.name, row.direction),
            };
            writeln!(
                self.out,
                "{label:>26} {:>6.2} GB/sec  {:>10.1} ns/op",
                m.gb_per_s(row.payload),
                m.ns_per_op(),
            )?;
        }
        self.out.flush()
    }
}

/// A JSON string literal.
fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(section: Section, name: &'static str, direction: &'static str) -> Row<'static> {
        Row {
            section,
            name,
            direction,
            payload: 16,
            measurement: Measurement {
                ops: 1000,
                seconds: 0.5,
            },
        }
    }

    fn report(json: bool) -> String {
        let mut r = Reporter::new(Vec::new(), json, Backend::Portable);
        r.start().unwrap();
        r.section(Section::Combinations, 16).unwrap();
        r.row(&row(Section::Combinations, "AES-128-CBC-SHA1", "seal"))
            .unwrap();
        r.section(Section::Macs, 16).unwrap();
        r.row(&row(Section::Macs, "HMAC-SHA1", "mac")).unwrap();
        String::from_utf8(r.out).unwrap()
    }

    #[test]
    fn text() {
        let text = report(false);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "Backend: portable");
        assert_eq!(
            lines[1],
            "Checking cipher-MAC combinations, payload size: 16"
        );
        assert_eq!(
            lines[2].trim(),
            "AES-128-CBC-SHA1 seal   0.00 GB/sec    500000.0 ns/op"
        );
        assert_eq!(lines[3], "");
        assert_eq!(lines[4], "Checking MAC algorithms, payload size: 16");
        assert!(lines[5].trim_start().starts_with("SHA1 "));
    }

    #[test]
    fn json_lines() {
        assert_eq!(
            report(true),
            "{\"section\":\"combination\",\"name\":\"AES-128-CBC-SHA1\",\"direction\":\"seal\",\
             \"payload\":16,\"backend\":\"portable\",\"bytes\":16000,\"seconds\":0.500000,\
             \"gb_per_s\":0.000032,\"ops\":1000}\n\
             {\"section\":\"mac\",\"name\":\"HMAC-SHA1\",\"direction\":\"mac\",\
             \"payload\":16,\"backend\":\"portable\",\"bytes\":16000,\"seconds\":0.500000,\
             \"gb_per_s\":0.000032,\"ops\":1000}\n"
        );
        assert_eq!(json_string("a\"b\\c\n"), "\"a\\\"b\\\\c\\u000a\"");
    }
}
