//! Linux's delayed-ACK engine (`net/ipv4/tcp_input.c` and `tcp_output.c`,
//! 6.x), which the `linux` ACK policy runs beside RFC 5681's rules: a
//! quick-ACK mode that acknowledges every segment at the start of the data
//! and after a spurious retransmission, and a delayed-ACK timeout (`ato`)
//! that follows the gaps between arriving segments.

use crate::time::{Duration, Instant};

/// `TCP_ATO_MIN`: the shortest delayed-ACK timeout, and where it starts.
pub const ATO_MIN: Duration = Duration::from_micros(40_000);
/// `TCP_MAX_QUICKACKS`.
pub const MAX_QUICKACKS: u32 = 16;

/// The receiver's `icsk_ack` state: `quick`, `ato` and `lrcvtime`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QuickAck {
    /// ACKs still to send at once.
    quick: u32,
    /// The delayed-ACK timeout; `None` until the first data segment.
    ato: Option<Duration>,
    last_data: Option<Instant>,
    /// `rcv_wnd / (2 rcv_mss)`: how many quick ACKs the window allows.
    window_segments: u32,
}

impl QuickAck {
    /// For a receive window of `window_segments` full segments.
    pub fn new(window_segments: u32) -> QuickAck {
        QuickAck { window_segments, ..QuickAck::default() }
    }

    /// `tcp_incr_quickack`: up to `max` quick ACKs, at least 2, at most
    /// half the window in segments.
    fn incr(&mut self, max: u32) {
        let quickacks = match self.window_segments / 2 {
            0 => 2,
            n => n,
        };
        self.quick = self.quick.max(quickacks.min(max));
    }

    /// `tcp_enter_quickack_mode`: data arrived that had been received
    /// before, so the sender is retransmitting: answer every segment.
    pub fn enter(&mut self) {
        self.incr(MAX_QUICKACKS);
        self.ato = Some(ATO_MIN);
    }

    /// `tcp_event_data_recv`: a data segment arrived at `now`; `rto` is
    /// this end's retransmission timeout, which bounds `ato` and marks idleness.
    pub fn on_data(&mut self, now: Instant, rto: Duration) {
        match (self.ato, self.last_data) {
            (Some(ato), Some(last)) => {
                let m = now.saturating_since(last);
                let half = Duration(ATO_MIN.0 / 2);
                let mut next = ato;
                if m <= half {
                    next = Duration(ato.0 / 2) + half;
                } else if m < ato {
                    next = Duration(ato.0 / 2) + m;
                    if next > rto {
                        next = rto;
                    }
                } else if m > rto {
                    self.incr(MAX_QUICKACKS);
                }
                self.ato = Some(next);
            }
            _ => {
                // The first data segment starts the engine in quick-ACK mode.
                self.incr(MAX_QUICKACKS);
                self.ato = Some(ATO_MIN);
            }
        }
        self.last_data = Some(now);
    }

    /// Every segment is acknowledged at once.
    pub fn in_quick_mode(&self) -> bool {
        self.quick > 0
    }

    /// `tcp_dec_quickack_mode`: an ACK left.
    pub fn on_ack_sent(&mut self) {
        self.quick = self.quick.saturating_sub(1);
    }

    /// `tcp_send_delayed_ack`: the timer's delay, `ato` at most `max`
    /// (`TCP_DELACK_MAX`) and, past 40 ms, at most the smoothed RTT.
    pub fn delay(&self, srtt: Option<Duration>, max: Duration) -> Duration {
        let ato = self.ato.unwrap_or(ATO_MIN);
        if ato <= ATO_MIN {
            return ato;
        }
        let cap = srtt.map_or(max, |r| r.max(ATO_MIN).min(max));
        ato.min(cap)
    }
}
