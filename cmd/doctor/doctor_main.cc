// fabps-doctor: the first thing to run on a new cluster node. It tells which
// fabric providers work here, what RDMA devices and ports rdma-core sees
// (state, link layer, GID table size), whether the locked-memory limit
// lets verbs register what a job needs, and which provider "auto" picks and
// why. With --provider it also runs a loopback RMA write/read through that
// provider to prove the data path, not just the discovery.
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "base/cli.h"
#include "base/log.h"
#include "fabps_config.h"
#include "transport/fabric.h"
#include "transport/ofi/ofi_fabric.h"

#if FABPS_HAVE_IBVERBS
#include <infiniband/verbs.h>
#endif

namespace {

using fabps::Deadline;
using fabps::Status;
namespace transport = fabps::transport;

void ListRdmaDevices() {
  std::printf("RDMA devices (rdma-core / libibverbs):\n");
#if FABPS_HAVE_IBVERBS
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (list == nullptr || n == 0) {
    std::printf(
        "  none: no RDMA device on this machine (no InfiniBand/RoCE adapter, "
        "or its\n"
        "  kernel driver is not loaded). verbs;ofi_rxm cannot run here; use "
        "tcp;ofi_rxm.\n");
    if (list) ibv_free_device_list(list);
    return;
  }
  for (int i = 0; i < n; i++) {
    const char* name = ibv_get_device_name(list[i]);
    ibv_context* ctx = ibv_open_device(list[i]);
    if (ctx == nullptr) {
      std::printf(
          "  %s: cannot open (%s): check permissions on /dev/infiniband\n",
          name, std::strerror(errno));
      continue;
    }
    ibv_device_attr attr{};
    if (ibv_query_device(ctx, &attr) != 0) {
      std::printf("  %s: ibv_query_device failed\n", name);
      ibv_close_device(ctx);
      continue;
    }
    std::printf("  %s: %d port(s), max_mr_size %llu, max_qp %d\n", name,
                attr.phys_port_cnt,
                static_cast<unsigned long long>(attr.max_mr_size), attr.max_qp);
    for (uint8_t p = 1; p <= attr.phys_port_cnt; p++) {
      ibv_port_attr pa{};
      if (ibv_query_port(ctx, p, &pa) != 0) continue;
      const char* ll =
          pa.link_layer == IBV_LINK_LAYER_ETHERNET     ? "Ethernet (RoCE)"
          : pa.link_layer == IBV_LINK_LAYER_INFINIBAND ? "InfiniBand"
                                                       : "unspecified";
      std::printf(
          "    port %d: %s, link layer %s, GID table %d entries, active MTU "
          "%d%s\n",
          p, ibv_port_state_str(pa.state), ll, pa.gid_tbl_len,
          128 << pa.active_mtu,
          pa.state == IBV_PORT_ACTIVE
              ? ""
              : "  <- not ACTIVE: check the cable/subnet manager");
    }
    ibv_close_device(ctx);
  }
  ibv_free_device_list(list);
#else
  std::printf("  (built without libibverbs headers: cannot list devices)\n");
#endif
}

// The locked-memory limit: verbs pins every registered region (a pserver's
// arena, each process's landing slots and staging buffers), and past
// RLIMIT_MEMLOCK fi_mr_reg fails with "Cannot allocate memory", which names
// no limit. tcp and shm register without pinning.
void ReportLockedMemory() {
  // Enough for a pserver holding a few GiB of a model over verbs.
  constexpr uint64_t kAdvised = uint64_t{8} << 30;
  rlimit l{};
  std::printf("Locked memory (ulimit -l, what verbs may register):\n");
  if (::getrlimit(RLIMIT_MEMLOCK, &l) != 0) {
    std::printf("  unknown: getrlimit: %s\n", std::strerror(errno));
    return;
  }
  auto text = [](rlim_t v) {
    return v == RLIM_INFINITY ? std::string("unlimited")
                              : std::to_string(v >> 10) + " KiB";
  };
  std::printf("  soft %s, hard %s\n", text(l.rlim_cur).c_str(),
              text(l.rlim_max).c_str());
  if (l.rlim_cur != RLIM_INFINITY && l.rlim_cur < kAdvised) {
    std::printf(
        "  low for verbs: a process registers at most %s (a pserver's arena "
        "is its\n"
        "  share of the model and optimizer state, plus landing slots); "
        "beyond it\n"
        "  fi_mr_reg fails with \"Cannot allocate memory\". Raise it: "
        "ulimit -l unlimited\n"
        "  (hard limit permitting), memlock in /etc/security/limits.conf, "
        "LimitMEMLOCK=infinity\n"
        "  (systemd), --ulimit memlock=-1 (docker), IPC_LOCK (Kubernetes). "
        "tcp;ofi_rxm and\n"
        "  shm do not need it.\n",
        text(l.rlim_cur).c_str());
  }
}

// A loopback RMA write and read through `provider`, between two endpoints.
Status LoopbackCheck(const std::string& provider, const std::string& iface) {
  transport::FabricOptions o;
  o.provider = provider;
  o.interface_address = iface;  // shm ignores it (binds_to_interface)
  FABPS_ASSIGN_OR_RETURN(auto fa, transport::OpenFabric(o));
  FABPS_ASSIGN_OR_RETURN(auto fb, transport::OpenFabric(o));
  FABPS_ASSIGN_OR_RETURN(auto a,
                         fa->CreateEndpoint(transport::ProgressMode::kThread));
  FABPS_ASSIGN_OR_RETURN(auto b,
                         fb->CreateEndpoint(transport::ProgressMode::kThread));
  FABPS_ASSIGN_OR_RETURN(auto peer, a->AddPeer(b->address()));
  std::vector<char> src(1 << 20), dst(1 << 20, 0), back(1 << 20, 0);
  for (size_t i = 0; i < src.size(); i++)
    src[i] = static_cast<char>(i * 31 + 7);
  FABPS_ASSIGN_OR_RETURN(auto ms, fa->Register(src.data(), src.size()));
  FABPS_ASSIGN_OR_RETURN(auto mb, fa->Register(back.data(), back.size()));
  FABPS_ASSIGN_OR_RETURN(auto md, fb->Register(dst.data(), dst.size()));
  FABPS_ASSIGN_OR_RETURN(
      auto w, a->Write(peer, *ms, 0, src.size(), md->remote(), 0, uint64_t{7},
                       Deadline::InMs(10000)));
  FABPS_RETURN_IF_ERROR(w.Wait(Deadline::InMs(10000)));
  FABPS_ASSIGN_OR_RETURN(auto ev, b->WaitImmediate(Deadline::InMs(10000)));
  if (ev.data != 7 || dst != src)
    return Status::Corruption("RMA write: data differ");
  FABPS_ASSIGN_OR_RETURN(auto r,
                         a->Read(peer, *mb, 0, back.size(), md->remote(), 0,
                                 Deadline::InMs(10000)));
  FABPS_RETURN_IF_ERROR(r.Wait(Deadline::InMs(10000)));
  if (back != src) return Status::Corruption("RMA read: data differ");
  return Status::OK();
}

}  // namespace

int main(int argc, char** argv) {
  std::string iface = "127.0.0.1";
  std::string check;
  CLI::App app{"fabps-doctor: which fabrics work here, and why",
               "fabps-doctor"};
  app.add_option("-i,--interface", iface,
                 "address for providers that bind to an interface");
  app.add_option("-p,--provider", check,
                 "also run a loopback RMA write/read through this provider "
                 "(default: none)");
  if (int rc = fabps::ParseFlags(app, argc, argv); rc >= 0) return rc;
  fabps::SetLogLevel(fabps::LogLevel::kWarning);

  std::printf("fabps %s doctor\n\n", FABPS_VERSION);
  std::printf(
      "Fabric providers (libfabric %d.%d, RDM endpoints with RMA and remote CQ "
      "data):\n",
      FI_MAJOR_VERSION, FI_MINOR_VERSION);
  for (const auto& p : transport::ofi::ProbeProviders(iface)) {
    std::printf("  %-14s %s%s\n", p.name.c_str(),
                p.works ? "works" : "no: ", p.works ? "" : p.reason.c_str());
  }
  std::printf("\n");
  ListRdmaDevices();
  std::printf("\n");
  ReportLockedMemory();
  std::printf("\n");
  transport::FabricOptions o;
  o.provider = "auto";
  o.interface_address = iface;
  auto f = transport::OpenFabric(o);
  if (f.ok()) {
    std::printf("auto picks: %s\n  why: %s\n", (*f)->provider().c_str(),
                (*f)->choice_reason().c_str());
  } else {
    std::printf("auto picks nothing: %s\n", f.status().ToString().c_str());
  }
  if (!check.empty()) {
    Status s = LoopbackCheck(check, iface);
    std::printf("\nloopback RMA write+read through %s: %s\n", check.c_str(),
                s.ok() ? "OK" : s.ToString().c_str());
    return s.ok() ? 0 : 1;
  }
  return f.ok() ? 0 : 1;
}
