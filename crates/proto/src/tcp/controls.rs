//! The algorithms by name: the one place that knows them all, so that
//! each algorithm depends on the trait and the trait on none of them.

use super::bbr::Bbr;
use super::config::{Control, SlowStartExit, TcpConfig};
use super::congestion::{CongestionControl, SlowStartWatch};
use super::cubic::Cubic;
use super::hystart::HyStart;
use super::hystart_pp::HyStartPlusPlus;
use super::reno::Reno;
use super::vegas::Vegas;

/// What watches slow start for an early exit, if the configuration asks:
/// Linux runs HyStart inside CUBIC only; HyStart++ serves any algorithm.
pub fn new_slow_start_watch(config: &TcpConfig) -> Option<Box<dyn SlowStartWatch>> {
    match config.slow_start_exit {
        SlowStartExit::HyStart if config.variant.control() == Control::Cubic => Some(Box::new(HyStart::new())),
        // BBR leaves Startup by its own test of the delivery rate.
        SlowStartExit::HyStartPlusPlus if config.variant.control() != Control::Bbr => {
            Some(Box::new(HyStartPlusPlus::new()))
        }
        _ => None,
    }
}

/// The algorithm a configuration names; `seed` feeds what it randomises.
pub fn new_control(config: &TcpConfig, seed: u64) -> Box<dyn CongestionControl> {
    match config.variant.control() {
        Control::Reno => Box::new(Reno::new(config.slow_start_limit, config.ca_counting)),
        Control::Vegas => Box::new(Vegas::new(config.vegas)),
        Control::Cubic => Box::new(Cubic::new(config.cubic).with_slow_start_limit(config.slow_start_limit)),
        Control::Bbr => Box::new(Bbr::new(config.mss as u64, config.initial_cwnd as u64, seed)),
    }
}
