// fabps-ctr-gen: synthetic click-through-rate data from a planted model
// (planted_model.h), so the best achievable test AUC is known.
//
// Writes <output-dir>/train/ctr-train-NNNNN-of-NNNNN and
// <output-dir>/test/ctr-test-... (recordio, records as in
// docs/formats/ctr_record.md), then <output-dir>/planted.json with the
// options and the planted model's AUC on the test records
// ("planted_test_auc"), written last: its presence means the data is
// complete. Train and test are independent draws of the same distribution.
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "base/cli.h"
#include "base/file_util.h"
#include "base/status.h"
#include "examples/ctr/auc.h"
#include "examples/ctr/ctr_record.h"
#include "examples/ctr/planted_model.h"
#include "recordio/shard_writer.h"

namespace fabps::ctr_gen {
namespace {

using examples::ctr::Impression;
using examples::ctr::PlantedModel;
using examples::ctr::PlantedModelOptions;
using recordio::ShardedWriter;

struct Flags {
  PlantedModelOptions model;
  std::string output_dir;
  int64_t train_records = 1'000'000;
  int64_t test_records = 100'000;
  int train_shards = 8;
  int test_shards = 2;
};

struct SplitStats {
  int64_t positives = 0;
  std::vector<double> logits;
  std::vector<int> labels;
};

Status WriteSplit(const Flags& f, const PlantedModel& model,
                  const std::string& split, int64_t records, int shards,
                  uint64_t stream, SplitStats* stats) {
  std::string dir = f.output_dir + "/" + split;
  std::filesystem::create_directories(dir);
  // Small chunks: a chunk is the master's unit of work, and 256 KiB are
  // about 4000 impressions, a few seconds of one trainer.
  recordio::WriterOptions wopts;
  wopts.max_chunk_bytes = 256 << 10;
  FABPS_ASSIGN_OR_RETURN(
      auto out, ShardedWriter::Create(dir, "ctr-" + split, shards, wopts));
  std::mt19937_64 rng(f.model.seed * 0x100000001b3ULL + stream);
  Impression imp;
  std::string record;
  bool keep = split == "test";
  for (int64_t i = 0; i < records; i++) {
    model.Sample(rng, &imp);
    record.clear();
    examples::ctr::AppendCtrRecord(imp.label, imp.ids.data(), f.model.fields,
                                   &record);
    FABPS_RETURN_IF_ERROR(out->Append(record));
    stats->positives += imp.label;
    if (keep) {
      stats->logits.push_back(imp.logit);
      stats->labels.push_back(imp.label);
    }
  }
  return out->Close();
}

int Run(const Flags& f) {
  PlantedModel model(f.model);
  SplitStats train, test;
  Status s =
      WriteSplit(f, model, "train", f.train_records, f.train_shards, 1, &train);
  if (s.ok())
    s = WriteSplit(f, model, "test", f.test_records, f.test_shards, 2, &test);
  if (!s.ok()) {
    std::fprintf(stderr, "fabps-ctr-gen: %s\n", s.ToString().c_str());
    return 1;
  }
  double auc = examples::ctr::Auc(test.logits, test.labels);
  char json[1024];
  std::snprintf(
      json, sizeof(json),
      "{\"planted_test_auc\": %.6f, \"train_records\": %lld, "
      "\"test_records\": %lld, \"train_positive_rate\": %.6f, "
      "\"fields\": %d, \"vocab\": %d, \"zipf\": %g, \"weight_scale\": %g, "
      "\"bias\": %g, \"seed\": %llu}\n",
      auc, static_cast<long long>(f.train_records),
      static_cast<long long>(f.test_records),
      static_cast<double>(train.positives) /
          static_cast<double>(f.train_records),
      f.model.fields, f.model.vocab, f.model.zipf, f.model.weight_scale,
      f.model.bias, static_cast<unsigned long long>(f.model.seed));
  s = WriteFileAtomically(f.output_dir + "/planted.json", json);
  if (!s.ok()) {
    std::fprintf(stderr, "fabps-ctr-gen: %s\n", s.ToString().c_str());
    return 1;
  }
  std::printf("%s", json);
  return 0;
}

}  // namespace
}  // namespace fabps::ctr_gen

int main(int argc, char** argv) {
  fabps::ctr_gen::Flags f;
  CLI::App app(
      "Writes synthetic CTR impressions (recordio) from a planted model and "
      "its test AUC",
      "fabps-ctr-gen");
  app.add_option("--output-dir", f.output_dir,
                 "where train/, test/ and planted.json go (created)")
      ->required();
  app.add_option("--train-records", f.train_records, "training impressions")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 36));
  app.add_option("--test-records", f.test_records, "test impressions")
      ->check(CLI::Range(int64_t{2}, int64_t{1} << 30));
  app.add_option("--train-shards", f.train_shards, "training shards")
      ->check(CLI::Range(1, 1024));
  app.add_option("--test-shards", f.test_shards, "test shards")
      ->check(CLI::Range(1, 1024));
  app.add_option("--fields", f.model.fields,
                 "categorical fields per impression")
      ->check(CLI::Range(1, fabps::examples::ctr::kMaxFields));
  app.add_option("--vocab", f.model.vocab, "distinct values per field")
      ->check(CLI::Range(1, 1 << 26));
  app.add_option("--zipf", f.model.zipf,
                 "Zipf exponent of the value frequencies")
      ->check(CLI::Range(0.0, 5.0));
  app.add_option("--weight-scale", f.model.weight_scale,
                 "standard deviation of the planted weights")
      ->check(CLI::Range(0.0, 10.0));
  app.add_option("--bias", f.model.bias, "planted logit bias")
      ->check(CLI::Range(-20.0, 20.0));
  app.add_option("--seed", f.model.seed, "seed of the model and the data");
  if (int rc = fabps::ParseFlags(app, argc, argv); rc >= 0) return rc;
  return fabps::ctr_gen::Run(f);
}
