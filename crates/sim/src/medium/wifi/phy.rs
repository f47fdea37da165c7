//! 802.11 PHY timings: the rates of 802.11b (DSSS and HR/DSSS, IEEE
//! 802.11-2016 clauses 15 and 16) and 802.11a/g (OFDM and ERP-OFDM,
//! clauses 17 and 18), how long a frame occupies the air at each, and the
//! interframe spaces and contention windows of each standard.

use ncmesh_proto::Duration;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Which PHY the channel runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
pub enum Standard {
    /// DSSS and HR/DSSS at 2.4 GHz: 1, 2, 5.5 and 11 Mbit/s.
    #[default]
    #[serde(rename = "802.11b")]
    B,
    /// OFDM at 5 GHz: 6 to 54 Mbit/s.
    #[serde(rename = "802.11a")]
    A,
    /// ERP-OFDM at 2.4 GHz: the 802.11a rates with a 6 µs signal extension and long slots.
    #[serde(rename = "802.11g")]
    G,
}

/// The PLCP preamble of DSSS frames. OFDM has one preamble.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Preamble {
    /// 144 µs of preamble and a 48 µs header at 1 Mbit/s: 192 µs.
    #[default]
    Long,
    /// 72 µs and a 24 µs header at 2 Mbit/s: 96 µs. Not defined at 1 Mbit/s,
    /// where frames keep the long preamble.
    Short,
}

/// How a rate puts bits on the air, for the error model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Modulation {
    /// 1 Mbit/s: differential BPSK spread by an 11-chip Barker code.
    Dbpsk,
    /// 2 Mbit/s: differential QPSK, Barker spread.
    Dqpsk,
    /// 5.5 and 11 Mbit/s: complementary code keying.
    Cck,
    /// OFDM: a constellation on each subcarrier and a convolutional code.
    Ofdm { constellation: Constellation, code: CodeRate, data_bits_per_symbol: u32 },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Constellation {
    Bpsk,
    Qpsk,
    Qam16,
    Qam64,
}

/// The rate of the K = 7 convolutional code (generators 133, 171 octal), punctured above 1/2.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CodeRate {
    Half,
    TwoThirds,
    ThreeQuarters,
}

/// One transmission rate of a standard.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mode {
    pub bps: u64,
    pub modulation: Modulation,
}

const fn ofdm(mbps: u64, constellation: Constellation, code: CodeRate, data_bits_per_symbol: u32) -> Mode {
    Mode { bps: mbps * 1_000_000, modulation: Modulation::Ofdm { constellation, code, data_bits_per_symbol } }
}

const DSSS: [Mode; 4] = [
    Mode { bps: 1_000_000, modulation: Modulation::Dbpsk },
    Mode { bps: 2_000_000, modulation: Modulation::Dqpsk },
    Mode { bps: 5_500_000, modulation: Modulation::Cck },
    Mode { bps: 11_000_000, modulation: Modulation::Cck },
];

/// Table 17-4 of 802.11-2016: rate, constellation, code rate, data bits per OFDM symbol.
const OFDM: [Mode; 8] = [
    ofdm(6, Constellation::Bpsk, CodeRate::Half, 24),
    ofdm(9, Constellation::Bpsk, CodeRate::ThreeQuarters, 36),
    ofdm(12, Constellation::Qpsk, CodeRate::Half, 48),
    ofdm(18, Constellation::Qpsk, CodeRate::ThreeQuarters, 72),
    ofdm(24, Constellation::Qam16, CodeRate::Half, 96),
    ofdm(36, Constellation::Qam16, CodeRate::ThreeQuarters, 144),
    ofdm(48, Constellation::Qam64, CodeRate::TwoThirds, 192),
    ofdm(54, Constellation::Qam64, CodeRate::ThreeQuarters, 216),
];

impl Standard {
    /// The name a scenario gives it.
    pub fn name(self) -> &'static str {
        match self {
            Standard::B => "802.11b",
            Standard::A => "802.11a",
            Standard::G => "802.11g",
        }
    }

    pub fn modes(self) -> &'static [Mode] {
        match self {
            Standard::B => &DSSS,
            Standard::A | Standard::G => &OFDM,
        }
    }

    /// The mode of `bps`, if the standard has that rate.
    pub fn mode(self, bps: u64) -> Option<Mode> {
        self.modes().iter().copied().find(|m| m.bps == bps)
    }

    /// The lowest mandatory rate: what EIFS assumes an ACK is sent at.
    pub fn lowest(self) -> Mode {
        self.modes()[0]
    }

    /// aSlotTime: 20 µs for DSSS and ERP with long slots, 9 µs for OFDM.
    pub fn slot(self) -> Duration {
        match self {
            Standard::B | Standard::G => Duration::from_micros(20),
            Standard::A => Duration::from_micros(9),
        }
    }

    /// aSIFSTime: 10 µs at 2.4 GHz, 16 µs for OFDM at 5 GHz.
    pub fn sifs(self) -> Duration {
        match self {
            Standard::B | Standard::G => Duration::from_micros(10),
            Standard::A => Duration::from_micros(16),
        }
    }

    /// aCWmin: 31 slots for DSSS, 15 for OFDM; aCWmax is 1023 for both.
    pub fn cw_min(self) -> u32 {
        match self {
            Standard::B => 31,
            Standard::A | Standard::G => 15,
        }
    }

    /// Bandwidth over which thermal noise is counted: 22 MHz for DSSS, 20 MHz for OFDM.
    pub fn bandwidth_hz(self) -> f64 {
        match self {
            Standard::B => 22e6,
            Standard::A | Standard::G => 20e6,
        }
    }
}

/// Bytes a data frame adds to its body: a 24-byte MAC header, an 8-byte
/// LLC/SNAP header and a 4-byte FCS.
pub const DATA_OVERHEAD: u32 = 36;
/// Control frames, FCS included.
pub const ACK_BYTES: u32 = 14;
pub const CTS_BYTES: u32 = 14;
pub const RTS_BYTES: u32 = 20;

/// The timings of one channel.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Phy {
    pub standard: Standard,
    pub preamble: Preamble,
    pub slot: Duration,
    pub sifs: Duration,
}

impl Phy {
    /// DIFS = SIFS + 2 slots.
    pub fn difs(&self) -> Duration {
        self.sifs + self.slot + self.slot
    }

    /// EIFS = SIFS + DIFS + the time of an ACK at the lowest mandatory rate
    /// with a long preamble (802.11-2016 10.3.2.3.7).
    pub fn eifs(&self) -> Duration {
        let long = Phy { preamble: Preamble::Long, ..*self };
        self.sifs + self.difs() + long.duration(self.standard.lowest(), ACK_BYTES)
    }

    /// The PLCP preamble and header of a frame at `mode`.
    pub fn preamble_and_header(&self, mode: Mode) -> Duration {
        match mode.modulation {
            Modulation::Ofdm { .. } => Duration::from_micros(20),
            Modulation::Dbpsk => Duration::from_micros(192),
            _ if self.preamble == Preamble::Short => Duration::from_micros(96),
            _ => Duration::from_micros(192),
        }
    }

    /// How long `bytes` of MPDU occupy the air at `mode`: the PLCP preamble
    /// and header, then the payload, rounded up to whole microseconds
    /// (DSSS: the LENGTH field counts microseconds) or OFDM symbols of
    /// 4 µs holding 16 service bits, the data and 6 tail bits; ERP-OFDM adds
    /// a 6 µs signal extension.
    pub fn duration(&self, mode: Mode, bytes: u32) -> Duration {
        let bits = 8 * bytes as u64;
        let payload = match mode.modulation {
            Modulation::Ofdm { data_bits_per_symbol, .. } => {
                let symbols = (16 + bits + 6).div_ceil(data_bits_per_symbol as u64);
                let extension = if self.standard == Standard::G { 6 } else { 0 };
                Duration::from_micros(4 * symbols + extension)
            }
            _ => Duration::from_micros((bits * 1_000_000).div_ceil(mode.bps)),
        };
        self.preamble_and_header(mode) + payload
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn phy(standard: Standard, preamble: Preamble) -> Phy {
        Phy { standard, preamble, slot: standard.slot(), sifs: standard.sifs() }
    }

    #[test]
    fn dsss_durations_follow_the_plcp_and_the_length_field() {
        let b = phy(Standard::B, Preamble::Long);
        let at = |mbps: f64| Standard::B.mode((mbps * 1e6) as u64).unwrap();
        // 1536 bytes at 11 Mbit/s: 12288 bits / 11 = 1117.09 µs, rounded up, after 192 µs.
        assert_eq!(b.duration(at(11.0), 1536), Duration::from_micros(192 + 1118));
        // An ACK at 1 Mbit/s: 112 µs after 192 µs.
        assert_eq!(b.duration(at(1.0), ACK_BYTES), Duration::from_micros(304));
        assert_eq!(b.duration(at(2.0), ACK_BYTES), Duration::from_micros(248));
        let short = phy(Standard::B, Preamble::Short);
        assert_eq!(short.duration(at(11.0), ACK_BYTES), Duration::from_micros(96 + 11));
        assert_eq!(short.duration(at(1.0), ACK_BYTES), Duration::from_micros(304), "no short preamble at 1 Mbit/s");
        assert_eq!(b.difs(), Duration::from_micros(50));
        assert_eq!(b.eifs(), Duration::from_micros(10 + 50 + 304));
    }

    #[test]
    fn ofdm_durations_count_whole_symbols() {
        let a = phy(Standard::A, Preamble::Long);
        let at = |mbps: u64| Standard::A.mode(mbps * 1_000_000).unwrap();
        // An ACK at 6 Mbit/s: 16 + 112 + 6 = 134 bits in symbols of 24: 6 symbols, 24 µs, after 20 µs.
        assert_eq!(a.duration(at(6), ACK_BYTES), Duration::from_micros(44));
        // 1536 bytes at 54 Mbit/s: 12310 bits / 216 = 56.99, so 57 symbols.
        assert_eq!(a.duration(at(54), 1536), Duration::from_micros(20 + 4 * 57));
        assert_eq!(a.difs(), Duration::from_micros(34));
        assert_eq!(a.eifs(), Duration::from_micros(16 + 34 + 44));
        let g = phy(Standard::G, Preamble::Long);
        assert_eq!(g.duration(at(6), ACK_BYTES), Duration::from_micros(50), "6 µs signal extension");
        assert_eq!(g.difs(), Duration::from_micros(50));
    }

    #[test]
    fn every_standard_names_its_rates() {
        assert!(Standard::B.mode(5_500_000).is_some());
        assert!(Standard::B.mode(6_000_000).is_none());
        assert_eq!(Standard::G.modes().len(), 8);
        assert_eq!(Standard::A.lowest().bps, 6_000_000);
    }
}
