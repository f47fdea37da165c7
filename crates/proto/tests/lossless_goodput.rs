//! Without loss and with a window larger than the path's
//! bandwidth-delay product, every variant keeps the bottleneck busy.

use ncmesh_proto::tcp::{TcpConfig, Variant, BASE_HEADER_BYTES};
use ncmesh_proto::testing::{Link, Pair};
use ncmesh_proto::time::{Duration, Instant};

const RATE: u64 = 10_000_000;
const MSS: u64 = 1000;

fn goodput_share(variant: Variant, delayed_ack: bool) -> f64 {
    // A 200 ms delayed-ACK timer against a 200 ms min_rto makes the last,
    // odd segment time out spuriously; Linux's 40 ms timer does not.
    let config = TcpConfig {
        variant,
        delayed_ack,
        delayed_ack_timeout: Duration::from_millis(40),
        rcv_window: 200,
        ..TcpConfig::default()
    };
    let fwd = Link::new(Duration::from_millis(10)).with_rate(RATE);
    let mut p = Pair::new(&config, fwd, Link::new(Duration::from_millis(10)));
    let total = 10_000 * MSS;
    p.push(total);
    assert!(p.run_to_finish(Instant::from_secs_f64(100.0)));
    assert_eq!(p.delivered_bytes, total);
    assert_eq!(p.sender.stats().retransmits, 0, "{variant:?} {delayed_ack}");
    let done = p.deliveries.last().unwrap().0.as_secs_f64();
    let goodput = total as f64 * 8.0 / done;
    // The payload's share of each full segment on the wire.
    let share = MSS as f64 / (MSS + BASE_HEADER_BYTES as u64) as f64;
    goodput / (RATE as f64 * share)
}

#[test]
fn every_variant_reaches_95_percent_of_the_payload_rate() {
    for variant in [Variant::Reno, Variant::NewReno, Variant::Sack, Variant::Vegas, Variant::Cubic, Variant::Bbr] {
        for delayed_ack in [false, true] {
            let g = goodput_share(variant, delayed_ack);
            assert!((0.95..=1.0).contains(&g), "{variant:?} delayed_ack={delayed_ack}: {g:.4}");
        }
    }
}
