"""The seed 000 single path (scenarios/honc-single-path.toml) in ns-3, timed.

Run as ``python -m ncmesh.bench_ns3 [--duration S] [--loss P] [--json]``.
Needs the ``ns3`` wheel from PyPI (``pip install ns3``; its Python bindings go
through cppyy). It is not a dependency of ncmesh and is imported only here.

The topology is the chain 1-3-5-8-11-10: four 1 Mbit/s, 100 ms
point-to-point hops with a ``RateErrorModel`` (per packet, rate = loss) on
the receiving device of each direction, then one 100 Mbit/s, 1 ms hop.
Every device queue is a 50-packet DropTail queue and no queue disc sits
above it. Four ``BulkSendApplication`` TCP NewReno flows go from node 1 to
one ``PacketSink`` on node 10. Only ``Simulator::Run()`` is timed.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from typing import Any

#: The path of the scenario, as ncmesh names its nodes.
NODES = (1, 3, 5, 8, 11, 10)
WIRELESS_HOPS = 4
MSS = 1000
RCV_WINDOW_SEGMENTS = 100
QUEUE_PACKETS = 50
FLOWS = 4
PORT = 5000

# Counters kept in C++ so that tracing costs no Python call per packet.
# Retransmissions: a data segment that starts below the highest byte its
# socket has sent. Timeouts: a retransmission sent at an instant when its
# socket received nothing, which only ReTxTimeout does (fast retransmits,
# partial-ACK and SACK retransmissions are all sent on receiving an ACK);
# counted once per socket and instant. This also sees repeated timeouts at
# the 60 s RTO cap, which the RTO trace does not (the value does not change).
# Recoveries: entries into CA_RECOVERY (fast retransmits); loss entries:
# entries into CA_LOSS (the first timeout of a row).
_COUNTERS_CPP = r"""
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include <map>

namespace ncmesh_bench {
// cling may not run the static initialisers of JIT-compiled code (cppyy
// prints "Failed to materialize symbols"), so nothing here relies on one: the
// counters are zero-initialised plain data and the map is built on first use.
struct Counters {
    unsigned long long data_segments;
    unsigned long long retransmits;
    unsigned long long timeouts;
    unsigned long long recoveries;
    unsigned long long loss_entries;
};
Counters counters;

struct SocketSeen {
    unsigned long long highest_end = 0;
    long long last_rx_ns = -1;
    long long last_timeout_ns = -1;
};

inline std::map<const void*, SocketSeen>& sockets() {
    static std::map<const void*, SocketSeen>* m = new std::map<const void*, SocketSeen>();
    return *m;
}

inline void OnTx(ns3::Ptr<const ns3::Packet> p, const ns3::TcpHeader& h, ns3::Ptr<const ns3::TcpSocketBase> s) {
    unsigned int len = p->GetSize();
    if (len == 0) return;
    counters.data_segments++;
    SocketSeen& seen = sockets()[ns3::PeekPointer(s)];
    // Sequence numbers start near 1 and stay below 2^32 here: no wrap in 10000 s at 1 Mbit/s.
    unsigned long long seq = h.GetSequenceNumber().GetValue();
    if (seq < seen.highest_end) {
        counters.retransmits++;
        long long now = ns3::Simulator::Now().GetTimeStep();
        if (now != seen.last_rx_ns && now != seen.last_timeout_ns) {
            counters.timeouts++;
            seen.last_timeout_ns = now;
        }
    }
    if (seq + len > seen.highest_end) seen.highest_end = seq + len;
}

inline void OnRx(ns3::Ptr<const ns3::Packet>, const ns3::TcpHeader&, ns3::Ptr<const ns3::TcpSocketBase> s) {
    sockets()[ns3::PeekPointer(s)].last_rx_ns = ns3::Simulator::Now().GetTimeStep();
}

inline void OnCongState(ns3::TcpSocketState::TcpCongState_t old_state, ns3::TcpSocketState::TcpCongState_t new_state) {
    using State = ns3::TcpSocketState;
    if (new_state == State::CA_RECOVERY && old_state != State::CA_RECOVERY) counters.recoveries++;
    if (new_state == State::CA_LOSS && old_state != State::CA_LOSS) counters.loss_entries++;
}

inline void Connect(unsigned int node) {
    std::string base = "/NodeList/" + std::to_string(node) + "/$ns3::TcpL4Protocol/SocketList/*/";
    ns3::Config::ConnectWithoutContext(base + "Tx", ns3::MakeCallback(&OnTx));
    ns3::Config::ConnectWithoutContext(base + "Rx", ns3::MakeCallback(&OnRx));
    ns3::Config::ConnectWithoutContext(base + "CongState", ns3::MakeCallback(&OnCongState));
}

// The sockets exist once the applications have started.
inline void ConnectAt(double seconds, unsigned int node) {
    ns3::Simulator::Schedule(ns3::Seconds(seconds), &Connect, node);
}
}
"""


def _ns() -> Any:
    """Imports the bindings (slow: cppyy parses the headers), which cppyy makes at run time without types."""
    try:
        from ns import ns
    except ImportError as e:  # pragma: no cover - depends on the machine
        raise SystemExit(f"ns-3 is not installed ({e}); run: python -m pip install ns3") from None
    return ns


def ns3_version() -> str:
    from importlib import metadata

    try:
        return metadata.version("ns3")
    except metadata.PackageNotFoundError:
        return "unknown"


def tcp_defaults(ns: Any, mss: int, rcv_window_segments: int) -> None:
    """TCP as ncmesh's defaults: NewReno, an ACK for every segment, SACK, no
    timestamps, initial window 1, min RTO 200 ms, a receive buffer of
    ``rcv_window_segments`` segments of ``mss`` bytes, a send buffer that never limits."""
    tcp = "ns3::TcpSocket::"
    ns.Config.SetDefault("ns3::TcpL4Protocol::SocketType", ns.TypeIdValue(ns.TcpNewReno.GetTypeId()))
    ns.Config.SetDefault(tcp + "SegmentSize", ns.UintegerValue(mss))
    ns.Config.SetDefault(tcp + "DelAckCount", ns.UintegerValue(1))
    ns.Config.SetDefault(tcp + "InitialCwnd", ns.UintegerValue(1))
    ns.Config.SetDefault(tcp + "RcvBufSize", ns.UintegerValue(rcv_window_segments * mss))
    ns.Config.SetDefault(tcp + "SndBufSize", ns.UintegerValue(10_000 * mss))
    # ncmesh never gives up on a connection; ns-3 does after 6 timeouts in a
    # row (DataRetries) or 6 lost SYNs (ConnCount), which heavy loss reaches.
    ns.Config.SetDefault(tcp + "DataRetries", ns.UintegerValue(1_000_000))
    ns.Config.SetDefault(tcp + "ConnCount", ns.UintegerValue(1_000_000))
    ns.Config.SetDefault("ns3::TcpSocketBase::Sack", ns.BooleanValue(True))
    ns.Config.SetDefault("ns3::TcpSocketBase::Timestamp", ns.BooleanValue(False))
    ns.Config.SetDefault("ns3::TcpSocketBase::MinRto", ns.TimeValue(ns.MilliSeconds(200)))


def run(
    duration: float = 10_000.0,
    loss: float = 0.0,
    seed: int = 1,
    counters: bool = False,
    attributes: Sequence[tuple[str, str]] = (),
) -> dict[str, Any]:
    """Builds the scenario, runs it for ``duration`` simulated seconds and reports.

    ``attributes`` are further ns-3 defaults, ``("ns3::TcpSocketBase::LimitedTransmit", "false")``,
    set after the scenario's own.
    """
    ns = _ns()

    ns.RngSeedManager.SetSeed(seed)
    ns.RngSeedManager.SetRun(1)

    tcp_defaults(ns, MSS, RCV_WINDOW_SEGMENTS)
    for name, value in attributes:
        ns.Config.SetDefault(name, ns.StringValue(value))

    nodes = ns.NodeContainer()
    nodes.Create(len(NODES))
    stack = ns.InternetStackHelper()
    stack.Install(nodes)

    address = ns.Ipv4AddressHelper()
    devices_all = ns.NetDeviceContainer()
    sink_address = None
    for hop in range(len(NODES) - 1):
        wireless = hop < WIRELESS_HOPS
        link = ns.PointToPointHelper()
        link.SetDeviceAttribute("DataRate", ns.StringValue("1Mbps" if wireless else "100Mbps"))
        link.SetChannelAttribute("Delay", ns.StringValue("100ms" if wireless else "1ms"))
        link.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", ns.QueueSizeValue(ns.QueueSize(f"{QUEUE_PACKETS}p")))
        devices = link.Install(nodes.Get(hop), nodes.Get(hop + 1))
        if wireless and loss > 0:
            for end in range(2):
                errors = ns.CreateObject[ns.RateErrorModel]()
                errors.SetUnit(ns.RateErrorModel.ERROR_UNIT_PACKET)
                errors.SetRate(loss)
                devices.Get(end).SetAttribute("ReceiveErrorModel", ns.PointerValue(errors))
        address.SetBase(ns.Ipv4Address(f"10.0.{hop + 1}.0"), ns.Ipv4Mask("255.255.255.0"))
        interfaces = address.Assign(devices)
        devices_all.Add(devices)
        if hop == len(NODES) - 2:
            sink_address = interfaces.GetAddress(1)
    # Assign() installs a default queue disc (fq_codel) on every device; take
    # it off so that the 50-packet device queue is the only one.
    ns.TrafficControlHelper().Uninstall(devices_all)
    ns.Ipv4GlobalRoutingHelper.PopulateRoutingTables()

    sink_helper = ns.PacketSinkHelper(
        "ns3::TcpSocketFactory", ns.InetSocketAddress(ns.Ipv4Address.GetAny(), PORT).ConvertTo()
    )
    sink_apps = sink_helper.Install(nodes.Get(len(NODES) - 1))
    sink_apps.Start(ns.Seconds(0))
    sender = ns.BulkSendHelper("ns3::TcpSocketFactory", ns.InetSocketAddress(sink_address, PORT).ConvertTo())
    sender.SetAttribute("MaxBytes", ns.UintegerValue(0))
    sender.SetAttribute("SendSize", ns.UintegerValue(MSS))
    for _ in range(FLOWS):
        apps = sender.Install(nodes.Get(0))
        apps.Start(ns.Seconds(0))

    if counters:
        ns.cppyy.cppdef(_COUNTERS_CPP)
        ns.cppyy.gbl.ncmesh_bench.ConnectAt(1e-6, 0)

    check = _check_queues(ns, nodes)
    ns.Simulator.Stop(ns.Seconds(duration))
    started = time.perf_counter()
    ns.Simulator.Run()
    wall = time.perf_counter() - started

    sink = ns.DynamicCast[ns.PacketSink](sink_apps.Get(0))
    received = int(sink.GetTotalRx())
    report: dict[str, Any] = {
        "simulator": "ns-3",
        "version": ns3_version(),
        "loss": loss,
        "wall_s": wall,
        "sim_time_s": ns.Simulator.Now().GetSeconds(),
        "goodput_bps": received * 8 / duration,
        "received_bytes": received,
        "events": int(ns.Simulator.GetEventCount()),
        "attributes": dict(attributes),
    }
    report["events_per_s"] = report["events"] / wall if wall > 0 else None
    report.update(check)
    if counters:
        c = ns.cppyy.gbl.ncmesh_bench.counters
        report.update(
            data_segments=int(c.data_segments),
            retransmits=int(c.retransmits),
            timeouts=int(c.timeouts),
            recoveries=int(c.recoveries),
            loss_entries=int(c.loss_entries),
        )
    ns.Simulator.Destroy()
    return report


def _check_queues(ns: Any, nodes: Any) -> dict[str, Any]:
    """What sits between IP and each wire: queue discs (none expected) and the device queue sizes."""
    queue_discs = 0
    sizes = set()
    for i in range(nodes.GetN()):
        node = nodes.Get(i)
        tc = node.GetObject[ns.TrafficControlLayer]()
        for d in range(node.GetNDevices()):
            device = node.GetDevice(d)
            p2p = ns.DynamicCast[ns.PointToPointNetDevice](device)
            if not p2p:
                continue  # the loopback device
            if tc.GetRootQueueDiscOnDevice(device):
                queue_discs += 1
            sizes.add(str(p2p.GetQueue().GetMaxSize()))
    return {"queue_discs": queue_discs, "device_queue": sorted(sizes)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ncmesh.bench_ns3", description=__doc__.split("\n")[0])
    parser.add_argument("--duration", type=float, default=10_000.0, help="simulated seconds (default 10000)")
    parser.add_argument("--loss", type=float, default=0.0, help="loss probability on each wireless hop, each direction")
    parser.add_argument("--seed", type=int, default=1, help="ns-3 RngSeedManager seed")
    parser.add_argument(
        "--counters", action="store_true", help="also count retransmissions, timeouts, recoveries (C++ trace sinks)"
    )
    parser.add_argument(
        "--attr",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="another ns-3 default, such as ns3::TcpSocketBase::LimitedTransmit=false (repeatable)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    if not 0.0 <= args.loss < 1.0:
        parser.error("--loss must be in [0, 1)")
    attributes = []
    for a in args.attr:
        name, sep, value = a.partition("=")
        if not sep:
            parser.error(f"--attr {a}: expected NAME=VALUE")
        attributes.append((name.strip(), value.strip()))
    report = run(args.duration, args.loss, args.seed, args.counters, attributes)
    if args.json:
        print(json.dumps(report))
    else:
        events = (
            f"{report['events']:,} events, {report['events_per_s'] / 1e6:.2f} M events/s; "
            if report.get("events")
            else ""
        )
        print(
            f"ns-3 {report['version']}: {report['sim_time_s']:,.0f} simulated s in {report['wall_s']:.2f} s ({events}"
            f"goodput {report['goodput_bps'] / 1e3:,.1f} kbit/s"
        )
        if args.counters:
            print(
                f"data segments {report['data_segments']:,}, retransmits {report['retransmits']:,}, "
                f"timeouts {report['timeouts']:,}, recoveries {report['recoveries']:,}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
