//! Names the kernel tiers the building CPU lacks, so that their tests are
//! reported as ignored, with the reason, instead of passing without running
//! anything. Tests run where they were built; a test built for a tier that
//! the CPU running it lacks fails, saying so.

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!(
        "cargo::rustc-check-cfg=cfg(ncmesh_cpu_lacks, values(\"ssse3\", \"avx2\", \"avx512\", \"gfni256\", \"gfni512\"))"
    );
    let native = std::env::var("HOST").ok() == std::env::var("TARGET").ok();
    #[cfg(target_arch = "x86_64")]
    if native {
        let tiers = [
            ("ssse3", is_x86_feature_detected!("ssse3")),
            ("avx2", is_x86_feature_detected!("avx2")),
            ("avx512", is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512bw")),
            ("gfni256", is_x86_feature_detected!("gfni") && is_x86_feature_detected!("avx2")),
            (
                "gfni512",
                is_x86_feature_detected!("gfni")
                    && is_x86_feature_detected!("avx512f")
                    && is_x86_feature_detected!("avx512bw"),
            ),
        ];
        for (tier, present) in tiers {
            if !present {
                println!("cargo::rustc-cfg=ncmesh_cpu_lacks=\"{tier}\"");
            }
        }
    }
    let _ = native;
}
