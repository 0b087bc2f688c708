// StatusPage: the launcher's web page of a running local job.
//
//   GET /             the page: plain HTML, CSS and a small script, all in
//                     the binary (status_page_html.cc); nothing is fetched
//                     from elsewhere, so it works offline. The script polls
//                     /status.json every second and draws the plots itself
//                     (inline SVG).
//   GET /status.json  the latest JobView (cmd/launch/job_view.h).
//   GET /logs/NAME    a log file of the run directory, as text: NAME is a
//                     plain file name ending in ".log" (no "/", no ".."),
//                     a regular file directly in the run directory after
//                     symbolic links are resolved; else 404. Logs larger
//                     than 4 MiB are served from their last 4 MiB.
// Served by metrics::HttpServer (one home for HTTP serving, with its access
// rules: bound to the address given, GET only, slow clients never stall
// the launcher, which only ever swaps in a new JSON text).
//
// Why the launcher and not the master: the launcher is the one process
// that knows the whole local job (every process with its state, restarts
// and log file, the trainers' loss, accuracy and samples/s, the
// pservers' update rate); the master knows tasks and passes only.
//
// Thread safety: Publish may be called from any thread, concurrently with
// requests.
#ifndef FABPS_CMD_LAUNCH_STATUS_PAGE_H_
#define FABPS_CMD_LAUNCH_STATUS_PAGE_H_

#include <memory>
#include <mutex>
#include <string>

#include "base/status.h"
#include "metrics/http_server.h"

namespace fabps::launch {

class StatusPage {
 public:
  // Serves on host:port (port 0: a free one). `run_dir` must exist.
  static Result<std::unique_ptr<StatusPage>> Start(const std::string& host,
                                                   int port,
                                                   const std::string& run_dir);
  // Replaces what /status.json returns.
  void Publish(std::string json);
  int port() const { return http_->port(); }

 private:
  StatusPage() = default;
  metrics::HttpReply Json();
  metrics::HttpReply Log(const std::string& path) const;

  std::string run_dir_;  // canonical
  std::mutex mu_;
  std::string json_ = "{}";  // guarded by mu_
  // Last: stopped (its handlers joined) before the members they use go.
  std::unique_ptr<metrics::HttpServer> http_;
};

// The path of the log file NAME in `run_dir` (canonical), or NOT_FOUND /
// INVALID_ARGUMENT with the reason, as /logs/NAME checks it.
Result<std::string> RunDirLogFile(const std::string& run_dir,
                                  const std::string& name);

// The page (HTML with its CSS and script inline).
extern const char kStatusPageHtml[];

}  // namespace fabps::launch

#endif  // FABPS_CMD_LAUNCH_STATUS_PAGE_H_
