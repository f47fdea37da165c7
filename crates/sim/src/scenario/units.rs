//! Quantities a person writes with a unit: "100ms", "1Mbps". A bare number
//! is in the base unit (seconds, bit/s).

use ncmesh_proto::Duration;
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::borrow::Cow;

/// A non-negative time: a number of seconds, or a string such as "100ms",
/// "1.5 s", "250us", "2min".
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Seconds(pub Duration);

/// A positive bit rate: bit/s, or a string such as "1Mbps", "54 Mbit/s", "100kbps".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rate(pub u64);

/// The longest time a scenario may give, in seconds (about 116 days). The
/// simulator's clock counts nanoseconds in a `u64` (584 years), and a run
/// adds times together (start, delays, timeouts); this bound keeps every sum
/// far from overflow, a rate times a time in bytes within a `u64` (with
/// [`MAX_RATE`]), and the default one-second probes within their
/// 10-million-sample cap.
pub const MAX_SECONDS: f64 = 1e7;

/// The highest rate a scenario may give, in bit/s (1 Tbit/s): with
/// [`MAX_SECONDS`], the bytes a rate carries over a run fit a `u64`.
pub const MAX_RATE: f64 = 1e12;

/// A number, or text with a unit, as written; a missing key or another type
/// is left to serde, so that its error names what is missing or found.
enum NumberOrText {
    Number(f64),
    Text(String),
}

struct NumberOrTextVisitor(&'static str);

impl serde::de::Visitor<'_> for NumberOrTextVisitor {
    type Value = NumberOrText;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
    fn visit_f64<E>(self, v: f64) -> Result<NumberOrText, E> {
        Ok(NumberOrText::Number(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<NumberOrText, E> {
        Ok(NumberOrText::Number(v as f64))
    }
    fn visit_u64<E>(self, v: u64) -> Result<NumberOrText, E> {
        Ok(NumberOrText::Number(v as f64))
    }
    fn visit_str<E>(self, v: &str) -> Result<NumberOrText, E> {
        Ok(NumberOrText::Text(v.to_string()))
    }
}

const TIME: &str = "a time: seconds as a number, or a string such as \"100ms\"";
const RATE: &str = "a rate: bit/s as a number, or a string such as \"1Mbps\"";

fn split_unit(text: &str) -> (&str, &str) {
    let text = text.trim();
    let end =
        text.find(|c: char| !(c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '+' | '-'))).unwrap_or(text.len());
    // "1e6" is a number but "1ms" must not swallow the 'm'; 'e' followed by a letter belongs to the unit.
    (text[..end].trim(), text[end..].trim())
}

fn parse_seconds(text: &str) -> Result<f64, String> {
    let (number, unit) = split_unit(text);
    let scale = match unit {
        "" | "s" | "sec" => 1.0,
        "ms" => 1e-3,
        "us" | "µs" => 1e-6,
        "ns" => 1e-9,
        "min" => 60.0,
        "h" => 3600.0,
        _ => return Err(format!("unknown time unit {unit:?} in {text:?}; use s, ms, us, ns, min or h")),
    };
    let value: f64 = number.parse().map_err(|_| format!("expected a time such as \"100ms\" or 0.1, found {text:?}"))?;
    Ok(value * scale)
}

fn parse_rate(text: &str) -> Result<f64, String> {
    let (number, unit) = split_unit(text);
    let scale = match unit.to_ascii_lowercase().as_str() {
        "" | "bps" | "bit/s" => 1.0,
        "kbps" | "kbit/s" => 1e3,
        "mbps" | "mbit/s" => 1e6,
        "gbps" | "gbit/s" => 1e9,
        _ => return Err(format!("unknown rate unit {unit:?} in {text:?}; use bps, kbps, Mbps or Gbps")),
    };
    let value: f64 = number.parse().map_err(|_| format!("expected a rate such as \"1Mbps\" or 1e6, found {text:?}"))?;
    Ok(value * scale)
}

impl<'de> Deserialize<'de> for Seconds {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let seconds = match d.deserialize_any(NumberOrTextVisitor(TIME))? {
            NumberOrText::Number(x) => x,
            NumberOrText::Text(t) => parse_seconds(&t).map_err(serde::de::Error::custom)?,
        };
        if !(seconds.is_finite() && seconds >= 0.0) {
            return Err(serde::de::Error::custom(format!("expected a non-negative time, found {seconds}")));
        }
        if seconds > MAX_SECONDS {
            return Err(serde::de::Error::custom(format!(
                "expected a time of at most {MAX_SECONDS:e} s (about 116 days), found {seconds:e} s"
            )));
        }
        Ok(Seconds(Duration::from_secs_f64(seconds)))
    }
}

impl<'de> Deserialize<'de> for Rate {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let bps = match d.deserialize_any(NumberOrTextVisitor(RATE))? {
            NumberOrText::Number(x) => x,
            NumberOrText::Text(t) => parse_rate(&t).map_err(serde::de::Error::custom)?,
        };
        if !(bps.is_finite() && bps >= 1.0) {
            return Err(serde::de::Error::custom(format!("expected a positive rate of at least 1 bit/s, found {bps}")));
        }
        if bps > MAX_RATE {
            return Err(serde::de::Error::custom(format!(
                "expected a rate of at most 1 Tbit/s ({MAX_RATE:e} bit/s), found {bps:e}"
            )));
        }
        Ok(Rate(bps.round() as u64))
    }
}

impl Serialize for Seconds {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(self.0.as_secs_f64())
    }
}

impl Serialize for Rate {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(self.0)
    }
}

impl JsonSchema for Seconds {
    fn schema_name() -> Cow<'static, str> {
        "Seconds".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A time: seconds as a number, or a string with a unit (s, ms, us, ns, min, h).",
            "anyOf": [
                {"type": "number", "minimum": 0, "maximum": MAX_SECONDS},
                {"type": "string", "pattern": "^\\s*[0-9.eE+-]+\\s*(s|sec|ms|us|µs|ns|min|h)?\\s*$"}
            ]
        })
    }
}

impl JsonSchema for Rate {
    fn schema_name() -> Cow<'static, str> {
        "Rate".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A bit rate: bit/s as a number, or a string with a unit (bps, kbps, Mbps, Gbps).",
            "anyOf": [
                {"type": "number", "minimum": 1, "maximum": MAX_RATE},
                {"type": "string", "pattern": "(?i)^\\s*[0-9.eE+-]+\\s*(bps|kbps|mbps|gbps|bit/s|kbit/s|mbit/s|gbit/s)?\\s*$"}
            ]
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_and_rates_parse_with_units() {
        assert_eq!(parse_seconds("100ms").unwrap(), 0.1);
        assert_eq!(parse_seconds(" 2 min ").unwrap(), 120.0);
        assert_eq!(parse_seconds("1e-3").unwrap(), 1e-3);
        assert!(parse_seconds("3 parsecs").is_err());
        assert_eq!(parse_rate("1Mbps").unwrap(), 1e6);
        assert_eq!(parse_rate("54 Mbit/s").unwrap(), 54e6);
        assert_eq!(parse_rate("2.5kbps").unwrap(), 2500.0);
        assert!(parse_rate("fast").is_err());
    }
}
