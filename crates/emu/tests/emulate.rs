//! `ncmesh emulate` on this machine: namespaces joined by the scenario's
//! links, with kernel traffic through them. Skips, saying why, where
//! namespaces and TUN devices cannot be made (not root, no /dev/net/tun).

mod common;
use common::{available, command, scenario, CHAIN};
use ncmesh_emu::emulate;
use ncmesh_proto::Duration;
use ncmesh_sim::scenario::{CommandSpec, Seconds};

#[test]
fn ping_crosses_the_chain_in_its_delay() {
    if !available("ping") {
        return;
    }
    let r = emulate(&scenario(CHAIN), &[command(1, "ping -c 5 -i 0.2 -s 56 10.0.0.3", false)]).unwrap();
    let ping = &r.commands[0];
    assert_eq!(ping.status, Some(0), "{}{}", ping.stdout, ping.stderr);
    // Four one-way hops of 20 ms, and 84 bytes at 10 Mbit/s on each.
    let rtts: Vec<f64> = ping
        .stdout
        .lines()
        .filter_map(|l| l.split("time=").nth(1))
        .map(|t| t.trim_end_matches(" ms").parse().unwrap())
        .collect();
    assert_eq!(rtts.len(), 5, "{}", ping.stdout);
    for rtt in rtts {
        assert!((80.2..95.0).contains(&rtt), "rtt {rtt} ms");
    }
    assert!(r.links.iter().all(|l| l.lost == 0 && l.dropped == 0));
    assert_eq!(r.nodes[2].address, "10.0.0.3");
}

#[test]
fn iperf3_gets_the_link_rate() {
    if !available("iperf3") {
        return;
    }
    let text = CHAIN.replace("10Mbps", "2Mbps");
    let r = emulate(
        &scenario(&text),
        &[
            command(3, "iperf3 -s -1 -p 5201", true),
            CommandSpec {
                start: Seconds(Duration::from_millis(500)),
                ..command(1, "iperf3 -c 10.0.0.3 -p 5201 -t 8 -J", false)
            },
        ],
    )
    .unwrap();
    let client = r.commands.iter().find(|c| c.run.contains("-c")).unwrap();
    assert_eq!(client.status, Some(0), "{}{}", client.stdout, client.stderr);
    let bps: f64 = client
        .stdout
        .split("\"sum_received\"")
        .nth(1)
        .and_then(|s| s.split("\"bits_per_second\":").nth(1))
        .and_then(|s| s.split([',', '}']).next())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or_else(|| panic!("no receiver rate in {}", client.stdout));
    // 1448 of 1500 bytes are payload; slow start costs a little of 8 s.
    assert!(bps > 0.8 * 2e6 * 1448.0 / 1500.0 && bps < 2e6, "{bps} bit/s");
    assert!(r.timing.samples > 1000);
}

#[test]
fn namespaces_left_by_a_killed_emulation_are_reaped() {
    if !available("sleep") {
        return;
    }
    // A namespace named as the first node of an emulation in process `owner`,
    // with a program running in it; then the owner dies, as an emulation
    // killed by SIGKILL does. The owner lives until the program is inside, so
    // that an emulation running beside this test cannot reap the namespace
    // half made.
    let mut owner = std::process::Command::new("sleep").arg("300").spawn().unwrap();
    let orphan = format!("ncm{}x0-0", owner.id());
    let ip = |args: &[&str]| std::process::Command::new("ip").args(args).status().unwrap().success();
    assert!(ip(&["netns", "add", &orphan]));
    let mut left = std::process::Command::new("ip").args(["netns", "exec", &orphan, "sleep", "300"]).spawn().unwrap();
    let inside = (0..50).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(100));
        let pids = std::process::Command::new("ip").args(["netns", "pids", &orphan]).output().unwrap();
        !pids.stdout.is_empty()
    });
    assert!(inside, "the program entered the namespace");
    owner.kill().unwrap();
    owner.wait().unwrap();

    let r = emulate(&scenario(&CHAIN.replace("duration = 30", "duration = 1")), &[]).unwrap();
    assert_eq!(r.nodes.len(), 3);
    let listed = std::process::Command::new("ip").args(["netns", "list"]).output().unwrap();
    let ended = (0..50).find_map(|_| {
        std::thread::sleep(std::time::Duration::from_millis(100));
        left.try_wait().unwrap()
    });
    if ended.is_none() {
        let _ = left.kill();
        let _ = ip(&["netns", "del", &orphan]);
    }
    assert!(!String::from_utf8_lossy(&listed.stdout).contains(&orphan), "the orphan namespace is still there");
    assert!(ended.is_some_and(|status| !status.success()), "what ran in it was ended");
}
