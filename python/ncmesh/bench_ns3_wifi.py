"""The shared-channel scenarios of docs/validation.md, built in ns-3's wifi module.

Run as ``python -m ncmesh.bench_ns3_wifi serve``: a worker that reads one JSON
request per line on standard input (``{"case": "x", "seed": 3, "duration": 20}``)
and answers one JSON line with each flow's goodput and the wall time of
``Simulator::Run()``, so that a comparison can alternate between ncmesh and
ns-3 without paying ns-3's start-up (about 20 s of header parsing) per run.
``python -m ncmesh.bench_ns3_wifi run --case x --seed 1`` runs one case.
Needs the ``ns3`` wheel from PyPI; it is imported only here.

Every case is 802.11b, ad hoc, non-QoS, with the YANS PHY and channel:
data and control frames at 11 Mbit/s (ConstantRateWifiManager; ns-3 sends
ACKs at the data rate), long preamble, CWmin 31, CWmax 1023, constant-speed
propagation delay, and a ``RangePropagationLossModel`` with MaxRange = the
scenario's reach: every pair within it decodes, every pair beyond it neither
decodes nor senses (ncmesh's ``sense = reach``). Preamble detection is off,
so a receiver locks on the first frame of a collision and fails it, as
ncmesh's protocol model does. The MAC queue holds 100 packets with no
queue disc above it and no age limit; ARP caches are filled before the run.
Per-pair frame errors of data frames (ncmesh's ``wifi.fer``) are a small C++
``ErrorModel`` on each receiver's PHY, keyed by the transmitter.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from .bench_ns3 import BENCH_TCP, tcp_defaults

#: Each case: positions (m), reach (m), data-frame error rates by (from, to)
#: node index, flows (src, dst, "udp" or "tcp", offered bit/s), static
#: routes (at, to, via), retry limit, RTS threshold. Node i is ncmesh's node i + 1.
CASES: dict[str, dict[str, Any]] = {
    "saturated-link": {
        "positions": [(0, 0), (10, 0)],
        "flows": [(0, 1, "udp", 11e6)],
    },
    "line-udp": {
        "positions": [(0, 0), (9, 0), (18, 0)],
        "fer": {(0, 2): 0.6, (2, 0): 0.6},
        "flows": [(0, 2, "udp", 11e6)],
        "routes": [(0, 2, 1), (2, 0, 1)],
        "retry_limit": 4,
    },
    "line-tcp": {
        "positions": [(0, 0), (9, 0), (18, 0)],
        "fer": {(0, 2): 0.6, (2, 0): 0.6},
        "flows": [(0, 2, "tcp", 0)],
        "routes": [(0, 2, 1), (2, 0, 1)],
        "retry_limit": 4,
    },
    "x": {
        "positions": [(0, 0), (15, 25), (0, 25), (15, 0), (7.5, 12.5)],
        "flows": [(0, 1, "udp", 3e6), (2, 3, "udp", 3e6)],
        "routes": [(0, 1, 4), (2, 3, 4)],
    },
    "hidden": {
        "positions": [(0, 0), (18, 0), (36, 0)],
        "flows": [(0, 1, "udp", 6e6), (2, 1, "udp", 6e6)],
    },
    "hidden-rts": {
        "positions": [(0, 0), (18, 0), (36, 0)],
        "flows": [(0, 1, "udp", 6e6), (2, 1, "udp", 6e6)],
        "rts_threshold": 0,
    },
}

REACH_M = 20.0
UDP_PAYLOAD = 1472
MSS = 1460
RCV_WINDOW_SEGMENTS = 64
QUEUE_PACKETS = 100
PORT = 5000

_ERROR_MODEL_CPP = r"""
#include "ns3/core-module.h"
#include "ns3/network-module.h"
#include "ns3/wifi-module.h"
#include <map>

namespace ncmesh_wifi {
// Loses data frames from given transmitters with given probabilities: a
// per-pair frame error rate at one receiver. Control frames pass.
class PairErrorModel : public ns3::ErrorModel {
  public:
    std::map<ns3::Mac48Address, double> fer;
    ns3::Ptr<ns3::UniformRandomVariable> uniform = ns3::CreateObject<ns3::UniformRandomVariable>();

  private:
    bool DoCorrupt(ns3::Ptr<ns3::Packet> p) override {
        // Frame control, duration, address 1, address 2: the first 16 bytes.
        uint8_t head[16];
        if (p->GetSize() < 16 || p->CopyData(head, 16) < 16) return false;
        if (((head[0] >> 2) & 3) != 2) return false;  // not a data frame
        ns3::Mac48Address transmitter;
        transmitter.CopyFrom(head + 10);
        auto it = fer.find(transmitter);
        return it != fer.end() && uniform->GetValue() < it->second;
    }
    void DoReset() override {}
};

inline void AddLoss(ns3::Ptr<ns3::NetDevice> receiver, ns3::Ptr<ns3::NetDevice> transmitter, double rate) {
    auto wifi = ns3::DynamicCast<ns3::WifiNetDevice>(receiver);
    auto phy = wifi->GetPhy();
    ns3::Ptr<PairErrorModel> em;
    ns3::PointerValue current;
    phy->GetAttribute("PostReceptionErrorModel", current);
    em = ns3::DynamicCast<PairErrorModel>(current.Get<ns3::ErrorModel>());
    if (!em) {
        em = ns3::Create<PairErrorModel>();
        phy->SetPostReceptionErrorModel(em);
    }
    em->fer[ns3::Mac48Address::ConvertFrom(transmitter->GetAddress())] = rate;
}
}
"""

_ns_module: Any = None


def _ns() -> Any:
    """Imports the bindings once (slow: cppyy parses the headers), which cppyy makes at run time without types."""
    global _ns_module
    if _ns_module is None:
        try:
            from ns import ns
        except ImportError as e:  # pragma: no cover - depends on the machine
            raise SystemExit(f"ns-3 is not installed ({e}); run: python -m pip install ns3") from None
        ns.cppyy.cppdef(_ERROR_MODEL_CPP)
        _ns_module = ns
    return _ns_module


def run(case: str, seed: int = 1, duration: float = 20.0) -> dict[str, Any]:
    """Builds one case, runs it for ``duration`` simulated seconds and reports each flow's goodput."""
    ns = _ns()
    spec = CASES[case]
    ns.RngSeedManager.SetSeed(seed)
    ns.RngSeedManager.SetRun(1)

    tcp_defaults(
        ns,
        {
            **BENCH_TCP,
            "ns3::TcpSocket::SegmentSize": str(MSS),
            "ns3::TcpSocket::RcvBufSize": str(RCV_WINDOW_SEGMENTS * MSS),
        },
    )
    ns.Config.SetDefault("ns3::WifiMacQueue::MaxSize", ns.QueueSizeValue(ns.QueueSize(f"{QUEUE_PACKETS}p")))
    ns.Config.SetDefault("ns3::WifiMacQueue::MaxDelay", ns.TimeValue(ns.Seconds(10 * duration + 10)))
    # ns-3 3.44 has one limit for every frame, RTS or data, and it counts
    # retransmissions: an MPDU is dropped once its retry count reaches it, so
    # a limit of 6 makes 7 attempts, ncmesh's (and 802.11-2016's) limit of 7.
    attempts = spec.get("retry_limit", 7)
    ns.Config.SetDefault("ns3::WifiMac::FrameRetryLimit", ns.UintegerValue(attempts - 1))
    threshold = spec.get("rts_threshold", 65_535)
    ns.Config.SetDefault("ns3::WifiRemoteStationManager::RtsCtsThreshold", ns.UintegerValue(threshold))

    n = len(spec["positions"])
    nodes = ns.NodeContainer()
    nodes.Create(n)
    wifi = ns.WifiHelper()
    wifi.SetStandard(ns.WIFI_STANDARD_80211b)
    rate = ns.StringValue("DsssRate11Mbps")
    wifi.SetRemoteStationManager("ns3::ConstantRateWifiManager", "DataMode", rate, "ControlMode", rate)
    channel = ns.YansWifiChannelHelper()
    channel.SetPropagationDelay("ns3::ConstantSpeedPropagationDelayModel")
    channel.AddPropagationLoss("ns3::RangePropagationLossModel", "MaxRange", ns.DoubleValue(REACH_M))
    phy = ns.YansWifiPhyHelper()
    phy.SetChannel(channel.Create())
    phy.DisablePreambleDetectionModel()
    mac = ns.WifiMacHelper()
    mac.SetType("ns3::AdhocWifiMac")
    devices = wifi.Install(phy, mac, nodes)
    wifi.AssignStreams(devices, 100 * seed)

    mobility = ns.MobilityHelper()
    positions = ns.CreateObject[ns.ListPositionAllocator]()
    for x, y in spec["positions"]:
        positions.Add(ns.Vector(x, y, 0))
    mobility.SetPositionAllocator(positions)
    mobility.Install(nodes)

    for (src, dst), fer in spec.get("fer", {}).items():
        ns.cppyy.gbl.ncmesh_wifi.AddLoss(devices.Get(dst), devices.Get(src), fer)

    ns.InternetStackHelper().Install(nodes)
    address = ns.Ipv4AddressHelper()
    address.SetBase(ns.Ipv4Address("10.0.0.0"), ns.Ipv4Mask("255.255.255.0"))
    interfaces = address.Assign(devices)
    ns.TrafficControlHelper().Uninstall(devices)
    ns.NeighborCacheHelper().PopulateNeighborCache()
    static = ns.Ipv4StaticRoutingHelper()
    for at, to, via in spec.get("routes", []):
        ipv4 = nodes.Get(at).GetObject[ns.Ipv4]()
        static.GetStaticRouting(ipv4).AddHostRouteTo(interfaces.GetAddress(to), interfaces.GetAddress(via), 1)

    sinks = []
    for i, (src, dst, kind, offered) in enumerate(spec["flows"]):
        factory = "ns3::UdpSocketFactory" if kind == "udp" else "ns3::TcpSocketFactory"
        local = ns.InetSocketAddress(ns.Ipv4Address.GetAny(), PORT + i).ConvertTo()
        sink = ns.PacketSinkHelper(factory, local).Install(nodes.Get(dst))
        sink.Start(ns.Seconds(0))
        sinks.append(sink)
        remote = ns.InetSocketAddress(interfaces.GetAddress(dst), PORT + i).ConvertTo()
        if kind == "udp":
            source = ns.OnOffHelper(factory, remote)
            source.SetConstantRate(ns.DataRate(int(offered)), UDP_PAYLOAD)
        else:
            source = ns.BulkSendHelper(factory, remote)
            source.SetAttribute("MaxBytes", ns.UintegerValue(0))
            source.SetAttribute("SendSize", ns.UintegerValue(MSS))
        apps = source.Install(nodes.Get(src))
        apps.Start(ns.Seconds(0))

    ns.Simulator.Stop(ns.Seconds(duration))
    started = time.perf_counter()
    ns.Simulator.Run()
    wall = time.perf_counter() - started
    goodputs = [int(ns.DynamicCast[ns.PacketSink](s.Get(0)).GetTotalRx()) * 8 / duration for s in sinks]
    report = {
        "simulator": "ns-3",
        "case": case,
        "seed": seed,
        "duration_s": duration,
        "wall_s": wall,
        "events": int(ns.Simulator.GetEventCount()),
        "goodput_bps": goodputs,
    }
    ns.Simulator.Destroy()
    return report


def serve() -> None:
    """Answers one JSON request per line until standard input closes."""
    _ns()
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        print(json.dumps(run(request["case"], request.get("seed", 1), request.get("duration", 20.0))), flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ncmesh.bench_ns3_wifi", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("serve", help="answer JSON requests on standard input")
    one = sub.add_parser("run", help="run one case and print JSON")
    one.add_argument("--case", choices=sorted(CASES), required=True)
    one.add_argument("--seed", type=int, default=1)
    one.add_argument("--duration", type=float, default=20.0)
    args = parser.parse_args(argv)
    if args.command == "serve":
        serve()
    else:
        print(json.dumps(run(args.case, args.seed, args.duration)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
