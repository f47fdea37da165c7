//! `ncmesh._native`: the Python bindings. Nothing but argument conversion,
//! GIL release around work on payloads, and one error conversion.
//!
//! Every buffer sized by an argument is allocated so that a size past
//! memory raises MemoryError, as for any Python object, rather than
//! aborting the interpreter: the codecs return it as an error, and the
//! bytes objects the bindings fill are allocated by Python.

use ncmesh_codec::lt;
use ncmesh_codec::prng::SplitMix64;
use ncmesh_codec::rlnc::{self, sliding, Produced, Received};
use ncmesh_codec::Field;
use pyo3::buffer::PyBuffer;
use pyo3::create_exception;
use pyo3::exceptions::{PyMemoryError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

mod sim;

create_exception!(_native, CodecError, PyValueError, "Malformed input to a codec, or misuse of one.");
create_exception!(
    _native,
    ScenarioError,
    PyValueError,
    "A scenario that cannot run: the message names the key, its line and what was expected."
);

create_exception!(
    _native,
    EmulateError,
    pyo3::exceptions::PyRuntimeError,
    "ncmesh emulate could not run: the machine cannot host it (root, TUN, namespaces) or setting it up failed."
);

/// The conversion of emulation errors into Python exceptions.
fn emulate_error(e: ncmesh_emu::EmulateError) -> PyErr {
    EmulateError::new_err(e.to_string())
}

/// The conversion of codec errors into Python exceptions: memory the
/// machine would not give is a MemoryError, anything else a CodecError.
fn error(e: impl Failure) -> PyErr {
    if e.is_out_of_memory() {
        PyMemoryError::new_err(e.to_string())
    } else {
        CodecError::new_err(e.to_string())
    }
}

/// A codec error, and whether it is memory the machine refused.
trait Failure: std::fmt::Display {
    fn is_out_of_memory(&self) -> bool {
        false
    }
}

impl Failure for rlnc::CodecError {
    fn is_out_of_memory(&self) -> bool {
        matches!(self, rlnc::CodecError::OutOfMemory { .. })
    }
}

impl Failure for lt::LtError {
    fn is_out_of_memory(&self) -> bool {
        matches!(self, lt::LtError::OutOfMemory { .. })
    }
}

impl Failure for ncmesh_gf::FieldError {}
impl Failure for String {}

/// The conversion of scenario errors into Python exceptions.
fn scenario_error(e: ncmesh_sim::scenario::ScenarioError) -> PyErr {
    ScenarioError::new_err(e.to_string())
}

/// The field GF(2^q). `q` is taken signed, so that a negative degree is
/// refused as q = 0 and q = 9 are, not by the integer conversion.
fn field(q: i64) -> PyResult<Field> {
    let degree = u32::try_from(q)
        .map_err(|_| error(format!("unsupported field GF(2^{q}): the degree q must be between 1 and 8")))?;
    Field::new(degree).map_err(error)
}

/// `index` if it names a symbol of a generation of `symbols`: one outside
/// it is a mistake, not a symbol yet to arrive.
fn symbol_index(index: usize, symbols: usize) -> PyResult<usize> {
    if index >= symbols {
        return Err(error(rlnc::CodecError::IndexOutOfRange { index: index as u64, limit: symbols as u64 }));
    }
    Ok(index)
}

/// A bytes object of `count` items of `each` bytes, zero, then written by
/// `fill`. A size past what a bytes object can hold is a CodecError, and
/// one the machine cannot allocate a MemoryError; both say what `what` is.
fn zeroed_bytes<'py>(
    py: Python<'py>,
    count: usize,
    each: usize,
    what: impl Fn() -> String,
    fill: impl FnOnce(&mut [u8]) -> PyResult<()>,
) -> PyResult<Bound<'py, PyBytes>> {
    let Some(len) = count.checked_mul(each).filter(|&len| isize::try_from(len).is_ok()) else {
        return Err(error(format!("{} is {count} x {each} bytes: more than a bytes object can hold", what())));
    };
    let mut allocated = false;
    PyBytes::new_with(py, len, |out| {
        allocated = true;
        fill(out)
    })
    .map_err(|e| {
        if allocated || !e.is_instance_of::<PyMemoryError>(py) {
            return e;
        }
        PyMemoryError::new_err(format!("out of memory: {len} bytes could not be allocated for {}", what()))
    })
}

fn received(r: Received) -> &'static str {
    match r {
        Received::Innovative => "innovative",
        Received::NotInnovative => "not_innovative",
        Received::Complete => "complete",
    }
}

/// A read-only view of any object with the buffer protocol (bytes,
/// bytearray, memoryview, numpy arrays), without copying when it is
/// contiguous. The exporter cannot resize while the view is held.
struct View {
    buffer: PyBuffer<u8>,
    copy: Option<Vec<u8>>,
}

impl View {
    fn new(obj: &Bound<'_, PyAny>) -> PyResult<View> {
        let buffer = PyBuffer::<u8>::get(obj)?;
        let copy = if buffer.is_c_contiguous() { None } else { Some(buffer.to_vec(obj.py())?) };
        Ok(View { buffer, copy })
    }

    fn bytes(&self) -> &[u8] {
        match &self.copy {
            Some(v) => v,
            // SAFETY: the buffer is C-contiguous and held for the view's
            // lifetime, which pins the exporter's memory.
            None => unsafe { std::slice::from_raw_parts(self.buffer.buf_ptr() as *const u8, self.buffer.len_bytes()) },
        }
    }
}

// SAFETY: the view only reads memory pinned by the held buffer, or its own
// copy; it is used from one thread at a time while the GIL is released.
unsafe impl Send for View {}
// SAFETY: as for `Send`: shared, the view is only read, and the exporter's
// memory stays pinned while the buffer is held.
unsafe impl Sync for View {}

fn bytes<'py>(py: Python<'py>, data: &[u8]) -> Bound<'py, PyBytes> {
    PyBytes::new(py, data)
}

/// Holds one generation of source symbols and produces combinations of them.
#[pyclass(module = "ncmesh._native")]
struct Encoder(rlnc::Encoder);

#[pymethods]
impl Encoder {
    #[new]
    #[pyo3(signature = (symbols, symbol_bytes, q = 8, systematic = false))]
    fn new(symbols: usize, symbol_bytes: usize, q: i64, systematic: bool) -> PyResult<Self> {
        let mut e = rlnc::Encoder::new(field(q)?, symbols, symbol_bytes).map_err(error)?;
        e.set_systematic(systematic);
        Ok(Encoder(e))
    }
    #[getter]
    fn symbols(&self) -> usize {
        self.0.symbols()
    }
    #[getter]
    fn symbol_bytes(&self) -> usize {
        self.0.symbol_bytes()
    }
    #[getter]
    fn q(&self) -> u32 {
        self.0.field().degree()
    }
    fn set_data(&mut self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<()> {
        let data = View::new(data)?;
        py.allow_threads(|| self.0.set_data(data.bytes())).map_err(error)
    }
    fn encode<'py>(&self, py: Python<'py>, coefficients: &Bound<'_, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
        let c = View::new(coefficients)?;
        let mut out = vec![0; self.0.symbol_bytes()];
        py.allow_threads(|| self.0.encode(c.bytes(), &mut out)).map_err(error)?;
        Ok(bytes(py, &out))
    }
    fn encode_seeded<'py>(&self, py: Python<'py>, seed: u64) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)> {
        let (mut c, mut p) = (vec![0; self.0.symbols()], vec![0; self.0.symbol_bytes()]);
        py.allow_threads(|| self.0.encode_seeded(seed, &mut c, &mut p)).map_err(error)?;
        Ok((bytes(py, &c), bytes(py, &p)))
    }
    /// One combination per row of `coefficients` (count x symbols), as count x symbol_bytes.
    fn encode_batch<'py>(&self, py: Python<'py>, coefficients: &Bound<'_, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
        let c = View::new(coefficients)?;
        let (count, s) = (c.bytes().len() / self.0.symbols(), self.0.symbol_bytes());
        // Encoded straight into the bytes object: no second buffer to copy from.
        let what = || format!("a batch of {count} combinations of symbol_bytes = {s}");
        zeroed_bytes(py, count, s, what, |out| py.allow_threads(|| self.0.encode_batch(c.bytes(), out)).map_err(error))
    }
    /// The next symbol: `(index, coefficients, payload)`, index None when coded.
    fn produce<'py>(
        &mut self,
        py: Python<'py>,
        seed: u64,
    ) -> PyResult<(Option<usize>, Bound<'py, PyBytes>, Bound<'py, PyBytes>)> {
        let (mut c, mut p) = (vec![0; self.0.symbols()], vec![0; self.0.symbol_bytes()]);
        let produced = py.allow_threads(|| self.0.produce(seed, &mut c, &mut p)).map_err(error)?;
        let index = match produced {
            Produced::Uncoded(i) => Some(i),
            Produced::Coded(_) => None,
        };
        Ok((index, bytes(py, &c), bytes(py, &p)))
    }
}

/// Progressive Gauss-Jordan decoder with "seen" tracking; also recodes.
#[pyclass(module = "ncmesh._native")]
struct Decoder(rlnc::Decoder);

#[pymethods]
impl Decoder {
    #[new]
    #[pyo3(signature = (symbols, symbol_bytes, q = 8))]
    fn new(symbols: usize, symbol_bytes: usize, q: i64) -> PyResult<Self> {
        Ok(Decoder(rlnc::Decoder::new(field(q)?, symbols, symbol_bytes).map_err(error)?))
    }
    #[getter]
    fn symbols(&self) -> usize {
        self.0.symbols()
    }
    #[getter]
    fn symbol_bytes(&self) -> usize {
        self.0.symbol_bytes()
    }
    #[getter]
    fn rank(&self) -> usize {
        self.0.rank()
    }
    #[getter]
    fn is_complete(&self) -> bool {
        self.0.is_complete()
    }
    fn consume(
        &mut self,
        py: Python<'_>,
        coefficients: &Bound<'_, PyAny>,
        payload: &Bound<'_, PyAny>,
    ) -> PyResult<&'static str> {
        let (c, p) = (View::new(coefficients)?, View::new(payload)?);
        py.allow_threads(|| self.0.consume(c.bytes(), p.bytes())).map(received).map_err(error)
    }
    fn consume_systematic(
        &mut self,
        py: Python<'_>,
        index: usize,
        payload: &Bound<'_, PyAny>,
    ) -> PyResult<&'static str> {
        let p = View::new(payload)?;
        py.allow_threads(|| self.0.consume_systematic(index, p.bytes())).map(received).map_err(error)
    }
    /// Consumes rows of `coefficients` (count x symbols) with rows of
    /// `payloads` (count x symbol_bytes); returns how many were innovative.
    fn consume_batch(
        &mut self,
        py: Python<'_>,
        coefficients: &Bound<'_, PyAny>,
        payloads: &Bound<'_, PyAny>,
    ) -> PyResult<usize> {
        let (c, p) = (View::new(coefficients)?, View::new(payloads)?);
        let (g, s) = (self.0.symbols(), self.0.symbol_bytes());
        let count = c.bytes().len() / g;
        if c.bytes().len() != count * g || p.bytes().len() != count * s {
            return Err(error(format!(
                "batch of {} coefficient bytes and {} payload bytes is not a whole number of {g}-coefficient, {s}-byte symbols",
                c.bytes().len(),
                p.bytes().len()
            )));
        }
        py.allow_threads(|| {
            let mut innovative = 0;
            for k in 0..count {
                let r = self.0.consume(&c.bytes()[k * g..(k + 1) * g], &p.bytes()[k * s..(k + 1) * s])?;
                innovative += usize::from(r != Received::NotInnovative);
            }
            Ok(innovative)
        })
        .map_err(|e: rlnc::CodecError| error(e))
    }
    /// Forgets everything received, keeping the buffers for the next generation.
    fn reset(&mut self) {
        self.0.reset()
    }
    fn is_symbol_seen(&self, index: usize) -> PyResult<bool> {
        Ok(self.0.is_symbol_seen(symbol_index(index, self.0.symbols())?))
    }
    fn is_symbol_decoded(&self, index: usize) -> PyResult<bool> {
        Ok(self.0.is_symbol_decoded(symbol_index(index, self.0.symbols())?))
    }
    /// The decoded symbol `index`, or None while it is not decoded.
    fn symbol<'py>(&mut self, py: Python<'py>, index: usize) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let index = symbol_index(index, self.0.symbols())?;
        Ok(self.0.symbol(index).map(|s| bytes(py, s)))
    }
    /// The whole generation once complete, else None.
    fn data<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyBytes>>> {
        // Decoded with the GIL released, then copied once into the bytes object.
        if !py.allow_threads(|| self.0.decoded_symbols().is_some()) {
            return Ok(None);
        }
        let size = self.0.symbol_bytes();
        let Some(symbols) = self.0.decoded_symbols() else { return Ok(None) };
        let data = PyBytes::new_with(py, symbols.len() * size, |out| {
            for (chunk, symbol) in out.chunks_exact_mut(size.max(1)).zip(&symbols) {
                chunk.copy_from_slice(symbol);
            }
            Ok(())
        })?;
        Ok(Some(data))
    }
    /// `count` random combinations of what the decoder holds, drawn from
    /// `seed`: `(coefficients, payloads)`, row-major.
    #[pyo3(signature = (seed, count = 1))]
    fn recode<'py>(
        &mut self,
        py: Python<'py>,
        seed: u64,
        count: usize,
    ) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)> {
        let (g, s) = (self.0.symbols(), self.0.symbol_bytes());
        let mut rng = SplitMix64::new(seed);
        // Recoded straight into the bytes objects, allocated by Python.
        let mut payloads = None;
        let what = || format!("count = {count} combinations of symbols = {g}");
        let coefficients = zeroed_bytes(py, count, g, what, |c| {
            let what = || format!("count = {count} combinations of symbol_bytes = {s}");
            let p = zeroed_bytes(py, count, s, what, |p| {
                py.allow_threads(|| self.0.recode_batch(&mut rng, c, p)).map_err(error)
            })?;
            payloads = Some(p);
            Ok(())
        })?;
        Ok((coefficients, payloads.expect("written with the coefficients")))
    }
}

/// TCP/NC's sender window: codes over every unacknowledged packet.
#[pyclass(module = "ncmesh._native")]
struct SlidingEncoder(sliding::SlidingEncoder);

#[pymethods]
impl SlidingEncoder {
    #[new]
    #[pyo3(signature = (symbol_bytes, q = 8))]
    fn new(symbol_bytes: usize, q: i64) -> PyResult<Self> {
        Ok(SlidingEncoder(sliding::SlidingEncoder::new(field(q)?, symbol_bytes).map_err(error)?))
    }
    fn push(&mut self, symbol: &Bound<'_, PyAny>) -> PyResult<u64> {
        self.0.push(View::new(symbol)?.bytes()).map_err(error)
    }
    fn acknowledge(&mut self, seq: u64) -> PyResult<()> {
        self.0.acknowledge(seq).map_err(error)
    }
    #[getter]
    fn start(&self) -> u64 {
        self.0.start()
    }
    #[getter]
    fn end(&self) -> u64 {
        self.0.end()
    }
    /// `(start, coefficients, payload)`: a combination over `start..end`.
    fn encode<'py>(&self, py: Python<'py>, seed: u64) -> PyResult<(u64, Bound<'py, PyBytes>, Bound<'py, PyBytes>)> {
        let (mut c, mut p) = (Vec::new(), vec![0; self.0.symbol_bytes()]);
        let start = py.allow_threads(|| self.0.encode(seed, &mut c, &mut p)).map_err(error)?;
        Ok((start, bytes(py, &c), bytes(py, &p)))
    }
}

/// TCP/NC's receiver: acknowledges seen packets, delivers in order.
#[pyclass(module = "ncmesh._native")]
struct SlidingDecoder(sliding::SlidingDecoder);

#[pymethods]
impl SlidingDecoder {
    #[new]
    #[pyo3(signature = (symbol_bytes, q = 8))]
    fn new(symbol_bytes: usize, q: i64) -> PyResult<Self> {
        Ok(SlidingDecoder(sliding::SlidingDecoder::new(field(q)?, symbol_bytes).map_err(error)?))
    }
    fn consume(
        &mut self,
        start: u64,
        coefficients: &Bound<'_, PyAny>,
        payload: &Bound<'_, PyAny>,
    ) -> PyResult<&'static str> {
        let (c, p) = (View::new(coefficients)?, View::new(payload)?);
        self.0.consume(start, c.bytes(), p.bytes()).map(received).map_err(error)
    }
    #[getter]
    fn first_unseen(&self) -> u64 {
        self.0.first_unseen()
    }
    /// The next packet in order as `(seq, payload)`, once decoded.
    fn poll_decoded<'py>(&mut self, py: Python<'py>) -> Option<(u64, Bound<'py, PyBytes>)> {
        self.0.poll_decoded().map(|(seq, p)| (seq, bytes(py, p)))
    }
    fn forget_below(&mut self, seq: u64) {
        self.0.forget_below(seq)
    }
}

/// LT encoder over k source symbols (Robust Soliton).
#[pyclass(module = "ncmesh._native")]
struct LtEncoder(lt::Encoder);

#[pymethods]
impl LtEncoder {
    #[new]
    #[pyo3(signature = (k, symbol_bytes, seed, c = lt::DEFAULT_C, delta = lt::DEFAULT_DELTA))]
    fn new(k: usize, symbol_bytes: usize, seed: u64, c: f64, delta: f64) -> PyResult<Self> {
        let dist = lt::Distribution::robust(k, c, delta).map_err(error)?;
        Ok(LtEncoder(lt::Encoder::new(k, symbol_bytes, dist, seed).map_err(error)?))
    }
    fn set_data(&mut self, data: &Bound<'_, PyAny>) -> PyResult<()> {
        self.0.set_symbols(View::new(data)?.bytes()).map_err(error)
    }
    fn encode<'py>(&self, py: Python<'py>, esi: u32) -> PyResult<Bound<'py, PyBytes>> {
        let mut out = vec![0; self.0.symbol_bytes()];
        self.0.encode(esi, &mut out).map_err(error)?;
        Ok(bytes(py, &out))
    }
    fn neighbours(&self, esi: u32) -> Vec<u32> {
        self.0.neighbours(esi)
    }
}

/// LT peeling decoder, finishing by inactivation decoding when `fallback` is set.
#[pyclass(module = "ncmesh._native")]
struct LtDecoder(lt::Decoder);

#[pymethods]
impl LtDecoder {
    #[new]
    #[pyo3(signature = (k, symbol_bytes, seed, c = lt::DEFAULT_C, delta = lt::DEFAULT_DELTA, fallback = true))]
    fn new(k: usize, symbol_bytes: usize, seed: u64, c: f64, delta: f64, fallback: bool) -> PyResult<Self> {
        let dist = lt::Distribution::robust(k, c, delta).map_err(error)?;
        let mut d = lt::Decoder::new(k, symbol_bytes, dist, seed).map_err(error)?;
        d.set_fallback(fallback);
        Ok(LtDecoder(d))
    }
    fn consume(&mut self, esi: u32, payload: &Bound<'_, PyAny>) -> PyResult<&'static str> {
        self.0.consume(esi, View::new(payload)?.bytes()).map(received).map_err(error)
    }
    /// Consumes symbol `esis[i]` with row `i` of `payloads` (len(esis) x
    /// symbol_bytes) in order, until a first source is decoded (`until =
    /// "first"`) or all are (`"complete"`); returns how many it consumed.
    #[pyo3(signature = (esis, payloads, until = "complete"))]
    fn consume_batch(
        &mut self,
        py: Python<'_>,
        esis: Vec<u32>,
        payloads: &Bound<'_, PyAny>,
        until: &str,
    ) -> PyResult<usize> {
        let first = match until {
            "first" => true,
            "complete" => false,
            other => return Err(error(format!("until = {other:?}: expected \"first\" or \"complete\""))),
        };
        let p = View::new(payloads)?;
        let s = self.0.symbol_bytes();
        if p.bytes().len() != esis.len() * s {
            return Err(error(format!("{} payload bytes for {} symbols of {s} bytes", p.bytes().len(), esis.len())));
        }
        py.allow_threads(|| {
            for (n, &esi) in esis.iter().enumerate() {
                self.0.consume(esi, &p.bytes()[n * s..(n + 1) * s])?;
                if self.0.is_complete() || (first && self.0.decoded_count() > 0) {
                    return Ok(n + 1);
                }
            }
            Ok(esis.len())
        })
        .map_err(|e: lt::LtError| error(e))
    }
    #[getter]
    fn is_complete(&self) -> bool {
        self.0.is_complete()
    }
    #[getter]
    fn decoded_count(&self) -> usize {
        self.0.decoded_count()
    }
    fn decode_order(&self) -> Vec<u32> {
        self.0.decode_order().to_vec()
    }
    fn data<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyBytes>> {
        self.0.data().map(|d| bytes(py, d))
    }
}

/// The coefficient vector for `seed` (see docs/codec.md for the mapping).
#[pyfunction]
#[pyo3(signature = (seed, symbols, q = 8))]
fn coefficients<'py>(py: Python<'py>, seed: u64, symbols: usize, q: i64) -> PyResult<Bound<'py, PyBytes>> {
    let field = field(q)?;
    let what = || format!("a coefficient vector of symbols = {symbols}");
    zeroed_bytes(py, symbols, 1, what, |out| {
        ncmesh_codec::coefficients::generate(field, seed, out);
        Ok(())
    })
}

/// The XOR of the packets, zero-padded to the longest: COPE's combination.
/// XOR a combination with all natives but one to recover that one.
#[pyfunction]
fn xor_combine<'py>(py: Python<'py>, packets: Vec<Bound<'_, PyAny>>) -> PyResult<Bound<'py, PyBytes>> {
    let views = packets.iter().map(View::new).collect::<PyResult<Vec<_>>>()?;
    let natives: Vec<(u64, &[u8])> = views.iter().enumerate().map(|(i, v)| (i as u64, v.bytes())).collect();
    let combination = py.allow_threads(|| ncmesh_codec::xor::Combination::encode(&natives));
    Ok(bytes(py, &combination.payload))
}

/// The kernel tier in use, by the name `NCMESH_GF_ISA` takes (`gfni512`, `avx2`, ...).
#[pyfunction]
fn simd_isa() -> &'static str {
    ncmesh_gf::Kernels::best().isa.name()
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("CodecError", m.py().get_type::<CodecError>())?;
    m.add("ScenarioError", m.py().get_type::<ScenarioError>())?;
    m.add("EmulateError", m.py().get_type::<EmulateError>())?;
    // The package version, here so that reading it costs no importlib.metadata.
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<sim::Simulation>()?;
    m.add_class::<sim::Table>()?;
    m.add_function(wrap_pyfunction!(sim::scenario_schema, m)?)?;
    m.add_class::<Encoder>()?;
    m.add_class::<Decoder>()?;
    m.add_class::<SlidingEncoder>()?;
    m.add_class::<SlidingDecoder>()?;
    m.add_class::<LtEncoder>()?;
    m.add_class::<LtDecoder>()?;
    m.add_function(wrap_pyfunction!(coefficients, m)?)?;
    m.add_function(wrap_pyfunction!(xor_combine, m)?)?;
    m.add_function(wrap_pyfunction!(simd_isa, m)?)?;
    Ok(())
}
