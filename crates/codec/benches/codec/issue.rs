//! What the core can issue: the clock, and each vector tier's multiply-add
//! instruction mix run from registers alone, the ceiling a product in L1 is
//! compared with. Measured rather than modelled because issue widths differ
//! between cores (three vector ALUs on Intel since Skylake-SP, four pipes
//! on AMD Zen 4 with shuffles on two of them, two to four on Arm cores) and
//! because the clock a virtual machine states is not the one it runs at.
//! x86-64 and AArch64 only; elsewhere neither is measured.

use ncmesh_gf::Isa;
use std::time::Instant;

/// Eight additions, each waiting for the one before: one cycle each.
#[cfg(target_arch = "x86_64")]
macro_rules! add_chain {
    ($x:ident) => {
        std::arch::asm!(
            "add {x}, 1", "add {x}, 1", "add {x}, 1", "add {x}, 1",
            "add {x}, 1", "add {x}, 1", "add {x}, 1", "add {x}, 1",
            x = inout(reg) $x,
            options(nomem, nostack, pure),
        )
    };
}
#[cfg(target_arch = "aarch64")]
macro_rules! add_chain {
    ($x:ident) => {
        std::arch::asm!(
            "add {x}, {x}, 1", "add {x}, {x}, 1", "add {x}, {x}, 1", "add {x}, {x}, 1",
            "add {x}, {x}, 1", "add {x}, {x}, 1", "add {x}, {x}, 1", "add {x}, {x}, 1",
            x = inout(reg) $x,
            options(nomem, nostack, pure),
        )
    };
}

/// The clock in MHz, from a chain of dependent additions.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub fn clock_mhz() -> Option<f64> {
    let chain = |n: u64| {
        let start = Instant::now();
        let mut x = 0u64;
        for _ in 0..n {
            // SAFETY: register arithmetic only.
            unsafe { add_chain!(x) };
            x = std::hint::black_box(x);
        }
        8.0 * n as f64 / start.elapsed().as_secs_f64() / 1e6
    };
    chain(1_000_000);
    Some((0..3).map(|_| chain(10_000_000)).fold(0.0, f64::max))
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub fn clock_mhz() -> Option<f64> {
    None
}

/// Iterations per call of a probe.
pub const ITERATIONS: u64 = 1000;

/// One tier's multiply-add mix, run from registers alone: one iteration
/// per input split, as the blocked product issues them. Nibble tiers split
/// an input (a shift and two ANDs) and then, per output, look up both
/// nibbles and add both (two shuffles, and two XORs or, on AVX-512, one
/// three-way XOR), for one group of outputs
/// or, where the tier splits its inputs once for a band of 16 outputs, for
/// each of the band's groups in turn; GFNI tiers apply one affine and add
/// it per output. No loads or stores; every output of a group a chain of
/// its own.
#[derive(Clone, Copy, Debug)]
pub struct Probe {
    /// Multiply-adds an iteration makes: the outputs that share a split.
    pub outputs: usize,
    /// Bytes a vector holds.
    pub width: usize,
    /// Vector operations an iteration issues, counted from its code.
    pub ops: usize,
    run: unsafe fn(),
}

impl Probe {
    /// # Safety
    /// The CPU has the probe's instructions.
    pub unsafe fn run(&self) {
        // SAFETY: as the caller promises.
        unsafe { (self.run)() }
    }
}

/// The probe of `isa`, for the vector tiers of this architecture.
pub fn probe(isa: Isa) -> Option<Probe> {
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Ssse3 => Some(x86::ssse3::PROBE),
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => Some(x86::avx2::PROBE),
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => Some(x86::avx512::PROBE),
        #[cfg(target_arch = "x86_64")]
        Isa::Gfni256 => Some(x86::gfni256::PROBE),
        #[cfg(target_arch = "x86_64")]
        Isa::Gfni512 => Some(x86::gfni512::PROBE),
        #[cfg(target_arch = "aarch64")]
        Isa::Neon => Some(aarch64::neon::PROBE),
        _ => None,
    }
}

#[cfg(target_arch = "x86_64")]
macro_rules! loop_back {
    () => {
        "dec {n}\n jnz 2b"
    };
}
#[cfg(target_arch = "aarch64")]
macro_rules! loop_back {
    () => {
        "subs {n}, {n}, 1\n b.ne 2b"
    };
}

/// A probe: `$split`, then `$group` `$groups` times, repeated
/// [`ITERATIONS`] times, then `$after` (`vzeroupper` after VEX and EVEX
/// code, so that SSE code after it pays no transition), on registers only,
/// every one of the clobbers named.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
macro_rules! probe {
    ($name:ident, $features:literal, width = $width:literal, split = [$($split:literal),* $(,)?],
     group = ($outputs:literal outputs) [$($group:literal),* $(,)?], groups = $groups:literal,
     after = [$($after:literal),*], clobbers = [$($reg:tt),* $(,)?]) => {
        pub(super) mod $name {
            use super::super::{Probe, ITERATIONS};

            pub const PROBE: Probe = Probe {
                outputs: $outputs * $groups,
                width: $width,
                ops: <[&str]>::len(&[$($split),*]) + $groups * <[&str]>::len(&[$($group),*]),
                run,
            };

            #[target_feature(enable = $features)]
            unsafe fn run() {
                // SAFETY: registers only, all clobbered; the caller has the features.
                unsafe {
                    std::arch::asm!(
                        "2:", $($split,)* concat!(".rept ", $groups), $($group,)* ".endr",
                        loop_back!(), $($after,)*
                        n = inout(reg) ITERATIONS => _,
                        $(out($reg) _,)*
                        options(nomem, nostack),
                    );
                }
            }
        }
    };
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    probe!(
        ssse3,
        "ssse3",
        width = 16,
        split = ["psrlw xmm1, 4", "pand xmm0, xmm2", "pand xmm1, xmm2"],
        group = (4 outputs) [
            "pshufb xmm3, xmm0",
            "pshufb xmm4, xmm1",
            "pxor xmm11, xmm3",
            "pxor xmm11, xmm4",
            "pshufb xmm5, xmm0",
            "pshufb xmm6, xmm1",
            "pxor xmm12, xmm5",
            "pxor xmm12, xmm6",
            "pshufb xmm7, xmm0",
            "pshufb xmm8, xmm1",
            "pxor xmm13, xmm7",
            "pxor xmm13, xmm8",
            "pshufb xmm9, xmm0",
            "pshufb xmm10, xmm1",
            "pxor xmm14, xmm9",
            "pxor xmm14, xmm10",
        ],
        groups = 4,
        after = [],
        clobbers = [
            "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12",
            "xmm13", "xmm14"
        ]
    );

    probe!(
        avx2,
        "avx2",
        width = 32,
        split = ["vpsrlw ymm1, ymm1, 4", "vpand ymm0, ymm0, ymm2", "vpand ymm1, ymm1, ymm2"],
        group = (4 outputs) [
            "vpshufb ymm15, ymm3, ymm0",
            "vpxor ymm11, ymm11, ymm15",
            "vpshufb ymm15, ymm4, ymm1",
            "vpxor ymm11, ymm11, ymm15",
            "vpshufb ymm15, ymm5, ymm0",
            "vpxor ymm12, ymm12, ymm15",
            "vpshufb ymm15, ymm6, ymm1",
            "vpxor ymm12, ymm12, ymm15",
            "vpshufb ymm15, ymm7, ymm0",
            "vpxor ymm13, ymm13, ymm15",
            "vpshufb ymm15, ymm8, ymm1",
            "vpxor ymm13, ymm13, ymm15",
            "vpshufb ymm15, ymm9, ymm0",
            "vpxor ymm14, ymm14, ymm15",
            "vpshufb ymm15, ymm10, ymm1",
            "vpxor ymm14, ymm14, ymm15",
        ],
        groups = 4,
        after = ["vzeroupper"],
        clobbers = [
            "ymm0", "ymm1", "ymm2", "ymm3", "ymm4", "ymm5", "ymm6", "ymm7", "ymm8", "ymm9", "ymm10", "ymm11", "ymm12",
            "ymm13", "ymm14", "ymm15"
        ]
    );

    probe!(
        avx512,
        "avx512f,avx512bw",
        width = 64,
        split = ["vpsrlw zmm1, zmm1, 4", "vpandq zmm0, zmm0, zmm2", "vpandq zmm1, zmm1, zmm2"],
        // Both lookups join the sum in one three-way XOR, as the compiled kernel does.
        group = (8 outputs) [
            "vpshufb zmm30, zmm3, zmm0",
            "vpshufb zmm31, zmm4, zmm1",
            "vpternlogd zmm19, zmm30, zmm31, 0x96",
            "vpshufb zmm30, zmm5, zmm0",
            "vpshufb zmm31, zmm6, zmm1",
            "vpternlogd zmm20, zmm30, zmm31, 0x96",
            "vpshufb zmm30, zmm7, zmm0",
            "vpshufb zmm31, zmm8, zmm1",
            "vpternlogd zmm21, zmm30, zmm31, 0x96",
            "vpshufb zmm30, zmm9, zmm0",
            "vpshufb zmm31, zmm10, zmm1",
            "vpternlogd zmm22, zmm30, zmm31, 0x96",
            "vpshufb zmm30, zmm11, zmm0",
            "vpshufb zmm31, zmm12, zmm1",
            "vpternlogd zmm23, zmm30, zmm31, 0x96",
            "vpshufb zmm30, zmm13, zmm0",
            "vpshufb zmm31, zmm14, zmm1",
            "vpternlogd zmm24, zmm30, zmm31, 0x96",
            "vpshufb zmm30, zmm15, zmm0",
            "vpshufb zmm31, zmm16, zmm1",
            "vpternlogd zmm25, zmm30, zmm31, 0x96",
            "vpshufb zmm30, zmm17, zmm0",
            "vpshufb zmm31, zmm18, zmm1",
            "vpternlogd zmm26, zmm30, zmm31, 0x96",
        ],
        groups = 1,
        after = ["vzeroupper"],
        clobbers = [
            "zmm0", "zmm1", "zmm2", "zmm3", "zmm4", "zmm5", "zmm6", "zmm7", "zmm8", "zmm9", "zmm10", "zmm11", "zmm12",
            "zmm13", "zmm14", "zmm15", "zmm16", "zmm17", "zmm18", "zmm19", "zmm20", "zmm21", "zmm22", "zmm23", "zmm24",
            "zmm25", "zmm26", "zmm30", "zmm31"
        ]
    );

    probe!(
        gfni256,
        "avx2,gfni",
        width = 32,
        split = [],
        group = (6 outputs) [
            "vgf2p8affineqb ymm15, ymm0, ymm1, 0",
            "vpxor ymm7, ymm7, ymm15",
            "vgf2p8affineqb ymm15, ymm0, ymm2, 0",
            "vpxor ymm8, ymm8, ymm15",
            "vgf2p8affineqb ymm15, ymm0, ymm3, 0",
            "vpxor ymm9, ymm9, ymm15",
            "vgf2p8affineqb ymm15, ymm0, ymm4, 0",
            "vpxor ymm10, ymm10, ymm15",
            "vgf2p8affineqb ymm15, ymm0, ymm5, 0",
            "vpxor ymm11, ymm11, ymm15",
            "vgf2p8affineqb ymm15, ymm0, ymm6, 0",
            "vpxor ymm12, ymm12, ymm15",
        ],
        groups = 1,
        after = ["vzeroupper"],
        clobbers = [
            "ymm0", "ymm1", "ymm2", "ymm3", "ymm4", "ymm5", "ymm6", "ymm7", "ymm8", "ymm9", "ymm10", "ymm11", "ymm12",
            "ymm15"
        ]
    );

    probe!(
        gfni512,
        "avx512f,avx512bw,gfni",
        width = 64,
        split = [],
        group = (8 outputs) [
            "vgf2p8affineqb zmm31, zmm0, zmm1, 0",
            "vpxorq zmm9, zmm9, zmm31",
            "vgf2p8affineqb zmm31, zmm0, zmm2, 0",
            "vpxorq zmm10, zmm10, zmm31",
            "vgf2p8affineqb zmm31, zmm0, zmm3, 0",
            "vpxorq zmm11, zmm11, zmm31",
            "vgf2p8affineqb zmm31, zmm0, zmm4, 0",
            "vpxorq zmm12, zmm12, zmm31",
            "vgf2p8affineqb zmm31, zmm0, zmm5, 0",
            "vpxorq zmm13, zmm13, zmm31",
            "vgf2p8affineqb zmm31, zmm0, zmm6, 0",
            "vpxorq zmm14, zmm14, zmm31",
            "vgf2p8affineqb zmm31, zmm0, zmm7, 0",
            "vpxorq zmm15, zmm15, zmm31",
            "vgf2p8affineqb zmm31, zmm0, zmm8, 0",
            "vpxorq zmm16, zmm16, zmm31",
        ],
        groups = 1,
        after = ["vzeroupper"],
        clobbers = [
            "zmm0", "zmm1", "zmm2", "zmm3", "zmm4", "zmm5", "zmm6", "zmm7", "zmm8", "zmm9", "zmm10", "zmm11", "zmm12",
            "zmm13", "zmm14", "zmm15", "zmm16", "zmm31"
        ]
    );
}

#[cfg(target_arch = "aarch64")]
mod aarch64 {
    // NEON splits each input once per group of eight outputs (an AND and
    // a shift), then looks up and adds both nibbles for each.
    probe!(
        neon,
        "neon",
        width = 16,
        split = ["and v0.16b, v31.16b, v2.16b", "ushr v1.16b, v31.16b, 4"],
        group = (8 outputs) [
            "tbl v27.16b, {{v3.16b}}, v0.16b",
            "tbl v28.16b, {{v4.16b}}, v1.16b",
            "eor v27.16b, v27.16b, v28.16b",
            "eor v19.16b, v19.16b, v27.16b",
            "tbl v27.16b, {{v5.16b}}, v0.16b",
            "tbl v28.16b, {{v6.16b}}, v1.16b",
            "eor v27.16b, v27.16b, v28.16b",
            "eor v20.16b, v20.16b, v27.16b",
            "tbl v27.16b, {{v7.16b}}, v0.16b",
            "tbl v28.16b, {{v8.16b}}, v1.16b",
            "eor v27.16b, v27.16b, v28.16b",
            "eor v21.16b, v21.16b, v27.16b",
            "tbl v27.16b, {{v9.16b}}, v0.16b",
            "tbl v28.16b, {{v10.16b}}, v1.16b",
            "eor v27.16b, v27.16b, v28.16b",
            "eor v22.16b, v22.16b, v27.16b",
            "tbl v27.16b, {{v11.16b}}, v0.16b",
            "tbl v28.16b, {{v12.16b}}, v1.16b",
            "eor v27.16b, v27.16b, v28.16b",
            "eor v23.16b, v23.16b, v27.16b",
            "tbl v27.16b, {{v13.16b}}, v0.16b",
            "tbl v28.16b, {{v14.16b}}, v1.16b",
            "eor v27.16b, v27.16b, v28.16b",
            "eor v24.16b, v24.16b, v27.16b",
            "tbl v27.16b, {{v15.16b}}, v0.16b",
            "tbl v28.16b, {{v16.16b}}, v1.16b",
            "eor v27.16b, v27.16b, v28.16b",
            "eor v25.16b, v25.16b, v27.16b",
            "tbl v27.16b, {{v17.16b}}, v0.16b",
            "tbl v28.16b, {{v18.16b}}, v1.16b",
            "eor v27.16b, v27.16b, v28.16b",
            "eor v26.16b, v26.16b, v27.16b",
        ],
        groups = 1,
        after = [],
        clobbers = [
            "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v11", "v12", "v13", "v14", "v15",
            "v16", "v17", "v18", "v19", "v20", "v21", "v22", "v23", "v24", "v25", "v26", "v27", "v28", "v31"
        ]
    );
}
