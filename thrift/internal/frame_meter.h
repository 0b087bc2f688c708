// FrameMeter: follows the frames of one direction of a connection from the
// bytes that pass (TFramedTransport: a 4-byte big-endian length, then that
// many bytes), so that the connection guard knows whether a frame is under
// way, since when, and how long it says it is.
//
// It only counts: it never reads the bytes twice, allocates nothing and
// trusts no length (a frame of 2^32 - 1 bytes is simply long). Not thread
// safe: ConnectionGuard calls it under its mutex.
#ifndef FABPS_THRIFT_INTERNAL_FRAME_METER_H_
#define FABPS_THRIFT_INTERNAL_FRAME_METER_H_

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace fabps::rpc::internal {

using Clock = std::chrono::steady_clock;

int64_t MsBetween(Clock::time_point a, Clock::time_point b);

struct FrameMeter {
  bool active = false;  // a frame has begun and not ended
  Clock::time_point started;
  int header_got = 0;
  uint8_t header[4] = {};
  uint64_t body_left = 0;

  // A frame starts at `now` unless one is under way.
  void Begin(Clock::time_point now);
  // Consumes n bytes; *header_done (when not null) is set to the frame
  // length when a header completes (at most one per call is reported: the
  // server reads no further than one header at a time); returns the frames
  // completed.
  int Feed(const uint8_t* p, size_t n, Clock::time_point now,
           int64_t* header_done);
};

}  // namespace fabps::rpc::internal

#endif  // FABPS_THRIFT_INTERNAL_FRAME_METER_H_
