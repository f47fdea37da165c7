"""The seed 000 single path (scenarios/honc-single-path.toml) in ns-3, timed;
and any chain of point-to-point hops with ns-3's TCP, for validation.

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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

WIRELESS_HOPS = 4
MSS = 1000
RCV_WINDOW_SEGMENTS = 100
QUEUE_PACKETS = 50
FLOWS = 4
PORT = 5000


@dataclass(frozen=True)
class Hop:
    """One point-to-point hop: its rate and delay as ns-3 strings, and whether it loses packets."""

    rate: str
    delay: str
    lossy: bool


#: The seed 000 single path: four lossy 1 Mbit/s, 100 ms hops, then 100 Mbit/s, 1 ms.
HONC_PATH = (Hop("1Mbps", "100ms", True),) * WIRELESS_HOPS + (Hop("100Mbps", "1ms", False),)

#: The benchmark's TCP, as ncmesh's ns2 defaults plus the brief: NewReno,
#: 1000-byte segments, an ACK for every segment, SACK, no timestamps,
#: initial window 1, min RTO 200 ms, a 100-segment receive buffer.
BENCH_TCP = {
    "ns3::TcpSocket::SegmentSize": str(MSS),
    "ns3::TcpSocket::DelAckCount": "1",
    "ns3::TcpSocket::InitialCwnd": "1",
    "ns3::TcpSocket::RcvBufSize": str(RCV_WINDOW_SEGMENTS * MSS),
    "ns3::TcpSocketBase::Sack": "true",
    "ns3::TcpSocketBase::Timestamp": "false",
    "ns3::TcpSocketBase::MinRto": "200ms",
    # ncmesh's ns2 profile never gives up on a connection; ns-3 does after 6
    # timeouts in a row (DataRetries) or 6 lost SYNs (ConnCount).
    "ns3::TcpSocket::DataRetries": "1000000",
    "ns3::TcpSocket::ConnCount": "1000000",
}

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

inline void Reset() {
    counters = Counters();
    sockets().clear();
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


def tcp_defaults(ns: Any, tcp: Mapping[str, str] = BENCH_TCP, congestion_control: str = "TcpNewReno") -> None:
    """Sets ns-3's TCP defaults: ``tcp`` by attribute path, the congestion
    control by class name, and a send buffer that never limits, as ncmesh has none."""
    ns.Config.SetDefault("ns3::TcpL4Protocol::SocketType", ns.TypeIdValue(getattr(ns, congestion_control).GetTypeId()))
    ns.Config.SetDefault("ns3::TcpSocket::SndBufSize", ns.UintegerValue(10_000_000))
    for name, value in tcp.items():
        ns.Config.SetDefault(name, ns.StringValue(value))


def run(
    duration: float = 10_000.0,
    loss: float = 0.0,
    seed: int = 1,
    counters: bool = False,
    attributes: Sequence[tuple[str, str]] = (),
    *,
    hops: Sequence[Hop] = HONC_PATH,
    flows: int = FLOWS,
    reverse_loss: bool = True,
    congestion_control: str = "TcpNewReno",
    tcp: Mapping[str, str] = BENCH_TCP,
    trace: bool = False,
) -> dict[str, Any]:
    """Builds the chain, runs it for ``duration`` simulated seconds and reports.

    Every lossy hop loses a fraction ``loss`` of the packets its downstream
    end receives, and of those its upstream end receives when
    ``reverse_loss``. ``tcp`` are ns-3 defaults by attribute path;
    ``attributes`` are further ones (``("ns3::TcpSocketBase::LimitedTransmit",
    "false")``), set after them. The send buffer never limits, as ncmesh has
    none. ``trace`` adds the first flow's cwnd, RTO and retransmissions over
    time (``trace`` in the report).
    """
    ns = _ns()

    # Defaults set by a run before this one in the process would otherwise stay.
    ns.Config.Reset()
    ns.RngSeedManager.SetSeed(seed)
    ns.RngSeedManager.SetRun(1)

    tcp_defaults(ns, tcp, congestion_control)
    for name, value in attributes:
        ns.Config.SetDefault(name, ns.StringValue(value))

    nodes = ns.NodeContainer()
    nodes.Create(len(hops) + 1)
    stack = ns.InternetStackHelper()
    stack.Install(nodes)

    address = ns.Ipv4AddressHelper()
    devices_all = ns.NetDeviceContainer()
    sink_address = None
    for i, hop in enumerate(hops):
        link = ns.PointToPointHelper()
        link.SetDeviceAttribute("DataRate", ns.StringValue(hop.rate))
        link.SetChannelAttribute("Delay", ns.StringValue(hop.delay))
        link.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", ns.QueueSizeValue(ns.QueueSize(f"{QUEUE_PACKETS}p")))
        devices = link.Install(nodes.Get(i), nodes.Get(i + 1))
        if hop.lossy and loss > 0:
            # The downstream end receives the data; the upstream end the ACKs.
            for end in (1, 0) if reverse_loss else (1,):
                errors = ns.CreateObject[ns.RateErrorModel]()
                errors.SetUnit(ns.RateErrorModel.ERROR_UNIT_PACKET)
                errors.SetRate(loss)
                # A stream of its own per link direction, so that a run's
                # losses depend on its seed alone, not on runs before it.
                errors.AssignStreams(2 * i + end)
                devices.Get(end).SetAttribute("ReceiveErrorModel", ns.PointerValue(errors))
        address.SetBase(ns.Ipv4Address(f"10.0.{i + 1}.0"), ns.Ipv4Mask("255.255.255.0"))
        interfaces = address.Assign(devices)
        devices_all.Add(devices)
        if i == len(hops) - 1:
            sink_address = interfaces.GetAddress(1)
    # Assign() installs a default queue disc (fq_codel) on every device; take
    # it off so that the 50-packet device queue is the only one.
    ns.TrafficControlHelper().Uninstall(devices_all)
    ns.Ipv4GlobalRoutingHelper.PopulateRoutingTables()

    sink_helper = ns.PacketSinkHelper(
        "ns3::TcpSocketFactory", ns.InetSocketAddress(ns.Ipv4Address.GetAny(), PORT).ConvertTo()
    )
    sink_apps = sink_helper.Install(nodes.Get(len(hops)))
    sink_apps.Start(ns.Seconds(0))
    sender = ns.BulkSendHelper("ns3::TcpSocketFactory", ns.InetSocketAddress(sink_address, PORT).ConvertTo())
    sender.SetAttribute("MaxBytes", ns.UintegerValue(0))
    sender.SetAttribute("SendSize", ns.UintegerValue(MSS))
    for _ in range(flows):
        apps = sender.Install(nodes.Get(0))
        apps.Start(ns.Seconds(0))

    if counters:
        _define(ns, "counters", _COUNTERS_CPP)
        ns.cppyy.gbl.ncmesh_bench.Reset()
        ns.cppyy.gbl.ncmesh_bench.ConnectAt(1e-6, 0)
    if trace:
        _define(ns, "trace", _TRACE_CPP)
        ns.cppyy.gbl.ncmesh_trace.Reset()
        ns.cppyy.gbl.ncmesh_trace.ConnectAt(1e-6)

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
    if trace:
        t = ns.cppyy.gbl.ncmesh_trace
        report["trace"] = {
            "cwnd": [(float(t.cwnd_t[i]), int(t.cwnd_v[i])) for i in range(t.cwnd_t.size())],
            "rto": [(float(t.rto_t[i]), float(t.rto_v[i])) for i in range(t.rto_t.size())],
            "retransmits": [float(x) for x in t.retx_t],
        }
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


# The first flow's cwnd, RTO and retransmissions over time, for the traces
# of docs/validation.md. The sockets exist once the applications have started.
_TRACE_CPP = r"""
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include <vector>

namespace ncmesh_trace {
std::vector<double> cwnd_t, rto_t, retx_t;
std::vector<unsigned long long> cwnd_v;
std::vector<double> rto_v;
unsigned long long highest_end = 0;

inline void Reset() {
    cwnd_t.clear(); cwnd_v.clear(); rto_t.clear(); rto_v.clear(); retx_t.clear(); highest_end = 0;
}
inline void OnCwnd(uint32_t, uint32_t now) {
    cwnd_t.push_back(ns3::Simulator::Now().GetSeconds());
    cwnd_v.push_back(now);
}
inline void OnRto(ns3::Time, ns3::Time now) {
    rto_t.push_back(ns3::Simulator::Now().GetSeconds());
    rto_v.push_back(now.GetSeconds());
}
inline void OnTx(ns3::Ptr<const ns3::Packet> p, const ns3::TcpHeader& h, ns3::Ptr<const ns3::TcpSocketBase>) {
    unsigned int len = p->GetSize();
    if (len == 0) return;
    unsigned long long seq = h.GetSequenceNumber().GetValue();
    if (seq < highest_end) retx_t.push_back(ns3::Simulator::Now().GetSeconds());
    if (seq + len > highest_end) highest_end = seq + len;
}
inline void Connect() {
    std::string base = "/NodeList/0/$ns3::TcpL4Protocol/SocketList/0/";
    ns3::Config::ConnectWithoutContext(base + "CongestionWindow", ns3::MakeCallback(&OnCwnd));
    ns3::Config::ConnectWithoutContext(base + "RTO", ns3::MakeCallback(&OnRto));
    ns3::Config::ConnectWithoutContext(base + "Tx", ns3::MakeCallback(&OnTx));
}
inline void ConnectAt(double seconds) {
    ns3::Simulator::Schedule(ns3::Seconds(seconds), &Connect);
}
}
"""


def _define(ns: Any, name: str, code: str, _defined: set[str] = set()) -> None:  # noqa: B006 - once per process
    """Compiles trace sinks once per process: cppyy cannot define them twice."""
    if name not in _defined:
        ns.cppyy.cppdef(code)
        _defined.add(name)


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
