//! Under random loss in both directions, for every variant and option, the
//! receiver delivers every byte exactly once and in order, and the sender
//! finishes a sized transfer.

use ncmesh_proto::tcp::{TcpConfig, Variant};
use ncmesh_proto::testing::{drop_bernoulli, Link, Pair};
use ncmesh_proto::time::{Duration, Instant};
use proptest::prelude::*;

const MSS: u64 = 1000;
const VARIANTS: [Variant; 6] =
    [Variant::Reno, Variant::NewReno, Variant::Sack, Variant::Vegas, Variant::Cubic, Variant::Bbr];

#[derive(Clone, Debug)]
struct Case {
    variant: Variant,
    sack: bool,
    delayed_ack: bool,
    timestamps: bool,
    initial_cwnd: u32,
    rcv_window: u32,
    loss_fwd: f64,
    loss_rev: f64,
    rate: Option<u64>,
    seed: u64,
    first: u64,
    second: u64,
    /// Initial sequence numbers of sender and receiver: near 2^32 the stream wraps.
    isns: (u32, u32),
}

fn case() -> impl Strategy<Value = Case> {
    (
        (0..VARIANTS.len(), any::<bool>(), any::<bool>(), any::<bool>(), 1u32..10, 4u32..100),
        (0.0..0.2f64, 0.0..0.2f64, prop::option::of(1_000_000u64..20_000_000), any::<u64>()),
        (
            1u64..300_000,
            0u64..100_000,
            prop_oneof![Just(0u32), u32::MAX - 200_000..=u32::MAX, any::<u32>()],
            any::<u32>(),
        ),
    )
        .prop_map(
            |(
                (v, sack, delayed_ack, timestamps, initial_cwnd, rcv_window),
                (lf, lr, rate, seed),
                (first, second, isn, peer_isn),
            )| {
                Case {
                    variant: VARIANTS[v],
                    sack,
                    delayed_ack,
                    timestamps,
                    initial_cwnd,
                    rcv_window,
                    loss_fwd: lf,
                    loss_rev: lr,
                    rate,
                    seed,
                    first,
                    second,
                    isns: (isn, peer_isn),
                }
            },
        )
}

fn run(c: &Case) {
    let config = TcpConfig {
        variant: c.variant,
        sack: c.sack,
        delayed_ack: c.delayed_ack,
        timestamps: c.timestamps,
        initial_cwnd: c.initial_cwnd,
        rcv_window: c.rcv_window,
        max_rto: Duration::from_secs(2),
        ..TcpConfig::default()
    };
    let mut fwd = Link::new(Duration::from_millis(20)).with_drop(drop_bernoulli(c.loss_fwd, c.seed));
    if let Some(r) = c.rate {
        fwd = fwd.with_rate(r).with_queue_limit(30);
    }
    let rev = Link::new(Duration::from_millis(20)).with_drop(drop_bernoulli(c.loss_rev, c.seed ^ 0x5555));
    let mut p = Pair::with_isns(&config, c.isns.0, c.isns.1, fwd, rev);
    let deadline = Instant::from_secs_f64(100_000.0);

    p.push(c.first);
    assert!(p.run_to_finish(deadline), "first part unfinished: {:?}", p.sender);
    assert_eq!(p.delivered_bytes, c.first);
    p.push(c.second);
    assert!(p.run_to_finish(deadline), "second part unfinished: {:?}", p.sender);

    let total = c.first + c.second;
    assert_eq!(p.delivered_bytes, total);
    assert_eq!(p.receiver.rcv_nxt(), total);
    assert_eq!(p.sender.snd_una(), total);
    assert_eq!(p.sender.bytes_in_flight(), 0);
    assert_eq!(p.sender.poll_timeout(), None);
    // Deliveries are in stream order, each where the last one ended.
    let mut expected = 0;
    for (_, d) in &p.deliveries {
        assert_eq!(d.offset, expected);
        assert!(!d.data.is_empty());
        expected += d.data.len() as u64;
    }
    // Segments are full-sized except the last of each push.
    for s in &p.sent {
        let end = s.seq + s.len as u64;
        assert!(s.len as u64 == MSS || end == c.first || end == total, "{s:?}");
    }
    // Nothing arrives after the stream is finished.
    p.run_until(deadline, |_| false);
    assert_eq!(p.delivered_bytes, total);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn every_byte_exactly_once_in_order(c in case()) {
        run(&c);
    }
}

#[test]
fn heavy_loss_with_every_variant() {
    for (i, variant) in VARIANTS.into_iter().enumerate() {
        for sack in [false, true] {
            run(&Case {
                variant,
                sack,
                delayed_ack: i % 2 == 0,
                timestamps: sack,
                initial_cwnd: 4,
                rcv_window: 64,
                loss_fwd: 0.3,
                loss_rev: 0.3,
                rate: Some(5_000_000),
                seed: i as u64 * 7 + sack as u64,
                first: 500_000,
                second: 1,
                isns: (u32::MAX - 250_000, i as u32),
            });
        }
    }
}

/// A case the property found: a paced sender held a segment back, then the
/// ACKs left it nothing to send, and its pacing timer stayed armed.
#[test]
fn a_paced_sender_with_nothing_left_to_send_keeps_no_timer() {
    run(&Case {
        variant: Variant::Bbr,
        sack: false,
        delayed_ack: true,
        timestamps: false,
        initial_cwnd: 5,
        rcv_window: 20,
        loss_fwd: 0.16898714737053389,
        loss_rev: 0.10977421633143603,
        rate: Some(2_754_281),
        seed: 15133501649244434696,
        first: 110_001,
        second: 83_001,
        isns: (0, 0),
    });
}
