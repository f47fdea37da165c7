//! A deterministic packet-level simulator of lossy mesh networks.
//!
//! It drives the sans-IO protocol endpoints of `ncmesh-proto` under virtual
//! time. A run is a pure function of its scenario and seed.

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
