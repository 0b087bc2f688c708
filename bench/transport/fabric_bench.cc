// fabps_fabric_bench: fabric microbenchmarks in the style of libfabric's
// fabtests. The same binary is the server (no address argument) or the
// client (the server's host as argument); they meet over an out-of-band TCP
// channel, swap fabric addresses and region descriptors, then run:
//   pingpong  send/recv round trips, one outstanding (latency)
//   send_bw   two-sided sends, a window outstanding (bandwidth)
//   msg_rate  send_bw with a deep window, small sizes (message rate)
//   write_bw  one-sided RMA writes, a window outstanding
//   read_bw   one-sided RMA reads, a window outstanding
//   memcpy    single-thread memcpy of the same sizes (a local reference)
// Columns as fabtests: bytes iters total time MB/sec usec/xfer Mxfers/sec.
// Data are verified by default (pattern checked at the receiving side).
#include <sys/mman.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "base/cli.h"
#include "base/log.h"
#include "base/shared_memory.h"
#include "bench/transport/oob.h"
#include "transport/fabric.h"

namespace fabps::bench {
namespace {

using ::fabps::Deadline;
using transport::Completion;
using transport::Endpoint;
using transport::Fabric;
using transport::MemoryRegion;
using transport::PeerId;
using transport::RemoteRegion;

constexpr int64_t kOpTimeoutMs = 30000;

struct Options {
  std::string provider = "tcp;ofi_rxm";
  std::string tests = "pingpong,send_bw,write_bw,read_bw,msg_rate";
  std::string sizes = "all";
  std::string server;  // empty: we are the server
  std::string bind = "127.0.0.1";
  int port = 47600;
  int iters = 0;  // 0: chosen per size
  int window = 64;
  bool json = false;
  bool verify = true;
  bool shared = false;  // buffers in SharedMemory, as a pserver's
};

struct Row {
  std::string test;
  size_t bytes;
  int iters;
  int xfers_per_iter;
  double seconds;
};

void Fill(char* p, size_t n, uint64_t seed) {
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (size_t i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    p[i] = static_cast<char>(x);
  }
}

bool Check(const char* p, size_t n, uint64_t seed) {
  std::vector<char> want(n);
  Fill(want.data(), n, seed);
  return std::memcmp(p, want.data(), n) == 0;
}

std::string HumanCount(double v) {
  char buf[32];
  if (v >= 1e9)
    std::snprintf(buf, sizeof(buf), "%.0fg", v / 1e9);
  else if (v >= 1e6)
    std::snprintf(buf, sizeof(buf), "%.0fm", v / 1e6);
  else if (v >= 1e3)
    std::snprintf(buf, sizeof(buf), "%.0fk", v / 1e3);
  else
    std::snprintf(buf, sizeof(buf), "%.0f", v);
  return buf;
}

void PrintHeader(const Options& o, const std::string& test,
                 const std::string& provider) {
  if (o.json) return;
  std::printf("# %s over %s\n", test.c_str(), provider.c_str());
  std::printf("%-10s %-8s %-10s %-9s %-10s %-11s %-10s\n", "bytes", "iters",
              "total", "time", "MB/sec", "usec/xfer", "Mxfers/sec");
}

void PrintRow(const Options& o, const std::string& provider, const Row& r) {
  double xfers = static_cast<double>(r.iters) * r.xfers_per_iter;
  double total = xfers * static_cast<double>(r.bytes);
  double mbps = total / r.seconds / 1e6;
  double usec = r.seconds * 1e6 / xfers;
  double mxfers = xfers / r.seconds / 1e6;
  if (o.json) {
    std::printf(
        "{\"test\":\"%s\",\"provider\":\"%s\",\"bytes\":%zu,\"iters\":%d,"
        "\"total\":%.0f,"
        "\"time\":%.6f,\"MB_per_sec\":%.3f,\"usec_per_xfer\":%.3f,\"Mxfers_per_"
        "sec\":%.4f}\n",
        r.test.c_str(), provider.c_str(), r.bytes, r.iters, total, r.seconds,
        mbps, usec, mxfers);
  } else {
    char time[32];
    std::snprintf(time, sizeof(time), "%.2fs", r.seconds);
    std::printf("%-10zu %-8s %-10s %-9s %-10.2f %-11.2f %-10.4f\n", r.bytes,
                HumanCount(r.iters).c_str(), HumanCount(total).c_str(), time,
                mbps, usec, mxfers);
  }
  std::fflush(stdout);
}

Result<std::vector<size_t>> ParseSizes(const std::string& s, size_t max_size) {
  std::vector<size_t> out;
  if (s == "all") {
    for (size_t n = 1; n <= max_size; n *= 2) out.push_back(n);
    return out;
  }
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    char* end = nullptr;
    unsigned long long v = std::strtoull(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v > max_size) {
      return Status::InvalidArgument("--sizes: '" + item +
                                     "' is not a size in 0.." +
                                     std::to_string(max_size));
    }
    out.push_back(v);
  }
  return out;
}

int ItersFor(const Options& o, const std::string& test, size_t size) {
  if (o.iters > 0) return o.iters;
  // About 1 GiB (bandwidth) or 16 MiB (pingpong) per size, within bounds.
  size_t budget = test == "pingpong" ? (size_t{16} << 20) : (size_t{1} << 30);
  size_t it = budget / std::max<size_t>(size, 1);
  int lo = test == "pingpong" ? 10 : 2 * o.window;
  int hi = test == "pingpong" ? 10000 : (test == "msg_rate" ? 100000 : 20000);
  return static_cast<int>(std::clamp<size_t>(it, lo, hi));
}

// Everything a side needs for the run.
struct Side {
  Options o;
  bool client = false;
  std::unique_ptr<Fabric> fabric;
  std::unique_ptr<Endpoint> ep;
  SharedMemory shared;  // with --shared-memory: holds buf (outlives mr)
  // [0, max): transmit, RMA source or target; [max, 2max): receive;
  // [2max, 2max + 4096): acknowledgments, so they never overwrite data.
  char* buf = nullptr;
  size_t max = 0;
  std::unique_ptr<MemoryRegion> mr;
  PeerId peer = 0;
  RemoteRegion remote;  // the peer's region
  OobChannel oob;
  char* tx() const { return buf; }
  char* rx() const { return buf + max; }
  size_t ack_offset() const { return 2 * max; }
};

Status WaitAll(std::vector<Completion>* v) {
  for (auto& c : *v)
    FABPS_RETURN_IF_ERROR(c.Wait(Deadline::InMs(kOpTimeoutMs)));
  v->clear();
  return Status::OK();
}

Status Pingpong(Side& s, size_t size, int iters, Row* row) {
  int warmup = std::min(iters / 10 + 1, 100);
  Fill(s.tx(), size, size);
  auto d = [] { return Deadline::InMs(kOpTimeoutMs); };
  std::chrono::steady_clock::time_point start;
  for (int i = -warmup; i < iters; i++) {
    if (i == 0) start = std::chrono::steady_clock::now();
    if (s.client) {
      FABPS_ASSIGN_OR_RETURN(Completion r, s.ep->Recv(*s.mr, s.max, size, d()));
      FABPS_ASSIGN_OR_RETURN(Completion w,
                             s.ep->Send(s.peer, *s.mr, 0, size, d()));
      FABPS_RETURN_IF_ERROR(w.Wait(d()));
      FABPS_RETURN_IF_ERROR(r.Wait(d()));
    } else {
      FABPS_ASSIGN_OR_RETURN(Completion r, s.ep->Recv(*s.mr, s.max, size, d()));
      FABPS_RETURN_IF_ERROR(r.Wait(d()));
      // Echo what arrived, from the receive buffer.
      FABPS_ASSIGN_OR_RETURN(Completion w,
                             s.ep->Send(s.peer, *s.mr, s.max, size, d()));
      FABPS_RETURN_IF_ERROR(w.Wait(d()));
    }
  }
  double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  if (s.o.verify && !Check(s.rx(), size, size)) {
    return Status::Corruption(
        "pingpong: received data differ from the pattern at " +
        std::to_string(size) + " bytes");
  }
  *row = Row{"pingpong", size, iters, 2, secs};
  return Status::OK();
}

Status SendBw(Side& s, const std::string& name, size_t size, int iters,
              int window, Row* row) {
  auto d = [] { return Deadline::InMs(kOpTimeoutMs); };
  std::vector<Completion> pending;
  Fill(s.tx(), size, size + 1);
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; i++) {
    if (s.client) {
      FABPS_ASSIGN_OR_RETURN(Completion c,
                             s.ep->Send(s.peer, *s.mr, 0, size, d()));
      pending.push_back(c);
    } else {
      FABPS_ASSIGN_OR_RETURN(Completion c, s.ep->Recv(*s.mr, s.max, size, d()));
      pending.push_back(c);
    }
    if (static_cast<int>(pending.size()) == window)
      FABPS_RETURN_IF_ERROR(WaitAll(&pending));
  }
  FABPS_RETURN_IF_ERROR(WaitAll(&pending));
  // The server acknowledges once everything arrived; the client's time ends
  // with the acknowledgment.
  if (s.client) {
    FABPS_ASSIGN_OR_RETURN(Completion r,
                           s.ep->Recv(*s.mr, s.ack_offset(), 1, d()));
    FABPS_RETURN_IF_ERROR(r.Wait(d()));
  } else {
    if (s.o.verify && size > 0 && !Check(s.rx(), size, size + 1)) {
      return Status::Corruption(name +
                                ": received data differ from the pattern");
    }
    FABPS_ASSIGN_OR_RETURN(Completion a,
                           s.ep->Send(s.peer, *s.mr, s.ack_offset(), 1, d()));
    FABPS_RETURN_IF_ERROR(a.Wait(d()));
  }
  double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  *row = Row{name, size, iters, 1, secs};
  return Status::OK();
}

Status RmaBw(Side& s, bool write, size_t size, int iters, int window,
             Row* row) {
  auto d = [] { return Deadline::InMs(kOpTimeoutMs); };
  const std::string name = write ? "write_bw" : "read_bw";
  const uint64_t seed = size + (write ? 2 : 3);
  if (!s.client) {
    // The target: provide the pattern to read, then make progress until the
    // client's closing immediate, then check what was written.
    if (!write) Fill(s.tx(), size, seed);
    FABPS_RETURN_IF_ERROR(s.oob.Barrier());
    FABPS_ASSIGN_OR_RETURN(
        auto ev, s.ep->WaitImmediate(Deadline::InMs(10 * kOpTimeoutMs)));
    if (ev.data != seed)
      return Status::Corruption(name + ": unexpected immediate data");
    // The answer stops the client's clock, so it goes before the check
    // (a pattern of `size` bytes made and compared: milliseconds at 4 MiB,
    // no part of the transfer). A failed check ends this side with an
    // error, and the client's next barrier with it.
    FABPS_ASSIGN_OR_RETURN(Completion a,
                           s.ep->Send(s.peer, *s.mr, s.ack_offset(), 1, d()));
    FABPS_RETURN_IF_ERROR(a.Wait(d()));
    if (write && s.o.verify && !Check(s.tx(), size, seed)) {
      return Status::Corruption(
          "write_bw: target memory differs from the pattern");
    }
    *row = Row{name, size, iters, 1, 0};
    return Status::OK();
  }
  if (write) Fill(s.tx(), size, seed);
  FABPS_RETURN_IF_ERROR(s.oob.Barrier());
  std::vector<Completion> pending;
  // Untimed warm-up: the first operations to a peer set up its connection.
  for (int i = 0; i < std::min(window, 8); i++) {
    Result<Completion> c =
        write ? s.ep->Write(s.peer, *s.mr, 0, size, s.remote, 0, std::nullopt,
                            d())
              : s.ep->Read(s.peer, *s.mr, s.max, size, s.remote, 0, d());
    if (!c.ok()) return c.status();
    pending.push_back(*c);
  }
  FABPS_RETURN_IF_ERROR(WaitAll(&pending));
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; i++) {
    Result<Completion> c =
        write ? s.ep->Write(s.peer, *s.mr, 0, size, s.remote, 0, std::nullopt,
                            d())
              : s.ep->Read(s.peer, *s.mr, s.max, size, s.remote, 0, d());
    if (!c.ok()) return c.status();
    pending.push_back(*c);
    if (static_cast<int>(pending.size()) == window)
      FABPS_RETURN_IF_ERROR(WaitAll(&pending));
  }
  FABPS_RETURN_IF_ERROR(WaitAll(&pending));
  // A closing zero-byte write carries the immediate; the target answers.
  FABPS_ASSIGN_OR_RETURN(Completion r,
                         s.ep->Recv(*s.mr, s.ack_offset(), 1, d()));
  FABPS_ASSIGN_OR_RETURN(
      Completion fin, s.ep->Write(s.peer, *s.mr, 0, 0, s.remote, 0, seed, d()));
  FABPS_RETURN_IF_ERROR(fin.Wait(d()));
  FABPS_RETURN_IF_ERROR(r.Wait(d()));
  double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  if (!write && s.o.verify && !Check(s.rx(), size, seed)) {
    return Status::Corruption("read_bw: data read differ from the pattern");
  }
  *row = Row{name, size, iters, 1, secs};
  return Status::OK();
}

Status MemcpyRef(const Options& o, const std::vector<size_t>& sizes) {
  size_t max =
      sizes.empty()
          ? 1
          : std::max<size_t>(1, *std::max_element(sizes.begin(), sizes.end()));
  std::vector<char> a(max), b(max);
  Fill(a.data(), max, 5);
  std::memset(b.data(), 0, max);
  PrintHeader(o, "memcpy", "local");
  for (size_t size : sizes) {
    int iters = ItersFor(o, "write_bw", size);
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; i++) {
      std::memcpy(b.data(), a.data(), size);
      asm volatile("" : : "r"(b.data()) : "memory");
    }
    double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    PrintRow(o, "local", Row{"memcpy", size, iters, 1, secs});
  }
  return Status::OK();
}

void PrintListenPort(int port) {
  std::fprintf(stderr, "fabps_fabric_bench: server listening on port %d\n",
               port);
}

Status Run(const Options& o) {
  const size_t kMaxSize = size_t{16} << 20;
  FABPS_ASSIGN_OR_RETURN(std::vector<size_t> sizes,
                         ParseSizes(o.sizes, kMaxSize));
  std::vector<std::string> tests;
  {
    std::stringstream ss(o.tests);
    std::string t;
    while (std::getline(ss, t, ',')) {
      if (t != "pingpong" && t != "send_bw" && t != "write_bw" &&
          t != "read_bw" && t != "msg_rate" && t != "memcpy") {
        return Status::InvalidArgument(
            "--tests: unknown test '" + t +
            "' (pingpong, send_bw, msg_rate, write_bw, read_bw, memcpy)");
      }
      tests.push_back(t);
    }
  }
  if (tests.size() == 1 && tests[0] == "memcpy") return MemcpyRef(o, sizes);

  Side s;
  s.o = o;
  s.client = !o.server.empty();
  transport::FabricOptions fo;
  fo.provider = o.provider;
  fo.interface_address = o.bind;  // shm ignores it
  FABPS_ASSIGN_OR_RETURN(s.fabric, transport::OpenFabric(fo));
  FABPS_ASSIGN_OR_RETURN(
      s.ep, s.fabric->CreateEndpoint(transport::ProgressMode::kCaller));
  s.max = std::max<size_t>(
      4096, sizes.empty() ? 1 : *std::max_element(sizes.begin(), sizes.end()));
  const size_t total = 2 * s.max + 4096;
  if (o.shared) {
    FABPS_ASSIGN_OR_RETURN(s.shared, SharedMemory::Create(total));
    s.buf = static_cast<char*>(s.shared.base());
  } else {
    void* mem = ::mmap(nullptr, total, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (mem == MAP_FAILED) return PosixError("mmap", errno);
    s.buf = static_cast<char*>(mem);
  }
  FABPS_ASSIGN_OR_RETURN(s.mr, s.fabric->Register(s.buf, total));

  if (s.client) {
    FABPS_ASSIGN_OR_RETURN(s.oob, OobChannel::Connect(o.server, o.port, 30000));
  } else {
    FABPS_ASSIGN_OR_RETURN(
        s.oob, OobChannel::Accept(o.bind, o.port, 120000, PrintListenPort));
  }
  FABPS_RETURN_IF_ERROR(s.oob.SendMsg(o.provider + "|" + o.tests + "|" +
                                      o.sizes + "|" + std::to_string(o.iters) +
                                      "|" + std::to_string(o.window)));
  FABPS_ASSIGN_OR_RETURN(std::string peer_cfg, s.oob.RecvMsg());
  if (s.client && peer_cfg.rfind(o.provider + "|", 0) != 0) {
    return Status::InvalidArgument(
        "server runs a different provider or test set: " + peer_cfg);
  }
  FABPS_RETURN_IF_ERROR(s.oob.SendMsg(s.ep->address()));
  FABPS_RETURN_IF_ERROR(s.oob.SendMsg(s.mr->remote().Serialize()));
  FABPS_ASSIGN_OR_RETURN(std::string peer_addr, s.oob.RecvMsg());
  FABPS_ASSIGN_OR_RETURN(std::string peer_region, s.oob.RecvMsg());
  FABPS_ASSIGN_OR_RETURN(s.peer, s.ep->AddPeer(peer_addr));
  FABPS_ASSIGN_OR_RETURN(s.remote, RemoteRegion::Parse(peer_region));

  for (const auto& test : tests) {
    if (test == "memcpy") continue;
    if (s.client) PrintHeader(o, test, s.fabric->provider());
    for (size_t size : sizes) {
      if (test == "msg_rate" && size > 4096) continue;
      int iters = ItersFor(o, test, size);
      FABPS_RETURN_IF_ERROR(s.oob.Barrier());
      Row row;
      Status st;
      if (test == "pingpong")
        st = Pingpong(s, size, iters, &row);
      else if (test == "send_bw")
        st = SendBw(s, test, size, iters, o.window, &row);
      else if (test == "msg_rate")
        st = SendBw(s, test, size, iters, std::max(o.window, 256), &row);
      else
        st = RmaBw(s, test == "write_bw", size, iters, o.window, &row);
      if (!st.ok())
        return st.WithContext(test + " at " + std::to_string(size) + " bytes");
      if (s.client) PrintRow(o, s.fabric->provider(), row);
    }
  }
  FABPS_RETURN_IF_ERROR(s.oob.Barrier());
  return Status::OK();
}

}  // namespace
}  // namespace fabps::bench

int main(int argc, char** argv) {
  fabps::bench::Options o;
  CLI::App app{
      "fabps fabric microbenchmarks (server: no address; client: server host)"};
  app.add_option("-p,--provider", o.provider,
                 "tcp;ofi_rxm, verbs;ofi_rxm, shm, sockets, auto");
  app.add_option(
      "-t,--tests", o.tests,
      "comma list: pingpong,send_bw,msg_rate,write_bw,read_bw,memcpy");
  app.add_option("-S,--sizes", o.sizes,
                 "'all' (1 B..16 MiB, powers of 2) or a comma list of bytes");
  app.add_option("-I,--iters", o.iters,
                 "iterations per size (0: chosen per size)")
      ->check(CLI::Range(0, 100000000));
  app.add_option("-W,--window", o.window,
                 "operations in flight for bandwidth tests")
      ->check(CLI::Range(1, 1024));
  app.add_option("-P,--port", o.port,
                 "out-of-band TCP port (server: 0 picks one)")
      ->check(CLI::Range(0, 65535));
  app.add_option("-b,--bind", o.bind,
                 "address to bind (server) and fabric interface");
  app.add_flag("--json", o.json, "one JSON object per result row");
  app.add_flag("!--no-verify", o.verify, "skip checking the data");
  app.add_flag("--shared-memory", o.shared,
               "buffers in SharedMemory, as a pserver's arena and landing "
               "slots (on shm: RMA is the copy-free path; give it to both "
               "sides)");
  app.add_option("server", o.server, "the server's host (client side)");
  if (int rc = fabps::ParseFlags(app, argc, argv); rc >= 0) return rc;
  fabps::SetLogLevel(fabps::LogLevel::kWarning);
  fabps::Status s = fabps::bench::Run(o);
  if (!s.ok()) {
    std::fprintf(stderr, "fabps_fabric_bench: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
