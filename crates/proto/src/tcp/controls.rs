//! The algorithms by name: the one place that knows them all, so that
//! each algorithm depends on the trait and the trait on none of them.

use super::config::{Control, TcpConfig};
use super::congestion::CongestionControl;
use super::cubic::Cubic;
use super::reno::Reno;
use super::vegas::Vegas;

/// The algorithm a configuration names.
pub fn new_control(config: &TcpConfig) -> Box<dyn CongestionControl> {
    match config.variant.control() {
        Control::Reno => Box::new(Reno::new()),
        Control::Vegas => Box::new(Vegas::new(config.vegas)),
        Control::Cubic => Box::new(Cubic::new(config.cubic)),
    }
}
