//! Runs one case in a fresh child under `ptrace` and records its trace:
//! for every instruction between the two `int3` markers, the instruction
//! pointer and the effective address of each memory operand.
//!
//! The child is this binary again (`ct-check trace-child`, always the same
//! argv and environment), started with address-space randomisation off, so
//! that its code, stack and heap sit at the same addresses in every run;
//! the case arrives on its stdin and is read before the first marker.

use std::collections::HashMap;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

use iced_x86::{Decoder, DecoderOptions, InstructionInfoFactory, Register, UsedMemory};

/// One run's trace: `stream` holds, per step, the RIP, the number of
/// memory operands and their addresses; `hash` is a digest of it.
pub struct Trace {
    pub stream: Vec<u64>,
    pub steps: usize,
    pub hash: u128,
    /// Memory operands whose address could not be computed (vector-indexed
    /// gathers and scatters); their step still records the RIP.
    pub unresolved: usize,
    /// The child's exit status (0: it got the answer the case expected).
    pub status: i32,
}

impl Trace {
    /// The steps as (start index in `stream`, RIP).
    pub fn step_starts(&self) -> Vec<usize> {
        let mut out = Vec::with_capacity(self.steps);
        let mut i = 0;
        while i < self.stream.len() {
            out.push(i);
            i += 2 + self.stream[i + 1] as usize;
        }
        out
    }
}

/// A decoded instruction: its length, whether it is the `int3` end
/// marker, and its memory operands.
struct Decoded {
    is_marker: bool,
    next_ip: u64,
    mems: Vec<UsedMemory>,
}

/// The tracer: decodes each instruction once (the code is the same in
/// every child) and knows where the child's executable is loaded.
pub struct Tracer {
    exe: std::path::PathBuf,
    cache: HashMap<u64, Decoded>,
    factory: InstructionInfoFactory,
    /// Load address of the executable in the child (constant: no ASLR).
    pub load_base: u64,
}

fn errno() -> std::io::Error {
    std::io::Error::last_os_error()
}

/// Pins this process (and so every child it starts) to one CPU: tracer
/// and child then hand the CPU to each other at every step.
pub fn pin_to_cpu(cpu: usize) -> Result<(), String> {
    // SAFETY: `cpu_set_t` is plain data; all zeroes is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: CPU_SET writes one bit inside `set`; `cpu` is checked by the
    // kernel call below (an out-of-range CPU fails it).
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: passes a valid pointer to a `cpu_set_t` of the given size.
    let r = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if r != 0 {
        return Err(format!("sched_setaffinity(cpu {cpu}): {}", errno()));
    }
    Ok(())
}

impl Tracer {
    pub fn new() -> Result<Self, String> {
        let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
        Ok(Tracer {
            exe,
            cache: HashMap::new(),
            factory: InstructionInfoFactory::new(),
            load_base: 0,
        })
    }

    pub fn exe(&self) -> &std::path::Path {
        &self.exe
    }

    /// Runs the child on `input` and returns its trace.
    pub fn run(&mut self, input: &[u8]) -> Result<Trace, String> {
        let mut cmd = Command::new(&self.exe);
        cmd.arg("trace-child")
            .stdin(Stdio::piped())
            .stdout(Stdio::null());
        // SAFETY: the closure runs in the forked child before exec and only
        // makes two system calls, both async-signal-safe.
        unsafe {
            cmd.pre_exec(|| {
                if libc::personality(libc::ADDR_NO_RANDOMIZE as libc::c_ulong) == -1 {
                    return Err(std::io::Error::last_os_error());
                }
                if libc::ptrace(libc::PTRACE_TRACEME, 0, 0, 0) == -1 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let mut child = cmd.spawn().map_err(|e| format!("spawn: {e}"))?;
        let pid = child.id() as libc::pid_t;
        let result = self.trace_child(pid, &mut child, input);
        if result.is_err() {
            // SAFETY: kills the child this tracer started, by its pid.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            let _ = wait(pid);
        }
        result
    }

    fn trace_child(
        &mut self,
        pid: libc::pid_t,
        child: &mut std::process::Child,
        input: &[u8],
    ) -> Result<Trace, String> {
        // The stop after exec.
        expect_trap(pid, wait(pid)?, "exec")?;
        // SAFETY: ptrace on our stopped child with an integer option.
        if unsafe { libc::ptrace(libc::PTRACE_SETOPTIONS, pid, 0, libc::PTRACE_O_EXITKILL) } == -1 {
            return Err(format!("PTRACE_SETOPTIONS: {}", errno()));
        }
        // Run to the first marker, the case written meanwhile: a case
        // longer than the pipe's buffer (an SSH packet of the fixed
        // bound) is only taken while the child runs.
        cont(pid)?;
        {
            let mut stdin = child.stdin.take().expect("piped stdin");
            stdin
                .write_all(input)
                .map_err(|e| format!("writing the case: {e}"))?;
        }
        expect_trap(pid, wait(pid)?, "first marker")?;
        if self.load_base == 0 {
            self.load_base = load_base(pid, &self.exe)?;
        }
        let mut stream = Vec::with_capacity(1 << 16);
        let mut hash = Hash::new();
        let mut steps = 0usize;
        let mut unresolved = 0usize;
        loop {
            let regs = get_regs(pid)?;
            let rip = regs.rip;
            if !self.cache.contains_key(&rip) {
                let d = self.decode(pid, rip)?;
                self.cache.insert(rip, d);
            }
            let d = &self.cache[&rip];
            if d.is_marker {
                break;
            }
            stream.push(rip);
            stream.push(d.mems.len() as u64);
            hash.add(rip);
            for m in &d.mems {
                let addr = m
                    .virtual_address(0, |reg, _, _| reg_value(&regs, reg, d.next_ip))
                    .unwrap_or_else(|| {
                        unresolved += 1;
                        u64::MAX
                    });
                stream.push(addr);
                hash.add(addr);
            }
            steps += 1;
            // SAFETY: ptrace on our stopped child.
            if unsafe { libc::ptrace(libc::PTRACE_SINGLESTEP, pid, 0, 0) } == -1 {
                return Err(format!("PTRACE_SINGLESTEP: {}", errno()));
            }
            expect_trap(pid, wait(pid)?, "single step")?;
        }
        // Past the end marker: let it finish.
        cont(pid)?;
        let status = loop {
            let s = wait(pid)?;
            if libc::WIFEXITED(s) {
                break libc::WEXITSTATUS(s);
            }
            if libc::WIFSIGNALED(s) {
                return Err(format!("child killed by signal {}", libc::WTERMSIG(s)));
            }
            // The end marker's own trap is swallowed; any other signal is
            // passed on.
            let sig = match libc::WSTOPSIG(s) {
                libc::SIGTRAP => 0,
                sig => sig,
            };
            // SAFETY: ptrace on our stopped child, delivering `sig`.
            unsafe { libc::ptrace(libc::PTRACE_CONT, pid, 0, sig) };
        };
        Ok(Trace {
            stream,
            steps,
            hash: hash.finish(),
            unresolved,
            status,
        })
    }

    fn decode(&mut self, pid: libc::pid_t, rip: u64) -> Result<Decoded, String> {
        let mut bytes = [0u8; 16];
        for (i, chunk) in bytes.chunks_mut(8).enumerate() {
            let addr = rip + 8 * i as u64;
            // SAFETY: PEEKTEXT returns the word or -1 with errno set; errno
            // is cleared first to tell the two apart.
            let word = unsafe {
                *libc::__errno_location() = 0;
                libc::ptrace(libc::PTRACE_PEEKTEXT, pid, addr, 0)
            };
            // SAFETY: reads this thread's errno.
            if word == -1 && unsafe { *libc::__errno_location() } != 0 {
                return Err(format!("PTRACE_PEEKTEXT {addr:#x}: {}", errno()));
            }
            chunk.copy_from_slice(&word.to_le_bytes());
        }
        let mut decoder = Decoder::with_ip(64, &bytes, rip, DecoderOptions::NONE);
        let instr = decoder.decode();
        if instr.is_invalid() {
            return Err(format!("undecodable instruction at {rip:#x}: {bytes:02x?}"));
        }
        let is_marker = instr.mnemonic() == iced_x86::Mnemonic::Int3;
        let mems = self.factory.info(&instr).used_memory().to_vec();
        Ok(Decoded {
            is_marker,
            next_ip: instr.next_ip(),
            mems,
        })
    }
}

/// The value of `reg` (any width of a general register, RIP, or a
/// segment base) for address computation; `None` for vector registers.
fn reg_value(r: &libc::user_regs_struct, reg: Register, next_ip: u64) -> Option<u64> {
    use Register::*;
    let full = match reg.full_register() {
        RAX => r.rax,
        RBX => r.rbx,
        RCX => r.rcx,
        RDX => r.rdx,
        RSI => r.rsi,
        RDI => r.rdi,
        RBP => r.rbp,
        RSP => r.rsp,
        R8 => r.r8,
        R9 => r.r9,
        R10 => r.r10,
        R11 => r.r11,
        R12 => r.r12,
        R13 => r.r13,
        R14 => r.r14,
        R15 => r.r15,
        RIP => next_ip,
        ES | CS | SS | DS => 0,
        FS => r.fs_base,
        GS => r.gs_base,
        _ => return Option::None,
    };
    Some(match reg.size() {
        4 => full & 0xffff_ffff,
        2 => full & 0xffff,
        1 => full & 0xff,
        _ => full,
    })
}

fn wait(pid: libc::pid_t) -> Result<i32, String> {
    let mut status = 0;
    // SAFETY: waits for our own child, writing its status into `status`.
    let r = unsafe { libc::waitpid(pid, &mut status, libc::__WALL) };
    if r != pid {
        return Err(format!("waitpid: {}", errno()));
    }
    Ok(status)
}

fn expect_trap(pid: libc::pid_t, status: i32, what: &str) -> Result<(), String> {
    if libc::WIFSTOPPED(status) && libc::WSTOPSIG(status) == libc::SIGTRAP {
        return Ok(());
    }
    if libc::WIFEXITED(status) {
        return Err(format!(
            "child {pid} exited with {} before the {what}",
            libc::WEXITSTATUS(status)
        ));
    }
    Err(format!(
        "child {pid}: unexpected status {status:#x} at the {what}"
    ))
}

fn cont(pid: libc::pid_t) -> Result<(), String> {
    // SAFETY: ptrace on our stopped child.
    if unsafe { libc::ptrace(libc::PTRACE_CONT, pid, 0, 0) } == -1 {
        return Err(format!("PTRACE_CONT: {}", errno()));
    }
    Ok(())
}

fn get_regs(pid: libc::pid_t) -> Result<libc::user_regs_struct, String> {
    // SAFETY: plain data; filled in by the kernel below.
    let mut regs: libc::user_regs_struct = unsafe { std::mem::zeroed() };
    // SAFETY: GETREGS writes one `user_regs_struct` into `regs`.
    if unsafe { libc::ptrace(libc::PTRACE_GETREGS, pid, 0, &mut regs) } == -1 {
        return Err(format!("PTRACE_GETREGS: {}", errno()));
    }
    Ok(regs)
}

/// Where the child mapped the start of the executable (offset 0).
fn load_base(pid: libc::pid_t, exe: &std::path::Path) -> Result<u64, String> {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps"))
        .map_err(|e| format!("/proc/{pid}/maps: {e}"))?;
    let exe = exe.to_string_lossy();
    for line in maps.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() >= 6 && f[5] == exe && f[2] == "00000000" {
            let start = f[0].split('-').next().unwrap_or("0");
            return u64::from_str_radix(start, 16).map_err(|e| format!("maps: {e}"));
        }
    }
    Err(format!("{exe} not found in /proc/{pid}/maps"))
}

/// A 128-bit digest of the stream (two 64-bit multiply-xorshift lanes):
/// not cryptographic, only to tell traces apart in the summary.
struct Hash(u64, u64);

impl Hash {
    fn new() -> Self {
        Hash(0x243f_6a88_85a3_08d3, 0x1319_8a2e_0370_7344)
    }

    fn add(&mut self, v: u64) {
        self.0 = (self.0 ^ v)
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            .rotate_left(29);
        self.1 = (self.1 ^ v.rotate_left(32))
            .wrapping_mul(0xc2b2_ae3d_27d4_eb4f)
            .rotate_left(31);
    }

    fn finish(&self) -> u128 {
        (u128::from(self.0) << 64) | u128::from(self.1)
    }
}
