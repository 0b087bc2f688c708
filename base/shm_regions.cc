#include "base/shm_regions.h"

#include <dirent.h>
#include <unistd.h>

#include <cstring>
#include <string>

namespace fabps {
namespace {

// "<digits>:<digits>" after the "<pid>:" prefix.
bool IsRegionSuffix(const char* s) {
  int fields = 0;
  for (;;) {
    if (*s < '0' || *s > '9') return false;
    while (*s >= '0' && *s <= '9') s++;
    fields++;
    if (*s == '\0') return fields == 2;
    if (*s != ':' || fields == 2) return false;
    s++;
  }
}

}  // namespace

int RemoveShmRegionsOf(pid_t pid) {
  if (pid <= 0) return 0;
  DIR* dir = ::opendir("/dev/shm");
  if (dir == nullptr) return 0;
  const std::string prefix = std::to_string(pid) + ":";
  int removed = 0;
  while (dirent* e = ::readdir(dir)) {
    if (std::strncmp(e->d_name, prefix.c_str(), prefix.size()) != 0) continue;
    if (!IsRegionSuffix(e->d_name + prefix.size())) continue;
    std::string path = std::string("/dev/shm/") + e->d_name;
    if (::unlink(path.c_str()) == 0) removed++;
  }
  ::closedir(dir);
  return removed;
}

}  // namespace fabps
