//! How to add a protocol, worked through (docs/simulator.md walks this
//! file): a hop layer that sends every packet twice and drops the second
//! copy where the first arrived. It has a parameter table, a link frame
//! with a wire format, a hop layer and one registration, and it runs from a
//! scenario file (`tests/scenarios/repeat.toml`) without any edit to shared
//! code.

mod repeat {
    use ncmesh_proto::frame::Receivers;
    use ncmesh_proto::node::{HopLayer, IfaceId, Interface};
    use ncmesh_proto::packet::{Kind, Message, ParseFn, Parsers};
    use ncmesh_proto::params::{check, Invalid, Validate};
    use ncmesh_proto::scheme::{HopContext, Scheme};
    use ncmesh_proto::wire::{need, u32_at, WireError};
    use ncmesh_proto::{message_boilerplate, Frame, Instant, Packet};
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};
    use std::collections::{HashMap, VecDeque};
    use std::net::Ipv4Addr;

    /// 1. The parameter table, `[coding.repeat]` in a scenario. Serde reads
    ///    it (unknown keys are refused) and `validate` checks it, so errors
    ///    name the key and the line like every other scenario error.
    #[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields, default)]
    pub struct RepeatParams {
        /// How many times each packet is sent.
        pub copies: u32,
    }

    impl Default for RepeatParams {
        fn default() -> Self {
            RepeatParams { copies: 2 }
        }
    }

    impl Validate for RepeatParams {
        fn validate(&self) -> Result<(), Invalid> {
            check((1..=8).contains(&self.copies), "copies", || format!("expected 1 to 8 copies, found {}", self.copies))
        }
    }

    /// 2. The link frame: a sequence number, then the IP packet. Its kind is
    ///    a link frame type of its own, so nodes that know no repeat frames
    ///    count them as malformed instead of routing them.
    pub const KIND: Kind = Kind::Link(0x5250);

    #[derive(Clone, Debug)]
    pub struct Copy {
        /// Counts the packets the transmitter sent on this interface; every
        /// copy of one packet carries the same number.
        pub seq: u32,
        pub packet: Packet,
    }

    impl Message for Copy {
        fn kind(&self) -> Kind {
            KIND
        }
        fn wire_len(&self) -> usize {
            4 + self.packet.wire_len()
        }
        fn emit(&self, buf: &mut [u8]) -> Result<(), WireError> {
            need(buf, 0, 4, "sequence number")?;
            buf[..4].copy_from_slice(&self.seq.to_be_bytes());
            self.packet.emit_into(&mut buf[4..])
        }
        fn flow(&self) -> Option<(u8, u16, u16)> {
            self.packet.flow().map(|f| (f.protocol, f.src_port, f.dst_port))
        }
        message_boilerplate!();
    }

    fn parse(bytes: &[u8]) -> Result<Box<dyn Message>, WireError> {
        let seq = u32_at(bytes, 0, "sequence number")?;
        let packet = Packet::parse(&bytes[4..], &Parsers::default(), true)?;
        Ok(Box::new(Copy { seq, packet }))
    }

    /// 3. The hop layer. It takes packets from the interface's queue (the
    ///    default `handle_forward` put them there), and keeps the copies
    ///    still to send itself: so it `holds_frames`.
    #[derive(Debug)]
    pub struct Repeat {
        copies: u32,
        /// Per interface: the next sequence number, and copies still to send.
        next_seq: Vec<u32>,
        again: Vec<VecDeque<Frame>>,
        /// Per transmitter: the newest sequence number taken.
        newest: HashMap<Ipv4Addr, u32>,
        to_ip: VecDeque<Packet>,
        duplicates: u64,
    }

    impl HopLayer for Repeat {
        fn handle_frame(&mut self, _now: Instant, _iface: IfaceId, frame: Frame, addressed: bool) -> Option<Frame> {
            let transmitter = frame.transmitter();
            let copy = match frame.into_message::<Copy>() {
                Ok(copy) => copy,
                Err(other) => return Some(other),
            };
            let newest = self.newest.entry(transmitter).or_insert(u32::MAX);
            if !addressed || (*newest != u32::MAX && copy.seq <= *newest) {
                self.duplicates += addressed as u64;
                return None;
            }
            *newest = copy.seq;
            self.to_ip.push_back(copy.packet);
            None
        }

        fn poll_packet(&mut self, _now: Instant) -> Option<Packet> {
            self.to_ip.pop_front()
        }

        fn holds_frames(&self) -> bool {
            true
        }

        fn poll_frame(&mut self, now: Instant, id: IfaceId, iface: &mut Interface) -> Option<Frame> {
            if let Some(frame) = self.again[id].pop_front() {
                return Some(frame);
            }
            let queued = iface.dequeue(now)?;
            let next = queued.next();
            let copy = Copy { seq: self.next_seq[id], packet: queued.packet };
            self.next_seq[id] = self.next_seq[id].wrapping_add(1);
            let frame = Frame::message(Receivers::One(next), Box::new(copy));
            for _ in 1..self.copies {
                self.again[id].push_back(frame.clone());
            }
            Some(frame)
        }

        fn held(&self, id: IfaceId) -> usize {
            self.again[id].len()
        }

        fn counters(&self) -> Vec<(&'static str, u64)> {
            vec![("repeat_duplicates", self.duplicates)]
        }
    }

    /// 4. The scheme: its name in scenarios, where it codes, how its layer
    ///    is built, and its frame parser.
    pub struct RepeatScheme;

    impl Scheme for RepeatScheme {
        type Params = RepeatParams;
        const NAME: &'static str = "repeat";
        const PARAMS: &'static str = "repeat";
        const CODES_HOPS: bool = true;

        fn hop_layer(params: &RepeatParams, ctx: &HopContext<'_>) -> Option<Box<dyn HopLayer>> {
            let n = ctx.interfaces.len();
            Some(Box::new(Repeat {
                copies: params.copies,
                next_seq: vec![0; n],
                again: vec![VecDeque::new(); n],
                newest: HashMap::new(),
                to_ip: VecDeque::new(),
                duplicates: 0,
            }))
        }

        fn messages() -> Vec<(Kind, ParseFn)> {
            vec![(KIND, parse)]
        }
    }
}

use ncmesh_proto::Registry;
use ncmesh_sim::scenario::{Scenario, ScenarioError, Source};
use ncmesh_sim::{RunResult, Simulation};
use std::sync::Arc;

/// 5. One registration: the built-in protocols and this one.
fn registry() -> Arc<Registry> {
    let mut registry = Registry::builtin();
    registry.register::<repeat::RepeatScheme>().expect("a new name");
    Arc::new(registry)
}

fn load(overrides: &[(&str, &str)]) -> Result<Scenario, ScenarioError> {
    let path = format!("{}/tests/scenarios/repeat.toml", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("the example scenario");
    let overrides: Vec<(String, String)> = overrides.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    Scenario::load_with(registry(), Source::Toml { text: &text, origin: "repeat.toml" }, &overrides)
}

fn run(overrides: &[(&str, &str)]) -> RunResult {
    Simulation::new(&load(overrides).expect("a valid scenario")).run()
}

fn counter(r: &RunResult, name: &str) -> u64 {
    r.counters.iter().filter(|c| c.name == name).map(|c| c.value).sum()
}

#[test]
fn every_packet_crosses_each_hop_twice_and_arrives_once() {
    let r = run(&[]);
    let plain = run(&[("coding.scheme", "\"none\"")]);
    // Two lossless 1 Mbit/s hops: each frame is sent twice, so the flow gets half the rate.
    let (f, p) = (&r.flows[0], &plain.flows[0]);
    assert!(
        f.goodput_bps > 0.4 * p.goodput_bps && f.goodput_bps < 0.55 * p.goodput_bps,
        "{} vs {}",
        f.goodput_bps,
        p.goodput_bps
    );
    // Every second copy that arrived was a duplicate, and none reached TCP;
    // the run ends with a few copies still on the air.
    let sent: u64 = r.links.iter().map(|l| l.transmitted).sum();
    let duplicates = counter(&r, "repeat_duplicates");
    assert!(
        duplicates <= sent / 2 && duplicates + 4 * r.links.len() as u64 >= sent / 2,
        "{duplicates} duplicates of {sent} frames"
    );
    assert_eq!((f.retransmits, f.timeouts), (0, 0));
}

#[test]
fn the_second_copy_stands_in_for_a_lost_first() {
    // At 20% loss per hop a packet crosses both hops with probability 0.64
    // alone and 0.92 with a second copy: TCP sees far fewer losses.
    let lossy = [("link_class.radio.loss", "0.2")];
    let r = run(&lossy);
    let plain = run(&[lossy[0], ("coding.scheme", "\"none\"")]);
    let (f, p) = (&r.flows[0], &plain.flows[0]);
    let share = |f: &ncmesh_sim::result::FlowSummary| f.retransmits as f64 / f.packets_sent as f64;
    assert!(share(f) * 3.0 < share(p), "retransmitted {} vs {}", share(f), share(p));
    assert!(f.goodput_bps > p.goodput_bps, "{} vs {}", f.goodput_bps, p.goodput_bps);
}

#[test]
fn both_payload_modes_agree_and_real_bytes_check_out() {
    let lossy = ("link_class.radio.loss", "0.05");
    let virtual_run = run(&[lossy]);
    let real_run = run(&[lossy, ("payloads", "\"real\"")]);
    assert_eq!(format!("{:?}", virtual_run.flows), format!("{:?}", real_run.flows));
    assert_eq!(format!("{:?}", virtual_run.links), format!("{:?}", real_run.links));
    assert_eq!(real_run.flows[0].corrupt_bytes, 0);
    assert_eq!(counter(&real_run, "malformed"), 0);
}

#[test]
fn its_parameters_are_checked_like_any_other() {
    let err = load(&[("coding.repeat.copies", "9")]).unwrap_err().to_string();
    assert!(err.contains("coding.repeat.copies") && err.contains("expected 1 to 8 copies"), "{err}");
    let err = load(&[("coding.repeat.cpoies", "2")]).unwrap_err().to_string();
    assert!(err.contains("cpoies"), "{err}");
    // Without the registration, the name is unknown.
    let path = format!("{}/tests/scenarios/repeat.toml", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(path).unwrap();
    let err = Scenario::load(Source::Toml { text: &text, origin: "repeat.toml" }, &[]).unwrap_err().to_string();
    assert!(err.contains("repeat"), "{err}");
}

#[test]
fn a_udp_flow_is_coded_as_well() {
    // 200 kbit/s of CBR over two hops losing 20% each: 64% arrives alone,
    // 92% with a second copy (each copy is lost independently).
    let udp = [("flows.0.app", "\"cbr\""), ("flows.0.rate", "\"200kbps\""), ("link_class.radio.loss", "0.2")];
    let coded = run(&udp);
    let plain = run(&[&udp[..], &[("coding.scheme", "\"none\"")]].concat());
    let share = |r: &RunResult| r.flows[0].delivered_bytes as f64 / (200e3 / 8.0 * 60.0);
    assert!((share(&plain) - 0.64).abs() < 0.05, "{}", share(&plain));
    assert!((share(&coded) - 0.92).abs() < 0.05, "{}", share(&coded));
}
