#include "cmd/launch/status_page.h"

#include <unistd.h>

#include <filesystem>

#include "base/file_util.h"

namespace fs = std::filesystem;

namespace fabps::launch {
namespace {

constexpr char kLogsPrefix[] = "/logs/";
constexpr uint64_t kMaxLogBytes = uint64_t{4} << 20;

bool PlainLogName(const std::string& name) {
  if (name.empty() || name.size() > 128 || name[0] == '.') return false;
  if (name.size() < 5 || name.compare(name.size() - 4, 4, ".log") != 0)
    return false;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return name.find("..") == std::string::npos;
}

// The last kMaxLogBytes of the open file.
Result<std::string> ReadTail(const OpenedFile& f, const std::string& name) {
  uint64_t from = f.size > kMaxLogBytes ? f.size - kMaxLogBytes : 0;
  std::string out(f.size - from, '\0');
  size_t got = 0;
  while (got < out.size()) {
    ssize_t n = ::pread(f.fd, out.data() + got, out.size() - got,
                        static_cast<off_t>(from + got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::IOError("reading " + name);
    if (n == 0) break;  // shrank meanwhile
    got += static_cast<size_t>(n);
  }
  out.resize(got);
  if (from > 0)
    out = "[" + name + ": its first " + std::to_string(from) +
          " bytes are left out]\n" + out;
  return out;
}

}  // namespace

Result<std::string> RunDirLogFile(const std::string& run_dir,
                                  const std::string& name) {
  if (!PlainLogName(name))
    return Status::InvalidArgument(
        "not a log name (letters, digits, . _ -, ending in .log)");
  std::error_code ec;
  fs::path path = fs::canonical(fs::path(run_dir) / name, ec);
  if (ec) return Status::NotFound(name + ": no such log");
  if (path.parent_path() != fs::path(run_dir) || !fs::is_regular_file(path, ec))
    return Status::NotFound(name + ": not a log of the run directory");
  return path.string();
}

Result<std::unique_ptr<StatusPage>> StatusPage::Start(
    const std::string& host, int port, const std::string& run_dir) {
  std::error_code ec;
  fs::path dir = fs::canonical(run_dir, ec);
  if (ec || !fs::is_directory(dir))
    return Status::InvalidArgument("status page: no run directory " + run_dir);
  std::unique_ptr<StatusPage> page(new StatusPage());
  page->run_dir_ = dir.string();
  StatusPage* p = page.get();
  metrics::HttpServerOptions o;
  o.host = host;
  o.port = port;
  o.name = "status page";
  std::vector<metrics::HttpRoute> routes = {
      {"/", false,
       [](const std::string&) {
         return metrics::HttpReply{200, "text/html; charset=utf-8",
                                   kStatusPageHtml};
       }},
      {"/status.json", false, [p](const std::string&) { return p->Json(); }},
      {kLogsPrefix, true,
       [p](const std::string& path) { return p->Log(path); }},
  };
  FABPS_ASSIGN_OR_RETURN(page->http_,
                         metrics::HttpServer::Start(o, std::move(routes)));
  return page;
}

void StatusPage::Publish(std::string json) {
  std::lock_guard<std::mutex> l(mu_);
  json_ = std::move(json);
}

metrics::HttpReply StatusPage::Json() {
  std::lock_guard<std::mutex> l(mu_);
  return {200, "application/json", json_};
}

metrics::HttpReply StatusPage::Log(const std::string& path) const {
  std::string name = path.substr(sizeof(kLogsPrefix) - 1);
  auto file = RunDirLogFile(run_dir_, name);
  if (!file.ok())
    return {404, "text/plain; charset=utf-8", file.status().message() + "\n"};
  auto opened = OpenRegularFile(*file);
  if (!opened.ok())
    return {404, "text/plain; charset=utf-8", name + ": cannot open\n"};
  auto text = ReadTail(*opened, name);
  ::close(opened->fd);
  if (!text.ok())
    return {500, "text/plain; charset=utf-8", text.status().message() + "\n"};
  return {200, "text/plain; charset=utf-8", std::move(*text)};
}

}  // namespace fabps::launch
