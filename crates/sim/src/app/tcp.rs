//! TCP applications: a bulk or sized transfer into a [`TcpSender`], and a
//! [`TcpReceiver`] whose deliveries are checked and timed.

use super::{content, mismatches, Endpoint, FlowRecord};
use crate::result::FlowSummary;
use ncmesh_proto::tcp::{Connection, TcpConfig, TcpReceiver, TcpSender};
use ncmesh_proto::{Data, Duration, FlowKey, Instant, Packet, Payload};

/// The sending end: an application that writes its `prefix` once
/// connected, then offers `bytes` (or without end) from its start, or
/// once the prefix is acknowledged if that is later, until its stop.
#[derive(Debug)]
pub struct TcpSource {
    flow: FlowKey,
    sender: TcpSender,
    prefix: u64,
    /// The prefix is written.
    prefix_written: bool,
    /// The data waits for the prefix's acknowledgement, as iperf3's test
    /// starts once its server holds every stream's cookie and its answer
    /// comes back with the cookie's ACK.
    data_waits: bool,
    bytes: Option<u64>,
    min_rto: Duration,
    real_payloads: bool,
    /// One past the highest stream byte sent: later sends below it are retransmissions.
    high_sent: u64,
    /// The data has been offered: a connection opened ahead of it has not finished a transfer.
    started: bool,
}

impl TcpSource {
    pub fn new(
        flow: FlowKey,
        config: &TcpConfig,
        conn: Connection,
        prefix: u64,
        bytes: Option<u64>,
        real_payloads: bool,
    ) -> TcpSource {
        TcpSource {
            flow,
            sender: TcpSender::new(config, conn),
            prefix,
            prefix_written: false,
            data_waits: false,
            bytes,
            min_rto: config.min_rto,
            real_payloads,
            // The prefix is not logged: it gives no delay sample.
            high_sent: prefix,
            started: false,
        }
    }

    fn write_prefix(&mut self) {
        if self.prefix > 0 && !self.prefix_written {
            self.prefix_written = true;
            self.sender.push(self.prefix);
        }
    }

    fn write_data(&mut self) {
        self.sender.push(self.bytes.unwrap_or(u64::MAX));
        if self.bytes.is_some() {
            self.sender.finish();
        }
    }
}

impl Endpoint for TcpSource {
    fn open(&mut self, _now: Instant) {
        self.sender.open();
        self.write_prefix();
    }

    /// The application writes its data; with a handshake, the SYN leaves
    /// first and the data once the connection is established.
    fn start(&mut self, _now: Instant) {
        self.started = true;
        self.write_prefix();
        if self.sender.snd_una() < self.prefix {
            self.data_waits = true;
        } else {
            self.write_data();
        }
    }

    fn stop(&mut self, _now: Instant) {
        self.sender.close();
    }

    fn handle_packet(&mut self, now: Instant, packet: Packet, record: &mut FlowRecord) {
        let Payload::Tcp(segment) = &packet.payload else { return };
        self.sender.handle_ack(now, segment);
        if self.data_waits && self.sender.snd_una() >= self.prefix {
            self.data_waits = false;
            record.data_started = Some(now);
            self.write_data();
        }
        if let Some(srtt) = self.sender.srtt() {
            record.srtt.add(srtt.as_secs_f64());
            let rto = (srtt + self.sender.rttvar().saturating_mul(4)).max(self.min_rto);
            record.base_rto.add(rto.as_secs_f64());
        }
        if record.completed.is_none() && self.started && self.bytes.is_some() && self.sender.is_finished() {
            record.completed = Some(now);
        }
    }

    fn handle_timeout(&mut self, now: Instant, _record: &mut FlowRecord) {
        self.sender.handle_timeout(now);
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.sender.poll_timeout()
    }

    fn poll_transmit(&mut self, now: Instant, record: &mut FlowRecord) -> Option<Packet> {
        let mut segment = self.sender.poll_transmit(now)?;
        if let Data::Virtual { len, offset } = segment.data {
            let end = offset + len as u64;
            if end > self.high_sent {
                record.log_sent(offset.max(self.high_sent), end, now);
                self.high_sent = end;
            }
            if self.real_payloads {
                let mut bytes = vec![0; len as usize];
                content(record.content_seed, offset, &mut bytes);
                segment.data = Data::Real(bytes);
            }
        }
        record.packets_sent += !segment.is_empty() as u64;
        Some(Packet::new(self.flow.src, self.flow.dst, Payload::Tcp(segment)))
    }

    fn probe(&self) -> Option<(f64, f64, f64)> {
        Some((
            self.sender.cwnd() as f64,
            self.sender.srtt().map_or(f64::NAN, |d| d.as_secs_f64()),
            self.sender.pacing_rate().map_or(f64::NAN, |r| r as f64 * 8.0),
        ))
    }

    fn summarize(&self, _record: &FlowRecord, summary: &mut FlowSummary) {
        let stats = self.sender.stats();
        summary.retransmits = stats.retransmits;
        summary.timeouts = stats.timeouts;
        summary.acked_bytes = self.sender.snd_una();
    }
}

/// The receiving end: checks and times what the receiver delivers after
/// the source's `prefix`.
#[derive(Debug)]
pub struct TcpSink {
    flow: FlowKey,
    receiver: TcpReceiver,
    prefix: u64,
    /// Where the next delivery must start.
    expected: u64,
}

impl TcpSink {
    pub fn new(flow: FlowKey, config: &TcpConfig, conn: Connection, prefix: u64) -> TcpSink {
        TcpSink { flow, receiver: TcpReceiver::new(config, conn), prefix, expected: 0 }
    }

    fn take_deliveries(&mut self, now: Instant, record: &mut FlowRecord) {
        while let Some(d) = self.receiver.poll_delivery() {
            let len = d.data.len() as u64;
            if d.offset != self.expected {
                record.corrupt += len;
            } else if let Data::Real(bytes) = &d.data {
                record.corrupt += mismatches(record.content_seed, d.offset, bytes);
            }
            self.expected = d.offset + len;
            record.count_delivered(now, self.expected.saturating_sub(self.prefix.max(d.offset)));
            record.delivered_in_order(now, self.expected);
        }
    }
}

impl Endpoint for TcpSink {
    fn handle_packet(&mut self, now: Instant, packet: Packet, record: &mut FlowRecord) {
        let Payload::Tcp(segment) = &packet.payload else { return };
        self.receiver.handle_segment(now, segment);
        self.take_deliveries(now, record);
    }

    fn handle_timeout(&mut self, now: Instant, record: &mut FlowRecord) {
        self.receiver.handle_timeout(now);
        self.take_deliveries(now, record);
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.receiver.poll_timeout()
    }

    fn poll_transmit(&mut self, now: Instant, _record: &mut FlowRecord) -> Option<Packet> {
        let ack = self.receiver.poll_transmit(now)?;
        Some(Packet::new(self.flow.dst, self.flow.src, Payload::Tcp(ack)))
    }
}
