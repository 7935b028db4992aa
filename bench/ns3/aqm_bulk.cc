// ns-3 side of squall's queue-discipline comparison (see bench/ns3/aqm.sh).
//
// The scenario of bench/ns3/aqm.toml, as closely as ns-3 allows:
//
//   a --[10 Mbit/s, 20 ms, queue disc under test]--> b
//   a <--[10 Mbit/s, 20 ms]--------------------------- b
//
// Four bulk TCP NewReno flows a -> b for the whole run with SACK (RFC
// 6675's scoreboard; squall's `rfc` profile with `cc = "sack"`): MSS
// 1460 B, no timestamps (1500-byte IP packets), window scaling on, a 4 MB receive
// buffer, delayed ACKs (every second segment, 200 ms), initial window 2,
// minimum and initial RTO 1 s, limited transmit on. The flows start 0, 10,
// 20 and 30 ms apart (the same offsets as in aqm.toml).
//
// The queue disc on a's device is one of `pie` (PieQueueDisc), `codel`
// (CoDelQueueDisc), `fq_codel` (FqCoDelQueueDisc) or `fifo`
// (FifoQueueDisc), with `--limit` packets (default 1000) and each
// algorithm's RFC defaults (PIE: RFC 8033 §4 and §5: QDELAY_REF 15 ms,
// T_UPDATE 15 ms, alpha 0.125, beta 1.25, MAX_BURST 150 ms,
// de-randomisation on, timestamps for the queue delay; CoDel: RFC 8289
// §4.2-4.3: target 5 ms, interval 100 ms). ns-3's own defaults differ for
// PIE in one: UseDerandomization is false (RFC 8033 §5.4's
// de-randomisation off); `--ns3-pie` keeps ns-3's default, to show what
// it changes.
//
// The device's own queue is cut to one packet, so that the queue disc is
// where packets wait (with ns-3's default of 100 packets most of the
// standing queue would sit below the queue disc, unseen by the AQM).
//
// Prints the sojourn times (queue disc enqueue to dequeue) of the packets
// dequeued after `--warmup` seconds, as their median and 90th percentile,
// and the queue disc's drops after the warm-up, per minute; then one
// `RESULT key=value` line for aqm.sh.

#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <string>
#include <vector>

using namespace ns3;

namespace
{
double g_warmup = 65.0;
std::vector<double> g_sojourns; // seconds, dequeued after the warm-up
uint64_t g_drops = 0;           // queue disc drops after the warm-up
bool g_logDrops = false;        // print "DROP time" for every drop
uint64_t g_retransmissions = 0; // over the whole run

void
OnSojourn(Time sojourn)
{
    if (Simulator::Now().GetSeconds() >= g_warmup)
    {
        g_sojourns.push_back(sojourn.GetSeconds());
    }
}

void
OnDrop(Ptr<const QueueDiscItem>)
{
    if (g_logDrops)
    {
        std::printf("DROP %.6f\n", Simulator::Now().GetSeconds());
    }
    if (Simulator::Now().GetSeconds() >= g_warmup)
    {
        ++g_drops;
    }
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
ConnectSenderTraces()
{
    Config::ConnectWithoutContext("/NodeList/0/$ns3::TcpL4Protocol/SocketList/*/Retransmission",
                                  MakeCallback(&OnRetransmission));
}

// Nearest-rank percentile (the smallest value with at least `q` of the
// values at or below it), as squall's metrics use.
double
Percentile(std::vector<double> v, double q)
{
    if (v.empty())
    {
        return -1;
    }
    std::sort(v.begin(), v.end());
    size_t rank = static_cast<size_t>(std::ceil(q * v.size()));
    return v[std::max<size_t>(rank, 1) - 1];
}
} // namespace

int
main(int argc, char* argv[])
{
    uint32_t seed = 1;
    double seconds = 125.0;
    uint32_t flows = 4;
    uint32_t limit = 1000;
    std::string queue = "pie";
    bool ns3Pie = false;

    Config::SetDefault("ns3::TcpL4Protocol::SocketType", TypeIdValue(TcpNewReno::GetTypeId()));
    Config::SetDefault("ns3::TcpL4Protocol::RecoveryType",
                       TypeIdValue(TcpClassicRecovery::GetTypeId()));
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(1460));
    Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(2));
    Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(2));
    Config::SetDefault("ns3::TcpSocket::DelAckTimeout", TimeValue(MilliSeconds(200)));
    Config::SetDefault("ns3::TcpSocket::TcpNoDelay", BooleanValue(true));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(4000000));
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(16000000));
    // Without SACK, ns-3 3.44's NewReno with TcpClassicRecovery turns a
    // burst of drops into retransmission timeouts and resends most of a
    // window (a 100-packet FIFO, seed 1: 642 drops and 9541 retransmissions
    // in a minute, against 52 and 124 with SACK): SACK on, as in squall's
    // `sack` and in ns-3's own default.
    Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(true));
    Config::SetDefault("ns3::TcpSocketBase::Timestamp", BooleanValue(false));
    Config::SetDefault("ns3::TcpSocketBase::WindowScaling", BooleanValue(true));
    Config::SetDefault("ns3::TcpSocketBase::LimitedTransmit", BooleanValue(true));
    Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(Seconds(1)));
    Config::SetDefault("ns3::TcpSocketBase::ClockGranularity", TimeValue(MilliSeconds(1)));
    Config::SetDefault("ns3::RttEstimator::InitialEstimation", TimeValue(Seconds(1)));

    CommandLine cmd(__FILE__);
    cmd.AddValue("seed", "run number of the random streams (RngSeedManager::SetRun)", seed);
    cmd.AddValue("seconds", "simulated seconds", seconds);
    cmd.AddValue("warmup", "seconds left out of the sojourns and drops", g_warmup);
    cmd.AddValue("flows", "bulk TCP flows", flows);
    cmd.AddValue("queue", "queue disc: pie, codel, fq_codel or fifo", queue);
    cmd.AddValue("limit", "queue disc limit, packets", limit);
    cmd.AddValue("ns3-pie", "keep ns-3's PIE default of no de-randomisation", ns3Pie);
    cmd.AddValue("log-drops", "print a line `DROP seconds` for every drop", g_logDrops);
    cmd.Parse(argc, argv);

    RngSeedManager::SetSeed(1);
    RngSeedManager::SetRun(seed);

    NodeContainer nodes;
    nodes.Create(2);
    PointToPointHelper p2p;
    p2p.SetDeviceAttribute("DataRate", StringValue("10Mbps"));
    p2p.SetChannelAttribute("Delay", StringValue("20ms"));
    p2p.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", QueueSizeValue(QueueSize("1p")));
    NetDeviceContainer devices = p2p.Install(nodes);

    InternetStackHelper stack;
    stack.Install(nodes);

    QueueSizeValue maxSize(QueueSize(QueueSizeUnit::PACKETS, limit));
    TrafficControlHelper tch;
    if (queue == "pie")
    {
        tch.SetRootQueueDisc("ns3::PieQueueDisc",
                             "MaxSize",
                             maxSize,
                             "QueueDelayReference",
                             TimeValue(MilliSeconds(15)),
                             "Tupdate",
                             TimeValue(MilliSeconds(15)),
                             "A",
                             DoubleValue(0.125),
                             "B",
                             DoubleValue(1.25));
        if (!ns3Pie)
        {
            Config::SetDefault("ns3::PieQueueDisc::UseDerandomization", BooleanValue(true));
        }
    }
    else if (queue == "codel")
    {
        tch.SetRootQueueDisc("ns3::CoDelQueueDisc",
                             "MaxSize",
                             maxSize,
                             "Target",
                             StringValue("5ms"),
                             "Interval",
                             StringValue("100ms"));
    }
    else if (queue == "fq_codel")
    {
        tch.SetRootQueueDisc("ns3::FqCoDelQueueDisc",
                             "MaxSize",
                             maxSize,
                             "Target",
                             StringValue("5ms"),
                             "Interval",
                             StringValue("100ms"));
    }
    else if (queue == "fifo")
    {
        tch.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize", maxSize);
    }
    else
    {
        std::fprintf(stderr, "--queue=%s: expected pie, codel, fq_codel or fifo\n", queue.c_str());
        return 2;
    }
    // Only a's device (the data direction) gets the queue disc under test;
    // b's (the ACKs) a FIFO large enough never to drop.
    QueueDiscContainer qdiscs = tch.Install(devices.Get(0));
    TrafficControlHelper ackTch;
    ackTch.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize", StringValue("10000p"));
    ackTch.Install(devices.Get(1));

    Ipv4AddressHelper address;
    address.SetBase("10.0.0.0", "255.255.255.0");
    Ipv4InterfaceContainer ifaces = address.Assign(devices);

    Ptr<QueueDisc> qdisc = qdiscs.Get(0);
    qdisc->TraceConnectWithoutContext("SojournTime", MakeCallback(&OnSojourn));
    qdisc->TraceConnectWithoutContext("Drop", MakeCallback(&OnDrop));

    ApplicationContainer sinks;
    for (uint32_t i = 0; i < flows; ++i)
    {
        uint16_t port = 5000 + i;
        BulkSendHelper source("ns3::TcpSocketFactory",
                              InetSocketAddress(ifaces.GetAddress(1), port));
        source.SetAttribute("MaxBytes", UintegerValue(0));
        source.SetAttribute("SendSize", UintegerValue(1460));
        ApplicationContainer app = source.Install(nodes.Get(0));
        app.Start(MilliSeconds(10 * i));
        app.Stop(Seconds(seconds));
        PacketSinkHelper sink("ns3::TcpSocketFactory",
                              InetSocketAddress(Ipv4Address::GetAny(), port));
        sinks.Add(sink.Install(nodes.Get(1)));
    }
    sinks.Start(Seconds(0));
    sinks.Stop(Seconds(seconds));

    Simulator::Schedule(MilliSeconds(10 * flows), &ConnectSenderTraces);
    Simulator::Stop(Seconds(seconds));
    Simulator::Run();

    uint64_t rx = 0;
    for (uint32_t i = 0; i < sinks.GetN(); ++i)
    {
        rx += DynamicCast<PacketSink>(sinks.Get(i))->GetTotalRx();
    }
    double minutes = (seconds - g_warmup) / 60.0;
    double p50 = Percentile(g_sojourns, 0.5) * 1e3;
    double p90 = Percentile(g_sojourns, 0.9) * 1e3;
    std::printf("ns-3 %s, seed %u: sojourn median %.2f ms, p90 %.2f ms (%zu packets after %.0f s); "
                "%" PRIu64 " drops (%.0f per minute); %" PRIu64 " retransmissions; "
                "goodput %.3f Mbit/s\n",
                queue.c_str(),
                seed,
                p50,
                p90,
                g_sojourns.size(),
                g_warmup,
                g_drops,
                g_drops / minutes,
                g_retransmissions,
                rx * 8.0 / seconds / 1e6);
    std::printf("RESULT sim=ns-3 queue=%s seed=%u sojourn_p50_ms=%.3f sojourn_p90_ms=%.3f "
                "drops=%" PRIu64 " drops_per_minute=%.1f retransmissions=%" PRIu64
                " goodput_bps=%.1f\n",
                queue.c_str(),
                seed,
                p50,
                p90,
                g_drops,
                g_drops / minutes,
                g_retransmissions,
                rx * 8.0 / seconds);
    Simulator::Destroy();
    return 0;
}
