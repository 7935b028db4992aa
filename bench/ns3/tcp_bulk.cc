// ns-3 side of squall's TCP speed benchmark (see bench/ns3/run.sh).
//
// The scenario of `squall bench tcp` and `cargo bench -p squall-sim --bench
// tcp` (crates/squall-sim/benches/common/single_flow.rs), as closely as
// ns-3 allows:
//
//   a --[10 Mbit/s, 30 ms, 100-packet drop-tail, 0.1% packet loss]--> b
//   a <--[10 Mbit/s, 30 ms, 100-packet drop-tail, no loss]----------- b
//
// One bulk TCP NewReno flow a -> b for 100 simulated seconds: MSS 1460 B,
// no timestamps (so 1500-byte IP packets, as in squall), SACK off, window
// scaling on, a 1 MB receive buffer, delayed ACKs (every second segment,
// 200 ms timer), initial window 2, minimum and initial RTO 1 s, limited
// transmit on, Nagle off. Losses are drawn per packet after transmission
// (a RateErrorModel on b's receiving device) on the data direction only.
// No queue disc: the device's own 100-packet DropTail queue is the queue.
//
// Differences that remain: ns-3's point-to-point device adds a 2-byte PPP
// header, so a 1500-byte IP packet takes 1502 bytes of link time; the
// random streams differ, so the loss pattern differs.
//
// Prints one `key=value` line (for run.sh) after a readable summary.

#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include <sys/resource.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>

using namespace ns3;

namespace
{
// Counters of the data direction and of the sender, fed by trace sinks.
// Most fire only on a loss, a retransmission or a state change; the IP Tx
// and MacTx pair fires once per packet a sends and only adds one to a
// counter, next to nothing beside ns-3's own work per packet.
uint64_t g_errorDrops = 0;
uint64_t g_queueDrops = 0; // packets the device's full queue refused
uint64_t g_ipTx = 0;       // packets IP handed down on a (data direction)
uint64_t g_macTx = 0;      // packets a's device accepted
uint64_t g_retransmissions = 0;
uint64_t g_recoveries = 0; // entries into CA_RECOVERY: fast retransmits
uint64_t g_losses = 0;     // entries into CA_LOSS: retransmission timeouts
                           // (a backed-off RTO in CA_LOSS is not counted)

void
OnErrorDrop(Ptr<const Packet>)
{
    ++g_errorDrops;
}

void
OnQueueDrop(Ptr<const Packet>)
{
    ++g_queueDrops;
}

void
OnIpTx(Ptr<const Packet>, Ptr<Ipv4>, uint32_t)
{
    ++g_ipTx;
}

void
OnMacTx(Ptr<const Packet>)
{
    ++g_macTx;
}

void
OnRetransmission(Ptr<const Packet>,
                 const TcpHeader&,
                 const Address&,
                 const Address&,
                 Ptr<const TcpSocketBase>)
{
    ++g_retransmissions;
}

void
OnCongState(TcpSocketState::TcpCongState_t, TcpSocketState::TcpCongState_t now)
{
    if (now == TcpSocketState::CA_RECOVERY)
    {
        ++g_recoveries;
    }
    else if (now == TcpSocketState::CA_LOSS)
    {
        ++g_losses;
    }
}

// CPU time of the calling thread so far, seconds (the first field of
// /proc/thread-self/schedstat, nanoseconds; squall's bench reads the same),
// or -1.
double
ThreadCpuSeconds()
{
    std::FILE* f = std::fopen("/proc/thread-self/schedstat", "r");
    if (!f)
    {
        return -1;
    }
    unsigned long long ns = 0;
    int n = std::fscanf(f, "%llu", &ns);
    std::fclose(f);
    return n == 1 ? ns / 1e9 : -1;
}

// The sender's socket exists once BulkSendApplication has started.
void
ConnectSenderTraces()
{
    Config::ConnectWithoutContext("/NodeList/0/$ns3::TcpL4Protocol/SocketList/*/Retransmission",
                                  MakeCallback(&OnRetransmission));
    Config::ConnectWithoutContext("/NodeList/0/$ns3::TcpL4Protocol/SocketList/*/CongState",
                                  MakeCallback(&OnCongState));
}
} // namespace

int
main(int argc, char* argv[])
{
    auto t0 = std::chrono::steady_clock::now();

    uint32_t seed = 1;
    double seconds = 100.0;
    uint32_t mss = 1460;
    uint32_t sendSize = 1460;
    double lossRate = 0.001;
    uint32_t queuePackets = 100;
    uint32_t rwnd = 1000000; // "1 MB" in squall: decimal megabyte

    // Defaults first, so that --ns3::Class::Attribute=value on the command
    // line can override any of them (for experiments).
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
    cmd.AddValue("seconds", "simulated seconds (the flow sends for all of them)", seconds);
    cmd.AddValue("mss", "TCP segment size, bytes", mss);
    cmd.AddValue("sendSize", "bytes per BulkSendApplication write", sendSize);
    cmd.AddValue("loss", "packet loss probability on the data direction", lossRate);
    cmd.AddValue("queue", "device queue size, packets", queuePackets);
    cmd.AddValue("rwnd", "receive buffer, bytes", rwnd);
    cmd.Parse(argc, argv);

    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(mss));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(rwnd));
    // Large enough that the send buffer never limits the window.
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(4 * rwnd));

    RngSeedManager::SetSeed(1);
    RngSeedManager::SetRun(seed);

    NodeContainer nodes;
    nodes.Create(2);

    PointToPointHelper p2p;
    p2p.SetDeviceAttribute("DataRate", StringValue("10Mbps"));
    p2p.SetChannelAttribute("Delay", StringValue("30ms"));
    p2p.SetQueue("ns3::DropTailQueue<Packet>",
                 "MaxSize",
                 QueueSizeValue(QueueSize(QueueSizeUnit::PACKETS, queuePackets)));
    NetDeviceContainer devices = p2p.Install(nodes);

    Ptr<RateErrorModel> em = CreateObject<RateErrorModel>();
    em->SetUnit(RateErrorModel::ERROR_UNIT_PACKET);
    em->SetRate(lossRate);
    devices.Get(1)->SetAttribute("ReceiveErrorModel", PointerValue(em));
    devices.Get(1)->TraceConnectWithoutContext("PhyRxDrop", MakeCallback(&OnErrorDrop));
    DynamicCast<PointToPointNetDevice>(devices.Get(0))
        ->GetQueue()
        ->TraceConnectWithoutContext("Drop", MakeCallback(&OnQueueDrop));

    InternetStackHelper stack;
    stack.Install(nodes);
    Ipv4AddressHelper address;
    address.SetBase("10.0.0.0", "255.255.255.0");
    Ipv4InterfaceContainer ifaces = address.Assign(devices);
    // Assign() installs the default queue disc (FqCoDel); squall's link has
    // only a drop-tail queue, so take it off and leave the device's queue.
    TrafficControlHelper tch;
    tch.Uninstall(devices);
    // Without a queue disc, the traffic-control layer discards a packet
    // without a trace when the device has stopped its full queue: those
    // drops are the packets IP sent on a's interface that a's device never
    // took.
    nodes.Get(0)->GetObject<Ipv4L3Protocol>()->TraceConnectWithoutContext("Tx",
                                                                          MakeCallback(&OnIpTx));
    devices.Get(0)->TraceConnectWithoutContext("MacTx", MakeCallback(&OnMacTx));

    const uint16_t port = 5000;
    BulkSendHelper source("ns3::TcpSocketFactory", InetSocketAddress(ifaces.GetAddress(1), port));
    source.SetAttribute("MaxBytes", UintegerValue(0));
    source.SetAttribute("SendSize", UintegerValue(sendSize));
    ApplicationContainer sourceApps = source.Install(nodes.Get(0));
    sourceApps.Start(Seconds(0));
    sourceApps.Stop(Seconds(seconds));

    PacketSinkHelper sink("ns3::TcpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), port));
    ApplicationContainer sinkApps = sink.Install(nodes.Get(1));
    sinkApps.Start(Seconds(0));
    sinkApps.Stop(Seconds(seconds));

    Simulator::Schedule(NanoSeconds(1), &ConnectSenderTraces);
    Simulator::Stop(Seconds(seconds));

    double cpu0 = ThreadCpuSeconds();
    auto t1 = std::chrono::steady_clock::now();
    Simulator::Run();
    auto t2 = std::chrono::steady_clock::now();
    double cpuSeconds = ThreadCpuSeconds() - cpu0;

    Ptr<PacketSink> ps = DynamicCast<PacketSink>(sinkApps.Get(0));
    uint64_t rxBytes = ps->GetTotalRx();
    double simSeconds = Simulator::Now().GetSeconds();
    Simulator::Destroy();
    auto t3 = std::chrono::steady_clock::now();

    g_queueDrops += g_ipTx - g_macTx;
    double runWall = std::chrono::duration<double>(t2 - t1).count();
    double setupWall = std::chrono::duration<double>(t1 - t0).count();
    double totalWall = std::chrono::duration<double>(t3 - t0).count();
    uint64_t segments = rxBytes / mss;
    double goodput = rxBytes * 8.0 / seconds;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);

    std::printf("ns-3, seed %u: %" PRIu64 " segments delivered (%.3f Mbit/s goodput; %" PRIu64
                " lost to errors, %" PRIu64 " to the queue; %" PRIu64 " resent, %" PRIu64
                " fast recoveries, %" PRIu64 " timeouts) in %.3f s simulated, %.3f s wall (%.3f s "
                "CPU; setup %.3f s, total %.3f s): %.0f segments/s, peak RSS %ld kB\n",
                seed,
                segments,
                goodput / 1e6,
                g_errorDrops,
                g_queueDrops,
                g_retransmissions,
                g_recoveries,
                g_losses,
                simSeconds,
                runWall,
                cpuSeconds,
                setupWall,
                totalWall,
                segments / runWall,
                ru.ru_maxrss);
    std::printf("RESULT sim=ns-3 seed=%u segments=%" PRIu64 " rx_bytes=%" PRIu64
                " sim_seconds=%.6f wall_seconds=%.6f cpu_seconds=%.6f total_wall_seconds=%.6f "
                "segments_per_wall_second=%.1f goodput_bps=%.1f error_drops=%" PRIu64
                " queue_drops=%" PRIu64 " retransmitted=%" PRIu64 " fast_recoveries=%" PRIu64
                " timeouts=%" PRIu64 " peak_rss_kb=%ld\n",
                seed,
                segments,
                rxBytes,
                simSeconds,
                runWall,
                cpuSeconds,
                totalWall,
                segments / runWall,
                goodput,
                g_errorDrops,
                g_queueDrops,
                g_retransmissions,
                g_recoveries,
                g_losses,
                ru.ru_maxrss);
    return 0;
}
