//! Tests that need a variable the library reads once per process run one
//! test of their own binary again in a child process, with the variable
//! set.

use std::process::Command;

/// Runs test `name` of this test binary alone, with `var=value` and
/// `child=1` in its environment; asserts that it ran and passed, and
/// returns its standard output and error.
pub fn run(name: &str, child: &str, var: &str, value: &str) -> (String, String) {
    let exe = std::env::current_exe().unwrap();
    let out = Command::new(&exe)
        .args(["--exact", name, "--nocapture", "--test-threads=1"])
        .env(var, value)
        .env(child, "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "child with {var}={value} failed:\n{stdout}\n{stderr}"
    );
    // The child really ran the one test (a filter that matched nothing
    // would also exit successfully).
    assert!(
        stdout.contains("1 passed"),
        "child with {var}={value} did not run {name}:\n{stdout}"
    );
    (stdout, stderr)
}
