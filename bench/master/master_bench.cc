// fabps_master_bench: GetTask + TaskFinished round trips per second against
// a real fabps-master on the local coordination store, with 1..8 concurrent
// clients (one connection and one thread each), fabtests style:
//
//   clients    iters   total_s   rt/sec   usec/rt
//
// Every round trip is two RPCs and two journal writes (Dispatch, Finish),
// each fsynced by the local store before the master answers. A second table
// runs the same loop in process (TaskDispatcher + StoreJournal, no RPC) to
// show what the store costs alone. Results are verified: every GetTask must
// give a task or a pass boundary, every TaskFinished must be accepted.
#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "base/cli.h"
#include "master/store_journal.h"
#include "master/task_dispatcher.h"
#include "recordio/writer.h"
#include "tests/util/etcd_server.h"
#include "tests/util/subprocess.h"
#include "thrift/rpc_client.h"
#include "thrift_gen/master/Master.h"

namespace fabps {
namespace {

namespace gen = rpc::master;

std::string MakeDataset(const std::string& dir, int chunks) {
  recordio::WriterOptions o;
  o.compression = recordio::Compression::kNone;
  auto w = recordio::Writer::Create(dir + "/bench-data", o);
  if (!w.ok()) return "";
  for (int i = 0; i < chunks; ++i) {
    (void)(*w)->Append("record " + std::to_string(i));
    (void)(*w)->Flush();
  }
  (void)(*w)->Close();
  return dir + "/bench-data";
}

struct Row {
  int clients;
  int64_t iters;
  double seconds;
  int64_t errors;
};

void PrintRow(const Row& r) {
  double rate = r.iters / r.seconds;
  std::printf("%7d %8lld %9.3f %9.0f %9.1f%s\n", r.clients,
              static_cast<long long>(r.iters), r.seconds, rate, 1e6 / rate,
              r.errors ? "  VERIFY FAILED" : "");
  std::fflush(stdout);
}

// Each of `clients` threads runs `fn(thread index, &stop)` counting round
// trips until `seconds` pass.
template <typename Fn>
Row RunClients(int clients, double seconds, Fn fn) {
  std::atomic<bool> stop{false};
  std::atomic<int64_t> iters{0}, errors{0};
  std::vector<std::thread> threads;
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < clients; ++i) {
    threads.emplace_back([&, i] { fn(i, stop, iters, errors); });
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (auto& t : threads) t.join();
  double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return Row{clients, iters.load(), elapsed, errors.load()};
}

int RunRpc(const std::string& glob, const std::string& state,
           const std::string& log, const std::string& store, double seconds,
           const std::vector<int>& client_counts) {
  std::string port_file = state + ".port";
  auto master = testing::Subprocess::Start(
      {testing::BuiltBinary("master/fabps-master"), "--state-dir", state,
       "--port", "0", "--port-file", port_file, "--chunks-per-task", "1",
       "--worker-threads", "8", "--compact-every", "1000", "--store", store},
      log);
  if (!master.ok()) return 1;
  int port = 0;
  Deadline deadline = Deadline::InMs(20'000);
  while (port == 0 && !deadline.Expired()) {
    std::string p = testing::ReadFileOrEmpty(port_file);
    if (!p.empty() && p.back() == '\n') port = std::stoi(p);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (port == 0) {
    std::fprintf(stderr, "master did not start; see %s\n", log.c_str());
    return 1;
  }
  rpc::RpcClientOptions o;
  o.port = port;
  {
    rpc::RpcConnection<gen::MasterClient> c(o);
    Status s = c.Call("SetDataset",
                      [&](gen::MasterClient& m) { m.SetDataset({glob}); });
    if (!s.ok()) {
      std::fprintf(stderr, "%s\n", s.ToString().c_str());
      return 1;
    }
  }
  std::printf("# GetTask+TaskFinished over Thrift, fabps-master on %s\n",
              store.c_str());
  std::printf("%7s %8s %9s %9s %9s\n", "clients", "iters", "total_s", "rt/sec",
              "usec/rt");
  for (int clients : client_counts) {
    PrintRow(RunClients(
        clients, seconds,
        [&](int id, std::atomic<bool>& stop, std::atomic<int64_t>& iters,
            std::atomic<int64_t>& errors) {
          rpc::RpcConnection<gen::MasterClient> c(o);
          int64_t pass = 0;
          while (!stop) {
            gen::GetTaskReply r;
            bool finished = false;
            Status s = c.Call("GetTask", [&](gen::MasterClient& m) {
              m.GetTask(r, pass, "bench-" + std::to_string(id));
              if (r.result == gen::GetTaskResult::TASK)
                finished = m.TaskFinished(r.task.id, r.task.epoch);
            });
            if (!s.ok()) {
              ++errors;
              break;
            }
            if (r.result == gen::GetTaskResult::TASK) {
              if (!finished) ++errors;
              ++iters;
            } else if (r.result == gen::GetTaskResult::PASS_FINISHED) {
              pass = r.pass_id;
            } else if (r.result != gen::GetTaskResult::NO_TASK_NOW) {
              ++errors;
            }
          }
        }));
  }
  (void)master->Stop(5000);
  return 0;
}

int RunInProcess(const std::string& glob, const std::string& store_dir,
                 double seconds, const std::vector<int>& client_counts) {
  coord::StoreOptions so;
  so.spec = "local:" + store_dir;
  so.job = "bench";
  auto store = coord::OpenStore(so);
  if (!store.ok()) return 1;
  master::StoreJournal journal(store->get());
  master::SystemClock clock;
  master::DispatcherOptions opts;
  opts.chunks_per_task = 1;
  auto d = master::TaskDispatcher::Open(&journal, &clock, opts);
  if (!d.ok() || !(*d)->SetDataset({glob}).ok()) return 1;
  std::printf(
      "# GetTask+TaskFinished in process (TaskDispatcher + StoreJournal, no "
      "RPC)\n");
  std::printf("%7s %8s %9s %9s %9s\n", "clients", "iters", "total_s", "rt/sec",
              "usec/rt");
  for (int clients : client_counts) {
    PrintRow(RunClients(
        clients, seconds,
        [&](int id, std::atomic<bool>& stop, std::atomic<int64_t>& iters,
            std::atomic<int64_t>& errors) {
          int64_t pass = 0;
          while (!stop) {
            auto r = (*d)->GetTask(pass, "bench");
            if (!r.ok()) {
              ++errors;
              break;
            }
            if (r->result == master::GetTaskResult::kTask) {
              auto f = (*d)->TaskFinished(r->task.id, r->task.epoch);
              if (!f.ok() || !f.value()) ++errors;
              ++iters;
            } else if (r->result == master::GetTaskResult::kPassFinished) {
              pass = r->pass;
            }
          }
        }));
  }
  return 0;
}

}  // namespace
}  // namespace fabps

int main(int argc, char** argv) {
  CLI::App app("GetTask+TaskFinished round trips per second",
               "fabps_master_bench");
  double seconds = 2;
  std::vector<int> clients = {1, 2, 4, 8};
  int chunks = 5000;
  bool in_process = true;
  bool etcd = false;
  app.add_option("--seconds", seconds, "per row")
      ->check(CLI::Range(0.1, 600.0));
  app.add_option("--clients", clients, "client counts")
      ->check(CLI::Range(1, 256));
  app.add_option("--tasks", chunks, "tasks in the dataset")
      ->check(CLI::Range(1, 1000000));
  app.add_flag("!--no-in-process", in_process, "skip the in-process table");
  app.add_flag("--etcd", etcd,
               "run the master on a fresh etcd instead of the local store");
  if (int rc = fabps::ParseFlags(app, argc, argv); rc >= 0) return rc;
  fabps::testing::TempDir dir;
  std::string glob = fabps::MakeDataset(dir.path(), chunks);
  if (glob.empty()) return 1;
  std::unique_ptr<fabps::testing::EtcdServer> etcd_server;
  std::string store = "local:" + dir.File("state");
  if (etcd) {
    auto e = fabps::testing::EtcdServer::Start();
    if (!e.ok()) {
      std::fprintf(stderr, "etcd: %s\n", e.status().ToString().c_str());
      return 1;
    }
    etcd_server = std::move(e).value();
    store = "etcd:" + etcd_server->client_url();
  }
  int rc = fabps::RunRpc(glob, dir.File("state"), dir.File("master.log"), store,
                         seconds, clients);
  if (rc == 0 && in_process)
    rc = fabps::RunInProcess(glob, dir.File("store2"), seconds, clients);
  return rc;
}
