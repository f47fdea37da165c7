//! The protocols ncmesh ships, registered: a new protocol adds one line.

use crate::scheme::Registry;
use crate::{honc, tcpforward, tcpnc};

impl Registry {
    /// Every built-in scheme and queue discipline.
    pub fn builtin() -> Registry {
        let mut r = Registry::empty();
        r.register::<tcpnc::EndToEnd>().expect("built-in schemes are distinct");
        r.register::<tcpnc::HopByHop>().expect("built-in schemes are distinct");
        r.register::<honc::Honc>().expect("built-in schemes are distinct");
        r.register::<tcpforward::TcpForward>().expect("built-in schemes are distinct");
        r
    }
}
