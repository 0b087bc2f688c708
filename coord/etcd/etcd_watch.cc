#include "coord/etcd/etcd_watch.h"

#include <curl/curl.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <thread>

#include "base/thread_name.h"
#include "coord/etcd/etcd_json.h"
#include "coord/keyspace.h"
#include "coord/watch_queue.h"

namespace fabps::coord::etcd {
namespace {

using internal::HasPrefix;
using internal::WatchQueue;

// One watch: a streaming POST /v3/watch on its own thread, through curl's
// multi interface so Cancel can wake it at once.
class EtcdWatch : public Watch {
 public:
  EtcdWatch(std::shared_ptr<EtcdHttp> http,
            std::shared_ptr<WatchRegistry> registry, std::string prefix,
            std::string key, std::string range_end, int64_t start_revision)
      : http_(std::move(http)),
        registry_(std::move(registry)),
        prefix_(std::move(prefix)),
        key_(std::move(key)),
        range_end_(std::move(range_end)),
        next_revision_(start_revision) {
    multi_ = curl_multi_init();
    {
      std::lock_guard<std::mutex> lock(registry_->mu);
      registry_->live.insert(this);
    }
    thread_ = std::thread([this] {
      SetThreadName("fabps-watch");
      Run();
    });
  }

  ~EtcdWatch() override {
    {
      std::lock_guard<std::mutex> lock(registry_->mu);
      registry_->live.erase(this);
    }
    Cancel();
    thread_.join();
    curl_multi_cleanup(multi_);
  }

  Status Next(std::vector<WatchEvent>* events, Deadline deadline) override {
    return queue_.Next(events, deadline);
  }

  void Cancel() override {
    queue_.Fail(Status::Cancelled("watch cancelled"));
    stop_.store(true);
    curl_multi_wakeup(multi_);
    std::lock_guard<std::mutex> lock(mu_);
    cv_.notify_all();
  }

  // Waits until the stream was created once (OK), the watch failed, or the
  // deadline passed.
  Status WaitCreated(Deadline deadline) {
    std::unique_lock<std::mutex> lock(mu_);
    auto ready = [&] { return created_ || !first_error_.ok(); };
    if (deadline.RemainingMs() > (int64_t{1} << 40)) {
      cv_.wait(lock, ready);
    } else {
      cv_.wait_until(lock, deadline.time(), ready);
    }
    if (created_) return Status::OK();
    if (!first_error_.ok()) return first_error_;
    return Status::Unavailable(
        "etcd watch not established before the deadline: " +
        last_error_.ToString());
  }

 private:
  static size_t OnData(char* data, size_t size, size_t n, void* user) {
    auto* self = static_cast<EtcdWatch*>(user);
    self->buffer_.append(data, size * n);
    size_t nl;
    while ((nl = self->buffer_.find('\n')) != std::string::npos) {
      std::string line = self->buffer_.substr(0, nl);
      self->buffer_.erase(0, nl + 1);
      if (!line.empty() && !self->OnMessage(line)) return 0;
    }
    // A single message never exceeds etcd's limits by this much.
    if (self->buffer_.size() > kMaxResponseBytes) {
      self->stream_error_ =
          Status::Corruption("etcd watch message over the size limit");
      return 0;
    }
    return size * n;
  }

  // Handles one JSON message of the stream; false ends the stream.
  bool OnMessage(const std::string& line) {
    Status s = Parsing("watch", [&]() -> Status {
      Json msg = Json::parse(line);
      if (!msg.is_object())
        return Status::Corruption("watch message is not an object");
      if (msg.contains("error")) {
        // Streams carry {"error":{"grpc_code":N,"message":...}}; unary-style
        // errors {"error":"...","code":N}. Either ends this stream.
        const Json& err = msg["error"];
        int64_t code = 0;
        std::string m = "watch error";
        if (err.is_object()) {
          if (!Int64Field(err, "grpc_code", &code).ok()) code = 0;
          if (err.contains("message") && err["message"].is_string()) {
            m = err["message"].get<std::string>();
          }
        } else if (err.is_string()) {
          m = err.get<std::string>();
          if (!Int64Field(msg, "code", &code).ok()) code = 0;
        }
        return StatusFromGrpc(code == 0 ? 14 : code, m);
      }
      const Json& result = msg.at("result");
      int64_t header_rev = 0;
      FABPS_RETURN_IF_ERROR(HeaderRevision(result, &header_rev));
      if (result.value("created", false)) {
        if (next_revision_ == 0) next_revision_ = header_rev + 1;
        std::lock_guard<std::mutex> lock(mu_);
        created_ = true;
        cv_.notify_all();
      }
      if (result.value("canceled", false)) {
        int64_t compact = 0;
        FABPS_RETURN_IF_ERROR(Int64Field(result, "compact_revision", &compact));
        if (compact > 0) {
          fatal_ = Status::FailedPrecondition(
              "etcd compacted revision " + std::to_string(next_revision_) +
              " (history starts at " + std::to_string(compact) +
              "); read again and watch anew");
          return fatal_;
        }
        return Status::Unavailable(
            "etcd cancelled the watch: " +
            result.value("cancel_reason", std::string("no reason")));
      }
      std::vector<WatchEvent> events;
      int64_t last = 0;
      for (const Json& e : ArrayField(result, "events")) {
        WatchEvent ev;
        std::string type = e.value("type", std::string("PUT"));
        if (type == "DELETE") {
          ev.type = WatchEvent::Type::kDelete;
        } else if (type != "PUT") {
          return Status::Corruption("unknown watch event type " + type);
        }
        FABPS_RETURN_IF_ERROR(ParseKeyValue(e.at("kv"), &ev.kv));
        if (!HasPrefix(ev.kv.key, prefix_)) {
          return Status::Corruption("watch event for a key outside the job: " +
                                    ev.kv.key);
        }
        ev.kv.key.erase(0, prefix_.size());
        if (ev.kv.mod_revision < next_revision_)
          continue;  // seen before a reconnect
        last = std::max(last, ev.kv.mod_revision);
        events.push_back(std::move(ev));
      }
      if (last > 0) next_revision_ = last + 1;
      queue_.Push(std::move(events));
      return Status::OK();
    });
    if (!s.ok()) stream_error_ = s;
    return s.ok();
  }

  void Run() {
    int64_t backoff_ms = 50;
    size_t endpoint = http_->preferred();
    while (!stop_.load()) {
      stream_error_ = Status::OK();
      buffer_.clear();
      Status s =
          StreamOnce(http_->endpoints()[endpoint % http_->endpoints().size()]);
      if (stop_.load()) break;
      if (!fatal_.ok()) {
        queue_.Fail(fatal_);
        std::lock_guard<std::mutex> lock(mu_);
        first_error_ = fatal_;
        cv_.notify_all();
        break;
      }
      {
        std::unique_lock<std::mutex> lock(mu_);
        last_error_ = s;
        cv_.wait_for(lock, std::chrono::milliseconds(backoff_ms),
                     [&] { return stop_.load(); });
      }
      backoff_ms = std::min<int64_t>(backoff_ms * 2, 500);
      if (!s.ok()) ++endpoint;  // try the next endpoint after a failure
      if (created_once_) backoff_ms = std::min<int64_t>(backoff_ms, 200);
    }
  }

  // One streaming request until it ends; returns why it ended.
  Status StreamOnce(const std::string& endpoint) {
    Json create = {{"key", Base64Encode(key_)}};
    if (!range_end_.empty()) create["range_end"] = Base64Encode(range_end_);
    if (next_revision_ > 0)
      create["start_revision"] = std::to_string(next_revision_);
    const std::string body = Json{{"create_request", create}}.dump();
    const std::string url = endpoint + "/v3/watch";
    CURL* curl = curl_easy_init();
    if (curl == nullptr)
      return Status::ResourceExhausted("curl_easy_init failed");
    curl_slist* headers =
        curl_slist_append(nullptr, "Content-Type: application/json");
    if (http_->has_credentials()) {
      auto token = http_->Token(Deadline::InMs(5000));
      if (!token.ok()) {
        curl_slist_free_all(headers);
        curl_easy_cleanup(curl);
        return token.status();
      }
      headers =
          curl_slist_append(headers, ("Authorization: " + *token).c_str());
    }
    curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl, CURLOPT_POST, 1L);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.c_str());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE,
                     static_cast<long>(body.size()));
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, OnData);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, this);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(
        curl, CURLOPT_CONNECTTIMEOUT_MS,
        static_cast<long>(std::max<int64_t>(1, http_->connect_timeout_ms())));
    // Detect a peer that vanished without closing the connection.
    curl_easy_setopt(curl, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(curl, CURLOPT_TCP_KEEPIDLE, 5L);
    curl_easy_setopt(curl, CURLOPT_TCP_KEEPINTVL, 2L);
    http_->ApplyTls(curl);
    curl_multi_add_handle(multi_, curl);
    Status result;
    int running = 1;
    while (running > 0 && !stop_.load()) {
      CURLMcode mc = curl_multi_perform(multi_, &running);
      if (mc != CURLM_OK) {
        result = Status::IOError(std::string("curl_multi_perform: ") +
                                 curl_multi_strerror(mc));
        break;
      }
      if (running == 0) break;
      curl_multi_poll(multi_, nullptr, 0, 1000, nullptr);
    }
    if (result.ok() && !stop_.load()) {
      int left = 0;
      CURLMsg* m;
      CURLcode rc = CURLE_OK;
      while ((m = curl_multi_info_read(multi_, &left)) != nullptr) {
        if (m->msg == CURLMSG_DONE) rc = m->data.result;
      }
      if (!stream_error_.ok()) {
        result = stream_error_;
      } else if (rc != CURLE_OK) {
        result = Status::Unavailable("etcd watch stream " + url + ": " +
                                     curl_easy_strerror(rc));
      } else {
        result = Status::Unavailable("etcd watch stream " + url + " ended");
      }
    }
    if (created_) created_once_ = true;
    curl_multi_remove_handle(multi_, curl);
    curl_easy_cleanup(curl);
    curl_slist_free_all(headers);
    return result;
  }

  const std::shared_ptr<EtcdHttp> http_;
  const std::shared_ptr<WatchRegistry> registry_;
  const std::string prefix_;
  const std::string key_;        // absolute
  const std::string range_end_;  // "" for a single key
  CURLM* multi_ = nullptr;
  std::atomic<bool> stop_{false};
  WatchQueue queue_;
  // Used only by the watch thread:
  int64_t next_revision_;
  std::string buffer_;
  Status stream_error_;
  Status fatal_;
  bool created_once_ = false;
  // Shared with WaitCreated, under mu_:
  std::mutex mu_;
  std::condition_variable cv_;
  bool created_ = false;
  Status first_error_;
  Status last_error_ = Status::Unavailable("not tried yet");
  std::thread thread_;
};

}  // namespace

Result<std::unique_ptr<Watch>> StartEtcdWatch(
    std::shared_ptr<EtcdHttp> http, std::shared_ptr<WatchRegistry> registry,
    std::string job_prefix, std::string key, std::string range_end,
    int64_t start_revision, Deadline deadline) {
  auto watch = std::make_unique<EtcdWatch>(
      std::move(http), std::move(registry), std::move(job_prefix),
      std::move(key), std::move(range_end), start_revision);
  FABPS_RETURN_IF_ERROR(watch->WaitCreated(deadline));
  return std::unique_ptr<Watch>(std::move(watch));
}

}  // namespace fabps::coord::etcd
