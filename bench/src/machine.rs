//! What the results were measured on: the CPU (from `/proc/cpuinfo`) and
//! the load average (from `/proc/loadavg`), for the results page.

/// The CPU flags that decide which backend runs (as `/proc/cpuinfo` spells
/// them).
pub const FLAGS: [&str; 5] = ["aes", "sha_ni", "avx2", "avx512f", "vaes"];

/// The CPU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cpu {
    /// `model name`, or `unknown`.
    pub model: String,
    /// `vendor_id`, `cpu family` and `model` (kernels tuned on one CPU
    /// model can be slow on another, so figures name it).
    pub id: Option<(String, u32, u32)>,
    /// Logical CPUs listed.
    pub logical_cpus: usize,
    /// Each of [`FLAGS`] and whether the CPU has it.
    pub flags: Vec<(&'static str, bool)>,
    /// The CPU whose kernel choices the library makes instead of this
    /// one's (`CBC_HMAC_TUNING_CPU`), when set.
    pub tuned_as: Option<cbc_hmac::CpuModel>,
}

impl Cpu {
    /// This machine's CPU (Linux; elsewhere `unknown` with no flags).
    pub fn here() -> Cpu {
        let cpu = Cpu::parse(&std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default());
        Cpu {
            // An unparsable value stops the benchmark before it measures.
            tuned_as: cbc_hmac::tuning_cpu_override().ok().flatten(),
            ..cpu
        }
    }

    /// Parses the text of `/proc/cpuinfo` (the first processor's model and
    /// flags).
    pub fn parse(cpuinfo: &str) -> Cpu {
        let field = |name: &str| {
            cpuinfo.lines().find_map(|line| {
                let (key, value) = line.split_once(':')?;
                (key.trim() == name).then(|| value.trim().to_string())
            })
        };
        let flags = field("flags").unwrap_or_default();
        let present: Vec<&str> = flags.split_whitespace().collect();
        Cpu {
            model: field("model name").unwrap_or_else(|| "unknown".into()),
            id: (|| {
                let vendor = field("vendor_id")?;
                let family = field("cpu family")?.parse().ok()?;
                let model = field("model")?.parse().ok()?;
                Some((vendor, family, model))
            })(),
            logical_cpus: cpuinfo
                .lines()
                .filter(|l| l.split(':').next().is_some_and(|k| k.trim() == "processor"))
                .count(),
            flags: FLAGS.iter().map(|&f| (f, present.contains(&f))).collect(),
            tuned_as: None,
        }
    }

    /// `GenuineIntel family 6 model 207 (0x6/0xcf)`, or `unknown`; with
    /// `CBC_HMAC_TUNING_CPU` set, followed by `, kernels chosen as on ...`.
    pub fn id_summary(&self) -> String {
        let id = match &self.id {
            Some((vendor, family, model)) => {
                format!("{vendor} family {family} model {model} ({family:#x}/{model:#x})")
            }
            None => "unknown".into(),
        };
        match self.tuned_as {
            Some(cpu) => format!("{id}, kernels chosen as on {cpu} (CBC_HMAC_TUNING_CPU)"),
            None => id,
        }
    }

    /// `aes sha_ni avx2 avx512f vaes` style: the flags present, then the
    /// absent ones marked.
    pub fn flag_summary(&self) -> String {
        if self.flags.iter().all(|&(_, has)| !has) && self.model == "unknown" {
            return "unknown".into();
        }
        self.flags
            .iter()
            .map(|&(f, has)| {
                if has {
                    f.to_string()
                } else {
                    format!("no {f}")
                }
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The 1, 5 and 15 minute load averages, as `/proc/loadavg` gives them.
pub fn load_average() -> Option<String> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    let fields: Vec<&str> = text.split_whitespace().take(3).collect();
    (fields.len() == 3).then(|| fields.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_cpuinfo() {
        let text = "processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: fpu aes avx2 sha_ni \
                    avx512f\n\nprocessor\t: 1\nmodel name\t: AMD EPYC\nflags\t\t: fpu\n";
        let cpu = Cpu::parse(text);
        assert_eq!(cpu.model, "AMD EPYC");
        assert_eq!(cpu.logical_cpus, 2);
        assert_eq!(cpu.flag_summary(), "aes, sha_ni, avx2, avx512f, no vaes");
        assert_eq!(Cpu::parse("").flag_summary(), "unknown");
    }

    #[test]
    fn names_the_tuning_cpu() {
        let text = "vendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 207\n";
        let mut cpu = Cpu::parse(text);
        assert_eq!(
            cpu.id_summary(),
            "GenuineIntel family 6 model 207 (0x6/0xcf)"
        );
        cpu.tuned_as = Some(cbc_hmac::CpuModel {
            vendor: *b"AuthenticAMD",
            family: 0x1a,
            model: 2,
        });
        assert_eq!(
            cpu.id_summary(),
            "GenuineIntel family 6 model 207 (0x6/0xcf), kernels chosen as on AuthenticAMD \
             family 0x1a model 0x2 (CBC_HMAC_TUNING_CPU)"
        );
    }
}
