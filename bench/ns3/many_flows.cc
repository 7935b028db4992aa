// ns-3 side of `squall bench sim` (crates/squall/src/bench_sim.rs): N bulk
// TCP NewReno flows from one node to another over one link, the scenario
// `squall bench sim` gives squall's simulator as one `count = N` entry:
//
//   a --[RATE, DELAY, QUEUE-packet drop-tail, LOSS packet loss]--> b
//   a <--[RATE, DELAY, QUEUE-packet drop-tail, no loss]----------- b
//
// Flow k (0 <= k < N) is a BulkSendApplication on a sending for the whole
// run to a PacketSink on b's port 5000 + k. The TCP settings are
// tcp_bulk.cc's (MSS 1460, no timestamps, SACK off, window scaling on, a
// 1 MB receive buffer and a 4 MB send buffer per socket, delayed ACKs every
// second segment with a 200 ms timer, initial window 2, minimum and initial
// RTO 1 s, limited transmit, Nagle off). As in tcp_bulk.cc the traffic-control
// layer's default FqCoDel is taken off, so the device's queue is the queue,
// and losses are drawn per packet on b's receiving device.
//
// `squall bench sim` runs this program as a child process and measures its
// wall time and peak RSS from outside (as it measures `squall sim`): this
// program only counts. It prints one line:
//
//   RESULT sim=ns-3 flows=N delivered_packets=P rx_bytes=B sim_seconds=S
//
// delivered_packets: packets b's device received from the link (every
// data-direction packet the link delivered: segments, retransmissions that
// arrived, SYNs' ACKs and FINs), the figure squall's summary.json gives as
// the data stage's `delivered`.

#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include <cinttypes>
#include <cstdio>

using namespace ns3;

namespace
{
uint64_t g_delivered = 0; // packets b's device received from the link

void
OnMacRx(Ptr<const Packet>)
{
    ++g_delivered;
}
} // namespace

int
main(int argc, char* argv[])
{
    uint32_t seed = 1;
    uint32_t flows = 10;
    double seconds = 3.0;
    std::string rate = "100Mbps";
    std::string delay = "20ms";
    uint32_t queuePackets = 1000;
    double lossRate = 0.0;
    uint32_t mss = 1460;
    uint32_t rwnd = 1000000; // "1 MB" in squall: decimal megabyte

    Config::SetDefault("ns3::TcpL4Protocol::SocketType", TypeIdValue(TcpNewReno::GetTypeId()));
    Config::SetDefault("ns3::TcpL4Protocol::RecoveryType",
                       TypeIdValue(TcpClassicRecovery::GetTypeId()));
    Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(2));
    Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(2));
    Config::SetDefault("ns3::TcpSocket::DelAckTimeout", TimeValue(MilliSeconds(200)));
    Config::SetDefault("ns3::TcpSocket::TcpNoDelay", BooleanValue(true));
    Config::SetDefault("ns3::TcpSocket::ConnTimeout", TimeValue(Seconds(1)));
    Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(false));
    Config::SetDefault("ns3::TcpSocketBase::Timestamp", BooleanValue(false));
    Config::SetDefault("ns3::TcpSocketBase::WindowScaling", BooleanValue(true));
    Config::SetDefault("ns3::TcpSocketBase::LimitedTransmit", BooleanValue(true));
    Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(Seconds(1)));
    Config::SetDefault("ns3::TcpSocketBase::ClockGranularity", TimeValue(MilliSeconds(1)));
    Config::SetDefault("ns3::RttEstimator::InitialEstimation", TimeValue(Seconds(1)));

    CommandLine cmd(__FILE__);
    cmd.AddValue("seed", "run number of the random streams (RngSeedManager::SetRun)", seed);
    cmd.AddValue("flows", "number of bulk flows from a to b", flows);
    cmd.AddValue("seconds", "simulated seconds (every flow sends for all of them)", seconds);
    cmd.AddValue("rate", "link rate, both directions (ns-3 DataRate)", rate);
    cmd.AddValue("delay", "one-way propagation delay (ns-3 Time)", delay);
    cmd.AddValue("queue", "device queue size, packets", queuePackets);
    cmd.AddValue("loss", "packet loss probability on the data direction", lossRate);
    cmd.AddValue("mss", "TCP segment size, bytes", mss);
    cmd.AddValue("rwnd", "receive buffer, bytes", rwnd);
    cmd.Parse(argc, argv);
    if (flows == 0 || flows > 60000)
    {
        std::fprintf(stderr, "--flows must be 1 to 60000 (ports 5000 + k), not %u\n", flows);
        return 2;
    }

    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(mss));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(rwnd));
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(4 * rwnd));

    RngSeedManager::SetSeed(1);
    RngSeedManager::SetRun(seed);

    NodeContainer nodes;
    nodes.Create(2);

    PointToPointHelper p2p;
    p2p.SetDeviceAttribute("DataRate", StringValue(rate));
    p2p.SetChannelAttribute("Delay", StringValue(delay));
    p2p.SetQueue("ns3::DropTailQueue<Packet>",
                 "MaxSize",
                 QueueSizeValue(QueueSize(QueueSizeUnit::PACKETS, queuePackets)));
    NetDeviceContainer devices = p2p.Install(nodes);
    if (lossRate > 0)
    {
        Ptr<RateErrorModel> em = CreateObject<RateErrorModel>();
        em->SetUnit(RateErrorModel::ERROR_UNIT_PACKET);
        em->SetRate(lossRate);
        devices.Get(1)->SetAttribute("ReceiveErrorModel", PointerValue(em));
    }
    devices.Get(1)->TraceConnectWithoutContext("MacRx", MakeCallback(&OnMacRx));

    InternetStackHelper stack;
    stack.Install(nodes);
    Ipv4AddressHelper address;
    address.SetBase("10.0.0.0", "255.255.255.0");
    Ipv4InterfaceContainer ifaces = address.Assign(devices);
    TrafficControlHelper tch;
    tch.Uninstall(devices);

    ApplicationContainer sinkApps;
    ApplicationContainer sourceApps;
    for (uint32_t k = 0; k < flows; ++k)
    {
        const uint16_t port = 5000 + k;
        BulkSendHelper source("ns3::TcpSocketFactory",
                              InetSocketAddress(ifaces.GetAddress(1), port));
        source.SetAttribute("MaxBytes", UintegerValue(0));
        source.SetAttribute("SendSize", UintegerValue(mss));
        sourceApps.Add(source.Install(nodes.Get(0)));
        PacketSinkHelper sink("ns3::TcpSocketFactory",
                              InetSocketAddress(Ipv4Address::GetAny(), port));
        sinkApps.Add(sink.Install(nodes.Get(1)));
    }
    sourceApps.Start(Seconds(0));
    sourceApps.Stop(Seconds(seconds));
    sinkApps.Start(Seconds(0));
    sinkApps.Stop(Seconds(seconds));

    Simulator::Stop(Seconds(seconds));
    Simulator::Run();

    uint64_t rxBytes = 0;
    for (uint32_t k = 0; k < sinkApps.GetN(); ++k)
    {
        rxBytes += DynamicCast<PacketSink>(sinkApps.Get(k))->GetTotalRx();
    }
    double simSeconds = Simulator::Now().GetSeconds();
    Simulator::Destroy();

    std::printf("RESULT sim=ns-3 flows=%u delivered_packets=%" PRIu64 " rx_bytes=%" PRIu64
                " sim_seconds=%.6f\n",
                flows,
                g_delivered,
                rxBytes,
                simSeconds);
    return 0;
}
