// Test helper of the exporter's server tests: a TCP connection to the loopback server.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdint>

namespace gpuscope::exporter::testing {

// A connected socket to 127.0.0.1:`port`, or -1. With `timeout_s` > 0, reads and writes time out
// after that long, so a server that never answers fails the test instead of hanging it.
inline int connect_to(int port, int timeout_s = 0) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(fd);
    return -1;
  }
  if (timeout_s > 0) {
    timeval tv{timeout_s, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  }
  return fd;
}

}  // namespace gpuscope::exporter::testing
