//! A deterministic packet-level simulator of lossy mesh networks.
//!
//! It drives the sans-IO nodes and protocols of `ncmesh-proto` under
//! virtual time, over media (point-to-point links) that carry their frames,
//! as a TOML scenario describes (docs/scenarios.md). A run is a pure
//! function of its scenario and seed.
//!
//! Start with a scenario and a [`Simulation`]:
//!
//! ```
//! use ncmesh_sim::scenario::{Scenario, Source};
//! use ncmesh_sim::Simulation;
//!
//! let text = r#"
//!     duration = "20s"
//!     nodes = [1, 2]
//!     [[links]]
//!     between = [1, 2]
//!     capacity = "10Mbps"
//!     delay = "20ms"
//!     loss = 0.01
//!     [[flows]]
//!     src = 1
//!     dst = 2
//!     app = "bulk"
//! "#;
//! let overrides = [("seed".to_string(), "7".to_string())];
//! let scenario = Scenario::load(Source::Toml { text, origin: "example.toml" }, &overrides)?;
//! let result = Simulation::new(&scenario).run();
//! assert!(result.flows[0].goodput_bps > 0.0);
//! # Ok::<(), ncmesh_sim::scenario::ScenarioError>(())
//! ```
//!
//! The layout: [`scenario`] (the schema, loading and checks), [`network`]
//! (nodes, media, routes and flows built through the scenario's registry of
//! protocols), [`medium`], [`app`] (the applications at the flows' ends),
//! [`engine`] and the event loop, [`result`] and [`metrics`] (what a run
//! measures).

pub mod app;
pub mod engine;
pub mod medium;
pub mod metrics;
pub mod network;
pub mod result;
pub mod rng;
pub mod routing;
pub mod scenario;
mod world;

pub use result::RunResult;
pub use world::Simulation;
