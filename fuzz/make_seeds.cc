// fabps-fuzz-seeds DIR: writes the seed corpora of the fuzz targets into
// DIR/<target>/ with the real writers and encoders, so every seed is a valid
// input that reaches the end of its parser. The committed fuzz/corpus/ is
// this program's output; rerun it when a format changes:
//   build-fuzz/fuzz/fabps-fuzz-seeds fuzz/corpus
#include <sys/stat.h>
#include <thrift/protocol/TBinaryProtocol.h>
#include <thrift/transport/TBufferTransports.h>

#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "base/deadline.h"
#ifdef FABPS_FUZZ_STATE_SEEDS
#include "coord/local/record.h"
#include "coord/local/state.h"
#include "coord/store.h"
#include "master/change.h"
#include "master/store_journal.h"
#include "master/task_queues.h"
#endif
#include "fuzz/checkpoint_shard.h"
#include "fuzz/fuzz_util.h"
#include "protocol/slot_codec.h"
#include "protocol/wire.h"
#include "pserver/checkpoint.h"
#include "pserver/rpc/init_config.h"
#include "recordio/writer.h"
#include "thrift_gen/master/Master.h"
#include "thrift_gen/pserver/PServer.h"

namespace {

using apache::thrift::protocol::TBinaryProtocol;
using apache::thrift::transport::TMemoryBuffer;
namespace pserver = fabps::pserver;
namespace protocol = fabps::protocol;
namespace recordio = fabps::recordio;
namespace ps = fabps::rpc::pserver;
namespace ms = fabps::rpc::master;

std::string g_root;

std::string Dir(const std::string& target) {
  std::string d = g_root + "/" + target;
  mkdir(d.c_str(), 0755);
  return d;
}

void Put(const std::string& target, const std::string& name,
         const std::string& bytes) {
  std::ofstream out(Dir(target) + "/" + name, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  FABPS_FUZZ_CHECK(out.good());
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void RecordioSeed(const std::string& name, const std::vector<std::string>& recs,
                  recordio::WriterOptions options) {
  const std::string path = Dir("recordio_fuzzer") + "/" + name;
  auto w = recordio::Writer::Create(path, options);
  FABPS_FUZZ_CHECK(w.ok());
  for (const std::string& r : recs) FABPS_FUZZ_CHECK((*w)->Append(r).ok());
  FABPS_FUZZ_CHECK((*w)->Close().ok());
}

void RecordioSeeds() {
  recordio::WriterOptions plain;
  plain.compression = recordio::Compression::kNone;
  RecordioSeed("one-record", {"hello"}, plain);
  plain.max_chunk_bytes = 16;
  RecordioSeed("three-chunks", {"a", "", "0123456789abcdef", "tail", "x"},
               plain);
  recordio::WriterOptions zstd;
  zstd.max_chunk_bytes = 64;
  RecordioSeed("zstd", {std::string(40, 'z'), "b", "", std::string(70, 'q')},
               zstd);
  RecordioSeed("empty", {}, zstd);
}

void CheckpointSeeds() {
  auto shard = fabps::fuzz::MakeCheckpointShard();
  const std::string tmp = g_root + "/.ckpt-tmp";
  mkdir(tmp.c_str(), 0755);
  auto save = [&](const std::string& name, uint64_t sequence) {
    auto info = pserver::WriteCheckpoint(*shard, tmp, sequence);
    FABPS_FUZZ_CHECK(info.ok());
    Put("checkpoint_fuzzer", name, Slurp(info->path));
    std::remove(info->path.c_str());
  };
  save("zeros", 1);
  const protocol::Layout& l = shard->layout();
  for (uint32_t id : shard->block_ids()) {
    const protocol::BlockInfo& b = l.blocks()[id];
    std::vector<double> v(b.num_elements);
    for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(id + 0.1 * i);
    std::vector<float> f(v.begin(), v.end());
    bool f32 = l.params()[b.param].dtype == protocol::DType::kFloat32;
    FABPS_FUZZ_CHECK(
        shard
            ->InitBlock(id, f32 ? static_cast<const void*>(f.data()) : v.data(),
                        v.size() * (f32 ? 4 : 8))
            .ok());
  }
  save("initialized", 2);
  for (int step = 0; step < 3; ++step) {
    for (uint32_t id : shard->block_ids()) {
      const protocol::BlockInfo& b = l.blocks()[id];
      bool f32 = l.params()[b.param].dtype == protocol::DType::kFloat32;
      std::vector<double> g(b.num_elements, 0.25 * (step + 1));
      std::vector<float> gf(g.begin(), g.end());
      pserver::GradientRef gr;
      gr.block = id;
      gr.data = f32 ? static_cast<const void*>(gf.data()) : g.data();
      gr.bytes = g.size() * (f32 ? 4 : 8);
      FABPS_FUZZ_CHECK(shard->Apply(gr, fabps::Deadline::InMs(10000)).ok());
    }
  }
  save("trained", 3);
  rmdir(tmp.c_str());
}

std::vector<protocol::Layout> SeedLayouts() {
  using protocol::DType;
  std::vector<protocol::Layout> out;
  auto add = [&](std::vector<protocol::ParamSpec> params, uint64_t block,
                 uint32_t n) {
    auto l = protocol::Layout::Build(std::move(params), block, n);
    FABPS_FUZZ_CHECK(l.ok());
    out.push_back(std::move(l).value());
  };
  add({{"w", DType::kFloat32, {10, 4}}, {"b", DType::kFloat32, {4}}}, 16, 2);
  add({{"scalar", DType::kFloat64, {}}}, 1, 1);
  add({{"emb", DType::kFloat32, {100, 3, 2}},
       {"fc1.w", DType::kFloat64, {5, 7}},
       {"fc1.b", DType::kFloat32, {7}}},
      64, 3);
  return out;
}

void LayoutSeeds() {
  std::vector<protocol::Layout> layouts = SeedLayouts();
  for (size_t i = 0; i < layouts.size(); ++i)
    Put("layout_fuzzer", "layout-" + std::to_string(i), layouts[i].Encode());
  Put("layout_fuzzer", "checkpoint-shard",
      fabps::fuzz::MakeCheckpointShard()->layout().Encode());
}

void WireSeeds() {
  namespace wire = protocol::wire;
  auto u64 = [](uint64_t v) {
    return std::string(reinterpret_cast<char*>(&v), 8);
  };
  Put("wire_fuzzer", "push", u64(wire::EncodePush({3, 7, 12345})));
  Put("wire_fuzzer", "push-rows",
      u64(wire::EncodePush({3, 7, 12345, wire::PushKind::kRows})));
  Put("wire_fuzzer", "push-rows-read",
      u64(wire::EncodePush({3, 7, 12345, wire::PushKind::kRowsRead})));
  Put("wire_fuzzer", "push-rows-step",
      u64(wire::EncodePush({3, 7, 12345, wire::PushKind::kRowsStep})));
  Put("wire_fuzzer", "push-max",
      u64(wire::EncodePush({0xFFFF, 255, 0xFFFFFFFFu})));
  Put("wire_fuzzer", "credit",
      u64(wire::EncodeCredit({1, 2, fabps::Status::Code::kOk, 42})));
  Put("wire_fuzzer", "credit-error",
      u64(wire::EncodeCredit(
          {0xFFFF, 255, fabps::Status::Code::kInvalidArgument, 7})) +
          u64(wire::EncodePush({1, 1, 1})));
  // Whole slots for block 1 of the fuzzer's [10, 4] table (rows 4..7).
  std::vector<uint64_t> slot(16, 0);
  const uint64_t ids[2] = {5, 4};
  auto slot_bytes = [&](size_t n) {
    return std::string(reinterpret_cast<char*>(slot.data()), n);
  };
  size_t n = protocol::EncodeRowsSlot(slot.data(), wire::PushKind::kRows, 1, 0,
                                      ids, 2);
  Put("wire_fuzzer", "slot-rows", slot_bytes(n + 2 * 16));
  n = protocol::EncodeRowsSlot(slot.data(), wire::PushKind::kRowsStep, 1, 9,
                               ids, 2);
  Put("wire_fuzzer", "slot-rows-step", slot_bytes(n + 2 * 16));
  protocol::EncodeDenseStepHeader(slot.data(), 1, 9);
  Put("wire_fuzzer", "slot-dense-step", slot_bytes(64));
}

template <typename T>
std::string Thrift(uint8_t selector, const T& value) {
  auto buf = std::make_shared<TMemoryBuffer>();
  TBinaryProtocol proto(buf);
  value.write(&proto);
  return std::string(1, static_cast<char>(selector)) + buf->getBufferAsString();
}

// Selectors as in control_plane_fuzzer.cc.
void ControlPlaneSeeds() {
  const char* t = "control_plane_fuzzer";
  pserver::InitSpec spec{SeedLayouts()[0], {}, {}};
  spec.default_rule.kind = protocol::RuleKind::kMomentum;
  spec.default_rule.learning_rate = 0.05;
  spec.default_rule.momentum = 0.9;
  spec.rules["b"].kind = protocol::RuleKind::kAdam;
  spec.rules["b"].learning_rate = 0.001;
  ps::InitConfig config = pserver::InitSpecToThrift(spec);
  FABPS_FUZZ_CHECK(pserver::InitSpecFromThrift(config).ok());

  ps::PServer_InitParams_args init;
  init.trainer_id = 1;
  init.config = config;
  Put(t, "pserver-init-params", Thrift(1, init));
  ps::PServer_InitBlock_args block;
  block.trainer_id = 1;
  block.block = 2;
  block.values = std::string(16, '\x3f');
  Put(t, "pserver-init-block", Thrift(2, block));
  ps::PServer_RegisterTrainer_args reg;
  reg.hello.trainer_id = 4;
  reg.hello.fabric_address = std::string("\x02\x00\x1b\x58\x7f\x00\x00\x01", 8);
  reg.hello.credit_region = std::string(24, '\x01');
  reg.hello.provider = "tcp;ofi_rxm";
  reg.hello.max_slot_bytes = 1 << 20;
  Put(t, "pserver-register-trainer", Thrift(5, reg));
  ps::PServer_SaveModel_args save;
  save.dir = "/tmp/ckpt";
  Put(t, "pserver-save-model", Thrift(6, save));

  ms::Master_SetDataset_args dataset;
  dataset.globs = {"/data/train-*", "/data/extra"};
  Put(t, "master-set-dataset", Thrift(8, dataset));
  ms::Master_GetTask_args get;
  get.pass_id = 2;
  get.trainer_id = "trainer-0";
  Put(t, "master-get-task", Thrift(9, get));
  ms::Master_TaskFinished_args finished;
  finished.task_id = 17;
  finished.epoch = 3;
  Put(t, "master-task-finished", Thrift(10, finished));

  Put(t, "init-config", Thrift(14, config));
  ps::Registration r;
  r.trainer_index = 1;
  r.num_slots = 4;
  r.slot_bytes = 4096;
  r.blocks.resize(2);
  r.blocks[1].block = 3;
  r.blocks[1].offset = 128;
  r.blocks[1].bytes = 64;
  Put(t, "registration", Thrift(15, r));
  ms::GetTaskReply reply;
  reply.result = ms::GetTaskResult::TASK;
  reply.pass_id = 1;
  reply.task.id = 9;
  reply.task.chunks.resize(1);
  reply.task.chunks[0].path = "/data/train-0";
  reply.task.chunks[0].offset = 0;
  reply.task.chunks[0].records = 100;
  reply.__isset.task = true;
  Put(t, "get-task-reply", Thrift(18, reply));

  // A whole call message, as a client sends it.
  auto buf = std::make_shared<TMemoryBuffer>();
  TBinaryProtocol proto(buf);
  proto.writeMessageBegin("GetTask", apache::thrift::protocol::T_CALL, 5);
  get.write(&proto);
  proto.writeMessageEnd();
  Put(t, "message-get-task", std::string(1, 21) + buf->getBufferAsString());
}

#ifdef FABPS_FUZZ_STATE_SEEDS
// Journals to replay (master_journal_fuzzer.cc).
void MasterJournalSeeds() {
  namespace master = fabps::master;
  const char* t = "master_journal_fuzzer";
  master::Change set;
  set.type = master::Change::Type::kSetDataset;
  set.globs = {"/data/train-*"};
  set.tasks.resize(2);
  set.tasks[0].chunks = {{"/data/train-0", 0, 10}, {"/data/train-0", 512, 7}};
  set.tasks[1].chunks = {{"/data/train-1", 0, 3}};
  master::Change dispatch;
  dispatch.type = master::Change::Type::kDispatch;
  dispatch.task_id = 0;
  dispatch.epoch = 1;
  dispatch.time_ms = 1000;
  dispatch.deadline_ms = 61000;
  master::Change finish;
  finish.type = master::Change::Type::kFinish;
  finish.task_id = 0;
  finish.epoch = 1;
  finish.time_ms = 2000;
  master::Change fail;
  fail.type = master::Change::Type::kFail;
  fail.task_id = 1;
  fail.epoch = 1;
  fail.timed_out = true;
  master::Change pass;
  pass.type = master::Change::Type::kNewPass;
  pass.pass = 1;
  // Pieces, each a u16 length and its bytes: a snapshot, then records.
  auto piece = [](const std::string& bytes) {
    std::string out;
    fabps::fuzz::AppendPiece(&out, bytes);
    return out;
  };
  master::TaskQueues q;
  const std::string empty = piece(q.EncodeSnapshot());
  Put(t, "replay-from-empty",
      empty + piece(master::EncodeChange(set)) +
          piece(master::EncodeChange(dispatch)) +
          piece(master::EncodeChange(finish)) +
          piece(master::EncodeChange(fail)));
  Put(t, "new-pass", empty + piece(master::EncodeChange(pass)));
  FABPS_FUZZ_CHECK(q.Apply(set).ok());
  FABPS_FUZZ_CHECK(q.Apply(dispatch).ok());
  Put(t, "replay-from-pending",
      piece(q.EncodeSnapshot()) + piece(master::EncodeChange(finish)));
  // Found by this fuzzer: a finish time an int64 away from the dispatch
  // time overflowed the duration.
  master::Change far = finish;
  far.time_ms = INT64_MIN;
  Put(t, "regress-finish-time-overflow",
      piece(q.EncodeSnapshot()) + piece(master::EncodeChange(far)));
  FABPS_FUZZ_CHECK(q.Apply(finish).ok());
  Put(t, "snapshot-done", piece(q.EncodeSnapshot()));
}

// A store's keys and values as store_journal_fuzzer.cc reads them: pieces,
// each a u16 length and its bytes, key then value.
void StoreJournalSeeds() {
  namespace master = fabps::master;
  const std::string dir = g_root + "/.journal-tmp";
  auto dump = [&](fabps::coord::Store* store, const std::string& name) {
    auto all = store->Range("", store->DefaultDeadline());
    FABPS_FUZZ_CHECK(all.ok());
    std::string out;
    for (const auto& kv : all->kvs) {
      fabps::fuzz::AppendPiece(&out, kv.key);
      fabps::fuzz::AppendPiece(&out, kv.value);
    }
    Put("store_journal_fuzzer", name, out);
  };
  fabps::coord::StoreOptions o;
  o.spec = "local:" + dir;
  o.job = "fuzz";
  auto store = fabps::coord::OpenStore(o);
  FABPS_FUZZ_CHECK(store.ok());
  master::StoreJournal j(store->get());
  FABPS_FUZZ_CHECK(j.Load().ok());
  FABPS_FUZZ_CHECK(j.AppendBatch({"record-1", "record-2"}).ok());
  dump(store->get(), "journal");
  FABPS_FUZZ_CHECK(j.Compact("snapshot-bytes").ok());
  FABPS_FUZZ_CHECK(j.AppendBatch({"record-3"}).ok());
  dump(store->get(), "snapshot-and-journal");
  store->reset();
  std::filesystem::remove_all(dir);
}

// Selector byte 0: a log; 1: a snapshot (local_store_fuzzer.cc).
void LocalStoreSeeds() {
  namespace local = fabps::coord::local;
  const char* t = "local_store_fuzzer";
  std::vector<local::Record> log(5);
  log[0].type = local::Record::Type::kLeaseGrant;
  log[0].lease = 1;
  log[0].ttl_seconds = 5;
  log[0].expiry_ms = 1700000000000;
  log[1].type = local::Record::Type::kWrite;
  log[1].revision = 1;
  log[1].mutations = {{true, "/job/master/lock", "owner", 1},
                      {true, "/job/ps/count", "2", 0}};
  log[2].type = local::Record::Type::kLeaseRenew;
  log[2].lease = 1;
  log[2].expiry_ms = 1700000005000;
  log[3].type = local::Record::Type::kWrite;
  log[3].revision = 2;
  log[3].mutations = {{false, "/job/ps/count", "", 0}};
  log[4].type = local::Record::Type::kLeaseRemove;
  log[4].lease = 1;
  log[4].revision = 3;
  std::string bytes(1, '\0');
  local::State state;
  for (size_t i = 0; i < log.size(); ++i) {
    local::EncodeRecord(log[i], &bytes);
    std::vector<fabps::coord::WatchEvent> events;
    FABPS_FUZZ_CHECK(state.Apply(log[i], &events).ok());
    if (i == 1) {
      Put(t, "log-grant-put", bytes);
      Put(t, "snapshot-lease-keys",
          std::string(1, '\1') + state.EncodeSnapshot(2));
    }
  }
  Put(t, "log-all", bytes);
  Put(t, "snapshot-after-log", std::string(1, '\1') + state.EncodeSnapshot(7));
}

// Replies as etcd 3.4's JSON gateway writes them (etcd_json_fuzzer.cc).
void EtcdJsonSeeds() {
  const char* t = "etcd_json_fuzzer";
  const char* header =
      R"("header":{"cluster_id":"14841639068965178418","member_id":)"
      R"("10276657743932975437","revision":"42","raft_term":"2"})";
  Put(t, "range",
      std::string("{") + header +
          R"(,"kvs":[{"key":"L2pvYi9wcy9jb3VudA==",)"
          R"("create_revision":"5","mod_revision":"7",)"
          R"("version":"2","value":"Mg==","lease":"7587"}],)"
          R"("count":"1"})");
  Put(t, "range-empty", std::string("{") + header + "}");
  Put(t, "txn",
      std::string("{") + header +
          R"(,"succeeded":true,"responses":[{"response_put":)"
          R"({"header":{"revision":"42"}}},{"response_range":{)"
          R"("header":{"revision":"42"},"kvs":[{"key":"YQ==",)"
          R"("value":"Yg==","mod_revision":"41"}],"count":"1"}},)"
          R"({"response_delete_range":{"header":{"revision":)"
          R"("42"},"deleted":"3"}}]})");
  Put(t, "lease-grant",
      std::string("{") + header + R"(,"ID":"7587862072907325459","TTL":"5"})");
  Put(t, "watch-created",
      std::string(R"({"result":{)") + header + R"(,"created":true}})");
  Put(t, "watch-events",
      std::string(R"({"result":{)") + header +
          R"(,"events":[{"kv":{"key":"L2pvYi9tYXN0ZXIvYWRkcg==",)"
          R"("create_revision":"40","mod_revision":"42","version":"3",)"
          R"("value":"MTI3LjAuMC4xOjcxMDA="}},{"type":"DELETE","kv":)"
          R"({"key":"L2pvYi9wcy8wL2FkZHI=","mod_revision":"42"}}]}})");
  Put(t, "watch-canceled",
      std::string(R"({"result":{)") + header +
          R"(,"canceled":true,"compact_revision":"30"}})");
  Put(t, "error",
      R"({"error":"etcdserver: request timed out","code":14,)"
      R"("message":"etcdserver: request timed out"})");
}
#endif
}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 2;
  }
  g_root = argv[1];
  mkdir(g_root.c_str(), 0755);
  RecordioSeeds();
  CheckpointSeeds();
  LayoutSeeds();
  WireSeeds();
  ControlPlaneSeeds();
#ifdef FABPS_FUZZ_STATE_SEEDS
  MasterJournalSeeds();
  StoreJournalSeeds();
  LocalStoreSeeds();
  EtcdJsonSeeds();
#endif
  std::printf("seeds written under %s\n", g_root.c_str());
  return 0;
}
