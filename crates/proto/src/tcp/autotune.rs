//! Linux's receive-buffer autotuning (`net.ipv4.tcp_moderate_rcvbuf`, 6.18):
//! the window a receiver advertises, from a buffer that grows with what the
//! application reads and with what is held out of order.
//!
//! Linux sizes the window from memory, not from payload: each received
//! segment is charged its `truesize` (the buffer it arrived in and its
//! `sk_buff`), and `scaling_ratio`, payload per byte of memory in 1/256ths,
//! turns buffer space into window and back (`tcp_win_from_space`,
//! `tcp_space_from_win`). What this follows, function by function:
//!
//! * `tcp_select_initial_window`: the first window is the buffer's space at
//!   the default ratio of one half, in whole segments, at most 65,535 bytes.
//! * `tcp_measure_rcv_mss` and `tcp_set_window_clamp`: the first full
//!   segment sets the ratio from its length and truesize; the window clamp
//!   follows it, and `rcv_ssthresh` with it when it falls.
//! * `tcp_grow_window`: each data segment, in order or not, lets the
//!   advertised window (`rcv_ssthresh`) grow by two segments, as far as the
//!   clamp and the free buffer allow.
//! * `tcp_rcv_space_adjust` and `tcp_rcvbuf_grow`: once per receiver RTT,
//!   if the application read more than in the last measure, the buffer
//!   grows to twice that, plus twice the growth since (slow start), plus
//!   the span held out of order; each out-of-order segment grows it the
//!   same way without a new measure. The clamp follows the buffer.
//! * `tcp_rcv_rtt_measure_ts` and `tcp_rcv_rtt_measure`: the receiver's RTT
//!   from echoed timestamps, or one window's worth of data without them,
//!   taking at once any sample below the estimate (6.16's "always seek
//!   minimal rtt") and smoothing larger timestamp samples by 1/8.
//! * `__tcp_select_window` and `tcp_select_window`: the window is the free
//!   buffer, at most `rcv_ssthresh`, rounded up to the window scale's unit,
//!   and the right edge never moves left.
//!
//! The application is assumed to read at once (as iperf3 does): only data
//! held out of order keeps memory, and what a segment delivers in order
//! until its ACK has left, which it does before the application is woken.
//! Linux's memory-pressure paths are not modelled.

use super::TsClock;
use crate::time::{Duration, Instant};

/// `TCP_RMEM_TO_WIN_SCALE`: `scaling_ratio` is in 1/256ths.
const RATIO_SHIFT: u32 = 8;
/// `TCP_DEFAULT_SCALING_RATIO`: one half, until the first full segment.
const DEFAULT_RATIO: u64 = 1 << (RATIO_SHIFT - 1);
/// `TCP_MSS_DEFAULT`: the receiver's MSS estimate before any data.
const MSS_DEFAULT: u64 = 536;
/// `TCP_INIT_CWND`: the first measure expects this many segments per RTT.
const INIT_CWND: u64 = 10;
/// Segments below this length do not grow the window (`tcp_event_data_recv`).
const GROW_MIN_LEN: u64 = 128;

/// The receive buffer of one connection and the window it advertises.
#[derive(Clone, Debug)]
pub struct Autotune {
    /// `sk_rcvbuf`: the buffer, bytes of memory.
    rcvbuf: u64,
    /// `tcp_rmem[2]`: the most it may grow to.
    rcvbuf_max: u64,
    /// Memory one received segment takes (its `truesize`).
    truesize: u64,
    /// `scaling_ratio`, payload per byte of memory in 1/256ths.
    ratio: u64,
    /// The receiver's MSS estimate (`icsk_ack.rcv_mss`); the ratio is set when it changes.
    rcv_mss: u64,
    /// The sender's full segment (`advmss`).
    mss: u64,
    window_clamp: u64,
    rcv_ssthresh: u64,
    /// `rcvq_space`: bytes read in the last measure, where and when it began.
    space: u64,
    space_seq: u64,
    space_time: Instant,
    /// `rcv_rtt_est`: the receiver's RTT, and the per-window measure's mark.
    rtt: Option<Duration>,
    rtt_seq: Option<u64>,
    rtt_time: Instant,
    /// The last echoed timestamp a sample was taken from (`rcv_rtt_last_tsecr`).
    last_echo: Option<u32>,
    /// The receiving end's timestamp clock, which the echoes read.
    clock: TsClock,
    /// The last window advertised and `rcv_nxt` when it was (`rcv_wnd`, `rcv_wup`).
    rcv_wnd: u64,
    rcv_wup: u64,
    /// One unit of the scaled window field.
    unit: u64,
}

impl Autotune {
    /// A buffer of `rcvbuf` bytes that may grow to `rcvbuf_max`, for segments
    /// of `mss` payload bytes that each take `truesize` bytes of memory, with
    /// windows in units of `1 << window_scale`, timing echoes of `clock`.
    pub fn new(rcvbuf: u64, rcvbuf_max: u64, truesize: u64, mss: u64, window_scale: u8, clock: TsClock) -> Autotune {
        let mut a = Autotune {
            rcvbuf,
            rcvbuf_max: rcvbuf_max.max(rcvbuf),
            truesize: truesize.max(1),
            ratio: DEFAULT_RATIO,
            rcv_mss: MSS_DEFAULT.min(mss),
            mss,
            window_clamp: 0,
            rcv_ssthresh: 0,
            space: 0,
            space_seq: 0,
            space_time: Instant::ZERO,
            rtt: None,
            rtt_seq: None,
            rtt_time: Instant::ZERO,
            last_echo: None,
            clock,
            rcv_wnd: 0,
            rcv_wup: 0,
            unit: 1 << window_scale,
        };
        a.window_clamp = a.win_from_space(rcvbuf);
        let window = (a.window_clamp / mss * mss).min(u16::MAX as u64);
        a.rcv_ssthresh = window;
        a.rcv_wnd = window;
        a.space = a.rcv_ssthresh.min(INIT_CWND * mss);
        a
    }

    /// The window scale the handshake settled.
    pub fn set_window_scale(&mut self, window_scale: u8) {
        self.unit = 1 << window_scale;
    }

    /// The window of the SYN-ACK, unscaled.
    pub fn initial_window(&self) -> u64 {
        self.rcv_wnd
    }

    /// The connection is open (`tcp_init_buffer_space`): the first measure starts.
    pub fn on_established(&mut self, now: Instant, rcv_nxt: u64) {
        self.space_seq = rcv_nxt;
        self.space_time = now;
    }

    /// The right edge of the last window advertised: data beyond it is refused.
    pub fn right_edge(&self) -> u64 {
        self.rcv_wup + self.rcv_wnd
    }

    fn win_from_space(&self, space: u64) -> u64 {
        (space * self.ratio) >> RATIO_SHIFT
    }

    fn space_from_win(&self, win: u64) -> u64 {
        (win << RATIO_SHIFT) / self.ratio
    }

    /// Window room the free buffer gives (`tcp_space`), with `held` bytes held out of order.
    fn free_window(&self, held: u64) -> u64 {
        let held_memory = held.div_ceil(self.mss) * self.truesize;
        self.win_from_space(self.rcvbuf.saturating_sub(held_memory))
    }

    /// A data segment of `len` bytes arrived at `now`, in order or held
    /// above a hole, echoing `echo` (micros, as sent); `held` is the buffer after it.
    pub fn on_data(&mut self, now: Instant, len: u64, echo: Option<u32>, in_order: bool, rcv_nxt: u64, held: Held) {
        if let Some(echo) = echo {
            self.measure_rtt_by_timestamp(now, len, echo);
        }
        if in_order {
            self.measure_mss(len);
            self.measure_rtt_by_window(now, rcv_nxt);
        }
        if len >= GROW_MIN_LEN {
            self.grow_window(held);
        }
        if !in_order {
            // `tcp_data_queue_ofo`: provision for what is held, without a new measure.
            self.grow_buffer(self.space, rcv_nxt, held);
        }
    }

    /// `tcp_measure_rcv_mss`: a segment longer than the estimate sets the
    /// estimate and, if its length differs, the ratio and the clamp.
    fn measure_mss(&mut self, len: u64) {
        if len < self.rcv_mss {
            return;
        }
        if len != self.rcv_mss {
            let ratio = ((len << RATIO_SHIFT) / self.truesize).clamp(1, 255);
            if ratio != self.ratio {
                self.ratio = ratio;
                self.set_window_clamp(self.win_from_space(self.rcvbuf));
                self.space = self.space.min(self.window_clamp);
            }
        }
        self.rcv_mss = len.min(self.mss);
    }

    /// `tcp_set_window_clamp`: a falling clamp pulls `rcv_ssthresh` down
    /// with it; a rising one lets it reach the current window.
    fn set_window_clamp(&mut self, clamp: u64) {
        let old = self.window_clamp;
        self.window_clamp = clamp;
        if clamp < old {
            self.rcv_ssthresh = self.rcv_ssthresh.min(clamp);
        } else {
            self.rcv_ssthresh = self.rcv_ssthresh.max(self.rcv_wnd.min(clamp));
        }
    }

    fn measure_rtt_by_timestamp(&mut self, now: Instant, len: u64, echo: u32) {
        if echo == 0 || self.last_echo == Some(echo) {
            return;
        }
        self.last_echo = Some(echo);
        if len < self.rcv_mss {
            return;
        }
        if let Some(sample) = self.clock.since(now, echo).filter(|s| s.as_nanos() > 0) {
            self.update_rtt(sample, false);
        }
    }

    /// `tcp_rcv_rtt_measure`: the time one window's worth of data takes.
    fn measure_rtt_by_window(&mut self, now: Instant, rcv_nxt: u64) {
        if let Some(seq) = self.rtt_seq {
            if rcv_nxt < seq {
                return;
            }
            self.update_rtt(now.saturating_since(self.rtt_time), true);
        }
        self.rtt_seq = Some(rcv_nxt + self.rcv_wnd.max(1));
        self.rtt_time = now;
    }

    /// `tcp_rcv_rtt_update`: a smaller sample is taken at once; a larger
    /// one smooths the estimate by 1/8, unless it came from a whole window,
    /// which overstates the RTT whenever the sender is not window-limited.
    fn update_rtt(&mut self, sample: Duration, per_window: bool) {
        self.rtt = match self.rtt {
            Some(rtt) if sample >= rtt && per_window => Some(rtt),
            Some(rtt) if sample >= rtt => Some(Duration(rtt.0 - rtt.0 / 8 + sample.0 / 8)),
            _ => Some(sample),
        };
    }

    /// `tcp_grow_window`: two segments more, within the clamp and the free buffer.
    fn grow_window(&mut self, held: Held) {
        let room = self.window_clamp.min(self.free_window(held.bytes)).saturating_sub(self.rcv_ssthresh);
        self.rcv_ssthresh += room.min(2 * self.mss);
    }

    /// The application has read up to `read`, of the data in order up to
    /// `rcv_nxt` (`tcp_rcv_space_adjust`, after each segment it copies):
    /// once per RTT, a buffer for twice what it read, less what is still
    /// waiting to be read.
    pub fn on_read(&mut self, now: Instant, read: u64, rcv_nxt: u64, held: Held) {
        // No estimate, or one of zero: no measure (`rcv_rtt_est.rtt_us == 0`).
        let Some(rtt) = self.rtt.filter(|r| r.0 > 0) else { return };
        if now.saturating_since(self.space_time) < rtt {
            return;
        }
        let copied = (read - self.space_seq).saturating_sub(rcv_nxt - read);
        if copied > self.space {
            self.grow_buffer(copied, rcv_nxt, held);
        }
        self.space_seq = read;
        self.space_time = now;
    }

    /// `tcp_rcvbuf_grow`: room for twice `copied` a round trip, twice more
    /// for the sender's growth since the last measure (it doubles per RTT in
    /// slow start), and what is held out of order.
    fn grow_buffer(&mut self, copied: u64, rcv_nxt: u64, held: Held) {
        let previous = std::mem::replace(&mut self.space, copied).max(1);
        let mut window = copied * 2;
        window += 2 * (window as u128 * copied.saturating_sub(previous) as u128 / previous as u128) as u64;
        window += held.end.saturating_sub(rcv_nxt);
        let rcvbuf = self.space_from_win(window).min(self.rcvbuf_max);
        if rcvbuf > self.rcvbuf {
            self.rcvbuf = rcvbuf;
            self.window_clamp = self.win_from_space(rcvbuf);
        }
    }

    /// The window the buffer allows now (`__tcp_select_window`).
    fn offer(&self, held: Held) -> u64 {
        let allowed = self.win_from_space(self.rcvbuf);
        let full = self.window_clamp.min(allowed);
        let mut free = self.free_window(held.bytes);
        if free < full / 2 {
            // Linux would offer a zero window below a sixteenth of the
            // buffer, but the right edge it keeps is never below that here:
            // the application reads at once, so only data inside it is held.
            free = free / self.unit * self.unit;
        }
        free.min(self.rcv_ssthresh).div_ceil(self.unit) * self.unit
    }

    /// Whether an ACK now would offer less than the last window did: Linux
    /// then leaves the ACK of a second segment to the reader, which sends
    /// it once it has copied them and freed their memory
    /// (`__tcp_ack_snd_check`, `tcp_cleanup_rbuf`).
    pub fn ack_waits_for_read(&self, held: Held) -> bool {
        self.offer(held) < self.rcv_wnd
    }

    /// The window an ACK sent now advertises (`__tcp_select_window`, then
    /// `tcp_select_window`, which never pulls the right edge back).
    pub fn select_window(&mut self, rcv_nxt: u64, held: Held) -> u64 {
        let window = self.offer(held);
        let current = self.right_edge().saturating_sub(rcv_nxt);
        let window = if window < current { current.div_ceil(self.unit) * self.unit } else { window };
        self.rcv_wnd = window.min(u16::MAX as u64 * self.unit);
        self.rcv_wup = rcv_nxt;
        self.rcv_wnd
    }

    /// The buffer, bytes of memory.
    pub fn rcvbuf(&self) -> u64 {
        self.rcvbuf
    }

    /// The most the window may grow to now (`rcv_ssthresh`).
    pub fn rcv_ssthresh(&self) -> u64 {
        self.rcv_ssthresh
    }

    /// The bytes read in the last measure (`rcvq_space.space`).
    pub fn space(&self) -> u64 {
        self.space
    }

    /// The receiver's RTT estimate, once it has one.
    pub fn rtt(&self) -> Option<Duration> {
        self.rtt
    }
}

/// What a receive buffer holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Held {
    /// Bytes taking memory: those held above a hole, and those delivered
    /// in order that the application has not read yet.
    pub bytes: u64,
    /// The end of the highest data held above a hole; `rcv_nxt` if none.
    pub end: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    // The figures below are the kernel's own: `ss -tim` on a 6.18 receiver
    // (iperf3 over the emulated chain, 1000-byte segments, `tcp_rmem[1]` =
    // 131072, window scale 10), where each segment held took 2304 bytes.
    const MSS: u64 = 1000;
    const TRUESIZE: u64 = 2304;

    fn buffer() -> Autotune {
        let mut a = Autotune::new(131_072, 4096 * TRUESIZE, TRUESIZE, MSS, 10, TsClock::default());
        a.on_established(Instant::from_secs_f64(1.0), 0);
        a
    }

    fn held(bytes: u64, end: u64) -> Held {
        Held { bytes, end }
    }

    fn at(s: f64) -> Instant {
        Instant::from_secs_f64(s)
    }

    #[test]
    fn the_first_window_is_half_the_buffer_in_whole_segments() {
        // 131072 / 2 = 65536, 65 segments: the SYN-ACK's 65000.
        assert_eq!(buffer().initial_window(), 65_000);
    }

    #[test]
    fn the_first_full_segment_sets_the_ratio_and_pulls_the_window_down() {
        let mut a = buffer();
        a.on_data(at(2.0), MSS, None, true, MSS, held(MSS, MSS));
        // 1000 * 256 / 2304 = 111; 131072 * 111 / 256 = 56832.
        assert_eq!(a.rcv_ssthresh(), 56_832);
    }

    /// The buffer after the kernel's first measure: 18000 bytes read in a
    /// round trip, 7000 held above a hole.
    fn grown() -> Autotune {
        let mut a = buffer();
        let echo = TsClock::default().read(at(1.0));
        a.on_data(at(2.05), MSS, Some(echo), true, MSS, held(0, MSS));
        a.on_read(at(3.2), 18_000, 18_000, held(4 * MSS, 25_000));
        a
    }

    #[test]
    fn each_segment_lets_the_window_grow_by_two_segments() {
        let mut a = buffer();
        a.on_data(at(2.0), MSS, None, true, MSS, held(0, MSS));
        a.on_data(at(2.1), MSS, None, false, MSS, held(MSS, 3 * MSS));
        // The clamp is the whole 131072-byte buffer: no room.
        assert_eq!(a.rcv_ssthresh(), 56_832);
        let mut a = grown();
        a.on_data(at(3.3), MSS, None, false, 18_000, held(5 * MSS, 26_000));
        assert_eq!(a.rcv_ssthresh(), 58_832);
        a.on_data(at(3.4), MSS, None, false, 18_000, held(6 * MSS, 27_000));
        assert_eq!(a.rcv_ssthresh(), 60_832);
    }

    #[test]
    fn a_read_of_more_than_the_last_measure_grows_the_buffer() {
        let mut a = buffer();
        let echo = TsClock::default().read(at(1.0));
        a.on_data(at(2.05), MSS, Some(echo), true, MSS, held(0, MSS));
        assert_eq!(a.rtt(), Some(Duration::from_millis(1050)));
        assert_eq!(a.space(), 10 * MSS);
        // 18000 read in the next measure, 7000 held above a hole:
        // 2 * 18000 + 2 * (36000 * 8000 / 10000) + 7000 = 100600 of window,
        // 100600 * 256 / 111 = 232014 bytes of buffer, 100599 of clamp.
        let mut a = grown();
        assert_eq!((a.space(), a.rcvbuf()), (18_000, 232_014));
        for i in 0..30 {
            a.on_data(at(3.3), MSS, None, true, 18_000, held(0, 18_000 + i));
        }
        assert_eq!(a.rcv_ssthresh(), 100_599);
    }

    #[test]
    fn the_ack_of_a_pair_waits_for_the_read_when_their_memory_would_shrink_the_window() {
        // Seed 313 of the emulated chain: the kernel offered 57344 after a
        // pair of segments, the whole buffer's window, rounded up to its
        // unit: its reader had copied them and freed their memory first.
        // With the pair's memory (2 x 2304) the buffer would offer
        // (131072 - 4608) * 111 / 256 = 54833, 55296 rounded up: less than
        // the 57344 last offered, so the ACK waits for the read.
        let mut a = buffer();
        a.on_data(at(2.0), MSS, None, true, MSS, held(0, MSS));
        a.rcv_wnd = 57_344;
        assert!(a.ack_waits_for_read(held(2 * MSS, 3 * MSS)));
        assert!(!a.ack_waits_for_read(held(0, 3 * MSS)), "read: 56832 rounds up to 57344");
    }

    #[test]
    fn a_measure_counts_only_what_was_read() {
        // Seed 310: a hole filled, releasing 28 segments at once. Linux
        // measures after the first segment it copies: 9000 read since the
        // last measure, 27000 still waiting, so no growth, and the measure
        // starts again there.
        let mut a = buffer();
        let echo = TsClock::default().read(at(1.0));
        a.on_data(at(2.05), MSS, Some(echo), true, MSS, held(0, MSS));
        a.on_read(at(2.05), 6_000, 6_000, held(0, 6_000));
        a.on_read(at(3.2), 15_000, 42_000, held(27_000, 42_000));
        assert_eq!((a.space(), a.rcvbuf()), (10 * MSS, 131_072));
        // The rest of the read falls within the new measure's round trip.
        a.on_read(at(3.2), 42_000, 42_000, held(0, 42_000));
        assert_eq!((a.space(), a.rcvbuf()), (10 * MSS, 131_072));
    }

    #[test]
    fn a_measure_lasts_at_least_one_rtt() {
        let mut a = buffer();
        let echo = TsClock::default().read(at(1.0));
        a.on_data(at(2.0), MSS, Some(echo), true, MSS, held(0, MSS));
        a.on_read(at(1.5), 50_000, 50_000, held(0, 50_000));
        assert_eq!((a.space(), a.rcvbuf()), (10 * MSS, 131_072));
        a.on_read(at(2.0), 50_000, 50_000, held(0, 50_000));
        assert_eq!(a.space(), 50_000);
        assert!(a.rcvbuf() > 131_072);
    }

    #[test]
    fn the_window_grows_no_further_than_the_free_buffer() {
        let mut a = grown();
        // Eleven segments held: (232014 - 11 * 2304) * 111 / 256 = 89610.
        for _ in 0..30 {
            a.on_data(at(3.3), MSS, None, false, 18_000, held(11 * MSS, 40_000));
        }
        assert_eq!(a.rcv_ssthresh(), 89_610);
    }

    #[test]
    fn the_right_edge_never_moves_left_and_windows_fill_whole_units() {
        let mut a = buffer();
        a.on_data(at(2.0), MSS, None, true, MSS, held(0, MSS));
        // The SYN-ACK offered 65000: its edge holds while it lies further out.
        assert_eq!(a.select_window(MSS, held(0, MSS)), 64_512);
        // Past it, 56832 rounded up to the 1024-byte unit of window scale 10.
        assert_eq!(a.select_window(10 * MSS, held(0, 10 * MSS)), 57_344);
        assert_eq!(a.right_edge(), 67_344);
        // Thirty segments held leave a free buffer of 26862 bytes, less
        // than what is left of the window offered (56344): that stays,
        // rounded up to whole units.
        assert_eq!(a.select_window(11 * MSS, held(30 * MSS, 50_000)), 57_344);
        assert_eq!(a.right_edge(), 68_344);
    }

    #[test]
    fn without_timestamps_the_rtt_is_the_time_a_window_takes() {
        let mut a = buffer();
        a.on_data(at(1.0), MSS, None, true, MSS, held(0, MSS));
        assert_eq!(a.rtt(), None);
        // The measure ends once rcv_nxt passes the window offered (65000) beyond its start.
        a.on_data(at(1.5), MSS, None, true, 60_000, held(0, 60_000));
        assert_eq!(a.rtt(), None);
        a.on_data(at(2.0), MSS, None, true, 67_000, held(0, 67_000));
        assert_eq!(a.rtt(), Some(Duration::from_secs(1)));
        // A longer window does not raise the estimate; a shorter one lowers it.
        a.on_data(at(4.0), MSS, None, true, 140_000, held(0, 140_000));
        assert_eq!(a.rtt(), Some(Duration::from_secs(1)));
        a.on_data(at(4.5), MSS, None, true, 210_000, held(0, 210_000));
        assert_eq!(a.rtt(), Some(Duration::from_millis(500)));
    }

    #[test]
    fn a_larger_timestamp_sample_moves_the_estimate_an_eighth_of_the_way() {
        let mut a = buffer();
        a.on_data(at(2.0), MSS, Some(TsClock::default().read(at(1.0))), true, MSS, held(0, MSS));
        a.on_data(at(3.8), MSS, Some(TsClock::default().read(at(2.0))), true, 2 * MSS, held(0, 2 * MSS));
        assert_eq!(a.rtt(), Some(Duration::from_millis(1100)));
        // The same echo again gives no sample.
        a.on_data(at(5.0), MSS, Some(TsClock::default().read(at(2.0))), true, 3 * MSS, held(0, 3 * MSS));
        assert_eq!(a.rtt(), Some(Duration::from_millis(1100)));
    }
}
