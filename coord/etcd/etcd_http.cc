#include "coord/etcd/etcd_http.h"

#include <curl/curl.h>

#include <algorithm>
#include <cstring>
#include <thread>

namespace fabps::coord::etcd {

void EnsureCurlInitialized() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

Result<std::vector<std::string>> ParseEndpoints(const std::string& spec) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= spec.size()) {
    size_t comma = spec.find(',', start);
    std::string ep = spec.substr(
        start, comma == std::string::npos ? std::string::npos : comma - start);
    while (!ep.empty() && ep.back() == '/') ep.pop_back();
    if (!ep.empty()) {
      const size_t scheme = ep.rfind("http://", 0) == 0    ? 7
                            : ep.rfind("https://", 0) == 0 ? 8
                                                           : 0;
      if (scheme == 0 || ep.size() <= scheme ||
          ep.find(':', scheme) == std::string::npos) {
        return Status::InvalidArgument("etcd endpoint '" + ep +
                                       "' is not http(s)://host:port");
      }
      out.push_back(ep);
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (out.empty())
    return Status::InvalidArgument("etcd spec has no endpoint: '" + spec + "'");
  return out;
}

Status StatusFromGrpc(int64_t code, const std::string& message) {
  const std::string m = "etcd: " + message;
  switch (code) {
    case 1:
      return Status::Cancelled(m);
    case 3:
      return Status::InvalidArgument(m);
    case 4:
      return Status::TimedOut(m);
    case 5:
      return Status::NotFound(m);
    case 6:
      return Status::AlreadyExists(m);
    case 7:
    case 16:
      return Status::PermissionDenied(m);
    case 8:
      return Status::ResourceExhausted(m);
    case 9:
    case 11:  // OutOfRange: e.g. a compacted revision
      return Status::FailedPrecondition(m);
    case 12:
      return Status::Unimplemented(m);
    case 14:
      return Status::Unavailable(m);
    default:
      return Status::IOError(m + " (gRPC code " + std::to_string(code) + ")");
  }
}

namespace {

struct Sink {
  std::string body;
  bool overflow = false;
};

size_t WriteToSink(char* data, size_t size, size_t n, void* user) {
  auto* sink = static_cast<Sink*>(user);
  size_t bytes = size * n;
  if (sink->body.size() + bytes > kMaxResponseBytes) {
    sink->overflow = true;
    return 0;  // aborts the transfer
  }
  sink->body.append(data, bytes);
  return bytes;
}

}  // namespace

EtcdHttp::EtcdHttp(std::vector<std::string> endpoints,
                   int64_t connect_timeout_ms)
    : endpoints_(std::move(endpoints)),
      connect_timeout_ms_(connect_timeout_ms) {
  EnsureCurlInitialized();
}

EtcdHttp::~EtcdHttp() {
  for (void* h : pool_) curl_easy_cleanup(static_cast<CURL*>(h));
}

void* EtcdHttp::TakeHandle() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!pool_.empty()) {
      void* h = pool_.back();
      pool_.pop_back();
      return h;
    }
  }
  return curl_easy_init();
}

void EtcdHttp::ReturnHandle(void* h) {
  std::lock_guard<std::mutex> lock(mu_);
  pool_.push_back(h);
}

void EtcdHttp::SetCredentials(std::string user, std::string password) {
  user_ = std::move(user);
  password_ = std::move(password);
}

Result<std::string> EtcdHttp::Token(Deadline deadline) {
  {
    std::lock_guard<std::mutex> l(token_mu_);
    if (!token_.empty()) return token_;
  }
  Json body = {{"name", user_}, {"password", password_}};
  auto reply = CallWithToken("/v3/auth/authenticate", body, deadline, true, "");
  if (!reply.ok()) {
    // etcd answers a wrong user or password with InvalidArgument.
    if (reply.status().code() == Status::Code::kInvalidArgument) {
      return Status::PermissionDenied("etcd authentication as '" + user_ +
                                      "': " + reply.status().message());
    }
    return reply.status().WithContext("etcd authentication as '" + user_ + "'");
  }
  auto t = reply->find("token");
  if (t == reply->end() || !t->is_string() || t->get<std::string>().empty())
    return Status::Corruption("etcd authentication: no token in the reply");
  std::lock_guard<std::mutex> l(token_mu_);
  token_ = t->get<std::string>();
  return token_;
}

void EtcdHttp::SetTls(std::string ca_file, std::string cert_file,
                      std::string key_file) {
  ca_file_ = std::move(ca_file);
  cert_file_ = std::move(cert_file);
  key_file_ = std::move(key_file);
}

void EtcdHttp::ApplyTls(void* handle) const {
  CURL* curl = static_cast<CURL*>(handle);
  if (!ca_file_.empty())
    curl_easy_setopt(curl, CURLOPT_CAINFO, ca_file_.c_str());
  if (!cert_file_.empty()) {
    curl_easy_setopt(curl, CURLOPT_SSLCERT, cert_file_.c_str());
    curl_easy_setopt(curl, CURLOPT_SSLKEY, key_file_.c_str());
  }
}

Result<Json> EtcdHttp::Call(const std::string& path, const Json& body,
                            Deadline deadline, bool idempotent) {
  if (!has_credentials())
    return CallWithToken(path, body, deadline, idempotent, "");
  for (int attempt = 0;; attempt++) {
    FABPS_ASSIGN_OR_RETURN(std::string token, Token(deadline));
    auto r = CallWithToken(path, body, deadline, idempotent, token);
    // Tokens of etcd's "simple" provider expire: authenticate again once.
    bool stale =
        !r.ok() && r.status().code() == Status::Code::kPermissionDenied &&
        r.status().message().find("invalid auth token") != std::string::npos;
    if (!stale || attempt > 0) return r;
    std::lock_guard<std::mutex> l(token_mu_);
    if (token_ == token) token_.clear();
  }
}

Result<Json> EtcdHttp::CallWithToken(const std::string& path, const Json& body,
                                     Deadline deadline, bool idempotent,
                                     const std::string& token) {
  const std::string payload = body.dump();
  CURL* curl = static_cast<CURL*>(TakeHandle());
  if (curl == nullptr)
    return Status::ResourceExhausted("curl_easy_init failed");
  struct HandleGuard {
    EtcdHttp* self;
    CURL* curl;
    ~HandleGuard() { self->ReturnHandle(curl); }
  } guard{this, curl};
  curl_slist* headers =
      curl_slist_append(nullptr, "Content-Type: application/json");
  if (!token.empty()) {
    headers = curl_slist_append(headers, ("Authorization: " + token).c_str());
  }
  struct ListGuard {
    curl_slist* l;
    ~ListGuard() { curl_slist_free_all(l); }
  } list_guard{headers};

  Status last =
      Status::Unavailable("no etcd endpoint tried before the deadline");
  int64_t backoff_ms = 20;
  const size_t n = endpoints_.size();
  while (true) {
    const size_t first = preferred_.load();
    for (size_t k = 0; k < n; ++k) {
      const size_t idx = (first + k) % n;
      const int64_t remaining = deadline.RemainingMs();
      if (remaining <= 0) return last;
      const std::string url = endpoints_[idx] + path;
      Sink sink;
      char detail[CURL_ERROR_SIZE] = {0};
      curl_easy_reset(curl);
      curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, detail);
      curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
      curl_easy_setopt(curl, CURLOPT_POST, 1L);
      curl_easy_setopt(curl, CURLOPT_POSTFIELDS, payload.c_str());
      curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE,
                       static_cast<long>(payload.size()));
      curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
      curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, WriteToSink);
      curl_easy_setopt(curl, CURLOPT_WRITEDATA, &sink);
      curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
      curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS,
                       static_cast<long>(std::max<int64_t>(1, remaining)));
      curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS,
                       static_cast<long>(std::max<int64_t>(
                           1, std::min(connect_timeout_ms_, remaining))));
      curl_easy_setopt(curl, CURLOPT_TCP_NODELAY, 1L);
      ApplyTls(curl);
      CURLcode rc = curl_easy_perform(curl);
      if (rc == CURLE_OK) {
        long http = 0;
        curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &http);
        preferred_.store(idx);
        Json reply;
        try {
          reply = Json::parse(sink.body);
        } catch (const Json::exception& e) {
          return Status::Corruption("etcd " + url + " answered HTTP " +
                                    std::to_string(http) +
                                    " with bad JSON: " + e.what());
        }
        if (http == 200 && reply.is_object() && !reply.contains("error"))
          return reply;
        int64_t code = 0;
        std::string message = "HTTP " + std::to_string(http);
        if (reply.is_object()) {
          Status s = Int64Field(reply, "code", &code);
          if (!s.ok()) code = 2;
          auto m = reply.find("message");
          if (m != reply.end() && m->is_string())
            message = m->get<std::string>();
        }
        Status err = StatusFromGrpc(code == 0 ? 2 : code, message);
        // etcd without a leader or shutting down: another member may serve.
        if (err.code() == Status::Code::kUnavailable && idempotent) {
          last = err;
          continue;
        }
        return err;
      }
      if (sink.overflow) {
        return Status::ResourceExhausted(
            "etcd response from " + url + " over " +
            std::to_string(kMaxResponseBytes) + " bytes");
      }
      const std::string what =
          url + ": " + curl_easy_strerror(rc) +
          (detail[0] != '\0' ? std::string(" (") + detail + ")"
                             : std::string());
      // A certificate refused (etcd's, by us: wrong CA or name; ours, by
      // etcd, told by a TLS alert) or unusable files: no endpoint will do
      // better.
      if (rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CERTPROBLEM ||
          rc == CURLE_SSL_CACERT_BADFILE ||
          (std::strstr(detail, "SSL") != nullptr &&
           std::strstr(detail, "alert") != nullptr)) {
        return Status::PermissionDenied("etcd refused TLS: " + what);
      }
      long request_bytes = 0;
      curl_easy_getinfo(curl, CURLINFO_REQUEST_SIZE, &request_bytes);
      const bool maybe_sent = request_bytes > 0;
      if (!maybe_sent) {
        last = Status::Unavailable("cannot reach etcd " + what);
        continue;  // nothing was sent: safe to try the next endpoint
      }
      if (!idempotent) {
        if (rc == CURLE_OPERATION_TIMEDOUT) {
          return Status::TimedOut(
              "etcd did not answer before the deadline (effect unknown): " +
              what);
        }
        return Status::Unavailable(
            "connection to etcd lost during a write (effect unknown): " + what);
      }
      last = rc == CURLE_OPERATION_TIMEDOUT
                 ? Status::TimedOut("etcd did not answer: " + what)
                 : Status::Unavailable("etcd request failed: " + what);
    }
    const int64_t remaining = deadline.RemainingMs();
    if (remaining <= 0) return last;
    std::this_thread::sleep_for(
        std::chrono::milliseconds(std::min(backoff_ms, remaining)));
    backoff_ms = std::min<int64_t>(backoff_ms * 2, 250);
  }
}

}  // namespace fabps::coord::etcd
