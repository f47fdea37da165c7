//! TCP-HONC (seed 000) under the simulator: the single-path scenario of section 6.1.

mod common;
use common::*;

fn honc(loss: &str, duration: &str, extra: &[(&str, &str)]) -> ncmesh_sim::RunResult {
    let mut o = vec![("coding.scheme", "\"honc\""), ("link_class.wireless.loss", loss), ("duration", duration)];
    o.extend_from_slice(extra);
    run_named("honc-single-path", &o)
}

#[test]
#[ignore]
fn print_table() {
    for loss in ["0.0", "0.2", "0.35"] {
        let t = std::time::Instant::now();
        let r = honc(loss, "1000", &[]);
        let total: f64 = r.flows.iter().map(|f| f.goodput_bps).sum();
        let delay: f64 = r.flows.iter().map(|f| f.delay_mean_s).sum::<f64>() / 4.0;
        let q: f64 = r.queues.value.iter().copied().fold(0.0, f64::max);
        println!("p {loss}: total {total:.0} fairness {:.4} delay {delay:.3} maxq {q} events {} wall {:?}", r.fairness, r.events, t.elapsed());
        for l in &r.links { println!("  {}->{} tx {} lost {} drop {}", l.from, l.to, l.transmitted, l.lost, l.dropped); }
    }
}
