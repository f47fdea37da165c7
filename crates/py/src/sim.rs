//! Bindings of the simulator: load a scenario, run it in slices of simulated
//! time with the GIL released (so Python can show progress and take Ctrl-C
//! between slices), and hand back the result as JSON columns.

use crate::scenario_error;
use ncmesh_proto::Instant;
use ncmesh_sim::scenario::{self, Scenario, Source};
use ncmesh_sim::Simulation as Engine;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use std::sync::Mutex;

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
            other => return Err(pyo3::exceptions::PyValueError::new_err(format!("format must be \"toml\" or \"json\", not {other:?}"))),
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

    /// Ends the run and returns its result as a JSON object.
    fn finish(&self, py: Python<'_>) -> PyResult<String> {
        let engine = self.engine.lock().map_err(|_| PyRuntimeError::new_err("a previous run panicked"))?.take().ok_or_else(finished)?;
        Ok(py.allow_threads(|| serde_json::to_string(&engine.finish()).expect("results serialise")))
    }
}

fn finished() -> PyErr {
    PyRuntimeError::new_err("this simulation has already finished")
}

/// The JSON Schema of scenario files.
#[pyfunction]
pub fn scenario_schema() -> String {
    scenario::json_schema()
}
