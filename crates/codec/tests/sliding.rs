//! Sliding-window RLNC as TCP/NC uses it: a lossy forward path, seen-based
//! acknowledgements that arrive late, and in-order delivery.

use ncmesh_codec::prng::SplitMix64;
use ncmesh_codec::rlnc::sliding::{SlidingDecoder, SlidingEncoder};
use ncmesh_codec::rlnc::{CodecError, Received};
use ncmesh_codec::Field;
use proptest::prelude::*;
use std::collections::VecDeque;

fn random_packets(rng: &mut SplitMix64, packets: usize, symbol_bytes: usize) -> Vec<Vec<u8>> {
    (0..packets)
        .map(|_| {
            let mut v = vec![0; symbol_bytes];
            rng.fill_bytes(&mut v);
            v
        })
        .collect()
}

/// What happened to one symbol that got through: where its window started,
/// its coefficients, what the decoder made of it, and the acknowledgement it
/// sent back.
type Step = (u64, Vec<u8>, Received, u64);

/// One transfer; returns what happened to each symbol that got through, in
/// order. The channel's draws come from their own stream, apart from the
/// payloads', so that runs with other symbol sizes see the same losses.
fn run(q: u32, symbol_bytes: usize, packets: usize, loss: f64, ack_delay: usize, seed: u64) -> Vec<Step> {
    let f = Field::new(q).unwrap();
    let data = random_packets(&mut SplitMix64::new(!seed), packets, symbol_bytes);
    let mut rng = SplitMix64::new(seed);
    let mut trace = Vec::new();
    let mut tx = SlidingEncoder::new(f, symbol_bytes).unwrap();
    let mut rx = SlidingDecoder::new(f, symbol_bytes).unwrap();
    let mut acks: VecDeque<u64> = VecDeque::new();
    let mut delivered = Vec::new();
    let mut next = 0;
    let (mut c, mut p) = (Vec::new(), vec![0; symbol_bytes]);
    let mut last_ack = 0;
    for step in 0.. {
        assert!(step < 200 * packets + 1000, "stalled at {} of {packets}", delivered.len());
        // The sender keeps at most 8 packets in flight, as a window would.
        while next < packets && tx.len() < 8 {
            assert_eq!(tx.push(&data[next]).unwrap(), next as u64);
            next += 1;
        }
        if tx.is_empty() {
            break;
        }
        let start = tx.encode(rng.next_u64(), &mut c, &mut p).unwrap();
        if rng.unit_f64() >= loss {
            let before = rx.first_unseen();
            let r = rx.consume(start, &c, &p).unwrap();
            if r == Received::NotInnovative {
                assert_eq!(rx.first_unseen(), before, "only an innovative symbol reveals a packet");
            }
            rx.forget_below(start);
            while let Some((seq, payload)) = rx.poll_decoded() {
                assert_eq!(seq as usize, delivered.len());
                delivered.push(payload.to_vec());
            }
            let ack = rx.first_unseen();
            assert!(ack >= last_ack, "acknowledgements never go back");
            last_ack = ack;
            acks.push_back(ack);
            trace.push((start, c.clone(), r, ack));
        }
        if acks.len() > ack_delay {
            tx.acknowledge(acks.pop_front().unwrap()).unwrap();
        }
        if delivered.len() == packets && acks.is_empty() {
            tx.acknowledge(packets as u64).unwrap();
        }
    }
    assert_eq!(delivered.len(), packets);
    assert_eq!(delivered, data);
    trace
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn delivers_everything_in_order(
        q in prop_oneof![Just(1u32), Just(4), Just(8)],
        packets in 1usize..120,
        loss in 0.0f64..0.5,
        ack_delay in 0usize..6,
        seed in any::<u64>(),
    ) {
        run(q, 32, packets, loss, ack_delay, seed);
    }
}

/// Virtual payloads (no bytes, coefficients only) are what the simulator
/// codes with: the decoder must make the same decisions with them as with
/// real bytes, symbol by symbol, so that a run's figures do not depend on
/// whether it carries payloads.
#[test]
fn virtual_payloads_follow_the_same_path() {
    for (q, seed) in [(8, 5), (1, 6), (4, 7)] {
        let real = run(q, 48, 300, 0.3, 3, seed);
        let virtual_ = run(q, 0, 300, 0.3, 3, seed);
        assert_eq!(virtual_.len(), real.len(), "GF(2^{q}), seed {seed}: symbols received");
        for (i, (v, r)) in virtual_.iter().zip(&real).enumerate() {
            assert_eq!(v, r, "GF(2^{q}), seed {seed}: symbol {i}");
        }
        // Not a path that never meets the interesting cases.
        let count = |what| real.iter().filter(|s| s.2 == what).count();
        assert!(count(Received::NotInnovative) > 0 && count(Received::Innovative) > 300 / 2, "GF(2^{q}), seed {seed}");
    }
}

#[test]
fn hostile_sequence_numbers_are_refused() {
    let mut rx = SlidingDecoder::new(Field::GF256, 4).unwrap();
    assert!(rx.consume(u64::MAX - 2, &[1, 2, 3, 4, 5], &[0; 4]).is_err());
    assert!(rx.consume(1 << 40, &[1], &[0; 4]).is_err());
    assert!(rx.consume(0, &[1], &[0; 3]).is_err());
    assert_eq!(rx.consume(0, &[0, 0], &[0; 4]), Ok(Received::NotInnovative));
}

/// A relay that recodes what it holds without decoding: the sink still
/// decodes every packet, in order, from recoded symbols only.
fn relay_run(q: u32, symbol_bytes: usize, packets: usize, loss: f64, seed: u64) {
    let f = Field::new(q).unwrap();
    let mut rng = SplitMix64::new(seed);
    let data = random_packets(&mut rng, packets, symbol_bytes);
    let mut tx = SlidingEncoder::new(f, symbol_bytes).unwrap();
    let mut relay = SlidingDecoder::new(f, symbol_bytes).unwrap();
    let mut rx = SlidingDecoder::new(f, symbol_bytes).unwrap();
    let (mut c, mut p) = (Vec::new(), vec![0; symbol_bytes]);
    let mut delivered = Vec::new();
    let mut next = 0;
    for step in 0.. {
        assert!(step < 200 * packets + 1000, "stalled at {} of {packets}", delivered.len());
        while next < packets && tx.len() < 8 {
            tx.push(&data[next]).unwrap();
            next += 1;
        }
        if tx.is_empty() {
            break;
        }
        let start = tx.encode(rng.next_u64(), &mut c, &mut p).unwrap();
        if rng.unit_f64() >= loss {
            relay.consume(start, &c, &p).unwrap();
        }
        let Some(start) = relay.recode(rng.next_u64(), u64::MAX, &mut c, &mut p).unwrap() else { continue };
        if rng.unit_f64() >= loss {
            rx.consume(start, &c, &p).unwrap();
            rx.forget_below(start);
        }
        while let Some((seq, payload)) = rx.poll_decoded() {
            assert_eq!(seq as usize, delivered.len());
            delivered.push(payload.to_vec());
        }
        // The sink's acknowledgement reaches both the source and the relay.
        tx.acknowledge(rx.first_unseen()).unwrap();
        relay.discard_below(rx.first_unseen());
    }
    assert_eq!(delivered, data);
}

#[test]
fn recoding_relays_deliver_everything_in_order() {
    for (q, seed) in [(8, 1), (8, 2), (4, 3), (1, 4)] {
        relay_run(q, 16, 150, 0.2, seed);
    }
    relay_run(8, 0, 300, 0.3, 9);
}

#[test]
fn a_relay_holding_nothing_does_not_recode() {
    let relay = SlidingDecoder::new(Field::GF256, 4).unwrap();
    assert_eq!(relay.recode(1, u64::MAX, &mut Vec::new(), &mut [0; 4]).unwrap(), None);
}

/// A damaged sequence number far ahead costs no more than the rows held,
/// and the decoder goes on from there.
#[test]
fn discarding_up_to_a_distant_sequence_number_is_immediate() {
    let mut c = vec![0u8; 4];
    let mut p = vec![0u8; 4];
    let mut tx = SlidingEncoder::new(Field::GF256, 4).unwrap();
    let mut relay = SlidingDecoder::new(Field::GF256, 4).unwrap();
    for i in 0..4u8 {
        tx.push(&[i; 4]).unwrap();
        let start = tx.encode(u64::from(i), &mut c, &mut p).unwrap();
        relay.consume(start, &c, &p).unwrap();
    }
    let far = u64::MAX / 2;
    relay.discard_below(far);
    assert_eq!(relay.rank(), 0);
    assert_eq!(relay.first_unseen(), far);
    relay.forget_below(far + 10);
    assert_eq!(relay.first_unseen(), far);
}

#[test]
fn an_empty_window_and_acknowledgements_of_packets_never_pushed_are_refused() {
    let mut tx = SlidingEncoder::new(Field::GF256, 4).unwrap();
    let (mut c, mut p) = (Vec::new(), vec![0u8; 4]);
    assert_eq!(tx.encode(1, &mut c, &mut p), Err(CodecError::EmptyWindow));
    for i in 0..3u8 {
        tx.push(&[i; 4]).unwrap();
    }
    assert_eq!(tx.acknowledge(4), Err(CodecError::AcknowledgementPastEnd { seq: 4, end: 3 }));
    assert_eq!((tx.start(), tx.end()), (0, 3), "a refused acknowledgement changes nothing");
    let message = CodecError::AcknowledgementPastEnd { seq: 4, end: 3 }.to_string();
    assert!(message.contains("acknowledgement of 4") && message.contains("at most 3"), "{message}");
    tx.acknowledge(2).unwrap();
    assert_eq!(tx.encode(1, &mut c, &mut p), Ok(2));
    assert_eq!(c.len(), 1);
    // A late acknowledgement changes nothing.
    tx.acknowledge(1).unwrap();
    assert_eq!((tx.start(), tx.end()), (2, 3));
    // Every packet acknowledged: the window is empty again.
    tx.acknowledge(3).unwrap();
    assert!(tx.is_empty());
    assert_eq!(tx.encode(1, &mut c, &mut p), Err(CodecError::EmptyWindow));
}
