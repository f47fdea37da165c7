//! Sliding-window RLNC, the code under TCP/NC (Sundararajan et al.).
//!
//! The sender codes over every packet it holds that has not been
//! acknowledged; the window's start moves forward when the receiver
//! acknowledges a packet as *seen*. The receiver keeps an echelon form over
//! absolute sequence numbers, acknowledges the first unseen one, and delivers
//! packets in order as soon as a prefix of the window becomes decodable.

use super::{check_coefficients, check_payload, CodecError, Received};
use crate::coefficients;
use ncmesh_gf::Field;
use std::collections::VecDeque;

/// The most sequence numbers a receiver holds at once, bounding its memory
/// whatever a peer sends.
pub const MAX_SPAN: u64 = 1 << 16;

/// The sender's coding window.
#[derive(Clone, Debug)]
pub struct SlidingEncoder {
    field: Field,
    symbol_bytes: usize,
    /// Sequence number of `window[0]`.
    start: u64,
    window: VecDeque<Vec<u8>>,
}

impl SlidingEncoder {
    /// `symbol_bytes == 0` gives a virtual encoder.
    pub fn new(field: Field, symbol_bytes: usize) -> Result<SlidingEncoder, CodecError> {
        super::check_generation(field, 1, symbol_bytes)?;
        Ok(SlidingEncoder { field, symbol_bytes, start: 0, window: VecDeque::new() })
    }

    /// Appends a packet to the window and returns its sequence number.
    pub fn push(&mut self, symbol: &[u8]) -> Result<u64, CodecError> {
        check_payload(symbol, self.symbol_bytes)?;
        self.window.push_back(symbol.to_vec());
        Ok(self.start + self.window.len() as u64 - 1)
    }

    /// Drops every packet below `seq`: the receiver has seen them. A `seq`
    /// below the window's start is a late acknowledgement, and changes
    /// nothing; one past [`SlidingEncoder::end`] acknowledges packets never
    /// pushed, and is refused.
    pub fn acknowledge(&mut self, seq: u64) -> Result<(), CodecError> {
        if seq > self.end() {
            return Err(CodecError::AcknowledgementPastEnd { seq, end: self.end() });
        }
        while self.start < seq {
            self.window.pop_front();
            self.start += 1;
        }
        Ok(())
    }

    pub fn symbol_bytes(&self) -> usize {
        self.symbol_bytes
    }

    /// The first sequence number in the window.
    pub fn start(&self) -> u64 {
        self.start
    }
    /// One past the last sequence number in the window.
    pub fn end(&self) -> u64 {
        self.start + self.window.len() as u64
    }
    pub fn len(&self) -> usize {
        self.window.len()
    }
    pub fn is_empty(&self) -> bool {
        self.window.is_empty()
    }

    /// Codes over the whole window with coefficients drawn from `seed`.
    /// `coefficients` is resized to the window; the combination covers
    /// sequence numbers `start()..end()`. An empty window is an error: a
    /// combination of nothing carries nothing.
    pub fn encode(&self, seed: u64, coefficients: &mut Vec<u8>, payload: &mut [u8]) -> Result<u64, CodecError> {
        if self.window.is_empty() {
            return Err(CodecError::EmptyWindow);
        }
        check_payload(payload, self.symbol_bytes)?;
        coefficients.resize(self.window.len(), 0);
        coefficients::generate(self.field, seed, coefficients);
        payload.fill(0);
        let terms = coefficients.iter().copied().zip(self.window.iter().map(Vec::as_slice));
        self.field.symbol_axpy_sum(terms, payload);
        Ok(self.start)
    }
}

/// A row of the receiver's matrix: its pivot is its first coefficient.
#[derive(Clone, Debug)]
struct Row {
    /// Coefficients for sequence numbers `pivot..pivot + len`, the first one 1.
    coefficients: Vec<u8>,
    payload: Vec<u8>,
}

impl Row {
    fn is_decoded(&self) -> bool {
        self.coefficients[1..].iter().all(|&c| c == 0)
    }
}

/// The receiver: progressive elimination over an open-ended stream.
#[derive(Clone, Debug)]
pub struct SlidingDecoder {
    field: Field,
    symbol_bytes: usize,
    /// Sequence number of `rows[0]`: everything below was delivered and dropped.
    first: u64,
    /// One slot per sequence number from `first`; `Some` when seen.
    rows: VecDeque<Option<Row>>,
    /// The next sequence number to hand to the application.
    next_delivery: u64,
    /// The pivot of the latest innovative combination.
    last_pivot: u64,
}

impl SlidingDecoder {
    pub fn new(field: Field, symbol_bytes: usize) -> Result<SlidingDecoder, CodecError> {
        super::check_generation(field, 1, symbol_bytes)?;
        Ok(SlidingDecoder { field, symbol_bytes, first: 0, rows: VecDeque::new(), next_delivery: 0, last_pivot: 0 })
    }

    /// The first sequence number not yet seen: TCP/NC's acknowledgement.
    pub fn first_unseen(&self) -> u64 {
        let held = self.rows.iter().position(Option::is_none).unwrap_or(self.rows.len());
        self.first + held as u64
    }

    /// Whether packet `seq` has been seen.
    pub fn is_seen(&self, seq: u64) -> bool {
        seq < self.first || self.slot(seq).is_some_and(|r| r.is_some())
    }

    /// Whether packet `seq` has been decoded.
    pub fn is_decoded(&self, seq: u64) -> bool {
        seq < self.first || self.slot(seq).is_some_and(|r| r.as_ref().is_some_and(Row::is_decoded))
    }

    fn slot(&self, seq: u64) -> Option<&Option<Row>> {
        seq.checked_sub(self.first).and_then(|i| self.rows.get(i as usize))
    }

    /// Adds a combination over `start..start + coefficients.len()`.
    ///
    /// A combination reaching below what has been delivered and dropped is
    /// reported as not innovative: it can only repeat delivered packets'
    /// information, and TCP/NC's sender has already moved past them.
    pub fn consume(&mut self, start: u64, coefficients: &[u8], payload: &[u8]) -> Result<Received, CodecError> {
        check_coefficients(self.field, coefficients, coefficients.len())?;
        check_payload(payload, self.symbol_bytes)?;
        let span = start.saturating_add(coefficients.len() as u64);
        if span.saturating_sub(self.first) > MAX_SPAN {
            return Err(CodecError::IndexOutOfRange { index: span, limit: self.first + MAX_SPAN });
        }
        let field = self.field;
        if start < self.first {
            let skip = (self.first - start) as usize;
            if coefficients[..skip.min(coefficients.len())].iter().any(|&c| c != 0) {
                return Ok(Received::NotInnovative);
            }
            return self.consume(self.first, &coefficients[skip.min(coefficients.len())..], payload);
        }
        // The scratch row, indexed from `start`, grows as rows reaching
        // further are subtracted from it.
        let mut row = coefficients.to_vec();
        let mut data = payload.to_vec();
        let base = (start - self.first) as usize;
        let mut pivot = None;
        let mut i = 0;
        while i < row.len() {
            let c = row[i];
            if c != 0 {
                match self.rows.get(base + i).and_then(Option::as_ref) {
                    Some(known) => {
                        if row.len() < i + known.coefficients.len() {
                            row.resize(i + known.coefficients.len(), 0);
                        }
                        field.axpy(c, &known.coefficients, &mut row[i..i + known.coefficients.len()]);
                        field.symbol_axpy(c, &known.payload, &mut data);
                    }
                    None if pivot.is_none() => pivot = Some(i),
                    None => {}
                }
            }
            i += 1;
        }
        let Some(p) = pivot else {
            return Ok(Received::NotInnovative);
        };
        let last = row.iter().rposition(|&c| c != 0).expect("the pivot is non-zero");
        row.truncate(last + 1);
        row.drain(..p);
        let inverse = field.inv(row[0]);
        field.scale(inverse, &mut row);
        field.symbol_scale(inverse, &mut data);
        let slot = base + p;
        if self.rows.len() <= slot {
            self.rows.resize(slot + 1, None);
        }
        self.rows[slot] = Some(Row { coefficients: row, payload: data });
        self.last_pivot = self.first + slot as u64;
        self.reduce_prefix();
        Ok(Received::Innovative)
    }

    /// Back-substitutes the longest self-contained run of seen packets that
    /// starts at the first undelivered one, so they can be delivered.
    fn reduce_prefix(&mut self) {
        let from = (self.next_delivery - self.first) as usize;
        let mut reach = from;
        let mut end = None;
        for (i, slot) in self.rows.iter().enumerate().skip(from) {
            let Some(row) = slot else { break };
            reach = reach.max(i + row.coefficients.len());
            if reach == i + 1 {
                end = Some(i + 1);
            }
        }
        let Some(end) = end else { return };
        let field = self.field;
        for i in (from..end).rev() {
            let (head, tail) = self.rows.make_contiguous().split_at_mut(i + 1);
            let row = head[i].as_mut().expect("prefix rows are seen");
            for k in 1..row.coefficients.len() {
                let c = row.coefficients[k];
                if c != 0 {
                    let below = tail[k - 1].as_ref().expect("prefix rows are seen");
                    debug_assert!(below.is_decoded());
                    field.symbol_axpy(c, &below.payload, &mut row.payload);
                }
            }
            row.coefficients.truncate(1);
        }
    }

    /// The next packet in order, once decoded. The decoder keeps it until the
    /// sender's window has moved past it ([`SlidingDecoder::forget_below`]).
    pub fn poll_decoded(&mut self) -> Option<(u64, &[u8])> {
        let seq = self.next_delivery;
        let i = (seq - self.first) as usize;
        let row = self.rows.get(i)?.as_ref()?;
        if !row.is_decoded() {
            return None;
        }
        self.next_delivery += 1;
        Some((seq, &row.payload))
    }

    /// The next sequence number [`SlidingDecoder::poll_decoded`] will return.
    pub fn next_delivery(&self) -> u64 {
        self.next_delivery
    }

    /// A relay's recoded combination: a random combination, with coefficients
    /// drawn from `seed`, of every row held whose pivot is below `limit`.
    /// Writes the combination's coefficients (over `start..start +
    /// coefficients.len()`) and payload, and returns `start`; `None` when no
    /// such row is held. Relays recode without decoding, so the rows need not
    /// be decoded. A relay that forwards in order passes as `limit` one past
    /// the pivot of the newest row it owes: mixing in rows it has not yet
    /// forwarded would hold the sink's decoding back until it had those too.
    pub fn recode(
        &self,
        seed: u64,
        limit: u64,
        coefficients: &mut Vec<u8>,
        payload: &mut [u8],
    ) -> Result<Option<u64>, CodecError> {
        check_payload(payload, self.symbol_bytes)?;
        let below = limit.saturating_sub(self.first) as usize;
        let held = || self.rows.iter().take(below).enumerate().filter_map(|(i, r)| r.as_ref().map(|r| (i, r)));
        let Some((low, _)) = held().next() else { return Ok(None) };
        let high = held().map(|(i, r)| i + r.coefficients.len()).max().expect("one row is held");
        coefficients.clear();
        coefficients.resize(high - low, 0);
        payload.fill(0);
        let mut draws = vec![0u8; self.rows.len()];
        coefficients::generate_nonzero(self.field, &mut crate::prng::SplitMix64::new(seed), &mut draws);
        let field = self.field;
        for (i, row) in held() {
            let r = draws[i];
            if r != 0 {
                field.axpy(r, &row.coefficients, &mut coefficients[i - low..i - low + row.coefficients.len()]);
                field.symbol_axpy(r, &row.payload, payload);
            }
        }
        Ok(Some(self.first + low as u64))
    }

    /// Drops every row below `seq` whether delivered or not: a relay does so
    /// once the receiver has acknowledged seeing them, and never delivers.
    pub fn discard_below(&mut self, seq: u64) {
        self.drop_front(seq);
        self.next_delivery = self.next_delivery.max(self.first);
    }

    /// Moves the window's start up to `seq`, in time bounded by the rows
    /// held: a damaged or forged sequence number may lie far ahead.
    fn drop_front(&mut self, seq: u64) {
        if seq > self.first {
            let held = (seq - self.first).min(self.rows.len() as u64) as usize;
            self.rows.drain(..held);
            self.first = seq;
        }
    }

    /// The packet the latest innovative combination revealed (its pivot).
    pub fn last_pivot(&self) -> u64 {
        self.last_pivot
    }

    /// How many rows are held (the relay's rank over its window).
    pub fn rank(&self) -> usize {
        self.rows.iter().filter(|r| r.is_some()).count()
    }

    /// Releases delivered packets below `seq`; combinations starting at or
    /// after `seq` no longer need them.
    pub fn forget_below(&mut self, seq: u64) {
        self.drop_front(seq.min(self.next_delivery));
    }
}
