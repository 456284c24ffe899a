//! With the `ffi` feature: compiles `shim/shim.c` (the library's
//! `IMB_*` macros, which call through the manager's function-pointer
//! table, turned into real functions) and links libIPSec_MB. Without it:
//! nothing.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    #[cfg(feature = "ffi")]
    {
        println!("cargo:rerun-if-changed=shim/shim.c");
        cc::Build::new()
            .file("shim/shim.c")
            .opt_level(2)
            .warnings(true)
            .extra_warnings(true)
            .compile("ipsec_mb_ref_shim");
        println!("cargo:rustc-link-lib=IPSec_MB");
    }
}
