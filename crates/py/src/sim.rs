//! Bindings of the simulator: load a scenario, run it in slices of simulated
//! time with the GIL released (so Python can show progress and take Ctrl-C
//! between slices), and hand back the result as Arrow tables.

use crate::scenario_error;
use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use arrow_array::types::{Float64Type, UInt32Type, UInt64Type};
use arrow_array::{
    Array, ArrayRef, Float64Array, RecordBatch, RecordBatchIterator, StringArray, UInt32Array, UInt64Array,
};
use arrow_schema::{DataType, Field, Schema};
use ncmesh_proto::Instant;
use ncmesh_sim::result::{Column, Table as ColumnTable};
use ncmesh_sim::scenario::{self, Scenario, Source};
use ncmesh_sim::Simulation as Engine;
use pyo3::exceptions::{PyKeyError, PyRuntimeError};
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyDict, PyList};
use std::ffi::CString;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// A loaded scenario, running or finished.
#[pyclass(module = "ncmesh._native")]
#[derive(Debug)]
pub struct Simulation {
    /// A mutex because Python objects may be shared between threads; the
    /// engine itself is single-threaded.
    engine: Mutex<Option<Engine>>,
    scenario: Scenario,
}

impl Simulation {
    fn with<T>(&self, f: impl FnOnce(&mut Engine) -> T) -> PyResult<T> {
        let mut guard = self.engine.lock().map_err(|_| PyRuntimeError::new_err("a previous run panicked"))?;
        guard.as_mut().map(f).ok_or_else(finished)
    }
}

#[pymethods]
impl Simulation {
    /// `text` is TOML (`format="toml"`) or JSON; `overrides` are (dotted key, TOML value) pairs.
    #[new]
    #[pyo3(signature = (text, origin = "<scenario>", format = "toml", overrides = Vec::new()))]
    fn new(text: &str, origin: &str, format: &str, overrides: Vec<(String, String)>) -> PyResult<Self> {
        let source = match format {
            "toml" => Source::Toml { text, origin },
            "json" => Source::Json { text, origin },
            other => {
                return Err(pyo3::exceptions::PyValueError::new_err(format!(
                    "format must be \"toml\" or \"json\", not {other:?}"
                )))
            }
        };
        let scenario = Scenario::load(source, &overrides).map_err(scenario_error)?;
        Ok(Simulation { engine: Mutex::new(Some(Engine::new(&scenario))), scenario })
    }

    /// Runs until simulated time `t` seconds (or the end).
    fn run_until(&self, py: Python<'_>, t: f64) -> PyResult<()> {
        let until = Instant::from_secs_f64(t);
        py.allow_threads(|| self.with(|engine| engine.run_until(until)))
    }

    #[getter]
    fn now_s(&self) -> PyResult<f64> {
        self.with(|engine| engine.now().as_secs_f64())
    }

    #[getter]
    fn duration_s(&self) -> f64 {
        self.scenario.spec.duration.0.as_secs_f64()
    }

    #[getter]
    fn events(&self) -> PyResult<u64> {
        self.with(|engine| engine.events())
    }

    /// The scenario as it runs: classes and defaults merged, overrides applied.
    fn resolved_toml(&self) -> String {
        self.scenario.to_toml()
    }

    /// Runs the scenario's links in real time between network namespaces
    /// (`ncmesh emulate`), with its commands and `commands`, each
    /// `(node, command, start_s, background)`. Returns the report as JSON.
    #[pyo3(signature = (commands = Vec::new()))]
    fn emulate(&self, py: Python<'_>, commands: Vec<(u32, String, f64, bool)>) -> PyResult<String> {
        let extra: Vec<scenario::CommandSpec> = commands
            .into_iter()
            .map(|(node, run, start, background)| scenario::CommandSpec {
                node,
                run,
                start: scenario::Seconds(ncmesh_proto::Duration::from_secs_f64(start.max(0.0))),
                background,
            })
            .collect();
        // The emulation runs beside this thread, which takes the GIL every
        // 50 ms to run Python's signal handlers: Ctrl-C (or a handler the
        // caller installed for SIGTERM) stops it, its commands ended and its
        // namespaces deleted, and the handler's exception is raised.
        let interrupt = AtomicBool::new(false);
        let mut raised = None;
        let report = std::thread::scope(|s| {
            let run = s.spawn(|| ncmesh_emu::emulate_until(&self.scenario, &extra, &interrupt));
            while !run.is_finished() {
                py.allow_threads(|| std::thread::sleep(std::time::Duration::from_millis(50)));
                if raised.is_none() {
                    if let Err(e) = py.check_signals() {
                        raised = Some(e);
                        interrupt.store(true, Ordering::Relaxed);
                    }
                }
            }
            run.join().expect("the emulation does not panic")
        });
        if let Some(e) = raised {
            return Err(e);
        }
        let report = report.map_err(crate::emulate_error)?;
        Ok(serde_json::to_string(&report).expect("a report serialises"))
    }

    /// Ends the run. Returns a dict: `fairness`, `events`, `sim_time_s`, and
    /// `tables`, a dict of the result tables by name (flows, links, goodput,
    /// queues, cwnd, rtt) as [`Table`]s.
    fn finish<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let engine = self
            .engine
            .lock()
            .map_err(|_| PyRuntimeError::new_err("a previous run panicked"))?
            .take()
            .ok_or_else(finished)?;
        let (fairness, events, sim_time_s, batches) = py.allow_threads(|| {
            let result = engine.finish();
            let (fairness, events, sim_time_s) = (result.fairness, result.events, result.sim_time_s);
            let batches: Vec<(&'static str, RecordBatch)> =
                result.into_tables().into_iter().map(|t| (t.name, record_batch(t))).collect();
            (fairness, events, sim_time_s, batches)
        });
        let tables = PyDict::new(py);
        for (name, batch) in batches {
            tables.set_item(name, Table { name, batch })?;
        }
        let out = PyDict::new(py);
        out.set_item("fairness", fairness)?;
        out.set_item("events", events)?;
        out.set_item("sim_time_s", sim_time_s)?;
        out.set_item("tables", tables)?;
        Ok(out)
    }
}

/// One result table, held as an Arrow record batch. Arrow libraries import it
/// without a copy through the Arrow PyCapsule interface (`__arrow_c_stream__`):
/// `pyarrow.table(t)`. `column` reads a few values without Arrow.
#[pyclass(module = "ncmesh._native", frozen)]
#[derive(Debug)]
pub struct Table {
    name: &'static str,
    batch: RecordBatch,
}

#[pymethods]
impl Table {
    #[getter]
    fn name(&self) -> &'static str {
        self.name
    }

    #[getter]
    fn num_rows(&self) -> usize {
        self.batch.num_rows()
    }

    #[getter]
    fn column_names(&self) -> Vec<String> {
        self.batch.schema().fields().iter().map(|f| f.name().clone()).collect()
    }

    /// The values of one column as a list; missing values are None.
    fn column<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyList>> {
        let array = self
            .batch
            .column_by_name(name)
            .ok_or_else(|| PyKeyError::new_err(format!("{}: no column {name:?}", self.name)))?;
        let any = array.as_any();
        if let Some(a) = any.downcast_ref::<UInt64Array>() {
            PyList::new(py, a.iter())
        } else if let Some(a) = any.downcast_ref::<UInt32Array>() {
            PyList::new(py, a.iter())
        } else if let Some(a) = any.downcast_ref::<Float64Array>() {
            PyList::new(py, a.iter())
        } else if let Some(a) = any.downcast_ref::<StringArray>() {
            PyList::new(py, a.iter())
        } else {
            unreachable!("record_batch makes no other array types")
        }
    }

    /// The table as an Arrow C stream of one record batch, in a PyCapsule.
    /// A requested schema is not honoured: the columns keep their own types.
    #[pyo3(signature = (requested_schema = None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema;
        let reader = RecordBatchIterator::new([Ok(self.batch.clone())], self.batch.schema());
        let stream = FFI_ArrowArrayStream::new(Box::new(reader));
        PyCapsule::new(py, stream, Some(CString::from(c"arrow_array_stream")))
    }

    fn __len__(&self) -> usize {
        self.batch.num_rows()
    }

    fn __repr__(&self) -> String {
        format!(
            "<ncmesh._native.Table {} with {} rows: {}>",
            self.name,
            self.batch.num_rows(),
            self.column_names().join(", ")
        )
    }
}

/// A result table as an Arrow record batch. Numeric columns hand their
/// vectors to Arrow without a copy; only `OptF64` gains a validity bitmap.
fn record_batch(table: ColumnTable) -> RecordBatch {
    let (fields, arrays): (Vec<Field>, Vec<ArrayRef>) = table
        .columns
        .into_iter()
        .map(|(name, column)| {
            let (data_type, nullable, array): (DataType, bool, ArrayRef) = match column {
                Column::U64(v) => {
                    (DataType::UInt64, false, Arc::new(arrow_array::PrimitiveArray::<UInt64Type>::from(v)))
                }
                Column::U32(v) => {
                    (DataType::UInt32, false, Arc::new(arrow_array::PrimitiveArray::<UInt32Type>::from(v)))
                }
                Column::F64(v) => {
                    (DataType::Float64, false, Arc::new(arrow_array::PrimitiveArray::<Float64Type>::from(v)))
                }
                Column::OptF64(v) => (DataType::Float64, true, Arc::new(Float64Array::from(v))),
                Column::Str(v) => (DataType::Utf8, false, Arc::new(StringArray::from(v))),
            };
            (Field::new(name, data_type, nullable), array)
        })
        .unzip();
    RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays).expect("result columns are equally long")
}

fn finished() -> PyErr {
    PyRuntimeError::new_err("this simulation has already finished")
}

/// The JSON Schema of scenario files.
#[pyfunction]
pub fn scenario_schema() -> String {
    scenario::json_schema()
}
