#include "thrift/internal/frame_meter.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>

namespace fabps::rpc::internal {

int64_t MsBetween(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(b - a).count();
}

void FrameMeter::Begin(Clock::time_point now) {
  if (active) return;
  active = true;
  started = now;
  header_got = 0;
  body_left = 0;
}

int FrameMeter::Feed(const uint8_t* p, size_t n, Clock::time_point now,
                     int64_t* header_done) {
  int frames = 0;
  while (n > 0) {
    Begin(now);
    if (header_got < 4) {
      size_t take = std::min<size_t>(n, 4 - header_got);
      std::memcpy(header + header_got, p, take);
      header_got += static_cast<int>(take);
      p += take;
      n -= take;
      if (header_got < 4) break;
      uint32_t be;
      std::memcpy(&be, header, 4);
      body_left = ntohl(be);
      if (header_done) *header_done = static_cast<int64_t>(body_left);
    } else {
      size_t take = static_cast<size_t>(std::min<uint64_t>(n, body_left));
      body_left -= take;
      p += take;
      n -= take;
    }
    if (header_got == 4 && body_left == 0) {
      active = false;
      frames++;
    }
  }
  return frames;
}

}  // namespace fabps::rpc::internal
