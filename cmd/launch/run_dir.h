// RunDir: where a launched job keeps its files, one name for each: a
// process's log and port file, a trainer's metrics file, the store, the
// checkpoints, the saved model and the resize request and answer. Tests and
// fabps-logs find them by the same names.
#ifndef FABPS_CMD_LAUNCH_RUN_DIR_H_
#define FABPS_CMD_LAUNCH_RUN_DIR_H_

#include <string>

namespace fabps::launch {

struct RunDir {
  std::string dir;  // absolute

  std::string File(const std::string& name) const { return dir + "/" + name; }
  // Process `name`'s output ("pserver-0" -> <dir>/pserver-0.log).
  std::string Log(const std::string& name) const { return File(name + ".log"); }
  // The port a daemon serves on, written once it serves.
  std::string PortFile(const std::string& name) const {
    return File(name + ".port");
  }
  std::string Metrics(int trainer) const {
    return File("trainer-" + std::to_string(trainer) + ".metrics");
  }
  std::string Checkpoints() const { return File("checkpoints"); }
  // Where the save election's winner writes the model.
  std::string ModelFile() const { return File("model.safetensors"); }
  // fabps-reshard --run-dir writes the wanted count here; the answer
  // comes back in ResizeDone().
  std::string ResizeRequest() const { return File("resize.request"); }
  std::string ResizeDone() const { return File("resize.done"); }
};

}  // namespace fabps::launch

#endif  // FABPS_CMD_LAUNCH_RUN_DIR_H_
